"""The tool interface with a real model: the bundled Qwen2.5-Coder-0.5B-Instruct on llama.cpp's own
server plays by tool calls through the play job on a Wikipedia and an OpenAlex graph, priced, and
the report sets its invalid-call rate and price beside the other ways it plays; llama-cpp-python's
server, which returns tool calls as text, is refused before any game."""

import json
import os

import pyarrow.parquet as pq
import pytest
from mlflow.tracking import MlflowClient

from jobs import play_games, report
from tests.conftest import LLAMA_THREADS
from tests.jobs import end_to_end as e2e
from wikigame_spark.agents.llm import LlmAgent
from wikigame_spark.agents.llm_client import ServerUnreachable
from wikigame_spark.devtools.local_server import NATIVE, PYTHON, LlamaServer
from wikigame_spark.devtools.models import QWEN_SMALL
from wikigame_spark.session import PROJECT_DIR

pytestmark = pytest.mark.slow

PRICES = os.path.join(PROJECT_DIR, "conf", "prices.yaml")
WAYS = {"tools": ["--interface", "tools"], "textcalls": ["--interface", "tools", "--calls-in-text"]}


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    log = str(tmp_path_factory.mktemp("qwen") / "server.log")
    with LlamaServer(engine=NATIVE, n_ctx=8192, threads=LLAMA_THREADS, log_path=log, model=QWEN_SMALL.name) as server:
        yield server


def test_tool_calls_through_the_play_job_and_the_report(
    qwen, ltg_graph, spark, tmp_path, tmp_path_factory, monkeypatch
):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    graphs = {"ltgwiki": ltg_graph, e2e.FIELD: e2e.openalex_graph(tmp_path_factory)}
    rows = {}
    for name, graph in graphs.items():
        games_dir = str(tmp_path / name / "games")
        e2e.games(graph, games_dir, 2, *(["--target-language", "en"] if name == e2e.FIELD else []))
        for way, flags in WAYS.items():
            out = str(tmp_path / name / way)
            argv = ["--graph", graph, "--games-dir", games_dir, "--agent", "llm", "--model", qwen.model]
            argv += ["--base-url", qwen.base_url, "--max-steps", "2", "--max-titles", "10", "--max-tokens", "60"]
            argv += ["--timeout", "300", "--prices", PRICES, "--experiment", "tools", "--output", out, *flags]
            assert play_games.main(argv) == 0
            plays = pq.read_table(f"{out}/part-000000/plays").to_pylist()
            assert len(plays) == 2
            for p in plays:
                assert p["outcome"] in {"success", "step_limit", "dead_end", "invalid_calls"}, p
                assert p["queries"] == p["steps"] + p["invalid_calls"] and p["prompt_tokens"] > 0
                assert p["price_usd"] > 0  # the local model's compute at the core-hour price
                if p["queries"] > 1:  # the game's conversation grows: its prefix is read from the server's cache
                    assert 0 < p["cached_tokens"] < p["prompt_tokens"]
                if p["outcome"] == "invalid_calls":
                    assert p["invalid_calls"] == 3 and p["detail"].startswith("3 invalid calls on this page; last: ")
            rows[(name, way)] = plays
            with open(os.path.join(out, "manifest.json"), encoding="utf-8") as f:
                run = MlflowClient().get_run(json.load(f)["mlflow_run_id"])
            assert run.data.params["interface"] == "tools" and run.data.metrics["price_per_game_usd"] > 0
            assert run.data.metrics["invalid_calls_total"] == sum(p["invalid_calls"] for p in plays)
    assert report.main(["--experiment", "tools", "--output", str(tmp_path / "report"), "--overwrite"]) == 0
    with open(tmp_path / "report" / "report.json", encoding="utf-8") as f:
        summary = json.load(f)
    priced = {(r["label"], r["graph"]): r for r in summary["prices"]}
    label = {
        "tools": f"llm: {qwen.model} tools ≤2 steps",
        "textcalls": f"llm: {qwen.model} tools (calls in text) ≤2 steps",
    }
    for (name, way), plays in rows.items():
        r = priced[(label[way], name)]
        invalid = sum(p["invalid_calls"] for p in plays)
        assert r["invalid_call_rate"] == pytest.approx(invalid / (invalid + sum(p["steps"] for p in plays)))
        assert r["price_per_game_usd"] > 0
    assert all(any(r["on_frontier"] for r in summary["prices"] if r["graph"] == g) for g in graphs)
    assert "figures/fig_frontier.png" in summary["figures"]


def test_a_server_that_returns_tool_calls_as_text_is_refused(tmp_path):
    with LlamaServer(
        engine=PYTHON, threads=LLAMA_THREADS, log_path=str(tmp_path / "py.log"), model=QWEN_SMALL.name
    ) as s:
        settings = LlmAgent.configure(model=s.model, base_url=s.base_url, interface="tools")
        with pytest.raises(ServerUnreachable, match="returns a model's tool calls as text"):
            LlmAgent.identity(settings)
        LlmAgent.identity(LlmAgent.configure(model=s.model, base_url=s.base_url))  # the text interface plays
