"""Exact distances for batches of node-id pairs, single-node or on GraphFrames, behind one interface.

Both methods answer the same questions identically: the source (or eligible target) at a rank in id
order, and for (source, target) pairs a shortest path length or a negative code saying why there
is none. Reachability is settled first, without a search, from strongly connected components and
their condensation (:mod:`wikigame_spark.graph.reach`); only reachable pairs are searched. The
components an oracle found also give the graph's statistics (:mod:`wikigame_spark.graph.stats`).

- ``local``: the graph in the driver as CSR arrays (:mod:`wikigame_spark.graph.csr`), SCCs by scipy,
  weak components from their condensation. Given the graph directory the tables were read from,
  its out-links are the play stage's mapped int32 files (:mod:`wikigame_spark.graph.mapped`, built
  once per build of the graph), not a copy.
- ``graphframes``: degrees and components by GraphFrames, the condensation in the driver, searches
  by a multi-pair bidirectional BFS on GraphFrames' Pregel (:mod:`wikigame_spark.graph.bfs`, the
  fastest exact candidate measured); the edge list stays in the cluster.
- ``auto``: ``local`` when :func:`local_bytes` of the graph fits the driver's budget
  (:func:`local_budget`), otherwise ``graphframes``.

With ``largest_scc`` sources and targets are drawn only from the largest SCC (ties: the one with
the smallest node id), LLM-WikiRace's setting; every pair there is reachable.
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wikigame_spark.graph import frame
from wikigame_spark.graph.bfs import PregelSearch
from wikigame_spark.graph.csr import CsrGraph
from wikigame_spark.graph.ids import dense_index
from wikigame_spark.graph.mapped import MappedGraph, ensure_graph, local_folder
from wikigame_spark.graph.reach import REACHABLE, Condensation, largest_component
from wikigame_spark.handles import GraphHandle
from wikigame_spark.schemas import DST, ID, SRC, require_columns

log = logging.getLogger(__name__)

LOCAL = "local"
GRAPHFRAMES = "graphframes"
METHODS = ("auto", LOCAL, GRAPHFRAMES)
RANK = "rank"
# Peak bytes of the local method on a graph directory, measured with bench/bench_sampling.py's
# methods local and collected on bench_scale.py's graphs (200 k nodes / 6.4 M edges, 1 M / 32 M):
# the mapped out-links resident (4 per edge) and the in-links built from them (4 per edge), per-node
# arrays (degrees, SCC labels and scipy's work arrays, search marks, the mapped files' builder), and
# runs of RUN_EDGES edges sorted at a time; rounded up.
LOCAL_BYTES_PER_EDGE = 8
LOCAL_BYTES_PER_NODE = 128
LOCAL_BYTES_FIXED = 1 << 29
# Without a graph directory the edge columns are collected as int64 before the CSR is built.
COLLECTED_BYTES_PER_EDGE = 48
LOCAL_MEMORY_SHARE = 0.5  # of the memory available to the driver process when the method is chosen


@dataclass(frozen=True)
class ComponentSizes:
    """How a graph splits into components of one kind: how many, the largest's nodes, how many of one node."""

    count: int
    largest: int
    singletons: int

    @classmethod
    def of_labels(cls, labels: np.ndarray) -> ComponentSizes:
        sizes = np.unique(labels, return_counts=True)[1]
        return cls(int(sizes.size), int(sizes.max(initial=0)), int((sizes == 1).sum()))


class PairDistances(ABC):
    """Sources and eligible targets by rank, and exact distances, for one graph; its components and
    degrees, which the method finds on the way."""

    method: str
    num_sources: int
    num_targets: int
    giant_size: int  # nodes in the largest SCC

    @abstractmethod
    def source_ids(self, ranks: np.ndarray) -> np.ndarray:
        """Ids of the sources at these ranks (0 = smallest id)."""

    @abstractmethod
    def target_ids(self, ranks: np.ndarray) -> np.ndarray:
        """Ids of the eligible targets at these ranks (0 = smallest id)."""

    @abstractmethod
    def distances(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """int32 shortest path lengths, or the negative codes of :mod:`wikigame_spark.graph.reach`."""

    @abstractmethod
    def strong_components(self) -> ComponentSizes:
        """The graph's strongly connected components (the ones reachability is decided from)."""

    @abstractmethod
    def weak_components(self) -> ComponentSizes:
        """The graph's weakly connected components (links' direction ignored)."""

    @abstractmethod
    def max_degrees(self) -> tuple[int, int]:
        """The largest in-degree and out-degree."""


def local_bytes(num_nodes: int, num_edges: int, mapped: bool = True) -> int:
    """Estimated peak memory of the local method for a graph of this size, on its mapped files or
    (``mapped=False``) on collected edge columns."""
    per_edge = LOCAL_BYTES_PER_EDGE if mapped else COLLECTED_BYTES_PER_EDGE
    return per_edge * num_edges + LOCAL_BYTES_PER_NODE * num_nodes + LOCAL_BYTES_FIXED


def local_budget() -> int:
    """Bytes the local method may use: ``LOCAL_MEMORY_SHARE`` of the machine's available memory
    (``MemAvailable`` of /proc/meminfo, else free physical pages), capped by an address-space limit."""
    available = 0
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
    except OSError:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit != resource.RLIM_INFINITY:
        available = min(available, limit)
    return int(LOCAL_MEMORY_SHARE * available)


def choose_method(method: str, num_nodes: int, num_edges: int, budget: int, mapped: bool = True) -> str:
    """``local`` or ``graphframes``: as asked, or for ``auto`` by whether the graph fits ``budget``."""
    if method in (LOCAL, GRAPHFRAMES):
        return method
    if method != "auto":
        raise ValueError(f"method: {method!r} is not one of {', '.join(METHODS)}")
    return LOCAL if local_bytes(num_nodes, num_edges, mapped) <= budget else GRAPHFRAMES


def pair_distances(
    nodes: DataFrame,
    edges: DataFrame,
    targets: DataFrame | None = None,
    method: str = "auto",
    largest_scc: bool = False,
    batch_pairs: int = 2048,
    graph_dir: GraphHandle | str | None = None,
    cache_dir: str | None = None,
) -> PairDistances:
    """The distance oracle for a graph; ``targets`` (an ``id`` column) restricts target draws.

    ``graph_dir``: the graph (opened, or its folder) ``nodes`` and ``edges`` were read from; the local method then
    maps its out-links (see the module doc) instead of collecting the edge columns, made under
    ``cache_dir`` (default: the graph's own cache folder)."""
    require_columns(nodes, [ID], "pair_distances(nodes)")
    require_columns(edges, [SRC, DST], "pair_distances(edges)")
    targets = nodes if targets is None else targets
    require_columns(targets, [ID], "pair_distances(targets)")
    if method == "auto":
        n, m = nodes.count(), edges.count()
        budget = local_budget()
        mapped = graph_dir is not None
        chosen = choose_method(method, n, m, budget, mapped)
        need = local_bytes(n, m, mapped) / 2**30
        log.info("distances: %s (local needs ~%.2f GiB, budget %.2f GiB)", chosen, need, budget / 2**30)
    else:
        chosen = choose_method(method, 0, 0, 0)
    if chosen == LOCAL:
        return LocalDistances(nodes, edges, targets, largest_scc, graph_dir, cache_dir)
    return GraphFramesDistances(nodes, edges, targets, largest_scc, batch_pairs)


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
            table = pq.read_table(files, columns=names, page_checksum_verification=True)
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

    def __init__(
        self,
        nodes: DataFrame,
        edges: DataFrame,
        targets: DataFrame,
        largest_scc: bool,
        graph_dir: GraphHandle | str | None,
        cache_dir: str | None = None,
    ) -> None:
        if graph_dir is None:
            node_ids = _sorted_ids(nodes, "nodes")
            src, dst = _columns(edges, [SRC, DST])
            self.graph = CsrGraph.from_edges(node_ids, src, dst)
            del src, dst
        else:
            # not the per-process cache of mapped_graph: a driver may rebuild the graph between calls
            files = MappedGraph(local_folder(ensure_graph(nodes.sparkSession, graph_dir, cache_dir)))
            node_ids = np.arange(files.indptr.size - 1, dtype=np.int64)
            n, m = nodes.count(), edges.count()
            if (n, m) != (node_ids.size, files.indices.size):
                raise ValueError(
                    f"{getattr(graph_dir, 'path', graph_dir)}: the tables given have {n} nodes and {m} edges, "
                    f"its mapped files {node_ids.size} and {files.indices.size}: pass the directory the tables "
                    "were read from"
                )
            self.graph = CsrGraph(node_ids, files.indptr, files.indices)
        giant = self.graph.scc == largest_component(self.graph.scc)
        self.giant_size = int(giant.sum())
        self._sources = node_ids[giant] if largest_scc else node_ids
        self._targets = node_ids if targets is nodes else _sorted_ids(targets, "targets")
        positions = self.graph.positions(self._targets)
        if largest_scc:
            self._targets = self._targets[giant[positions]]
        self.num_sources = int(self._sources.size)
        self.num_targets = int(self._targets.size)

    def source_ids(self, ranks: np.ndarray) -> np.ndarray:
        return self._sources[np.asarray(ranks, dtype=np.int64)]

    def target_ids(self, ranks: np.ndarray) -> np.ndarray:
        return self._targets[np.asarray(ranks, dtype=np.int64)]

    def distances(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        return self.graph.distances(sources, targets)

    def strong_components(self) -> ComponentSizes:
        return ComponentSizes.of_labels(self.graph.scc)

    def weak_components(self) -> ComponentSizes:
        return ComponentSizes.of_labels(self.graph.condensation.weak_labels(self.graph.scc))

    def max_degrees(self) -> tuple[int, int]:
        return int(self.graph.in_deg.max(initial=0)), int(self.graph.out_deg.max(initial=0))


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


class GraphFramesDistances(PairDistances):
    """Degrees and SCCs by GraphFrames, the condensation in the driver, searches by :class:`PregelSearch`."""

    method = GRAPHFRAMES

    def __init__(
        self, nodes: DataFrame, edges: DataFrame, targets: DataFrame, largest_scc: bool, batch_pairs: int
    ) -> None:
        level = StorageLevel.MEMORY_AND_DISK
        self.spark = nodes.sparkSession
        self.nodes, self.edges = nodes, edges
        self.scc = scc = frame.strong_components(nodes, edges).persist(level)
        self.info = frame.degrees(nodes, edges).join(scc, ID).persist(level)
        sizes = frame.component_sizes(scc).first()
        giant, self.giant_size = int(sizes[frame.COMPONENT]), int(sizes["size"])
        s_scc = scc.select(F.col(ID).alias(SRC), F.col(frame.COMPONENT).alias("a"))
        t_scc = scc.select(F.col(ID).alias(DST), F.col(frame.COMPONENT).alias("b"))
        dag = edges.join(s_scc, SRC).join(t_scc, DST).filter("a != b").select("a", "b").distinct()
        a, b = _columns(dag, ["a", "b"])
        self.condensation = Condensation(a, b, giant)
        log.info("condensation: %d SCCs with links between SCCs, %d links", self.condensation.names.size, a.size)
        members = scc.filter(F.col(frame.COMPONENT) == giant).select(ID)
        sources = members if largest_scc else nodes
        if largest_scc:
            targets = targets.select(ID).join(members, ID)
        self._sources = _RankIndex(sources)
        self._targets = self._sources if targets is sources else _RankIndex(targets)
        self.num_sources = self._sources.size
        self.num_targets = self._targets.size
        self.search = PregelSearch(nodes, edges, batch_pairs, self.info)

    def source_ids(self, ranks: np.ndarray) -> np.ndarray:
        return self._sources.ids(ranks)

    def target_ids(self, ranks: np.ndarray) -> np.ndarray:
        return self._targets.ids(ranks)

    def distances(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        sources = np.asarray(sources, dtype=np.int64)
        targets = np.asarray(targets, dtype=np.int64)
        out = np.zeros(sources.size, dtype=np.int32)
        differ = np.flatnonzero(sources != targets)
        if differ.size == 0:
            return out
        wanted = pd.DataFrame({"pos": differ, "s": sources[differ], "t": targets[differ]})
        pairs = self.spark.createDataFrame(wanted, "pos long, s long, t long")
        s_info = self.info.select(
            F.col(ID).alias("s"), F.col(frame.OUT_DEGREE).alias("s_out"), F.col(frame.COMPONENT).alias("s_scc")
        )
        t_info = self.info.select(
            F.col(ID).alias("t"), F.col(frame.IN_DEGREE).alias("t_in"), F.col(frame.COMPONENT).alias("t_scc")
        )
        known = pairs.join(s_info, "s", "left").join(t_info, "t", "left").toPandas().sort_values("pos")
        bad = known[known["s_out"].isna() | known["t_in"].isna()]
        if len(bad):
            r = bad.iloc[0]
            raise ValueError(f"pair ({int(r['s'])}, {int(r['t'])}): a node id that is not in the nodes table")
        if len(known) != differ.size:
            raise ValueError("pairs: a node id occurs more than once in the nodes table")
        code = self.condensation.decide(
            known["s_out"].to_numpy(), known["t_in"].to_numpy(), known["s_scc"].to_numpy(), known["t_scc"].to_numpy()
        )
        out[differ] = code
        todo = differ[code == REACHABLE]
        if todo.size:
            out[todo] = self.search.distances(sources[todo], targets[todo])
        return out

    @staticmethod
    def _sizes(labels: DataFrame) -> ComponentSizes:
        size = F.col("size")
        row = (
            frame.component_sizes(labels)
            .agg(F.count("*").alias("n"), F.max(size).alias("largest"), F.sum((size == 1).cast("long")).alias("one"))
            .first()
        )
        return ComponentSizes(int(row["n"]), int(row["largest"] or 0), int(row["one"] or 0))

    def strong_components(self) -> ComponentSizes:
        return self._sizes(self.scc)

    def weak_components(self) -> ComponentSizes:
        return self._sizes(frame.weak_components(self.nodes, self.edges))

    def max_degrees(self) -> tuple[int, int]:
        row = self.info.agg(F.max(frame.IN_DEGREE).alias("i"), F.max(frame.OUT_DEGREE).alias("o")).first()
        return int(row["i"] or 0), int(row["o"] or 0)
