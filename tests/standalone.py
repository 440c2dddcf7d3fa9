"""A real Spark standalone cluster on 127.0.0.1: one master and workers, started with spark-class."""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from typing import ClassVar

VENV_BIN = os.path.dirname(sys.executable)
SPARK_HOME = os.path.dirname(importlib.util.find_spec("pyspark").origin)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _runs_the_build_python(folder: str) -> bool:
    """Whether ``folder``'s pythonX.Y (a pyenv shim, a link) runs the interpreter the venv was made from."""
    python = os.path.join(folder, f"python{sys.version_info.major}.{sys.version_info.minor}")
    if not os.access(python, os.X_OK):
        return False
    ran = subprocess.run([python, "-c", "import sys; print(sys.base_prefix)"], capture_output=True, text=True)
    return ran.stdout.strip() == sys.base_prefix


class StandaloneCluster:
    """Master + ``workers`` worker processes; ``url`` is the ``spark://`` master address.

    One cluster of a shape serves the whole test run: starting three JVMs and waiting for the
    workers to register costs more than most of the jobs submitted to it. Entering a cluster whose
    shape is already running in this process takes that one (its ``url``, ``workdir`` and
    processes); leaving it keeps it up for the next test, and it stops when the process exits.
    Each job is its own application with its own executors, so tests share no state but the JVMs.
    """

    _running: ClassVar[dict[tuple, StandaloneCluster]] = {}

    def __init__(self, workdir: str, workers: int = 2, cores: int = 1, memory: str = "1g", bare: bool = False):
        self.workdir = workdir
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.bare = bare
        self.procs: list[subprocess.Popen] = []
        self.url = ""

    def _env(self) -> dict[str, str]:
        """The daemons' environment. ``bare``: as on a node that has none of the project's Python:
        no venv on PATH, nor the interpreter the venv was made from (its Python is the node's own, at
        another path), no Python or PySpark settings of the driver's; only what the application
        itself ships reaches its executors."""
        env = dict(os.environ)
        if self.bare:
            ours = ("PYSPARK_", "PYTHON", "VIRTUAL_ENV", "WIKIGAME_", "MLFLOW_", "HF_", "SPARK_CONF_DIR")
            env = {k: v for k, v in env.items() if not k.startswith(ours)}
            path = env.get("PATH", "").split(os.pathsep)
            env["PATH"] = os.pathsep.join(p for p in path if p != VENV_BIN and not _runs_the_build_python(p))
            env["SPARK_HOME"] = SPARK_HOME  # the node's Spark install, found without the venv's Python
        return env

    def _spawn(self, name: str, *args: str, opts: str = "") -> None:
        env = dict(self._env(), SPARK_LOCAL_IP="127.0.0.1", SPARK_WORKER_DIR=os.path.join(self.workdir, "work"))
        if opts:
            env["SPARK_WORKER_OPTS"] = opts
        log = open(os.path.join(self.workdir, f"{name}.log"), "wb")
        self.procs.append(
            subprocess.Popen(
                [os.path.join(VENV_BIN, "spark-class"), *args], stdout=log, stderr=subprocess.STDOUT, env=env
            )
        )

    def __enter__(self) -> StandaloneCluster:
        shape = (self.workers, self.cores, self.memory, self.bare)
        running = self._running.get(shape)
        if running is not None and running.alive():
            self.workdir, self.url, self.procs = running.workdir, running.url, running.procs
            return self
        self._start()
        self._running[shape] = self
        atexit.register(self.stop)
        return self

    def __exit__(self, *exc) -> None:
        pass  # kept for the next test of the run; see the class docstring

    def drop_finished_applications(self) -> None:
        """The work folders of the applications that have ended: each holds what its executors
        unpacked (a packed environment's 6 GB), which the workers keep until they stop."""
        work = os.path.join(self.workdir, "work")
        for name in os.listdir(work) if os.path.isdir(work) else []:
            shutil.rmtree(os.path.join(work, name), ignore_errors=True)

    def alive(self) -> bool:
        return bool(self.procs) and all(p.poll() is None for p in self.procs)

    def _gpu_script(self) -> str:
        """A discovery script that reports one GPU, address 0: the workers offer it to applications
        that ask for GPUs (``spark.executor.resource.gpu.amount``), so the code path a GPU cluster
        takes runs here; the device itself stays the CPU, as torch finds no CUDA."""
        path = os.path.join(self.workdir, "gpus.sh")
        with open(path, "w") as f:
            f.write('#!/bin/sh\necho \'{"name": "gpu", "addresses": ["0"]}\'\n')
        os.chmod(path, 0o755)
        return path

    def _start(self) -> None:
        port, ui = free_port(), free_port()
        gpus = f"-Dspark.worker.resource.gpu.amount=1 -Dspark.worker.resource.gpu.discoveryScript={self._gpu_script()}"
        self.url = f"spark://127.0.0.1:{port}"
        self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(ui),
        )
        for i in range(self.workers):
            self._spawn(
                f"worker{i}",
                "org.apache.spark.deploy.worker.Worker",
                self.url,
                "--host",
                "127.0.0.1",
                "--cores",
                str(self.cores),
                "--memory",
                self.memory,
                "--webui-port",
                str(free_port()),
                opts=gpus,
            )
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as r:
                    import json

                    if len([w for w in json.load(r)["workers"] if w["state"] == "ALIVE"]) == self.workers:
                        return
            except OSError:
                pass
            time.sleep(1)
        self.stop()
        raise RuntimeError(f"standalone cluster did not start; see logs in {self.workdir}")

    def stop(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
