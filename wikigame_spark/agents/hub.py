"""``hub``: the offered link with the highest PageRank (or in-degree) — meaning left out entirely.

Recent work guides navigation by centrality; this agent is that heuristic alone, so the report can
say how much of another agent's success it explains (the share of that agent's moves that match
the hub's). The scores are computed once per graph build with GraphFrames
(:mod:`wikigame_spark.graph.centrality`) on the driver and read by every worker; a tie goes to the
lowest node id, so the agent is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyspark.sql import SparkSession

from wikigame_spark.agents.base import Agent, AgentSettings, Choice, StepRequest, register_agent
from wikigame_spark.agents.options import AgentOptions, option
from wikigame_spark.graph.centrality import MEASURES, PAGERANK, ensure_centrality, load_centrality
from wikigame_spark.handles import GraphHandle


@dataclass(frozen=True)
class HubOptions(AgentOptions):
    """Hub options"""

    hub_by: str = option(PAGERANK, "what makes a page a hub: its PageRank, or its in-degree", choices=MEASURES)

    @classmethod
    def label_parts(cls, params: dict) -> tuple[str, ...]:
        by = params.get("hub_by") or PAGERANK
        return () if by == PAGERANK else (f"by {by}",)


def hub_choice(offered: np.ndarray, scores: np.ndarray) -> int:
    """The offered page with the highest score (the lowest id among equals)."""
    return int(offered[np.argmax(scores[offered])])


@register_agent("hub", options=HubOptions)
class HubAgent(Agent):
    deterministic = True
    baseline = True

    @classmethod
    def prepare(cls, spark: SparkSession, graph: GraphHandle, settings: AgentSettings) -> dict:
        return {"centrality": ensure_centrality(spark, graph, settings.cache_dir)}

    def __init__(self, graph, settings, resources) -> None:
        super().__init__(graph, settings, resources)
        self.scores = load_centrality(resources["centrality"], self.opts.hub_by)

    def choose(self, requests: list[StepRequest]) -> list[Choice]:
        return [Choice(node=hub_choice(r.offered, self.scores)) for r in requests]
