"""Manifests: the JSON file that marks an output finished and says what made it, its digest (which
names the output in what is derived from it), and the code version every manifest records."""

from __future__ import annotations

import hashlib
import json
import subprocess

import wikigame_spark
from wikigame_spark.layout import MANIFEST
from wikigame_spark.storage import Folder


def write_manifest(folder: Folder, manifest: dict) -> None:
    """``folder``'s manifest: written last, it marks the output finished."""
    folder.write_json(MANIFEST, manifest)


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


def read_manifest(folder: Folder) -> dict:
    """The manifest of a finished output folder; its absence means the output is incomplete."""
    if not folder.exists(MANIFEST):
        raise FileNotFoundError(f"{folder.root}: no {MANIFEST}; not a finished wikigame-spark output")
    return folder.read_json(MANIFEST)


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
