"""The reference for the ``graphframes`` method's search: the hand-written multi-pair DataFrame BFS.

It was the method's search until GraphFrames' Pregel replaced it (``wikigame_spark.graph.bfs``,
commit a3983f6 has it in place); ``bench_sampling.py --methods searches`` times both on the same
pairs, each in its own process, and checks both against the local method's distances.

Each pass is one round of message passing: the frontier rows ``(pair, side, node)`` are joined with
the adjacency table, the messages are grouped by receiving node, and nodes the pair's search has
already seen are dropped. Each pass a pair advances the side whose frontier has fewer links to
follow, or both sides while both are small. The first pass in which a pair's two searches touch
gives its exact distance, the smallest sum of the two depths over the nodes they share; a side that
runs out of new nodes first means there is no path. A pass is two Spark jobs, both with
checkpointed inputs, so the plan does not grow from pass to pass.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from wikigame_spark.graph.frame import IN_DEGREE, OUT_DEGREE, degrees
from wikigame_spark.graph.reach import NO_PATH
from wikigame_spark.schemas import DST, ID, SOURCE, SRC, TARGET, require_columns

log = logging.getLogger(__name__)

PAIR = "pair"
DISTANCE = "distance"
_SIDE, _NODE, _DIST, _DEG, _NEXT = "side", "node", "dist", "deg", "next"
_FRONT, _EXPAND = "front", "expand"
FORWARD, BACKWARD, _RESULT = 0, 1, -1
# Below this many links on each side a pair advances both frontiers in one pass.
BOTH_SIDES_MAX_LINKS = 10_000


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


class DataFrameSearch:
    """Exact distances between nodes of one graph (``vertices``: ``id``; ``edges``: ``src, dst``)."""

    def __init__(self, vertices: DataFrame, edges: DataFrame, batch_pairs: int) -> None:
        level = StorageLevel.MEMORY_AND_DISK
        self.degrees = degrees(vertices, edges).persist(level)
        self.adj = adjacency(edges, self.degrees).persist(level)
        self.batch_pairs = batch_pairs

    def distances(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """int32 shortest path lengths (``NO_PATH`` if none) for pairs of distinct nodes."""
        table = pd.DataFrame({PAIR: np.arange(len(sources), dtype=np.int64), SOURCE: sources, TARGET: targets})
        pairs = self.adj.sparkSession.createDataFrame(table, f"{PAIR} long, {SOURCE} long, {TARGET} long")
        found = bidirectional_distances(pairs, self.adj, self.degrees, self.batch_pairs)
        return np.array([found[i] for i in range(len(sources))], dtype=np.int32)


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
    """One batch of pairs; each pass is two Spark jobs (new nodes; new state with finished pairs)."""
    out_deg = degrees.select(F.col(ID).alias(_NODE), F.col(OUT_DEGREE).alias(_DEG))
    in_deg = degrees.select(F.col(ID).alias(_NODE), F.col(IN_DEGREE).alias(_DEG))
    # state: every node a pair's search has seen, per side, with its distance from that end;
    # _FRONT marks the current frontiers and _EXPAND those that advance in the next pass.
    state = _plan(
        pairs.select(PAIR, F.lit(FORWARD).alias(_SIDE), F.col(SOURCE).alias(_NODE))
        .join(out_deg, _NODE)
        .unionByName(pairs.select(PAIR, F.lit(BACKWARD).alias(_SIDE), F.col(TARGET).alias(_NODE)).join(in_deg, _NODE))
        .select(PAIR, _SIDE, _NODE, F.lit(0).alias(_DIST), _DEG, F.lit(True).alias(_FRONT))
    ).localCheckpoint()
    active = {r[PAIR] for r in pairs.select(PAIR).collect()}
    done: dict[int, int] = {}
    passes = 0
    while active:
        passes += 1
        state, finished = _advance(state, adj)
        done.update(finished)
        active -= finished.keys()
        log.debug("bfs pass %d: %d pairs finished, %d searching", passes, len(finished), len(active))
    log.info("bfs: %d pairs in %d passes", len(done), passes)
    return done


def _plan(state: DataFrame) -> DataFrame:
    """Mark the frontiers that advance next: the side with fewer links to follow, or both if small."""
    per_pair = Window.partitionBy(PAIR)
    on_front = F.col(_FRONT)
    cf = F.sum(F.when(on_front & (F.col(_SIDE) == FORWARD), F.col(_DEG)).otherwise(0)).over(per_pair)
    cb = F.sum(F.when(on_front & (F.col(_SIDE) == BACKWARD), F.col(_DEG)).otherwise(0)).over(per_pair)
    state = state.withColumn("_cf", cf).withColumn("_cb", cb)
    both = F.greatest("_cf", "_cb") <= F.lit(BOTH_SIDES_MAX_LINKS)
    forward = (F.col(_SIDE) == FORWARD) & (F.col("_cf") <= F.col("_cb"))
    backward = (F.col(_SIDE) == BACKWARD) & (F.col("_cb") < F.col("_cf"))
    return state.withColumn(_EXPAND, on_front & (both | forward | backward)).drop("_cf", "_cb")


def _advance(state: DataFrame, adj: DataFrame) -> tuple[DataFrame, dict[int, int]]:
    """One pass: expand the marked frontiers by one level; the new state and the finished pairs."""
    moving = state.filter(F.col(_EXPAND))
    fresh = (
        moving.select(PAIR, _SIDE, _NODE, _DIST)
        .join(adj, [_SIDE, _NODE])
        .select(PAIR, _SIDE, F.col(_NEXT).alias(_NODE), (F.col(_DIST) + 1).alias(_DIST), _DEG)
        .dropDuplicates([PAIR, _SIDE, _NODE])
        .join(state.select(PAIR, _SIDE, _NODE), [PAIR, _SIDE, _NODE], "left_anti")
        .localCheckpoint()
    )
    # A fresh node already seen from the other end closes the pair: the smallest sum of the two
    # distances is the shortest path length. A side that advanced and found nothing new ends it.
    seen = state.select(PAIR, _SIDE, _NODE, _DIST).unionByName(fresh.select(PAIR, _SIDE, _NODE, _DIST))
    other = seen.select(PAIR, (1 - F.col(_SIDE)).alias(_SIDE), _NODE, F.col(_DIST).alias("_other"))
    met = fresh.join(other, [PAIR, _SIDE, _NODE]).groupBy(PAIR).agg(F.min(F.col(_DIST) + F.col("_other")).alias(_DIST))
    stuck = (
        moving.select(PAIR, _SIDE)
        .distinct()
        .join(fresh.select(PAIR, _SIDE).distinct(), [PAIR, _SIDE], "left_anti")
        .select(PAIR)
        .distinct()
    )
    finished = met.unionByName(stuck.join(met, PAIR, "left_anti").select(PAIR, F.lit(NO_PATH).cast("int").alias(_DIST)))
    kept = (
        state.select(PAIR, _SIDE, _NODE, _DIST, _DEG, (F.col(_FRONT) & ~F.col(_EXPAND)).alias(_FRONT))
        .unionByName(fresh.withColumn(_FRONT, F.lit(True)))
        .join(finished.select(PAIR), PAIR, "left_anti")
    )
    # Finished pairs ride along as rows of side _RESULT, so one job writes the state and answers.
    results = finished.select(
        PAIR,
        F.lit(_RESULT).alias(_SIDE),
        F.lit(None).cast("long").alias(_NODE),
        _DIST,
        F.lit(None).cast("long").alias(_DEG),
        F.lit(False).alias(_FRONT),
        F.lit(False).alias(_EXPAND),
    )
    combined = _plan(kept).unionByName(results).localCheckpoint()
    rows = combined.filter(F.col(_SIDE) == _RESULT).select(PAIR, _DIST).collect()
    return combined.filter(F.col(_SIDE) != _RESULT), {r[PAIR]: r[_DIST] for r in rows}
