"""An LLM run with ``--trace-games``: each step of the first games one MLflow trace in the play
run, every query a chat span with the conversation sent, the reply and its tokens; the plays are
those of the same run untraced. The play_games job against a real HTTP server on 127.0.0.1."""

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


@pytest.mark.slow
def test_traced_games_show_each_steps_conversation_reply_and_tokens(tmp_path):
    g = graph(tmp_path, "a", TITLES, EDGES)
    games = write_games(g, 6, path=str(tmp_path / "games"))
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    with FaultyServer() as server:  # answers the target when it is offered, else the first title
        common = ["--graph", g, "--games-dir", games, "--agent", "llm", "--model", "any", "--base-url", server.url]
        common += ["--max-steps", "6", "--experiment", "tr"]
        runs = {}
        for name, extra in (("plain", []), ("traced", ["--trace-games", str(TRACED)])):
            done = run_job(
                "play_games", *common, *extra, "--run-name", name, "--output", str(tmp_path / name), env=job_env(uri)
            )
            assert done.rc == 0, done.err[-3000:]
            runs[name] = json.load(open(tmp_path / name / "manifest.json"))["mlflow_run_id"]
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
