"""Every reason in build_openalex's record accounting, each triggered by one record made from the
real 2025 record, and the inputs that must not give an empty graph with exit status 0."""

import copy
import gzip
import json
import os

import pytest

from jobs import build_openalex
from tests.jobs.jobrun import Finished, job_env, run_job
from wikigame_spark.devtools.openalexgen import PART_2023, TEMPLATE_2025, write_manifest
from wikigame_spark.ingest.openalex_records import DROP_REASONS

FIELD = "Decision Sciences"  # the real record's field


def record(**changes) -> dict:
    with open(TEMPLATE_2025, encoding="utf-8") as f:
        rec = json.load(f)
    rec = copy.deepcopy(rec)
    for key, value in changes.items():
        rec[key] = value
    return rec


def snapshot(root, lines: list[str], partition: str = "2025-06-11") -> str:
    """A one-file snapshot in the public bucket's layout (data/works + Redshift manifest)."""
    works = os.path.join(root, "data", "works")
    name = f"updated_date={partition}/part_000.gz"
    path = os.path.join(works, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    records = sum(1 for line in lines if line.strip())
    entry = {"name": name, "records": records, "bytes": os.path.getsize(path)}
    write_manifest(os.path.join(works, "manifest"), "legacy", [entry])
    return str(root)


def every_reason_lines() -> list[str]:
    topic = record()["primary_topic"]
    other = copy.deepcopy(topic)
    other["field"]["display_name"] = "Medicine"
    w = lambda n: f"https://openalex.org/W{n}"  # noqa: E731
    recs = [
        record(id=w(1)),  # kept
        record(id=w(2), referenced_works=12345),  # malformed_record: an array in the schema
        record(id=None),  # missing_id
        record(id=w(3), is_xpac=True),  # xpac
        record(id=w(4), type="dataset"),  # wrong_type
        record(id=w(5), primary_topic=None),  # missing_field
        record(id=w(6), primary_topic=other),  # other_field
        record(id=w(7), title=""),  # missing_title
        record(id=w(8), abstract_inverted_index=None),  # missing_abstract
        record(id=w(9), language=None),  # missing_language
    ]
    lines = ["{not json at all"] + [json.dumps(r, ensure_ascii=False) for r in recs]  # malformed_json
    return lines


def test_every_record_reason_is_counted(spark, tmp_path):
    root = snapshot(tmp_path / "snap", every_reason_lines())
    # duplicate: an older version of W1 in an earlier partition
    older = os.path.join(root, "data", "works", "updated_date=2024-01-01", "part_000.gz")
    os.makedirs(os.path.dirname(older))
    with gzip.open(older, "wt", encoding="utf-8") as f:
        f.write(json.dumps(record(id="https://openalex.org/W1", updated_date="2024-01-01T00:00:00")) + "\n")
    newer = os.path.join(root, "data", "works", "updated_date=2025-06-11", "part_000.gz")
    files = [
        {"name": "updated_date=2025-06-11/part_000.gz", "records": 11, "bytes": os.path.getsize(newer)},
        {"name": "updated_date=2024-01-01/part_000.gz", "records": 1, "bytes": os.path.getsize(older)},
    ]
    write_manifest(os.path.join(root, "data", "works", "manifest"), "legacy", files)
    out = str(tmp_path / "graphs")
    assert build_openalex.main(["--input", root, "--field", FIELD, "--output", out, "--format", "jsonl"]) == 0
    with open(os.path.join(out, "decision-sciences", "manifest.json"), encoding="utf-8") as f:
        records = json.load(f)["records"]
    assert records == {"read": 12, "kept": 1, "dropped": dict.fromkeys(DROP_REASONS, 1)}


def run(tmp_path, argv: list[str], process: bool = False) -> Finished:
    return run_job("build_openalex", *argv, env=job_env(f"sqlite:///{tmp_path}/m.db"), process=process)


def last_line(run: Finished) -> str:
    return run.err.strip().splitlines()[-1]


@pytest.mark.slow
def test_a_text_file_is_an_error_not_an_empty_graph(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("These are my notes, not a snapshot.\n")
    # A process of its own: the line must start a line of the log even after Spark's progress bar.
    done = run(tmp_path, ["--input", str(text), "--field", FIELD, "--output", str(tmp_path / "g")], process=True)
    assert done.rc == 2, done.err[-2000:]
    assert "every one of the 1 records read was rejected (malformed_json 1)" in last_line(done)
    assert not (tmp_path / "g" / "decision-sciences").exists()


def test_a_snapshot_from_before_topics_names_the_snapshot_to_use(tmp_path):
    """The shared September-2023 part file: no record has primary_topic."""
    with gzip.open(PART_2023, "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    root = snapshot(tmp_path / "snap", lines, partition="2023-05-16")
    done = run(tmp_path, ["--input", root, "--field", FIELD, "--output", str(tmp_path / "g"), "--allow-empty"])
    assert done.rc == 2, done.err[-2000:]
    line = last_line(done)
    assert "no record has a primary_topic" in line and "predates OpenAlex topics" in line
    assert "2024 or later" in line and "s3://openalex" in line


@pytest.mark.slow
def test_a_field_without_works_needs_allow_empty(spark, tmp_path):
    root = snapshot(tmp_path / "snap", [json.dumps(record(id="https://openalex.org/W1"))])
    argv = ["--input", root, "--field", "Medicine", "--output", str(tmp_path / "g")]
    done = run(tmp_path, argv)
    assert done.rc == 2
    assert "no works of field(s) ['Medicine']" in last_line(done) and "--allow-empty" in last_line(done)
    assert build_openalex.main([*argv, "--allow-empty"]) == 0
    assert spark.read.parquet(str(tmp_path / "g" / "medicine" / "nodes")).count() == 0


@pytest.mark.parametrize("lines", [["{not json"], ['{"id": "https://openalex.org/W1", "referenced_works": 5}']])
def test_unreadable_records_only(tmp_path, lines):
    root = snapshot(tmp_path / "snap", lines)
    done = run(tmp_path, ["--input", root, "--field", FIELD, "--output", str(tmp_path / "g")])
    assert done.rc == 2 and "every one of the 1 records read was rejected" in last_line(done)
