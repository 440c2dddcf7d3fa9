"""LLM agents playing real games through llama.cpp's OpenAI-compatible server and Gemma-3-270M."""

import json
import os

import pytest
from mlflow.tracking import MlflowClient

from jobs import play_games
from tests.jobs import end_to_end as e2e
from wikigame_spark import manifests, storage
from wikigame_spark.devtools.games import write_games
from wikigame_spark.schemas import PLAYS

SECRET = "sk-test-never-logged-1234"
LLM_OUTCOMES = {"success", "step_limit", "dead_end", "hallucination", "bad_request", "no_response", "no_answer"}


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    with e2e.chat_server(tmp_path_factory) as server:
        yield server


@pytest.mark.slow
def test_llm_and_reasoning_play_real_games(spark, ltg_graph, llama, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    games = write_games(ltg_graph, 2, seed=5, path=str(tmp_path / "games"))
    for agent in ("llm", "reasoning"):
        out = str(tmp_path / agent)
        argv = [
            "--graph",
            ltg_graph,
            "--games-dir",
            games,
            "--output",
            out,
            "--experiment",
            "llm",
            "--agent",
            agent,
            "--model",
            llama.model,
            "--base-url",
            llama.base_url,
            "--max-steps",
            "2",
            "--max-titles",
            "20",
            "--max-tokens",
            "64",
            "--timeout",
            "120",
        ]
        assert play_games.main(argv) == 0
        plays = spark.read.schema(PLAYS).parquet(f"{out}/part-*/plays").toPandas()
        assert len(plays) == 2 and set(plays.outcome) <= LLM_OUTCOMES
        assert (plays.queries >= 1).all() and (plays.prompt_tokens > 0).all() and (plays.seconds > 0).all()
        assert set(plays.model) == {llama.model}
        manifest = manifests.read_manifest(storage.folder(out))
        run = MlflowClient().get_run(manifest["mlflow_run_id"])
        everything = json.dumps(manifest) + json.dumps(run.data.params) + json.dumps(run.data.tags)
        assert SECRET not in everything
        assert run.data.params["agent"] == agent and "base_url" in run.data.params
        for name in os.listdir(tmp_path):
            if name.endswith(".log"):
                assert SECRET not in open(tmp_path / name).read()
