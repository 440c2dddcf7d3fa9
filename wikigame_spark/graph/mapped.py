"""The graph for playing as files every Python worker of a node maps read-only: one copy per node.

Loading the graph into each Python worker (CSR as int64, every title and summary as a Python
string, float32 embedding matrices) costs a node its size times its cores; English Wikipedia's
would be ~20 GB per worker. Here each graph is written once, by the driver, into a folder of flat
files (cached beside the graph like the embedding cache, rebuilt when what made it changes):

- ``indptr.npy`` (int32; int64 when the edges exceed 2³¹ − 1) and ``indices.npy`` (int32): the
  out-links as CSR, neighbours ascending (the engine's tie order);
- ``titles.offsets.npy`` + ``titles.bytes`` and the same for ``summaries``: Arrow's
  ``large_string`` layout (int64 offsets, UTF-8 bytes); a text is decoded only when an agent asks
  for it (the target's and the offered links', never all of them);
- embedding matrices (:func:`ensure_matrix`): ``vectors.npy``, float32 — the values of the Parquet
  cache unchanged, so the routes are the same as from it (float16 would halve the file and change
  some routes, measured by ``bench/bench_scale.py``).

``np.load(mmap_mode="r")`` maps them: the page cache holds one copy per node, shared by every worker
process, and a worker's own memory does not grow with the graph. A folder on a local or shared file
system is mapped in place; one on an object store (S3, HDFS) is copied once per node to local disk
(:func:`local_folder`), verified against the sizes and SHA-1s of its manifest, with a marker written
last: a copy cut short (a killed worker, a full disk) is found and replaced, never read as a smaller
graph.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from pyspark.sql import SparkSession

from wikigame_spark import layout, manifests, outputs, parquet, storage
from wikigame_spark.graph.csr import compact_ptr, place, row_runs
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.handles import GraphHandle
from wikigame_spark.layout import CacheDir, GraphDir
from wikigame_spark.schemas import DST, ID, SRC, SUMMARY, TITLE

log = logging.getLogger(__name__)

VERSION = 1  # of the files' layout: a folder of another version is rebuilt
COMPLETE = ".complete.json"  # a node-local copy's marker, written after every file was verified
SORT_EDGES = 1 << 24  # edges sorted per pass when neighbours are put in order
BATCH_ROWS = 8192  # Parquet rows of text per batch while building (bounds the builder's memory)


def _is_local(uri: str) -> bool:
    return "://" not in uri and not uri.startswith(("dbfs:", "s3", "hdfs:", "gs:", "abfs"))


def _local(uri: str) -> str:
    return uri[len("file:") :].replace("//", "/", 1) if uri.startswith("file:") else uri


def _dataset(path: str) -> ds.Dataset:
    fs, p = storage.arrow(path)
    return ds.dataset(p, filesystem=fs, format=parquet.parquet_format())


def _write_texts(nodes: ds.Dataset, n: int, column: str, folder: str, name: str, batch_rows: int) -> None:
    """``name.offsets.npy`` (int64, n + 1) and ``name.bytes`` from a string column, in id order.

    Two passes over the column (lengths, then bytes) so the builder never holds all texts.
    """
    lengths = np.zeros(n, dtype=np.int64)
    for batch in nodes.to_batches(columns=[ID, column], batch_size=batch_rows):
        ids = batch.column(ID).to_numpy()
        lengths[ids] = pc.fill_null(pc.binary_length(batch.column(column)), 0).to_numpy()
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    np.save(f"{folder}/{name}.offsets.npy", offsets)
    total = int(offsets[-1])
    with open(f"{folder}/{name}.bytes", "wb") as f:
        f.truncate(total)
    if not total:
        return
    data = np.memmap(f"{folder}/{name}.bytes", dtype=np.uint8, mode="r+", shape=(total,))
    for batch in nodes.to_batches(columns=[ID, column], batch_size=batch_rows):
        texts = pc.fill_null(batch.column(column), "").cast(pa.large_string())
        if not len(texts):
            continue
        _, src_offsets, src_data = texts.buffers()
        src_off = np.frombuffer(src_offsets, dtype=np.int64)[texts.offset : texts.offset + len(texts) + 1]
        ids = batch.column(ID).to_numpy()
        block = np.frombuffer(src_data, dtype=np.uint8)[src_off[0] : src_off[-1]]
        if np.all(np.diff(ids) == 1):  # consecutive ids (Spark's usual files): one block
            data[offsets[ids[0]] : offsets[ids[-1] + 1]] = block
            continue
        # byte k of row j goes to offsets[id_j] + (k − src_off[j])
        shift = np.repeat(offsets[ids] - src_off[:-1], np.diff(src_off))
        data[shift + np.arange(src_off[0], src_off[-1], dtype=np.int64)] = block
    data.flush()
    del data


def _node_count(graph_dir: str, nodes: ds.Dataset) -> int:
    """N, after checking that the ids are exactly 0…N−1 (the graph contract)."""
    n = nodes.count_rows()
    seen = np.zeros(n, dtype=np.bool_)
    for batch in nodes.to_batches(columns=[ID], batch_size=1 << 20):
        ids = batch.column(ID).to_numpy()
        if ids.size and (ids.min() < 0 or ids.max() >= n):
            raise ValueError(f"{GraphDir(graph_dir).nodes}: ids are not dense 0…N−1 (the graph contract)")
        seen[ids] = True
    if not seen.all():  # n rows, every id in range and each seen: no id twice
        raise ValueError(f"{GraphDir(graph_dir).nodes}: ids are not dense 0…N−1 (the graph contract)")
    return n


def _write_csr(graph_dir: str, n: int, folder: str, batch_rows: int, sort_edges: int) -> int:
    """``indptr.npy`` and ``indices.npy`` by a counting sort over the edge batches; returns M."""
    edges = _dataset(GraphDir(graph_dir).edges)
    counts = np.zeros(n, dtype=np.int64)
    for batch in edges.to_batches(columns=[SRC, DST], batch_size=batch_rows * 128):
        src, dst = batch.column(SRC).to_numpy(), batch.column(DST).to_numpy()
        if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
            raise ValueError(f"{GraphDir(graph_dir).edges}: an edge names a node id outside 0…{n - 1}")
        counts += np.bincount(src, minlength=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    m = int(indptr[-1])
    np.save(f"{folder}/indptr.npy", compact_ptr(indptr, m))
    indices = np.lib.format.open_memmap(f"{folder}/indices.npy", mode="w+", dtype=np.int32, shape=(m,))
    cursor = indptr[:-1].copy()
    for batch in edges.to_batches(columns=[SRC, DST], batch_size=batch_rows * 128):
        place(indices, cursor, batch.column(SRC).to_numpy(), batch.column(DST).to_numpy())
    # neighbours ascending within each node, a bounded run of whole nodes at a time
    for r0, r1 in row_runs(indptr, sort_edges):
        rows = np.repeat(np.arange(r0, r1, dtype=np.int64), counts[r0:r1])
        key = rows * n + indices[indptr[r0] : indptr[r1]]
        key.sort()
        indices[indptr[r0] : indptr[r1]] = key - rows * n
    if m:
        indices.flush()
    del indices
    return m


def build_graph_files(graph_dir: str, folder: str, batch_rows: int = BATCH_ROWS, sort_edges: int = SORT_EDGES) -> dict:
    """Write the graph's files into the local ``folder``; returns the counts for the manifest.

    Memory: O(nodes) plus a batch (``batch_rows`` texts, 128 × as many edges) and ``sort_edges``
    edges, whatever the graph's size; the files are written through their mappings.
    """
    nodes = _dataset(GraphDir(graph_dir).nodes)
    with parquet.checked_pages(GraphDir(graph_dir).nodes):
        n = _node_count(graph_dir, nodes)
    with parquet.checked_pages(GraphDir(graph_dir).edges):
        m = _write_csr(graph_dir, n, folder, batch_rows, sort_edges)
    with parquet.checked_pages(GraphDir(graph_dir).nodes):
        for column, name in ((TITLE, "titles"), (SUMMARY, "summaries")):
            _write_texts(nodes, n, column, folder, name, batch_rows)
    return {"nodes": n, "edges": m}


def build_matrix_file(vectors_path: str, folder: str) -> dict:
    """``vectors.npy`` (float32, N × d, row = node id) from a Parquet ``(id, vector)`` table."""
    with parquet.checked_pages(vectors_path):
        return _write_matrix(vectors_path, folder)


def _write_matrix(vectors_path: str, folder: str) -> dict:
    table = _dataset(vectors_path)
    n = table.count_rows()
    matrix = None
    seen = np.zeros(n, dtype=np.bool_)
    for batch in table.to_batches(columns=[ID, "vector"], batch_size=BATCH_ROWS):
        if not batch.num_rows:
            continue
        ids = batch.column(ID).to_numpy()
        flat = batch.column("vector").flatten().to_numpy().astype(np.float32, copy=False)
        if matrix is None:
            matrix = np.lib.format.open_memmap(
                f"{folder}/vectors.npy", mode="w+", dtype=np.float32, shape=(n, flat.size // ids.size)
            )
        if ids.min() < 0 or ids.max() >= n:
            raise ValueError(f"{vectors_path}: vector ids are not 0…N−1; rebuild the cache")
        matrix[ids] = flat.reshape(ids.size, -1)
        seen[ids] = True
    if not seen.all():
        raise ValueError(f"{vectors_path}: vector ids are not 0…N−1; rebuild the cache")
    if matrix is None:
        matrix = np.lib.format.open_memmap(f"{folder}/vectors.npy", mode="w+", dtype=np.float32, shape=(0, 0))
    dims = matrix.shape[1]
    if matrix.size:
        matrix.flush()
    del matrix
    return {"nodes": n, "dimensions": dims}


def _read_manifest(uri: str) -> dict | None:
    fs, p = storage.arrow(layout.manifest(uri))
    try:
        with fs.open_input_stream(p) as f:
            return json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        return None


def _sizes_match(folder: str, files: dict) -> bool:
    return all(
        os.path.isfile(f"{folder}/{name}") and os.path.getsize(f"{folder}/{name}") == meta["bytes"]
        for name, meta in files.items()
    )


def _current(uri: str, made_from: dict) -> dict | None:
    manifest = _read_manifest(uri)
    if manifest is None or manifest.get("made_from") != made_from:
        return None
    if _is_local(uri) and not _sizes_match(_local(uri), manifest["files"]):
        log.warning("%s: a file's size differs from its manifest; rebuilding", uri)
        return None
    return manifest


def ensure_folder(spark: SparkSession, uri: str, made_from: dict, build: Callable[[str], dict]) -> dict:
    """The manifest of the mapped folder ``uri`` made from ``made_from``, building it first when
    it is missing, older or damaged. ``build(local_folder)`` writes the files and returns counts.

    Built on the driver's local disk and published whole (staged, then renamed into place, on any
    store Spark writes); the manifest lists every file's size and SHA-1 for the node-local copies.
    """
    done = _current(uri, made_from)
    if done:
        return done
    with contextlib.ExitStack() as stack:
        staging = stack.enter_context(outputs.staged_output(storage.folder(uri, spark), overwrite=True))
        on_disk = staging.local_disk()
        local = on_disk or stack.enter_context(tempfile.TemporaryDirectory())
        os.makedirs(local, exist_ok=True)
        counts = build(local)
        files = {
            name: {
                "bytes": os.path.getsize(f"{local}/{name}"),
                "sha1": manifests.file_digest(f"{local}/{name}", "sha1"),
            }
            for name in sorted(os.listdir(local))
        }
        manifest = {"kind": "mapped", "version": VERSION, "made_from": made_from, "files": files, **counts}
        if on_disk is None:
            for name in files:
                staging.upload(f"{local}/{name}", name)
        manifests.write_manifest(staging, {**manifest, "code_version": manifests.code_version()})
    log.info("mapped files of %s written to %s (%d bytes)", made_from, uri, sum(f["bytes"] for f in files.values()))
    return _read_manifest(uri)


def ensure_graph(spark: SparkSession, graph: GraphHandle | str, cache_dir: str | None = None) -> str:
    """The mapped files of ``graph`` (an opened graph, or its folder) under ``cache_dir``
    (default: the graph's cache folder), built once per build of the graph."""
    if isinstance(graph, str):
        graph = GraphHandle.open(graph, spark)
    uri = CacheDir(cache_dir or graph.cache_dir).mapped_graph
    made_from = {"graph": graph.path, "graph_manifest_sha1": graph.sha1}
    ensure_folder(spark, uri, made_from, lambda folder: build_graph_files(graph.path, folder))
    return uri


def ensure_matrix(spark: SparkSession, cache_path: str) -> str:
    """The mapped float32 matrix of a Parquet embedding cache, kept inside it (so a rebuilt cache
    drops it with the rest) and made once per build of the cache."""
    uri = CacheDir.mapped_matrix(cache_path)
    made_from = {
        "cache": cache_path,
        "cache_manifest_sha1": manifests.manifest_sha1(manifests.read_manifest(storage.folder(cache_path, spark))),
    }
    ensure_folder(spark, uri, made_from, lambda folder: build_matrix_file(CacheDir.vectors(cache_path), folder))
    return uri


@contextlib.contextmanager
def _node_lock(path: str) -> Iterator[None]:
    """Held by one process of the node at a time (every worker copying the same folder waits)."""
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _copy_verified(uri: str, name: str, meta: dict, dest: str) -> None:
    fs, p = storage.arrow(layout.join(uri, name))
    digest, size = hashlib.sha1(), 0
    with fs.open_input_stream(p) as src, open(dest, "wb") as out:
        for block in iter(lambda: src.read(1 << 22), b""):
            digest.update(block)
            out.write(block)
            size += len(block)
        out.flush()
        os.fsync(out.fileno())
    if size != meta["bytes"] or digest.hexdigest() != meta["sha1"]:
        raise ValueError(
            f"{uri}/{name}: copied {size} bytes with SHA-1 {digest.hexdigest()}, the manifest says "
            f"{meta['bytes']} bytes, {meta['sha1']}; the folder changed while it was read"
        )


def local_folder(uri: str, root: str | None = None) -> str:
    """A local folder holding the files of the mapped folder ``uri``, whole.

    Local or shared file systems: ``uri`` itself (its sizes checked against its manifest). Object
    stores: a copy under ``root`` (default: the node's temporary directory), one per node and per
    manifest, made by the first worker while the others wait, every file's size and SHA-1 checked,
    then the marker written; a copy without the marker, or whose sizes differ from it, is removed and
    made again. A process holds the copies it uses; making a new copy removes the ones no live
    process holds (earlier builds), so a node's disk does not fill with old graphs.
    """
    manifest = _read_manifest(uri)
    if manifest is None:
        raise FileNotFoundError(f"{uri}: no {layout.MANIFEST}; not a finished mapped folder")
    files = manifest["files"]
    if _is_local(uri):
        folder = _local(uri)
        if not _sizes_match(folder, files):
            raise ValueError(f"{uri}: a file's size differs from its manifest; the folder is damaged, rebuild it")
        return folder
    base = os.path.join(root or tempfile.gettempdir(), "wikigame-mapped")
    os.makedirs(base, exist_ok=True)
    dest = os.path.join(base, manifests.manifest_sha1(manifest))
    with _node_lock(f"{dest}.lock"):
        marker = os.path.join(dest, COMPLETE)
        if os.path.isfile(marker):
            with open(marker, encoding="utf-8") as f:
                if json.load(f) == files and _sizes_match(dest, files):
                    _hold(dest)
                    return dest
            log.warning("%s: a local copy whose files differ from its marker; copying again", dest)
        elif os.path.exists(dest):
            log.warning("%s: a partial local copy (no marker); copying again", dest)
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        for name, meta in files.items():
            _copy_verified(uri, name, meta, os.path.join(dest, name))
        with open(f"{marker}.tmp", "w", encoding="utf-8") as f:
            json.dump(files, f)
            f.flush()
            os.fsync(f.fileno())
        os.rename(f"{marker}.tmp", marker)
        _hold(dest)
        log.info("copied %s to %s", uri, dest)
        _prune(base)
    return dest


_held: dict[str, int] = {}  # node-local copies this process uses → its descriptor of their ``.use`` file


def _hold(folder: str) -> None:
    """Mark a node-local copy as used by this process for its lifetime (a shared lock on
    ``folder.use``, taken under the folder's copy lock), so that no other process removes it."""
    if folder not in _held:
        fd = os.open(f"{folder}.use", os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(fd, fcntl.LOCK_SH)
        _held[folder] = fd


def _prune(base: str) -> None:
    """Remove the node-local copies that no live process uses: those of earlier builds of a graph or
    cache, whose users have ended. Called after a new copy, so a node keeps what its jobs map."""
    for name in os.listdir(base):
        folder = os.path.join(base, name)
        if not os.path.isdir(folder) or folder in _held:
            continue
        with open(f"{folder}.lock", "a+") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # being copied: leave it
            except BlockingIOError:
                continue
            use = os.open(f"{folder}.use", os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(use, fcntl.LOCK_EX | fcntl.LOCK_NB)  # used by a live process: leave it
            except BlockingIOError:
                continue
            finally:
                os.close(use)  # releases the lock when it was taken
            shutil.rmtree(folder, ignore_errors=True)
            log.info("removed %s: a node-local copy no live process uses", folder)


def _map(path: str) -> np.ndarray:
    """A read-only mapped ``.npy`` as a plain ndarray (slices are views of the mapping)."""
    return np.asarray(np.load(path, mmap_mode="r"))


def _map_bytes(path: str) -> np.ndarray:
    size = os.path.getsize(path)
    return np.asarray(np.memmap(path, dtype=np.uint8, mode="r")) if size else np.zeros(0, dtype=np.uint8)


class Texts(Sequence):
    """Node texts in Arrow's ``large_string`` layout, mapped: ``texts[i]`` decodes text ``i`` only."""

    def __init__(self, offsets: np.ndarray, data: np.ndarray) -> None:
        self.offsets = offsets
        self.data = data

    def __len__(self) -> int:
        return self.offsets.size - 1

    def __getitem__(self, i) -> str:
        i = int(i)
        if not 0 <= i < len(self):
            raise IndexError(f"node {i} is not in 0…{len(self) - 1}")
        return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes().decode("utf-8")


class MappedGraph(WorkerGraph):
    """:class:`WorkerGraph` over the mapped files of a local folder (see :func:`local_folder`)."""

    def __init__(self, folder: str) -> None:  # the arrays are mapped, not built: no WorkerGraph.__init__
        self.folder = folder
        self.indptr = _map(f"{folder}/indptr.npy")
        self.indices = _map(f"{folder}/indices.npy")
        self.titles = Texts(_map(f"{folder}/titles.offsets.npy"), _map_bytes(f"{folder}/titles.bytes"))
        self.summaries = Texts(_map(f"{folder}/summaries.offsets.npy"), _map_bytes(f"{folder}/summaries.bytes"))


def map_matrix(uri: str) -> np.ndarray:
    """The (N, d) float32 matrix of a mapped folder (:func:`ensure_matrix`), mapped read-only."""
    return _map(f"{local_folder(uri)}/vectors.npy")


_lock = threading.Lock()


@functools.lru_cache(maxsize=2)
def _mapped(uri: str) -> MappedGraph:
    return MappedGraph(local_folder(uri))


def mapped_graph(uri: str) -> MappedGraph:
    """The graph of the mapped folder ``uri``, opened at most once per worker process."""
    with _lock:
        return _mapped(uri)
