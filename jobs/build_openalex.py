"""OpenAlex works snapshot → one symmetric citation graph per field (nodes, edges, manifest.json).

    spark-submit jobs/build_openalex.py --input URI --field NAME [--field NAME…] --output DIR
        [--language CODE] [--endpoint-url URL] [--overwrite] [--allow-partial] [--include-xpac]
        [--format auto|parquet|jsonl] [--config YAML]

URI: a local folder or file, or s3://bucket/prefix (the public snapshot: s3://openalex).
Each field's graph goes to DIR/<field-slug>/, e.g. DIR/physics-and-astronomy/.
"""

from __future__ import annotations

import argparse
import datetime as dt

from wikigame_spark import cli, io, layout, preflight
from wikigame_spark.config import OpenAlexBuildConfig, flatten, job_config
from wikigame_spark.ingest.openalex import build_graphs, check_graphs, classified_works, snapshot_has_topics
from wikigame_spark.ingest.openalex_records import field_slug
from wikigame_spark.ingest.openalex_snapshot import check_record_counts, plan_snapshot
from wikigame_spark.io import S3Store, configure_s3a, open_store, spark_uri
from wikigame_spark.schemas import EDGES, OPENALEX_NODES


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", help="snapshot folder or file, s3://bucket/prefix, or a Hadoop URI")
    p.add_argument("--field", dest="fields", action="append", help="primary_topic field, e.g. 'Medicine' (repeat)")
    p.add_argument("--output", help="output folder; one graph per field under it (local, hdfs://, s3://, dbfs:/)")
    p.add_argument("--language", help="language code recorded for game sampling (nodes are not filtered)")
    p.add_argument("--endpoint-url", help="S3-compatible endpoint for the input/output bucket")
    p.add_argument("--format", choices=["auto", "parquet", "jsonl"], help="which copy of the snapshot to read")
    p.add_argument("--overwrite", action="store_true", default=None, help="replace existing field graphs")
    p.add_argument(
        "--allow-partial", action="store_true", default=None, help="warn, not fail, on an incomplete snapshot"
    )
    p.add_argument("--include-xpac", action="store_true", default=None, help="keep XPAC works (is_xpac)")
    p.add_argument("--allow-empty", action="store_true", default=None, help="write field graphs without nodes")
    p.add_argument("--config", help="YAML settings (default conf/build_openalex.yaml)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = job_config(OpenAlexBuildConfig, "build_openalex", args)
    started = dt.datetime.now(dt.timezone.utc)
    output = spark_uri(cfg.output.rstrip("/"))
    targets = {f: layout.join(output, field_slug(f)) for f in cfg.fields}
    preflight.require_source([cfg.input], want="an OpenAlex snapshot (folder, file or s3:// prefix)")
    for path in targets.values():
        preflight.check_output(path, cfg.overwrite)
    spark = cli.session("build_openalex")

    if output.startswith("s3a://"):
        configure_s3a(spark, output, cfg.endpoint_url, S3Store(output[6:].split("/", 1)[0], cfg.endpoint_url))
    for path in targets.values():
        preflight.check_output(path, cfg.overwrite, spark=spark)
    store, root = open_store(cfg.input, cfg.endpoint_url, spark)
    plan = plan_snapshot(root, cfg.format, cfg.endpoint_url, cfg.allow_partial, spark, store=store)
    plan.input = cfg.input
    if isinstance(store, S3Store):
        configure_s3a(spark, spark_uri(cfg.input), cfg.endpoint_url, store)

    s3 = store.arrow_options() if isinstance(store, S3Store) else None
    with cli.stage("build_openalex", "build_graphs", cfg.input):
        works, reader = classified_works(spark, plan, list(cfg.fields), cfg.include_xpac, s3)
        result = build_graphs(works, list(cfg.fields))
    check_graphs(result, cfg.input, lambda: snapshot_has_topics(spark, plan), cfg.allow_empty)
    warnings = plan.warnings + check_record_counts(plan, result.per_file, cfg.allow_partial)
    snapshot = {**plan.to_dict(), "reader": reader}
    for f in snapshot["files"]:
        f["records_read"] = result.per_file.get(f["key"], 0)
    written = []
    for field, graph in result.graphs.items():
        manifest = {
            "kind": "openalex-graph",
            "field": field,
            "fields_built_together": list(cfg.fields),
            "target_language": cfg.language or None,
            "language_nodes": graph.counts["languages"].get(cfg.language, 0) if cfg.language else None,
            "snapshot": snapshot,
            "records": result.accounting(field),
            "counts": graph.counts,
            "problems": result.problems,
            "warnings": warnings,
            "parameters": flatten(cfg),
            "code_version": io.code_version(),
            "created": started.isoformat(),
            "spark_version": spark.version,
        }
        tables = {layout.NODES: (graph.nodes, OPENALEX_NODES), layout.EDGES: (graph.edges, EDGES)}
        io.write_graph(spark, targets[field], tables, manifest, cfg.overwrite)
        written.append(f"{targets[field]} ({graph.counts['nodes']} nodes, {graph.counts['edges']} edges)")
    print(
        f"build_openalex: wrote {'; '.join(written)} with nodes, edges, manifest.json; "
        f"records read {result.read} from {len(plan.files)} {plan.format} files, dropped {result.dropped()}"
        + (f"; {len(warnings)} warnings (see manifest)" if warnings else "")
    )
    return 0


if __name__ == "__main__":
    cli.run(main)
