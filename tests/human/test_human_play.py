"""jobs/human_play.py end to end in headless Chromium on the real Latgalian graph.

One server (run ``browser``) serves games drawn by jobs/sample_games.py while players click along a
shortest path, give up, send crafted moves, are refused from other browsers, other sites and other
host names, send huge forms, lose the server to SIGKILL and resume, and 20 play at once; SIGTERM
then records the run, and jobs/report.py shows ``human`` beside a random agent. More servers: one
killed by PID while six players move (its journal replays exactly what was acknowledged), a second
server on a live run (refused), a 3-second time limit (stopped with Ctrl-C), and a small graph whose
titles are markup. The tests of this module run in order, as one session of play.
"""

from __future__ import annotations

import collections
import concurrent.futures
import http.client
import http.server
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
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
from tests.human.server import Client, HumanPlayServer, chromium, journal, shortest_path
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
    argv = ["--graph", ltg["graph"], "--games-dir", ltg["games_dir"], "--experiment", EXPERIMENT, "--run-name", RUN]
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


def journal_events(ltg, run: str = RUN) -> list[dict]:
    return journal(f"{ltg['graph']}/human/{run}/journal.jsonl")


def path_of(url: str) -> str:
    return urllib.parse.urlsplit(url).path


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
    url = path_of(driver.current_url)
    mine = Client.of_browser(server, driver)  # Cai's own browser, so only the rules refuse
    before = len(journal_events(ltg))
    not_offered = next(n for n in sorted(ltg["title"]) if n not in ltg["adj"][path[0]])
    cases = [
        (url + "/move", {"step": 1, "node": not_offered}, 400, "not among the links offered"),
        (url + "/move", {"step": 1, "node": path[0]}, 400, "not among the links offered"),  # visited
        (url + "/move", {"step": 1, "node": "1; DROP"}, 400, "whole number"),
        (url + "/move", {"step": 3, "node": path[1]}, 409, "stale"),
        ("/player/Cai/game/999999/move", {"step": 1, "node": path[1]}, 404, "no game 999999"),
        (f"/player/Cai/game/{ltg['games'].game_id[1]}/move", {"step": 1, "node": path[1]}, 409, "not started"),
        ("/player/Ada/game/0/move", {"step": 1, "node": path[1]}, 409, "is over"),  # a finished game
        ("/player/%2E%2E/game/0/move", {"step": 1, "node": path[1]}, 400, "name"),
        ("/player/..%2F..%2Fetc/game/0/move", {"step": 1, "node": path[1]}, 404, "Not Found"),
        ("/start", {"name": "<img src=x onerror=alert(1)>"}, 400, "name"),
    ]
    for target, fields, status, message in cases:
        got, body = mine.post(target, fields)
        assert got == status, (target, fields, body)
        assert message in body
    assert mine.get("/player/Cai/game/5")[0] == 409  # games come in order
    assert mine.get(url + "/move")[0] == 405  # a move is a POST
    assert len(journal_events(ltg)) == before
    driver.refresh()
    assert text(driver, "steps") == "0" and text(driver, "current-title") == ltg["title"][path[0]]


def test_a_player_is_bound_to_their_browser(ltg, server, driver):
    """Another client may not see, move or give up Cai's game, nor take the name; a forged or
    another run's cookie is nobody's; a POST without this server's Origin is refused."""
    _, path = game_zero(ltg)
    url = f"/player/Cai/game/{ltg['games'].game_id[0]}"
    before = len(journal_events(ltg))
    stranger = Client(server)
    assert stranger.post(url + "/give-up", {})[0] == 403
    assert stranger.post(url + "/move", {"step": 1, "node": path[1]})[0] == 403
    assert stranger.get(url)[0] == 403 and stranger.get("/player/Cai")[0] == 403
    status, body = stranger.start("Cai")
    assert status == 403 and "another browser" in body
    assert stranger.request("POST", "/start", {"name": "Gus"})[0] == 303  # a name of its own
    assert stranger.get(url)[0] == 403  # still not Cai's browser
    cookie = stranger.cookies.copy()
    name = next(iter(cookie))
    browser_id = cookie[name].split(".")[0]
    forged = Client(server, cookies={name: f"{browser_id}.{'0' * 64}"})
    assert forged.get("/player/Gus")[0] == 403
    mine = Client.of_browser(server, driver)
    for origin in (None, "http://127.0.0.1:1", "null", f"http://localhost:{server.port}.evil.test"):
        status, body = Client(server, origin=origin, cookies=mine.cookies).post(url + "/give-up", {})
        assert status == 403 and "its own pages" in body, origin
    referer = {"Referer": f"http://127.0.0.1:{server.port}{url}"}  # a browser that sends no Origin
    stale = {"step": 9, "node": path[1]}  # past the Origin check, refused by the rules
    assert Client(server, origin=None, cookies=mine.cookies).request("POST", url + "/move", stale, referer)[0] == 409
    assert len(journal_events(ltg)) == before
    assert [e["player"] for e in journal(f"{ltg['graph']}/human/{RUN}/players.jsonl")].count("Cai") == 1
    assert not any("browser" in e for e in journal_events(ltg))  # the journal names no browser
    driver.refresh()
    assert text(driver, "steps") == "0" and driver.find_elements(By.ID, "give-up")


class _EvilPage(http.server.BaseHTTPRequestHandler):
    """A page of another site (another port of the same host: the same *site* for cookies) that
    posts Cai's give-up as soon as it loads."""

    action = ""

    def do_GET(self):
        page = (
            f'<form method="post" action="{self.action}"><input name="x" value="1"></form>'
            "<script>document.forms[0].submit()</script>"
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args):
        pass


def test_other_sites_and_rebound_names_are_refused_in_the_browser(ltg, server, driver):
    """In Chromium: a page of another origin that posts Cai's give-up from Cai's own browser (CSRF)
    is refused; a host name made to resolve to the server (DNS rebinding) reaches nothing; another
    browser opening Cai's game is refused."""
    gid = ltg["games"].game_id[0]
    before = len(journal_events(ltg))
    _EvilPage.action = server.url(f"/player/Cai/game/{gid}/give-up")
    evil = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EvilPage)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    try:
        page = driver.find_element(By.TAG_NAME, "html")
        driver.get(f"http://127.0.0.1:{evil.server_address[1]}/")
        WebDriverWait(driver, 10).until(lambda d: gone(page) and d.find_elements(By.ID, "error"))
        assert "its own pages" in text(driver, "error")
    finally:
        evil.shutdown()
    assert len(journal_events(ltg)) == before
    other = chromium(args=("--host-resolver-rules=MAP rebound.test 127.0.0.1",))
    try:
        other.get(f"http://rebound.test:{server.port}/")
        assert "is not an address of this server" in other.page_source
        assert other.find_elements(By.ID, "name") == []
        other.get(server.url(f"/player/Cai/game/{gid}"))
        assert "started them" in other.find_element(By.ID, "error").text
        assert other.find_elements(By.ID, "current-title") == []
    finally:
        other.quit()
    driver.get(server.url(f"/player/Cai/game/{gid}"))
    assert text(driver, "steps") == "0" and driver.find_elements(By.ID, "give-up")


def test_a_wrong_host_header_is_refused(server):
    for host in ("rebound.test", f"rebound.test:{server.port}", "127.0.0.1:1", f"127.0.0.2:{server.port}", ""):
        status, body, _ = Client(server).request("GET", "/", headers={"Host": host})
        assert status == 400 and "not an address of this server" in body, host
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", f"LOCALHOST:{server.port}"):
        assert Client(server).request("GET", "/", headers={"Host": host})[0] == 200, host


def _huge_post(srv: HumanPlayServer, path: str, total: int, chunked: bool, headers: str = "") -> tuple[str, int]:
    """Send a form of ``total`` bytes (declared, or chunked without a length) until the server
    answers; (status line, bytes sent by then)."""
    piece = b"x" * (1 << 16)
    if chunked:
        piece = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nOrigin: http://127.0.0.1:{srv.port}\r\n{headers}"
    head += "Content-Type: application/x-www-form-urlencoded\r\n"
    head += "Transfer-Encoding: chunked\r\n\r\nb\r\nname=xxxxxx\r\n" if chunked else f"Content-Length: {total}\r\n\r\n"
    sent, pending, answer = 0, b"", b""
    with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as s:
        s.sendall(head.encode())
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            readable, writable, _ = select.select([s], [s] if sent < total else [], [], 1.0)
            if readable:
                answer = s.recv(65536)
                break
            if writable:
                pending = pending or piece
                try:
                    n = s.send(pending)
                except OSError:  # closed after answering: the answer is waiting
                    break
                pending, sent = pending[n:], sent + n
        while answer and b"\r\n" not in answer:
            more = s.recv(65536)
            if not more:
                break
            answer += more
        if not answer:
            answer = s.recv(65536)
    return answer.split(b"\r\n", 1)[0].decode(), sent


def test_a_huge_form_is_refused_before_it_is_read(ltg, server, driver):
    """A 300 MB POST, declared or chunked, is answered 413 before it is sent, and the server's peak
    memory does not grow with it."""
    total = 300 << 20
    cookie = "; ".join(f"{k}={v}" for k, v in Client.of_browser(server, driver).cookies.items())
    peak = server.peak_rss_kib()
    gid = ltg["games"].game_id[0]
    for path, chunked, headers in (
        ("/start", False, ""),
        ("/start", True, ""),
        (f"/player/Cai/game/{gid}/move", False, f"Cookie: {cookie}\r\n"),
        (f"/player/Cai/game/{gid}/move", True, f"Cookie: {cookie}\r\n"),
    ):
        status, sent = _huge_post(server, path, total, chunked, headers)
        assert status.startswith("HTTP/1.1 413"), (path, chunked, status)
        assert sent < total // 10, (path, chunked, sent)
    grown = server.peak_rss_kib() - peak
    print(f"\npeak RSS {peak / 1024:.0f} MiB, grown by {grown / 1024:.1f} MiB under four 300 MB posts")
    assert grown < 20 * 1024
    assert Client(server).request("GET", "/")[0] == 200


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
        client = Client(server)  # each player in a browser of their own
        status, _ = client.start(name)
        assert status == 200
        statuses = []
        with concurrent.futures.ThreadPoolExecutor(2) as pair:
            for step, node in enumerate(routes[name][1:], 1):
                fields = {"step": step, "node": node}
                url = f"/player/{name}/game/0/move"
                twice = [pair.submit(client.request, "POST", url, fields) for _ in range(2)]  # a double click
                statuses.append(tuple(sorted(f.result()[0] for f in twice)))
        return client, statuses

    with concurrent.futures.ThreadPoolExecutor(PLAYERS) as pool:
        results = dict(zip(routes, pool.map(play, routes)))
    for name, (client, statuses) in results.items():
        assert statuses == [(303, 409)] * (len(routes[name]) - 1), name
        page = client.get(f"/player/{name}/game/0")[1]
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
    """A missing graph, a run name that is not a folder name, a time limit that is not a number of
    seconds, a resumed run with other settings, a port in use: each ends the job with one ``error:``
    line and exit 2, and a bad flag before anything is written."""
    base = [sys.executable, os.path.join(ROOT, "jobs", "human_play.py")]
    games = ["--graph", ltg["graph"], "--games-dir", ltg["games_dir"]]
    started = HumanPlayServer([*games, "--run-name", "settings"], {}, str(tmp_path / "log")).start()
    assert started.stop() == 0 and "no finished games; nothing recorded" in started.log()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        cases = {
            "not found": ["--graph", str(tmp_path / "nothing")],
            "not a games table": ["--graph", ltg["graph"], "--games-dir", ltg["graph"]],
            "names a folder": [*games, "--run-name", "../up"],
            "--time-limit inf": [*games, "--run-name", "inf", "--time-limit", "inf"],
            "--time-limit nan": [*games, "--run-name", "nan", "--time-limit", "nan"],
            "--time-limit -1": [*games, "--run-name", "negative", "--time-limit", "-1"],
            "--max-steps 0": [*games, "--run-name", "steps", "--max-steps", "0"],
            "other settings (time_limit": [*games, "--run-name", "settings", "--time-limit", "5"],
            "cannot listen": [*games, "--run-name", "busy", "--port", str(busy.getsockname()[1])],
        }
        for message, argv in cases.items():
            done = subprocess.run(base + argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2 and lines[-1].startswith("error: ") and message in lines[-1], done.stderr
    for run in ("inf", "nan", "negative", "steps"):
        assert not os.path.exists(f"{ltg['graph']}/human/{run}")
        assert not os.path.exists(f"{ltg['graph']}/plays/{run}.lock")


def test_a_second_server_on_a_live_run_is_refused(ltg, tmp_path):
    """One writer per run: a second server of the same --run-name stops at start, naming the live
    one; the first serves on, its journal has one head; once it stops, the run starts again."""
    argv = ["--graph", ltg["graph"], "--games-dir", ltg["games_dir"], "--run-name", "twice"]
    first = HumanPlayServer(argv, {}, str(tmp_path / "first.log")).start()
    try:
        second = subprocess.run(
            [sys.executable, os.path.join(ROOT, "jobs", "human_play.py"), *argv, "--port", str(first.port + 1)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        last = second.stderr.strip().splitlines()[-1]
        assert second.returncode == 2 and last.startswith("error: "), second.stderr
        assert f"pid {first.proc.pid} " in last and "human play run 'twice'" in last
        assert Client(first).start("Ivy")[0] == 200
        assert [e["event"] for e in journal_events(ltg, "twice")] == ["run", "start"]
    finally:
        assert first.stop() == 0, first.log()
    again = HumanPlayServer(argv, {}, str(tmp_path / "again.log")).start()
    assert again.stop() == 0, again.log()


def _steps_shown(page: str) -> int:
    return int(re.search(r'id="steps">(\d+)<', page).group(1))


def test_kill_9_mid_run_loses_no_acknowledged_move(ltg, tmp_path, env, spark):
    """Six players move as fast as the server answers; the server is killed by PID mid-run. Each
    player's journalled moves are exactly those acknowledged, plus at most the one in flight;
    the restarted server (taking over the dead one's lock) shows that state to the same browsers,
    and the plays it records are the journal's."""
    argv = ["--graph", ltg["graph"], "--games-dir", ltg["games_dir"], "--experiment", EXPERIMENT, "--run-name", "crash"]
    srv = HumanPlayServer(argv, {}, str(tmp_path / "crash.log")).start()
    games = ltg["games"]
    names = [f"k{i}" for i in range(6)]
    clients = {name: Client(srv) for name in names}
    acked = {name: [] for name in names}
    in_flight = dict.fromkeys(names)
    failures = []

    def play(name: str) -> None:
        client = clients[name]
        try:
            assert client.start(name)[0] == 200
            for g in games.itertuples():
                if g.game_id != games.game_id[0]:
                    assert client.get(f"/player/{name}")[0] == 200  # starts the next game
                route = shortest_path(ltg["adj"], int(g.source), int(g.target))
                for step, node in enumerate(route[1:], 1):
                    in_flight[name] = (int(g.game_id), node)
                    status = client.request(
                        "POST", f"/player/{name}/game/{g.game_id}/move", {"step": step, "node": node}
                    )[0]
                    assert status == 303, status
                    acked[name].append(in_flight[name])
                    in_flight[name] = None
        except (OSError, http.client.HTTPException):
            return  # the server is gone
        except AssertionError as e:
            failures.append((name, e))

    threads = [threading.Thread(target=play, args=(name,)) for name in names]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while sum(map(len, acked.values())) < 30 and time.monotonic() < deadline:
        time.sleep(0.01)
    srv.kill()
    for t in threads:
        t.join(timeout=60)
    assert not failures
    events = journal_events(ltg, "crash")
    lost_answers = 0
    for name in names:
        journalled = [(e["game_id"], e["node"]) for e in events if e["event"] == "move" and e["player"] == name]
        assert journalled[: len(acked[name])] == acked[name], name
        extra = journalled[len(acked[name]) :]
        assert extra in ([], [in_flight[name]]), (name, extra, in_flight[name])
        lost_answers += len(extra)
    moved = sum(map(len, acked.values()))
    assert moved >= 30 and moved < len(names) * sum(int(x) for x in games.optimal_steps)  # killed mid-run
    print(f"\nkill -9 after {moved} acknowledged moves; {lost_answers} journalled moves were never answered")

    srv.start()
    assert "taking over the lock" in srv.log()
    for name in names:
        per_game = collections.Counter(e["game_id"] for e in events if e["event"] == "move" and e["player"] == name)
        for gid, n in per_game.items():
            status, page = clients[name].get(f"/player/{name}/game/{gid}")
            assert status == 200 and _steps_shown(page) == n, (name, gid)
    assert srv.stop() == 0, srv.log()
    events = journal_events(ltg, "crash")
    plays = spark.read.schema(PLAYS).parquet(f"{ltg['graph']}/plays/crash/part-*/plays").toPandas()
    source = dict(zip(games.game_id, games.source))
    for r in plays.itertuples():
        moves = [
            e["node"] for e in events if e["event"] == "move" and (e["player"], e["game_id"]) == (r.model, r.game_id)
        ]
        assert list(r.route) == [source[r.game_id], *moves]
    target = dict(zip(games.game_id, games.target))
    reached = {
        (e["player"], e["game_id"]) for e in events if e["event"] == "move" and e["node"] == target[e["game_id"]]
    }
    assert set(zip(plays.model, plays.game_id)) == reached and set(plays.outcome) == {"success"}


def test_time_limit_is_enforced_by_the_server(ltg, driver, tmp_path, env, spark):
    argv = ["--graph", ltg["graph"], "--games-dir", ltg["games_dir"], "--experiment", "hurried"]
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
        status, body = Client.of_browser(srv, driver).post(
            path_of(driver.current_url) + "/move", {"step": 1, "node": path[1]}
        )
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


def test_the_back_button_is_a_step_in_the_browser_and_in_the_record(ltg, driver, tmp_path, env, spark):
    argv = ["--graph", ltg["graph"], "--games-dir", ltg["games_dir"], "--experiment", "back"]
    srv = HumanPlayServer([*argv, "--run-name", "back", "--allow-back"], {}, str(tmp_path / "log")).start()
    try:
        g, _ = game_zero(ltg)
        source = int(g.source)
        away = next(v for v in sorted(ltg["adj"][source]) if v != int(g.target))  # not the end of the game
        start_playing(driver, srv, "Gus")
        assert not driver.find_elements(By.ID, "back")  # nothing to go back to at the source
        click(driver, away)
        assert driver.find_element(By.ID, "back").get_attribute("data-node-id") == str(source)
        follow(driver, driver.find_element(By.ID, "back"))
        assert text(driver, "steps") == "2" and text(driver, "current-title") == ltg["title"][source]
        assert not driver.find_elements(By.CSS_SELECTOR, f'button[data-node-id="{away}"]')  # visited
        follow(driver, driver.find_element(By.ID, "give-up"))
    finally:
        assert srv.stop(signal.SIGINT) == 0, srv.log()
    plays = spark.read.schema(PLAYS).parquet(f"{ltg['graph']}/plays/back/part-*/plays").toPandas()
    assert [list(r) for r in plays.route] == [[source, away, source]] and list(plays.steps) == [2]


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
