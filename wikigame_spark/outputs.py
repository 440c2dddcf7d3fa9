"""Output folders: written under a staging name and renamed into place only when complete (a failed
run leaves nothing that looks finished), one writer per output by a lock file, caches beside a
graph replaced whole, and folders of small files. Every path is reached through
:class:`wikigame_spark.storage.Storage`."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from wikigame_spark import layout
from wikigame_spark.contents import CONTENTS
from wikigame_spark.layout import MANIFEST
from wikigame_spark.manifests import code_version, read_manifest, write_json
from wikigame_spark.parquet import write_table
from wikigame_spark.storage import Storage
from wikigame_spark.storage import StorageError as StorageError
from wikigame_spark.storage import spark_uri as spark_uri

log = logging.getLogger(__name__)


class OutputExistsError(FileExistsError):
    """The output directory exists and ``--overwrite`` was not given."""


def _staging_name(path: str) -> str:
    """A hidden sibling of ``path`` (readers and ``part-*`` globs skip names starting with a dot)."""
    parent, _, name = path.rpartition("/")
    return f"{parent}/.{name}._staging-{uuid.uuid4().hex[:8]}" if parent else f".{name}._staging-{uuid.uuid4().hex[:8]}"


@contextlib.contextmanager
def staged_output(spark: SparkSession | None, path: str, overwrite: bool) -> Iterator[str]:
    """Yield a staging directory that replaces ``path`` only if the block completes (:func:`publish`)."""
    path = path.rstrip("/")
    if Storage(spark).exists(path) and not overwrite:
        raise OutputExistsError(f"{path} exists; pass --overwrite to replace it")
    staging = _staging_name(path)
    try:
        yield staging
    except BaseException:
        Storage(spark).delete(staging)
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


# --- A folder of small files -----------------------------------------------------------------------
def write_files(spark: SparkSession | None, files: dict[str, bytes], directory: str) -> None:
    """``{relative path: bytes}`` written under ``directory`` (a job's staging folder, a temporary
    one): on a local disk as plain files (Hadoop's local filesystem would add a ``.crc`` beside
    each), elsewhere through Hadoop (DBFS, S3, HDFS…)."""
    local = Storage(spark).local_disk(directory)
    store, root = (Storage(), local) if local is not None else (Storage(spark), directory)
    for rel, data in files.items():
        store.write(layout.join(root, rel), data)
