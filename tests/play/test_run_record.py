"""A play run is bound to what made it: one writer, resumes only with the same settings, and a
record (MLflow params, metrics, the plays manifest) naming graph, games, agent and model.

Real processes started and killed by PID, two racing on one run name, a real MLflow store.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import mlflow
import pytest
from mlflow.tracking import MlflowClient

from jobs import play_games
from tests.conftest import ROOT
from tests.jobs.jobrun import Finished, chunk_manifests, command, job_env, run_job
from tests.jobs.test_preflight import EDGES, TITLES, graph
from wikigame_spark import manifests, storage
from wikigame_spark.agents.sentence_models import DEFAULT_MODEL, model_digest
from wikigame_spark.devtools.games import write_games
from wikigame_spark.play import record

GAMES = 8


@pytest.fixture()
def setup(tmp_path):
    g = graph(tmp_path, "a", TITLES, EDGES)
    games = write_games(g, GAMES, path=str(tmp_path / "games"))
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    return {"graph": g, "games": games, "out": str(tmp_path / "plays"), "uri": uri, "env": job_env(uri)}


def args(s: dict, *extra: str) -> list[str]:
    return ["--graph", s["graph"], "--games-dir", s["games"], "--output", s["out"], "--chunk-games", "1", *extra]


def runs_named(uri: str, experiment: str, name: str) -> list:
    exp = MlflowClient(uri).get_experiment_by_name(experiment)
    if exp is None:
        return []
    return MlflowClient(uri).search_runs([exp.experiment_id], filter_string=f"tags.mlflow.runName = '{name}'")


def start(s: dict, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        command("play_games", *args(s, *extra)), cwd=ROOT, env=s["env"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def finish(proc: subprocess.Popen) -> Finished:
    out, err = proc.communicate(timeout=600)
    return Finished(proc.returncode, out.decode(), err.decode())


def kill_after_first_chunk(s: dict, *extra: str) -> int:
    proc = start(s, *extra)
    first = f"{s['out']}/part-000000/manifest.json"
    deadline = time.time() + 300
    while not os.path.exists(first) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    assert os.path.exists(first), finish(proc).err[-3000:]
    return proc.pid


@pytest.mark.slow
def test_resume_with_other_settings_is_refused_and_same_settings_resume(setup):
    s = setup
    base = ("--agent", "random", "--games", str(GAMES), "--run-name", "r", "--experiment", "e1")
    dead = kill_after_first_chunk(s, *base)
    with open(f"{s['out']}.lock") as f:
        assert json.load(f)["pid"] == dead  # the killed owner's lock is left behind...
    before = chunk_manifests(s["out"])
    assert 1 <= len(before) < GAMES and not os.path.exists(f"{s['out']}/manifest.json")

    other = ("--agent", "tfidf", "--games", str(GAMES), "--run-name", "r", "--max-steps", "7", "--experiment", "e2")
    line = run_job("play_games", *args(s, *other), env=s["env"]).refused("run 'r' was played with other settings")
    assert "agent: 'random' then, 'tfidf' now" in line and "max_steps: 100 then, 7 now" in line
    steps = ("--agent", "random", "--games", str(GAMES), "--run-name", "r", "--max-steps", "50", "--experiment", "e1")
    line = run_job("play_games", *args(s, *steps), env=s["env"]).refused("max_steps: 100 then, 50 now")
    assert "agent" not in line
    assert chunk_manifests(s["out"]) == before  # nothing played, replaced or removed
    assert runs_named(s["uri"], "e2", "r") == []
    assert [r.info.status for r in runs_named(s["uri"], "e1", "r")] == ["RUNNING"]  # the killed one

    done = run_job("play_games", *args(s, *base), env=s["env"])  # ...and taken over: it is dead
    assert done.rc == 0, done.err[-3000:]
    after = chunk_manifests(s["out"])
    assert len(after) == GAMES and {k: after[k] for k in before} == before
    assert len({json.dumps(m["made_by"], sort_keys=True) for m in after.values()}) == 1
    plays = play_games_plays(s["out"])
    assert sorted(plays.game_id) == list(range(GAMES)) and set(plays.agent) == {"random"}
    (resumed,) = runs_named(s["uri"], "e1", "r")
    assert resumed.info.status == "FINISHED" and resumed.data.metrics["games"] == GAMES
    assert not os.path.exists(f"{s['out']}.lock")

    run_job("play_games", *args(s, *other), env=s["env"]).refused(f"{s['out']} exists; pass --overwrite")
    done = run_job("play_games", *args(s, *steps, "--overwrite"), env=s["env"])  # replaced: other plays
    assert done.rc == 0, done.err[-3000:]
    replaced = play_games_plays(s["out"])
    assert sorted(replaced.game_id) == list(range(GAMES)) and replaced.steps.max() <= 50
    assert {m["made_by"]["max_steps"] for m in chunk_manifests(s["out"]).values()} == {50}


def play_games_plays(out: str):
    import pandas as pd

    return pd.concat(pd.read_parquet(f"{out}/{part}/plays") for part in sorted(chunk_manifests(out)))


@pytest.mark.slow
def test_two_processes_on_one_run_name(setup):
    s = setup
    both = ("--agent", "random", "--games", str(GAMES), "--run-name", "race", "--experiment", "e")
    first, second = start(s, *both), start(s, *both)
    results = {first.pid: finish(first), second.pid: finish(second)}
    won = [pid for pid, r in results.items() if r.rc == 0]
    assert len(won) == 1, {pid: r.err[-2000:] for pid, r in results.items()}
    (lost,) = [r for pid, r in results.items() if pid not in won]
    lost.refused(f"play run 'race' is being written by pid {won[0]}")
    (finished,) = runs_named(s["uri"], "e", "race")
    assert finished.info.status == "FINISHED"
    plays = play_games_plays(s["out"])
    assert sorted(plays.game_id) == list(range(GAMES))
    with open(f"{s['out']}/manifest.json") as f:
        assert json.load(f)["mlflow_run_id"] == finished.info.run_id


@pytest.mark.slow
def test_the_run_record_names_graph_games_agent_model(setup, spark, monkeypatch, tmp_path):
    s = setup
    monkeypatch.setenv("MLFLOW_TRACKING_URI", s["uri"])
    monkeypatch.chdir(tmp_path)
    rel_graph = os.path.relpath(s["graph"], tmp_path)
    argv = ["--graph", rel_graph, "--games-dir", s["games"], "--agent", "embedding", "--games", "6"]
    assert play_games.main([*argv, "--run-name", "emb", "--experiment", "rec"]) == 0
    out = f"{s['graph']}/plays/emb"
    manifest = manifests.read_manifest(storage.folder(out))
    identity = manifest[record.RUN_IDENTITY]
    with open(f"{s['graph']}/manifest.json") as f:
        graph_sha1 = manifests.manifest_sha1(json.load(f))
    with open(f"{s['games']}/manifest.json") as f:
        games_manifest = json.load(f)
    assert identity == {
        record.GRAPH_URI: s["graph"],
        record.GRAPH_MANIFEST_SHA1: graph_sha1,
        record.GAMES_URI: s["games"],
        record.GAMES_MANIFEST_SHA1: manifests.manifest_sha1(games_manifest),
        record.GAMES_SEED: games_manifest["seed"],
        record.GAMES_COUNT: 6,
        record.AGENT: "embedding",
        record.MODEL: DEFAULT_MODEL,
        record.MODEL_DIGEST: model_digest(DEFAULT_MODEL),
        record.LLM_ENGINE: "",
        record.CHAT_FORMAT: "",
        record.PROTOCOL: "paper",
    }
    assert len(identity[record.MODEL_DIGEST]) == 40 and os.path.isabs(identity[record.GRAPH_URI])
    run = MlflowClient(s["uri"]).get_run(manifest["mlflow_run_id"])
    assert {k: run.data.params.get(k, "") for k in record.IDENTITY_PARAMS} == {k: str(v) for k, v in identity.items()}
    assert "" not in run.data.params.values() and record.LLM_ENGINE not in run.data.params  # unset: not logged
    m = run.data.metrics
    assert not set(record.USAGE_METRICS) & set(m)  # the embedding agent asks no model server: nothing to count
    for chunk in chunk_manifests(out).values():
        assert chunk["made_by"][record.MODEL_DIGEST] == identity[record.MODEL_DIGEST]
        assert chunk["made_by"]["max_steps"] == 100 and chunk["made_by"]["options"]["use_titles"] is False
    assert mlflow.get_experiment_by_name("rec") is not None


class _Server:
    """An HTTP server on 127.0.0.1 answering GETs from a dict of path -> JSON (404 otherwise)."""

    def __init__(self, routes: dict) -> None:
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = routes.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps(body or {"error": "not found"}).encode())

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_llm_identity_as_servers_report_it():
    from wikigame_spark.agents.llm_client import server_identity

    template = "{% for m in messages %}<start_of_turn>{{ m.role }}\n{{ m.content }}<end_of_turn>\n{% endfor %}"
    llama = {
        "/v1/models": {"data": [{"id": "gemma-3-270m", "owned_by": "llamacpp"}]},
        "/props": {"chat_template": template, "build_info": "b6500-abc"},
    }
    with _Server(llama) as server:
        found = server_identity(server.url, "gemma-3-270m")
    assert found["model"] == "gemma-3-270m" and found["llm_engine"] == "llama.cpp server b6500-abc"
    assert found["chat_format"].startswith("gemma (template sha1 ")
    python_server = {
        "/v1/models": {"data": [{"id": "gemma-3-270m", "owned_by": "me"}]},
        "/openapi.json": {"info": {"title": "🦙 llama.cpp Python API"}},
    }
    with _Server(python_server) as server:
        found = server_identity(server.url, "gemma-3-270m")
    assert found == {
        "model": "gemma-3-270m",
        "llm_engine": "llama-cpp-python server",
        "chat_format": "unreported",
        "model_digest": "",
    }
    hosted = {"/v1/models": {"data": [{"id": "gpt-x-2026-01", "owned_by": "system"}, {"id": "other", "owned_by": "o"}]}}
    with _Server(hosted) as server:
        assert server_identity(server.url, "gpt-x-2026-01")["llm_engine"] == "system"
        assert server_identity(server.url, "unknown")["model"] == "unknown"  # as asked, when not listed
