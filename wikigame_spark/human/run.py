"""A human play run: its graph, games and journal on disk; at the end, a play run like the agents'.

The run's folder is ``GRAPH/human/RUN_NAME`` (the journal); its plays go to ``GRAPH/plays/RUN_NAME``
and to an MLflow run through :func:`wikigame_spark.play.record.record_plays` (a plays folder and a
run like a play run's), so ``jobs/report.py`` reads them like any agent's. The inputs, the output
and the tracking store are checked (:mod:`wikigame_spark.preflight`) before anyone plays, and the
run has one server: it holds the plays folder's one-writer lock (:func:`wikigame_spark.io.output_lock`,
as ``play_games`` does) while it serves and records.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import re
from dataclasses import asdict, dataclass

import pandas as pd
from pyspark.sql import SparkSession

from wikigame_spark import io, layout, preflight
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.human.arena import Arena, plays_rows
from wikigame_spark.ingest.humans import HUMAN
from wikigame_spark.layout import JOURNAL, GamesDir, GraphDir
from wikigame_spark.play import record as play_record
from wikigame_spark.schemas import GAMES

_RUN_NAME = re.compile(r"[\w][\w.-]{0,99}")


@dataclass(frozen=True)
class HumanPlayConfig:
    """``jobs/human_play.py``'s settings."""

    graph: str
    games: str | None = None
    host: str = "127.0.0.1"
    port: int = 8050
    time_limit: float = 600.0
    max_steps: int = 100
    experiment: str = "wikigame"
    run_name: str = "human-play"

    def validate(self) -> None:
        if not preflight.is_local(self.graph):
            raise ValueError(f"--graph {self.graph}: human play keeps its journal beside the graph, on local disk")
        if not _RUN_NAME.fullmatch(self.run_name):
            raise ValueError(f"--run-name {self.run_name!r}: letters, digits, . - _ only (it names a folder)")
        if not 0 < self.port < 65536:
            raise ValueError(f"--port {self.port}: not a port")
        if not (math.isfinite(self.time_limit) and self.time_limit >= 0):
            raise ValueError(f"--time-limit {self.time_limit:g}: seconds per game, a number ≥ 0 (0: none)")
        if self.max_steps < 1:
            raise ValueError(f"--max-steps {self.max_steps}: must be ≥ 1")

    @property
    def graph_dir(self) -> str:
        return preflight.absolute(self.graph).rstrip("/")

    @property
    def games_dir(self) -> str:
        return preflight.absolute(self.games or GraphDir(self.graph_dir).games).rstrip("/")

    @property
    def run_dir(self) -> str:
        return GraphDir(self.graph_dir).human(self.run_name)

    @property
    def output(self) -> str:
        return GraphDir(self.graph_dir).plays(self.run_name)

    @property
    def journal(self) -> str:
        return layout.join(self.run_dir, JOURNAL)


def load_games(games_dir: str, graph: WorkerGraph) -> list[dict]:
    """The games table as dicts in game_id order, checked against the graph."""
    table = io.read_columns(GamesDir(games_dir).games, GAMES.fieldNames()).sort_by("game_id")
    games = table.to_pylist()
    bad = [
        g["game_id"] for g in games if not (0 <= g["source"] < graph.num_nodes and 0 <= g["target"] < graph.num_nodes)
    ]
    if bad:
        raise ValueError(f"{games_dir}: games {bad[:5]} name nodes that are not in the graph")
    if not games:
        raise ValueError(f"{games_dir}: no games to play")
    return games


def check(cfg: HumanPlayConfig) -> dict:
    """Before anyone plays: the flags, the graph, games sampled on it, a writable plays folder and
    tracking store, and the run's lock (:func:`hold_lock`). Returns the graph's manifest."""
    cfg.validate()
    graph_manifest = preflight.require_graph(cfg.graph_dir)
    games_manifest = preflight.require_games(cfg.games_dir, "--games")
    preflight.games_bound_to(games_manifest, graph_manifest, cfg.games_dir, cfg.graph_dir)
    preflight.check_output(cfg.output, overwrite=True)  # each stop of the run replaces its plays
    hold_lock(cfg)
    preflight.check_tracking()
    return graph_manifest


_HELD = contextlib.ExitStack()


def run_lock(cfg: HumanPlayConfig) -> contextlib.AbstractContextManager[dict]:
    """The run's one-writer lock: the plays folder's, which ``play_games`` takes too, so a second
    server (or a play run) of the same name is refused naming the owner
    (:class:`~wikigame_spark.io.OutputBusyError`); a killed owner's lock is taken over."""
    return io.output_lock(cfg.output, what=f"human play run {cfg.run_name!r}")


def hold_lock(cfg: HumanPlayConfig) -> dict:
    """Take :func:`run_lock` until this process exits: the journal is appended and the plays are
    recorded under it, and a crash leaves it to be taken over."""
    owner = _HELD.enter_context(run_lock(cfg))
    atexit.register(_HELD.close)
    return owner


def open_arena(cfg: HumanPlayConfig) -> Arena:
    """The run's arena: graph and games loaded, the journal replayed when the run is resumed."""
    graph = WorkerGraph.from_directory(cfg.graph_dir)
    games = load_games(cfg.games_dir, graph)
    run = {"graph": cfg.graph_dir, "games_dir": cfg.games_dir}
    return Arena(graph, games, cfg.journal, cfg.time_limit, cfg.max_steps, run)


def record(spark: SparkSession, arena: Arena, cfg: HumanPlayConfig) -> tuple[str, dict, pd.DataFrame]:
    """The finished games as a play run of agent ``human`` (model: the player's name).

    Returns the MLflow run id, its summary metrics and the plays."""
    plays = pd.DataFrame(plays_rows(arena.finished()))
    players = int(plays["model"].nunique())
    params = {
        **asdict(cfg),
        "games": len(arena.order),
        "games_dir": cfg.games_dir,
        "output": cfg.output,
        "agent": HUMAN,
        "model": "",  # the players' names are in the plays' model column
        "use_titles": "",
        "players": players,
        "journal": cfg.journal,
        "code_version": io.code_version(),
        **play_record.graph_params(cfg.graph_dir, preflight.require_graph(cfg.graph_dir)),
    }
    counts = {"players": players, "unfinished_games": arena.unfinished()}
    with open(cfg.journal, "rb") as f:
        journal = f.read()
    run_id, metrics = play_record.record_plays(
        spark, plays, cfg.output, cfg.experiment, cfg.run_name, params, counts, {"counts": counts}, {JOURNAL: journal}
    )
    return run_id, metrics, plays
