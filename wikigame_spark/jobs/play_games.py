"""Agents play sampled games in parallel; plays Parquet + an MLflow run with params, metrics, artifacts.

An interrupted run rerun with the same run name resumes: the games already played are kept.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from wikigame_spark import parquet, tracking
from wikigame_spark.agents.base import (
    PREPARED_METRICS,
    AgentSettings,
    add_option_flags,
    agent_class,
    load_play_config,
)
from wikigame_spark.agents.llm_client import ServerUnreachable
from wikigame_spark.agents.traces import TraceTarget
from wikigame_spark.config import PlayConfig
from wikigame_spark.outcomes import NO_RESPONSE, SERVER_FAILURES
from wikigame_spark.play import artifacts, record, runs
from wikigame_spark.runner import Context, Input, InputKind, Job, Output, Result
from wikigame_spark.schemas import NODES
from wikigame_spark.summary import summarise


def run_name(s: PlayConfig) -> str:
    return s.run_name or runs.default_run_name(s)


@dataclass(frozen=True)
class PlayPlan:
    """What a play run is, decided before its MLflow run starts."""

    agent: AgentSettings  # the chosen agent's settings, as the workers get them
    identity: record.RunIdentity  # graph, games, agent, model as the agent reports it
    made_by: dict  # what every chunk records; a resume must match it


def plan(ctx: Context) -> PlayPlan:
    """The run's identity and whether the plays already in its staging folder were made as this
    run would make them (then it resumes)."""
    s: PlayConfig = ctx.settings
    key = os.environ.get("OPENAI_API_KEY", "")  # to the workers with the agent; never logged
    agent = runs.agent_settings(s, ctx.inputs["graph"], api_key=key)
    identity = record.RunIdentity.of(s, ctx.inputs["games_dir"], agent_class(s.agent).identity(agent))
    made_by = identity.made_by(runs.play_options(s), s.max_steps, s.seed)
    ctx.identity.update(identity.params())
    ctx.resume = record.resume_point(ctx.spark, ctx.stage(), run_name(s), s.overwrite, made_by) > 0
    ctx.tags.update(agent=s.agent, model=identity.model, protocol=s.protocol)
    return PlayPlan(agent, identity, made_by)


def play(ctx: Context) -> Result:
    s: PlayConfig = ctx.settings
    planned: PlayPlan = ctx.before
    games = ctx.inputs["games_dir"]
    # the run now exists: an agent that traces games (--trace-games) writes its traces into it
    run = TraceTarget(tracking.tracking_uri(), ctx.run.info.experiment_id, ctx.run.info.run_id)
    agent = dataclasses.replace(planned.agent, trace=run)
    result = runs.play(ctx.spark, s, games, ctx.stage(), planned.made_by, agent)
    plays = result.plays.toPandas()
    unanswered = int(plays["outcome"].isin(SERVER_FAILURES).sum())
    if unanswered:  # not a measurement of the model: the run stays unfinished until they are played
        raise ServerUnreachable(
            f"{unanswered} of {len(plays)} games ended {NO_RESPONSE} (the server never answered); the run stays "
            f"unfinished in {result.output} with its answered games: make the server answer (--base-url, "
            f"--timeout, --concurrency) and rerun with the same --run-name to play those {unanswered} again"
        )
    metrics = {**summarise(plays), **record.usage_metrics(plays), **result.spec.resources.get(PREPARED_METRICS, {})}
    if result.played_now:
        metrics["games_per_second"] = result.played_now / result.seconds
    routes = artifacts.sample_routes(plays, parquet.read_table(ctx.spark, games.graph.dir.nodes, NODES))
    artifacts.log_plays(plays, {artifacts.ROUTES_ARTIFACT: routes.encode("utf-8")})
    manifest = {
        "kind": record.RUN_KIND,
        "run_name": run_name(s),
        "metrics": metrics,
        record.RUN_IDENTITY: planned.identity.params(),
        "made_by": planned.made_by,
    }
    params = record.graph_params(games.graph.path, games.graph.manifest)
    summary = (
        f"wrote {ctx.output()} and MLflow run {ctx.run.info.run_id} ({ctx.experiment}/{run_name(s)}): "
        f"{len(plays)} games, success {metrics['success_rate']:.3f} ± {metrics['success_rate_se']:.3f}, "
        f"{result.played_now} played now"
    )
    return Result(summary, manifests={"": manifest}, metrics=metrics, params=params)


JOB = Job(
    name="play_games",
    doc=__doc__,
    settings=PlayConfig,
    body=play,
    inputs=(
        Input("graph", InputKind.GRAPH, cache_setting="cache_dir"),
        Input("games_dir", InputKind.GAMES, default=lambda inputs: inputs["graph"].dir.games, bound_to="graph"),
    ),
    outputs=(
        Output(
            lambda s, inputs: {"": s.output or inputs["graph"].dir.plays(run_name(s))},
            resumable=True,
            what="play run",
            kind=record.RUN_KIND,
        ),
    ),
    run_name=lambda ctx: run_name(ctx.settings),
    before_run=plan,
    flags=add_option_flags,
    load=lambda _cls, path, args: load_play_config(path, args),
)
