"""Sentence embeddings from an exported model folder, without torch: what an executor runs.

An export (:mod:`wikigame_spark.agents.exports`, made once where torch is) is a folder with
``embedding.json`` saying what it holds and the files to run it:

- ``transformer``: the tokenizer (``tokenizer.json``, run by ``tokenizers``) and the transformer
  with its pooling and normalisation in one graph, run by ONNX Runtime (``model.onnx``) or
  OpenVINO (``model.xml``);
- ``tokens``: a static model's token vectors (``vectors.npy``) averaged over the ids its
  ``tokenizer.json`` gives, as sentence-transformers' ``StaticEmbedding`` does (potion-base-8M);
- ``words``: word vectors averaged over a whitespace tokenizer's words (``words.json``: the
  vocabulary, stop words and case rule of sentence-transformers' ``WhitespaceTokenizer``), as its
  ``WordEmbeddings`` with mean pooling does (GloVe).

Prompts are prepended to the text, as sentence-transformers does. Every output row is unit length.
"""

from __future__ import annotations

import json
import os
import string

import numpy as np

CONFIG = "embedding.json"
TRANSFORMER, TOKENS, WORDS = "transformer", "tokens", "words"
ONNX_FILE, OPENVINO_FILE, VECTORS_FILE, TOKENIZER_FILE, WORDS_FILE = (
    "model.onnx",
    "model.xml",
    "vectors.npy",
    "tokenizer.json",
    "words.json",
)
# ONNX Runtime and OpenVINO keep the memory their largest batch needed: at 64 texts of 256 tokens
# a MiniLM process held 2.6 GB, at 16 1.5 GB (torch: 1.3 GB at 64), for the same CPU time.
EXPORTED_BATCH = 16
# the modules each kind of export runs on, beside numpy (what the executors must import)
RUNTIME_MODULES = {
    "onnx": ("onnxruntime", "tokenizers"),
    "openvino": ("openvino", "tokenizers"),
    TOKENS: ("tokenizers",),
}


def read_config(folder: str) -> dict:
    with open(os.path.join(folder, CONFIG), encoding="utf-8") as f:
        return json.load(f)


def _unit(out: np.ndarray) -> np.ndarray:
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out


class ExportedEncoder:
    """Unit-length float32 embeddings, one row per text, from an export folder, on ``threads`` cores."""

    def __init__(self, folder: str, threads: int) -> None:
        self.config = read_config(folder)
        self.kind = self.config["kind"]
        self.dimensions = int(self.config["dimensions"])
        self.prompts = self.config.get("prompts") or {}
        if self.kind == WORDS:
            with open(os.path.join(folder, WORDS_FILE), encoding="utf-8") as f:
                words = json.load(f)
            self.index = {w: i for i, w in enumerate(words["vocab"])}
            self.stop_words = frozenset(words["stop_words"])
            self.lower = bool(words["do_lower_case"])
        else:
            from tokenizers import Tokenizer

            self.tokenizer = Tokenizer.from_file(os.path.join(folder, TOKENIZER_FILE))
            self.tokenizer.no_padding()  # a static model's tokenizer keeps its own truncation
        if self.kind in (WORDS, TOKENS):
            self.vectors = np.load(os.path.join(folder, VECTORS_FILE), mmap_mode="r")
            return
        self.tokenizer.enable_truncation(int(self.config["max_length"]))
        # to the batch's longest text, as sentence-transformers pads (the padding token's id, type 0)
        self.tokenizer.enable_padding(pad_id=int(self.config["pad_id"]))
        self.inputs = tuple(self.config["inputs"])
        path = os.path.join(folder, self.config["file"])
        if self.config["runtime"].startswith("onnx"):
            import onnxruntime

            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
            session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            self._run = lambda feed: session.run(None, feed)[0]
        else:
            import openvino

            # float32 arithmetic, not the bfloat16 OpenVINO picks by default on CPUs that have it
            config = {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32"}
            compiled = openvino.Core().compile_model(path, "CPU", config)
            self._run = lambda feed: compiled(feed)[0]

    def encode(self, texts: list[str], prompt_name: str | None, batch_size: int = 64) -> np.ndarray:
        prompt = self.prompts.get(prompt_name) if prompt_name else None
        texts = [prompt + t for t in texts] if prompt else list(texts)
        if self.kind == WORDS:
            return _unit(self._pool([self._words(t)[: self.config["max_length"]] for t in texts]))
        if self.kind == TOKENS:
            return _unit(self._pool([e.ids for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)]))
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        # longest first, as sentence-transformers batches, so padding is alike in every runtime
        order = np.argsort([-len(t) for t in texts], kind="stable")
        batch_size = min(batch_size, EXPORTED_BATCH)
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            out[rows] = self._run(self._features([texts[i] for i in rows]))
        return _unit(out)

    def _features(self, texts: list[str]) -> dict[str, np.ndarray]:
        encodings = self.tokenizer.encode_batch(texts)
        fields = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
        return {name: np.array([getattr(e, fields[name]) for e in encodings], dtype=np.int64) for name in self.inputs}

    def _words(self, text: str) -> list[int]:
        """sentence-transformers' WhitespaceTokenizer: a word as written, without its punctuation, in
        lower case; the first form found in the vocabulary, stop words skipped at every form."""
        ids = []
        for token in (text.lower() if self.lower else text).split():
            for form in (token, token.strip(string.punctuation), token.strip(string.punctuation).lower()):
                if form in self.stop_words:
                    break
                if form and form in self.index:
                    ids.append(self.index[form])
                    break
        return ids

    def _pool(self, ids: list[list[int]]) -> np.ndarray:
        """The mean of each text's vectors (zeros for a text without any)."""
        counts = np.array([len(t) for t in ids])
        out = np.zeros((len(ids), self.dimensions), dtype=np.float32)
        rows = np.flatnonzero(counts)
        if rows.size:
            flat = np.asarray(self.vectors[np.concatenate([ids[r] for r in rows])], dtype=np.float32)
            starts = np.concatenate([[0], np.cumsum(counts[rows])[:-1]])
            out[rows] = np.add.reduceat(flat, starts, axis=0) / counts[rows, None]
        return out
