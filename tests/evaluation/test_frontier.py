"""The frontier of success against price per game: who is on it, who is priced, the invalid-call rate."""

import pandas as pd
import pytest

from wikigame_spark.evaluation import frontier, tables
from wikigame_spark.evaluation.evaluate import metric_key
from wikigame_spark.evaluation.figures import is_png

# label, graph, games, successes, priced, price, queries, prompt, cached, completion, reasoning, invalid, calls
AGENTS = [
    ("random", "g", 10, 0, 10, 1e-9, 0, 0, 0, 0, 0, 0, 40),
    ("tfidf", "g", 10, 3, 10, 1e-7, 0, 0, 0, 0, 0, 0, 30),
    ("embedding", "g", 10, 2, 10, 3e-5, 0, 0, 0, 0, 0, 0, 30),  # dearer than TF-IDF, wins less: off
    ("llm tools", "g", 10, 6, 10, 4e-4, 50, 40_000, 30_000, 2_000, 100, 10, 50),
    ("llm", "g", 10, 6, 10, 9e-4, 60, 50_000, 10_000, 3_000, 0, 0, 40),  # as good, dearer: off
    ("unpriced", "g", 10, 9, 4, 1e-3, 0, 0, 0, 0, 0, 0, 20),  # 4 of 10 games priced: no price
    ("tfidf", "h", 5, 1, 5, 2e-7, 0, 0, 0, 0, 0, 0, 10),
]
COLUMNS = [
    "label", "graph", "games", "successes", "priced", "price_mean", "queries", "prompt_tokens",
    "cached_tokens", "completion_tokens", "reasoning_tokens", "invalid_calls", "calls",
]  # fmt: skip


@pytest.fixture()
def table():
    groups = pd.DataFrame(AGENTS, columns=COLUMNS)
    return frontier.frontier_table(groups, tables.success_table(groups), {"llm tools"})


def test_the_frontier_keeps_each_agent_no_cheaper_one_beats(table):
    on = table[table["on_frontier"]].set_index(["label", "graph"]).index.tolist()
    assert sorted(on) == [("llm tools", "g"), ("random", "g"), ("tfidf", "g"), ("tfidf", "h")]
    unpriced = table.set_index("label").loc["unpriced"]
    assert pd.isna(unpriced[frontier.PRICE]) and not unpriced["on_frontier"]


def test_tokens_and_the_invalid_call_rate(table):
    t = table.set_index(["label", "graph"])
    tools, llm = t.loc[("llm tools", "g")], t.loc[("llm", "g")]
    assert tools["invalid_call_rate"] == pytest.approx(10 / 50)
    assert pd.isna(llm["invalid_call_rate"])  # the text interface makes no calls
    assert tools["input_tokens_per_game"] == 4_000 and tools["cached_share"] == pytest.approx(0.75)
    assert tools["output_tokens_per_game"] == 200 and tools["reasoning_tokens_per_game"] == 10
    assert pd.isna(t.loc[("tfidf", "g")]["input_tokens_per_game"])  # no requests, no tokens


def test_figure_and_metrics(table):
    assert is_png(frontier.figure(table))
    m = frontier.metrics(table, metric_key)
    assert m["on_frontier.tfidf.g"] == 1.0 and m["on_frontier.embedding.g"] == 0.0
    assert m["invalid_call_rate.llm_tools.g"] == pytest.approx(0.2)
    assert "price_per_game_usd.unpriced.g" not in m
    assert frontier.figure(table.assign(**{frontier.PRICE: None})) is None
