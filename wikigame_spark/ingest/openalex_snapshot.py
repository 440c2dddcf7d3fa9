"""Reading an OpenAlex works snapshot: where its part files are, whether they are complete, and
the Spark read of their records.

A snapshot is a local folder, an ``s3://bucket/prefix`` or any Hadoop URI laid out like the
public bucket ``s3://openalex``:

- ``data/works/updated_date=YYYY-MM-DD/part_NNN.gz`` with a Redshift-style ``manifest`` (to 2025);
- ``data/jsonl/works/…/part_NNNN.gz`` and ``data/parquet/works/…/part_NNNN.parquet`` with a
  ``manifest.json`` (2026), Parquet being read when present (far cheaper than JSON);
- or the works folder, one partition or one part file itself.

The listing and the manifest are read on the driver through a store of :mod:`wikigame_spark.stores`
(boto3 for S3: anonymous for the public bucket, the usual AWS credentials and ``--endpoint-url``
otherwise); Spark reads the part files (``s3a://``, configured per bucket to match by
``stores.configure_s3a``, or the local/Hadoop file system). This module only plans and reads.
"""

from __future__ import annotations

import hashlib
import json
import logging
import posixpath
import re
from dataclasses import asdict, dataclass, field
from urllib.parse import urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegralType, MapType, StringType, StructType

from wikigame_spark import parquet
from wikigame_spark.schemas import CORRUPT_RECORD, OPENALEX_RAW, OPENALEX_WORK, SOURCE_FILE
from wikigame_spark.stores import HadoopStore, open_store

log = logging.getLogger(__name__)

JSON_SUFFIXES = (".gz", ".json", ".jsonl", ".json.gz", ".jsonl.gz")
PARQUET_SUFFIX = ".parquet"
MANIFEST_NAMES = ("manifest", "manifest.json")
LAYOUTS = (  # (name, works folder under the snapshot root or its data/ folder, format), preferred first
    ("parquet", "data/parquet/works", "parquet"),
    ("parquet", "parquet/works", "parquet"),
    ("jsonl", "data/jsonl/works", "json"),
    ("jsonl", "jsonl/works", "json"),
    ("legacy", "data/works", "json"),
    ("legacy", "works", "json"),
)
SHOW = 5  # file names quoted in an error message


class SnapshotError(ValueError):
    """A snapshot that cannot be read as asked; the message names the file or URI at fault."""


# --- The plan: which files, against which manifest ----------------------------------------------
@dataclass
class PartFile:
    key: str  # last two path components, e.g. "updated_date=2025-06-11/part_000.gz"
    path: str  # for Spark
    bytes: int
    partition: str  # the updated_date of the folder, "" if none
    manifest_records: int | None = None
    manifest_bytes: int | None = None


@dataclass
class SnapshotPlan:
    """What the job reads and how complete it is; goes into the output manifest."""

    input: str
    layout: str  # parquet | jsonl | legacy | folder | file
    format: str  # json | parquet
    works: str  # the works folder (or the file)
    manifest: str | None
    manifest_sha1: str | None
    manifest_records: int | None
    files: list[PartFile]
    missing: list[str] = field(default_factory=list)  # listed in the manifest, not found
    wrong_size: list[str] = field(default_factory=list)  # found, but not the size the manifest says
    unlisted: list[str] = field(default_factory=list)  # found, not in the manifest: not read
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["files"] = [asdict(f) for f in self.files]
        d["bytes"] = sum(f.bytes for f in self.files)
        return d


def manifest_entries(doc: object, where: str) -> list[tuple[str, int | None, int | None]]:
    """``(url, record_count, content_length)`` of the works files a manifest lists.

    Accepts the Redshift form (``{"entries": [{"url", "meta": {...}}]}``, to 2025) and the 2026
    ``manifest.json`` forms (``{"files": [...]}`` for one entity, or a combined
    ``{"entities": [{"entity": "works", "files": [...]}, ...]}``).
    """
    if not isinstance(doc, dict):
        raise SnapshotError(f"{where}: not a manifest (expected a JSON object)")
    if "entries" in doc:
        entries = doc["entries"]
    elif "files" in doc:
        entries = doc["files"]
    elif "entities" in doc:
        works = [e for e in doc["entities"] if isinstance(e, dict) and e.get("entity") in ("works", "work")]
        if not works:
            names = [e.get("entity") for e in doc["entities"] if isinstance(e, dict)]
            raise SnapshotError(f"{where}: manifest has no works entity (has {names})")
        entries = works[0].get("files") or works[0].get("entries") or []
    else:
        raise SnapshotError(f"{where}: manifest has none of 'entries', 'files', 'entities'")
    out = []
    for i, entry in enumerate(entries):
        if isinstance(entry, str):
            out.append((entry, None, None))
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            raise SnapshotError(f"{where}: entry {i} has no url")
        meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else entry
        out.append((entry["url"], meta.get("record_count"), meta.get("content_length")))
    return out


def manifest_relative(url: str) -> str:
    """Where a manifest URL's file sits relative to the works folder, whatever the bucket: the
    part after ``/works/`` (``updated_date=…/part_000.gz``), else the last two components."""
    path = urlparse(url).path if "://" in url else url
    if "/works/" in path:
        return path.split("/works/", 1)[1]
    return "/".join(path.rstrip("/").split("/")[-2:])


def file_key(rel_or_path: str) -> str:
    return "/".join(rel_or_path.rstrip("/").split("/")[-2:])


def _partition(key: str) -> str:
    m = re.search(r"updated_date=([^/]+)", key)
    return m.group(1) if m else ""


def _is_data(name: str, fmt: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    if base in MANIFEST_NAMES or base.startswith((".", "_")):
        return False
    return base.endswith(PARQUET_SUFFIX) if fmt == "parquet" else base.endswith(JSON_SUFFIXES)


def _find_works(store, root: str, fmt: str) -> tuple[str, str, str, dict[str, int]]:
    """``(layout, format, works folder, listing)``: the snapshot layouts under ``root`` in order
    of preference, else ``root`` itself as a works folder."""
    for layout, sub, layout_fmt in LAYOUTS:
        if fmt not in ("auto", "parquet" if layout_fmt == "parquet" else "jsonl"):
            continue
        works = store.join(root, sub)
        listing = store.list(works)
        if any(_is_data(k, layout_fmt) for k in listing):
            return layout, layout_fmt, works, listing
    listing = store.list(root)
    formats = ["parquet", "json"] if fmt in ("auto", "parquet") else ["json"]
    if fmt == "jsonl":
        formats = ["json"]
    for f in formats:
        if any(_is_data(k, f) for k in listing):
            return "folder", f, root, listing
    raise SnapshotError(
        f"{root}: no OpenAlex works part files ({', '.join(JSON_SUFFIXES)}"
        f"{', ' + PARQUET_SUFFIX if fmt != 'jsonl' else ''}) in it or under "
        f"{', '.join(sub for _, sub, _ in LAYOUTS if sub.startswith('data/'))}"
    )


def _find_manifest(store, works: str, listing: dict[str, int]) -> str | None:
    for name in MANIFEST_NAMES:
        if name in listing:
            return store.join(works, name)
    parent = posixpath.dirname(works.rstrip("/"))
    if posixpath.basename(works.rstrip("/")) == "works" and parent:
        candidate = store.join(parent, "manifest.json")
        if store.is_file(candidate):
            return candidate
    return None


def _listed(names: list[str]) -> str:
    more = f" and {len(names) - SHOW} more" if len(names) > SHOW else ""
    return ", ".join(names[:SHOW]) + more


def plan_snapshot(
    uri: str,
    fmt: str = "auto",
    endpoint_url: str = "",
    allow_partial: bool = False,
    spark: SparkSession | None = None,
    store=None,
) -> SnapshotPlan:
    """List the snapshot, read its manifest, and check every listed file is there at its size.

    A manifest entry whose file is missing or of another size is an error naming it, or with
    ``allow_partial`` a warning (and the file is not read). Files the manifest does not list are
    not read (an interrupted sync leaves stale ones behind); without a manifest every part file
    is read.
    """
    if store is None:
        store, root = open_store(uri, endpoint_url, spark)
    else:
        root = uri
    if store.is_file(root):
        base = root.rsplit("/", 1)[-1]
        file_fmt = "parquet" if base.endswith(PARQUET_SUFFIX) else "json"
        key = file_key(root)
        part = PartFile(key, store.spark_path(root), store.size(root), _partition(key))
        return SnapshotPlan(uri, "file", file_fmt, root, None, None, None, [part], warnings=["no manifest: one file"])

    layout, data_fmt, works, listing = _find_works(store, root, fmt)
    data = {rel: size for rel, size in listing.items() if _is_data(rel, data_fmt)}
    manifest_path = _find_manifest(store, works, listing)
    warnings: list[str] = []
    missing: list[str] = []
    wrong_size: list[str] = []
    unlisted: list[str] = []
    if manifest_path is None:
        warnings.append(f"{works}: no manifest; reading all {len(data)} part files found, completeness unchecked")
        chosen = {rel: (None, None) for rel in data}
        sha1 = total = None
    else:
        raw = store.read(manifest_path)
        sha1 = hashlib.sha1(raw).hexdigest()
        try:
            doc = json.loads(raw)
        except ValueError as e:
            raise SnapshotError(f"{manifest_path}: manifest is not JSON: {e}") from e
        entries = manifest_entries(doc, manifest_path)
        chosen = {}
        for url, records, nbytes in entries:
            rel = manifest_relative(url)
            if not _is_data(rel, data_fmt):
                continue
            if rel not in data:
                missing.append(rel)
            elif nbytes is not None and data[rel] != nbytes:
                wrong_size.append(f"{rel} ({data[rel]} bytes, manifest says {nbytes})")
            else:
                chosen[rel] = (records, nbytes)
        unlisted = sorted(set(data) - {manifest_relative(u) for u, _, _ in entries})
        total = sum(r for _, r, _ in entries if r is not None) if entries else None
        if missing or wrong_size:
            problem = []
            if missing:
                problem.append(f"{len(missing)} of its {len(entries)} files are missing: {_listed(missing)}")
            if wrong_size:
                problem.append(f"{len(wrong_size)} have another size: {_listed(wrong_size)}")
            message = f"{manifest_path}: " + "; ".join(problem)
            if not allow_partial:
                raise SnapshotError(message + " (pass --allow-partial to build from the files present)")
            warnings.append(message + "; building from the files present (--allow-partial)")
        if unlisted:
            warnings.append(f"{works}: {len(unlisted)} part files not in the manifest, not read: {_listed(unlisted)}")
    files = []
    for rel in sorted(chosen):
        records, nbytes = chosen[rel]
        path = store.join(works, rel)
        key = file_key(path)
        files.append(PartFile(key, store.spark_path(path), data[rel], _partition(key), records, nbytes))
    if not files:
        raise SnapshotError(f"{works}: none of the manifest's part files is present")
    keys = [f.key for f in files]
    if len(set(keys)) != len(keys):
        raise SnapshotError(f"{works}: part files are not laid out one folder per updated_date (names repeat)")
    for w in warnings:
        log.warning(w)
    return SnapshotPlan(
        input=uri,
        layout=layout,
        format=data_fmt,
        works=works if isinstance(store, HadoopStore) else store.spark_path(works),
        manifest=manifest_path
        and (manifest_path if isinstance(store, HadoopStore) else store.spark_path(manifest_path)),
        manifest_sha1=sha1,
        manifest_records=total,
        files=files,
        missing=missing,
        wrong_size=wrong_size,
        unlisted=unlisted,
        warnings=warnings,
    )


def check_record_counts(plan: SnapshotPlan, counts: dict[str, int], allow_partial: bool) -> list[str]:
    """Compare the records read per file (``{file key: n}``) with the manifest; a difference is an
    error naming the files, or with ``allow_partial`` a warning (returned and logged)."""
    differ = []
    for f in plan.files:
        got = counts.get(f.key, 0)
        if f.manifest_records is not None and got != f.manifest_records:
            differ.append(f"{f.key} ({got} records, manifest says {f.manifest_records})")
    if not differ:
        return []
    message = f"{plan.manifest}: {len(differ)} files hold another number of records: {_listed(differ)}"
    if not allow_partial:
        raise SnapshotError(message + " (pass --allow-partial to build anyway)")
    log.warning(message)
    return [message]


# --- Spark side -----------------------------------------------------------------------------------
def _file_key_column() -> F.Column:
    # String functions, not a regular expression: this runs once per record.
    return F.substring_index(F.col("_metadata.file_path"), "/", -2)


def _integer_positions(t) -> bool:
    return (
        isinstance(t, MapType)
        and isinstance(t.keyType, StringType)
        and isinstance(t.valueType, ArrayType)
        and isinstance(t.valueType.elementType, IntegralType)
    )


def _parquet_columns(spark: SparkSession, first_file: str) -> tuple[StructType, list[F.Column]]:
    """Explicit read schema for Parquet part files and the casts to the record contract.

    The needed columns are read with the types the files declare (from one footer) and cast to
    :data:`OPENALEX_WORK`, so a date stored as DATE or an abstract stored as JSON text still loads.
    """
    declared = {f.name: f for f in parquet.read_files(spark, [first_file]).schema.fields}
    read_fields, columns = [], []
    for want in OPENALEX_WORK.fields:
        have = declared.get(want.name)
        if have is None:
            columns.append(F.lit(None).cast(want.dataType).alias(want.name))
            continue
        if have.dataType == want.dataType:
            read_fields.append(want)
            columns.append(F.col(want.name))
        elif isinstance(want.dataType, MapType) and isinstance(have.dataType, StringType):
            read_fields.append(have)
            columns.append(F.from_json(F.col(want.name), want.dataType).alias(want.name))
        elif _integer_positions(have.dataType):
            # Positions as another integer type (int64 from pyarrow): read as they are; the stage
            # casts the indexes of nodes only, not every record's.
            read_fields.append(have)
            columns.append(F.col(want.name))
        elif isinstance(want.dataType, StructType) and isinstance(have.dataType, StructType):
            read_fields.append(want)  # nested fields are pruned to ours by name
            columns.append(F.col(want.name))
        else:
            read_fields.append(have)
            columns.append(F.col(want.name).cast(want.dataType).alias(want.name))
    return StructType(read_fields), columns


def read_works(spark: SparkSession, plan: SnapshotPlan) -> DataFrame:
    """The snapshot's records as :data:`OPENALEX_RAW`, with the explicit works schema.

    JSON lines: a line that is not valid JSON, or whose fields do not fit the schema, keeps its
    text in ``_corrupt_record`` (the stage classifies it). Blank lines are not records.
    """
    paths = [f.path for f in plan.files]
    if plan.format == "parquet":
        schema, columns = _parquet_columns(spark, paths[0])
        df = parquet.read_files(spark, paths, schema)
        return df.select(
            *columns, F.lit(None).cast("string").alias(CORRUPT_RECORD), _file_key_column().alias(SOURCE_FILE)
        )
    schema = StructType([*OPENALEX_WORK.fields, OPENALEX_RAW[CORRUPT_RECORD]])
    df = (
        spark.read.schema(schema)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_RECORD)
        .json(paths)
    )
    return df.select(*OPENALEX_WORK.fieldNames(), CORRUPT_RECORD, _file_key_column().alias(SOURCE_FILE))
