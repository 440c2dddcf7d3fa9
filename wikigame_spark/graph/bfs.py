"""Distributed exact distances: bidirectional BFS for many (source, target) pairs at once, on DataFrames.

Each pass is one round of message passing, the pattern of GraphFrames' ``aggregateMessages`` and
Pregel: the frontier rows ``(pair, side, node)`` are joined with the adjacency table, the
messages are grouped by receiving node, and nodes the pair's search has already seen are dropped.
Every pair advances one side per pass: forward from its source along out-links, or backward from
its target along in-links, whichever frontier has fewer links to follow (a hub's thousands of
in-links are never expanded when the other side is cheaper). The first pass in which a pair's two
searches touch gives its exact distance (see :mod:`wikigame_spark.graph.csr` for why); a side that
runs out of new nodes first means there is no path.

Only per-pair results (a pair id and a distance) come back to the driver; the edge list stays in
the cluster.
"""

from __future__ import annotations

import logging

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wikigame_spark.graph.csr import NO_PATH
from wikigame_spark.graph.frame import IN_DEGREE, OUT_DEGREE
from wikigame_spark.schemas import DST, ID, SOURCE, SRC, TARGET, require_columns

log = logging.getLogger(__name__)

PAIR = "pair"
DISTANCE = "distance"
_SIDE, _NODE, _DIST, _DEG, _NEXT = "side", "node", "dist", "deg", "next"
FORWARD, BACKWARD = 0, 1


def adjacency(edges: DataFrame, degrees: DataFrame) -> DataFrame:
    """Both directions of every edge, each with the degree the search will pay to expand ``next``.

    ``side`` 0 rows are out-links (``node → next``, ``deg`` = out-degree of ``next``); side 1 rows
    are in-links walked backwards (``deg`` = in-degree of ``next``). Persisted by the caller.
    """
    require_columns(edges, [SRC, DST], "adjacency(edges)")
    require_columns(degrees, [ID, IN_DEGREE, OUT_DEGREE], "adjacency(degrees)")
    out_deg = degrees.select(F.col(ID).alias(DST), F.col(OUT_DEGREE).alias(_DEG))
    in_deg = degrees.select(F.col(ID).alias(SRC), F.col(IN_DEGREE).alias(_DEG))
    forward = edges.join(out_deg, DST).select(
        F.lit(FORWARD).alias(_SIDE), F.col(SRC).alias(_NODE), F.col(DST).alias(_NEXT), _DEG
    )
    backward = edges.join(in_deg, SRC).select(
        F.lit(BACKWARD).alias(_SIDE), F.col(DST).alias(_NODE), F.col(SRC).alias(_NEXT), _DEG
    )
    return forward.unionByName(backward)


def bidirectional_distances(
    pairs: DataFrame, adj: DataFrame, degrees: DataFrame, batch_pairs: int = 2000
) -> dict[int, int]:
    """Exact shortest path lengths for ``pairs`` (``pair, source, target``; source ≠ target).

    Returns ``{pair: distance}``, with ``NO_PATH`` for unreachable pairs. ``adj`` comes from
    :func:`adjacency`; pairs are searched ``batch_pairs`` at a time, in ``pair`` order.
    """
    require_columns(pairs, [PAIR, SOURCE, TARGET], "bidirectional_distances(pairs)")
    numbered = [r[0] for r in pairs.select(PAIR).orderBy(PAIR).collect()]
    results: dict[int, int] = {}
    for start in range(0, len(numbered), batch_pairs):
        chunk = numbered[start : start + batch_pairs]
        batch = pairs.filter(F.col(PAIR).between(chunk[0], chunk[-1]))
        results.update(_search(batch, adj, degrees))
        log.info("bfs: %d of %d pairs searched", min(start + batch_pairs, len(numbered)), len(numbered))
    missing = set(numbered) - results.keys()
    if missing:
        raise RuntimeError(f"bfs: {len(missing)} pairs left without a result, e.g. pair {min(missing)}")
    return results


def _search(pairs: DataFrame, adj: DataFrame, degrees: DataFrame) -> dict[int, int]:
    spark = pairs.sparkSession
    out_deg = degrees.select(F.col(ID).alias(_NODE), F.col(OUT_DEGREE).alias(_DEG))
    in_deg = degrees.select(F.col(ID).alias(_NODE), F.col(IN_DEGREE).alias(_DEG))
    # Local checkpoints cut each pass's lineage, so pass k's plan is as small as pass 1's.
    frontier = (
        pairs.select(PAIR, F.lit(FORWARD).alias(_SIDE), F.col(SOURCE).alias(_NODE))
        .join(out_deg, _NODE)
        .unionByName(pairs.select(PAIR, F.lit(BACKWARD).alias(_SIDE), F.col(TARGET).alias(_NODE)).join(in_deg, _NODE))
        .select(PAIR, _SIDE, _NODE, F.lit(0).alias(_DIST), _DEG)
        .localCheckpoint()
    )
    visited = frontier.select(PAIR, _SIDE, _NODE, _DIST)
    done: dict[int, int] = {}
    passes = 0
    while True:
        cost = frontier.groupBy(PAIR, _SIDE).agg(F.sum(_DEG).alias("cost"))
        choice = cost.groupBy(PAIR).agg(F.min(F.struct("cost", _SIDE)).alias("c"))
        choice = choice.select(PAIR, F.col(f"c.{_SIDE}").alias(_SIDE)).localCheckpoint()
        if choice.isEmpty():
            break
        passes += 1
        messages = frontier.drop(_DEG).join(choice, [PAIR, _SIDE]).join(adj, [_SIDE, _NODE])
        fresh = (
            messages.select(PAIR, _SIDE, F.col(_NEXT).alias(_NODE), (F.col(_DIST) + 1).alias(_DIST), _DEG)
            .dropDuplicates([PAIR, _SIDE, _NODE])
            .join(visited, [PAIR, _SIDE, _NODE], "left_anti")
            .localCheckpoint()
        )
        other = visited.select(PAIR, (1 - F.col(_SIDE)).alias(_SIDE), _NODE, F.col(_DIST).alias("_other"))
        met = (
            fresh.join(other, [PAIR, _SIDE, _NODE])
            .groupBy(PAIR)
            .agg(F.min(F.col(_DIST) + F.col("_other")).alias(DISTANCE))
        )
        exhausted = choice.join(fresh.select(PAIR).distinct(), PAIR, "left_anti").select(
            PAIR, F.lit(NO_PATH).alias(DISTANCE)
        )
        finished = {r[PAIR]: r[DISTANCE] for r in met.unionByName(exhausted).collect()}
        done.update(finished)
        closed = spark.createDataFrame([(p,) for p in finished] or [(-1,)], f"{PAIR} long")
        visited = (
            visited.unionByName(fresh.select(PAIR, _SIDE, _NODE, _DIST)).join(closed, PAIR, "left_anti").localCheckpoint()
        )
        frontier = (
            frontier.join(choice, [PAIR, _SIDE], "left_anti")
            .unionByName(fresh)
            .join(closed, PAIR, "left_anti")
            .localCheckpoint()
        )
        log.debug("bfs pass %d: %d pairs finished", passes, len(finished))
    log.info("bfs: %d pairs in %d passes", len(done), passes)
    return done
