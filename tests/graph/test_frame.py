"""The graph layer: reading a graph directory, degrees and weak components (DataFrame path)."""

from __future__ import annotations

import pytest

from tests.graph.graphs import union_graph, write_graph_dir
from wikigame_spark.graph import frame


def test_graphframes_jvm_library_is_detected_or_not(spark):
    # No GraphFrames jar on this classpath: every graph operation takes the DataFrame path.
    assert frame.graphframes_available(spark) is False
    with pytest.raises(frame.GraphFramesUnavailable, match="graphframes"):
        frame.graphframes_shortest_paths(spark.range(1), spark.createDataFrame([(0, 0)], "src long, dst long"), [0])


def test_degrees_include_nodes_without_links(spark, tmp_path):
    path = write_graph_dir(spark, str(tmp_path / "g"), [0, 1, 2, 3, 9], [(0, 1), (1, 2), (2, 0), (3, 0), (0, 2)])
    g = frame.read_graph(spark, path)
    got = {r["id"]: (r["in_degree"], r["out_degree"]) for r in frame.degrees(g.nodes, g.edges).collect()}
    assert got == {0: (2, 2), 1: (1, 1), 2: (2, 1), 3: (0, 1), 9: (0, 0)}


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
