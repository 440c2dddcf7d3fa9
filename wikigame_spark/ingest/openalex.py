"""OpenAlex works → one symmetric citation graph per research field, and the accounting.

:func:`classify_works` decides the fate of every record read (the rules of
:mod:`~wikigame_spark.ingest.openalex_records`, as column expressions so the JVM evaluates them);
:func:`deduplicate` keeps the newest version of a work found in several ``updated_date``
partitions; :func:`index_nodes`, :func:`citation_pairs` and :func:`symmetric_edges` turn one field's works
into ``nodes`` and ``edges``;
:func:`build_graphs` chains them for several fields over one read of the snapshot
(:func:`classified_works`: for Parquet the workers classify with pyarrow instead, see
:mod:`~wikigame_spark.ingest.openalex_arrow`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from wikigame_spark.drops import Drops
from wikigame_spark.graph.ids import dense_index
from wikigame_spark.ingest.empty import ALLOW_EMPTY_HINT, EmptyGraphError
from wikigame_spark.ingest.openalex_arrow import Rules, arrow_ready, scan_parquet
from wikigame_spark.ingest.openalex_records import (
    ARTICLE,
    DROP_REASONS,
    DUPLICATE,
    MALFORMED_JSON,
    MALFORMED_RECORD,
    MISSING_ABSTRACT,
    MISSING_FIELD,
    MISSING_ID,
    MISSING_LANGUAGE,
    MISSING_TITLE,
    OTHER_FIELD,
    WORK_REASONS,
    WRONG_TYPE,
    XPAC,
)
from wikigame_spark.ingest.openalex_snapshot import SnapshotPlan, read_works
from wikigame_spark.schemas import (
    ABSTRACT_INVERTED_INDEX,
    CORRUPT_RECORD,
    DOI,
    DST,
    FIELD,
    ID,
    LANGUAGE,
    OPENALEX_NODES,
    OPENALEX_RAW,
    OPENALEX_WORK_2021,
    OPENALEX_WORKS,
    PUBLICATION_DATE,
    REFERENCES,
    SOURCE_FILE,
    SRC,
    SUMMARY,
    TITLE,
    WORK_ID,
    require_columns,
)

log = logging.getLogger(__name__)

REASON = "reason"
DETAIL_CHARS = 200
PROBLEMS = 10  # malformed lines quoted in the manifest
NODES_PER_FILE = 50_000  # ~25 MB of Parquet with abstracts
# A node's summary is its whole abstract (the paper's), cut at this length: ten Wikipedia summaries,
# above any real abstract, so that a broken record's millions of words never reach a prompt. The
# graph's counts say how many were cut (``summaries_cut``).
SUMMARY_CHARS = 10_000
EDGES_PER_FILE = 4_000_000
BROADCAST_ROWS = 2_000_000  # slim tables (ids) up to this size are copied to every task
_NOT_VERSIONS = (MALFORMED_JSON, MALFORMED_RECORD, MISSING_ID)  # rows without a usable work id


def abstract_text(index: Column) -> Column:
    """:func:`~wikigame_spark.ingest.openalex_records.rebuild_abstract` as a column expression:
    (position, word) pairs sorted by position then word, words joined by one space.

    Built from array functions the JVM compiles (one small lambda per word, none per position);
    an index holding null positions takes the exact but slower element-by-element way.
    """
    positions = F.flatten(F.map_values(index))
    words = F.flatten(F.transform(F.map_entries(index), lambda e: F.array_repeat(e["key"], F.size(e["value"]))))
    placed = F.sort_array(F.arrays_zip(positions.alias("pos"), words.alias("word")))
    fast = F.array_join(placed["word"], " ")
    clean = positions.isNotNull() & (F.size(F.array_compact(positions)) == F.size(positions))
    return F.when(clean, fast).otherwise(_abstract_text_with_nulls(index))


def _abstract_text_with_nulls(index: Column) -> Column:
    placed = F.flatten(
        F.array_compact(  # a word with null positions places nothing
            F.transform(
                F.map_entries(index),
                lambda e: F.transform(
                    F.array_compact(e["value"]), lambda pos: F.struct(pos.alias("pos"), e["key"].alias("word"))
                ),
            )
        )
    )
    return F.array_join(F.transform(F.sort_array(placed), lambda p: p["word"]), " ")


def _has_words(index: Column) -> Column:
    """At least one word at a position (exact, but with lambdas: for the few rows that need it)."""
    some = F.exists(F.map_values(index), lambda positions: F.exists(positions, lambda p: p.isNotNull()))
    return F.coalesce(F.size(index) > 0, F.lit(False)) & F.coalesce(some, F.lit(False))


def _has_words_fast(index: Column) -> tuple[Column, Column]:
    """``(has words, unsure)`` from functions the JVM compiles into the scan (no lambda). Unsure:
    some word has a null position list (never in OpenAlex data), which :func:`_has_words` settles."""
    positions = F.flatten(F.map_values(index))
    listed = F.coalesce(F.size(index) > 0, F.lit(False))
    unsure = listed & positions.isNull()
    return listed & (positions.isNull() | F.array_max(positions).isNotNull()), unsure


def _blank(c: Column) -> Column:
    # Java's \s; trimming is far cheaper per record than a regular expression.
    return c.isNull() | (F.btrim(c, F.lit(" \t\n\r\f\u000b")) == "")


def _partition(key: Column) -> Column:
    """The ``updated_date`` of a file key such as ``updated_date=2025-06-11/part_000.gz``."""
    folder = F.substring_index(key, "/", 1)
    return F.when(folder.startswith("updated_date="), F.substring(folder, len("updated_date=") + 1, 1 << 20)).otherwise(
        ""
    )


def classify_works(raw: DataFrame, fields: list[str], include_xpac: bool = False) -> DataFrame:
    """Records read (:data:`OPENALEX_RAW`) → :data:`OPENALEX_WORKS`: each record's drop reason
    (null for a node of one of ``fields``) and, for nodes, the node columns.

    A line the reader could not fit to the schema is re-read with the 2021 schema (abstract as
    ``{"IndexLength", "InvertedIndex"}``); if that fits it is a 2021 record, else it is a
    ``malformed_record`` (valid JSON, wrong types) or ``malformed_json`` (not a JSON object).
    """
    require_columns(raw, OPENALEX_RAW, "classify_works(raw)")
    # One projection over the columns as read: an intermediate one would copy every record's
    # abstract index, the costliest column, whether the record is a node or not.
    corrupt = F.col(CORRUPT_RECORD)
    legacy_schema = StructType([*OPENALEX_WORK_2021.fields, StructField(CORRUPT_RECORD, StringType())])
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_RECORD}
    legacy = F.when(corrupt.isNotNull(), F.from_json(corrupt, legacy_schema, options))
    legacy_ok = (
        corrupt.isNotNull()
        & legacy[CORRUPT_RECORD].isNull()
        & legacy["abstract_inverted_index"]["InvertedIndex"].isNotNull()
    )

    def pick(name: str) -> Column:
        return F.when(legacy_ok, legacy[name]).otherwise(F.col(name))

    index = F.when(legacy_ok, legacy["abstract_inverted_index"]["InvertedIndex"]).otherwise(
        F.col("abstract_inverted_index")
    )
    field = pick("primary_topic")[FIELD]["display_name"]
    has_words, unsure = _has_words_fast(index)
    xpac = F.lit(False) if include_xpac else F.coalesce(pick("is_xpac"), F.lit(False))
    reason = (
        F.when(corrupt.isNotNull() & F.json_object_keys(corrupt).isNull(), F.lit(MALFORMED_JSON))
        .when(corrupt.isNotNull() & ~legacy_ok, F.lit(MALFORMED_RECORD))
        .when(_blank(pick("id")), F.lit(MISSING_ID))
        .when(xpac, F.lit(XPAC))
        .when(~F.coalesce(pick("type") == ARTICLE, F.lit(False)), F.lit(WRONG_TYPE))
        .when(field.isNull(), F.lit(MISSING_FIELD))
        .when(~field.isin(list(fields)), F.lit(OTHER_FIELD))
        .when(_blank(pick(TITLE)), F.lit(MISSING_TITLE))
        .when(~has_words, F.lit(MISSING_ABSTRACT))
        .when(_blank(pick(LANGUAGE)), F.lit(MISSING_LANGUAGE))
    )
    # Decided once per record: referenced below many times, the rule chain is not re-evaluated.
    raw = raw.withColumn("_reason", reason)
    reason = F.col("_reason")
    node = reason.isNull()
    in_fields = node | reason.isin(*WORK_REASONS)  # works of the requested fields

    def node_only(c: Column) -> Column:
        return F.when(node, c)

    # Step 1 reads every record and compiles into the scan; the array functions with lambdas
    # (which the JVM does not compile) run in step 2 on the indexes of nodes only: the abstract
    # text, and the exact abstract check for the rare record step 1 was unsure about.
    after_abstract = reason.isNull() | (reason == MISSING_LANGUAGE)
    recheck = after_abstract & unsure  # short-circuit: most records never reach the abstract check
    step1 = raw.select(
        F.col(SOURCE_FILE),
        _partition(F.col(SOURCE_FILE)).alias("partition"),
        pick("updated_date").alias("updated_date"),
        F.when(node | ~reason.isin(*_NOT_VERSIONS), F.substring_index(pick("id"), "/", -1)).alias(WORK_ID),
        reason.alias(REASON),
        recheck.alias("_recheck"),
        F.when(in_fields, field).alias(FIELD),
        node_only(pick(TITLE)).alias(TITLE),
        F.when(node | recheck, index.cast(ABSTRACT_INVERTED_INDEX)).alias("_index"),
        node_only(pick(LANGUAGE)).alias(LANGUAGE),
        node_only(pick(PUBLICATION_DATE)).alias(PUBLICATION_DATE),
        node_only(pick(DOI)).alias(DOI),
        node_only(pick("referenced_works")).alias(REFERENCES),
        F.when(reason.isin(MALFORMED_JSON, MALFORMED_RECORD), F.substring(corrupt, 1, DETAIL_CHARS)).alias("detail"),
    )
    final = F.when(F.col("_recheck") & ~_has_words(F.col("_index")), F.lit(MISSING_ABSTRACT)).otherwise(F.col(REASON))
    step2 = step1.withColumn(REASON, final).drop("_recheck")
    is_node = F.col(REASON).isNull()
    columns = {c: F.when(is_node, F.col(c)).alias(c) for c in (TITLE, LANGUAGE, PUBLICATION_DATE, DOI, REFERENCES)}
    columns[SUMMARY] = F.when(is_node, abstract_text(F.col("_index"))).alias(SUMMARY)
    return step2.select(*[columns.get(c, F.col(c)) for c in OPENALEX_WORKS.fieldNames()])


def deduplicate(works: DataFrame) -> DataFrame:
    """Keep the newest version of each work: the latest ``updated_date`` partition, then the latest
    ``updated_date`` in the record, then the last file name (then the content, so the choice never
    depends on the order rows arrive in). Older versions become ``duplicate`` whatever their own
    fate: the newest version decides whether the work is a node.

    Only the works found more than once are ranked (a slim count by work id finds them), so the
    node columns of the others are never shuffled. ``works`` should be materialised: it is read
    more than once.
    """
    require_columns(works, OPENALEX_WORKS, "deduplicate(works)")
    columns = OPENALEX_WORKS.fieldNames()
    repeated = (
        works.filter(F.col(WORK_ID).isNotNull())
        .groupBy(WORK_ID)
        .agg(F.count("*").alias("_versions"))
        .filter(F.col("_versions") > 1)
        .localCheckpoint()
    )
    marked = works.join(_small(repeated, repeated.count()), WORK_ID, "left")
    single = marked.filter(F.col("_versions").isNull()).select(*columns)
    newest_first = Window.partitionBy(WORK_ID).orderBy(
        F.col("partition").desc_nulls_last(),
        F.col("updated_date").desc_nulls_last(),
        F.col(SOURCE_FILE).desc(),
        F.xxhash64(*columns).desc(),
    )
    ranked = (
        marked.filter(F.col("_versions").isNotNull())
        .withColumn("_older", F.row_number().over(newest_first) > 1)
        .localCheckpoint()  # ranked once, however often the result is read
    )
    cleared = {
        c: F.when(~F.col("_older"), F.col(c)).alias(c)
        for c in (FIELD, TITLE, SUMMARY, LANGUAGE, PUBLICATION_DATE, DOI, REFERENCES)
    }
    cleared[REASON] = F.when(F.col("_older"), F.lit(DUPLICATE)).otherwise(F.col(REASON)).alias(REASON)
    return single.unionByName(ranked.select(*[cleared.get(c, F.col(c)) for c in columns]))


def _small(df: DataFrame, rows: int) -> DataFrame:
    """``df`` marked for broadcast joins when it is small enough to copy to every task."""
    return F.broadcast(df) if rows <= BROADCAST_ROWS else df


@dataclass
class FieldGraph:
    """One field's graph tables and their counts."""

    field: str
    nodes: DataFrame
    edges: DataFrame
    counts: dict


def index_nodes(works: DataFrame, counts: dict[str, int]) -> DataFrame:
    """The nodes of every field in ``counts`` (field → number of nodes) with dense ids 0…N−1 per
    field, in work-id order.

    The ids come from one sort of a slim (field, work id) table; each field's ids are shifted by
    the number of nodes of the fields sorted before it. The node columns then join back.
    """
    require_columns(works, OPENALEX_WORKS, "index_nodes(works)")
    members = works.filter(F.col(REASON).isNull() & F.col(FIELD).isin(list(counts)))
    # \u0001 sorts before any character of a field name, so keys sort by field, then work id
    # (and fields in the order of Python's sorted(), code point by code point, as Spark's).
    keys = members.select(F.concat_ws("\u0001", FIELD, WORK_ID).alias("_key"), FIELD, WORK_ID)
    ranked = dense_index(keys, "_key", "_rank")
    first, shift = {}, 0
    for f in sorted(counts):
        first[f] = shift
        shift += counts[f]
    offset = F.create_map(*[F.lit(x) for kv in first.items() for x in kv])[F.col(FIELD)] if first else F.lit(0)
    ids = ranked.select(FIELD, WORK_ID, (F.col("_rank") - offset).cast("long").alias(ID))
    return members.join(_small(ids, shift), [FIELD, WORK_ID]).select(
        ID, WORK_ID, TITLE, SUMMARY, LANGUAGE, FIELD, PUBLICATION_DATE, DOI, REFERENCES
    )


def citation_pairs(indexed: DataFrame, nodes: int | None = None) -> DataFrame:
    """One row per field and unordered pair of its nodes with a citation either way
    (``src`` ≤ ``dst``; equal for a self-citation) and ``n``, the references between them.
    ``nodes``, when known, lets a small node table be broadcast instead of shuffling references."""
    require_columns(indexed, [ID, WORK_ID, FIELD, REFERENCES], "citation_pairs(nodes)")
    refs = indexed.select(FIELD, F.col(ID).alias("_a"), F.explode(REFERENCES).alias("_ref")).select(
        FIELD, "_a", F.substring_index("_ref", "/", -1).alias(WORK_ID)
    )
    lookup = indexed.select(FIELD, WORK_ID, F.col(ID).alias("_b"))
    if nodes is not None:
        lookup = _small(lookup, nodes)
    cites = refs.join(lookup, [FIELD, WORK_ID])  # only works of the same graph
    return cites.groupBy(FIELD, F.least("_a", "_b").alias(SRC), F.greatest("_a", "_b").alias(DST)).agg(
        F.count("*").alias("n")
    )


def symmetric_edges(pairs: DataFrame) -> DataFrame:
    """Both directions of every pair of distinct nodes: distinct, no self-loops."""
    linked = pairs.filter(F.col(SRC) != F.col(DST))
    both_ways = F.explode(
        F.array(F.struct(F.col(SRC), F.col(DST)), F.struct(F.col(DST).alias(SRC), F.col(SRC).alias(DST)))
    )
    return linked.select(both_ways.alias("_e")).select(F.col(f"_e.{SRC}").alias(SRC), F.col(f"_e.{DST}").alias(DST))


def _citation_counts(pairs: DataFrame, counts: dict[str, dict]) -> None:
    """Add to each field's counts the references within it, self-citations and citing pairs."""
    loop = F.col(SRC) == F.col(DST)
    for r in (
        pairs.groupBy(FIELD)
        .agg(
            F.sum("n").alias("internal"),
            F.sum(F.when(loop, F.col("n"))).alias("self"),
            F.count(F.when(~loop, 1)).alias("pairs"),
        )
        .collect()
    ):
        counts[r[FIELD]].update(internal=int(r["internal"]), self=int(r["self"] or 0), pairs=int(r["pairs"]))


def _graph_counts(c: dict) -> dict:
    internal, self_refs, pairs = c.get("internal", 0), c.get("self", 0), c.get("pairs", 0)
    languages = c.get("languages", {})
    return {
        "nodes": sum(languages.values()),
        "edges": 2 * pairs,
        "citations": {
            "references": c.get("references", 0),
            "outside_graph": c.get("references", 0) - internal,
            "self": self_refs,
            "within_graph": internal - self_refs,
            "citing_pairs": pairs,  # unordered pairs of nodes with a citation either way
            "edges": 2 * pairs,
        },
        "languages": dict(sorted(languages.items(), key=lambda kv: (-kv[1], kv[0]))),
        "summaries_cut": c.get("summaries_cut", 0),  # abstracts longer than SUMMARY_CHARS
    }


@dataclass
class OpenAlexGraphs:
    """Every requested field's graph, the input accounting, and records per part file."""

    graphs: dict[str, FieldGraph]
    tally: dict[tuple[str | None, str | None], int]  # (reason, field) → records; field set for its works
    per_file: dict[str, int]
    problems: list[dict]

    @property
    def read(self) -> int:
        return sum(self.tally.values())

    def accounting(self, field: str) -> dict:
        """``read`` = ``kept`` + Σ ``dropped`` for one field's graph: the works of the other
        requested fields count as ``other_field`` here, whatever else they lack."""
        dropped = Drops()
        kept = 0
        for (reason, f), n in self.tally.items():
            if f is not None and f != field:
                reason = OTHER_FIELD
            if reason is None:
                kept += n
            else:
                dropped[reason] += n
        return {"read": self.read, "kept": kept, "dropped": dropped.as_dict(DROP_REASONS, zeros=False)}

    def dropped(self) -> dict[str, int]:
        """Every record not a node of any requested field, by reason."""
        out = Drops()
        for (reason, _), n in self.tally.items():
            if reason is not None:
                out[reason] += n
        return out.as_dict(DROP_REASONS, zeros=False)

    def nodes(self) -> dict[str, int]:
        out = dict.fromkeys(self.graphs, 0)
        for (reason, f), n in self.tally.items():
            if reason is None:
                out[f] += n
        return out


def classified_works(
    spark: SparkSession,
    plan: SnapshotPlan,
    fields: list[str],
    include_xpac: bool = False,
    s3: dict | None = None,
    reader: str = "auto",
) -> tuple[DataFrame, str]:
    """Every record of the snapshot as :data:`OPENALEX_WORKS`, and which reader made it: pyarrow
    in the workers for Parquet they can open (``s3``: pyarrow S3 settings for ``s3a://`` files),
    else (or with ``reader="spark"``, the verified baseline) Spark's reader and
    :func:`classify_works`."""
    rules = Rules(tuple(fields), include_xpac, s3 or {})
    why_not = arrow_ready(plan, rules) if reader == "auto" else "asked for"
    if why_not is None:
        return scan_parquet(spark, plan, rules), "pyarrow"
    return classify_works(read_works(spark, plan), fields, include_xpac), f"spark ({why_not})"


def build_graphs(works: DataFrame, fields: list[str]) -> OpenAlexGraphs:
    """Every record classified (:func:`classified_works`) → a graph per field, plus the
    accounting of every record."""
    require_columns(works, OPENALEX_WORKS, "build_graphs(works)")
    # Materialised once (rows, not columnar cache: cheaper to build, and every later step reads
    # whole rows); everything after this reads it, never the snapshot again.
    works = deduplicate(works.localCheckpoint())
    # One aggregate for the accounting, the nodes' languages and references (nodes alone have a
    # language), and an example of the malformed lines of each file (which have no field).
    keys = (SOURCE_FILE, REASON, FIELD, LANGUAGE)
    tally = works.groupBy(*keys).agg(
        F.count("*").alias("n"),
        F.min("detail").alias("detail"),
        F.sum(F.coalesce(F.size(REFERENCES), F.lit(0))).alias("references"),
        F.sum((F.length(SUMMARY) > SUMMARY_CHARS).cast("long")).alias("cut"),
    )
    per_file: dict[str, int] = {}
    by_reason: dict[tuple, int] = {}
    nodes = dict.fromkeys(fields, 0)
    counts = {f: {"languages": {}, "references": 0, "summaries_cut": 0} for f in fields}
    problems = []
    for r in sorted(tally.collect(), key=lambda r: tuple(r[c] or "" for c in keys)):
        per_file[r[SOURCE_FILE]] = per_file.get(r[SOURCE_FILE], 0) + r["n"]
        key = (r[REASON], r[FIELD])
        by_reason[key] = by_reason.get(key, 0) + r["n"]
        if r[REASON] is None:
            nodes[r[FIELD]] += r["n"]
            c = counts[r[FIELD]]
            c["languages"][r[LANGUAGE]] = c["languages"].get(r[LANGUAGE], 0) + r["n"]
            c["references"] += int(r["references"])
            c["summaries_cut"] += int(r["cut"] or 0)
        if r["detail"] is not None and len(problems) < PROBLEMS:
            problems.append({"file": r[SOURCE_FILE], REASON: r[REASON], "records": r["n"], "example": r["detail"]})
    log.info("records read %d: nodes %s", sum(per_file.values()), nodes)

    members = works.filter(F.col(REASON).isNull()).withColumn(SUMMARY, F.substring(SUMMARY, 1, SUMMARY_CHARS))
    members = members.localCheckpoint()
    indexed = index_nodes(members, nodes)
    pairs = citation_pairs(indexed, sum(nodes.values())).localCheckpoint()
    _citation_counts(pairs, counts)
    graphs = {}
    for f in fields:
        c = _graph_counts(counts[f])
        # Output files of a sensible size, not one per shuffle partition (the inputs are
        # materialised, so fewer partitions here costs no parallelism upstream).
        field_nodes = indexed.filter(F.col(FIELD) == f).select(*OPENALEX_NODES.fieldNames())
        field_edges = symmetric_edges(pairs.filter(F.col(FIELD) == f))
        graphs[f] = FieldGraph(
            field=f,
            nodes=field_nodes.coalesce(max(1, -(-c["nodes"] // NODES_PER_FILE))),
            edges=field_edges.coalesce(max(1, -(-c["edges"] // EDGES_PER_FILE))),
            counts=c,
        )
    return OpenAlexGraphs(graphs=graphs, tally=by_reason, per_file=per_file, problems=problems)


def snapshot_has_topics(spark: SparkSession, plan: SnapshotPlan) -> bool:
    """Whether any record of the snapshot has a ``primary_topic`` (a scan: for the failure path)."""
    raw = read_works(spark, plan)
    return "primary_topic" in raw.columns and not raw.filter(F.col("primary_topic").isNotNull()).isEmpty()


def check_graphs(result: OpenAlexGraphs, source: str, has_topics, allow_empty: bool = False) -> None:
    """Refuse an input whose every record is unreadable, a snapshot from before OpenAlex's topics
    (no field can have a node), and (unless ``allow_empty``) a field graph without nodes.

    ``has_topics``: a callable answering whether any record has a ``primary_topic``, asked only
    when no record read reached the field rule with a field.
    """
    dropped = result.dropped()
    unreadable = {r: dropped.get(r, 0) for r in _NOT_VERSIONS}
    if result.read and sum(unreadable.values()) == result.read:
        example = f"; e.g. {result.problems[0]['example'][:80]!r}" if result.problems else ""
        raise EmptyGraphError(
            f"{source}: every one of the {result.read:,} records read was rejected ({Drops(unreadable).summary()}): "
            f"not OpenAlex works records{example}"
        )
    empty = [f for f, n in result.nodes().items() if n == 0]
    if not empty:
        return
    had_field = any(f is not None or r == OTHER_FIELD for r, f in result.tally)
    if not had_field and not has_topics():
        raise EmptyGraphError(
            f"{source}: no record has a primary_topic, so no work has a field: this snapshot predates "
            "OpenAlex topics (added in 2024). Use a works snapshot from 2024 or later, e.g. the current "
            "s3://openalex (data/works/ or data/parquet/works/)"
        )
    if not allow_empty:
        raise EmptyGraphError(
            f"{source}: no works of field(s) {empty}, the graph would be empty: {result.read:,} records read, "
            f"dropped ({Drops(dropped).summary()}); {ALLOW_EMPTY_HINT}"
        )
