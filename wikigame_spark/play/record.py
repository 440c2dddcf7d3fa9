"""A play run's record, both ways: what is written when games are played, and how it is read back.

A play run is an MLflow run (params, metrics, the ``plays.parquet`` artifact) plus a plays folder
(:class:`~wikigame_spark.layout.PlaysDir`): chunks written atomically, each with a manifest naming
what made it, and — once the run is finished — the run's manifest naming its MLflow run id.
``jobs/play_games.py`` writes one chunk by chunk and may resume it (:func:`prepare_output`,
:func:`started`, :func:`write_chunk`, :func:`finish`); plays made outside the engine (imported
logs, people in the browser) are written in one go (:func:`record_plays`). The report finds the
runs of an experiment and loads their plays (:func:`find_runs`, :func:`load_plays`). The names of
the record's params and metrics are the constants below, so writer and reader agree by
construction.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field

import mlflow
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from wikigame_spark import io, layout, tracking
from wikigame_spark.agents.base import ModelIdentity
from wikigame_spark.handles import GamesHandle
from wikigame_spark.layout import GraphDir, PlaysDir
from wikigame_spark.outcomes import SERVER_FAILURES, SUCCESS
from wikigame_spark.schemas import ID, PLAYS, TITLE
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
COMPLETION_TOKENS_TOTAL = "completion_tokens_total"
LLM_LATENCY_MEAN_S = "llm_latency_mean_s"
USAGE_METRICS = (PROMPT_TOKENS_TOTAL, COMPLETION_TOKENS_TOTAL, LLM_LATENCY_MEAN_S)
RUN_IDENTITY = "run_identity"  # the plays manifest's key
PLAYS_ARTIFACT = "plays.parquet"
ROUTES_ARTIFACT = "sample_routes.md"
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
        "graph_source": manifest.get("dbname") or manifest.get("source") or manifest.get("input"),
        "graph_dump_date": manifest.get("newest_revision") or manifest.get("snapshot_date"),
        "graph_language": manifest.get("language"),
        "graph_field": manifest.get("field"),
        "graph_nodes": counts.get("nodes"),
        "graph_edges": counts.get("edges"),
        "graph_created": manifest.get("created"),
    }


def usage_metrics(plays: pd.DataFrame) -> dict:
    """Token totals and the mean seconds per model request, when the agent made any requests (an
    agent without a model has no tokens to count, rather than zero of them)."""
    queries = int(plays["queries"].sum())
    if not queries:
        return {}
    return {
        PROMPT_TOKENS_TOTAL: int(plays["prompt_tokens"].sum()),
        COMPLETION_TOKENS_TOTAL: int(plays["completion_tokens"].sum()),
        LLM_LATENCY_MEAN_S: float(plays["seconds"].sum()) / queries,
    }


def sample_routes(plays: pd.DataFrame, nodes: DataFrame, n: int = 20) -> str:
    """Markdown: the first ``n`` games' routes as titles, with their outcomes."""
    sample = plays.sort_values("game_id").head(n)
    ids = sorted({int(i) for route in sample["route"] for i in route} | {int(t) for t in sample["target"]})
    titles = {r[ID]: r[TITLE] for r in nodes.filter(F.col(ID).isin(ids)).select(ID, TITLE).collect()} if ids else {}
    lines = ["| game | outcome | steps (optimal) | target | route |", "|---|---|---|---|---|"]
    for row in sample.itertuples():
        route = " → ".join(titles.get(int(i), str(i)) for i in row.route)
        lines.append(
            f"| {row.game_id} | {row.outcome} | {row.steps} ({row.optimal_steps}) | "
            f"{titles.get(int(row.target), row.target)} | {route} |"
        )
    return "\n".join(lines) + "\n"


# --- Writing: start or resume -----------------------------------------------------------------
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
    statuses = fs.globStatus(io.filesystem(spark, PlaysDir(output).chunks_glob)[1]) if fs.exists(jpath) else None
    for status in sorted(statuses or [], key=lambda s: s.getPath().getName()):
        path = status.getPath().toString()
        if not io.exists(spark, layout.manifest(path)):
            continue
        recorded = io.read_json(spark, layout.manifest(path)).get("made_by")
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


def resume_point(spark: SparkSession, staging: str, run_name: str, overwrite: bool, made_by: dict) -> int:
    """The chunks already played into ``staging`` (the caller holds the run's lock): resumed when
    made as this run would make them; other settings' plays are discarded with ``overwrite``,
    else refused."""
    try:
        return check_resume(spark, staging, made_by, run_name)
    except ResumeMismatchError:
        if not overwrite:
            raise
        log.info("%s: discarding plays made with other settings (--overwrite)", staging)
        io.delete(spark, staging)
        return 0


# --- Writing: chunks and the finish -----------------------------------------------------------
def written_chunk(spark: SparkSession, output: str, chunk: int) -> dict | None:
    """A written chunk's manifest (``games``, and ``unanswered``: its games the server never
    answered, which a resume plays again), or None for a chunk not yet played."""
    path = layout.manifest(PlaysDir(output).chunk(chunk))
    return io.read_json(spark, path) if io.exists(spark, path) else None


def _never_answered():
    """A plays row whose server never answered (:data:`SERVER_FAILURES`): a game still to play."""
    return F.col("outcome").isin(*SERVER_FAILURES)


def unanswered(plays: DataFrame, answered: bool = False) -> DataFrame:
    """The plays whose server never answered, games still to play; or, with ``answered``, all the others."""
    return plays.filter(~_never_answered() if answered else _never_answered())


def write_chunk(
    spark: SparkSession, output: str, chunk: int, plays: DataFrame, made_by: dict | None, replace: bool = False
) -> int:
    """Write one chunk's plays and manifest atomically; a chunk is replaced only to add the
    replays of its unanswered games (``replace``), its answered ones kept. Returns the number of
    plays written."""
    with io.staged_output(spark, PlaysDir(output).chunk(chunk), overwrite=replace) as staging:
        io.write_table(plays, PlaysDir.plays(staging), PLAYS)
        written = spark.read.schema(PLAYS).parquet(PlaysDir.plays(staging))
        never = F.sum(_never_answered().cast("long"))
        count, missing = written.agg(F.count("*"), F.coalesce(never, F.lit(0))).first()
        manifest = {"kind": CHUNK_KIND, "chunk": chunk, "games": count, "unanswered": missing}
        io.write_json(spark, layout.manifest(staging), {**manifest, "made_by": made_by} if made_by else manifest)
    return count


def read_chunks(spark: SparkSession, output: str, chunks: Sequence[int]) -> DataFrame:
    """The plays of ``chunks`` of ``output`` as one frame."""
    paths = [PlaysDir.plays(PlaysDir(output).chunk(c)) for c in chunks]
    return spark.read.schema(PLAYS).parquet(*paths) if paths else spark.createDataFrame([], PLAYS)


SUMMARY_ARTIFACT = "summary_by_optimal_steps.json"
FIGURE_ARTIFACT = "success_by_optimal_steps.png"


def by_optimal_steps(plays: pd.DataFrame) -> pd.DataFrame:
    """Per optimal length: games, successes, success rate, mean steps above optimal when solved."""
    won = plays["outcome"] == SUCCESS
    extra = (plays["steps"] - plays["optimal_steps"]).where(won)
    table = (
        plays.assign(won=won, extra=extra)
        .groupby("optimal_steps")
        .agg(games=("won", "size"), successes=("won", "sum"), steps_above_optimal_mean=("extra", "mean"))
        .reset_index()
    )
    table["success_rate"] = table["successes"] / table["games"]
    return table[["optimal_steps", "games", "successes", "success_rate", "steps_above_optimal_mean"]]


def success_figure(table: pd.DataFrame, title: str) -> bytes:
    """Success rate by optimal length, each bar labelled with its number of games (a PNG)."""
    import io as bytes_io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    xs = range(len(table))  # one bar per length present, labelled with it (lengths may skip)
    ax.bar(xs, table["success_rate"], color="tab:green")
    ax.set_xticks(xs, table["optimal_steps"].astype(str))
    for x, (rate, n) in enumerate(zip(table["success_rate"], table["games"])):
        ax.annotate(f"n={n}", (x, rate), ha="center", va="bottom", fontsize=8)
    ax.set(xlabel="optimal steps", ylabel="success rate", ylim=(0, 1.1), title=title)
    fig.tight_layout()
    out = bytes_io.BytesIO()
    fig.savefig(out, format="png")
    plt.close(fig)
    return out.getvalue()


def log_plays(plays: pd.DataFrame, artifacts: dict[str, bytes] | None = None) -> None:
    """The plays (``plays.parquet``) and ``artifacts`` as artifacts of the active MLflow run, with
    what the MLflow UI shows without a download: the success by optimal length as a table and a
    figure."""
    table = by_optimal_steps(plays)
    mlflow.log_table(table, SUMMARY_ARTIFACT)
    label = ", ".join(sorted({str(a) for a in plays["agent"].dropna().unique()})) or "plays"
    artifacts = {FIGURE_ARTIFACT: success_figure(table, f"{label}: {len(plays)} games"), **(artifacts or {})}
    with tempfile.TemporaryDirectory() as tmp:
        plays.to_parquet(os.path.join(tmp, PLAYS_ARTIFACT), index=False)
        for name, data in (artifacts or {}).items():
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
        mlflow.log_artifacts(tmp)


def _plays_frame(spark: SparkSession, plays: pd.DataFrame) -> DataFrame:
    """PLAYS rows from pandas, through an Arrow table that keeps a NaN ``seconds`` (an imported human
    game without a time) as NaN: pandas' own conversion reads NaN as null, which the contract's
    non-nullable column refuses (Spark then warns and falls back to converting row by row)."""
    schema = to_arrow_schema(PLAYS)
    columns = [pa.array(plays[f.name], type=f.type, from_pandas=False) for f in schema]
    return spark.createDataFrame(pa.table(columns, schema=schema), PLAYS)


def record_plays(
    spark: SparkSession, plays: pd.DataFrame, staging: str, artifacts: dict[str, bytes] | None = None
) -> dict:
    """Plays made outside the engine (imported logs, people in the browser) recorded as a play run's
    are: ``plays.parquet`` plus ``artifacts`` in the active MLflow run, and ``staging`` (the run's
    plays folder, renamed into place by the job runner with its manifest) as one chunk. Returns the
    summary metrics."""
    plays = plays.sort_values(["game_id", "model"], ignore_index=True, na_position="first")
    plays["route"] = plays["route"].map(lambda r: [int(v) for v in r])  # numpy arrays from toPandas
    log_plays(plays, artifacts)
    write_chunk(spark, staging, 0, _plays_frame(spark, plays), None)
    return summarise(plays)


# --- Reading ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlayRun:
    """One finished play run as its record says: MLflow run, params, metrics, tags, plays folder."""

    run_id: str
    run_name: str
    start_time: int
    params: dict
    plays_dir: str
    metrics: dict = field(default_factory=dict)
    tags: dict = field(default_factory=dict)

    @property
    def agent(self) -> str:
        return self.params.get(AGENT, "")

    @property
    def model(self) -> str | None:
        return self.params.get(MODEL) or None

    @property
    def max_steps(self) -> int | None:
        steps = self.params.get("max_steps")
        return int(steps) if steps not in (None, "") else None


def _play_run(run) -> PlayRun:
    p = dict(run.data.params)
    graph = (p.get("graph") or "").rstrip("/")
    plays_dir = p.get("output") or GraphDir(graph).plays(p.get("run_name") or run.info.run_name)
    return PlayRun(
        run.info.run_id,
        run.info.run_name or "",
        int(run.info.start_time or 0),
        p,
        plays_dir,
        dict(run.data.metrics),
        dict(run.data.tags),
    )


def find_runs(experiment: str, run_ids: Sequence[str] = ()) -> tuple[list[PlayRun], list[dict]]:
    """The play runs of ``experiment`` (those with an ``agent`` param): ``run_ids`` if given (each
    must be a finished play run of it), else every finished one, the latest of several that wrote
    the same plays folder (a run played again under its name, on its graph: the later replaced the
    plays); and the ones left out with the reason. Runs of one name on different graphs are
    different runs."""
    from mlflow.exceptions import MlflowException

    mlflow.set_tracking_uri(tracking.tracking_uri())
    exp = mlflow.get_experiment_by_name(experiment)
    if exp is None:
        raise ValueError(f"experiment {experiment!r} not found at {tracking.tracking_uri()}")
    client = mlflow.MlflowClient()
    if run_ids:
        runs = []
        for run_id in run_ids:
            try:
                run = client.get_run(run_id)
            except MlflowException as e:
                raise ValueError(f"--runs: run {run_id} not found at {tracking.tracking_uri()}") from e
            if run.info.experiment_id != exp.experiment_id:
                raise ValueError(f"--runs: run {run_id} is not in experiment {experiment!r}")
            if AGENT not in run.data.params:
                raise ValueError(f"--runs: run {run_id} ({run.info.run_name}) is not a play run (no agent param)")
            if run.info.status != "FINISHED":
                raise ValueError(f"--runs: run {run_id} ({run.info.run_name}) is {run.info.status}, not finished")
            runs.append(_play_run(run))
        return runs, []
    found = mlflow.search_runs(experiment_ids=[exp.experiment_id], output_format="list")
    candidates = [r for r in found if AGENT in r.data.params]
    skipped, latest = [], {}
    for run in sorted(candidates, key=lambda r: r.info.start_time or 0, reverse=True):
        name, plays = run.info.run_name, _play_run(run).plays_dir.rstrip("/")
        if run.info.status != "FINISHED":
            skipped.append({"run_id": run.info.run_id, "run_name": name, "reason": f"status {run.info.status}"})
        elif plays in latest:
            reason = f"superseded by run {latest[plays]}, which played again into its plays folder {plays}"
            skipped.append({"run_id": run.info.run_id, "run_name": name, "reason": reason})
        else:
            latest[plays] = run.info.run_id
    keep = set(latest.values())
    return [_play_run(r) for r in candidates if r.info.run_id in keep], skipped


def load_plays(spark: SparkSession, run: PlayRun) -> tuple[DataFrame, str]:
    """The run's plays, and where they were read from: its plays folder when that folder's
    manifest names the run (Spark reads the chunks in parallel), else its ``plays.parquet``."""
    try:
        manifest = io.read_manifest(spark, run.plays_dir)
    except FileNotFoundError:
        manifest = {}
    if manifest.get("mlflow_run_id") == run.run_id:
        fs, pattern = io.filesystem(spark, PlaysDir(run.plays_dir).chunks_glob)
        parts = sorted(PlaysDir.plays(s.getPath().toString()) for s in (fs.globStatus(pattern) or []))
        if not parts:
            return spark.createDataFrame([], PLAYS), run.plays_dir
        return spark.read.schema(PLAYS).parquet(*parts), run.plays_dir
    with tempfile.TemporaryDirectory() as tmp:
        try:
            path = mlflow.artifacts.download_artifacts(run_id=run.run_id, artifact_path=PLAYS_ARTIFACT, dst_path=tmp)
        except Exception as e:  # MLflow raises several types for a missing artifact
            raise FileNotFoundError(
                f"run {run.run_id} ({run.run_name}): no plays folder naming it at {run.plays_dir} "
                f"and no {PLAYS_ARTIFACT} artifact ({e})"
            ) from e
        pdf = pd.read_parquet(path)
    pdf["route"] = pdf["route"].map(lambda r: [int(v) for v in r])
    pdf["model"] = pdf["model"].astype(object).where(pdf["model"].notna(), None)
    pdf["detail"] = pdf["detail"].astype(object).where(pdf["detail"].notna(), None)
    return _plays_frame(spark, pdf), f"runs:/{run.run_id}/{PLAYS_ARTIFACT}"
