"""Reachability from SCCs and their condensation, against a textbook BFS on every pair."""

from __future__ import annotations

import numpy as np

from tests.graph.graphs import adjacency_of, plain_bfs, union_graph
from tests.graph.test_frame import BOWTIE
from wikigame_spark.graph.csr import CsrGraph
from wikigame_spark.graph.reach import (
    DIFFERENT_COMPONENT,
    NO_PATH,
    REACHABLE,
    SOURCE_NO_OUT_LINKS,
    TARGET_NO_IN_LINKS,
    Condensation,
)


def every_pair_decision(nodes, edges) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    g = CsrGraph.from_edges(np.array(sorted(nodes)), np.array([a for a, _ in edges]), np.array([b for _, b in edges]))
    s, t = (x.ravel() for x in np.meshgrid(np.array(sorted(nodes)), np.array(sorted(nodes))))
    keep = s != t
    s, t = s[keep], t[keep]
    a, b = g.positions(s), g.positions(t)
    code = g.condensation.decide(g.out_deg[a], g.in_deg[b], g.scc[a], g.scc[b])
    return s, t, code


def check_against_bfs(nodes, edges) -> np.ndarray:
    adj = adjacency_of(edges)
    s, t, code = every_pair_decision(nodes, edges)
    for a, b, c in zip(s.tolist(), t.tolist(), code.tolist()):
        assert (c == REACHABLE) == (plain_bfs(adj, a, b) is not None), (a, b, c)
    return code


def test_union_and_bowtie_graphs_every_pair():
    nodes, edges, _ = union_graph()
    code = check_against_bfs(nodes, edges)
    assert {REACHABLE, NO_PATH, SOURCE_NO_OUT_LINKS, TARGET_NO_IN_LINKS, DIFFERENT_COMPONENT} <= set(code.tolist())
    bow_nodes, bow_edges, _ = BOWTIE
    check_against_bfs(bow_nodes, bow_edges)


def test_random_graphs_every_pair():
    """Sparse random digraphs: long condensation DAGs, paths that avoid the giant SCC, ties."""
    rng = np.random.default_rng(17)
    for _ in range(60):
        n = int(rng.integers(2, 40))
        m = int(rng.integers(0, 2 * n))
        pairs = {(int(a), int(b)) for a, b in rng.integers(0, n, (m, 2)) if a != b}
        check_against_bfs(list(range(n)), sorted(pairs))


def test_levels_and_giant_shortcut():
    # DAG of SCC names: 10 → 20 (giant) → 30, and 10 → 40 → 30 avoiding nothing; 50 alone.
    c = Condensation(np.array([10, 20, 10, 40]), np.array([20, 30, 40, 30]), giant=20)
    assert c.level[np.searchsorted(c.names, [10, 20, 40, 30])].tolist() == [0, 1, 1, 2]
    ones = np.ones(5)
    got = c.decide(ones, ones, np.array([10, 30, 40, 20, 50]), np.array([30, 10, 20, 40, 10]))
    assert got.tolist() == [REACHABLE, NO_PATH, NO_PATH, NO_PATH, DIFFERENT_COMPONENT]
