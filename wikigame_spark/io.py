"""Tables, manifests, output folders, locks and input stores, over one storage object.

Every path is reached through :class:`wikigame_spark.storage.Storage`: on the driver Hadoop's
FileSystem API once a session exists (local disk, HDFS, DBFS, ``s3a://``), os calls for local paths
before; the Python workers read with pyarrow's file systems (:func:`read_columns`). A scheme is
added in :mod:`wikigame_spark.storage` alone. An output directory is written under a staging name and renamed into place
only when complete, so a failed run leaves nothing that looks finished; one writer per output is
ensured by a lock file. Input stores (:func:`open_store`: a local folder, an S3 bucket through
boto3, any Hadoop URI) list and read source files on the driver, and :func:`configure_s3a` gives
Spark the S3 settings boto3 used. Where things are inside a graph directory is
:mod:`wikigame_spark.layout`'s business, not this module's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import posixpath
import socket
import subprocess
import uuid
from collections.abc import Callable, Iterator
from urllib.parse import urlparse

import pyarrow.dataset as ds
import pyarrow.fs as pafs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

import wikigame_spark
from wikigame_spark import layout
from wikigame_spark.contents import CONTENTS
from wikigame_spark.layout import MANIFEST
from wikigame_spark.storage import Storage, is_local, local_path
from wikigame_spark.storage import StorageError as StorageError
from wikigame_spark.storage import arrow as arrow_path
from wikigame_spark.storage import spark_uri as spark_uri

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


class OutputExistsError(FileExistsError):
    """The output directory exists and ``--overwrite`` was not given."""


# The functions below take the session first: each is one operation of :class:`Storage`.
def filesystem(spark: SparkSession, path: str):
    """``(Hadoop FileSystem, Path)`` of a path on any store Spark reads (local, S3, DBFS, HDFS)."""
    return Storage(spark).hadoop(path)


def exists(spark: SparkSession | None, path: str) -> bool:
    return Storage(spark).exists(path)


def delete(spark: SparkSession | None, path: str) -> None:
    Storage(spark).delete(path)


def write_bytes(spark: SparkSession | None, path: str, data: bytes) -> None:
    Storage(spark).write(path, data)


def write_text(spark: SparkSession | None, path: str, text: str) -> None:
    Storage(spark).write_text(path, text)


def read_text(spark: SparkSession | None, path: str) -> str:
    return Storage(spark).read_text(path)


def write_json(spark: SparkSession, path: str, obj: dict) -> None:
    write_text(spark, path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_json(spark: SparkSession, path: str) -> dict:
    return json.loads(read_text(spark, path))


def file_digest(path: str, algorithm: str = "sha256") -> str:
    """A local file's digest in hex, read in 4 MiB blocks (a model's weights, a mapped file)."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest_sha1(manifest: dict) -> str:
    """The digest that names an output by its manifest (games and play runs record their graph's)."""
    return hashlib.sha1(json.dumps(manifest, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def read_manifest(spark: SparkSession, directory: str) -> dict:
    """The manifest of a finished output directory; its absence means the output is incomplete."""
    path = layout.manifest(directory)
    if not exists(spark, path):
        raise FileNotFoundError(f"{directory}: no {MANIFEST}; not a finished wikigame-spark output")
    return read_json(spark, path)


def _staging_name(path: str) -> str:
    """A hidden sibling of ``path`` (readers and ``part-*`` globs skip names starting with a dot)."""
    parent, _, name = path.rpartition("/")
    return f"{parent}/.{name}._staging-{uuid.uuid4().hex[:8]}" if parent else f".{name}._staging-{uuid.uuid4().hex[:8]}"


@contextlib.contextmanager
def staged_output(spark: SparkSession | None, path: str, overwrite: bool) -> Iterator[str]:
    """Yield a staging directory that replaces ``path`` only if the block completes (:func:`publish`)."""
    path = path.rstrip("/")
    if exists(spark, path) and not overwrite:
        raise OutputExistsError(f"{path} exists; pass --overwrite to replace it")
    staging = _staging_name(path)
    try:
        yield staging
    except BaseException:
        delete(spark, staging)
        raise
    publish(spark, staging, path)


def new_staging(path: str) -> str:
    """A fresh staging folder for ``path``: a hidden sibling, removed or renamed into place."""
    return _staging_name(path.rstrip("/"))


def resume_staging(path: str) -> str:
    """The staging folder where a resumable output (a play run) is remade while its finished
    version stays in place: the same name every time, so a killed run is resumed there."""
    parent, _, name = path.rstrip("/").rpartition("/")
    return f"{parent}/.{name}._resume" if parent else f".{name}._resume"


def publish(spark: SparkSession | None, staging: str, path: str) -> None:
    """Move the complete ``staging`` folder to ``path``: an older ``path`` is renamed aside, the new
    one renamed in, then the old one deleted — a reader never sees a half-written output, and
    ``path`` is absent only between two renames.

    What the older ``path`` holds besides its own output (:func:`others_inside`: a graph's games,
    statistics, plays, caches and journals, a file of the user's) is never deleted: then only the
    old output's own entries are moved aside, its manifest first, and the new ones moved in, the
    manifest last; what else is inside stays where it is."""
    store = Storage(spark)
    if not store.exists(path):
        store.rename(staging, path)
        return
    new = store.names(staging)
    kept = others_inside(store, path, new)
    old = _staging_name(path).replace("._staging-", "._replaced-")
    if not kept:
        store.rename(path, old)
        store.rename(staging, path)
        store.delete(old)
        return
    store.mkdirs(old)
    for name in sorted(set(store.names(path)) - set(kept), key=lambda n: n != MANIFEST):
        store.rename(layout.join(path, name), layout.join(old, name))
    for name in sorted(new, key=lambda n: n == MANIFEST):
        store.rename(layout.join(staging, name), layout.join(path, name))
    store.delete(old)
    store.delete(staging)
    log.info("%s: replaced; kept inside it: %s", path, ", ".join(kept))


def folder_manifest(store: Storage, directory: str) -> dict | None:
    """An output folder's manifest as found: None when it has none, ``{}`` when it is not a JSON
    object (someone else's ``manifest.json``)."""
    path = layout.manifest(directory)
    if not store.exists(path):
        return None
    try:
        found = json.loads(store.read_text(path))
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def others_inside(store: Storage, path: str, new: list[str]) -> list[str]:
    """The names in the output folder ``path`` that are not its own: neither among the ``new``
    output's names nor recorded by its manifest (tables, files), nor its manifest, nor a checksum
    file of one of those (Hadoop's ``.NAME.crc``). Other hidden names (another job's staging
    folders) are others too. A folder without a manifest has no others: it is replaced whole."""
    manifest = folder_manifest(store, path)
    if manifest is None:
        return []  # no record of its own: replaced whole (a job replaces only such a folder of its own)
    recorded = [*manifest.get(CONTENTS, {}), *(f for f in manifest.get("files", []) if isinstance(f, str))]
    own = set(new) | {MANIFEST} | {name.split("/", 1)[0] for name in recorded}
    own |= {f".{name}.crc" for name in own}
    return [name for name in store.names(path) if name not in own]


def clean_staging(path: str, spark: SparkSession | None = None) -> list[str]:
    """Remove the staging folders killed runs left for ``path`` (its hidden ``._staging-``/
    ``._replaced-`` siblings, and the chunks' inside it; a play run's resumable ``._resume`` stays).
    The caller holds the output's lock, so no live writer owns them. Returns what was removed."""
    path = path.rstrip("/")
    parent, _, name = path.rpartition("/")
    patterns = [f"{parent}/.{name}._staging-*", f"{parent}/.{name}._replaced-*", f"{path}/.*._staging-*"]
    store = Storage(spark)
    removed = []
    for pattern in patterns:
        for stale in store.glob(pattern):
            store.delete(stale)
            removed.append(stale)
    if removed:
        log.info("%s: removed %d staging folder(s) of runs that did not finish", path, len(removed))
    return removed


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


def _read_lock(store: Storage, path: str) -> str | None:
    try:
        return store.read_text(path)
    except FileNotFoundError:
        return None


def _take_stale(store: Storage, path: str, seen: str) -> None:
    """Remove a dead owner's lock, unless it changed since it was read (another process took it)."""
    aside = f"{path}.stale-{uuid.uuid4().hex[:8]}"
    try:
        store.rename(path, aside)
    except FileNotFoundError:
        return
    moved = store.read(aside)
    if moved != seen.encode("utf-8"):  # a live owner's lock was taken in between: give it back
        store.create_if_absent(path, moved)
    store.delete(aside)


@contextlib.contextmanager
def output_lock(path: str, spark: SparkSession | None = None, what: str = "output") -> Iterator[dict]:
    """One writer per output: ``<path>.lock`` names the owner (host, pid, its start time) and is
    created atomically. A live owner's lock refuses (:class:`OutputBusyError`); a dead owner's
    (a killed process on this host) is taken over. Local paths need no session."""
    lock_path = f"{path.rstrip('/')}.lock"
    store = Storage(spark)
    parent = lock_path.rpartition("/")[0]
    made_parent = bool(parent) and not store.exists(parent)  # a failed first run leaves no empty folder
    pid = os.getpid()
    owner = {"host": socket.gethostname(), "pid": pid, "pid_started": _process_start(pid), "since": _now()}
    text = json.dumps(owner, sort_keys=True)
    for _ in range(5):
        if store.create_if_absent(lock_path, text.encode("utf-8")):
            break
        seen = _read_lock(store, lock_path)
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
        _take_stale(store, lock_path, seen)
    else:
        raise OutputBusyError(f"{path}: could not take {lock_path}; another process keeps taking it")
    try:
        yield owner
    finally:
        if _read_lock(store, lock_path) == text:
            store.delete(lock_path)
        if made_parent and store.exists(parent) and not store.names(parent):
            store.delete(parent)


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


def read_table(spark: SparkSession, path: str | list[str], schema: StructType) -> DataFrame:
    """Read Parquet with the contract's explicit schema (never inferred): one table, or several
    as one (none: an empty table)."""
    paths = [path] if isinstance(path, str) else list(path)
    return spark.read.schema(schema).parquet(*paths) if paths else spark.createDataFrame([], schema)


def code_version() -> str:
    """The package version (from its metadata), plus the git commit when running from a checkout.

    An installed wheel gives its version alone: git is not asked there, since site-packages may sit
    inside some other repository whose commit says nothing about this code.
    """
    if wikigame_spark.CHECKOUT_DIR is None:
        return wikigame_spark.__version__
    try:
        commit = subprocess.run(
            ["git", "-C", wikigame_spark.CHECKOUT_DIR, "rev-parse", "--short", "HEAD"],
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


def write_tables(spark: SparkSession, directory: str, tables: dict) -> None:
    """Write ``{name: (DataFrame, schema)}`` as the tables of ``directory`` (a staging folder)."""
    for name, (df, schema) in tables.items():
        write_table(df, layout.join(directory, name), schema)


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


def write_cache(
    spark: SparkSession, path: str, table: str, df: DataFrame, schema: StructType, manifest: dict | Callable[[], dict]
) -> None:
    """Write a cache (one table and its manifest) atomically, replacing any older one. A callable
    manifest is called once the table is written (a manifest that records what the write measured)."""
    with staged_output(spark, path, overwrite=True) as staging:
        write_table(df, layout.join(staging, table), schema)
        made = manifest() if callable(manifest) else manifest
        write_json(spark, layout.manifest(staging), {**made, "code_version": code_version()})


# --- Stores: listing and small reads on the driver, S3 settings for Spark and pyarrow -------------
# Buckets read anonymously unless another endpoint is given (the public OpenAlex snapshot), and the
# region used when boto3's session names none (the public bucket's).
PUBLIC_BUCKETS = ("openalex",)
DEFAULT_REGION = "us-east-1"


class LocalStore(Storage):
    """A local folder listed before any session (paths are absolute; Spark reads them as ``file:`` URIs)."""

    def __init__(self, root: str):
        super().__init__()
        self.root = os.path.abspath(root)


class S3Store:
    """One bucket through boto3, with :class:`Storage`'s input-store methods (``join``, ``is_file``,
    ``list``, ``size``, ``read``, ``spark_path``) on its keys: anonymous for the public OpenAlex
    bucket, else the usual AWS credential chain (environment, profile, instance role), optionally
    at another endpoint."""

    def __init__(self, bucket: str, endpoint_url: str = "", anonymous: bool | None = None):
        import boto3
        from botocore import UNSIGNED
        from botocore.config import Config

        self.bucket = bucket
        self.endpoint_url = endpoint_url
        self.anonymous = (bucket in PUBLIC_BUCKETS and not endpoint_url) if anonymous is None else anonymous
        config = Config(
            signature_version=UNSIGNED if self.anonymous else None,
            s3={"addressing_style": "path"} if endpoint_url else {},
            retries={"max_attempts": 5, "mode": "standard"},
        )
        self.session = boto3.session.Session()
        region = self.session.region_name or DEFAULT_REGION
        self.client = self.session.client("s3", endpoint_url=endpoint_url or None, region_name=region, config=config)

    def _fail(self, what: str, e: Exception) -> StorageError:
        return StorageError(f"s3://{self.bucket}/{what}: {e}")

    def join(self, base: str, rel: str) -> str:
        return posixpath.normpath(posixpath.join(base, rel)).lstrip("/") if rel else base

    def is_file(self, key: str) -> bool:
        if not key:
            return False
        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
            return True
        except Exception as e:
            if _s3_status(e) in (403, 404):
                return False
            raise self._fail(key, e) from e

    def list(self, prefix: str) -> dict[str, int]:
        base = prefix.rstrip("/") + "/" if prefix else ""
        out = {}
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=base):
                for obj in page.get("Contents", []):
                    if not obj["Key"].endswith("/"):
                        out[obj["Key"][len(base) :]] = obj["Size"]
        except Exception as e:
            raise self._fail(base, e) from e
        return out

    def size(self, key: str) -> int:
        try:
            return self.client.head_object(Bucket=self.bucket, Key=key)["ContentLength"]
        except Exception as e:
            raise self._fail(key, e) from e

    def read(self, key: str) -> bytes:
        try:
            return self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except Exception as e:
            raise self._fail(key, e) from e

    def spark_path(self, key: str) -> str:
        return f"s3a://{self.bucket}/{key}"

    def arrow_options(self) -> dict:
        """The same bucket, endpoint and credentials for pyarrow's ``S3FileSystem`` (the Python
        workers' reads); without static credentials pyarrow's own chain finds them."""
        options: dict = {"region": self.client.meta.region_name or DEFAULT_REGION}
        if self.endpoint_url:
            endpoint = urlparse(self.endpoint_url)
            options.update(endpoint_override=endpoint.netloc + endpoint.path.rstrip("/"), scheme=endpoint.scheme)
        if self.anonymous:
            options["anonymous"] = True
        creds = self.credentials()
        for name in ("access.key", "secret.key", "session.token"):
            if name in creds:
                options[name.replace(".", "_")] = creds[name]
        return options

    def credentials(self) -> dict[str, str]:
        """Static credentials boto3 resolved (environment, profile files) for s3a to use too;
        empty when anonymous or when they refresh themselves (instance roles), which s3a's own
        provider chain finds the same way."""
        if self.anonymous:
            return {}
        from botocore.credentials import RefreshableCredentials

        creds = self.session.get_credentials()
        if creds is None or isinstance(creds, RefreshableCredentials):
            return {}
        frozen = creds.get_frozen_credentials()
        out = {"access.key": frozen.access_key, "secret.key": frozen.secret_key}
        if frozen.token:
            out["session.token"] = frozen.token
        return out


def _s3_status(e: Exception) -> int | None:
    response = getattr(e, "response", None) or {}
    return response.get("ResponseMetadata", {}).get("HTTPStatusCode")


class HadoopStore(Storage):
    """Any other Hadoop URI (``hdfs://``, ``dbfs:/``, ``abfss://`` …), listed through the session's
    Hadoop file system."""


def open_store(uri: str, endpoint_url: str = "", spark: SparkSession | None = None):
    """``(store, root)`` for an input URI: s3:// and s3a:// through boto3, plain paths locally."""
    parsed = urlparse(uri)
    if parsed.scheme in ("s3", "s3a"):
        if not parsed.netloc:
            raise StorageError(f"input {uri!r}: no bucket name")
        return S3Store(parsed.netloc, endpoint_url), parsed.path.strip("/")
    if is_local(uri):
        store = LocalStore(local_path(uri))
        return store, store.root
    if spark is None:
        raise StorageError(f"input {uri!r}: a {parsed.scheme}:// input needs a Spark session to list it")
    return HadoopStore(spark), uri.rstrip("/")


def configure_s3a(spark: SparkSession, uri: str, endpoint_url: str = "", store: S3Store | None = None) -> None:
    """Per-bucket s3a settings matching how boto3 reached the bucket; settings the user already
    gave (``spark.hadoop.fs.s3a.bucket.<b>.…``) win."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("s3", "s3a"):
        return
    bucket = parsed.netloc
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    prefix = f"fs.s3a.bucket.{bucket}."
    settings: dict[str, str] = {}
    anonymous = store.anonymous if store is not None else (bucket in PUBLIC_BUCKETS and not endpoint_url)
    if anonymous:
        settings["aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
        settings["endpoint.region"] = DEFAULT_REGION
    if endpoint_url:
        settings["endpoint"] = endpoint_url
        settings["path.style.access"] = "true"
        settings["connection.ssl.enabled"] = str(endpoint_url.startswith("https://")).lower()
        settings.setdefault("endpoint.region", (store.client.meta.region_name if store else None) or DEFAULT_REGION)
    creds = store.credentials() if store is not None else {}
    if creds:
        settings.update(creds)
        if "session.token" in creds:
            settings["aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
        else:
            settings["aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
    for key, value in settings.items():
        if conf.get(prefix + key) is None:
            conf.set(prefix + key, value)


def open_input_file(path: str, s3: dict | None = None):
    """A pyarrow input file for a ``file://`` or ``s3a://`` URI, the latter through pyarrow's S3
    file system with ``s3`` (:meth:`S3Store.arrow_options`: the settings boto3 used)."""
    fs, p = arrow_path(path, s3 or {})
    return p if isinstance(fs, pafs.LocalFileSystem) else fs.open_input_file(p)


# --- A folder of small files -----------------------------------------------------------------------
def write_files(spark: SparkSession | None, files: dict[str, bytes], directory: str) -> None:
    """``{relative path: bytes}`` written under ``directory`` (a job's staging folder, a temporary
    one): on a local disk as plain files (Hadoop's local filesystem would add a ``.crc`` beside
    each), elsewhere through Hadoop (DBFS, S3, HDFS…)."""
    local = Storage(spark).local_disk(directory)
    store, root = (Storage(), local) if local is not None else (Storage(spark), directory)
    for rel, data in files.items():
        store.write(layout.join(root, rel), data)
