"""Parquet part files classified in the Python workers with pyarrow: the fast way in.

Spark's Parquet reader turns every record's abstract index into JVM rows before any rule can
skip it, and the rules then run row by row (about 10 s per million records on 2 cores, twice
the whole reading). Here a task opens its part file with pyarrow, decides each record's fate
from the light columns with Arrow kernels, and reads the abstract and references of the records
still in the running only, rebuilding their abstracts in whole arrays. The result is the same
:data:`~wikigame_spark.schemas.OPENALEX_WORKS` table as
:func:`~wikigame_spark.ingest.openalex.classify_works` gives for the same files (the tests hold
both to the rules of :mod:`~wikigame_spark.ingest.openalex_records`).

Files the workers can open themselves take this way: local paths and ``s3a://`` (through
pyarrow's S3 file system, with the settings boto3 used for the bucket). Other URIs, JSON lines,
and Parquet files whose columns are not of the published types take the Spark way.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema

from wikigame_spark import stores
from wikigame_spark.ingest.openalex_records import (
    ARTICLE,
    MISSING_ABSTRACT,
    MISSING_FIELD,
    MISSING_ID,
    MISSING_LANGUAGE,
    MISSING_TITLE,
    OTHER_FIELD,
    WHITESPACE,
    WRONG_TYPE,
    XPAC,
    rebuild_abstract,
)
from wikigame_spark.ingest.openalex_snapshot import SnapshotError, SnapshotPlan
from wikigame_spark.schemas import (
    DOI,
    LANGUAGE,
    OPENALEX_WORKS,
    PUBLICATION_DATE,
    REFERENCES,
    SOURCE_FILE,
    SUMMARY,
    TITLE,
    WORK_ID,
)

# Rules decided from the light columns, first match wins (the order of openalex_records).
_CODES = (
    None,
    MISSING_ID,
    XPAC,
    WRONG_TYPE,
    MISSING_FIELD,
    OTHER_FIELD,
    MISSING_TITLE,
    MISSING_ABSTRACT,
    MISSING_LANGUAGE,
)
_REASONS = pa.array(_CODES, pa.string())
_IN_FIELD = (0, _CODES.index(MISSING_TITLE), _CODES.index(MISSING_ABSTRACT), _CODES.index(MISSING_LANGUAGE))
LIGHT = ("id", "updated_date", "is_xpac", "type", "primary_topic", "title", "language")
HEAVY = ("abstract_inverted_index", "referenced_works", "publication_date", "doi")


@dataclass(frozen=True)
class Rules:
    """What the workers need to classify: the fields wanted and how to open the files."""

    fields: tuple[str, ...]
    include_xpac: bool = False
    s3: dict = field(default_factory=dict)  # pyarrow S3FileSystem arguments, for s3a:// files

    def open(self, path: str):
        """The part file, the abstracts' words read as a dictionary: most records' abstracts
        are never looked at, and decoding their words is most of the reading."""
        import pyarrow.parquet as pq

        source = stores.open_input_file(path, self.s3)
        footer = pq.read_metadata(source)
        words = [
            c.path
            for c in footer.schema
            if c.path.startswith("abstract_inverted_index.") and c.physical_type == "BYTE_ARRAY"
        ]
        return pq.ParquetFile(source, metadata=footer, read_dictionary=words)


def _published_type(name: str, t: pa.DataType) -> bool:
    """Whether a column of a part file has the type the pyarrow way reads."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if name == "abstract_inverted_index":
        return pa.types.is_map(t) and _string(t.key_type) and pa.types.is_integer(t.item_type.value_type)
    if name == "referenced_works":
        return pa.types.is_list(t) and _string(t.value_type)
    if name == "is_xpac":
        return pa.types.is_boolean(t)
    if name == "primary_topic":
        inner = t.field("field").type if pa.types.is_struct(t) and t.get_field_index("field") >= 0 else None
        named = inner is not None and pa.types.is_struct(inner) and inner.get_field_index("display_name") >= 0
        return named and _string(inner.field("display_name").type)
    return _string(t)


def _string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or (pa.types.is_dictionary(t) and _string(t.value_type))


def arrow_ready(plan: SnapshotPlan, rules: Rules) -> str | None:
    """``None`` when the workers can read the plan's files themselves, else why not (the first
    file's footer, read as the workers would, tells the column types)."""
    if plan.format != "parquet":
        return f"{plan.format} files"
    schemes = {f.path.split("://", 1)[0] for f in plan.files}
    if not schemes <= {"file", "s3a"}:
        return f"{', '.join(sorted(schemes - {'file', 's3a'}))}:// files"
    odd = _odd_columns(rules.open(plan.files[0].path).schema_arrow)
    return f"columns of another type: {', '.join(odd)}" if odd else None


def _odd_columns(schema: pa.Schema) -> list[str]:
    """The columns this way reads that a part file holds in another type."""
    return [n for n in (*LIGHT, *HEAVY) if n in schema.names and not _published_type(n, schema.field(n).type)]


def scan_parquet(spark: SparkSession, plan: SnapshotPlan, rules: Rules) -> DataFrame:
    """Every record of the plan's Parquet files as :data:`OPENALEX_WORKS`.

    One task per core, each given files of about the same total size (largest first, each to
    the least loaded task): a task costs a Python worker set-up, a file does not.
    """
    tasks = min(len(plan.files), spark.sparkContext.defaultParallelism)
    shares: list[list[tuple[str, str]]] = [[] for _ in range(tasks)]
    loads = [0] * tasks
    for f in sorted(plan.files, key=lambda f: (-f.bytes, f.key)):
        least = loads.index(min(loads))
        shares[least].append((f.key, f.path))
        loads[least] += f.bytes
    listed = spark.sparkContext.parallelize(shares, tasks).map(lambda share: (share,))
    return listed.toDF("files array<struct<key: string, path: string>>").mapInArrow(
        lambda batches: _scan(batches, rules), OPENALEX_WORKS
    )


_OUT = to_arrow_schema(OPENALEX_WORKS)


def _scan(batches: Iterator[pa.RecordBatch], rules: Rules) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for share in batch.column(0).to_pylist():
            for part in share:
                parquet = rules.open(part["path"])
                present = set(parquet.schema_arrow.names)
                odd = _odd_columns(parquet.schema_arrow)
                if odd:  # the first file's types decided the way in; this one differs
                    raise SnapshotError(f"{part['key']}: columns {odd} are not of the first part file's types")
                heavy = [c for c in HEAVY if c in present]
                for group in range(parquet.num_row_groups):
                    light = parquet.read_row_group(group, columns=[c for c in LIGHT if c in present])
                    rows = partial(_rows_of, parquet, group, heavy)
                    yield from classify_table(light, rows, part["key"], rules).to_batches()


def _rows_of(parquet, group: int, columns: list[str], rows: np.ndarray) -> pa.Table:
    return parquet.read_row_group(group, columns=columns).take(pa.array(rows, pa.int64()))


def _column(table: pa.Table, name: str, type_: pa.DataType) -> pa.Array:
    if name not in table.column_names:
        return pa.nulls(table.num_rows, type_)
    column = table.column(name).combine_chunks()
    return column if name in ("abstract_inverted_index", "primary_topic") else column.cast(type_)


def _blank(values: pa.Array) -> np.ndarray:
    """:func:`~wikigame_spark.ingest.openalex_records.blank` for a whole array."""
    empty = pc.equal(pc.utf8_trim(values, characters=WHITESPACE), "")
    return pc.fill_null(empty, True).to_numpy(zero_copy_only=False)


def _field(topic: pa.Array) -> pa.Array:
    named = isinstance(topic.type, pa.StructType) and topic.type.get_field_index("field") >= 0
    inner = pc.struct_field(topic, "field") if named else None
    if inner is None or inner.type.get_field_index("display_name") < 0:
        return pa.nulls(len(topic), pa.string())
    return pc.struct_field(inner, "display_name").cast(pa.string())


def classify_table(light: pa.Table, heavy, key: str, rules: Rules) -> pa.Table:
    """One row group's records → :data:`OPENALEX_WORKS` rows. ``heavy(rows)`` reads the heavy
    columns of the given rows (only records that pass every rule before the abstract's)."""
    n = light.num_rows
    ids = _column(light, "id", pa.string())
    work_field = _field(_column(light, "primary_topic", pa.null()))
    tests = [  # (code, holds), in rule order
        (MISSING_ID, _blank(ids)),
        (XPAC, np.zeros(n, bool) if rules.include_xpac else _true(_column(light, "is_xpac", pa.bool_()))),
        (WRONG_TYPE, ~_true(pc.equal(_column(light, "type", pa.string()), ARTICLE))),
        (MISSING_FIELD, work_field.is_null().to_numpy(zero_copy_only=False)),
        (OTHER_FIELD, ~_true(pc.is_in(work_field, pa.array(rules.fields, pa.string())))),
        (MISSING_TITLE, _blank(_column(light, TITLE, pa.string()))),
    ]
    code = np.zeros(n, np.int8)
    for reason, holds in reversed(tests):
        code[holds] = _CODES.index(reason)
    rows = np.flatnonzero(code == 0)
    nodes = heavy(rows)
    summary = rebuild_abstracts(_column(nodes, "abstract_inverted_index", pa.null()))
    language = _column(light, LANGUAGE, pa.string()).take(pa.array(rows, pa.int64()))
    later = np.where(
        summary.is_null().to_numpy(zero_copy_only=False),
        _CODES.index(MISSING_ABSTRACT),
        np.where(_blank(language), _CODES.index(MISSING_LANGUAGE), 0),
    )
    code[rows] = later
    is_node = code == 0
    in_field = np.isin(code, _IN_FIELD)

    def spread(values: pa.Array, at: np.ndarray, where: np.ndarray) -> pa.Array:
        """``values`` (one per row of ``at``) placed at those rows, null elsewhere and where
        ``where`` is false."""
        slot = np.full(n, -1, np.int64)
        slot[at] = np.arange(len(at))
        slot[~where] = -1
        return values.take(pa.array(slot, mask=slot < 0))

    def node_column(name: str, type_: pa.DataType) -> pa.Array:
        return spread(_column(nodes, name, type_), rows, is_node)

    # The folder's updated_date, as the Spark way reads it off the file key.
    partition = key.split("/", 1)[0]
    partition = partition[len("updated_date=") :] if partition.startswith("updated_date=") else ""
    has_id = code != _CODES.index(MISSING_ID)
    columns = {
        SOURCE_FILE: pa.array([key] * n, pa.string()),
        "partition": pa.array([partition] * n, pa.string()),
        "updated_date": _column(light, "updated_date", pa.string()),
        WORK_ID: pc.if_else(pa.array(has_id), pc.replace_substring_regex(ids, r"(?s)^.*/", ""), None),
        "reason": _REASONS.take(pa.array(code)),
        "field": pc.if_else(pa.array(in_field), work_field, None),
        TITLE: pc.if_else(pa.array(is_node), _column(light, TITLE, pa.string()), None),
        SUMMARY: spread(summary, rows, is_node),
        LANGUAGE: spread(language, rows, is_node),
        PUBLICATION_DATE: node_column(PUBLICATION_DATE, pa.string()),
        DOI: node_column(DOI, pa.string()),
        REFERENCES: node_column("referenced_works", pa.list_(pa.string())),
        "detail": pa.nulls(n, pa.string()),
    }
    return pa.Table.from_arrays(list(columns.values()), schema=_OUT)


def _true(values: pa.Array) -> np.ndarray:
    return pc.fill_null(values, False).to_numpy(zero_copy_only=False)


def rebuild_abstracts(index: pa.Array) -> pa.Array:
    """:func:`~wikigame_spark.ingest.openalex_records.rebuild_abstract` for a whole array of
    inverted indexes (``map<string, list<int>>``); null where no word has a position.

    An index whose positions are exactly 0…n−1, each once (as OpenAlex builds them), places its
    words by position in one scatter over the whole array; any other index is rebuilt by the
    rule itself, one by one.
    """
    n = len(index)
    if n == 0 or pa.types.is_null(index.type):
        return pa.nulls(n, pa.string())
    bounds = index.offsets.to_numpy()
    lo, hi = int(bounds[0]), int(bounds[-1])
    words, lists = index.keys.slice(lo, hi - lo), index.items.slice(lo, hi - lo)
    word_row = np.repeat(np.arange(n), np.diff(bounds))
    word_row[np.repeat(~index.is_valid().to_numpy(zero_copy_only=False), np.diff(bounds))] = -1
    positions = pc.list_flatten(lists)
    word = pc.list_parent_indices(lists).to_numpy()
    row = word_row[word]
    placed = positions.is_valid().to_numpy(zero_copy_only=False) & (row >= 0)
    pos = positions.fill_null(0).to_numpy().astype(np.int64)
    word, row, pos = word[placed], row[placed], pos[placed]
    counts = np.bincount(row, minlength=n)
    start = np.cumsum(counts) - counts
    inside = (pos >= 0) & (pos < counts[row])
    slot = start[row] + np.where(inside, pos, 0)
    total = int(counts.sum())
    hits = np.bincount(slot[inside], minlength=total)
    dense = np.bincount(row[~inside], minlength=n) == 0  # every position falls in 0…n−1
    dense[np.repeat(np.arange(n), counts)[hits != 1]] = False  # and each is taken once
    order = np.zeros(total, np.int64)
    fast = inside & dense[row]
    order[slot[fast]] = word[fast]
    ends = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    placed = words.take(pa.array(order)).cast(pa.string())  # decodes the words of these rows only
    text = pc.binary_join(pa.ListArray.from_arrays(pa.array(ends), placed), " ")
    text = pc.if_else(pa.array(counts > 0), text, None)
    odd = np.flatnonzero(~dense & (counts > 0))
    if len(odd):
        rebuilt = [rebuild_abstract(dict(index[int(i)].as_py())) for i in odd]
        mask = np.zeros(n, bool)
        mask[odd] = True
        text = pc.replace_with_mask(text, pa.array(mask), pa.array(rebuilt, pa.string()))
    return text
