"""What a game costs against how often it is won: one frontier of every priced agent of a graph.

Each play carries its price (``price_usd``, :mod:`wikigame_spark.play.prices`): tokens at a model's
list prices, or the compute it took at a price per core-hour. An agent (a report label) on a graph
is priced when every game it played is; its price per game is the mean. The frontier is
wiki_speedrun's: the agents, cheapest first, each one whose success rate is above that of every
cheaper agent (a tie in price goes to the better success rate). LLM agents' token use per game and,
under the tool interface, the invalid-call rate (wikiarena's step error rate: invalid calls over
all calls, valid ones being the moves) stand beside it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from wikigame_spark.evaluation.figures import _png, place_labels

GROUP = ["label", "graph"]
PRICE = "price_per_game_usd"
COLUMNS = [
    *GROUP, "games", "success_rate", "success_rate_sd", PRICE, "on_frontier", "input_tokens_per_game",
    "cached_share", "output_tokens_per_game", "reasoning_tokens_per_game", "invalid_call_rate",
]  # fmt: skip


def frontier_table(groups: pd.DataFrame, success: pd.DataFrame, tool_labels: set[str]) -> pd.DataFrame:
    """Per agent and graph: success, price per game (when every game is priced), whether it is on
    its graph's frontier, tokens per game (agents that made requests) and the invalid-call rate
    (``tool_labels``: the agents that played by tool calls). ``groups``: tables.aggregate's."""
    g = groups.merge(success[[*GROUP, "success_rate", "success_rate_sd"]], on=GROUP)
    n = g["games"].astype(float)
    out = g[[*GROUP, "games", "success_rate", "success_rate_sd"]].copy()
    priced = (g["priced"] == g["games"]) & (g["games"] > 0)
    out[PRICE] = g["price_mean"].astype(float).where(priced)
    asked = g["queries"].fillna(0) > 0
    out["input_tokens_per_game"] = (g["prompt_tokens"] / n).where(asked)
    out["cached_share"] = (g["cached_tokens"] / g["prompt_tokens"]).where(asked & (g["prompt_tokens"] > 0))
    out["output_tokens_per_game"] = (g["completion_tokens"] / n).where(asked)
    out["reasoning_tokens_per_game"] = (g["reasoning_tokens"] / n).where(asked)
    tools = g["label"].isin(tool_labels) & (g["calls"] > 0)
    out["invalid_call_rate"] = (g["invalid_calls"] / g["calls"]).where(tools)
    out["on_frontier"] = False
    for _, rows in out[out[PRICE].notna()].groupby("graph"):
        best = -math.inf
        for i, r in rows.sort_values([PRICE, "success_rate"], ascending=[True, False]).iterrows():
            if r["success_rate"] > best:
                out.loc[i, "on_frontier"], best = True, r["success_rate"]
    return out[COLUMNS].sort_values([*GROUP], ignore_index=True)


def figure(table: pd.DataFrame) -> bytes | None:
    """Success rate against price per game (log scale), a panel per graph, the frontier joined by a
    line and its agents named; None when no agent is priced."""
    rows = table[table[PRICE].notna() & (table[PRICE] > 0)]
    if rows.empty:
        return None
    graphs = sorted(rows["graph"].unique())
    fig = Figure(figsize=(6.5 * len(graphs), 4.8))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(graphs), sharey=True, squeeze=False)[0]
    low, high = rows[PRICE].min() / 10, rows[PRICE].max() * 10
    for ax, graph in zip(axes, graphs):
        g = rows[rows["graph"] == graph].sort_values(PRICE)
        edge = g[g["on_frontier"]]
        ax.step(edge[PRICE], edge["success_rate"], where="post", color="black", lw=1, label="frontier")
        off = g[~g["on_frontier"]]
        ax.errorbar(off[PRICE], off["success_rate"], yerr=off["success_rate_sd"].fillna(0), fmt="o", mfc="white",
                    color="grey", capsize=3, label="other agents")  # fmt: skip
        ax.errorbar(edge[PRICE], edge["success_rate"], yerr=edge["success_rate_sd"].fillna(0), fmt="o",
                    color="C0", capsize=3, label="on the frontier")  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlim(low, high)
        ax.set_ylim(-0.1, 1.1)  # room for the labels of agents that never or always win
        points = zip(g[PRICE], g["success_rate"], g["success_rate_sd"].fillna(0), g["label"])
        place_labels(ax, [(x, y, e, t) for x, y, e, t in points])
        ax.set_title(graph)
        ax.set_xlabel("Price per game, USD (log scale)")
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", fontsize=8)
    axes[0].set_ylabel("Success rate (± one standard deviation)")
    fig.suptitle("Success against price per game")
    return _png(fig)


def render(doc, table: pd.DataFrame) -> None:
    """The report's section on prices and tool calls (``doc``: the report's document)."""
    doc.heading("Price per game and the frontier")
    priced = table[table[PRICE].notna()]
    doc.para(
        "What a game costs (play_games --prices FILE, docs/llm.md, Prices): an LLM's tokens at its list prices "
        "(input not read from the server's prefix cache, cached input, output with reasoning), else the compute "
        "the game took at a price per core-hour (its seconds on the cores that served it, and its share of "
        "the embedding caches). An agent is priced when every game it played is; its price is the mean per "
        "game. On the frontier: no cheaper agent of its graph wins as often. Tokens per game for agents "
        "that made requests (cached_share: of the input, read from the prefix cache); invalid_call_rate: "
        "tool-call agents' invalid calls over all their calls (wikiarena's step error rate)."
    )
    if priced.empty:
        doc.para("No run was priced (play_games --prices FILE): no frontier is drawn.")
    else:
        doc.figure(
            "fig_frontier",
            figure(table),
            "Success rate against price per game (log scale), one panel per graph: the frontier's agents in "
            "blue joined by the black line, the others grey.",
        )
    shown = table.rename(columns={"label": "agent"})
    doc.table(shown.assign(**{PRICE: shown[PRICE].map(_price)}).round(3))


def _price(value: float) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{value:.3g}"


def metrics(table: pd.DataFrame, key) -> dict[str, float]:
    """Price per game, frontier membership and invalid-call rate per agent and graph (MLflow)."""
    out = {}
    for _, r in table.iterrows():
        k = key(r["label"], r["graph"])
        if pd.notna(r[PRICE]):
            out[f"{PRICE}.{k}"] = r[PRICE]
            out[f"on_frontier.{k}"] = float(r["on_frontier"])
        if pd.notna(r["invalid_call_rate"]):
            out[f"invalid_call_rate.{k}"] = r["invalid_call_rate"]
    return out
