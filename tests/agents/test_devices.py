"""The device an embedding task runs on: chosen from the GPUs Spark assigned the task.

This machine has no GPU. The cluster test gives the standalone workers a discovery script that
reports one (address 0), asks for it as a GPU cluster's user does, and checks that each task saw
its GPU, fell back to the CPU because torch finds no CUDA, and embedded exactly as the CPU does.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import ROOT
from tests.standalone import StandaloneCluster
from wikigame_spark.agents.devices import CPU, CPU_BATCH, Device, choose, task_device

TEXTS = ["Riga is the capital of Latvia.", "Rēzekne is a city in Latgale.", "A cat sat on the mat.", "Daugava"]


def test_no_gpu_assigned_is_the_cpu_with_its_batch():
    assert task_device() == Device(CPU, (), CPU_BATCH)  # the driver runs no task


@pytest.mark.slow  # imports torch
def test_an_assigned_gpu_torch_cannot_see_falls_back_to_the_cpu_and_says_so(caplog):
    with caplog.at_level(logging.WARNING, logger="wikigame_spark.agents.devices"):
        device = choose(("0",))
    assert device == Device(CPU, ("0",), CPU_BATCH)
    assert "GPU 0 assigned by Spark, but torch finds no CUDA device" in caplog.text
    assert device.describe() == "cpu (GPU 0 assigned by Spark), batches of 64"


PROGRAM = """
import json, sys
import pandas as pd
from pyspark.sql import SparkSession
from wikigame_spark.agents.devices import task_device
from wikigame_spark.agents.embedding_cache import embed_nodes
from wikigame_spark.agents.encoders import DEFAULT, prepare

url, texts = sys.argv[1], json.loads(sys.argv[2])
spark = (
    SparkSession.builder.master(url)
    .config("spark.executor.memory", "1g")
    .config("spark.cores.max", "1")  # one executor: its two tasks take turns on its GPU
    .config("spark.executor.resource.gpu.amount", "1")
    .config("spark.task.resource.gpu.amount", "1")
    .getOrCreate()
)
nodes = spark.createDataFrame(list(enumerate(texts)), "id long, summary string").repartition(2)
seen = nodes.mapInPandas(
    lambda parts: (pd.DataFrame({"device": [task_device().describe()]}) for _ in parts), "device string"
).collect()
runtime, export = prepare(spark, "all-MiniLM-L6-v2", DEFAULT)  # the export shipped with the application
vectors = embed_nodes(nodes, "all-MiniLM-L6-v2", "summary", None, runtime, export).collect()
vectors = sorted((r.id, r.vector) for r in vectors)
print(json.dumps({"devices": sorted({r.device for r in seen}), "vectors": [v for _, v in vectors]}))
"""


@pytest.mark.cluster
def test_gpu_cluster_tasks_choose_their_assigned_gpu(tmp_path):
    from wikigame_spark.agents.encoders import local_encoder

    env = {**os.environ, "PYTHONPATH": ROOT, "HF_HUB_OFFLINE": "1"}
    with StandaloneCluster(str(tmp_path)) as cluster:
        run = subprocess.run(
            [sys.executable, "-c", PROGRAM, cluster.url, json.dumps(TEXTS)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        logs = "".join(open(p).read() for p in glob.glob(f"{cluster.workdir}/work/app-*/*/stderr"))
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["devices"] == ["cpu (GPU 0 assigned by Spark), batches of 64"]
    assert "GPU 0 assigned by Spark, but torch finds no CUDA device: the model runs on the CPU" in logs
    expected = local_encoder("all-MiniLM-L6-v2").encode(TEXTS, None)  # the default runtime's, on the CPU
    np.testing.assert_allclose(np.array(got["vectors"], dtype=np.float32), expected, rtol=0, atol=1e-6)
