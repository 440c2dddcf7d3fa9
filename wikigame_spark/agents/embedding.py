"""``embedding``: pick the offered link whose text is most similar to the target's summary.

Cosine similarity of sentence-transformers embeddings between each offered link's summary (or
title, ``use_titles``) and the target's summary; the highest wins, ties to the lowest node id.
By default every node is embedded once, ahead of play, into a cache (see
:mod:`embedding_cache`); ``reencode`` is the paper's method — encode every offered link at every
step — kept as the reference the cache is verified against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyspark.sql import SparkSession

from wikigame_spark.agents.base import (
    ONE_OFF_CORE_S,
    PREPARED_METRICS,
    Agent,
    AgentSettings,
    Choice,
    ModelIdentity,
    StepRequest,
    register_agent,
)
from wikigame_spark.agents.embedding_cache import cache_cost, cpu_s_per_text, ensure_embeddings, load_matrix
from wikigame_spark.agents.encoders import BACKENDS, DEFAULT, TORCH, Runtime, load_encoder, missing_packages, prepare
from wikigame_spark.agents.options import AgentOptions, option
from wikigame_spark.agents.sentence_models import DEFAULT_MODEL, check_model, model_digest, prompt_names
from wikigame_spark.config import ConfigError
from wikigame_spark.handles import GraphHandle
from wikigame_spark.schemas import SUMMARY, TITLE


def _text_col(settings: AgentSettings) -> str:
    return TITLE if settings.use_titles else SUMMARY


@dataclass(frozen=True)
class EmbeddingOptions(AgentOptions):
    """embedding agent (--model: a sentence-transformers name or path)"""

    reencode: bool = option(False, "the paper's method, re-encode offered links at every step (reference)")
    backend: str = option(DEFAULT.backend, "the runtime that embeds (docs/agents.md#runtimes)", choices=BACKENDS)
    int8: bool = option(False, "int8 weights, activations quantised per batch (docs/agents.md)")

    def validate(self) -> None:
        missing = missing_packages(self.runtime)
        extra = "embedding-torch" if self.backend == TORCH else "embedding"
        if missing:
            raise ConfigError(
                f"--backend {self.backend} needs {', '.join(missing)}: pip install 'wikigame-spark[{extra}]'"
            )

    @property
    def runtime(self) -> Runtime:
        return Runtime(self.backend, self.int8)

    def run_name_parts(self) -> tuple[str, ...]:
        return () if self.runtime == DEFAULT else (self.runtime.name,)

    @classmethod
    def label_parts(cls, params: dict) -> tuple[str, ...]:
        """Its runtime, unless the default (a run without one: torch's, older than the option)."""
        runtime = Runtime(params.get("backend") or TORCH, params.get("int8") == "True")
        return () if runtime == DEFAULT else (runtime.backend, *(("int8",) if runtime.int8 else ()))


@register_agent("embedding", options=EmbeddingOptions)
class EmbeddingAgent(Agent):
    deterministic = True
    default_model = DEFAULT_MODEL

    @classmethod
    def prepare(cls, spark: SparkSession, graph: GraphHandle, settings: AgentSettings) -> dict:
        model = cls.model_of(settings)
        query, document = prompt_names(model)
        resources = {"query_prompt": query, "document_prompt": document}
        if settings.options.reencode:
            resources["runtime"], resources["export"] = prepare(spark, model, settings.options.runtime)
            return resources
        cache_dir = settings.cache_dir or graph.cache_dir
        runtime = settings.options.runtime
        resources["targets"] = ensure_embeddings(spark, graph, cache_dir, model, SUMMARY, query, runtime)
        resources["links"] = ensure_embeddings(spark, graph, cache_dir, model, _text_col(settings), document, runtime)
        resources[PREPARED_METRICS] = cache_cost(spark, [resources["targets"], resources["links"]])
        rates = {"target": resources["targets"], "link": resources["links"]}
        resources[ONE_OFF_CORE_S] = {kind: cpu_s_per_text(spark, matrix) for kind, matrix in rates.items()}
        return resources

    @classmethod
    def identity(cls, settings: AgentSettings) -> ModelIdentity:
        model = cls.model_of(settings)
        check_model(model)
        return ModelIdentity(model=model, model_digest=model_digest(model))

    def __init__(self, graph, settings, resources) -> None:
        super().__init__(graph, settings, resources)
        self.model_name = self.model_of(settings)
        self.texts = graph.titles if settings.use_titles else graph.summaries
        if self.opts.reencode:
            self.encoder = load_encoder(self.model_name, resources["runtime"], export=resources["export"])
        else:
            self.targets = load_matrix(resources["targets"], graph.num_nodes)
            self.links = (
                self.targets
                if resources["links"] == resources["targets"]
                else load_matrix(resources["links"], graph.num_nodes)
            )

    def scores(self, target: int, offered: np.ndarray) -> np.ndarray:
        """Cosine similarity of each offered link's text to the target's summary."""
        if self.opts.reencode:
            q = self.resources.get("query_prompt")
            d = self.resources.get("document_prompt")
            target_vector = self.encoder.encode([self.graph.summaries[target]], q)[0]
            return self.encoder.encode([self.texts[i] for i in offered], d) @ target_vector
        return self.links[offered] @ self.targets[target]

    def choose(self, requests: list[StepRequest]) -> list[Choice]:
        # argmax returns the first maximum: offered ids are ascending, so ties go to the lowest id.
        return [Choice(node=int(r.offered[int(np.argmax(self.scores(r.target, r.offered)))])) for r in requests]
