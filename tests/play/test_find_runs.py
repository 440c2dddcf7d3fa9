"""Which play runs a report reads: one name played on two graphs is two runs; a run played again
into its own plays folder replaces the earlier one, which is left out with the reason."""

from __future__ import annotations

import mlflow
import pytest

from wikigame_spark.play import catalog


@pytest.fixture()
def store(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    mlflow.set_tracking_uri(uri)
    return mlflow.set_experiment("walk").experiment_id


def played(experiment_id: str, name: str, graph: str) -> str:
    """A finished play run as play_games records it: its name, agent and graph (the plays folder
    the default one under the graph)."""
    with mlflow.start_run(experiment_id=experiment_id, run_name=name) as run:
        mlflow.log_params({"agent": "tfidf", "graph": graph, "run_name": name})
    return run.info.run_id


def test_one_run_name_on_two_graphs_is_two_runs_and_a_replay_supersedes(store, tmp_path):
    ltg, maths = str(tmp_path / "ltgwiki"), str(tmp_path / "openalex" / "mathematics")
    first = played(store, "tfidf-s0-nall", ltg)
    other_graph = played(store, "tfidf-s0-nall", maths)
    replay = played(store, "tfidf-s0-nall", ltg + "/")  # the same folder, written with a trailing slash
    runs, skipped = catalog.find_runs("walk")
    assert {r.run_id for r in runs} == {other_graph, replay}
    assert {r.plays_dir for r in runs} == {f"{ltg}/plays/tfidf-s0-nall", f"{maths}/plays/tfidf-s0-nall"}
    assert [s["run_id"] for s in skipped] == [first]
    assert (
        skipped[0]["reason"]
        == f"superseded by run {replay}, which played again into its plays folder {ltg}/plays/tfidf-s0-nall"
    )
