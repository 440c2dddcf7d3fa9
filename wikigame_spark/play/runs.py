"""Playing a run: the agent's settings from the config, games in chunks, so a run resumes.

An interrupted run restarted with the same run name skips the chunks already written and plays
the rest: no game is played twice and none is lost. Every chunk records what made it
(:func:`~wikigame_spark.play.record.play_identity`: graph, games, agent, model, the options of
:data:`PLAY_OPTIONS`, steps, seed), and a resume with anything different is refused, naming the
differences. Writing and reading the run's record is :mod:`wikigame_spark.play.record`'s.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from wikigame_spark import io
from wikigame_spark.agents.base import AgentSpec, agent_class, registered_options
from wikigame_spark.agents.sentence_models import model_slug
from wikigame_spark.config import AgentOptions, PlayConfig, flatten, protocol_preset
from wikigame_spark.layout import GamesDir, GraphDir, PlaysDir
from wikigame_spark.play import record
from wikigame_spark.play.engine import play_stage
from wikigame_spark.schemas import GAMES

log = logging.getLogger(__name__)

# Shared settings that change the plays (a resume must keep them), beside the agents' options
# marked so (``option(…, plays=True)``); the rest (timeouts, concurrency, caches, partitions) only
# change how fast they are made.
PLAY_SETTINGS = ("use_titles", "allow_revisits", "protocol", "chunk_games")


@dataclass
class Played:
    """What :func:`play` did: every plays of the run (earlier chunks included), how many games
    it played now and in how many seconds."""

    output: str
    plays: DataFrame
    played_now: int
    seconds: float
    spec: AgentSpec


def agent_model(cfg: PlayConfig) -> str | None:
    return cfg.model or agent_class(cfg.agent).default_model or None


def default_run_name(cfg: PlayConfig) -> str:
    model = agent_model(cfg)
    parts = [cfg.agent] + ([model_slug(model)] if model else []) + (["titles"] if cfg.use_titles else [])
    parts += [cfg.protocol] if cfg.protocol != "paper" else []
    return "-".join(parts + [f"s{cfg.seed}", f"n{cfg.games or 'all'}"])


def agent_settings(cfg: PlayConfig) -> dict:
    """What the agent is built from on the workers: the shared settings it uses and its options."""
    shared = {"model": agent_model(cfg), "use_titles": cfg.use_titles, "seed": cfg.seed, "cache_dir": cfg.cache_dir}
    return {**shared, **dataclasses.asdict(cfg.agent_options)}


def every_agents_options(cfg: PlayConfig) -> list:
    """Every registered agent's options as ``cfg`` gives them: the chosen agent's, and the others'
    defaults under the protocol (a setting of another agent is refused when it is not its default)."""
    chosen = type(cfg.agent_options)
    return [
        cfg.agent_options if options is chosen else options(**protocol_preset(options, cfg.protocol))
        for options in registered_options()
    ]


def settings_record(cfg: PlayConfig) -> dict:
    """Every setting as a play run's record lists it (MLflow params, the manifest's parameters):
    the shared ones and every agent's options (:func:`every_agents_options`), so that runs of
    every agent have the same params."""
    out = {}
    for options in every_agents_options(cfg):
        out.update(flatten(options))
    return {**out, **flatten(dataclasses.replace(cfg, agent_options=AgentOptions()))}


def select_games(games: DataFrame, n: int | None) -> DataFrame:
    """The first ``n`` games by id (all for None): the same games for every agent."""
    return games if n is None else games.filter(F.col("game_id") < F.lit(n))


def model_identity(cfg: PlayConfig, settings: dict) -> dict:
    """The model behind the agent as the agent reports it (name, files' digest, engine, chat format)."""
    found = agent_class(cfg.agent).identity(settings)
    return {
        record.MODEL: found.get(record.MODEL) or agent_model(cfg) or "",
        record.MODEL_DIGEST: found.get(record.MODEL_DIGEST) or "",
        record.LLM_ENGINE: found.get(record.LLM_ENGINE) or "",
        record.CHAT_FORMAT: found.get(record.CHAT_FORMAT) or "",
    }


def play_options(cfg: PlayConfig) -> dict:
    """The settings that change the plays (a resume must keep them): the shared ones of
    :data:`PLAY_SETTINGS` and every agent's options marked ``plays``."""
    out = {k: getattr(cfg, k) for k in PLAY_SETTINGS}
    for options in every_agents_options(cfg):
        out.update({f.name: getattr(options, f.name) for f in dataclasses.fields(options) if f.metadata.get("plays")})
    return out


def play(
    spark: SparkSession, cfg: PlayConfig, output: str, made_by: dict, extra_settings: dict | None = None
) -> Played:
    """Play every game not yet in ``output``, chunk by chunk, each chunk's manifest recording
    ``made_by``; return the whole plays table."""
    settings = {**agent_settings(cfg), **(extra_settings or {})}
    spec = AgentSpec(cfg.agent, settings, agent_class(cfg.agent).prepare(spark, cfg.graph, settings))
    games_dir = (cfg.games_dir or GraphDir(cfg.graph).games).rstrip("/")
    io.read_manifest(spark, games_dir)  # only finished samples are played
    games = select_games(io.read_table(spark, GamesDir(games_dir).games, GAMES), cfg.games)
    chunk = (F.col("game_id") / F.lit(cfg.chunk_games)).cast("long")
    chunks = sorted(r[0] for r in games.select(chunk.alias("c")).distinct().collect())
    partitions = cfg.partitions or 2 * spark.sparkContext.defaultParallelism
    played, started = 0, time.perf_counter()
    for c in chunks:
        if record.chunk_done(spark, output, c):
            log.info("chunk %d already played (%s); skipping", c, PlaysDir(output).chunk(c))
            continue
        part = games.filter(chunk == F.lit(c))
        plays = play_stage(part, cfg.graph, spec, cfg.max_steps, partitions, agent_model(cfg), cfg.allow_revisits)
        count = record.write_chunk(spark, output, c, plays, made_by)
        played += count
        log.info("chunk %d: %d games played", c, count)
    plays = record.read_chunks(spark, output, chunks)
    return Played(output, plays, played, time.perf_counter() - started, spec)
