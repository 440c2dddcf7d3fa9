"""Test graphs: small graphs with known answers, an independent BFS, graph directories from lists."""

from __future__ import annotations

import collections
import json
import os

# Small graphs with known answers, as (name, nodes, edges). Ids are local to each graph; the union
# graph below shifts them apart so that every family is searched in one distributed call.
CHAIN = ("chain", list(range(6)), [(i, i + 1) for i in range(5)])
STAR = ("star", list(range(9)), [(0, i) for i in range(1, 6)] + [(i, 0) for i in range(6, 9)])
CYCLE = ("cycle", list(range(5)), [(i, (i + 1) % 5) for i in range(5)])
DEAD_ENDS = ("dead_ends", list(range(4)), [(0, 1), (0, 2), (2, 3)])
ISLANDS = ("islands", list(range(5)), [(0, 1), (2, 3)])  # 4 is isolated
ONE_WAY = ("one_way", list(range(4)), [(0, 1), (1, 0), (1, 2), (2, 3), (3, 2)])
# A shortcut that only a search from both ends finds quickly: 0→…→6 long way, 0→7→6 short way.
SHORTCUT = ("shortcut", list(range(8)), [(i, i + 1) for i in range(6)] + [(0, 7), (7, 6), (6, 0)])
FAMILIES = [CHAIN, STAR, CYCLE, DEAD_ENDS, ISLANDS, ONE_WAY, SHORTCUT]

# Expected distances written out by hand for a few pairs of each family (None = unreachable).
KNOWN = {
    "chain": {(0, 5): 5, (2, 4): 2, (5, 0): None, (3, 2): None},
    "star": {(6, 1): 2, (0, 5): 1, (1, 2): None, (7, 8): None, (6, 0): 1},
    "cycle": {(0, 4): 4, (4, 0): 1, (2, 1): 4, (3, 0): 2},
    "dead_ends": {(0, 3): 2, (1, 0): None, (3, 2): None, (2, 3): 1},
    "islands": {(0, 1): 1, (0, 3): None, (4, 0): None, (2, 3): 1},
    "one_way": {(0, 3): 3, (3, 0): None, (1, 3): 2, (3, 2): 1},
    "shortcut": {(0, 6): 2, (1, 6): 5, (6, 5): 6, (7, 0): 2},
}


def plain_bfs(adjacency: dict[int, list[int]], source: int, target: int) -> int | None:
    """Textbook breadth-first search from the source; None when the target is never reached."""
    dist = {source: 0}
    queue = collections.deque([source])
    while queue:
        u = queue.popleft()
        if u == target:
            return dist[u]
        for v in adjacency.get(u, ()):
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return None


def adjacency_of(edges) -> dict[int, list[int]]:
    adj: dict[int, list[int]] = collections.defaultdict(list)
    for a, b in edges:
        adj[int(a)].append(int(b))
    return adj


def union_graph(spacing: int = 100) -> tuple[list[int], list[tuple[int, int]], dict[str, int]]:
    """All families in one graph, family k's node i as id k * spacing + i + 7 (not dense)."""
    nodes, edges, offsets = [], [], {}
    for k, (name, ns, es) in enumerate(FAMILIES):
        off = k * spacing + 7
        offsets[name] = off
        nodes += [n + off for n in ns]
        edges += [(a + off, b + off) for a, b in es]
    return nodes, edges, offsets


def write_graph_dir(spark, path: str, node_ids, edges, extra: dict | None = None, titles=None) -> str:
    """A graph directory in the contract (nodes/, edges/, manifest.json) from Python lists."""
    from pyspark.sql.types import StringType, StructField, StructType

    from wikigame_spark import manifests, outputs, parquet, storage
    from wikigame_spark.schemas import EDGES, WIKIPEDIA_NODES

    titles = titles or [f"Page {i}" for i in node_ids]
    extra = extra or {}
    columns = [list(values) for values in extra.values()]
    rows = [
        (int(i), int(i) * 10, t, f"About {t}.", *(c[k] for c in columns))
        for k, (i, t) in enumerate(zip(node_ids, titles))
    ]
    schema = StructType(WIKIPEDIA_NODES.fields + [StructField(name, StringType(), True) for name in extra])
    nodes = spark.createDataFrame(rows, schema)
    edge_df = spark.createDataFrame([(int(a), int(b)) for a, b in edges], EDGES)
    manifest = {"kind": "test-graph", "counts": {"nodes": len(node_ids), "edges": len(edges)}}
    with outputs.staged_output(storage.folder(path), overwrite=True) as staging:
        nodes.write.parquet(staging.path("nodes"))
        parquet.write_table(edge_df, staging.sub("edges"), EDGES)
        manifests.write_manifest(staging, manifest)
    return path


def parquet_graph(path: str) -> tuple[list[int], list[tuple[int, int]], dict]:
    """Nodes and edges of a graph directory read with pyarrow, independently of the code under test."""
    import pyarrow.parquet as pq

    nodes = pq.read_table(f"{path}/nodes").to_pandas()
    edges = pq.read_table(f"{path}/edges").to_pandas()
    with open(os.path.join(path, "manifest.json")) as f:
        manifest = json.load(f)
    return nodes, list(zip(edges["src"].tolist(), edges["dst"].tolist())), manifest
