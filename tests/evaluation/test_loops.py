"""Loop metrics against hand counts: per route, per group on a small plays table, the display
table, the figure, and which runs count."""

import math
from types import SimpleNamespace

import pytest
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

from wikigame_spark.evaluation.figures import is_png
from wikigame_spark.evaluation.loops import (
    RouteLoops,
    loop_counts,
    loop_display,
    loop_figure,
    loop_table,
    metrics,
    revisit_run_ids,
    route_loops,
)

PLAYS = StructType(
    [
        StructField("label", StringType(), False),
        StructField("graph", StringType(), False),
        StructField("outcome", StringType(), False),
        StructField("route", ArrayType(LongType(), False), False),
    ]
)


@pytest.mark.parametrize(
    "route, expected",
    [
        ([0, 1, 2], RouteLoops(0, 0, -1)),
        ([0, 1, 0], RouteLoops(1, 2, 2)),
        ([0, 1, 2, 1, 3, 1, 4], RouteLoops(2, 2, 3)),
        ([0, 1, 2, 3, 0, 5], RouteLoops(1, 4, 4)),
        ([0, 1, 0, 2, 3, 4, 0], RouteLoops(2, 4, 2)),
    ],
)
def test_route_loops(route, expected):
    assert route_loops(route) == expected


@pytest.fixture()
def table(spark):
    rows = [
        ("a", "g", "success", [0, 1, 2, 1, 3]),  # revisit, cycle 2, then success
        ("a", "g", "loop", [0, 1, 0]),  # revisit, cycle 2, loop
        ("a", "g", "success", [0, 2, 4]),  # no revisit
        ("a", "g", "step_limit", [0, 1, 2, 3, 4, 0, 1, 2]),  # revisits at steps 5, 6, 7: cycle 5
        ("b", "g", "success", [7, 8]),
    ]
    return loop_table(loop_counts(spark.createDataFrame(rows, PLAYS)))


def test_group_counts_and_rates_match_hand_counts(table):
    a = table[table.label == "a"].iloc[0]
    assert (a.games, a.revisiting, a.revisits, a.loops, a.longest_cycle) == (4, 3, 5, 1, 5)
    assert (a.successes_after_revisit, a.successes_without_revisit) == (1, 1)
    assert a.revisit_share == pytest.approx(3 / 4) and a.revisits_per_game == pytest.approx(5 / 4)
    assert a.loop_share == pytest.approx(1 / 4)
    assert a.loop_share_sd == pytest.approx(math.sqrt(1 / 4 * 3 / 4 / 4))
    assert a.success_after_revisit == pytest.approx(1 / 3) and a.success_without_revisit == 1.0
    # hypergeometric: 3 revisiting games, 2 successes among 4 games; P(X ≤ 1) = P(X = 1) = 2·1/4
    assert a.rarer_after_revisit_p_value == pytest.approx(0.5)
    b = table[table.label == "b"].iloc[0]
    assert (b.games, b.revisiting, b.loops, b.longest_cycle) == (1, 0, 0, 0)
    assert math.isnan(b.success_after_revisit) and math.isnan(b.rarer_after_revisit_p_value)
    logged = metrics(table, lambda label, graph: f"{label}.{graph}")
    assert logged["revisit_share.a.g"] == 0.75 and logged["loop_share.a.g"] == 0.25
    assert logged["revisits_per_game.a.g"] == 1.25 and logged["success_without_revisit.b.g"] == 1.0


def test_display_and_figure(table):
    shown = loop_display(table, ["a", "b"], ["g"])
    assert shown.iloc[0].to_dict() == {
        "agent": "a",
        "games": 4,
        "revisit a page": "0.75 ± 0.22",
        "revisits per game": "1.25",
        "ended by loop": "0.25 ± 0.22",
        "longest cycle": 5,
        "success, no revisit": "1.00 ± 0.00",
        "success after a revisit": "0.33 ± 0.27",
        "rarer after a revisit (p)": pytest.approx(0.5),
    }
    assert shown.iloc[1]["success after a revisit"] == "–"
    assert is_png(loop_figure(table, ["a", "b"], ["g"]))


def test_only_runs_that_allowed_revisits_count():
    runs = [
        SimpleNamespace(run_id="1", params={"allow_revisits": "True"}),
        SimpleNamespace(run_id="2", params={"allow_revisits": "False"}),
        SimpleNamespace(run_id="3", params={}),  # from before the flag: the paper's rules
    ]
    assert revisit_run_ids(runs) == ["1"]
