"""The project's log4j2 configuration (wikigame_spark/log4j2.properties) on a real JVM: the notes a user cannot
act on are kept off the console, every other warning of the same loggers stays."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from wikigame_spark.cli import LOG4J2_PROPERTIES

pytestmark = pytest.mark.slow  # a JVM of its own: the configuration is read once, at its start

# Each line logged through the named logger at WARN, and whether the console shows it.
LINES = [
    ("org.apache.spark.storage.BlockManager", "Block rdd_12_0 already exists on this machine; not re-adding it", False),
    (
        "org.apache.spark.storage.BlockManager",
        "Block rdd_12_0 could not be removed as it was not found on disk or in memory",
        False,
    ),
    ("org.apache.spark.storage.BlockManager", "Block rdd_12_0 replicated to only 0 peer(s) instead of 1 peers", True),
    (
        "org.apache.spark.storage.BlockManager",
        "Putting block rdd_7_0 failed due to exception org.apache.spark.api.python.PythonException: "
        'Traceback (most recent call last):\n  File "dumps.py", line 237\nDumpError: corrupt data.',
        False,
    ),
    (
        "org.apache.spark.graphframes.graphx.impl.ShippableVertexPartitionOps",
        "Joining two VertexPartitions with different indexes is slow.",
        False,
    ),
    ("org.graphframes.lib.TwoPhase$", "Returned DataFrame is persistent and materialized!", False),
    ("org.apache.spark.SparkContext", "Spark is not running in local mode, so the checkpoint directory is unset", True),
    (
        "org.apache.hadoop.mapreduce.lib.output.FileOutputCommitter",
        "Could not delete file:/data/g/plays/r1/.part-000002._staging-9eae510b/plays/_temporary/0/_temporary/"
        "attempt_202612041634167736958280288345365_0023_m_000001_26",
        False,
    ),
    ("org.apache.hadoop.mapreduce.lib.output.FileOutputCommitter", "Could not delete file:/data/g/nodes/x", True),
    (
        "org.apache.spark.sql.execution.datasources.BasicWriteTaskStatsTracker",
        "Expected 1 files, but only saw 0. This could be due to the output format not writing empty files, "
        "or files being not immediately visible in the filesystem.",
        False,
    ),
    (
        "org.apache.spark.sql.execution.datasources.BasicWriteTaskStatsTracker",
        "Expected 2 files, but only saw 1.",
        True,
    ),
    ("org.apache.spark.storage.ShuffleBlockFetcherIterator", "Error occurred while fetching local blocks, null", False),
    (
        "org.apache.spark.storage.ShuffleBlockFetcherIterator",
        "Error occurred while fetching local blocks, /tmp/blockmgr-1/0c/shuffle_0_1_0.data (No such file or directory)",
        True,
    ),
]

SCRIPT = """
import json, sys
from wikigame_spark import cli
spark = cli.session("logs-test")  # a job's session: the library's profile where Spark has only its own
manager = spark.sparkContext._jvm.org.apache.logging.log4j.LogManager
for name, message, _ in json.loads(sys.argv[1]):
    manager.getLogger(name).warn(message)
manager.getLogger("org.apache.spark.SparkContext").info("an INFO line of Spark's")
spark.stop()
"""

# A user's own profile: everything at INFO, no filter.
USERS = """rootLogger.level = info
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %p %c{1}: %m%n
"""


@pytest.mark.parametrize("profile", ["venv", "spark_default", "users"])
def test_the_console_keeps_every_warning_but_the_notes_a_user_cannot_act_on(profile, tmp_path):
    """``venv``: the profile `make install` copies into the venv's Spark; ``spark_default``: no profile
    in Spark's conf (an installed wheel), where a job applies the library's; ``users``: a profile
    of the user's own, which stays as it is."""
    import json

    conf = tmp_path / "conf"
    conf.mkdir()
    if profile == "venv":
        shutil.copy(LOG4J2_PROPERTIES, conf / "log4j2.properties")
    elif profile == "users":
        (conf / "log4j2.properties").write_text(USERS)
    env = {**os.environ, "SPARK_CONF_DIR": str(conf), "PYTHONPATH": ROOT}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    env.pop("WIKIGAME_VERBOSE", None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(LINES)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for name, message, shown in LINES:
        line = f"WARN {name.rsplit('.', 1)[-1]}: {message}"
        expected = shown or profile == "users"
        assert (line in done.stderr) == expected, f"{line!r} {'missing from' if expected else 'on'} the console"
    if (
        profile != "users"
    ):  # (a user's INFO profile: PySpark's driver sets WARN unless the profile names its REPL's level)
        assert "an INFO line of Spark's" not in done.stderr
