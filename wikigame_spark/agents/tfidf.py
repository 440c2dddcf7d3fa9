"""``tfidf``: pick the offered link whose summary's TF-IDF vector is closest to the target's.

The paper's formulas: IDF(t) = log(N / n_t) over a seeded sample of N summaries (default
100,000; optionally from another graph, the paper's Appendix M); TF(t, d) = f_{t,d} / Σ_t' f_{t',d};
score = cosine similarity of the TF-IDF vectors. Ties go to the lowest node id.
"""

from __future__ import annotations

import functools
import math
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from wikigame_spark import layout, manifests, outputs, parquet, preflight, storage
from wikigame_spark.agents.base import Agent, AgentSettings, Choice, StepRequest, register_agent
from wikigame_spark.agents.options import AgentOptions, option, positive
from wikigame_spark.handles import GraphHandle
from wikigame_spark.layout import NODES_TABLE, CacheDir
from wikigame_spark.schemas import ID, NODES, SUMMARY

TERM = "term"
DOC_FREQ = StructType([StructField(TERM, StringType(), False), StructField("n", LongType(), False)])
VOCAB = StructType([StructField(TERM, StringType(), False), StructField("idf", DoubleType(), False)])


@functools.cache
def _token_pattern() -> re.Pattern:
    # \w alone splits words at combining marks (e.g. Bengali vowel signs); add every mark.
    marks = "".join(chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)).startswith("M"))
    return re.compile(r"[\w" + re.escape(marks) + r"]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased runs of letters, digits and combining marks."""
    return _token_pattern().findall((text or "").lower())


def document_frequencies(texts: DataFrame, text_col: str) -> DataFrame:
    """``(term, n)``: in how many of the texts each term occurs."""

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        counts: Counter = Counter()
        for pdf in batches:
            for text in pdf[text_col]:
                counts.update(set(tokenize(text)))
        yield pd.DataFrame({TERM: list(counts), "n": list(counts.values())})

    return texts.select(text_col).mapInPandas(run, DOC_FREQ).groupBy(TERM).agg(F.sum("n").alias("n"))


def fit_idf(nodes: DataFrame, sample_size: int, seed: int) -> tuple[DataFrame, int]:
    """Vocabulary and IDF from a seeded sample of the nodes' summaries; also the sample size N."""
    sample = nodes.orderBy(F.xxhash64(F.lit(seed), ID), ID).limit(sample_size).persist()
    n_docs = sample.count()
    vocab = document_frequencies(sample, SUMMARY).select(TERM, F.log(F.lit(float(n_docs)) / F.col("n")).alias("idf"))
    return vocab, n_docs


def tfidf_vector(text: str, idf: dict[str, float]) -> dict[str, float]:
    """Unit-length TF-IDF vector of a text (terms outside the vocabulary have no IDF)."""
    tokens = tokenize(text)
    if not tokens:
        return {}
    total = len(tokens)
    weights = {t: (f / total) * idf[t] for t, f in Counter(tokens).items() if t in idf and idf[t] > 0}
    norm = math.sqrt(sum(w * w for w in weights.values()))
    return {t: w / norm for t, w in weights.items()} if norm else {}


def cosine(a: dict[str, float], b: dict[str, float]) -> float:
    """Dot product of two unit-length sparse vectors."""
    if len(a) > len(b):
        a, b = b, a
    return sum(w * b.get(t, 0.0) for t, w in a.items())


@dataclass(frozen=True)
class TfidfOptions(AgentOptions):
    """tfidf agent"""

    corpus_graph: str = option("", "fit the vocabulary on another graph's summaries (default: the played graph)")
    tfidf_sample_size: int = option(100_000, "summaries sampled for IDF (default 100000)")

    def validate(self) -> None:
        positive(self, "tfidf_sample_size")
        if self.corpus_graph and preflight.is_local(self.corpus_graph):  # a URI: checked when read
            preflight.require_graph(storage.folder(self.corpus_graph), "--corpus-graph")


@register_agent("tfidf", options=TfidfOptions)
class TfidfAgent(Agent):
    deterministic = True

    @classmethod
    def prepare(cls, spark: SparkSession, graph: GraphHandle, settings: AgentSettings) -> dict:
        options = settings.options
        corpus = options.corpus_graph or graph.path
        size = options.tfidf_sample_size
        seed = settings.seed
        cache_dir = settings.cache_dir or graph.cache_dir
        corpus_folder = graph.folder if corpus == graph.path else storage.folder(corpus, spark)
        made = graph.manifest if corpus == graph.path else manifests.read_manifest(corpus_folder)
        created = made.get("created")
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", corpus.rstrip("/").rsplit("/", 1)[-1])
        path = CacheDir(cache_dir).tfidf(slug, size, seed)
        cache = storage.folder(path, spark)
        done = outputs.current_cache(cache, created)
        if done:
            return {"vocab": path, "documents": done["documents"]}
        vocab, n_docs = fit_idf(parquet.read_table(spark, corpus_folder.sub(NODES_TABLE), NODES), size, seed)
        manifest = {
            "kind": "tfidf-vocabulary",
            "corpus": corpus,
            "source_created": created,
            "sample_size": size,
            "seed": seed,
            "documents": n_docs,
        }
        outputs.write_cache(cache, layout.VOCAB, vocab, VOCAB, manifest)
        return {"vocab": path, "documents": n_docs}

    def __init__(self, graph, settings, resources) -> None:
        super().__init__(graph, settings, resources)
        table = parquet.read_columns(CacheDir.vocab(resources["vocab"]), [TERM, "idf"])
        self.idf = dict(zip(table.column(TERM).to_pylist(), table.column("idf").to_pylist()))
        self.texts = graph.titles if settings.use_titles else graph.summaries
        self._targets: dict[int, dict] = {}
        self._links: dict[int, dict] = {}

    def _vector(self, cache: dict, texts: list[str], node: int) -> dict[str, float]:
        if node not in cache:
            if len(cache) > 200_000:
                cache.clear()
            cache[node] = tfidf_vector(texts[node], self.idf)
        return cache[node]

    def choose(self, requests: list[StepRequest]) -> list[Choice]:
        out = []
        for r in requests:
            target = self._vector(self._targets, self.graph.summaries, r.target)
            scores = np.array([cosine(self._vector(self._links, self.texts, int(n)), target) for n in r.offered])
            out.append(Choice(node=int(r.offered[int(np.argmax(scores))])))
        return out
