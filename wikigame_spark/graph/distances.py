"""Exact distances for batches of node-id pairs, single-node or distributed, behind one interface.

Both methods answer the same questions identically: the node (or eligible target) at a rank in id
order, and for (source, target) pairs a shortest path length or a negative code saying why there
is none. Cheap pre-filters come first, in this order: source without out-links, target without
in-links, source and target in different weakly connected components; only the remaining pairs
are searched. ``auto`` picks the single-node method when the edge count is at most
``local_max_edges``.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wikigame_spark.graph import bfs, frame
from wikigame_spark.graph.csr import DIFFERENT_COMPONENT, SOURCE_NO_OUT_LINKS, TARGET_NO_IN_LINKS, CsrGraph
from wikigame_spark.graph.ids import dense_index
from wikigame_spark.schemas import DST, ID, SOURCE, SRC, TARGET, require_columns

log = logging.getLogger(__name__)

LOCAL = "local"
DISTRIBUTED = "distributed"
RANK = "rank"


class PairDistances(ABC):
    """Nodes by rank and exact distances for one graph (and one set of eligible targets)."""

    method: str
    num_nodes: int
    num_targets: int

    @abstractmethod
    def node_ids(self, ranks: np.ndarray) -> np.ndarray:
        """Ids of the nodes at these ranks (0 = smallest id)."""

    @abstractmethod
    def target_ids(self, ranks: np.ndarray) -> np.ndarray:
        """Ids of the eligible targets at these ranks (0 = smallest id)."""

    @abstractmethod
    def distances(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """int32 shortest path lengths, or the negative codes of :mod:`wikigame_spark.graph.csr`."""


def choose_method(method: str, num_edges: int, local_max_edges: int) -> str:
    """``local`` or ``distributed``: as asked, or for ``auto`` by the edge count."""
    if method in (LOCAL, DISTRIBUTED):
        return method
    if method != "auto":
        raise ValueError(f"method: {method!r} is not one of auto, local, distributed")
    return LOCAL if num_edges <= local_max_edges else DISTRIBUTED


def pair_distances(
    nodes: DataFrame,
    edges: DataFrame,
    targets: DataFrame | None = None,
    method: str = "auto",
    local_max_edges: int = 100_000_000,
    batch_pairs: int = 2000,
) -> PairDistances:
    """The distance oracle for a graph; ``targets`` (an ``id`` column) restricts target draws."""
    require_columns(nodes, [ID], "pair_distances(nodes)")
    require_columns(edges, [SRC, DST], "pair_distances(edges)")
    targets = nodes if targets is None else targets
    require_columns(targets, [ID], "pair_distances(targets)")
    chosen = choose_method(method, edges.count() if method == "auto" else 0, local_max_edges)
    log.info("distances: %s method", chosen)
    if chosen == LOCAL:
        return LocalDistances(nodes, edges, targets)
    return SparkDistances(nodes, edges, targets, batch_pairs)


def _plain_local_parquet(df: DataFrame) -> list[str] | None:
    """The files of ``df`` when it is nothing but columns of Parquet files on a local disk."""
    plan = df._jdf.queryExecution().optimizedPlan()  # no public API tells a bare scan apart
    if plan.getClass().getSimpleName() == "Project":
        exprs = plan.projectList()
        if any(exprs.apply(i).getClass().getSimpleName() != "AttributeReference" for i in range(exprs.size())):
            return None
        plan = plan.child()
    if plan.getClass().getSimpleName() != "LogicalRelation" or "parquet" not in plan.toString().split("\n")[0]:
        return None
    files = df.inputFiles()
    if not files or not all(f.startswith("file:") for f in files):
        return None
    return [f[len("file://") :] if f.startswith("file://") else f[len("file:") :] for f in files]


def _columns(df: DataFrame, names: list[str]) -> list[np.ndarray]:
    """Columns of ``df`` as int64 arrays in this process.

    Local Parquet is read straight with pyarrow (seconds for 40 M edges); anything else (another
    file system, a filtered or computed frame) comes through Spark's Arrow collect.
    """
    df = df.select(*names)
    files = _plain_local_parquet(df)
    table = None
    if files:
        try:
            table = pq.read_table(files, columns=names)
        except (OSError, ValueError, KeyError, pa.ArrowException) as e:
            log.info("reading %d Parquet files directly failed (%s); collecting through Spark", len(files), e)
    if table is None:
        table = df.toArrow()
    return [table.column(n).to_numpy().astype(np.int64, copy=False) for n in names]


def _sorted_ids(df: DataFrame, what: str) -> np.ndarray:
    (ids,) = _columns(df, [ID])
    ids = np.sort(ids)
    if ids.size > 1 and np.any(ids[1:] == ids[:-1]):
        raise ValueError(f"{what}: node id {int(ids[1:][ids[1:] == ids[:-1]][0])} occurs more than once")
    return ids


class LocalDistances(PairDistances):
    """The graph in this process as :class:`CsrGraph`."""

    method = LOCAL

    def __init__(self, nodes: DataFrame, edges: DataFrame, targets: DataFrame) -> None:
        node_ids = _sorted_ids(nodes, "nodes")
        src, dst = _columns(edges, [SRC, DST])
        self.graph = CsrGraph(node_ids, src, dst)
        del src, dst
        self._targets = node_ids if targets is nodes else _sorted_ids(targets, "targets")
        self.graph.positions(self._targets)
        self.num_nodes = self.graph.num_nodes
        self.num_targets = int(self._targets.size)

    def node_ids(self, ranks: np.ndarray) -> np.ndarray:
        return self.graph.node_ids[np.asarray(ranks, dtype=np.int64)]

    def target_ids(self, ranks: np.ndarray) -> np.ndarray:
        return self._targets[np.asarray(ranks, dtype=np.int64)]

    def distances(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        return self.graph.distances(sources, targets)


class _RankIndex:
    """Rank → id for a table of ids, without bringing the table to the driver."""

    def __init__(self, ids: DataFrame) -> None:
        ids = ids.select(ID)
        row = ids.agg(F.count("*").alias("n"), F.min(ID).alias("lo"), F.max(ID).alias("hi")).first()
        self.size = int(row["n"])
        self.dense = self.size == 0 or (row["lo"] == 0 and row["hi"] == self.size - 1)
        self.table = None if self.dense else dense_index(ids, ID, RANK).persist(StorageLevel.MEMORY_AND_DISK)

    def ids(self, ranks: np.ndarray) -> np.ndarray:
        ranks = np.asarray(ranks, dtype=np.int64)
        if self.dense:
            return ranks.copy()
        spark = self.table.sparkSession
        wanted = spark.createDataFrame(pd.DataFrame({"pos": np.arange(ranks.size), RANK: ranks}))
        found = wanted.join(self.table, RANK).select("pos", ID).toPandas()
        out = np.empty(ranks.size, dtype=np.int64)
        out[found["pos"].to_numpy()] = found[ID].to_numpy()
        return out


class SparkDistances(PairDistances):
    """Degrees and components as tables, distances by :func:`bfs.bidirectional_distances`."""

    method = DISTRIBUTED

    def __init__(self, nodes: DataFrame, edges: DataFrame, targets: DataFrame, batch_pairs: int) -> None:
        level = StorageLevel.MEMORY_AND_DISK
        self.spark = nodes.sparkSession
        self.batch_pairs = batch_pairs
        degrees = frame.degrees(nodes, edges).persist(level)
        components = frame.weak_components(nodes, edges)
        self.info = degrees.join(components, ID).persist(level)
        self.adj = bfs.adjacency(edges, degrees).persist(level)
        self.degrees = degrees
        self._nodes = _RankIndex(nodes)
        self._targets = self._nodes if targets is nodes else _RankIndex(targets)
        self.num_nodes = self._nodes.size
        self.num_targets = self._targets.size

    def node_ids(self, ranks: np.ndarray) -> np.ndarray:
        return self._nodes.ids(ranks)

    def target_ids(self, ranks: np.ndarray) -> np.ndarray:
        return self._targets.ids(ranks)

    def distances(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        sources = np.asarray(sources, dtype=np.int64)
        targets = np.asarray(targets, dtype=np.int64)
        out = np.zeros(sources.size, dtype=np.int32)
        if sources.size == 0:
            return out
        frame_ = pd.DataFrame({bfs.PAIR: np.arange(sources.size, dtype=np.int64), SOURCE: sources, TARGET: targets})
        pairs = self.spark.createDataFrame(frame_, f"{bfs.PAIR} long, {SOURCE} long, {TARGET} long")
        s_info = self.info.select(
            F.col(ID).alias(SOURCE), F.col(frame.OUT_DEGREE).alias("s_out"), F.col(frame.COMPONENT).alias("s_comp")
        )
        t_info = self.info.select(
            F.col(ID).alias(TARGET), F.col(frame.IN_DEGREE).alias("t_in"), F.col(frame.COMPONENT).alias("t_comp")
        )
        code = (
            F.when(F.col(SOURCE) == F.col(TARGET), F.lit(0))
            .when(F.col("s_out") == 0, F.lit(SOURCE_NO_OUT_LINKS))
            .when(F.col("t_in") == 0, F.lit(TARGET_NO_IN_LINKS))
            .when(F.col("s_comp") != F.col("t_comp"), F.lit(DIFFERENT_COMPONENT))
        )
        coded = pairs.join(s_info, SOURCE, "left").join(t_info, TARGET, "left")
        coded = coded.select(
            bfs.PAIR,
            SOURCE,
            TARGET,
            F.col("s_out").isNull().alias("s_bad"),
            F.col("t_in").isNull().alias("t_bad"),
            code.alias("code"),
        )
        coded = coded.localCheckpoint()
        bad = coded.filter("s_bad or t_bad").select(bfs.PAIR, SOURCE, TARGET).limit(1).collect()
        if bad:
            r = bad[0]
            raise ValueError(f"pair ({r[SOURCE]}, {r[TARGET]}): a node id that is not in the nodes table")
        known = coded.filter(F.col("code").isNotNull()).select(bfs.PAIR, "code").toPandas()
        out[known[bfs.PAIR].to_numpy()] = known["code"].to_numpy()
        searched = bfs.bidirectional_distances(
            coded.filter(F.col("code").isNull()).select(bfs.PAIR, SOURCE, TARGET),
            self.adj,
            self.degrees,
            self.batch_pairs,
        )
        if searched:
            out[np.fromiter(searched.keys(), np.int64)] = np.fromiter(searched.values(), np.int32)
        return out
