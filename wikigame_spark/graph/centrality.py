"""Centrality: every page's PageRank (GraphFrames) and in-degree, once per graph build, cached.

The ``hub`` agent follows the most central offered link, and the report measures how much of
every player's moves that heuristic explains; both read one table per graph build, made by
GraphFrames' PageRank (reset probability 0.15, 20 iterations: the usual damping 0.85) beside the
in-degree, kept under ``GRAPH/cache/centrality`` with a manifest naming the build it came from.
"""

from __future__ import annotations

import logging

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, LongType, StructField, StructType

from wikigame_spark import layout, outputs, parquet, storage
from wikigame_spark.graph.frame import IN_DEGREE, degrees, graphframe, read_graph
from wikigame_spark.handles import GraphHandle
from wikigame_spark.layout import CacheDir
from wikigame_spark.schemas import ID

log = logging.getLogger(__name__)

PAGERANK = "pagerank"
MEASURES = (PAGERANK, IN_DEGREE)
RESET_PROBABILITY = 0.15
ITERATIONS = 20
TABLE = "centrality"
CENTRALITY = StructType(
    [
        StructField(ID, LongType(), False),
        StructField(PAGERANK, DoubleType(), False),
        StructField(IN_DEGREE, LongType(), False),
    ]
)


def centrality(nodes: DataFrame, edges: DataFrame) -> DataFrame:
    """``id, pagerank, in_degree`` of every node."""
    ranks = graphframe(nodes, edges).pageRank(resetProbability=RESET_PROBABILITY, maxIter=ITERATIONS).vertices
    ranks = ranks.select(ID, F.col(PAGERANK).cast(DoubleType()).alias(PAGERANK))
    return ranks.join(degrees(nodes, edges), ID).select(ID, PAGERANK, IN_DEGREE)


def ensure_centrality(spark: SparkSession, graph: GraphHandle, cache_dir: str = "") -> str:
    """The centrality cache of ``graph`` (its path), computed first when missing or made from
    another build of the graph."""
    path = CacheDir(cache_dir or graph.cache_dir).centrality
    cache = storage.folder(path, spark)
    created = graph.manifest.get("created")
    if outputs.current_cache(cache, created):
        return path
    log.info("centrality of %s: PageRank (%d iterations) and in-degree, cached at %s", graph.path, ITERATIONS, path)
    g = read_graph(spark, graph)
    manifest = {
        "kind": "centrality",
        "graph": graph.path,
        "source_created": created,
        "reset_probability": RESET_PROBABILITY,
        "iterations": ITERATIONS,
    }
    outputs.write_cache(cache, TABLE, centrality(g.nodes, g.edges).coalesce(1), CENTRALITY, manifest)
    return path


def load_centrality(path: str, measure: str) -> np.ndarray:
    """One measure of every node, indexed by node id (ids are dense), on a worker or the driver."""
    if measure not in MEASURES:
        raise ValueError(f"centrality: {measure!r} is not one of {', '.join(MEASURES)}")
    table = parquet.read_columns(layout.join(path, TABLE), [ID, measure])
    ids = table.column(ID).to_numpy()
    out = np.zeros(int(ids.max()) + 1 if ids.size else 0, dtype=np.float64)
    out[ids] = table.column(measure).to_numpy().astype(np.float64)
    return out
