"""Table 1 and Figure 1B: hand-computed values on small graphs, the job end to end on real data."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tests.graph.graphs import parquet_graph, write_graph_dir
from wikigame_spark.graph import frame
from wikigame_spark.graph.distances import pair_distances
from wikigame_spark.graph.stats import random_pair_distances, reach_curve, table1


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


def test_reach_curve_by_hand():
    c = reach_curve(np.array([1, 2, 2, -1, 4, -3, 1, 1]))
    assert c["pairs"] == 8 and c["reachable"] == 6 and c["max_steps"] == 4
    assert c["pairs_at_steps"] == [0, 3, 2, 0, 1]
    assert c["fraction_within_steps"] == pytest.approx([0, 3 / 8, 5 / 8, 5 / 8, 6 / 8])
    assert c["fraction_reachable"] == pytest.approx(0.75)
    empty = reach_curve(np.array([-1, -2]))
    assert empty["reachable"] == 0 and empty["fraction_within_steps"] == [0.0]


def test_random_pairs_are_seeded_and_distinct(spark, union_dir):
    g = frame.read_graph(spark, union_dir)
    oracle = pair_distances(g.nodes, g.edges, method="local")
    a = random_pair_distances(oracle, 3, 200)
    assert a.size == 200 and a.tolist() == random_pair_distances(oracle, 3, 200).tolist()
    assert a.tolist() != random_pair_distances(oracle, 4, 200).tolist()
    assert not np.any(a == 0)  # source ≠ target


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
    assert stats["graph"]["dbname"] == manifest["dbname"]

    mlflow.set_tracking_uri(mlflow_tmp)
    runs = mlflow.search_runs(experiment_names=["graph_stats"], output_format="list")
    assert runs and runs[0].data.metrics["nodes"] == 903
    assert runs[0].data.params["pairs"] == "300"

    with pytest.raises(FileExistsError, match="--overwrite"):
        graph_stats.main(["--graph", ltg_graph, "--output", out])
