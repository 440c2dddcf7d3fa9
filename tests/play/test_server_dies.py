"""A real LLM server killed in the middle of a run: one ``error:`` line, exit 2, the chunks already
played kept, and the same run resumed once a server answers again, complete, no game played twice."""

import threading

import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.conftest import LLAMA_THREADS
from tests.jobs.jobrun import chunk_manifests, job_env, run_job
from wikigame_spark.devtools.games import write_games
from wikigame_spark.devtools.local_server import LlamaServer
from wikigame_spark.outcomes import NO_RESPONSE

GAMES, CHUNK = 12, 3


def kill_after_first_chunk(server: LlamaServer, plays: str, done: threading.Event) -> None:
    while not done.is_set() and not chunk_manifests(plays):
        done.wait(0.05)
    server.proc.kill()


@pytest.mark.slow
def test_a_server_killed_mid_run_ends_in_one_line_and_the_run_resumes(ltg_graph, tmp_path):
    games = write_games(ltg_graph, GAMES, seed=3, path=str(tmp_path / "games"))
    plays = str(tmp_path / "plays")
    env = job_env(f"sqlite:///{tmp_path}/mlflow.db")
    log = str(tmp_path / "server.log")
    server = LlamaServer(logits_all=False, threads=LLAMA_THREADS, log_path=log).start()
    argv = [
        "--graph", ltg_graph, "--games-dir", games, "--output", plays, "--agent", "llm",
        "--model", server.model, "--base-url", server.base_url, "--chunk-games", str(CHUNK),
        "--max-steps", "1", "--max-titles", "20", "--max-tokens", "16", "--max-retries", "0",
        "--http-retries", "0", "--concurrency", "1", "--timeout", "120",
    ]  # fmt: skip
    done = threading.Event()
    killer = threading.Thread(target=kill_after_first_chunk, args=(server, plays, done))
    killer.start()
    try:
        killed = run_job("play_games", *argv, env=env, process=True)  # the console a user sees
        last = killed.refused("no answer")
    finally:
        done.set()
        killer.join()
        server.stop()
    # above the error, INFO lines and Java's note on Spark's Vector API: no warning, no task's trace
    noted = [line for line in killed.err.splitlines()[:-1] if " INFO " not in line]
    assert noted == ["WARNING: Using incubator modules: jdk.incubator.vector"], killed.err
    kept = chunk_manifests(plays)
    assert 1 <= len(kept) < GAMES // CHUNK, kept
    assert "rerun with the same --run-name" in last, last
    first = pq.read_table(f"{plays}/part-000000/plays").column("game_id").to_pylist()

    with LlamaServer(port=server.port, logits_all=False, threads=LLAMA_THREADS, log_path=log):
        finished = run_job("play_games", *argv, env=env)
    assert finished.rc == 0, finished.err[-3000:]
    table = pq.read_table(f"{plays}/part-000000/plays")  # chunk 0 is the one kept, not played again
    assert table.column("game_id").to_pylist() == first
    played = pd.concat(pq.read_table(f"{plays}/{name}/plays").to_pandas() for name in chunk_manifests(plays))
    assert sorted(played.game_id) == list(range(GAMES))
    assert NO_RESPONSE not in set(played.outcome)
    assert all(m["unanswered"] == 0 for m in chunk_manifests(plays).values())
