"""A play run: games in chunks, each chunk's plays written atomically, so a run resumes.

An interrupted run restarted with the same run name skips the chunks already written and plays
the rest: no game is played twice and none is lost. The run's MLflow run is resumed likewise.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from dataclasses import dataclass

import mlflow
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from wikigame_spark import io, tracking
from wikigame_spark.agents.base import AgentSpec, agent_class
from wikigame_spark.agents.sentence_models import DEFAULT_MODEL, model_slug
from wikigame_spark.config import PlayConfig
from wikigame_spark.evaluation.metrics import summarise
from wikigame_spark.play.engine import play_stage
from wikigame_spark.schemas import GAMES, PLAYS

log = logging.getLogger(__name__)

MODEL_AGENTS = {"embedding": DEFAULT_MODEL}


@dataclass
class PlayRun:
    output: str
    plays: DataFrame
    played_now: int
    seconds: float
    spec: AgentSpec


def agent_model(cfg: PlayConfig) -> str | None:
    return cfg.model or MODEL_AGENTS.get(cfg.agent) or None


def default_run_name(cfg: PlayConfig) -> str:
    model = agent_model(cfg)
    parts = [cfg.agent] + ([model_slug(model)] if model else []) + (["titles"] if cfg.use_titles else [])
    parts += [cfg.protocol] if cfg.protocol != "paper" else []
    return "-".join(parts + [f"s{cfg.seed}", f"n{cfg.games or 'all'}"])


def agent_settings(cfg: PlayConfig) -> dict:
    return {
        "model": agent_model(cfg),
        "use_titles": cfg.use_titles,
        "seed": cfg.seed,
        "cache_dir": cfg.cache_dir,
        "corpus_graph": cfg.corpus_graph,
        "sample_size": cfg.tfidf_sample_size,
        "reencode": cfg.reencode,
        "base_url": cfg.base_url,
        "temperature": cfg.temperature,
        "timeout": cfg.timeout,
        "http_retries": cfg.http_retries,
        "backoff": cfg.backoff,
        "max_tokens": cfg.max_tokens,
        "max_titles": cfg.max_titles,
        "max_retries": cfg.max_retries,
        "concurrency": cfg.concurrency,
        "response_cache": cfg.response_cache,
        "shuffle_links": cfg.shuffle_links,
        "top_k": cfg.top_k,
        "embedding_model": cfg.embedding_model or DEFAULT_MODEL,
        "show_route": cfg.show_route,
    }


def select_games(games: DataFrame, n: int) -> DataFrame:
    """The first ``n`` games by id (all for 0): the same games for every agent."""
    return games if n == 0 else games.filter(F.col("game_id") < F.lit(n))


def chunk_path(output: str, chunk: int) -> str:
    return f"{output.rstrip('/')}/part-{chunk:06d}"


def play(spark: SparkSession, cfg: PlayConfig, output: str, extra_settings: dict | None = None) -> PlayRun:
    """Play every game not yet in ``output``, chunk by chunk; return the whole plays table."""
    settings = {**agent_settings(cfg), **(extra_settings or {})}
    spec = AgentSpec(cfg.agent, settings, agent_class(cfg.agent).prepare(spark, cfg.graph, settings))
    games_dir = (cfg.games_dir or f"{cfg.graph.rstrip('/')}/games").rstrip("/")
    io.read_manifest(spark, games_dir)  # only finished samples are played
    games = select_games(io.read_table(spark, f"{games_dir}/games", GAMES), cfg.games)
    chunk = (F.col("game_id") / F.lit(cfg.chunk_games)).cast("long")
    chunks = sorted(r[0] for r in games.select(chunk.alias("c")).distinct().collect())
    partitions = cfg.partitions or 2 * spark.sparkContext.defaultParallelism
    played, started = 0, time.perf_counter()
    for c in chunks:
        path = chunk_path(output, c)
        if io.exists(spark, f"{path}/{io.MANIFEST}"):
            log.info("chunk %d already played (%s); skipping", c, path)
            continue
        part = games.filter(chunk == F.lit(c))
        plays = play_stage(part, cfg.graph, spec, cfg.max_steps, partitions, agent_model(cfg), cfg.allow_revisits)
        with io.staged_output(spark, path, overwrite=True) as staging:
            io.write_table(plays, f"{staging}/plays", PLAYS)
            count = spark.read.schema(PLAYS).parquet(f"{staging}/plays").count()
            io.write_json(spark, f"{staging}/{io.MANIFEST}", {"kind": "plays-chunk", "chunk": c, "games": count})
        played += count
        log.info("chunk %d: %d games played", c, count)
    paths = [f"{chunk_path(output, c)}/plays" for c in chunks]
    plays = spark.read.schema(PLAYS).parquet(*paths) if paths else spark.createDataFrame([], PLAYS)
    return PlayRun(output, plays, played, time.perf_counter() - started, spec)


def record_plays(
    spark: SparkSession,
    plays: pd.DataFrame,
    output: str,
    experiment: str,
    run_name: str,
    params: dict,
    metrics: dict | None = None,
    manifest: dict | None = None,
    artifacts: dict[str, bytes] | None = None,
) -> tuple[str, dict]:
    """Plays made outside the engine (imported logs, people in the browser) recorded as a play run is:
    an MLflow run (params, the summary plus ``metrics``, plays.parquet plus ``artifacts``) and
    ``output`` as one chunk whose manifest names the run (with ``manifest``'s keys added), so the
    report reads it like the rest. Returns the run id and the summary metrics."""
    plays = plays.sort_values(["game_id", "model"], ignore_index=True, na_position="first")
    experiment_id = tracking.setup(experiment)
    with mlflow.start_run(run_name=run_name, experiment_id=experiment_id) as run:
        mlflow.log_params(tracking.clean_params(params))
        summary = summarise(plays)
        tracking.log_metrics({**summary, **(metrics or {})})
        with tempfile.TemporaryDirectory() as tmp:
            plays.to_parquet(os.path.join(tmp, "plays.parquet"), index=False)
            for name, data in (artifacts or {}).items():
                with open(os.path.join(tmp, name), "wb") as f:
                    f.write(data)
            mlflow.log_artifacts(tmp)
        frame = spark.createDataFrame(plays[PLAYS.fieldNames()], PLAYS)
        with io.staged_output(spark, output, overwrite=True) as staging:
            part = chunk_path(staging, 0)
            io.write_table(frame, f"{part}/plays", PLAYS)
            io.write_json(spark, f"{part}/{io.MANIFEST}", {"kind": "plays-chunk", "chunk": 0, "games": len(plays)})
            head = {
                "kind": "plays",
                "run_name": run_name,
                "mlflow_run_id": run.info.run_id,
                "experiment": experiment,
                "parameters": params,
                "metrics": summary,
                "tracking_uri": tracking.tracking_uri(),
            }
            io.write_json(spark, f"{staging}/{io.MANIFEST}", {**head, **(manifest or {})})
    return run.info.run_id, summary
