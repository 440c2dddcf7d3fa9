"""The arena's rules and journal without a browser: outcomes the browser tests do not reach, and a
journal cut short by a crash mid-write."""

from __future__ import annotations

import json

import pytest

from wikigame_spark.devtools.games import small_graph
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.human.arena import Arena, Refused, check_name, plays_rows
from wikigame_spark.outcomes import GAVE_UP
from wikigame_spark.play.rules import Rules

# 0 → 1 → 2 → 3, 2 → 1, 0 → 4 (4 has no links), 3 → 0
EDGES = [(0, 1), (1, 2), (2, 3), (2, 1), (0, 4), (3, 0)]
GAMES = [
    {"game_id": 0, "source": 0, "target": 3, "optimal_steps": 3},
    {"game_id": 1, "source": 4, "target": 0, "optimal_steps": 1},  # no way out of 4: dead end at once
    {"game_id": 2, "source": 1, "target": 0, "optimal_steps": 3},
]
RUN = {"graph": "g", "games_dir": "g/games"}


@pytest.fixture
def graph(tmp_path):
    return WorkerGraph.from_directory(small_graph(tmp_path, ["A", "B", "C", "D", "E"], EDGES))


def arena(graph, path, max_steps=100, time_limit=600.0):
    return Arena(graph, GAMES, str(path), time_limit, max_steps, RUN)


def test_step_limit_dead_end_and_give_up(graph, tmp_path):
    a = arena(graph, tmp_path / "j.jsonl", max_steps=2)
    play = a.view("Ann", 0)
    assert a.offered(play) == [1, 4]
    a.move("Ann", 0, 1, 1)
    assert a.move("Ann", 0, 2, 2).outcome == "step_limit"
    assert a.view("Ann", 1).outcome == "dead_end"  # nothing offered at the source
    a.view("Ann", 2)
    assert a.give_up("Ann", 2).outcome == GAVE_UP
    assert a.next_game("Ann") is None
    rows = plays_rows(a.finished())
    assert [(r["game_id"], r["outcome"], r["steps"], r["route"]) for r in rows] == [
        (0, "step_limit", 2, [0, 1, 2]),
        (1, "dead_end", 0, [4]),
        (2, GAVE_UP, 0, [1]),
    ]
    assert {r["agent"] for r in rows} == {"human"} and {r["model"] for r in rows} == {"Ann"}


def test_a_visited_page_is_never_offered_again(graph, tmp_path):
    a = arena(graph, tmp_path / "j.jsonl")
    a.view("Bo", 0)
    for step, node in enumerate([1, 2], 1):
        play = a.move("Bo", 0, step, node)
    assert a.offered(play) == [3]  # 2 links to 1 too, but 1 was visited
    with pytest.raises(Refused) as e:
        a.move("Bo", 0, 3, 1)
    assert e.value.status == 400 and play.route == [0, 1, 2]
    play = a.move("Bo", 0, 3, 3)
    assert play.outcome == "success" and play.steps == 3


def test_a_journal_cut_mid_line_resumes_at_the_last_answered_move(graph, tmp_path):
    path = tmp_path / "j.jsonl"
    a = arena(graph, path)
    a.view("Cy", 0)
    a.move("Cy", 0, 1, 1)
    a.close()
    with open(path, "ab") as f:
        f.write(b'{"event": "move", "game_id": 0, "node": 2, "pl')  # the crash came mid-write
    b = arena(graph, path)
    play = b.view("Cy", 0)
    assert play.route == [0, 1] and play.outcome is None
    b.move("Cy", 0, 2, 2)
    b.close()
    lines = path.read_text().splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["run", "start", "move", "move"]


def test_other_settings_refuse_to_resume(graph, tmp_path):
    arena(graph, tmp_path / "j.jsonl").close()
    with pytest.raises(ValueError, match="max_steps"):
        arena(graph, tmp_path / "j.jsonl", max_steps=5)


@pytest.mark.parametrize("name", ["", " Ann", "Ann ", "<b>", "a/b", "..", "_x", "x" * 41, "tab\there"])
def test_bad_names_are_refused(name):
    with pytest.raises(Refused) as e:
        check_name(name)
    assert e.value.status == 400


@pytest.mark.parametrize("name", ["Ann", "Zoë O'Neil-2", "Jānis Bērziņš", "p01", "A.B_c"])
def test_names_in_any_script_are_accepted(name):
    assert check_name(name) == name


def test_the_back_button_is_a_move_and_survives_a_restart(graph, tmp_path):
    """0 → 4 is a dead end; with the back button the player steps back to 0 and goes on."""
    path = tmp_path / "j.jsonl"
    a = Arena(graph, GAMES, str(path), 600.0, 100, RUN, Rules(allow_back=True))
    play = a.view("Cy", 0)
    assert play.walk.back_page is None and a.offered(play) == [1, 4]
    play = a.move("Cy", 0, 1, 4)
    assert play.outcome is None and a.offered(play) == [0]  # no links, but the way back
    play = a.move("Cy", 0, 2, 0)
    assert play.walk.back_moves == 1 and a.offered(play) == [1]  # 4 is visited now
    a.close()
    again = Arena(graph, GAMES, str(path), 600.0, 100, RUN, Rules(allow_back=True))
    resumed = again.view("Cy", 0)
    assert resumed.route == [0, 4, 0] and resumed.walk.history == [0] and again.offered(resumed) == [1]
    with pytest.raises(ValueError, match="allow_back"):  # a journal's rules are its own
        Arena(graph, GAMES, str(path), 600.0, 100, RUN)
