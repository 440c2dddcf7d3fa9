"""People and agents on the same pairs: every agent that played a games set made of the pairs people
played (``jobs/sample_games.py --human-plays``) set against those people, pair by pair.

The people are the play run whose pairs the games set was made from (its manifest names it); only
their games on the pairs an agent played count. Per player: success (people: over their games, and
the mean of each pair's rate), steps above optimal on the games won, the back button, the share of
moves to the offered page of highest PageRank (the hub: West & Leskovec found people first move out
to a well-linked page, then home in) and of first moves so, and distance-to-target curves.

Paired, per agent and by optimal length: the mean over pairs of the agent's success less the
people's success rate on that pair, with a bootstrap 95 % interval (pairs resampled), and the
Cochran–Mantel–Haenszel test stratified by pair (each pair a 2×2 table of the agent's and the
people's wins and losses: several people per pair enter as they are), with the Mantel–Haenszel
common odds ratio of the agent winning against a person; p-values Holm-adjusted over the agents.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from wikigame_spark import manifests, storage
from wikigame_spark.evaluation import baselines, paired, progress, routes
from wikigame_spark.evaluation.figures import _png
from wikigame_spark.evaluation.tables import GAMES_SET, GRAPH, LABEL
from wikigame_spark.graph.played_pairs import PEOPLE_PAIRS
from wikigame_spark.outcomes import SUCCESS
from wikigame_spark.play import record

PEOPLE = "people"
PAIR = ["source", "target"]
ALL = "all"
MIN_GOING = 30  # the distance curves stop where fewer games are left to average


@dataclass
class PeopleSet:
    """A games set made of people's pairs, as the report found it."""

    games_set: str  # its manifest's SHA-1 (the agents' plays' games_set)
    games_uri: str
    people_run: str  # the people's play run id


@dataclass
class Comparison:
    """The section's tables (each may be empty)."""

    summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    paired: pd.DataFrame = field(default_factory=pd.DataFrame)
    by_length: pd.DataFrame = field(default_factory=pd.DataFrame)  # success per optimal length, per player
    progress: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return self.summary.empty

    def tables(self) -> dict[str, pd.DataFrame]:
        return {"people_summary": self.summary, "people_paired": self.paired, "people_by_length": self.by_length}


def people_sets(spark, runs: Sequence) -> list[PeopleSet]:
    """The games sets of people's pairs among the runs' games (their manifests say whose pairs)."""
    found: dict[str, PeopleSet] = {}
    for r in runs:
        uri, sha = r.params.get(record.GAMES_URI), r.params.get(record.GAMES_MANIFEST_SHA1)
        if not uri or not sha or sha in found:
            continue
        try:
            manifest = manifests.read_manifest(storage.folder(uri, spark))
        except (FileNotFoundError, ValueError):
            continue
        people = manifest.get(PEOPLE_PAIRS)
        if people and manifests.manifest_sha1(manifest) == sha:
            found[sha] = PeopleSet(sha, uri, people.get("mlflow_run_id") or "")
    return list(found.values())


def _per_pair(plays: pd.DataFrame) -> pd.DataFrame:
    """Per pair: games, games won, the optimal length."""
    won = (plays["outcome"] == SUCCESS).astype("int64")
    return (
        plays.assign(won=won)
        .groupby(PAIR, sort=True)
        .agg(games=("won", "size"), won=("won", "sum"), optimal_steps=("optimal_steps", "first"))
        .reset_index()
    )


def _player(name: str, graph: str, plays: pd.DataFrame) -> dict:
    """One player's row of the summary on its plays (:func:`~wikigame_spark.evaluation.baselines.play_moves`' rows)."""
    pairs = _per_pair(plays)
    s = baselines.summary(plays)
    won, first = int((plays["outcome"] == SUCCESS).sum()), int((plays["moves"] > 0).sum())
    return {
        "agent": name,
        GRAPH: graph,
        "pairs": len(pairs),
        "games": len(plays),
        "success": float(won / len(plays)) if len(plays) else math.nan,
        "success_per_pair": float((pairs["won"] / pairs["games"]).mean()) if len(pairs) else math.nan,
        "steps_above_optimal": s["steps_above_oracle"],
        "back_per_game": float(s["back_moves"] / len(plays)) if len(plays) else math.nan,
        "games_with_back": float(s["plays_with_back"] / len(plays)) if len(plays) else math.nan,
        "hub_share": s["hub_share"],
        "first_move_hub_share": float(plays["hub_first"].sum() / first) if first else math.nan,
        "optimal_share": s["optimal_share"],
    }


def _paired_row(agent: pd.DataFrame, people: pd.DataFrame, rounds: int, seed: int) -> dict:
    """The agent against the people on the pairs both played (per-pair tables ``_per_pair``)."""
    j = agent.merge(people, on=PAIR, suffixes=("_agent", "_people"))
    rate_a = (j["won_agent"] / j["games_agent"]).to_numpy()
    rate_p = (j["won_people"] / j["games_people"]).to_numpy()
    low, high = paired.bootstrap_difference(rate_a, rate_p, rounds, seed)
    odds, p = paired.cochran_mantel_haenszel(j["won_agent"], j["games_agent"], j["won_people"], j["games_people"])
    return {
        "pairs": len(j),
        "people_games": int(j["games_people"].sum()),
        "agent_success": float(rate_a.mean()) if len(j) else math.nan,
        "people_success": float(rate_p.mean()) if len(j) else math.nan,
        "difference": float((rate_a - rate_p).mean()) if len(j) else math.nan,
        "difference_low": low,
        "difference_high": high,
        "agent_better_pairs": int(np.sum(rate_a > rate_p)),
        "people_better_pairs": int(np.sum(rate_a < rate_p)),
        "cmh_odds_ratio": odds,
        "cmh_p": p,
    }


def compare(
    spark, moves: pd.DataFrame, runs: Sequence, rounds: int = paired.BOOTSTRAP, seed: int = paired.SEED
) -> Comparison:
    """The section's tables for every games set of people's pairs the runs played (``moves``: the
    report's plays with their move counts)."""
    summary, rows, lengths, curves, notes = [], [], [], [], []
    sets = people_sets(spark, runs)
    for found in sets:
        agents = moves[moves[GAMES_SET] == found.games_set]
        people = moves[moves["run_id"] == found.people_run]
        if people.empty:
            notes.append(
                f"people and agents on the same pairs: the people's run {found.people_run or '(not recorded)'} "
                f"whose pairs the games {found.games_uri} are is not among the reported runs"
            )
            continue
        if agents.empty:
            continue
        graph = str(agents[GRAPH].iloc[0])
        if len(sets) > 1:  # the games sets apart, in the tables and the curves
            graph = f"{graph} (games {found.games_set[:8]})"
        agents, people = agents.assign(**{GRAPH: graph}), people.assign(**{GRAPH: graph})
        on_pairs = people.merge(agents[PAIR].drop_duplicates(), on=PAIR)
        people_pairs = _per_pair(on_pairs)
        summary.append(_player(PEOPLE, graph, on_pairs))
        lengths.append(_by_length(PEOPLE, graph, people_pairs))
        curves.append(on_pairs.assign(**{LABEL: PEOPLE}))
        for label, plays in agents.groupby(LABEL, sort=True):
            summary.append(_player(label, graph, plays))
            mine = _per_pair(plays)
            lengths.append(_by_length(label, graph, mine))
            for length, group in [(ALL, mine), *mine.groupby("optimal_steps", sort=True)]:
                row = _paired_row(group, people_pairs, rounds, seed)
                rows.append({"agent": label, GRAPH: graph, "optimal_steps": length, **row})
        curves.append(agents)
    table = pd.DataFrame(rows)
    if not table.empty:
        overall = table["optimal_steps"] == ALL
        table["cmh_p_holm"] = math.nan
        table.loc[overall, "cmh_p_holm"] = paired.holm(table.loc[overall, "cmh_p"].tolist())
    curve_plays = pd.concat(curves, ignore_index=True) if curves else pd.DataFrame()
    return Comparison(
        summary=pd.DataFrame(summary),
        paired=table,
        by_length=pd.concat(lengths, ignore_index=True) if lengths else pd.DataFrame(),
        progress=progress.progress_table(curve_plays) if not curve_plays.empty else pd.DataFrame(),
        notes=notes,
    )


def _by_length(name: str, graph: str, pairs: pd.DataFrame) -> pd.DataFrame:
    """A player's mean per-pair success by optimal length, with its standard error over pairs."""
    rate = pairs.assign(rate=pairs["won"] / pairs["games"])
    out = rate.groupby("optimal_steps")["rate"].agg(["size", "mean", "std"]).reset_index()
    out["se"] = out["std"] / np.sqrt(out["size"])
    return out.rename(columns={"size": "pairs", "mean": "success"}).drop(columns="std").assign(agent=name, graph=graph)


def length_figure(by_length: pd.DataFrame) -> bytes:
    """Success against the optimal length: people and each agent on the same pairs, ± one standard error."""
    fig = Figure(figsize=(8, 4.8))
    ax = fig.add_subplot(1, 1, 1)
    names = [PEOPLE, *sorted(n for n in by_length["agent"].unique() if n != PEOPLE)]
    for i, name in enumerate(names):
        rows = by_length[by_length["agent"] == name]
        style = {"color": "black", "linewidth": 2.5} if name == PEOPLE else {"color": f"C{i % 10}"}
        ax.errorbar(rows["optimal_steps"], rows["success"], yerr=rows["se"].fillna(0), marker="o", markersize=4,
                    capsize=3, label=name, **style)  # fmt: skip
    ax.set_xlabel("Optimal steps (shortest path length)")
    ax.set_ylabel("Success (mean over pairs)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("People and agents on the same pairs, by optimal length")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left")
    fig.tight_layout()
    return _png(fig)


def metrics(c: Comparison, key) -> dict[str, float]:
    """The paired differences for the report's MLflow run."""
    out = {}
    if c.paired.empty:
        return out
    for _, r in c.paired[c.paired["optimal_steps"] == ALL].iterrows():
        k = key(r["agent"], r[GRAPH])
        out[f"people.difference.{k}"] = r["difference"]
        out[f"people.cmh_p.{k}"] = r["cmh_p"]
    return out


def render(doc, c: Comparison) -> None:
    """The report's section on people and agents on the same pairs (``doc``: the report's document)."""
    doc.heading("People and agents on the same pairs")
    doc.para(
        "The games of a games set made of the pairs people played (sample_games --human-plays), played by "
        "agents and set against the people who played the same pairs: only their games on the pairs an agent "
        "played count. success = games won / games; success_per_pair = the mean over pairs of each pair's "
        "success rate (people: those who played it); steps_above_optimal on the games won (back moves count "
        "as steps); back_per_game = moves by the back button per game, games_with_back the share of games "
        "with one; hub_share = moves to the offered page of highest PageRank (the hub baseline's choice), "
        "first_move_hub_share the same of first moves (people first move out to a hub, West & Leskovec); "
        "optimal_share = moves to an offered page nearest the target."
    )
    doc.table(c.summary.round(3))
    doc.para(
        "Each agent against the people, pair by pair (optimal_steps all, then by the pair's optimal length): "
        "difference = the mean over pairs of the agent's success less the people's success rate on the "
        "pair, with a bootstrap 95 % interval (pairs resampled); agent_better_pairs / people_better_pairs "
        "count the pairs where one did better; the Cochran–Mantel–Haenszel test stratified by pair (every "
        "person of a pair a game of its 2×2 table) with the Mantel–Haenszel common odds ratio of the agent "
        "winning against a person (above 1: the agent wins more often), p-values Holm-adjusted over the "
        "agents (cmh_p_holm, on the all rows)."
    )
    p_values = [k for k in c.paired.columns if k.startswith("cmh_p")]
    doc.table(c.paired.round({k: 4 for k in c.paired.columns if k not in p_values}))
    doc.figure(
        "people_by_optimal_length",
        length_figure(c.by_length),
        "People and agents on the same pairs: success (mean over pairs) by the pair's optimal length, ± one "
        "standard error over pairs; the people's line in black.",
    )
    if not c.progress.empty:
        going = c.progress[c.progress["n"] + c.progress["unreached"] >= MIN_GOING]
        graphs = sorted(going[GRAPH].unique())
        names = [PEOPLE, *sorted(n for n in going[LABEL].unique() if n != PEOPLE)]
        doc.figure(
            "people_progress",
            routes.progress_figure(going, names, graphs),
            "People and agents on the same pairs: mean shortest-path distance to the target after each step "
            f"(a back move is a step) while at least {MIN_GOING} of a player's games are still going, and how "
            "many are.",
        )
