"""Games for play tests, drawn with a plain BFS (independent of the sampling code)."""

from __future__ import annotations

import collections
import json
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq

from wikigame_spark.layout import GamesDir, GraphDir, join, manifest
from wikigame_spark.manifests import manifest_sha1
from wikigame_spark.parquet import read_columns

GAMES_ARROW = pa.schema(
    [
        pa.field("game_id", pa.int64(), False),
        pa.field("source", pa.int64(), False),
        pa.field("target", pa.int64(), False),
        pa.field("optimal_steps", pa.int32(), False),
    ]
)


def bfs_distances(adj: dict, source: int) -> dict:
    dist = {source: 0}
    queue = collections.deque([source])
    while queue:
        u = queue.popleft()
        for v in adj.get(u, ()):
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist


def write_games(graph_dir: str, n: int, seed: int = 7, path: str | None = None) -> str:
    """``n`` reachable (source, target) pairs with their BFS distances, as a GAMES table."""
    graph_paths = GraphDir(graph_dir)
    nodes = read_columns(graph_paths.nodes, ["id"]).column("id").to_pylist()
    edges = read_columns(graph_paths.edges, ["src", "dst"])
    adj = collections.defaultdict(list)
    for s, d in zip(edges.column("src").to_pylist(), edges.column("dst").to_pylist()):
        adj[s].append(d)
    rnd = random.Random(seed)
    rows = []
    while len(rows) < n:
        s, t = rnd.choice(nodes), rnd.choice(nodes)
        dist = bfs_distances(adj, s)
        if s != t and t in dist:
            rows.append((len(rows), s, t, dist[t]))
    path = path or graph_paths.games
    table = pa.Table.from_arrays([pa.array(c) for c in zip(*rows)], schema=GAMES_ARROW)
    games = GamesDir(path).games
    os.makedirs(games, exist_ok=True)
    pq.write_table(table, join(games, "part-00000.parquet"))
    with open(graph_paths.manifest, encoding="utf-8") as f:
        graph = {"path": graph_dir, "manifest_sha1": manifest_sha1(json.load(f))}
    with open(manifest(path), "w") as f:
        json.dump(
            {"kind": "games", "games": n, "seed": seed, "graph": graph, "made_by": "wikigame_spark/devtools/games.py"},
            f,
        )
    return path


def small_graph(tmp_path, titles: list[str], edges: list[tuple[int, int]], summaries: list[str] | None = None) -> str:
    """A graph directory in the contract, built in code."""
    d = str(tmp_path / "graph")
    paths = GraphDir(d)
    os.makedirs(paths.nodes)
    os.makedirs(paths.edges)
    summaries = summaries or [f"{t} summary" for t in titles]
    nodes = pa.table(
        {
            "id": pa.array(range(len(titles)), pa.int64()),
            "page_id": pa.array(range(100, 100 + len(titles)), pa.int64()),
            "title": titles,
            "summary": summaries,
        }
    )
    pq.write_table(nodes, join(paths.nodes, "part-0.parquet"))
    src, dst = zip(*edges) if edges else ((), ())
    edge_table = pa.table({"src": pa.array(src, pa.int64()), "dst": pa.array(dst, pa.int64())})
    pq.write_table(edge_table, join(paths.edges, "part-0.parquet"))
    with open(paths.manifest, "w") as f:
        json.dump({"kind": "test-graph", "created": "test"}, f)
    return d
