"""Wikipedia pages-articles dumps → Parquet graph (nodes, edges, redirects, manifest.json).

spark-submit jobs/build_wikipedia.py --input DUMP [DUMP…] --output DIR [--lang CODE] [--overwrite]
"""

from __future__ import annotations

import argparse
import datetime as dt

from wikigame_spark import cli, io, layout, preflight
from wikigame_spark.config import WikipediaBuildConfig, flatten, job_config
from wikigame_spark.ingest.dumps import expand_inputs, plan_tasks
from wikigame_spark.ingest.wikipedia import build_graph, check_graph, dump_siteinfo, read_dump_pages
from wikigame_spark.schemas import EDGES, REDIRECTS, WIKIPEDIA_NODES


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", dest="inputs", nargs="+", help="dump files, directories or globs")
    p.add_argument("--output", help="output graph directory (local, hdfs://, s3a://, dbfs:/)")
    p.add_argument("--lang", help="language code (default: from the dump's xml:lang / dbname)")
    p.add_argument("--overwrite", action="store_true", default=None, help="replace an existing output")
    p.add_argument("--method", choices=["fast", "reference"], help="link/summary extraction (default fast)")
    p.add_argument("--max-text-bytes", type=int, help="reject articles with more wikitext than this")
    p.add_argument("--multistream-task-bytes", type=int, help="compressed bytes per task of a multistream dump")
    p.add_argument("--allow-empty", action="store_true", default=None, help="write a graph without articles")
    p.add_argument("--config", help="YAML settings (default conf/build_wikipedia.yaml)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = job_config(WikipediaBuildConfig, "build_wikipedia", args)
    started = dt.datetime.now(dt.timezone.utc)
    preflight.require_source(list(cfg.inputs))
    preflight.check_output(cfg.output, cfg.overwrite)
    files = expand_inputs(list(cfg.inputs))
    site = dump_siteinfo(files, cfg.lang)
    tasks = plan_tasks(files, cfg.multistream_task_bytes)
    spark = cli.session("build_wikipedia")
    preflight.check_output(cfg.output, cfg.overwrite, spark=spark)

    with cli.stage("build_wikipedia", "build_graph", files):
        pages = read_dump_pages(spark, tasks, site, cfg.method, cfg.max_text_bytes)
        graph = build_graph(pages, cfg.max_redirect_hops)
    check_graph(graph.counts, files, cfg.allow_empty)
    manifest = {
        "kind": "wikipedia-graph",
        "inputs": io.file_identities(spark, files),
        "tasks": len(tasks),
        "site": site.to_dict(),
        "language": site.lang,
        "dbname": site.dbname,
        "generator": site.generator,
        "newest_revision": graph.counts["newest_revision"],
        "counts": graph.counts,
        "parameters": flatten(cfg),
        "code_version": io.code_version(),
        "created": started.isoformat(),
        "spark_version": spark.version,
    }
    written = io.write_graph(
        spark,
        cfg.output,
        {
            layout.NODES: (graph.nodes, WIKIPEDIA_NODES),
            layout.EDGES: (graph.edges, EDGES),
            layout.REDIRECTS: (graph.redirects, REDIRECTS),
        },
        manifest,
        cfg.overwrite,
    )
    c = graph.counts
    print(
        f"build_wikipedia: wrote {cfg.output} ({', '.join(written)}, manifest.json): "
        f"{c['nodes']} nodes, {c['edges']} edges, {c['redirects']['resolved']} redirects; "
        f"pages read {c['pages']['read']}, rejected {sum(c['pages']['rejected'].values())} "
        f"{c['pages']['rejected'] or ''}".rstrip()
    )
    return 0


if __name__ == "__main__":
    cli.run(main)
