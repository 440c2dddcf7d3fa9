"""Playing a run: the agent's settings from the config, games in chunks, so a run resumes.

An interrupted run restarted with the same run name skips the chunks already written and plays
the rest, and the games of written chunks that the server never answered (``no_response``): no
answered game is played twice and none is lost. Every chunk records what made it
(:meth:`~wikigame_spark.play.record.RunIdentity.made_by`: graph, games, agent, model, the options of
:func:`play_options`, steps, seed), and a resume with anything different is refused, naming the
differences. Writing and reading the run's record is :mod:`wikigame_spark.play.record`'s.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from wikigame_spark import parquet
from wikigame_spark.agents.base import ONE_OFF_CORE_S, AgentSettings, AgentSpec, agent_class
from wikigame_spark.agents.sentence_models import model_slug
from wikigame_spark.config import ConfigError
from wikigame_spark.handles import GamesHandle, GraphHandle
from wikigame_spark.layout import GAMES_TABLE, PlaysDir
from wikigame_spark.play import prices, record
from wikigame_spark.play.engine import play_stage
from wikigame_spark.play.rules import Rules
from wikigame_spark.progress import duration
from wikigame_spark.schemas import GAMES, PLAYS
from wikigame_spark.storage import Folder

log = logging.getLogger(__name__)

# Shared settings that change the plays (a resume must keep them), beside the agents' options
# marked so (``option(…, changes_output=True)``); the rest (timeouts, concurrency, caches, partitions) only
# change how fast they are made.
PLAY_SETTINGS = ("use_titles", "allow_revisits", "allow_back", "protocol", "chunk_games")


@dataclass
class Played:
    """What :func:`play_chunks` did: every plays of the run (earlier chunks included), how many games
    it played now and in how many seconds."""

    output: str
    plays: DataFrame
    played_now: int
    seconds: float
    spec: AgentSpec
    price: prices.GamePrice = prices.NO_PRICE


_PLAIN_NAME = re.compile(r"^[^/\\\x00-\x1f]+$")


def check_run_name(name: str) -> None:
    """Run names are used in paths: no ``/``, ``\\``, ``..``, control characters or edge spaces
    (empty: the job chooses one)."""
    if name and (not _PLAIN_NAME.match(name) or ".." in name or name.strip() != name):
        raise ConfigError(f"--run-name {name!r} is used in paths; give a plain name (no '/', '..' or edge spaces)")


# ``cfg`` below: the play job's settings (:class:`~wikigame_spark.jobs.play_games.PlayConfig`), read
# by attribute: this layer sits below the jobs.
def agent_model(cfg: Any) -> str | None:
    return cfg.model or agent_class(cfg.agent).default_model or None


def default_run_name(cfg: Any) -> str:
    model = agent_model(cfg)
    parts = [cfg.agent] + ([model_slug(model)] if model else []) + list(cfg.agent_options.run_name_parts())
    parts += ["titles"] if cfg.use_titles else []
    parts += [cfg.protocol] if cfg.protocol != "paper" else []
    return "-".join(parts + [f"s{cfg.seed}", f"n{cfg.games or 'all'}"])


def agent_settings(cfg: Any, graph: GraphHandle, api_key: str = "") -> AgentSettings:
    """What the agent is built from on the workers: the shared settings it uses and its options."""
    return AgentSettings(
        cfg.agent_options, agent_model(cfg) or "", cfg.use_titles, cfg.seed, graph.cache_dir, api_key=api_key
    )


def select_games(games: DataFrame, n: int | None) -> DataFrame:
    """The first ``n`` games by id (all for None): the same games for every agent."""
    return games if n is None else games.filter(F.col("game_id") < F.lit(n))


def play_options(cfg: Any) -> dict:
    """The settings that change the plays (a resume must keep them): the shared ones of
    :data:`PLAY_SETTINGS` and the agent's options marked ``changes_output``."""
    out = {k: getattr(cfg, k) for k in PLAY_SETTINGS}
    options = cfg.agent_options
    out.update(
        {f.name: getattr(options, f.name) for f in dataclasses.fields(options) if f.metadata.get("changes_output")}
    )
    return out


def play_chunks(
    spark: SparkSession,
    cfg: Any,
    games: GamesHandle,
    output: Folder,
    made_by: dict,
    settings: AgentSettings,
    price_list: dict | None = None,
) -> Played:
    """Play every game not yet in ``output`` with the agent built from ``settings``, chunk by
    chunk, each chunk's manifest recording ``made_by``, each game priced from ``price_list`` (a
    checked prices file; none: no price); return the whole plays table."""
    graph = games.graph
    agent = agent_class(cfg.agent)
    spec = AgentSpec(cfg.agent, settings, agent.prepare(spark, graph, settings))
    price = prices.game_price(price_list, agent_model(cfg) or "", agent.served, spec.resources.get(ONE_OFF_CORE_S))
    log.info("games priced by %s", price.describe())
    table = select_games(parquet.read_table(spark, games.folder.sub(GAMES_TABLE), GAMES), cfg.games)
    chunk = (F.col("game_id") / F.lit(cfg.chunk_games)).cast("long")
    chunks = sorted(r[0] for r in table.select(chunk.alias("c")).distinct().collect())
    partitions = cfg.partitions or 2 * spark.sparkContext.defaultParallelism
    total = min(cfg.games or games.count, games.count)
    played, started, done_before = 0, time.perf_counter(), 0
    for c in chunks:
        written = record.written_chunk(output, c)
        replays = (written or {}).get("unanswered", 0)
        if written and not replays:
            log.info("chunk %d already played (%s); skipping", c, output.path(PlaysDir.chunk_name(c)))
            done_before += 1
            continue
        part = table.filter(chunk == F.lit(c))
        if replays:  # the server never answered these: played again, the answered ones kept
            log.info("chunk %d: playing again the %d games the server never answered", c, replays)
            kept = record.unanswered(record.read_chunks(spark, output, [c]), answered=True)
            part = part.join(kept.select("game_id"), "game_id", "left_anti")
        rules = Rules(cfg.allow_revisits, cfg.allow_back)
        plays = play_stage(part, graph, spec, cfg.max_steps, partitions, agent_model(cfg), rules, price)
        if replays:  # read back, a route's items are nullable: the contract's types again, as they were
            plays = kept.mapInPandas(lambda batches: batches, PLAYS).unionByName(plays)
        count = record.write_chunk(spark, output, c, plays, made_by, replace=bool(replays))
        played += count - (written["games"] - replays if replays else 0)
        progress(played, total - done_before * cfg.chunk_games, time.perf_counter() - started)
    plays = record.read_chunks(spark, output, chunks)
    return Played(output.root, plays, played, time.perf_counter() - started, spec, price)


def progress(done: int, total: int, seconds: float) -> None:
    """Games done of the total and the time left at this rate, one line a chunk (long runs show
    where they are without Spark's progress bar)."""
    left = max(total - done, 0)
    eta = f", about {duration(seconds / done * left)} left" if done and left else ""
    log.info("play_games: %d of %d games played in %s%s", done, max(total, done), duration(seconds), eta)
