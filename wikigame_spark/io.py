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
import socket
import subprocess
import uuid
from collections.abc import Iterator

import pyarrow.dataset as ds
import pyarrow.fs as pafs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

import wikigame_spark

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"


def arrow_path(path: str) -> tuple[pafs.FileSystem, str]:
    """A pyarrow filesystem and path for a Hadoop-style path (local, file:, s3a:, hdfs:)."""
    if path.startswith("s3a://"):
        path = "s3://" + path[len("s3a://") :]
    if "://" not in path:
        return pafs.LocalFileSystem(), path
    return pafs.FileSystem.from_uri(path)


def read_columns(path: str, columns: list[str]):
    """A Parquet table directory's columns as a pyarrow Table."""
    fs, p = arrow_path(path)
    return ds.dataset(p, filesystem=fs, format="parquet").to_table(columns=columns)


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


def manifest_sha1(manifest: dict) -> str:
    """The digest that names an output by its manifest (games and play runs record their graph's)."""
    return hashlib.sha1(json.dumps(manifest, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def read_manifest(spark: SparkSession, directory: str) -> dict:
    """The manifest of a finished output directory; its absence means the output is incomplete."""
    path = f"{directory.rstrip('/')}/{MANIFEST}"
    if not exists(spark, path):
        raise FileNotFoundError(f"{directory}: no {MANIFEST}; not a finished wikigame-spark output")
    return read_json(spark, path)


def _staging_name(path: str) -> str:
    """A hidden sibling of ``path`` (readers and ``part-*`` globs skip names starting with a dot)."""
    parent, _, name = path.rpartition("/")
    return f"{parent}/.{name}._staging-{uuid.uuid4().hex[:8]}" if parent else f".{name}._staging-{uuid.uuid4().hex[:8]}"


@contextlib.contextmanager
def staged_output(spark: SparkSession, path: str, overwrite: bool) -> Iterator[str]:
    """Yield a staging directory that replaces ``path`` only if the block completes.

    An older ``path`` is renamed aside, the new one renamed in, then the old one deleted: a reader
    never sees a half-written output, and ``path`` is absent only between two renames.
    """
    path = path.rstrip("/")
    if exists(spark, path) and not overwrite:
        raise OutputExistsError(f"{path} exists; pass --overwrite to replace it")
    staging = _staging_name(path)
    try:
        yield staging
    except BaseException:
        delete(spark, staging)
        raise
    fs, jstaging = filesystem(spark, staging)
    _, jpath = filesystem(spark, path)
    old = None
    if fs.exists(jpath):
        old = filesystem(spark, _staging_name(path).replace("._staging-", "._replaced-"))[1]
        if not fs.rename(jpath, old):
            raise OSError(f"could not move the older {path} aside")
    parent = jpath.getParent()
    if parent is not None and not fs.exists(parent):
        fs.mkdirs(parent)
    if not fs.rename(jstaging, jpath):
        raise OSError(f"could not move {staging} to {path}")
    if old is not None:
        fs.delete(old, True)


class OutputBusyError(RuntimeError):
    """Another live process is writing the same output."""


def _process_start(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (tells a live owner from a later process given its id)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(owner: dict) -> bool:
    """Whether the lock's owner still runs; an owner on another host is assumed alive."""
    if owner.get("host") != socket.gethostname():
        return True
    pid = int(owner.get("pid") or 0)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    started = owner.get("pid_started")
    return started is None or _process_start(pid) in (None, started)


class _LocalLockFile:
    def __init__(self, path: str) -> None:
        self.path = path[len("file:") :] if path.startswith("file:") else path

    def create(self, text: str) -> bool:
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        tmp = f"{self.path}.{uuid.uuid4().hex[:8]}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            os.link(tmp, self.path)  # atomic, and fails if the lock exists: the content is complete
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)

    def read(self) -> str | None:
        try:
            with open(self.path, encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def take_stale(self, seen: str) -> bool:
        """Remove a dead owner's lock; False if it changed meanwhile (another process took it)."""
        aside = f"{self.path}.stale-{uuid.uuid4().hex[:8]}"
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return True
        with open(aside, encoding="utf-8") as f:
            moved = f.read()
        if moved != seen:  # a live owner's lock was taken in between: give it back
            with contextlib.suppress(FileExistsError):
                os.link(aside, self.path)
            os.unlink(aside)
            return False
        os.unlink(aside)
        return True

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


class _HadoopLockFile:
    """Hadoop's create without overwrite: atomic on HDFS; on object stores only as atomic as the store."""

    def __init__(self, spark: SparkSession, path: str) -> None:
        self.spark, self.path = spark, path

    def create(self, text: str) -> bool:
        fs, jpath = filesystem(self.spark, self.path)
        try:
            out = fs.create(jpath, False)
        except Exception as e:  # FileAlreadyExistsException arrives as a Py4J error
            if "AlreadyExists" in str(e) or fs.exists(jpath):
                return False
            raise
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()
        return True

    def read(self) -> str | None:
        try:
            return read_text(self.spark, self.path)
        except FileNotFoundError:
            return None

    def take_stale(self, seen: str) -> bool:
        if self.read() == seen:
            delete(self.spark, self.path)
        return True

    def remove(self) -> None:
        delete(self.spark, self.path)


@contextlib.contextmanager
def output_lock(path: str, spark: SparkSession | None = None, what: str = "output") -> Iterator[dict]:
    """One writer per output: ``<path>.lock`` names the owner (host, pid, its start time) and is
    created atomically. A live owner's lock refuses (:class:`OutputBusyError`); a dead owner's
    (a killed process on this host) is taken over. Local paths need no session."""
    lock_path = f"{path.rstrip('/')}.lock"
    is_local = "://" not in lock_path and not lock_path.startswith(("dbfs:", "s3", "hdfs:", "gs:", "abfs"))
    lock = _LocalLockFile(lock_path) if is_local or spark is None else _HadoopLockFile(spark, lock_path)
    pid = os.getpid()
    owner = {"host": socket.gethostname(), "pid": pid, "pid_started": _process_start(pid), "since": _now()}
    text = json.dumps(owner, sort_keys=True)
    for _ in range(5):
        if lock.create(text):
            break
        seen = lock.read()
        if seen is None:
            continue
        try:
            held = json.loads(seen)
        except ValueError:
            held = {}
        if held and _alive(held):
            raise OutputBusyError(
                f"{path}: {what} is being written by pid {held.get('pid')} on {held.get('host')} "
                f"since {held.get('since')}; wait for it, or delete {lock_path} if that process is gone"
            )
        log.warning("%s: taking over the lock of pid %s, which is no longer running", path, held.get("pid"))
        lock.take_stale(seen)
    else:
        raise OutputBusyError(f"{path}: could not take {lock_path}; another process keeps taking it")
    try:
        yield owner
    finally:
        if lock.read() == text:
            lock.remove()


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


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
