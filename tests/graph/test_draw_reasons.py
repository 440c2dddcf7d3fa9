"""Every reason a sampling draw is discarded, triggered by a graph made to have each case."""

import json
import os

from jobs import sample_games
from tests.graph.graphs import write_graph_dir

# 0 ⇄ 1 and 0 → 2 (2 has no out-links), 3 → 0 (3 has no in-links); 4 ⇄ 5 another component;
# 6 → 7 ← 8 → 9 ← 10 → 11: one weak component where 6, 8, 10 have out-links and 7, 9, 11 in-links,
# but 6 reaches neither 9 nor 11, 8 not 11, 10 not 7 (no path).
EDGES = [(0, 1), (1, 0), (0, 2), (3, 0), (4, 5), (5, 4), (6, 7), (8, 7), (8, 9), (10, 9), (10, 11)]
NODES = 12
GAMES = 40  # about 300 draws: every reason many times over


def test_every_discard_reason_is_counted(spark, tmp_path):
    graph = write_graph_dir(spark, str(tmp_path / "g"), list(range(NODES)), EDGES)
    out = str(tmp_path / "games")
    argv = ["--graph", graph, "--games", str(GAMES), "--seed", "1", "--output", out, "--experiment", "draw-reasons"]
    assert sample_games.main(argv) == 0
    with open(os.path.join(out, "manifest.json"), encoding="utf-8") as f:
        c = json.load(f)["counts"]
    by = c["discarded_by"]
    for reason in ("same_node", "source_no_out_links", "target_no_in_links", "different_component", "no_path"):
        assert by.get(reason, 0) > 0, (reason, by)
    assert c["draws"] == c["games"] + c["discarded"] == GAMES + sum(by.values())
