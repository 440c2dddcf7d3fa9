"""Where each move took the player: tables from the plays' distance profiles (pandas).

A play's profile (:mod:`wikigame_spark.graph.profiles`) is the exact distance to the target of each
page of its route. Since a link moves at most one step closer (``d(u) ≤ 1 + d(v)`` for a link
``u → v``), a move is *closer* exactly when it is optimal (distance down by one); *same* and
*farther* moves cost one and two steps of the remaining optimum; a move to a page with no path to
the target is farther. A play *leaves the shortest paths* at its first move that is not closer.

*Regret* is the steps taken from that move on, minus the optimal length of the remaining path at
it, plus the distance still left at the end: ``steps + d(last) − optimal_steps``. For a success it
is the steps above optimal; for a failure it adds how far from the target it stopped (undefined,
left out and counted, when the last page has no path to the target).

Input: one row per play with ``label``, ``graph``, ``game_id``, ``outcome``, ``steps``,
``optimal_steps`` and ``distances`` (the profile, route order); :func:`play_table` adds the
per-play values every table here reduces.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from wikigame_spark.graph.profiles import UNREACHED
from wikigame_spark.outcomes import SUCCESS

LABEL, GRAPH = "label", "graph"
GROUP = [LABEL, GRAPH]
CLOSER, SAME, FARTHER = "closer", "same", "farther"


def _finite(profile) -> np.ndarray:
    d = np.asarray(profile, dtype=np.float64)
    d[d == UNREACHED] = math.inf
    return d


def first_off_path(profile) -> int | None:
    """The step (1-based move number) of the play's first move that is not optimal; None when every
    move was (a play that never left the shortest paths)."""
    d = _finite(profile)
    off = np.flatnonzero(~(d[1:] == d[:-1] - 1))
    return int(off[0]) + 1 if off.size else None


def move_counts(profile) -> tuple[int, int, int]:
    """(closer, same, farther) moves of one profile; unreachable pages count as infinitely far."""
    d = _finite(profile)
    before, after = d[:-1], d[1:]
    closer = int(np.sum(after < before))
    same = int(np.sum(after == before))
    return closer, same, int(before.size) - closer - same


def play_table(profiled: pd.DataFrame) -> pd.DataFrame:
    """One row per play with its moves by kind, first off-path step, closest and last distance,
    and regret (NaN when the last page has no path to the target)."""
    rows = []
    for r in profiled.itertuples(index=False):
        d = np.asarray(r.distances, dtype=np.int64)
        closer, same, farther = move_counts(d)
        reached = d[d != UNREACHED]
        last = int(d[-1]) if d.size else UNREACHED
        rows.append(
            {
                "moves": closer + same + farther,
                CLOSER: closer,
                SAME: same,
                FARTHER: farther,
                "first_off_path": first_off_path(d),
                "closest": int(reached.min()) if reached.size else UNREACHED,
                "last": last,
                "regret": float(r.steps + last - r.optimal_steps) if last != UNREACHED else math.nan,
            }
        )
    per_play = pd.DataFrame(rows, index=profiled.index)
    return pd.concat([profiled.drop(columns=["distances"]), per_play], axis=1)


def progress_table(profiled: pd.DataFrame) -> pd.DataFrame:
    """Mean distance to the target by step (0 = the source) per agent and graph, over the plays
    still on the board at that step whose page has a path to the target (``n``); ``unreached``
    counts those whose page has none."""
    rows = []
    for (label, graph), group in profiled.groupby(GROUP, sort=False):
        profiles = [np.asarray(p, dtype=np.int64) for p in group["distances"]]
        longest = max((p.size for p in profiles), default=0)
        for step in range(longest):
            at = np.array([p[step] for p in profiles if p.size > step])
            ok = at[at != UNREACHED]
            rows.append(
                {
                    LABEL: label,
                    GRAPH: graph,
                    "step": step,
                    "n": int(ok.size),
                    "unreached": int(at.size - ok.size),
                    "mean_distance": float(ok.mean()) if ok.size else math.nan,
                    "sd_distance": float(ok.std(ddof=1)) if ok.size > 1 else math.nan,
                }
            )
    return pd.DataFrame(rows, columns=[LABEL, GRAPH, "step", "n", "unreached", "mean_distance", "sd_distance"])


def move_table(plays: pd.DataFrame) -> pd.DataFrame:
    """Per agent and graph: moves by kind and their shares (closer = optimal), plays that never left
    the shortest paths, and the step at which the others left them (mean, median)."""
    rows = []
    for (label, graph), g in plays.groupby(GROUP, sort=False):
        moves = int(g["moves"].sum())
        off = g["first_off_path"].dropna()

        def share(kind: str, g=g, moves=moves) -> float:
            return float(g[kind].sum()) / moves if moves else math.nan

        rows.append(
            {
                LABEL: label,
                GRAPH: graph,
                "plays": len(g),
                "moves": moves,
                CLOSER: int(g[CLOSER].sum()),
                SAME: int(g[SAME].sum()),
                FARTHER: int(g[FARTHER].sum()),
                "closer_share": share(CLOSER),
                "same_share": share(SAME),
                "farther_share": share(FARTHER),
                "optimal_move_share": share(CLOSER),
                "on_path_plays": int(g["first_off_path"].isna().sum()),
                "left_path_mean_step": float(off.mean()) if len(off) else math.nan,
                "left_path_median_step": float(off.median()) if len(off) else math.nan,
            }
        )
    return pd.DataFrame(rows)


def left_path_table(plays: pd.DataFrame) -> pd.DataFrame:
    """How many plays first left the shortest paths at each step, per agent and graph."""
    off = plays.dropna(subset=["first_off_path"])
    if off.empty:
        return pd.DataFrame(columns=[LABEL, GRAPH, "step", "plays"])
    out = off.groupby([*GROUP, "first_off_path"], sort=False).size().reset_index(name="plays")
    out = out.rename(columns={"first_off_path": "step"})
    out["step"] = out["step"].astype(int)
    return out.sort_values([*GROUP, "step"]).reset_index(drop=True)


def failure_table(plays: pd.DataFrame) -> pd.DataFrame:
    """Failures per agent, graph and reason: how close they got (closest distance reached) and
    where they ended (distance at the last step); ``*_unreached`` counts ends with no path left."""
    failed = plays[plays["outcome"] != SUCCESS]
    rows = []
    for (label, graph, outcome), g in failed.groupby([*GROUP, "outcome"], sort=True):
        closest, last = g["closest"], g["last"]
        ok_closest, ok_last = closest[closest != UNREACHED], last[last != UNREACHED]
        rows.append(
            {
                LABEL: label,
                GRAPH: graph,
                "outcome": outcome,
                "plays": len(g),
                "closest_mean": float(ok_closest.mean()) if len(ok_closest) else math.nan,
                "closest_median": float(ok_closest.median()) if len(ok_closest) else math.nan,
                "one_link_away": int((closest == 1).sum()),
                "last_mean": float(ok_last.mean()) if len(ok_last) else math.nan,
                "last_median": float(ok_last.median()) if len(ok_last) else math.nan,
                "last_unreached": int((last == UNREACHED).sum()),
            }
        )
    return pd.DataFrame(rows)


def regret_table(plays: pd.DataFrame) -> pd.DataFrame:
    """Mean regret per agent and graph: over all plays that end with a path left, successes and
    failures apart; ``undefined`` counts the plays whose last page has no path to the target."""
    rows = []
    for (label, graph), g in plays.groupby(GROUP, sort=False):
        won = g["outcome"] == SUCCESS
        mean = lambda s: float(s.mean()) if s.notna().any() else math.nan  # noqa: E731
        rows.append(
            {
                LABEL: label,
                GRAPH: graph,
                "plays": len(g),
                "regret_mean": mean(g["regret"]),
                "regret_success_mean": mean(g.loc[won, "regret"]),
                "regret_failure_mean": mean(g.loc[~won, "regret"]),
                "undefined": int(g["regret"].isna().sum()),
            }
        )
    return pd.DataFrame(rows)


def stratum_table(plays: pd.DataFrame, column: str) -> pd.DataFrame:
    """Success by stratum (``column``: e.g. the target's in-degree quantile) per agent and graph."""
    if column not in plays.columns:
        return pd.DataFrame()
    rows = []
    for (label, graph, stratum), g in plays.groupby([*GROUP, column], sort=True):
        n = len(g)
        p = float((g["outcome"] == SUCCESS).mean())
        rows.append(
            {
                LABEL: label,
                GRAPH: graph,
                column: stratum,
                "games": n,
                "success_rate": p,
                "success_rate_sd": math.sqrt(p * (1 - p) / n),
            }
        )
    return pd.DataFrame(rows)
