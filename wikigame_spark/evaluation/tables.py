"""The paper's tables from plays: Spark reduces the plays to small per-group counts, pandas
turns them into Table 4 (success rate ± one standard deviation), Table 5 (mean steps above
optimal ± standard error) and the outcome breakdowns of Figures 15–17.

A group is one agent (``label``) on one graph (``graph``); the report labels every play with
the run it came from before it gets here. The formulas are those of
:mod:`wikigame_spark.summary`, applied to counts instead of rows, so a plays table of
any size costs three small aggregations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wikigame_spark.document import is_missing, rounded
from wikigame_spark.outcomes import FORMATTING, NAVIGATION, SERVER_FAILURES, SUCCESS
from wikigame_spark.schemas import AGENT, MODEL, OUTCOME, PRICE, STEPS, require_columns

LABEL = "label"
GRAPH = "graph"
GAMES_SET = "games_set"  # a games manifest's SHA-1: the plays of one set of games are paired
RUN_ID = "run_id"
MAX_STEPS = "max_steps"  # the run's step limit; null when there is none (human games)
GROUP = [LABEL, GRAPH]
EXTRA = "extra_steps"
LIMIT = "limit"  # the largest extra a game could succeed with: max_steps − optimal_steps
N_GAMES = "games"  # the games the server answered: a success rate's denominator
SUCCESSES = "successes"
UNANSWERED = "unanswered"  # games ending in a server failure (no_response), left out of N_GAMES

# The plays' request counts summed per group (answered games).
USAGE = ("queries", "prompt_tokens", "cached_tokens", "completion_tokens", "reasoning_tokens", "invalid_calls")

# What the report adds to PLAYS rows before they get here.
LABELLED_COLUMNS = [LABEL, GRAPH, RUN_ID, MAX_STEPS, AGENT, MODEL, OUTCOME, STEPS, "optimal_steps"]


@dataclass
class Aggregates:
    """Everything the tables, fits and figures need, small enough to collect."""

    groups: pd.DataFrame  # label, graph, runs, games, unanswered, successes, extra_mean, extra_sd, steps_mean,
    # the USAGE sums, calls (moves and invalid calls), priced (games with a price), price_mean
    outcomes: pd.DataFrame  # label, graph, outcome, games
    extra: pd.DataFrame  # label, graph, extra_steps, limit (NaN = no limit), games — successes only
    per_run: pd.DataFrame  # run_id, games


def answered():
    """The games the server answered (a column): every outcome but :data:`SERVER_FAILURES`."""
    return ~F.col(OUTCOME).isin(*SERVER_FAILURES)


def aggregate(plays: DataFrame) -> Aggregates:
    """Per-group counts of labelled plays (three Spark aggregations, collected)."""
    require_columns(plays, LABELLED_COLUMNS, "aggregate(plays)")
    won = F.col(OUTCOME) == F.lit(SUCCESS)
    extra = F.col(STEPS) - F.col("optimal_steps")
    plays = plays.persist()
    try:
        groups = (
            plays.groupBy(*GROUP)
            .agg(
                F.countDistinct(RUN_ID).alias("runs"),
                F.count(F.when(answered(), 1)).alias(N_GAMES),
                F.count(F.when(~answered(), 1)).alias(UNANSWERED),
                F.sum(won.cast("long")).alias(SUCCESSES),
                F.avg(F.when(won, extra)).alias("extra_mean"),
                F.stddev_samp(F.when(won, extra)).alias("extra_sd"),
                F.avg(F.when(answered(), F.col(STEPS))).alias("steps_mean"),
                *[F.sum(F.when(answered(), F.col(c))).alias(c) for c in USAGE],
                F.sum(F.when(answered(), F.col(STEPS) + F.col("invalid_calls"))).alias("calls"),
                F.count(F.when(answered(), F.col(PRICE))).alias("priced"),
                F.avg(F.when(answered(), F.col(PRICE))).alias("price_mean"),
            )
            .toPandas()
        )
        outcomes = plays.groupBy(*GROUP, OUTCOME).agg(F.count(F.lit(1)).alias(N_GAMES)).toPandas()
        counts = (
            plays.filter(won)
            .select(*GROUP, extra.alias(EXTRA), (F.col(MAX_STEPS) - F.col("optimal_steps")).alias(LIMIT))
            .groupBy(*GROUP, EXTRA, LIMIT)
            .agg(F.count(F.lit(1)).alias(N_GAMES))
            .toPandas()
        )
        per_run = plays.groupBy(RUN_ID).agg(F.count(F.lit(1)).alias(N_GAMES)).toPandas()
    finally:
        plays.unpersist()
    counts[LIMIT] = counts[LIMIT].astype(float)
    return Aggregates(
        groups.sort_values(GROUP, ignore_index=True),
        outcomes.sort_values([*GROUP, OUTCOME], ignore_index=True),
        counts.sort_values([*GROUP, EXTRA, LIMIT], ignore_index=True),
        per_run.sort_values(RUN_ID, ignore_index=True),
    )


Z95 = 1.959963984540054  # two-sided 95 %


def wilson_interval(successes, games, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of a binomial proportion: unlike p ± σ it stays inside [0, 1]
    and is not zero-width for 0 or n successes, so few games read as the uncertainty they carry."""
    k = np.asarray(successes, dtype=float)
    n = np.asarray(games, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def success_table(groups: pd.DataFrame) -> pd.DataFrame:
    """Table 4, long form: success rate p ± √(p(1−p)/n) per agent and graph (the paper's σ), and
    the 95 % Wilson interval beside it."""
    out = groups[[*GROUP, N_GAMES, SUCCESSES]].copy()
    n = out[N_GAMES].astype(float)
    p = out[SUCCESSES].astype(float) / n
    out["success_rate"] = p
    out["success_rate_sd"] = np.sqrt(p * (1 - p) / n)
    out["wilson_low"], out["wilson_high"] = wilson_interval(out[SUCCESSES], n)
    return out


def steps_table(groups: pd.DataFrame) -> pd.DataFrame:
    """Table 5, long form: mean steps above optimal of the successful games ± standard error."""
    out = groups[[*GROUP, SUCCESSES]].copy()
    out["steps_above_optimal_mean"] = groups["extra_mean"].astype(float)
    k = out[SUCCESSES].astype(float)
    se = groups["extra_sd"].astype(float) / np.sqrt(k)
    out["steps_above_optimal_se"] = se.where(k > 1)
    return out


def outcome_table(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Figures 15–17, long form: the fraction of each group's games ending with each outcome."""
    out = outcomes.copy()
    totals = out.groupby(GROUP)[N_GAMES].transform("sum")
    out["fraction"] = out[N_GAMES] / totals
    return out


def loss_table(outcomes: pd.DataFrame, labels: list[str], graphs: list[str]) -> pd.DataFrame:
    """Each group's games split into won, lost to formatting (no usable answer), lost to navigation
    (valid moves that never arrived) and other (the server, a person): fractions of its games."""
    share = lambda kinds: outcomes[outcomes[OUTCOME].isin(kinds)].groupby(GROUP)["fraction"].sum()  # noqa: E731
    table = outcomes.groupby(GROUP)[N_GAMES].sum().to_frame()
    for name, kinds in (("success", (SUCCESS,)), ("formatting", FORMATTING), ("navigation", NAVIGATION)):
        table[name] = share(kinds).reindex(table.index, fill_value=0.0)
    table["other"] = (1 - table[["success", "formatting", "navigation"]].sum(axis=1)).clip(lower=0.0)
    keys = [(label, g) for label in labels for g in graphs if (label, g) in table.index]
    return table.reindex(pd.MultiIndex.from_tuples(keys, names=GROUP)).reset_index()


def label_order(success: pd.DataFrame) -> list[str]:
    """Agents from the most to the least successful (mean over the graphs they played)."""
    means = success.groupby(LABEL)["success_rate"].mean().sort_values(ascending=False, kind="stable")
    return list(means.index)


def graph_order(success: pd.DataFrame) -> list[str]:
    """Graphs with the most games first."""
    return list(success.groupby(GRAPH)[N_GAMES].sum().sort_values(ascending=False, kind="stable").index)


def format_pm(value: float, error: float, digits: int = 2) -> str:
    """``0.53 ± 0.05``; ``–`` for no value, no ``±`` for an unknown error."""
    if is_missing(value):
        return "–"
    if is_missing(error):
        return rounded(value, digits)
    return f"{rounded(value, digits)} ± {rounded(error, digits)}"


def format_interval(low: float, high: float, digits: int = 2) -> str:
    """``[0.43, 0.62]``; empty when unknown."""
    return "" if is_missing(low) or is_missing(high) else f"[{rounded(low, digits)}, {rounded(high, digits)}]"


def wide(
    long: pd.DataFrame,
    value: str,
    error: str,
    labels: list[str],
    graphs: list[str],
    digits: int = 2,
    interval: tuple[str, str] | None = None,
):
    """Agents as rows, graphs as columns, cells ``value ± error`` (the paper's table layout),
    followed by ``[low, high]`` when ``interval`` names the columns of one."""

    def cell(r) -> str:
        text = format_pm(r[value], r[error], digits)
        return f"{text} {format_interval(r[interval[0]], r[interval[1]], digits)}".strip() if interval else text

    cells = {(r[LABEL], r[GRAPH]): cell(r) for _, r in long.iterrows()}
    rows = [{"agent": label, **{g: cells.get((label, g), "") for g in graphs}} for label in labels]
    return pd.DataFrame(rows, columns=["agent", *graphs])


def outcome_wide(outcomes: pd.DataFrame, labels: list[str], graphs: list[str]) -> pd.DataFrame:
    """One row per agent and graph, one column per outcome, cells the fraction of games."""
    table = outcomes.pivot_table(index=GROUP, columns=OUTCOME, values="fraction", fill_value=0.0)
    ordered = [SUCCESS] + sorted(c for c in table.columns if c != SUCCESS)
    table = table.reindex(columns=[c for c in ordered if c in table.columns])
    keys = [(label, g) for label in labels for g in graphs if (label, g) in table.index]
    table = table.reindex(pd.MultiIndex.from_tuples(keys, names=GROUP)).reset_index()
    table.columns.name = None
    return table
