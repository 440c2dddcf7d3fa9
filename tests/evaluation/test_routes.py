"""The route sections from profiled plays: every table filled, the figure a PNG, the sections rendered."""

from __future__ import annotations

import pandas as pd

from wikigame_spark.document import Document
from wikigame_spark.evaluation import routes
from wikigame_spark.evaluation.figures import PNG_SIGNATURE
from wikigame_spark.evaluation.profiles import SOURCE_STRATUM, TARGET_STRATUM


def profiled() -> pd.DataFrame:
    rows = []
    for label, shift, graph in (("tfidf", 0, "g"), ("random", 1, "g"), ("tfidf", 0, "h")):
        for game in range(6):
            won = (game + shift) % 3 != 0
            d = [3, 2, 1, 0] if won and game % 2 else [3, 3, 2, 1, 0] if won else [3, 4, 4, 5]
            rows.append(
                {
                    "label": label,
                    "graph": graph,
                    "run_id": label + graph,
                    "games_set": graph,
                    "game_id": game,
                    "outcome": "success" if won else "step_limit",
                    "steps": len(d) - 1,
                    "optimal_steps": 3,
                    "distances": d,
                    TARGET_STRATUM: f"Q{1 + game % 2} (in-links {game % 2 * 3}–{game % 2 * 3 + 2 + (graph == 'h')})",
                    SOURCE_STRATUM: "Q1 (links 1–9)",
                }
            )
    return pd.DataFrame(rows)


def test_route_sections():
    r = routes.route_analysis(profiled(), bootstrap=200)
    assert set(r.moves["label"]) == {"tfidf", "random"}
    assert r.progress[r.progress["step"] == 0]["mean_distance"].tolist() == [3.0] * 3
    assert r.paired[["agent_a", "agent_b"]].values.tolist() == [["random", "tfidf"]]
    assert set(r.leaderboard["agent"]) == {"tfidf", "random"}
    assert set(r.strata_target[TARGET_STRATUM]) == {
        "Q1 (in-links 0–2)",
        "Q2 (in-links 3–5)",
        "Q1 (in-links 0–3)",
        "Q2 (in-links 3–6)",
    }
    assert set(r.failures["outcome"]) == {"step_limit"}
    png = routes.progress_figure(r.progress, ["random", "tfidf"], ["g"])
    assert png.startswith(PNG_SIGNATURE)
    doc = Document()
    routes.render(doc, r, ["random", "tfidf"], ["g"])
    md = doc.markdown()
    for heading in ("Where the moves went", "How close the failures got", "Paired comparisons", "Leaderboard"):
        assert heading in md
    # one column per quartile; each graph's quartile edges in a column of their own
    popularity = md[md.index("Success by popularity") :]
    header = next(line for line in popularity.splitlines() if line.startswith("| agent"))
    assert [c.strip() for c in header.strip("|").split("|")] == ["agent", "graph", "Q1", "Q2", "quartiles (in-links)"]
    assert "| Q1 0–2 · Q2 3–5 |" in popularity and "| Q1 0–3 · Q2 3–6 |" in popularity
    assert routes.metrics(r, lambda label, graph: f"{label}.{graph}")["optimal_move_share.tfidf.g"] > 0


def test_no_profiles_says_so():
    doc = Document()
    routes.render(doc, routes.route_analysis(pd.DataFrame()), [], [])
    assert "No distance profiles" in doc.markdown()
