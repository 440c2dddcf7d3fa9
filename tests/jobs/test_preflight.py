"""Faults a user can cause, refused before any Spark work: one last ``error:`` line, exit 2.

Each job runs on a program's arguments with its own environment and exit handling (``run_job``);
the outputs and the tracking store are then checked to hold nothing the refused job made.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time

import pytest

from tests.conftest import LTG
from tests.jobs.jobrun import job_env, run_job
from wikigame_spark.devtools.games import small_graph, write_games

TITLES = [f"Page {i}" for i in range(12)]
EDGES = [(i, i + 1) for i in range(11)] + [(i + 1, i) for i in range(11)] + [(0, 6), (6, 11)]


def graph(tmp_path, name: str, titles: list[str], edges: list[tuple[int, int]]) -> str:
    path = small_graph(tmp_path / name, titles, edges)
    with open(f"{path}/manifest.json", "w") as f:  # each graph its own manifest, as real builds have
        json.dump({"kind": "test-graph", "created": name, "counts": {"nodes": len(titles)}}, f)
    return path


@pytest.fixture()
def graphs(tmp_path):
    a = graph(tmp_path, "a", TITLES, EDGES)
    games = write_games(a, 10, path=str(tmp_path / "games-a"))
    same_size = graph(tmp_path, "b", [f"Other {i}" for i in range(12)], [(i, (i * 5) % 12) for i in range(12)])
    smaller = graph(tmp_path, "c", ["X", "Y", "Z"], [(0, 1), (1, 2)])
    return {"a": a, "games": games, "b": same_size, "c": smaller}


@pytest.fixture()
def env(tmp_path):
    return job_env(f"sqlite:///{tmp_path}/mlflow.db")


def play(*args: str, env: dict):
    return run_job("play_games", "--agent", "random", "--experiment", "t", *args, env=env)


@pytest.mark.parametrize("other", ["b", "c"])
def test_games_of_another_graph_are_refused(graphs, env, tmp_path, other):
    """Ids in range (b) played dead ends on the wrong graph; out of range (c) an IndexError trace."""
    done = play("--graph", graphs[other], "--games-dir", graphs["games"], env=env)
    done.refused("was sampled on", graphs["a"], graphs[other])
    assert not os.path.exists(f"{graphs[other]}/plays")
    assert not os.path.exists(tmp_path / "mlflow.db")  # refused before the tracking store was touched


@pytest.mark.parametrize("job", ["graph_stats", "sample_games", "play_games"])
def test_a_games_folder_is_not_a_graph(graphs, env, job):
    extra = ["--agent", "random"] if job == "play_games" else []
    done = run_job(job, "--graph", graphs["games"], *extra, env=env)
    done.refused(f"--graph {graphs['games']}: is a games table, not a graph")


def test_a_graph_is_not_a_games_table_nor_a_dump(graphs, env, tmp_path):
    play("--graph", graphs["a"], "--games-dir", graphs["a"], env=env).refused("is a graph, not a games table")
    done = run_job("build_wikipedia", "--input", graphs["a"], "--output", str(tmp_path / "g"), env=env)
    done.refused(f"--input {graphs['a']}: is a graph, not a dump")
    assert not os.path.exists(tmp_path / "g")


def test_truncated_edges_name_the_file(graphs, env):
    part = f"{graphs['a']}/edges/part-0.parquet"
    with open(part, "r+b") as f:
        f.truncate(os.path.getsize(part) // 2)
    play("--graph", graphs["a"], "--games-dir", graphs["games"], env=env).refused(part, "is not a Parquet file")
    run_job("graph_stats", "--graph", graphs["a"], env=env).refused(part, "is not a Parquet file")
    assert not os.path.exists(f"{graphs['a']}/stats") and not os.path.exists(f"{graphs['a']}/plays")


@pytest.mark.parametrize("flags", [["--games", "0"], ["--run-name", "a/b"], ["--run-name", ".."], ["--max-steps", "0"]])
def test_bad_flags(graphs, env, flags):
    done = play("--graph", graphs["a"], "--games-dir", graphs["games"], *flags, env=env)
    done.refused(
        {"--games": "--games 0: must be a positive number", "--run-name": "--run-name", "--max-steps": "--max-steps"}[
            flags[0]
        ]
    )
    assert not os.path.exists(f"{graphs['a']}/plays")


@pytest.fixture()
def silent_server():
    """A server on 127.0.0.1 that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held, stop = [], threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for c in held:
        c.close()
    server.close()


@pytest.mark.slow
@pytest.mark.parametrize("uri", ["sqlite:////proc/wikigame-test.db", "http://127.0.0.1:9", "silent"])
def test_unusable_tracking_store(graphs, uri, silent_server):
    uri = silent_server if uri == "silent" else uri
    started = time.monotonic()
    done = play("--graph", graphs["a"], "--games-dir", graphs["games"], env=job_env(uri))
    line = done.refused(f"MLFLOW_TRACKING_URI={uri}")
    print(f"{uri}: refused in {time.monotonic() - started:.1f} s: {line}")
    assert not os.path.exists(f"{graphs['a']}/plays")


def test_unwritable_output_before_the_build(env, tmp_path):
    done = run_job("build_wikipedia", "--input", LTG, "--output", "/proc/wikigame-test/graph", env=env)
    done.refused("--output /proc/wikigame-test/graph: cannot write under /proc")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    done = run_job("build_wikipedia", "--input", LTG, "--output", str(blocker / "graph"), env=env)
    done.refused(f"{blocker} is a file, not a folder")


def test_existing_output_is_refused_before_the_build(env, tmp_path):
    out = tmp_path / "graph"
    out.mkdir()
    (out / "keep").write_text("mine")
    started = time.monotonic()
    done = run_job("build_wikipedia", "--input", LTG, "--output", str(out), env=env)
    done.refused(f"{out} exists; pass --overwrite")
    print(f"existing output refused in {time.monotonic() - started:.1f} s")
    assert sorted(os.listdir(out)) == ["keep"] and sorted(os.listdir(tmp_path)) == ["graph"]


def test_games_table_without_its_graph_is_refused(graphs, env):
    with open(f"{graphs['games']}/manifest.json") as f:
        manifest = json.load(f)
    del manifest["graph"]
    with open(f"{graphs['games']}/manifest.json", "w") as f:
        json.dump(manifest, f)
    play("--graph", graphs["a"], "--games-dir", graphs["games"], env=env).refused("its manifest names no graph")
    shutil.rmtree(graphs["games"])
    play("--graph", graphs["a"], "--games-dir", graphs["games"], env=env).refused(f"{graphs['games']}: not found")


@pytest.mark.parametrize(
    "flags, fragment",
    [
        (["--agent", "embedding", "--model", "no-such/model"], "--model no-such/model: not installed here"),
        (["--agent", "embedding", "--model", "/no/such/folder"], "not a model hub name"),
        (["--agent", "tfidf", "--corpus-graph", "/no/such/graph"], "--corpus-graph /no/such/graph: not found"),
    ],
)
def test_an_agents_missing_model_or_corpus_is_refused_before_spark_starts(graphs, tmp_path, flags, fragment):
    """Refused by the job's own process before its JVM starts (Java's first word never printed),
    where the workers would otherwise try the model hub task after task."""
    env = job_env(f"sqlite:///{tmp_path}/mlflow.db", HF_HUB_OFFLINE="1")
    args = ("--graph", graphs["a"], "--games-dir", graphs["games"], *flags)
    done = run_job("play_games", *args, env=env, process=True)
    line = done.refused(fragment)
    if "--model" in flags:
        assert "installed: all-MiniLM-L6-v2" in line
    assert "WARNING: Using incubator modules" not in done.err
    assert not os.path.exists(f"{graphs['a']}/plays")
