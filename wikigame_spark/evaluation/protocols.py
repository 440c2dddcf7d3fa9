"""Which study's protocol a play run followed, as the report shows it.

A run's ``protocol`` param (``jobs/play_games.py --protocol``) names the preset its defaults came
from; runs from before the flag, and imported human games, followed the paper's rules. The labels
of other runs carry the protocol, so one agent played under both protocols stays two groups, and a
table with an ``agent`` column gets a ``protocol`` column when runs of both protocols are present.
"""

from __future__ import annotations

import pandas as pd

from wikigame_spark import protocols
from wikigame_spark.protocols import PAPER

PROTOCOL = "protocol"


def run_protocol(params: dict) -> str:
    return params.get(PROTOCOL) or PAPER


def protocol_defaults(protocol: str) -> dict:
    """The rules of play a protocol sets (:data:`~wikigame_spark.protocols.PLAY_RULES`)."""
    return protocols.PLAY_RULES.get(protocol, protocols.PLAY_RULES[PAPER])


def label_suffix(params: dict) -> str:
    """`` [llm-wikirace]`` for a non-paper run, and `` revisits``/`` no revisits``, `` back``/`` no
    back`` when the run departed from its protocol's rules; empty for a run of the paper's protocol."""
    protocol = run_protocol(params)
    text = "" if protocol == PAPER else f" [{protocol}]"
    for rule, word in (("allow_revisits", "revisits"), ("allow_back", "back")):
        allowed = params.get(rule) == "True"
        if allowed != protocol_defaults(protocol)[rule]:
            text += f" {word}" if allowed else f" no {word}"
    return text


def default_max_steps(params: dict) -> str:
    """The step limit a run's label need not mention: its protocol's."""
    return str(protocol_defaults(run_protocol(params))["max_steps"])


def with_protocol_column(table: pd.DataFrame, protocols: dict[str, str], key: str = "agent") -> pd.DataFrame:
    """``table`` with a ``protocol`` column after ``key`` (agent labels) when ``protocols``
    (label → protocol) holds more than one protocol; else ``table`` itself."""
    if len(set(protocols.values())) < 2 or key not in table.columns or PROTOCOL in table.columns:
        return table
    out = table.copy()
    out.insert(out.columns.get_loc(key) + 1, PROTOCOL, out[key].map(protocols).fillna(""))
    return out
