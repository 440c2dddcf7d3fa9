"""Wikispeedia (SNAP's files, West & Leskovec) → a Parquet graph (nodes with categories, edges, manifest.json).

The folder is what SNAP's two archives unpack to: ``wikispeedia_paths-and-graph/`` and
``plaintext_articles/`` (:mod:`wikigame_spark.ingest.wikispeedia`). People's games on it are
imported by ``jobs/import_human_games.py --wikispeedia DIR``.
"""

from __future__ import annotations

from dataclasses import dataclass

from wikigame_spark import layout, parquet, storage
from wikigame_spark.config import OVERWRITE_HELP, positive, setting
from wikigame_spark.ingest import wikispeedia
from wikigame_spark.ingest.wikitext import SUMMARY_CHARS
from wikigame_spark.runner import Context, Input, InputKind, Job, Output, Result
from wikigame_spark.schemas import EDGES

KIND = "wikispeedia-graph"
CITE = "Robert West and Jure Leskovec: Human Wayfinding in Information Networks. WWW 2012"


@dataclass(frozen=True)
class WikispeediaBuildConfig:
    """``jobs/build_wikispeedia.py``: SNAP's Wikispeedia folder → nodes/edges."""

    input: str = setting(
        "", "Wikispeedia folder: wikispeedia_paths-and-graph/ and plaintext_articles/ (local or any Hadoop URI)",
        required=True,
    )  # fmt: skip
    output: str = setting("", "graph folder to write (local, hdfs://, s3a://, dbfs:/)", required=True)
    summary_chars: int = setting(SUMMARY_CHARS, "characters kept of each article's lead")
    overwrite: bool = setting(False, OVERWRITE_HELP)

    def validate(self) -> None:
        positive(self, "summary_chars")


def build(ctx: Context) -> Result:
    s: WikispeediaBuildConfig = ctx.settings
    spark = ctx.spark
    files = wikispeedia.Files.find(storage.folder(ctx.inputs["input"], spark))
    graph = wikispeedia.build_graph(spark, files, s.summary_chars)
    tables = {
        layout.NODES_TABLE: (graph.nodes, wikispeedia.WIKISPEEDIA_NODES),
        layout.EDGES_TABLE: (graph.edges, EDGES),
    }
    parquet.write_tables(ctx.stage(), tables)
    c = graph.counts
    manifest = {
        "kind": KIND,
        "inputs": [*files.identities((wikispeedia.ARTICLES, wikispeedia.LINKS, wikispeedia.CATEGORIES)),
                   graph.texts],
        "dbname": "wikispeedia",
        "language": "en",
        "site": {"case": "case-sensitive"},
        "counts": c,
        "summary": {"style": "lead", "chars": s.summary_chars},
        "cite": CITE,
    }  # fmt: skip
    dropped = c["links"]["dropped"]
    summary = (
        f"wrote {ctx.output()} ({', '.join(tables)}, manifest.json): {c['nodes']} nodes, {c['edges']} edges; "
        f"links read {c['links']['total']}, left out {', '.join(f'{k} {v}' for k, v in dropped.items())}; "
        f"{c['summaries']['no_prose_lead']} articles without a prose lead"
    )
    return Result(summary, manifests={"": manifest})


JOB = Job(
    name="build_wikispeedia",
    doc=__doc__,
    settings=WikispeediaBuildConfig,
    body=build,
    inputs=(Input("input", InputKind.FOLDER),),
    outputs=(Output(lambda s, _: {"": s.output}, what="graph", kind=KIND),),
    tracked=False,
)
