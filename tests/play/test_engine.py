"""The rules, each outcome on a constructed graph, and valid routes on the real Latgalian graph."""

import itertools

import numpy as np
import pytest

from wikigame_spark.agents.base import Agent, AgentSettings, AgentSpec, Choice, agent_class, worker_agent
from wikigame_spark.devtools.games import bfs_distances, write_games
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.outcomes import DEAD_END, INVALID_CHOICE, STEP_LIMIT, SUCCESS
from wikigame_spark.play.engine import play_games


def graph(n, edges):
    src = np.array([s for s, _ in edges], dtype=np.int64)
    dst = np.array([d for _, d in edges], dtype=np.int64)
    return WorkerGraph([f"T{i}" for i in range(n)], [f"S{i}" for i in range(n)], src, dst)


class Lowest(Agent):
    """Always the lowest offered id: makes routes predictable."""

    def choose(self, requests):
        return [Choice(node=int(r.offered[0])) for r in requests]


class Cheater(Agent):
    def choose(self, requests):
        return [Choice(node=r.target) for r in requests]


def game(source, target, optimal=1, game_id=0):
    return {"game_id": game_id, "source": source, "target": target, "optimal_steps": optimal}


def test_success_counts_pages_moved_to():
    g = graph(4, [(0, 1), (1, 2), (2, 3)])
    [row] = play_games([game(0, 3, 3)], g, Lowest(g, AgentSettings(), {}), 100, "lowest", None)
    assert (row["outcome"], row["steps"], row["route"]) == (SUCCESS, 3, [0, 1, 2, 3])


def test_step_limit():
    g = graph(10, [(i, i + 1) for i in range(9)])
    [row] = play_games([game(0, 9, 9)], g, Lowest(g, AgentSettings(), {}), 4, "lowest", None)
    assert (row["outcome"], row["steps"], row["route"]) == (STEP_LIMIT, 4, [0, 1, 2, 3, 4])


def test_dead_end_and_no_revisits():
    # 0 → 1 → 0 is the only way back: visited pages are not offered, so 1 is a dead end.
    g = graph(3, [(0, 1), (1, 0), (2, 0)])
    [row] = play_games([game(0, 2, 1)], g, Lowest(g, AgentSettings(), {}), 100, "lowest", None)
    assert (row["outcome"], row["steps"], row["route"]) == (DEAD_END, 1, [0, 1])


def test_agent_cannot_leave_the_offered_links():
    g = graph(3, [(0, 1), (1, 2)])
    [row] = play_games([game(0, 2, 2)], g, Cheater(g, AgentSettings(), {}), 100, "cheater", None)
    assert row["outcome"] == INVALID_CHOICE and row["route"] == [0]


def test_ties_go_to_the_lowest_id_for_embedding_like_scores():
    g = graph(4, [(0, 3), (0, 2), (0, 1)])
    # offered links are ascending ids whatever the edge order
    assert list(g.out_links(0)) == [1, 2, 3]


def test_unknown_agent_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"valid agents: .*embedding.*random.*tfidf"):
        agent_class("nope")


def test_random_routes_are_valid_on_the_latgalian_graph(ltg_graph, tmp_path):
    games_dir = write_games(ltg_graph, 40, path=str(tmp_path / "games"))
    import pyarrow.parquet as pq

    games = pq.read_table(f"{games_dir}/games").to_pylist()
    g = WorkerGraph.from_directory(ltg_graph)
    agent = worker_agent(AgentSpec("random", AgentSettings(seed=3)), g)
    rows = play_games(games, g, agent, 100, "random", None)
    adj = {u: set(g.out_links(u).tolist()) for u in range(g.num_nodes)}
    outcomes = set()
    for row, gm in zip(rows, games):
        route = row["route"]
        assert route[0] == gm["source"] and row["steps"] == len(route) - 1 <= 100
        assert len(set(route)) == len(route)
        assert all(b in adj[a] for a, b in itertools.pairwise(route))
        assert (row["outcome"] == SUCCESS) == (route[-1] == gm["target"])
        assert row["optimal_steps"] == bfs_distances(adj, gm["source"])[gm["target"]]
        if row["outcome"] == SUCCESS:
            assert row["steps"] >= row["optimal_steps"]
        outcomes.add(row["outcome"])
    assert outcomes <= {SUCCESS, STEP_LIMIT, DEAD_END}
    # same seed, same routes; another seed, other routes
    again = play_games(games, g, agent, 100, "random", None)
    assert [r["route"] for r in again] == [r["route"] for r in rows]
    other = play_games(games, g, worker_agent(AgentSpec("random", AgentSettings(seed=4)), g), 100, "random", None)
    assert [r["route"] for r in other] != [r["route"] for r in rows]
