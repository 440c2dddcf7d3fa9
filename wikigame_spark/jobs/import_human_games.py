"""Human games (a TSV log) → plays of agent ``human`` on a graph, with an MLflow run like a play run's.

The TSV has a header and one game per line: start title, end title, success, steps, optimal
steps, time (the paper's human data: Num, Success?, Steps, Time (m:s), StartPage, EndPage,
OptimalSteps). Titles are matched to the graph's nodes, then its redirects; rows that cannot be
used or matched are counted, listed in the manifest and logged as rejected.tsv.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from pyspark.sql.types import LongType, StringType, StructField, StructType

from wikigame_spark import parquet, storage
from wikigame_spark.config import EXPERIMENT_HELP, OVERWRITE_HELP, ConfigError, setting
from wikigame_spark.ingest import humans
from wikigame_spark.layout import NODES_TABLE, REDIRECTS_TABLE
from wikigame_spark.play import record
from wikigame_spark.play.runs import check_run_name
from wikigame_spark.runner import Context, Input, InputKind, Job, Output, Result
from wikigame_spark.schemas import ID, REDIRECTS, TITLE

NODE_TITLES = StructType([StructField(ID, LongType(), False), StructField(TITLE, StringType(), False)])


@dataclass(frozen=True)
class HumanImportConfig:
    """``jobs/import_human_games.py``: a TSV of human games → plays (agent ``human``) + a run."""

    graph: str = setting("", "graph folder the games were played on (nodes, redirects)", required=True)
    tsv: str = setting("", "TSV of human games (local path or any Hadoop URI)", required=True)
    experiment: str = setting("", EXPERIMENT_HELP)
    run_name: str = setting("human", "run name")
    output: str = setting("", "plays folder (default GRAPH/plays/RUN_NAME)")
    overwrite: bool = setting(False, OVERWRITE_HELP)

    def validate(self) -> None:
        if not self.run_name:
            raise ConfigError("--run-name: give a run name")
        check_run_name(self.run_name)


def import_games(ctx: Context) -> Result:
    s: HumanImportConfig = ctx.settings
    spark, graph = ctx.spark, ctx.inputs["graph"]
    text = storage.folder(s.tsv, spark).read_text()
    case = (graph.manifest.get("site") or {}).get("case", "case-sensitive")
    games, rejected = humans.parse_tsv(text, s.tsv, case)
    games_df = spark.createDataFrame([g.as_row() for g in games], humans.HUMAN_GAMES)
    nodes = parquet.read_table(spark, graph.folder.sub(NODES_TABLE), NODE_TITLES)
    has_redirects = graph.folder.exists(REDIRECTS_TABLE)
    redirects = parquet.read_table(spark, graph.folder.sub(REDIRECTS_TABLE), REDIRECTS) if has_redirects else None
    plays, unmatched = humans.match_games(games_df, nodes, redirects)
    plays_pdf = plays.toPandas().sort_values("game_id", ignore_index=True)
    unmatched_pdf = unmatched.toPandas().sort_values("line", ignore_index=True)
    left_out, counts = humans.left_out(rejected, unmatched_pdf, len(games), len(plays_pdf))
    artifacts = {"rejected.tsv": left_out.to_csv(sep="\t", index=False).encode("utf-8")}
    summary_metrics = record.record_plays(spark, plays_pdf, ctx.stage(), artifacts)
    params = {
        "agent": humans.HUMAN,
        "model": "",
        "use_titles": "",
        "max_steps": "",  # time-limited, not step-limited
        "games": len(plays_pdf),
        "tsv_sha1": hashlib.sha1(text.encode("utf-8")).hexdigest(),
        **record.graph_params(graph.path, graph.manifest),
    }
    manifest = {
        "kind": record.RUN_KIND,
        "run_name": s.run_name,
        "metrics": summary_metrics,
        "counts": counts,
        "left_out": left_out.to_dict(orient="records"),
    }
    by = ", ".join(f"{k} {v}" for k, v in counts["left_out_by"].items())
    summary = (
        f"wrote {ctx.output()} and MLflow run {ctx.run.info.run_id} ({ctx.experiment}/{s.run_name}): "
        f"{counts['imported']} of {counts['rows']} games imported"
        + (f", left out {by}" if by else "")
        + f"; success {summary_metrics['success_rate']:.3f} ± {summary_metrics['success_rate_se']:.3f}"
    )
    metrics = {**summary_metrics, **{f"rows_{k}": v for k, v in counts.items() if k != "left_out_by"}}
    return Result(summary, manifests={"": manifest}, metrics=metrics, params=params)


def human_tags(ctx: Context) -> None:
    """The run's tags say people played, as a browser session's do."""
    ctx.tags.update(agent=humans.HUMAN)


JOB = Job(
    name="import_human_games",
    doc=__doc__,
    settings=HumanImportConfig,
    body=import_games,
    inputs=(Input("graph", InputKind.GRAPH), Input("tsv", InputKind.FILE)),
    outputs=(
        Output(
            lambda s, inputs: {"": s.output or inputs["graph"].dir.plays(s.run_name)},
            what="plays",
            kind=record.RUN_KIND,
        ),
    ),
    run_name=lambda ctx: ctx.settings.run_name,
    before_run=human_tags,
)
