"""A real Spark standalone cluster on 127.0.0.1: one master and workers, started with spark-class."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

VENV_BIN = os.path.dirname(sys.executable)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StandaloneCluster:
    """Master + ``workers`` worker processes; ``url`` is the ``spark://`` master address."""

    def __init__(self, workdir: str, workers: int = 2, cores: int = 1, memory: str = "1g"):
        self.workdir = workdir
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.procs: list[subprocess.Popen] = []
        self.url = ""

    def _spawn(self, name: str, *args: str) -> None:
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_WORKER_DIR=os.path.join(self.workdir, "work"))
        log = open(os.path.join(self.workdir, f"{name}.log"), "wb")
        self.procs.append(
            subprocess.Popen(
                [os.path.join(VENV_BIN, "spark-class"), *args], stdout=log, stderr=subprocess.STDOUT, env=env
            )
        )

    def __enter__(self) -> StandaloneCluster:
        port, ui = free_port(), free_port()
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
            )
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as r:
                    import json

                    if len([w for w in json.load(r)["workers"] if w["state"] == "ALIVE"]) == self.workers:
                        return self
            except OSError:
                pass
            time.sleep(1)
        self.__exit__(None, None, None)
        raise RuntimeError(f"standalone cluster did not start; see logs in {self.workdir}")

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
