"""Wikipedia pages-articles dumps → a Parquet graph (nodes, edges, redirects, manifest.json)."""

from __future__ import annotations

from dataclasses import dataclass

from wikigame_spark import cli, layout, parquet
from wikigame_spark.config import OVERWRITE_HELP, positive, setting
from wikigame_spark.ingest.dumps import expand_inputs, plan_tasks
from wikigame_spark.ingest.wikipedia import build_graph, check_graph, dump_siteinfo, read_dump_pages
from wikigame_spark.runner import Context, Input, InputKind, Job, Output, Result
from wikigame_spark.schemas import EDGES, REDIRECTS, WIKIPEDIA_NODES

KIND = "wikipedia-graph"


@dataclass(frozen=True)
class WikipediaBuildConfig:
    """``jobs/build_wikipedia.py``: dumps → nodes/edges/redirects."""

    inputs: tuple[str, ...] = setting(
        (), "dump files, folders or globs: one wiki's split dump files build one graph", required=True, flag="--input"
    )
    output: str = setting("", "graph folder to write (local, hdfs://, s3a://, dbfs:/)", required=True)
    language: str = setting("", "the graph's language code, kept per node (default: from the dump's xml:lang / dbname)")
    method: str = setting("fast", "link and summary extraction", choices=("fast", "reference"))
    max_text_bytes: int = setting(8 << 20, "articles with more wikitext are rejected and counted")
    task_bytes: int = setting(
        64 << 20,
        "compressed bytes per task of a .bz2 dump (whole multistream streams, or bzip2 blocks)",
        changes_output=False,
    )
    max_redirect_hops: int = setting(32, "longer redirect chains are counted as cycles")
    summary_chars: int = setting(1000, "characters kept of each article's summary")
    summary: str = setting(
        "paper",
        "each article's summary: the paper's stripped wikitext, or clean (file, category and "
        "interlanguage links, media tags and table markup left out)",
        choices=("paper", "clean"),
    )
    allow_empty: bool = setting(False, "write a graph without articles instead of failing")
    overwrite: bool = setting(False, OVERWRITE_HELP)

    def validate(self) -> None:
        positive(self, "max_text_bytes", "task_bytes", "max_redirect_hops", "summary_chars")


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
        layout.NODES_TABLE: (graph.nodes, WIKIPEDIA_NODES),
        layout.EDGES_TABLE: (graph.edges, EDGES),
        layout.REDIRECTS_TABLE: (graph.redirects, REDIRECTS),
    }
    parquet.write_tables(ctx.stage(), tables)
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
