"""Benchmark: MiniLM embedding real 1,000-character summaries on a GPU executor, float32 and float16,
at several batch sizes — the line the cost sheet puts beside its CPU lines.

A GPU machine typically has PyTorch and sentence-transformers but neither this project's packages
nor a way to the model hub, so the benchmark travels as one folder made here:

    python bench/bench_gpu_embedding.py --pack .cache/gpu-bench      # here: the model and the texts
    python bench/bench_gpu_embedding.py --run .cache/gpu-bench [--device cuda] [--batches 32 128 512]

``--pack`` writes MiniLM (the bundled all-MiniLM-L6-v2) with float16 weights (about 45 MB; the float32
run casts them back up, so both precisions embed the same weights) and 4,096 summaries cut from the
real Latgalian text, as the cost sheet's are. ``--run`` needs only torch and sentence-transformers:
for each precision and batch size it embeds every text twice (the first pass warms the kernels) and
prints sentences per second of the second, then the largest difference of the float16 embeddings
from the float32 ones. On a machine without a GPU, ``--device cpu`` checks the script.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXTS = "summaries.json"
MODEL = "all-MiniLM-L6-v2-float16"


def pack(folder: str, n_texts: int) -> None:
    import numpy as np

    sys.path.insert(0, ROOT)
    from bench.bench_scale import SUMMARY_CHARS, _sentences
    from wikigame_spark.agents.sentence_models import DEFAULT_MODEL, load_model

    text = _sentences().tobytes().decode("ascii")
    starts = np.random.default_rng(5).integers(0, len(text) - SUMMARY_CHARS, n_texts)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, TEXTS), "w") as f:
        json.dump([text[s : s + SUMMARY_CHARS] for s in starts], f)
    model = load_model(DEFAULT_MODEL)
    model.half().save(os.path.join(folder, MODEL))
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(folder) for f in fs)
    print(f"packed {folder}: {n_texts} summaries and {MODEL}, {size / 2**20:.0f} MiB")


def run(folder: str, device: str, batches: list[int]) -> list[dict]:
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # a log, not a terminal
    with open(os.path.join(folder, TEXTS)) as f:
        texts = json.load(f)
    name = torch.cuda.get_device_name() if device.startswith("cuda") else device
    rows, embedded = [], {}
    for precision, dtype in (("float32", torch.float32), ("float16", torch.float16)):
        model = SentenceTransformer(os.path.join(folder, MODEL), device=device).to(dtype)
        for batch in batches:
            for _ in ("warm", "timed"):
                if device.startswith("cuda"):
                    torch.cuda.synchronize()
                start = time.perf_counter()
                out = model.encode(texts, batch_size=batch, normalize_embeddings=True, convert_to_numpy=True)
                if device.startswith("cuda"):
                    torch.cuda.synchronize()
                seconds = time.perf_counter() - start
            embedded[precision] = out.astype("float32")
            rows.append({"device": name, "precision": precision, "batch": batch, "texts": len(texts),
                         "sentences_per_s": round(len(texts) / seconds, 1)})  # fmt: skip
            print(json.dumps(rows[-1]), flush=True)
    gap = float(abs(embedded["float16"] - embedded["float32"]).max())
    print(f"float16 against float32, the same texts: largest difference {gap:.2e} (unit vectors)")
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pack", metavar="FOLDER", help="write the model and texts here")
    p.add_argument("--run", metavar="FOLDER", help="time the packed folder")
    p.add_argument("--texts", type=int, default=4096)
    p.add_argument("--device", default="cuda")
    p.add_argument("--batches", type=int, nargs="+", default=[32, 128, 512])
    a = p.parse_args()
    if a.pack:
        pack(a.pack, a.texts)
    if a.run:
        run(a.run, a.device, a.batches)
    if not a.pack and not a.run:
        p.error("give --pack FOLDER (here) or --run FOLDER (on the GPU machine)")


if __name__ == "__main__":
    main()
