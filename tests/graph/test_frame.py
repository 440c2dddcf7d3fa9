"""The graph layer: reading a graph directory; GraphFrames on the classpath; degrees and components."""

from __future__ import annotations

import numpy as np
import pytest

from tests.graph.graphs import FAMILIES, adjacency_of, parquet_graph, plain_bfs, union_graph, write_graph_dir
from wikigame_spark.graph import frame


def test_graphframes_jvm_class_is_loaded(spark):
    """make install put GraphFrames in jars/ and the session has it: nothing here may run without it."""
    jvm = spark.sparkContext._jvm
    cls = jvm.org.apache.spark.util.Utils.classForName(frame.GRAPHFRAME_CLASS, True, False)
    assert cls.getName() == frame.GRAPHFRAME_CLASS
    assert frame.graphframes_available(spark)
    source = cls.getProtectionDomain().getCodeSource().getLocation().toString()
    assert "graphframes-spark4_2.13-0.11.0.jar" in source
    import graphframes

    assert graphframes.__version__ == "0.11.0"  # the Python client paired with the jar


def test_degrees_include_nodes_without_links(spark, tmp_path):
    path = write_graph_dir(spark, str(tmp_path / "g"), [0, 1, 2, 3, 9], [(0, 1), (1, 2), (2, 0), (3, 0), (0, 2)])
    g = frame.read_graph(spark, path)
    got = {r["id"]: (r["in_degree"], r["out_degree"]) for r in frame.degrees(g.nodes, g.edges).collect()}
    assert got == {0: (2, 2), 1: (1, 1), 2: (2, 1), 3: (0, 1), 9: (0, 0)}


@pytest.mark.slow
def test_weak_components_of_the_union_graph(spark, union_dir):
    nodes, _edges, offsets = union_graph()
    g = frame.read_graph(spark, union_dir)
    comp = {r["id"]: r["component"] for r in frame.weak_components(g.nodes, g.edges).collect()}
    assert set(comp) == set(nodes)
    # Expected: each family is one component, except islands = {0,1}, {2,3}, {4}.
    expected: dict[int, int] = {}
    for _name, off in offsets.items():
        members = [n for n in nodes if off <= n < off + 100]
        for n in members:
            expected[n] = off
    isl = offsets["islands"]
    expected.update({isl + 2: isl + 2, isl + 3: isl + 2, isl + 4: isl + 4})
    assert comp == expected  # labels are each component's smallest id


# Strongly connected components written out by hand (local ids; every node not listed is alone).
KNOWN_SCCS = {
    "chain": [],
    "star": [],
    "cycle": [[0, 1, 2, 3, 4]],
    "dead_ends": [],
    "islands": [],
    "one_way": [[0, 1], [2, 3]],
    "shortcut": [[0, 1, 2, 3, 4, 5, 6, 7]],
}
# A bow-tie: an in-set 0,1 → a core cycle 2→3→4→2 → an out-set 5,6; a tendril 1→7; a tube 0→8→6;
# an island cycle 9↔10 with a self-contained tail 11 → 9; an isolated node 12.
BOWTIE = (
    list(range(13)),
    [(0, 2), (1, 2), (2, 3), (3, 4), (4, 2), (4, 5), (3, 6), (1, 7), (0, 8), (8, 6), (9, 10), (10, 9), (11, 9)],
    [[2, 3, 4], [9, 10]],
)


def partition(labels: dict[int, int]) -> set[frozenset[int]]:
    groups: dict[int, set[int]] = {}
    for n, c in labels.items():
        groups.setdefault(c, set()).add(n)
    return {frozenset(g) for g in groups.values()}


def plain_sccs(nodes, edges) -> set[frozenset[int]]:
    """Independent SCCs: u and v together iff each reaches the other by a textbook BFS."""
    adj = adjacency_of(edges)
    reach = {u: {v for v in nodes if plain_bfs(adj, u, v) is not None} for u in nodes}
    return {frozenset(v for v in nodes if v in reach[u] and u in reach[v]) for u in nodes}


def expected_partition(nodes, groups) -> set[frozenset[int]]:
    together = {n for g in groups for n in g}
    return {frozenset(g) for g in groups} | {frozenset([n]) for n in nodes if n not in together}


@pytest.mark.slow
@pytest.mark.parametrize("name", [f[0] for f in FAMILIES] + ["bowtie"])
def test_strong_components_of_known_graphs(spark, tmp_path, name):
    if name == "bowtie":
        nodes, edges, groups = BOWTIE
    else:
        _, nodes, edges = next(f for f in FAMILIES if f[0] == name)
        groups = KNOWN_SCCS[name]
    ids = [n * 3 + 5 for n in nodes]  # ids that are neither dense nor start at 0
    edges = [(a * 3 + 5, b * 3 + 5) for a, b in edges]
    groups = [[n * 3 + 5 for n in g] for g in groups]
    path = write_graph_dir(spark, str(tmp_path / name), ids, edges)
    g = frame.read_graph(spark, path)
    found = frame.strong_components(g.nodes, g.edges).persist()
    labels = {r["id"]: r["component"] for r in found.collect()}
    assert partition(labels) == expected_partition(ids, groups) == plain_sccs(ids, edges)
    assert all(c == min(m for m, d in labels.items() if d == c) for c in labels.values())  # named by smallest id
    sizes = frame.component_sizes(found).collect()
    assert sizes[0]["size"] == max(len(p) for p in partition(labels))


@pytest.mark.slow
def test_strong_components_of_latgalian_wikipedia(spark, ltg_graph):
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    nodes, edges, _ = parquet_graph(ltg_graph)
    ids = sorted(nodes["id"].tolist())
    g = frame.read_graph(spark, ltg_graph)
    labels = {r["id"]: r["component"] for r in frame.strong_components(g.nodes, g.edges).collect()}
    assert partition(labels) == plain_sccs(ids, edges)
    # and scipy's (the local method's) on the same edges
    pos = {n: i for i, n in enumerate(ids)}
    m = csr_matrix((np.ones(len(edges)), ([pos[a] for a, _ in edges], [pos[b] for _, b in edges])), (len(ids),) * 2)
    _, lab = connected_components(m, directed=True, connection="strong")
    assert partition(dict(zip(ids, lab.tolist()))) == partition(labels)
    assert 1 < len(set(labels.values())) < len(ids)  # a real mix: a giant SCC and many small ones


def test_read_graph_keeps_extra_node_columns_and_checks_the_contract(spark, tmp_path):
    path = write_graph_dir(spark, str(tmp_path / "oa"), [0, 1], [(0, 1)], extra={"language": ["en", "fr"]})
    g = frame.read_graph(spark, path)
    assert g.nodes.columns == ["id", "page_id", "title", "summary", "language"]
    assert g.identity()["kind"] == "test-graph" and len(g.identity()["manifest_sha1"]) == 40
    bad = str(tmp_path / "bad")
    write_graph_dir(spark, bad, [0, 1], [(0, 1)])
    spark.read.parquet(f"{bad}/nodes").drop("title").write.mode("overwrite").parquet(f"{bad}/nodes2")
    import shutil

    shutil.rmtree(f"{bad}/nodes")
    shutil.move(f"{bad}/nodes2", f"{bad}/nodes")
    with pytest.raises(ValueError, match=r"missing column\(s\) \['title'\]"):
        frame.read_graph(spark, bad)
