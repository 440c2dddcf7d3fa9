"""The route sections from profiled plays: every table filled, the figure a PNG, the sections rendered."""

from __future__ import annotations

import pandas as pd

from wikigame_spark.document import Document
from wikigame_spark.evaluation import routes
from wikigame_spark.evaluation.figures import PNG_SIGNATURE
from wikigame_spark.evaluation.profiles import SOURCE_STRATUM, TARGET_STRATUM


def profiled() -> pd.DataFrame:
    rows = []
    for label, shift in (("tfidf", 0), ("random", 1)):
        for game in range(6):
            won = (game + shift) % 3 != 0
            d = [3, 2, 1, 0] if won and game % 2 else [3, 3, 2, 1, 0] if won else [3, 4, 4, 5]
            rows.append(
                {
                    "label": label,
                    "graph": "g",
                    "run_id": label,
                    "games_set": "s",
                    "game_id": game,
                    "outcome": "success" if won else "step_limit",
                    "steps": len(d) - 1,
                    "optimal_steps": 3,
                    "distances": d,
                    TARGET_STRATUM: f"Q{1 + game % 2}",
                    SOURCE_STRATUM: "Q1",
                }
            )
    return pd.DataFrame(rows)


def test_route_sections():
    r = routes.route_analysis(profiled(), bootstrap=200)
    assert set(r.moves["label"]) == {"tfidf", "random"}
    assert r.progress[r.progress["step"] == 0]["mean_distance"].tolist() == [3.0, 3.0]
    assert r.paired[["agent_a", "agent_b"]].values.tolist() == [["random", "tfidf"]]
    assert set(r.leaderboard["agent"]) == {"tfidf", "random"}
    assert set(r.strata_target[TARGET_STRATUM]) == {"Q1", "Q2"}
    assert set(r.failures["outcome"]) == {"step_limit"}
    png = routes.progress_figure(r.progress, ["random", "tfidf"], ["g"])
    assert png.startswith(PNG_SIGNATURE)
    doc = Document()
    routes.render(doc, r, ["random", "tfidf"], ["g"])
    md = doc.markdown()
    for heading in ("Where the moves went", "How close the failures got", "Paired comparisons", "Leaderboard"):
        assert heading in md
    assert routes.metrics(r, lambda label, graph: f"{label}.{graph}")["optimal_move_share.tfidf.g"] > 0


def test_no_profiles_says_so():
    doc = Document()
    routes.render(doc, routes.route_analysis(pd.DataFrame()), [], [])
    assert "No distance profiles" in doc.markdown()
