"""Every reason a sampling draw is discarded, triggered by a graph made to have each case."""

import json
import os

from jobs import sample_games
from tests.graph.graphs import write_graph_dir

# 0 ⇄ 1 and 0 → 2 (2 has no out-links), 3 → 0 (3 has no in-links); 4 ⇄ 5 another component;
# 6 → 7 ← 8 → 9: 6 reaches 7 but not 9, though 6 has out-links and 9 has in-links (no path).
EDGES = [(0, 1), (1, 0), (0, 2), (3, 0), (4, 5), (5, 4), (6, 7), (8, 7), (8, 9)]


def test_every_discard_reason_is_counted(spark, tmp_path):
    graph = write_graph_dir(spark, str(tmp_path / "g"), list(range(10)), EDGES)
    out = str(tmp_path / "games")
    argv = ["--graph", graph, "--games", "8", "--seed", "1", "--output", out, "--experiment", "draw-reasons"]
    assert sample_games.main(argv) == 0
    with open(os.path.join(out, "manifest.json"), encoding="utf-8") as f:
        c = json.load(f)["counts"]
    by = c["discarded_by"]
    for reason in ("same_node", "source_no_out_links", "target_no_in_links", "different_component", "no_path"):
        assert by.get(reason, 0) > 0, (reason, by)
    assert c["draws"] == c["games"] + c["discarded"] == 8 + sum(by.values())
