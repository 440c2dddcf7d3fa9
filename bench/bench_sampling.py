"""Benchmark: exact game sampling on generated scale-free directed graphs, every distance method.

    python bench/bench_sampling.py [--sizes 100000:1000000,1000000:34000000] [--games 10000]
        [--distributed-games 6000/50] [--search-pairs 2000,8000/300]
        [--methods collected,graphframes,searches,shortest-paths,components,python] [--out out/bench]

Each graph (power-law in- and out-degrees, 8 % of nodes without in-links, 0.5 % without out-links,
0.1 % isolated) is generated with numpy and written once to ``OUT/scalefree-N-M/`` in the graph
contract. Every step runs in its own process, so that its peak memory (the process tree: Python
plus Spark's JVM) is its own:

- ``local``: ``sample_games`` with the single-node method (CSR arrays, SCC reachability,
  bidirectional BFS) on the graph's mapped int32 files, as the job runs it, ``--games`` games;
- ``collected``: the same method on the edge columns collected into the process (the path taken
  without a graph directory, and the only one before the mapped files): the reference for memory;
- ``graphframes``: ``sample_games`` with the GraphFrames method (degrees and SCCs by GraphFrames,
  searches by the multi-pair bidirectional BFS on GraphFrames' Pregel of
  ``wikigame_spark.graph.bfs``), ``--distributed-games`` games: the same draws as the local run's
  first games;
- ``searches``: the ``graphframes`` method's search alone (``wikigame_spark.graph.bfs`` on
  GraphFrames' Pregel) and the hand-written DataFrame BFS it replaced (``bench/dataframe_bfs.py``,
  the reference), each in its own process on the same pairs (the local games' first), all in one
  batch, once per count in ``--search-pairs`` (2,000 and 8,000), both checked against the local
  method's distances; prints the ratio of their pairs/s per count;
- ``shortest-paths``: GraphFrames' ``shortestPaths`` with a batch of the games' targets as landmarks;
- ``components``: GraphFrames' strongly and weakly connected components, timed;
- ``python``: a per-pair breadth-first search in plain Python, the paper's way, on a few games.

Games of every method are compared with the local method's; pairs/s count the draws a method
resolved exactly (decided unreachable, or searched) per second of its search phase. Results go to
stdout and ``OUT/bench_sampling.json``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


# --- graph generation ----------------------------------------------------------------------------
def generate(path: str, n: int, m: int, seed: int = 42) -> dict:
    """Write a scale-free directed graph with about ``m`` distinct edges to ``path`` (Parquet)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    # Chung-Lu style: endpoint probabilities follow Zipf weights over shuffled ranks, giving
    # power-law degrees (in: exponent ~2.3, out: ~2.6); some nodes get no in- or out-weight.
    w_in = (np.arange(1, n + 1, dtype=np.float64) ** -0.77)[rng.permutation(n)]
    w_out = (np.arange(1, n + 1, dtype=np.float64) ** -0.62)[rng.permutation(n)]
    kind = rng.random(n)
    w_in[kind < 0.08] = 0  # unreachable: links out, none in
    w_out[(kind >= 0.08) & (kind < 0.085)] = 0  # dead ends
    isolated = (kind >= 0.085) & (kind < 0.086)
    w_in[isolated] = 0
    w_out[isolated] = 0
    w_in /= w_in.sum()
    w_out /= w_out.sum()
    keys = np.empty(0, dtype=np.int64)
    draw = int(m * 1.08)
    while keys.size < m:
        src = rng.choice(n, size=draw, p=w_out)
        dst = rng.choice(n, size=draw, p=w_in)
        keep = src != dst
        keys = np.unique(np.concatenate([keys, src[keep] * n + dst[keep]]))
        del src, dst, keep
        draw = int((m - keys.size) * 1.3) + 1000
    keys = keys[np.sort(rng.choice(keys.size, size=m, replace=False))]
    src, dst = keys // n, keys % n
    del keys
    os.makedirs(f"{path}/edges", exist_ok=True)
    os.makedirs(f"{path}/nodes", exist_ok=True)
    step = 4_000_000
    for i in range(0, m, step):
        pq.write_table(
            pa.table({"src": pa.array(src[i : i + step]), "dst": pa.array(dst[i : i + step])}),
            f"{path}/edges/part-{i // step:05d}.parquet",
        )
    ids = np.arange(n, dtype=np.int64)
    titles = pa.array([f"Node {i}" for i in range(n)])
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), False),
            pa.field("page_id", pa.int64(), False),
            pa.field("title", pa.string(), False),
            pa.field("summary", pa.string(), False),
        ]
    )
    nodes = pa.table([ids, ids + 1, titles, pa.array([""] * n)], schema=schema)
    pq.write_table(nodes, f"{path}/nodes/part-00000.parquet")
    escheme = pa.schema([pa.field("src", pa.int64(), False), pa.field("dst", pa.int64(), False)])
    assert pq.read_schema(f"{path}/edges/part-00000.parquet").types == escheme.types
    manifest = {
        "kind": "generated-scale-free",
        "counts": {"nodes": n, "edges": int(m)},
        "generator": {"seed": seed, "in_weight_exponent": 0.77, "out_weight_exponent": 0.62},
    }
    with open(f"{path}/manifest.json", "w") as f:
        json.dump(manifest, f, indent=2)
    return manifest


# --- memory of a process tree --------------------------------------------------------------------
def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants (from /proc)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
        except OSError:
            continue
    return total


def run_measured(args: list[str], script: str = __file__, sample=None) -> dict:
    """Run ``script`` (default: this one) in a child process; its JSON result plus the tree's peak
    resident memory, or, given ``sample``, what it records when called with the child's PID every
    0.2 s."""
    proc = subprocess.Popen([sys.executable, script, *args], stdout=subprocess.PIPE, text=True)
    peak = [0]

    def watch() -> None:
        while proc.poll() is None:
            if sample is None:
                peak[0] = max(peak[0], _tree_rss(proc.pid))
            else:
                sample(proc.pid)
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out, _ = proc.communicate()
    watcher.join()
    if proc.returncode != 0:
        raise RuntimeError(f"bench step {args} failed with exit code {proc.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    if sample is None:
        result["peak_rss_gib"] = round(peak[0] / 2**30, 2)
    return result


# --- the measured steps (each in its own process) ------------------------------------------------
def _session():
    from wikigame_spark.session import build_session

    memory = os.environ.get("BENCH_DRIVER_MEMORY", "4g")
    return build_session(
        "bench_sampling", conf={"spark.ui.showConsoleProgress": "false", "spark.driver.memory": memory}
    )


def step_sample(graph: str, method: str, games: int, games_out: str) -> dict:
    from wikigame_spark.graph.frame import read_graph
    from wikigame_spark.graph.mapped import ensure_graph
    from wikigame_spark.graph.sampling import sample_games
    from wikigame_spark.jobs.sample_games import SampleGamesConfig

    spark = _session()
    g = read_graph(spark, graph)
    cfg = SampleGamesConfig(
        graph=graph, games=games, seed=1, method="graphframes" if method == "graphframes" else "local"
    )
    mapped_s = None
    if method == "local":  # the job's way: the graph's mapped files, built once per build of the graph
        t0 = time.perf_counter()
        ensure_graph(spark, graph)
        mapped_s = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    sampled = sample_games(g.nodes, g.edges, cfg, graph if method == "local" else None)
    rows = sampled.games.toPandas()
    total = time.perf_counter() - t0
    search = sampled.timings["search"]
    rows.to_parquet(games_out, index=False)
    c = sampled.counts
    return {
        "method": method,
        "games": c["games"],
        "draws": c["draws"],
        "resolved_draws": c["resolved_draws"],
        "searched": c["searched"],
        "share_decided_by_reachability": round(c["decided_by_reachability"] / c["draws"], 4),
        "discarded_by": c["discarded_by"],
        "optimal_steps": c["optimal_steps"],
        "mapped_files_s": mapped_s,
        "prepare_s": round(sampled.timings["prepare"], 1),
        "search_s": round(search, 1),
        "total_s": round(total, 1),
        "exact_pairs_per_s_search": round(c["resolved_draws"] / search, 2),
        "games_per_s_total": round(c["games"] / total, 2),
        # the Python process alone (the local method's arrays and mapped pages), without the JVM
        "python_peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }


def step_search(graph: str, engine: str, games_in: str, pairs: int) -> dict:
    """One distributed search engine on the local games' first ``pairs`` (source, target) pairs, all
    in one batch: both engines pay a fixed cost per round, which a larger batch shares out."""
    import pandas as pd

    from bench.dataframe_bfs import DataFrameSearch
    from wikigame_spark.graph import frame
    from wikigame_spark.graph.bfs import PregelSearch

    spark = _session()
    g = frame.read_graph(spark, graph)
    games = pd.read_parquet(games_in).head(pairs)
    engines = {"pregel": PregelSearch, "dataframe": DataFrameSearch}
    t0 = time.perf_counter()
    search = engines[engine](g.nodes, g.edges, len(games))
    found = search.distances(games["source"].to_numpy(), games["target"].to_numpy())
    elapsed = time.perf_counter() - t0
    return {
        "engine": engine,
        "pairs": len(games),
        "search_s": round(elapsed, 1),
        "pairs_per_s": round(len(games) / elapsed, 2),
        "agrees_with_local": bool(np.array_equal(found, games["optimal_steps"].to_numpy())),
    }


def step_components(graph: str) -> dict:
    from wikigame_spark.graph import frame

    spark = _session()
    g = frame.read_graph(spark, graph)
    out = {"method": "components"}
    for name, find in (("scc", frame.strong_components), ("wcc", frame.weak_components)):
        t0 = time.perf_counter()
        sizes = frame.component_sizes(find(g.nodes, g.edges)).collect()
        out.update({f"{name}_s": round(time.perf_counter() - t0, 1), f"{name}_count": len(sizes)})
        out[f"largest_{name}"] = int(sizes[0]["size"])
    return out


def step_shortest_paths(graph: str, games_in: str, pairs: int) -> dict:
    """GraphFrames' shortestPaths from every vertex to a batch of the games' targets (landmarks)."""
    import pandas as pd
    from pyspark.sql import functions as F

    from wikigame_spark.graph import frame

    spark = _session()
    g = frame.read_graph(spark, graph)
    games = pd.read_parquet(games_in).head(pairs)
    t0 = time.perf_counter()
    sp = frame.graphframe(g.nodes, g.edges).shortestPaths(landmarks=[int(t) for t in games["target"]])
    wanted = [int(s) for s in games["source"]]
    rows = sp.filter(F.col("id").isin(wanted)).select("id", F.explode("distances")).collect()
    elapsed = time.perf_counter() - t0
    found = {(r[0], r[1]): r[2] for r in rows}
    got = [found.get((int(s), int(t)), -1) for s, t in zip(games["source"], games["target"])]
    return {
        "method": "shortest-paths",
        "pairs": len(games),
        "search_s": round(elapsed, 1),
        "exact_pairs_per_s_search": round(len(games) / elapsed, 2),
        "agrees_with_local": got == games["optimal_steps"].tolist(),
    }


def step_python(graph: str, games_in: str, pairs: int) -> dict:
    """The paper's way: adjacency lists, one breadth-first search per pair from the source."""
    import pandas as pd
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    edges = pq.read_table(f"{graph}/edges")
    src = edges.column("src").to_numpy()
    dst = edges.column("dst").to_numpy()
    del edges
    order = np.argsort(src, kind="stable")
    bounds = np.searchsorted(src[order], np.arange(int(src.max()) + 2))
    targets = dst[order]
    adjacency = {i: targets[bounds[i] : bounds[i + 1]].tolist() for i in range(bounds.size - 1)}
    del src, dst, order, targets
    build = time.perf_counter() - t0
    games = pd.read_parquet(games_in).head(pairs)

    def bfs(s: int, t: int) -> int:
        seen = {s}
        queue = collections.deque([(s, 0)])
        while queue:
            u, d = queue.popleft()
            for v in adjacency.get(u, ()):
                if v == t:
                    return d + 1
                if v not in seen:
                    seen.add(v)
                    queue.append((v, d + 1))
        return -1

    t1 = time.perf_counter()
    found = [bfs(int(s), int(t)) for s, t in zip(games["source"], games["target"])]
    search = time.perf_counter() - t1
    return {
        "method": "python_per_pair_bfs",
        "pairs": len(found),
        "build_s": round(build, 1),
        "search_s": round(search, 1),
        "pairs_per_s": round(len(found) / search, 2),
        "agrees_with_local": bool(np.array_equal(np.array(found), games["optimal_steps"].to_numpy())),
    }


def same_games(reference: str, other: str) -> bool:
    """Whether ``other``'s games are the first games of ``reference`` (same seed, same draws)."""
    import pandas as pd

    a, b = pd.read_parquet(reference), pd.read_parquet(other)
    return bool(a.head(len(b)).equals(b))


def per_size(values: str, index: int) -> str:
    """The ``index``-th size's entry of a flag given per size, entries separated by ``/`` (the last
    entry serves the rest)."""
    entries = values.split("/")
    return entries[min(index, len(entries) - 1)]


def bench_size(out: str, n: int, m: int, a: argparse.Namespace, index: int) -> dict:
    """Every method on one generated graph, the ``index``-th of ``--sizes``."""
    graph = os.path.join(out, f"scalefree-{n}-{m}")
    report: dict = {"graph": graph}
    if not os.path.exists(f"{graph}/manifest.json"):
        t = time.perf_counter()
        generate(graph, n, m)
        report["generate_s"] = round(time.perf_counter() - t, 1)
    games = {k: os.path.join(out, f"games-{n}-{m}-{k}.parquet") for k in ("local", "collected", "graphframes")}
    sample = ["--graph", graph, "--step", "sample"]
    report["local"] = run_measured(
        [*sample, "--method", "local", "--games", str(a.games), "--games-file", games["local"]]
    )
    print(json.dumps(report["local"]), flush=True)
    for method in a.methods.split(","):
        if method in ("graphframes", "collected"):
            count = per_size(a.distributed_games, index) if method == "graphframes" else a.games
            args = [*sample, "--method", method, "--games", str(count), "--games-file", games[method]]
            report[method] = run_measured(args)
            report[method]["games_identical_to_local"] = same_games(games["local"], games[method])
        elif method == "components":
            report[method] = run_measured(["--graph", graph, "--step", method])
        elif method == "searches":
            report[method] = {}
            for pairs in per_size(a.search_pairs, index).split(","):
                args = ["--graph", graph, "--step", "search", "--games-file", games["local"], "--pairs", pairs]
                runs = {engine: run_measured([*args, "--method", engine]) for engine in ("dataframe", "pregel")}
                ratio = runs["pregel"]["pairs_per_s"] / runs["dataframe"]["pairs_per_s"]
                report[method][pairs] = {**runs, "pregel_vs_dataframe": round(ratio, 2)}
                print(json.dumps({pairs: report[method][pairs]}), flush=True)
        else:
            pairs = a.landmarks if method == "shortest-paths" else a.python_pairs
            args = ["--graph", graph, "--step", method, "--games-file", games["local"], "--pairs", str(pairs)]
            report[method] = run_measured(args)
        print(json.dumps(report[method]), flush=True)
    return report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="100000:1000000,1000000:34000000", help="NODES:EDGES,…")
    p.add_argument("--methods", default="collected,graphframes,searches,shortest-paths,components,python")
    p.add_argument("--games", type=int, default=10_000)
    # per size; 6,000 games at 100 k nodes: a first chunk of 7,756 draws, one batch of the searches
    # (bfs_batch_pairs, 8,192); 50 at 1 M nodes / 34 M edges, where the method resolves ~1 pair/s
    p.add_argument("--distributed-games", default="6000/50", help="graphframes: games per size, sizes separated by /")
    p.add_argument("--landmarks", type=int, default=64, help="shortest-paths: games whose targets are landmarks")
    p.add_argument("--python-pairs", type=int, default=5)
    p.add_argument(
        "--search-pairs",
        default="2000,8000/300",
        help="searches: pairs given to both engines in one batch, one run per count; sizes separated by /",
    )
    p.add_argument("--out", default=os.path.join(ROOT, "out", "bench"))
    p.add_argument("--step", help=argparse.SUPPRESS)
    p.add_argument("--graph", help=argparse.SUPPRESS)
    p.add_argument("--method", help=argparse.SUPPRESS)
    p.add_argument("--games-file", help=argparse.SUPPRESS)
    p.add_argument("--pairs", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()

    steps = {
        "sample": lambda: step_sample(a.graph, a.method, a.games, a.games_file),
        "components": lambda: step_components(a.graph),
        "search": lambda: step_search(a.graph, a.method, a.games_file, a.pairs),
        "shortest-paths": lambda: step_shortest_paths(a.graph, a.games_file, a.pairs),
        "python": lambda: step_python(a.graph, a.games_file, a.pairs),
    }
    if a.step:
        print(json.dumps(steps[a.step]()))
        return
    os.makedirs(a.out, exist_ok=True)
    report: dict = {"cores": os.cpu_count(), "sizes": {}}
    for index, size in enumerate(a.sizes.split(",")):
        n, m = (int(x) for x in size.split(":"))
        report["sizes"][size] = r = bench_size(a.out, n, m, a, index)
        with open(os.path.join(a.out, "bench_sampling.json"), "w") as f:
            json.dump(report, f, indent=2)
        rates = [
            f"{k} {v['exact_pairs_per_s_search']}"
            for k, v in r.items()
            if isinstance(v, dict) and "exact_pairs_per_s_search" in v
        ]
        print(f"bench_sampling: {n} nodes, {m} edges: exact pairs/s " + ", ".join(rates), flush=True)


if __name__ == "__main__":
    main()
