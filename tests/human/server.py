"""jobs/human_play.py as a real server process on 127.0.0.1, and a headless Chromium to play it."""

from __future__ import annotations

import collections
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from tests.conftest import ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HumanPlayServer:
    """One run of jobs/human_play.py; start() again after kill() to restart it with the same flags."""

    def __init__(self, argv: list[str], env: dict, log_path: str) -> None:
        self.port = free_port()
        self.argv = [sys.executable, os.path.join(ROOT, "jobs", "human_play.py"), *argv, "--port", str(self.port)]
        self.env = {**os.environ, **env}
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def log(self) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def start(self, timeout: float = 120) -> HumanPlayServer:
        log = open(self.log_path, "a", encoding="utf-8")
        self.proc = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"human_play exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.url(), timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        raise RuntimeError(f"human_play did not answer within {timeout} s:\n{self.log()}")

    def kill(self) -> None:
        """SIGKILL to the server's PID: no chance to record anything, as in a crash."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def peak_rss_kib(self) -> int:
        """The server process's peak resident set size so far (VmHWM)."""
        with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 300) -> int:
        """Send ``sig`` and wait for the run to be recorded and the process to exit."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


class Client:
    """A crafted client with a browser's manners: its own cookie jar, and the ``Origin`` of the
    server's pages on every POST (``origin=None``: none; a string: that one). Redirects are not
    followed, so a move's answer is the server's acknowledgement itself (303)."""

    def __init__(self, srv: HumanPlayServer, origin: str | None = "own", cookies: dict | None = None) -> None:
        self.srv = srv
        self.origin = f"http://127.0.0.1:{srv.port}" if origin == "own" else origin
        self.cookies = dict(cookies or {})

    @classmethod
    def of_browser(cls, srv: HumanPlayServer, driver) -> Client:
        """A client holding the cookies of a Selenium browser: it acts as that browser."""
        return cls(srv, cookies={c["name"]: c["value"] for c in driver.get_cookies()})

    def request(self, method: str, path: str, fields: dict | None = None, headers: dict | None = None):
        """(status, body, headers) of one request; Set-Cookie is kept."""
        conn = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=30)
        try:
            head = dict(headers or {})
            if self.cookies:
                head["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
            body = None
            if method == "POST":
                body = urllib.parse.urlencode(fields or {}).encode()
                head["Content-Type"] = "application/x-www-form-urlencoded"
                if self.origin is not None:
                    head.setdefault("Origin", self.origin)
            conn.request(method, path, body=body, headers=head)
            r = conn.getresponse()
            for value in r.headers.get_all("Set-Cookie") or []:
                name, _, rest = value.partition("=")
                self.cookies[name.strip()] = rest.split(";", 1)[0]
            return r.status, r.read().decode(), r.headers
        finally:
            conn.close()

    def get(self, path: str) -> tuple[int, str]:
        """GET, following the server's redirects (as a browser does)."""
        for _ in range(5):
            status, body, headers = self.request("GET", path)
            if status not in (302, 303):
                return status, body
            path = headers["Location"]
        raise AssertionError(f"redirect loop at {path}")

    def post(self, path: str, fields: dict, headers: dict | None = None) -> tuple[int, str]:
        """POST a form; a 303 is followed by a GET of its target, as a browser does."""
        status, body, head = self.request("POST", path, fields, headers)
        if status == 303:
            return self.get(head["Location"])
        return status, body

    def start(self, name: str) -> tuple[int, str]:
        """Start playing as ``name`` from this client: the name becomes its own."""
        return self.post("/start", {"name": name})


def journal(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def shortest_path(adj: dict, source: int, target: int) -> list[int]:
    """A shortest route source → target (BFS, neighbours in id order)."""
    parent = {source: None}
    queue = collections.deque([source])
    while queue:
        u = queue.popleft()
        if u == target:
            break
        for v in sorted(adj.get(u, ())):
            if v not in parent:
                parent[v] = u
                queue.append(v)
    path = [target]
    while parent[path[-1]] is not None:
        path.append(parent[path[-1]])
    return path[::-1]


def page_wait(browser, seconds: float):
    """A ``WebDriverWait`` that looks again when an element it read was replaced meanwhile: a
    React page (the MLflow UI) renders its lists anew as their data arrive."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, seconds, ignored_exceptions=(StaleElementReferenceException,))


def chromium(javascript: bool = True, args: tuple[str, ...] = ()):
    """Headless Chromium from Debian's packages through its chromedriver (no download); ``args``:
    more command-line switches."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        raise RuntimeError("chromium and chromium-driver are not installed: run `make browser`")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1200,960",
        *args,
    ):
        opts.add_argument(arg)
    if not javascript:
        opts.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
