"""Move classes, off-path steps, failures, regret and progress curves from hand-made profiles."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from wikigame_spark.evaluation import progress
from wikigame_spark.graph.profiles import UNREACHED


def frame(rows):
    return pd.DataFrame(rows, columns=["label", "graph", "game_id", "outcome", "steps", "optimal_steps", "distances"])


PLAYS = frame(
    [
        ("a", "g", 0, "success", 3, 3, [3, 2, 1, 0]),  # optimal throughout
        ("a", "g", 1, "success", 5, 3, [3, 3, 2, 3, 1, 0]),  # leaves at step 1 (same), later farther
        ("a", "g", 2, "step_limit", 4, 2, [2, 1, 2, 1, 1]),  # one link away at best, ends 1 away
        ("a", "g", 3, "dead_end", 2, 4, [4, 3, UNREACHED]),  # ends where no path is left
        ("b", "g", 0, "success", 3, 3, [3, 2, 1, 0]),
    ]
)


def test_moves_and_first_off_path():
    assert progress.move_counts([3, 3, 2, 3, 1, 0]) == (3, 1, 1)
    assert progress.move_counts([4, 3, UNREACHED]) == (1, 0, 1)
    assert progress.first_off_path([3, 2, 1, 0]) is None
    assert progress.first_off_path([3, 3, 2, 1]) == 1
    assert progress.first_off_path([4, 3, UNREACHED]) == 2


def test_play_and_move_tables():
    plays = progress.play_table(PLAYS)
    assert plays["regret"].tolist()[:3] == [0.0, 2.0, 3.0]  # 4 + 1 − 2 for the step-limit failure
    assert math.isnan(plays["regret"].iloc[3])
    moves = progress.move_table(plays).set_index("label")
    a = moves.loc["a"]
    assert (a["moves"], a["closer"], a["same"], a["farther"]) == (14, 9, 2, 3)
    assert a["optimal_move_share"] == pytest.approx(9 / 14)
    assert a["on_path_plays"] == 1
    assert a["left_path_mean_step"] == pytest.approx((1 + 2 + 2) / 3)
    left = progress.left_path_table(plays)
    assert left[left["label"] == "a"].set_index("step")["plays"].to_dict() == {1: 1, 2: 2}


def test_failures_by_reason_and_regret():
    plays = progress.play_table(PLAYS)
    fail = progress.failure_table(plays).set_index("outcome")
    assert fail.loc["step_limit", "closest_mean"] == 1 and fail.loc["step_limit", "one_link_away"] == 1
    assert fail.loc["step_limit", "last_mean"] == 1
    assert fail.loc["dead_end", "closest_mean"] == 3 and fail.loc["dead_end", "last_unreached"] == 1
    regret = progress.regret_table(plays).set_index("label")
    assert regret.loc["a", "regret_success_mean"] == pytest.approx(1.0)
    assert regret.loc["a", "regret_failure_mean"] == pytest.approx(3.0)
    assert regret.loc["a", "undefined"] == 1


def test_progress_curve_counts_plays_still_on_the_board():
    curve = progress.progress_table(PLAYS)
    a = curve[curve["label"] == "a"].set_index("step")
    assert a.loc[0, "n"] == 4 and a.loc[0, "mean_distance"] == pytest.approx(3.0)
    assert a.loc[2, "n"] == 3 and a.loc[2, "unreached"] == 1  # the dead end's last page
    assert a.loc[5, "n"] == 1 and a.loc[5, "mean_distance"] == 0


def test_success_by_stratum():
    plays = progress.play_table(PLAYS.assign(stratum=["Q1", "Q1", "Q2", "Q2", "Q1"]))
    table = progress.stratum_table(plays, "stratum").set_index(["label", "stratum"])
    assert table.loc[("a", "Q1"), "success_rate"] == 1.0
    assert table.loc[("a", "Q2"), "games"] == 2 and table.loc[("a", "Q2"), "success_rate"] == 0.0
