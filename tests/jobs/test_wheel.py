"""The wheel as a cluster installs it: ``make wheel``, then a fresh venv with the wheel and its
dependencies from the package index (plain ``pyspark``, nothing editable), then the Latgalian chain
build_wikipedia → graph_stats → sample_games → play_games (random) by that venv's ``spark-submit``
from a folder outside the repository, GraphFrames given by ``--jars`` as a user would; then each
job's console script (``wikigame-report`` runs the report).

Needs the package index (or pip's cache) for the venv's dependencies: about 2 GB of wheels, most of
it PySpark and MLflow.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import version

import pytest

from tests.conftest import JVM_ENV, LTG, ROOT
from wikigame_spark.notebook import VOLUME

pytestmark = pytest.mark.slow

JOBS = ("build_wikipedia", "graph_stats", "sample_games", "play_games")
GRAPHFRAMES_JAR = os.path.join(ROOT, "jars", "graphframes-spark4_2.13-0.11.0.jar")


def site_files(venv: str) -> set[str]:
    """Every file the venv's site-packages holds, bytecode aside (an import may compile it)."""
    (site,) = [os.path.join(venv, "lib", d, "site-packages") for d in os.listdir(os.path.join(venv, "lib"))]
    found = set()
    for root, dirs, files in os.walk(site):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        found.update(os.path.relpath(os.path.join(root, f), site) for f in files if not f.endswith(".pyc"))
    return found


def user_env(venv: str, store: str) -> dict:
    """The venv activated (its bin/ first on PATH) and none of the project's own Spark, Python or
    MLflow settings, as in a user's shell; MLflow in a SQLite store of the test's."""
    ours = ("SPARK_", "PYSPARK_", "PYTHON", "VIRTUAL_ENV", "WIKIGAME_", "MLFLOW_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    env.update(
        PATH=f"{os.path.join(venv, 'bin')}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=venv,
        SPARK_LOCAL_IP="127.0.0.1",  # the tests talk to loopback only
        **JVM_ENV,  # the tests' JIT setting (tests/conftest.py)
        MLFLOW_TRACKING_URI=f"sqlite:///{os.path.join(store, 'mlflow.db')}",
    )
    return env


def test_wheel_runs_the_wikipedia_chain_by_spark_submit_from_a_fresh_venv(tmp_path):
    expected = version("wikigame-spark")  # setup.py's, through the checkout's editable install
    subprocess.run(["make", "-C", ROOT, "-o", ".venv/.installed", "wheel"], check=True, capture_output=True)
    wheel = os.path.join(ROOT, "dist", f"wikigame_spark-{expected}-py3-none-any.whl")
    on_volume = f"{VOLUME}/wikigame_spark-{expected}-py3-none-any.whl"  # what the notebooks' %pip reads
    for name, line in [("", on_volume), ("-embedding", f"{on_volume}[embedding]")]:
        with open(os.path.join(ROOT, "dist", f"requirements{name}.txt")) as f:
            assert f.read() == line + "\n"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert {n.split("/")[0] for n in names} == {"wikigame_spark", f"wikigame_spark-{expected}.dist-info"}
    assert "wikigame_spark/human/templates/game.html" in names and "wikigame_spark/log4j2.properties" in names
    assert "wikigame_spark/devtools/licences/qwen2.5-coder-1.5b-instruct.LICENSE" in names

    venv = str(tmp_path / "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    py = os.path.join(venv, "bin", "python")
    # --no-compile: no bytecode for the 2 GB ahead of time (a minute of CPU); imports compile what they use
    pip = [py, "-m", "pip", "install", "-q", "--no-compile", wheel]
    install = subprocess.run(pip, capture_output=True, text=True, timeout=1800)
    assert install.returncode == 0, install.stderr[-3000:]
    check = [py, "-c", "import pyspark, wikigame_spark; print(pyspark.__version__, wikigame_spark.__version__)"]
    pyspark_version, installed = subprocess.run(check, capture_output=True, text=True, check=True).stdout.split()
    assert installed == expected and (4, 0) <= tuple(map(int, pyspark_version.split(".")[:2])) < (4, 2)
    before = site_files(venv)

    # the user's folder: the job files beside the data they make, the repository elsewhere
    home = tmp_path / "user"
    (home / "jobs").mkdir(parents=True)
    for job in JOBS:
        shutil.copy(os.path.join(ROOT, "jobs", f"{job}.py"), home / "jobs")
    store = tmp_path / "mlflow"
    store.mkdir()
    env = user_env(venv, str(store))
    # without MLFLOW_TRACKING_URI the store is the working directory's; no jars are looked for
    # beside the package
    probe = "from wikigame_spark import session, tracking; print(tracking.tracking_uri(), session.project_jars())"
    defaults = {k: v for k, v in env.items() if k != "MLFLOW_TRACKING_URI"}
    shown = subprocess.run([py, "-c", probe], cwd=home, env=defaults, capture_output=True, text=True, check=True)
    assert shown.stdout.split() == [f"sqlite:///{home / 'mlflow.db'}", "[]"]
    chain = {
        "build_wikipedia": ["--input", LTG, "--output", "ltgwiki"],
        "graph_stats": ["--graph", "ltgwiki", "--pairs", "100"],
        "sample_games": ["--graph", "ltgwiki", "--games", "20", "--seed", "0", "--output", "games"],
        "play_games": ["--graph", "ltgwiki", "--games-dir", "games", "--agent", "random", "--output", "plays"],
    }
    for job, args in chain.items():
        # 8 shuffle partitions, not Spark's 200: the graph has 903 nodes, and the test is of the
        # wheel, not of Spark's defaults
        argv = ["spark-submit", "--jars", GRAPHFRAMES_JAR, "--conf", "spark.sql.shuffle.partitions=8"]
        argv += [f"jobs/{job}.py", *args]
        done = subprocess.run(argv, cwd=home, env=env, capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, f"{job}: exit {done.returncode}\n{done.stderr[-4000:]}"
        last = done.stdout.rstrip().splitlines()[-1]
        assert last.startswith(f"{job}: wrote "), f"{job}: the last line is not the summary: {last!r}"
        # Spark has only its built-in log profile here: it logs its own start, up to its block
        # manager, before the job can act; then the job applies the library's profile, and no line
        # of Spark's format (nor a note the profile keeps off) follows
        lines = done.stderr.splitlines()
        started = max(i for i, line in enumerate(lines) if "Initialized BlockManager" in line)
        later = [line for line in lines[started + 1 :] if re.match(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d ", line)]
        assert not later and "ShippableVertexPartitionOps" not in done.stderr, f"{job}: {later[:10]}"

    with open(home / "ltgwiki" / "manifest.json", encoding="utf-8") as f:
        built = json.load(f)
    assert built["counts"]["nodes"] == 903
    assert built["code_version"] == expected  # no checkout, no commit: the package's own version
    assert (store / "mlflow.db").is_file() and (home / "plays").is_dir()

    # each job as the wheel's console script: the same flags as jobs/X.py; the report run by its own
    scripts = sorted(n for n in os.listdir(os.path.join(venv, "bin")) if n.startswith("wikigame-"))
    jobs = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "jobs")) if f.endswith(".py") and f[0] != "_")
    assert scripts == [f"wikigame-{job.replace('_', '-')}" for job in jobs]
    for job in jobs:
        shown = subprocess.run([f"wikigame-{job.replace('_', '-')}", "--help"], env=env, capture_output=True, text=True)
        direct = subprocess.run(
            [py, os.path.join(ROOT, "jobs", f"{job}.py"), "--help"], env=env, capture_output=True, text=True
        )
        assert shown.returncode == 0 and shown.stdout == direct.stdout, job
    done = subprocess.run(["wikigame-report", "--output", "report"], cwd=home, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.rstrip().splitlines()[-1].startswith("report: wrote "), done.stdout[-2000:]
    assert (home / "report" / "report.html").is_file()
    assert site_files(venv) == before, "the jobs wrote into the venv's site-packages"
    assert not [p for p in before if os.path.basename(p) == "mlflow.db"]
