"""Manifests: the JSON file that marks an output finished and says what made it, its digest (which
names the output in what is derived from it), and the code version every manifest records."""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess

from pyspark.sql import SparkSession

import wikigame_spark
from wikigame_spark import layout
from wikigame_spark.layout import MANIFEST
from wikigame_spark.storage import Storage
from wikigame_spark.storage import StorageError as StorageError
from wikigame_spark.storage import spark_uri as spark_uri

log = logging.getLogger(__name__)


def write_json(spark: SparkSession, path: str, obj: dict) -> None:
    Storage(spark).write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_json(spark: SparkSession, path: str) -> dict:
    return json.loads(Storage(spark).read_text(path))


def file_digest(path: str, algorithm: str = "sha256") -> str:
    """A local file's digest in hex, read in 4 MiB blocks (a model's weights, a mapped file)."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest_sha1(manifest: dict) -> str:
    """The digest that names an output by its manifest (games and play runs record their graph's)."""
    return hashlib.sha1(json.dumps(manifest, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def read_manifest(spark: SparkSession, directory: str) -> dict:
    """The manifest of a finished output directory; its absence means the output is incomplete."""
    path = layout.manifest(directory)
    if not Storage(spark).exists(path):
        raise FileNotFoundError(f"{directory}: no {MANIFEST}; not a finished wikigame-spark output")
    return read_json(spark, path)


def code_version() -> str:
    """The package version (from its metadata), plus the git commit when running from a checkout.

    An installed wheel gives its version alone: git is not asked there, since site-packages may sit
    inside some other repository whose commit says nothing about this code.
    """
    if wikigame_spark.CHECKOUT_DIR is None:
        return wikigame_spark.__version__
    try:
        commit = subprocess.run(
            ["git", "-C", wikigame_spark.CHECKOUT_DIR, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{wikigame_spark.__version__}+{commit}" if commit else wikigame_spark.__version__
