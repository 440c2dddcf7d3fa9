"""Output folders (wikigame_spark/outputs.py) on local paths and through Hadoop: staged and renamed
into place whole, one writer per output, killed runs' staging removed, caches replaced whole, and
folders of small files; each given the output's storage Folder."""

from __future__ import annotations

import os
import subprocess

import pytest

from wikigame_spark import manifests, outputs, storage
from wikigame_spark.storage import Storage


def test_a_folder_names_what_is_inside_and_beside_it(tmp_path):
    out = storage.folder(f"{tmp_path}/graph/")
    assert out.root == f"{tmp_path}/graph" and out.name == "graph" and out.parent == str(tmp_path)
    assert out.sub("games").path("games") == f"{tmp_path}/graph/games/games"
    assert out.sibling(".graph._staging-x").root == f"{tmp_path}/.graph._staging-x"
    assert out.outer().root == str(tmp_path) and storage.folder("graph").outer().root == "."
    out.write_json("stats/stats.json", {"ä": [1]})
    assert out.read_json("stats/stats.json") == {"ä": [1]} and out.names() == ["stats"]
    assert storage.folder(out.path("stats/stats.json")).read_text() == '{\n  "ä": [\n    1\n  ]\n}\n'


def test_a_failed_stage_leaves_nothing_and_the_old_output_whole(tmp_path):
    target = storage.folder(str(tmp_path / "out"))
    with outputs.staged_output(target, overwrite=False) as staging:
        manifests.write_manifest(staging, {"kind": "x", "n": 1})
    assert manifests.read_manifest(target) == {"kind": "x", "n": 1}
    with pytest.raises(outputs.OutputExistsError, match="pass --overwrite"), outputs.staged_output(target, False):
        pass
    with pytest.raises(RuntimeError, match="midway"), outputs.staged_output(target, overwrite=True) as staging:
        manifests.write_manifest(staging, {"kind": "x", "n": 2})
        raise RuntimeError("midway")
    assert manifests.read_manifest(target)["n"] == 1 and sorted(os.listdir(tmp_path)) == ["out"]


def test_killed_runs_staging_is_removed_and_a_resumable_one_kept(tmp_path):
    target = storage.folder(str(tmp_path / "plays"))
    for name in (".plays._staging-1", ".plays._replaced-2", ".plays._resume", "plays/.part-000001._staging-3"):
        os.makedirs(tmp_path / name)
    removed = outputs.clean_staging(target)
    assert sorted(os.path.basename(r) for r in removed) == [
        ".part-000001._staging-3",
        ".plays._replaced-2",
        ".plays._staging-1",
    ]
    assert sorted(os.listdir(tmp_path)) == [".plays._resume", "plays"] and os.listdir(tmp_path / "plays") == []
    assert outputs.resume_staging(target).root == f"{tmp_path}/.plays._resume"


def test_a_cache_is_current_only_for_the_build_it_was_made_from(spark, tmp_path):
    from pyspark.sql.types import LongType, StructField, StructType

    schema = StructType([StructField("id", LongType(), False)])
    cache = storage.folder(str(tmp_path / "cache"))
    assert outputs.current_cache(cache, "t1") is None
    outputs.write_cache(cache, "vectors", spark.range(3), schema, lambda: {"source_created": "t1", "rows": 3})
    assert outputs.current_cache(cache, "t1")["rows"] == 3 and outputs.current_cache(cache, "t2") is None
    assert sorted(r.id for r in spark.read.parquet(cache.path("vectors")).collect()) == [0, 1, 2]


def test_output_lock_refuses_a_live_owner_and_takes_a_dead_ones(tmp_path):
    out = str(tmp_path / "plays")
    with outputs.output_lock(storage.folder(out), what="run") as owner:
        assert owner["pid"] == os.getpid()
        with (
            pytest.raises(outputs.OutputBusyError, match=f"being written by pid {os.getpid()}"),
            outputs.output_lock(storage.folder(out)),
        ):
            pass
    assert not os.path.exists(f"{out}.lock")
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = gone.pid
    with open(f"{out}.lock", "w") as f:
        f.write(f'{{"host": "{os.uname().nodename}", "pid": {dead}, "since": "then"}}')
    with outputs.output_lock(storage.folder(out)) as owner:
        assert owner["pid"] == os.getpid()
    assert not os.path.exists(f"{out}.lock")


def test_a_replaced_output_is_swapped_in_whole(spark, tmp_path):
    """The older output stays readable until the new one is complete; nothing staged is left over;
    what its manifest does not record (another job's output inside it) stays."""
    out = str(tmp_path / "out")
    os.makedirs(f"{out}/games")
    for name, text in {"old": "old", "manifest.json": '{"files": ["old"]}', "games/g": "games"}.items():
        with open(f"{out}/{name}", "w") as f:
            f.write(text)
    with outputs.staged_output(Storage(spark).folder(out), overwrite=True) as staging:
        assert staging.name.startswith(".out._staging-")  # hidden from part-* globs
        staging.write_text("new", "new")
        staging.write_text("manifest.json", '{"files": ["new"]}')
        assert sorted(os.listdir(out)) == ["games", "manifest.json", "old"]  # the older output, whole
    assert sorted(n for n in os.listdir(out) if not n.endswith(".crc")) == ["games", "manifest.json", "new"]
    assert open(f"{out}/games/g").read() == "games" and open(f"{out}/manifest.json").read() == '{"files": ["new"]}'
    assert os.listdir(tmp_path) == ["out"]


def test_the_lock_through_hadoop_takes_a_dead_owners(spark, tmp_path):
    out = f"file://{tmp_path}/plays"
    target = Storage(spark).folder(out)
    with outputs.output_lock(target, what="run") as owner:
        assert owner["pid"] == os.getpid() and os.path.exists(f"{tmp_path}/plays.lock")
        with (
            pytest.raises(outputs.OutputBusyError, match=f"being written by pid {os.getpid()}"),
            outputs.output_lock(target),
        ):
            pass
    assert not os.path.exists(f"{tmp_path}/plays.lock")
    gone = subprocess.Popen(["true"])
    gone.wait()
    Storage(spark).write_text(f"{out}.lock", f'{{"host": "{os.uname().nodename}", "pid": {gone.pid}}}')
    with outputs.output_lock(target):
        pass
    assert [n for n in os.listdir(tmp_path) if not n.endswith(".crc")] == []


def test_files_written_on_local_disk_are_plain(spark, tmp_path):
    report = Storage(spark).folder(f"file://{tmp_path}/report")
    outputs.write_files(report, {"index.html": b"<p>1</p>", "fig/a.svg": b"<svg/>"})
    assert sorted(os.listdir(tmp_path / "report")) == ["fig", "index.html"]  # no .crc beside them
    assert (tmp_path / "report" / "fig" / "a.svg").read_bytes() == b"<svg/>"
