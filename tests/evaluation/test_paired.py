"""Paired comparisons: counts, McNemar, bootstrap, Wilcoxon and Holm against direct computations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from wikigame_spark.evaluation import paired


def plays(label, outcomes, steps, games_set="s"):
    n = len(outcomes)
    return pd.DataFrame(
        {
            "label": label,
            "graph": "g",
            "games_set": games_set,
            "game_id": np.arange(n),
            "outcome": ["success" if o else "step_limit" for o in outcomes],
            "steps": steps,
            "optimal_steps": [2] * n,
        }
    )


def test_counts_and_tests_of_one_pair():
    a = plays("a", [1, 1, 1, 1, 1, 1, 1, 1, 0, 0], [2, 3, 4, 2, 5, 3, 2, 6, 30, 30])
    b = plays("b", [1, 0, 0, 0, 0, 0, 1, 1, 1, 0], [3, 30, 30, 30, 30, 30, 4, 2, 7, 30])
    r = paired.compare(a, b)
    assert (r["both"], r["only_a"], r["only_b"], r["neither"]) == (3, 5, 1, 1)
    assert r["mcnemar_p"] == pytest.approx(2 * sum(math.comb(6, k) for k in (0, 1)) / 2**6)
    assert r["difference"] == pytest.approx(0.8 - 0.4)
    assert r["difference_low"] <= r["difference"] <= r["difference_high"]
    # games both solved: 0, 6, 7 → a's extra 0, 0, 4; b's 1, 2, 0
    assert r["both_solved"] == 3
    assert r["wilcoxon_p"] == pytest.approx(stats.wilcoxon([0, 0, 4], [1, 2, 0]).pvalue)


def test_bootstrap_is_paired():
    x = np.array([1, 0, 1, 1, 0, 1], dtype=bool)
    low, high = paired.bootstrap_difference(x, x)
    assert low == high == 0.0  # the same outcomes game by game: no difference in any resample


def test_holm_matches_the_step_down_rule():
    assert paired.holm([0.01, 0.04, 0.03, math.nan]) == pytest.approx([0.03, 0.06, 0.06, math.nan], nan_ok=True)


def test_table_pairs_only_within_a_games_set():
    table = paired.paired_table(
        pd.concat([plays("a", [1, 0], [2, 9]), plays("b", [0, 1], [9, 3]), plays("c", [1, 1], [2, 2], games_set="t")])
    )
    assert table[["agent_a", "agent_b"]].values.tolist() == [["a", "b"]]
    assert table["mcnemar_p_holm"].tolist() == [1.0]
