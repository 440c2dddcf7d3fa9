"""The LLM agents against a deliberately faulty local server: every outcome is recorded."""

import json

import pytest

from wikigame_spark.agents.llm import LlmAgent, ReasoningAgent
from wikigame_spark.devtools.faulty_server import FaultyServer
from wikigame_spark.devtools.games import small_graph
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.outcomes import SUCCESS
from wikigame_spark.play.engine import play_games

BEHAVIOURS = ["good", "500", "slow", "refuse", "garbage", "blank", "invent", "notitle", "flaky", "busy", "noanswer"]


@pytest.fixture()
def graph(tmp_path):
    titles = ["Start", 'Quote "q"', *[f"Target {b}" for b in BEHAVIOURS]]
    targets = range(2, len(titles))
    edges = [(0, 1)] + [(0, t) for t in targets] + [(1, t) for t in targets]
    return WorkerGraph.from_directory(small_graph(tmp_path, titles, edges))


def settings(url, **extra):
    return LlmAgent.configure(
        **{
            "model": "test",
            "base_url": url,
            "api_key": "sk-secret",
            "timeout": 0.5,
            "http_retries": 1,
            "backoff": 0.01,
            "concurrency": 4,
            "seed": 1,
            **extra,
        }
    )


def play(agent, graph):
    games = [
        {"game_id": i, "source": 0, "target": t, "optimal_steps": 1} for i, t in enumerate(range(2, graph.num_nodes))
    ]
    rows = play_games(games, graph, agent, 10, agent.name, "test")
    return {graph.titles[r["target"]].split()[-1]: r for r in rows}


def test_each_failure_becomes_an_outcome(graph):
    with FaultyServer() as server:
        rows = play(LlmAgent(graph, settings(server.url), {}), graph)
    outcome = {b: r["outcome"] for b, r in rows.items()}
    assert outcome == {
        "good": SUCCESS,
        "flaky": SUCCESS,
        "busy": SUCCESS,
        "noanswer": "hallucination",
        "500": "no_response",
        "slow": "no_response",
        "refuse": "bad_request",
        "garbage": "hallucination",
        "blank": "hallucination",
        "invent": "hallucination",
        "notitle": "hallucination",
    }
    assert rows["good"]["queries"] == 1 and rows["good"]["steps"] == 1
    assert rows["garbage"]["queries"] == 5  # the first answer and the paper's four retries
    assert rows["good"]["prompt_tokens"] == 10 and rows["good"]["completion_tokens"] == 5
    assert rows["refuse"]["detail"].startswith("HTTP 400")
    assert all(r["seconds"] > 0 for r in rows.values())


def test_retries_stay_in_the_conversation_with_the_paper_follow_ups(graph):
    with FaultyServer() as server:
        play(LlmAgent(graph, settings(server.url), {}), graph)
        invent = [r for r in server.requests if "Target invent" in r["messages"][3]["content"]]
        blank = [r for r in server.requests if "Target blank" in r["messages"][3]["content"]]
    assert [len(r["messages"]) for r in invent] == [6, 8, 10, 12, 14]
    last = invent[-1]["messages"]
    assert last[6]["content"] == json.dumps({"title": "Atlantis", "reason": "made up"})
    assert last[7]["content"].startswith('But "Atlantis" is not in the list that was provided!')
    examples = json.loads(last[7]["content"].split("10 example titles from the list are: ")[1].split("]")[0] + "]")
    shown = json.loads(last[5]["content"].split("following list: ")[1])
    assert len(examples) == 10 and set(examples) <= set(shown)
    assert (
        blank[-1]["messages"][6]["content"]
        == '{"title": "Unknown title", "reason": "I did not know which title to select."}'
    )
    # temperature, seed and the title cap go to the server; titles are JSON-encoded
    assert invent[0]["temperature"] == 0.0 and invent[0]["seed"] == 1
    assert 'Quote \\"q\\"' in invent[0]["messages"][5]["content"]


def test_title_cap_and_shuffle(graph):
    with FaultyServer() as server:
        play(LlmAgent(graph, settings(server.url, max_titles=3, shuffle_links=True), {}), graph)
        shown = [json.loads(r["messages"][5]["content"].split("following list: ")[1]) for r in server.requests]
    assert all(len(s) == 3 for s in shown)
    assert len({tuple(s) for s in shown}) > 1


def test_reasoning_needs_an_answer_block(graph):
    with FaultyServer() as server:
        rows = play(ReasoningAgent(graph, settings(server.url), {}), graph)
    assert rows["noanswer"]["outcome"] == "no_answer" and rows["noanswer"]["queries"] == 1
    assert rows["good"]["outcome"] == SUCCESS


def test_response_cache_makes_reruns_free(graph, tmp_path):
    cache = str(tmp_path / "replies")
    with FaultyServer() as server:
        first = play(LlmAgent(graph, settings(server.url, response_cache=cache), {}), graph)
        calls = len(server.requests)
        second = play(LlmAgent(graph, settings(server.url, response_cache=cache), {}), graph)
        assert {b: r["outcome"] for b, r in first.items()} == {b: r["outcome"] for b, r in second.items()}
        # only the failures that raised (no reply to cache) are asked again
        again = len(server.requests) - calls
    assert again < calls / 3


def test_games_the_server_never_answers_stop_the_agent(graph):
    from wikigame_spark.agents.llm_client import ServerUnreachable

    agent = LlmAgent(graph, settings("http://127.0.0.1:9/v1", http_retries=0, max_server_failures=3), {})
    with pytest.raises(ServerUnreachable, match="3 games in a row got no answer"):
        play(agent, graph)


@pytest.mark.slow
def test_in_flight_requests_are_bounded_by_the_servers_slots(graph):
    with FaultyServer(latency=0.2, slots=2) as server:
        agent = LlmAgent(graph, settings(server.url, concurrency=8, timeout=5), {})
        assert agent.in_flight == 2
        rows = play(agent, graph)
    assert rows["good"]["outcome"] == SUCCESS
