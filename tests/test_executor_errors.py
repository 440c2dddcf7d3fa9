"""PySpark's own message for an executor whose Python is another minor version than the driver's,
read where PySpark defines it, is the one :func:`~wikigame_spark.preflight.check_executors` turns
into its ``error:`` line (the other faults it names are met on a real cluster in
tests/jobs/test_packed_env.py; this host has one Python version only)."""

from __future__ import annotations

import json
import os

import pyspark

from wikigame_spark.preflight import _VERSION_MISMATCH


def test_the_version_mismatch_is_recognised_in_pysparks_own_words():
    with open(os.path.join(os.path.dirname(pyspark.__file__), "errors", "error-conditions.json")) as f:
        template = " ".join(json.load(f)["PYTHON_VERSION_MISMATCH"]["message"])
    message = template.replace("<worker_version>", "3.12").replace("<driver_version>", "3.11")
    assert _VERSION_MISMATCH.search(f"[PYTHON_VERSION_MISMATCH] {message}").groups() == ("3.12", "3.11")
