"""End-to-end runs of jobs/build_wikipedia.py on the real dumps, in local Spark."""

import bz2
import glob
import json
import os

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from jobs import build_wikipedia
from tests.conftest import BNWIKI, ENWIKI, LTG
from wikigame_spark import outputs, parquet, storage
from wikigame_spark.devtools.dumpgen import write_multistream
from wikigame_spark.ingest import dumps
from wikigame_spark.schemas import EDGES, REDIRECTS, WIKIPEDIA_NODES


def load(spark, graph):
    return (
        parquet.read_table(spark, storage.folder(f"{graph}/nodes"), WIKIPEDIA_NODES),
        parquet.read_table(spark, storage.folder(f"{graph}/edges"), EDGES),
        parquet.read_table(spark, storage.folder(f"{graph}/redirects"), REDIRECTS),
        json.load(open(f"{graph}/manifest.json")),
    )


def test_latgalian_counts_and_accounting(spark, ltg_graph):
    nodes, edges, redirects, manifest = load(spark, ltg_graph)
    c = manifest["counts"]
    assert c["pages"] == {"read": 2004, "article": 903, "redirect": 147, "other_namespace": 954, "rejected": {}}
    assert c["redirects_all_namespaces"] == 195
    assert c["nodes"] == nodes.count() == 903
    assert sorted(r.id for r in nodes.select("id").collect()) == list(range(903))
    assert nodes.select("page_id").distinct().count() == 903
    assert c["edges"] == edges.count() == edges.distinct().count()
    assert edges.filter("src = dst").count() == 0
    assert edges.join(nodes, edges.src == nodes.id, "left_anti").count() == 0
    assert edges.join(nodes, edges.dst == nodes.id, "left_anti").count() == 0
    assert c["redirects"]["resolved"] == redirects.count()
    assert c["redirects"]["resolved"] + sum(c["redirects"]["dropped"].values()) == 147
    assert c["links"]["total"] == c["links"]["edges"] + sum(c["links"]["dropped"].values())
    assert c["links"]["dropped"]["other_namespace"] > 0 and c["links"]["dropped"]["missing"] > 0
    assert manifest["dbname"] == "ltgwiki" and manifest["language"] == "ltg"
    assert manifest["generator"] == "MediaWiki 1.30.0-wmf.16"
    assert manifest["newest_revision"].startswith("2017-09-01")
    assert manifest["inputs"][0]["bytes"] == 692467 and len(manifest["inputs"][0]["sha1"]) == 40
    assert nodes.filter(F.length("summary") > 1000).count() == 0
    assert nodes.filter(F.col("title").startswith("Kategoreja:")).count() == 0


def test_latgalian_links_verified_by_hand(spark, ltg_graph):
    """Anna Rancāne's wikitext links: Latgaļu himna (a redirect to Latgolys himna), Miglinīku
    pogosts, Latvejis vaļstiskais universitets, Rēzne, E. Karūdznīks, Ed. Veidenbaums, Julians
    Kardinals Vaivods, Aspazeja, Fraņcs Trasuns, Kategoreja:… — only three of them exist."""
    nodes, edges, redirects, _ = load(spark, ltg_graph)
    title = {r.id: r.title for r in nodes.collect()}
    src = next(i for i, t in title.items() if t == "Anna Rancāne")
    assert {title[r.dst] for r in edges.filter(F.col("src") == src).collect()} == {
        "Fraņcs Trasuns",
        "Latgolys himna",
        "Rēzne",
    }
    target = {r.title: title[r.target] for r in redirects.collect()}
    assert target["Latgaļu himna"] == "Latgolys himna"
    assert target["Rēzekne"] == "Rēzne"
    summary = nodes.filter(F.col("id") == src).first().summary
    assert summary.startswith("Anna Rancāne") and "[[" not in summary and "'''" not in summary


@pytest.mark.slow
def test_rebuild_is_identical(spark, ltg_graph, tmp_path):
    out = str(tmp_path / "again")
    assert build_wikipedia.main(["--input", LTG, "--output", out]) == 0
    a, b = load(spark, ltg_graph), load(spark, out)
    for x, y in zip(a[:3], b[:3]):
        assertDataFrameEqual(x, y)
    assert a[3]["counts"] == b[3]["counts"]


def test_existing_output_needs_overwrite(ltg_graph):
    with pytest.raises(outputs.OutputExistsError, match="--overwrite"):
        build_wikipedia.main(["--input", LTG, "--output", ltg_graph])


def test_failed_run_leaves_nothing(tmp_path):
    data = bytearray(open(LTG, "rb").read())
    data[300_000:300_200] = b"\x00" * 200
    bad = tmp_path / "corrupt-pages-articles.xml.bz2"
    bad.write_bytes(bytes(data))
    out = tmp_path / "graph"
    with pytest.raises(Exception, match=r"corrupt-pages-articles\.xml\.bz2: corrupt compressed data near byte"):
        build_wikipedia.main(["--input", str(bad), "--output", str(out)])
    assert not out.exists() and not glob.glob(f"{out}*")


@pytest.mark.slow
def test_english_head_and_truncated_bengali(spark, tmp_path):
    en = str(tmp_path / "en")
    assert build_wikipedia.main(["--input", ENWIKI, "--output", en]) == 0
    c = load(spark, en)[3]["counts"]
    assert c["pages"] == {"read": 206, "article": 106, "redirect": 99, "other_namespace": 1, "rejected": {}}
    assert c["links"]["total"] > 30_000

    bn = str(tmp_path / "bn")
    assert build_wikipedia.main(["--input", BNWIKI, "--output", bn]) == 0
    m = load(spark, bn)[3]
    assert m["counts"]["pages"]["read"] == 723
    assert m["counts"]["pages"]["rejected"] == {"truncated": 1}
    assert m["counts"]["pages"]["article"] == 380 and m["counts"]["pages"]["redirect"] == 69
    assert "722 complete pages" in m["counts"]["problems"][0] and m["language"] == "bn"


@pytest.mark.slow
def test_multistream_input_gives_the_same_graph(spark, ltg_graph, tmp_path):
    xml = bz2.decompress(open(LTG, "rb").read())
    dump, _ = write_multistream(xml, str(tmp_path), "ltgwiki-20170901", pages_per_stream=100)
    out = str(tmp_path / "multi")
    assert build_wikipedia.main(["--input", dump, "--output", out, "--task-bytes", "65536"]) == 0
    a, b = load(spark, ltg_graph), load(spark, out)
    assert b[3]["tasks"] > 5
    for x, y in zip(a[:3], b[:3]):
        assertDataFrameEqual(x, y)


@pytest.mark.slow
def test_plain_bz2_read_by_many_tasks_gives_the_same_graph(spark, ltg_graph, tmp_path, monkeypatch):
    """One single-stream .bz2 split by its blocks: the same tables and accounting as one task."""
    monkeypatch.setattr(dumps, "MIN_SPLIT_BYTES", 1)  # the dump is under a MiB
    out = str(tmp_path / "blocks")
    assert build_wikipedia.main(["--input", LTG, "--output", out, "--task-bytes", "65536"]) == 0
    a, b = load(spark, ltg_graph), load(spark, out)
    assert a[3]["tasks"] == 1 and b[3]["tasks"] == 11
    for x, y in zip(a[:3], b[:3]):
        assertDataFrameEqual(x, y)
    assert a[3]["counts"] == b[3]["counts"]


@pytest.mark.slow
def test_graph_is_the_same_when_nothing_fits_a_broadcast(spark, ltg_graph, tmp_path):
    """A wiki whose titles exceed spark.sql.autoBroadcastJoinThreshold (English Wikipedia's do)
    joins its ids and links by shuffling both sides: the same tables and accounting."""
    out = str(tmp_path / "shuffled")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        assert build_wikipedia.main(["--input", LTG, "--output", out]) == 0
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    a, b = load(spark, ltg_graph), load(spark, out)
    for x, y in zip(a[:3], b[:3]):
        assertDataFrameEqual(x, y)
    assert a[3]["counts"] == b[3]["counts"]


def test_two_files_of_different_wikis_are_refused(tmp_path):
    with pytest.raises(ValueError, match="build one graph per wiki"):
        build_wikipedia.main(["--input", LTG, ENWIKI, "--output", str(tmp_path / "mixed")])
    assert not os.path.exists(tmp_path / "mixed")


@pytest.mark.cluster
def test_standalone_cluster_gives_the_same_graph(spark, ltg_graph, tmp_path):
    """spark-submit to a real master with two worker processes on 127.0.0.1."""
    import subprocess
    import sys

    from tests.standalone import StandaloneCluster

    out = str(tmp_path / "cluster")
    with StandaloneCluster(str(tmp_path)) as cluster:
        submit = [os.path.join(os.path.dirname(sys.executable), "spark-submit"), "--master", cluster.url]
        submit += ["--conf", "spark.executor.memory=1g", "--conf", "spark.cores.max=2"]
        run = subprocess.run(
            submit + ["jobs/build_wikipedia.py", "--input", LTG, "--output", out],
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "build_wikipedia: wrote" in run.stdout
    a, b = load(spark, ltg_graph), load(spark, out)
    for x, y in zip(a[:3], b[:3]):
        assertDataFrameEqual(x, y)
    assert a[3]["counts"] == b[3]["counts"]


@pytest.mark.slow
def test_clean_summaries_change_only_the_summaries(spark, ltg_graph, tmp_path):
    """``--summary clean``: the same nodes and edges, summaries without markup residue, cut to
    ``--summary-chars``, and the manifest says which summary it holds."""
    out = str(tmp_path / "clean")
    assert build_wikipedia.main(["--input", LTG, "--output", out, "--summary", "clean", "--summary-chars", "300"]) == 0
    paper, clean = load(spark, ltg_graph), load(spark, out)
    assertDataFrameEqual(paper[1], clean[1])
    assertDataFrameEqual(paper[0].drop("summary"), clean[0].drop("summary"))
    assert paper[3]["summary"] == {"style": "paper", "chars": 1000}
    assert clean[3]["summary"] == {"style": "clean", "chars": 300}
    residue = r"[0-9]+ ?px|\bthumb\b"
    assert paper[0].filter(F.col("summary").rlike(residue)).count() > 100
    assert clean[0].filter(F.col("summary").rlike(residue)).count() == 1  # an unclosed file link
    assert clean[0].agg(F.max(F.length("summary"))).first()[0] == 300
