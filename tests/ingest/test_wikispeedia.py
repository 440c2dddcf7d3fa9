"""Wikispeedia (SNAP's real files): the graph built by jobs/build_wikispeedia.py, and people's games
read from the real logs and imported by jobs/import_human_games.py, their counts checked exactly
against the files."""

from __future__ import annotations

import hashlib
import json
import os
import urllib.parse

import pyarrow.parquet as pq
import pytest

from jobs import import_human_games
from tests.conftest import WIKISPEEDIA
from tests.jobs.jobrun import job_env, run_job
from wikigame_spark.ingest import wikispeedia
from wikigame_spark.outcomes import GAVE_UP, SUCCESS, TIME_LIMIT
from wikigame_spark.play.rules import Rules, Walk

PATHS = os.path.join(WIKISPEEDIA, wikispeedia.PATHS_FOLDER)


def _read(name: str) -> str:
    with open(os.path.join(PATHS, name), encoding="utf-8") as f:
        return f.read()


def _manifest(folder: str) -> dict:
    with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as f:
        return json.load(f)


def test_back_clicks_resolve_to_the_page_returned_to():
    assert wikispeedia.resolve("A;B;C;<;<;D") == (["A", "B", "C", "B", "A", "D"], [False] * 3 + [True, True, False])
    assert wikispeedia.resolve("A;B;<;C;<") == (["A", "B", "A", "C", "A"], [False, False, True, False, True])
    assert wikispeedia.resolve("A;<;B") == wikispeedia.BACK_AT_START
    assert wikispeedia.resolve("") == wikispeedia.NO_PATH
    # the engine's back button reads the same moves off the route alone
    route, backs = wikispeedia.resolve("A;B;C;<;<;D")
    ids = {n: i for i, n in enumerate("ABCD")}
    replayed = [back for _, _, back in Walk.replay([ids[n] for n in route], Rules(True, True))]
    assert replayed == backs[1:]


def test_the_real_logs_parse_to_the_published_counts():
    games, rejected = wikispeedia.parse_games(
        _read(wikispeedia.FINISHED_PATHS),
        wikispeedia.FINISHED_PATHS,
        _read(wikispeedia.UNFINISHED),
        wikispeedia.UNFINISHED,
    )
    assert rejected == []
    finished = [g for g in games if g.file == wikispeedia.FINISHED_PATHS]
    unfinished = [g for g in games if g.file == wikispeedia.UNFINISHED]
    assert (len(finished), len(unfinished)) == (51_318, 24_875)
    assert [g.game_id for g in games] == list(range(51_318 + 24_875))
    assert wikispeedia.back_clicks(finished) == 20_561 and wikispeedia.back_clicks(unfinished) == 12_907
    outcomes = [g.outcome for g in unfinished]
    assert (outcomes.count(GAVE_UP), outcomes.count(TIME_LIMIT)) == (15_552, 9_323)
    assert sum(len(g.route) == 1 for g in finished) == 11
    assert len({(g.route[0], g.route[-1]) for g in finished}) == 28_718
    first = finished[0]
    assert first.route[:3] == ["14th_century", "15th_century", "16th_century"] and first.target == "African_slave_trade"
    assert first.outcome == SUCCESS and first.seconds is None
    timed = unfinished[0]
    assert (timed.route, timed.target, timed.outcome, timed.seconds) == (
        ["Obi-Wan_Kenobi"],
        "Microsoft",
        TIME_LIMIT,
        1804.0,
    )


def test_a_log_that_is_not_wikispeedias_is_refused_naming_the_line():
    with pytest.raises(wikispeedia.WikispeediaError, match=r"u.tsv:2: type 'quit' is not one of restart, timeout"):
        wikispeedia.parse_games("A;B\n", "f.txt", "ip\t1\t5\tA\tB\trestart\nip\t1\t5\tA\tB\tquit\n", "u.tsv")


def test_lead_is_the_prose_before_the_first_heading():
    with open(os.path.join(WIKISPEEDIA, wikispeedia.TEXTS_FOLDER, "Albert_Einstein.txt"), encoding="utf-8") as f:
        text = f.read()
    lead = wikispeedia.lead(text)
    assert lead.startswith("Albert Einstein") and "physicist" in lead
    assert len(lead) <= 1000 and "Born" not in lead.split(".")[0]  # the infobox's rows are not prose
    assert wikispeedia.lead(text, 80) == lead[:80]


@pytest.mark.slow
def test_the_graph_has_every_article_and_distinct_link(wikispeedia_graph):
    nodes = pq.read_table(os.path.join(wikispeedia_graph, "nodes")).to_pylist()
    edges = pq.read_table(os.path.join(wikispeedia_graph, "edges")).to_pylist()
    names = [r.split("\t")[0] for r in _read(wikispeedia.ARTICLES).splitlines() if r and not r.startswith("#")]
    assert len(nodes) == len(names) == 4_604
    by_id = sorted(nodes, key=lambda n: n["id"])
    assert [n["name"] for n in by_id] == sorted(names)  # numbered in the names' byte order
    titles = {n["name"]: n["title"] for n in nodes}
    assert titles["%C3%89douard_Manet"] == "Édouard Manet" and titles["10th_century"] == "10th century"
    lines = [r.split("\t") for r in _read(wikispeedia.LINKS).splitlines() if r and not r.startswith("#")]
    ids = {n["name"]: n["id"] for n in nodes}
    assert {(e["src"], e["dst"]) for e in edges} == {(ids[a], ids[b]) for a, b in lines if a != b}
    assert len(edges) == 119_882 - 110
    einstein = next(n for n in nodes if n["name"] == "Albert_Einstein")
    assert "subject.People.Astronomers_and_physicists" in einstein["categories"] and einstein["summary"].startswith(
        "Albert Einstein"
    )
    m = _manifest(wikispeedia_graph)
    assert m["kind"] == "wikispeedia-graph" and m["dbname"] == "wikispeedia"
    assert m["counts"]["links"] == {"total": 119_882, "edges": 119_772,
                                    "dropped": {"self_link": 110, "duplicate": 0, "not_an_article": 0}}  # fmt: skip
    files = {os.path.basename(f["path"]): f for f in m["inputs"]}
    assert files["links.tsv"]["sha1"] == hashlib.sha1(_read(wikispeedia.LINKS).encode("utf-8")).hexdigest()
    assert files[wikispeedia.TEXTS_FOLDER]["files"] == 4_604


def test_a_folder_without_wikispeedias_files_is_one_error_line(tmp_path):
    (tmp_path / "in").mkdir()
    done = run_job("build_wikispeedia", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "g"),
                   env=job_env(f"sqlite:///{tmp_path}/mlflow.db"))  # fmt: skip
    done.refused("not a Wikispeedia folder, no wikispeedia_paths-and-graph/articles.tsv", "plaintext_articles/")


@pytest.mark.slow
def test_every_game_people_played_is_imported_or_named(wikispeedia_graph, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    out = str(tmp_path / "people")
    args = ["--graph", wikispeedia_graph, "--wikispeedia", WIKISPEEDIA, "--output", out, "--experiment", "ws"]
    assert import_human_games.main(args) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert "76016 of 76193 games imported (33468 back clicks)" in line
    m = _manifest(out)
    c = m["counts"]
    finished, unfinished = c["files"][wikispeedia.FINISHED_PATHS], c["files"][wikispeedia.UNFINISHED]
    assert (finished["rows"], unfinished["rows"]) == (51_318, 24_875)
    assert (finished["back_clicks"], unfinished["back_clicks"]) == (20_561, 12_907)
    assert finished["left_out_by"] == {"link_not_in_graph": 45} and finished["moves_not_in_graph"] == 46
    assert unfinished["left_out_by"] == {"title_not_in_graph": 29, "link_not_in_graph": 95, "target_unreachable": 8}
    assert unfinished["moves_not_in_graph"] == 100
    assert finished["outcomes"] == {SUCCESS: 51_318 - 45}
    assert sum(unfinished["outcomes"].values()) == 24_875 - 29 - 95 - 8
    assert c["imported"] == 76_016 == len(pq.read_table(os.path.join(out, "part-000000", "plays")))
    left = m["left_out"]
    named = [r for r in left if r["reason"] == "title_not_in_graph"]
    assert {r["detail"] for r in named} >= {"not an article: Long_peper", "not an article: C++"}
    off = next(r for r in left if r["reason"] == "link_not_in_graph")
    a, b = off["detail"].removeprefix("no such link: ").split(" | ")[0].split(" → ")
    links = {tuple(r.split("\t")) for r in _read(wikispeedia.LINKS).splitlines() if r and not r.startswith("#")}
    assert (a, b) not in links and off["line"] > 0

    plays = pq.read_table(os.path.join(out, "part-000000", "plays")).to_pandas()
    nodes = pq.read_table(os.path.join(wikispeedia_graph, "nodes")).to_pandas()
    name = dict(zip(nodes["id"], nodes["name"]))
    path = _read(wikispeedia.FINISHED_PATHS).splitlines()
    backs = [i for i, p in enumerate(path) if "<" in p]
    game = plays[plays["game_id"] == backs[0]].iloc[0]
    route, _ = wikispeedia.resolve(path[backs[0]])
    assert [name[v] for v in game["route"]] == route and game["steps"] == len(route) - 1
    assert game["outcome"] == SUCCESS and game["target"] == game["route"][-1] and game["steps"] >= game["optimal_steps"]
    replayed = sum(back for _, _, back in Walk.replay(list(game["route"]), Rules(True, True)))
    assert replayed == path[backs[0]].count("<")
    gave_up = plays[plays["outcome"] == GAVE_UP]
    assert len(gave_up) and (gave_up["seconds"] > 0).all() and plays["optimal_steps"].min() >= 0
    same = plays[plays["source"] == plays["target"]]
    assert len(same) == 11 and (same["optimal_steps"] == 0).all()  # the one-article games


def test_give_one_log_of_games(tmp_path):
    args = ["--graph", str(tmp_path), "--tsv", "x.tsv", "--wikispeedia", WIKISPEEDIA]
    done = run_job("import_human_games", *args, env=job_env(f"sqlite:///{tmp_path}/mlflow.db"))
    done.refused("give the games to import: --tsv FILE or --wikispeedia DIR (one of them)")


def test_titles_decode_as_urls():
    assert wikispeedia.title("%C3%89douard_Manet") == "Édouard Manet" == urllib.parse.unquote("%C3%89douard Manet")
    assert wikispeedia.title("C%2B%2B") == "C++"
