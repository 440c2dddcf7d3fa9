"""The one storage object on local paths (os calls, no session) and through Hadoop's FileSystem
(``file://`` URIs with the session), its atomic create, and the locks and stores built on it."""

from __future__ import annotations

import os
import shutil
import threading

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from wikigame_spark import parquet, preflight, stores
from wikigame_spark.storage import Storage, StorageError, arrow, is_local, local_path, spark_uri


def exercise(store: Storage, root: str) -> None:
    """Every operation, the same answers whichever way ``root`` is reached."""
    folder = f"{root}/a"
    assert not store.exists(folder) and not store.is_dir(folder)
    store.write(f"{folder}/b/c.bin", b"\x00\x01")  # folders made as needed
    store.write_text(f"{folder}/d.txt", "ünï\n")
    assert store.exists(folder) and store.is_dir(folder) and not store.is_file(folder)
    assert store.is_file(f"{folder}/d.txt") and store.readable(f"{folder}/d.txt")
    assert store.read(f"{folder}/b/c.bin") == b"\x00\x01" and store.read_text(f"{folder}/d.txt") == "ünï\n"
    assert store.size(f"{folder}/d.txt") == len("ünï\n".encode())
    assert store.names(folder) == ["b", "d.txt"]
    assert store.list(folder) == {"b/c.bin": 2, "d.txt": 6}
    assert store.list(f"{folder}/d.txt") == {} and store.list(f"{root}/none") == {}
    assert [p.rsplit("/", 1)[1] for p in store.glob(f"{folder}/*.txt")] == ["d.txt"]
    with pytest.raises(FileNotFoundError):
        store.read(f"{root}/none")

    store.mkdirs(f"{root}/e/f")
    assert store.is_dir(f"{root}/e/f")
    store.rename(folder, f"{root}/moved/here")  # the target's folder is made
    assert not store.exists(folder) and store.read(f"{root}/moved/here/b/c.bin") == b"\x00\x01"
    with pytest.raises(FileNotFoundError):
        store.rename(folder, f"{root}/again")
    store.probe(root)
    assert sorted(store.names(root)) == ["e", "moved"]  # the probe is gone

    assert store.create_if_absent(f"{root}/lock", b"first")
    assert not store.create_if_absent(f"{root}/lock", b"second")
    assert store.read(f"{root}/lock") == b"first"

    store.delete(f"{root}/moved")
    store.delete(f"{root}/lock")
    store.delete(f"{root}/none")  # absent: nothing to do
    assert store.names(root) == ["e"]


def test_local_paths_need_no_session(tmp_path):
    store = Storage()
    exercise(store, str(tmp_path))
    assert store.local_disk(f"file://{tmp_path}") == str(tmp_path)
    assert store.spark_path(str(tmp_path)) == f"file://{tmp_path}"
    assert store.join(str(tmp_path), "x/../y") == f"{tmp_path}/y"


def test_hadoop_file_uris_with_the_session(spark, tmp_path):
    store = Storage(spark)
    exercise(store, f"file://{tmp_path}")
    assert store.local_disk(f"file://{tmp_path}/x") == f"{tmp_path}/x"
    assert store.spark_path(f"file://{tmp_path}") == f"file://{tmp_path}"
    assert store.join("hdfs://nn/x", "y") == "hdfs://nn/x/y"
    fs, jpath = store.hadoop(f"file://{tmp_path}")
    assert fs.getUri().getScheme() == "file" and jpath.getName() == tmp_path.name


def test_a_uri_without_the_session_is_not_reached(tmp_path):
    store = Storage()
    assert not store.reaches("s3a://bucket/x") and store.reaches(str(tmp_path)) and store.reaches("file:/x")
    with pytest.raises(StorageError, match="s3a://bucket/x"):
        store.exists("s3a://bucket/x")
    preflight.check_output("hdfs://nn/graph", overwrite=False)  # not refused: checked once the session exists
    with pytest.raises(StorageError, match="hdfs://nn/graph"):
        preflight.kind(store.folder("hdfs://nn/graph"))


def test_atomic_create_has_one_winner(tmp_path):
    """Racing creators of one lock: exactly one wins, and the file always holds a whole text."""
    store = Storage()
    path = str(tmp_path / "run.lock")
    won, start = [], threading.Barrier(8)

    def create(i: int) -> None:
        start.wait()
        if store.create_if_absent(path, f"owner {i}".encode() * 1000):
            won.append(i)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and store.read(path) == f"owner {won[0]}".encode() * 1000
    assert os.listdir(tmp_path) == ["run.lock"]  # no temporary file left behind


def test_input_stores_list_through_storage(spark, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "part_0.gz").write_bytes(b"abc")
    local, root = stores.open_store(f"file://{tmp_path}")
    hadoop, uri = stores.open_store(f"hdfs://nn{tmp_path}", spark=spark)
    assert isinstance(local, stores.LocalStore) and root == str(tmp_path) and isinstance(hadoop, stores.HadoopStore)
    assert uri == f"hdfs://nn{tmp_path}"
    assert local.list(root) == {"d/part_0.gz": 3} == stores.HadoopStore(spark).list(f"file://{tmp_path}")
    assert local.spark_path(local.join(root, "d/part_0.gz")) == f"file://{tmp_path}/d/part_0.gz"
    with pytest.raises(StorageError, match="needs a Spark session"):
        stores.open_store("hdfs://nn/x")


def test_workers_reach_the_same_paths_with_pyarrow(tmp_path):
    pq.write_table(pa.table({"id": [3, 1, 2]}), tmp_path / "part-0.parquet")
    for path in (str(tmp_path), f"file://{tmp_path}"):
        assert parquet.read_columns(path, ["id"]).column("id").to_pylist() == [3, 1, 2]
    fs, p = arrow("s3a://bucket/key", {"region": "us-east-1", "anonymous": True})
    assert isinstance(fs, pafs.S3FileSystem) and p == "bucket/key"
    assert stores.open_input_file(f"file://{tmp_path}/part-0.parquet") == f"{tmp_path}/part-0.parquet"


def test_schemes():
    assert spark_uri("s3://b/k") == "s3a://b/k" and spark_uri("gs://b/k") == "gs://b/k" and spark_uri("/x") == "/x"
    assert is_local("/x") and is_local("file:///x") and is_local("C:/x") and not is_local("dbfs:/x")
    assert local_path("file:///x/y") == local_path("file:/x/y") == local_path("file://localhost/x/y") == "/x/y"
    assert preflight.absolute("file:///x/") == "/x" and preflight.absolute("s3a://b/k/") == "s3a://b/k"


def test_delete_outlasts_a_writer_removing_its_own_files(tmp_path):
    """A killed run's JVM can still be dropping its ``_temporary`` files while the resumed run
    removes the unfinished chunk: the folder goes, whoever removes each entry first."""
    store = Storage()
    for trial in range(20):
        folder = tmp_path / f"part-{trial}"
        for attempt in range(40):
            leaf = folder / "_temporary" / "0" / f"attempt_{attempt}"
            leaf.mkdir(parents=True)
            for i in range(20):
                (leaf / f"part-{i}.parquet").write_bytes(b"x")
        writer = threading.Thread(target=shutil.rmtree, args=(folder / "_temporary",), kwargs={"ignore_errors": True})
        writer.start()
        store.delete(str(folder))
        writer.join()
        assert not folder.exists()
