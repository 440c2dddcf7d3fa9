"""A game summary from a plays table (pandas, a row per game): the paper's headline numbers.

Success rate p with one standard deviation √(p(1−p)/n) over the games the server answered (a
game ending ``no_response`` says nothing of the player); steps above optimal on successful games,
mean with its standard error; the fraction of games ending with each outcome. Every writer of a
play run (the engine's runs, imported and browser human games) logs it, and the report reads it,
so it sits below them all.
"""

from __future__ import annotations

import math

import pandas as pd

from wikigame_spark.outcomes import SERVER_FAILURES, SUCCESS


def success_rate(outcomes: pd.Series) -> tuple[float, float]:
    """(p, √(p(1−p)/n)) over the answered games (:data:`SERVER_FAILURES` left out); NaN for none."""
    outcomes = outcomes[~outcomes.isin(SERVER_FAILURES)]
    n = len(outcomes)
    if n == 0:
        return math.nan, math.nan
    p = float((outcomes == SUCCESS).mean())
    return p, math.sqrt(p * (1 - p) / n)


def steps_above_optimal(plays: pd.DataFrame) -> pd.Series:
    """Extra steps of the successful games."""
    won = plays[plays["outcome"] == SUCCESS]
    return (won["steps"] - won["optimal_steps"]).astype(int)


def mean_with_se(values: pd.Series) -> tuple[float, float]:
    """(mean, sample standard deviation / √n); NaN where undefined."""
    n = len(values)
    if n == 0:
        return math.nan, math.nan
    se = float(values.std(ddof=1)) / math.sqrt(n) if n > 1 else math.nan
    return float(values.mean()), se


def outcome_fractions(outcomes: pd.Series) -> dict[str, float]:
    n = len(outcomes)
    return {k: v / n for k, v in sorted(outcomes.value_counts().items())} if n else {}


def summarise(plays: pd.DataFrame) -> dict[str, float]:
    """Flat metrics for MLflow: success rate ± SE, extra steps ± SE, outcome fractions, counts."""
    p, p_se = success_rate(plays["outcome"])
    extra = steps_above_optimal(plays)
    mean, mean_se = mean_with_se(extra)
    metrics = {
        "games": float(len(plays)),
        "games_unanswered": float(plays["outcome"].isin(SERVER_FAILURES).sum()),
        "success_rate": p,
        "success_rate_se": p_se,
        "steps_above_optimal_mean": mean,
        "steps_above_optimal_se": mean_se,
        "steps_mean": float(plays["steps"].mean()) if len(plays) else math.nan,
    }
    metrics.update({f"outcome_{k}": v for k, v in outcome_fractions(plays["outcome"]).items()})
    return metrics
