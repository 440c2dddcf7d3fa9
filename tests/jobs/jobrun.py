"""Running a job as a user does: a real process, its exit status and its last lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass

from tests.conftest import ROOT


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


def run_job(job: str, *args: str, env: dict, timeout: float = 600) -> Finished:
    done = subprocess.run(command(job, *args), cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    return Finished(done.returncode, done.stdout, done.stderr)


def chunk_manifests(plays_dir: str) -> dict[str, dict]:
    """The finished chunks of a plays folder, by name."""
    found = {}
    for name in sorted(os.listdir(plays_dir)) if os.path.isdir(plays_dir) else []:
        path = os.path.join(plays_dir, name, "manifest.json")
        if name.startswith("part-") and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                found[name] = json.load(f)
    return found
