"""Agents play sampled games in parallel; plays Parquet + an MLflow run with params, metrics, artifacts.

spark-submit jobs/play_games.py --graph DIR --agent NAME [--model NAME_OR_PATH] [--use-titles]
    [--games N] [--protocol paper|llm-wikirace] [--max-steps 100] [--allow-revisits] [--seed S]
    [--experiment NAME] [--run-name NAME]
"""

from __future__ import annotations

import argparse
import dataclasses
import os

from wikigame_spark import cli, io, preflight, tracking
from wikigame_spark.agents.base import add_option_flags, registered_agents
from wikigame_spark.config import PlayConfig, check_run_name, job_config
from wikigame_spark.evaluation.metrics import summarise
from wikigame_spark.layout import GraphDir
from wikigame_spark.play import record, runs
from wikigame_spark.schemas import NODES


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graph", help="graph directory (nodes, edges, games)")
    p.add_argument("--agent", help=f"agent name: {', '.join(registered_agents())}")
    p.add_argument("--model", help="model name or path (sentence-transformers, or the LLM's name)")
    p.add_argument("--use-titles", action="store_true", default=None, help="compare link titles, not summaries")
    p.add_argument("--games", type=int, help="play the first N games (default: all)")
    p.add_argument("--games-dir", help="games table (default GRAPH/games)")
    p.add_argument(
        "--protocol",
        choices=["paper", "llm-wikirace"],
        help="the study whose defaults apply: paper (100 steps, no revisits, 200 titles) or llm-wikirace "
        "(30 steps, revisits, every title); explicit flags override (default paper)",
    )
    p.add_argument("--max-steps", type=int, help="step limit (default: the protocol's, 100 or 30)")
    p.add_argument(
        "--allow-revisits",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="offer visited pages too; a deterministic agent back in a state ends with `loop`",
    )
    p.add_argument("--seed", type=int, help="seed for random choices and samples")
    p.add_argument("--experiment", help="MLflow experiment (default wikigame)")
    p.add_argument("--run-name", help="run name; rerun with the same name to resume an interrupted run")
    p.add_argument("--output", help="plays directory (default GRAPH/plays/RUN_NAME)")
    p.add_argument("--overwrite", action="store_true", default=None, help="replace a finished run's plays")
    p.add_argument("--cache-dir", help="embedding/vocabulary cache (default GRAPH/cache)")
    p.add_argument("--partitions", type=int, help="Spark tasks per chunk of games")
    p.add_argument("--chunk-games", type=int, help="games per resumable chunk (default 1000)")
    add_option_flags(p)
    p.add_argument("--config", help="YAML settings (default conf/play_games.yaml)")
    return p.parse_args(argv)


def _checks(cfg: PlayConfig, spark=None) -> tuple[dict | None, dict | None]:
    """Graph and games are what the flags say, the games belong to the graph, the output can be written."""
    graph_manifest = preflight.require_graph(cfg.graph, spark=spark)
    games_manifest = preflight.require_games(cfg.games_dir, spark=spark)
    if graph_manifest is not None and games_manifest is not None:
        preflight.games_bound_to(games_manifest, graph_manifest, cfg.games_dir, cfg.graph)
    preflight.check_output(cfg.output, cfg.overwrite, spark=spark, finished=True)
    return graph_manifest, games_manifest


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = job_config(PlayConfig, "play_games", args)
    graph = preflight.absolute(cfg.graph)
    run_name = cfg.run_name or runs.default_run_name(cfg)
    check_run_name(run_name)
    output = preflight.absolute(cfg.output or GraphDir(graph).plays(run_name))
    games_dir = preflight.absolute(cfg.games_dir or GraphDir(graph).games)
    cfg = dataclasses.replace(cfg, graph=graph, games_dir=games_dir, output=output, run_name=run_name)
    graph_manifest, games_manifest = _checks(cfg)
    preflight.check_tracking()
    spark = None  # a local output is locked before the session starts: a second writer is refused at once
    if graph_manifest is None or games_manifest is None or not preflight.is_local(output):
        spark = cli.session("play_games")
        graph_manifest, games_manifest = _checks(cfg, spark)

    with io.output_lock(output, spark, what=f"play run {run_name!r}"):
        spark = spark or cli.session("play_games")
        # The key travels to the workers with the agent, never into params, manifests or logs.
        settings = {**runs.agent_settings(cfg), "api_key": os.environ.get("OPENAI_API_KEY", "")}
        identity = record.run_identity(
            cfg, graph_manifest, games_dir, games_manifest, runs.model_identity(cfg, settings)
        )
        made_by = record.play_identity(identity, runs.play_options(cfg), cfg.max_steps, cfg.seed)
        done = record.prepare_output(spark, output, run_name, cfg.overwrite, made_by)
        with record.started(cfg.experiment, run_name, identity, resume=bool(done)) as run:
            params = {
                **runs.settings_record(cfg),
                "code_version": io.code_version(),
                **record.graph_params(graph, graph_manifest),
            }
            params.update(identity)
            tracking.log_params_resumable(run, params)
            result = runs.play(spark, cfg, output, made_by, {"api_key": settings["api_key"]})
            plays = result.plays.toPandas()
            metrics = {**summarise(plays), **record.usage_metrics(plays)}
            if result.played_now:
                metrics["games_per_second"] = result.played_now / result.seconds
            tracking.log_metrics(metrics)
            routes = record.sample_routes(plays, io.read_table(spark, GraphDir(graph).nodes, NODES))
            record.log_plays(plays, {record.ROUTES_ARTIFACT: routes.encode("utf-8")})
            extra = {record.RUN_IDENTITY: identity, "made_by": made_by}
            record.finish(spark, output, run, run_name, cfg.experiment, params, metrics, **extra)
    print(
        f"play_games: wrote {output} and MLflow run {run.info.run_id} ({cfg.experiment}/{run_name}): "
        f"{len(plays)} games, success {metrics['success_rate']:.3f} ± {metrics['success_rate_se']:.3f}, "
        f"{result.played_now} played now"
    )
    return 0


if __name__ == "__main__":
    cli.run(main)
