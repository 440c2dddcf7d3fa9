"""Distance profiles against an independent plain-Python BFS, on exact small graphs and random ones."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from wikigame_spark.graph.csr import compress
from wikigame_spark.graph.profiles import UNREACHED, ProfileGraph, backward_distances, degree_strata


def plain_distance(adj: dict[int, list[int]], s: int, t: int) -> int:
    """Forward BFS from s on out-links; -1 when t cannot be reached."""
    seen, queue = {s: 0}, deque([s])
    while queue:
        u = queue.popleft()
        if u == t:
            return seen[u]
        for v in adj.get(u, []):
            if v not in seen:
                seen[v] = seen[u] + 1
                queue.append(v)
    return -1


def build(node_ids: list[int], edges: list[tuple[int, int]]) -> ProfileGraph:
    ids = np.asarray(node_ids, dtype=np.int64)
    pos = {v: i for i, v in enumerate(node_ids)}
    src = np.array([pos[a] for a, _ in edges], dtype=np.int32)
    dst = np.array([pos[b] for _, b in edges], dtype=np.int32)
    order = np.lexsort((dst, src))
    ptr, idx = compress(np.bincount(src, minlength=ids.size), [(src[order], dst[order])])
    return ProfileGraph(ids, ptr, idx)


def random_case(seed: int, n: int, m: int, plays: int):
    rng = np.random.default_rng(seed)
    ids = sorted(rng.choice(10 * n, size=n, replace=False).tolist())  # ids that are not positions
    pairs = {(int(a), int(b)) for a, b in zip(rng.integers(0, n, m), rng.integers(0, n, m)) if a != b}
    edges = sorted((ids[a], ids[b]) for a, b in pairs)
    adj: dict[int, list[int]] = {}
    for a, b in edges:
        adj.setdefault(a, []).append(b)
    targets, routes = [], []
    for _ in range(plays):
        t = ids[int(rng.integers(n))]
        route = [ids[int(rng.integers(n))]]
        for _ in range(int(rng.integers(0, 8))):  # a walk on links, sometimes ending at a dead end
            nxt = adj.get(route[-1])
            if not nxt:
                break
            route.append(nxt[int(rng.integers(len(nxt)))])
        targets.append(t)
        routes.append(route)
    return build(ids, edges), adj, targets, routes


def test_chain_with_shortcut_and_dead_end():
    # 0 → 1 → 2 → 3, shortcut 0 → 2, dead end 1 → 4, 5 unreachable from 3's side
    g = build([0, 1, 2, 3, 4, 5], [(0, 1), (1, 2), (2, 3), (0, 2), (1, 4), (3, 5)])
    for method in ("targets", "pairs", "auto"):
        (p,) = g.profiles([3], [[0, 1, 4]], method=method)
        assert p.tolist() == [2, 2, UNREACHED]
        (q,) = g.profiles([3], [[3]], method=method)
        assert q.tolist() == [0]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_both_methods_match_plain_bfs(seed):
    g, adj, targets, routes = random_case(seed, n=300, m=900, plays=200)
    want = [[plain_distance(adj, v, t) for v in route] for t, route in zip(targets, routes)]
    for method in ("targets", "pairs"):
        got = g.profiles(targets, routes, method=method)
        assert [p.tolist() for p in got] == want, method
    mixed = g.profiles(targets, routes, method="auto", bfs_pages=3)  # some targets each way
    assert [p.tolist() for p in mixed] == want


def test_backward_search_stops_when_the_wanted_pages_are_settled():
    g = build(list(range(5)), [(0, 1), (1, 2), (2, 3), (3, 4)])
    full = backward_distances(*g.in_links, 4)
    assert full.tolist() == [4, 3, 2, 1, 0]
    early = backward_distances(*g.in_links, 4, np.array([3]))
    assert early[3] == 1 and early[0] == UNREACHED  # searched no further than needed


def test_unknown_node_is_named():
    g = build([0, 1], [(0, 1)])
    with pytest.raises(ValueError, match="node id 7"):
        g.profiles([1], [[7]])


def test_degree_strata_keep_ties_together():
    values = np.array([0, 0, 1, 1, 1, 1, 2, 3, 8, 20])
    strata, cuts = degree_strata(values, 4)
    assert cuts.tolist() == pytest.approx(np.quantile([1, 1, 1, 1, 2, 3, 8, 20], [0.25, 0.5, 0.75]).tolist())
    assert len(set(strata[:6].tolist())) == 1  # no links and equal degrees: one stratum
    assert strata.tolist() == sorted(strata.tolist())
    assert strata[-1] == 3
    for v, s in zip(values, strata):  # a value equal to a cut falls below it
        assert s == sum(v > c for c in cuts)
