"""Benchmark: LLM games per minute with many requests in flight vs one at a time.

Plays the same games on the real Latgalian graph against llama.cpp's OpenAI-compatible server
with the Gemma-3-270M GGUF (started here on 127.0.0.1), with ``concurrency`` 1 and N; prints games
per minute, the ratio, and tokens per game. Replies are not cached.

    python bench/bench_llm.py [--games 8] [--concurrency 8] [--max-steps 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import pyarrow.parquet as pq

from bench.bench_play import build_real
from tests.play.games import write_games
from wikigame_spark.agents.llm import LlmAgent
from wikigame_spark.agents.local_server import LlamaServer
from wikigame_spark.play.engine import play_games
from wikigame_spark.play.worker_graph import WorkerGraph


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=8)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--max-steps", type=int, default=3)
    p.add_argument("--max-titles", type=int, default=50)
    args = p.parse_args()
    from wikigame_spark.session import build_session

    graph_dir = build_real(build_session("bench_llm"))
    games_dir = f"{graph_dir}/bench-llm-games-{args.games}"
    if not os.path.exists(games_dir):
        write_games(graph_dir, args.games, seed=3, path=games_dir)
    games = pq.read_table(f"{games_dir}/games").to_pylist()
    graph = WorkerGraph.from_directory(graph_dir)
    with LlamaServer() as server:
        results = {}
        for concurrency in (1, args.concurrency):
            settings = {
                "model": server.model,
                "base_url": server.base_url,
                "max_titles": args.max_titles,
                "concurrency": concurrency,
                "timeout": 300,
                "max_tokens": 100,
            }
            agent = LlmAgent(graph, settings, {})
            start = time.perf_counter()
            rows = play_games(games, graph, agent, args.max_steps, "llm", server.model)
            results[concurrency] = (rows, time.perf_counter() - start)
    for concurrency, (rows, seconds) in results.items():
        tokens = sum(r["prompt_tokens"] + r["completion_tokens"] for r in rows) / len(rows)
        queries = sum(r["queries"] for r in rows) / len(rows)
        print(
            f"concurrency {concurrency}: {len(rows) / seconds * 60:.1f} games/min ({seconds:.0f} s), "
            f"{queries:.1f} queries and {tokens:.0f} tokens per game"
        )
    (_, t1), (_, tn) = results[1], results[args.concurrency]
    print(f"ratio {t1 / tn:.2f}x with concurrency {args.concurrency} (bar >= 4x)")


if __name__ == "__main__":
    main()
