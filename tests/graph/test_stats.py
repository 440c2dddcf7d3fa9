"""Table 1 and Figure 1B: hand-computed values on small graphs, the job end to end on real data."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tests.graph.graphs import FAMILIES, parquet_graph, write_graph_dir
from wikigame_spark.graph import frame
from wikigame_spark.graph.distances import pair_distances
from wikigame_spark.graph.stats import components, random_pair_distances, reach_curve, table1


@pytest.mark.slow
def test_table1_by_hand(spark, tmp_path):
    # 0→1→2→0 cycle; 3→0 (3: links out, none in = unreachable); 1→4 (4: dead end); 5 isolated.
    titles = ["Aa", "Bbbb", "Č", "Dddddd", "Ee", "F"]
    path = write_graph_dir(
        spark, str(tmp_path / "g"), range(6), [(0, 1), (1, 2), (2, 0), (3, 0), (1, 4)], titles=titles
    )
    g = frame.read_graph(spark, path)
    t = table1(g.nodes, g.edges)
    assert t["nodes"] == 6 and t["edges"] == 5
    assert (t["disconnected_nodes"], t["unreachable_nodes"], t["dead_end_nodes"]) == (1, 1, 1)
    assert t["pct_disconnected"] == pytest.approx(100 / 6)
    assert t["pct_unreachable"] == pytest.approx(100 / 6)
    assert t["pct_dead_ends"] == pytest.approx(100 / 6)
    assert t["mean_edges_per_node"] == pytest.approx(5 / 6)
    assert t["mean_edges_per_connected_node"] == pytest.approx(5 / 5)
    assert t["mean_title_length"] == pytest.approx(16 / 6)  # characters, not bytes (Č is one)
    for method in ("local", "graphframes"):  # SCCs {0,1,2} {3} {4} {5}; WCCs {0,1,2,3,4} {5}
        c = components(pair_distances(g.nodes, g.edges, method=method), t["nodes"])
        assert (c["scc_count"], c["largest_scc_nodes"], c["scc_singletons"]) == (4, 3, 3), method
        assert c["largest_scc_share"] == pytest.approx(0.5)
        assert (c["wcc_count"], c["largest_wcc_nodes"], c["wcc_singletons"]) == (2, 5, 1), method
        assert (c["max_in_degree"], c["max_out_degree"]) == (2, 2), method


def test_reach_curve_by_hand():
    c = reach_curve(np.array([1, 2, 2, -1, 4, -3, 1, 1]))
    assert c["pairs"] == 8 and c["reachable"] == 6 and c["max_steps"] == 4
    assert c["pairs_at_steps"] == [0, 3, 2, 0, 1]
    assert c["fraction_within_steps"] == pytest.approx([0, 3 / 8, 5 / 8, 5 / 8, 6 / 8])
    assert c["fraction_reachable"] == pytest.approx(0.75)
    empty = reach_curve(np.array([-1, -2]))
    assert empty["reachable"] == 0 and empty["fraction_within_steps"] == [0.0]


@pytest.mark.slow
def test_random_pairs_are_seeded_and_distinct(spark, union_dir):
    g = frame.read_graph(spark, union_dir)
    oracle = pair_distances(g.nodes, g.edges, method="local")
    a = random_pair_distances(oracle, 3, 200)
    assert a.size == 200 and a.tolist() == random_pair_distances(oracle, 3, 200).tolist()
    gf = pair_distances(g.nodes, g.edges, method="graphframes")
    assert random_pair_distances(gf, 3, 200).tolist() == a.tolist()
    assert a.tolist() != random_pair_distances(oracle, 4, 200).tolist()
    assert not np.any(a == 0)  # source ≠ target


@pytest.mark.slow
def test_graph_stats_job_on_latgalian_wikipedia(spark, ltg_graph, tmp_path, mlflow_tmp):
    import mlflow

    from jobs import graph_stats

    out = str(tmp_path / "stats")
    assert graph_stats.main(["--graph", ltg_graph, "--output", out, "--pairs", "300", "--seed", "5"]) == 0
    with open(os.path.join(out, "stats.json")) as f:
        stats = json.load(f)
    with open(os.path.join(out, "reachability.png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"

    # Table 1 recomputed independently from the Parquet files.
    nodes, edges, manifest = parquet_graph(ltg_graph)
    outs = {a for a, _ in edges}
    ins = {b for _, b in edges}
    ids = set(nodes["id"].tolist())
    t = stats["table1"]
    assert t["nodes"] == len(ids) == 903 and t["edges"] == len(edges) == 2601
    assert t["disconnected_nodes"] == len(ids - outs - ins)
    assert t["unreachable_nodes"] == len((ids & outs) - ins)
    assert t["dead_end_nodes"] == len((ids & ins) - outs)
    assert t["mean_title_length"] == pytest.approx(nodes["title"].str.len().mean())
    r = stats["reachability"]
    assert r["pairs"] == 300 and r["seed"] == 5 and r["method"] == "local"
    assert r["fraction_within_steps"][-1] == pytest.approx(r["fraction_reachable"])
    assert r["decided_by_reachability"] == r["pairs"] - r["reachable"] > 0
    assert stats["graph"]["dbname"] == manifest["dbname"]
    c = stats["components"]
    want = independent_components(ids, edges)
    assert {k: c[k] for k in want} == want
    with open(os.path.join(out, "stats.md")) as f:
        md = f.read()
    assert f"| largest SCC (nodes) | {c['largest_scc_nodes']} |" in md and "(reachability.png)" in md
    with open(os.path.join(out, "stats.html")) as f:
        page = f.read()
    assert f"<td>strongly connected components</td><td>{c['scc_count']}</td>" in page
    assert "data:image/png;base64," in page

    mlflow.set_tracking_uri(mlflow_tmp)
    runs = mlflow.search_runs(experiment_names=["wikigame"], output_format="list")
    assert runs[0].data.tags["stage"] == "graph_stats" and runs[0].data.tags["graph"] == "ltgwiki"
    assert runs and runs[0].data.metrics["nodes"] == 903
    assert runs[0].data.metrics["scc_count"] == c["scc_count"]
    assert runs[0].data.metrics["largest_scc_share"] == pytest.approx(c["largest_scc_share"])
    assert runs[0].data.params["pairs"] == "300"

    with pytest.raises(FileExistsError, match="--overwrite"):
        graph_stats.main(["--graph", ltg_graph, "--output", out])


def independent_components(ids, edges) -> dict:
    """Component counts by scipy on the Parquet edges, independently of GraphFrames."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    pos = {n: i for i, n in enumerate(sorted(ids))}
    m = csr_matrix((np.ones(len(edges)), ([pos[a] for a, _ in edges], [pos[b] for _, b in edges])), (len(pos),) * 2)
    out = {}
    for kind, connection in (("wcc", "weak"), ("scc", "strong")):
        n, lab = connected_components(m, directed=True, connection=connection)
        sizes = np.bincount(lab)
        out.update(
            {
                f"{kind}_count": n,
                f"largest_{kind}_nodes": int(sizes.max()),
                f"{kind}_singletons": int((sizes == 1).sum()),
            }
        )
    return out


@pytest.mark.cluster
def test_graphframes_stage_on_the_standalone_cluster(spark, tmp_path):
    """graph_stats with the GraphFrames method by spark-submit to a master with two worker processes
    on 127.0.0.1 (GraphFrames from spark-defaults' spark.jars), on the known-answer families side by
    side: their components by hand, the rest the same as in-process."""
    import subprocess
    import sys

    from jobs import graph_stats
    from tests.conftest import ROOT
    from tests.standalone import StandaloneCluster

    nodes, edges = [], []
    for _, ns, es in FAMILIES:  # numbered on from the family before: the contract's ids 0…N−1
        edges += [(a + len(nodes), b + len(nodes)) for a, b in es]
        nodes += [n + len(nodes) for n in ns]
    graph = write_graph_dir(spark, str(tmp_path / "families"), nodes, edges)
    here, there = str(tmp_path / "here"), str(tmp_path / "there")
    assert graph_stats.main(["--graph", graph, "--output", here, "--pairs", "200", "--method", "local"]) == 0
    # the venv's Spark settings (make install puts them in its pyspark/conf), as a user has them
    env = {**{k: v for k, v in os.environ.items() if k != "SPARK_CONF_DIR"}, "PYTHONPATH": ROOT}
    with StandaloneCluster(str(tmp_path)) as cluster:
        submit = [os.path.join(os.path.dirname(sys.executable), "spark-submit"), "--master", cluster.url]
        submit += ["--conf", "spark.executor.memory=1g", "--conf", "spark.cores.max=2"]
        args = ["--graph", graph, "--output", there, "--pairs", "200", "--method", "graphframes"]
        run = subprocess.run(
            [*submit, "jobs/graph_stats.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
        )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "graph_stats: wrote" in run.stdout
    a, b = (json.load(open(os.path.join(p, "stats.json"))) for p in (here, there))
    # weak: one each, the islands three; strong: every node of the chain, star and dead ends alone,
    # the islands' five, the cycle and the shortcut's ring one each, one_way's two pairs
    assert (b["components"]["wcc_count"], b["components"]["scc_count"]) == (9, 6 + 9 + 1 + 4 + 5 + 2 + 1)
    assert a["components"] == b["components"] and a["table1"] == b["table1"]
    assert b["reachability"]["method"] == "graphframes" and a["reachability"]["method"] == "local"
    for k in ("pairs_at_steps", "fraction_within_steps", "decided_by_reachability"):
        assert a["reachability"][k] == b["reachability"][k]
