"""jobs/human_play.py as a real server process on 127.0.0.1, and a headless Chromium to play it."""

from __future__ import annotations

import collections
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
        """SIGKILL: no chance to record anything, as in a crash."""
        self.proc.kill()
        self.proc.wait(timeout=30)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 300) -> int:
        """Send ``sig`` and wait for the run to be recorded and the process to exit."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


def post(url: str, fields: dict) -> tuple[int, str]:
    """POST a form as a crafted client would; (status, body) after redirects."""
    data = urllib.parse.urlencode(fields).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


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


def chromium(javascript: bool = True):
    """Headless Chromium from Debian's packages through its chromedriver (no download)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        raise RuntimeError("chromium and chromium-driver are not installed: run `make browser`")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,960"):
        opts.add_argument(arg)
    if not javascript:
        opts.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
