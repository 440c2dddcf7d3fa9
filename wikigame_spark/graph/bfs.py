"""Distributed exact distances: many pairs' bidirectional searches at once, on GraphFrames' Pregel.

A batch of up to ``batch_pairs`` (source, target) pairs is searched together. Every vertex holds,
as arrays of pair numbers, the pairs whose forward search (from the source, along out-links) has
seen it and those whose backward search (from the target, against in-links) has, each search's
frontier there, and the pairs it sends on in the coming superstep. The edge list is doubled (each
link once forward, once reversed with a direction flag), so a message needs only its sender's
arrays: Pregel joins only the vertices that send to the edges and skips its second join. A message
is one int array (forward pair ``p`` as ``p``, backward as ``-1 - p``). A run starts with the
pairs still open: a finished pair's marks are dropped, so later runs carry only open pairs.

Each superstep advances, per pair, the side whose frontier has fewer links to follow, or both while
both have few (``BOTH_SIDES_MAX_LINKS``): on a scale-free graph the side with the hub is left alone,
as the local method does. Sides are chosen in the driver from each frontier's summed degree, before
each Pregel run, for all the supersteps of the run (the first run has two, predicting the cost of the
second from the mean degree; later runs one, with the measured costs, and the last few pairs three).
A pair that touches before its run ends keeps advancing until the run ends; only its first touch
counts.

Exactness: the first superstep in which a pair's searches touch gives its distance. A vertex newly
reached by one search that the other had seen before closes a walk of ``df + db`` links (the
depths after the superstep), or ``df + db − 1`` when both sides advanced in that superstep, since then
the other side's mark is a level older; a vertex newly reached by both in the same superstep closes
``df + db``. No shorter path exists, or the searches would have touched a superstep earlier. A side
whose frontier has no links left to follow, before the searches touched, has seen everything its end
reaches: no path.

Measured against a bit-parallel search on the same Pregel (one bit per pair in arrays of longs, both
sides every superstep) and the hand-written DataFrame BFS it replaced, on the same pairs (README,
Benchmarks): the bit-parallel search moved most of the graph's links with 32 longs each once the
union of 2,000 frontiers covered it; this one moves each pair's own frontier. A superstep costs
seconds however few pairs are open (Pregel rewrites every vertex row), so batches are large.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wikigame_spark.graph.frame import IN_DEGREE, OUT_DEGREE, degrees
from wikigame_spark.graph.reach import NO_PATH
from wikigame_spark.schemas import DST, ID, SRC

log = logging.getLogger(__name__)

FORWARD, BACKWARD = 0, 1
# While both frontiers of a pair have at most this many links, both advance in one superstep.
BOTH_SIDES_MAX_LINKS = 10_000
# Supersteps of a Pregel run: the first run two, later runs one, each planned with the frontier
# costs measured before it; once at most TAIL_SHARE of the batch (and at least TAIL_PAIRS) is open
# (long distances, small frontiers, where a run's fixed cost dominates) runs are TAIL_RUN supersteps.
FIRST_RUN, TAIL_RUN, TAIL_PAIRS, TAIL_SHARE = 2, 3, 64, 0.02
# Plan codes: which sides of a pair advance in a superstep.
_NONE, _F, _B, _BOTH = 0, 1, 2, 3
_INTS = "array<int>"
# A run's input columns: seen and frontier pairs per side (Pregel's own columns are sf, sb, ff, fb).
_STATE = ("seen_f", "seen_b", "front_f", "front_b")
_DIR = "direction"
# Touch records: pair * _CODE + 2 * superstep + (1 if the vertex is new to both sides).
_CODE = 2 * max(FIRST_RUN, TAIL_RUN)


class PregelSearch:
    """Exact distances between nodes of one graph (``vertices``: ``id``; ``edges``: ``src, dst``).

    ``node_degrees`` (``id, in_degree, out_degree``) is computed when not given.
    """

    def __init__(
        self, vertices: DataFrame, edges: DataFrame, batch_pairs: int, node_degrees: DataFrame | None = None
    ) -> None:
        level = StorageLevel.MEMORY_AND_DISK
        if node_degrees is None:
            node_degrees = degrees(vertices, edges)
        self.vertices = node_degrees.select(ID, IN_DEGREE, OUT_DEGREE).persist(level)
        links = edges.select(SRC, DST)
        reversed_links = links.select(F.col(DST).alias(SRC), F.col(SRC).alias(DST), F.lit(BACKWARD).alias(_DIR))
        self.edges = links.withColumn(_DIR, F.lit(FORWARD)).unionByName(reversed_links).persist(level)
        self.batch_pairs = batch_pairs
        self._growth: float | None = None

    def distances(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """int32 shortest path lengths (``NO_PATH`` if none) for pairs of node ids."""
        sources = np.asarray(sources, dtype=np.int64)
        targets = np.asarray(targets, dtype=np.int64)
        out = np.zeros(sources.size, dtype=np.int32)
        todo = np.flatnonzero(sources != targets)
        done = 0
        # batches of equal size: a search's rounds cost about the same for few pairs as for many
        for part in np.array_split(todo, -(-todo.size // self.batch_pairs)) if todo.size else []:
            out[part] = self._batch(sources[part], targets[part])
            done += part.size
            log.info("pregel bfs: %d of %d pairs", done, todo.size)
        return out

    def growth(self) -> float:
        """Mean degree: the predicted factor by which a frontier's links grow in one superstep."""
        if self._growth is None:
            row = self.vertices.agg(F.count("*").alias("n"), F.sum(OUT_DEGREE).alias("m")).first()
            self._growth = max(1.0, float(row["m"] or 0) / max(1, row["n"]))
        return self._growth

    def _batch(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        pairs = sources.size
        state = _start(self.vertices, sources, targets)
        depth = np.zeros(pairs, dtype=np.int32)  # links both searches of a pair have advanced
        distance = np.full(pairs, NO_PATH, dtype=np.int32)
        open_ = np.ones(pairs, dtype=bool)
        supersteps = FIRST_RUN
        while True:
            cost = _frontier_links(state, pairs)
            # a side with no links left to follow has seen all its end reaches, and no touch: no path
            open_ &= (cost[FORWARD] > 0) & (cost[BACKWARD] > 0)
            if not open_.any():
                state.unpersist()
                return distance
            plan = _plan(cost, open_, supersteps, self.growth())
            result = _run(state, self.edges, plan, open_)
            advanced = np.cumsum((plan == _F) + (plan == _B) + 2 * (plan == _BOTH), axis=0, dtype=np.int32)
            for pair, step, both_new in _touches(result):
                if open_[pair]:
                    older = plan[step, pair] == _BOTH and not both_new
                    distance[pair] = depth[pair] + advanced[step, pair] - older
                    open_[pair] = False
            depth += advanced[-1]
            state.unpersist()
            after = [F.col(c).alias(name) for c, name in zip(("sf", "sb", "ff", "fb"), _STATE)]
            state = result.select(ID, IN_DEGREE, OUT_DEGREE, *after).localCheckpoint()
            result.unpersist()
            log.debug("pregel bfs: %d pairs open", int(open_.sum()))
            supersteps = 1 if open_.sum() > max(TAIL_PAIRS, TAIL_SHARE * pairs) else TAIL_RUN


def _start(vertices: DataFrame, sources: np.ndarray, targets: np.ndarray) -> DataFrame:
    """Every vertex with its degrees; each pair's source and target seen and on its frontier."""
    pairs = sources.size
    ends = pd.DataFrame(
        {
            ID: np.concatenate([sources, targets]),
            "p": np.tile(np.arange(pairs, dtype=np.int32), 2),
            "side": np.repeat(np.array([FORWARD, BACKWARD], dtype=np.int32), pairs),
        }
    )
    spark = vertices.sparkSession
    marks = (
        spark.createDataFrame(ends, f"{ID} long, p int, side int")
        .groupBy(ID)
        .agg(
            F.collect_list(F.when(F.col("side") == FORWARD, F.col("p"))).alias("f"),
            F.collect_list(F.when(F.col("side") == BACKWARD, F.col("p"))).alias("b"),
        )
    )
    empty = F.array().cast(_INTS)
    f, b = F.coalesce("f", empty), F.coalesce("b", empty)
    return (
        vertices.join(F.broadcast(marks), ID, "left")
        .select(ID, IN_DEGREE, OUT_DEGREE, *[x.alias(name) for x, name in zip((f, b, f, b), _STATE)])
        .localCheckpoint()
    )


def _frontier_links(state: DataFrame, pairs: int) -> np.ndarray:
    """Per side and pair, the links its frontier would follow (out-links forward, in-links backward)."""
    per_side = [
        state.select(F.explode(frontier).alias("p"), F.lit(side).alias("side"), F.col(degree).alias("links"))
        for frontier, side, degree in (("front_f", FORWARD, OUT_DEGREE), ("front_b", BACKWARD, IN_DEGREE))
    ]
    rows = per_side[0].unionByName(per_side[1]).groupBy("side", "p").agg(F.sum("links").alias("links")).toPandas()
    cost = np.zeros((2, pairs), dtype=np.float64)
    cost[rows["side"].to_numpy(), rows["p"].to_numpy()] = rows["links"].to_numpy()
    return cost


def _plan(cost: np.ndarray, open_: np.ndarray, supersteps: int, growth: float) -> np.ndarray:
    """Per superstep and pair, the sides that advance; after the first, costs grow by ``growth``."""
    cost = cost.copy()
    plan = np.zeros((supersteps, cost.shape[1]), dtype=np.int8)
    for step in range(supersteps):
        both = np.maximum(cost[FORWARD], cost[BACKWARD]) <= BOTH_SIDES_MAX_LINKS
        forward = both | (cost[FORWARD] <= cost[BACKWARD])
        backward = both | ~forward
        plan[step] = np.where(open_, forward * _F + backward * _B, _NONE)
        cost[FORWARD] *= np.where(forward, growth, 1.0)
        cost[BACKWARD] *= np.where(backward, growth, 1.0)
    return plan


def _ints(values: np.ndarray) -> Column:
    """A constant int array: one literal JSON string, folded once (not an expression per element)."""
    return F.from_json(F.lit("[" + ",".join(map(str, values.tolist())) + "]"), _INTS)


def _run(state: DataFrame, edges: DataFrame, plan: np.ndarray, open_: np.ndarray) -> DataFrame:
    """One Pregel run of ``len(plan)`` supersteps over the ``open_`` pairs. Vertex columns: ``of``/``ob``
    the pairs sent on this superstep, ``ff``/``fb`` frontiers, ``t`` touch records, ``sf``/``sb`` seen,
    ``k`` the superstep within the run."""
    from graphframes import GraphFrame
    from graphframes.lib import Pregel

    pairs = plan.shape[1]
    code, keep = _ints(plan.ravel()), _ints(open_.astype(np.int8))
    empty = F.array().cast(_INTS)

    def moves(p: Column, step: Column, side: int) -> Column:
        # null past the plan's last superstep: nothing is sent after the run
        return F.get(code, step * pairs + p).isin(side, _BOTH)

    def advance(frontier: str, side: int, new: Column) -> Column:
        # the pairs that did not advance this side keep its frontier
        return F.concat(F.filter(frontier, lambda p: ~moves(p, k, side)), new)

    def start(column: str) -> Column:
        return F.filter(column, lambda p: F.get(keep, p) == 1)

    def sending(frontier: Column, step: Column, side: int) -> Column:
        # computed once per vertex, not once per link: the messages are these arrays as they are
        out = F.filter(frontier, lambda p: moves(p, step, side))
        return out if side == _F else F.transform(out, lambda p: -1 - p)

    msg, src, k = Pregel.msg(), Pregel.src, F.col("k")
    forward = Pregel.edge(_DIR) == FORWARD
    send = F.when(forward, F.when(F.size(src("of")) > 0, src("of"))).otherwise(F.when(F.size(src("ob")) > 0, src("ob")))
    merged = F.array_distinct(F.flatten(F.collect_list(msg)))
    got = F.coalesce(msg, empty)
    new_f = F.array_except(F.filter(got, lambda x: x >= 0), F.col("sf"))
    new_b = F.array_except(F.transform(F.filter(got, lambda x: x < 0), lambda x: -1 - x), F.col("sb"))
    one_new = F.array_union(F.array_intersect(new_f, F.col("sb")), F.array_intersect(new_b, F.col("sf")))
    touched = F.concat(
        F.col("t"),
        F.transform(one_new, lambda p: p * _CODE + 2 * k),
        F.transform(F.array_intersect(new_f, new_b), lambda p: p * _CODE + 2 * k + 1),
    )
    ff0, fb0, ff1, fb1 = start("front_f"), start("front_b"), advance("ff", _F, new_f), advance("fb", _B, new_b)
    of0, ob0 = sending(ff0, F.lit(0), _F), sending(fb0, F.lit(0), _B)
    of1, ob1 = sending(ff1, k + 1, _F), sending(fb1, k + 1, _B)
    # GraphFrames resolves a column name in an update to the update listed before it, if any: each
    # update below reads only its own column and columns updated after it (``sf``, ``sb``, ``k`` last);
    # the active flags come before all updates, so they spell out the arrays to send.
    return (
        GraphFrame(state, edges)
        .pregel.setMaxIter(plan.shape[0])
        .setCheckpointInterval(1)  # a local checkpoint every superstep: Pregel unpersists its own result
        .setUseLocalCheckpoints(True)
        .setSkipMessagesFromNonActiveVertices(True)
        .setInitialActiveVertexExpression((F.size(of0) > 0) | (F.size(ob0) > 0))
        .setUpdateActiveVertexExpression((F.size(of1) > 0) | (F.size(ob1) > 0))
        .required_src_columns("of", "ob")
        .sendMsgToDst(send)
        .aggMsgs(merged)
        .withVertexColumn("of", of0, of1)
        .withVertexColumn("ob", ob0, ob1)
        .withVertexColumn("ff", ff0, ff1)
        .withVertexColumn("fb", fb0, fb1)
        .withVertexColumn("t", empty, touched)
        .withVertexColumn("sf", start("seen_f"), F.concat("sf", new_f))
        .withVertexColumn("sb", start("seen_b"), F.concat("sb", new_b))
        .withVertexColumn("k", F.lit(0), k + 1)
        .run()
    )


def _touches(result: DataFrame) -> list[tuple[int, int, bool]]:
    """``(pair, superstep, new to both)`` of each pair's first touching superstep, odd kinds first."""
    codes = np.array([r[0] for r in result.select(F.explode("t")).distinct().collect()], dtype=np.int64)
    table = pd.DataFrame({"pair": codes // _CODE, "step": codes % _CODE // 2, "both_new": codes % 2 == 1})
    first = table.sort_values(["pair", "step", "both_new"]).drop_duplicates("pair")
    return list(first.itertuples(index=False, name=None))
