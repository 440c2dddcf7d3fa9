"""Every node text embedded at most once per model: a Parquet cache beside the graph.

The cache of a (graph, model, text, prompt) is computed with a pandas UDF on the executors (one
model load per worker), written atomically with a manifest, and reused by every later run. Its
manifest records what making it cost (the workers' CPU seconds encoding, the texts and characters
encoded), and :func:`cache_cost` scales that to English Wikipedia. The play stage's workers read
it as one float32 matrix file inside the cache, mapped read-only
(:func:`wikigame_spark.graph.mapped.ensure_matrix`): one copy per node, not one per worker.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark import Accumulator
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, FloatType, LongType, StructField, StructType

from wikigame_spark import layout, manifests, outputs, parquet, progress, storage
from wikigame_spark.agents.devices import task_device
from wikigame_spark.agents.encoders import DEFAULT, Runtime, load_encoder, prepare, runtime_for
from wikigame_spark.agents.sentence_models import model_slug
from wikigame_spark.full_size import ENWIKI_CORE_HOURS, SUMMARY_CHARS, WIKIPEDIA
from wikigame_spark.graph import mapped
from wikigame_spark.handles import GraphHandle
from wikigame_spark.layout import NODES_TABLE, CacheDir
from wikigame_spark.schemas import ID, NODES, SUMMARY, require_columns

log = logging.getLogger(__name__)

VECTOR = "vector"
TEXTS_PER_TASK = 200
TASKS_PER_CORE = 4
EMBEDDINGS = StructType([StructField(ID, LongType(), False), StructField(VECTOR, ArrayType(FloatType(), False), False)])


@dataclass(frozen=True)
class EncodingCost:
    """What the workers spent encoding, summed over tasks by Spark accumulators: the CPU seconds
    of the encoding calls (every thread of the worker process; the model's load left out), the
    texts and characters encoded, and the texts encoded on a GPU. A task Spark retries counts twice."""

    cpu_s: Accumulator
    texts: Accumulator
    chars: Accumulator
    gpu_texts: Accumulator

    @classmethod
    def start(cls, spark: SparkSession) -> EncodingCost:
        sc = spark.sparkContext
        return cls(sc.accumulator(0.0), sc.accumulator(0), sc.accumulator(0), sc.accumulator(0))

    def add(self, cpu_s: float, texts: list[str], gpu: bool) -> None:
        self.cpu_s.add(cpu_s)
        self.texts.add(len(texts))
        self.chars.add(sum(map(len, texts)))
        self.gpu_texts.add(len(texts) if gpu else 0)

    def record(self) -> dict:
        """The manifest's ``cost``, read on the driver once the cache is written."""
        return {
            "cpu_s": round(self.cpu_s.value, 3),
            "texts": self.texts.value,
            "chars": self.chars.value,
            "gpu_texts": self.gpu_texts.value,
        }


def embed_nodes(
    nodes: DataFrame,
    model: str,
    text_col: str,
    prompt_name: str | None,
    runtime: Runtime,
    export: str | None,
    cost: EncodingCost | None = None,
) -> DataFrame:
    """``(id, vector)`` for every node, the text taken from ``text_col``, each task's texts on
    the GPU Spark assigned it (with torch), else on the CPU with ``runtime`` from its ``export``
    (as :func:`~wikigame_spark.agents.encoders.prepare` gave them; :mod:`wikigame_spark.agents.devices`);
    what encoding cost added to ``cost``."""
    require_columns(nodes, [ID, text_col], "embed_nodes(nodes)")

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        device = task_device()
        encoder = load_encoder(model, runtime, device.torch, export)
        log.info("embedding %s with %s (%s) on %s", text_col, model, encoder.runtime.backend, device.describe())
        for pdf in batches:
            texts = pdf[text_col].fillna("").tolist()
            started = time.process_time()
            vectors = encoder.encode(texts, prompt_name, device.batch_size)
            if cost is not None:
                cost.add(time.process_time() - started, texts, bool(device.gpus))
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
    if it is not there. A model that embeds on one runtime only (a static model, one with an engine
    of its own: :func:`~wikigame_spark.agents.encoders.runtime_for`) has its cache named and
    recorded for that one."""
    runtime = runtime_for(model, runtime)
    path = cache_path(cache_dir, model, text_col, prompt_name, runtime)
    created = graph.manifest.get("created")
    cache = storage.folder(path, spark)
    if outputs.current_cache(cache, created):
        return mapped.ensure_matrix(spark, path)
    runtime, export = prepare(spark, model, runtime)
    nodes = parquet.read_table(spark, graph.folder.sub(NODES_TABLE), NODES)
    count = graph.identity()["nodes"] or nodes.count()
    cores = max(spark.sparkContext.defaultParallelism, 1)
    # Tasks of TEXTS_PER_TASK texts show progress as they finish; TASKS_PER_CORE at most keeps the
    # files few (each worker loads the model once, whatever its number of tasks).
    n_parts = max(cores, min(math.ceil(count / TEXTS_PER_TASK), TASKS_PER_CORE * cores))
    cost = EncodingCost.start(spark)
    vectors = embed_nodes(nodes.repartition(n_parts, ID), model, text_col, prompt_name, runtime, export, cost)
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
    what = f"embedding {count:,} {text_col} texts with {model} ({runtime.backend})"
    log.info("%s in %d tasks: once per graph and model, later runs read the cache", what, n_parts)
    with progress.spark_tasks(spark, what):
        outputs.write_cache(cache, layout.VECTORS, vectors, EMBEDDINGS, lambda: {**manifest, "cost": cost.record()})
    log.info("embedded %s of %s with %s into %s", text_col, graph.path, model, path)
    return mapped.ensure_matrix(spark, path)


def cache_cost(spark: SparkSession, matrices: list[str]) -> dict[str, float]:
    """What the embedding caches behind these mapped matrices cost to make, as their manifests
    record it: ``embedding_cpu_s`` in all, and :data:`ENWIKI_CORE_HOURS`, each cache's rate
    scaled to English Wikipedia (a summary cache per character, to summaries of
    :data:`SUMMARY_CHARS`; a title cache per text). Empty when a cache has no CPU cost recorded
    (made on a GPU, or before costs were recorded)."""
    cpu_s = core_s = 0.0
    for cache in sorted({CacheDir.of_mapped_matrix(m) for m in matrices}):
        made = manifests.read_manifest(storage.folder(cache, spark))
        cost = made.get("cost") or {}
        if not cost.get("chars") or cost.get("gpu_texts"):
            return {}
        cpu_s += cost["cpu_s"]
        if made.get("text") == SUMMARY:
            core_s += cost["cpu_s"] / cost["chars"] * SUMMARY_CHARS * WIKIPEDIA.nodes
        else:
            core_s += cost["cpu_s"] / cost["texts"] * WIKIPEDIA.nodes
    return {"embedding_cpu_s": cpu_s, ENWIKI_CORE_HOURS: core_s / 3600}


def cpu_s_per_text(spark: SparkSession, matrix: str) -> float:
    """The CPU seconds per text the embedding cache behind ``matrix`` recorded (0 when it recorded
    none: made on a GPU, or without costs)."""
    cost = manifests.read_manifest(storage.folder(CacheDir.of_mapped_matrix(matrix), spark)).get("cost") or {}
    return cost["cpu_s"] / cost["texts"] if cost.get("texts") and not cost.get("gpu_texts") else 0.0


def load_matrix(uri: str, num_nodes: int) -> np.ndarray:
    """The cached vectors as an (N, d) float32 array indexed by node id, mapped read-only."""
    matrix = mapped.map_matrix(uri)
    if matrix.shape[0] != num_nodes:
        raise ValueError(f"{uri}: {matrix.shape[0]} vectors for a graph of {num_nodes} nodes; rebuild the cache")
    return matrix
