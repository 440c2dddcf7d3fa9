"""The report: the play runs of an MLflow experiment → tables, fits, figures, Markdown and HTML.

Inputs (:func:`find_play_runs`, :func:`load_plays`): a play run is an MLflow run with an
``agent`` param (``jobs/play_games.py``, ``jobs/import_human_games.py``). Its plays are read
from its plays folder when that folder's ``manifest.json`` names the run (Spark reads it in
parallel), else from the run's ``plays.parquet`` artifact. Without explicit run ids, every
finished play run of the experiment counts, except that of several runs with the same name only
the latest does (a rerun with ``--overwrite`` replays the same games); the others are listed in
the report as superseded, and unfinished runs as skipped.

Stage (:func:`evaluate`): labelled plays → :class:`Evaluation` (tables and fits, pandas).
Output (:func:`render`): the report's files as bytes — report.md, report.html (figures inlined,
so it reads anywhere, the MLflow UI included), figures/*.png, tables/*.csv, report.json.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import json
import logging
import math
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType

from wikigame_spark import io, tracking
from wikigame_spark.agents.local_server import PLUMBING_MODELS
from wikigame_spark.agents.sentence_models import model_slug
from wikigame_spark.evaluation import bands, figures, loops, protocols, tables
from wikigame_spark.evaluation.fits import HUMAN_CUTOFF, MIN_FIT_GAMES, StepFits, fit_groups, fit_table
from wikigame_spark.evaluation.humans import HUMAN
from wikigame_spark.schemas import PLAYS

log = logging.getLogger(__name__)

PLAYS_ARTIFACT = "plays.parquet"
KIND_TAG = "wikigame.kind"
PLUMBING_TAG = "wikigame.plumbing"  # "true": a model that checks the plumbing, not a player
PLUMBING_NOTE = "base model: plumbing check"
WILSON = ("wilson_low", "wilson_high")
# What names a play run's inputs and agent (params of jobs/play_games.py; older runs lack some).
TRACE_PARAMS = (
    "graph_uri",
    "graph_manifest_sha1",
    "games_uri",
    "games_manifest_sha1",
    "games_seed",
    "games_count",
    "agent",
    "model",
    "model_digest",
    "llm_engine",
    "chat_format",
    "protocol",
)
TRACE_METRICS = ("prompt_tokens_total", "completion_tokens_total", "llm_latency_mean_s")


# --- Inputs -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlayRun:
    """One play run and how the report names it."""

    run_id: str
    run_name: str
    start_time: int
    params: dict
    label: str
    graph: str
    agent: str
    model: str | None
    max_steps: int | None
    plays_dir: str
    metrics: dict = field(default_factory=dict)
    plumbing: bool = False


def is_plumbing(params: dict, tags: dict | None = None) -> bool:
    """A run of a model that checks the plumbing (the bundled base Gemma), not a player."""
    return (tags or {}).get(PLUMBING_TAG) == "true" or (params.get("model") or "") in PLUMBING_MODELS


def run_label(params: dict, tags: dict | None = None) -> str:
    """The agent as tables show it: agent, model, and the settings that change how it plays."""
    agent = params.get("agent") or "?"
    model = params.get("model") or ""
    text = f"{agent}: {model_slug(model)}" if model else agent
    if params.get("use_titles") == "True":
        text += " (titles)"
    if params.get("top_k") not in (None, "", "0"):
        text += f" top-{params['top_k']}"
    if agent != HUMAN and params.get("max_steps") not in (None, "", protocols.default_max_steps(params)):
        text += f" ≤{params['max_steps']} steps"
    if is_plumbing(params, tags):
        text += f" ({PLUMBING_NOTE})"
    return text + protocols.label_suffix(params)


def graph_label(params: dict) -> str:
    """The graph as tables show it: OpenAlex field, else the wiki's dbname, else the folder."""
    for key in ("graph_field", "graph_source", "graph_language"):
        if params.get(key):
            return params[key]
    return (params.get("graph") or "?").rstrip("/").rsplit("/", 1)[-1]


def _play_run(run) -> PlayRun:
    p = dict(run.data.params)
    tags = dict(run.data.tags)
    graph = (p.get("graph") or "").rstrip("/")
    plays_dir = p.get("output") or f"{graph}/plays/{p.get('run_name') or run.info.run_name}"
    max_steps = p.get("max_steps")
    return PlayRun(
        run.info.run_id,
        run.info.run_name or "",
        int(run.info.start_time or 0),
        p,
        run_label(p, tags),
        graph_label(p),
        p.get("agent", ""),
        p.get("model") or None,
        int(max_steps) if max_steps not in (None, "") else None,
        plays_dir,
        dict(run.data.metrics),
        is_plumbing(p, tags),
    )


def find_play_runs(experiment: str, run_ids: Sequence[str] = ()) -> tuple[list[PlayRun], list[dict]]:
    """The play runs to report on, and the ones left out with the reason."""
    import mlflow
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
            if "agent" not in run.data.params:
                raise ValueError(f"--runs: run {run_id} ({run.info.run_name}) is not a play run (no agent param)")
            if run.info.status != "FINISHED":
                raise ValueError(f"--runs: run {run_id} ({run.info.run_name}) is {run.info.status}, not finished")
            runs.append(_play_run(run))
        return sorted(runs, key=lambda r: (r.label, r.graph, r.start_time)), []
    found = mlflow.search_runs(experiment_ids=[exp.experiment_id], output_format="list")
    candidates = [r for r in found if "agent" in r.data.params]
    skipped, latest = [], {}
    for run in sorted(candidates, key=lambda r: r.info.start_time or 0, reverse=True):
        name = run.info.run_name
        if run.info.status != "FINISHED":
            skipped.append({"run_id": run.info.run_id, "run_name": name, "reason": f"status {run.info.status}"})
        elif name in latest:
            reason = f"superseded by run {latest[name]} of the same name"
            skipped.append({"run_id": run.info.run_id, "run_name": name, "reason": reason})
        else:
            latest[name] = run.info.run_id
    keep = set(latest.values())
    runs = [_play_run(r) for r in candidates if r.info.run_id in keep]
    return sorted(runs, key=lambda r: (r.label, r.graph, r.start_time)), skipped


def _plays_of(spark: SparkSession, run: PlayRun) -> tuple[DataFrame, str]:
    try:
        manifest = io.read_manifest(spark, run.plays_dir)
    except FileNotFoundError:
        manifest = {}
    if manifest.get("mlflow_run_id") == run.run_id:
        fs, pattern = io.filesystem(spark, f"{run.plays_dir}/part-*")
        parts = sorted(f"{s.getPath().toString()}/plays" for s in (fs.globStatus(pattern) or []))
        if not parts:
            return spark.createDataFrame([], PLAYS), run.plays_dir
        return spark.read.schema(PLAYS).parquet(*parts), run.plays_dir
    import mlflow

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
    return spark.createDataFrame(pdf[PLAYS.fieldNames()], PLAYS), f"runs:/{run.run_id}/{PLAYS_ARTIFACT}"


def load_plays(spark: SparkSession, runs: Sequence[PlayRun]) -> tuple[DataFrame, dict[str, str]]:
    """Every run's plays in one frame with the report's columns (label, graph, run_id,
    max_steps), and where each run's plays were read from."""
    if not runs:
        raise ValueError("no play runs to report on")
    frames, sources = [], {}
    for run in runs:
        plays, sources[run.run_id] = _plays_of(spark, run)
        frames.append(
            plays.withColumn(tables.LABEL, F.lit(run.label))
            .withColumn(tables.GRAPH, F.lit(run.graph))
            .withColumn(tables.RUN_ID, F.lit(run.run_id))
            .withColumn(tables.MAX_STEPS, F.lit(run.max_steps).cast(IntegerType()))
        )
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out, sources


# --- Stage ------------------------------------------------------------------------------------
@dataclass
class Evaluation:
    """The report's content, before rendering."""

    runs: pd.DataFrame
    skipped: list[dict]
    labels: list[str]
    graphs: list[str]
    models: dict[str, str | None]
    success: pd.DataFrame
    steps: pd.DataFrame
    outcomes: pd.DataFrame
    extra: pd.DataFrame
    fits: list[tuple[str, str, StepFits]]
    fit_table: pd.DataFrame
    human_cutoff: int = HUMAN_CUTOFF
    human_mode: str = "truncated"
    notes: list[str] = field(default_factory=list)
    bands: pd.DataFrame | None = None  # per difficulty band (bands.band_table)
    loops: pd.DataFrame | None = None  # runs with revisits allowed (loops.loop_table); None without any
    protocols: dict[str, str] = field(default_factory=dict)  # label → protocol
    trace: pd.DataFrame = field(default_factory=pd.DataFrame)  # per run: inputs and agent identity
    plumbing: pd.DataFrame = field(default_factory=pd.DataFrame)  # outcome counts of plumbing-model runs

    def metrics(self) -> dict[str, float]:
        """Flat per-group numbers for the report's MLflow run."""
        out = {"runs": float(len(self.runs)), "games": float(self.success[tables.GAMES].sum())}
        for _, r in self.success.iterrows():
            key = metric_key(r[tables.LABEL], r[tables.GRAPH])
            out[f"success_rate.{key}"] = r["success_rate"]
            out[f"success_rate_sd.{key}"] = r["success_rate_sd"]
        for _, r in self.steps.iterrows():
            out[f"steps_above_optimal_mean.{metric_key(r[tables.LABEL], r[tables.GRAPH])}"] = r[
                "steps_above_optimal_mean"
            ]
        for label, graph, f in self.fits:
            key = metric_key(label, graph) + ("" if f.cutoff is None else ".human_cutoff")
            out[f"fit_n.{key}"], out[f"fit_p.{key}"] = f.free.n, f.free.p
            out[f"fit_lrt_p_value.{key}"] = f.lrt.p_value
        out.update(bands.metrics(self.bands, metric_key) if self.bands is not None else {})
        out.update(loops.metrics(self.loops, metric_key) if self.loops is not None else {})
        return {k: float(v) for k, v in out.items() if v is not None and math.isfinite(float(v))}


def metric_key(label: str, graph: str) -> str:
    """An MLflow-safe metric name part for a group."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{label}.{graph}").strip("_")


def evaluate(
    plays: DataFrame,
    runs: Sequence[PlayRun],
    skipped: Sequence[dict] = (),
    sources: dict[str, str] | None = None,
    human_cutoff: int = HUMAN_CUTOFF,
    human_mode: str = "truncated",
    difficulty_bands: tuple[tuple[int, int], ...] = ((1, 2), (3, 4), (5, 6), (7, 8)),
) -> Evaluation:
    """Labelled plays (see :func:`load_plays`) → tables and fits. Runs of plumbing models (see
    :func:`is_plumbing`) get outcome counts only: no success rate, fit or figure."""
    agg = tables.aggregate(plays)
    plumbing = {r.label for r in runs if r.plumbing}
    players = lambda df: df[~df[tables.LABEL].isin(plumbing)].reset_index(drop=True)  # noqa: E731
    player_plays = plays.filter(~F.col(tables.LABEL).isin(sorted(plumbing))) if plumbing else plays
    success = tables.success_table(players(agg.groups))
    labels, graphs = tables.label_order(success), tables.graph_order(success)
    steps = tables.steps_table(players(agg.groups))
    outcomes = tables.outcome_table(players(agg.outcomes))
    games = {(r[tables.LABEL], r[tables.GRAPH]): int(r[tables.GAMES]) for _, r in agg.groups.iterrows()}
    humans = {r.label for r in runs if r.agent == HUMAN}
    fits = fit_groups(players(agg.extra), games, humans, human_cutoff, human_mode)
    per_run = agg.per_run.set_index(tables.RUN_ID)[tables.GAMES].to_dict()
    run_rows = [
        {
            "run_name": r.run_name,
            "run_id": r.run_id,
            "agent": r.label,
            "graph": r.graph,
            "games": int(per_run.get(r.run_id, 0)),
            "max_steps": r.max_steps if r.max_steps is not None else "",
            "protocol": protocols.run_protocol(r.params),
            "plays": (sources or {}).get(r.run_id, r.plays_dir),
        }
        for r in runs
    ]
    notes = []
    empty = [row["run_name"] for row in run_rows if row["games"] == 0]
    if empty:
        notes.append(f"runs with no plays: {', '.join(empty)}")
    notes += comparability_notes(runs)
    return Evaluation(
        runs=pd.DataFrame(run_rows),
        skipped=list(skipped),
        labels=labels,
        graphs=graphs,
        models={r.label: r.model for r in runs},
        success=success,
        steps=steps,
        outcomes=outcomes,
        extra=agg.extra,
        fits=fits,
        fit_table=fit_table(fits),
        human_cutoff=human_cutoff,
        human_mode=human_mode,
        notes=notes,
        bands=bands.band_table(bands.band_counts(player_plays, difficulty_bands)),
        loops=_loops(player_plays, runs),
        protocols={r.label: protocols.run_protocol(r.params) for r in runs},
        trace=trace_table(runs),
        plumbing=plumbing_table(agg.outcomes[agg.outcomes[tables.LABEL].isin(plumbing)]),
    )


def _short(value, n: int = 12) -> str:
    return str(value)[:n] if value not in (None, "") else "–"


def trace_table(runs: Sequence[PlayRun]) -> pd.DataFrame:
    """Per run, what it played on and with: graph and games (URI, manifest digest, seed, count),
    agent and model identity, LLM token totals and latency ("–" where an older run did not record it)."""
    rows = []
    for r in runs:
        p, m = r.params, r.metrics
        rows.append(
            {
                "run_name": r.run_name,
                "agent": r.label,
                "graph": r.graph,
                "graph_uri": p.get("graph_uri") or p.get("graph") or "–",
                "graph sha1": _short(p.get("graph_manifest_sha1")),
                "games_uri": p.get("games_uri") or "–",
                "games sha1": _short(p.get("games_manifest_sha1")),
                "games seed": p.get("games_seed") or "–",
                "games count": p.get("games_count") or "–",
                "model": p.get("model") or "–",
                "model digest": _short(p.get("model_digest")),
                "engine": p.get("llm_engine") or "–",
                "chat format": p.get("chat_format") or "–",
                "protocol": p.get("protocol") or "–",
                "prompt tokens": int(m["prompt_tokens_total"]) if "prompt_tokens_total" in m else "–",
                "completion tokens": int(m["completion_tokens_total"]) if "completion_tokens_total" in m else "–",
                "mean latency (s)": tables.rounded(m["llm_latency_mean_s"], 2) if "llm_latency_mean_s" in m else "–",
            }
        )
    return pd.DataFrame(rows)


def comparability_notes(runs: Sequence[PlayRun]) -> list[str]:
    """Warnings for runs shown side by side that did not play the same graph build or games set."""
    notes = []
    by_graph: dict[str, list[PlayRun]] = {}
    for r in runs:
        by_graph.setdefault(r.graph, []).append(r)
    for graph, group in sorted(by_graph.items()):
        for key, what in (("graph_manifest_sha1", "builds of the graph"), ("games_manifest_sha1", "games sets")):
            found = {r.params[key]: r.run_name for r in group if r.params.get(key)}
            if len(found) > 1:
                named = "; ".join(f"{name} ({_short(d)})" for d, name in sorted(found.items()))
                notes.append(f"runs compared on graph {graph} played different {what}: {named}")
    untraced = [r.run_name for r in runs if not r.params.get("graph_manifest_sha1")]
    if untraced:
        notes.append(
            f"{len(untraced)} run(s) recorded no graph manifest digest (made before runs were traced), so "
            f"their inputs cannot be checked: {', '.join(untraced)}"
        )
    return notes


def plumbing_table(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Outcome counts (games, not fractions) per plumbing-model run group."""
    if outcomes.empty:
        return pd.DataFrame()
    table = outcomes.pivot_table(
        index=tables.GROUP, columns="outcome", values=tables.GAMES, fill_value=0, aggfunc="sum"
    )
    table.insert(0, tables.GAMES, table.sum(axis=1))
    table = table.reset_index().rename(columns={tables.LABEL: "agent"})
    table.columns.name = None
    return table


def _loops(plays: DataFrame, runs: Sequence[PlayRun]) -> pd.DataFrame | None:
    ids = loops.revisit_run_ids(runs)
    return loops.loop_table(loops.loop_counts(plays.filter(F.col(tables.RUN_ID).isin(ids)))) if ids else None


# --- Rendering --------------------------------------------------------------------------------
def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def _fmt(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        if value != 0 and (abs(value) < 10 ** (-digits) or abs(value) >= 1e6):
            return f"{value:.2e}"
        return tables.rounded(value, digits)
    return str(value)


def _human_text(ev: Evaluation) -> str:
    how = (
        "are treated as unknown, as in the paper: left out, the rest truncated at the cutoff"
        if ev.human_mode == "truncated"
        else "are censored: each contributes Pr(X > cutoff)"
    )
    return (
        ' Human games have no step limit ("untruncated") but a time limit: in the human_cutoff fit, '
        f"games more than {ev.human_cutoff} steps above optimal {how}."
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _fits_display(ft: pd.DataFrame) -> pd.DataFrame:
    pm = tables.format_pm
    rows = []
    for _, r in ft.iterrows():
        rows.append(
            {
                "agent": r["agent"],
                "graph": r["graph"],
                "fit": r["variant"],
                "games fitted": r["fitted"],
                "n (n free)": pm(r["n"], r["n_se"], 2),
                "p (n free)": pm(r["p"], r["p_se"], 3),
                "NLL (n free)": _fmt(r["nll"], 2),
                "p (n = 1)": pm(r["geometric_p"], r["geometric_p_se"], 3),
                "NLL (n = 1)": _fmt(r["geometric_nll"], 2),
                "2ΔNLL": _fmt(r["lrt_statistic"], 2),
                "LRT p-value": _fmt(r["lrt_p_value"], 3),
                "note": "; ".join(t for t in (r["note"], _implied(r)) if t),
            }
        )
    return pd.DataFrame(rows)


def _implied(r) -> str:
    rate = r["implied_success_rate"]
    if rate is None or not math.isfinite(rate):
        return ""
    return f"implied success rate without the time limit {tables.format_pm(rate, r['implied_success_rate_se'])}"


def _md_table(df: pd.DataFrame) -> str:
    cell = lambda v: _fmt(v).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(cell(c) for c in df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def _html_table(df: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>"
        for row in df.itertuples(index=False)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;margin:1em 0;font-size:14px}"
    "th,td{border:1px solid #ccc;padding:4px 8px;text-align:left}th{background:#f3f3f3}"
    "img{max-width:100%;border:1px solid #eee;margin:0.5em 0}figcaption{color:#555;font-size:13px}"
)


class _Doc:
    """Blocks rendered twice: Markdown (figures by relative path) and HTML (figures inlined)."""

    def __init__(self) -> None:
        self.blocks: list[tuple] = []
        self.files: dict[str, bytes] = {}
        self.protocols: dict[str, str] = {}  # label → protocol: tables get a protocol column when mixed

    def heading(self, text: str, level: int = 2) -> None:
        self.blocks.append(("h", level, text))

    def para(self, text: str) -> None:
        self.blocks.append(("p", text))

    def table(self, df: pd.DataFrame) -> None:
        self.blocks.append(("table", protocols.with_protocol_column(df, self.protocols)))

    def figure(self, name: str, png: bytes, caption: str) -> None:
        path = f"figures/{name}.png"
        self.files[path] = png
        self.blocks.append(("figure", path, caption))

    def markdown(self) -> str:
        out = []
        for b in self.blocks:
            if b[0] == "h":
                out.append("#" * b[1] + " " + b[2])
            elif b[0] == "p":
                out.append(b[1])
            elif b[0] == "table":
                out.append(_md_table(b[1]))
            else:
                out.append(f"![{b[2]}]({b[1]})\n\n*{b[2]}*")
        return "\n\n".join(out) + "\n"

    def html(self, title: str) -> str:
        out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"]
        out.append(f"<style>{_CSS}</style></head><body>")
        for b in self.blocks:
            if b[0] == "h":
                out.append(f"<h{b[1]}>{html.escape(b[2])}</h{b[1]}>")
            elif b[0] == "p":
                text = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(b[1]))
                out.append(f"<p>{text}</p>")
            elif b[0] == "table":
                out.append(_html_table(b[1]))
            else:
                data = base64.b64encode(self.files[b[1]]).decode("ascii")
                out.append(
                    f"<figure><img alt='{html.escape(b[2])}' src='data:image/png;base64,{data}'>"
                    f"<figcaption>{html.escape(b[2])}</figcaption></figure>"
                )
        out.append("</body></html>")
        return "\n".join(out) + "\n"


def render(ev: Evaluation, experiment: str, created: str | None = None, run_id: str = "") -> dict[str, bytes]:
    """The report's files: relative path → content."""
    created = created or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    labels, graphs = ev.labels, ev.graphs
    doc = _Doc()
    doc.protocols = ev.protocols
    title = f"Wikipedia Game report — {experiment}"
    doc.heading(title, 1)
    games = int(ev.success[tables.GAMES].sum())
    doc.para(
        f"{_count(len(ev.runs), 'play run')}, {_count(games, 'game')}, {_count(len(labels), 'agent')} "
        f"on {_count(len(graphs), 'graph')}. "
        f"Created {created} by wikigame-spark {io.code_version()}"
        + (f"; MLflow report run `{run_id}`." if run_id else ".")
    )
    doc.heading("Runs")
    doc.table(ev.runs)
    for s in ev.skipped:
        doc.para(f"Left out: run `{s['run_id']}` ({s['run_name']}): {s['reason']}.")
    for note in ev.notes:
        doc.para(f"Note: {note}.")
    if not ev.trace.empty:
        doc.heading("Run inputs")
        doc.para(
            "What each run played on and with: the graph and games set (URI, SHA-1 of their manifests, "
            "seed, count), the agent's model (name, file digest, LLM engine and chat format), and for "
            "LLM agents the tokens used and the mean latency of a request. – = not recorded by the run."
        )
        doc.table(ev.trace)
    if not ev.plumbing.empty:
        doc.heading("Plumbing checks (base models)")
        doc.para(
            "Runs of a base model (the bundled Gemma-3-270M GGUF is the pretrained model, not the "
            "instruction-tuned one): they show that the server, the prompts, the token accounting and every "
            "outcome path work, not how well a model plays, so they get outcome counts here and no success "
            "rate, fit or figure."
        )
        doc.table(ev.plumbing)
    if ev.success.empty:
        doc.para("No runs of players to evaluate.")
        return _files(doc, ev, title, experiment, created, run_id)

    doc.heading("Success rate (Table 4)")
    doc.para(
        "Fraction of games that reached the target, ± one standard deviation √(p(1−p)/n) (the paper's σ), "
        "and in brackets the 95 % Wilson interval, which stays meaningful for few games and for rates of 0 or 1."
    )
    doc.table(tables.wide(ev.success, "success_rate", "success_rate_sd", labels, graphs, interval=WILSON))
    doc.figure(
        "fig2a_success_by_agent",
        figures.success_by_agent(ev.success, labels, graphs),
        "Fig 2A · Success rate of each agent"
        + (" on each graph" if len(graphs) > 1 else f" on {graphs[0]}")
        + ": bars ± one standard deviation, black line the 95 % Wilson interval, n = games played.",
    )
    fig2b = figures.success_vs_parameters(ev.success, ev.models)
    if fig2b is None:
        doc.para("Fig 2B (success against model size) left out: no agent's model has a known parameter count.")
    else:
        doc.figure(
            "fig2b_success_vs_parameters",
            fig2b,
            "Fig 2B · Success rate against the model's parameter count (log scale), for the models whose "
            "size is known, one colour per graph; plumbing-check models are not shown.",
        )

    doc.heading("Steps above optimal (Table 5)")
    doc.para("Successful games only: mean steps above the shortest path ± standard error.")
    doc.table(tables.wide(ev.steps, "steps_above_optimal_mean", "steps_above_optimal_se", labels, graphs, 1))
    doc.figure(
        "fig3d_mean_steps",
        figures.mean_steps(ev.steps, labels, graphs),
        "Fig 3D · Mean steps above the shortest path of each agent's successful games, ± standard error.",
    )

    doc.heading("Negative binomial fits (Appendix J)")
    doc.para(
        "Steps above optimal x of successful games, Pr(x) = C(x+n−1, x)(1−p)^x p^n, fitted by maximum "
        "likelihood with each game's likelihood truncated at the largest x it could succeed with "
        "(max_steps − optimal steps); standard errors from the Hessian. n free against n = 1 "
        "(geometric) by the likelihood-ratio test, 2ΔNLL against χ² with one degree of freedom."
        + (_human_text(ev) if any(f.cutoff is not None for _, _, f in ev.fits) else "")
        + f" Groups with fewer than {MIN_FIT_GAMES} successful games are shown but not fitted."
    )
    doc.table(_fits_display(ev.fit_table))
    shown = {}
    for label, graph, f in ev.fits:  # the human variant replaces the plain fit in the histogram
        if f.cutoff is not None or (label, graph) not in shown:
            shown[(label, graph)] = f
    for (label, graph), f in shown.items():
        counts = ev.extra[(ev.extra[tables.LABEL] == label) & (ev.extra[tables.GRAPH] == graph)]
        if counts.empty:
            continue
        doc.figure(
            f"fig3_steps_{_slug(label)}_{_slug(graph)}",
            figures.steps_histogram(label, graph, counts, f),
            f"Fig 3 · {label} on {graph}: how many successful games took each number of steps above the "
            "shortest path (bars), and the counts the negative binomial fits expect (lines)"
            + (f" — {f.free.note}." if not math.isfinite(f.free.p) else "."),
        )

    doc.heading("Success across graphs (Fig 4)")
    if len(graphs) > 1:
        doc.figure(
            "fig4_success_across_graphs",
            figures.success_across_graphs(ev.success, labels, graphs),
            f"Fig 4 · Success rate of each agent on each of the {len(graphs)} graphs "
            f"({', '.join(graphs)}), ± one standard deviation.",
        )
    else:
        doc.para(f"Fig 4 left out: every run played one graph ({graphs[0]}); it compares two or more.")

    doc.heading("Outcomes (Figures 15–17)")
    wide_outcomes = tables.outcome_wide(ev.outcomes, labels, graphs)
    doc.table(wide_outcomes.rename(columns={tables.LABEL: "agent"}))
    doc.figure(
        "fig15_outcomes",
        figures.outcome_stacks(wide_outcomes, graphs),
        "Fig 15 · How each agent's games ended: the fraction of games with each outcome (success first).",
    )
    if ev.bands is not None:
        bands.render(doc, ev.bands, labels, graphs)
    if ev.loops is not None:
        loops.render(doc, ev.loops, labels, graphs)
    return _files(doc, ev, title, experiment, created, run_id)


def _files(doc: _Doc, ev: Evaluation, title: str, experiment: str, created: str, run_id: str) -> dict[str, bytes]:
    files = dict(doc.files)
    files["report.md"] = doc.markdown().encode("utf-8")
    files["report.html"] = doc.html(title).encode("utf-8")
    csv = lambda df: df.to_csv(index=False).encode("utf-8")  # noqa: E731
    files["tables/runs.csv"] = csv(ev.runs)
    files["tables/run_inputs.csv"] = csv(ev.trace)
    files["tables/plumbing_outcome_counts.csv"] = csv(ev.plumbing)
    files["tables/table4_success.csv"] = csv(ev.success)
    files["tables/table5_steps_above_optimal.csv"] = csv(ev.steps)
    files["tables/outcomes.csv"] = csv(ev.outcomes)
    files["tables/fits.csv"] = csv(ev.fit_table)
    files["tables/steps_above_optimal_counts.csv"] = csv(ev.extra)
    extra_tables = {"bands": ev.bands, "loops": ev.loops}
    for name, table in extra_tables.items():
        if table is not None:
            files[f"tables/{name}.csv"] = csv(table)
    summary = {
        "kind": "report",
        "experiment": experiment,
        "created": created,
        "code_version": io.code_version(),
        "mlflow_run_id": run_id,
        "runs": ev.runs.to_dict(orient="records"),
        "run_inputs": ev.trace.to_dict(orient="records"),
        "plumbing_outcome_counts": ev.plumbing.to_dict(orient="records"),
        "notes": ev.notes,
        "skipped": ev.skipped,
        "success": ev.success.to_dict(orient="records"),
        "steps_above_optimal": ev.steps.to_dict(orient="records"),
        "outcomes": ev.outcomes.to_dict(orient="records"),
        "fits": [{"agent": a, "graph": g, **f.to_dict()} for a, g, f in ev.fits],
        **{k: t.to_dict(orient="records") for k, t in extra_tables.items() if t is not None},
        "figures": sorted(k for k in files if k.startswith("figures/")),
    }
    files["report.json"] = (json.dumps(summary, indent=2, ensure_ascii=False, default=_json_default) + "\n").encode()
    files[io.MANIFEST] = files["report.json"]
    return files


def _json_default(value):
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


# --- Output -----------------------------------------------------------------------------------
def default_output(experiment: str) -> str:
    return os.path.join("out", "report", _slug(experiment.rstrip("/").rsplit("/", 1)[-1]))


def check_output(spark: SparkSession, output: str, overwrite: bool) -> None:
    """An existing folder is replaced only if it holds an earlier report, or with ``overwrite``."""
    if not io.exists(spark, output) or overwrite:
        return
    try:
        kind = io.read_manifest(spark, output).get("kind")
    except (FileNotFoundError, ValueError):
        kind = None
    if kind != "report":
        raise io.OutputExistsError(f"{output} exists and is not a report; pass --overwrite to replace it")


def write_local(files: dict[str, bytes], directory: str) -> None:
    for rel, data in files.items():
        path = os.path.join(directory, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


def publish(spark: SparkSession, files: dict[str, bytes], output: str) -> None:
    """Write the report folder atomically: on a local disk with plain files (Hadoop's local
    filesystem would add a ``.crc`` beside each), elsewhere through Hadoop (DBFS, S3, HDFS…)."""
    fs, jpath = io.filesystem(spark, output)
    if fs.getUri().getScheme() == "file":
        target = fs.makeQualified(jpath).toUri().getPath()
        staging = f"{target}._staging-{uuid.uuid4().hex[:8]}"
        try:
            write_local(files, staging)
            if os.path.isdir(target):
                shutil.rmtree(target)
            os.replace(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return
    with io.staged_output(spark, output, overwrite=True) as staging:
        for rel, data in files.items():
            io.write_bytes(spark, f"{staging}/{rel}", data)


def log_artifacts(files: dict[str, bytes]) -> None:
    """The report's files as artifacts of the active MLflow run."""
    import mlflow

    with tempfile.TemporaryDirectory() as tmp:
        write_local(files, tmp)
        mlflow.log_artifacts(tmp)
