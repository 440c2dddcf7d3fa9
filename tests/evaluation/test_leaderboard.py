"""Head-to-head wins, the Bradley–Terry fit and the per-graph success table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from wikigame_spark.evaluation import leaderboard


def plays(label, graph, outcomes, steps):
    return pd.DataFrame(
        {
            "label": label,
            "graph": graph,
            "games_set": graph,
            "game_id": np.arange(len(outcomes)),
            "outcome": ["success" if o else "dead_end" for o in outcomes],
            "steps": steps,
        }
    )


def test_head_to_head_rules():
    a = plays("a", "g", [1, 1, 0, 1, 0], [3, 4, 9, 5, 9])
    b = plays("b", "g", [0, 1, 1, 1, 0], [9, 5, 2, 5, 9])
    assert leaderboard.head_to_head(a, b).tolist() == [1, 1, -1, 0, 0]


def test_two_agents_rating_is_the_odds_of_their_wins_with_the_prior():
    wins = np.array([[0.0, 3.0], [1.0, 0.0]])
    met = np.array([[0.0, 1.0], [1.0, 0.0]])
    r = leaderboard.fit(wins, met)
    assert r[0] - r[1] == pytest.approx(math.log(3.5 / 1.5))
    assert r.sum() == pytest.approx(0.0)


def test_pooled_over_graphs_and_per_graph_success():
    data = pd.concat(
        [
            plays("a", "wiki", [1, 1, 1, 0], [2, 2, 2, 9]),
            plays("b", "wiki", [0, 1, 0, 0], [9, 3, 9, 9]),
            plays("a", "openalex", [1, 1], [2, 2]),
            plays("b", "openalex", [1, 0], [3, 9]),
        ]
    )
    table = leaderboard.leaderboard(data, rounds=200)
    assert table["agent"].tolist() == ["a", "b"]
    a = table.iloc[0]
    assert (a["wins"], a["losses"], a["ties"]) == (5, 0, 1)
    assert a["rating_low"] <= a["rating"] <= a["rating_high"]
    assert a["success wiki"].startswith("0.75 [") and a["success wiki"].endswith("(4)")
    assert "success openalex" in table.columns
