"""The tool interface against a stub server that answers by tool calls, well and badly: every kind of
invalid call is counted, answered as wikiarena's tool_strict_v1 answers it, and ends the game at its limit."""

import json

import mlflow
import pytest
from mlflow.tracking import MlflowClient

from wikigame_spark.agents import tool_calls
from wikigame_spark.agents.llm import LlmAgent, LlmOptions, ReasoningAgent
from wikigame_spark.agents.traces import TraceTarget
from wikigame_spark.config import ConfigError
from wikigame_spark.devtools.faulty_server import FaultyServer
from wikigame_spark.devtools.games import small_graph
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.outcomes import INVALID_CALLS, NO_RESPONSE, SUCCESS
from wikigame_spark.play.engine import play_games
from wikigame_spark.play.rules import Rules

INVALID = ["garbage", "invent", "notitle", "malformed", "unknown", "several", "intext"]
BEHAVIOURS = ["good", "oncebad", "thinks", "500", *INVALID]


@pytest.fixture()
def graph(tmp_path):
    # Start links to Middle and to every target; Middle links to every target too.
    titles = ["Start", "Middle", *[f"Target {b}" for b in BEHAVIOURS]]
    targets = range(2, len(titles))
    edges = [(0, 1)] + [(0, t) for t in targets] + [(1, t) for t in targets]
    return WorkerGraph.from_directory(small_graph(tmp_path, titles, edges))


def agent(graph, url, **extra):
    options = {"model": "test", "base_url": url, "timeout": 0.5, "http_retries": 0, "backoff": 0.01}
    return LlmAgent(graph, LlmAgent.configure(**{**options, "concurrency": 4, "interface": "tools", **extra}), {})


def play(agent, graph, games=None, rules=None):
    games = games or [
        {"game_id": i, "source": 0, "target": t, "optimal_steps": 1} for i, t in enumerate(range(2, graph.num_nodes))
    ]
    rows = play_games(games, graph, agent, 10, agent.name, "test", rules or Rules())
    return {graph.titles[r["target"]].split()[-1]: r for r in rows}


def test_each_invalid_call_is_counted_and_ends_the_game_at_the_limit(graph):
    with FaultyServer() as server:
        rows = play(agent(graph, server.url), graph)
    outcome = {b: r["outcome"] for b, r in rows.items()}
    assert outcome == {
        "good": SUCCESS,
        "oncebad": SUCCESS,
        "thinks": SUCCESS,
        "500": NO_RESPONSE,
        **{b: INVALID_CALLS for b in INVALID},
    }
    # wikiarena's limit: the third invalid call on one page ends the game
    assert {b: rows[b]["invalid_calls"] for b in outcome} == {
        "good": 0,
        "oncebad": 1,
        "thinks": 0,
        "500": 0,
        **{b: 3 for b in INVALID},
    }
    reasons = {
        "garbage": tool_calls.NO_CALL,
        "intext": tool_calls.NO_CALL,
        "invent": tool_calls.NOT_ON_PAGE,
        "notitle": tool_calls.NO_TITLE,
        "malformed": tool_calls.NO_TITLE,
        "unknown": tool_calls.UNKNOWN_TOOL,
        "several": tool_calls.MULTIPLE,
    }
    for behaviour, reason in reasons.items():
        assert rows[behaviour]["detail"].startswith("3 invalid calls on this page; last: " + reason), rows[behaviour]
        assert rows[behaviour]["queries"] == 3
    assert rows["oncebad"]["queries"] == 2 and rows["oncebad"]["steps"] == 1
    # the server's thinking and its prefix cache counted apart
    assert rows["thinks"]["reasoning_tokens"] == 3 and rows["thinks"]["cached_tokens"] == 4
    assert rows["good"]["reasoning_tokens"] == 0 and rows["good"]["cached_tokens"] == 0


def test_invalid_calls_are_answered_in_the_conversation(graph):
    with FaultyServer() as server:
        play(agent(graph, server.url), graph)
        requests = server.requests
    asked = {
        b: [r for r in requests if r["messages"][1]["content"].startswith(f'The target page is "Target {b}".')]
        for b in BEHAVIOURS
    }
    first = asked["good"][0]
    assert first["tool_choice"] == "auto" and first["parallel_tool_calls"] is False
    click = first["tools"][0]["function"]
    assert click["name"] == "click_link" and "Target good" in click["parameters"]["properties"]["title"]["enum"]
    assert [t["function"]["name"] for t in first["tools"]] == ["click_link"]  # no back button
    # a reply without a call: the reason as a user message; the conversation grows by two each time
    garbage = asked["garbage"]
    assert [len(r["messages"]) for r in garbage] == [2, 4, 6]
    assert garbage[1]["messages"][3]["role"] == "user"
    assert garbage[1]["messages"][3]["content"].startswith('Invalid move. You are still on the page "Start".')
    # calls that are invalid: the reason as each call's result
    several = asked["several"][1]["messages"]
    assert [m["role"] for m in several[2:]] == ["assistant", "tool", "tool"]
    assert {m["tool_call_id"] for m in several[3:]} == {"call_0", "call_1"}
    assert "made 2 tool calls" in several[3]["content"]


@pytest.mark.parametrize("history", [0, 1])
def test_each_call_gets_the_next_page_and_history_keeps_the_last_pages(tmp_path, history):
    # P0 → P1 → P2 → P3 → the target: the stub clicks the first link while the target is not listed
    titles = ["P0", "P1", "P2", "P3", "Target good"]
    g = WorkerGraph.from_directory(small_graph(tmp_path, titles, [(0, 1), (1, 2), (2, 3), (3, 4)]))
    game = {"game_id": 0, "source": 0, "target": 4, "optimal_steps": 4}
    with FaultyServer() as server:
        rows = play(agent(g, server.url, history=history), g, [game])
        asked = server.requests
    assert rows["good"]["outcome"] == SUCCESS and rows["good"]["route"] == [0, 1, 2, 3, 4]
    assert [len(r["messages"]) for r in asked] == [2, 4, 6, 8]
    last = asked[-1]["messages"]
    assert [m["role"] for m in last] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert all(last[i]["tool_call_id"] == last[i - 1]["tool_calls"][0]["id"] for i in (3, 5, 7))
    assert last[1]["content"].startswith('The target page is "Target good". Its summary: ')
    pages = [last[1]["content"].split("\n\n", 1)[1]] + [last[i]["content"] for i in (3, 5, 7)]
    if history == 0:
        assert pages == [f'You are on the page "P{i}".\nIts links: ["{titles[i + 1]}"]' for i in range(4)]
    else:  # the earlier pages by title only
        assert pages[:3] == [f'You were on the page "P{i}".' for i in range(3)]
        assert pages[3] == 'You are on the page "P3".\nIts links: ["Target good"]'


def test_the_back_button_is_a_tool(tmp_path):
    # A → B → (dead end but for the back button): the model goes back, then reaches C from A.
    g = WorkerGraph.from_directory(small_graph(tmp_path, ["A", "B", "Target good"], [(0, 1), (0, 2), (1, 0)]))
    with FaultyServer() as server:
        rows = play(agent(g, server.url), g, [{"game_id": 0, "source": 1, "target": 2, "optimal_steps": 2}])
        asked = server.requests
    assert rows["good"]["outcome"] == SUCCESS and rows["good"]["route"] == [1, 0, 2]
    second = asked[1]["messages"]
    assert second[-1]["role"] == "tool" and second[-1]["content"].startswith('You are on the page "A".')


def test_calls_in_text_count_when_asked(tmp_path):
    titles = ["P0", "P1", "Target intext"]
    g = WorkerGraph.from_directory(small_graph(tmp_path, titles, [(0, 1), (1, 2)]))
    game = {"game_id": 0, "source": 0, "target": 2, "optimal_steps": 2}
    with FaultyServer() as server:
        rows = play(agent(g, server.url, calls_in_text=True), g, [game])
        asked = server.requests
    assert rows["intext"]["outcome"] == SUCCESS and rows["intext"]["invalid_calls"] == 0
    # no call id names the result: the next page comes as a user message
    assert [m["role"] for m in asked[-1]["messages"]] == ["system", "user", "assistant", "user"]
    assert asked[-1]["messages"][3]["content"].startswith('You are on the page "P1".')


def test_the_games_limit_of_invalid_calls(tmp_path):
    g = WorkerGraph.from_directory(small_graph(tmp_path, ["P0", "Target garbage"], [(0, 1)]))
    game = {"game_id": 0, "source": 0, "target": 1, "optimal_steps": 1}
    with FaultyServer() as server:
        rows = play(agent(g, server.url, invalid_per_page=5, invalid_per_game=2), g, [game])
    assert rows["garbage"]["outcome"] == INVALID_CALLS and rows["garbage"]["invalid_calls"] == 3
    assert rows["garbage"]["detail"].startswith("3 invalid calls in the game; last: tool_call_required")


def test_the_reasoning_budget_goes_to_the_server(tmp_path):
    g = WorkerGraph.from_directory(small_graph(tmp_path, ["P0", "Target good"], [(0, 1)]))
    with FaultyServer() as server:
        play(
            agent(g, server.url, reasoning_budget=64), g, [{"game_id": 0, "source": 0, "target": 1, "optimal_steps": 1}]
        )
        [request] = server.requests
    assert request["reasoning_budget_tokens"] == 64  # llama.cpp's per-request field


def test_options_are_checked():
    with pytest.raises(ConfigError, match="interface"):
        LlmOptions(interface="xml").validate()
    with pytest.raises(ConfigError, match="constrained"):
        LlmOptions(interface="tools", constrained="grammar").validate()
    with pytest.raises(ConfigError, match="only apply to --interface tools"):
        LlmOptions(history=2).validate()
    with pytest.raises(ConfigError, match="interface: tools is --agent llm's"):
        ReasoningAgent.check_options(LlmOptions(interface="tools"))


def test_check_follows_wikiarena_order():
    on_page = {"Riga"}
    assert tool_calls.check([], on_page, False).reason == tool_calls.NO_CALL
    two = [("click_link", '{"title": "Riga"}')] * 2
    assert tool_calls.check(two, on_page, False).reason == tool_calls.MULTIPLE
    assert tool_calls.check([("go_back", "{}")], on_page, False).reason == tool_calls.UNKNOWN_TOOL
    assert tool_calls.check([("go_back", "{}")], on_page, True).back
    assert tool_calls.check([("click_link", '{"title": ""}')], on_page, False).reason == tool_calls.NO_TITLE
    assert tool_calls.check([("click_link", '{"title": "Oslo"}')], on_page, False).reason == tool_calls.NOT_ON_PAGE
    assert tool_calls.check([("click_link", json.dumps({"title": "Riga"}))], on_page, False).title == "Riga"


def test_a_traced_tool_call_shows_the_call_and_the_thinking_apart(tmp_path):
    titles = ["P0", "Target thinks"]
    g = WorkerGraph.from_directory(small_graph(tmp_path, titles, [(0, 1)]))
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = MlflowClient(uri)
    experiment = client.create_experiment("tools")
    run = client.create_run(experiment).info.run_id
    with FaultyServer() as server:
        options = {"model": "test", "base_url": server.url, "interface": "tools", "trace_games": 1}
        settings = LlmAgent.configure(**options, trace=TraceTarget(uri, experiment, run))
        rows = play(LlmAgent(g, settings, {}), g, [{"game_id": 0, "source": 0, "target": 1, "optimal_steps": 1}])
    mlflow.set_tracking_uri(uri)
    [trace] = client.search_traces(locations=[experiment], run_id=run)
    [query] = [s for s in trace.data.spans if s.parent_id is not None]
    assert query.outputs["tool_calls"] == [{"name": "click_link", "arguments": '{"title": "Target thinks"}'}]
    assert query.outputs["reasoning"] == "The target is listed, so I click it."
    assert query.attributes["reasoning_tokens"] == 3 == rows["thinks"]["reasoning_tokens"]
    assert query.attributes["cached_tokens"] == 4 and query.inputs["messages"][0]["role"] == "system"
