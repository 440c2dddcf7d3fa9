"""People and agents on the same pairs, end to end on SNAP's real Wikispeedia: the graph, a slice of
the real people's games imported, games made of their pairs, TF-IDF and random playing them, and
the report's section checked against the plays themselves."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.jobs.jobrun import job_env, run_job
from wikigame_spark.graph.played_pairs import PEOPLE, PEOPLE_WON, played_pairs
from wikigame_spark.schemas import NO_MODEL_USAGE, PLAYS

UNUSED = tuple(NO_MODEL_USAGE.values())[3:]  # a person's cached and reasoning tokens, invalid calls, price


def test_pairs_are_numbered_in_the_seeds_order(spark):
    rows = [
        (0, "human", None, "success", 3, 2, [1, 2, 3], 1, 3, 0, 0, 0, 1.0, None, *UNUSED),
        (1, "human", None, "gave_up", 1, 2, [1, 2], 1, 3, 0, 0, 0, 1.0, None, *UNUSED),
        (2, "human", None, "time_limit", 4, 1, [4, 1, 2, 4, 5], 4, 5, 0, 0, 0, 1.0, None, *UNUSED),
        (3, "human", None, "success", 0, 0, [6], 6, 6, 0, 0, 0, 1.0, None, *UNUSED),
        *(
            (10 + i, "human", None, "success", 1, 1, [7, 8 + i], 7, 8 + i, 0, 0, 0, 1.0, None, *UNUSED)
            for i in range(20)
        ),
    ]
    plays = spark.createDataFrame(rows, PLAYS)
    games, c = played_pairs(plays, seed=3)
    table = games.toPandas()
    assert c["pairs"] == 23 and c["games"] == 22 and c["left_out"] == {"same_node": 1, "not_drawn": 0}
    assert list(table["game_id"]) == list(range(22))
    pair = table[(table["source"] == 1) & (table["target"] == 3)].iloc[0]
    assert (pair[PEOPLE], pair[PEOPLE_WON], pair["optimal_steps"]) == (2, 1, 2)
    first5, _ = played_pairs(plays, seed=3, games=5)
    assert first5.toPandas().equals(table.head(5))  # a sample is the first games of the whole order
    other = played_pairs(plays, seed=4)[0].toPandas()
    assert set(zip(other["source"], other["target"])) == set(zip(table["source"], table["target"]))
    assert list(other["target"]) != list(table["target"])
    won, cw = played_pairs(plays, seed=3, won_only=True)
    assert (won.toPandas()[PEOPLE_WON] > 0).all()
    assert cw["games"] == 21 and cw["left_out"]["never_won"] == 1 and cw["pairs_never_won"] == 1


@pytest.mark.slow
def test_people_against_agents_on_the_same_pairs(wikispeedia_slice, wikispeedia_graph, tmp_path):
    env = job_env(f"sqlite:///{tmp_path}/mlflow.db", MLFLOW_EXPERIMENT_NAME="people")
    people = str(tmp_path / "people")
    games = str(tmp_path / "games")
    args = ["--graph", wikispeedia_graph, "--wikispeedia", wikispeedia_slice, "--output", people]
    done = run_job("import_human_games", *args, env=env)
    assert done.rc == 0, done.err[-3000:]
    refused = run_job("sample_games", "--graph", wikispeedia_graph, "--human-plays", people, "--stratify", "1-2",
                      env=env)  # fmt: skip
    refused.refused("--human-plays takes the pairs people played, not drawn ones: drop --stratify")
    done = run_job("sample_games", "--graph", wikispeedia_graph, "--human-plays", people, "--games", "30",
                   "--seed", "5", "--output", games, env=env)  # fmt: skip
    assert done.rc == 0, done.err[-3000:]
    assert "30 games from the" in done.out.strip().splitlines()[-1]
    for agent in ("tfidf", "random"):
        done = run_job("play_games", "--graph", wikispeedia_graph, "--games-dir", games, "--agent", agent,
                       "--output", str(tmp_path / agent), env=env)  # fmt: skip
        assert done.rc == 0, done.err[-3000:]
    report = str(tmp_path / "report")
    done = run_job("report", "--output", report, env=env)
    assert done.rc == 0, done.err[-3000:]

    # what the people did on each pair, straight from the imported plays and the games table
    plays = pq.read_table(os.path.join(people, "part-000000", "plays")).to_pandas()
    table = pq.read_table(os.path.join(games, "games")).to_pandas()
    assert len(table) == 30 and (table["source"] != table["target"]).all()
    plays["won"] = plays["outcome"] == "success"
    per_pair = plays.groupby(["source", "target"])["won"].agg(["size", "sum"]).reset_index()
    merged = table.merge(per_pair, on=["source", "target"])
    assert (merged[PEOPLE] == merged["size"]).all() and (merged[PEOPLE_WON] == merged["sum"]).all()
    on_pairs = plays.merge(table[["source", "target"]], on=["source", "target"])

    summary = pd.read_csv(os.path.join(report, "tables", "people_summary.csv")).set_index("agent")
    assert summary.loc["people", "pairs"] == 30 and summary.loc["people", "games"] == len(on_pairs)
    assert summary.loc["people", "success"] == pytest.approx(on_pairs["won"].mean())
    assert summary.loc["people", "success_per_pair"] == pytest.approx((merged["sum"] / merged["size"]).mean())
    assert summary.loc["people", "back_per_game"] > 0 and summary.loc["tfidf", "back_per_game"] == 0
    assert 0 <= summary.loc["people", "first_move_hub_share"] <= 1

    pairs = pd.read_csv(os.path.join(report, "tables", "people_paired.csv"))
    tfidf = pq.read_table(str(tmp_path / "tfidf" / "part-000000" / "plays")).to_pandas()
    row = pairs[(pairs["agent"] == "tfidf") & (pairs["optimal_steps"] == "all")].iloc[0]
    agent_won = table.merge(tfidf[["game_id", "outcome"]], on="game_id")
    rate = (merged.set_index("game_id")["sum"] / merged.set_index("game_id")["size"]).loc[agent_won["game_id"]]
    diff = (agent_won["outcome"] == "success").to_numpy(float) - rate.to_numpy()
    assert row["pairs"] == 30 and row["difference"] == pytest.approx(diff.mean())
    assert row["difference_low"] <= row["difference"] <= row["difference_high"]
    assert 0 <= row["cmh_p"] <= 1 and 0 <= row["cmh_p_holm"] <= 1
    lengths = pairs[(pairs["agent"] == "tfidf") & (pairs["optimal_steps"] != "all")]
    assert lengths["pairs"].sum() == 30 and set(lengths["optimal_steps"].astype(int)) == set(table["optimal_steps"])
    with open(os.path.join(report, "report.json"), encoding="utf-8") as f:
        figures = json.load(f)["figures"]
    assert {"figures/people_by_optimal_length.png", "figures/people_progress.png"} <= set(figures)
    assert np.isfinite(summary.loc["random", "success"])
