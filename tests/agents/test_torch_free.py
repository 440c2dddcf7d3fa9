"""Embedding on executors whose Python cannot import torch: the driver exports the model, the
executors embed from the export (ONNX Runtime, OpenVINO, numpy), and every route is the one
sentence-transformers' torch plays.

The executors run the suite's Python behind a ``sitecustomize`` that refuses torch,
sentence-transformers and transformers (their imports fail as where they are not installed) and
leaves a mark for each process it starts in (:mod:`wikigame_spark.devtools.torchless`); the driver
keeps torch, which makes the exports.
tests/jobs/test_packed_env.py plays the same on a cluster from an archive without torch at all.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.jobs.end_to_end import _plays
from tests.jobs.jobrun import job_env, run_job
from wikigame_spark.agents import sentence_models as sm
from wikigame_spark.devtools.games import write_games
from wikigame_spark.devtools.torchless import MARKS, torchless_python

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def torchless(tmp_path_factory) -> tuple[str, str]:
    """(a Python that cannot import torch, the folder where each of its processes leaves a mark)."""
    root = tmp_path_factory.mktemp("torchless")
    (root / "marks").mkdir()
    return torchless_python(str(root)), str(root / "marks")


def test_the_torchless_python_cannot_import_torch(torchless):
    python, marks = torchless
    env = dict(os.environ, **{MARKS: marks})
    done = subprocess.run([python, "-c", "import torch"], env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "ModuleNotFoundError: No module named 'torch'" in done.stderr
    assert subprocess.run([python, "-c", "import openvino, tokenizers, numpy"], env=env).returncode == 0


def routes(out: str) -> dict[int, tuple]:
    return {r["game_id"]: (r["outcome"], tuple(r["route"])) for r in _plays(out)}


def test_executors_without_torch_play_the_routes_torch_plays(ltg_graph, tmp_path, torchless):
    """MiniLM on OpenVINO; the static models play on executors without torch in test_packaged_models."""
    model = sm.DEFAULT_MODEL
    python, marks = torchless
    games = write_games(ltg_graph, 20, seed=11, path=str(tmp_path / "games"))
    common = ["--graph", ltg_graph, "--games-dir", games, "--agent", "embedding", "--model", model]
    reference = str(tmp_path / "torch")
    env = job_env(f"sqlite:///{tmp_path}/mlflow.db")
    done = run_job("play_games", *common, "--backend", "torch", "--output", reference, env=env)
    assert done.rc == 0, done.err[-3000:]

    before = set(os.listdir(marks))
    lean = str(tmp_path / "lean")
    env = dict(env, PYSPARK_PYTHON=python, **{MARKS: marks})
    argv = [*common, "--output", lean, "--cache-dir", str(tmp_path / "cache")]  # embedded here, not read
    done = run_job("play_games", *argv, env=env, process=True)
    assert done.rc == 0, done.err[-3000:]
    assert set(os.listdir(marks)) - before, "no executor ran the Python without torch"
    assert routes(lean) == routes(reference) and len(routes(lean)) == 20
    made = os.listdir(tmp_path / "cache" / "embeddings")
    assert made == [f"{sm.model_slug(model)}--openvino"]


def test_a_driver_without_torch_needs_the_export_made_elsewhere(ltg_graph, tmp_path, torchless):
    """Without sentence-transformers the driver cannot export: one error line, before any Spark work,
    until the model cache holds the export (made where torch is), which it then plays from."""
    python, _ = torchless
    games = write_games(ltg_graph, 4, seed=2, path=str(tmp_path / "games"))
    cache = str(tmp_path / "models")
    argv = [python, os.path.join(ROOT, "jobs", "play_games.py"), "--graph", ltg_graph, "--games-dir", games]
    argv += ["--agent", "embedding", "--cache-dir", str(tmp_path / "cache"), "--experiment", "t"]
    env = dict(job_env(f"sqlite:///{tmp_path}/mlflow.db"), WIKIGAME_MODEL_CACHE=cache, PYSPARK_PYTHON=python)
    refused = subprocess.run([*argv, "--output", str(tmp_path / "a")], env=env, capture_output=True, text=True)
    last = refused.stderr.rstrip().splitlines()[-1]
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr[-3000:]
    assert last.startswith(f"error: {sm.DEFAULT_MODEL}: no openvino export of it in {cache}/exports"), last
    assert "pip install 'wikigame-spark[embedding-torch]'" in last and "WIKIGAME_MODEL_CACHE" in last
    made = subprocess.run(  # the export, made where torch is
        [
            sys.executable,
            "-c",
            f"from wikigame_spark.agents.encoders import *; exported({sm.DEFAULT_MODEL!r}, DEFAULT)",
        ],
        env=env,
        check=True,
    )
    assert made.returncode == 0
    played = subprocess.run([*argv, "--output", str(tmp_path / "b")], env=env, capture_output=True, text=True)
    assert played.returncode == 0, played.stderr[-3000:]
    assert len(routes(str(tmp_path / "b"))) == 4
