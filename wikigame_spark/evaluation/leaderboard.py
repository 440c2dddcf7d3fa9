"""A leaderboard across graphs: success per graph with intervals, and one pooled Bradley–Terry rating.

Every game two agents both played is a head-to-head (as Wiki Arena ranks models): one wins when it
succeeds and the other fails, or both succeed and it took fewer steps; anything else is a tie and
left out. Bradley–Terry strengths are fitted to the pooled wins of every games set of every graph
by Hunter's MM iteration, with half a win each way added to each pair that met (so an agent that
never wins keeps a finite rating). Ratings are on the Elo scale (400·log10 strength, mean 0); the
95 % intervals resample the games of each games set with replacement and refit.

Input: one row per play with ``label``, ``graph``, ``games_set``, ``game_id``, ``outcome``, ``steps``.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd

from wikigame_spark.evaluation.tables import GAMES_SET, GRAPH, LABEL, wilson_interval
from wikigame_spark.outcomes import SUCCESS

BOOTSTRAP = 1000
SEED = 20260102
PRIOR = 0.5  # virtual wins each way per pair that met
ELO = 400.0 / math.log(10.0)


def head_to_head(a: pd.DataFrame, b: pd.DataFrame) -> np.ndarray:
    """Per game both played (by ``game_id``): +1 when A wins, −1 when B wins, 0 for a tie."""
    j = a[["game_id", "outcome", "steps"]].merge(
        b[["game_id", "outcome", "steps"]], on="game_id", suffixes=("_a", "_b")
    )
    wa, wb = (j["outcome_a"] == SUCCESS).to_numpy(), (j["outcome_b"] == SUCCESS).to_numpy()
    sa, sb = j["steps_a"].to_numpy(), j["steps_b"].to_numpy()
    a_wins = (wa & ~wb) | (wa & wb & (sa < sb))
    b_wins = (wb & ~wa) | (wa & wb & (sb < sa))
    return a_wins.astype(np.int8) - b_wins.astype(np.int8)


def fit(wins: np.ndarray, met: np.ndarray, iterations: int = 2000, tol: float = 1e-10) -> np.ndarray:
    """Bradley–Terry log-strengths (mean 0) from ``wins[i, j]`` (i beat j) by MM; ``met[i, j]``
    marks pairs that played, which get :data:`PRIOR` wins each way. Agents that met nobody: NaN."""
    k = wins.shape[0]
    w = wins + PRIOR * met
    n = w + w.T
    total = w.sum(axis=1)
    active = n.sum(axis=1) > 0
    pi = np.ones(k)
    for _ in range(iterations):
        denom = (n / (pi[:, None] + pi[None, :])).sum(axis=1)
        new = np.where(active, total / np.where(denom > 0, denom, 1.0), 1.0)
        new /= math.exp(np.log(new[active]).mean()) if active.any() else 1.0
        if np.max(np.abs(new - pi)) < tol:
            pi = new
            break
        pi = new
    out = np.log(pi)
    out[~active] = math.nan
    return out


def _meetings(plays: pd.DataFrame, labels: list[str]) -> list[tuple[int, int, np.ndarray]]:
    index = {label: i for i, label in enumerate(labels)}
    found = []
    for _, g in plays.groupby([GRAPH, GAMES_SET], sort=True):
        by_label = dict(tuple(g.groupby(LABEL, sort=True)))
        for la, lb in itertools.combinations(sorted(by_label), 2):
            found.append((index[la], index[lb], head_to_head(by_label[la], by_label[lb])))
    return found


def _wins(k: int, meetings, weights=None) -> tuple[np.ndarray, np.ndarray]:
    wins, met = np.zeros((k, k)), np.zeros((k, k))
    for m, (i, j, h) in enumerate(meetings):
        c = np.ones(h.size) if weights is None else weights[m]
        wins[i, j] += c[h > 0].sum()
        wins[j, i] += c[h < 0].sum()
        if h.size:
            met[i, j] = met[j, i] = 1
    return wins, met


def ratings(plays: pd.DataFrame, rounds: int = BOOTSTRAP, seed: int = SEED) -> pd.DataFrame:
    """Per agent: head-to-head wins, losses and ties, the Bradley–Terry rating and its bootstrap
    95 % interval, best first."""
    labels = sorted(plays[LABEL].unique())
    k = len(labels)
    meetings = _meetings(plays, labels)
    wins, met = _wins(k, meetings)
    rating = fit(wins, met) * ELO
    # A games set's games are resampled once per round for every pair that played it (the same
    # draw for each pair on the set, so the pairs stay paired).
    rng = np.random.default_rng(seed)
    boot = np.full((rounds, k), math.nan)
    for b in range(rounds):
        weights = [
            np.bincount(rng.integers(0, h.size, h.size), minlength=h.size) if h.size else h for _, _, h in meetings
        ]
        boot[b] = fit(*_wins(k, meetings, weights)) * ELO
    ties = np.zeros(k)
    for i, j, h in meetings:
        ties[i] += np.sum(h == 0)
        ties[j] += np.sum(h == 0)
    with warnings.catch_warnings():  # an agent that met nobody has no rating in any round
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanquantile(boot, 0.025, axis=0), np.nanquantile(boot, 0.975, axis=0)
    table = pd.DataFrame(
        {
            "agent": labels,
            "wins": wins.sum(axis=1).astype(int),
            "losses": wins.sum(axis=0).astype(int),
            "ties": ties.astype(int),
            "rating": rating,
            "rating_low": low,
            "rating_high": high,
        }
    )
    return table.sort_values("rating", ascending=False, na_position="last").reset_index(drop=True)


def success_by_graph(plays: pd.DataFrame) -> pd.DataFrame:
    """Per agent and graph: games, success rate and its 95 % Wilson interval."""
    g = plays.groupby([LABEL, GRAPH], sort=True)["outcome"]
    out = pd.DataFrame({"games": g.size(), "successes": g.apply(lambda s: int((s == SUCCESS).sum()))}).reset_index()
    out["success_rate"] = out["successes"] / out["games"]
    out["wilson_low"], out["wilson_high"] = wilson_interval(out["successes"].to_numpy(), out["games"].to_numpy())
    return out.rename(columns={LABEL: "agent"})


def leaderboard(plays: pd.DataFrame, rounds: int = BOOTSTRAP, seed: int = SEED) -> pd.DataFrame:
    """The rating table with one column per graph: success rate and Wilson interval there."""
    table = ratings(plays, rounds, seed)
    per_graph = success_by_graph(plays)
    for graph, g in per_graph.groupby(GRAPH, sort=True):
        cells = {
            r.agent: f"{r.success_rate:.2f} [{r.wilson_low:.2f}, {r.wilson_high:.2f}] ({r.games})"
            for r in g.itertuples()
        }
        table[f"success {graph}"] = table["agent"].map(cells).fillna("–")
    return table
