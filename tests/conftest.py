"""Shared fixtures: one local SparkSession for the whole run, paths to the real data (markers:
pytest.ini, docs/contributing.md)."""

from __future__ import annotations

import os
import sys

import pytest

from wikigame_spark.devtools import DATA

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WIKI = os.path.join(DATA, "wikipedia")
LTG = os.path.join(WIKI, "ltgwiki-20170901-pages-articles.xml.bz2")
ENWIKI = os.path.join(WIKI, "enwiki-pages-articles1-head.xml.bz2")
BNWIKI = os.path.join(WIKI, "bnwiki-20230501-head-truncated.xml.xz")
WIKISPEEDIA = os.path.join(DATA, "wikispeedia")

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
# Keep Spark on loopback: tests only talk to 127.0.0.1.
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
# Models come from installed packages only: tests never reach a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Every JVM the tests start lives seconds to minutes on small data: C1 alone compiles what they run,
# and C2's compiler threads would otherwise take about half the CPU of a Spark test (the build job's
# tests: 115 CPU-seconds with C2, 61 without). Through Spark's own variables, which print nothing: the
# drivers (PySpark's gateway too), their executors (a spark.* system property is Spark conf), the
# standalone master and workers.
_C1_ONLY = "-XX:TieredStopAtLevel=1"
JVM_ENV = {
    "SPARK_SUBMIT_OPTS": f"{_C1_ONLY} -Dspark.executor.defaultJavaOptions={_C1_ONLY}",
    "SPARK_DAEMON_JAVA_OPTS": _C1_ONLY,
}
for _name, _value in JVM_ENV.items():
    os.environ.setdefault(_name, _value)

# The tests' llama.cpp servers decode on one thread: the suite keeps both cores busy, and ggml's
# threads wait for each other by spinning, so a second one costs more CPU than it saves (the LLM and
# reasoning test beside one busy core: 111 CPU-s in 124 s with two threads, 65 in 86 with one).
LLAMA_THREADS = 1

SESSION_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "4g",
}


def suite_session():
    """The one local SparkSession of the run (tests and the jobs they run in this process). No
    checkpoint directory: the library checkpoints locally, as the jobs do under spark-submit."""
    from wikigame_spark.session import build_session

    return build_session("wikigame-tests", master="local[2]", conf=SESSION_CONF)


# How long a test's needs make it, for the order the workers take the test files in: clusters,
# then browsers, then the other slow tests (markers: pytest.ini).
_WEIGHT = {"cluster": 3, "browser": 2, "slow": 1}


def _weight(item) -> int:
    return max((w for name, w in _WEIGHT.items() if item.get_closest_marker(name)), default=0)


def pytest_collection_modifyitems(config, items):
    """The heaviest test files first (``--dist loadfile``, make test): a worker takes the next
    file when it is free, and a long one taken last would leave the other worker idle at the end."""
    heaviest: dict[str, int] = {}
    for item in items:
        heaviest[item.module.__name__] = max(heaviest.get(item.module.__name__, 0), _weight(item))
    items.sort(key=lambda item: -heaviest[item.module.__name__])


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


@pytest.fixture(scope="session")
def wikispeedia_graph(tmp_path_factory, spark):
    """SNAP's real Wikispeedia built once by the job, shared by the tests that read it."""
    from jobs import build_wikispeedia

    out = str(tmp_path_factory.mktemp("graphs") / "wikispeedia")
    assert build_wikispeedia.main(["--input", WIKISPEEDIA, "--output", out]) == 0
    return out


@pytest.fixture(scope="session")
def wikispeedia_slice(tmp_path_factory):
    """A Wikispeedia folder of the real graph files and the first lines of each real log of games
    (3,000 finished, 1,000 unfinished), for tests of what follows the import."""
    from wikigame_spark.ingest import wikispeedia

    root = tmp_path_factory.mktemp("wikispeedia-slice")
    paths = root / wikispeedia.PATHS_FOLDER
    paths.mkdir()
    source = os.path.join(WIKISPEEDIA, wikispeedia.PATHS_FOLDER)
    for name in (wikispeedia.ARTICLES, wikispeedia.LINKS, wikispeedia.CATEGORIES):
        os.symlink(os.path.join(source, name), paths / name)
    os.symlink(os.path.join(WIKISPEEDIA, wikispeedia.TEXTS_FOLDER), root / wikispeedia.TEXTS_FOLDER)
    for name, n in ((wikispeedia.FINISHED_PATHS, 3000), (wikispeedia.UNFINISHED, 1000)):
        with open(os.path.join(source, name), encoding="utf-8") as f:
            lines = [line for line in f if line.strip() and not line.startswith("#")][:n]
        (paths / name).write_text("".join(lines), encoding="utf-8")
    return str(root)
