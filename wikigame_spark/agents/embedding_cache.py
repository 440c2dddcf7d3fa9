"""Every node text embedded at most once per model: a Parquet cache beside the graph.

The cache of a (graph, model, text, prompt) is computed with a pandas UDF on the executors (one
model load per worker), written atomically with a manifest, and reused by every later run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, FloatType, LongType, StructField, StructType

from wikigame_spark import io
from wikigame_spark.agents.sentence_models import encode, load_model, model_slug
from wikigame_spark.schemas import ID, NODES, require_columns

log = logging.getLogger(__name__)

VECTOR = "vector"
EMBEDDINGS = StructType([StructField(ID, LongType(), False), StructField(VECTOR, ArrayType(FloatType(), False), False)])


def embed_nodes(
    nodes: DataFrame, model: str, text_col: str, prompt_name: str | None, batch_size: int = 64
) -> DataFrame:
    """``(id, vector)`` for every node, the text taken from ``text_col``."""
    require_columns(nodes, [ID, text_col], "embed_nodes(nodes)")

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        m = load_model(model)
        for pdf in batches:
            vectors = encode(m, pdf[text_col].fillna("").tolist(), prompt_name, batch_size)
            yield pd.DataFrame({ID: pdf[ID].to_numpy(), VECTOR: list(vectors)})

    return nodes.select(ID, text_col).mapInPandas(run, EMBEDDINGS)


def cache_path(cache_dir: str, model: str, text_col: str, prompt_name: str | None) -> str:
    return f"{cache_dir.rstrip('/')}/embeddings/{model_slug(model)}/{text_col}-{prompt_name or 'noprompt'}"


def ensure_embeddings(
    spark: SparkSession, graph_dir: str, cache_dir: str, model: str, text_col: str, prompt_name: str | None
) -> str:
    """The cache directory for these embeddings, computing it first if it is not there."""
    path = cache_path(cache_dir, model, text_col, prompt_name)
    created = io.read_manifest(spark, graph_dir).get("created")
    if io.current_cache(spark, path, created):
        return path
    nodes = io.read_table(spark, f"{graph_dir}/nodes", NODES)
    n_parts = max(spark.sparkContext.defaultParallelism, 1)
    vectors = embed_nodes(nodes.repartition(n_parts, ID), model, text_col, prompt_name)
    manifest = {
        "kind": "embeddings",
        "graph": graph_dir,
        "source_created": created,
        "model": model,
        "text": text_col,
        "prompt_name": prompt_name,
    }
    io.write_cache(spark, path, "vectors", vectors, EMBEDDINGS, manifest)
    log.info("embedded %s of %s with %s into %s", text_col, graph_dir, model, path)
    return path


def load_matrix(path: str, num_nodes: int) -> np.ndarray:
    """The cached vectors as an (N, d) float32 array indexed by node id."""
    table = io.read_columns(f"{path}/vectors", [ID, VECTOR]).sort_by(ID)
    ids = table.column(ID).to_numpy()
    if ids.size != num_nodes or (ids.size and (ids[0] != 0 or ids[-1] != num_nodes - 1)):
        raise ValueError(f"{path}: {ids.size} vectors for a graph of {num_nodes} nodes; rebuild the cache")
    flat = table.column(VECTOR).combine_chunks().flatten().to_numpy()
    return flat.reshape(num_nodes, -1).astype(np.float32, copy=False)
