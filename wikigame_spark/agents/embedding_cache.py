"""Every node text embedded at most once per model: a Parquet cache beside the graph.

The cache of a (graph, model, text, prompt) is computed with a pandas UDF on the executors (one
model load per worker), written atomically with a manifest, and reused by every later run. The
play stage's workers read it as one float32 matrix file inside the cache, mapped read-only
(:func:`wikigame_spark.graph.mapped.ensure_matrix`): one copy per node, not one per worker.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, FloatType, LongType, StructField, StructType

from wikigame_spark import io, layout
from wikigame_spark.agents.devices import task_device
from wikigame_spark.agents.encoders import DEFAULT, REFERENCE, Runtime, load_encoder
from wikigame_spark.agents.sentence_models import is_static, model_slug
from wikigame_spark.graph import mapped
from wikigame_spark.handles import GraphHandle
from wikigame_spark.layout import CacheDir
from wikigame_spark.schemas import ID, NODES, require_columns

log = logging.getLogger(__name__)

VECTOR = "vector"
EMBEDDINGS = StructType([StructField(ID, LongType(), False), StructField(VECTOR, ArrayType(FloatType(), False), False)])


def embed_nodes(
    nodes: DataFrame, model: str, text_col: str, prompt_name: str | None, runtime: Runtime = DEFAULT
) -> DataFrame:
    """``(id, vector)`` for every node, the text taken from ``text_col``, each task's texts on
    the GPU Spark assigned it (with torch), else on the CPU with ``runtime``
    (:mod:`wikigame_spark.agents.devices`, :mod:`wikigame_spark.agents.encoders`)."""
    require_columns(nodes, [ID, text_col], "embed_nodes(nodes)")

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        device = task_device()
        encoder = load_encoder(model, runtime, device.torch)
        log.info("embedding %s with %s (%s) on %s", text_col, model, encoder.runtime.backend, device.describe())
        for pdf in batches:
            vectors = encoder.encode(pdf[text_col].fillna("").tolist(), prompt_name, device.batch_size)
            yield pd.DataFrame({ID: pdf[ID].to_numpy(), VECTOR: list(vectors)})

    return nodes.select(ID, text_col).mapInPandas(run, EMBEDDINGS)


def cache_path(cache_dir: str, model: str, text_col: str, prompt_name: str | None, runtime: Runtime = DEFAULT) -> str:
    """The cache's folder: the model's, with the runtime beside its name unless torch in float32."""
    slug = model_slug(model) + (f"--{runtime.slug}" if runtime.slug else "")
    return CacheDir(cache_dir).embeddings(slug, text_col, prompt_name)


def ensure_embeddings(
    spark: SparkSession,
    graph: GraphHandle,
    cache_dir: str,
    model: str,
    text_col: str,
    prompt_name: str | None,
    runtime: Runtime = DEFAULT,
) -> str:
    """The mapped matrix of these embeddings (for :func:`load_matrix`), computing the cache first
    if it is not there. A static model has one runtime, sentence-transformers (nothing to export):
    its cache is named and recorded so."""
    runtime = REFERENCE if is_static(model) else runtime
    path = cache_path(cache_dir, model, text_col, prompt_name, runtime)
    created = graph.manifest.get("created")
    if io.current_cache(spark, path, created):
        return mapped.ensure_matrix(spark, path)
    nodes = io.read_table(spark, graph.dir.nodes, NODES)
    n_parts = max(spark.sparkContext.defaultParallelism, 1)
    vectors = embed_nodes(nodes.repartition(n_parts, ID), model, text_col, prompt_name, runtime)
    manifest = {
        "kind": "embeddings",
        "graph": graph.path,
        "source_created": created,
        "model": model,
        "backend": runtime.backend,
        "int8": runtime.int8,
        "text": text_col,
        "prompt_name": prompt_name,
    }
    io.write_cache(spark, path, layout.VECTORS, vectors, EMBEDDINGS, manifest)
    log.info("embedded %s of %s with %s into %s", text_col, graph.path, model, path)
    return mapped.ensure_matrix(spark, path)


def load_matrix(uri: str, num_nodes: int) -> np.ndarray:
    """The cached vectors as an (N, d) float32 array indexed by node id, mapped read-only."""
    matrix = mapped.map_matrix(uri)
    if matrix.shape[0] != num_nodes:
        raise ValueError(f"{uri}: {matrix.shape[0]} vectors for a graph of {num_nodes} nodes; rebuild the cache")
    return matrix
