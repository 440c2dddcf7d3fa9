"""The mapped layout: the same graph as the in-memory one, the same routes for every agent, a
worker's own memory independent of the graph's size, damaged files and partial copies found."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import ROOT
from wikigame_spark.agents.base import AgentSettings, agent_class
from wikigame_spark.devtools.faulty_server import FaultyServer
from wikigame_spark.devtools.games import small_graph, write_games
from wikigame_spark.graph import mapped
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.handles import GraphHandle
from wikigame_spark.parquet import read_columns
from wikigame_spark.play.engine import play_games


def in_memory_matrix(cache: str) -> np.ndarray:
    """The vectors of a Parquet embedding cache read whole, as the play stage did before mapping."""
    table = read_columns(f"{cache}/vectors", ["id", "vector"]).sort_by("id")
    return table.column("vector").combine_chunks().flatten().to_numpy().reshape(table.num_rows, -1)


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


@pytest.mark.slow
def test_every_agent_plays_the_same_routes_on_the_mapped_latgalian_graph(spark, ltg_graph, tmp_path):
    """Each agent on the mapped graph (and the mapped matrix) and on the graph read into memory
    (and the Parquet cache read whole, as before): the same route in every game."""
    memory = WorkerGraph.from_directory(ltg_graph)
    graph = mapped.mapped_graph(mapped.ensure_graph(spark, ltg_graph, str(tmp_path / "cache")))
    games = pq.read_table(f"{write_games(ltg_graph, 60, seed=3, path=str(tmp_path / 'games'))}/games").to_pylist()

    def routes(name: str, g, settings: AgentSettings, resources: dict, max_steps: int = 100, matrix=None) -> list:
        agent = agent_class(name)(g, settings, resources)
        if matrix is not None:
            agent.targets = agent.links = matrix
        return [r["route"] for r in play_games(games, g, agent, max_steps, name, None)]

    for name, options in (("random", {"seed": 2}), ("tfidf", {"tfidf_sample_size": 500})):
        settings = agent_class(name).configure(**options)
        resources = agent_class(name).prepare(spark, GraphHandle.open(ltg_graph), settings)
        assert routes(name, graph, settings, resources) == routes(name, memory, settings, resources), name
    embedding = agent_class("embedding").configure()
    resources = agent_class("embedding").prepare(spark, GraphHandle.open(ltg_graph), embedding)
    matrix = in_memory_matrix(os.path.dirname(resources["targets"]))
    ours = routes("embedding", graph, embedding, resources)
    assert ours == routes("embedding", memory, embedding, resources, matrix=matrix)
    with FaultyServer() as server:  # replies with the target when it is offered, else the first title
        for name in ("llm", "reasoning"):
            llm = agent_class(name).configure(model="test", base_url=server.url, timeout=5, max_titles=50)
            assert routes(name, graph, llm, {}, 12) == routes(name, memory, llm, {}, 12), name


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


def measure(graph_uri: str, matrix_uri: str, games: list[dict], layout: str) -> dict:
    """Run in a fresh process: the growth of its anonymous memory (not file-backed) while it opens
    a graph and plays games with it, reading every summary once."""
    from wikigame_spark.agents.base import AgentSpec, agent_class, worker_agent

    settings = agent_class("embedding").configure()

    def anonymous() -> int:
        with open("/proc/self/smaps_rollup") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("Anonymous:"))

    before = anonymous()
    if layout == "mapped":
        graph = mapped.mapped_graph(graph_uri)
        agent = worker_agent(AgentSpec("embedding", settings, {"targets": matrix_uri, "links": matrix_uri}), graph)
    else:
        graph = WorkerGraph.from_directory(graph_uri)
        agent = worker_agent(AgentSpec("embedding", settings, {"targets": matrix_uri, "links": matrix_uri}), graph)
        agent.targets = agent.links = in_memory_matrix(os.path.dirname(matrix_uri))
    steps = sum(r["steps"] for r in play_games(games, graph, agent, 100, "embedding", None))
    chars = sum(len(s) for s in graph.summaries)
    return {"growth": anonymous() - before, "steps": steps, "chars": chars}


def measured(graph_uri: str, matrix_uri: str, games: list[dict], layout: str) -> dict:
    code = (
        "import json, sys; from tests.graph.test_mapped import measure; "
        "print(json.dumps(measure(*json.loads(sys.stdin.read()))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps([graph_uri, matrix_uri, games, layout]),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_a_workers_memory_does_not_grow_with_the_graph(spark, tmp_path):
    """Two graphs 20× apart: the mapped worker's own memory grows alike (the files are shared page
    cache), while loading the graph into the worker grows with the graph."""
    found = {}
    for n in (2_000, 40_000):
        graph, cache = write_graph(tmp_path / str(n), n)
        graph_uri = mapped.ensure_graph(spark, graph, f"{graph}/cache")
        matrix_uri = mapped.ensure_matrix(spark, cache)
        files = sum(
            json.load(open(f"{uri}/manifest.json"))["files"][name]["bytes"]
            for uri in (graph_uri, matrix_uri)
            for name in json.load(open(f"{uri}/manifest.json"))["files"]
        )
        rng = np.random.default_rng(1)
        games = [
            {"game_id": i, "source": int(s), "target": int(t), "optimal_steps": 1}
            for i, (s, t) in enumerate(rng.integers(0, n, (200, 2)))
        ]
        found[n] = {
            "files": files,
            "mapped": measured(graph_uri, matrix_uri, games, "mapped"),
            "memory": measured(graph, matrix_uri, games, "memory"),
        }
    small, large = found[2_000], found[40_000]
    print({n: {k: v if k == "files" else v["growth"] for k, v in f.items()} for n, f in found.items()})
    assert large["files"] - small["files"] > 50 * 2**20
    assert large["mapped"]["chars"] == 40_000 * 1000  # every summary was read
    assert large["mapped"]["growth"] - small["mapped"]["growth"] < 8 * 2**20
    assert large["memory"]["growth"] - small["memory"]["growth"] > (large["files"] - small["files"]) / 2


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


HOLD = """import sys
from wikigame_spark.graph import mapped
print(mapped.local_folder(sys.argv[1], sys.argv[2]), flush=True)
sys.stdin.readline()  # holds the copy until told to end
"""


@pytest.mark.slow
def test_node_local_copies_no_live_process_uses_are_removed(spark, tmp_path, monkeypatch):
    """A new copy removes older ones whose processes have ended, never one a live process maps."""
    from tests.s3server import CREDENTIALS, s3_server

    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    root = str(tmp_path / "node")
    with s3_server() as s3:
        monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint_url)
        bucket = s3.new_bucket()
        uris = []
        for n in (100, 120, 140):
            os.makedirs(tmp_path / str(n))
            graph, _ = write_graph(tmp_path / str(n), n)
            s3.upload_tree(mapped.ensure_graph(spark, graph, f"{graph}/cache"), bucket, f"g{n}")
            uris.append(f"s3://{bucket}/g{n}")

        def holder(uri: str) -> subprocess.Popen:
            p = subprocess.Popen(
                [sys.executable, "-c", HOLD, uri, root],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            p.copy = p.stdout.readline().strip()
            return p

        ended = holder(uris[0])
        ended.communicate("\n", timeout=60)  # copied, then its process ended
        live = holder(uris[1])
        try:
            mine = mapped.local_folder(uris[2], root)
            assert not os.path.exists(ended.copy)  # nobody uses it: removed
            assert os.path.isfile(f"{live.copy}/{mapped.COMPLETE}")  # mapped by a live process: kept
            assert mapped.MappedGraph(live.copy).num_nodes == 120
        finally:
            live.communicate("\n", timeout=60)
        again = holder(uris[0])  # a new copy once the holder has ended removes its copy, not this process's
        again.communicate("\n", timeout=60)
        assert not os.path.exists(live.copy) and os.path.isfile(f"{mine}/{mapped.COMPLETE}")
        assert sorted(
            d for d in os.listdir(f"{root}/wikigame-mapped") if os.path.isdir(f"{root}/wikigame-mapped/{d}")
        ) == sorted(os.path.basename(c) for c in (mine, again.copy))
