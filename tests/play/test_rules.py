"""The rules of a move (play/rules.py) and the engine under them: revisits, the back button."""

import numpy as np

from wikigame_spark.agents.base import Agent, Choice
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.play.engine import play_games
from wikigame_spark.play.rules import Rules, Walk, offered_links

# 0 → 1 → 2 (a dead end), 0 → 3 → 4 (the target), 1 → 0
EDGES = [(0, 1), (1, 2), (0, 3), (3, 4), (1, 0)]


def graph() -> WorkerGraph:
    src, dst = (np.array(c, dtype=np.int64) for c in zip(*EDGES))
    return WorkerGraph([f"P{i}" for i in range(5)], [""] * 5, src, dst)


def test_links_minus_visited_unless_revisits():
    g = graph()
    assert offered_links(g, [0, 1]).tolist() == [2]
    assert offered_links(g, [0, 1], allow_revisits=True).tolist() == [0, 2]


def test_the_back_button_is_offered_after_a_link_and_walks_the_history():
    g = graph()
    walk = Walk(0, Rules(allow_back=True))
    assert walk.back_page is None and walk.offered(g).tolist() == [1, 3]
    assert walk.move(1) is False
    assert walk.back_page == 0 and walk.offered(g).tolist() == [0, 2]  # back to 0, though 0 is visited
    assert walk.move(2) is False
    assert walk.offered(g).tolist() == [1]  # a dead end, but the back button is left
    assert walk.move(1) is True and walk.move(0) is True  # back twice, along the history
    assert walk.back_page is None and walk.offered(g).tolist() == [3]  # 1 is visited; nothing to go back to
    assert walk.route == [0, 1, 2, 1, 0] and walk.back_moves == 2


def test_without_the_back_button_nothing_visited_is_offered():
    g = graph()
    walk = Walk(0, Rules())
    walk.move(1)
    assert walk.back_page is None and walk.offered(g).tolist() == [2]


def test_a_replay_finds_the_back_moves_from_the_route_alone():
    moves = [(node, back) for _, node, back in Walk.replay([0, 1, 2, 1, 0, 3, 4], Rules(allow_back=True))]
    assert moves == [(1, False), (2, False), (1, True), (0, True), (3, False), (4, False)]
    plain = [back for _, _, back in Walk.replay([0, 1, 0, 1], Rules(allow_revisits=True))]
    assert plain == [False, False, False]  # without the button a return is a link


class FirstLink(Agent):
    """Takes the lowest offered link, the back button only when nothing else is left."""

    deterministic = True

    def choose(self, requests):
        return [Choice(node=int(next((n for n in r.offered if n != r.back), r.back))) for r in requests]


def test_the_engine_goes_back_out_of_a_dead_end_and_counts_the_step():
    g = graph()
    game = {"game_id": 0, "source": 0, "target": 4, "optimal_steps": 2}
    agent = FirstLink(g, FirstLink.configure(), {})
    stuck = play_games([game], g, agent, 10, "first", None, Rules())[0]
    assert stuck["outcome"] == "dead_end" and stuck["route"] == [0, 1, 2]
    back = play_games([game], g, agent, 10, "first", None, Rules(allow_back=True))[0]
    # 0 → 1 → 2 → back to 1 → back to 0 → 3 → 4: two back moves, six steps
    assert back["outcome"] == "success" and back["route"] == [0, 1, 2, 1, 0, 3, 4] and back["steps"] == 6


def test_a_deterministic_agent_circling_with_the_back_button_is_a_loop():
    g = graph()
    game = {"game_id": 0, "source": 0, "target": 4, "optimal_steps": 2}

    class Bounce(FirstLink):  # 0 → 1, then back to 0, then 1 again: the same state
        def choose(self, requests):
            return [Choice(node=1 if r.current == 0 else 0) for r in requests]

    rules = Rules(allow_revisits=True, allow_back=True)
    played = play_games([game], g, Bounce(g, Bounce.configure(), {}), 50, "bounce", None, rules)[0]
    assert played["outcome"] == "loop" and played["steps"] == 2
