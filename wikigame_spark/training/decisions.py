"""Decision records: one row per step of a route, with every offered page's exact distance.

The routes are an expert's (a shortest path for each game, :func:`~wikigame_spark.graph.optimal.descend`,
ties broken by the seed) and, for any play run, each play's own. The routes are spread over the
executors by target: a task maps the graph's files (:mod:`wikigame_spark.graph.mapped`), builds
its searches once per worker process (:class:`~wikigame_spark.graph.optimal.Searches`), and finds
the expert's routes and scores all the routes to one target with one set of distances: a whole
backward search when the routes ask about many pages, else a pair search per page
(:func:`~wikigame_spark.play.steps.score_routes`). Nothing but the routes travels from the
driver, and nothing but the records comes back.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from wikigame_spark.graph import mapped
from wikigame_spark.graph.optimal import Searches, descend
from wikigame_spark.play.rules import Rules
from wikigame_spark.play.steps import score_routes

EXPERT = "expert"  # the player of the expert's routes

# One row per route to record: an expert's (route null: found by the stage) or a play's.
ROUTES = StructType(
    [
        StructField("game_id", LongType(), False),
        StructField("source", LongType(), False),
        StructField("target", LongType(), False),
        StructField("optimal_steps", IntegerType(), False),
        StructField("player", StringType(), False),
        StructField("run_id", StringType(), True),
        StructField("outcome", StringType(), True),
        StructField("route", ArrayType(LongType(), False), True),
        StructField("allow_revisits", BooleanType(), False),
        StructField("allow_back", BooleanType(), False),
    ]
)

# One row per step. Distances are to the target along out-links (-1: no path); ``optimal`` are the
# offered pages at the least distance; reward and progress as play/steps.py defines them.
DECISIONS = StructType(
    [
        StructField("game_id", LongType(), False),
        StructField("player", StringType(), False),
        StructField("run_id", StringType(), True),
        StructField("outcome", StringType(), True),
        StructField("step", IntegerType(), False),
        StructField("optimal_steps", IntegerType(), False),
        StructField("target", LongType(), False),
        StructField("target_title", StringType(), False),
        StructField("target_summary", StringType(), False),
        StructField("current", LongType(), False),
        StructField("current_title", StringType(), False),
        StructField("current_distance", IntegerType(), False),
        StructField("offered", ArrayType(LongType(), False), False),
        StructField("offered_titles", ArrayType(StringType(), False), False),
        StructField("offered_distances", ArrayType(IntegerType(), False), False),
        StructField("optimal", ArrayType(LongType(), False), False),
        StructField("best_distance", IntegerType(), False),
        StructField("move", LongType(), False),
        StructField("move_title", StringType(), False),
        StructField("move_distance", IntegerType(), False),
        StructField("back", BooleanType(), False),
        StructField("optimal_move", BooleanType(), False),
        StructField("reward", DoubleType(), False),
        StructField("progress", IntegerType(), True),
    ]
)


@functools.lru_cache(maxsize=1)
def _searches(files: str) -> Searches:
    return Searches(mapped.mapped_graph(files))


def _records(pdf: pd.DataFrame, files: str, seed: int) -> Iterator[dict]:
    graph = mapped.mapped_graph(files)
    searches = _searches(files)
    titles = graph.titles
    for target, group in pdf.groupby("target", sort=True):
        steps = sum(len(r) - 1 if r is not None else int(k) for r, k in zip(group["route"], group["optimal_steps"]))
        distances = searches.to(int(target), searches.expected_pages(steps))
        rows, routes = [], []
        for row in group.itertuples(index=False):
            route = row.route
            if route is None:
                route = descend(graph, distances, int(row.source), seed, int(row.game_id))
                if route is None:
                    continue  # an expert never meets an unreachable game: sampled games are reachable
            rows.append(row)
            routes.append(([int(v) for v in route], Rules(bool(row.allow_revisits), bool(row.allow_back))))
        target_title, target_summary = titles[int(target)], graph.summaries[int(target)] or ""
        for row, scored in zip(rows, score_routes(graph, distances, routes)):
            for s in scored:
                yield {
                    "game_id": int(row.game_id),
                    "player": row.player,
                    "run_id": row.run_id,
                    "outcome": row.outcome,
                    "step": s.step,
                    "optimal_steps": int(row.optimal_steps),
                    "target": int(target),
                    "target_title": target_title,
                    "target_summary": target_summary,
                    "current": s.current,
                    "current_title": titles[s.current],
                    "current_distance": s.current_distance,
                    "offered": s.offered.tolist(),
                    "offered_titles": [titles[int(v)] for v in s.offered],
                    "offered_distances": s.offered_distances.tolist(),
                    "optimal": s.optimal.tolist(),
                    "best_distance": s.best_distance,
                    "move": s.move,
                    "move_title": titles[s.move],
                    "move_distance": s.move_distance,
                    "back": s.back,
                    "optimal_move": s.is_optimal,
                    "reward": s.reward,
                    "progress": s.progress,
                }


def decision_stage(routes: DataFrame, files: str, seed: int, partitions: int) -> DataFrame:
    """ROUTES → DECISIONS on the mapped graph ``files``, the routes of one target in one task."""

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for pdf in batches:
            out = pd.DataFrame(list(_records(pdf, files, seed)), columns=DECISIONS.fieldNames())
            out["progress"] = out["progress"].astype("Int32")  # nullable: None stays null, not NaN
            yield out

    return (
        routes.select(*ROUTES.fieldNames())
        .repartition(partitions, "target")
        .sortWithinPartitions("target")
        .mapInPandas(run, DECISIONS)
    )
