"""People play the games in the browser; on SIGTERM/Ctrl-C their finished games become a play run.

python jobs/human_play.py --graph DIR [--games DIR] [--host 127.0.0.1] [--port 8050]
    [--time-limit 600] [--max-steps 100] [--experiment NAME] [--run-name NAME]

Players get the games of DIR/games (or --games) in game_id order with the links the engine offers
agents. Every move is journalled in GRAPH/human/RUN_NAME before it is answered; restarting with the
same --run-name resumes. On stop, the finished games go to GRAPH/plays/RUN_NAME (agent human,
model = the player's name) and to an MLflow run in --experiment, as play_games runs do.
"""

from __future__ import annotations

import argparse

from wikigame_spark import cli
from wikigame_spark.human import run as human_run
from wikigame_spark.human.app import create_app
from wikigame_spark.human.server import serve
from wikigame_spark.session import build_session


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    d = human_run.HumanPlayConfig
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graph", required=True, help="graph directory (nodes, edges; games by default)")
    p.add_argument("--games", help="games directory (default GRAPH/games)")
    p.add_argument("--host", default=d.host, help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=d.port, help="port (default 8050)")
    p.add_argument("--time-limit", type=float, default=d.time_limit, help="seconds per game, 0 for none (600)")
    p.add_argument("--max-steps", type=int, default=d.max_steps, help="step limit, as for agents (default 100)")
    p.add_argument("--experiment", default=d.experiment, help="MLflow experiment (default wikigame)")
    p.add_argument("--run-name", default=d.run_name, help="run name; the same name resumes (default human-play)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    cfg = human_run.HumanPlayConfig(**vars(parse_args(argv)))
    human_run.check(cfg)
    arena = human_run.open_arena(cfg)
    title = f"Wikipedia Game — {cfg.graph_dir.rsplit('/', 1)[-1]}"
    print(
        f"human_play: serving {len(arena.order)} games on http://{cfg.host}:{cfg.port}/ (Ctrl-C to finish)", flush=True
    )
    serve(create_app(arena, title), cfg.host, cfg.port)
    arena.expire_all()
    arena.close()
    if not arena.finished():
        print(f"human_play: no finished games; nothing recorded (journal {cfg.run_dir})")
        return 0
    spark = build_session("human_play")
    run_id, metrics, plays = human_run.record(spark, arena, cfg)
    print(
        f"human_play: wrote {cfg.output} and MLflow run {run_id} ({cfg.experiment}/{cfg.run_name}): "
        f"{len(plays)} games by {plays['model'].nunique()} players, {arena.unfinished()} unfinished; "
        f"success {metrics['success_rate']:.3f} ± {metrics['success_rate_se']:.3f}"
    )
    return 0


if __name__ == "__main__":
    cli.run(main)
