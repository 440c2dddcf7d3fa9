"""Study protocols (``--protocol``): a study's defaults in one word; YAML and flags still override.

The settings' dataclass defaults are the paper's. A settings or options class gives each other
protocol's defaults in its ``PRESETS`` class attribute (protocol → {setting: value}), beside the
settings they change. LLM-WikiRace (Ziomek et al., 2026): games in the largest strongly connected
component, equal numbers per difficulty band (``SampleGamesConfig``), 30 steps, revisits allowed
(:data:`PLAY_RULES`), every out-link shown (``LlmOptions``).
"""

from __future__ import annotations

from typing import Any

PAPER = "paper"
LLM_WIKIRACE = "llm-wikirace"
PROTOCOLS = (PAPER, LLM_WIKIRACE)

# The rules of play each protocol sets (the play job's defaults and presets; the report reads a
# run's departures from them).
PLAY_RULES = {
    PAPER: {"max_steps": 100, "allow_revisits": False, "allow_back": False},
    LLM_WIKIRACE: {"max_steps": 30, "allow_revisits": True, "allow_back": False},
}


def preset(cls: type, protocol: str | None) -> dict[str, Any]:
    """The settings ``protocol`` gives ``cls`` (a job's settings, or an agent's options) in place
    of its defaults (none for an unknown name: the ``protocol`` setting's choices say what is valid)."""
    return dict(getattr(cls, "PRESETS", {}).get(protocol or PAPER, {}))
