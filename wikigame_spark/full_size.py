"""The full-size studies a cost is scaled to: the graphs of the paper's Table 1 and the input each build reads.

One definition for the cost sheet (``bench/cost_sheet.py``) and for the cost a play run records of
its embedding cache (:mod:`wikigame_spark.agents.embedding_cache`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FullSize:
    """A study's graph: the sizes the paper gives (Table 1) and the input its build reads."""

    name: str
    input_units: float  # MB of wikitext, or works in the snapshot the build reads whole
    nodes: int
    edges: int


WIKIPEDIA = FullSize("English Wikipedia", 95_000, 6_871_000, 295_749_000)
MEDICINE = FullSize("OpenAlex Medicine", 260_000_000, 20_157_000, 334_463_000)

# The length a node's summary is taken to have at full size (a lead section or abstract cut at
# 1,000 characters, as the cost sheet's inputs are).
SUMMARY_CHARS = 1000

# A play run's metric: the core-hours its embedding caches would take for English Wikipedia.
ENWIKI_CORE_HOURS = "embedding_core_hours_enwiki"
