"""The project's log4j2 configuration (conf/log4j2.properties) on a real JVM: the notes a user cannot
act on are kept off the console, every other warning of the same loggers stays."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # a JVM of its own: the configuration is read once, at its start

# Each line logged through the named logger at WARN, and whether the console shows it.
LINES = [
    ("org.apache.spark.storage.BlockManager", "Block rdd_12_0 already exists on this machine; not re-adding it", False),
    ("org.apache.spark.storage.BlockManager", "Block rdd_12_0 could not be removed as it was not found", True),
    (
        "org.apache.spark.graphframes.graphx.impl.ShippableVertexPartitionOps",
        "Joining two VertexPartitions with different indexes is slow.",
        False,
    ),
    ("org.graphframes.lib.TwoPhase$", "Returned DataFrame is persistent and materialized!", False),
    ("org.apache.spark.scheduler.TaskSetManager", "Stage 3 contains a task of very large size", True),
]

SCRIPT = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
manager = spark.sparkContext._jvm.org.apache.logging.log4j.LogManager
for name, message, _ in json.loads(sys.argv[1]):
    manager.getLogger(name).warn(message)
spark.stop()
"""


def test_the_console_keeps_every_warning_but_the_notes_a_user_cannot_act_on():
    import json

    env = {**os.environ, "SPARK_CONF_DIR": os.path.join(ROOT, "conf")}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(LINES)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for name, message, shown in LINES:
        line = f"WARN {name.rsplit('.', 1)[-1]}: {message}"
        assert (line in done.stderr) == shown, f"{line!r} {'missing from' if shown else 'on'} the console"
