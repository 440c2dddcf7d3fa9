"""Decision records as chat data a fine-tuning library reads directly (JSON lines).

Each example is the paper's conversation (Listing 5, :func:`~wikigame_spark.agents.prompts.first_messages`)
at one step: the target, then the titles on the current page. The list is the one an LLM agent is
shown: the offered pages in id order, cut at ``max_titles`` (the paper's 200; 0 shows all). The
answer is the assistant's JSON reply naming the shown page nearest the target (the seed breaks
ties, as the expert breaks them); it is optimal whenever the cut left an optimal page in the list.

- SFT: ``{"messages": [...]}``, the conversation with the answer as the last message;
- preferences: ``{"prompt": [...], "chosen": [...], "rejected": [...]}`` where a play's move (shown
  in the list) was farther from the target than the answer — TRL's conversational preference format.

``view`` ``summaries`` (the paper) describes the target by title and summary, ``titles`` by title only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql.types import ArrayType, IntegerType, LongType, StringType, StructField, StructType

from wikigame_spark.agents import prompts
from wikigame_spark.graph.optimal import optimal_choice
from wikigame_spark.graph.profiles import UNREACHED

VIEWS = ("summaries", "titles")
MAX_TITLES = 200  # the paper's cut of the list (500 for GPT models)

MESSAGE = StructType([StructField("role", StringType(), False), StructField("content", StringType(), False)])
MESSAGES = ArrayType(MESSAGE, False)
_KEYS = [
    StructField("game_id", LongType(), False),
    StructField("step", IntegerType(), False),
    StructField("player", StringType(), False),
    StructField("run_id", StringType(), True),  # None for the expert: two runs of one agent stay apart
]
SFT = StructType([StructField("messages", MESSAGES, False), *_KEYS])
PREFERENCES = StructType(
    [
        StructField("prompt", MESSAGES, False),
        StructField("chosen", MESSAGES, False),
        StructField("rejected", MESSAGES, False),
        *_KEYS,
    ]
)


def reply(title: str, target_title: str) -> str:
    """The assistant's answer in the paper's JSON format."""
    reason = f'It is the page on this list nearest to the target page "{target_title}".'
    return json.dumps({"title": title, "reason": reason}, ensure_ascii=False)


def shown(row, max_titles: int) -> int:
    """How many of the row's offered pages the list shows."""
    n = len(row["offered"])
    return min(n, max_titles) if max_titles else n


def prompt(row, max_titles: int, view: str) -> list[dict]:
    summary = row["target_summary"] if view == "summaries" else None
    titles = list(row["offered_titles"][: shown(row, max_titles)])
    messages = prompts.first_messages(row["target_title"], summary or "", titles)
    if summary is None:  # the target by its title alone
        messages[3]["content"] = json.dumps({"title": row["target_title"]}, ensure_ascii=False)
    return messages


def answer(row, max_titles: int, seed: int) -> int | None:
    """Index (into the offered pages) of the answer: the shown page nearest the target."""
    n = shown(row, max_titles)
    distance = np.asarray(row["offered_distances"][:n], dtype=np.int32)
    choice = optimal_choice(np.arange(n), distance, seed, int(row["game_id"]), int(row["step"]))
    return None if choice is None else int(choice)


def examples(row, max_titles: int, view: str, seed: int) -> tuple[dict | None, dict | None]:
    """The SFT example and the preference pair (None where there is none) of one decision record."""
    best = answer(row, max_titles, seed)
    if best is None:
        return None, None
    run_id = None if pd.isna(row["run_id"]) else row["run_id"]
    keys = {"game_id": int(row["game_id"]), "step": int(row["step"]), "player": row["player"], "run_id": run_id}
    asked = prompt(row, max_titles, view)
    chosen = [{"role": "assistant", "content": reply(row["offered_titles"][best], row["target_title"])}]
    sft = {"messages": [*asked, *chosen], **keys}
    offered = list(row["offered"])
    moved = offered.index(row["move"])
    move_d, best_d = int(row["offered_distances"][moved]), int(row["offered_distances"][best])
    worse = move_d == UNREACHED or move_d > best_d
    if moved >= shown(row, max_titles) or not worse:
        return sft, None
    rejected = [{"role": "assistant", "content": reply(row["offered_titles"][moved], row["target_title"])}]
    return sft, {"prompt": asked, "chosen": chosen, "rejected": rejected, **keys}


def _stage(decisions: DataFrame, schema: StructType, which: int, max_titles: int, view: str, seed: int) -> DataFrame:
    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for pdf in batches:
            made = (examples(row, max_titles, view, seed)[which] for row in pdf.to_dict("records"))
            yield pd.DataFrame([m for m in made if m is not None], columns=schema.fieldNames())

    return decisions.mapInPandas(run, schema)


def sft_examples(decisions: DataFrame, max_titles: int, view: str, seed: int) -> DataFrame:
    """DECISIONS → SFT: one conversation per step of every route, answered with the shown page
    nearest the target."""
    return _stage(decisions, SFT, 0, max_titles, view, seed)


def preference_pairs(decisions: DataFrame, max_titles: int, view: str, seed: int) -> DataFrame:
    """DECISIONS → PREFERENCES: a pair per step where a play's move was worse than the answer."""
    return _stage(decisions, PREFERENCES, 1, max_titles, view, seed)
