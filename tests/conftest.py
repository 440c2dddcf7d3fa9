"""Shared fixtures: one local SparkSession for the whole run, paths to the real data; the llm_build
tests last while `make test` builds llama-server (markers: pytest.ini, docs/contributing.md)."""

from __future__ import annotations

import os
import sys
import time

import pytest

from wikigame_spark.devtools import DATA

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WIKI = os.path.join(DATA, "wikipedia")
LTG = os.path.join(WIKI, "ltgwiki-20170901-pages-articles.xml.bz2")
ENWIKI = os.path.join(WIKI, "enwiki-pages-articles1-head.xml.bz2")
BNWIKI = os.path.join(WIKI, "bnwiki-20230501-head-truncated.xml.xz")

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
# Keep Spark on loopback: tests only talk to 127.0.0.1.
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
# Models come from installed packages only: tests never reach a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Set by `make test`, which builds llama-server (minutes of compiling) alongside the suite: the file
# it writes the build's exit status to. The llm_build tests then run last and wait for it.
LLAMA_BUILD_STATUS = os.environ.get("WIKIGAME_LLAMA_BUILD_STATUS")
LLAMA_BUILD_WAIT = 3600  # seconds: a cold build on a busy 2-core machine, with margin


def pytest_collection_modifyitems(config, items):
    if LLAMA_BUILD_STATUS:
        items.sort(key=lambda item: item.get_closest_marker("llm_build") is not None)  # stable


def pytest_runtest_setup(item):
    if LLAMA_BUILD_STATUS and item.get_closest_marker("llm_build"):
        wait_for_llama_build(LLAMA_BUILD_STATUS)


def wait_for_llama_build(status_path: str) -> None:
    deadline = time.monotonic() + LLAMA_BUILD_WAIT
    while not os.path.exists(status_path):
        if time.monotonic() > deadline:
            pytest.fail(f"llama-server build not finished after {LLAMA_BUILD_WAIT} s (no {status_path})")
        time.sleep(2)
    with open(status_path, encoding="utf-8") as f:
        status = f.read().strip()
    if status != "0":
        log = os.path.join(os.path.dirname(status_path), "llama-server-make.log")
        pytest.fail(f"make llama-server failed (exit status {status}); see {log}")


SESSION_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "4g",
}


def suite_session():
    """The one local SparkSession of the run (tests and the jobs they run in this process)."""
    import tempfile

    from wikigame_spark.session import build_session

    session = build_session("wikigame-tests", master="local[2]", conf=SESSION_CONF)
    if session.sparkContext.getCheckpointDir() is None:
        session.sparkContext.setCheckpointDir(tempfile.mkdtemp(prefix="wikigame-checkpoints-"))
    return session


@pytest.fixture(scope="session")
def spark():
    session = suite_session()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def ltg_graph(tmp_path_factory, spark):
    """The real Latgalian Wikipedia built once by the job, shared by the tests that read it."""
    from jobs import build_wikipedia

    out = str(tmp_path_factory.mktemp("graphs") / "ltgwiki")
    assert build_wikipedia.main(["--input", LTG, "--output", out]) == 0
    return out
