"""One storage object: how the driver and the Python workers reach a path, on every store.

:class:`Storage` is the driver's way to every path: preflight's checks, the staged outputs and
manifests, the one-writer locks and the input stores all go through it. Without a Spark session
it reaches local paths (no scheme, or ``file:``) with os calls, so a job's checks end in seconds
before Spark starts; with a session it reaches every path through Hadoop's FileSystem, the code
Spark itself reads and writes with (local disk, HDFS, DBFS, ``s3a://``, ``abfss://``…). The Python
workers reach the same paths through pyarrow's file systems (:func:`arrow`).

A :class:`Folder` is a path and the storage that reaches it together (datatrove's ``DataFolder``):
every output, input and cache is read, written, listed, staged and published through one, by
names relative to its root, so "how do I read or write X" has one answer: ``storage.folder(X)``.

Adding a scheme is one place, :data:`SCHEMES`: an entry says whether the driver may reach it
without a session, the name Hadoop knows it by and the name and file system pyarrow opens it
with. A scheme Hadoop and pyarrow both know by its own name (``hdfs://``, ``gs://``) needs no entry,
only its Hadoop connector's jar on the classpath. Input stores list and read with the methods
``join``, ``is_file``, ``list``, ``size``, ``read`` and ``spark_path``; :class:`Storage` has them, and
``stores.S3Store`` has them over boto3 (how the public OpenAlex bucket is read anonymously).
"""

from __future__ import annotations

import contextlib
import glob as globbing
import json
import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass

import pyarrow.fs as pafs

_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")  # one letter is a Windows drive, not a scheme


@dataclass(frozen=True)
class Scheme:
    """How one URI scheme is reached; a name left ``None`` is the scheme's own."""

    local: bool = False  # a local file: the driver reaches it with os calls when there is no session
    hadoop: str | None = None  # the scheme Hadoop's FileSystem (and so Spark) reads it as
    arrow: str | None = None  # the scheme pyarrow reads it as
    arrow_fs: type[pafs.FileSystem] | None = None  # pyarrow's file system, built from options boto3 found


SCHEMES: dict[str, Scheme] = {
    "": Scheme(local=True),
    "file": Scheme(local=True),
    "s3": Scheme(hadoop="s3a", arrow_fs=pafs.S3FileSystem),
    "s3a": Scheme(arrow="s3", arrow_fs=pafs.S3FileSystem),
}


class StorageError(ValueError):
    """A store that cannot be listed or read as asked; the message names the URI at fault."""


def scheme(path: str) -> str:
    """``path``'s URI scheme, lower case; ``""`` for a plain path."""
    match = _URI.match(path)
    return match.group(1).lower() if match else ""


def _scheme(path: str) -> Scheme:
    return SCHEMES.get(scheme(path), Scheme())


def _renamed(path: str, name: str | None) -> str:
    return f"{name}:{path.split(':', 1)[1]}" if name else path


def is_local(path: str) -> bool:
    """Whether ``path`` is a local file (plain, or ``file:``)."""
    return _scheme(path).local


def local_path(path: str) -> str:
    """A local path without its ``file:`` prefix and authority (``file:///x``, ``file:/x`` → ``/x``)."""
    if not path.startswith("file:"):
        return path
    rest = path[len("file:") :]
    if rest.startswith("//"):
        rest = "/" + rest[2:].split("/", 1)[1] if "/" in rest[2:] else "/"
    return rest


def spark_uri(uri: str) -> str:
    """The URI as Hadoop's FileSystem (and so Spark) names it: ``s3://`` → ``s3a://``."""
    return _renamed(uri, _scheme(uri).hadoop)


def arrow(path: str, options: dict | None = None) -> tuple[pafs.FileSystem, str]:
    """A pyarrow file system and path for ``path`` (how a worker reaches it). ``options`` are the
    scheme's file-system arguments (``S3FileSystem``'s, from ``stores.S3Store.arrow_options``); without
    them pyarrow finds its own (credential chain, bucket region)."""
    s = _scheme(path)
    if s.local:
        return pafs.LocalFileSystem(), local_path(path)
    uri = _renamed(path, s.arrow)
    if options is not None and s.arrow_fs is not None:
        return s.arrow_fs(**options), uri.split("://", 1)[1]
    return pafs.FileSystem.from_uri(uri)


class Storage:
    """The driver's operations on paths: with ``spark`` through Hadoop's FileSystem (every scheme
    Spark reads), without it with os calls (local paths; another scheme raises
    :class:`StorageError`). Operations on a missing path raise :class:`FileNotFoundError` except
    where said; Hadoop's other refusals arrive as Py4J errors carrying Java's message."""

    def __init__(self, spark=None) -> None:
        self.spark = spark

    def reaches(self, path: str) -> bool:
        """Whether ``path`` can be reached now (a URI other than ``file:`` needs a session)."""
        return self.spark is not None or is_local(path)

    def hadoop(self, path: str):
        """``(Hadoop FileSystem, Path)`` of ``path``; needs the session."""
        if self.spark is None:
            raise StorageError(f"{path}: reaching it through Hadoop needs a Spark session")
        jvm = self.spark.sparkContext._jvm
        jpath = jvm.org.apache.hadoop.fs.Path(path)
        return jpath.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration()), jpath

    def _os(self, path: str) -> str | None:
        """The local path when ``path`` is reached with os calls; None when through Hadoop."""
        if self.spark is not None:
            return None
        if not is_local(path):
            raise StorageError(f"{path}: a {scheme(path)}: path needs a Spark session to be reached")
        return local_path(path)

    def local_disk(self, path: str) -> str | None:
        """The absolute local file path of ``path``, whichever way it is reached; None on another store."""
        p = self._os(path)
        if p is not None:
            return os.path.abspath(p)
        hfs, jpath = self.hadoop(path)
        return hfs.makeQualified(jpath).toUri().getPath() if hfs.getUri().getScheme() == "file" else None

    def spark_path(self, path: str) -> str:
        """The URI Spark reads ``path`` as: a local file reached with os calls as ``file://``, so a
        session whose default file system is another store still reads the local file."""
        p = self._os(path)
        return "file://" + os.path.abspath(p) if p is not None else path

    def join(self, base: str, rel: str) -> str:
        if not rel:
            return base
        if not scheme(base):
            return os.path.normpath(os.path.join(base, rel))
        return f"{base.rstrip('/')}/{rel}"

    # --- what is there ------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        p = self._os(path)
        if p is not None:
            return os.path.exists(p)
        hfs, jpath = self.hadoop(path)
        return bool(hfs.exists(jpath))

    def _kind(self, path: str) -> str | None:
        """``"dir"``, ``"file"`` or None (absent)."""
        p = self._os(path)
        if p is not None:
            return "dir" if os.path.isdir(p) else "file" if os.path.isfile(p) else None
        hfs, jpath = self.hadoop(path)
        if not hfs.exists(jpath):
            return None
        return "dir" if hfs.getFileStatus(jpath).isDirectory() else "file"

    def is_dir(self, path: str) -> bool:
        return self._kind(path) == "dir"

    def is_file(self, path: str) -> bool:
        return self._kind(path) == "file"

    def readable(self, path: str) -> bool:
        """Whether this process may read ``path``; through Hadoop True (a store's refusal shows when read)."""
        p = self._os(path)
        return os.access(p, os.R_OK) if p is not None else True

    def size(self, path: str) -> int:
        p = self._os(path)
        if p is not None:
            return os.path.getsize(p)
        hfs, jpath = self.hadoop(path)
        return int(hfs.getFileStatus(jpath).getLen())

    def names(self, path: str) -> list[str]:
        """The names in the folder ``path``, sorted."""
        p = self._os(path)
        if p is not None:
            return sorted(os.listdir(p))
        hfs, jpath = self.hadoop(path)
        return sorted(s.getPath().getName() for s in hfs.listStatus(jpath))

    def glob(self, pattern: str) -> list[str]:
        """The paths matching a glob pattern (``*`` within a name; hidden names only by a pattern's ``.``)."""
        p = self._os(pattern)
        if p is not None:
            return sorted(globbing.glob(p))
        hfs, jpattern = self.hadoop(pattern)
        return sorted(s.getPath().toString() for s in (hfs.globStatus(jpattern) or []))

    def list(self, path: str) -> dict[str, int]:
        """Every file under the folder ``path``: relative path → size; ``{}`` if it is no folder."""
        p = self._os(path)
        out = {}
        if p is not None:
            for dirpath, _, names in os.walk(p):
                for name in names:
                    full = os.path.join(dirpath, name)
                    out[os.path.relpath(full, p).replace(os.sep, "/")] = os.path.getsize(full)
            return out
        hfs, jpath = self.hadoop(path)
        if not hfs.exists(jpath) or hfs.getFileStatus(jpath).isFile():
            return out
        base = hfs.getFileStatus(jpath).getPath().toString().rstrip("/") + "/"
        files = hfs.listFiles(jpath, True)
        while files.hasNext():
            status = files.next()
            out[status.getPath().toString()[len(base) :]] = status.getLen()
        return out

    # --- reading and writing ------------------------------------------------------------------
    def read(self, path: str) -> bytes:
        p = self._os(path)
        if p is not None:
            with open(p, "rb") as f:
                return f.read()
        hfs, jpath = self.hadoop(path)
        if not hfs.exists(jpath):
            raise FileNotFoundError(f"{path}: not found")
        stream = hfs.open(jpath)
        try:
            return bytes(self.spark.sparkContext._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def read_text(self, path: str) -> str:
        return self.read(path).decode("utf-8")

    def write(self, path: str, data: bytes) -> None:
        """``path`` holds ``data`` (replaced if it exists; its folder made if missing)."""
        p = self._os(path)
        if p is not None:
            os.makedirs(os.path.dirname(os.path.abspath(p)), exist_ok=True)
            with open(p, "wb") as f:
                f.write(data)
            return
        hfs, jpath = self.hadoop(path)
        out = hfs.create(jpath, True)
        try:
            out.write(bytearray(data))
        finally:
            out.close()

    def write_text(self, path: str, text: str) -> None:
        self.write(path, text.encode("utf-8"))

    def mkdirs(self, path: str) -> None:
        p = self._os(path)
        if p is not None:
            os.makedirs(p, exist_ok=True)
            return
        hfs, jpath = self.hadoop(path)
        hfs.mkdirs(jpath)

    def delete(self, path: str) -> None:
        """Remove a file or a whole folder; nothing to do when it is absent."""
        p = self._os(path)
        if p is not None:
            if os.path.isdir(p) and not os.path.islink(p):
                _rmtree(p)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(p)
            return
        hfs, jpath = self.hadoop(path)
        if hfs.exists(jpath):
            hfs.delete(jpath, True)

    def rename(self, src: str, dst: str) -> None:
        """Move ``src`` (a file or a folder) to the absent ``dst``, making ``dst``'s folder if missing;
        :class:`FileNotFoundError` when ``src`` is gone, :class:`OSError` when the store refuses."""
        p = self._os(src)
        if p is not None:
            target = self._os(dst)
            os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
            os.rename(p, target)
            return
        hfs, jsrc = self.hadoop(src)
        _, jdst = self.hadoop(dst)
        parent = jdst.getParent()
        if parent is not None and not hfs.exists(parent):
            hfs.mkdirs(parent)
        try:
            moved = hfs.rename(jsrc, jdst)
        except Exception as e:  # a missing source: False from HDFS, a Py4J error from the local disk
            if not hfs.exists(jsrc):
                raise FileNotFoundError(f"{src}: not found") from e
            raise
        if not moved:
            if not hfs.exists(jsrc):
                raise FileNotFoundError(f"{src}: not found")
            raise OSError(f"could not move {src} to {dst}")

    def probe(self, directory: str) -> None:
        """Raise what refuses a write under the folder ``directory`` (a probe is made and removed)."""
        probe = f"{directory.rstrip('/')}/.wikigame-probe-{uuid.uuid4().hex[:8]}"
        p = self._os(probe)
        if p is not None:
            os.mkdir(p)
            os.rmdir(p)
            return
        self.write(probe, b"")
        hfs, jpath = self.hadoop(probe)
        hfs.delete(jpath, False)

    def create_if_absent(self, path: str, data: bytes) -> bool:
        """Make ``path`` holding ``data`` unless it exists, atomically; True if this call made it.

        On the local disk, reached either way, a hard link of a complete temporary file (Hadoop's
        local create-without-overwrite checks, then creates); elsewhere Hadoop's create without
        overwrite: atomic on HDFS, on object stores only as atomic as the store.
        """
        p = self.local_disk(path)
        if p is not None:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            tmp = f"{p}.{uuid.uuid4().hex[:8]}.tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            try:
                os.link(tmp, p)  # fails if ``p`` exists; readers never see it part-written
                return True
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
        hfs, jpath = self.hadoop(path)
        try:
            out = hfs.create(jpath, False)
        except Exception as e:  # FileAlreadyExistsException arrives as a Py4J error
            if "AlreadyExists" in str(e) or hfs.exists(jpath):
                return False
            raise
        try:
            out.write(bytearray(data))
        finally:
            out.close()
        return True

    def arrow(self, path: str, options: dict | None = None) -> tuple[pafs.FileSystem, str]:
        """How a worker reaches ``path`` (:func:`arrow`)."""
        return arrow(path, options)

    def upload(self, local: str, path: str) -> None:
        """Copy the local file ``local`` to ``path`` (a mapped file made on the driver's disk)."""
        p = self._os(path)
        if p is not None:
            os.makedirs(os.path.dirname(os.path.abspath(p)), exist_ok=True)
            shutil.copyfile(local, p)
            return
        hfs, jpath = self.hadoop(path)
        hfs.copyFromLocalFile(
            False, True, self.spark.sparkContext._jvm.org.apache.hadoop.fs.Path(f"file://{local}"), jpath
        )

    def folder(self, path: str) -> Folder:
        """The folder at ``path``, reached by this storage."""
        return Folder(self, path)


def folder(path: str, spark=None) -> Folder:
    """The folder at ``path``: a local one with os calls (no session needed), another through
    ``spark``'s Hadoop FileSystem."""
    return Folder(Storage(None if is_local(path) else spark), path)


@dataclass(frozen=True)
class Folder:
    """A path and the storage that reaches it: what every reader and writer of an output takes.

    Names are relative to :attr:`root` (``""`` is the path itself: a file's folder reads the
    file); :meth:`sub` is a folder inside it, :meth:`sibling` one beside it (a staging folder)."""

    storage: Storage
    root: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", self.root.rstrip("/") or self.root)

    def __str__(self) -> str:
        return self.root

    def path(self, rel: str = "") -> str:
        return self.storage.join(self.root, rel)

    def sub(self, rel: str) -> Folder:
        return Folder(self.storage, self.path(rel))

    @property
    def name(self) -> str:
        return self.root.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> str:
        """The path of the folder holding this one (``""`` for a bare name)."""
        return self.root.rstrip("/").rpartition("/")[0]

    def outer(self) -> Folder:
        """The folder holding this one."""
        return Folder(self.storage, self.parent or ".")

    def sibling(self, name: str) -> Folder:
        """The folder ``name`` beside this one."""
        return Folder(self.storage, f"{self.parent}/{name}" if self.parent else name)

    def exists(self, rel: str = "") -> bool:
        return self.storage.exists(self.path(rel))

    def is_dir(self, rel: str = "") -> bool:
        return self.storage.is_dir(self.path(rel))

    def names(self, rel: str = "") -> list[str]:
        return self.storage.names(self.path(rel))

    def glob(self, pattern: str) -> list[str]:
        """The paths under the folder matching ``pattern`` (relative to the root)."""
        return self.storage.glob(self.path(pattern))

    def list(self, rel: str = "") -> dict[str, int]:
        return self.storage.list(self.path(rel))

    def read(self, rel: str = "") -> bytes:
        return self.storage.read(self.path(rel))

    def read_text(self, rel: str = "") -> str:
        return self.storage.read_text(self.path(rel))

    def read_json(self, rel: str = ""):
        return json.loads(self.read_text(rel))

    def write(self, rel: str, data: bytes) -> None:
        self.storage.write(self.path(rel), data)

    def write_text(self, rel: str, text: str) -> None:
        self.storage.write_text(self.path(rel), text)

    def write_json(self, rel: str, obj) -> None:
        self.write_text(rel, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")

    def upload(self, local: str, rel: str) -> None:
        self.storage.upload(local, self.path(rel))

    def mkdirs(self, rel: str = "") -> None:
        self.storage.mkdirs(self.path(rel))

    def delete(self, rel: str = "") -> None:
        self.storage.delete(self.path(rel))

    def rename(self, rel: str, dst: str) -> None:
        """Move ``rel`` (``""``: the folder itself) to the path ``dst``."""
        self.storage.rename(self.path(rel), dst)

    def local_disk(self, rel: str = "") -> str | None:
        return self.storage.local_disk(self.path(rel))

    def spark_path(self, rel: str = "") -> str:
        """What Spark reads and writes this folder as: a local one as ``file://``, also where the
        session's default file system is another (HDFS on YARN and EMR)."""
        return self.storage.spark_path(self.path(rel))

    def arrow(self, rel: str = "", options: dict | None = None) -> tuple[pafs.FileSystem, str]:
        return self.storage.arrow(self.path(rel), options)


def _rmtree(path: str) -> None:
    """``shutil.rmtree`` that outlasts a writer still finishing: a killed run's JVM can commit or
    drop its ``_temporary`` files for a moment after the driver is gone, under the folder being removed."""
    for wait in (0.1, 0.5, 2.0):
        try:
            shutil.rmtree(path)
            return
        except FileNotFoundError:
            if not os.path.lexists(path):
                return
            time.sleep(wait)
    shutil.rmtree(path)
