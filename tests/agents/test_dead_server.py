"""A dead or wrong LLM server is the user's to fix: the real job stops before any game, exit 2."""

import os
import subprocess
import sys

import pytest

from wikigame_spark.devtools.games import write_games

ROOT = __file__.rsplit("/tests/", 1)[0]


@pytest.mark.parametrize("agent", ["llm", "likelihood"])
def test_a_wrong_base_url_exits_2_before_any_game(ltg_graph, tmp_path, agent):
    games = write_games(ltg_graph, 2, seed=5, path=str(tmp_path / "games"))
    argv = [
        "--graph", ltg_graph, "--games-dir", games, "--output", str(tmp_path / "plays"),
        "--agent", agent, "--model", "gemma-3-270m", "--base-url", "http://127.0.0.1:9/v1",
    ]  # fmt: skip
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db"}
    code = "from jobs import play_games; from wikigame_spark import cli; cli.run(play_games.main)"
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: --base-url http://127.0.0.1:9/v1: the LLM server does not answer"), last
    assert not (tmp_path / "plays" / "part-000000").exists()
