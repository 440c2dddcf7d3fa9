"""A dead or wrong LLM server is the user's to fix: the real job stops before any game, exit 2."""

import pyarrow.parquet as pq
import pytest

from tests.jobs.jobrun import chunk_manifests, job_env, run_job
from wikigame_spark.devtools.faulty_server import FaultyServer
from wikigame_spark.devtools.games import small_graph, write_games


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["llm", "likelihood"])
def test_a_wrong_base_url_exits_2_before_any_game(ltg_graph, tmp_path, agent):
    games = write_games(ltg_graph, 2, seed=5, path=str(tmp_path / "games"))
    argv = [
        "--graph", ltg_graph, "--games-dir", games, "--output", str(tmp_path / "plays"),
        "--agent", agent, "--model", "gemma-3-270m", "--base-url", "http://127.0.0.1:9/v1",
    ]  # fmt: skip
    last = run_job("play_games", *argv, env=job_env(f"sqlite:///{tmp_path}/mlflow.db")).refused()
    assert last.startswith("error: --base-url http://127.0.0.1:9/v1: the LLM server does not answer"), last
    assert not (tmp_path / "plays" / "part-000000").exists()


@pytest.mark.slow
def test_a_run_the_server_mostly_never_answered_is_an_error_not_a_measurement(tmp_path):
    """Games whose server fails (HTTP 500, no retries) end no_response; when that is most of the
    run, the job ends with an error naming the count, and keeps the plays."""
    titles = ["Start good", "Alpha 500", "Beta 500", "Gamma 500", "Delta good"]
    graph = small_graph(tmp_path, titles, [(a, b) for a in range(5) for b in range(5) if a != b])
    games = write_games(graph, 8, seed=1, path=str(tmp_path / "games"))
    targets = pq.read_table(f"{games}/games").column("target").to_pylist()
    failing = sum(titles[t].endswith("500") for t in targets)
    assert failing * 2 > len(targets)
    with FaultyServer() as server:
        argv = [
            "--graph", graph, "--games-dir", games, "--output", str(tmp_path / "plays"), "--agent", "llm",
            "--model", "any", "--base-url", server.url, "--http-retries", "0", "--max-server-failures", "0",
        ]  # fmt: skip
        last = run_job("play_games", *argv, env=job_env(f"sqlite:///{tmp_path}/mlflow.db")).refused()
        assert last.startswith(f"error: {failing} of 8 games ended no_response (the server never answered)"), last
        assert "rerun with the same --run-name to play those" in last
        kept = pq.read_table(str(tmp_path / "plays" / "part-000000" / "plays")).column("outcome").to_pylist()
        assert sorted(kept) == sorted(["no_response"] * failing + ["success"] * (8 - failing))
        assert chunk_manifests(str(tmp_path / "plays"))["part-000000"]["unanswered"] == failing

        # the same command again: only the unanswered games are played (and still unanswered)
        asked = len(server.requests)
        again = run_job("play_games", *argv, env=job_env(f"sqlite:///{tmp_path}/mlflow.db")).refused()
        assert again.startswith(f"error: {failing} of 8 games ended no_response"), again
        replayed = [r for r in server.requests[asked:] if "500" in r["messages"][3]["content"]]
        assert len(server.requests) - asked == len(replayed) == failing
    assert not (tmp_path / "plays" / "manifest.json").exists()  # the run is not finished
