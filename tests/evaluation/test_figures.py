"""Figures from small tables (no Spark): valid PNGs for several agents and graphs, model sizes."""

import numpy as np
import pandas as pd
import pytest

from wikigame_spark.evaluation import figures, fits, tables


@pytest.mark.parametrize(
    ("model", "parameters"),
    [
        ("all-MiniLM-L6-v2", 22.7e6),
        ("sentence-transformers/all-mpnet-base-v2", 109e6),
        ("llama3.1:8b", 8e9),
        ("meta-llama/Llama-3.1-405B-Instruct", 405e9),
        ("/models/gemma-3-270m-it-Q4_K_M.gguf", 270e6),
        ("gemma2:27b", 27e9),
        ("gpt-oss-20b", 21e9),
        ("gpt-4o-mini", None),
        ("multilingual-e5-small", 118e6),
        (None, None),
    ],
)
def test_model_parameters(model, parameters):
    assert figures.model_parameters(model) == parameters


def groups():
    rows = []
    for label, graph, games, wins in [
        ("tfidf", "enwiki", 100, 47),
        ("tfidf", "Medicine", 80, 30),
        ("llm: gpt-4o", "enwiki", 50, 35),
    ]:
        rows.append({"label": label, "graph": graph, "games": games, "successes": wins})
    success = tables.success_table(pd.DataFrame(rows))
    steps = success[["label", "graph", "successes"]].assign(steps_above_optimal_mean=[32.9, 20.1, 21.6])
    steps["steps_above_optimal_se"] = [2.0, 1.5, np.nan]
    return success, steps


def test_every_figure_is_a_png_with_several_graphs():
    success, steps = groups()
    labels, graphs = tables.label_order(success), tables.graph_order(success)
    outcomes = pd.DataFrame(
        {
            "label": ["tfidf", "tfidf", "tfidf", "llm: gpt-4o", "llm: gpt-4o"],
            "graph": ["enwiki", "enwiki", "Medicine", "enwiki", "enwiki"],
            "outcome": ["success", "dead_end", "success", "success", "hallucination"],
            "games": [47, 53, 80, 35, 15],
        }
    )
    wide = tables.outcome_wide(tables.outcome_table(outcomes), labels, graphs)
    rng = np.random.default_rng(0)
    x = rng.negative_binomial(1, 0.05, 200)
    x = x[x < 90]
    counts = pd.DataFrame({"extra_steps": x, "limit": 95.0, "games": 1})
    fit = fits.fit_steps(counts["extra_steps"], counts["limit"], counts["games"])
    pngs = [
        figures.success_by_agent(success, labels, graphs),
        figures.success_vs_parameters(success, {"llm: gpt-4o": "llama3.1:70b", "tfidf": None}),
        figures.success_vs_embedding_cost(success.assign(embedding_core_hours_enwiki=[0.2, 65.9, 1.0])),
        figures.steps_histogram("tfidf", "enwiki", counts, fit),
        figures.mean_steps(steps, labels, graphs),
        figures.success_across_graphs(success, labels, graphs),
        figures.outcome_stacks(wide, graphs),
    ]
    for png in pngs:
        assert figures.is_png(png) and len(png) > 5000
    assert figures.success_vs_parameters(success, {"tfidf": None, "llm: gpt-4o": "gpt-4o"}) is None
    assert figures.success_vs_embedding_cost(success.assign(embedding_core_hours_enwiki=None)) is None


def test_point_labels_cover_no_other_label_point_or_error_bar():
    """Fig 2C's points as a real run left them (Wikispeedia: two static models and three
    transformers, two pairs a factor of 3 apart), each labelled clear of the others."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    points = [(0.25, 0.88, 0.023, "average_word_embeddings_glove.6B.50d"), (0.82, 0.895, 0.022, "potion-base-8M"),
              (119.0, 0.93, 0.018, "all-MiniLM-L6-v2"), (650.0, 0.93, 0.018, "all-mpnet-base-v2"),
              (2167.0, 0.885, 0.023, "multilingual-e5-small-q4")]  # fmt: skip
    fig = Figure(figsize=(6.5, 4.8))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.errorbar([p[0] for p in points], [p[1] for p in points], yerr=[p[2] for p in points], fmt="o")
    ax.set_xscale("log")
    ax.set_xlim(0.025, 21670)
    ax.set_ylim(0, 1.05)
    boxes = figures.place_labels(ax, points)
    assert len(boxes) == len(points)
    for i, box in enumerate(boxes):
        assert not any(box.overlaps(other) for other in boxes[i + 1 :]), points[i]
        for x, y, err, _ in points:  # the point and both ends of its error bar
            assert not any(box.contains(*ax.transData.transform((x, y + d))) for d in (-err, 0, err)), points[i]
