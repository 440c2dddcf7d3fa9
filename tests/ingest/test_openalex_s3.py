"""The OpenAlex job against a real S3 protocol server on 127.0.0.1: boto3 lists the bucket and
reads the manifest, Spark reads the part files and writes the graph through s3a."""

from __future__ import annotations

import io
import json
import logging

import pyarrow.parquet as pq
import pytest

from jobs import build_openalex
from tests.s3server import CREDENTIALS, s3_server
from wikigame_spark.devtools.openalexcheck import expected_graphs
from wikigame_spark.devtools.openalexgen import Spec, generate, generated_files
from wikigame_spark.ingest.openalex_snapshot import SnapshotError, plan_snapshot
from wikigame_spark.storage import StorageError
from wikigame_spark.stores import S3Store


@pytest.fixture(scope="module")
def s3():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    with s3_server() as server:
        yield server


@pytest.fixture(autouse=True)
def credentials(monkeypatch):
    for k, v in CREDENTIALS.items():
        monkeypatch.setenv(k, v)


@pytest.fixture(scope="module")
def mirror(s3, tmp_path_factory):
    """A generated snapshot copied to a bucket, laid out as the public one (the manifest's URLs
    still say s3://openalex/…, as in a mirror)."""
    gen = generate(str(tmp_path_factory.mktemp("s3snap")), Spec(works=300, seed=8))
    bucket = s3.new_bucket()
    s3.upload_tree(gen.root, bucket, "mirror/openalex")
    return gen, bucket


def parquet_from_s3(s3, bucket, prefix):
    keys = [o["Key"] for o in s3.client.list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"]]
    rows = []
    for key in keys:
        if key.endswith(".parquet"):
            body = s3.client.get_object(Bucket=bucket, Key=key)["Body"].read()
            rows += pq.read_table(io.BytesIO(body)).to_pylist()
    return rows


@pytest.mark.slow
def test_job_reads_and_writes_through_s3(s3, mirror, capsys):
    gen, bucket = mirror
    fields = ["Medicine", "Physics and Astronomy"]
    args = [
        "--input",
        f"s3://{bucket}/mirror/openalex",
        "--endpoint-url",
        s3.endpoint_url,
        "--output",
        f"s3://{bucket}/graphs",
    ]
    for f in fields:
        args += ["--field", f]
    assert build_openalex.main(args) == 0
    assert f"s3a://{bucket}/graphs/medicine (" in capsys.readouterr().out

    exp = expected_graphs(generated_files(gen), fields)
    nodes = sorted(parquet_from_s3(s3, bucket, "graphs/medicine/nodes/"), key=lambda n: n["id"])
    edges = {(e["src"], e["dst"]) for e in parquet_from_s3(s3, bucket, "graphs/medicine/edges/")}
    assert nodes == exp.nodes["Medicine"] and edges == exp.edges["Medicine"]
    manifest = json.loads(s3.client.get_object(Bucket=bucket, Key="graphs/medicine/manifest.json")["Body"].read())
    assert manifest["records"] == exp.accounting("Medicine")
    assert manifest["snapshot"]["manifest"] == f"s3a://{bucket}/mirror/openalex/data/works/manifest"
    assert all(
        f["path"].startswith(f"s3a://{bucket}/mirror/openalex/data/works/updated_date=")
        for f in manifest["snapshot"]["files"]
    )
    listed = {o["Key"] for o in s3.client.list_objects_v2(Bucket=bucket, Prefix="graphs/")["Contents"]}
    assert not any("_staging" in k for k in listed)  # staged, then moved into place


def test_missing_object_in_the_bucket_is_named(s3, mirror):
    gen, _ = mirror
    bucket = s3.new_bucket()
    s3.upload_tree(gen.root, bucket, "snap")
    gone = gen.files[1]["name"]
    s3.client.delete_object(Bucket=bucket, Key=f"snap/data/works/{gone}")
    store = S3Store(bucket, s3.endpoint_url)
    with pytest.raises(SnapshotError, match=f"1 of its 6 files are missing: {gone}"):
        plan_snapshot("snap", store=store)
    plan = plan_snapshot("snap", allow_partial=True, store=store)
    assert len(plan.files) == 5 and plan.missing == [gone]
    assert store.credentials() == {
        "access.key": CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "secret.key": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    }


def test_unknown_bucket_is_a_clear_error(s3):
    with pytest.raises(StorageError, match="s3://no-such-bucket-here/"):
        plan_snapshot("x", store=S3Store("no-such-bucket-here", s3.endpoint_url))


@pytest.mark.slow
def test_parquet_snapshot_in_s3_is_read_by_the_workers_through_pyarrow(s3, tmp_path):
    gen = generate(str(tmp_path / "snap"), Spec(works=300, seed=9, layout="parquet", files_per_partition=2))
    bucket = s3.new_bucket()
    s3.upload_tree(gen.root, bucket, "openalex")
    args = ["--input", f"s3://{bucket}/openalex", "--endpoint-url", s3.endpoint_url, "--field", "Medicine"]
    assert build_openalex.main([*args, "--output", str(tmp_path / "out")]) == 0

    exp = expected_graphs(generated_files(gen), ["Medicine"])
    graph = tmp_path / "out" / "medicine"
    nodes = sorted(pq.read_table(graph / "nodes").to_pylist(), key=lambda n: n["id"])
    edges = {(e["src"], e["dst"]) for e in pq.read_table(graph / "edges").to_pylist()}
    assert nodes == exp.nodes["Medicine"] and edges == exp.edges["Medicine"]
    manifest = json.loads((graph / "manifest.json").read_text())
    assert manifest["snapshot"]["reader"] == "pyarrow" and manifest["records"] == exp.accounting("Medicine")
    assert CREDENTIALS["AWS_SECRET_ACCESS_KEY"] not in json.dumps(manifest)
