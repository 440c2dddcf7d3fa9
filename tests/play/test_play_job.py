"""jobs/play_games.py end to end on the real Latgalian graph: plays, MLflow, cache, resume."""

import os
import subprocess
import sys
import time

import mlflow
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from jobs import play_games
from wikigame_spark import manifests, outputs, storage
from wikigame_spark.devtools.games import write_games
from wikigame_spark.schemas import PLAYS


@pytest.fixture()
def tracking(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    return uri


@pytest.fixture(scope="module")
def games_dir(ltg_graph, tmp_path_factory):
    return write_games(ltg_graph, 30, path=str(tmp_path_factory.mktemp("games") / "games"))


def run(ltg_graph, games_dir, tmp_path, *args):
    out = str(tmp_path / "plays")
    argv = ["--graph", ltg_graph, "--games-dir", games_dir, "--output", out, "--experiment", "t", *args]
    assert play_games.main(argv) == 0
    return out


def read_plays(spark, out):
    return spark.read.schema(PLAYS).parquet(f"{out}/part-*/plays").toPandas().sort_values("game_id")


@pytest.mark.slow
def test_embedding_run_logs_params_metrics_artifacts(spark, ltg_graph, games_dir, tmp_path, tracking):
    out = run(ltg_graph, games_dir, tmp_path, "--agent", "embedding", "--games", "20", "--run-name", "emb")
    plays = read_plays(spark, out)
    assert len(plays) == 20 and plays.game_id.tolist() == list(range(20))
    assert set(plays.agent) == {"embedding"} and set(plays.model) == {"all-MiniLM-L6-v2"}
    manifest = manifests.read_manifest(storage.folder(out))
    client = MlflowClient(tracking)
    r = client.get_run(manifest["mlflow_run_id"])
    assert r.info.run_name == "emb" and r.info.status == "FINISHED"
    p = r.data.params
    assert p["agent"] == "embedding" and p["model"] == "all-MiniLM-L6-v2" and p["use_titles"] == "False"
    assert p["graph_source"] == "ltgwiki" and p["graph_dump_date"].startswith("2017-09-01")
    assert p["max_steps"] == "100" and p["seed"] == "0" and p["games"] == "20" and p["code_version"]
    m = r.data.metrics
    wins = (plays.outcome == "success").mean()
    assert m["success_rate"] == pytest.approx(wins)
    assert m["success_rate_se"] == pytest.approx((wins * (1 - wins) / 20) ** 0.5)
    assert sum(v for k, v in m.items() if k.startswith("outcome_")) == pytest.approx(1.0)
    assert m["games_per_second"] > 0
    # what the cache cost, as its manifest records it, scaled to English Wikipedia
    cache = os.path.join(ltg_graph, "cache", "embeddings", "all-MiniLM-L6-v2--openvino")  # the default runtime
    cost = manifests.read_manifest(storage.folder(os.path.join(cache, "summary-noprompt")))["cost"]
    nodes = spark.read.parquet(f"{ltg_graph}/nodes").select("summary").toPandas()["summary"].fillna("")
    assert cost["texts"] == len(nodes) and cost["chars"] == nodes.str.len().sum() and cost["gpu_texts"] == 0
    assert m["embedding_cpu_s"] == pytest.approx(cost["cpu_s"]) and cost["cpu_s"] > 0
    per_char = cost["cpu_s"] / cost["chars"]
    assert m["embedding_core_hours_enwiki"] == pytest.approx(per_char * 1000 * 6_871_000 / 3600)
    extra = (plays.steps - plays.optimal_steps)[plays.outcome == "success"]
    if len(extra) > 1:
        assert m["steps_above_optimal_mean"] == pytest.approx(extra.mean())
    arts = {a.path for a in client.list_artifacts(r.info.run_id)}
    assert {"plays.parquet", "sample_routes.md"} <= arts
    routes = mlflow.artifacts.load_text(f"runs:/{r.info.run_id}/sample_routes.md")
    assert "→" in routes and "| game | outcome |" in routes
    # the embedding cache was written once and is reused by the next run
    assert os.listdir(cache) == ["summary-noprompt"]


@pytest.mark.slow
def test_cache_gives_the_same_routes_as_reencoding(spark, ltg_graph, games_dir, tmp_path, tracking):
    """The paper's method (encode the offered links at every step) vs the cache: same routes."""
    cached = read_plays(spark, run(ltg_graph, games_dir, tmp_path / "a", "--agent", "embedding", "--games", "12"))
    reenc = read_plays(
        spark,
        run(
            ltg_graph,
            games_dir,
            tmp_path / "b",
            "--agent",
            "embedding",
            "--games",
            "12",
            "--reencode",
            "--run-name",
            "ref",
        ),
    )
    assert cached.route.apply(list).tolist() == reenc.route.apply(list).tolist()
    titles = read_plays(
        spark, run(ltg_graph, games_dir, tmp_path / "c", "--agent", "embedding", "--games", "12", "--use-titles")
    )
    assert titles.route.apply(list).tolist() != cached.route.apply(list).tolist()


def test_rerun_of_a_finished_run_needs_overwrite(spark, ltg_graph, games_dir, tmp_path, tracking):
    run(ltg_graph, games_dir, tmp_path, "--agent", "random", "--games", "5")
    with pytest.raises(outputs.OutputExistsError, match="--overwrite"):
        run(ltg_graph, games_dir, tmp_path, "--agent", "random", "--games", "5")


@pytest.mark.slow
def test_interrupted_run_resumes_without_replays(spark, ltg_graph, games_dir, tmp_path, tracking):
    out = str(tmp_path / "plays")
    argv = [
        sys.executable,
        "jobs/play_games.py",
        "--graph",
        ltg_graph,
        "--games-dir",
        games_dir,
        "--output",
        out,
        "--experiment",
        "t",
        "--agent",
        "random",
        "--games",
        "30",
        "--chunk-games",
        "5",
        "--run-name",
        "resume",
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    first = f"{out}/part-000000/manifest.json"
    deadline = time.time() + 300
    while not os.path.exists(first) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    proc.kill()
    proc.wait()
    assert os.path.exists(first), "the first chunk was never written"
    done_before = sorted(
        d for d in os.listdir(out) if d.startswith("part-") and os.path.exists(f"{out}/{d}/manifest.json")
    )
    assert 1 <= len(done_before) < 6
    stamp = os.path.getmtime(first)

    assert play_games.main(argv[2:]) == 0
    plays = read_plays(spark, out)
    assert sorted(plays.game_id) == list(range(30))
    assert os.path.getmtime(first) == stamp  # chunks already written were not played again
    runs = MlflowClient(tracking).search_runs(
        [mlflow.get_experiment_by_name("t").experiment_id], filter_string="tags.mlflow.runName = 'resume'"
    )
    assert len(runs) == 1 and runs[0].data.metrics["games"] == 30
    assert isinstance(plays, pd.DataFrame)
