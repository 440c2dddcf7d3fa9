"""Human games → plays of agent ``human`` on a graph, with an MLflow run like a play run's.

Two logs: a TSV of games without routes (``--tsv``), or Wikispeedia's people with their whole
routes (``--wikispeedia DIR``, on the graph ``jobs/build_wikispeedia.py`` built from DIR).

The TSV has a header and one game per line: start title, end title, success, steps, optimal
steps, time (the paper's human data: Num, Success?, Steps, Time (m:s), StartPage, EndPage,
OptimalSteps). Titles are matched to the graph's nodes, then its redirects.

Wikispeedia's finished and unfinished games become plays whose route is every page visited, a
back click a move back to the page returned to (the back button of the engine's rules, which the
run records with revisits allowed, as people played); a game ended by ``restart`` is ``gave_up``,
by ``timeout`` ``time_limit``. Each play's optimal length is computed on the graph.

Either way, rows that cannot be used or matched are counted, listed in the manifest and logged as
rejected.tsv, never made valid.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from pyspark.sql.types import LongType, StringType, StructField, StructType

from wikigame_spark import parquet, storage
from wikigame_spark.config import EXPERIMENT_HELP, OVERWRITE_HELP, ConfigError, setting
from wikigame_spark.graph.frame import read_graph
from wikigame_spark.ingest import humans, wikispeedia
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
    tsv: str = setting("", "TSV of human games (local path or any Hadoop URI)")
    wikispeedia: str = setting("", "Wikispeedia folder whose people's games to import (instead of --tsv)")
    experiment: str = setting("", EXPERIMENT_HELP)
    run_name: str = setting("human", "run name")
    output: str = setting("", "plays folder (default GRAPH/plays/RUN_NAME)")
    overwrite: bool = setting(False, OVERWRITE_HELP)

    def validate(self) -> None:
        if bool(self.tsv) == bool(self.wikispeedia):
            raise ConfigError("give the games to import: --tsv FILE or --wikispeedia DIR (one of them)")
        if not self.run_name:
            raise ConfigError("--run-name: give a run name")
        check_run_name(self.run_name)


def import_games(ctx: Context) -> Result:
    return import_wikispeedia(ctx) if ctx.settings.wikispeedia else import_tsv(ctx)


def import_tsv(ctx: Context) -> Result:
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
        "graph": graph.identity(),
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


def import_wikispeedia(ctx: Context) -> Result:
    s: HumanImportConfig = ctx.settings
    spark, graph = ctx.spark, ctx.inputs["graph"]
    files = wikispeedia.Files.find(storage.folder(ctx.inputs["wikispeedia"], spark), games=True)
    people = wikispeedia.import_people(spark, files, read_graph(spark, graph))
    artifacts = {"rejected.tsv": people.left_out.to_csv(sep="\t", index=False).encode("utf-8")}
    summary_metrics = record.record_plays(spark, people.plays, ctx.stage(), artifacts)
    params = {
        "agent": humans.HUMAN,
        "model": "",
        "use_titles": "",
        "max_steps": "",  # time-limited, not step-limited
        "allow_revisits": True,  # people could return to any page
        "allow_back": True,
        humans.HUMAN_ROUTES: "whole",
        "games": len(people.plays),
        "source_sha1": ",".join(f["sha1"] for f in people.inputs),
        **record.graph_params(graph.path, graph.manifest),
    }
    manifest = {
        "kind": record.RUN_KIND,
        "run_name": s.run_name,
        "graph": graph.identity(),
        "metrics": summary_metrics,
        "inputs": people.inputs,
        "counts": people.counts,
        "left_out": people.left_out.to_dict(orient="records"),
    }
    c = people.counts
    summary = (
        f"wrote {ctx.output()} and MLflow run {ctx.run.info.run_id} ({ctx.experiment}/{s.run_name}): "
        f"{c['imported']} of {c['rows']} games imported ({c['back_clicks']} back clicks), left out "
        f"{', '.join(f'{k} {v}' for k, v in c['left_out_by'].items() if v) or 'none'}; "
        f"success {summary_metrics['success_rate']:.3f} ± {summary_metrics['success_rate_se']:.3f}"
    )
    metrics = {"rows": c["rows"], "imported": c["imported"], "back_clicks": c["back_clicks"],
               **{f"left_out.{k}": v for k, v in c["left_out_by"].items()}, **summary_metrics}  # fmt: skip
    return Result(summary, manifests={"": manifest}, metrics=metrics, params=params)


def human_tags(ctx: Context) -> None:
    """The run's tags say people played, as a browser session's do."""
    ctx.tags.update(agent=humans.HUMAN)


JOB = Job(
    name="import_human_games",
    doc=__doc__,
    settings=HumanImportConfig,
    body=import_games,
    inputs=(
        Input("graph", InputKind.GRAPH),
        Input("tsv", InputKind.FILE, optional=True),
        Input("wikispeedia", InputKind.FOLDER, optional=True),
    ),
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
