"""Benchmark: exact game sampling on a generated scale-free directed graph (1 M nodes, ~40 M edges).

    python bench/bench_sampling.py [--nodes 1000000] [--edges 40000000] [--games 10000]
        [--distributed-games 200] [--distributed-full] [--python-pairs 5] [--out out/bench]

The graph (power-law in- and out-degrees, mean out-degree 40 like English Wikipedia, 8 % of nodes
without in-links, 0.5 % without out-links, 0.1 % isolated) is generated with numpy and written once
to ``OUT/scalefree-…/`` in the graph contract. Each method then runs in its own process so that its
peak memory (the process tree: Python plus Spark's JVM) is its own:

- ``local``: ``sample_games`` with the single-node method (CSR arrays, bidirectional BFS);
- ``distributed``: ``sample_games`` with the DataFrame BFS, on fewer games and, unless
  ``--distributed-full``, on a graph 10x smaller from the same generator (on 2 cores the full graph
  takes ~25 minutes: its fixed preparation alone, degrees, components and adjacency, ~14);
- ``python``: a per-pair breadth-first search in plain Python (dict/deque adjacency lists, stop at
  the target), the way the paper's code computes an optimal length, on a subsample of the games;
- GraphFrames' ``bfs`` / ``shortestPaths`` when its JVM library is on the classpath.

Distances of every method are checked against the local method's on the pairs they share.
Results go to stdout and ``OUT/bench_sampling.json``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("SPARK_CONF_DIR", os.path.join(ROOT, "conf"))
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


def run_measured(args: list[str]) -> dict:
    """Run this script in a child process; its JSON result plus the tree's peak resident memory."""
    proc = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True)
    peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            time.sleep(0.2)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    out, _ = proc.communicate()
    watcher.join()
    if proc.returncode != 0:
        raise RuntimeError(f"bench step {args} failed with exit code {proc.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_rss_gib"] = round(peak[0] / 2**30, 2)
    return result


# --- the measured steps (each in its own process) ------------------------------------------------
def _session():
    from wikigame_spark.session import build_session

    return build_session("bench_sampling", conf={"spark.ui.showConsoleProgress": "false"})


def step_sample(graph: str, method: str, games: int, games_out: str) -> dict:
    from wikigame_spark.config import SampleGamesConfig
    from wikigame_spark.graph.frame import graphframes_available, read_graph
    from wikigame_spark.graph.sampling import sample_games

    spark = _session()
    g = read_graph(spark, graph)
    cfg = SampleGamesConfig(graph=graph, games=games, seed=1, method=method, local_max_edges=10**12)
    t0 = time.perf_counter()
    sampled = sample_games(g.nodes, g.edges, cfg)
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
        "discarded_by": c["discarded_by"],
        "optimal_steps": c["optimal_steps"],
        "prepare_s": round(sampled.timings["prepare"], 1),
        "search_s": round(search, 1),
        "total_s": round(total, 1),
        "exact_pairs_per_s_search": round(c["resolved_draws"] / search, 1),
        "games_per_s_search": round(c["games"] / search, 1),
        "games_per_s_total": round(c["games"] / total, 1),
        "graphframes_jvm": graphframes_available(spark),
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
    agree = bool(np.array_equal(np.array(found), games["optimal_steps"].to_numpy()))
    return {
        "method": "python_per_pair_bfs",
        "pairs": len(found),
        "build_s": round(build, 1),
        "search_s": round(search, 1),
        "pairs_per_s": round(len(found) / search, 2),
        "agrees_with_local": agree,
    }


def step_graphframes(graph: str, games_in: str, pairs: int) -> dict:
    """GraphFrames' bfs and shortestPaths, when its JVM library is on the classpath."""
    import pandas as pd

    from wikigame_spark.graph import frame

    spark = _session()
    if not frame.graphframes_available(spark):
        return {
            "method": "graphframes",
            "measured": False,
            "reason": f"{frame.GRAPHFRAME_CLASS} is not on Spark's classpath: the io.graphframes "
            "graphframes-spark4_2.13 jar could not be fetched from the Maven repository reachable here",
        }
    g = frame.read_graph(spark, graph)
    games = pd.read_parquet(games_in).head(pairs)
    t0 = time.perf_counter()
    got = [
        frame.graphframes_bfs_length(g.nodes, g.edges, int(s), int(t), int(d) + 1)
        for s, t, d in zip(games["source"], games["target"], games["optimal_steps"])
    ]
    bfs_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    landmarks = [int(t) for t in games["target"]]
    sp = frame.graphframes_shortest_paths(g.nodes, g.edges, landmarks).toPandas()
    sp_s = time.perf_counter() - t1
    lookup = {(int(r.id), int(r.landmark)): int(r.distance) for r in sp.itertuples()}
    sp_got = [lookup.get((int(s), int(t)), -1) for s, t in zip(games["source"], games["target"])]
    want = games["optimal_steps"].tolist()
    return {
        "method": "graphframes",
        "measured": True,
        "pairs": len(games),
        "bfs_pairs_per_s": round(len(games) / bfs_s, 3),
        "shortest_paths_pairs_per_s": round(len(games) / sp_s, 3),
        "bfs_agrees": got == want,
        "shortest_paths_agrees": sp_got == want,
    }


def compare(games_a: str, games_b: str) -> dict:
    """Distributed vs local: the distributed games must be the first games of the local run."""
    import pandas as pd

    a = pd.read_parquet(games_a)
    b = pd.read_parquet(games_b)
    return {"distributed_games_identical_to_local_prefix": bool(a.head(len(b)).equals(b))}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=1_000_000)
    p.add_argument("--edges", type=int, default=40_000_000)
    p.add_argument("--games", type=int, default=10_000)
    p.add_argument("--distributed-games", type=int, default=200)
    p.add_argument("--python-pairs", type=int, default=5)
    p.add_argument("--graphframes-pairs", type=int, default=5)
    p.add_argument("--distributed-full", action="store_true", help="distributed method on the full graph too")
    p.add_argument("--out", default=os.path.join(ROOT, "out", "bench"))
    p.add_argument("--step", help=argparse.SUPPRESS)
    p.add_argument("--graph", help=argparse.SUPPRESS)
    p.add_argument("--method", help=argparse.SUPPRESS)
    p.add_argument("--games-file", help=argparse.SUPPRESS)
    a = p.parse_args()

    if a.step == "sample":
        print(json.dumps(step_sample(a.graph, a.method, a.games, a.games_file)))
        return
    if a.step == "python":
        print(json.dumps(step_python(a.graph, a.games_file, a.python_pairs)))
        return
    if a.step == "graphframes":
        print(json.dumps(step_graphframes(a.graph, a.games_file, a.graphframes_pairs)))
        return

    graph = os.path.join(a.out, f"scalefree-{a.nodes}-{a.edges}")
    report: dict = {"graph": graph, "cores": os.cpu_count()}
    if not os.path.exists(f"{graph}/manifest.json"):
        t = time.perf_counter()
        generate(graph, a.nodes, a.edges)
        report["generate_s"] = round(time.perf_counter() - t, 1)
    with open(f"{graph}/manifest.json") as f:
        report["graph_counts"] = json.load(f)["counts"]
    local_games = os.path.join(a.out, "games-local.parquet")
    dist_games = os.path.join(a.out, "games-distributed.parquet")
    common = ["--graph", graph, "--step", "sample"]
    report["local"] = run_measured([*common, "--method", "local", "--games", str(a.games), "--games-file", local_games])
    print(json.dumps(report["local"]), flush=True)
    report["python"] = run_measured(
        ["--graph", graph, "--step", "python", "--games-file", local_games, "--python-pairs", str(a.python_pairs)]
    )
    print(json.dumps(report["python"]), flush=True)
    report["graphframes"] = run_measured(
        [
            "--graph",
            graph,
            "--step",
            "graphframes",
            "--games-file",
            local_games,
            "--graphframes-pairs",
            str(a.graphframes_pairs),
        ]
    )
    print(json.dumps(report["graphframes"]), flush=True)
    if a.distributed_games > 0:
        # The DataFrame BFS pays Spark's per-pass cost on every pass; on 2 cores it is measured on a
        # graph 10x smaller (same generator) unless --distributed-full, to keep the bench in budget.
        scale = 1 if a.distributed_full else 10
        dgraph = graph
        if scale > 1:
            dgraph = os.path.join(a.out, f"scalefree-{a.nodes // scale}-{a.edges // scale}")
            if not os.path.exists(f"{dgraph}/manifest.json"):
                generate(dgraph, a.nodes // scale, a.edges // scale)
        dcommon = ["--graph", dgraph, "--step", "sample", "--games", str(a.distributed_games)]
        reference = local_games
        if scale > 1:
            reference = os.path.join(a.out, "games-local-small.parquet")
            report["local_small_graph"] = run_measured([*dcommon, "--method", "local", "--games-file", reference])
        report["distributed"] = run_measured([*dcommon, "--method", "distributed", "--games-file", dist_games])
        report["distributed"]["graph"] = dgraph
        report["distributed"].update(compare(reference, dist_games))
        print(json.dumps(report["distributed"]), flush=True)
    with open(os.path.join(a.out, "bench_sampling.json"), "w") as f:
        json.dump(report, f, indent=2)
    local = report["local"]
    print(
        f"bench_sampling: {report['graph_counts']['nodes']} nodes, {report['graph_counts']['edges']} edges; "
        f"local {local['games']} games, {local['exact_pairs_per_s_search']} exact pairs/s "
        f"({local['games_per_s_total']} games/s incl. loading), peak {local['peak_rss_gib']} GiB; "
        f"python per-pair BFS {report['python']['pairs_per_s']} pairs/s; "
        + (
            f"distributed {report['distributed']['exact_pairs_per_s_search']} exact pairs/s "
            f"on {os.path.basename(report['distributed']['graph'])}, peak {report['distributed']['peak_rss_gib']} GiB; "
            if "distributed" in report
            else ""
        )
        + ("GraphFrames measured" if report["graphframes"]["measured"] else "GraphFrames not measured (no JVM library)")
    )


if __name__ == "__main__":
    main()
