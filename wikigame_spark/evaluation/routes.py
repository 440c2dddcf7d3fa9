"""The report's route sections: where moves took the players, paired comparisons, the leaderboard,
and success by popularity stratum — from the plays' distance profiles (pandas).

:func:`route_analysis` reduces the profiled plays (:func:`wikigame_spark.evaluation.profiles.profiled_plays`)
to the tables of :class:`Routes`; :func:`render` writes its sections into the report's document.
The definitions are :mod:`~wikigame_spark.evaluation.progress`'s, :mod:`~wikigame_spark.evaluation.paired`'s
and :mod:`~wikigame_spark.evaluation.leaderboard`'s; ``docs/report.md`` explains each table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from wikigame_spark.evaluation import leaderboard, paired, progress
from wikigame_spark.evaluation.figures import _png, _row_name
from wikigame_spark.evaluation.profiles import SOURCE_STRATUM, TARGET_STRATUM


@dataclass
class Routes:
    """The route sections' tables (each may be empty)."""

    progress: pd.DataFrame = field(default_factory=pd.DataFrame)
    moves: pd.DataFrame = field(default_factory=pd.DataFrame)
    left_path: pd.DataFrame = field(default_factory=pd.DataFrame)
    failures: pd.DataFrame = field(default_factory=pd.DataFrame)
    regret: pd.DataFrame = field(default_factory=pd.DataFrame)
    paired: pd.DataFrame = field(default_factory=pd.DataFrame)
    leaderboard: pd.DataFrame = field(default_factory=pd.DataFrame)
    strata_target: pd.DataFrame = field(default_factory=pd.DataFrame)
    strata_source: pd.DataFrame = field(default_factory=pd.DataFrame)

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table by the name its CSV and JSON entry take."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def route_analysis(profiled: pd.DataFrame, bootstrap: int = paired.BOOTSTRAP) -> Routes:
    """The tables of :class:`Routes` from profiled plays (players only: no plumbing runs)."""
    if profiled.empty:
        return Routes()
    plays = progress.play_table(profiled)
    return Routes(
        progress=progress.progress_table(profiled),
        moves=progress.move_table(plays),
        left_path=progress.left_path_table(plays),
        failures=progress.failure_table(plays),
        regret=progress.regret_table(plays),
        paired=paired.paired_table(plays, rounds=bootstrap),
        leaderboard=leaderboard.leaderboard(plays, rounds=min(bootstrap, leaderboard.BOOTSTRAP)),
        strata_target=progress.stratum_table(plays, TARGET_STRATUM),
        strata_source=progress.stratum_table(plays, SOURCE_STRATUM),
    )


def progress_figure(table: pd.DataFrame, labels: list[str], graphs: list[str]) -> bytes:
    """Mean distance to the target by step, one line per agent (and graph), with the plays still
    on the board at each step (right axis of the lower panel)."""
    fig = Figure(figsize=(9, 6.4))
    top, bottom = fig.add_subplot(2, 1, 1), fig.add_subplot(2, 1, 2, sharex=None)
    i = 0
    for label in labels:
        for graph in graphs:
            rows = table[(table["label"] == label) & (table["graph"] == graph)]
            if rows.empty:
                continue
            style = {"color": f"C{i % 10}", "label": _row_name(label, graph, graphs)}
            top.plot(rows["step"], rows["mean_distance"], marker="o", markersize=3, **style)
            bottom.plot(rows["step"], rows["n"] + rows["unreached"], drawstyle="steps-mid", **style)
            i += 1
    top.set_ylabel("Mean distance to the target")
    top.set_title("Progress: mean shortest-path distance to the target after each step")
    top.grid(alpha=0.3)
    top.set_ylim(bottom=0)
    top.legend(title="agent", fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left")
    bottom.set_xlabel("Step (0 = the start page)")
    bottom.set_ylabel("Plays still going (n)")
    bottom.grid(alpha=0.3)
    fig.tight_layout()
    return _png(fig)


def _rounded(df: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    return df.round(digits) if not df.empty else df


def _renamed(df: pd.DataFrame) -> pd.DataFrame:
    return df.rename(columns={"label": "agent"})


def render(doc, r: Routes, labels: list[str], graphs: list[str]) -> None:
    """The report's route sections (``doc``: the report's document)."""
    doc.heading("Where the moves went (distance to the target at every step)")
    if r.moves.empty:
        doc.para("No distance profiles: no run's graph could be read.")
        return
    doc.para(
        "Every page of every route scored by its exact shortest-path distance to the target. A move is "
        "closer (distance down by one — the only way down, so closer moves are exactly the optimal ones), "
        "same, or farther (a page without a path to the target counts as farther). A play leaves the "
        "shortest paths at its first move that is not closer; on-path plays never did."
    )
    moves = r.moves.drop(columns=["closer_share"])
    doc.table(_renamed(_rounded(moves)))
    doc.figure(
        "progress_distance_by_step",
        progress_figure(r.progress, labels, graphs),
        "Progress · mean distance to the target after each step per agent (top; plays whose page has no "
        "path to the target left out of the mean) and the plays still going at each step (bottom).",
    )
    doc.para("Step at which the plays first left the shortest paths (plays per step; the rest stayed on them).")
    wide = r.left_path.pivot_table(index=["label", "graph"], columns="step", values="plays", fill_value=0)
    wide.columns = [f"step {c}" for c in wide.columns]
    doc.table(_renamed(wide.reset_index()))
    doc.heading("How close the failures got", 3)
    doc.para(
        "Failed games by reason: the closest distance to the target reached on the way (mean, median; "
        "one_link_away = plays that stood one link from it) and the distance at the last page "
        "(last_unreached = ended where no path to the target was left)."
    )
    doc.table(_renamed(_rounded(r.failures)))
    doc.heading("Regret", 3)
    doc.para(
        "Steps taken from the first off-path move on, minus the optimal length of the remaining path "
        "there, plus the distance still left at the end (= steps + last distance − optimal steps; for a "
        "success, its steps above optimal). undefined = plays that ended with no path left."
    )
    doc.table(_renamed(_rounded(r.regret)))
    if not r.paired.empty:
        doc.heading("Paired comparisons on identical games")
        doc.para(
            "Each pair of agents on each games set both played, game by game: both / only A / only B / "
            "neither succeeded; McNemar's exact test on the discordant games; the paired bootstrap 95 % "
            "interval of the difference in success (A − B); steps above optimal on the games both solved, "
            "Wilcoxon signed-rank test. p-values Holm-adjusted over the table's pairs (holm columns)."
        )
        cols = [
            "agent_a", "agent_b", "graph", "games", "both", "only_a", "only_b", "neither", "difference",
            "difference_low", "difference_high", "mcnemar_p", "mcnemar_p_holm", "both_solved",
            "extra_a_mean", "extra_b_mean", "wilcoxon_p", "wilcoxon_p_holm",
        ]  # fmt: skip
        doc.table(_rounded(r.paired[cols]))
    if not r.leaderboard.empty:
        doc.heading("Leaderboard")
        doc.para(
            "Bradley–Terry rating (Elo scale, mean 0) from every game two agents both played: a win is a "
            "success against a failure, or a success in fewer steps; ties left out. "
            + ("One rating pooled over every graph's games. " if len(graphs) > 1 else "")
            + "95 % bootstrap intervals (games resampled per games set). Success per graph with its 95 % "
            "Wilson interval and the games played."
        )
        ratings = [c for c in r.leaderboard.columns if c.startswith("rating")]
        doc.table(r.leaderboard.round({c: 0 for c in ratings}).round(3))
    for table, what in ((r.strata_target, TARGET_STRATUM), (r.strata_source, SOURCE_STRATUM)):
        if table.empty:
            continue
        if what == TARGET_STRATUM:
            doc.heading("Success by popularity (target in-degree, source out-degree)")
            doc.para(
                "Games by the quartile of the graph's nodes their target's in-links (popularity) and their "
                "source's links fall in: success rate ± one standard deviation (games)."
            )
        cells = table.assign(
            cell=[
                f"{p:.2f} ± {sd:.2f} ({n})" if not math.isnan(p) else "–"
                for p, sd, n in zip(table["success_rate"], table["success_rate_sd"], table["games"])
            ]
        )
        doc.table(_renamed(_by_quartile(cells, what)))


def _by_quartile(cells: pd.DataFrame, what: str) -> pd.DataFrame:
    """One column per quartile (Q1…) whatever each graph's degrees, and one naming each graph's
    quartile edges: a stratum reads "Q1 (in-links 0–2)"."""
    parts = cells[what].str.extract(r"^(\S+)(?: \((\S+) (.+)\))?$")
    cells = cells.assign(quartile=parts[0], edges=parts[0] + " " + parts[2].fillna(""))
    wide = cells.pivot_table(index=["label", "graph"], columns="quartile", values="cell", aggfunc="first")
    wide.columns = [str(c) for c in wide.columns]
    wide = wide.reset_index().fillna("–")
    if parts[1].notna().any():
        spans = cells.drop_duplicates(["graph", "quartile"]).sort_values("quartile").groupby("graph")["edges"]
        wide[f"quartiles ({parts[1].dropna().iloc[0]})"] = wide["graph"].map(spans.agg(" · ".join))
    return wide


def metrics(r: Routes, key) -> dict[str, float]:
    """Headline route numbers for the report's MLflow run; ``key(label, graph)`` names a group."""
    out = {}
    for row in r.moves.itertuples(index=False):
        k = key(row.label, row.graph)
        out[f"optimal_move_share.{k}"] = row.optimal_move_share
        out[f"left_path_mean_step.{k}"] = row.left_path_mean_step
    for row in r.regret.itertuples(index=False):
        out[f"regret_mean.{key(row.label, row.graph)}"] = row.regret_mean
    for row in r.leaderboard.itertuples(index=False):
        out[f"bt_rating.{key(row.agent, 'pooled')}"] = row.rating
    return {k: float(v) for k, v in out.items() if v is not None and np.isfinite(v)}
