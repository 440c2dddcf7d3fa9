"""A study's runs and outputs in one folder: a job run from any folder, without MLFLOW_TRACKING_URI,
keeps its MLflow store (mlflow.db, artifacts in mlruns/) there beside the outputs it writes."""

from __future__ import annotations

import subprocess

import mlflow

from tests.jobs.jobrun import command, job_env


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
