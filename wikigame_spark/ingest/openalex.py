"""OpenAlex works → one symmetric citation graph per research field, and the accounting.

:func:`classify_works` decides the fate of every record read (the rules of
:mod:`~wikigame_spark.ingest.openalex_records`, as column expressions so the JVM evaluates them);
:func:`deduplicate` keeps the newest version of a work found in several ``updated_date``
partitions; :func:`field_graph` turns one field's works into ``nodes`` and ``edges``;
:func:`build_graphs` chains them for several fields over one read of the snapshot.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from wikigame_spark.graph.ids import dense_index
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
    WRONG_TYPE,
    XPAC,
)
from wikigame_spark.schemas import (
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
NODES_PER_FILE = 250_000  # ~100 MB of Parquet with abstracts
EDGES_PER_FILE = 8_000_000
BROADCAST_ROWS = 2_000_000  # slim tables (ids) up to this size are copied to every task
_LEGACY = "_legacy"
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
    """At least one word at a position (stops at the first: cheap on real abstracts)."""
    some = F.exists(F.map_values(index), lambda positions: F.exists(positions, lambda p: p.isNotNull()))
    return F.coalesce(F.size(index) > 0, F.lit(False)) & F.coalesce(some, F.lit(False))


def _blank(c: Column) -> Column:
    return c.isNull() | F.regexp_like(c, F.lit(r"^\s*$"))


def classify_works(raw: DataFrame, fields: list[str], include_xpac: bool = False) -> DataFrame:
    """Records read (:data:`OPENALEX_RAW`) → :data:`OPENALEX_WORKS`: each record's drop reason
    (null for a node of one of ``fields``) and, for nodes, the node columns.

    A line the reader could not fit to the schema is re-read with the 2021 schema (abstract as
    ``{"IndexLength", "InvertedIndex"}``); if that fits it is a 2021 record, else it is a
    ``malformed_record`` (valid JSON, wrong types) or ``malformed_json`` (not a JSON object).
    """
    require_columns(raw, OPENALEX_RAW, "classify_works(raw)")
    corrupt = F.col(CORRUPT_RECORD)
    legacy_schema = StructType([*OPENALEX_WORK_2021.fields, StructField(CORRUPT_RECORD, StringType())])
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_RECORD}
    df = raw.withColumn(_LEGACY, F.when(corrupt.isNotNull(), F.from_json(corrupt, legacy_schema, options)))
    legacy_ok = (
        F.col(_LEGACY).isNotNull()
        & F.col(f"{_LEGACY}.{CORRUPT_RECORD}").isNull()
        & F.col(f"{_LEGACY}.abstract_inverted_index.InvertedIndex").isNotNull()
    )

    def pick(name: str) -> Column:
        return F.when(legacy_ok, F.col(f"{_LEGACY}.{name}")).otherwise(F.col(name))

    index = F.when(legacy_ok, F.col(f"{_LEGACY}.abstract_inverted_index.InvertedIndex")).otherwise(
        F.col("abstract_inverted_index")
    )
    field = pick("primary_topic")[FIELD]["display_name"]
    xpac = F.lit(False) if include_xpac else F.coalesce(pick("is_xpac"), F.lit(False))
    reason = (
        F.when(corrupt.isNotNull() & F.json_object_keys(corrupt).isNull(), F.lit(MALFORMED_JSON))
        .when(corrupt.isNotNull() & ~legacy_ok, F.lit(MALFORMED_RECORD))
        .when(_blank(pick("id")), F.lit(MISSING_ID))
        .when(xpac, F.lit(XPAC))
        .when(~F.coalesce(pick("type") == ARTICLE, F.lit(False)), F.lit(WRONG_TYPE))
        .when(_blank(pick(TITLE)), F.lit(MISSING_TITLE))
        .when(~_has_words(index), F.lit(MISSING_ABSTRACT))
        .when(_blank(pick(LANGUAGE)), F.lit(MISSING_LANGUAGE))
        .when(field.isNull(), F.lit(MISSING_FIELD))
        .when(~field.isin(list(fields)), F.lit(OTHER_FIELD))
    )
    classified = df.select(
        F.col(SOURCE_FILE),
        pick("id").alias("_id"),
        pick("updated_date").alias("updated_date"),
        reason.alias(REASON),
        field.alias("_field"),
        pick(TITLE).alias("_title"),
        index.alias("_index"),
        pick(LANGUAGE).alias("_language"),
        pick(PUBLICATION_DATE).alias("_publication_date"),
        pick(DOI).alias("_doi"),
        pick("referenced_works").alias("_references"),
        corrupt,
    )
    node = F.col(REASON).isNull()

    def node_only(c: str) -> Column:
        return F.when(node, F.col(c))

    return classified.select(
        F.col(SOURCE_FILE),
        F.regexp_extract(SOURCE_FILE, r"updated_date=([^/]+)", 1).alias("partition"),
        F.col("updated_date"),
        F.when(~F.col(REASON).isin(*_NOT_VERSIONS) | node, F.substring_index("_id", "/", -1)).alias(WORK_ID),
        F.col(REASON),
        node_only("_field").alias(FIELD),
        node_only("_title").alias(TITLE),
        F.when(node, abstract_text(F.col("_index"))).alias(SUMMARY),
        node_only("_language").alias(LANGUAGE),
        node_only("_publication_date").alias(PUBLICATION_DATE),
        node_only("_doi").alias(DOI),
        node_only("_references").alias(REFERENCES),
        F.when(F.col(REASON).isin(MALFORMED_JSON, MALFORMED_RECORD), F.substring(CORRUPT_RECORD, 1, DETAIL_CHARS)).alias(
            "detail"
        ),
    )


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
    ranked = marked.filter(F.col("_versions").isNotNull()).withColumn("_older", F.row_number().over(newest_first) > 1)
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


def index_nodes(works: DataFrame, fields: list[str]) -> DataFrame:
    """The nodes of every field with dense ids 0…N−1 per field, in work-id order.

    The ids come from one sort of a slim (field, work id) table; each field's ids are shifted by
    the number of nodes of the fields sorted before it. The node columns then join back.
    """
    require_columns(works, OPENALEX_WORKS, "index_nodes(works)")
    members = works.filter(F.col(REASON).isNull() & F.col(FIELD).isin(list(fields)))
    # \u0001 sorts before any character of a field name, so keys sort by field, then work id.
    keys = members.select(F.concat_ws("\u0001", FIELD, WORK_ID).alias("_key"), FIELD, WORK_ID)
    ranked = dense_index(keys, "_key", "_rank")
    per_field = ranked.groupBy(FIELD).agg(F.min("_rank").alias("first"), F.count("*").alias("n")).collect()
    first = {r[FIELD]: r["first"] for r in per_field}
    shift = F.create_map(*[F.lit(x) for kv in first.items() for x in kv])[F.col(FIELD)] if first else F.lit(0)
    ids = ranked.select(FIELD, WORK_ID, (F.col("_rank") - shift).cast("long").alias(ID))
    return members.join(_small(ids, sum(r["n"] for r in per_field)), [FIELD, WORK_ID]).select(
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
    both_ways = F.explode(F.array(F.struct(F.col(SRC), F.col(DST)), F.struct(F.col(DST).alias(SRC), F.col(SRC).alias(DST))))
    return linked.select(both_ways.alias("_e")).select(F.col(f"_e.{SRC}").alias(SRC), F.col(f"_e.{DST}").alias(DST))


def _field_counts(indexed: DataFrame, pairs: DataFrame) -> dict[str, dict]:
    """Nodes by language and the fate of every reference, per field (two small aggregates)."""
    out: dict[str, dict] = {}
    for r in indexed.groupBy(FIELD, LANGUAGE).agg(
        F.count("*").alias("n"), F.sum(F.coalesce(F.size(REFERENCES), F.lit(0))).alias("refs")
    ).collect():
        c = out.setdefault(r[FIELD], {"languages": {}, "references": 0})
        c["languages"][r[LANGUAGE]] = r["n"]
        c["references"] += int(r["refs"])
    loop = F.col(SRC) == F.col(DST)
    for r in pairs.groupBy(FIELD).agg(
        F.sum("n").alias("internal"), F.sum(F.when(loop, F.col("n"))).alias("self"), F.count(F.when(~loop, 1)).alias("pairs")
    ).collect():
        out[r[FIELD]].update(internal=int(r["internal"]), self=int(r["self"] or 0), pairs=int(r["pairs"]))
    return out


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
    }


@dataclass
class OpenAlexGraphs:
    """Every requested field's graph, the input accounting, and records per part file."""

    graphs: dict[str, FieldGraph]
    records: dict  # {"read": n, "nodes": {field: n}, "dropped": {reason: n}} over all fields
    per_file: dict[str, int]
    problems: list[dict]

    def accounting(self, field: str) -> dict:
        """``read`` = ``kept`` + Σ ``dropped`` for one field's graph (works that are nodes of the
        other requested fields count as ``other_field`` there)."""
        dropped = dict(self.records["dropped"])
        others = sum(n for f, n in self.records["nodes"].items() if f != field)
        if others:
            dropped[OTHER_FIELD] = dropped.get(OTHER_FIELD, 0) + others
        ordered = {r: dropped[r] for r in DROP_REASONS if dropped.get(r)}
        return {"read": self.records["read"], "kept": self.records["nodes"].get(field, 0), "dropped": ordered}


def build_graphs(raw: DataFrame, fields: list[str], include_xpac: bool = False) -> OpenAlexGraphs:
    """One read of the snapshot → a graph per field, plus the accounting of every record."""
    # Materialised once (rows, not columnar cache: cheaper to build, and every later step reads
    # whole rows); everything after this reads it, never the snapshot again.
    works = deduplicate(classify_works(raw, fields, include_xpac).localCheckpoint())
    tally = (
        works.groupBy(SOURCE_FILE, REASON, FIELD)
        .agg(F.count("*").alias("n"), F.first("detail", ignorenulls=True).alias("detail"))
        .collect()
    )
    per_file: dict[str, int] = {}
    nodes = dict.fromkeys(fields, 0)
    dropped: dict[str, int] = {}
    problems = []
    for r in sorted(tally, key=lambda r: (r[SOURCE_FILE], r[REASON] or "")):
        per_file[r[SOURCE_FILE]] = per_file.get(r[SOURCE_FILE], 0) + r["n"]
        if r[REASON] is None:
            nodes[r[FIELD]] += r["n"]
        else:
            dropped[r[REASON]] = dropped.get(r[REASON], 0) + r["n"]
        if r["detail"] is not None and len(problems) < PROBLEMS:
            problems.append({"file": r[SOURCE_FILE], REASON: r[REASON], "records": r["n"], "example": r["detail"]})
    records = {"read": sum(per_file.values()), "nodes": nodes, "dropped": dropped}
    log.info("records read %d: nodes %s, dropped %s", records["read"], nodes, dropped)

    indexed = index_nodes(works, fields).localCheckpoint()
    pairs = citation_pairs(indexed, sum(nodes.values())).localCheckpoint()
    counts = _field_counts(indexed, pairs)
    graphs = {}
    for f in fields:
        c = _graph_counts(counts.get(f, {}))
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
    return OpenAlexGraphs(graphs=graphs, records=records, per_file=per_file, problems=problems)
