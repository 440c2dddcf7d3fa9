"""Reading and writing tables, manifests and output directories.

Everything goes through Hadoop's FileSystem API, so the same code writes to a local disk,
HDFS, DBFS or S3 (``s3a://``). An output directory is written under a staging name and renamed
into place only when complete, so a failed run leaves nothing that looks finished.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import subprocess
import uuid
from collections.abc import Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

import wikigame_spark

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"


class OutputExistsError(FileExistsError):
    """The output directory exists and ``--overwrite`` was not given."""


def filesystem(spark: SparkSession, path: str):
    """``(Hadoop FileSystem, Path)`` of a path on any store Spark reads (local, S3, DBFS, HDFS)."""
    jvm = spark.sparkContext._jvm
    jpath = jvm.org.apache.hadoop.fs.Path(path)
    return jpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), jpath


def exists(spark: SparkSession, path: str) -> bool:
    fs, jpath = filesystem(spark, path)
    return fs.exists(jpath)


def delete(spark: SparkSession, path: str) -> None:
    fs, jpath = filesystem(spark, path)
    if fs.exists(jpath):
        fs.delete(jpath, True)


def write_bytes(spark: SparkSession, path: str, data: bytes) -> None:
    fs, jpath = filesystem(spark, path)
    out = fs.create(jpath, True)
    try:
        out.write(bytearray(data))
    finally:
        out.close()


def write_text(spark: SparkSession, path: str, text: str) -> None:
    write_bytes(spark, path, text.encode("utf-8"))


def read_text(spark: SparkSession, path: str) -> str:
    fs, jpath = filesystem(spark, path)
    if not fs.exists(jpath):
        raise FileNotFoundError(f"{path}: not found")
    stream = fs.open(jpath)
    jvm = spark.sparkContext._jvm
    try:
        return jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()


def write_json(spark: SparkSession, path: str, obj: dict) -> None:
    write_text(spark, path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_json(spark: SparkSession, path: str) -> dict:
    return json.loads(read_text(spark, path))


def read_manifest(spark: SparkSession, directory: str) -> dict:
    """The manifest of a finished output directory; its absence means the output is incomplete."""
    path = f"{directory.rstrip('/')}/{MANIFEST}"
    if not exists(spark, path):
        raise FileNotFoundError(f"{directory}: no {MANIFEST}; not a finished wikigame-spark output")
    return read_json(spark, path)


@contextlib.contextmanager
def staged_output(spark: SparkSession, path: str, overwrite: bool) -> Iterator[str]:
    """Yield a staging directory that replaces ``path`` only if the block completes."""
    path = path.rstrip("/")
    if exists(spark, path) and not overwrite:
        raise OutputExistsError(f"{path} exists; pass --overwrite to replace it")
    staging = f"{path}._staging-{uuid.uuid4().hex[:8]}"
    try:
        yield staging
    except BaseException:
        delete(spark, staging)
        raise
    fs, jstaging = filesystem(spark, staging)
    _, jpath = filesystem(spark, path)
    if fs.exists(jpath):
        fs.delete(jpath, True)
    parent = jpath.getParent()
    if parent is not None and not fs.exists(parent):
        fs.mkdirs(parent)
    if not fs.rename(jstaging, jpath):
        raise OSError(f"could not move {staging} to {path}")


def write_table(df: DataFrame, path: str, schema: StructType) -> None:
    """Write Parquet after checking the frame has exactly the contract's columns and types."""
    got = [(f.name, f.dataType) for f in df.schema.fields]
    want = [(f.name, f.dataType) for f in schema.fields]
    if got != want:
        raise ValueError(f"{path}: table has columns {got}, contract says {want}")
    df.write.mode("error").parquet(path)


def read_table(spark: SparkSession, path: str, schema: StructType) -> DataFrame:
    """Read Parquet with the contract's explicit schema (never inferred)."""
    return spark.read.schema(schema).parquet(path)


def code_version() -> str:
    """Package version plus the git commit when running from a checkout."""
    here = os.path.dirname(os.path.abspath(wikigame_spark.__file__))
    try:
        commit = subprocess.run(
            ["git", "-C", here, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{wikigame_spark.__version__}+{commit}" if commit else wikigame_spark.__version__


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


def write_graph(spark: SparkSession, directory: str, tables: dict, manifest: dict, overwrite: bool) -> dict:
    """Write ``{name: (DataFrame, schema)}`` and the manifest as one atomic output directory."""
    with staged_output(spark, directory, overwrite) as staging:
        for name, (df, schema) in tables.items():
            write_table(df, f"{staging}/{name}", schema)
        write_json(spark, f"{staging}/{MANIFEST}", manifest)
    return {name: f"{directory.rstrip('/')}/{name}" for name in tables}


def current_cache(spark: SparkSession, path: str, source_created: str | None) -> dict | None:
    """The manifest of the cache at ``path`` if it was built from this build of its source."""
    try:
        done = read_manifest(spark, path)
    except FileNotFoundError:
        return None
    if done.get("source_created") != source_created:
        log.info("%s was built from another build of its source; rebuilding", path)
        return None
    return done


def write_cache(spark: SparkSession, path: str, table: str, df: DataFrame, schema: StructType, manifest: dict) -> None:
    """Write a cache (one table and its manifest) atomically, replacing any older one."""
    with staged_output(spark, path, overwrite=True) as staging:
        write_table(df, f"{staging}/{table}", schema)
        write_json(spark, f"{staging}/{MANIFEST}", {**manifest, "code_version": code_version()})
