"""The embedding runtimes (torch, ONNX Runtime, OpenVINO; float32 and int8) against torch on real
Latgalian and Wikispeedia texts, the export made once per machine, and the play job choosing one."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
from mlflow.tracking import MlflowClient

from jobs import play_games
from tests.conftest import ROOT
from wikigame_spark import manifests, storage
from wikigame_spark.agents.encoders import BACKENDS, REFERENCE, Runtime, exported, load_encoder, local_encoder
from wikigame_spark.agents.inference import ExportedEncoder
from wikigame_spark.agents.sentence_models import load_model
from wikigame_spark.devtools import DATA
from wikigame_spark.devtools.games import write_games

pytestmark = pytest.mark.slow  # exports and loads models
MODEL = "all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A model cache of the module's own: the exports are made here, not in the user's."""
    root = str(tmp_path_factory.mktemp("models"))
    old = os.environ.get("WIKIGAME_MODEL_CACHE")
    os.environ["WIKIGAME_MODEL_CACHE"] = root
    yield root
    if old is None:
        del os.environ["WIKIGAME_MODEL_CACHE"]
    else:
        os.environ["WIKIGAME_MODEL_CACHE"] = old


@pytest.fixture(scope="module")
def texts(ltg_graph):
    summaries = pq.read_table(f"{ltg_graph}/nodes", columns=["summary"]).column("summary").to_pylist()
    folder = os.path.join(DATA, "wikispeedia", "plaintext_articles")
    articles = sorted(os.listdir(folder))[::400]  # English articles cut at four lengths
    english = [
        open(os.path.join(folder, a), encoding="utf-8").read()[:n] for a, n in zip(articles, [3000, 700, 60, 5] * 4)
    ]
    # real ones of every length, an empty one, whitespace around one
    return [s for s in summaries if s][:30] + english + ["", "Daugava", "  Rēzekne \t"]


@pytest.fixture(scope="module")
def reference(models, texts):
    return load_encoder(MODEL, REFERENCE).encode(texts, None, 16)


@pytest.mark.parametrize("backend", ["onnx", "openvino"])
def test_a_float32_export_embeds_as_torch_does(models, texts, reference, backend):
    vectors = local_encoder(MODEL, Runtime(backend)).encode(texts, None, 16)
    assert vectors.dtype == np.float32 and vectors.shape == reference.shape
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert np.abs(vectors - reference).max() < 1e-4  # float32 arithmetic in another order, no more
    # one text alone: a batch without padding, a shape the export was not traced with
    alone = local_encoder(MODEL, Runtime(backend)).encode(texts[:1], None, 16)
    assert np.abs(alone[0] - reference[0]).max() < 1e-4


@pytest.mark.parametrize("backend", BACKENDS)
def test_int8_weights_stay_close_to_torch(models, texts, reference, backend):
    vectors = local_encoder(MODEL, Runtime(backend, int8=True)).encode(texts, None, 16)
    cosine = (vectors * reference).sum(axis=1)
    print(backend, "int8 cosine to torch: min", cosine.min(), "median", np.median(cosine))
    assert cosine.min() > 0.7 and np.median(cosine) > 0.8  # near, not equal: docs/agents.md has the routes
    assert np.abs(vectors - reference).max() > 1e-4  # quantised: not the float32 vectors


def test_the_export_tokenizes_as_sentence_transformers_does(models, texts):
    """The ids the torch-free runtimes feed the model are sentence-transformers' own, text for text."""
    st = load_model(MODEL)
    export = ExportedEncoder(exported(MODEL, Runtime("onnx")), 1)
    for start in range(0, len(texts), 8):
        batch = texts[start : start + 8]
        expected = st.preprocess(batch)
        got = export._features(batch)
        assert sorted(got) == sorted(k for k in expected if k != "modality")
        for name, array in got.items():
            assert (array == expected[name].numpy()).all(), name


def test_an_export_is_made_once_per_machine_by_one_process(models):
    onnx = exported(MODEL, Runtime("onnx"))
    made = os.path.getmtime(onnx)
    assert exported(MODEL, Runtime("onnx")) == onnx and os.path.getmtime(onnx) == made
    assert sorted(os.listdir(onnx)) == ["embedding.json", "model.onnx", "tokenizer.json"]
    # two processes asking at once for an export not yet made: one makes it, both get it whole
    program = (
        "import sys; from wikigame_spark.agents.encoders import Runtime, exported; "
        "print(exported('all-MiniLM-L6-v2', Runtime('openvino', int8=True)))"
    )
    env = dict(os.environ, WIKIGAME_MODEL_CACHE=os.path.join(models, "race"), PYTHONPATH=ROOT)
    argv = [sys.executable, "-c", program]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True) for _ in "ab"]
    paths = [p.communicate(timeout=600)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs) and paths[0] == paths[1] and os.path.isdir(paths[0])
    assert sorted(os.listdir(paths[0])) == ["embedding.json", "model.bin", "model.xml", "tokenizer.json"]
    root = os.path.dirname(paths[0])
    folders = sorted(f for f in os.listdir(root) if not f.endswith(".lock"))
    assert [f.removeprefix(f"{MODEL}-")[13:] for f in folders] == ["onnx", "openvino-int8"], folders  # after the digest


def test_the_play_job_embeds_with_the_chosen_runtime(spark, models, ltg_graph, tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    games = write_games(ltg_graph, 12, path=str(tmp_path / "games"))
    out = str(tmp_path / "plays")
    argv = ["--graph", ltg_graph, "--games-dir", games, "--agent", "embedding", "--backend", "openvino"]
    assert play_games.main([*argv, "--int8", "--output", out, "--experiment", "t"]) == 0
    cache = os.path.join(ltg_graph, "cache", "embeddings", f"{MODEL}--openvino-int8", "summary-noprompt")
    manifest = manifests.read_manifest(storage.folder(cache))
    assert (manifest["backend"], manifest["int8"]) == ("openvino", True)
    run = MlflowClient(uri).get_run(manifests.read_manifest(storage.folder(out))["mlflow_run_id"])
    assert run.data.params["backend"] == "openvino" and run.data.params["int8"] == "True"
    assert run.info.run_name.startswith(f"embedding-{MODEL}-openvino-int8-")
