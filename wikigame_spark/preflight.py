"""Checks every job makes before any Spark work, so a fault a user can fix ends in seconds.

Flags are checked by the job's config; here: each input is of the kind the flag wants (a graph, a
games table, a dump) and readable, the output is absent (or ``--overwrite``) and writable (a probe
is created and removed under it), and the MLflow tracking store answers within a few seconds.

Every path is reached through :class:`wikigame_spark.storage.Storage`. Local paths are checked
before the SparkSession exists. Other URIs (``s3a://``, ``hdfs://``, ``dbfs:/``) need Hadoop's file
systems: a job calls the same checks again with its session, before
any work; without a session such a URI is not checked yet (``None``), and with one an output's
local path is not probed twice.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
from collections.abc import Iterator

import pyarrow.fs as pafs

from wikigame_spark import layout, manifests, outputs, tracking
from wikigame_spark.layout import GraphDir, PlaysDir
from wikigame_spark.storage import Folder, Storage, arrow, is_local, local_path

# What a path is found to be, as messages name it (:func:`kind`).
A_GRAPH, A_GAMES_TABLE, A_PLAYS_FOLDER, A_DUMP = "graph", "games table", "plays folder", "dump"
TRACKING_TIMEOUT_S = 5
_PARQUET_MAGIC = b"PAR1"


class PreflightError(ValueError):
    """An input, output or setting a job cannot use; the message names it and what to do."""


def absolute(path: str) -> str:
    """A local path made absolute (outputs and MLflow params must not depend on the cwd); URIs as given."""
    return os.path.abspath(local_path(path)) if path and is_local(path) else path.rstrip("/")


def _storage(path: str, spark) -> Storage | None:
    """The storage that reaches ``path`` now, or None: a URI waits for the session."""
    store = Storage(spark)
    return store if store.reaches(path) else None


def kind(folder: Folder) -> str | None:
    """What ``folder`` holds: ``graph``, ``games table``, ``plays folder``, ``dump`` (a file), or None."""
    if not folder.exists():
        return None
    if not folder.is_dir():
        return A_DUMP
    names = set(folder.names())
    if layout.MANIFEST not in names:
        return None
    if GraphDir.is_graph(names):
        return A_GRAPH
    if layout.GAMES_TABLE in names:
        return A_GAMES_TABLE
    if any(PlaysDir.is_chunk(n) for n in names):
        return A_PLAYS_FOLDER
    return None


def _describe(found: str | None) -> str:
    return f"is a {found}" if found else "has no manifest.json (not a finished wikigame-spark output)"


def _manifest(folder: Folder, flag: str) -> dict:
    try:
        return folder.read_json(layout.MANIFEST)
    except (OSError, ValueError) as e:
        raise PreflightError(f"{flag} {folder.root}: cannot read {layout.MANIFEST}: {e}") from e


def _reason(e: Exception) -> str:
    """What refused: an OS error's reason, or the first line of Hadoop's (a Py4J error)."""
    return getattr(e, "strerror", None) or (str(e).splitlines() or [type(e).__name__])[0]


def _check_parquet(directory: str, flag: str) -> None:
    """Every part file of a local Parquet table ends with Parquet's magic bytes (a cut or corrupt
    file is named here rather than as a Java trace from inside a task); read as the workers read."""
    fs, p = arrow(directory)
    if fs.get_file_info(p).type != pafs.FileType.Directory:
        raise PreflightError(f"{flag}: {directory} is missing")
    for info in sorted(fs.get_file_info(pafs.FileSelector(p)), key=lambda i: i.base_name):
        if info.base_name.startswith((".", "_")) or info.type == pafs.FileType.Directory:
            continue
        try:
            with fs.open_input_file(info.path) as f:
                size = f.size()
                head, tail = f.read_at(4, 0), f.read_at(4, max(size - 4, 0))
        except OSError as e:
            raise PreflightError(f"{flag}: {info.path}: cannot read: {_reason(e)}") from e
        if size < 12 or head != _PARQUET_MAGIC or tail != _PARQUET_MAGIC:
            raise PreflightError(f"{flag}: {info.path} is not a Parquet file ({size} bytes; corrupt or cut short)")


def require(folder: Folder, want: str, flag: str, tables: tuple[str, ...] = ()) -> dict:
    """The manifest of ``folder`` when it is a finished ``want`` (:data:`A_GRAPH`,
    :data:`A_GAMES_TABLE`) with readable
    ``tables``; a wrong kind, a missing path or a corrupt table raises :class:`PreflightError`."""
    if not folder.exists():
        raise PreflightError(f"{flag} {folder.root}: not found")
    found = kind(folder)
    if found != want:
        raise PreflightError(f"{flag} {folder.root}: {_describe(found)}, not a {want}")
    manifest = _manifest(folder, flag)
    on_disk = folder.local_disk()
    if on_disk is not None:
        for table in tables:
            _check_parquet(os.path.join(on_disk, table), flag)
    return manifest


def require_graph(folder: Folder, flag: str = "--graph") -> dict:
    return require(folder, A_GRAPH, flag, (layout.NODES_TABLE, layout.EDGES_TABLE))


def require_games(folder: Folder, flag: str = "--games-dir") -> dict:
    return require(folder, A_GAMES_TABLE, flag, (layout.GAMES_TABLE,))


def require_source(paths: list[str], flag: str = "--input", want: str = "a dump file or a folder of dumps") -> None:
    """Source inputs (dumps, snapshots) are never a wikigame-spark output (a graph, games, plays)."""
    for path in paths:
        found = kind(Storage().folder(path)) if is_local(path) else None
        if found not in (None, A_DUMP):
            raise PreflightError(f"{flag} {path}: is a {found}, not {want}")


def require_file(path: str, flag: str, spark=None) -> None:
    store = _storage(path, spark)
    if store is None:
        return
    if not store.exists(path):
        raise PreflightError(f"{flag} {path}: not found")
    if store.is_dir(path):
        raise PreflightError(f"{flag} {path}: is a folder, not a file")
    if not store.readable(path):
        raise PreflightError(f"{flag} {path}: not readable")


def games_bound_to(games_manifest: dict, graph_manifest: dict, games_dir: str, graph: str) -> None:
    """A games table is played only on the graph it was sampled on (its manifest records that
    graph's manifest digest)."""
    recorded = (games_manifest.get("graph") or {}).get("manifest_sha1")
    actual = manifests.manifest_sha1(graph_manifest)
    if not recorded:
        raise PreflightError(
            f"--games-dir {games_dir}: its manifest names no graph; sample games on {graph} with jobs/sample_games.py"
        )
    if recorded != actual:
        sampled_on = (games_manifest.get("graph") or {}).get("path") or "another graph"
        raise PreflightError(
            f"--games-dir {games_dir} was sampled on {sampled_on} (manifest {recorded[:12]}), "
            f"not on --graph {graph} (manifest {actual[:12]}); sample games on this graph or pass its own graph"
        )


def _nearest_existing(store: Storage, p: str) -> str:
    while not store.exists(p):
        parent = os.path.dirname(p.rstrip("/"))
        if not parent or parent == p or parent.endswith(":/") or parent.endswith(":"):
            return p
        p = parent
    return p


def check_output(
    path: str,
    overwrite: bool,
    flag: str = "--output",
    spark=None,
    finished: bool = False,
    what: str = "output",
    kind: str = "",
    inputs: tuple[str, ...] = (),
    sources: tuple[str, ...] = (),
) -> None:
    """``path`` is absent (or ``overwrite``) and a probe can be created and removed where it goes.

    ``finished``: only a finished output (one with a manifest) needs ``overwrite`` — a play run's
    unfinished plays are resumed. An existing folder is replaced only as :func:`check_replaceable`
    allows, and no output goes inside another one's tables (:func:`check_not_inside_a_table`) nor
    inside a folder of ``sources`` (dumps, snapshots, files: a graph's games go inside the graph,
    never a graph inside its dumps' folder).
    """
    if spark is not None and is_local(path):
        return  # checked before the session
    store = _storage(path, spark)
    if store is None:
        return
    p = absolute(path)
    target = store.folder(p)
    if target.exists(layout.MANIFEST if finished else "") and not overwrite:
        raise outputs.OutputExistsError(f"{path} exists; pass --overwrite to replace it")
    if target.exists() and not target.is_dir():
        raise PreflightError(f"{flag} {path}: is a file, not a folder")
    for source in sources:
        if p.startswith(_input_root(source) + "/"):
            raise PreflightError(f"{flag} {path}: inside the input {source}; write the {what} to another folder")
    if target.exists():
        check_replaceable(target, flag, what, kind, inputs, resumable=finished)
    check_not_inside_a_table(target, flag)
    where = _nearest_existing(store, p)
    if not store.is_dir(where):
        raise PreflightError(f"{flag} {path}: {where} is a file, not a folder")
    try:
        store.probe(where)
    except Exception as e:  # an OSError, or Hadoop's refusal as a Py4J error
        raise PreflightError(f"{flag} {path}: cannot write under {where}: {_reason(e)}") from e


def _input_root(source: str) -> str:
    """An input's path as a folder prefix: absolute, without a glob's pattern part."""
    return absolute(source.split("*", 1)[0]).rstrip("/")


def check_replaceable(
    target: Folder, flag: str, what: str, kind: str, inputs: tuple[str, ...], resumable: bool
) -> None:
    """An existing folder that a job may write into and replace: empty, or an earlier output of the
    job's own ``kind`` (its manifest says so; for a ``resumable`` one, its unfinished chunks), and
    holding none of the job's ``inputs``. A folder of other files, another kind of output, the
    folder of a dump or snapshot (or one above it) is never replaced, ``--overwrite`` or not."""
    path = target.root
    for source in inputs:
        where = _input_root(source)
        if where == path or where.startswith(path + "/"):
            raise PreflightError(f"{flag} {path}: holds the input {source}; write the {what} to another folder")
    names = [n for n in target.names() if not n.startswith(".")]
    if not names:
        return
    manifest = outputs.folder_manifest(target)
    found = None if manifest is None else str(manifest.get("kind") or "")
    if found is None and resumable and all(n.startswith(layout.CHUNK_PREFIX) for n in names):
        return  # an unfinished play run: resumed
    if found is None:
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        raise PreflightError(
            f"{flag} {path}: exists and is not a {what} made by this project (no manifest.json; it holds "
            f"{shown}): a job writes into a new or empty folder, or replaces an earlier {what}; choose another folder"
        )
    if kind and found != kind:
        held = f"a {found}" if found else "a manifest.json of something else"
        raise PreflightError(
            f"{flag} {path}: holds {held}, not a {what}: a job replaces only an earlier {what}; choose another folder"
        )


def check_not_inside_a_table(target: Folder, flag: str) -> None:
    """No output inside a table (or a recorded file) of an output above it: ``GRAPH/games`` is
    beside the graph's tables, ``GRAPH/nodes/sub`` would be read as part of ``nodes``."""
    path = target.root
    child, parent = path, os.path.dirname(path)
    while parent and parent != child and not parent.endswith(":") and not parent.endswith(":/"):
        above = target.storage.folder(parent)
        if above.exists(layout.MANIFEST):
            name = child[len(parent) :].strip("/").split("/", 1)[0]
            outer = outputs.others_inside(above, [])
            if above.exists(name) and name not in outer:
                raise PreflightError(
                    f"{flag} {path}: inside {name} of the output {parent} (its manifest records it): "
                    "an output goes beside another's tables, never inside them; choose another folder"
                )
        child, parent = parent, os.path.dirname(parent)


@contextlib.contextmanager
def _env(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _check_sqlite(uri: str) -> None:
    path = uri[len("sqlite:///") :] if uri.startswith("sqlite:///") else ""
    if not path or path == ":memory:":
        return
    path = os.path.abspath(path)
    where = f"MLFLOW_TRACKING_URI={uri}"
    disk = Storage()
    if disk.exists(path):
        try:
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=TRACKING_TIMEOUT_S)) as c:
                c.execute("select count(*) from sqlite_master").fetchone()
        except sqlite3.Error as e:
            raise PreflightError(f"{where}: {path} is not a usable SQLite database: {e}") from e
        return
    parent = _nearest_existing(disk, os.path.dirname(path))
    try:
        if not disk.is_dir(parent):
            raise NotADirectoryError(20, "not a folder")
        disk.probe(parent)
    except OSError as e:
        raise PreflightError(f"{where}: cannot create {path} (under {parent}: {e.strerror or e})") from e


def _check_server(uri: str) -> None:
    from mlflow.tracking import MlflowClient

    # MLflow's own client, told not to retry and to give up within seconds for this one check.
    with _env(MLFLOW_HTTP_REQUEST_MAX_RETRIES="0", MLFLOW_HTTP_REQUEST_TIMEOUT=str(TRACKING_TIMEOUT_S)):
        try:
            MlflowClient(uri).search_experiments(max_results=1)
        except Exception as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            raise PreflightError(
                f"MLFLOW_TRACKING_URI={uri}: tracking server did not answer within {TRACKING_TIMEOUT_S}s ({first})"
            ) from e


def check_tracking(uri: str | None = None) -> None:
    """The tracking store can be written: a SQLite file's folder or database, or a server that
    answers within :data:`TRACKING_TIMEOUT_S` seconds (no retries)."""
    uri = uri or tracking.tracking_uri()
    if uri.startswith("sqlite:"):
        _check_sqlite(uri)
    elif uri.startswith(("http://", "https://")):
        _check_server(uri)
    elif is_local(uri):
        disk = Storage()
        parent = _nearest_existing(disk, local_path(uri))
        try:
            disk.probe(parent)
        except OSError as e:
            raise PreflightError(f"MLFLOW_TRACKING_URI={uri}: cannot write under {parent}: {e.strerror or e}") from e


log = logging.getLogger(__name__)

# What every job's Python workers import (pandas UDFs, Arrow batches, the library's own stages).
EXECUTOR_MODULES = ("wikigame_spark", "pyarrow", "pandas", "numpy")
PACKED_ENVIRONMENT = (
    "ship the packed environment: spark-submit --files wikigame-env.pex "
    "--conf spark.pyspark.python=./wikigame-env.pex (make pack; docs/cluster.md#a-packed-environment)"
)
# A Python worker that could not start (PySpark's worker daemon, or the module it runs, missing)
_NO_MODULE = re.compile(r"Error from python worker:\s+(\S+?): [^\n]*?No module named '([\w.]+)'")
_CANNOT_RUN = re.compile(r'Cannot run program "([^"]+)"(?:[^\n]*?error=\d+, ([^\n]+))?')
_VERSION_MISMATCH = re.compile(r"Python in worker has different version: (\d+\.\d+) than that in driver: (\d+\.\d+)")


def check_executors(spark, modules: tuple[str, ...] = EXECUTOR_MODULES) -> None:
    """On a cluster, the executors' Python can start and import ``modules``: one small Spark job, a
    task per default core, before any work, so that a node without the project's environment ends
    the job with one line naming what is missing and the fix rather than a worker's traceback
    later. In local mode the executors run the driver's own Python: nothing to check."""
    try:
        sc = spark.sparkContext
    except Exception:  # a Spark Connect session: its executors are the server's to provide
        return
    if sc.master.startswith("local"):
        return
    python = sc.pythonExec
    try:
        found = sc.parallelize(range(sc.defaultParallelism), sc.defaultParallelism).mapPartitions(_probe(modules))
        answers = found.distinct().collect()
    except Exception as e:
        text = str(e)
        cannot_run, mismatch, no_module = (p.search(text) for p in (_CANNOT_RUN, _VERSION_MISMATCH, _NO_MODULE))
        if no_module:
            exe, module = no_module.groups()
            raise PreflightError(
                f"the executors' Python ({exe}) has no module {module.split('.')[0]}: {PACKED_ENVIRONMENT}"
            ) from e
        if cannot_run:
            why = f" ({cannot_run.group(2).strip()})" if cannot_run.group(2) else ""
            raise PreflightError(
                f"the executors cannot start their Python {cannot_run.group(1)}{why}: {PACKED_ENVIRONMENT}"
            ) from e
        if mismatch:
            worker, driver = mismatch.groups()
            raise PreflightError(
                f"the executors' Python ({python}) is {worker}, the driver's {driver}: "
                f"the packed environment's Python must be the driver's version; {PACKED_ENVIRONMENT}"
            ) from e
        raise
    missing = sorted({m for _, _, lacking in answers for m in lacking})
    if missing:
        where = ", ".join(sorted({f"{exe} {version}" for exe, version, lacking in answers if lacking}))
        lacking = ", ".join(missing)
        raise PreflightError(f"the executors' Python ({where}) has no module {lacking}: {PACKED_ENVIRONMENT}")
    log.info("the executors' Python: %s", ", ".join(sorted({f"{exe} {version}" for exe, version, _ in answers})))


def _probe(modules: tuple[str, ...]):
    """A task that reports its Python and which of ``modules`` it cannot import. A closure, so that
    Spark ships it by value: the executors need nothing of the library to run it."""

    def probe(_):
        import importlib.util
        import sys

        lacking = tuple(m for m in modules if importlib.util.find_spec(m) is None)
        yield sys.executable, ".".join(map(str, sys.version_info[:3])), lacking

    return probe
