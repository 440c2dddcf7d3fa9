"""The job runner through the real jobs: settings refused before any work, one default experiment,
an overwrite that keeps the finished result until the new one is whole, dead runs' staging folders
removed and their MLflow runs ended, the summary the last line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from mlflow.tracking import MlflowClient

from tests.graph.graphs import write_graph_dir
from tests.jobs.jobrun import command, job_env, run_job
from wikigame_spark import jobs, manifests, storage
from wikigame_spark.devtools.games import write_games
from wikigame_spark.jobs.graph_stats import JOB as GRAPH_STATS


@pytest.fixture(scope="module")
def games_dir(ltg_graph, tmp_path_factory):
    return write_games(ltg_graph, 40, path=str(tmp_path_factory.mktemp("games") / "games"))


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--seed", "-1"], "--seed: must be an integer from 0"),
        (["--seed", "abc"], "argument --seed: invalid int value: 'abc'"),
        (["--max-steps", "0"], "--max-steps 0: must be a positive number"),
        (["--protocol", "wikispeedia"], "argument --protocol: invalid choice"),
        ([], "--agent is required"),
        (["--agent", "llm", "--temperature", "inf"], "--temperature inf: must be a finite number, 0 or more"),
        (["--agent", "llm", "--temperature", "-0.5"], "--temperature -0.5: must be a finite number, 0 or more"),
    ],
)
def test_a_bad_setting_is_one_error_line_before_any_work(ltg_graph, games_dir, tmp_path, args, fragment):
    base = ["--graph", ltg_graph, "--games-dir", games_dir, "--output", str(tmp_path / "plays")]
    agent = [] if fragment.startswith("--agent") else ["--agent", "random"]
    done = run_job("play_games", *base, *agent, *args, env=job_env(f"sqlite:///{tmp_path}/m.db"), timeout=120)
    done.refused(fragment)
    assert not os.path.exists(tmp_path / "plays") and not os.path.exists(tmp_path / "m.db")


def test_a_yaml_syntax_error_names_the_file_and_line(ltg_graph, tmp_path):
    bad = tmp_path / "stats.yaml"
    bad.write_text("pairs: 10\nseed: [1\n")
    done = run_job("graph_stats", "--graph", ltg_graph, "--config", str(bad), env=job_env(f"sqlite:///{tmp_path}/m.db"))
    assert "line 3" in done.refused(f"--config {bad}", "not valid YAML")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("pairs: 10\nname: caf\xe9\n".encode("latin-1"))
    done = run_job(
        "graph_stats", "--graph", ltg_graph, "--config", str(latin), env=job_env(f"sqlite:///{tmp_path}/m.db")
    )
    done.refused(f"--config {latin}: not UTF-8 text")


def test_every_job_has_version_config_and_required_flags_marked():
    for job in (spec.name for spec in jobs.specs() if spec.name != "human_play"):  # it serves: below
        version = run_job(job, "--version", env=dict(os.environ))
        assert version.rc == 0 and version.out.startswith("wikigame-spark "), job
        helped = run_job(job, "--help", env=dict(os.environ)).out
        assert "--config YAML" in helped and "--verbose" in helped, job
    helped = subprocess.run(command("human_play", "--help"), capture_output=True, text=True, timeout=60).stdout
    assert "--games-dir" in helped and "--config YAML" in helped and "(required)" in helped
    assert "(required)" in GRAPH_STATS.parser().format_help()


@pytest.mark.slow
def test_one_experiment_for_a_study_and_the_tags_to_group_by(ltg_graph, games_dir, tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path}/m.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "my-study")
    from jobs import play_games, sample_games

    assert sample_games.main(["--graph", ltg_graph, "--games", "5", "--output", str(tmp_path / "g")]) == 0
    argv = ["--graph", ltg_graph, "--games-dir", games_dir, "--agent", "random", "--games", "3"]
    assert play_games.main([*argv, "--output", str(tmp_path / "p")]) == 0
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("my-study")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"  # the UI opens on the runs
    runs = {r.data.tags["stage"]: r for r in client.search_runs([exp.experiment_id])}
    assert set(runs) == {"sample_games", "play_games"}
    play = runs["play_games"]
    assert play.data.tags["graph"] == "ltgwiki" and play.data.tags["agent"] == "random"
    assert play.data.tags["protocol"] == "paper" and play.data.tags["games"] == games_dir
    assert "base_url" not in play.data.params and "tfidf_sample_size" not in play.data.params  # its own only
    assert "" not in play.data.params.values() and "run_name" not in play.data.params  # unset settings: not logged


def _plays_manifest(out: str) -> dict:
    with open(os.path.join(out, "manifest.json")) as f:
        return json.load(f)


@pytest.mark.slow
def test_a_killed_overwrite_keeps_the_finished_run_and_resumes_where_it_stopped(ltg_graph, games_dir, tmp_path):
    uri = f"sqlite:///{tmp_path}/m.db"
    env = job_env(uri)
    out = str(tmp_path / "plays")
    argv = ["--graph", ltg_graph, "--games-dir", games_dir, "--output", out, "--run-name", "r", "--experiment", "e"]
    first = run_job("play_games", *argv, "--agent", "random", "--games", "6", env=env)
    assert first.rc == 0, first.err[-2000:]
    finished = _plays_manifest(out)
    dead = tmp_path / ".plays._staging-deadbeef"  # a killed run's staging folder beside the output
    dead.mkdir()
    # A second run of other settings over it, one game a chunk, killed once three chunks are written.
    again = [*argv, "--agent", "random", "--games", "10", "--seed", "7", "--chunk-games", "1", "--overwrite"]
    proc = subprocess.Popen(command("play_games", *again), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    resume = tmp_path / ".plays._resume"
    deadline = time.time() + 300
    while (
        time.time() < deadline
        and len([n for n in os.listdir(resume) if n.startswith("part-")] if resume.exists() else []) < 3
    ):
        time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait(60)
    assert resume.exists(), "the killed overwrite left no resumable staging folder"
    assert _plays_manifest(out) == finished  # the finished run is still there, whole
    assert not dead.exists()  # removed when the killed run started: its lock was free
    client = MlflowClient(uri)
    killed = [
        r for r in client.search_runs([client.get_experiment_by_name("e").experiment_id]) if r.info.status == "RUNNING"
    ]
    assert len(killed) == 1
    done = run_job("play_games", *again, env=env)
    assert done.rc == 0, done.err[-2000:]
    assert done.out.strip().splitlines()[-1].startswith("play_games: wrote")
    now = _plays_manifest(out)
    assert now["made_by"]["seed"] == 7 and now["metrics"]["games"] == 10
    assert not resume.exists()
    assert client.get_run(killed[0].info.run_id).info.status in ("FINISHED", "KILLED")  # resumed, or ended
    assert client.get_run(now["mlflow_run_id"]).info.status == "FINISHED"


@pytest.mark.slow
def test_graph_stats_writes_a_manifest_and_leaves_no_staging(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/m.db")
    star = [(0, i) for i in range(1, 30)] + [(i, 0) for i in range(1, 30)]  # few rounds for GraphFrames
    graph = write_graph_dir(spark, str(tmp_path / "star"), list(range(30)), star)
    out = str(tmp_path / "stats")
    inside = tmp_path / "stats" / ".part-000004._staging-cafe0000"
    assert GRAPH_STATS.main(["--graph", graph, "--output", out, "--pairs", "50"]) == 0
    inside.mkdir()
    assert GRAPH_STATS.main(["--graph", graph, "--output", out, "--pairs", "50", "--overwrite"]) == 0
    manifest = manifests.read_manifest(storage.folder(out))
    assert manifest["kind"] == "graph-stats" and manifest["parameters"]["pairs"] == 50
    assert manifest["mlflow_run_id"] and manifest["code_version"]
    assert not inside.exists() and not [n for n in os.listdir(tmp_path) if "._" in n]


def test_a_graph_whose_files_changed_is_refused_naming_the_table_and_file(ltg_graph, tmp_path):
    env = job_env(f"sqlite:///{tmp_path}/m.db")
    graph = str(tmp_path / "copy")
    shutil.copytree(ltg_graph, graph, ignore=shutil.ignore_patterns("cache", "stats", "plays", "games"))
    parts = sorted(n for n in os.listdir(f"{graph}/edges") if n.endswith(".parquet"))
    removed = parts[0]
    os.rename(f"{graph}/edges/{removed}", tmp_path / removed)
    run_job("graph_stats", "--graph", graph, env=env).refused("table edges", f"part file {removed} is missing")
    os.rename(tmp_path / removed, f"{graph}/edges/{removed}")
    shutil.copy(f"{graph}/edges/{removed}", f"{graph}/edges/part-99999-shortcuts.parquet")
    done = run_job("sample_games", "--graph", graph, "--games", "5", env=env)
    done.refused("table edges", "part file part-99999-shortcuts.parquet is not in the manifest")
    assert not os.path.exists(f"{graph}/games") and not os.path.exists(f"{graph}/stats")


@pytest.mark.parametrize(
    ("ids", "edges", "fragment"),
    [
        ([0, 1, 1, 5], [(0, 1)], "node ids run 0…5 over 4 rows, not 0…3"),
        ([0, 1, 2], [(0, 1), (2, 7)], "an edge's dst is node 7, outside the graph's 0…2"),
    ],
)
def test_a_graph_that_breaks_the_id_contract_is_refused_before_any_spark_work(spark, tmp_path, ids, edges, fragment):
    graph = write_graph_dir(spark, str(tmp_path / "bad"), ids, edges)
    done = run_job("graph_stats", "--graph", graph, env=job_env(f"sqlite:///{tmp_path}/m.db"), timeout=120)
    done.refused(fragment)


def _human_tsv(graph: str, games_dir: str, path: str) -> None:
    """Six human games won in the paper's layout, on real titles."""
    nodes = pq.read_table(f"{graph}/nodes").to_pandas()
    title = dict(zip(nodes["id"], nodes["title"]))
    games = pq.read_table(f"{games_dir}/games").to_pandas().sort_values("game_id").head(6)
    lines = ["Num\tSuccess?\tSteps\tTime (m:s)\tStartPage\tEndPage\tOptimalSteps"]
    for g in games.itertuples():
        steps = g.optimal_steps + 1
        lines.append(f"{g.game_id}\tYes\t{steps}.0\t01:00\t{title[g.source]}\t{title[g.target]}\t{g.optimal_steps}")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def _shorten_one_success(plays_dir: str) -> None:
    """Rewrite a run's plays so one success took fewer steps than the optimal length, as plays made
    on other files than the graph's would."""
    table_dir = os.path.join(plays_dir, "part-000000", "plays")
    for name in sorted(n for n in os.listdir(table_dir) if n.endswith(".parquet")):
        table = pq.read_table(os.path.join(table_dir, name))
        plays = table.to_pandas()
        won = plays.index[(plays["outcome"] == "success") & (plays["optimal_steps"] >= 2)]
        if len(won):
            plays.loc[won[0], "steps"] = plays.loc[won[0], "optimal_steps"] - 1
            shortened = pa.Table.from_pandas(plays, schema=table.schema, preserve_index=False)
            pq.write_table(shortened, os.path.join(table_dir, name))
            os.remove(os.path.join(table_dir, f".{name}.crc"))  # Hadoop's checksum of the old bytes
            return
    raise AssertionError(f"{table_dir}: no success to shorten")


@pytest.mark.slow
def test_the_report_leaves_out_a_run_it_cannot_evaluate_unless_strict(ltg_graph, games_dir, tmp_path):
    env = job_env(f"sqlite:///{tmp_path}/m.db")
    tsv = str(tmp_path / "humans.tsv")
    _human_tsv(ltg_graph, games_dir, tsv)
    for name in ("humans", "humans-elsewhere"):
        argv = ["--graph", ltg_graph, "--tsv", tsv, "--run-name", name, "--output", str(tmp_path / name)]
        done = run_job("import_human_games", *argv, "--experiment", "rep", env=env)
        assert done.rc == 0, done.err[-2000:]
    _shorten_one_success(str(tmp_path / "humans-elsewhere"))
    out = str(tmp_path / "report")
    done = run_job("report", "--experiment", "rep", "--output", out, env=env)
    assert done.rc == 0, done.err[-3000:]
    last = done.out.strip().splitlines()[-1]
    assert last.startswith("report: wrote") and "1 runs left out" in last
    with open(os.path.join(out, "report.json")) as f:
        left_out = json.load(f)["skipped"]
    assert [r["run_name"] for r in left_out] == ["humans-elsewhere"]
    assert "fewer steps than the optimal length" in left_out[0]["reason"]
    strict = run_job("report", "--experiment", "rep", "--output", out, "--strict", "--overwrite", env=env)
    strict.refused("humans-elsewhere", "fewer steps than the optimal length")
