"""People play the games in the browser; on SIGTERM/Ctrl-C their finished games become a play run.

Players get the games of GRAPH/games (or --games-dir) in game_id order with the links the engine
offers agents. Every move is journalled in GRAPH/human/RUN_NAME before it is answered; restarting
with the same --run-name resumes. On stop, the finished games go to GRAPH/plays/RUN_NAME (agent
human, model = the player's name) and to an MLflow run, as play_games runs do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wikigame_spark import preflight
from wikigame_spark.config import EXPERIMENT_HELP, ConfigError, non_negative, positive, setting
from wikigame_spark.human import run as human_run
from wikigame_spark.human.app import create_app
from wikigame_spark.human.arena import Arena
from wikigame_spark.human.server import serve
from wikigame_spark.ingest.humans import HUMAN
from wikigame_spark.layout import JOURNAL
from wikigame_spark.play import record
from wikigame_spark.play.rules import Rules
from wikigame_spark.protocols import PAPER, PLAY_RULES
from wikigame_spark.runner import Context, Input, InputKind, Job, NothingMade, Output, Result

_HUMAN_RUN_NAME = re.compile(r"[\w][\w.-]{0,99}")


@dataclass(frozen=True)
class HumanPlayConfig:
    """``jobs/human_play.py``: people play the games in the browser; their games become a play run."""

    graph: str = setting("", "graph folder (nodes, edges; its games by default), on local disk", required=True)
    games_dir: str = setting("", "games folder (default GRAPH/games)")
    host: str = setting("127.0.0.1", "address to listen on")
    port: int = setting(8050, "port to listen on")
    time_limit: float = setting(600.0, "seconds per game, 0 for none")
    max_steps: int = setting(PLAY_RULES[PAPER]["max_steps"], "step limit, as for agents")
    allow_back: bool = setting(PLAY_RULES[PAPER]["allow_back"], "a back button: the previous page is a move (a step)")
    experiment: str = setting("", EXPERIMENT_HELP)
    run_name: str = setting("human-play", "run name; the same name resumes the run")

    def validate(self) -> None:
        if not _HUMAN_RUN_NAME.fullmatch(self.run_name):
            raise ConfigError(f"--run-name {self.run_name!r}: letters, digits, . - _ only (it names a folder)")
        if not 0 < self.port < 65536:
            raise ConfigError(f"--port {self.port}: not a port (1-65535)")
        non_negative(self, "time_limit")
        positive(self, "max_steps")


def local_graph(s: HumanPlayConfig) -> None:
    if not preflight.is_local(s.graph):
        raise ConfigError(f"--graph {s.graph}: human play keeps its journal beside the graph, on local disk")


def serve_games(ctx: Context) -> Arena:
    """Serve the games until SIGTERM or Ctrl-C, before the MLflow run starts: a stop with no
    finished game records nothing."""
    s: HumanPlayConfig = ctx.settings
    games = ctx.inputs["games_dir"]
    arena = human_run.open_arena(games, s.run_name, s.time_limit, s.max_steps, Rules(allow_back=s.allow_back))
    print(f"human_play: serving {len(arena.order)} games on http://{s.host}:{s.port}/ (Ctrl-C to finish)", flush=True)
    serve(create_app(arena, f"Wikipedia Game — {games.graph.name}"), s.host, s.port)
    arena.expire_all()
    arena.close()
    if not arena.finished():
        raise NothingMade(
            f"no finished games; nothing recorded (journal {human_run.journal_path(games.graph, s.run_name)})"
        )
    ctx.tags.update(agent=HUMAN)
    return arena


def recorded(ctx: Context) -> Result:
    s: HumanPlayConfig = ctx.settings
    arena: Arena = ctx.before
    games = ctx.inputs["games_dir"]
    plays = human_run.finished_plays(arena)
    journal_file = human_run.journal_path(games.graph, s.run_name)
    with open(journal_file, "rb") as f:
        metrics = record.record_plays(ctx.spark, plays, ctx.stage(), {JOURNAL: f.read()})
    players = int(plays["model"].nunique())
    counts = {"players": players, "unfinished_games": arena.unfinished()}
    params = {
        "games": len(arena.order),
        "agent": HUMAN,
        "model": "",  # the players' names are in the plays' model column
        "use_titles": "",
        "allow_back": s.allow_back,
        "players": players,
        "journal": journal_file,
        **record.graph_params(games.graph.path, games.graph.manifest),
    }
    manifest = {"kind": record.RUN_KIND, "run_name": s.run_name, "metrics": metrics, "counts": counts}
    summary = (
        f"wrote {ctx.output()} and MLflow run {ctx.run.info.run_id} ({ctx.experiment}/{s.run_name}): "
        f"{len(plays)} games by {players} players, {arena.unfinished()} unfinished; "
        f"success {metrics['success_rate']:.3f} ± {metrics['success_rate_se']:.3f}"
    )
    return Result(summary, manifests={"": manifest}, metrics={**metrics, **counts}, params=params)


JOB = Job(
    name="human_play",
    doc=__doc__,
    settings=HumanPlayConfig,
    body=recorded,
    inputs=(
        Input("graph", InputKind.GRAPH),
        Input("games_dir", InputKind.GAMES, default=lambda inputs: inputs["graph"].dir.games, bound_to="graph"),
    ),
    outputs=(
        Output(
            lambda s, inputs: {"": inputs["graph"].dir.plays(s.run_name)},
            replace=True,
            what="human play run",
            kind=record.RUN_KIND,
        ),
    ),
    run_name=lambda ctx: ctx.settings.run_name,
    before_run=serve_games,
    check=local_graph,
)
