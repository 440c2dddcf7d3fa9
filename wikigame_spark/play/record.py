"""A play run's record as it is written: its identity, its plays chunk by chunk, a resume's check.

A play run is an MLflow run (params, metrics, the artifacts of :mod:`~wikigame_spark.play.artifacts`)
plus a plays folder (:class:`~wikigame_spark.layout.PlaysDir`): chunks written atomically, each with
a manifest naming what made it, and — once the run is finished — the run's manifest naming its
MLflow run id. ``jobs/play_games.py`` writes one chunk by chunk and may resume it
(:func:`resume_point`, :func:`written_chunk`, :func:`write_chunk`, :func:`read_chunks`); plays made
outside the engine (imported logs, people in the browser) are written in one go
(:func:`record_plays`). The report reads them back with :mod:`~wikigame_spark.play.catalog`. The
names of the record's params and metrics are the constants below, so writer and reader agree by
construction.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from wikigame_spark import manifests, outputs, parquet
from wikigame_spark.agents.base import ModelIdentity
from wikigame_spark.handles import GamesHandle
from wikigame_spark.layout import MANIFEST, PLAYS_TABLE, PlaysDir
from wikigame_spark.outcomes import SERVER_FAILURES
from wikigame_spark.play.artifacts import log_plays
from wikigame_spark.schemas import PLAYS, PRICE
from wikigame_spark.storage import Folder
from wikigame_spark.summary import summarise

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunIdentity:
    """What a play run is of and by: graph and games by URI and manifest digest, the games' seed
    and count, the agent, the model as the agent reports it, the protocol. Its fields are the
    run's identity params (and the plays manifest's ``run_identity``); a resumed run must share them."""

    graph_uri: str
    graph_manifest_sha1: str
    games_uri: str
    games_manifest_sha1: str
    games_seed: int
    games_count: int
    agent: str
    model: str = ""
    model_digest: str = ""
    llm_engine: str = ""
    chat_format: str = ""
    protocol: str = "paper"

    @classmethod
    def of(cls, cfg, games: GamesHandle, model: ModelIdentity) -> RunIdentity:
        """The identity of ``cfg``'s run on the opened ``games`` (at most the games there are)."""
        return cls(
            graph_uri=games.graph.path,
            graph_manifest_sha1=games.graph.sha1,
            games_uri=games.path,
            games_manifest_sha1=games.sha1,
            games_seed=games.seed,
            games_count=games.count if cfg.games is None else min(cfg.games, games.count),
            agent=cfg.agent,
            **dataclasses.asdict(model),
            protocol=getattr(cfg, "protocol", "") or "paper",
        )

    def params(self) -> dict[str, str | int]:
        return dataclasses.asdict(self)

    def made_by(self, options: dict, max_steps: int, seed: int) -> dict:
        """What makes a run's plays what they are: every chunk records it, a resume must match it.
        (Where the graph and games are is not part of it: their manifest digests are.)"""
        made = {k: v for k, v in self.params().items() if k not in (GRAPH_URI, GAMES_URI)}
        return {**made, "options": options, "max_steps": max_steps, "seed": seed}


# The names of the identity params, for the readers of the record.
IDENTITY_PARAMS = tuple(f.name for f in dataclasses.fields(RunIdentity))
(
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
) = IDENTITY_PARAMS
# The record's MLflow metrics.
PROMPT_TOKENS_TOTAL = "prompt_tokens_total"
CACHED_TOKENS_TOTAL = "cached_tokens_total"
COMPLETION_TOKENS_TOTAL = "completion_tokens_total"
REASONING_TOKENS_TOTAL = "reasoning_tokens_total"
INVALID_CALLS_TOTAL = "invalid_calls_total"
LLM_LATENCY_MEAN_S = "llm_latency_mean_s"
PRICE_PER_GAME = "price_per_game_usd"
PRICE_TOTAL = "price_total_usd"
USAGE_METRICS = (PROMPT_TOKENS_TOTAL, COMPLETION_TOKENS_TOTAL, LLM_LATENCY_MEAN_S)
RUN_IDENTITY = "run_identity"  # the plays manifest's key
RUN_KIND, CHUNK_KIND = "plays", "plays-chunk"


class ResumeMismatchError(ValueError):
    """A run name's plays were made with other settings than this invocation's."""


# --- What the record says ---------------------------------------------------------------------
def graph_params(graph_dir: str, manifest: dict) -> dict:
    """The graph's identity from its manifest: where it came from, when, which language/field."""
    counts = manifest.get("counts", {})
    return {
        "graph": graph_dir,
        "graph_kind": manifest.get("kind"),
        "graph_source": manifest.get("dbname"),
        "graph_dump_date": manifest.get("newest_revision") or manifest.get("snapshot_date"),
        "graph_language": manifest.get("language"),
        "graph_field": manifest.get("field"),
        "graph_nodes": counts.get("nodes"),
        "graph_edges": counts.get("edges"),
        "graph_created": manifest.get("created"),
    }


def usage_metrics(plays: pd.DataFrame) -> dict:
    """Token totals, invalid calls and the mean seconds per model request, when the agent made any
    requests (an agent without a model has no tokens to count, rather than zero of them); the price
    per game and in all, when every game has one."""
    price = plays[PRICE]
    priced = len(plays) and price.notna().all()
    priced = {PRICE_PER_GAME: float(price.mean()), PRICE_TOTAL: float(price.sum())} if priced else {}
    queries = int(plays["queries"].sum())
    if not queries:
        return priced
    return {
        PROMPT_TOKENS_TOTAL: int(plays["prompt_tokens"].sum()),
        CACHED_TOKENS_TOTAL: int(plays["cached_tokens"].sum()),
        COMPLETION_TOKENS_TOTAL: int(plays["completion_tokens"].sum()),
        REASONING_TOKENS_TOTAL: int(plays["reasoning_tokens"].sum()),
        INVALID_CALLS_TOTAL: int(plays["invalid_calls"].sum()),
        LLM_LATENCY_MEAN_S: float(plays["seconds"].sum()) / queries,
        **priced,
    }


# --- Writing: start or resume -----------------------------------------------------------------
def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


def check_resume(output: Folder, made_by: dict, run_name: str) -> int:
    """The number of chunks already in ``output``; each must have been made as this invocation
    would make it, else :class:`ResumeMismatchError` names every difference."""
    done = 0
    for path in output.glob(PlaysDir.CHUNKS):
        chunk = output.storage.folder(path)
        if not chunk.exists(MANIFEST):
            continue
        recorded = chunk.read_json(MANIFEST).get("made_by")
        if recorded != made_by:
            before, now = _flat(recorded or {}), _flat(made_by)
            keys = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
            diff = "; ".join(f"{k}: {before.get(k, '(not recorded)')!r} then, {now.get(k)!r} now" for k in keys)
            raise ResumeMismatchError(
                f"{output.root}: run {run_name!r} was played with other settings ({diff}); "
                "resume it with its own settings, or give another --run-name (or --overwrite to discard its plays)"
            )
        done += 1
    return done


def resume_point(staging: Folder, run_name: str, overwrite: bool, made_by: dict) -> int:
    """The chunks already played into ``staging`` (the caller holds the run's lock): resumed when
    made as this run would make them; other settings' plays are discarded with ``overwrite``,
    else refused."""
    try:
        return check_resume(staging, made_by, run_name)
    except ResumeMismatchError:
        if not overwrite:
            raise
        log.info("%s: discarding plays made with other settings (--overwrite)", staging.root)
        staging.delete()
        return 0


# --- Writing: chunks and the finish -----------------------------------------------------------
def written_chunk(output: Folder, chunk: int) -> dict | None:
    """A written chunk's manifest (``games``, and ``unanswered``: its games the server never
    answered, which a resume plays again), or None for a chunk not yet played."""
    folder = output.sub(PlaysDir.chunk_name(chunk))
    return folder.read_json(MANIFEST) if folder.exists(MANIFEST) else None


def _never_answered():
    """A plays row whose server never answered (:data:`SERVER_FAILURES`): a game still to play."""
    return F.col("outcome").isin(*SERVER_FAILURES)


def unanswered(plays: DataFrame, answered: bool = False) -> DataFrame:
    """The plays whose server never answered, games still to play; or, with ``answered``, all the others."""
    return plays.filter(~_never_answered() if answered else _never_answered())


def write_chunk(
    spark: SparkSession, output: Folder, chunk: int, plays: DataFrame, made_by: dict | None, replace: bool = False
) -> int:
    """Write one chunk's plays and manifest atomically; a chunk is replaced only to add the
    replays of its unanswered games (``replace``), its answered ones kept. Returns the number of
    plays written."""
    with outputs.staged_output(output.sub(PlaysDir.chunk_name(chunk)), overwrite=replace) as staging:
        parquet.write_table(plays, staging.sub(PLAYS_TABLE), PLAYS)
        written = parquet.read_table(spark, staging.sub(PLAYS_TABLE), PLAYS)
        never = F.sum(_never_answered().cast("long"))
        count, missing = written.agg(F.count("*"), F.coalesce(never, F.lit(0))).first()
        manifest = {"kind": CHUNK_KIND, "chunk": chunk, "games": count, "unanswered": missing}
        manifests.write_manifest(staging, {**manifest, "made_by": made_by} if made_by else manifest)
    return count


def read_run(spark: SparkSession, folder: Folder) -> DataFrame:
    """Every play of a play run's folder (its chunks read in parallel)."""
    return parquet.read_table(
        spark, [folder.storage.folder(c).sub(PLAYS_TABLE) for c in folder.glob(PlaysDir.CHUNKS)], PLAYS
    )


def read_chunks(spark: SparkSession, output: Folder, chunks: Sequence[int]) -> DataFrame:
    """The plays of ``chunks`` of ``output`` as one frame."""
    return parquet.read_table(spark, [output.sub(PlaysDir.chunk_name(c)).sub(PLAYS_TABLE) for c in chunks], PLAYS)


def plays_frame(spark: SparkSession, plays: pd.DataFrame) -> DataFrame:
    """PLAYS rows from pandas, through an Arrow table that keeps a NaN ``seconds`` (an imported human
    game without a time) as NaN: pandas' own conversion reads NaN as null, which the contract's
    non-nullable column refuses (Spark then warns and falls back to converting row by row)."""
    schema = to_arrow_schema(PLAYS)
    columns = [pa.array(plays[f.name], type=f.type, from_pandas=False) for f in schema]
    return spark.createDataFrame(pa.table(columns, schema=schema), PLAYS)


def record_plays(
    spark: SparkSession, plays: pd.DataFrame, staging: Folder, artifacts: dict[str, bytes] | None = None
) -> dict:
    """Plays made outside the engine (imported logs, people in the browser) recorded as a play run's
    are: ``plays.parquet`` plus ``artifacts`` in the active MLflow run, and ``staging`` (the run's
    plays folder, renamed into place by the job runner with its manifest) as one chunk. Returns the
    summary metrics."""
    plays = plays.sort_values(["game_id", "model"], ignore_index=True, na_position="first")
    plays["route"] = plays["route"].map(lambda r: [int(v) for v in r])  # numpy arrays from toPandas
    log_plays(plays, artifacts)
    write_chunk(spark, staging, 0, plays_frame(spark, plays), None)
    return summarise(plays)
