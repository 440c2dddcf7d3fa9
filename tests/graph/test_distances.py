"""The distance methods: the GraphFrames one against a plain BFS and the local one; the auto choice."""

from __future__ import annotations

import numpy as np
import pytest

from tests.graph.graphs import adjacency_of, parquet_graph, plain_bfs
from wikigame_spark.graph import frame
from wikigame_spark.graph.distances import GRAPHFRAMES, LOCAL, choose_method, local_bytes, pair_distances


@pytest.mark.slow
def test_graphframes_method_on_latgalian_wikipedia_matches_plain_bfs(spark, ltg_graph):
    nodes, edges, _ = parquet_graph(ltg_graph)
    adj = adjacency_of(edges)
    ids = np.array(sorted(nodes["id"].tolist()))
    rng = np.random.default_rng(11)
    s, t = rng.choice(ids, 600), rng.choice(ids, 600)
    g = frame.read_graph(spark, ltg_graph)
    gf = pair_distances(g.nodes, g.edges, method=GRAPHFRAMES)
    got = gf.distances(s, t)
    want = [plain_bfs(adj, int(a), int(b)) for a, b in zip(s, t)]
    assert [d if d >= 0 else None for d in got.tolist()] == want
    assert sum(w is not None and w >= 3 for w in want) > 50  # real searches, not only decided pairs
    local = pair_distances(g.nodes, g.edges, method=LOCAL)
    assert local.distances(s, t).tolist() == got.tolist()  # same codes for the unreachable ones too
    assert gf.giant_size == local.giant_size > 100


@pytest.mark.slow
def test_both_methods_answer_alike_on_sparse_ids_with_a_target_filter(spark, union_dir):
    """Ranks to ids (ids are not 0…N−1), target filtering, largest SCC and reason codes agree."""
    g = frame.read_graph(spark, union_dir)
    targets = g.nodes.filter("id >= 300")
    for largest in (False, True):
        local = pair_distances(g.nodes, g.edges, targets, method=LOCAL, largest_scc=largest)
        gf = pair_distances(g.nodes, g.edges, targets, method=GRAPHFRAMES, largest_scc=largest)
        assert (local.num_sources, local.num_targets) == (gf.num_sources, gf.num_targets)
        ranks = np.arange(local.num_sources)[::-1]
        assert gf.source_ids(ranks).tolist() == local.source_ids(ranks).tolist()
        t_ranks = np.arange(local.num_targets)
        assert gf.target_ids(t_ranks).tolist() == local.target_ids(t_ranks).tolist()
        assert min(local.target_ids(t_ranks)) >= 300
        rng = np.random.default_rng(3)
        s = local.source_ids(rng.integers(0, local.num_sources, 150))
        t = local.target_ids(rng.integers(0, local.num_targets, 150))
        got = local.distances(s, t)
        assert gf.distances(s, t).tolist() == got.tolist()
        if largest:
            # the shortcut family (8 nodes, ids 607…614) is the largest SCC
            assert local.source_ids(np.arange(local.num_sources)).tolist() == list(range(607, 615))
        else:
            assert len(set(got.tolist())) >= 5  # several distances and reason codes among them


def test_auto_method_by_memory():
    assert local_bytes(1000, 10_000) < local_bytes(1000, 20_000)
    assert local_bytes(1000, 10**8) < local_bytes(1000, 10**8, mapped=False)  # collected edge columns cost more
    assert choose_method("auto", 10, 100, local_bytes(10, 100), mapped=False) == GRAPHFRAMES
    assert choose_method("auto", 10, 100, local_bytes(10, 100)) == LOCAL
    assert choose_method("auto", 10, 101, local_bytes(10, 100)) == GRAPHFRAMES
    assert choose_method(GRAPHFRAMES, 1, 1, 10**12) == GRAPHFRAMES
    with pytest.raises(ValueError, match="method"):
        choose_method("distributed", 1, 1, 1)
