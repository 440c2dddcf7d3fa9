"""The OpenAlex Spark stages on real part files and on generated snapshots, held to an
independent plain-Python computation (``openalexcheck.expected_graphs``)."""

from __future__ import annotations

import copy
import gzip
import json
import os
import random

import pytest
from pyspark.sql import functions as F

from wikigame_spark.devtools.openalexcheck import expected_graphs
from wikigame_spark.devtools.openalexgen import (
    PART_2021,
    SNAPSHOT,
    TEMPLATE_2023,
    TEMPLATE_2025,
    Spec,
    generate,
    generated_files,
    make_inverted_index,
    write_lines,
)
from wikigame_spark.ingest.openalex import abstract_text, build_graphs, classified_works
from wikigame_spark.ingest.openalex_records import rebuild_abstract
from wikigame_spark.ingest.openalex_snapshot import plan_snapshot
from wikigame_spark.schemas import ABSTRACT_INVERTED_INDEX, EDGES, OPENALEX_NODES

FIELDS = ["Medicine", "Physics and Astronomy"]


def build(spark, root, fields, include_xpac=False, reader="auto", **plan_args):
    plan = plan_snapshot(str(root), **plan_args)
    works, _ = classified_works(spark, plan, fields, include_xpac, reader=reader)
    return plan, build_graphs(works, fields)


def node_rows(graph):
    return [r.asDict() for r in graph.nodes.orderBy("id").collect()]


def edge_set(graph):
    return {(r["src"], r["dst"]) for r in graph.edges.collect()}


def assert_matches(result, exp, fields):
    assert result.per_file == exp.per_file
    for f in fields:
        assert result.accounting(f) == exp.accounting(f), f
        g = result.graphs[f]
        assert node_rows(g) == exp.nodes[f], f
        assert edge_set(g) == exp.edges[f], f
        assert g.counts["nodes"] == len(exp.nodes[f]) and g.counts["edges"] == len(exp.edges[f])
        assert [(x.name, x.dataType) for x in g.nodes.schema] == [(x.name, x.dataType) for x in OPENALEX_NODES]
        assert [(x.name, x.dataType) for x in g.edges.schema] == [(x.name, x.dataType) for x in EDGES]


def test_abstract_expression_agrees_with_the_python_rules(spark):
    with open(TEMPLATE_2025, encoding="utf-8") as f:
        real = json.load(f)["abstract_inverted_index"]
    rng = random.Random(7)
    words = [*sorted(real), "don't", "C:\\x\\y", '"q"', "naïve", "", " ", "l'été"]
    cases = [real, {"the": [0, 2], "cat": [1]}, {"y": [0], "x": [0]}, {"b": [9], "a": [3]}, {"a": [None, 1], "b": None}]
    cases += [make_inverted_index([rng.choice(words) for _ in range(rng.randint(1, 80))]) for _ in range(60)]
    df = spark.createDataFrame(
        [(i, c) for i, c in enumerate(cases)], f"i int, m {ABSTRACT_INVERTED_INDEX.simpleString()}"
    )
    got = {r["i"]: r["t"] for r in df.select("i", abstract_text(F.col("m")).alias("t")).collect()}
    assert got == {i: rebuild_abstract(c) for i, c in enumerate(cases)}


@pytest.mark.slow
def test_generated_snapshot_matches_the_independent_computation(spark, tmp_path):
    spec = Spec(works=700, seed=11, p_legacy_abstract=0.1, malformed_per_file=3, p_duplicate=0.15)
    gen = generate(str(tmp_path / "snap"), spec)
    plan, result = build(spark, gen.root, FIELDS)
    assert plan.layout == "legacy" and not plan.warnings and len(plan.files) == 6
    exp = expected_graphs(generated_files(gen), FIELDS)
    assert_matches(result, exp, FIELDS)
    # the snapshot exercises what it should
    for reason in (
        "duplicate",
        "malformed_json",
        "malformed_record",
        "xpac",
        "wrong_type",
        "missing_abstract",
        "missing_title",
        "missing_language",
        "missing_field",
    ):
        assert exp.dropped.get(reason, 0) > 0, reason
    assert exp.older_version_was_a_node > 0  # a qualifying older version loses to a newer one
    assert all(len(exp.edges[f]) > 50 for f in FIELDS)
    assert result.graphs["Medicine"].counts["citations"]["self"] > 0
    assert {p["reason"] for p in result.problems} == {"malformed_json", "malformed_record"}


@pytest.mark.slow
@pytest.mark.parametrize("reader", ["auto", "spark"])
@pytest.mark.parametrize("abstract_as_json", [False, True])
def test_parquet_layout_reads_directly(spark, tmp_path, abstract_as_json, reader):
    spec = Spec(works=250, seed=5, layout="parquet", parquet_abstract_as_json=abstract_as_json)
    gen = generate(str(tmp_path / "snap"), spec)
    # the 2026 layout also has the JSON-lines copy; the Parquet one is preferred
    generate(str(tmp_path / "snap"), Spec(works=250, seed=5, layout="jsonl"))
    plan, result = build(spark, gen.root, ["Medicine"], reader=reader)
    assert (plan.layout, plan.format) == ("parquet", "parquet")
    # the workers read Parquet themselves unless its abstracts are JSON text (or Spark is asked for)
    how = classified_works(spark, plan, ["Medicine"], reader=reader)[1]
    assert how.startswith("pyarrow" if reader == "auto" and not abstract_as_json else "spark (")
    assert_matches(result, expected_graphs(generated_files(gen), ["Medicine"]), ["Medicine"])


def test_xpac_works_are_kept_on_request(spark, tmp_path):
    gen = generate(str(tmp_path / "snap"), Spec(works=200, seed=2, p_xpac=0.3))
    _, result = build(spark, gen.root, ["Medicine"], include_xpac=True)
    exp = expected_graphs(generated_files(gen), ["Medicine"], include_xpac=True)
    assert "xpac" not in exp.dropped
    assert_matches(result, exp, ["Medicine"])


@pytest.mark.slow
def test_real_2021_part_loads_and_its_abstracts_rebuild(spark, tmp_path):
    partition = os.path.dirname(PART_2021)
    plan, result = build(spark, partition, ["Medicine"])
    assert plan.layout == "folder" and plan.manifest is None and plan.warnings  # no manifest: said so
    assert result.read == 50
    assert result.dropped() == {"wrong_type": 50}  # journal-article etc.; nothing malformed
    # The same records made articles of a field: the 2021 abstract form must rebuild.
    with gzip.open(PART_2021, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    topic = {"field": {"display_name": "Medicine"}}
    lines = [json.dumps({**r, "type": "article", "language": "en", "primary_topic": topic}) for r in records]
    write_lines(str(tmp_path / "w" / "updated_date=2021-11-03" / "part_000.gz"), lines)
    _, result = build(spark, tmp_path / "w", ["Medicine"])
    nodes = node_rows(result.graphs["Medicine"])
    assert len(nodes) == 19 and result.dropped() == {"missing_abstract": 31}
    by_id = {r["id"].rsplit("/", 1)[-1]: r for r in records}
    for n in nodes:
        assert n["summary"] == rebuild_abstract(by_id[n["work_id"]]["abstract_inverted_index"]["InvertedIndex"])
        assert n["title"] == by_id[n["work_id"]]["title"]
    assert edge_set(result.graphs["Medicine"]) == set()  # the real file cites none of its own works


def test_real_2023_part_through_its_manifest(spark):
    plan, result = build(spark, SNAPSHOT, ["Medicine"], allow_partial=True)
    assert [f.key for f in plan.files] == ["updated_date=2023-05-16/part_000.gz"]
    assert plan.files[0].manifest_records == 27
    assert result.per_file == {"updated_date=2023-05-16/part_000.gz": 27}
    assert result.dropped() == {"wrong_type": 27}  # 26 grants and a journal-article


@pytest.mark.parametrize("newest", ["2025", "2023"])
def test_the_newest_version_of_a_work_decides(spark, tmp_path, newest):
    with open(TEMPLATE_2025, encoding="utf-8") as f:
        v2025 = json.load(f)
    with open(TEMPLATE_2023, encoding="utf-8") as f:
        v2023 = json.load(f)
    dates = (
        {"2023": "2023-10-22", "2025": "2025-06-11"}
        if newest == "2025"
        else {"2023": "2025-07-01", "2025": "2024-01-01"}
    )
    for version, record in (("2023", v2023), ("2025", v2025)):
        record = copy.deepcopy(record)
        record["updated_date"] = dates[version] + "T00:00:00"
        write_lines(str(tmp_path / "works" / f"updated_date={dates[version]}" / "part_000.gz"), [json.dumps(record)])
    _, result = build(spark, tmp_path / "works", ["Decision Sciences"])
    nodes = node_rows(result.graphs["Decision Sciences"])
    if newest == "2025":
        assert [n["work_id"] for n in nodes] == ["W2741809807"]
        assert nodes[0]["summary"] == rebuild_abstract(v2025["abstract_inverted_index"])
        assert nodes[0]["doi"] == "https://doi.org/10.7717/peerj.4375" and nodes[0]["language"] == "en"
        assert result.dropped() == {"duplicate": 1}
    else:  # the 2023 record has no primary_topic
        assert nodes == []
        assert result.dropped() == {"duplicate": 1, "missing_field": 1}
