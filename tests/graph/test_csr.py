"""The single-node method: CSR arrays, SCC reachability and bidirectional BFS against a plain BFS (no Spark)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from tests.graph.graphs import FAMILIES, KNOWN, adjacency_of, plain_bfs, union_graph
from wikigame_spark.graph.csr import CsrGraph, transpose
from wikigame_spark.graph.reach import DIFFERENT_COMPONENT, NO_PATH, SOURCE_NO_OUT_LINKS, TARGET_NO_IN_LINKS


def csr(nodes, edges) -> CsrGraph:
    src = np.array([a for a, _ in edges], dtype=np.int64)
    dst = np.array([b for _, b in edges], dtype=np.int64)
    return CsrGraph.from_edges(np.array(sorted(nodes), dtype=np.int64), src, dst)


def all_pairs(nodes):
    s, t = np.meshgrid(np.array(nodes), np.array(nodes))
    return s.ravel(), t.ravel()


@pytest.mark.parametrize("family", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_known_answers(family):
    name, nodes, edges = family
    g = csr(nodes, edges)
    for (s, t), want in KNOWN[name].items():
        got = int(g.distances(np.array([s]), np.array([t]))[0])
        assert (got if got >= 0 else None) == want, (name, s, t)


def test_every_pair_of_the_union_graph_matches_plain_bfs():
    nodes, edges, _ = union_graph()
    g = csr(nodes, edges)
    s, t = all_pairs(nodes)
    got = g.distances(s, t)
    adj = adjacency_of(edges)
    for a, b, d in zip(s.tolist(), t.tolist(), got.tolist()):
        assert (d if d >= 0 else None) == plain_bfs(adj, a, b), (a, b)


def test_random_graphs_match_plain_bfs():
    rng = np.random.default_rng(5)
    for trial in range(150):
        n = int(rng.integers(2, 25))
        m = int(rng.integers(0, 3 * n))
        pairs = {(int(a), int(b)) for a, b in rng.integers(0, n, (m, 2)) if a != b}
        ids = np.sort(rng.choice(10_000, n, replace=False)) if trial % 2 else np.arange(n)
        edges = [(int(ids[a]), int(ids[b])) for a, b in pairs]
        g = csr(ids.tolist(), edges)
        s, t = all_pairs(ids.tolist())
        adj = adjacency_of(edges)
        got = g.distances(s, t)
        for a, b, d in zip(s.tolist(), t.tolist(), got.tolist()):
            assert (d if d >= 0 else None) == plain_bfs(adj, a, b), (trial, a, b)


def test_reason_codes():
    # 0→1→2, 3→0 (3 has no in-links), 4 isolated, 5→6 elsewhere, 2 has no out-links.
    g = csr(range(7), [(0, 1), (1, 2), (3, 0), (5, 6)])
    d = g.distances(np.array([2, 0, 0, 1, 0, 0]), np.array([0, 3, 6, 0, 2, 0]))
    assert d.tolist() == [SOURCE_NO_OUT_LINKS, TARGET_NO_IN_LINKS, DIFFERENT_COMPONENT, NO_PATH, 2, 0]


def test_hub_side_is_never_expanded_when_the_other_is_cheaper():
    # A target with 5,000 in-links reached from a source with one out-link: still exact.
    hub_in = [(i, 0) for i in range(2, 5002)]
    g = csr(range(5002), [*hub_in, (1, 2)])
    assert g.distances(np.array([1]), np.array([0])).tolist() == [2]


def test_unknown_node_id_is_named():
    g = csr([0, 5, 9], [(0, 5)])
    with pytest.raises(ValueError, match="node id 7"):
        g.distances(np.array([0]), np.array([7]))
    with pytest.raises(ValueError, match="node id 3"):
        csr([0, 1], [(0, 3)])


def test_in_links_built_in_runs_equal_scipys_transpose():
    rng = np.random.default_rng(8)
    n = 3000
    pairs = np.unique(rng.integers(0, n, (40_000, 2)), axis=0)
    g = csr(range(n), [tuple(p) for p in pairs.tolist()])
    ptr, idx = transpose(g.out_ptr, g.out_idx, run_edges=997)  # many runs, cutting no row
    want = sp.csr_matrix((np.ones(pairs.shape[0]), (pairs[:, 0], pairs[:, 1])), shape=(n, n)).tocsc()
    want.sort_indices()
    assert ptr.dtype == np.int32 and idx.dtype == np.int32
    assert np.array_equal(ptr, want.indptr) and np.array_equal(idx, want.indices)
    assert np.array_equal(g.in_ptr, ptr) and np.array_equal(g.in_idx, idx)


def test_read_only_arrays_are_searched_in_place():
    g = csr(range(5), [(0, 1), (1, 2), (2, 0), (2, 3)])
    ptr, idx = g.out_ptr.copy(), g.out_idx.copy()
    ptr.flags.writeable = idx.flags.writeable = False  # as np.load(mmap_mode="r") gives them
    mapped = CsrGraph(np.arange(5), ptr, idx)
    assert mapped.out_idx is idx and mapped.scc.tolist() == g.scc.tolist()
    assert (
        mapped.distances(np.array([1, 0, 3]), np.array([0, 3, 4])).tolist()
        == g.distances(np.array([1, 0, 3]), np.array([0, 3, 4])).tolist()
        == [2, 3, SOURCE_NO_OUT_LINKS]
    )
