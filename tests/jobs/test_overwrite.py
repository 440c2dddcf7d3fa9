"""``--overwrite`` replaces only an earlier output of the job's own kind: never an input's folder,
a folder of other files, another kind of output, nor what other jobs keep inside it; no output goes
inside another's tables."""

import os
import shutil

import pytest

from tests.conftest import LTG
from tests.jobs.jobrun import job_env, run_job
from wikigame_spark.devtools import DATA
from wikigame_spark.devtools.games import write_games


@pytest.fixture()
def env(tmp_path):
    return job_env(f"sqlite:///{tmp_path}/mlflow.db")


def files_under(folder) -> dict[str, bytes]:
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            found[os.path.relpath(path, folder)] = open(path, "rb").read()
    return found


def test_the_folder_of_a_dump_is_never_replaced(tmp_path, env):
    victim = tmp_path / "dumps"
    victim.mkdir()
    dump = victim / os.path.basename(LTG)
    os.symlink(LTG, dump)
    for output in (victim, tmp_path):  # the dump's folder, and one above it
        last = run_job("build_wikipedia", "--input", str(dump), "--output", str(output), "--overwrite", env=env)
        assert last.refused(f"--output {output}: holds the input {dump}; write the graph to another folder")
    assert os.path.islink(dump) and os.listdir(victim) == [dump.name]


def test_a_folder_of_other_files_is_never_replaced(tmp_path, env):
    thesis = tmp_path / "victim" / "docs" / "thesis.txt"
    thesis.parent.mkdir(parents=True)
    thesis.write_text("three years")
    up = tmp_path / "victim" / "docs" / ".."  # `--output ..` from inside a folder
    for output in (tmp_path / "victim", up):
        last = run_job("build_wikipedia", "--input", LTG, "--output", str(output), "--overwrite", env=env).refused()
        assert "exists and is not a graph made by this project (no manifest.json; it holds docs)" in last, last
    assert thesis.read_text() == "three years"


@pytest.mark.slow
def test_a_rebuilt_graph_keeps_what_other_jobs_made_inside_it(ltg_graph, tmp_path, env):
    """Games, statistics, plays, caches and journals inside a graph folder are other jobs' outputs:
    rebuilding the graph replaces its own tables and manifest only."""
    graph = str(tmp_path / "ltg")
    assert run_job("build_wikipedia", "--input", LTG, "--output", graph, env=env).rc == 0
    write_games(graph, 3, path=os.path.join(graph, "games"))
    os.makedirs(os.path.join(graph, "human", "alice"))
    with open(os.path.join(graph, "human", "alice", "journal.jsonl"), "w") as f:
        f.write('{"game": 1}\n')
    others = {name: files_under(os.path.join(graph, name)) for name in ("games", "human")}
    tables = {name: sorted(os.listdir(os.path.join(graph, name))) for name in ("nodes", "edges")}

    done = run_job("build_wikipedia", "--input", LTG, "--output", graph, "--overwrite", env=env)
    assert done.rc == 0, done.err[-2000:]
    assert {name: files_under(os.path.join(graph, name)) for name in others} == others
    shown = sorted(n for n in os.listdir(graph) if not n.endswith(".crc"))
    assert shown == ["edges", "games", "human", "manifest.json", "nodes", "redirects"]
    assert all(sorted(os.listdir(os.path.join(graph, n))) != files for n, files in tables.items())  # new part files
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".ltg.")]  # nothing left aside


def test_another_kind_of_output_is_never_replaced(ltg_graph, tmp_path, env):
    last = run_job("sample_games", "--graph", ltg_graph, "--output", ltg_graph, "--overwrite", env=env).refused()
    assert last == (f"error: --output {ltg_graph}: holds the input {ltg_graph}; write the games to another folder"), (
        last
    )
    other = tmp_path / "stats-like"
    other.mkdir()
    (other / "manifest.json").write_text('{"kind": "graph-stats"}')
    last = run_job("sample_games", "--graph", ltg_graph, "--output", str(other), "--overwrite", env=env).refused()
    assert "holds a graph-stats, not a games: a job replaces only an earlier games" in last, last


def test_a_play_run_never_writes_into_a_folder_of_other_files(ltg_graph, tmp_path, env):
    victim = tmp_path / "plays"
    victim.mkdir()
    (victim / "notes.txt").write_text("mine")
    games = write_games(ltg_graph, 2, path=str(tmp_path / "games"))
    for extra in ((), ("--overwrite",)):
        argv = ["--graph", ltg_graph, "--games-dir", games, "--output", str(victim), "--agent", "random", *extra]
        last = run_job("play_games", *argv, env=env).refused()
        assert "exists and is not a play run made by this project (no manifest.json; it holds notes.txt)" in last
    assert os.listdir(victim) == ["notes.txt"]


def test_no_output_goes_inside_a_table_and_a_folder_there_is_named(ltg_graph, tmp_path, env):
    inside = os.path.join(ltg_graph, "nodes", "sub")
    last = run_job("build_wikipedia", "--input", LTG, "--output", inside, env=env).refused()
    assert f"--output {inside}: inside nodes of the output {ltg_graph} (its manifest records it)" in last, last
    assert not os.path.exists(inside)

    graph = tmp_path / "g"
    shutil.copytree(ltg_graph, graph, ignore=shutil.ignore_patterns("games", "stats", "plays", "cache", "human"))
    (graph / "edges" / "sub").mkdir()
    (graph / "edges" / "sub" / "manifest.json").write_text("{}")
    last = run_job("graph_stats", "--graph", str(graph), env=env).refused()
    assert f"--graph {graph}: table edges: holds sub/ (sub/manifest.json), which is not one of its part files" in last


def test_the_openalex_snapshot_folder_is_never_replaced(tmp_path, env):
    snapshot = tmp_path / "works"
    shutil.copytree(os.path.join(DATA, "openalex", "real-works"), snapshot)
    before = files_under(snapshot)
    argv = ["--input", str(snapshot), "--field", "Mathematics", "--overwrite"]
    last = run_job("build_openalex", *argv, "--output", str(snapshot), env=env).refused()
    assert f"--output {snapshot}/mathematics: inside the input {snapshot}; write the field graph to" in last, last
    assert files_under(snapshot) == before
