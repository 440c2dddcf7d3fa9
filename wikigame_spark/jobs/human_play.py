"""People play the games in the browser; on SIGTERM/Ctrl-C their finished games become a play run.

Players get the games of GRAPH/games (or --games-dir) in game_id order with the links the engine
offers agents. Every move is journalled in GRAPH/human/RUN_NAME before it is answered; restarting
with the same --run-name resumes. On stop, the finished games go to GRAPH/plays/RUN_NAME (agent
human, model = the player's name) and to an MLflow run, as play_games runs do.
"""

from __future__ import annotations

from wikigame_spark import preflight
from wikigame_spark.config import ConfigError, HumanPlayConfig
from wikigame_spark.human import run as human_run
from wikigame_spark.human.app import create_app
from wikigame_spark.human.arena import Arena
from wikigame_spark.human.server import serve
from wikigame_spark.ingest.humans import HUMAN
from wikigame_spark.layout import JOURNAL
from wikigame_spark.play import record
from wikigame_spark.runner import Context, Input, InputKind, Job, NothingMade, Output, Result


def local_graph(s: HumanPlayConfig) -> None:
    if not preflight.is_local(s.graph):
        raise ConfigError(f"--graph {s.graph}: human play keeps its journal beside the graph, on local disk")


def serve_games(ctx: Context) -> Arena:
    """Serve the games until SIGTERM or Ctrl-C, before the MLflow run starts: a stop with no
    finished game records nothing."""
    s: HumanPlayConfig = ctx.settings
    games = ctx.inputs["games_dir"]
    arena = human_run.open_arena(games, s.run_name, s.time_limit, s.max_steps)
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
