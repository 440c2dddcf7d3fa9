"""jobs/human_play.py end to end in headless Chromium on the real Latgalian graph.

One server (run ``browser``) serves games drawn by jobs/sample_games.py while players click along a
shortest path, give up, send crafted moves, lose the server to SIGKILL and resume, and 20 play at
once; SIGTERM then records the run, and jobs/report.py shows ``human`` beside a random agent. Two
more servers: a 3-second time limit (stopped with Ctrl-C), and a small graph whose titles are markup.
The tests of this module run in order, as one session of play.
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.parse

import pyarrow.parquet as pq
import pytest
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from jobs import play_games, sample_games
from jobs import report as report_job
from tests.conftest import ROOT
from tests.human.server import HumanPlayServer, chromium, get, post, shortest_path
from wikigame_spark.devtools.games import small_graph
from wikigame_spark.schemas import PLAYS

pytestmark = pytest.mark.browser

EXPERIMENT = "humans"
RUN = "browser"
GAMES = 12
PLAYERS = 20
ARTIFACTS = os.path.join(ROOT, "out", "test-artifacts")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow')}/mlflow.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", uri)
        yield {"MLFLOW_TRACKING_URI": uri}


@pytest.fixture(scope="module")
def ltg(ltg_graph, tmp_path_factory, env):
    """The graph, games from jobs/sample_games.py, adjacency and titles read independently."""
    games_dir = str(tmp_path_factory.mktemp("human") / "games")
    argv = ["--graph", ltg_graph, "--games", str(GAMES), "--seed", "3", "--output", games_dir]
    assert sample_games.main([*argv, "--experiment", "sampling"]) == 0
    games = pq.read_table(f"{games_dir}/games").to_pandas().sort_values("game_id", ignore_index=True)
    edges = pq.read_table(f"{ltg_graph}/edges").to_pandas()
    adj = collections.defaultdict(set)
    for s, d in zip(edges["src"], edges["dst"]):
        adj[int(s)].add(int(d))
    nodes = pq.read_table(f"{ltg_graph}/nodes").to_pandas()
    return {
        "graph": ltg_graph,
        "games_dir": games_dir,
        "games": games,
        "adj": adj,
        "title": dict(zip(nodes["id"].astype(int), nodes["title"])),
    }


@pytest.fixture(scope="module")
def server(ltg, tmp_path_factory):
    log = str(tmp_path_factory.mktemp("logs") / "browser.log")
    argv = ["--graph", ltg["graph"], "--games", ltg["games_dir"], "--experiment", EXPERIMENT, "--run-name", RUN]
    srv = HumanPlayServer(argv, {}, log).start()
    yield srv
    if srv.proc.poll() is None:
        srv.stop()


@pytest.fixture(scope="module")
def driver():
    d = chromium()
    yield d
    d.quit()


def start_playing(driver, srv, name: str) -> None:
    driver.get(srv.url())
    driver.find_element(By.ID, "name").send_keys(name)
    follow(driver, driver.find_element(By.ID, "start"))
    assert driver.find_elements(By.ID, "current-title")


def gone(page) -> bool:
    """Whether the element ``page`` belongs to a document the browser has left. chromedriver reports
    such an element as stale, or — while the new document loads — with "Node with given id does not
    belong to the document", which Selenium's ``staleness_of`` does not take for stale."""
    try:
        page.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as error:
        if "does not belong to the document" in (error.msg or ""):
            return True
        raise
    return False


def follow(driver, element) -> None:
    """Click ``element`` and wait until the page it leads to has loaded (the same chromedriver error
    can come from a click whose navigation has already replaced the document: the click counts when
    the old page is gone)."""
    page = driver.find_element(By.TAG_NAME, "html")
    try:
        element.click()
    except WebDriverException:
        if not gone(page):
            raise
    WebDriverWait(driver, 10).until(lambda d: gone(page))
    WebDriverWait(driver, 10).until(lambda d: d.execute_script("return document.readyState") == "complete")


def offered_on_page(driver) -> list[tuple[int, str]]:
    links = driver.find_elements(By.CSS_SELECTOR, "button[data-node-id]")
    return [(int(b.get_attribute("data-node-id")), b.text) for b in links]


def click(driver, node: int) -> None:
    follow(driver, driver.find_element(By.CSS_SELECTOR, f'button[data-node-id="{node}"]'))


def text(driver, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).text


def game_zero(ltg) -> tuple[dict, list[int]]:
    g = ltg["games"].iloc[0]
    return g, shortest_path(ltg["adj"], int(g.source), int(g.target))


def journal_events(ltg) -> list[dict]:
    with open(f"{ltg['graph']}/human/{RUN}/journal.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_shortest_path_by_clicking_succeeds_with_the_engines_links(ltg, server, driver, capsys):
    g, path = game_zero(ltg)
    title = ltg["title"]
    start_playing(driver, server, "Ada")
    assert text(driver, "target-title") == title[int(g.target)]
    assert len(path) - 1 == g.optimal_steps
    for i, node in enumerate(path[1:]):
        here = path[i]
        assert text(driver, "current-title") == title[here]
        assert text(driver, "steps") == str(i)
        shown = offered_on_page(driver)
        # exactly the engine's offer: out-links minus the pages visited, titles as text, alphabetical
        assert {n for n, _ in shown} == ltg["adj"][here] - set(path[: i + 1])
        assert [t for _, t in shown] == [title[n] for n, _ in shown]
        assert [t for _, t in shown] == sorted((t for _, t in shown), key=lambda t: (t.casefold(), t))
        if i == 1:  # the game page with a link's summary showing, as a person sees it
            ActionChains(driver).move_to_element(
                driver.find_element(By.CSS_SELECTOR, f'button[data-node-id="{node}"]')
            ).perform()
            os.makedirs(ARTIFACTS, exist_ok=True)
            shot = os.path.join(ARTIFACTS, "human_play_game.png")
            driver.save_screenshot(shot)
            with capsys.disabled():
                print(f"\nhuman play screenshot: {shot}")
        click(driver, node)
    assert text(driver, "outcome") == "success"
    assert text(driver, "steps") == str(g.optimal_steps)
    assert driver.find_elements(By.ID, "give-up") == []


def test_giving_up(ltg, server, driver):
    start_playing(driver, server, "Bea")
    assert text(driver, "game-id") == str(ltg["games"].game_id[0])  # every player starts with game 0
    follow(driver, driver.find_element(By.ID, "give-up"))
    assert text(driver, "outcome") == "gave_up"
    follow(driver, driver.find_element(By.ID, "next-game"))  # Bea's next game is game 1: finished games are skipped
    assert text(driver, "game-id") == str(ltg["games"].game_id[1])


def test_crafted_moves_are_refused_and_change_nothing(ltg, server, driver):
    _, path = game_zero(ltg)
    start_playing(driver, server, "Cai")
    url = driver.current_url
    before = len(journal_events(ltg))
    not_offered = next(n for n in sorted(ltg["title"]) if n not in ltg["adj"][path[0]])
    cases = [
        (url + "/move", {"step": 1, "node": not_offered}, 400, "not among the links offered"),
        (url + "/move", {"step": 1, "node": path[0]}, 400, "not among the links offered"),  # visited
        (url + "/move", {"step": 1, "node": "1; DROP"}, 400, "whole number"),
        (url + "/move", {"step": 3, "node": path[1]}, 409, "stale"),
        (server.url("/player/Cai/game/999999/move"), {"step": 1, "node": path[1]}, 404, "no game 999999"),
        (
            server.url(f"/player/Cai/game/{ltg['games'].game_id[1]}/move"),
            {"step": 1, "node": path[1]},
            409,
            "not started",
        ),
        (server.url("/player/Ada/game/0/move"), {"step": 1, "node": path[1]}, 409, "is over"),  # a finished game
        (server.url("/player/%2E%2E/game/0/move"), {"step": 1, "node": path[1]}, 400, "name"),
        (server.url("/player/..%2F..%2Fetc/game/0/move"), {"step": 1, "node": path[1]}, 404, "Not Found"),
        (server.url("/start"), {"name": "<img src=x onerror=alert(1)>"}, 400, "name"),
    ]
    for target, fields, status, message in cases:
        got, body = post(target, fields)
        assert got == status, (target, fields, body)
        assert message in body
    assert get(server.url("/player/Cai/game/5"))[0] == 409  # games come in order
    assert get(url + "/move")[0] == 405  # a move is a POST
    assert len(journal_events(ltg)) == before
    driver.refresh()
    assert text(driver, "steps") == "0" and text(driver, "current-title") == ltg["title"][path[0]]


def test_killed_server_restarts_and_the_game_resumes(ltg, server, driver):
    g, path = game_zero(ltg)
    start_playing(driver, server, "Dan")
    click(driver, path[1])
    game_url = driver.current_url
    server.kill()
    server.start()
    driver.get(game_url)
    assert text(driver, "current-title") == ltg["title"][path[1]]
    assert text(driver, "steps") == "1"
    for node in path[2:]:
        click(driver, node)
    assert text(driver, "outcome") == "success"
    assert text(driver, "steps") == str(g.optimal_steps)


def detour_route(ltg, i: int) -> list[int]:
    """Even players take a shortest path; odd ones first follow a link off it, then the shortest
    path that avoids the pages visited."""
    g, path = game_zero(ltg)
    if i % 2 == 0:
        return path
    adj = ltg["adj"]
    for first in sorted(adj[path[0]] - {path[1]}):
        rest = {k: v - {path[0]} for k, v in adj.items()}
        try:
            tail = shortest_path(rest, first, int(g.target))
        except KeyError:
            continue
        return [path[0], *tail]
    return path


def test_twenty_players_at_once_lose_and_repeat_no_move(ltg, server):
    routes = {f"p{i:02d}": detour_route(ltg, i) for i in range(PLAYERS)}

    def play(name: str) -> list[tuple[int, int]]:
        status, _ = get(server.url(f"/player/{name}"))
        assert status == 200
        statuses = []
        with concurrent.futures.ThreadPoolExecutor(2) as pair:
            for step, node in enumerate(routes[name][1:], 1):
                fields = {"step": step, "node": node}
                url = server.url(f"/player/{name}/game/0/move")
                twice = [pair.submit(post, url, fields) for _ in range(2)]  # a double click
                statuses.append(tuple(sorted(f.result()[0] for f in twice)))
        return statuses

    with concurrent.futures.ThreadPoolExecutor(PLAYERS) as pool:
        results = dict(zip(routes, pool.map(play, routes)))
    for name, statuses in results.items():
        assert statuses == [(200, 409)] * (len(routes[name]) - 1), name
        page = get(server.url(f"/player/{name}/game/0"))[1]
        assert 'data-outcome="success"' in page
    moves = [e for e in journal_events(ltg) if e["event"] == "move" and e["player"] in routes]
    assert len(moves) == sum(len(r) - 1 for r in routes.values())
    for name, route in routes.items():
        assert [e["node"] for e in moves if e["player"] == name] == route[1:]


def test_sigterm_records_the_run_and_the_report_shows_humans(ltg, server, env, tmp_path, spark):
    assert server.stop(signal.SIGTERM) == 0, server.log()
    assert "human_play: wrote" in server.log()
    output = f"{ltg['graph']}/plays/{RUN}"
    plays = spark.read.schema(PLAYS).parquet(f"{output}/part-*/plays").toPandas()
    got = {(r.model, r.outcome, r.steps) for r in plays.itertuples()}
    g, _ = game_zero(ltg)
    assert ("Ada", "success", g.optimal_steps) in got and ("Dan", "success", g.optimal_steps) in got
    assert ("Bea", "gave_up", 0) in got
    assert len(plays) == 3 + PLAYERS and "Cai" not in set(plays.model)  # Cai's game is open
    assert set(plays.agent) == {"human"} and (plays.game_id == g.game_id).all()
    for r in plays.itertuples():
        assert r.route[0] == g.source and r.steps == len(r.route) - 1
    with open(f"{output}/manifest.json") as f:
        manifest = json.load(f)
    assert manifest["counts"] == {"players": 3 + PLAYERS, "unfinished_games": 2}  # Cai's, Bea's second

    random_out = str(tmp_path / "random")
    argv = ["--graph", ltg["graph"], "--games-dir", ltg["games_dir"], "--agent", "random", "--games", str(GAMES)]
    assert play_games.main([*argv, "--experiment", EXPERIMENT, "--run-name", "random", "--output", random_out]) == 0
    report_dir = str(tmp_path / "report")
    assert report_job.main(["--experiment", EXPERIMENT, "--output", report_dir]) == 0
    success = {r["label"]: r for r in _csv(f"{report_dir}/tables/table4_success.csv")}
    assert set(success) == {"human", "random"}
    assert int(float(success["human"]["games"])) == 3 + PLAYERS
    with open(f"{report_dir}/report.md", encoding="utf-8") as f:
        assert "human" in f.read()


def _csv(path: str) -> list[dict]:
    import csv

    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_bad_input_is_one_error_line(ltg, tmp_path):
    """A missing graph, a run name that is not a folder name, a resumed run with other settings, a
    port in use: each ends the job with one ``error:`` line and exit 2."""
    base = [sys.executable, os.path.join(ROOT, "jobs", "human_play.py")]
    games = ["--graph", ltg["graph"], "--games", ltg["games_dir"]]
    started = HumanPlayServer([*games, "--run-name", "settings"], {}, str(tmp_path / "log")).start()
    assert started.stop() == 0 and "no finished games; nothing recorded" in started.log()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        cases = {
            "not found": ["--graph", str(tmp_path / "nothing")],
            "not a games table": ["--graph", ltg["graph"], "--games", ltg["graph"]],
            "names a folder": [*games, "--run-name", "../up"],
            "other settings (time_limit": [*games, "--run-name", "settings", "--time-limit", "5"],
            "cannot listen": [*games, "--run-name", "busy", "--port", str(busy.getsockname()[1])],
        }
        for message, argv in cases.items():
            done = subprocess.run(base + argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2 and lines[-1].startswith("error: ") and message in lines[-1], done.stderr


def test_time_limit_is_enforced_by_the_server(ltg, driver, tmp_path, env, spark):
    argv = ["--graph", ltg["graph"], "--games", ltg["games_dir"], "--experiment", "hurried"]
    srv = HumanPlayServer([*argv, "--run-name", "hurried", "--time-limit", "3"], {}, str(tmp_path / "log")).start()
    try:
        _, path = game_zero(ltg)
        start_playing(driver, srv, "Eve")
        assert driver.find_element(By.ID, "time-left").text in ("0:03", "0:02")
        # the countdown reloads the page at zero; the server has ended the game by then
        WebDriverWait(driver, 15, ignored_exceptions=(WebDriverException,)).until(
            EC.presence_of_element_located((By.ID, "outcome"))
        )
        assert text(driver, "outcome") == "time_limit"
        status, body = post(driver.current_url + "/move", {"step": 1, "node": path[1]})
        assert status == 409 and "limit ran out" in body
        # JavaScript off: links still move, and the page refreshes itself once the time is up
        plain = chromium(javascript=False)
        try:
            start_playing(plain, srv, "Fay")
            assert plain.find_elements(By.CSS_SELECTOR, "noscript > meta")  # parsed as markup: scripting is off
            click(plain, path[1])
            assert text(plain, "steps") == "1"
            WebDriverWait(plain, 15, ignored_exceptions=(WebDriverException,)).until(
                EC.presence_of_element_located((By.ID, "outcome"))
            )
            assert text(plain, "outcome") == "time_limit"
        finally:
            plain.quit()
    finally:
        assert srv.stop(signal.SIGINT) == 0, srv.log()  # Ctrl-C finishes the run too
    plays = spark.read.schema(PLAYS).parquet(f"{ltg['graph']}/plays/hurried/part-*/plays").toPandas()
    got = sorted(zip(plays.model, plays.outcome, plays.steps, plays.seconds))
    assert got == [("Eve", "time_limit", 0, 3.0), ("Fay", "time_limit", 1, 3.0)]


def test_markup_titles_and_names_are_text(tmp_path, driver, env, spark):
    """A graph whose every title and summary is markup, games from jobs/sample_games.py, a player
    whose name needs quoting in a URL: all of it shows as text."""
    titles = ["<script>alert(1)</script>", "<b>bold</b> & co", "<img src=x onerror=alert(2)>"]
    edges = [(0, 1), (0, 2), (1, 2), (2, 0)]
    graph = small_graph(tmp_path, titles, edges, ["<i>not italic</i>", "<script>alert(3)</script>", "x"])
    argv = ["--graph", graph, "--games", "1", "--seed", "0", "--experiment", "sampling"]
    assert sample_games.main(argv) == 0
    game = pq.read_table(f"{graph}/games/games").to_pylist()[0]
    adj = collections.defaultdict(set)
    for s, d in edges:
        adj[s].add(d)
    path = shortest_path(adj, game["source"], game["target"])
    srv = HumanPlayServer(["--graph", graph, "--experiment", "markup"], {}, str(tmp_path / "log")).start()
    name = "Zoë O'Neil-2"
    try:
        start_playing(driver, srv, name)
        assert text(driver, "player") == name
        assert urllib.parse.quote(name, safe="") in driver.current_url
        for i, node in enumerate(path[1:]):
            assert text(driver, "current-title") == titles[path[i]]
            assert text(driver, "target-title") == titles[game["target"]]
            offered = sorted(adj[path[i]] - set(path[: i + 1]), key=lambda n: titles[n].casefold())
            assert offered_on_page(driver) == [(n, titles[n]) for n in offered]
            with pytest.raises(NoAlertPresentException):
                driver.switch_to.alert.accept()
            for tag in ("b", "i", "img"):
                assert driver.find_elements(By.TAG_NAME, tag) == []
            assert len(driver.find_elements(By.TAG_NAME, "script")) == 1  # the countdown only
            click(driver, node)
        assert text(driver, "outcome") == "success"
    finally:
        assert srv.stop() == 0, srv.log()
    plays = spark.read.schema(PLAYS).parquet(f"{graph}/plays/human-play/part-*/plays").toPandas()
    assert list(plays.model) == [name] and list(plays.route[0]) == path
