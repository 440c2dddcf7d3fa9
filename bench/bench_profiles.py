"""Distance profiles (exact distance to the target at every step) for many plays: time and peak memory.

python bench/bench_profiles.py [--nodes 1000000] [--edges 32000000] [--games 2000] [--runs 5]
    [--methods targets,pairs,auto] [--out out/bench]

The graph is bench_sampling's generator (power-law in- and out-degrees), kept under OUT and reused.
The plays are ``runs`` × ``games`` walks (10,000 by default): each games set's target is a random
node with in-links, each run walks from the game's source along random out-links for up to 12 steps
(stopping at a dead end), as agents drift through hubs. Each method runs in its own process, so
its peak RSS is its own: the graph's CSR in memory (the report maps the play stage's files instead;
same bytes, shared), the in-links it builds, and its search state. Prints one JSON line per method
and writes ``OUT/bench_profiles.json``.
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

from bench.bench_sampling import generate
from wikigame_spark.graph.csr import compress
from wikigame_spark.graph.profiles import ProfileGraph


def graph_path(out: str, nodes: int, edges: int) -> str:
    """Where the generated graph of this size is kept under ``out``."""
    return f"{out}/profiles-graph-{nodes}-{edges}"


def ensure_graph(path: str, nodes: int, edges: int) -> None:
    """bench_sampling's power-law graph at ``path``, generated once and reused."""
    if not os.path.exists(f"{path}/manifest.json"):
        t = time.perf_counter()
        generate(path, nodes, edges)
        print(f"generated {path} in {time.perf_counter() - t:.0f} s", flush=True)


def in_own_process(script: str, *args: str) -> dict:
    """The JSON line ``script`` run with ``args`` prints last (printed here too): each measurement in
    a process of its own, so that its peak RSS is its own."""
    argv = [sys.executable, script, *args]
    line = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    print(line, flush=True)
    return json.loads(line)


def load(path: str) -> ProfileGraph:
    import pyarrow.dataset as ds

    edges = ds.dataset(f"{path}/edges", format="parquet").to_table()
    src = edges.column("src").to_numpy().astype(np.int32)
    dst = edges.column("dst").to_numpy().astype(np.int32)
    del edges
    n = json.load(open(f"{path}/manifest.json"))["counts"]["nodes"]
    ptr, idx = compress(np.bincount(src, minlength=n), [(src, dst)])
    return ProfileGraph(np.arange(n, dtype=np.int64), ptr, idx)


def plays(graph: ProfileGraph, games: int, runs: int, seed: int = 7) -> tuple[np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    ptr, idx = graph.out_ptr, graph.out_idx
    n = ptr.size - 1
    has_in = np.flatnonzero(np.bincount(idx, minlength=n) > 0)
    targets = has_in[rng.integers(0, has_in.size, games)]
    sources = rng.integers(0, n, games)
    all_targets, routes = [], []
    for _ in range(runs):
        for s, t in zip(sources, targets):
            route = [int(s)]
            for _ in range(12):
                u = route[-1]
                if u == t or ptr[u + 1] == ptr[u]:
                    break
                route.append(int(idx[ptr[u] + rng.integers(0, ptr[u + 1] - ptr[u])]))
            all_targets.append(int(t))
            routes.append(np.array(route, dtype=np.int64))
    return np.array(all_targets), routes


def measure(path: str, method: str, games: int, runs: int) -> dict:
    started = time.perf_counter()
    graph = load(path)
    targets, routes = plays(graph, games, runs)
    ready = time.perf_counter()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    found = graph.profiles(targets, routes, method=method)
    done = time.perf_counter()
    pages = sum(r.size for r in routes)
    checksum = int(sum(int(p.sum()) for p in found))
    return {
        "method": method,
        "nodes": graph.node_ids.size,
        "edges": int(graph.out_idx.size),
        "plays": len(routes),
        "distinct_targets": int(np.unique(targets).size),
        "pages": pages,
        "load_s": round(ready - started, 1),
        "profiles_s": round(done - ready, 1),
        "peak_rss_gib_before": round(base / 2**20, 2),
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "checksum": checksum,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=1_000_000)
    p.add_argument("--edges", type=int, default=32_000_000)
    p.add_argument("--games", type=int, default=2000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--methods", default="targets,pairs,auto")
    p.add_argument("--out", default="out/bench")
    p.add_argument("--one", help=argparse.SUPPRESS)  # a child process: measure this method only
    a = p.parse_args()
    path = graph_path(a.out, a.nodes, a.edges)
    if a.one:
        print(json.dumps(measure(path, a.one, a.games, a.runs)))
        return
    ensure_graph(path, a.nodes, a.edges)
    results = [in_own_process(__file__, "--one", method, *sys.argv[1:]) for method in a.methods.split(",")]
    if len({r["checksum"] for r in results}) > 1:
        raise SystemExit("the methods' distances differ")
    with open(f"{a.out}/bench_profiles.json", "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
