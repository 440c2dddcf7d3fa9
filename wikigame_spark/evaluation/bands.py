"""Success and steps above optimal per difficulty band of optimal steps, for every agent and graph.

LLM-WikiRace reports by band (easy 3–4, medium 5–6, hard 7–8 optimal steps) while the paper's own
games mostly fall in 2–4, so a band table is how the two studies' numbers meet. Spark reduces the
labelled plays (see :mod:`wikigame_spark.evaluation.evaluate`) to per-band counts; the rates and
their errors are Table 4's and Table 5's (:mod:`wikigame_spark.evaluation.tables`) per band.
Games in no band form the band ``other``, so none is lost.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wikigame_spark.config import ConfigError
from wikigame_spark.evaluation import tables
from wikigame_spark.evaluation.figures import _png, _row_name
from wikigame_spark.outcomes import SUCCESS
from wikigame_spark.schemas import OUTCOME, STEPS, require_columns

BAND = "band"
OTHER = "other"
COLUMNS = [*tables.GROUP, BAND, tables.N_GAMES, tables.SUCCESSES]


def parse_bands(text: str, key: str) -> tuple[tuple[int, int], ...]:
    """Optimal-length bands like ``3-4,5-6,7-8`` (or ``5``) as sorted inclusive ``(low, high)``
    pairs; empty for an empty text. ``key`` names the setting in errors."""
    if not text.strip():
        return ()
    bands = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        try:
            band = (int(lo), int(hi if sep else lo))
        except ValueError as e:
            raise ConfigError(f"{key}: {part.strip()!r} is not a band like 3-4 or 5 (in {text!r})") from e
        if not 1 <= band[0] <= band[1]:
            raise ConfigError(f"{key}: band {part.strip()!r} must satisfy 1 <= low <= high")
        bands.append(band)
    bands.sort()
    for i in range(1, len(bands)):
        if bands[i][0] <= bands[i - 1][1]:
            raise ConfigError(f"{key}: bands overlap in {text!r}")
    return tuple(bands)


def band_name(band: tuple[int, int]) -> str:
    lo, hi = band
    return str(lo) if lo == hi else f"{lo}–{hi}"


def band_of(bands: tuple[tuple[int, int], ...]) -> Column:
    """The band name of each play's optimal steps; ``other`` outside every band."""
    steps = F.col("optimal_steps")
    out = F.lit(OTHER)
    for lo, hi in reversed(bands):
        out = F.when(steps.between(lo, hi), F.lit(band_name((lo, hi)))).otherwise(out)
    return out


def band_counts(plays: DataFrame, bands: tuple[tuple[int, int], ...]) -> pd.DataFrame:
    """Per agent, graph and band: games, successes, and the mean and sample deviation of the
    successful games' steps above optimal (one Spark aggregation, collected)."""
    require_columns(plays, tables.LABELLED_COLUMNS, "band_counts(plays)")
    won = F.col(OUTCOME) == F.lit(SUCCESS)
    extra = F.when(won, F.col(STEPS) - F.col("optimal_steps"))
    counts = (
        plays.groupBy(*tables.GROUP, band_of(bands).alias(BAND))
        .agg(
            F.count(F.lit(1)).alias(tables.N_GAMES),
            F.sum(won.cast("long")).alias(tables.SUCCESSES),
            F.avg(extra).alias("extra_mean"),
            F.stddev_samp(extra).alias("extra_sd"),
        )
        .toPandas()
    )
    order = {name: i for i, name in enumerate([band_name(b) for b in bands] + [OTHER])}
    counts = counts.assign(_order=counts[BAND].map(order)).sort_values([*tables.GROUP, "_order"])
    return counts.drop(columns="_order").reset_index(drop=True)


def band_table(counts: pd.DataFrame) -> pd.DataFrame:
    """Long form, one row per agent, graph and band: Table 4's success rate ± one standard
    deviation and Table 5's mean steps above optimal ± standard error, within the band."""
    success = tables.success_table(counts).drop(columns=[*tables.GROUP, tables.N_GAMES, tables.SUCCESSES])
    steps = tables.steps_table(counts).drop(columns=[*tables.GROUP, tables.SUCCESSES])
    return pd.concat([counts[COLUMNS], success, steps], axis=1)


def band_order(table: pd.DataFrame) -> list[str]:
    """Bands in the order of the table (as configured, ``other`` last), present ones only."""
    return list(dict.fromkeys(table[BAND]))


def success_cell(r) -> str:
    """``p ± σ [Wilson 95 %] (games)``, as Table 4 with the band's games."""
    interval = tables.format_interval(r["wilson_low"], r["wilson_high"])
    return f"{tables.format_pm(r['success_rate'], r['success_rate_sd'])} {interval} ({r[tables.N_GAMES]})"


def steps_cell(r) -> str:
    """``mean ± SE (successful games)``, as Table 5."""
    pm = tables.format_pm(r["steps_above_optimal_mean"], r["steps_above_optimal_se"], 1)
    return f"{pm} ({r[tables.SUCCESSES]})"


def band_wide(table: pd.DataFrame, labels: list[str], graphs: list[str], cell) -> pd.DataFrame:
    """Agents (and graphs) as rows, bands as columns, each cell ``cell(row)`` of the band table."""
    bands = band_order(table)
    cells = {(r[tables.LABEL], r[tables.GRAPH], r[BAND]): cell(r) for _, r in table.iterrows()}
    rows = []
    for label in labels:
        for graph in graphs:
            if any((label, graph, b) in cells for b in bands):
                row = {"agent": label} | ({"graph": graph} if len(graphs) > 1 else {})
                rows.append(row | {b: cells.get((label, graph, b), "") for b in bands})
    return pd.DataFrame(rows)


def band_figure(table: pd.DataFrame, labels: list[str], graphs: list[str]) -> bytes:
    """Success rate (± one standard deviation) and mean steps above optimal of the successful
    games (± standard error) against the band, one line per agent (and graph)."""
    bands = band_order(table)
    xs = np.arange(len(bands))
    fig = Figure(figsize=(11, 4.6))
    left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    i = 0
    for label in labels:
        for graph in graphs:
            rows = table[(table[tables.LABEL] == label) & (table[tables.GRAPH] == graph)]
            if rows.empty:
                continue
            at = rows[BAND].map({b: k for k, b in enumerate(bands)}).to_numpy()
            offset = 0.06 * (i % 5 - 2)  # error bars of agents at one band side by side
            style = {"marker": "o", "capsize": 3, "color": f"C{i % 10}", "label": _row_name(label, graph, graphs)}
            left.errorbar(at + offset, rows["success_rate"], yerr=rows["success_rate_sd"].fillna(0), **style)
            right.errorbar(
                at + offset, rows["steps_above_optimal_mean"], yerr=rows["steps_above_optimal_se"].fillna(0), **style
            )
            i += 1
    for ax in (left, right):
        ax.set_xticks(xs, bands)
        ax.set_xlabel("Optimal steps (difficulty band)")
        ax.grid(alpha=0.3)
    left.set_ylim(-0.02, 1.02)  # zeros stay visible
    left.set_ylabel("Success rate (± one standard deviation)")
    left.set_title("Success rate by difficulty band")
    top = table["steps_above_optimal_mean"] + table["steps_above_optimal_se"].fillna(0)
    high = max(1.0, float(top.max()) * 1.15) if top.notna().any() else 1.0
    right.set_ylim(-0.02 * high, high)
    right.set_ylabel("Steps above optimal, successful games (± SE)")
    right.set_title("Steps above optimal by difficulty band")
    right.legend(title="agent", fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left")
    return _png(fig)


def metrics(table: pd.DataFrame, key) -> dict[str, float]:
    """Per-band success rates for the report's MLflow run; ``key(label, graph)`` names a group."""
    return {
        f"band_success_rate.{key(r[tables.LABEL], r[tables.GRAPH])}.{r[BAND].replace('–', '-')}": r["success_rate"]
        for _, r in table.iterrows()
    }


def render(doc, table: pd.DataFrame, labels: list[str], graphs: list[str]) -> None:
    """The report's section: two tables and a figure (``doc`` is the report's document, which adds
    a protocol column when runs of both protocols are present)."""
    doc.heading("Difficulty bands")
    doc.para(
        "Games grouped by their optimal steps (LLM-WikiRace: easy 3–4, medium 5–6, hard 7–8; "
        f"`{OTHER}`: in no band; the paper's own games fall mostly in 2–4)."
    )
    doc.para(
        "Success rate per band ± one standard deviation √(p(1−p)/n), in brackets the 95 % Wilson interval, "
        "in parentheses the games in the band."
    )
    doc.table(band_wide(table, labels, graphs, success_cell))
    doc.para("Steps above optimal per band, successful games only: mean ± standard error (successful games).")
    doc.table(band_wide(table, labels, graphs, steps_cell))
    doc.figure(
        "bands_success_steps",
        band_figure(table, labels, graphs),
        "Difficulty bands · success rate (left) and mean steps above optimal of the successful games "
        "(right) per band of optimal steps, one line per agent.",
    )
