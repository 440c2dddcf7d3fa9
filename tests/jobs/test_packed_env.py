"""The packed environment as a cluster runs it (docs/cluster.md#a-packed-environment).

``make pack`` builds the PEX file (no torch); a standalone cluster's worker starts as on a node that
has none of the project's Python (no venv on its PATH, nor the interpreter the venv was made from, no
Python or PySpark settings of the driver's), and its executors run the PEX on the node's own Python,
Debian's python3.11 at another path than the build's: the real Latgalian chain build_wikipedia →
graph_stats → sample_games → play_games (embedding on OpenVINO, TF-IDF) → report, submitted by
``spark-submit --files`` from a folder outside the repository, equals the same chain in local mode,
every route included. Without the PEX the same submission is refused with one ``error:`` line naming
the missing module and the fix.

``make pack`` keeps the file while the wheel is unchanged; pex unpacks it once per node (its
PEX_ROOT), not once per application.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile

import pyarrow.parquet as pq
import pytest

from tests.conftest import JVM_ENV, LTG, ROOT
from tests.jobs.end_to_end import _plays
from tests.jobs.jobrun import job_env, run_job
from tests.standalone import StandaloneCluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(2700)]

PEX = os.path.join(ROOT, "dist", "wikigame-env.pex")
ENVIRONMENT = ["--files", PEX, "--conf", "spark.pyspark.python=./wikigame-env.pex"]
PLAYERS = ("embedding", "tfidf")
# the nodes' own Python: Debian's, not the interpreter the venv was made from
NODE_PYTHON = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"


def chain(base: str) -> list[tuple[str, list[str]]]:
    """The jobs and their arguments, writing under ``base``."""
    graph = os.path.join(base, "ltgwiki")
    plays = [
        ("play_games", ["--graph", graph, "--agent", agent, "--run-name", agent, "--output", f"{base}/plays-{agent}"])
        for agent in PLAYERS
    ]
    return [
        ("build_wikipedia", ["--input", LTG, "--output", graph]),
        ("graph_stats", ["--graph", graph, "--pairs", "100"]),
        ("sample_games", ["--graph", graph, "--games", "20", "--seed", "0"]),
        *plays,
        ("report", ["--output", os.path.join(base, "report")]),
    ]


def submitter_env(store: str) -> dict:
    """The submitting user's shell: the venv activated, none of the suite's Python or Spark settings."""
    ours = ("SPARK_", "PYSPARK_", "PYTHON", "VIRTUAL_ENV", "WIKIGAME_", "MLFLOW_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    env.update(
        PATH=os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")]),
        SPARK_LOCAL_IP="127.0.0.1",
        MLFLOW_TRACKING_URI=f"sqlite:///{store}/mlflow.db",
        MLFLOW_EXPERIMENT_NAME="packed",
        **JVM_ENV,
    )
    return env


def submit(cluster: StandaloneCluster, job: str, args: list[str], env: dict, cwd: str, *extra: str):
    argv = ["spark-submit", "--master", cluster.url, "--conf", f"spark.pyspark.driver.python={sys.executable}"]
    argv += ["--conf", "spark.sql.shuffle.partitions=4", "--conf", "spark.executor.memory=2g", *extra]
    argv += [os.path.join(ROOT, "jobs", f"{job}.py"), *args]
    try:
        return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=1500)
    finally:
        cluster.drop_finished_applications()


def table(path: str, key: str | list[str]) -> list[dict]:
    return pq.read_table(path).sort_by(key if isinstance(key, list) else [(key, "ascending")]).to_pylist()


def outputs(base: str) -> dict:
    """What a researcher compares: the graph's tables, its statistics, the games, every game's
    route and outcome, and the report's success table."""
    graph = os.path.join(base, "ltgwiki")
    with open(os.path.join(graph, "stats", "stats.json"), encoding="utf-8") as f:
        stats = json.load(f)
    with open(os.path.join(base, "report", "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    kept = ("game_id", "agent", "model", "outcome", "steps", "optimal_steps", "route", "source", "target")
    plays = {
        agent: sorted(({k: r[k] for k in kept} for r in _plays(f"{base}/plays-{agent}")), key=lambda r: r["game_id"])
        for agent in PLAYERS
    }
    return {
        "nodes": table(os.path.join(graph, "nodes"), "id"),
        "edges": table(os.path.join(graph, "edges"), [("src", "ascending"), ("dst", "ascending")]),
        "stats": {k: stats[k] for k in ("kind", "table1", "components", "reachability")},
        "games": table(os.path.join(graph, "games", "games"), "game_id"),
        "plays": plays,
        "success": sorted((r["label"], r["graph"], r["games"], r["successes"]) for r in report["success"]),
    }


def test_jobs_run_with_the_packed_environment_on_executors_that_have_nothing(tmp_path):
    pack = ["make", "--no-print-directory", "-C", ROOT, "-o", ".venv/.installed", "pack"]
    made = subprocess.run(pack, capture_output=True, text=True)
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    assert made.stdout.rstrip().splitlines()[-1].startswith("dist/wikigame-env.pex: "), made.stdout[-1000:]
    with zipfile.ZipFile(PEX) as pex:
        packed = {n.split("/")[1].split("-")[0].lower() for n in pex.namelist() if n.startswith(".deps/")}
    assert {"wikigame_spark", "openvino", "tokenizers"} <= packed and not packed & {"torch", "pyspark"}, packed
    assert os.path.getsize(PEX) < 400e6
    bare = NODE_PYTHON
    assert os.path.realpath(bare) != os.path.realpath(sys.executable)
    lacking = subprocess.run([bare, "-c", "import pandas"], capture_output=True, text=True)
    assert lacking.returncode == 1 and "No module named 'pandas'" in lacking.stderr

    local = str(tmp_path / "local")
    env = job_env(f"sqlite:///{tmp_path}/local.db", MLFLOW_EXPERIMENT_NAME="packed")
    for job, args in chain(local):
        done = run_job(job, *args, env=env)
        assert done.rc == 0, f"{job}: {done.err[-3000:]}"

    user = tmp_path / "user"  # the submitting user's folder, outside the repository
    user.mkdir()
    env = submitter_env(str(user))
    (tmp_path / "cluster").mkdir()
    with StandaloneCluster(str(tmp_path / "cluster"), workers=1, cores=2, memory="3g", bare=True) as cluster:
        # a submission without the archive, its executors on the node's own Python
        build = chain(str(user / "bare"))[0]
        refused = submit(cluster, *build, env, str(user), "--conf", f"spark.pyspark.python={bare}")
        last = refused.stdout.rstrip().splitlines()[-1]
        assert refused.returncode == 2, refused.stdout[-3000:]
        assert last.startswith(f"error: the executors' Python ({bare}") and "has no module" in last, last
        assert "--files wikigame-env.pex" in last and "make pack" in last, last
        assert "Traceback" not in refused.stdout + refused.stderr
        # the same with the archive's Python named but the archive not shipped
        unshipped = submit(cluster, *build, env, str(user), *ENVIRONMENT[2:])
        assert unshipped.returncode == 2, unshipped.stdout[-3000:]
        assert (
            unshipped.stdout.rstrip()
            .splitlines()[-1]
            .startswith("error: the executors cannot start their Python ./wikigame-env.pex (No such file or directory)")
        )

        shipped = str(user / "cluster")
        for job, args in chain(shipped):
            started = time.perf_counter()
            done = submit(cluster, job, args, env, str(user), *ENVIRONMENT)
            print(f"{job} on the cluster: {time.perf_counter() - started:.0f} s")
            assert done.returncode == 0, f"{job}: exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
            assert done.stdout.rstrip().splitlines()[-1].startswith(f"{job}: wrote "), done.stdout[-2000:]
            assert "Traceback" not in done.stdout + done.stderr, f"{job}: {done.stdout[-3000:]}"
            if job == "play_games":  # the node's own Python runs the PEX
                assert f"the executors' Python: {NODE_PYTHON} " in done.stderr + done.stdout, done.stderr[-3000:]

    expected, found = outputs(local), outputs(shipped)
    for key, value in expected.items():
        assert found[key] == value, key
    assert {label.split(":")[0] for label, *_ in found["success"]} == set(PLAYERS)
    assert all(len(plays) == 20 for plays in found["plays"].values()) and len(found["nodes"]) == 903
