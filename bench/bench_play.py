"""Benchmark: the embedding agent with the node-embedding cache vs the paper's method.

Reference (the paper's): at every step encode the target's summary and every offered link's
summary with the sentence-transformers model. Ours: every node embedded once into the Parquet
cache (by the Spark stage), then a step is a matrix–vector product. Both play the same games
with the same engine; prints games/s for both, the ratio, and the share of games whose routes
are identical. Graphs: the real Latgalian Wikipedia, and a larger generated graph whose
summaries are real sentences of the Latgalian dump, recombined.

    python bench/bench_play.py [--games 30] [--nodes 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from wikigame_spark.agents.base import AgentSpec, agent_class, worker_agent
from wikigame_spark.devtools.games import write_games
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.handles import GraphHandle
from wikigame_spark.play.engine import play_games

DATA = os.path.join(os.path.dirname(ROOT), "shared", "data", "wikipedia")
OUT = os.path.join(ROOT, "out", "bench", "play")


def build_real(spark) -> str:
    from jobs import build_wikipedia

    out = os.path.join(OUT, "ltgwiki")
    if not os.path.exists(f"{out}/manifest.json"):
        build_wikipedia.main(
            ["--input", os.path.join(DATA, "ltgwiki-20170901-pages-articles.xml.bz2"), "--output", out, "--overwrite"]
        )
    return out


def build_generated(real_graphs: list[str], nodes: int, seed: int = 1) -> str:
    """A scale-free directed graph whose summaries are recombined real sentences."""
    out = os.path.join(OUT, f"generated-{nodes}")
    if os.path.exists(f"{out}/manifest.json"):
        return out
    sentences = []
    for g in real_graphs:
        for s in pq.read_table(f"{g}/nodes", columns=["summary"]).column("summary").to_pylist():
            sentences += [x.strip() + "." for x in s.split(".") if len(x.strip()) > 20]
    rnd = random.Random(seed)
    rng = np.random.default_rng(seed)
    summaries = [" ".join(rnd.sample(sentences, 4))[:1000] for _ in range(nodes)]
    titles = [f"{s.split()[0]} {s.split()[1]} {i}" for i, s in enumerate(summaries)]
    # preferential attachment by Zipf-distributed targets, mean out-degree 20
    src = np.repeat(np.arange(nodes), rng.poisson(20, nodes))
    dst = (rng.zipf(1.3, src.size) - 1) % nodes
    dst = rng.permutation(nodes)[dst]
    keep = src != dst
    edges = np.unique(np.stack([src[keep], dst[keep]], 1), axis=0)
    os.makedirs(f"{out}/nodes", exist_ok=True)
    os.makedirs(f"{out}/edges", exist_ok=True)
    pq.write_table(
        pa.table(
            {
                "id": pa.array(range(nodes), pa.int64()),
                "page_id": pa.array(range(nodes), pa.int64()),
                "title": titles,
                "summary": summaries,
            }
        ),
        f"{out}/nodes/part-0.parquet",
    )
    pq.write_table(
        pa.table({"src": pa.array(edges[:, 0], pa.int64()), "dst": pa.array(edges[:, 1], pa.int64())}),
        f"{out}/edges/part-0.parquet",
    )
    with open(f"{out}/manifest.json", "w") as f:
        json.dump({"kind": "generated-graph", "created": time.strftime("%Y-%m-%dT%H:%M:%S")}, f)
    return out


def measure(spark, graph_dir: str, n_games: int) -> None:
    games_dir = f"{graph_dir}/bench-games-{n_games}"
    if not os.path.exists(games_dir):
        write_games(graph_dir, n_games, seed=11, path=games_dir)
    games = pq.read_table(f"{games_dir}/games").to_pylist()
    graph = WorkerGraph.from_directory(graph_dir)
    start = time.perf_counter()
    embedding = agent_class("embedding")
    resources = embedding.prepare(spark, GraphHandle.open(graph_dir, spark), embedding.configure())
    cache_seconds = time.perf_counter() - start
    results = {}
    for name, settings, res in (("cache", {}, resources), ("reference", {"reencode": True}, {})):
        agent = worker_agent(AgentSpec("embedding", embedding.configure(**settings), res), graph)
        start = time.perf_counter()
        rows = play_games(games, graph, agent, 100, "embedding", None)
        results[name] = (rows, time.perf_counter() - start)
    (ours, t_ours), (ref, t_ref) = results["cache"], results["reference"]
    same = sum(a["route"] == b["route"] for a, b in zip(ours, ref)) / len(games)
    steps = sum(r["steps"] for r in ours)
    print(
        f"{os.path.basename(graph_dir)}: {graph.num_nodes} nodes, {graph.indices.size} edges, {len(games)} games, "
        f"{steps} steps"
    )
    print(f"  reference (re-encode each step): {len(games) / t_ref:.2f} games/s ({t_ref:.1f} s)")
    print(
        f"  ours (embedding cache):          {len(games) / t_ours:.1f} games/s ({t_ours:.2f} s); "
        f"one-time cache build {cache_seconds:.1f} s"
    )
    print(f"  ratio {t_ref / t_ours:.0f}x (bar >= 20x); identical routes {same:.0%} (bar 100%)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=30)
    p.add_argument("--nodes", type=int, default=20_000)
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from wikigame_spark.session import build_session

    spark = build_session("bench_play")
    real = build_real(spark)
    measure(spark, real, args.games)
    generated = build_generated([real], args.nodes)
    measure(spark, generated, args.games)


if __name__ == "__main__":
    main()
