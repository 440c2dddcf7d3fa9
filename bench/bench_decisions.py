"""Decision records (every step with every offered page's exact distance): records per second and
peak memory, against one pair search per offered page as the reference, in the same run.

python bench/bench_decisions.py [--nodes 1000000] [--edges 32000000] [--games 200] [--reference-games 20]
    [--out out/bench]

The graph is bench_sampling's generator (power-law in- and out-degrees), kept under OUT and reused.
Each game is a random source and a random target with in-links; its routes are the expert's (a
shortest path, when one exists) and a random walk of up to 12 steps (an agent drifting through
hubs), both scored under the paper's rules. ``ours`` is what a task of ``jobs/decision_records.py``
does (one whole backward search per target, the expert's descent and
:func:`wikigame_spark.play.steps.score_routes` on it, after the in-links are built once per
worker); ``pairs`` gives every offered page its distance by the
sampler's bidirectional search (one per page and target), on the first ``--reference-games`` games.
Each runs in its own process, so its peak RSS is its own (the graph's CSR in memory; a worker maps
the play stage's files instead: the same bytes, shared by a node's workers). Prints one JSON line
per method and writes ``OUT/bench_decisions.json`` with the records-per-second ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_profiles import load
from bench.bench_sampling import generate
from wikigame_spark.graph.csr import CsrGraph
from wikigame_spark.graph.optimal import descend, in_links
from wikigame_spark.graph.profiles import UNREACHED, backward_distances
from wikigame_spark.play.rules import Rules
from wikigame_spark.play.steps import offered_along, score_routes


class Graph:
    """The out-links as the engine's graph interface (titles are not read here)."""

    def __init__(self, ptr: np.ndarray, idx: np.ndarray) -> None:
        self.indptr, self.indices = ptr, idx

    def out_links(self, node: int) -> np.ndarray:
        return self.indices[self.indptr[node] : self.indptr[node + 1]]


def games(graph: Graph, n: int, seed: int = 7) -> list[tuple[int, int, list[int]]]:
    """(source, target, random walk) per game."""
    rng = np.random.default_rng(seed)
    ptr, idx = graph.indptr, graph.indices
    nodes = ptr.size - 1
    has_in = np.flatnonzero(np.bincount(idx, minlength=nodes) > 0)
    out = []
    for s, t in zip(rng.integers(0, nodes, n), has_in[rng.integers(0, has_in.size, n)]):
        walk = [int(s)]
        for _ in range(12):
            links = [int(v) for v in graph.out_links(walk[-1]) if v not in walk]
            if walk[-1] == t or not links:
                break
            walk.append(links[rng.integers(len(links))])
        out.append((int(s), int(t), walk))
    return out


def ours(graph: Graph, played: list) -> dict:
    started = time.perf_counter()
    links = in_links(graph)
    built = time.perf_counter()
    records = reached = 0
    for game, (s, t, walk) in enumerate(played):  # as a task of the job does for each target
        distance = backward_distances(*links, t)
        expert = descend(graph, distance, s, t, 0, game)
        routes = [(walk, Rules())] + ([(expert, Rules())] if expert else [])
        reached += expert is not None
        records += sum(len(steps) for steps in score_routes(graph, links, t, routes, distance))
    done = time.perf_counter()
    return {"in_links_s": round(built - started, 1), "records": records, "seconds": done - built, "reached": reached}


def pairs(graph: Graph, played: list) -> dict:
    """The reference: each offered page's distance by a pair search, the expert by greedy descent
    on those distances (ties to the lowest id: the cost, not the choice, is measured)."""
    csr = CsrGraph(np.arange(graph.indptr.size - 1, dtype=np.int64), graph.indptr, graph.indices)
    started = time.perf_counter()
    records = 0

    def distances(pages: np.ndarray, target: int) -> np.ndarray:
        d = np.zeros(pages.size, dtype=np.int32)
        other = pages != target
        if other.any():
            d[other] = csr.distances(pages[other], np.full(int(other.sum()), target, dtype=np.int64))
        return np.where(d < 0, UNREACHED, d)

    for s, t, walk in played:
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
    return {"records": records, "seconds": time.perf_counter() - started}


def measure(path: str, method: str, n_games: int) -> dict:
    started = time.perf_counter()
    profile = load(path)
    graph = Graph(profile.out_ptr, profile.out_idx)
    played = games(graph, n_games)
    loaded = time.perf_counter()
    result = (ours if method == "ours" else pairs)(graph, played)
    return {
        "method": method,
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
    p.add_argument("--games", type=int, default=200)
    p.add_argument("--reference-games", type=int, default=20)
    p.add_argument("--out", default="out/bench")
    p.add_argument("--one", help=argparse.SUPPRESS)  # a child process: measure this method only
    a = p.parse_args()
    path = f"{a.out}/profiles-graph-{a.nodes}-{a.edges}"
    if a.one:
        print(json.dumps(measure(path, a.one, a.games if a.one == "ours" else a.reference_games)))
        return
    if not os.path.exists(f"{path}/manifest.json"):
        t = time.perf_counter()
        generate(path, a.nodes, a.edges)
        print(f"generated {path} in {time.perf_counter() - t:.0f} s", flush=True)
    results = []
    for method in ("ours", "pairs"):
        argv = [sys.executable, __file__, "--one", method, *sys.argv[1:]]
        line = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        results.append(json.loads(line))
        print(line, flush=True)
    ratio = results[0]["records_per_s"] / results[1]["records_per_s"]
    print(f"decision records: {results[0]['records_per_s']} records/s against {results[1]['records_per_s']} by pair "
          f"searches ({ratio:.1f}x); peak RSS {results[0]['peak_rss_gib']} GiB")  # fmt: skip
    with open(f"{a.out}/bench_decisions.json", "w") as f:
        json.dump({"results": results, "ratio": ratio}, f, indent=2)


if __name__ == "__main__":
    main()
