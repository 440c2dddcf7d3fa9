"""A candidate search for the ``graphframes`` method, measured by bench_sampling.py: bidirectional BFS
for thousands of pairs at once on GraphFrames' Pregel. Exact, but slower on 2 cores than the
DataFrame BFS of ``wikigame_spark.graph.bfs`` (README, Benchmarks), so it lives here.

A batch of up to ``64 × words`` pairs is searched together, one bit per pair. Every vertex holds, in
long columns, the bits of the pairs whose forward search (from the source, along out-links) has
reached it and of those whose backward search (from the target, against in-links) has, and the bits
each search added in the last superstep (its frontier). A Pregel superstep sends forward frontiers
to out-neighbours and backward frontiers to in-neighbours (only vertices with a frontier send),
ORs the messages per receiving vertex, and keeps the bits not seen before: every pair of the batch
advances both searches by one level in one superstep, bit operations on longs in place of per-pair
rows.

Exactness: after ``k`` supersteps without the two searches of a pair touching, its distance ``L``
is more than ``2k − 2`` (both have settled depth ``k − 1``). In superstep ``k`` they first touch at a
vertex either newly reached by one search and seen before by the other — a walk of length at most
``2k − 1``, so ``L = 2k − 1`` — or newly reached by both — ``2k``. Each vertex records such bits with
that length, and a pair's distance is the smallest length recorded for it.

Every searched pair is known to be reachable (:mod:`wikigame_spark.graph.reach`), so the search
runs in rounds of a few supersteps and stops once every pair has met; between rounds the pairs
already answered are cleared from the frontiers. Only per-pair answers (OR-ed bits per word and
length, a few rows) come back to the driver; the edge list stays in the cluster.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wikigame_spark.schemas import DST, ID, SRC

log = logging.getLogger(__name__)

WORD = 64
MAX_WORDS = 32  # 2,048 pairs per batch by default
ROUND_SUPERSTEPS = 3  # supersteps per Pregel run (distances up to 6) between checks of who has met
SIDES = ("f", "b")  # forward from the sources, backward from the targets
_MET = "met"
_STEP = "step"


def _seen(side: str, w: int) -> str:
    return f"seen_{side}{w}"


def _fresh(side: str, w: int) -> str:
    return f"fresh_{side}{w}"


def _start(name: str) -> str:
    return f"{name}_start"


def _masks(ids: np.ndarray, words: int) -> pd.DataFrame:
    """``id, m0 … m(words−1)``: per node, the bits of the batch's pairs (pair j = word j // 64, bit j % 64)."""
    j = np.arange(ids.size)
    word, bit = j // WORD, (np.uint64(1) << (j % WORD).astype(np.uint64))
    table = pd.DataFrame({ID: ids, "w": word, "bit": bit})
    by = table.groupby([ID, "w"])["bit"].agg(np.bitwise_or.reduce).unstack("w", fill_value=np.uint64(0))
    by = by.reindex(columns=range(words), fill_value=np.uint64(0))
    out = pd.DataFrame({ID: by.index.to_numpy(np.int64)})
    for w in range(words):
        out[f"m{w}"] = by[w].to_numpy(np.uint64).view(np.int64)
    return out


def _bits(value: int) -> list[int]:
    """Positions of the set bits of one 64-bit word (a signed long from Spark)."""
    v = int(value) & (1 << WORD) - 1
    return [b for b in range(WORD) if v >> b & 1]


class PregelSearch:
    """Exact distances between nodes of one graph (``vertices``: ``id``; ``edges``: ``src, dst``)."""

    def __init__(self, vertices: DataFrame, edges: DataFrame, batch_pairs: int = WORD * MAX_WORDS) -> None:
        self.vertices = vertices.select(ID).persist(StorageLevel.MEMORY_AND_DISK)
        self.edges = edges.select(SRC, DST).persist(StorageLevel.MEMORY_AND_DISK)
        self.words = max(1, batch_pairs // WORD)

    def distances(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """int32 shortest path lengths for pairs of distinct nodes, each known to be reachable."""
        sources = np.asarray(sources, dtype=np.int64)
        targets = np.asarray(targets, dtype=np.int64)
        out = np.empty(sources.size, dtype=np.int32)
        size = WORD * self.words
        for start in range(0, sources.size, size):
            stop = min(start + size, sources.size)
            out[start:stop] = self._batch(sources[start:stop], targets[start:stop])
            log.info("pregel bfs: %d of %d pairs", stop, sources.size)
        return out

    def _batch(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        from graphframes import GraphFrame

        words = (sources.size + WORD - 1) // WORD
        spark = self.vertices.sparkSession
        state = self.vertices
        for side, ends in zip(SIDES, (sources, targets)):
            bits = spark.createDataFrame(_masks(ends, words)).toDF(ID, *[f"{side}{w}" for w in range(words)])
            state = state.join(F.broadcast(bits), ID, "left")
        # A round's input: each search's seen and frontier bits where the previous round left them.
        state = state.select(
            ID,
            *[
                F.coalesce(f"{side}{w}", F.lit(0)).alias(_start(name(side, w)))
                for side in SIDES
                for name in (_seen, _fresh)
                for w in range(words)
            ],
        )
        distance = np.full(sources.size, -1, dtype=np.int32)
        step = 0
        while True:
            result = _round(GraphFrame(state, self.edges), words, step)
            met = (
                result.select(F.explode(_MET).alias("m"))
                .groupBy("m.w", "m.length")
                .agg(F.bit_or("m.bits").alias("bits"))
                .orderBy("length")
                .collect()
            )
            for w, length, bits in met:
                for b in _bits(bits):
                    j = w * WORD + b
                    if distance[j] < 0:
                        distance[j] = length
            step += ROUND_SUPERSTEPS
            open_ = distance < 0
            if not open_.any():
                return distance
            keep = _open_masks(open_, words)
            state = result.select(
                ID,
                *[
                    (F.col(name(side, w)).bitwiseAND(F.lit(keep[w])) if name is _fresh else F.col(name(side, w))).alias(
                        _start(name(side, w))
                    )
                    for side in SIDES
                    for name in (_seen, _fresh)
                    for w in range(words)
                ],
            ).localCheckpoint()
            fronts = [F.col(_start(_fresh(side, w))) for side in SIDES for w in range(words)]
            if state.filter(_any_nonzero(fronts)).isEmpty():
                raise RuntimeError(f"pregel bfs: {int(open_.sum())} reachable pairs never met")


def _open_masks(open_: np.ndarray, words: int) -> list[int]:
    """Per word, the bits of the pairs still open, as signed longs."""
    padded = np.zeros(words * WORD, dtype=bool)
    padded[: open_.size] = open_
    weights = np.uint64(1) << np.arange(WORD, dtype=np.uint64)
    packed = (padded.reshape(words, WORD).astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)
    return [int(x) for x in packed.view(np.int64)]


def _any_nonzero(columns: list[Column]) -> Column:
    out = columns[0] != 0
    for c in columns[1:]:
        out = out | (c != 0)
    return out


def _round(g, words: int, step: int) -> DataFrame:
    """``ROUND_SUPERSTEPS`` supersteps after ``step``; vertices gain ``met`` entries
    ``(w, bits, length)``: pairs of word ``w`` whose searches first touch there, at that length."""
    from graphframes.lib import Pregel

    msg = Pregel.msg()
    zeros = [F.lit(0).cast("long")] * words
    arrived = {s: [F.coalesce(msg[i * words + w], zeros[0]) for w in range(words)] for i, s in enumerate(SIDES)}
    new = {s: [arrived[s][w].bitwiseAND(F.bitwise_not(F.col(_seen(s, w)))) for w in range(words)] for s in SIDES}
    k = F.col(_STEP) + 1
    records = []
    for w in range(words):
        odd = new["f"][w].bitwiseAND(F.col(_seen("b", w))).bitwiseOR(F.col(_seen("f", w)).bitwiseAND(new["b"][w]))
        even = new["f"][w].bitwiseAND(new["b"][w]).bitwiseAND(F.bitwise_not(odd))
        records.append(F.struct(F.lit(w).alias("w"), odd.alias("bits"), (2 * k - 1).alias("length")))
        records.append(F.struct(F.lit(w).alias("w"), even.alias("bits"), (2 * k).alias("length")))
    touched = F.filter(F.array(*records), lambda r: r["bits"] != 0)
    reached = _any_nonzero(new["f"] + new["b"])
    none = F.filter(
        F.array(F.struct(F.lit(0).alias("w"), zeros[0].alias("bits"), F.lit(0).alias("length"))), lambda r: F.lit(False)
    )
    p = (
        g.pregel.setMaxIter(ROUND_SUPERSTEPS)
        .setCheckpointInterval(1)  # a local checkpoint every superstep keeps each plan short
        .setUseLocalCheckpoints(True)
        .setSkipMessagesFromNonActiveVertices(True)
        .setInitialActiveVertexExpression(
            _any_nonzero([F.col(_start(_fresh(s, w))) for s in SIDES for w in range(words)])
        )
        .setUpdateActiveVertexExpression(reached)
        .required_src_columns(*[_fresh("f", w) for w in range(words)])
        .required_dst_columns(*[_fresh("b", w) for w in range(words)])
        .sendMsgToDst(
            F.when(
                _any_nonzero([Pregel.src(_fresh("f", w)) for w in range(words)]),
                F.array(*[Pregel.src(_fresh("f", w)) for w in range(words)], *zeros),
            )
        )
        .sendMsgToSrc(
            F.when(
                _any_nonzero([Pregel.dst(_fresh("b", w)) for w in range(words)]),
                F.array(*zeros, *[Pregel.dst(_fresh("b", w)) for w in range(words)]),
            )
        )
        .aggMsgs(F.array(*[F.bit_or(msg[i]) for i in range(2 * words)]))
        .withVertexColumn(_STEP, F.lit(step), k)
        .withVertexColumn(_MET, none, F.when(reached, F.concat(F.col(_MET), touched)).otherwise(F.col(_MET)))
    )
    for s in SIDES:
        for w in range(words):
            p = p.withVertexColumn(_seen(s, w), F.col(_start(_seen(s, w))), F.col(_seen(s, w)).bitwiseOR(arrived[s][w]))
            p = p.withVertexColumn(_fresh(s, w), F.col(_start(_fresh(s, w))), new[s][w])
    return p.run()
