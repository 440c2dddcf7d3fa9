"""End to end on the complete Latgalian Wikipedia, as a user runs it: build_wikipedia → graph_stats →
sample_games → play_games (embedding, TF-IDF, random, and the LLM agent: the bundled base Gemma on
the local llama.cpp server, a plumbing check) → report. A random run on the OpenAlex graph shares
the experiment, so the report compares two graphs (Fig 4)."""

import json
import os

import pyarrow.parquet as pq
import pytest

from tests.jobs import end_to_end as e2e

GAMES = 6
LLM_GAMES = 2


@pytest.fixture(scope="module")
def tracking(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", e2e.tracking_uri(tmp_path_factory))
        yield


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    with e2e.chat_server(tmp_path_factory) as server:
        yield server


@pytest.mark.slow
def test_latgalian_wikipedia_through_every_stage(ltg_graph, tracking, llama, tmp_path, tmp_path_factory):
    # build: the session's graph is jobs/build_wikipedia.py's output on the real dump
    with open(os.path.join(ltg_graph, "manifest.json"), encoding="utf-8") as f:
        built = json.load(f)
    assert built["kind"] == "wikipedia-graph" and built["counts"]["nodes"] == 903
    nodes = pq.read_table(os.path.join(ltg_graph, "nodes"))
    assert nodes.column_names == ["id", "page_id", "title", "summary"] and nodes.num_rows == 903

    stats = e2e.stats(ltg_graph, str(tmp_path / "stats"))
    assert stats["table1"]["nodes"] == 903 and stats["table1"]["edges"] == built["counts"]["edges"]
    assert 0 < stats["reachability"]["fraction_reachable"] <= 1

    games, manifest = e2e.games(ltg_graph, str(tmp_path / "games"), GAMES)
    assert len(games) == manifest["games"] == GAMES and all(g["optimal_steps"] >= 1 for g in games)
    assert manifest["draws"] == GAMES + manifest["discarded"]
    assert manifest["graph"]["nodes"] == 903 and len(manifest["graph"]["manifest_sha1"]) == 40

    games_dir = str(tmp_path / "games")
    runs = e2e.play_every_agent(ltg_graph, games_dir, games, str(tmp_path / "plays"), "e2e-wikipedia", llama, LLM_GAMES)
    # training data: the expert's routes and the embedding run's steps, every optimal move exact
    e2e.decisions(ltg_graph, games_dir, str(tmp_path / "plays" / "embedding"), str(tmp_path / "decisions"), games)

    # the other source in the same experiment: the report then has two graphs to compare
    openalex = e2e.openalex_graph(tmp_path_factory)
    oa_games, _ = e2e.games(openalex, str(tmp_path / "oa-games"), 4, "--target-language", "en")
    oa_plays = e2e.play(openalex, str(tmp_path / "oa-games"), "random", str(tmp_path / "oa-random"), "e2e-w-oa-random")
    e2e.check_plays(oa_plays, oa_games, "random")
    runs.add("e2e-w-oa-random")

    md, summary = e2e.run_report(str(tmp_path / "report"))
    e2e.check_report(md, summary, {"ltgwiki", e2e.FIELD}, runs)
    e2e.check_plumbing(md, summary)  # the LLM here is the bundled base model
    pair = next(
        r
        for r in summary["paired"]
        if {r["agent_a"], r["agent_b"]} == {"embedding: all-MiniLM-L6-v2", "tfidf"} and r["graph"] == "ltgwiki"
    )
    assert pair["games"] >= GAMES
    for name in ("random", "embedding: all-MiniLM-L6-v2", "tfidf"):
        row = next(r for r in summary["success"] if r["label"] == name and r["graph"] == "ltgwiki")
        assert row["games"] >= GAMES and 0 <= row["wilson_low"] <= row["success_rate"] <= row["wilson_high"] <= 1
