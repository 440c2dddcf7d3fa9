"""A sentence-transformers model exported for :mod:`wikigame_spark.agents.inference`: made once per
model and machine where torch is (the driver, ``make install``, ``make pack``), then only read.

A transformer is exported to ONNX with its pooling and normalisation (the runtime's output is the
sentence embedding), with the fast tokenizer sentence-transformers runs; ONNX Runtime's int8 is its
dynamic quantisation (per-channel int8 weights, activations quantised per batch), OpenVINO's model
is read from the ONNX one, its int8 NNCF's data-free weight compression. A static model's vectors are
written as a numpy array beside its tokenizer. The tests check each export against
sentence-transformers on real summaries (docs/agents.md#runtimes gives the measured agreement).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import shutil
import warnings

import numpy as np

from wikigame_spark.agents.inference import (
    CONFIG,
    ONNX_FILE,
    OPENVINO_FILE,
    TOKENIZER_FILE,
    TOKENS,
    TRANSFORMER,
    VECTORS_FILE,
    WORDS,
    WORDS_FILE,
    read_config,
)

_EXTRA_FEATURES = {"modality"}  # preprocess's bookkeeping, not a model input
_TOKEN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_STATIC_TAIL = {"Pooling", "Normalize"}


class _Dropped(logging.Filter):
    """Drops the records whose message holds ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


def _kinds(st) -> list[str]:
    return [type(m).__name__ for m in st]


def _config(st, model: str, digest: str, **fields) -> dict:
    prompts = {k: v for k, v in (st.prompts or {}).items() if v}
    return {
        "model": model,
        "model_digest": digest,
        "dimensions": st.get_embedding_dimension(),
        "prompts": prompts,
        **fields,
    }


def _write_config(dest: str, config: dict) -> None:
    with open(os.path.join(dest, CONFIG), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=1)


def _input_names(st) -> tuple[str, ...]:
    features = st.preprocess(["a", "a b"])
    names = tuple(k for k in features if k not in _EXTRA_FEATURES)
    if any(k not in _TOKEN_INPUTS for k in names):
        raise ValueError(f"the model's inputs {names} are not a text transformer's; embed it with --backend torch")
    if any(getattr(m, "include_prompt", True) is False for m in st):
        raise ValueError("the model leaves its prompt out of the pooling; embed it with --backend torch")
    return names


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


def export_static(st, model: str, digest: str, dest: str) -> None:
    """``vectors.npy`` and the tokenizer of a model that averages token or word vectors."""
    first, *rest = list(st)
    if not set(_kinds(st)[1:]) <= _STATIC_TAIL or any(
        getattr(m, "pooling_mode_mean_tokens", True) is False for m in rest
    ):
        raise ValueError(f"{model}: modules {_kinds(st)} are not a static model's vectors averaged")
    if type(first).__name__ == "StaticEmbedding":
        vectors = first.embedding.weight.detach().numpy()
        first.tokenizer.save(os.path.join(dest, TOKENIZER_FILE))
        config = _config(st, model, digest, kind=TOKENS, runtime="numpy")
    else:
        words = first.tokenizer
        if type(words).__name__ != "WhitespaceTokenizer":
            raise ValueError(f"{model}: its {type(words).__name__} has no export; embed it with --backend torch")
        vectors = first.emb_layer.weight.detach().numpy()
        with open(os.path.join(dest, WORDS_FILE), "w", encoding="utf-8") as f:
            vocab = list(words.get_vocab())
            json.dump({"vocab": vocab, "stop_words": sorted(words.stop_words), "do_lower_case": words.do_lower_case}, f)
        config = _config(st, model, digest, kind=WORDS, runtime="numpy", max_length=first.max_seq_length)
    np.save(os.path.join(dest, VECTORS_FILE), vectors.astype(np.float32))
    _write_config(dest, config)


def export_onnx(st, model: str, digest: str, dest: str) -> None:
    """``model.onnx`` (the sentence embedding, batch and sequence dimensions free) and its tokenizer."""
    import torch

    names = _input_names(st)
    tokenizer = st[0].tokenizer
    tokenizer.backend_tokenizer.save(os.path.join(dest, TOKENIZER_FILE))
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
                os.path.join(dest, ONNX_FILE),
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
    fields = {"inputs": list(names), "pad_id": tokenizer.pad_token_id, "max_length": st.max_seq_length}
    _write_config(dest, _config(st, model, digest, kind=TRANSFORMER, runtime="onnx", file=ONNX_FILE, **fields))


def derive(source: str, dest: str, backend: str, int8: bool) -> None:
    """From the float32 ONNX export in ``source``: ONNX Runtime's int8, or OpenVINO's model (int8 or not)."""
    model_file = os.path.join(source, ONNX_FILE)
    shutil.copy(os.path.join(source, TOKENIZER_FILE), dest)
    if backend == "onnx":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # ONNX Runtime advises shape inference first (its quant_pre_process), on the root logger:
        # the exported graph already holds its shapes
        root = logging.getLogger()
        advice = _Dropped("consider to run pre-processing before quantization")
        root.addFilter(advice)
        try:
            quantize_dynamic(model_file, os.path.join(dest, ONNX_FILE), weight_type=QuantType.QInt8, per_channel=True)
        finally:
            root.removeFilter(advice)
        file = ONNX_FILE
    else:
        import openvino

        ov_model = openvino.Core().read_model(model_file)
        if int8:
            import nncf

            # NNCF draws a table and a progress bar on stdout, in a Spark worker its log: kept out
            nncf.set_log_level(logging.WARNING)
            with contextlib.redirect_stdout(io.StringIO()):
                ov_model = nncf.compress_weights(ov_model)  # data-free: int8 weights, asymmetric, per channel
        openvino.save_model(ov_model, os.path.join(dest, OPENVINO_FILE), compress_to_fp16=False)
        file = OPENVINO_FILE
    runtime = f"{backend}-int8" if int8 else backend
    _write_config(dest, {**read_config(source), "runtime": runtime, "file": file})
