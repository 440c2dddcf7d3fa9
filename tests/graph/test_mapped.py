"""The mapped layout: the same graph as the in-memory one, the same routes for every agent, a
worker's own memory independent of the graph's size, damaged files and partial copies found."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.play.games import small_graph
from wikigame_spark.graph import mapped
from wikigame_spark.graph.worker_graph import WorkerGraph


def test_the_mapped_files_hold_the_graph_of_the_parquet_tables(spark, ltg_graph, tmp_path):
    memory = WorkerGraph.from_directory(ltg_graph)
    graph = mapped.mapped_graph(mapped.ensure_graph(spark, ltg_graph, str(tmp_path / "cache")))
    assert graph.indices.dtype == np.int32 and graph.indptr.dtype == np.int32
    assert np.array_equal(graph.indptr, memory.indptr) and np.array_equal(graph.indices, memory.indices)
    assert list(graph.titles) == memory.titles and list(graph.summaries) == memory.summaries


def test_any_order_of_rows_and_files_gives_the_same_files(tmp_path):
    """Nodes and edges in shuffled order over several files and small batches (the bytes are
    scattered, neighbours sorted a few nodes at a time): the files of the ordered tables."""
    graph, _ = write_graph(tmp_path / "a", 500)
    shuffled = str(tmp_path / "shuffled")
    rng = np.random.default_rng(2)
    for table in ("nodes", "edges"):
        t = pq.read_table(f"{graph}/{table}")
        t = t.take(rng.permutation(t.num_rows))
        os.makedirs(f"{shuffled}/{table}")
        for i in range(3):
            part = t.slice(i * (t.num_rows // 3 + 1), t.num_rows // 3 + 1)
            pq.write_table(part, f"{shuffled}/{table}/part-{i}.parquet", row_group_size=37)
    folders = [str(tmp_path / "ordered-files"), str(tmp_path / "shuffled-files")]
    counts = {"nodes": 500, "edges": pq.read_metadata(f"{graph}/edges/part-0.parquet").num_rows}
    for source, folder in zip((graph, shuffled), folders):
        os.makedirs(folder)
        assert mapped.build_graph_files(source, folder, batch_rows=50, sort_edges=64) == counts
    for name in sorted(os.listdir(folders[0])):
        assert open(f"{folders[0]}/{name}", "rb").read() == open(f"{folders[1]}/{name}", "rb").read(), name


def write_graph(tmp_path, n: int, edges_per_node: int = 8, dims: int = 128) -> tuple[str, str]:
    """A generated graph with 1,000-character summaries and a Parquet embedding cache of unit vectors."""
    rng = np.random.default_rng(n)
    src = np.repeat(np.arange(n), edges_per_node)
    dst = rng.integers(0, n, src.size)
    edges = sorted(set(zip(src[src != dst].tolist(), dst[src != dst].tolist())))
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    summaries = [(" ".join(words[(i + k) % 8] for k in range(200)))[:1000] for i in range(n)]
    graph = small_graph(tmp_path, [f"Node {i}" for i in range(n)], edges, summaries)
    cache = f"{graph}/cache/embeddings/test/summary-noprompt"
    os.makedirs(f"{cache}/vectors")
    v = rng.standard_normal((n, dims)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    vectors = pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32) * dims), v.reshape(-1))
    pq.write_table(pa.table({"id": pa.array(np.arange(n)), "vector": vectors}), f"{cache}/vectors/p.parquet")
    with open(f"{cache}/manifest.json", "w") as f:
        json.dump({"kind": "embeddings", "source_created": "test"}, f)
    return graph, cache


def test_a_damaged_mapped_folder_is_refused_and_rebuilt(spark, tmp_path):
    graph, _ = write_graph(tmp_path, 300)
    uri = mapped.ensure_graph(spark, graph, f"{graph}/cache")
    whole = open(f"{uri}/indices.npy", "rb").read()
    with open(f"{uri}/indices.npy", "r+b") as f:
        f.truncate(len(whole) - 100)
    with pytest.raises(ValueError, match="a file's size differs from its manifest"):
        mapped.local_folder(uri)
    assert mapped.ensure_graph(spark, graph, f"{graph}/cache") == uri  # found damaged: rebuilt
    assert open(f"{uri}/indices.npy", "rb").read() == whole


def _sha1(path: str) -> str:
    return hashlib.sha1(open(path, "rb").read()).hexdigest()


def test_a_partial_node_local_copy_is_replaced(spark, tmp_path, monkeypatch):
    """A folder on S3 (a local S3 server) is copied to the node once; a copy cut short (no marker:
    killed mid-copy) or whose file is shorter than its marker says (a full disk) is replaced."""
    from tests.s3server import CREDENTIALS, s3_server

    graph, _ = write_graph(tmp_path, 300)
    here = mapped.ensure_graph(spark, graph, f"{graph}/cache")
    manifest = json.load(open(f"{here}/manifest.json"))
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    with s3_server() as s3:
        monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint_url)
        bucket = s3.new_bucket()
        s3.upload_tree(here, bucket, "cache/mapped/graph")
        uri = f"s3://{bucket}/cache/mapped/graph"
        root = str(tmp_path / "node")
        copy = mapped.local_folder(uri, root)
        assert copy.startswith(root) and mapped.COMPLETE in os.listdir(copy)
        for name, meta in manifest["files"].items():
            assert _sha1(f"{copy}/{name}") == meta["sha1"]
        os.remove(f"{copy}/{mapped.COMPLETE}")  # killed mid-copy: the marker is never written
        with open(f"{copy}/summaries.bytes", "r+b") as f:
            f.truncate(10)
        assert mapped.local_folder(uri, root) == copy
        assert os.path.getsize(f"{copy}/summaries.bytes") == manifest["files"]["summaries.bytes"]["bytes"]
        with open(f"{copy}/indices.npy", "r+b") as f:  # marker there, a file short: a full disk
            f.truncate(64)
        assert mapped.local_folder(uri, root) == copy
        for name, meta in manifest["files"].items():
            assert _sha1(f"{copy}/{name}") == meta["sha1"]
        graph = mapped.MappedGraph(copy)
        assert graph.num_nodes == 300 and graph.titles[299] == "Node 299"
