"""Wikipedia pages-articles dumps → a Parquet graph (nodes, edges, redirects, manifest.json)."""

from __future__ import annotations

from wikigame_spark import cli, layout, parquet
from wikigame_spark.config import WikipediaBuildConfig
from wikigame_spark.ingest.dumps import expand_inputs, plan_tasks
from wikigame_spark.ingest.wikipedia import build_graph, check_graph, dump_siteinfo, read_dump_pages
from wikigame_spark.runner import Context, Input, InputKind, Job, Output, Result
from wikigame_spark.schemas import EDGES, REDIRECTS, WIKIPEDIA_NODES

KIND = "wikipedia-graph"


def build(ctx: Context) -> Result:
    s: WikipediaBuildConfig = ctx.settings
    files = expand_inputs(list(ctx.inputs["inputs"]))
    site = dump_siteinfo(files, s.language)
    spark = ctx.spark
    tasks = plan_tasks(files, s.task_bytes, spark.sparkContext.defaultParallelism)
    with cli.stage("build_wikipedia", "build_graph", files):
        pages = read_dump_pages(spark, tasks, site, s.method, s.max_text_bytes, s.summary, s.summary_chars)
        graph = build_graph(pages, s.max_redirect_hops)
    check_graph(graph.counts, files, s.allow_empty)
    tables = {
        layout.NODES: (graph.nodes, WIKIPEDIA_NODES),
        layout.EDGES: (graph.edges, EDGES),
        layout.REDIRECTS: (graph.redirects, REDIRECTS),
    }
    parquet.write_tables(spark, ctx.stage(), tables)
    c = graph.counts
    manifest = {
        "kind": KIND,
        "inputs": parquet.file_identities(spark, files),
        "tasks": len(tasks),
        "site": site.to_dict(),
        "language": site.lang,
        "dbname": site.dbname,
        "generator": site.generator,
        "newest_revision": c["newest_revision"],
        "counts": c,
        "summary": {"style": s.summary, "chars": s.summary_chars},
    }
    rejected = c["pages"]["rejected"]
    summary = (
        f"wrote {ctx.output()} ({', '.join(tables)}, manifest.json): {c['nodes']} nodes, {c['edges']} edges, "
        f"{c['redirects']['resolved']} redirects; pages read {c['pages']['read']}, "
        f"rejected {sum(rejected.values())} {rejected or ''}".rstrip()
    )
    return Result(summary, manifests={"": manifest})


JOB = Job(
    name="build_wikipedia",
    doc=__doc__,
    settings=WikipediaBuildConfig,
    body=build,
    inputs=(Input("inputs", InputKind.DUMPS),),
    outputs=(Output(lambda s, _: {"": s.output}, what="graph", kind=KIND),),
    tracked=False,
)
