"""Human games (a TSV log) → plays of agent ``human`` on a graph, with an MLflow run like a play run's.

spark-submit jobs/import_human_games.py --graph DIR --tsv FILE [--experiment NAME] [--run-name human]
    [--output DIR/plays/RUN_NAME] [--overwrite]

The TSV has a header and one game per line: start title, end title, success, steps, optimal
steps, time (the paper's human data: Num, Success?, Steps, Time (m:s), StartPage, EndPage,
OptimalSteps). Titles are matched to the graph's nodes, then its redirects; rows that cannot be
used or matched are counted, listed in the manifest and logged as rejected.tsv.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib

from pyspark.sql.types import LongType, StringType, StructField, StructType

from wikigame_spark import cli, io, preflight
from wikigame_spark.config import HumanImportConfig, flatten, job_config
from wikigame_spark.ingest import humans
from wikigame_spark.layout import GraphDir
from wikigame_spark.play import record
from wikigame_spark.schemas import ID, REDIRECTS, TITLE

NODE_TITLES = StructType([StructField(ID, LongType(), False), StructField(TITLE, StringType(), False)])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graph", help="graph directory the games were played on (nodes, redirects)")
    p.add_argument("--tsv", help="TSV of human games (local path or any Hadoop URI)")
    p.add_argument("--experiment", help="MLflow experiment (default wikigame)")
    p.add_argument("--run-name", help="run name (default human)")
    p.add_argument("--output", help="plays directory (default GRAPH/plays/RUN_NAME)")
    p.add_argument("--overwrite", action="store_true", default=None, help="replace an earlier import")
    p.add_argument("--config", help="YAML settings (default conf/import_human_games.yaml)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = job_config(HumanImportConfig, "import_human_games", args)
    started = dt.datetime.now(dt.timezone.utc)
    graph = preflight.absolute(cfg.graph)
    output = preflight.absolute(cfg.output or GraphDir(graph).plays(cfg.run_name))

    def checks(spark=None) -> dict | None:
        preflight.require_file(cfg.tsv, "--tsv", spark=spark)
        preflight.check_output(output, cfg.overwrite, spark=spark)
        return preflight.require_graph(graph, spark=spark)

    graph_manifest = checks()
    preflight.check_tracking()
    spark = cli.session("import_human_games")
    graph_manifest = checks(spark)

    text = io.read_text(spark, cfg.tsv)
    case = (graph_manifest.get("site") or {}).get("case", "case-sensitive")
    games, rejected = humans.parse_tsv(text, cfg.tsv, case)
    games_df = spark.createDataFrame([g.as_row() for g in games], humans.HUMAN_GAMES)
    where = GraphDir(graph)
    nodes = io.read_table(spark, where.nodes, NODE_TITLES)
    has_redirects = io.exists(spark, where.redirects)
    redirects = io.read_table(spark, where.redirects, REDIRECTS) if has_redirects else None
    plays, unmatched = humans.match_games(games_df, nodes, redirects)
    plays_pdf = plays.toPandas().sort_values("game_id", ignore_index=True)
    unmatched_pdf = unmatched.toPandas().sort_values("line", ignore_index=True)
    left_out, counts = humans.left_out(rejected, unmatched_pdf, len(games), len(plays_pdf))

    params = {
        **flatten(cfg),
        "agent": humans.HUMAN,
        "model": "",
        "use_titles": "",
        "max_steps": "",  # time-limited, not step-limited
        "games": len(plays_pdf),
        "tsv_sha1": hashlib.sha1(text.encode("utf-8")).hexdigest(),
        "code_version": io.code_version(),
        **record.graph_params(graph, graph_manifest),
    }
    run_id, metrics = record.record_plays(
        spark,
        plays_pdf,
        output,
        cfg.experiment,
        cfg.run_name,
        params,
        metrics={f"rows_{k}": v for k, v in counts.items() if k != "left_out_by"},
        manifest={"counts": counts, "left_out": left_out.to_dict(orient="records"), "created": started.isoformat()},
        artifacts={"rejected.tsv": left_out.to_csv(sep="\t", index=False).encode("utf-8")},
    )
    by = ", ".join(f"{k} {v}" for k, v in counts["left_out_by"].items())
    print(
        f"import_human_games: wrote {output} and MLflow run {run_id} ({cfg.experiment}/{cfg.run_name}): "
        f"{counts['imported']} of {counts['rows']} games imported"
        + (f", left out {by}" if by else "")
        + f"; success {metrics['success_rate']:.3f} ± {metrics['success_rate_se']:.3f}"
    )
    return 0


if __name__ == "__main__":
    cli.run(main)
