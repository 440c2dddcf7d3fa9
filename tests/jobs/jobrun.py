"""Running a job as a user does: its ``main`` on a program's arguments, its exit status and its
last lines — in this process on the suite's SparkSession, or as a real process of its own."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import subprocess
import sys
import traceback
from dataclasses import dataclass

from tests.conftest import ROOT, suite_session


@dataclass
class Finished:
    rc: int
    out: str
    err: str

    @property
    def errors(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.startswith("error:")]

    def refused(self, *fragments: str) -> str:
        """Assert the job ended with status 2 and one ``error:`` line, the last, naming ``fragments``."""
        assert self.rc == 2, f"rc {self.rc}\n{self.err[-3000:]}"
        assert len(self.errors) == 1, self.err[-3000:]
        assert self.err.rstrip().splitlines()[-1] == self.errors[0]
        assert "Traceback" not in self.err, self.err[-3000:]
        for f in fragments:
            assert f in self.errors[0], self.errors[0]
        return self.errors[0]


def job_env(tracking_uri: str, **extra: str) -> dict:
    env = dict(os.environ, MLFLOW_TRACKING_URI=tracking_uri, PYTHONPATH=ROOT, **extra)
    env.pop("WIKIGAME_VERBOSE", None)
    return env


def command(job: str, *args: str) -> list[str]:
    return [sys.executable, os.path.join(ROOT, "jobs", f"{job}.py"), *args]


def run_job(job: str, *args: str, env: dict, timeout: float = 600, process: bool = False) -> Finished:
    """The job on ``args`` with ``env`` as its environment, from the checkout's root.

    In this process by default: the job's own ``main`` and exit handling (``cli.run``) on the
    suite's SparkSession, so a job costs its work and not a JVM's start (about 12 s on 2 cores).
    ``process=True`` where the test is about the program itself: what Spark's JVM prints on the
    console, signals and kills, another master (``PYSPARK_SUBMIT_ARGS``), processes side by side.
    """
    if process:
        done = subprocess.run(command(job, *args), cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        return Finished(done.returncode, done.stdout, done.stderr)
    assert "PYSPARK_SUBMIT_ARGS" not in env, "a job on another master needs a driver of its own: process=True"
    from wikigame_spark import cli

    main = importlib.import_module(f"jobs.{job}").main
    suite_session()
    out, err = io.StringIO(), io.StringIO()
    with environment(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.run(main, list(args))
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else int(e.code is not None)
        except Exception:  # a bug: a program would print its traceback and exit 1
            traceback.print_exc()
            rc = 1
    return Finished(rc, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def environment(env: dict):
    """``env`` as the whole environment and the checkout as the working folder, as a process has."""
    saved, cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        os.chdir(cwd)


def chunk_manifests(plays_dir: str) -> dict[str, dict]:
    """The finished chunks of a plays folder, by name."""
    found = {}
    for name in sorted(os.listdir(plays_dir)) if os.path.isdir(plays_dir) else []:
        path = os.path.join(plays_dir, name, "manifest.json")
        if name.startswith("part-") and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                found[name] = json.load(f)
    return found
