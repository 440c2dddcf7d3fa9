"""The graphframes method's search: multi-pair bidirectional BFS on DataFrames, against a plain BFS."""

from __future__ import annotations

from tests.graph.graphs import adjacency_of, plain_bfs, union_graph
from wikigame_spark.graph import bfs, frame


def test_union_graph_pairs_match_plain_bfs(spark, union_dir):
    nodes, edges, offsets = union_graph()
    g = frame.read_graph(spark, union_dir)
    deg = frame.degrees(g.nodes, g.edges).persist()
    adj = bfs.adjacency(g.edges, deg).persist()
    # Every ordered pair inside each family, and some across families (never reachable).
    family = {n: max(o for o in offsets.values() if o <= n) for n in nodes}
    inside = [(s, t) for s in nodes for t in nodes if s != t and family[s] == family[t]]
    across = [(s, t) for s in nodes[::5] for t in nodes[::7] if family[s] != family[t]][:40]
    rows = [(k, s, t) for k, (s, t) in enumerate(inside + across)]
    pairs = spark.createDataFrame(rows, "pair long, source long, target long")
    got = bfs.bidirectional_distances(pairs, adj, deg, batch_pairs=160)  # two batches
    plain = adjacency_of(edges)
    assert len(got) == len(rows)
    for k, s, t in rows:
        want = plain_bfs(plain, s, t)
        assert (got[k] if got[k] >= 0 else None) == want, (s, t)
