"""What the MLflow UI shows of a play run without a download: its plays as ``plays.parquet``, the
success by optimal length as a table and a figure, and the first games' routes as titles."""

from __future__ import annotations

import os
import tempfile

import mlflow
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wikigame_spark.outcomes import SUCCESS
from wikigame_spark.schemas import ID, TITLE

PLAYS_ARTIFACT = "plays.parquet"
ROUTES_ARTIFACT = "sample_routes.md"
SUMMARY_ARTIFACT = "summary_by_optimal_steps.json"
FIGURE_ARTIFACT = "success_by_optimal_steps.png"


def by_optimal_steps(plays: pd.DataFrame) -> pd.DataFrame:
    """Per optimal length: games, successes, success rate, mean steps above optimal when solved."""
    won = plays["outcome"] == SUCCESS
    extra = (plays["steps"] - plays["optimal_steps"]).where(won)
    table = (
        plays.assign(won=won, extra=extra)
        .groupby("optimal_steps")
        .agg(games=("won", "size"), successes=("won", "sum"), steps_above_optimal_mean=("extra", "mean"))
        .reset_index()
    )
    table["success_rate"] = table["successes"] / table["games"]
    return table[["optimal_steps", "games", "successes", "success_rate", "steps_above_optimal_mean"]]


def success_figure(table: pd.DataFrame, title: str) -> bytes:
    """Success rate by optimal length, each bar labelled with its number of games (a PNG)."""
    import io as bytes_io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    xs = range(len(table))  # one bar per length present, labelled with it (lengths may skip)
    ax.bar(xs, table["success_rate"], color="tab:green")
    ax.set_xticks(xs, table["optimal_steps"].astype(str))
    for x, (rate, n) in enumerate(zip(table["success_rate"], table["games"])):
        ax.annotate(f"n={n}", (x, rate), ha="center", va="bottom", fontsize=8)
    ax.set(xlabel="optimal steps", ylabel="success rate", ylim=(0, 1.1), title=title)
    fig.tight_layout()
    out = bytes_io.BytesIO()
    fig.savefig(out, format="png")
    plt.close(fig)
    return out.getvalue()


def log_plays(plays: pd.DataFrame, artifacts: dict[str, bytes] | None = None) -> None:
    """The plays (``plays.parquet``) and ``artifacts`` as artifacts of the active MLflow run, with
    what the MLflow UI shows without a download: the success by optimal length as a table and a
    figure."""
    table = by_optimal_steps(plays)
    mlflow.log_table(table, SUMMARY_ARTIFACT)
    label = ", ".join(sorted({str(a) for a in plays["agent"].dropna().unique()})) or "plays"
    artifacts = {FIGURE_ARTIFACT: success_figure(table, f"{label}: {len(plays)} games"), **(artifacts or {})}
    with tempfile.TemporaryDirectory() as tmp:
        plays.to_parquet(os.path.join(tmp, PLAYS_ARTIFACT), index=False)
        for name, data in (artifacts or {}).items():
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
        mlflow.log_artifacts(tmp)


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
