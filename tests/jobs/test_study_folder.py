"""A newcomer's study: a job run from any folder, without MLFLOW_TRACKING_URI, keeps its MLflow store
(mlflow.db, artifacts in mlruns/) there beside the outputs it writes; a games set the graph's size
when no number is given."""

from __future__ import annotations

import json
import os
import subprocess

import mlflow

from tests.jobs.jobrun import command, job_env, run_job
from wikigame_spark.devtools import DATA


def test_a_job_keeps_its_runs_beside_its_outputs(ltg_graph, tmp_path):
    env = job_env("")
    env.pop("MLFLOW_TRACKING_URI")
    argv = command("sample_games", "--graph", ltg_graph, "--games", "5", "--output", "out/games")
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "out" / "games" / "manifest.json").is_file()
    assert (tmp_path / "mlflow.db").is_file() and (tmp_path / "mlruns").is_dir()
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("wikigame").experiment_id])
    assert [r.data.tags.get("stage") for r in runs] == ["sample_games"]


def test_the_default_games_set_follows_the_graph(tmp_path, caplog):
    env = job_env(f"sqlite:///{tmp_path}/mlflow.db")
    works = os.path.join(DATA, "openalex", "real-works")
    built = run_job(
        "build_openalex", "--input", works, "--field", "Mathematics", "--output", str(tmp_path / "oa"), env=env
    )
    assert built.rc == 0, built.err[-3000:]
    graph = tmp_path / "oa" / "mathematics"
    done = run_job("sample_games", "--graph", str(graph), env=env)
    assert done.rc == 0, done.err[-3000:]
    nodes = json.loads((graph / "manifest.json").read_text())["counts"]["nodes"]
    assert json.loads((graph / "games" / "manifest.json").read_text())["games"] == nodes == 26
    assert f"sample_games: {nodes} games, one per node of the graph (at most 10000; --games sets it)" in caplog.text
