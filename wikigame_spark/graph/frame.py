"""The graph layer: a graph directory as DataFrames, degrees and components, GraphFrames when present.

GraphFrames' Python package is a thin client of its JVM library (``org.graphframes.GraphFrame``).
When that class is on Spark's classpath (``--packages io.graphframes:graphframes-spark4_2.13:…``)
degrees and connected components come from GraphFrames; otherwise from the equivalent DataFrame
code below, which gives the same answers. Distances are always computed by
:mod:`wikigame_spark.graph.bfs` (many pairs per pass, message passing on DataFrames, the pattern
of GraphFrames' ``aggregateMessages``): GraphFrames' own ``bfs`` enumerates paths one query at a
time and ``shortestPaths`` keeps a map per vertex that grows with the number of landmarks. Both
are exposed here for comparison (:func:`graphframes_shortest_paths`, :func:`graphframes_bfs_length`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from wikigame_spark import io
from wikigame_spark.schemas import DST, EDGES, ID, NODES, SRC, require_columns

log = logging.getLogger(__name__)

GRAPHFRAME_CLASS = "org.graphframes.GraphFrame"
IN_DEGREE = "in_degree"
OUT_DEGREE = "out_degree"
COMPONENT = "component"


class GraphFramesUnavailable(RuntimeError):
    """GraphFrames' JVM library is not on Spark's classpath."""


@dataclass
class Graph:
    """A graph directory: ``nodes`` (contract columns plus any extra ones), ``edges``, its manifest."""

    path: str
    nodes: DataFrame
    edges: DataFrame
    manifest: dict

    def identity(self) -> dict:
        """What names this graph in the outputs derived from it: path, manifest digest, size."""
        m = self.manifest
        counts = m.get("counts", {})
        digest = hashlib.sha1(json.dumps(m, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
        return {
            "path": self.path,
            "manifest_sha1": digest,
            "kind": m.get("kind"),
            "language": m.get("language"),
            "dbname": m.get("dbname"),
            "created": m.get("created"),
            "code_version": m.get("code_version"),
            "nodes": counts.get("nodes"),
            "edges": counts.get("edges"),
        }


def read_graph(spark: SparkSession, directory: str) -> Graph:
    """Read ``directory``'s nodes and edges with the contract's schemas.

    Node columns beyond the contract (e.g. OpenAlex's ``language``) are kept, with the types found
    in the Parquet footers, so that target filters can use them; the contract columns must exist.
    """
    directory = directory.rstrip("/")
    manifest = io.read_manifest(spark, directory)
    nodes_path = f"{directory}/nodes"
    found = spark.read.parquet(nodes_path).schema
    missing = [f.name for f in NODES.fields if f.name not in found.fieldNames()]
    if missing:
        raise ValueError(
            f"{nodes_path}: missing column(s) {missing} of the node contract {NODES.fieldNames()}; "
            f"got {found.fieldNames()}"
        )
    # The file's column order; the contract's types for its columns, the footer's for the rest
    # (the source's key, e.g. page_id or work_id, and columns such as language).
    contract = {f.name: f for f in NODES.fields}
    fields = [contract.get(f.name, StructField(f.name, f.dataType, True)) for f in found.fields]
    nodes = io.read_table(spark, nodes_path, StructType(fields))
    edges = io.read_table(spark, f"{directory}/edges", EDGES)
    return Graph(path=directory, nodes=nodes, edges=edges, manifest=manifest)


def graphframes_available(spark: SparkSession) -> bool:
    """Whether GraphFrames' JVM class can be loaded by this session."""
    try:
        spark.sparkContext._jvm.org.apache.spark.util.Utils.classForName(GRAPHFRAME_CLASS, False, False)
    except Exception:  # py4j wraps ClassNotFoundException in Py4JJavaError
        return False
    return True


def _graphframe(nodes: DataFrame, edges: DataFrame):
    if not graphframes_available(nodes.sparkSession):
        raise GraphFramesUnavailable(
            f"{GRAPHFRAME_CLASS} is not on the classpath; start Spark with "
            "--packages io.graphframes:graphframes-spark4_2.13:<version>"
        )
    from graphframes import GraphFrame

    return GraphFrame(nodes.select(ID), edges.select(SRC, DST))


def degrees(nodes: DataFrame, edges: DataFrame) -> DataFrame:
    """``id, in_degree, out_degree`` (longs) for every node, zeros included."""
    require_columns(nodes, [ID], "degrees(nodes)")
    require_columns(edges, [SRC, DST], "degrees(edges)")
    if graphframes_available(nodes.sparkSession):
        g = _graphframe(nodes, edges)
        ins = g.inDegrees.select(ID, F.col("inDegree").cast("long").alias(IN_DEGREE))
        outs = g.outDegrees.select(ID, F.col("outDegree").cast("long").alias(OUT_DEGREE))
    else:
        ins = edges.groupBy(F.col(DST).alias(ID)).agg(F.count("*").alias(IN_DEGREE))
        outs = edges.groupBy(F.col(SRC).alias(ID)).agg(F.count("*").alias(OUT_DEGREE))
    return (
        nodes.select(ID)
        .join(ins, ID, "left")
        .join(outs, ID, "left")
        .select(
            ID, F.coalesce(IN_DEGREE, F.lit(0)).alias(IN_DEGREE), F.coalesce(OUT_DEGREE, F.lit(0)).alias(OUT_DEGREE)
        )
    )


def weak_components(nodes: DataFrame, edges: DataFrame, max_rounds: int = 1000) -> DataFrame:
    """``id, component`` for every node: equal components ⇔ connected ignoring edge direction.

    With GraphFrames this is its ``connectedComponents``; otherwise min-label propagation with
    pointer jumping (each node adopts the smallest label among itself and its neighbours, then the
    label of that label), which stops when no label changes; the label is the component's
    smallest node id either way.
    """
    require_columns(nodes, [ID], "weak_components(nodes)")
    require_columns(edges, [SRC, DST], "weak_components(edges)")
    if graphframes_available(nodes.sparkSession):
        cc = _graphframe(nodes, edges).connectedComponents(use_local_checkpoints=True)
        return cc.select(ID, F.col(COMPONENT).cast("long").alias(COMPONENT))
    links = edges.select(SRC, DST)
    labels = nodes.select(ID, F.col(ID).alias(COMPONENT)).localCheckpoint()
    for rounds in range(1, max_rounds + 1):
        # Labels travel both ways along every edge: undirected, without materialising reversed edges.
        forward = links.join(labels.withColumnRenamed(ID, SRC), SRC).select(F.col(DST).alias(ID), COMPONENT)
        backward = links.join(labels.withColumnRenamed(ID, DST), DST).select(F.col(SRC).alias(ID), COMPONENT)
        offers = forward.unionByName(backward).groupBy(ID).agg(F.min(COMPONENT).alias("_offer"))
        lowest = labels.join(offers, ID, "left").select(ID, F.least(COMPONENT, "_offer").alias(COMPONENT))
        hop = lowest.select(F.col(ID).alias(COMPONENT), F.col(COMPONENT).alias("_jump"))
        jumped = lowest.join(hop, COMPONENT, "left").select(ID, F.least(COMPONENT, "_jump").alias(COMPONENT))
        jumped = jumped.localCheckpoint()
        changed = jumped.join(labels.withColumnRenamed(COMPONENT, "_old"), ID).filter(F.col(COMPONENT) != F.col("_old"))
        labels = jumped
        if changed.isEmpty():
            log.info("weak components: converged after %d rounds", rounds)
            return labels
    raise RuntimeError(f"weak components did not converge in {max_rounds} rounds")


def graphframes_shortest_paths(nodes: DataFrame, edges: DataFrame, landmarks: list[int]) -> DataFrame:
    """GraphFrames' ``shortestPaths``: ``id, landmark, distance`` from each vertex to each landmark.

    Only with GraphFrames' JVM library (:class:`GraphFramesUnavailable` otherwise); for comparison.
    """
    sp = _graphframe(nodes, edges).shortestPaths(landmarks=list(landmarks))
    return sp.select(ID, F.explode("distances").alias("landmark", "distance"))


def graphframes_bfs_length(nodes: DataFrame, edges: DataFrame, source: int, target: int, max_len: int) -> int | None:
    """Length of GraphFrames' ``bfs`` shortest path from ``source`` to ``target``, or None."""
    paths = _graphframe(nodes, edges).bfs(f"id = {int(source)}", f"id = {int(target)}", maxPathLength=max_len)
    row = paths.limit(1).collect()
    if not row:
        return None
    return sum(1 for c in paths.columns if c.startswith("e"))
