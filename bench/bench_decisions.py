"""Decision records (every step with every offered page's exact distance): records per second and
peak memory, against one pair search per offered page as the reference, in the same run.

python bench/bench_decisions.py [--nodes 1000000] [--edges 32000000] [--games 100] [--walks 1 40]
    [--out out/bench]

The graph is bench_sampling's generator (power-law in- and out-degrees), kept under OUT and reused.
Each game is a random source and a random target with in-links; its routes are the expert's (a
shortest path, when one exists) and ``walks`` random walks of up to 12 steps (agents drifting
through hubs: one run, or many runs and players on the same games), scored under the paper's
rules. ``auto`` is what a task of ``jobs/decision_records.py`` does
(:class:`~wikigame_spark.graph.optimal.Searches`: per target, a whole backward search when its
routes ask about many pages, else a pair search per page); ``bfs`` always takes the backward
search; ``pairs``, the reference, gives every offered page its distance by its own bidirectional
search. Each runs in its own process, so its peak RSS is its own (the graph's CSR in memory; a
worker maps the play stage's files instead: the same bytes, shared by a node's workers). Prints
one JSON line per method and scenario and writes ``OUT/bench_decisions.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_profiles import ensure_graph, graph_path, in_own_process, load
from wikigame_spark.graph.csr import CsrGraph
from wikigame_spark.graph.optimal import Searches, descend
from wikigame_spark.graph.profiles import UNREACHED
from wikigame_spark.play.rules import Rules
from wikigame_spark.play.steps import offered_along, score_routes


class Graph:
    """The out-links as the engine's graph interface (titles are not read here)."""

    def __init__(self, ptr: np.ndarray, idx: np.ndarray) -> None:
        self.indptr, self.indices = ptr, idx

    def out_links(self, node: int) -> np.ndarray:
        return self.indices[self.indptr[node] : self.indptr[node + 1]]


def games(graph: Graph, n: int, walks: int, seed: int = 7) -> list[tuple[int, int, list[list[int]]]]:
    """(source, target, random walks) per game."""
    rng = np.random.default_rng(seed)
    ptr, idx = graph.indptr, graph.indices
    nodes = ptr.size - 1
    has_in = np.flatnonzero(np.bincount(idx, minlength=nodes) > 0)
    out = []
    for s, t in zip(rng.integers(0, nodes, n), has_in[rng.integers(0, has_in.size, n)]):
        played = []
        for _ in range(walks):
            walk = [int(s)]
            for _ in range(12):
                links = [int(v) for v in graph.out_links(walk[-1]) if v not in walk]
                if walk[-1] == t or not links:
                    break
                walk.append(links[rng.integers(len(links))])
            played.append(walk)
        out.append((int(s), int(t), played))
    return out


def searched(graph: Graph, played: list, bfs_at: int | None) -> dict:
    """As a task of the job: per target, the distances, the expert's descent, every route scored."""
    searches = Searches(graph, bfs_at)
    started = time.perf_counter()
    searches.profile.pair_graph  # noqa: B018 - built once per worker (SCCs, condensation), timed apart
    searches.profile.in_links  # noqa: B018
    prepared = time.perf_counter()
    records = 0
    for game, (s, t, walks) in enumerate(played):
        distances = searches.to(t, searches.expected_pages(sum(len(w) - 1 for w in walks) + 6))
        expert = descend(graph, distances, s, 0, game)
        routes = [(w, Rules()) for w in walks] + ([(expert, Rules())] if expert else [])
        records += sum(len(steps) for steps in score_routes(graph, distances, routes))
    return {"prepare_s": round(prepared - started, 1), "records": records, "seconds": time.perf_counter() - prepared}


def pairs(graph: Graph, played: list) -> dict:
    """The reference: each offered page's distance by a pair search, the expert by greedy descent
    on those distances (ties to the lowest id: the cost, not the choice, is measured)."""
    started = time.perf_counter()
    csr = CsrGraph(np.arange(graph.indptr.size - 1, dtype=np.int64), graph.indptr, graph.indices)
    prepared = time.perf_counter()
    records = 0

    def distances(pages: np.ndarray, target: int) -> np.ndarray:
        d = np.zeros(pages.size, dtype=np.int32)
        other = pages != target
        if other.any():
            d[other] = csr.distances(pages[other], np.full(int(other.sum()), target, dtype=np.int64))
        return np.where(d < 0, UNREACHED, d)

    for s, t, walks in played:
        for walk in walks:
            for offered in offered_along(graph, walk, Rules()):
                distances(offered, t)
                records += 1
        (d,) = distances(np.array([s]), t)
        route = [s]
        while d > 0 and route[-1] != t:
            offered = graph.out_links(route[-1])
            offered = offered[~np.isin(offered, route)]
            found = distances(offered, t)
            records += 1
            route.append(int(offered[np.flatnonzero(found == d - 1)[0]]))
            d -= 1
    return {"prepare_s": round(prepared - started, 1), "records": records, "seconds": time.perf_counter() - prepared}


def measure(path: str, method: str, n_games: int, walks: int) -> dict:
    started = time.perf_counter()
    profile = load(path)
    graph = Graph(profile.out_ptr, profile.out_idx)
    played = games(graph, n_games, walks)
    loaded = time.perf_counter()
    if method == "pairs":
        result = pairs(graph, played)
    else:
        result = searched(graph, played, None if method == "auto" else 0)
    return {
        "method": method,
        "walks": walks,
        "nodes": int(graph.indptr.size - 1),
        "edges": int(graph.indices.size),
        "games": n_games,
        "load_s": round(loaded - started, 1),
        **result,
        "records_per_s": round(result["records"] / result["seconds"], 2),
        "seconds_per_game": round(result["seconds"] / n_games, 3),
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=1_000_000)
    p.add_argument("--edges", type=int, default=32_000_000)
    p.add_argument("--games", type=int, default=100)
    p.add_argument("--walks", type=int, nargs="+", default=[1, 40])
    p.add_argument("--out", default="out/bench")
    p.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # a child process: this method and walks only
    a = p.parse_args()
    path = graph_path(a.out, a.nodes, a.edges)
    if a.one:
        print(json.dumps(measure(path, a.one[0], a.games, int(a.one[1]))))
        return
    ensure_graph(path, a.nodes, a.edges)
    results = []
    for walks in a.walks:
        found = {m: in_own_process(__file__, *sys.argv[1:], "--one", m, str(walks)) for m in ("auto", "bfs", "pairs")}
        ratio = found["auto"]["records_per_s"] / found["pairs"]["records_per_s"]
        auto, bfs, ref = (found[m]["records_per_s"] for m in ("auto", "bfs", "pairs"))
        peak = found["auto"]["peak_rss_gib"]
        print(f"decision records, {walks} walk(s) per game: {auto} records/s against {ref} by pair searches "
              f"({ratio:.2f}x; always a whole search: {bfs}); peak RSS {peak} GiB")  # fmt: skip
        results.append({"walks": walks, **found, "ratio": ratio})
    with open(f"{a.out}/bench_decisions.json", "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
