"""Building the SparkSession for jobs, notebooks and tests.

Spark settings come from ``spark-defaults.conf`` (``SPARK_CONF_DIR``, the project's ``conf/`` in
``make`` targets) and ``spark-submit`` flags, as usual. The only addition is the project's own
``jars/`` folder (the jars of conf/maven/pom.xml: GraphFrames, hadoop-aws and the AWS SDK, fetched
by ``make install``), put on the driver and executor classpath when it exists. Under
``spark-submit`` the driver's JVM is running before this code, so there GraphFrames comes from
``spark.jars`` in conf/spark-defaults.conf (or ``--jars``/``--packages``, see the README).
"""

from __future__ import annotations

import glob
import logging
import os
import sys

from pyspark.sql import SparkSession

from wikigame_spark import CHECKOUT_DIR

# The project's own files (jars/, .cache/, mlflow.db) live in the checkout, else in the working
# directory: never beside an installed wheel, in site-packages.
PROJECT_DIR = CHECKOUT_DIR or os.getcwd()
# An installed wheel has no jars/ of its own: --jars, --packages or the cluster's libraries give them.
JARS_DIR = os.environ.get("WIKIGAME_JARS_DIR") or (os.path.join(CHECKOUT_DIR, "jars") if CHECKOUT_DIR else "")


def project_jars() -> list[str]:
    return sorted(glob.glob(os.path.join(JARS_DIR, "*.jar"))) if JARS_DIR else []


def build_session(app_name: str, master: str | None = None, conf: dict | None = None) -> SparkSession:
    """The active session as it is (a notebook's, or the caller's: its settings stay, and Spark
    would only warn that new ones cannot apply), or a new one named ``app_name`` with the project's jars."""
    spark = SparkSession.getActiveSession() or _new_session(app_name, master, conf)
    # The library's progress at INFO; other libraries' warnings only (py4j logs a dead JVM's every
    # retry at INFO, with its trace, on the root logger).
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    library = logging.getLogger("wikigame_spark")
    if library.level == logging.NOTSET:
        library.setLevel(logging.INFO)
    return spark


def _new_session(app_name: str, master: str | None, conf: dict | None) -> SparkSession:
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    if project_jars():
        # On the classpath in place (not shipped through spark.jars): the AWS SDK bundle alone
        # is 600 MB, and local or single-machine standalone executors read the same folder.
        classpath = os.path.join(JARS_DIR, "*")
        builder = builder.config("spark.driver.extraClassPath", classpath)
        builder = builder.config("spark.executor.extraClassPath", classpath)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # In local mode the Python workers run the driver's interpreter (its venv, activated or not)
    # unless told otherwise; on a cluster, what the nodes run: PYSPARK_PYTHON or spark.pyspark.python
    # (a packed environment's, docs/cluster.md), else their own python3, never a path of the driver's.
    sc = spark.sparkContext
    if "PYSPARK_PYTHON" not in os.environ and sc.master.startswith("local"):
        sc.pythonExec = sys.executable
    return spark
