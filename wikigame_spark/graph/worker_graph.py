"""The graph as a player sees it: out-links (CSR, neighbours ascending), titles and summaries.

:meth:`WorkerGraph.from_directory` reads a graph directory into this process (the human-play
server, tests, and the reference the mapped layout is checked against); the play stage's workers
use :class:`~wikigame_spark.graph.mapped.MappedGraph`, the same interface over files every worker
of a node maps. Node ids are dense (0…N−1, the graph contract), so a node id is an array index.
"""

from __future__ import annotations

import logging

import numpy as np

from wikigame_spark.layout import GraphDir
from wikigame_spark.parquet import read_columns
from wikigame_spark.schemas import DST, ID, SRC, SUMMARY, TITLE

log = logging.getLogger(__name__)


class WorkerGraph:
    """Out-adjacency as CSR arrays (neighbours sorted by id) plus node texts."""

    def __init__(self, titles: list[str], summaries: list[str], src: np.ndarray, dst: np.ndarray) -> None:
        n = len(titles)
        order = np.lexsort((dst, src))
        self.indices = dst[order].astype(np.int64, copy=False)
        counts = np.bincount(src, minlength=n) if src.size else np.zeros(n, dtype=np.int64)
        self.indptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        self.titles = titles
        self.summaries = summaries

    @property
    def num_nodes(self) -> int:
        return len(self.titles)

    def out_links(self, node: int) -> np.ndarray:
        return self.indices[self.indptr[node] : self.indptr[node + 1]]

    @classmethod
    def from_directory(cls, graph_dir: str) -> WorkerGraph:
        where = GraphDir(graph_dir)
        nodes = read_columns(where.nodes, [ID, TITLE, SUMMARY]).sort_by(ID)
        ids = nodes.column(ID).to_numpy()
        if ids.size and (ids[0] != 0 or ids[-1] != ids.size - 1):
            raise ValueError(f"{where.nodes}: ids are not dense 0…N−1 (the graph contract)")
        edges = read_columns(where.edges, [SRC, DST])
        graph = cls(
            nodes.column(TITLE).to_pylist(),
            nodes.column(SUMMARY).to_pylist(),
            edges.column(SRC).to_numpy(),
            edges.column(DST).to_numpy(),
        )
        log.info("loaded %s: %d nodes, %d edges", graph_dir, graph.num_nodes, graph.indices.size)
        return graph
