"""A play run: games in chunks, each chunk's plays written atomically, so a run resumes.

An interrupted run restarted with the same run name skips the chunks already written and plays
the rest: no game is played twice and none is lost. The run's MLflow run is resumed likewise.
Every chunk records what made it (:func:`play_identity`: graph, games, agent, model, options,
steps, seed), and a resume with anything different is refused, naming the differences. The
names of the run record's MLflow params and metrics are the constants below (the report reads them).
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

# The play run's record: MLflow params (and the plays manifest's ``run_identity``) ...
GRAPH_URI = "graph_uri"
GRAPH_MANIFEST_SHA1 = "graph_manifest_sha1"
GAMES_URI = "games_uri"
GAMES_MANIFEST_SHA1 = "games_manifest_sha1"
GAMES_SEED = "games_seed"
GAMES_COUNT = "games_count"
AGENT = "agent"
MODEL = "model"
MODEL_DIGEST = "model_digest"
LLM_ENGINE = "llm_engine"
CHAT_FORMAT = "chat_format"
PROTOCOL = "protocol"
IDENTITY_PARAMS = (
    GRAPH_URI,
    GRAPH_MANIFEST_SHA1,
    GAMES_URI,
    GAMES_MANIFEST_SHA1,
    GAMES_SEED,
    GAMES_COUNT,
    AGENT,
    MODEL,
    MODEL_DIGEST,
    LLM_ENGINE,
    CHAT_FORMAT,
    PROTOCOL,
)
# ... and its MLflow metrics.
PROMPT_TOKENS_TOTAL = "prompt_tokens_total"
COMPLETION_TOKENS_TOTAL = "completion_tokens_total"
LLM_LATENCY_MEAN_S = "llm_latency_mean_s"
RUN_IDENTITY = "run_identity"  # the plays manifest's key

# Settings that change the plays (a resume must keep them); the rest (timeouts, concurrency,
# caches, partitions) only change how fast they are made.
PLAY_OPTIONS = (
    "use_titles",
    "corpus_graph",
    "tfidf_sample_size",
    "reencode",
    "temperature",
    "max_tokens",
    "max_titles",
    "max_retries",
    "shuffle_links",
    "top_k",
    "embedding_model",
    "show_route",
    "allow_revisits",
    "protocol",
    "chunk_games",
)


class ResumeMismatchError(ValueError):
    """A run name's plays were made with other settings than this invocation's."""


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


def select_games(games: DataFrame, n: int | None) -> DataFrame:
    """The first ``n`` games by id (all for None): the same games for every agent."""
    return games if n is None else games.filter(F.col("game_id") < F.lit(n))


def model_identity(cfg: PlayConfig, settings: dict) -> dict:
    """The model behind the agent as the agent reports it (name, files' digest, engine, chat format)."""
    found = agent_class(cfg.agent).identity(settings)
    return {
        MODEL: found.get(MODEL) or agent_model(cfg) or "",
        MODEL_DIGEST: found.get(MODEL_DIGEST) or "",
        LLM_ENGINE: found.get(LLM_ENGINE) or "",
        CHAT_FORMAT: found.get(CHAT_FORMAT) or "",
    }


def run_identity(
    cfg: PlayConfig, graph_manifest: dict, games_dir: str, games_manifest: dict, model: dict
) -> dict[str, str | int]:
    """The run record's identity params: graph and games by URI and manifest digest, games seed
    and count, agent, model identity, protocol."""
    available = int(games_manifest.get("games") or 0)
    return {
        GRAPH_URI: cfg.graph,
        GRAPH_MANIFEST_SHA1: io.manifest_sha1(graph_manifest),
        GAMES_URI: games_dir,
        GAMES_MANIFEST_SHA1: io.manifest_sha1(games_manifest),
        GAMES_SEED: games_manifest.get("seed", ""),
        GAMES_COUNT: available if cfg.games is None else min(cfg.games, available),
        AGENT: cfg.agent,
        **model,
        PROTOCOL: getattr(cfg, "protocol", "") or "paper",
    }


def play_identity(cfg: PlayConfig, identity: dict) -> dict:
    """What makes a run's plays what they are: every chunk records it, a resume must match it.
    (Where the graph and games are is not part of it: their manifest digests are.)"""
    made = {k: v for k, v in identity.items() if k not in (GRAPH_URI, GAMES_URI)}
    options = {k: getattr(cfg, k) for k in PLAY_OPTIONS if hasattr(cfg, k)}
    return {**made, "options": options, "max_steps": cfg.max_steps, "seed": cfg.seed}


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


def check_resume(spark: SparkSession, output: str, made_by: dict, run_name: str) -> int:
    """The number of chunks already in ``output``; each must have been made as this invocation
    would make it, else :class:`ResumeMismatchError` names every difference."""
    done = 0
    fs, jpath = io.filesystem(spark, output)
    statuses = fs.globStatus(io.filesystem(spark, f"{output}/part-*")[1]) if fs.exists(jpath) else None
    for status in sorted(statuses or [], key=lambda s: s.getPath().getName()):
        path = status.getPath().toString()
        if not io.exists(spark, f"{path}/{io.MANIFEST}"):
            continue
        recorded = io.read_json(spark, f"{path}/{io.MANIFEST}").get("made_by")
        if recorded != made_by:
            before, now = _flat(recorded or {}), _flat(made_by)
            keys = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
            diff = "; ".join(f"{k}: {before.get(k, '(not recorded)')!r} then, {now.get(k)!r} now" for k in keys)
            raise ResumeMismatchError(
                f"{output}: run {run_name!r} was played with other settings ({diff}); "
                "resume it with its own settings, or give another --run-name (or --overwrite to discard its plays)"
            )
        done += 1
    return done


def prepare_output(spark: SparkSession, cfg: PlayConfig, made_by: dict) -> int:
    """Make ``cfg.output`` ready to play into (the caller holds its lock); returns the chunks done.

    A finished run is replaced with ``--overwrite`` (checked before); unfinished plays are resumed
    when made as this run would make them, replaced with ``--overwrite``, else refused.
    """
    if io.exists(spark, f"{cfg.output}/{io.MANIFEST}"):
        if not cfg.overwrite:
            raise io.OutputExistsError(
                f"{cfg.output}: run {cfg.run_name!r} is finished; pass --overwrite to play it again"
            )
        io.delete(spark, cfg.output)
    try:
        return check_resume(spark, cfg.output, made_by, cfg.run_name)
    except ResumeMismatchError:
        if not cfg.overwrite:
            raise
        log.info("%s: discarding plays made with other settings (--overwrite)", cfg.output)
        io.delete(spark, cfg.output)
        return 0


def resumable_run(experiment_id: str, run_name: str, identity: dict):
    """The unfinished MLflow run of this name whose recorded identity matches, if any."""
    previous = tracking.find_run(experiment_id, run_name)
    if previous is None or previous.info.status == "FINISHED":
        return None
    had = previous.data.params
    same = all(had.get(k) == v for k, v in tracking.clean_params(identity).items() if k in had)
    return previous if same else None


def usage_metrics(plays: pd.DataFrame) -> dict:
    """Token totals, and the mean seconds per model request when the agent made any."""
    out = {
        PROMPT_TOKENS_TOTAL: int(plays["prompt_tokens"].sum()),
        COMPLETION_TOKENS_TOTAL: int(plays["completion_tokens"].sum()),
    }
    queries = int(plays["queries"].sum())
    if queries:
        out[LLM_LATENCY_MEAN_S] = float(plays["seconds"].sum()) / queries
    return out


def chunk_path(output: str, chunk: int) -> str:
    return f"{output.rstrip('/')}/part-{chunk:06d}"


def play(
    spark: SparkSession, cfg: PlayConfig, output: str, made_by: dict, extra_settings: dict | None = None
) -> PlayRun:
    """Play every game not yet in ``output``, chunk by chunk, each chunk's manifest recording
    ``made_by``; return the whole plays table."""
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
        with io.staged_output(spark, path, overwrite=False) as staging:  # a chunk is written once, never replaced
            io.write_table(plays, f"{staging}/plays", PLAYS)
            count = spark.read.schema(PLAYS).parquet(f"{staging}/plays").count()
            chunk_manifest = {"kind": "plays-chunk", "chunk": c, "games": count, "made_by": made_by}
            io.write_json(spark, f"{staging}/{io.MANIFEST}", chunk_manifest)
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
    plays["route"] = plays["route"].map(lambda r: [int(v) for v in r])  # numpy arrays from toPandas
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
