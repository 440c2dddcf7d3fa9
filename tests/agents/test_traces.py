"""An LLM run with ``--trace-games``: each step of the first games one MLflow trace in the play
run, every query a chat span with the conversation sent, the reply and its tokens; the plays are
those of the same run untraced; the MLflow UI shows them. The play_games job against a real HTTP
server on 127.0.0.1; the UI in headless Chromium against ``mlflow server``."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from tests.jobs.jobrun import job_env, run_job
from tests.jobs.test_preflight import EDGES, TITLES, graph
from wikigame_spark.devtools.faulty_server import FaultyServer
from wikigame_spark.devtools.games import write_games

TRACED = 2


def plays_of(uri: str, run_id: str, tmp_path) -> pd.DataFrame:
    local = MlflowClient(uri).download_artifacts(run_id, "plays.parquet", str(tmp_path / run_id))
    return pd.read_parquet(local).sort_values("game_id").reset_index(drop=True)


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> dict:
    """The same games played by the llm agent twice, untraced and with the first games traced."""
    tmp = tmp_path_factory.mktemp("traces")
    g = graph(tmp, "a", TITLES, EDGES)
    games = write_games(g, 6, path=str(tmp / "games"))
    uri = f"sqlite:///{tmp}/mlflow.db"
    with FaultyServer() as server:  # answers the target when it is offered, else the first title
        common = ["--graph", g, "--games-dir", games, "--agent", "llm", "--model", "any", "--base-url", server.url]
        common += ["--max-steps", "6", "--experiment", "tr"]
        runs = {}
        for name, extra in (("plain", []), ("traced", ["--trace-games", str(TRACED)])):
            done = run_job(
                "play_games", *common, *extra, "--run-name", name, "--output", str(tmp / name), env=job_env(uri)
            )
            assert done.rc == 0, done.err[-3000:]
            runs[name] = json.load(open(tmp / name / "manifest.json"))["mlflow_run_id"]
    return {"uri": uri, "runs": runs}


@pytest.mark.slow
def test_traced_games_show_each_steps_conversation_reply_and_tokens(study, tmp_path):
    uri, runs = study["uri"], study["runs"]
    client = MlflowClient(uri)
    plain, traced = (plays_of(uri, runs[n], tmp_path) for n in ("plain", "traced"))
    columns = ["game_id", "outcome", "steps", "route", "queries", "prompt_tokens", "completion_tokens"]
    assert plain[columns].astype(str).equals(traced[columns].astype(str))  # tracing changes no play

    experiment = client.get_experiment_by_name("tr").experiment_id
    assert client.search_traces(locations=[experiment], run_id=runs["plain"]) == []
    found = client.search_traces(locations=[experiment], run_id=runs["traced"], max_results=500)
    first = traced[traced.game_id < TRACED]
    assert len(found) == int(first.steps.sum()) > 0  # one trace a step (every reply a move here)
    by_step = {(int(t.info.tags["game_id"]), int(t.info.tags["step"])): t for t in found}
    assert sorted(by_step) == [(int(r.game_id), k) for r in first.itertuples() for k in range(r.steps)]
    for r in first.itertuples():
        prompt_tokens = 0
        for k in range(r.steps):
            trace = by_step[(int(r.game_id), k)]
            root = next(s for s in trace.data.spans if s.parent_id is None)
            assert root.inputs["page"] == TITLES[r.route[k]] and root.inputs["target"] == TITLES[r.target]
            assert root.outputs == {"chosen": TITLES[r.route[k + 1]], "outcome": "moved"}
            (query,) = [s for s in trace.data.spans if s.parent_id == root.span_id]
            assert query.span_type == "CHAT_MODEL" and query.end_time_ns > query.start_time_ns
            sent = query.inputs["messages"]  # the paper's conversation: the target, then the titles offered
            assert TITLES[r.target] in json.dumps(sent) and "following list: " in sent[-1]["content"]
            assert json.loads(query.outputs["reply"])["title"] == TITLES[r.route[k + 1]]
            prompt_tokens += query.attributes["prompt_tokens"]
        assert prompt_tokens == r.prompt_tokens  # the spans' tokens are the plays' own counts


@pytest.mark.browser
def test_the_traces_read_in_the_mlflow_ui(study, tmp_path):
    """``mlflow server`` on the study's store and headless Chromium: the traced run's Traces tab
    lists its steps with their tokens; a step opens on its query, whose conversation and reply show."""
    from selenium.webdriver.common.by import By

    from tests.human.server import chromium, page_wait
    from tests.play.test_protocols import mlflow_server

    uri, run = study["uri"], study["runs"]["traced"]
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("tr").experiment_id
    found = client.search_traces(locations=[experiment], run_id=run, max_results=500)
    first = next(t for t in found if t.info.tags["game_id"] == "0" and t.info.tags["step"] == "0")
    body = lambda b: b.find_element(By.TAG_NAME, "body").text  # noqa: E731
    with mlflow_server(uri) as url:
        browser = chromium(args=("--window-size=2400,1400",))
        try:
            browser.get(f"{url}/#/experiments/{experiment}/runs/{run}/traces?workflowType=machine_learning")
            page_wait(browser, 120).until(lambda b: f"{len(found)} of {len(found)}" in body(b))
            browser.save_screenshot(str(tmp_path / "traces.png"))
            text = body(browser)
            assert "Tokens" in text and '"target": "Page 10"' in text and '"outcome": "moved"' in text

            browser.get(f"{url}/#/experiments/{experiment}/traces?selectedEvaluationId={first.info.trace_id}")
            page_wait(browser, 120).until(lambda b: "game 0 step 0" in body(b) and "query 1" in body(b))
            browser.find_element(By.XPATH, "//*[text()='query 1']").click()
            page_wait(browser, 120).until(lambda b: "following list" in body(b))
            browser.save_screenshot(str(tmp_path / "query.png"))
            text = body(browser)
            reply = next(s for s in first.data.spans if s.name == "query 1").outputs["reply"]
            assert json.loads(reply)["title"] in text and '"reason"' in text  # the model's reply as it came
        finally:
            browser.quit()
