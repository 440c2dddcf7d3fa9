"""README's "Your own commands" as a newcomer types them, from a study folder outside the checkout:
each command of its bash blocks run by the shell with the venv activated and no MLflow setting, the
job paths and data paths written as README says for such a folder. The walk ends with a report
that holds every run on both graphs, and with MLflow's store where README's ``mlflow ui`` looks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import mlflow
import pytest

from tests.conftest import JVM_ENV, ROOT
from wikigame_spark.devtools import DATA

SECTION = re.compile(r"^### 2\. Your own commands\n(.*?)^##", re.S | re.M)
BASH = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)
# Not jobs that end: activating (the environment below is the activated venv's), a server.
SKIPPED = ("source ", "mlflow ui", "python jobs/human_play.py")


def readme_commands() -> list[str]:
    """The section's commands, continuation lines joined, comments left out."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        section = SECTION.search(f.read()).group(1)
    commands = []
    for block in BASH.findall(section):
        for line in re.sub(r"\s*\\\n\s*", " ", block).splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line:
                commands.append(line)
    return commands


def in_study_folder(command: str) -> str:
    """README's rule for a folder of one's own: the checkout's jobs, the data's real path."""
    command = re.sub(r"\b(spark-submit|python) jobs/", rf"\1 {ROOT}/jobs/", command)
    return command.replace("../shared/data", DATA)


def activated_env() -> dict:
    """A user's shell after ``source .venv/bin/activate``: the venv's bin first, none of the
    project's Spark, Python or MLflow settings."""
    ours = ("SPARK_", "PYSPARK_", "PYTHON", "VIRTUAL_ENV", "WIKIGAME_", "MLFLOW_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    venv = os.path.dirname(os.path.dirname(sys.executable))
    env.update(
        PATH=f"{os.path.join(venv, 'bin')}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=venv,
        SPARK_LOCAL_IP="127.0.0.1",  # the tests talk to loopback only
        HF_HUB_OFFLINE="1",
        **JVM_ENV,
    )
    return env


def test_readme_commands_are_found():
    commands = readme_commands()
    runnable = [c for c in commands if not c.startswith(SKIPPED)]
    assert len(runnable) == 15 and all(c.startswith("spark-submit jobs/") for c in runnable), runnable
    assert in_study_folder(runnable[0]).startswith(f"spark-submit {ROOT}/jobs/build_wikipedia.py --input {DATA}/")


@pytest.mark.slow
def test_the_readme_walk_from_a_folder_of_ones_own(tmp_path):
    env = activated_env()
    for command in readme_commands():
        if command.startswith(SKIPPED):
            continue
        done = subprocess.run(
            ["bash", "-c", in_study_folder(command)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
        job = command.split()[1].removeprefix("jobs/").removesuffix(".py")
        last = done.stdout.strip().splitlines()[-1]
        assert last.startswith(f"{job}: wrote "), (command, last)

    report = tmp_path / "out" / "report" / "wikigame"
    manifest = json.loads((report / "manifest.json").read_text())
    runs = {(r["graph"], r["run_name"]) for r in manifest["runs"]}
    assert runs == {
        ("ltgwiki", "embedding-all-MiniLM-L6-v2-s0-nall"),
        ("ltgwiki", "tfidf-s0-nall"),
        ("ltgwiki", "random-s0-nall"),
        ("Mathematics", "embedding-all-MiniLM-L6-v2-s0-nall"),
        ("Mathematics", "tfidf-s0-nall"),
    }
    assert not manifest.get("skipped")
    # README's `mlflow ui --backend-store-uri sqlite:///mlflow.db`, from this folder: every run there
    os.chdir(tmp_path)
    try:
        client = mlflow.MlflowClient("sqlite:///mlflow.db")
        experiment = client.get_experiment_by_name("wikigame")
        stages = sorted(r.data.tags["stage"] for r in client.search_runs([experiment.experiment_id]))
    finally:
        os.chdir(ROOT)
    assert stages.count("play_games") == 5 and stages.count("report") == 2 and stages.count("graph_stats") == 2
    assert (tmp_path / "mlruns").is_dir() and not (tmp_path / "out" / "report" / "wikigame" / "mlruns").exists()
