"""What a play run logs: graph identity as params, sample routes with titles as an artifact."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wikigame_spark.schemas import ID, TITLE


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
