"""Paired comparisons of agents on identical games (pandas, scipy).

Two agents that played the same games set are compared game by game: how many games both, only
one or neither solved; McNemar's exact test on the discordant games (a two-sided binomial test of
``only A`` against ``only A + only B`` at one half); a paired bootstrap 95 % interval of the
difference in success (games resampled with their pair of outcomes); and the steps above optimal
of the games both solved by the Wilcoxon signed-rank test. With many pairs the p-values are
adjusted by Holm's step-down method, each test's family apart.

Input: one row per play with ``label``, ``graph``, ``games_set`` (what identifies the games: the
games manifest's digest), ``game_id``, ``outcome``, ``steps``, ``optimal_steps``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from scipy import stats

from wikigame_spark.evaluation.tables import GAMES_SET, GRAPH, LABEL
from wikigame_spark.outcomes import SUCCESS

BOOTSTRAP = 2000
SEED = 20260101  # the bootstrap's, so a report is reproducible


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (NaN stays NaN and is not counted)."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.size, math.nan)
    ok = np.flatnonzero(~np.isnan(p))
    order = ok[np.argsort(p[ok], kind="stable")]
    m, running = order.size, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out.tolist()


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value; 1 when no game separates the agents."""
    n = only_a + only_b
    return float(stats.binomtest(only_a, n, 0.5).pvalue) if n else 1.0


def bootstrap_difference(
    a: np.ndarray, b: np.ndarray, rounds: int = BOOTSTRAP, seed: int = SEED
) -> tuple[float, float]:
    """95 % percentile interval of mean(a) − mean(b) with games resampled in pairs."""
    n = a.size
    if n == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    diff = a.astype(np.float64) - b.astype(np.float64)
    means = diff[rng.integers(0, n, size=(rounds, n))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return float(low), float(high)


def cochran_mantel_haenszel(won_a, games_a, won_b, games_b, correction: bool = True) -> tuple[float, float]:
    """The Mantel–Haenszel common odds ratio of winning for A against B over strata (one 2×2 table
    each: A's and B's wins and losses; a stratum can hold many players of a side, e.g. the people
    who played one pair) and the two-sided p-value of the Cochran–Mantel–Haenszel test that it is 1
    (χ² with one degree of freedom, continuity-corrected unless not ``correction``). Strata of fewer
    than two games add nothing."""
    a, n1 = np.asarray(won_a, dtype=np.float64), np.asarray(games_a, dtype=np.float64)
    c, n2 = np.asarray(won_b, dtype=np.float64), np.asarray(games_b, dtype=np.float64)
    b, d, n = n1 - a, n2 - c, n1 + n2
    ok = n > 1
    a, b, c, d, n1, n2, n = a[ok], b[ok], c[ok], d[ok], n1[ok], n2[ok], n[ok]
    wins = a + c
    expected = n1 * wins / n
    variance = n1 * n2 * wins * (n - wins) / (n * n * (n - 1))
    over, under = float(np.sum(a * d / n)), float(np.sum(b * c / n))
    odds = over / under if under else (math.inf if over else math.nan)
    if not variance.sum():
        return odds, math.nan
    deviation = abs(float(np.sum(a - expected))) - (0.5 if correction else 0.0)
    chi2 = max(deviation, 0.0) ** 2 / float(variance.sum())
    return odds, float(stats.chi2.sf(chi2, 1))


def wilcoxon_steps(extra_a: np.ndarray, extra_b: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired steps above optimal; NaN when every
    difference is zero or there are none (nothing to rank)."""
    d = extra_a.astype(np.float64) - extra_b.astype(np.float64)
    if not np.any(d != 0):
        return math.nan
    return float(stats.wilcoxon(extra_a, extra_b, zero_method="wilcox").pvalue)


def compare(a: pd.DataFrame, b: pd.DataFrame, rounds: int = BOOTSTRAP, seed: int = SEED) -> dict:
    """The paired comparison of two agents' plays of one games set (joined on ``game_id``)."""
    cols = ["game_id", "outcome", "steps", "optimal_steps"]
    j = a[cols].merge(b[cols], on="game_id", suffixes=("_a", "_b"))
    wa, wb = (j["outcome_a"] == SUCCESS).to_numpy(), (j["outcome_b"] == SUCCESS).to_numpy()
    both, only_a, only_b = int(np.sum(wa & wb)), int(np.sum(wa & ~wb)), int(np.sum(~wa & wb))
    low, high = bootstrap_difference(wa, wb, rounds, seed)
    solved = j[wa & wb]
    extra_a = (solved["steps_a"] - solved["optimal_steps_a"]).to_numpy()
    extra_b = (solved["steps_b"] - solved["optimal_steps_b"]).to_numpy()
    return {
        "games": len(j),
        "both": both,
        "only_a": only_a,
        "only_b": only_b,
        "neither": len(j) - both - only_a - only_b,
        "success_a": float(wa.mean()) if len(j) else math.nan,
        "success_b": float(wb.mean()) if len(j) else math.nan,
        "difference": float(wa.mean() - wb.mean()) if len(j) else math.nan,
        "difference_low": low,
        "difference_high": high,
        "mcnemar_p": mcnemar_exact(only_a, only_b),
        "both_solved": len(solved),
        "extra_a_mean": float(extra_a.mean()) if extra_a.size else math.nan,
        "extra_b_mean": float(extra_b.mean()) if extra_b.size else math.nan,
        "wilcoxon_p": wilcoxon_steps(extra_a, extra_b),
    }


def paired_table(plays: pd.DataFrame, rounds: int = BOOTSTRAP, seed: int = SEED) -> pd.DataFrame:
    """Every pair of agents on each games set they both played, with Holm-adjusted p-values over
    all the table's pairs (McNemar and Wilcoxon adjusted apart)."""
    rows = []
    for (graph, games_set), g in plays.groupby([GRAPH, GAMES_SET], sort=True):
        by_label = {label: p for label, p in g.groupby(LABEL, sort=True)}
        for la, lb in itertools.combinations(sorted(by_label), 2):
            rows.append(
                {"agent_a": la, "agent_b": lb, GRAPH: graph, GAMES_SET: games_set}
                | compare(by_label[la], by_label[lb], rounds, seed)
            )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["mcnemar_p_holm"] = holm(table["mcnemar_p"].tolist())
    table["wilcoxon_p_holm"] = holm(table["wilcoxon_p"].tolist())
    return table
