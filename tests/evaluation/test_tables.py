"""Tables 4 and 5 and the outcome breakdowns: Spark aggregation vs the per-row formulas."""

import math

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from wikigame_spark import summary
from wikigame_spark.evaluation import tables
from wikigame_spark.schemas import NO_MODEL_USAGE, PLAYS


def plays_rows(label, graph, run_id, outcomes, steps, optimal, max_steps=100):
    return [
        {
            "game_id": i,
            "agent": label.split(":")[0],
            "model": None,
            "outcome": o,
            "steps": s,
            "optimal_steps": d,
            "route": [0],
            "source": 0,
            "target": 1,
            "seconds": 0.0,
            "detail": None,
            **NO_MODEL_USAGE,
            "label": label,
            "graph": graph,
            "run_id": run_id,
            "max_steps": max_steps,
        }
        for i, (o, s, d) in enumerate(zip(outcomes, steps, optimal))
    ]


@pytest.fixture(scope="module")
def labelled(spark):
    rng = np.random.default_rng(0)
    rows = []
    groups = [("a", "g1", "r1", 40, 0.6), ("a", "g2", "r2", 25, 0.2), ("b", "g1", "r3", 30, 0.5)]
    for label, graph, run, n, p_win in groups:
        won = rng.random(n) < p_win
        optimal = rng.integers(2, 6, n)
        steps = optimal + rng.integers(0, 12, n)
        outcomes = np.where(won, "success", rng.choice(["dead_end", "step_limit", "hallucination", "no_response"], n))
        rows += plays_rows(label, graph, run, outcomes.tolist(), steps.tolist(), optimal.tolist())
    extra = [("label", StringType()), ("graph", StringType()), ("run_id", StringType()), ("max_steps", IntegerType())]
    schema = StructType(PLAYS.fields + [StructField(name, kind) for name, kind in extra])
    df = spark.createDataFrame(pd.DataFrame(rows)[schema.fieldNames()], schema)
    return df, pd.DataFrame(rows)


def test_success_rate_and_its_error_follow_the_formula(labelled):
    df, pdf = labelled
    agg = tables.aggregate(df)
    success = tables.success_table(agg.groups)
    assert len(success) == 3
    unanswered = agg.groups.set_index(["label", "graph"])["unanswered"]
    for _, r in success.iterrows():
        rows = pdf[(pdf.label == r.label) & (pdf.graph == r.graph)]
        # a game the server never answered says nothing of the player: out of the denominator
        n, k = int((rows.outcome != "no_response").sum()), int((rows.outcome == "success").sum())
        p = k / n
        assert r.games == n and r.successes == k and 0 < unanswered[r.label, r.graph] == len(rows) - n
        assert r.success_rate == pytest.approx(p)
        assert r.success_rate_sd == pytest.approx(math.sqrt(p * (1 - p) / n))
        assert (r.success_rate, r.success_rate_sd) == pytest.approx(summary.success_rate(rows.outcome))


def test_steps_and_outcomes_match_the_metrics_module(labelled):
    df, pdf = labelled
    agg = tables.aggregate(df)
    steps = tables.steps_table(agg.groups)
    outcomes = tables.outcome_table(agg.outcomes)
    for (label, graph), rows in pdf.groupby(["label", "graph"]):
        mean, se = summary.mean_with_se(summary.steps_above_optimal(rows))
        r = steps[(steps.label == label) & (steps.graph == graph)].iloc[0]
        assert r.steps_above_optimal_mean == pytest.approx(mean)
        assert r.steps_above_optimal_se == pytest.approx(se)
        got = outcomes[(outcomes.label == label) & (outcomes.graph == graph)].set_index("outcome")["fraction"]
        assert got.to_dict() == pytest.approx(summary.outcome_fractions(rows.outcome))
    # the extra-steps counts hold every successful game with its limit max_steps − optimal
    won = pdf[pdf.outcome == "success"]
    assert agg.extra["games"].sum() == len(won)
    assert set(agg.extra["limit"]) <= set((100 - won.optimal_steps).astype(float))
    assert agg.per_run.set_index("run_id")["games"].to_dict() == {"r1": 40, "r2": 25, "r3": 30}


def test_wide_tables_and_ordering(labelled):
    df, _ = labelled
    agg = tables.aggregate(df)
    success = tables.success_table(agg.groups)
    labels, graphs = tables.label_order(success), tables.graph_order(success)
    assert graphs == ["g1", "g2"]
    wide = tables.wide(success, "success_rate", "success_rate_sd", labels, graphs)
    assert list(wide.columns) == ["agent", "g1", "g2"] and list(wide["agent"]) == labels
    cell = wide.set_index("agent").loc["b", "g2"]
    assert cell == ""  # b did not play g2
    r = success[(success.label == "a") & (success.graph == "g1")].iloc[0]
    assert (
        wide.set_index("agent").loc["a", "g1"]
        == f"{tables.rounded(r.success_rate)} ± {tables.rounded(r.success_rate_sd)}"
    )
    with_ci = tables.wide(
        success, "success_rate", "success_rate_sd", labels, graphs, interval=("wilson_low", "wilson_high")
    )
    assert (
        with_ci.set_index("agent")
        .loc["a", "g1"]
        .endswith(f"[{tables.rounded(r.wilson_low)}, {tables.rounded(r.wilson_high)}]")
    )
    ow = tables.outcome_wide(tables.outcome_table(agg.outcomes), labels, graphs)
    assert list(ow.columns[:3]) == ["label", "graph", "success"]
    assert ow.drop(columns=["label", "graph"]).sum(axis=1).to_numpy() == pytest.approx(1.0)
    assert tables.format_pm(float("nan"), 0.1) == "–" and tables.format_pm(0.5, float("nan")) == "0.50"


def test_losses_split_formatting_from_navigation(labelled):
    df, pdf = labelled
    agg = tables.aggregate(df)
    success = tables.success_table(agg.groups)
    labels, graphs = tables.label_order(success), tables.graph_order(success)
    losses = tables.loss_table(tables.outcome_table(agg.outcomes), labels, graphs).set_index(["label", "graph"])
    assert list(losses.index) == [(label, g) for label in labels for g in graphs if (label, g) in losses.index]
    for (label, graph), rows in pdf.groupby(["label", "graph"]):
        share = rows.outcome.value_counts(normalize=True).get
        r = losses.loc[(label, graph)]
        assert r.games == len(rows)
        assert r.success == pytest.approx(share("success", 0))
        assert r.formatting == pytest.approx(share("hallucination", 0)) and r.formatting > 0
        assert r.navigation == pytest.approx(share("dead_end", 0) + share("step_limit", 0)) and r.navigation > 0
        assert r.other == pytest.approx(share("no_response", 0))  # the server's, neither the player's form nor route


def test_aggregate_names_missing_columns(spark, labelled):
    df, _ = labelled
    with pytest.raises(ValueError, match=r"missing column\(s\) \['label'\]"):
        tables.aggregate(df.drop("label"))
    assert df.filter(F.col("label") == "a").count() == 65


@pytest.mark.parametrize(
    ("value", "digits", "text"),
    [
        (0.175, 2, "0.18"),
        (0.125, 2, "0.13"),
        (0.0049, 2, "0.00"),
        (-0.001, 2, "0.00"),
        (2.25, 1, "2.3"),
        (1.0, 2, "1.00"),
    ],
)
def test_one_rounding_rule(value, digits, text):
    """The issue's 0.175: "0.17" in Table 4 and "18 %" in Fig 15; now "0.18" in both."""
    assert tables.rounded(value, digits) == text
    assert tables.rounded(float("nan")) == "–"


def test_wilson_interval_against_hand_values():
    """Wilson (1927) 95 % interval: 0 of 5 → [0, 0.434]; 5 of 5 → [0.566, 1]; 47 of 100 → [0.375, 0.567]."""
    low, high = tables.wilson_interval([0, 5, 47], [5, 5, 100])
    assert low == pytest.approx([0.0, 0.5655, 0.3751], abs=5e-4)
    assert high == pytest.approx([0.4345, 1.0, 0.5667], abs=5e-4)
