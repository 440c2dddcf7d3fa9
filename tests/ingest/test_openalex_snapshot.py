"""Finding an OpenAlex snapshot's part files and checking them against its manifest."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from wikigame_spark.devtools.openalexgen import PART_2021, PART_2023, SNAPSHOT, Spec, generate
from wikigame_spark.ingest.openalex_snapshot import (
    SnapshotError,
    check_record_counts,
    manifest_entries,
    manifest_relative,
    plan_snapshot,
)
from wikigame_spark.storage import spark_uri
from wikigame_spark.stores import configure_s3a

REAL_MANIFEST = os.path.join(SNAPSHOT, "data", "works", "manifest")


def test_real_manifest_with_missing_files_is_an_error_naming_them():
    with pytest.raises(SnapshotError) as e:
        plan_snapshot(SNAPSHOT)
    message = str(e.value)
    assert REAL_MANIFEST in message
    assert "464 of its 465 files are missing" in message
    assert "updated_date=2023-07-17/part_000.gz" in message  # the first missing entry
    assert "--allow-partial" in message


def test_real_manifest_with_allow_partial_reads_what_is_there():
    plan = plan_snapshot(SNAPSHOT, allow_partial=True)
    assert plan.layout == "legacy" and plan.format == "json"
    assert [(f.key, f.bytes, f.manifest_records, f.manifest_bytes) for f in plan.files] == [
        ("updated_date=2023-05-16/part_000.gz", 6937, 27, 6937)
    ]
    assert plan.files[0].partition == "2023-05-16"
    assert plan.files[0].path == "file://" + PART_2023
    assert len(plan.missing) == 464 and plan.manifest_records == 244_371_844
    # the 2021 file is not in this (2023) manifest: a stale file, not read, and said so
    assert plan.unlisted == ["updated_date=2021-11-03/part_000.gz"]
    assert any("464 of its 465 files are missing" in w for w in plan.warnings)
    assert any("not in the manifest" in w and "2021-11-03" in w for w in plan.warnings)
    assert plan.manifest == "file://" + REAL_MANIFEST and len(plan.manifest_sha1) == 40
    # the data/ folder and the works folder lead to the same plan
    for root in (os.path.join(SNAPSHOT, "data"), os.path.join(SNAPSHOT, "data", "works")):
        assert [f.key for f in plan_snapshot(root, allow_partial=True).files] == ["updated_date=2023-05-16/part_000.gz"]


def test_manifest_forms():
    entry = {
        "url": "s3://openalex/data/works/updated_date=2024-01-01/part_000.gz",
        "meta": {"content_length": 5, "record_count": 2},
    }
    want = [(entry["url"], 2, 5)]
    assert manifest_entries({"entries": [entry], "meta": {}}, "m") == want  # Redshift, to 2025
    assert manifest_entries({"files": [entry]}, "m") == want  # one entity, 2026
    combined = {
        "date": "2026-06-26",
        "entities": [{"entity": "authors", "files": []}, {"entity": "works", "files": [entry]}],
    }
    assert manifest_entries(combined, "m") == want
    with pytest.raises(SnapshotError, match="no works entity"):
        manifest_entries({"entities": [{"entity": "authors", "files": []}]}, "m")
    with pytest.raises(SnapshotError, match="m: manifest has none"):
        manifest_entries({"other": 1}, "m")
    with pytest.raises(SnapshotError, match="entry 0 has no url"):
        manifest_entries({"entries": [{"meta": {}}]}, "m")
    assert manifest_relative("s3://openalex/data/parquet/works/updated_date=2026-06-24/part_0000.parquet") == (
        "updated_date=2026-06-24/part_0000.parquet"
    )
    assert (
        manifest_relative("s3://mirror/x/updated_date=2026-06-24/part_0000.gz")
        == "updated_date=2026-06-24/part_0000.gz"
    )
    assert spark_uri("s3://openalex/data") == "s3a://openalex/data" and spark_uri("/x") == "/x"


@pytest.mark.parametrize("layout,fmt", [("legacy", "json"), ("jsonl", "json"), ("parquet", "parquet")])
def test_generated_layouts(tmp_path, layout, fmt):
    gen = generate(str(tmp_path), Spec(works=40, seed=1, layout=layout, files_per_partition=1))
    plan = plan_snapshot(str(tmp_path))
    assert (plan.layout, plan.format, plan.warnings) == (layout, fmt, [])
    assert [f.manifest_records for f in plan.files] == [f["records"] for f in gen.files]
    assert plan.manifest.endswith("manifest" if layout == "legacy" else "manifest.json")


def test_parquet_is_preferred_unless_asked_for_json_lines(tmp_path):
    generate(str(tmp_path), Spec(works=30, seed=1, layout="jsonl", files_per_partition=1))
    generate(str(tmp_path), Spec(works=30, seed=1, layout="parquet", files_per_partition=1))
    assert plan_snapshot(str(tmp_path)).layout == "parquet"
    assert plan_snapshot(str(tmp_path), fmt="jsonl").layout == "jsonl"
    assert plan_snapshot(str(tmp_path), fmt="parquet").layout == "parquet"


def test_a_partition_or_a_file_without_manifest(tmp_path):
    plan = plan_snapshot(os.path.dirname(PART_2021))
    assert plan.layout == "folder" and plan.manifest is None
    assert [f.key for f in plan.files] == ["updated_date=2021-11-03/part_000.gz"]
    assert "no manifest" in plan.warnings[0]
    one = plan_snapshot(PART_2021)
    assert one.layout == "file" and one.files[0].partition == "2021-11-03"
    with pytest.raises(SnapshotError, match="no OpenAlex works part files"):
        plan_snapshot(str(tmp_path))


def test_a_file_of_another_size_is_an_error_or_skipped(tmp_path):
    generate(str(tmp_path), Spec(works=40, seed=1, files_per_partition=1))
    victim = tmp_path / "data" / "works" / "updated_date=2025-03-15" / "part_000.gz"
    victim.write_bytes(victim.read_bytes()[:-10])  # a download cut short
    with pytest.raises(SnapshotError, match=r"1 have another size: updated_date=2025-03-15/part_000.gz \("):
        plan_snapshot(str(tmp_path))
    plan = plan_snapshot(str(tmp_path), allow_partial=True)
    assert "updated_date=2025-03-15/part_000.gz" not in [f.key for f in plan.files] and len(plan.files) == 2
    assert plan.wrong_size and any("another size" in w for w in plan.warnings)


def test_a_manifest_that_is_not_json(tmp_path):
    works = tmp_path / "data" / "works" / "updated_date=2021-11-03"
    works.mkdir(parents=True)
    shutil.copy(PART_2021, works)
    (tmp_path / "data" / "works" / "manifest").write_text("{not json")
    with pytest.raises(SnapshotError, match="manifest is not JSON"):
        plan_snapshot(str(tmp_path))


def test_record_counts_against_the_manifest():
    plan = plan_snapshot(SNAPSHOT, allow_partial=True)
    assert check_record_counts(plan, {"updated_date=2023-05-16/part_000.gz": 27}, allow_partial=False) == []
    with pytest.raises(SnapshotError, match=r"updated_date=2023-05-16/part_000.gz \(26 records, manifest says 27\)"):
        check_record_counts(plan, {"updated_date=2023-05-16/part_000.gz": 26}, allow_partial=False)
    warnings = check_record_counts(plan, {}, allow_partial=True)
    assert len(warnings) == 1 and "0 records, manifest says 27" in warnings[0]


def test_hadoop_uris_list_through_the_session(spark, tmp_path):
    gen = generate(str(tmp_path), Spec(works=30, seed=1, files_per_partition=1))
    local = plan_snapshot(str(tmp_path))
    hadoop = plan_snapshot("file://" + str(tmp_path), spark=spark)
    assert [(f.key, f.bytes, f.manifest_records) for f in hadoop.files] == [
        (f.key, f.bytes, f.manifest_records) for f in local.files
    ]
    assert len(hadoop.files) == len(gen.files)


def test_s3a_settings_for_the_public_bucket(spark):
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    configure_s3a(spark, "s3://openalex/data")
    assert conf.get("fs.s3a.bucket.openalex.aws.credentials.provider") == (
        "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
    )
    assert conf.get("fs.s3a.bucket.openalex.endpoint.region") == "us-east-1"
    conf.set("fs.s3a.bucket.mine.endpoint", "http://example:9000")  # a user's own setting wins
    configure_s3a(spark, "s3a://mine/x", endpoint_url="http://127.0.0.1:1")
    assert conf.get("fs.s3a.bucket.mine.endpoint") == "http://example:9000"
    assert conf.get("fs.s3a.bucket.mine.path.style.access") == "true"
    configure_s3a(spark, "/local/path")  # not S3: nothing to do


def test_manifest_json_lines_files_listed_relative_to_any_bucket(tmp_path):
    gen = generate(str(tmp_path), Spec(works=20, seed=1, layout="jsonl", files_per_partition=1))
    with open(gen.manifest) as f:
        doc = json.load(f)
    urls = [e["url"] for e in doc["entities"][0]["files"]]
    assert all(u.startswith("s3://openalex/data/jsonl/works/updated_date=") for u in urls)
    assert sorted(f.key for f in plan_snapshot(str(tmp_path)).files) == sorted(manifest_relative(u) for u in urls)
