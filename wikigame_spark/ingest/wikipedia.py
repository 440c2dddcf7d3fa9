"""Wikipedia dumps → the link graph: ``nodes``, ``edges``, ``redirects`` and their accounting.

:func:`read_dump_pages` parses dump tasks on the executors into the ``PAGES`` table;
:func:`build_graph` is the DataFrame stage that turns pages into the graph contract.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from wikigame_spark.drops import Drops
from wikigame_spark.graph.ids import dense_index
from wikigame_spark.ingest.dumps import DumpError, DumpTask, read_siteinfo
from wikigame_spark.ingest.empty import ALLOW_EMPTY_HINT, EmptyGraphError
from wikigame_spark.ingest.pages import (
    ARTICLE,
    OTHER_NAMESPACE,
    PAPER_SUMMARY,
    REDIRECT,
    REJECTED,
    REJECTIONS,
    task_rows,
)
from wikigame_spark.ingest.titles import SiteInfo
from wikigame_spark.ingest.wikitext import SUMMARY_CHARS
from wikigame_spark.schemas import (
    DST,
    ID,
    PAGE_ID,
    PAGES,
    SRC,
    SUMMARY,
    TARGET,
    TITLE,
    WIKIPEDIA_NODES,
    require_columns,
)

log = logging.getLogger(__name__)

MISSING = "missing"
DANGLING = "redirect_dangling"
CYCLE = "redirect_cycle"
DUPLICATE_TITLE = "duplicate_title"
PAGE_REJECTIONS = (*REJECTIONS, DUPLICATE_TITLE)
_ROW = "_page_row"  # a page's row key while the graph is built ("_row" is dense_index's own)


@dataclass
class WikipediaGraph:
    """The graph tables plus the counts that go into the manifest."""

    nodes: DataFrame
    edges: DataFrame
    redirects: DataFrame
    counts: dict


def dump_siteinfo(files: list[str], lang: str = "") -> SiteInfo:
    """The common ``<siteinfo>`` of the input files; files of different wikis are an error."""
    sites = {path: read_siteinfo(path) for path in files}
    first_path, site = next(iter(sites.items()))
    for path, other in sites.items():
        if (other.dbname, other.case, other.namespaces) != (site.dbname, site.case, site.namespaces):
            raise DumpError(
                f"{path} is from wiki {other.dbname!r} but {first_path} is from {site.dbname!r}: "
                "build one graph per wiki"
            )
    if lang:
        site = SiteInfo.from_dict({**site.to_dict(), "lang": lang})
    return site


def read_dump_pages(
    spark: SparkSession,
    tasks: list[DumpTask],
    site: SiteInfo,
    method: str,
    max_text_bytes: int,
    summary: str = PAPER_SUMMARY,
    summary_chars: int = SUMMARY_CHARS,
) -> DataFrame:
    """Parse dump tasks on the executors, one Spark task each, into the ``PAGES`` table."""
    if not tasks:
        raise DumpError("no dump files to read")
    rows = functools.partial(
        task_rows,
        site=site,
        method=method,
        max_text_bytes=max_text_bytes,
        summary=summary,
        summary_chars=summary_chars,
    )
    rdd = spark.sparkContext.parallelize(tasks, len(tasks)).flatMap(rows)
    # Rows are built by page_row to the PAGES schema; per-row verification would only cost time.
    return spark.createDataFrame(rdd, PAGES, verifySchema=False)


def _n():
    """The count column every accounting aggregate below is read by: r["n"]."""
    return F.count("*").alias("n")


def _resolve_redirects(redirects: DataFrame, article_ids: DataFrame, max_hops: int) -> tuple[DataFrame, DataFrame]:
    """Follow redirect chains hop by hop until they reach an article.

    Returns ``(resolved: title, target)`` and ``(failed: title, reason)``; a chain that ends at a
    missing page is dangling, one still unresolved after ``max_hops`` is a cycle.
    """
    hops = redirects.select(F.col(TITLE).alias("cur"), F.col("redirect_to").alias("next"))
    pending = redirects.select(TITLE, F.col("redirect_to").alias("cur")).localCheckpoint()
    resolved, failed = [], []
    for _ in range(max_hops):
        step = pending.join(article_ids.withColumnRenamed(TITLE, "cur"), "cur", "left")
        resolved.append(step.filter(F.col(ID).isNotNull()).select(TITLE, F.col(ID).alias(TARGET)))
        rest = step.filter(F.col(ID).isNull()).select(TITLE, "cur").join(hops, "cur", "left")
        failed.append(rest.filter(F.col("next").isNull()).select(TITLE, F.lit(DANGLING).alias("reason")))
        pending = rest.filter(F.col("next").isNotNull()).select(TITLE, F.col("next").alias("cur")).localCheckpoint()
        if pending.isEmpty():
            break
    else:
        failed.append(pending.select(TITLE, F.lit(CYCLE).alias("reason")))
    union = functools.partial(functools.reduce, DataFrame.unionByName)
    return union(resolved), union(failed)


def _small(df: DataFrame, rows: int) -> DataFrame:
    """``df`` marked for broadcast when it fits Spark's threshold
    (``spark.sql.autoBroadcastJoinThreshold``, at 64 bytes for each of its ``rows``): a join with
    it then sends it to every task and moves nothing of the other side."""
    spark = df.sparkSession
    threshold = spark.conf.get("spark.sql.autoBroadcastJoinThreshold", "10MB").strip()
    limit = (
        -1
        if threshold.startswith("-")
        else spark.sparkContext._jvm.org.apache.spark.network.util.JavaUtils.byteStringAsBytes(threshold)
    )
    return F.broadcast(df) if rows * 64 <= limit else df


def build_graph(pages: DataFrame, max_redirect_hops: int = 32) -> WikipediaGraph:
    """``PAGES`` → nodes (dense ids by page id), edges, resolved redirects, and accounting.

    Pages are ranked, numbered and resolved on their keys alone; their links and summaries are
    read once, by the articles that win their title, and each link is resolved by one join.
    """
    require_columns(pages, PAGES, "build_graph(pages)")
    pages = pages.withColumn(_ROW, F.monotonically_increasing_id()).persist(StorageLevel.MEMORY_AND_DISK)

    # One page per main-namespace title: an article beats a redirect, then the newest revision.
    main = pages.filter(F.col("kind").isin(ARTICLE, REDIRECT)).select(
        _ROW, PAGE_ID, TITLE, "kind", "reason", "redirect_to", "timestamp"
    )
    order = Window.partitionBy(TITLE).orderBy(
        (F.col("kind") == ARTICLE).desc(), F.col("timestamp").desc_nulls_last(), F.col(PAGE_ID).desc()
    )
    ranked = main.withColumn("_rank", F.row_number().over(order)).persist(StorageLevel.MEMORY_AND_DISK)
    counts = _page_counts(pages, ranked)
    n_articles, n_titles = counts["pages"][ARTICLE], counts["pages"][ARTICLE] + counts["pages"][REDIRECT]
    winners = ranked.filter(F.col("_rank") == 1)

    ids = dense_index(winners.filter(F.col("kind") == ARTICLE).select(PAGE_ID, TITLE, _ROW), PAGE_ID)
    ids = ids.persist(StorageLevel.MEMORY_AND_DISK)
    articles = pages.filter(F.col("kind") == ARTICLE).select(_ROW, SUMMARY, "links", "links_dropped")
    # Not cached: each use reads only its own column of the cached pages (summary, links or
    # links_dropped), and a cache of the join would copy all three.
    indexed = _small(ids, n_articles).join(articles, _ROW)
    nodes = indexed.select(ID, PAGE_ID, TITLE, F.coalesce(SUMMARY, F.lit("")).alias(SUMMARY))

    redirect_pages = winners.filter(F.col("kind") == REDIRECT)
    resolved, failed = _resolve_redirects(
        redirect_pages.filter(F.col("reason").isNull()), ids.select(TITLE, ID), max_redirect_hops
    )
    failed = failed.unionByName(redirect_pages.filter(F.col("reason").isNotNull()).select(TITLE, "reason"))
    failed = failed.persist(StorageLevel.MEMORY_AND_DISK)
    redirects = resolved.select(TITLE, TARGET).persist(StorageLevel.MEMORY_AND_DISK)

    # What each title a link may name becomes: an article's id, a redirect's target, or the
    # reason its redirect failed (titles are unique across the three, one per winning page).
    targets = (
        ids.select(TITLE, F.col(ID).alias(DST), F.lit(None).cast("string").alias("reason"))
        .unionByName(redirects.select(TITLE, F.col(TARGET).alias(DST), F.lit(None).cast("string").alias("reason")))
        .unionByName(failed.select(TITLE, F.lit(None).cast("long").alias(DST), "reason"))
    )
    # Link occurrences by what became of them: one row per distinct (src, dst) resolved, one per
    # article and reason not, with the occurrences each stands for.
    occurrences = indexed.select(F.col(ID).alias(SRC), F.explode("links").alias(TITLE))
    outcomes = (
        occurrences.join(_small(targets, n_titles), TITLE, "left")
        .groupBy(SRC, DST, F.when(F.col(DST).isNull(), F.coalesce("reason", F.lit(MISSING))).alias("reason"))
        .agg(_n())
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    edges = outcomes.filter(F.col(DST).isNotNull() & (F.col(SRC) != F.col(DST))).select(SRC, DST)

    counts.update(_link_counts(indexed, failed, outcomes, counts["pages"][REDIRECT]))
    return WikipediaGraph(
        nodes=nodes.select(*WIKIPEDIA_NODES.fieldNames()), edges=edges, redirects=redirects, counts=counts
    )


def _page_counts(pages: DataFrame, ranked: DataFrame) -> dict:
    """Every page counted once, by what became of it."""
    by_kind = (
        pages.groupBy("kind", "reason")
        .agg(
            _n(),
            F.max("timestamp").alias("newest"),
            F.sum(F.col("is_redirect").cast("long")).alias("redirects"),
            F.sum(F.coalesce("text_bytes", F.lit(0))).alias("text_bytes"),
        )
        .collect()
    )
    n_kind = {k: sum(r["n"] for r in by_kind if r["kind"] == k) for k in (ARTICLE, REDIRECT, OTHER_NAMESPACE)}
    rejected = {r["reason"]: r["n"] for r in by_kind if r["kind"] == REJECTED}
    duplicates = {r["kind"]: r["n"] for r in ranked.filter(F.col("_rank") > 1).groupBy("kind").agg(_n()).collect()}
    if duplicates:
        rejected[DUPLICATE_TITLE] = sum(duplicates.values())
    problems = []
    if rejected:
        rows = pages.filter(F.col("kind") == REJECTED).select("detail").limit(20).collect()
        problems = [r["detail"] for r in rows]
    n_articles = n_kind[ARTICLE] - duplicates.get(ARTICLE, 0)
    return {
        "pages": {
            "read": sum(r["n"] for r in by_kind),
            ARTICLE: n_articles,
            REDIRECT: n_kind[REDIRECT] - duplicates.get(REDIRECT, 0),
            OTHER_NAMESPACE: n_kind[OTHER_NAMESPACE],
            REJECTED: Drops(rejected).as_dict(PAGE_REJECTIONS),
        },
        "redirects_all_namespaces": int(sum(r["redirects"] or 0 for r in by_kind)),
        "nodes": n_articles,
        "newest_revision": max((r["newest"] for r in by_kind if r["newest"]), default=None),
        "wikitext_bytes": int(sum(r["text_bytes"] or 0 for r in by_kind)),
        "problems": problems,
    }


def _link_counts(indexed: DataFrame, failed: DataFrame, outcomes: DataFrame, n_redirects: int) -> dict:
    """Every link occurrence counted once, by what became of it: the outcomes of the resolved
    titles and the targets left out at extraction (interwiki, other namespaces, …), in one pass."""
    rows = (
        outcomes.select("reason", "n", F.lit(1).alias("pairs"), (F.col(SRC) == F.col(DST)).cast("long").alias("self"))
        .unionByName(
            indexed.select(F.explode("links_dropped").alias("reason", "n")).select(
                "reason", "n", F.lit(0).alias("pairs"), F.lit(0).cast("long").alias("self")
            )
        )
        .groupBy("reason")
        .agg(F.sum("n").alias("n"), F.sum("pairs").alias("pairs"), F.sum("self").alias("self"))
        .collect()
    )
    dropped = Drops({r["reason"]: r["n"] for r in rows if r["reason"] is not None})
    resolved = next((r for r in rows if r["reason"] is None), None)
    occurrences, pairs, loops = (resolved["n"], resolved["pairs"], resolved["self"] or 0) if resolved else (0, 0, 0)
    dropped["duplicate"] = occurrences - pairs
    dropped["self_loop"] = loops
    n_edges = pairs - loops
    redirect_failures = {r["reason"]: r["n"] for r in failed.groupBy("reason").agg(_n()).collect()}
    return {
        "redirects": {
            "main_namespace": n_redirects,
            "resolved": n_redirects - sum(redirect_failures.values()),
            "dropped": Drops(redirect_failures).as_dict(),
        },
        "links": {"total": n_edges + sum(dropped.values()), "edges": n_edges, "dropped": dropped.as_dict()},
        "edges": n_edges,
    }


def check_graph(counts: dict, inputs: list[str], allow_empty: bool = False) -> None:
    """Refuse a build whose every page was rejected, and (unless ``allow_empty``) a graph without
    articles, with the accounting that says why."""
    pages = counts["pages"]
    rejected = pages[REJECTED]
    where = ", ".join(inputs)
    if pages["read"] and sum(rejected.values()) == pages["read"]:
        first = f"; first: {counts['problems'][0]}" if counts["problems"] else ""
        raise EmptyGraphError(
            f"{where}: every one of the {pages['read']:,} pages read was rejected ({Drops(rejected).summary()}){first}"
        )
    if counts["nodes"] == 0 and not allow_empty:
        raise EmptyGraphError(
            f"{where}: no articles, the graph would be empty: {pages['read']:,} pages read, "
            f"{pages[REDIRECT]:,} redirects, {pages[OTHER_NAMESPACE]:,} of other namespaces, rejected "
            f"({Drops(rejected).summary()}); {ALLOW_EMPTY_HINT}"
        )
