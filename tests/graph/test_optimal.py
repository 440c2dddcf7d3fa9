"""Optimal moves and the expert's routes (graph/optimal.py, play/steps.py), checked against
networkx's breadth-first search on the real Latgalian graph and a generated larger one."""

import networkx as nx
import numpy as np
import pytest

from tests.graph.graphs import parquet_graph
from wikigame_spark.graph.optimal import Searches, descend, optimal_choice, optimal_links
from wikigame_spark.graph.profiles import UNREACHED
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.play.rules import Rules
from wikigame_spark.play.steps import REWARDS, score_routes


def generated(n: int = 20_000, links: int = 8, seed: int = 5) -> WorkerGraph:
    """A sparse random digraph with a few hubs: every node links to ``links`` others, a third of
    them drawn from a small hub set (so shortest paths tie often)."""
    rng = np.random.default_rng(seed)
    src = np.repeat(np.arange(n), links)
    hubs = rng.integers(0, n, 50)
    dst = np.where(
        rng.random(src.size) < 0.33, hubs[rng.integers(0, hubs.size, src.size)], rng.integers(0, n, src.size)
    )
    keep = src != dst
    pairs = np.unique(np.stack([src[keep], dst[keep]], axis=1), axis=0)
    return WorkerGraph([f"N{i}" for i in range(n)], [""] * n, pairs[:, 0], pairs[:, 1])


def digraph(g: WorkerGraph) -> nx.DiGraph:
    d = nx.DiGraph()
    d.add_nodes_from(range(g.num_nodes))
    src = np.repeat(np.arange(g.num_nodes), np.diff(g.indptr))
    d.add_edges_from(zip(src.tolist(), g.indices.tolist()))
    return d


def to_target(d: nx.DiGraph, target: int) -> dict[int, int]:
    return dict(nx.single_target_shortest_path_length(d, target))


def check_routes(g: WorkerGraph, d: nx.DiGraph, pairs, seed: int = 0) -> int:
    """Every expert route is a shortest path whose every move is optimal by networkx's distances,
    and every scored step's optimal set is exactly the offered pages at the least distance — by
    pair searches and by a whole backward search alike."""
    checked = 0
    for game, (s, t) in enumerate(pairs):
        dist = dict(to_target(d, t))
        by_pairs, whole = Searches(g).to(t, 0), Searches(g, bfs_at=0).to(t, 0)
        route = descend(g, by_pairs, s, seed, game)
        assert route == descend(g, whole, s, seed, game)
        if s not in dist:
            assert route is None
            continue
        assert len(route) - 1 == dist[s] and route[0] == s and route[-1] == t
        for rules in (Rules(), Rules(allow_revisits=True), Rules(allow_back=True)):
            (steps,) = score_routes(g, by_pairs if rules.allow_back else whole, [(route, rules)])
            for step in steps:
                want = {int(v) for v in step.offered if v in dist}
                best = min((dist[v] for v in want), default=None)
                assert set(step.optimal.tolist()) == {v for v in want if dist[v] == best}
                assert [dist.get(int(v), UNREACHED) for v in step.offered] == step.offered_distances.tolist()
                assert step.is_optimal and step.reward == REWARDS[0] and step.progress == 1
                checked += 1
    return checked


def test_expert_routes_on_the_latgalian_graph_are_shortest_paths(ltg_graph):
    g = WorkerGraph.from_directory(ltg_graph)
    _, edges, _ = parquet_graph(ltg_graph)
    d = nx.DiGraph(edges)
    d.add_nodes_from(range(g.num_nodes))
    rng = np.random.default_rng(1)
    pairs = [tuple(int(v) for v in rng.integers(0, g.num_nodes, 2)) for _ in range(300)]
    assert check_routes(g, d, [(s, t) for s, t in pairs if s != t]) > 100


def test_expert_routes_on_a_generated_graph_with_many_ties():
    g = generated()
    d = digraph(g)
    rng = np.random.default_rng(2)
    pairs = [tuple(int(v) for v in rng.integers(0, g.num_nodes, 2)) for _ in range(60)]
    assert check_routes(g, d, [(s, t) for s, t in pairs if s != t]) > 100


def test_ties_are_broken_by_the_seed_and_only_by_it():
    g = generated()
    to = Searches(g).to(11_111, 0)
    routes = {seed: [descend(g, to, 7, seed, game) for game in range(20)] for seed in (0, 1)}
    assert routes[0] == [descend(g, Searches(g).to(11_111, 0), 7, 0, game) for game in range(20)]
    assert any(a != b for a, b in zip(routes[0], routes[1]))  # another seed takes other shortest paths


def test_scores_of_a_wandering_route():
    g = generated(2_000, 4, seed=9)
    d = digraph(g)
    t = 5
    dist = dict(to_target(d, t))
    start = next(v for v in range(100, 2_000) if dist.get(v, 0) >= 3)
    route = [start]
    for _ in range(6):  # the worst reachable link each time (or any), never the target
        out = [int(v) for v in g.out_links(route[-1]) if v not in route and v != t]
        if not out:
            break
        route.append(max(out, key=lambda v: dist.get(v, 99)))
    (steps,) = score_routes(g, Searches(g).to(t, 0), [(route, Rules())])
    assert [s.move for s in steps] == route[1:]
    for s in steps:
        best = min(dist[int(v)] for v in s.offered if int(v) in dist)
        worse = dist.get(s.move)
        expected = 0.0 if worse is None or worse - best > 2 else REWARDS[worse - best]
        assert s.reward == expected and s.best_distance == best
        assert s.progress == (None if worse is None or s.current not in dist else dist[s.current] - worse)


def test_no_optimal_link_when_nothing_offered_reaches():
    offered = np.array([3, 4])
    distances = np.full(2, UNREACHED, dtype=np.int32)
    assert optimal_links(offered, distances).size == 0 and optimal_choice(offered, distances, 0, 0, 0) is None


@pytest.mark.parametrize("seed", [0, 1])
def test_optimal_choice_is_among_the_nearest(seed):
    offered = np.array([1, 2, 3, 4])
    distances = np.array([3, 2, 2, UNREACHED], dtype=np.int32)
    assert optimal_choice(offered, distances, seed, 4, 2) in (2, 3)


def test_the_whole_search_from_the_measured_break_even_of_the_graphs_size():
    from wikigame_spark.graph.optimal import BREAK_EVEN, bfs_pages

    assert [bfs_pages(links) for links, _ in BREAK_EVEN] == [pages for _, pages in BREAK_EVEN]
    sizes = [1, 2_601, 119_772, 1_000_000, 32_000_000, 296_000_000]
    at = [bfs_pages(n) for n in sizes]
    assert at == sorted(at) and at[0] >= 1 and 38 < at[3] < 3_000 < at[-1]
