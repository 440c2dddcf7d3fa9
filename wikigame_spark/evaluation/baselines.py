"""Each agent against the two baselines that frame it: the oracle and the hub.

The ``oracle`` succeeds in every game in exactly the optimal number of steps, so an agent's
distance from it is its failure rate and its steps above optimal on successes. The ``hub`` follows
the offered link with the highest PageRank (:mod:`wikigame_spark.agents.hub`); the share of an
agent's moves that match the hub's choice at the same step says how much of its play that
heuristic alone explains, and the share that match it without being optimal how much of its play
is hub-seeking that costs it steps. Every move is replayed under its run's rules
(:mod:`wikigame_spark.play.steps`: the offered pages, the optimal ones, whether it was the back
button), with the routes to one target scored together.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from pyspark.sql import SparkSession

from wikigame_spark.agents.hub import hub_choice
from wikigame_spark.graph import mapped
from wikigame_spark.graph.centrality import PAGERANK, ensure_centrality, load_centrality
from wikigame_spark.graph.frame import GraphFramesUnavailable
from wikigame_spark.graph.optimal import Searches
from wikigame_spark.handles import GraphHandle
from wikigame_spark.outcomes import SUCCESS
from wikigame_spark.play.rules import Rules
from wikigame_spark.play.steps import score_routes

log = logging.getLogger(__name__)

GROUP = ["label", "graph"]
COLUMNS = [
    *GROUP, "plays", "oracle_gap", "steps_above_oracle", "moves", "optimal_share", "hub_share",
    "hub_not_optimal_share", "back_moves", "plays_with_back",
]  # fmt: skip


# Per play: its moves, those to an optimal page, those the hub would have made, both, back moves,
# and whether the first move was the hub's.
MOVE_COUNTS = ("moves", "optimal", "hub", "hub_not_optimal", "back", "hub_first")


def _graph_moves(spark: SparkSession, graph_dir: str, plays: pd.DataFrame, rules: dict[str, Rules]) -> pd.DataFrame:
    """:data:`MOVE_COUNTS` of each play of one graph (indexed as ``plays``)."""
    handle = GraphHandle.open(graph_dir, spark)
    graph = mapped.mapped_graph(mapped.ensure_graph(spark, handle))
    scores = load_centrality(ensure_centrality(spark, handle), PAGERANK)
    searches = Searches(graph)
    counts = np.zeros((len(plays), len(MOVE_COUNTS)), dtype=np.int64)
    at = pd.Series(np.arange(len(plays)), index=plays.index)
    for target, group in plays.groupby("target", sort=False):
        routes = [([int(v) for v in r], rules[run]) for r, run in zip(group["route"], group["run_id"])]
        distances = searches.to(int(target), searches.expected_pages(sum(len(r) - 1 for r, _ in routes)))
        for i, steps in zip(at[group.index], score_routes(graph, distances, routes)):
            for k, s in enumerate(steps):
                hub = hub_choice(s.offered, scores) == s.move
                counts[i] += (1, s.is_optimal, hub, hub and not s.is_optimal, s.back, hub and k == 0)
    return pd.DataFrame(counts, columns=list(MOVE_COUNTS), index=plays.index)


def play_moves(spark: SparkSession, profiled: pd.DataFrame, runs: Sequence) -> tuple[pd.DataFrame, list[str]]:
    """The report's profiled plays with each one's :data:`MOVE_COUNTS` (every move replayed under its
    run's rules), those of graphs that cannot be opened left out; and notes on what was left out."""
    if profiled.empty:
        return profiled.assign(**{c: pd.Series(dtype="int64") for c in MOVE_COUNTS}), []
    rules = {r.run_id: Rules.of_params(r.params) for r in runs}
    graph_of = {r.run_id: (r.params.get("graph") or "").rstrip("/") for r in runs}
    parts, notes = [], []
    for graph_dir, group in profiled.groupby(profiled["run_id"].map(graph_of), sort=True):
        try:
            parts.append(_graph_moves(spark, graph_dir, group, rules))
        except (FileNotFoundError, GraphFramesUnavailable) as e:  # the rest are still reported
            notes.append(f"moves against the hub: graph {graph_dir} left out ({str(e).splitlines()[0]})")
    if not parts:
        return profiled.iloc[:0].assign(**{c: pd.Series(dtype="int64") for c in MOVE_COUNTS}), notes
    counts = pd.concat(parts)
    return profiled.loc[counts.index].join(counts), notes


def summary(moves: pd.DataFrame) -> dict:
    """One group's plays (:func:`play_moves`' rows) as the baselines table's numbers."""
    won = moves[moves["outcome"] == SUCCESS]
    n = int(moves["moves"].sum())
    share = lambda col: float(moves[col].sum()) / n if n else math.nan  # noqa: E731
    return {
        "plays": len(moves),
        "oracle_gap": 1.0 - len(won) / len(moves) if len(moves) else math.nan,
        "steps_above_oracle": float((won["steps"] - won["optimal_steps"]).mean()) if len(won) else math.nan,
        "moves": n,
        "optimal_share": share("optimal"),
        "hub_share": share("hub"),
        "hub_not_optimal_share": share("hub_not_optimal"),
        "back_moves": int(moves["back"].sum()),
        "plays_with_back": int((moves["back"] > 0).sum()),
    }


def baseline_table(moves: pd.DataFrame) -> pd.DataFrame:
    """Per agent and graph: its gap to the oracle and its moves against the optimal and the hub's
    (``moves``: :func:`play_moves`' plays)."""
    rows = [{"label": label, "graph": graph, **summary(g)} for (label, graph), g in moves.groupby(GROUP, sort=False)]
    return pd.DataFrame(rows, columns=COLUMNS)


def render(doc, table: pd.DataFrame) -> None:
    """The report's section on the two baselines (``doc``: the report's document)."""
    doc.heading("Against the oracle and the hub")
    doc.para(
        "The oracle always takes an optimal link: it wins every game in exactly the optimal number of "
        "steps, so an agent's gap to it is its failure rate (oracle_gap) and its mean steps above optimal "
        "on the games it won (steps_above_oracle). Every move of every play replayed under its run's rules: "
        "optimal_share = moves to an offered page nearest the target; hub_share = moves the hub (the "
        "offered link with the highest PageRank) would have made at the same step — how much of the play "
        "that heuristic alone explains; hub_not_optimal_share = hub moves that were not optimal; "
        "back_moves = moves by the back button (runs that allowed it)."
    )
    doc.table(table.rename(columns={"label": "agent"}).round(3))
