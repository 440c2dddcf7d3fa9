"""Benchmark: the embedding agent's runtimes — torch (sentence-transformers, the reference), ONNX
Runtime and OpenVINO, each in float32 and with int8 weights (``--backend``, ``--int8``).

    python bench/bench_embedding.py [--model all-MiniLM-L6-v2] [--texts 300] [--games 300]
        [--only speed|agreement|models|torch-free] [--out out/bench/embedding]

- **Speed**: sentences per CPU-second of 1,000-character summaries cut from the real Latgalian
  text (at MiniLM's 256-token cap), each runtime in a process of its own on one thread, batches
  of 64, process CPU time; the export (once per machine, before) is timed apart.
- **Agreement** on the real Latgalian graph and on a generated graph of Wikispeedia's size (4,604
  articles, 119,882 links; scale-free, 1,000-character summaries of the real text): each
  runtime's node caches built by the embedding stage on Spark, then ``--games`` sampled games
  played by the embedding agent with torch's caches. At each step of those routes the runtime's
  agent chooses from the same page: the share of moves identical to torch's. And each runtime
  plays the games itself: the share of routes identical to torch's.
- **Models** (``--only models``): every model installed offline (MiniLM, all-mpnet-base-v2, the
  averaged GloVe, potion-base-8M) on the default runtime, timed as above: sentences per CPU-second
  and the ratio to MiniLM's.
- **Torch-free** (``--only torch-free``): the default runtime as executors of ``make pack`` run it,
  in a Python that cannot import torch (:mod:`wikigame_spark.devtools.torchless`: tokens by
  ``tokenizers``), against the same OpenVINO model fed by sentence-transformers' own tokenizer in a
  Python with torch (the default's pipeline where torch is installed); ONNX Runtime and GloVe's
  numpy average without torch beside torch's; timed as above.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from wikigame_spark.agents.encoders import BACKENDS, REFERENCE, Runtime

RUNTIMES = [Runtime(b, q) for b in BACKENDS for q in (False, True)]
OUT = os.path.join(ROOT, "out", "bench", "embedding")
WIKISPEEDIA = (4604, 119882)  # articles and links of West & Leskovec's Wikispeedia graph


def _runtime(name: str) -> Runtime:
    return next(r for r in RUNTIMES if r.name == name)


# --- speed, one runtime per process ----------------------------------------------------------------
ST_TOKENS = "openvino-st-tokens"  # the OpenVINO model fed by sentence-transformers' tokenizer


def step_speed(model: str, name: str, n_texts: int) -> dict:
    """Sentences per CPU-second on one thread (run in a process of its own)."""
    from bench.bench_scale import SUMMARY_CHARS, _sentences
    from wikigame_spark.agents.encoders import DEFAULT, exported, local_encoder, runtime_for

    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        import torch
    except ImportError:  # a Python without torch (--only torch-free)
        torch_here = False
    else:
        torch.set_num_threads(1)
        torch_here = True
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core: the exported runtimes' threads
    runtime = DEFAULT if name == ST_TOKENS else _runtime(name)
    text = _sentences().tobytes().decode("ascii")
    starts = np.random.default_rng(5).integers(0, len(text) - SUMMARY_CHARS, n_texts)
    texts = [text[s : s + SUMMARY_CHARS] for s in starts]
    t = time.perf_counter()
    if runtime_for(model, runtime).backend != "torch":
        exported(model, runtime_for(model, runtime))
    export_s = time.perf_counter() - t
    encoder = local_encoder(model, runtime)
    if name == ST_TOKENS:
        from wikigame_spark.agents.sentence_models import load_model

        st, exported_model = load_model(model), encoder.exported
        exported_model._features = lambda batch: {
            k: v.numpy() for k, v in st.preprocess(batch).items() if k in exported_model.inputs
        }
    encoder.encode(texts[:8], None, 8)  # warm: first-call allocations, kernel choice
    cpu, wall, done = time.process_time(), time.perf_counter(), 0
    while done == 0 or time.process_time() - cpu < 2.0:  # a static model's pass takes milliseconds
        encoder.encode(texts, None, 64)
        done += n_texts
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    label = name if name == ST_TOKENS else encoder.runtime.name
    return {"model": model, "runtime": label, "torch": torch_here, "dimensions": encoder.dimensions,
            "texts": done, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
            "sentences_per_cpu_s": round(done / cpu, 2), "export_s": round(export_s, 1)}  # fmt: skip


def timed(model: str, runtime: Runtime | str, n_texts: int, python: str = sys.executable) -> dict:
    name = runtime if isinstance(runtime, str) else runtime.name
    argv = [python, __file__, "--step", "speed", "--model", model, "--runtime", name, "--texts", str(n_texts)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, env=dict(os.environ, PYTHONPATH=ROOT))
    row = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(row), flush=True)
    return row


def speed(model: str, n_texts: int) -> list[dict]:
    return [timed(model, runtime, n_texts) for runtime in RUNTIMES]


def torch_free(model: str, n_texts: int, out: str) -> list[dict]:
    """The default runtime, ONNX Runtime and GloVe without torch, beside their pipelines with torch."""
    from wikigame_spark.agents.encoders import DEFAULT
    from wikigame_spark.agents.sentence_models import GLOVE
    from wikigame_spark.devtools.torchless import torchless_python

    lean = torchless_python(os.path.join(out, "torchless"))
    onnx = Runtime("onnx")
    runs = [(model, ST_TOKENS, sys.executable), (model, DEFAULT, sys.executable), (model, DEFAULT, lean)]
    runs += [
        (model, onnx, sys.executable),
        (model, onnx, lean),
        (GLOVE, REFERENCE, sys.executable),
        (GLOVE, DEFAULT, lean),
    ]
    rows = [timed(m, runtime, n_texts, python) for m, runtime, python in runs]
    base = rows[0]["sentences_per_cpu_s"]
    print("| model | runtime | torch importable | sentences / CPU-s | × OpenVINO on sentence-transformers' tokens |")
    print("|---|---|---|---|---|")
    for r in rows:
        ratio = f"{r['sentences_per_cpu_s'] / base:.2f}" if r["model"] == model else "–"
        print(f"| {r['model']} | {r['runtime']} | {r['torch']} | {r['sentences_per_cpu_s']:,.1f} | {ratio} |")
    return rows


def models(n_texts: int) -> list[dict]:
    """Every model installed offline on the default runtime (a static model on torch: nothing to
    export), the same texts, one thread each: sentences per CPU-second and the ratio to MiniLM."""
    from wikigame_spark.agents.encoders import DEFAULT
    from wikigame_spark.agents.sentence_models import DEFAULT_MODEL, installed_models

    rows = [timed(name, DEFAULT, n_texts) for name in installed_models()]
    minilm = next(r["sentences_per_cpu_s"] for r in rows if r["model"] == DEFAULT_MODEL)
    print("\n| model | runtime | dimensions | sentences / CPU-s | × MiniLM |\n| --- | --- | --- | --- | --- |")
    for r in rows:
        rate = r["sentences_per_cpu_s"]
        print(f"| {r['model']} | {r['runtime']} | {r['dimensions']} | {rate:,.1f} | {rate / minilm:,.1f} |")
    return rows


# --- agreement, on Spark ---------------------------------------------------------------------------
def wikispeedia_sized(out: str) -> str:
    """A scale-free graph of Wikispeedia's size whose summaries are windows of the real text."""
    from bench import bench_sampling
    from bench.bench_scale import add_summaries

    n, m = WIKISPEEDIA
    graph = os.path.join(out, f"generated-{n}-{m}")
    if not os.path.exists(f"{graph}/manifest.json"):
        bench_sampling.generate(graph, n, m)
        add_summaries(graph)
    return graph


def agreement(spark, model: str, graph_dir: str, n_games: int) -> list[dict]:
    """Per runtime: the share of torch's moves it makes from the same pages, and of routes it plays alike."""
    import pyarrow.parquet as pq

    from wikigame_spark.agents.base import AgentSpec, StepRequest, agent_class, worker_agent
    from wikigame_spark.devtools.games import write_games
    from wikigame_spark.graph.worker_graph import WorkerGraph
    from wikigame_spark.handles import GraphHandle
    from wikigame_spark.play.engine import offered_links, play_games

    games_dir = f"{graph_dir}/bench-games-{n_games}"
    if not os.path.exists(games_dir):
        write_games(graph_dir, n_games, seed=11, path=games_dir)
    games = pq.read_table(f"{games_dir}/games").to_pylist()
    graph = WorkerGraph.from_directory(graph_dir)
    handle = GraphHandle.open(graph_dir, spark)
    embedding = agent_class("embedding")
    agents, caches = {}, {}
    for runtime in RUNTIMES:
        settings = embedding.configure(model=model, backend=runtime.backend, int8=runtime.int8)
        t = time.perf_counter()
        resources = embedding.prepare(spark, handle, settings)
        caches[runtime.name] = round(time.perf_counter() - t, 1)
        agents[runtime.name] = worker_agent(AgentSpec("embedding", settings, resources), graph)
    reference = play_games(games, graph, agents[REFERENCE.name], 100, "embedding", model)
    rows = []
    for runtime in RUNTIMES:
        agent = agents[runtime.name]
        same_moves = moves = 0
        for game in reference:
            route = game["route"]
            for i in range(len(route) - 1):
                offered = offered_links(graph, route[: i + 1], False)
                request = StepRequest(game["game_id"], i, route[i], game["target"], offered, route[: i + 1])
                same_moves += agent.choose([request])[0].node == route[i + 1]
                moves += 1
        played = play_games(games, graph, agent, 100, "embedding", model)
        same_routes = sum(a["route"] == b["route"] for a, b in zip(played, reference))
        rows.append({"graph": os.path.basename(graph_dir), "runtime": runtime.name, "games": len(games),
                     "moves": moves, "same_moves": same_moves, "same_routes": same_routes,
                     "cache_s": caches[runtime.name]})  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)
    return rows


def report(speeds: list[dict], agreements: list[dict]) -> None:
    torch_rate = next(s["sentences_per_cpu_s"] for s in speeds if s["runtime"] == REFERENCE.name)
    graphs = sorted({a["graph"] for a in agreements})
    head = "| runtime | sentences / CPU-s | × torch | export |" + "".join(
        f" {g}: moves identical | routes identical |" for g in graphs
    )
    print("\n" + head + "\n|" + " --- |" * (4 + 2 * len(graphs)))
    for s in speeds:
        line = f"| {s['runtime']} | {s['sentences_per_cpu_s']:.1f} | {s['sentences_per_cpu_s'] / torch_rate:.2f} |"
        made = f" {s['export_s']:.0f} s |" if s["export_s"] >= 0.5 else " made before |"
        line += made if s["runtime"] != REFERENCE.name else " — |"
        for g in graphs:
            a = next(a for a in agreements if a["graph"] == g and a["runtime"] == s["runtime"])
            line += f" {a['same_moves'] / a['moves']:.2%} of {a['moves']} | {a['same_routes']} of {a['games']} |"
        print(line)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="all-MiniLM-L6-v2")
    p.add_argument("--texts", type=int, default=300, help="texts timed per runtime")
    p.add_argument("--games", type=int, default=300, help="games per graph")
    p.add_argument("--out", default=OUT)
    p.add_argument(
        "--only",
        choices=("speed", "agreement", "models", "torch-free"),
        help="run one part; the other from its last run",
    )
    p.add_argument("--step", choices=("speed",), help=argparse.SUPPRESS)
    p.add_argument("--runtime", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.step == "speed":
        print(json.dumps(step_speed(a.model, a.runtime, a.texts)))
        return
    os.makedirs(a.out, exist_ok=True)
    if a.only == "torch-free":
        with open(os.path.join(a.out, "bench_embedding-torch-free.json"), "w") as f:
            json.dump(torch_free(a.model, a.texts, a.out), f, indent=2)
        return
    if a.only == "models":
        with open(os.path.join(a.out, "bench_embedding-models.json"), "w") as f:
            json.dump(models(a.texts), f, indent=2)
        return
    results = {}
    for part in ("speed", "agreement"):
        path = os.path.join(a.out, f"bench_embedding-{part}.json")
        if a.only in (None, part):
            results[part] = speed(a.model, a.texts) if part == "speed" else agreements(a)
            with open(path, "w") as f:
                json.dump(results[part], f, indent=2)
        elif os.path.exists(path):  # the other part, from its last run
            with open(path) as f:
                results[part] = json.load(f)
    if len(results) == 2:
        report(results["speed"], results["agreement"])


def agreements(a: argparse.Namespace) -> list[dict]:
    from bench.bench_play import build_real
    from wikigame_spark.session import build_session

    spark = build_session("bench_embedding")
    rows = []
    for graph in (build_real(spark), wikispeedia_sized(a.out)):
        rows += agreement(spark, a.model, graph, a.games)
    return rows


if __name__ == "__main__":
    main()
