"""Faults a cluster has, on a real standalone cluster (a master and two workers on 127.0.0.1).

An executor's JVM is killed by its PID while one of its Python workers is busy with a task of
``build_wikipedia`` and of ``play_games``: each job finishes by Spark's task retry (the master
starts a replacement executor) with the output of an undisturbed run, and the play run's MLflow
record holds every game once. A play run's driver killed mid-chunk is resumed by the rerun with the
same run name on the cluster, no game lost or played twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from pyspark.testing import assertDataFrameEqual

from tests.conftest import LTG, ROOT
from tests.ingest.test_build_wikipedia import load
from tests.jobs.jobrun import chunk_manifests, job_env, run_job
from tests.play.test_run_record import args, kill_after_first_chunk, play_games_plays, runs_named, setup  # noqa: F401
from tests.standalone import StandaloneCluster
from wikigame_spark.devtools.games import write_games

pytestmark = pytest.mark.cluster

EXECUTOR = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with StandaloneCluster(str(tmp_path_factory.mktemp("cluster"))) as c:
        yield c


def submit_args(cluster: StandaloneCluster) -> str:
    """The cluster for jobs started as ``python jobs/X.py`` (PySpark reads PYSPARK_SUBMIT_ARGS)."""
    conf = "--conf spark.executor.memory=1g --conf spark.cores.max=2 --conf spark.ui.enabled=false"
    return f"--master {cluster.url} {conf} pyspark-shell"


def _children(pid: int) -> list[int]:
    """Children of every thread of ``pid`` (a JVM starts processes from many threads)."""
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return found


def _descendants(pid: int) -> list[int]:
    found, todo = [], _children(pid)
    while todo:
        p = todo.pop()
        found.append(p)
        todo += _children(p)
    return found


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _cpu_ticks(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except OSError:
        return 0


def executors(cluster: StandaloneCluster) -> list[int]:
    """PIDs of the executor JVMs the cluster's workers have started."""
    return [p for w in cluster.procs[1:] for p in _descendants(w.pid) if EXECUTOR in _cmdline(p)]


def kill_busy_executor(cluster: StandaloneCluster, job: subprocess.Popen, timeout: float = 300) -> int:
    """SIGKILL the executor JVM one of whose Python workers is running (burning CPU): a task is in
    flight on it. Returns its PID; fails when the job ends first."""
    deadline = time.time() + timeout
    while time.time() < deadline and job.poll() is None:
        before = {e: {p: _cpu_ticks(p) for p in _descendants(e) if "python" in _cmdline(p)} for e in executors(cluster)}
        time.sleep(0.3)
        for e, workers in before.items():
            if any(_cpu_ticks(p) - t >= 5 for p, t in workers.items()):  # ≥ 50 ms of CPU in 300 ms
                os.kill(e, signal.SIGKILL)
                return e
    _, err = job.communicate()
    raise AssertionError(f"no busy executor before the job ended (rc {job.returncode}): {err[-3000:]}")


def app_executor_dirs(cluster: StandaloneCluster) -> dict[str, list[str]]:
    """Executor folders per application in the workers' work folder (a replacement adds one)."""
    work = os.path.join(cluster.workdir, "work")
    return {app: sorted(os.listdir(os.path.join(work, app))) for app in os.listdir(work)} if os.path.isdir(work) else {}


def start_job(job: str, args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "jobs", f"{job}.py"), *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish_after_kill(cluster: StandaloneCluster, job: subprocess.Popen) -> tuple[int, str]:
    apps_before = app_executor_dirs(cluster)
    killed = kill_busy_executor(cluster, job)
    out, err = job.communicate(timeout=900)
    assert job.returncode == 0, err[-3000:]
    (app,) = set(app_executor_dirs(cluster)) - set(apps_before)
    assert len(app_executor_dirs(cluster)[app]) >= 3, "no replacement executor was started"
    assert killed not in executors(cluster)
    return killed, out


def test_executor_killed_mid_build(cluster, spark, ltg_graph, tmp_path):
    out = str(tmp_path / "graph")
    env = job_env(f"sqlite:///{tmp_path}/m.db", PYSPARK_SUBMIT_ARGS=submit_args(cluster))
    job = start_job("build_wikipedia", ["--input", LTG, "--output", out], env)
    _, stdout = finish_after_kill(cluster, job)
    assert "build_wikipedia: wrote" in stdout
    a, b = load(spark, ltg_graph), load(spark, out)
    for x, y in zip(a[:3], b[:3]):
        assertDataFrameEqual(x, y)
    assert a[3]["counts"] == b[3]["counts"]


def _mlflow_plays(uri: str, run_id: str, tmp_path) -> pd.DataFrame:
    local = MlflowClient(uri).download_artifacts(run_id, "plays.parquet", str(tmp_path))
    return pd.read_parquet(local)


def test_executor_killed_mid_play(cluster, ltg_graph, tmp_path):
    """The paper's embedding agent (re-encoding every step: tasks long enough to be caught busy)."""
    games = write_games(ltg_graph, 6, seed=5, path=str(tmp_path / "games"))
    uri = f"sqlite:///{tmp_path}/m.db"
    common = ["--graph", ltg_graph, "--games-dir", games, "--agent", "embedding", "--reencode", "--chunk-games", "3"]
    common += ["--experiment", "faults", "--partitions", "2"]
    undisturbed = run_job(
        "play_games", *common, "--run-name", "calm", "--output", str(tmp_path / "calm"), env=job_env(uri)
    )
    assert undisturbed.rc == 0, undisturbed.err[-3000:]

    env = job_env(uri, PYSPARK_SUBMIT_ARGS=submit_args(cluster))
    job = start_job("play_games", [*common, "--run-name", "killed", "--output", str(tmp_path / "killed")], env)
    finish_after_kill(cluster, job)
    calm, killed = (play_games_plays(str(tmp_path / n)).sort_values("game_id") for n in ("calm", "killed"))
    columns = ["game_id", "outcome", "steps", "source", "target"]
    assert killed[columns].reset_index(drop=True).equals(calm[columns].reset_index(drop=True))
    assert [list(r) for r in killed.route] == [list(r) for r in calm.route]
    (run,) = runs_named(uri, "faults", "killed")
    assert run.info.status == "FINISHED" and run.data.metrics["games"] == 6
    recorded = _mlflow_plays(uri, run.info.run_id, tmp_path)
    assert sorted(recorded.game_id) == list(range(6))  # each game once


def test_driver_killed_mid_chunk_resumes_on_the_cluster(cluster, setup):  # noqa: F811
    s = setup
    s["env"] = {**s["env"], "PYSPARK_SUBMIT_ARGS": submit_args(cluster)}
    games = str(len(pd.read_parquet(f"{s['games']}/games")))
    base = ("--agent", "random", "--games", games, "--run-name", "r", "--experiment", "e1")
    kill_after_first_chunk(s, *base)
    before = chunk_manifests(s["out"])
    assert 1 <= len(before) < int(games) and not os.path.exists(f"{s['out']}/manifest.json")
    done = run_job("play_games", *args(s, *base), env=s["env"], process=True)
    assert done.rc == 0, done.err[-3000:]
    after = chunk_manifests(s["out"])
    assert len(after) == int(games) and {k: after[k] for k in before} == before  # nothing replayed
    plays = play_games_plays(s["out"])
    assert sorted(plays.game_id) == list(range(int(games)))  # nothing lost, nothing twice
    (resumed,) = runs_named(s["uri"], "e1", "r")
    assert resumed.info.status == "FINISHED" and resumed.data.metrics["games"] == int(games)
    with open(f"{s['out']}/manifest.json") as f:
        assert json.load(f)["mlflow_run_id"] == resumed.info.run_id
