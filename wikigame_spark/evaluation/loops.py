"""Loop analysis of the runs that allowed revisits (``--allow-revisits``, LLM-WikiRace's protocol).

LLM-WikiRace's central finding is that models get stuck in loops and fail to replan. Per agent and
graph: the share of games that revisit a page, revisits per game, the share ended by ``loop`` (a
deterministic agent back in a state it was in), the longest cycle (most moves between two visits
of one page), and success after the first revisit against success in games without one, with a
one-sided Fisher exact test of "rarer after a revisit". Per-route numbers are plain Python
(:func:`route_loops`); Spark computes them per game and reduces them to per-group counts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType
from scipy.stats import fisher_exact

from wikigame_spark.evaluation import tables
from wikigame_spark.evaluation.figures import _png, _row_name
from wikigame_spark.outcomes import LOOP, SUCCESS
from wikigame_spark.schemas import OUTCOME, ROUTE, require_columns

REVISITS = "revisits"
LONGEST_CYCLE = "longest_cycle"
PER_GAME = StructType(
    [
        StructField(tables.LABEL, StringType(), False),
        StructField(tables.GRAPH, StringType(), False),
        StructField(OUTCOME, StringType(), False),
        StructField(REVISITS, IntegerType(), False),
        StructField(LONGEST_CYCLE, IntegerType(), False),
    ]
)


@dataclass(frozen=True)
class RouteLoops:
    revisits: int  # moves to a page already on the route
    longest_cycle: int  # most moves between two visits of one page; 0 without a revisit
    first_revisit: int  # the step of the first revisit; -1 without one


def route_loops(route: Sequence[int]) -> RouteLoops:
    last: dict[int, int] = {}
    revisits = longest = 0
    first = -1
    for step, page in enumerate(route):
        if page in last:
            revisits += 1
            longest = max(longest, step - last[page])
            first = step if first < 0 else first
        last[page] = step
    return RouteLoops(revisits, longest, first)


def revisit_run_ids(runs: Sequence) -> list[str]:
    """The report's runs (``ReportRun``) whose games allowed revisits."""
    return [r.run_id for r in runs if r.params.get("allow_revisits") == "True"]


def loop_counts(plays: DataFrame) -> pd.DataFrame:
    """Per agent and graph: games, games revisiting a page, revisits, games ended by ``loop``,
    the longest cycle, and successes with and without a revisit (collected)."""
    require_columns(plays, [*tables.GROUP, OUTCOME, ROUTE], "loop_counts(plays)")

    def per_game(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for pdf in batches:
            found = [route_loops(r) for r in pdf[ROUTE]]
            yield pdf[[*tables.GROUP, OUTCOME]].assign(
                **{REVISITS: [f.revisits for f in found], LONGEST_CYCLE: [f.longest_cycle for f in found]}
            )

    games = plays.select(*tables.GROUP, OUTCOME, ROUTE).mapInPandas(per_game, PER_GAME)
    revisited, won = F.col(REVISITS) > 0, F.col(OUTCOME) == F.lit(SUCCESS)
    count = lambda cond: F.sum(cond.cast("long"))  # noqa: E731
    counts = (
        games.groupBy(*tables.GROUP)
        .agg(
            F.count(F.lit(1)).alias(tables.N_GAMES),
            count(revisited).alias("revisiting"),
            F.sum(REVISITS).alias(REVISITS),
            count(F.col(OUTCOME) == F.lit(LOOP)).alias("loops"),
            F.max(LONGEST_CYCLE).alias(LONGEST_CYCLE),
            count(revisited & won).alias("successes_after_revisit"),
            count(~revisited & won).alias("successes_without_revisit"),
        )
        .toPandas()
    )
    return counts.sort_values(tables.GROUP, ignore_index=True)


def _rate(k: pd.Series, n: pd.Series) -> tuple[pd.Series, pd.Series]:
    """k/n ± √(p(1−p)/n), NaN for n = 0 (Table 4's formula)."""
    n = n.astype(float).where(n > 0)
    p = k.astype(float) / n
    return p, np.sqrt(p * (1 - p) / n)


def _rarer_after_revisit(r) -> float:
    """One-sided Fisher exact p-value that success is rarer after a revisit; NaN when a side is empty."""
    after, without = r["revisiting"], r[tables.N_GAMES] - r["revisiting"]
    if after == 0 or without == 0:
        return float("nan")
    ka, kw = r["successes_after_revisit"], r["successes_without_revisit"]
    return float(fisher_exact([[ka, after - ka], [kw, without - kw]], alternative="less").pvalue)


def loop_table(counts: pd.DataFrame) -> pd.DataFrame:
    """Long form: the counts plus the shares, rates and the test, per agent and graph."""
    out = counts.copy()
    games = out[tables.N_GAMES]
    out["revisit_share"], out["revisit_share_sd"] = _rate(out["revisiting"], games)
    out["revisits_per_game"] = out[REVISITS] / games.astype(float)
    out["loop_share"], out["loop_share_sd"] = _rate(out["loops"], games)
    out["success_without_revisit"], out["success_without_revisit_sd"] = _rate(
        out["successes_without_revisit"], games - out["revisiting"]
    )
    out["success_after_revisit"], out["success_after_revisit_sd"] = _rate(
        out["successes_after_revisit"], out["revisiting"]
    )
    out["rarer_after_revisit_p_value"] = [_rarer_after_revisit(r) for _, r in out.iterrows()]
    return out


def loop_display(table: pd.DataFrame, labels: list[str], graphs: list[str]) -> pd.DataFrame:
    pm = tables.format_pm
    rows = []
    for label in labels:
        for graph in graphs:
            match = table[(table[tables.LABEL] == label) & (table[tables.GRAPH] == graph)]
            for _, r in match.iterrows():
                rows.append(
                    {"agent": label}
                    | ({"graph": graph} if len(graphs) > 1 else {})
                    | {
                        "games": r[tables.N_GAMES],
                        "revisit a page": pm(r["revisit_share"], r["revisit_share_sd"]),
                        "revisits per game": tables.rounded(r["revisits_per_game"]),
                        "ended by loop": pm(r["loop_share"], r["loop_share_sd"]),
                        "longest cycle": r[LONGEST_CYCLE],
                        "success, no revisit": pm(r["success_without_revisit"], r["success_without_revisit_sd"]),
                        "success after a revisit": pm(r["success_after_revisit"], r["success_after_revisit_sd"]),
                        "rarer after a revisit (p)": r["rarer_after_revisit_p_value"],
                    }
                )
    return pd.DataFrame(rows)


def loop_figure(table: pd.DataFrame, labels: list[str], graphs: list[str]) -> bytes:
    """Left: the share of games revisiting a page and ended by ``loop``. Right: success rate
    without a revisit and after one (± one standard deviation)."""
    order = {(a, g): i for i, (a, g) in enumerate((a, g) for a in labels for g in graphs)}
    rows = table.assign(_o=[order.get((r[tables.LABEL], r[tables.GRAPH]), len(order)) for _, r in table.iterrows()])
    rows = rows.sort_values("_o")
    names = [_row_name(r[tables.LABEL], r[tables.GRAPH], graphs) for _, r in rows.iterrows()]
    y = np.arange(len(rows))[::-1]
    fig = Figure(figsize=(11, 1.6 + 0.55 * len(rows)))
    left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    h = 0.38
    pairs = (
        (left, ("revisit_share", "revisited a page", "tab:orange"), ("loop_share", "ended by loop", "tab:red")),
        (
            right,
            ("success_without_revisit", "no revisit", "tab:blue"),
            ("success_after_revisit", "after a revisit", "tab:purple"),
        ),
    )
    for ax, *series in pairs:
        for shift, (col, name, color) in zip((h / 2, -h / 2), series):
            values, errors = rows[col].fillna(0), rows[f"{col}_sd"].fillna(0)
            ax.barh(y + shift, values, h, xerr=errors, color=color, capsize=2, label=name)
            for yi, v, e in zip(y + shift, rows[col], values + errors):
                ax.text(min(e + 0.02, 0.9), yi, tables.rounded(v), va="center", fontsize=8)
        ax.set_xlim(0, 1)
        ax.grid(axis="x", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    left.set_yticks(y, names)
    right.set_yticks(y, [""] * len(y))
    left.set_xlabel("Fraction of games (± one standard deviation)")
    left.set_title("Revisits and loops")
    right.set_xlabel("Success rate (± one standard deviation)")
    right.set_title("Success without a revisit and after one")
    return _png(fig)


def metrics(table: pd.DataFrame, key) -> dict[str, float]:
    """Loop numbers for the report's MLflow run; ``key(label, graph)`` names a group."""
    names = ("revisit_share", "revisits_per_game", "loop_share", "success_after_revisit", "success_without_revisit")
    return {f"{name}.{key(r[tables.LABEL], r[tables.GRAPH])}": r[name] for _, r in table.iterrows() for name in names}


def render(doc, table: pd.DataFrame, labels: list[str], graphs: list[str]) -> None:
    """The report's section: a table and a figure (``doc`` is the report's document, which adds
    a protocol column when runs of both protocols are present)."""
    doc.heading("Loops (runs with revisits allowed)")
    doc.para(
        "Revisit: a move to a page already on the route. Longest cycle: most moves between two visits "
        "of one page. `loop`: a deterministic agent (embedding, TF-IDF) back in a state it was in, "
        "which would repeat to the step limit, so such an agent's games end at their first revisit. "
        "Success after a revisit against success without one, with the one-sided Fisher exact "
        "p-value that it is rarer (LLM-WikiRace: models fail to replan)."
    )
    doc.table(loop_display(table, labels, graphs))
    doc.figure(
        "loops",
        loop_figure(table, labels, graphs),
        "Loops · share of games that revisit a page and that end by `loop` (left); success rate of the "
        "games without a revisit and of those after their first revisit (right).",
    )
