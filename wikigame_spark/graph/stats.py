"""The paper's graph statistics (Table 1 row, Figure 1B) and the graph's components.

Table 1: nodes, edges, % disconnected (no links in or out), % unreachable (links out, none in),
% dead ends (links in, none out), mean edges per node and per connected node (one that has any
link), mean title length in characters. Components: weakly and strongly connected components,
their number and the size and share of the largest (LLM-WikiRace plays inside the largest SCC), and
the largest in- and out-degrees — found by the distance method that draws the curve
(:mod:`wikigame_spark.graph.distances`: scipy on the local method's arrays, or GraphFrames'
``connectedComponents`` and ``stronglyConnectedComponents``), which needs the SCCs anyway.
Figure 1B: for seeded random ordered pairs of distinct nodes, the fraction whose target
is reachable from the source within k steps, k = 0…max.
"""

from __future__ import annotations

import io as _io
import logging
from typing import Any

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wikigame_spark.graph import frame
from wikigame_spark.graph.distances import PairDistances, pair_distances
from wikigame_spark.graph.reach import UNREACHABLE_REASONS
from wikigame_spark.graph.sampling import SAME_NODE_CODE, resolve_draws
from wikigame_spark.handles import GraphHandle
from wikigame_spark.schemas import DST, ID, SRC, TITLE, require_columns

log = logging.getLogger(__name__)


def table1(nodes: DataFrame, edges: DataFrame) -> dict:
    """Table 1's row for one graph (percentages in %, means as floats)."""
    require_columns(nodes, [ID, TITLE], "table1(nodes)")
    require_columns(edges, [SRC, DST], "table1(edges)")
    deg = frame.degrees(nodes, edges)
    i, o = F.col(frame.IN_DEGREE), F.col(frame.OUT_DEGREE)
    row = deg.agg(
        F.count("*").alias("nodes"),
        F.sum(((i == 0) & (o == 0)).cast("long")).alias("disconnected"),
        F.sum(((i == 0) & (o > 0)).cast("long")).alias("unreachable"),
        F.sum(((i > 0) & (o == 0)).cast("long")).alias("dead_ends"),
        F.sum(o).alias("edges"),
    ).first()
    title = nodes.agg(F.avg(F.length(TITLE)).alias("t")).first()["t"]
    n, e = int(row["nodes"]), int(row["edges"] or 0)
    connected = n - int(row["disconnected"] or 0)

    def pct(k: str) -> float:
        return 100.0 * int(row[k] or 0) / n if n else 0.0

    return {
        "nodes": n,
        "edges": e,
        "disconnected_nodes": int(row["disconnected"] or 0),
        "unreachable_nodes": int(row["unreachable"] or 0),
        "dead_end_nodes": int(row["dead_ends"] or 0),
        "pct_disconnected": pct("disconnected"),
        "pct_unreachable": pct("unreachable"),
        "pct_dead_ends": pct("dead_ends"),
        "mean_edges_per_node": e / n if n else 0.0,
        "mean_edges_per_connected_node": e / connected if connected else 0.0,
        "mean_title_length": float(title or 0.0),
    }


def random_pair_distances(oracle: PairDistances, seed: int, pairs: int) -> np.ndarray:
    """Distances (or negative codes) of the first ``pairs`` seeded draws with source ≠ target."""
    if oracle.num_sources < 2:
        raise ValueError(f"the graph has {oracle.num_sources} node(s); pairs need two")
    found: list[np.ndarray] = []
    start, have = 0, 0
    while have < pairs:
        count = int((pairs - have) * 1.05) + 16
        d = resolve_draws(oracle, seed, start, count).distance
        d = d[d != SAME_NODE_CODE]
        found.append(d[: pairs - have])
        have += found[-1].size
        start += count
    return np.concatenate(found)


def reach_curve(distances: np.ndarray) -> dict:
    """Figure 1B's data: fraction of pairs reachable within k steps for k = 0…max distance."""
    distances = np.asarray(distances)
    n = int(distances.size)
    reached = distances[distances >= 0]
    top = int(reached.max()) if reached.size else 0
    hist = np.bincount(reached, minlength=top + 1) if reached.size else np.zeros(1, dtype=np.int64)
    within = np.cumsum(hist) / n if n else np.zeros(top + 1)
    return {
        "pairs": n,
        "reachable": int(reached.size),
        "fraction_reachable": reached.size / n if n else 0.0,
        "max_steps": top,
        "pairs_at_steps": [int(x) for x in hist],
        "fraction_within_steps": [float(x) for x in within],
        "mean_steps_reachable": float(reached.mean()) if reached.size else None,
    }


def plot_reach(curve: dict, title: str) -> bytes:
    """Figure 1B as PNG bytes: fraction of pairs reachable within k steps."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.ticker import MaxNLocator

    k = np.arange(len(curve["fraction_within_steps"]))
    fig, ax = plt.subplots(figsize=(5, 3.5), dpi=120)
    ax.step(k, curve["fraction_within_steps"], where="post", marker="o", markersize=3)
    ax.axhline(curve["fraction_reachable"], color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("steps k")
    ax.set_ylabel("fraction of pairs reachable within k")
    ax.set_ylim(0, 1.02)
    ax.set_xlim(0, max(1, int(k[-1])))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    ax.set_title(f"{title} ({curve['pairs']} random pairs)", fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = _io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def components(oracle: PairDistances, nodes: int) -> dict:
    """Weakly and strongly connected components and degree maxima of a graph of ``nodes`` nodes, as
    its distance oracle found them."""
    out = {}
    for kind, found in (("wcc", oracle.weak_components()), ("scc", oracle.strong_components())):
        out.update(
            {
                f"{kind}_count": found.count,
                f"largest_{kind}_nodes": found.largest,
                f"largest_{kind}_share": found.largest / nodes if nodes else 0.0,
                f"{kind}_singletons": found.singletons,
            }
        )
    out["max_in_degree"], out["max_out_degree"] = oracle.max_degrees()
    return out


def graph_stats(nodes: DataFrame, edges: DataFrame, cfg: Any, graph_dir: GraphHandle | str | None = None) -> dict:
    """Table 1, components and Figure 1B for a graph; the oracle's method is recorded with the curve.
    ``cfg``: the graph_stats job's settings (:class:`~wikigame_spark.jobs.graph_stats.GraphStatsConfig`).
    ``graph_dir``, the directory the tables were read from, lets the local method map its files."""
    oracle = pair_distances(
        nodes, edges, None, cfg.method, False, cfg.bfs_batch_pairs, graph_dir, cfg.cache_dir or None
    )
    t = table1(nodes, edges)
    stats = {"table1": t, "components": components(oracle, t["nodes"])}
    distances = random_pair_distances(oracle, cfg.seed, cfg.pairs)
    curve = reach_curve(distances)
    decided = int(np.isin(distances, list(UNREACHABLE_REASONS)).sum())
    stats["reachability"] = {**curve, "seed": cfg.seed, "method": oracle.method, "decided_by_reachability": decided}
    return stats


_TABLE1_LABELS = {
    "nodes": "nodes",
    "edges": "edges",
    "pct_disconnected": "% disconnected (no links in or out)",
    "pct_unreachable": "% unreachable (links out, none in)",
    "pct_dead_ends": "% dead ends (links in, none out)",
    "mean_edges_per_node": "mean edges per node",
    "mean_edges_per_connected_node": "mean edges per connected node",
    "mean_title_length": "mean title length (characters)",
}
_COMPONENT_LABELS = {
    "wcc_count": "weakly connected components",
    "largest_wcc_nodes": "largest WCC (nodes)",
    "largest_wcc_share": "largest WCC (share of nodes)",
    "scc_count": "strongly connected components",
    "largest_scc_nodes": "largest SCC (nodes)",
    "largest_scc_share": "largest SCC (share of nodes)",
    "scc_singletons": "SCCs of one node",
    "max_in_degree": "largest in-degree",
    "max_out_degree": "largest out-degree",
}


def render(report: dict, title: str, png: bytes, png_name: str) -> dict[str, bytes]:
    """``stats.md`` (the figure by its file name ``png_name``) and ``stats.html`` (inlined) of a report."""
    import pandas as pd

    from wikigame_spark.document import Document

    def rows(values: dict, labels: dict) -> pd.DataFrame:
        shown = [str(v) if isinstance(v, int) else f"{v:.4g}" for v in (values[k] for k in labels)]
        return pd.DataFrame({"statistic": list(labels.values()), "value": shown})

    r = report["reachability"]
    doc = Document()
    doc.heading(title, 1)
    doc.heading("Table 1")
    doc.table(rows(report["table1"], _TABLE1_LABELS))
    doc.heading(f"Components (method {r['method']})")
    doc.table(rows(report["components"], _COMPONENT_LABELS))
    doc.heading("Reachability (Figure 1B)")
    doc.para(
        f"{r['reachable']} of {r['pairs']} random ordered pairs (seed {r['seed']}, method {r['method']}) are "
        f"reachable; mean shortest path {r['mean_steps_reachable']}; {r['decided_by_reachability']} pairs "
        "were decided unreachable from degrees and strongly connected components, without a search."
    )
    steps = pd.DataFrame(
        {
            "k": range(len(r["pairs_at_steps"])),
            "pairs at k": r["pairs_at_steps"],
            "reachable within k": r["fraction_within_steps"],
        }
    )
    doc.table(steps)
    doc.figure("reachability", png, "reachable within k steps")
    md = doc.markdown().replace("figures/reachability.png", png_name)
    return {"stats.md": md.encode("utf-8"), "stats.html": doc.html(title).encode("utf-8")}
