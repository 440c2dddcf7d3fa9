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


def test_cochran_mantel_haenszel_on_one_table_is_the_pearson_test_scaled():
    # one stratum: A 7 of 10, B 3 of 12 → the CMH statistic is Pearson's χ² × (n − 1) / n
    odds, p = paired.cochran_mantel_haenszel([7], [10], [3], [12], correction=False)
    chi2 = stats.chi2_contingency([[7, 3], [3, 9]], correction=False)[0] * 21 / 22
    assert p == pytest.approx(stats.chi2.sf(chi2, 1))
    assert odds == pytest.approx(7 * 9 / (3 * 3))


def test_cochran_mantel_haenszel_pools_strata_of_one_agent_and_several_people():
    # pair by pair: the agent's one game, and the people who played the pair
    won_a, games_a = [1, 1, 0, 1, 1], [1, 1, 1, 1, 1]
    won_p, games_p = [0, 1, 1, 2, 0], [2, 3, 2, 4, 1]
    odds, p = paired.cochran_mantel_haenszel(won_a, games_a, won_p, games_p)
    a = np.array(won_a, float)
    n1, n2 = np.ones(5), np.array(games_p, float)
    m1, n = a + np.array(won_p), n1 + n2
    expected, var = n1 * m1 / n, n1 * n2 * m1 * (n - m1) / (n * n * (n - 1))
    chi2 = (abs((a - expected).sum()) - 0.5) ** 2 / var.sum()
    assert p == pytest.approx(stats.chi2.sf(chi2, 1))
    d = n2 - np.array(won_p)
    b, c = n1 - a, np.array(won_p, float)
    assert odds == pytest.approx((a * d / n).sum() / (b * c / n).sum())
    # strata that cannot vary (everyone won) add nothing; no strata → no test
    assert all(math.isnan(v) for v in paired.cochran_mantel_haenszel([1], [1], [2], [2]))
    assert all(math.isnan(v) for v in paired.cochran_mantel_haenszel([], [], [], []))
