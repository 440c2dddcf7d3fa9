"""The oracle and hub agents on the real Latgalian graph, through the play job, and the report's
table of every agent against them."""

import json
import os

import networkx as nx
import pandas as pd
import pyarrow.parquet as pq
import pytest

from jobs import play_games, report
from tests.graph.graphs import parquet_graph
from wikigame_spark.devtools.games import write_games

GAMES = 40


@pytest.fixture(scope="module")
def played(ltg_graph, tmp_path_factory):
    root = tmp_path_factory.mktemp("baselines")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{root}/mlflow.db")
        games = write_games(ltg_graph, GAMES, path=str(root / "games"))
        runs = {}
        for name, extra in (
            ("oracle", ["--agent", "oracle"]),
            ("oracle-back", ["--agent", "oracle", "--allow-back", "--allow-revisits"]),
            ("hub", ["--agent", "hub"]),
            ("hub-in", ["--agent", "hub", "--hub-by", "in_degree", "--max-steps", "20"]),
            ("random", ["--agent", "random", "--max-steps", "20", "--allow-back"]),
        ):
            out = str(root / name)
            argv = ["--graph", ltg_graph, "--games-dir", games, "--output", out, "--experiment", "b"]
            assert play_games.main([*argv, "--run-name", name, *extra]) == 0
            runs[name] = pq.read_table(os.path.join(out, "part-000000", "plays")).to_pandas()
        yield {"games": games, "runs": runs, "root": root}


def test_the_oracle_wins_every_game_in_exactly_the_optimal_steps(played):
    for name in ("oracle", "oracle-back"):
        plays = played["runs"][name]
        assert len(plays) == GAMES and (plays["outcome"] == "success").all()
        assert (plays["steps"] == plays["optimal_steps"]).all(), name


def test_the_hub_follows_the_highest_pagerank_computed_once_per_graph(ltg_graph, played):
    cache = os.path.join(ltg_graph, "cache", "centrality")
    with open(os.path.join(cache, "manifest.json")) as f:
        made = json.load(f)
    assert made["kind"] == "centrality" and made["iterations"] == 20
    table = pq.read_table(os.path.join(cache, "centrality")).to_pandas().set_index("id").sort_index()
    _, edges, _ = parquet_graph(ltg_graph)
    graph = nx.DiGraph(edges)
    graph.add_nodes_from(table.index)
    assert table["in_degree"].to_dict() == dict(graph.in_degree())  # counted independently
    reference = pd.Series(nx.pagerank(graph, alpha=0.85)).sort_index()
    assert table["pagerank"].rank().corr(reference.rank()) > 0.9  # the same ordering, near enough
    for name, measure in (("hub", "pagerank"), ("hub-in", "in_degree")):
        for play in played["runs"][name].itertuples():
            route = list(play.route)
            for i, page in enumerate(route[1:]):
                offered = [v for v in sorted(graph.successors(route[i])) if v not in route[: i + 1]]
                best = max(table.loc[offered, measure])
                assert page == min(v for v in offered if table.loc[v, measure] == best), (name, play.game_id, i)


def test_the_report_measures_every_agent_against_the_oracle_and_the_hub(played, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{played['root']}/mlflow.db")
    out = str(tmp_path / "report")
    assert report.main(["--experiment", "b", "--output", out]) == 0
    with open(os.path.join(out, "report.json")) as f:
        rows = {r["label"]: r for r in json.load(f)["baselines"]}
    md = open(os.path.join(out, "report.md"), encoding="utf-8").read()
    assert "Against the oracle and the hub" in md
    oracle = rows["oracle"]
    assert oracle["oracle_gap"] == 0 and oracle["steps_above_oracle"] == 0 and oracle["optimal_share"] == 1.0
    assert rows["hub"]["hub_share"] == 1.0  # the hub replayed under its own rules makes its own moves
    back = next(r for label, r in rows.items() if label.startswith("random"))
    plays = played["runs"]["random"]
    assert back["moves"] == int(plays["steps"].sum()) and 0 <= back["hub_share"] <= 1
    assert back["back_moves"] > 0 and "back" in next(label for label in rows if label.startswith("random"))
