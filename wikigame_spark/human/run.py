"""A human play run: its graph, games and journal on disk; at the end, a play run like the agents'.

The run's folder is ``GRAPH/human/RUN_NAME`` (the journal and the players' records); its plays go
to ``GRAPH/plays/RUN_NAME`` and an MLflow run like a play run's (``jobs/human_play.py``, under the
job runner, which holds the plays folder's one-writer lock while it serves and records), so
``jobs/report.py`` reads them like any agent's.
"""

from __future__ import annotations

import pandas as pd

from wikigame_spark import layout, parquet
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.handles import GamesHandle, GraphHandle
from wikigame_spark.human.arena import Arena, plays_rows
from wikigame_spark.layout import JOURNAL, GamesDir
from wikigame_spark.play.rules import PAPER_RULES, Rules
from wikigame_spark.schemas import GAMES


def load_games(games_dir: str, graph: WorkerGraph) -> list[dict]:
    """The games table as dicts in game_id order, checked against the graph."""
    table = parquet.read_columns(GamesDir(games_dir).games, GAMES.fieldNames()).sort_by("game_id")
    games = table.to_pylist()
    bad = [
        g["game_id"] for g in games if not (0 <= g["source"] < graph.num_nodes and 0 <= g["target"] < graph.num_nodes)
    ]
    if bad:
        raise ValueError(f"{games_dir}: games {bad[:5]} name nodes that are not in the graph")
    if not games:
        raise ValueError(f"{games_dir}: no games to play")
    return games


def journal_path(graph: GraphHandle, run_name: str) -> str:
    """The run's journal: ``GRAPH/human/RUN_NAME/journal.jsonl``, beside the players' records."""
    return layout.join(graph.dir.human(run_name), JOURNAL)


def open_arena(
    games: GamesHandle, run_name: str, time_limit: float, max_steps: int, rules: Rules = PAPER_RULES
) -> Arena:
    """The run's arena: graph and games loaded, the journal replayed when the run is resumed."""
    graph = WorkerGraph.from_directory(games.graph.path)
    run = {"graph": games.graph.path, "games_dir": games.path}
    journal = journal_path(games.graph, run_name)
    return Arena(graph, load_games(games.path, graph), journal, time_limit, max_steps, run, rules)


def finished_plays(arena: Arena) -> pd.DataFrame:
    """The finished games as plays of agent ``human`` (model: the player's name)."""
    return pd.DataFrame(plays_rows(arena.finished()))
