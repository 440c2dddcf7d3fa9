"""Per-band tables against hand counts on a small labelled plays table; the band figure."""

import math

import pytest
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from wikigame_spark.evaluation.bands import (
    OTHER,
    band_counts,
    band_figure,
    band_name,
    band_table,
    band_wide,
    metrics,
    steps_cell,
    success_cell,
)
from wikigame_spark.evaluation.evaluate import metric_key
from wikigame_spark.evaluation.figures import is_png

LABELLED = StructType(
    [
        StructField("label", StringType(), False),
        StructField("graph", StringType(), False),
        StructField("run_id", StringType(), False),
        StructField("max_steps", IntegerType(), True),
        StructField("agent", StringType(), False),
        StructField("model", StringType(), True),
        StructField("outcome", StringType(), False),
        StructField("steps", IntegerType(), False),
        StructField("optimal_steps", IntegerType(), False),
        StructField("route", StringType(), True),  # not read by the band tables
        StructField("game_id", LongType(), False),
    ]
)


def plays(spark, rows):
    """(label, outcome, steps, optimal_steps) → a labelled plays table on graph ``g``."""
    data = [(lab, "g", f"run-{lab}", 30, lab, None, out, s, d, None, i) for i, (lab, out, s, d) in enumerate(rows)]
    return spark.createDataFrame(data, LABELLED)


ROWS = [
    ("a", "success", 2, 2),  # band 1–2, 0 above optimal
    ("a", "success", 4, 2),  # band 1–2, 2 above
    ("a", "step_limit", 30, 3),  # band 3–4
    ("a", "success", 5, 4),  # band 3–4, 1 above
    ("a", "loop", 6, 4),  # band 3–4
    ("a", "success", 9, 9),  # in no band
    ("b", "success", 1, 1),
    ("b", "dead_end", 3, 3),
]


@pytest.fixture()
def table(spark):
    return band_table(band_counts(plays(spark, ROWS), ((1, 2), (3, 4))))


def cell(table, label, band):
    [row] = table[(table.label == label) & (table.band == band)].to_dict("records")
    return row


def test_band_counts_rates_and_errors_match_hand_counts(table):
    assert [(r.label, r.band) for r in table.itertuples()] == [
        ("a", "1–2"),
        ("a", "3–4"),
        ("a", OTHER),
        ("b", "1–2"),
        ("b", "3–4"),
    ]
    easy = cell(table, "a", "1–2")
    assert (easy["games"], easy["successes"], easy["success_rate"], easy["success_rate_sd"]) == (2, 2, 1.0, 0.0)
    assert easy["steps_above_optimal_mean"] == 1.0
    assert easy["steps_above_optimal_se"] == pytest.approx(math.sqrt(2) / math.sqrt(2))  # sd of (0, 2) / √2
    mid = cell(table, "a", "3–4")
    assert (mid["games"], mid["successes"]) == (3, 1)
    assert mid["success_rate"] == pytest.approx(1 / 3)
    assert mid["success_rate_sd"] == pytest.approx(math.sqrt(1 / 3 * 2 / 3 / 3))
    assert mid["steps_above_optimal_mean"] == 1.0 and math.isnan(mid["steps_above_optimal_se"])  # one success
    other = cell(table, "a", OTHER)
    assert (other["games"], other["successes"], other["steps_above_optimal_mean"]) == (1, 1, 0.0)
    lost = cell(table, "b", "3–4")
    assert (lost["games"], lost["successes"], lost["success_rate"]) == (1, 0, 0.0)
    assert math.isnan(lost["steps_above_optimal_mean"])
    assert table.games.sum() == len(ROWS)  # no game lost
    assert metrics(table, metric_key) == pytest.approx(
        {
            "band_success_rate.a.g.1-2": 1.0,
            "band_success_rate.a.g.3-4": 1 / 3,
            "band_success_rate.a.g.other": 1.0,
            "band_success_rate.b.g.1-2": 1.0,
            "band_success_rate.b.g.3-4": 0.0,
        }
    )


def test_wide_tables_and_figure(table):
    success = band_wide(table, ["a", "b"], ["g"], success_cell)
    assert list(success.columns) == ["agent", "1–2", "3–4", OTHER]
    # Wilson 95 %: 2 of 2 → [0.34, 1]; 1 of 3 → [0.06, 0.79]; 1 of 1 → [0.21, 1]; 0 of 1 → [0, 0.79]
    assert success.iloc[0].tolist() == [
        "a",
        "1.00 ± 0.00 [0.34, 1.00] (2)",
        "0.33 ± 0.27 [0.06, 0.79] (3)",
        "1.00 ± 0.00 [0.21, 1.00] (1)",
    ]
    assert success.iloc[1].tolist() == ["b", "1.00 ± 0.00 [0.21, 1.00] (1)", "0.00 ± 0.00 [0.00, 0.79] (1)", ""]
    steps = band_wide(table, ["a", "b"], ["g"], steps_cell)
    assert steps.iloc[0].tolist() == ["a", "1.0 ± 1.0 (2)", "1.0 (1)", "0.0 (1)"]
    assert steps.iloc[1, 2] == "– (0)"
    assert is_png(band_figure(table, ["a", "b"], ["g"]))


def test_single_step_bands_and_graph_column(spark):
    counts = band_counts(plays(spark, ROWS), ((2, 2), (4, 4)))
    assert band_name((2, 2)) == "2"
    assert dict(zip(counts.band[counts.label == "a"], counts.games[counts.label == "a"])) == {"2": 2, "4": 2, OTHER: 2}
    wide = band_wide(band_table(counts), ["a"], ["g", "h"], success_cell)
    assert list(wide.columns[:2]) == ["agent", "graph"] and wide.graph.tolist() == ["g"]
