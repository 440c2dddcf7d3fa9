"""The graph layer: a graph directory as DataFrames; degrees and components with GraphFrames.

GraphFrames' Python package is a thin client of its JVM library (``org.graphframes.GraphFrame``),
which ``make install`` puts in ``jars/`` (conf/maven/pom.xml) and every session of the project has
on its classpath (:mod:`wikigame_spark.session`, ``conf/spark-defaults.conf``). Without it the graph
operations stop with :class:`GraphFramesUnavailable`, which says how to attach it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from wikigame_spark import parquet
from wikigame_spark.handles import GraphHandle
from wikigame_spark.layout import EDGES_TABLE, NODES_TABLE
from wikigame_spark.schemas import DST, EDGES, ID, NODES, SRC, require_columns

GRAPHFRAME_CLASS = "org.graphframes.GraphFrame"
IN_DEGREE = "in_degree"
OUT_DEGREE = "out_degree"
COMPONENT = "component"
# Iteration bound for GraphFrames' component algorithms: large enough that they always converge.
MAX_ITER = 2**31 - 2


GRAPHFRAMES_PACKAGE = "io.graphframes:graphframes-spark4_2.13:0.11.0"


class GraphFramesUnavailable(RuntimeError):
    """GraphFrames' JVM library is not on Spark's classpath (a user's fix: attach it)."""


@dataclass
class Graph:
    """A graph directory read: ``nodes`` (contract columns plus any extra ones), ``edges``, and the
    handle it was opened as (path, manifest)."""

    handle: GraphHandle
    nodes: DataFrame
    edges: DataFrame

    @property
    def path(self) -> str:
        return self.handle.path

    @property
    def manifest(self) -> dict:
        return self.handle.manifest

    def identity(self) -> dict:
        return self.handle.identity()


def read_graph(spark: SparkSession, graph: GraphHandle | str) -> Graph:
    """Read a graph's nodes and edges with the contract's schemas (a path is opened first: its
    manifest read once).

    Node columns beyond the contract (e.g. OpenAlex's ``language``) are kept, with the types found
    in the Parquet footers, so that target filters can use them; the contract columns must exist.
    """
    if isinstance(graph, str):
        graph = GraphHandle.open(graph, spark)
    nodes_path = graph.dir.nodes
    found = parquet.read_files(spark, [nodes_path]).schema
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
    nodes = parquet.read_table(spark, graph.folder.sub(NODES_TABLE), StructType(fields))
    edges = parquet.read_table(spark, graph.folder.sub(EDGES_TABLE), EDGES)
    return Graph(handle=graph, nodes=nodes, edges=edges)


def graphframes_available(spark: SparkSession) -> bool:
    """Whether GraphFrames' JVM class can be loaded by this session."""
    try:
        spark.sparkContext._jvm.org.apache.spark.util.Utils.classForName(GRAPHFRAME_CLASS, False, False)
    except Exception:  # py4j wraps ClassNotFoundException in Py4JJavaError
        return False
    return True


def graphframe(nodes: DataFrame, edges: DataFrame):
    """``GraphFrame`` of the ``id`` column and the ``src, dst`` columns (extra columns are left out)."""
    if not graphframes_available(nodes.sparkSession):
        raise GraphFramesUnavailable(
            f"GraphFrames ({GRAPHFRAME_CLASS}) is not on Spark's classpath: pass --packages {GRAPHFRAMES_PACKAGE} "
            "where Maven Central is reachable, or --jars PATH/graphframes-spark4_2.13-0.11.0.jar "
            "(make install puts it in jars/), or install it as a cluster library"
        )
    from graphframes import GraphFrame

    return GraphFrame(nodes.select(ID), edges.select(SRC, DST))


def degrees(nodes: DataFrame, edges: DataFrame) -> DataFrame:
    """``id, in_degree, out_degree`` (longs) for every node, zeros included."""
    require_columns(nodes, [ID], "degrees(nodes)")
    require_columns(edges, [SRC, DST], "degrees(edges)")
    g = graphframe(nodes, edges)
    ins = g.inDegrees.select(ID, F.col("inDegree").cast("long").alias(IN_DEGREE))
    outs = g.outDegrees.select(ID, F.col("outDegree").cast("long").alias(OUT_DEGREE))
    return (
        nodes.select(ID)
        .join(ins, ID, "left")
        .join(outs, ID, "left")
        .select(
            ID, F.coalesce(IN_DEGREE, F.lit(0)).alias(IN_DEGREE), F.coalesce(OUT_DEGREE, F.lit(0)).alias(OUT_DEGREE)
        )
    )


def _smallest_member_labels(labelled: DataFrame) -> DataFrame:
    """``id, component`` with each component named by its smallest node id, whatever the algorithm's labels."""
    smallest = labelled.groupBy(COMPONENT).agg(F.min(ID).alias("_first"))
    return labelled.join(smallest, COMPONENT).select(ID, F.col("_first").alias(COMPONENT))


def weak_components(nodes: DataFrame, edges: DataFrame) -> DataFrame:
    """``id, component`` for every node: equal ⇔ connected ignoring edge direction (GraphFrames'
    ``connectedComponents``); a component is named by its smallest node id."""
    require_columns(nodes, [ID], "weak_components(nodes)")
    require_columns(edges, [SRC, DST], "weak_components(edges)")
    # graphframes-py 0.11.0's default max_iter is 2 ^ 31 - 2 = 31 (XOR): give it the intended bound.
    # two_phase by name: the default name ("graphframes") is deprecated, and runs two_phase with a warning.
    g = graphframe(nodes, edges)
    cc = g.connectedComponents(algorithm="two_phase", use_local_checkpoints=True, max_iter=MAX_ITER)
    return _smallest_member_labels(cc.select(ID, F.col(COMPONENT).cast("long").alias(COMPONENT)))


def strong_components(nodes: DataFrame, edges: DataFrame) -> DataFrame:
    """``id, component`` for every node: equal ⇔ each reaches the other along directed links
    (GraphFrames' ``stronglyConnectedComponents``, run to convergence); named by the smallest id."""
    require_columns(nodes, [ID], "strong_components(nodes)")
    require_columns(edges, [SRC, DST], "strong_components(edges)")
    scc = graphframe(nodes, edges).stronglyConnectedComponents(maxIter=MAX_ITER)
    return _smallest_member_labels(scc.select(ID, F.col(COMPONENT).cast("long").alias(COMPONENT)))


def component_sizes(components: DataFrame) -> DataFrame:
    """``component, size`` of an ``id, component`` table, largest first (ties: smallest name first)."""
    return components.groupBy(COMPONENT).agg(F.count("*").alias("size")).orderBy(F.desc("size"), COMPONENT)
