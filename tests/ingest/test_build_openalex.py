"""End to end: ``jobs/build_openalex.py`` on a generated snapshot holding real part files too."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from jobs import build_openalex
from wikigame_spark import cli
from wikigame_spark.devtools.openalexcheck import expected_graphs
from wikigame_spark.devtools.openalexgen import (
    PART_2021,
    PART_2023,
    SNAPSHOT,
    Spec,
    generate,
    generated_files,
)
from wikigame_spark.outputs import OutputExistsError

FIELDS = ["Social Sciences", "Arts and Humanities"]
SLUGS = {"Social Sciences": "social-sciences", "Arts and Humanities": "arts-and-humanities"}


def read_graph(directory):
    nodes = pq.read_table(os.path.join(directory, "nodes")).to_pylist()
    edges = {(e["src"], e["dst"]) for e in pq.read_table(os.path.join(directory, "edges")).to_pylist()}
    with open(os.path.join(directory, "manifest.json"), encoding="utf-8") as f:
        return sorted(nodes, key=lambda n: n["id"]), edges, json.load(f)


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    """Generated 2025 records in three partitions, plus the real 2021 and 2023 part files, all in
    one Redshift manifest."""
    root = tmp_path_factory.mktemp("openalex")
    spec = Spec(works=500, seed=21, extra_files=(("2021-11-03", PART_2021), ("2023-05-16", PART_2023)))
    return generate(str(root / "snapshot"), spec)


@pytest.mark.slow
def test_job_builds_one_graph_per_field(snapshot, tmp_path, capsys):
    out = str(tmp_path / "graphs")
    args = ["--input", snapshot.root, "--output", out, "--language", "en"]
    for f in FIELDS:
        args += ["--field", f]
    assert build_openalex.main(args) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("build_openalex: wrote ") and f"{out}/social-sciences (" in line and "records read" in line

    exp = expected_graphs(generated_files(snapshot), FIELDS)
    assert exp.read == sum(f["records"] for f in snapshot.files)
    for field in FIELDS:
        nodes, edges, manifest = read_graph(os.path.join(out, SLUGS[field]))
        assert nodes == exp.nodes[field]
        assert edges == exp.edges[field]
        assert all((d, s) in edges and s != d for s, d in edges)  # symmetric, no self-loops
        assert manifest["records"] == exp.accounting(field)
        assert manifest["field"] == field and manifest["kind"] == "openalex-graph"
        assert manifest["counts"]["nodes"] == len(nodes) and manifest["counts"]["edges"] == len(edges)
        assert manifest["target_language"] == "en"
        assert manifest["language_nodes"] == sum(n["language"] == "en" for n in nodes)
        snap = manifest["snapshot"]
        assert snap["layout"] == "legacy" and len(snap["files"]) == len(snapshot.files)
        assert all(f["records_read"] == f["manifest_records"] for f in snap["files"])
        assert manifest["warnings"] == [] and manifest["parameters"]["fields"] == ",".join(FIELDS)
    real = {f["key"]: f for f in manifest["snapshot"]["files"] if f["partition"] in ("2021-11-03", "2023-05-16")}
    assert {k: f["records_read"] for k, f in real.items()} == {
        "updated_date=2021-11-03/part_900.gz": 50,
        "updated_date=2023-05-16/part_901.gz": 27,
    }

    # an existing graph is not replaced without --overwrite, checked before any work is done
    with pytest.raises(OutputExistsError, match="social-sciences exists"):
        build_openalex.main(args)


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as e:
        cli.run(build_openalex.main, args)
    return e.value.code, capsys.readouterr()


def test_incomplete_real_snapshot_stops_with_one_line_and_its_files_predate_topics(tmp_path, capsys):
    args = ["--input", SNAPSHOT, "--field", "Medicine", "--output", str(tmp_path / "g")]
    code, out = run_cli(args, capsys)
    assert code == 2
    assert out.err.startswith(f"error: {SNAPSHOT}/data/works/manifest: 464 of its 465 files are missing: ")
    assert "updated_date=2023-07-17/part_000.gz" in out.err and len(out.err.strip().splitlines()) == 1
    # With --allow-partial the two files present are read, but they are from before OpenAlex's topics:
    # the build stops with one line naming the snapshot to use, and writes no graph.
    code, out = run_cli([*args, "--allow-partial"], capsys)
    assert code == 2 and len(out.err.strip().splitlines()) == 1
    assert out.err.startswith(f"error: {SNAPSHOT}: no record has a primary_topic")
    assert "predates OpenAlex topics" in out.err
    assert not os.path.exists(tmp_path / "g" / "medicine")


def test_record_count_that_differs_from_the_manifest(snapshot, tmp_path, capsys):
    copy = tmp_path / "snap"
    shutil.copytree(snapshot.root, copy)
    manifest = copy / "data" / "works" / "manifest"
    doc = json.loads(manifest.read_text())
    doc["entries"][0]["meta"]["record_count"] += 1
    manifest.write_text(json.dumps(doc))
    name = doc["entries"][0]["url"].split("/works/")[1]
    args = ["--input", str(copy), "--field", "Medicine", "--output", str(tmp_path / "g"), "--format", "jsonl"]
    code, out = run_cli(args, capsys)
    assert code == 2 and f"{name} (" in out.err and "manifest says" in out.err
    assert not os.path.exists(tmp_path / "g")  # nothing written


def test_bad_flags_fail_at_load(capsys):
    code, out = run_cli(["--input", SNAPSHOT, "--field", "Physic", "--output", "x"], capsys)
    assert code == 2 and "'Physic'" in out.err and "Physics and Astronomy" in out.err
    code, out = run_cli(["--input", SNAPSHOT, "--output", "x"], capsys)
    assert code == 2 and "--field" in out.err


@pytest.mark.slow
def test_a_snapshot_from_the_generators_command_line_builds_a_playable_graph(tmp_path):
    """The documented command (run from another folder) writes a clean snapshot: every work of a
    field is a node, only older versions and other fields are dropped, and the graph has games."""
    root = tmp_path / "snapshot"
    argv = [str(root), "--works", "600", "--field", "Mathematics", "--field", "Physics", "--seed", "3"]
    code = "import sys; from wikigame_spark.devtools import openalexgen; sys.exit(openalexgen.main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", code, *argv], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith(f"openalexgen: wrote {root} (6 files, ")
    files = [("/".join(p.parts[-2:]), str(p)) for p in sorted((root / "data" / "jsonl" / "works").glob("*/*.gz"))]
    expected = expected_graphs(files, ["Mathematics"])
    assert set(expected.dropped) <= {"duplicate", "other_field"}
    out = tmp_path / "graphs"
    assert build_openalex.main(["--input", str(root), "--field", "Mathematics", "--output", str(out)]) == 0
    nodes, edges, manifest = read_graph(out / "mathematics")
    assert nodes == expected.nodes["Mathematics"] and edges == expected.edges["Mathematics"]
    assert len(nodes) > 250 and len(edges) > len(nodes)  # about half the works, cited among themselves
    assert manifest["records"] == expected.accounting("Mathematics") | {"kept": len(nodes)}


def test_an_abstract_of_millions_of_characters_is_cut_and_counted(tmp_path):
    """A broken record's abstract reaches prompts as a node's summary: cut at SUMMARY_CHARS (far
    above a real abstract), and the graph's counts say how many were."""
    from wikigame_spark.devtools.openalexgen import TEMPLATE_2025
    from wikigame_spark.ingest.openalex import SUMMARY_CHARS

    with open(TEMPLATE_2025, encoding="utf-8") as f:
        record = json.load(f)
    normal = dict(record, id=record["id"] + "1")
    record["abstract_inverted_index"] = {f"word{i}": [i] for i in range(200_000)}  # 1.3 M characters
    with gzip.open(tmp_path / "part_000.gz", "wt", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n" + json.dumps(normal) + "\n")
    field = record["primary_topic"]["field"]["display_name"]
    out = str(tmp_path / "graphs")
    assert build_openalex.main(["--input", str(tmp_path / "part_000.gz"), "--field", field, "--output", out]) == 0
    nodes, _, manifest = read_graph(os.path.join(out, "decision-sciences"))
    lengths = sorted(len(n["summary"]) for n in nodes)
    assert lengths[-1] == SUMMARY_CHARS and lengths[0] < SUMMARY_CHARS
    assert manifest["counts"]["summaries_cut"] == 1
