"""The graphframes method's search: multi-pair bidirectional BFS on GraphFrames' Pregel, against a plain BFS."""

from __future__ import annotations

import numpy as np
import pytest

from tests.graph.graphs import adjacency_of, plain_bfs, union_graph
from wikigame_spark.graph import bfs, frame
from wikigame_spark.graph.reach import NO_PATH


@pytest.mark.slow
def test_union_graph_pairs_match_plain_bfs(spark, union_dir):
    nodes, edges, offsets = union_graph()
    g = frame.read_graph(spark, union_dir)
    # Every ordered pair inside each family, and some across families (never reachable).
    family = {n: max(o for o in offsets.values() if o <= n) for n in nodes}
    inside = [(s, t) for s in nodes for t in nodes if s != t and family[s] == family[t]]
    across = [(s, t) for s in nodes[::5] for t in nodes[::7] if family[s] != family[t]][:40]
    pairs = inside + across
    search = bfs.PregelSearch(g.nodes, g.edges, batch_pairs=192)  # two batches
    assert len(pairs) > 192
    got = search.distances(np.array([s for s, _ in pairs]), np.array([t for _, t in pairs]))
    plain = adjacency_of(edges)
    want = [plain_bfs(plain, s, t) for s, t in pairs]
    assert [d if d != NO_PATH else None for d in got.tolist()] == want
    assert max(w for w in want if w is not None) >= 6  # odd and even lengths, past the first run
    assert search.distances(np.array([nodes[0]]), np.array([nodes[0]])).tolist() == [0]
