"""The distributed method: bidirectional BFS on DataFrames, against a plain BFS and the local method."""

from __future__ import annotations

import numpy as np
import pytest

from tests.graph.graphs import adjacency_of, parquet_graph, plain_bfs, union_graph
from wikigame_spark.graph import bfs, frame
from wikigame_spark.graph.distances import LOCAL, choose_method, pair_distances


def test_union_graph_pairs_match_plain_bfs(spark, union_dir):
    nodes, edges, offsets = union_graph()
    g = frame.read_graph(spark, union_dir)
    deg = frame.degrees(g.nodes, g.edges).persist()
    adj = bfs.adjacency(g.edges, deg).persist()
    # Every ordered pair inside each family, and some across families (never reachable).
    family = {n: max(o for o in offsets.values() if o <= n) for n in nodes}
    inside = [(s, t) for s in nodes for t in nodes if s != t and family[s] == family[t]]
    across = [(s, t) for s in nodes[::5] for t in nodes[::7] if family[s] != family[t]][:40]
    rows = [(k, s, t) for k, (s, t) in enumerate(inside + across)]
    pairs = spark.createDataFrame(rows, "pair long, source long, target long")
    got = bfs.bidirectional_distances(pairs, adj, deg, batch_pairs=160)  # two batches
    plain = adjacency_of(edges)
    assert len(got) == len(rows)
    for k, s, t in rows:
        want = plain_bfs(plain, s, t)
        assert (got[k] if got[k] >= 0 else None) == want, (s, t)


def test_local_method_agrees_with_plain_bfs_on_latgalian_wikipedia(spark, ltg_graph):
    # The distributed method on this graph is checked draw by draw against the local one in
    # test_sampling (same games, same discard counts by reason).
    nodes, edges, _ = parquet_graph(ltg_graph)
    plain = adjacency_of(edges)
    ids = np.array(sorted(nodes["id"].tolist()))
    rng = np.random.default_rng(11)
    s, t = rng.choice(ids, 3000), rng.choice(ids, 3000)
    g = frame.read_graph(spark, ltg_graph)
    local = pair_distances(g.nodes, g.edges, method="local")
    got = local.distances(s, t)
    want = [plain_bfs(plain, int(a), int(b)) for a, b in zip(s, t)]
    assert [d if d >= 0 else None for d in got.tolist()] == want
    assert sum(w is not None and w >= 3 for w in want) > 200  # real searches, not only pre-filtered pairs
    assert local.node_ids(np.array([0, 5])).tolist() == ids[[0, 5]].tolist()


def test_auto_method_by_size():
    assert choose_method("auto", 10, 10) == LOCAL
    assert choose_method("auto", 11, 10) == "distributed"
    assert choose_method("distributed", 1, 10) == "distributed"
    with pytest.raises(ValueError, match="method"):
        choose_method("graphx", 1, 1)


def test_both_methods_answer_alike_on_sparse_ids_with_a_target_filter(spark, union_dir):
    """Ranks to ids (ids are not 0…N−1), target filtering and reason codes agree across methods."""
    g = frame.read_graph(spark, union_dir)
    targets = g.nodes.filter("id >= 300")
    local = pair_distances(g.nodes, g.edges, targets, method="local")
    distributed = pair_distances(g.nodes, g.edges, targets, method="distributed")
    assert (local.num_nodes, local.num_targets) == (distributed.num_nodes, distributed.num_targets)
    ranks = np.arange(local.num_nodes)[::-1]
    assert distributed.node_ids(ranks).tolist() == local.node_ids(ranks).tolist()
    t_ranks = np.arange(local.num_targets)
    assert distributed.target_ids(t_ranks).tolist() == local.target_ids(t_ranks).tolist()
    assert min(local.target_ids(t_ranks)) >= 300
    rng = np.random.default_rng(3)
    s = local.node_ids(rng.integers(0, local.num_nodes, 150))
    t = local.target_ids(rng.integers(0, local.num_targets, 150))
    got = local.distances(s, t)
    assert distributed.distances(s, t).tolist() == got.tolist()
    assert len(set(got.tolist())) >= 5  # several distances and reason codes among them
