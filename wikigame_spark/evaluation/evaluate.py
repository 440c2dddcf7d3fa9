"""The report's evaluation: play runs → labelled plays → tables and fits (pandas).

Runs come from :func:`wikigame_spark.play.catalog.find_runs`; here each gets the label tables show
(agent, model, the settings that change how it plays, protocol) and its graph's name
(:func:`labelled`), their plays one frame with those labels (:func:`labelled_plays`), and
:func:`evaluate` reduces it with Spark to small per-group counts, from which the tables, fits and
notes of an :class:`Evaluation` are computed. Rendering it is :mod:`~wikigame_spark.evaluation.render`'s.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType

from wikigame_spark.agents.base import Agent, registered_agents
from wikigame_spark.agents.llm import PLUMBING_NOTE, TOOLS
from wikigame_spark.agents.sentence_models import model_slug
from wikigame_spark.evaluation import bands, baselines, frontier, loops, people, protocols, routes, tables
from wikigame_spark.evaluation.fits import HUMAN_CUTOFF, StepFits, fit_groups, fit_table
from wikigame_spark.evaluation.profiles import profiled_plays
from wikigame_spark.full_size import ENWIKI_CORE_HOURS as COST
from wikigame_spark.ingest.humans import HUMAN, HUMAN_ROUTES
from wikigame_spark.play import catalog, record
from wikigame_spark.play.catalog import PlayRun

PLUMBING_TAG = "wikigame.plumbing"  # "true": a model that checks the plumbing, not a player


# --- Runs as the report names them ------------------------------------------------------------
@dataclass(frozen=True)
class ReportRun(PlayRun):
    """A play run with the names tables give it."""

    label: str = ""
    graph: str = ""
    plumbing: bool = False


def _agent(params: dict) -> type[Agent] | None:
    """The registered agent a run was played by (none for people, or an agent no longer here)."""
    return registered_agents().get(params.get("agent") or "")


def is_plumbing(params: dict, tags: dict | None = None) -> bool:
    """A run that checks the plumbing, not a player: tagged so, or its agent says so of its model
    (:meth:`~wikigame_spark.agents.base.Agent.checks_plumbing`: the bundled base Gemma generating text)."""
    agent = _agent(params)
    return (tags or {}).get(PLUMBING_TAG) == "true" or (agent is not None and agent.checks_plumbing(params))


def is_baseline(params: dict) -> bool:
    """A run of a baseline agent (:attr:`~wikigame_spark.agents.base.Agent.baseline`: the oracle, the hub)."""
    agent = _agent(params)
    return agent is not None and agent.baseline


def run_label(params: dict, tags: dict | None = None) -> str:
    """The agent as tables show it: agent, model, the options that change how it plays (as its
    options class names them), titles, a step limit other than the protocol's, a note on the model."""
    name = params.get("agent") or "?"
    model = params.get("model") or ""
    agent = _agent(params)
    text = f"{name}: {model_slug(model)}" if model else name
    text += "".join(f" {part}" for part in (agent.options.label_parts(params) if agent else ()))
    if params.get("use_titles") == "True":
        text += " (titles)"
    if name != HUMAN and params.get("max_steps") not in (None, "", protocols.default_max_steps(params)):
        text += f" ≤{params['max_steps']} steps"
    note = PLUMBING_NOTE if is_plumbing(params, tags) else agent.model_note(params) if agent else ""
    return text + (f" ({note})" if note else "") + protocols.label_suffix(params)


def graph_label(params: dict) -> str:
    """The graph as tables show it: OpenAlex field, else the wiki's dbname, else the folder."""
    for key in ("graph_field", "graph_source", "graph_language"):
        if params.get(key):
            return params[key]
    return (params.get("graph") or "?").rstrip("/").rsplit("/", 1)[-1]


def labelled(runs: Sequence[PlayRun]) -> list[ReportRun]:
    """The runs with their labels, in the report's order (label, graph, start time)."""
    named = [
        ReportRun(
            **{f.name: getattr(r, f.name) for f in fields(PlayRun)},
            label=run_label(r.params, r.tags),
            graph=graph_label(r.params),
            plumbing=is_plumbing(r.params, r.tags),
        )
        for r in runs
    ]
    return sorted(named, key=lambda r: (r.label, r.graph, r.start_time))


def labelled_plays(spark: SparkSession, runs: Sequence[ReportRun]) -> tuple[DataFrame, dict[str, str]]:
    """Every run's plays in one frame with the report's columns (label, graph, run_id,
    max_steps), and where each run's plays were read from."""
    if not runs:
        raise ValueError("no play runs to report on")
    frames, sources = [], {}
    for run in runs:
        plays, sources[run.run_id] = catalog.load_plays(spark, run)
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
    losses: pd.DataFrame = field(default_factory=pd.DataFrame)  # lost to formatting vs navigation (loss_table)
    embedding_cost: pd.DataFrame = field(default_factory=pd.DataFrame)  # success against cost (embedding_cost_table)
    routes: routes.Routes = field(default_factory=routes.Routes)  # from the distance profiles (routes.py)
    baselines: pd.DataFrame = field(default_factory=pd.DataFrame)  # against the oracle and the hub (baselines.py)
    people: people.Comparison = field(default_factory=people.Comparison)  # people and agents on the same pairs
    prices: pd.DataFrame = field(default_factory=pd.DataFrame)  # price per game, frontier, tokens (frontier.py)

    def metrics(self) -> dict[str, float]:
        """Flat per-group numbers for the report's MLflow run."""
        out = {"runs": float(len(self.runs)), "games": float(self.success[tables.N_GAMES].sum())}
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
        out.update(routes.metrics(self.routes, metric_key))
        out.update(people.metrics(self.people, metric_key))
        out.update(frontier.metrics(self.prices, metric_key) if not self.prices.empty else {})
        return {k: float(v) for k, v in out.items() if v is not None and math.isfinite(float(v))}


def metric_key(label: str, graph: str) -> str:
    """An MLflow-safe metric name part for a group."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{label}.{graph}").strip("_")


def evaluate(
    plays: DataFrame,
    runs: Sequence[ReportRun],
    skipped: Sequence[dict] = (),
    sources: dict[str, str] | None = None,
    human_cutoff: int = HUMAN_CUTOFF,
    human_mode: str = "truncated",
    difficulty_bands: tuple[tuple[int, int], ...] = ((1, 2), (3, 4), (5, 6), (7, 8)),
    distance_profiles: bool = True,
) -> Evaluation:
    """Labelled plays (see :func:`labelled_plays`) → tables and fits. Runs of plumbing models (see
    :func:`is_plumbing`) get outcome counts only: no success rate, fit or figure. With
    ``distance_profiles`` every route is scored against its graph (the route sections, routes.py)."""
    agg = tables.aggregate(plays)
    plumbing = {r.label for r in runs if r.plumbing}
    players = lambda df: df[~df[tables.LABEL].isin(plumbing)].reset_index(drop=True)  # noqa: E731
    player_plays = plays.filter(~F.col(tables.LABEL).isin(sorted(plumbing))) if plumbing else plays
    player_plays = player_plays.filter(tables.answered())  # a game the server never answered is no play
    success = tables.success_table(players(agg.groups))
    labels, graphs = tables.label_order(success), tables.graph_order(success)
    steps = tables.steps_table(players(agg.groups))
    outcomes = tables.outcome_table(players(agg.outcomes))
    games = {(r[tables.LABEL], r[tables.GRAPH]): int(r[tables.N_GAMES]) for _, r in agg.groups.iterrows()}
    humans = {r.label for r in runs if r.agent == HUMAN and r.params.get(HUMAN_ROUTES) != "whole"}
    fits = fit_groups(players(agg.extra), games, humans, human_cutoff, human_mode)
    per_run = agg.per_run.set_index(tables.RUN_ID)[tables.N_GAMES].to_dict()
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
    unanswered = players(agg.groups)
    unanswered = unanswered[unanswered[tables.UNANSWERED] > 0]
    if len(unanswered):
        counts = ", ".join(f"{r[tables.LABEL]} {int(r[tables.UNANSWERED])}" for _, r in unanswered.iterrows())
        notes.append(
            f"games the server never answered (no_response), left out of success rates, steps and fits "
            f"(the outcome breakdown counts them): {counts}"
        )
    route_tables, baseline_table, with_people = routes.Routes(), pd.DataFrame(), people.Comparison()
    if distance_profiles:
        players_runs = [r for r in runs if not r.plumbing]
        profiled, profile_notes = profiled_plays(plays.sparkSession, player_plays, players_runs)
        route_tables = routes.route_analysis(profiled)
        moves, move_notes = baselines.play_moves(plays.sparkSession, profiled, players_runs)
        baseline_table = baselines.baseline_table(moves)
        with_people = people.compare(plays.sparkSession, moves, players_runs)
        notes += profile_notes + move_notes + with_people.notes
    return Evaluation(
        runs=pd.DataFrame(run_rows),
        skipped=list(skipped),
        labels=labels,
        graphs=graphs,
        models={r.label: r.model for r in runs},
        success=success,
        steps=steps,
        outcomes=outcomes,
        losses=tables.loss_table(outcomes, labels, graphs),
        embedding_cost=embedding_cost_table(runs, success),
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
        routes=route_tables,
        baselines=baseline_table,
        people=with_people,
        prices=frontier.frontier_table(players(agg.groups), success, tool_labels(runs)),
    )


def tool_labels(runs: Sequence[ReportRun]) -> set[str]:
    """The agents that played by tool calls (the LLM agents' ``interface``)."""
    return {r.label for r in runs if r.params.get("interface") == TOOLS}


def embedding_cost_table(runs: Sequence[ReportRun], success: pd.DataFrame) -> pd.DataFrame:
    """Each agent's success on each graph beside the core-hours its embedding caches would take
    at English Wikipedia's size (the mean of its runs that recorded one; agents without: left out)."""
    costs = pd.DataFrame(
        [{tables.LABEL: r.label, tables.GRAPH: r.graph, COST: r.metrics[COST]} for r in runs if COST in r.metrics],
        columns=[tables.LABEL, tables.GRAPH, COST],
    )
    costs = costs.groupby([tables.LABEL, tables.GRAPH], as_index=False)[COST].mean()
    columns = [tables.LABEL, tables.GRAPH, tables.N_GAMES, "success_rate", "success_rate_sd"]
    return success[columns].merge(costs, on=[tables.LABEL, tables.GRAPH])


def _short(value, n: int = 12) -> str:
    return str(value)[:n] if value not in (None, "") else "–"


def trace_table(runs: Sequence[ReportRun]) -> pd.DataFrame:
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
                "graph_uri": p.get(record.GRAPH_URI) or p.get("graph") or "–",
                "graph sha1": _short(p.get(record.GRAPH_MANIFEST_SHA1)),
                "games_uri": p.get(record.GAMES_URI) or "–",
                "games sha1": _short(p.get(record.GAMES_MANIFEST_SHA1)),
                "games seed": p.get(record.GAMES_SEED) or "–",
                "games count": p.get(record.GAMES_COUNT) or "–",
                "model": p.get("model") or "–",
                "model digest": _short(p.get(record.MODEL_DIGEST)),
                "engine": p.get(record.LLM_ENGINE) or "–",
                "chat format": p.get(record.CHAT_FORMAT) or "–",
                "protocol": p.get("protocol") or "–",
                "prompt tokens": int(m[record.PROMPT_TOKENS_TOTAL]) if record.PROMPT_TOKENS_TOTAL in m else "–",
                "completion tokens": int(m[record.COMPLETION_TOKENS_TOTAL])
                if record.COMPLETION_TOKENS_TOTAL in m
                else "–",
                "mean latency (s)": tables.rounded(m[record.LLM_LATENCY_MEAN_S], 2)
                if record.LLM_LATENCY_MEAN_S in m
                else "–",
            }
        )
    return pd.DataFrame(rows)


def comparability_notes(runs: Sequence[ReportRun]) -> list[str]:
    """Warnings for runs shown side by side that did not play the same graph build or games set."""
    notes = []
    by_graph: dict[str, list[ReportRun]] = {}
    for r in runs:
        by_graph.setdefault(r.graph, []).append(r)
    for graph, group in sorted(by_graph.items()):
        for key, what in (
            (record.GRAPH_MANIFEST_SHA1, "builds of the graph"),
            (record.GAMES_MANIFEST_SHA1, "games sets"),
        ):
            found = {r.params[key]: r.run_name for r in group if r.params.get(key)}
            if len(found) > 1:
                named = "; ".join(f"{name} ({_short(d)})" for d, name in sorted(found.items()))
                notes.append(f"runs compared on graph {graph} played different {what}: {named}")
    pooled: dict[tuple[str, str], list[str]] = {}
    for r in runs:
        pooled.setdefault((r.label, r.graph), []).append(r.run_name)
    for (label, graph), names in sorted(pooled.items()):
        if len(names) > 1:
            notes.append(
                f"{label} on graph {graph} pools {len(names)} runs ({', '.join(names)}): a game played in more than "
                "one of them counts once per run, as independent games, in its success rate, steps and fits"
            )
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
        index=tables.GROUP, columns="outcome", values=tables.N_GAMES, fill_value=0, aggfunc="sum"
    )
    table.insert(0, tables.N_GAMES, table.sum(axis=1))
    table = table.reset_index().rename(columns={tables.LABEL: "agent"})
    table.columns.name = None
    return table


def _loops(plays: DataFrame, runs: Sequence[ReportRun]) -> pd.DataFrame | None:
    ids = loops.revisit_run_ids(runs)
    return loops.loop_table(loops.loop_counts(plays.filter(F.col(tables.RUN_ID).isin(ids)))) if ids else None
