"""Prices per game: a checked prices file, tokens at list prices or compute at a core-hour price, and
the engine pricing real games with what it measured."""

import math
import os

import pytest

from wikigame_spark.agents.base import agent_class
from wikigame_spark.config import ConfigError
from wikigame_spark.devtools.games import small_graph
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.play import prices
from wikigame_spark.play.engine import play_games
from wikigame_spark.session import PROJECT_DIR

SHIPPED = os.path.join(PROJECT_DIR, "conf", "prices.yaml")
PRICES = {
    "core_hour": 0.036,
    "models": {"api-model": {"input": 0.15, "cached_input": 0.075, "output": 0.6}, "local-model": {"cores": 2}},
}


def test_tokens_at_list_prices_the_cached_input_apart():
    price = prices.game_price(PRICES, "api-model", served=True)
    # 600 uncached and 400 cached input tokens, 100 output tokens
    assert price.of(1000, 400, 100, 3.0, 50) == pytest.approx((600 * 0.15 + 400 * 0.075 + 100 * 0.6) / 1e6)


def test_compute_at_the_core_hour_price():
    served = prices.game_price(PRICES, "local-model", served=True)
    assert served.of(1000, 0, 10, 36.0, 0) == pytest.approx(36.0 * 2 * 0.036 / 3600)
    # an agent computing in the worker: one core, and its share of the one-off work per text
    local = prices.game_price(PRICES, "", served=False, one_off={"target": 0.5, "link": 0.01})
    assert local.of(0, 0, 0, 2.0, 300) == pytest.approx((2.0 + 0.5 + 300 * 0.01) * 0.036 / 3600)
    assert local.of(0, 0, 0, float("nan"), 3) is None  # no time, no price


def test_no_price_is_claimed_without_one():
    assert prices.game_price(None, "api-model", served=True).of(10, 0, 10, 1.0, 1) is None
    # a served model the file does not name is not priced by compute: its cores are unknown
    assert prices.game_price(PRICES, "other-model", served=True) is prices.NO_PRICE
    assert prices.game_price({"models": {}}, "", served=False) is prices.NO_PRICE


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("core_hour: [", "not YAML"),
        ("rates: {}", "expected the keys"),
        ("core_hour: -1", "core_hour: must be a non-negative number"),
        ("models: {m: {input: 1, output: 2}}", "give all of"),
        ("models: {m: {cores: 0}}", "cores: must be positive"),
        ("models: {m: {input: x, cached_input: 1, output: 1}}", "models.m.input: must be a non-negative number"),
        ("models: {m: {price: 1}}", "give input, cached_input and output"),
    ],
)
def test_a_bad_prices_file_is_one_error(text, message):
    with pytest.raises(ConfigError, match=message):
        prices.read_prices(text, "prices.yaml")


def test_the_shipped_prices_file_and_a_missing_one():
    shipped = prices.load_prices(SHIPPED)
    assert shipped["core_hour"] > 0 and "qwen2.5-coder-0.5b-instruct" in shipped["models"]
    assert prices.load_prices("") is None
    with pytest.raises(ConfigError, match=r"--prices /nowhere\.yaml: cannot read it"):
        prices.load_prices("/nowhere.yaml")


def test_the_engine_prices_each_game_with_what_it_measured(tmp_path):
    graph = WorkerGraph.from_directory(small_graph(tmp_path, ["A", "B", "C", "D"], [(0, 1), (0, 2), (1, 3), (2, 3)]))
    agent = agent_class("random")(graph, agent_class("random").configure(seed=1), {})
    games = [{"game_id": 0, "source": 0, "target": 3, "optimal_steps": 2}]
    price = prices.game_price(PRICES, "", served=False, one_off={"target": 1.0, "link": 0.1})
    [row] = play_games(games, graph, agent, 10, "random", None, price=price)
    # two steps: two links offered at A, one at B or C
    expected = (row["seconds"] + 1.0 + 3 * 0.1) * 0.036 / 3600
    assert row["steps"] == 2 and math.isclose(row["price_usd"], expected)
    [unpriced] = play_games(games, graph, agent, 10, "random", None)
    assert unpriced["price_usd"] is None and unpriced["invalid_calls"] == 0
