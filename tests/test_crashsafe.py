"""A test that crashes its worker fails, named, and the suite goes on: ``make test``'s two xdist
workers over whole files (tests/crashsafe.py), never a hang."""

import subprocess
import sys

import pytest

from tests.conftest import ROOT

CRASHES = """import os, signal
def test_ok_before(): pass
def test_crash(): os.kill(os.getpid(), signal.SIGSEGV)
def test_ok_after(): pass
"""
EXITS = """import os
def test_exit(): os._exit(3)
def test_exit_again(): os._exit(3)
def test_after(): pass
"""
PASSES = "def test_one():\n    pass\n"


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_crashed_workers_fail_their_tests_and_every_other_test_runs(tmp_path, workers):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_a_crashes.py").write_text(CRASHES)
    (tmp_path / "test_b_exits.py").write_text(EXITS)
    for i in range(4):
        (tmp_path / f"test_c{i}.py").write_text(PASSES)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "tests.crashsafe", "-p", "no:cacheprovider", "-n", workers]
    command += ["--dist", "loadfile", "--no-loadscope-reorder", str(tmp_path)]
    done = subprocess.run(
        command, cwd=tmp_path, env={"PYTHONPATH": ROOT, "PATH": ""}, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, done.stdout[-3000:]
    assert done.stdout.strip().splitlines()[-1].startswith("3 failed, 7 passed"), done.stdout[-3000:]
    for crashed in ("test_a_crashes.py::test_crash", "test_b_exits.py::test_exit", "test_b_exits.py::test_exit_again"):
        assert f"crashed while running '{crashed}'" in done.stdout or crashed in done.stdout
