"""Output folders: written under a staging name and renamed into place only when complete (a failed
run leaves nothing that looks finished), one writer per output by a lock file, caches beside a
graph replaced whole, and folders of small files. Every output is a
:class:`~wikigame_spark.storage.Folder`."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterator

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from wikigame_spark.contents import CONTENTS
from wikigame_spark.layout import MANIFEST
from wikigame_spark.manifests import code_version, read_manifest, write_manifest
from wikigame_spark.parquet import write_table
from wikigame_spark.storage import Folder, Storage

log = logging.getLogger(__name__)


class OutputExistsError(FileExistsError):
    """The output directory exists and ``--overwrite`` was not given."""


def new_staging(target: Folder) -> Folder:
    """A fresh staging folder for ``target``: a hidden sibling (readers and ``part-*`` globs skip
    names starting with a dot), removed or renamed into place."""
    return target.sibling(f".{target.name}._staging-{uuid.uuid4().hex[:8]}")


@contextlib.contextmanager
def staged_output(target: Folder, overwrite: bool) -> Iterator[Folder]:
    """Yield a staging folder that replaces ``target`` only if the block completes (:func:`publish`)."""
    if target.exists() and not overwrite:
        raise OutputExistsError(f"{target.root} exists; pass --overwrite to replace it")
    staging = new_staging(target)
    try:
        yield staging
    except BaseException:
        staging.delete()
        raise
    publish(staging, target)


def resume_staging(target: Folder) -> Folder:
    """The staging folder where a resumable output (a play run) is remade while its finished
    version stays in place: the same name every time, so a killed run is resumed there."""
    return target.sibling(f".{target.name}._resume")


def publish(staging: Folder, target: Folder) -> None:
    """Move the complete ``staging`` folder to ``target``: an older ``target`` is renamed aside, the
    new one renamed in, then the old one deleted — a reader never sees a half-written output, and
    ``target`` is absent only between two renames.

    What the older ``target`` holds besides its own output (:func:`others_inside`: a graph's games,
    statistics, plays, caches and journals, a file of the user's) is never deleted: then only the
    old output's own entries are moved aside, its manifest first, and the new ones moved in, the
    manifest last; what else is inside stays where it is."""
    if not target.exists():
        staging.rename("", target.root)
        return
    new = staging.names()
    kept = others_inside(target, new)
    old = target.sibling(f".{target.name}._replaced-{uuid.uuid4().hex[:8]}")
    if not kept:
        target.rename("", old.root)
        staging.rename("", target.root)
        old.delete()
        return
    old.mkdirs()
    for name in sorted(set(target.names()) - set(kept), key=lambda n: n != MANIFEST):
        target.rename(name, old.path(name))
    for name in sorted(new, key=lambda n: n == MANIFEST):
        staging.rename(name, target.path(name))
    old.delete()
    staging.delete()
    log.info("%s: replaced; kept inside it: %s", target.root, ", ".join(kept))


def folder_manifest(folder: Folder) -> dict | None:
    """An output folder's manifest as found: None when it has none, ``{}`` when it is not a JSON
    object (someone else's ``manifest.json``)."""
    if not folder.exists(MANIFEST):
        return None
    try:
        found = folder.read_json(MANIFEST)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def others_inside(folder: Folder, new: list[str]) -> list[str]:
    """The names in the output ``folder`` that are not its own: neither among the ``new``
    output's names nor recorded by its manifest (tables, files), nor its manifest, nor a checksum
    file of one of those (Hadoop's ``.NAME.crc``). Other hidden names (another job's staging
    folders) are others too. A folder without a manifest has no others: it is replaced whole."""
    manifest = folder_manifest(folder)
    if manifest is None:
        return []  # no record of its own: replaced whole (a job replaces only such a folder of its own)
    recorded = [*manifest.get(CONTENTS, {}), *(f for f in manifest.get("files", []) if isinstance(f, str))]
    own = set(new) | {MANIFEST} | {name.split("/", 1)[0] for name in recorded}
    own |= {f".{name}.crc" for name in own}
    return [name for name in folder.names() if name not in own]


def clean_staging(target: Folder) -> list[str]:
    """Remove the staging folders killed runs left for ``target`` (its hidden ``._staging-``/
    ``._replaced-`` siblings, and the chunks' inside it; a play run's resumable ``._resume`` stays).
    The caller holds the output's lock, so no live writer owns them. Returns what was removed."""
    patterns = [
        target.sibling(f".{target.name}._staging-*").root,
        target.sibling(f".{target.name}._replaced-*").root,
        target.path(".*._staging-*"),
    ]
    removed = []
    for pattern in patterns:
        for stale in target.storage.glob(pattern):
            target.storage.delete(stale)
            removed.append(stale)
    if removed:
        log.info("%s: removed %d staging folder(s) of runs that did not finish", target.root, len(removed))
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


def _read_lock(folder: Folder, name: str) -> str | None:
    try:
        return folder.read_text(name)
    except FileNotFoundError:
        return None


def _take_stale(folder: Folder, name: str, seen: str) -> None:
    """Remove a dead owner's lock, unless it changed since it was read (another process took it)."""
    aside = f"{name}.stale-{uuid.uuid4().hex[:8]}"
    try:
        folder.rename(name, folder.path(aside))
    except FileNotFoundError:
        return
    moved = folder.read(aside)
    if moved != seen.encode("utf-8"):  # a live owner's lock was taken in between: give it back
        folder.storage.create_if_absent(folder.path(name), moved)
    folder.delete(aside)


@contextlib.contextmanager
def output_lock(target: Folder, what: str = "output") -> Iterator[dict]:
    """One writer per output: ``<target>.lock`` names the owner (host, pid, its start time) and is
    created atomically. A live owner's lock refuses (:class:`OutputBusyError`); a dead owner's
    (a killed process on this host) is taken over."""
    path = target.root
    parent = target.outer()
    lock = f"{target.name}.lock"
    lock_path = parent.path(lock)
    made_parent = bool(target.parent) and not parent.exists()  # a failed first run leaves no empty folder
    pid = os.getpid()
    owner = {"host": socket.gethostname(), "pid": pid, "pid_started": _process_start(pid), "since": _now()}
    text = json.dumps(owner, sort_keys=True)
    for _ in range(5):
        if target.storage.create_if_absent(lock_path, text.encode("utf-8")):
            break
        seen = _read_lock(parent, lock)
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
        _take_stale(parent, lock, seen)
    else:
        raise OutputBusyError(f"{path}: could not take {lock_path}; another process keeps taking it")
    try:
        yield owner
    finally:
        if _read_lock(parent, lock) == text:
            parent.delete(lock)
        if made_parent and parent.exists() and not parent.names():
            parent.delete()


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def current_cache(cache: Folder, source_created: str | None) -> dict | None:
    """The manifest of ``cache`` if it was built from this build of its source."""
    try:
        done = read_manifest(cache)
    except FileNotFoundError:
        return None
    if done.get("source_created") != source_created:
        log.info("%s was built from another build of its source; rebuilding", cache.root)
        return None
    return done


def write_cache(
    cache: Folder, table: str, df: DataFrame, schema: StructType, manifest: dict | Callable[[], dict]
) -> None:
    """Write a cache (one table and its manifest) atomically, replacing any older one. A callable
    manifest is called once the table is written (a manifest that records what the write measured)."""
    with staged_output(cache, overwrite=True) as staging:
        write_table(df, staging.sub(table), schema)
        made = manifest() if callable(manifest) else manifest
        write_manifest(staging, {**made, "code_version": code_version()})


# --- A folder of small files -----------------------------------------------------------------------
def write_files(folder: Folder, files: dict[str, bytes]) -> None:
    """``{relative path: bytes}`` written under ``folder`` (a job's staging folder, a temporary
    one): on a local disk as plain files (Hadoop's local filesystem would add a ``.crc`` beside
    each), elsewhere through Hadoop (DBFS, S3, HDFS…)."""
    local = folder.local_disk()
    target = folder if local is None else Storage().folder(local)
    for rel, data in files.items():
        target.write(rel, data)
