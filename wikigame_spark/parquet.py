"""Tables as Parquet: written and read with the contract's explicit schema, pyarrow's reads in the
workers checked page by page, and the identity of a table's part files for manifests."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import posixpath
from collections.abc import Iterator

import pyarrow.dataset as ds
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from wikigame_spark.storage import Folder
from wikigame_spark.storage import arrow as arrow_path

log = logging.getLogger(__name__)


def parquet_format() -> ds.ParquetFileFormat:
    """Parquet as pyarrow reads the project's tables: each page checked against the CRC Spark
    wrote with it (parquet-mr's default), as Spark's reads are (``parquet.page.verify-checksum``
    in conf/spark-defaults.conf), so a flipped bit is an error naming the file, not a wrong value."""
    return ds.ParquetFileFormat(
        default_fragment_scan_options=ds.ParquetFragmentScanOptions(page_checksum_verification=True)
    )


class CorruptPartFile(ValueError):
    """A Parquet page whose bytes no longer match the checksum written with them."""


@contextlib.contextmanager
def checked_pages(table: str) -> Iterator[None]:
    """pyarrow's checksum failure while reading the table folder ``table`` as a
    :class:`CorruptPartFile` naming the part file (found by reading each again)."""
    try:
        yield
    except OSError as e:
        if "checksum verification failed" not in str(e):
            raise
        fs, p = arrow_path(table)
        bad = "a part file"
        for part in ds.dataset(p, filesystem=fs, format="parquet").files:
            try:
                ds.dataset(part, filesystem=fs, format=parquet_format()).to_table()
            except OSError:
                bad = f"part file {posixpath.basename(part)}"
                break
        raise CorruptPartFile(
            f"{table}: {bad}: a Parquet page does not match the checksum written with it (changed since "
            "written); rebuild the output"
        ) from e


def read_columns(path: str, columns: list[str]):
    """A Parquet table directory's columns as a pyarrow Table (on a worker, or the driver)."""
    fs, p = arrow_path(path)
    with checked_pages(path):
        return ds.dataset(p, filesystem=fs, format=parquet_format()).to_table(columns=columns)


def _check_columns(df: DataFrame, schema: StructType, folder: Folder) -> None:
    got = [(f.name, f.dataType) for f in df.schema.fields]
    want = [(f.name, f.dataType) for f in schema.fields]
    if got != want:
        raise ValueError(f"{folder.root}: table has columns {got}, contract says {want}")


def write_table(df: DataFrame, table: Folder, schema: StructType) -> None:
    """Write the table folder ``table`` after checking the frame has exactly the contract's
    columns and types."""
    _check_columns(df, schema, table)
    df.write.mode("error").parquet(table.spark_path())


def read_table(spark: SparkSession, table: Folder | list[Folder], schema: StructType) -> DataFrame:
    """Read Parquet with the contract's explicit schema (never inferred): one table folder, or
    several as one (none: an empty table)."""
    tables = [table] if isinstance(table, Folder) else list(table)
    paths = [t.spark_path() for t in tables]
    return spark.read.schema(schema).parquet(*paths) if paths else spark.createDataFrame([], schema)


def read_files(spark: SparkSession, paths: list[str], schema: StructType | None = None) -> DataFrame:
    """Parquet files that are not a table of this project (a source snapshot's), with ``schema``
    or, without one, as their footers declare."""
    reader = spark.read.schema(schema) if schema is not None else spark.read
    return reader.parquet(*paths)


def _file_identity(path: str) -> dict:
    digest = hashlib.sha1()
    size = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
            size += len(block)
    return {"path": path, "bytes": size, "sha1": digest.hexdigest()}


def file_identities(spark: SparkSession, paths: list[str]) -> list[dict]:
    """Path, size and SHA-1 of each input file, hashed in parallel on the executors."""
    if not paths:
        return []
    rdd = spark.sparkContext.parallelize(paths, len(paths))
    return sorted(rdd.map(_file_identity).collect(), key=lambda d: d["path"])


def write_tables(folder: Folder, tables: dict) -> None:
    """Write ``{name: (DataFrame, schema)}`` as the tables of ``folder`` (a staging folder)."""
    for name, (df, schema) in tables.items():
        write_table(df, folder.sub(name), schema)


def write_json_lines(df: DataFrame, folder: Folder, schema: StructType) -> None:
    """Write ``folder`` as JSON lines part files (one object per row: what Hugging Face's datasets
    library and TRL read with ``load_dataset("json", data_files=".../*.json")``), after checking
    the frame has exactly the contract's columns and types. Every line has every key, a null one
    as ``null``: a reader infers one schema from the first lines it sees."""
    _check_columns(df, schema, folder)
    df.write.mode("error").option("compression", "none").option("ignoreNullFields", "false").json(folder.spark_path())


def read_json_lines(spark: SparkSession, folder: Folder, schema: StructType) -> DataFrame:
    """A folder written by :func:`write_json_lines`, read with its contract's schema."""
    return spark.read.schema(schema).json(folder.spark_path())
