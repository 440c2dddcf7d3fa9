"""End to end on OpenAlex, as a user runs it: build_openalex on a snapshot in the real 2025 schema
(generated from the real record, plus that record itself) → graph_stats → sample_games --target-
language en → play_games (embedding, TF-IDF, random, and the LLM agent: SmolLM2-135M-Instruct on the
local llama.cpp server) → report, the chat model a player beside the others. A random run on the
Latgalian Wikipedia shares the experiment, so the report compares two graphs (Fig 4)."""

import json
import os

import pyarrow.parquet as pq
import pytest

from tests.jobs import end_to_end as e2e
from wikigame_spark.devtools import models

GAMES = 6
LLM_GAMES = 2


@pytest.fixture(scope="module")
def tracking(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", e2e.tracking_uri(tmp_path_factory))
        yield


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    with e2e.chat_server(tmp_path_factory, models.SMOLLM2.name) as server:
        yield server


@pytest.mark.slow
def test_openalex_through_every_stage(ltg_graph, tracking, llama, tmp_path, tmp_path_factory):
    graph = e2e.openalex_graph(tmp_path_factory)
    with open(os.path.join(graph, "manifest.json"), encoding="utf-8") as f:
        built = json.load(f)
    nodes = pq.read_table(os.path.join(graph, "nodes")).to_pylist()
    assert built["kind"] == "openalex-graph" and built["field"] == e2e.FIELD
    assert built["counts"]["nodes"] == len(nodes) > 50 and built["counts"]["edges"] > 0
    assert built["records"]["read"] == built["records"]["kept"] + sum(built["records"]["dropped"].values())
    real = next(n for n in nodes if n["work_id"] == e2e.REAL_WORK)  # the real 2025 record is a node
    assert real["language"] == "en" and real["field"] == e2e.FIELD and len(real["summary"].split()) > 100
    assert {"id", "work_id", "title", "summary", "language"} <= set(nodes[0])

    stats = e2e.stats(graph, str(tmp_path / "stats"))
    assert stats["table1"]["nodes"] == len(nodes) and stats["table1"]["edges"] == built["counts"]["edges"]

    games, manifest = e2e.games(graph, str(tmp_path / "games"), GAMES, "--target-language", "en")
    language = {n["id"]: n["language"] for n in nodes}
    assert len(games) == manifest["games"] == GAMES
    assert all(language[g["target"]] == "en" and g["optimal_steps"] >= 1 for g in games)
    assert manifest["graph"]["kind"] == "openalex-graph"

    games_dir = str(tmp_path / "games")
    runs = e2e.play_every_agent(graph, games_dir, games, str(tmp_path / "plays"), "e2e-openalex", llama, LLM_GAMES)
    # training data: the expert's routes and the embedding run's steps, every optimal move exact
    e2e.decisions(graph, games_dir, str(tmp_path / "plays" / "embedding"), str(tmp_path / "decisions"), games)

    # the other source in the same experiment: the report then has two graphs to compare
    ltg_games, _ = e2e.games(ltg_graph, str(tmp_path / "ltg-games"), 4)
    ltg_plays = e2e.play(
        ltg_graph, str(tmp_path / "ltg-games"), "random", str(tmp_path / "ltg-random"), "e2e-oa-w-random"
    )
    e2e.check_plays(ltg_plays, ltg_games, "random")
    runs.add("e2e-oa-w-random")

    md, summary = e2e.run_report(str(tmp_path / "report"))
    e2e.check_report(md, summary, {"ltgwiki", e2e.FIELD}, runs)
    e2e.check_chat_model(summary, "e2e-openalex-llm", e2e.FIELD, LLM_GAMES)
    assert all(f"success {e2e.FIELD}" in row for row in summary["leaderboard"])  # a column per graph
    for name in ("random", "embedding: all-MiniLM-L6-v2", "tfidf"):
        row = next(r for r in summary["success"] if r["label"] == name and r["graph"] == e2e.FIELD)
        assert row["games"] >= GAMES and 0 <= row["wilson_low"] <= row["success_rate"] <= row["wilson_high"] <= 1
