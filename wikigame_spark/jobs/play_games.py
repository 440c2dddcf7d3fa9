"""Agents play sampled games in parallel; plays Parquet + an MLflow run with params, metrics, artifacts.

An interrupted run rerun with the same run name resumes: the games already played are kept.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, ClassVar

from wikigame_spark import parquet, tracking
from wikigame_spark.agents.base import (
    PREPARED_METRICS,
    AgentSettings,
    add_option_flags,
    agent_class,
    nested_options,
)
from wikigame_spark.agents.llm_client import ServerUnreachable
from wikigame_spark.agents.traces import TraceTarget
from wikigame_spark.config import (
    EXPERIMENT_HELP,
    OVERWRITE_HELP,
    SEED_HELP,
    ConfigError,
    check_seed,
    load_config,
    non_negative,
    positive,
    setting,
)
from wikigame_spark.layout import NODES_TABLE
from wikigame_spark.outcomes import NO_RESPONSE, SERVER_FAILURES
from wikigame_spark.play import artifacts, prices, record, runs
from wikigame_spark.play.runs import check_run_name
from wikigame_spark.protocols import LLM_WIKIRACE, PAPER, PLAY_RULES, PROTOCOLS
from wikigame_spark.runner import Context, Input, InputKind, Job, Output, Result
from wikigame_spark.schemas import NODES
from wikigame_spark.summary import summarise


@dataclass(frozen=True)
class PlayConfig:
    """``jobs/play_games.py``: agents play sampled games; plays Parquet + an MLflow run.

    The settings every agent shares; the chosen agent's own are its options class's
    (``agent_options``, registered with the agent: e.g. ``TfidfOptions``, ``LlmOptions``)."""

    PRESETS: ClassVar[dict] = {LLM_WIKIRACE: PLAY_RULES[LLM_WIKIRACE]}

    graph: str = setting("", "graph folder (nodes, edges; its games by default)", required=True)
    agent: str = setting("", "agent name (see the agent options below)", required=True)
    model: str = setting("", "model name or path (sentence-transformers, or the LLM's name); default: the agent's")
    use_titles: bool = setting(False, "compare link titles, not summaries")
    games: int | None = setting(None, "play the first N games (default: all)")
    games_dir: str = setting("", "games folder (default GRAPH/games)")
    protocol: str = setting(
        PAPER,
        "the study whose defaults apply: paper (100 steps, no revisits, 200 titles) or "
        "llm-wikirace (30 steps, revisits, every title)",
        choices=PROTOCOLS,
    )
    max_steps: int = setting(PLAY_RULES[PAPER]["max_steps"], "step limit (llm-wikirace: 30)")
    allow_revisits: bool = setting(
        PLAY_RULES[PAPER]["allow_revisits"],
        "offer visited pages too; a deterministic agent back in a state ends with `loop`",
    )
    allow_back: bool = setting(
        PLAY_RULES[PAPER]["allow_back"],
        "offer the back button: the previous page of the player's history, a move that counts as a step",
    )
    seed: int = setting(0, SEED_HELP)
    experiment: str = setting("", EXPERIMENT_HELP)
    run_name: str = setting(
        "", "run name; the same name resumes an interrupted run (default from agent, model, seed, games)"
    )
    output: str = setting("", "plays folder (default GRAPH/plays/RUN_NAME)")
    overwrite: bool = setting(False, OVERWRITE_HELP)
    cache_dir: str = setting("", "embedding and vocabulary cache (default GRAPH/cache)", changes_output=False)
    prices: str = setting(
        "", "prices file: USD per million tokens per model, per core-hour (docs/llm.md, Prices); default none: no price"
    )
    chunk_games: int = setting(1000, "games per resumable chunk")
    partitions: int = setting(
        0, "Spark tasks per chunk of games (0: twice the default parallelism)", changes_output=False
    )
    agent_options: Any = dataclasses.field(default=None)  # the chosen agent's options (the play job fills it)

    def validate(self) -> None:
        positive(self, "max_steps", "chunk_games")
        check_seed(self)
        if self.games is not None and self.games <= 0:
            raise ConfigError(f"--games {self.games}: must be a positive number (omit it to play every game)")
        non_negative(self, "partitions")
        check_run_name(self.run_name)


def load_play_config(yaml_path: str | None = None, overrides: dict | None = None) -> PlayConfig:
    """The play job's settings with the chosen agent's options (``PlayConfig.agent_options``)."""
    return load_config(PlayConfig, yaml_path, overrides, nested=nested_options)


def run_name(s: PlayConfig) -> str:
    return s.run_name or runs.default_run_name(s)


@dataclass(frozen=True)
class PlayPlan:
    """What a play run is, decided before its MLflow run starts."""

    agent: AgentSettings  # the chosen agent's settings, as the workers get them
    identity: record.RunIdentity  # graph, games, agent, model as the agent reports it
    made_by: dict  # what every chunk records; a resume must match it
    price_list: dict | None  # the prices file, checked (None: no price)


def plan(ctx: Context) -> PlayPlan:
    """The run's identity and whether the plays already in its staging folder were made as this
    run would make them (then it resumes)."""
    s: PlayConfig = ctx.settings
    key = os.environ.get("OPENAI_API_KEY", "")  # to the workers with the agent; never logged
    agent = runs.agent_settings(s, ctx.inputs["graph"], api_key=key)
    identity = record.RunIdentity.of(s, ctx.inputs["games_dir"], agent_class(s.agent).identity(agent))
    price_list = prices.load_prices(s.prices)
    options = {**runs.play_options(s), **({"prices": price_list} if price_list else {})}
    made_by = identity.made_by(options, s.max_steps, s.seed)
    ctx.identity.update(identity.params())
    ctx.resume = record.resume_point(ctx.stage(), run_name(s), s.overwrite, made_by) > 0
    ctx.tags.update(agent=s.agent, model=identity.model, protocol=s.protocol)
    return PlayPlan(agent, identity, made_by, price_list)


def play_run(ctx: Context) -> Result:
    s: PlayConfig = ctx.settings
    planned: PlayPlan = ctx.before
    games = ctx.inputs["games_dir"]
    # the run now exists: an agent that traces games (--trace-games) writes its traces into it
    run = TraceTarget(tracking.tracking_uri(), ctx.run.info.experiment_id, ctx.run.info.run_id)
    agent = dataclasses.replace(planned.agent, trace=run)
    result = runs.play_chunks(ctx.spark, s, games, ctx.stage(), planned.made_by, agent, planned.price_list)
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
    routes = artifacts.sample_routes(plays, parquet.read_table(ctx.spark, games.graph.folder.sub(NODES_TABLE), NODES))
    artifacts.log_plays(plays, {artifacts.ROUTES_ARTIFACT: routes.encode("utf-8")})
    manifest = {
        "kind": record.RUN_KIND,
        "run_name": run_name(s),
        "metrics": metrics,
        record.RUN_IDENTITY: planned.identity.params(),
        "made_by": planned.made_by,
    }
    params = {**record.graph_params(games.graph.path, games.graph.manifest), "price": result.price.describe()}
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
    body=play_run,
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
