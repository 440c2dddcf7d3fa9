"""llama.cpp's own server (built by ``make install``): games in flight are decoded together in its slots."""

import json
import threading
import urllib.request

import pyarrow.parquet as pq
import pytest

from tests.conftest import LLAMA_THREADS
from wikigame_spark.agents.llm import LlmAgent
from wikigame_spark.devtools.games import write_games
from wikigame_spark.devtools.local_server import NATIVE, LlamaServer
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.play.engine import play_games

pytestmark = pytest.mark.slow

SLOTS = 4


def busy_slots(base_url: str, stop: threading.Event, peak: list[int]) -> None:
    """The most slots seen processing at once, from the server's slot monitor."""
    url = base_url.removesuffix("/v1") + "/slots"
    while not stop.is_set():
        with urllib.request.urlopen(url, timeout=5) as r:
            peak[0] = max(peak[0], sum(bool(s.get("is_processing")) for s in json.load(r)))
        stop.wait(0.05)


def test_concurrent_games_share_the_native_servers_slots(ltg_graph, tmp_path):
    games_dir = write_games(ltg_graph, SLOTS, seed=11, path=str(tmp_path / "games"))
    games = pq.read_table(f"{games_dir}/games").to_pylist()
    graph = WorkerGraph.from_directory(ltg_graph)
    log = str(tmp_path / "server.log")
    with LlamaServer(engine=NATIVE, parallel=SLOTS, n_ctx=4096, threads=LLAMA_THREADS, log_path=log) as server:
        settings = {"model": server.model, "base_url": server.base_url, "max_titles": 30, "max_tokens": 40}
        agent = LlmAgent(graph, LlmAgent.configure(**settings, concurrency=SLOTS, timeout=300), {})
        stop, peak = threading.Event(), [0]
        monitor = threading.Thread(target=busy_slots, args=(server.base_url, stop, peak))
        monitor.start()
        try:
            rows = play_games(games, graph, agent, 1, "llm", server.model)
        finally:
            stop.set()
            monitor.join()
    assert len(rows) == SLOTS and all(r["queries"] >= 1 and r["prompt_tokens"] > 0 for r in rows)
    assert all(r["outcome"] in {"success", "step_limit", "dead_end", "hallucination"} for r in rows)
    assert peak[0] >= 2, f"never more than {peak[0]} slot busy at once"
    assert f"n_slots = {SLOTS}" in open(log).read()
