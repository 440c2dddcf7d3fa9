"""The report's rendering: an :class:`~wikigame_spark.evaluation.evaluate.Evaluation` → files.

:func:`render` gives the report's files as bytes — report.md, report.html (figures inlined, so it
reads anywhere, the MLflow UI included), figures/*.png, tables/*.csv, report.json (also the
folder's manifest) — which ``jobs/report.py`` logs to MLflow and writes into its output's staging
folder (:func:`wikigame_spark.outputs.write_files`), which the job runner renames into place.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import re
import tempfile

import pandas as pd

from wikigame_spark import layout, manifests, outputs, storage
from wikigame_spark.document import Document, fmt
from wikigame_spark.evaluation import bands, baselines, figures, frontier, loops, people, protocols, routes, tables
from wikigame_spark.evaluation.evaluate import Evaluation
from wikigame_spark.evaluation.fits import MIN_FIT_GAMES
from wikigame_spark.full_size import ENWIKI_CORE_HOURS as COST
from wikigame_spark.full_size import SUMMARY_CHARS, WIKIPEDIA
from wikigame_spark.outcomes import FORMATTING, NAVIGATION

KIND_TAG = "wikigame.kind"
KIND = "report"  # the manifest's and the tag's
WILSON = ("wilson_low", "wilson_high")
SLUG_CHARS = 80


def _slug(text: str) -> str:
    """``text`` as part of a file name: a long one cut, with a digest of the whole to keep it apart
    (a figure's name holds a label and a graph's name, and a file name at most 255 bytes)."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"
    if len(slug) <= SLUG_CHARS:
        return slug
    return f"{slug[: SLUG_CHARS - 9]}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"


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
                "NLL (n free)": fmt(r["nll"], 2),
                "p (n = 1)": pm(r["geometric_p"], r["geometric_p_se"], 3),
                "NLL (n = 1)": fmt(r["geometric_nll"], 2),
                "2ΔNLL": fmt(r["lrt_statistic"], 2),
                "LRT p-value": fmt(r["lrt_p_value"], 3),
                "note": "; ".join(t for t in (r["note"], _implied(r)) if t),
            }
        )
    return pd.DataFrame(rows)


def _implied(r) -> str:
    rate = r["implied_success_rate"]
    if rate is None or not math.isfinite(rate):
        return ""
    return f"implied success rate without the time limit {tables.format_pm(rate, r['implied_success_rate_se'])}"


class _Report(Document):
    """The report's document: its tables get a protocol column when the runs mix protocols."""

    def __init__(self, protocols_by_label: dict[str, str]) -> None:
        super().__init__()
        self.protocols = protocols_by_label  # label → protocol

    def table(self, df: pd.DataFrame) -> None:
        super().table(protocols.with_protocol_column(df, self.protocols))


def render(ev: Evaluation, experiment: str, created: str | None = None, run_id: str = "") -> dict[str, bytes]:
    """The report's files: relative path → content."""
    created = created or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    labels, graphs = ev.labels, ev.graphs
    doc = _Report(ev.protocols)
    title = f"Wikipedia Game report — {experiment}"
    doc.heading(title, 1)
    games = int(ev.success[tables.N_GAMES].sum())
    doc.para(
        f"{_count(len(ev.runs), 'play run')}, {_count(games, 'game')}, {_count(len(labels), 'agent')} "
        f"on {_count(len(graphs), 'graph')}. "
        f"Created {created} by wikigame-spark {manifests.code_version()}"
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
            "LLM agents the tokens used and the mean latency of a request. – = not recorded by the run "
            "(an agent without a model makes no requests)."
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
    fig2c = figures.success_vs_embedding_cost(ev.embedding_cost)
    if fig2c is not None:
        doc.figure(
            "fig2c_success_vs_embedding_cost",
            fig2c,
            "Fig 2C · Success rate against what the model's embedding cache would cost for English Wikipedia "
            f"({WIKIPEDIA.nodes / 1e6:.2f} M summaries of {SUMMARY_CHARS:,} characters): the CPU core-hours "
            "its workers spent encoding this graph's texts, scaled per character (a cache of titles per "
            "title), as measured on the machine that made the cache (docs/full_size.md).",
        )
        doc.table(ev.embedding_cost.rename(columns={tables.LABEL: "agent", COST: "core-hours, English Wikipedia"}))
    frontier.render(doc, ev.prices)

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
    doc.para(
        "Why games were lost: formatting (no usable answer after the paper's follow-ups: "
        f"{', '.join(FORMATTING)}) against navigation (valid moves that never reached the target: "
        f"{', '.join(NAVIGATION)}); other: the server's or a person's outcomes. Fractions of each "
        "agent's games."
    )
    doc.table(ev.losses.rename(columns={tables.LABEL: "agent"}))
    if ev.bands is not None:
        bands.render(doc, ev.bands, labels, graphs)
    if ev.loops is not None:
        loops.render(doc, ev.loops, labels, graphs)
    routes.render(doc, ev.routes, labels, graphs)
    if not ev.baselines.empty:
        baselines.render(doc, ev.baselines)
    if not ev.people.empty:
        people.render(doc, ev.people)
    return _files(doc, ev, title, experiment, created, run_id)


def _files(doc: Document, ev: Evaluation, title: str, experiment: str, created: str, run_id: str) -> dict[str, bytes]:
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
    files["tables/losses.csv"] = csv(ev.losses)
    files["tables/embedding_cost.csv"] = csv(ev.embedding_cost)
    files["tables/fits.csv"] = csv(ev.fit_table)
    files["tables/steps_above_optimal_counts.csv"] = csv(ev.extra)
    extra_tables = {
        "bands": ev.bands,
        "loops": ev.loops,
        **ev.routes.tables(),
        "baselines": ev.baselines,
        "prices": ev.prices,
        **ev.people.tables(),
    }
    for name, table in extra_tables.items():
        if table is not None:
            files[f"tables/{name}.csv"] = csv(table)
    summary = {
        "kind": KIND,
        "experiment": experiment,
        "created": created,
        "code_version": manifests.code_version(),
        "mlflow_run_id": run_id,
        "runs": ev.runs.to_dict(orient="records"),
        "run_inputs": ev.trace.to_dict(orient="records"),
        "plumbing_outcome_counts": ev.plumbing.to_dict(orient="records"),
        "notes": ev.notes,
        "skipped": ev.skipped,
        "success": ev.success.to_dict(orient="records"),
        "steps_above_optimal": ev.steps.to_dict(orient="records"),
        "outcomes": ev.outcomes.to_dict(orient="records"),
        "losses": ev.losses.to_dict(orient="records"),
        "embedding_cost": ev.embedding_cost.to_dict(orient="records"),
        "fits": [{"agent": a, "graph": g, **f.to_dict()} for a, g, f in ev.fits],
        **{k: t.to_dict(orient="records") for k, t in extra_tables.items() if t is not None},
        "figures": sorted(k for k in files if k.startswith("figures/")),
    }
    files["report.json"] = (json.dumps(summary, indent=2, ensure_ascii=False, default=_json_default) + "\n").encode()
    files[layout.MANIFEST] = files["report.json"]
    return files


def _json_default(value):
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


# --- Output -----------------------------------------------------------------------------------
def default_output(experiment: str) -> str:
    return os.path.join("out", "report", _slug(experiment.rstrip("/").rsplit("/", 1)[-1]))


def log_artifacts(files: dict[str, bytes]) -> None:
    """The report's files as artifacts of the active MLflow run."""
    import mlflow

    with tempfile.TemporaryDirectory() as tmp:
        outputs.write_files(storage.folder(tmp), files)
        mlflow.log_artifacts(tmp)
