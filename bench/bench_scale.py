"""Benchmark: playing a large graph with one mapped copy per node vs a copy per Python worker.

    python bench/bench_scale.py [--nodes 1000000] [--edges 32000000] [--compare-nodes 200000]
        [--games 10000] [--workers 2] [--out out/bench]

A scale-free graph (``bench_sampling.generate``: power-law degrees) of ``--nodes`` nodes and
``--edges`` edges, with 1,000-character summaries (real Latgalian sentences recombined, so text is
text) and an embedding cache of unit vectors of MiniLM's 384 dimensions drawn from a seeded
generator (the model is not the subject here; its speed is measured apart). ``--games`` games are
sampled exactly by the library's local method (``bench_sampling``'s step, which also times the SCCs
and the searches), then the embedding agent plays them with ``--workers`` Python workers
(``local[W]``, one task per worker), once per layout, each in its own process — both layouts on a
graph of ``--compare-nodes`` nodes (same edges per node; today's layout needs ~9.5 KB per node per
worker, more than a shared 24 GB machine has at 1 M), the mapped one alone on the full size:

- ``today``: the layout before issue 14, the reference — every worker reads the Parquet tables into
  an int64 CSR, every title and summary as a Python string and the float32 matrix from the cache;
- ``mapped``: the play stage as it is (``wikigame_spark/graph/mapped.py``): every worker maps the
  same int32 CSR, Arrow-layout texts and float32 matrix read-only.

While a layout plays, the proportional set size (``Pss`` of ``/proc/PID/smaps_rollup``: shared pages
split between the processes that map them) of each of Spark's Python processes is sampled; the peak
per worker process and the peak of their sum are reported. Bars: the mapped play stage's total PSS
≤ 1.3 × the mapped files' size, and today's ≥ 3 × the mapped one's; routes identical. Also measured:
how many routes change when the vectors are stored as float16 (on this graph and on the real
Latgalian graph with real MiniLM vectors), MiniLM sentences/s on one core, the build times, and the
per-unit costs the README's sizing table of English Wikipedia and OpenAlex Medicine extrapolates from.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench import bench_sampling

SUMMARY_CHARS = 1000
DIMENSIONS = 384  # all-MiniLM-L6-v2


# --- data ----------------------------------------------------------------------------------------
def _sentences() -> np.ndarray:
    """Real text to cut summaries from: the Latgalian graph's summaries (bench_play builds it)."""
    from bench.bench_play import build_real
    from wikigame_spark.session import build_session

    graph = build_real(build_session("bench_scale"))
    text = " ".join(pq.read_table(f"{graph}/nodes", columns=["summary"]).column("summary").to_pylist())
    return np.frombuffer(text.encode("ascii", "replace"), dtype=np.uint8)  # one byte per character


def add_summaries(graph: str, seed: int = 3, part_nodes: int = 100_000) -> None:
    """Give every node a 1,000-character summary: a window of the real text at a seeded offset."""
    text = _sentences()
    windows = np.lib.stride_tricks.sliding_window_view(text, SUMMARY_CHARS)
    old = f"{graph}/nodes/part-00000.parquet"
    nodes = pq.read_table(old)
    os.remove(old)
    rng = np.random.default_rng(seed)
    for i in range(0, nodes.num_rows, part_nodes):
        part = nodes.slice(i, part_nodes)
        data = windows[rng.integers(0, windows.shape[0], part.num_rows)].reshape(-1)
        offsets = np.arange(part.num_rows + 1, dtype=np.int32) * SUMMARY_CHARS
        summaries = pa.StringArray.from_buffers(part.num_rows, pa.py_buffer(offsets), pa.py_buffer(data))
        part = part.set_column(part.schema.get_field_index("summary"), part.schema.field("summary"), summaries)
        pq.write_table(part, f"{graph}/nodes/part-{i // part_nodes:05d}.parquet")


def write_vectors(graph: str, n: int, seed: int = 4, part_nodes: int = 100_000) -> str:
    """An embedding cache of seeded unit vectors where the embedding agent looks for MiniLM's."""
    from wikigame_spark.agents.embedding_cache import cache_path
    from wikigame_spark.agents.sentence_models import DEFAULT_MODEL, prompt_names
    from wikigame_spark.layout import CacheDir, GraphDir
    from wikigame_spark.schemas import SUMMARY

    with open(GraphDir(graph).manifest) as f:
        created = json.load(f).get("created")
    path = cache_path(GraphDir(graph).cache, DEFAULT_MODEL, SUMMARY, prompt_names(DEFAULT_MODEL)[0])
    os.makedirs(CacheDir.vectors(path), exist_ok=True)
    rng = np.random.default_rng(seed)
    vector_type = pa.list_(pa.field("element", pa.float32(), nullable=False))
    for i in range(0, n, part_nodes):
        rows = min(part_nodes, n - i)
        v = rng.standard_normal((rows, DIMENSIONS), dtype=np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        vectors = pa.ListArray.from_arrays(pa.array(np.arange(rows + 1, dtype=np.int32) * DIMENSIONS), v.reshape(-1))
        table = pa.table({"id": pa.array(np.arange(i, i + rows)), "vector": vectors.cast(vector_type)})
        pq.write_table(table, f"{CacheDir.vectors(path)}/part-{i // part_nodes:05d}.parquet")
    manifest = {"kind": "embeddings", "graph": graph, "source_created": created, "model": DEFAULT_MODEL,
                "text": SUMMARY, "prompt_name": None, "generated": f"unit vectors, numpy seed {seed}"}  # fmt: skip
    with open(f"{path}/manifest.json", "w") as f:
        json.dump(manifest, f)
    return path


# --- memory --------------------------------------------------------------------------------------
def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    kids = [int(c) for c in f.read().split()]
                found += kids
                todo += kids
        except OSError:
            continue
    return found


def _pss(pid: int) -> tuple[int, int]:
    """(Pss, Pss_Anon) in bytes: all of the process's share, and its share that no file backs."""
    found = {"Pss:": 0, "Pss_Anon:": 0}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                key = line.split(maxsplit=1)[0]
                if key in found:
                    found[key] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return found["Pss:"], found["Pss_Anon:"]


def _is_python_worker(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"pyspark.daemon" in f.read()
    except OSError:
        return False


def run_sampled(args: list[str]) -> dict:
    """This script in a child process; its JSON result plus the peak PSS of its Spark Python
    processes (the forking daemon and each worker it forked): per process, summed, and per process
    the part no file backs (the worker's own memory, beyond the mapped files)."""
    peak: dict[int, tuple[int, int]] = {}
    peak_total = [0]

    def sample(pid: int) -> None:
        now = {p: _pss(p) for p in _descendants(pid) if _is_python_worker(p)}
        for p, (pss, anon) in now.items():
            old = peak.get(p, (0, 0))
            peak[p] = (max(old[0], pss), max(old[1], anon))
        peak_total[0] = max(peak_total[0], sum(v[0] for v in now.values()))

    result = bench_sampling.run_measured(args, __file__, sample)
    if peak:
        result["pss_peak_per_process_gib"] = sorted((round(v[0] / 2**30, 3) for v in peak.values()), reverse=True)
        result["pss_anon_peak_per_process_gib"] = sorted((round(v[1] / 2**30, 3) for v in peak.values()), reverse=True)
        result["pss_peak_total_gib"] = round(peak_total[0] / 2**30, 3)
    return result


# --- the steps (each in its own process) ---------------------------------------------------------
def _session(workers: int):
    from wikigame_spark.session import build_session

    conf = {"spark.ui.showConsoleProgress": "false", "spark.python.worker.reuse": "true"}
    return build_session("bench_scale", master=f"local[{workers}]", conf=conf)


def _spec(spark, graph: str):
    from wikigame_spark.agents.base import AgentSpec, agent_class
    from wikigame_spark.agents.sentence_models import DEFAULT_MODEL
    from wikigame_spark.handles import GraphHandle

    settings = agent_class("embedding").configure(model=DEFAULT_MODEL)
    resources = agent_class("embedding").prepare(spark, GraphHandle.open(graph, spark), settings)
    return AgentSpec("embedding", settings, resources)


def step_prepare(graph: str) -> dict:
    """Build the mapped files (graph, then the embedding matrix), timed; their sizes."""
    from wikigame_spark.graph import mapped
    from wikigame_spark.layout import GraphDir

    spark = _session(2)
    for folder in glob.glob(f"{GraphDir(graph).cache}/**/mapped", recursive=True):  # built anew, timed
        shutil.rmtree(folder, ignore_errors=True)
    t = time.perf_counter()
    uri = mapped.ensure_graph(spark, graph, GraphDir(graph).cache)
    graph_s = time.perf_counter() - t
    t = time.perf_counter()
    spec = _spec(spark, graph)
    matrix_s = time.perf_counter() - t
    files = {}
    for folder in sorted({uri, spec.resources["targets"], spec.resources["links"]}):
        with open(f"{folder}/manifest.json") as f:
            files.update({f"{os.path.basename(folder)}/{k}": v["bytes"] for k, v in json.load(f)["files"].items()})
    return {"graph_files_s": round(graph_s, 1), "matrix_file_s": round(matrix_s, 1), "files_bytes": files}


def _today_matrix(cache: str) -> np.ndarray:
    """Today's reader of an embedding cache: the Parquet vectors into one float32 array."""
    from wikigame_spark.layout import CacheDir
    from wikigame_spark.parquet import read_columns

    table = read_columns(CacheDir.vectors(cache), ["id", "vector"]).sort_by("id")
    flat = table.column("vector").combine_chunks().flatten().to_numpy()
    return flat.reshape(table.num_rows, -1).astype(np.float32, copy=False)


def _today(graph: str, spec):
    """A worker as before issue 14: graph and matrix loaded into the process."""
    from wikigame_spark.agents.base import agent_class
    from wikigame_spark.graph.worker_graph import WorkerGraph

    g = WorkerGraph.from_directory(graph)
    agent = agent_class("embedding")(g, spec.settings, spec.resources)  # maps, touches nothing
    agent.targets = agent.links = _today_matrix(os.path.dirname(spec.resources["targets"].rstrip("/")))
    return g, agent


def _mapped(graph: str, spec):
    from wikigame_spark.agents.base import worker_agent
    from wikigame_spark.graph import mapped
    from wikigame_spark.layout import CacheDir, GraphDir

    g = mapped.mapped_graph(CacheDir(GraphDir(graph).cache).mapped_graph)
    return g, worker_agent(spec, g)


def step_play(graph: str, games_file: str, layout: str, workers: int, routes_file: str) -> dict:
    """The games played by ``workers`` Python workers with one layout; then one load, timed."""
    import pandas as pd

    from wikigame_spark.agents.sentence_models import DEFAULT_MODEL
    from wikigame_spark.play.engine import play_games, play_stage
    from wikigame_spark.schemas import PLAYS

    spark = _session(workers)
    spec = _spec(spark, graph)
    games = spark.read.parquet(games_file)
    if layout == "mapped":
        plays = play_stage(games, graph, spec, 100, workers)
    else:

        def run(batches):
            g, agent = _today(graph, spec)
            for pdf in batches:
                rows = play_games(pdf.to_dict("records"), g, agent, 100, "embedding", DEFAULT_MODEL)
                yield pd.DataFrame(rows, columns=PLAYS.fieldNames())

        plays = games.repartition(workers, "game_id").mapInPandas(run, PLAYS)
    t = time.perf_counter()
    rows = plays.select("game_id", "outcome", "steps", "route").toPandas()
    seconds = time.perf_counter() - t
    rows.sort_values("game_id").to_parquet(routes_file, index=False)
    spark.stop()
    t = time.perf_counter()
    (_today if layout == "today" else _mapped)(graph, spec)
    return {
        "layout": layout,
        "games": len(rows),
        "steps": int(rows.steps.sum()),
        "seconds": round(seconds, 1),
        "games_per_s": round(len(rows) / seconds, 1),
        "load_s": round(time.perf_counter() - t, 2),
        "outcomes": rows.outcome.value_counts().to_dict(),
    }


def _float16_share(graph: str, games: list[dict], spec) -> float:
    """The share of games whose route differs when the vectors are held as float16."""
    from wikigame_spark.play.engine import play_games

    g, agent = _mapped(graph, spec)
    ours = play_games(games, g, agent, 100, "embedding", None)
    matrix = np.asarray(agent.targets)
    agent.targets = agent.links = matrix.astype(np.float16).astype(np.float32)  # stored half, computed single
    half = play_games(games, g, agent, 100, "embedding", None)
    return sum(a["route"] != b["route"] for a, b in zip(ours, half)) / len(games)


def step_float16(graph: str, games_file: str, n_games: int) -> dict:
    """Routes with float16 vectors: on this graph, and on the real Latgalian graph (real MiniLM)."""
    from bench.bench_play import build_real
    from wikigame_spark.devtools.games import write_games
    from wikigame_spark.graph import mapped

    spark = _session(2)
    generated = pq.read_table(games_file).slice(0, n_games).to_pylist()
    real = build_real(spark)
    mapped.ensure_graph(spark, real)
    games_dir = os.path.join(os.path.dirname(real), "scale-games-500")
    if not os.path.exists(games_dir):
        write_games(real, 500, seed=13, path=games_dir)
    real_games = pq.read_table(f"{games_dir}/games").to_pylist()
    return {
        "float16_routes_changed_generated": round(_float16_share(graph, generated, _spec(spark, graph)), 4),
        "float16_games_generated": len(generated),
        "float16_routes_changed_latgalian": round(_float16_share(real, real_games, _spec(spark, real)), 4),
        "float16_games_latgalian": len(real_games),
    }


def step_minilm() -> dict:
    """MiniLM-L6 sentences/s on one core, on 1,000-character texts of real sentences."""
    import torch

    from wikigame_spark.agents.sentence_models import DEFAULT_MODEL, encode, load_model

    torch.set_num_threads(1)
    text = _sentences()
    starts = np.random.default_rng(5).integers(0, text.size - SUMMARY_CHARS, 320)
    texts = [text[s : s + SUMMARY_CHARS].tobytes().decode("ascii") for s in starts]
    model = load_model(DEFAULT_MODEL)
    encode(model, texts[:64], None)  # warm-up
    t, cpu = time.perf_counter(), time.process_time()
    encode(model, texts[64:], None)
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    return {  # per CPU-second: what a core gives when no other job shares it (this machine is shared)
        "minilm_sentences_per_s_per_core": round((len(texts) - 64) / cpu, 1),
        "minilm_sentences_per_s_wall": round((len(texts) - 64) / wall, 1),
        "max_seq_length": model.max_seq_length,
    }


def report(r: dict, routes: dict) -> None:
    """The figures, the bars, and the per-unit costs the README's sizing table extrapolates from."""
    n, m, files = r["nodes"], r["edges"], r["prepare"]["files_bytes"]
    total = sum(files.values())
    matrix = files["mapped/vectors.npy"]
    print(f"bench_scale: {n} nodes, {m} edges, {r['games']} games, {r['workers']} Python workers; "
          f"mapped files {total / 2**30:.2f} GiB ({matrix / 2**30:.2f} of them the float32 matrix)")  # fmt: skip
    for layout in routes:
        x = r[layout]
        print(f"  {layout:6}: load {x['load_s']} s per worker, {x['games_per_s']} games/s ({x['steps']} steps); "
              f"peak PSS per process {x['pss_peak_per_process_gib']} GiB (not file-backed "
              f"{x['pss_anon_peak_per_process_gib']}), total {x['pss_peak_total_gib']} GiB")  # fmt: skip
    if "mapped" in routes:
        share = r["mapped"]["pss_peak_total_gib"] * 2**30 / total
        r["mapped_over_files"] = round(share, 3)
        print(f"  mapped: total PSS / mapped files {share:.2f} (bar <= 1.3)")
    if {"today", "mapped"} <= set(routes):
        import pandas as pd

        a, b = (pd.read_parquet(routes[k]).route.map(list) for k in ("today", "mapped"))
        r["routes_identical"] = bool(a.equals(b))
        r["today_over_mapped"] = round(r["today"]["pss_peak_total_gib"] / r["mapped"]["pss_peak_total_gib"], 2)
        print(
            f"  today / mapped total PSS {r['today_over_mapped']}x (bar >= 3); "
            f"routes identical: {r['routes_identical']}"
        )
    p = r["prepare"]
    print(f"  per unit: {files['graph/indices.npy'] / m:.2f} B/edge, "
          f"{(total - files['graph/indices.npy'] - matrix) / n:.1f} B/node of CSR and texts, {matrix / n:.0f} B/node "
          f"of vectors; mapped graph files built in {p['graph_files_s']} s "
          f"({(total - matrix) / p['graph_files_s'] / 1e6:.0f} MB/s), matrix in {p['matrix_file_s']} s "
          f"({matrix / p['matrix_file_s'] / 1e6:.0f} MB/s); sampling (local): CSR+SCCs {r['sampling']['prepare_s']} s, "
          f"{r['sampling']['exact_pairs_per_s_search']} exact pairs/s")  # fmt: skip
    f16 = r["float16"]
    print(f"  float16 vectors (stored half, computed single): routes changed "
          f"{f16['float16_routes_changed_generated']:.2%} "
          f"of {f16['float16_games_generated']} games here, {f16['float16_routes_changed_latgalian']:.2%} of "
          f"{f16['float16_games_latgalian']} on the Latgalian graph with MiniLM's vectors")  # fmt: skip
    print(f"  MiniLM-L6 on one CPU core: {r['minilm']['minilm_sentences_per_s_per_core']} sentences/s "
          f"(1,000-character texts, max_seq_length {r['minilm']['max_seq_length']})")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=1_000_000)
    p.add_argument("--edges", type=int, default=32_000_000)
    p.add_argument("--games", type=int, default=10_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument(
        "--compare-nodes",
        type=int,
        default=200_000,
        help="the size both layouts play (today's needs ~9.5 KB per node per worker); --nodes plays the mapped one",
    )
    p.add_argument("--float16-games", type=int, default=2000)
    p.add_argument("--out", default=os.path.join(ROOT, "out", "bench"))
    p.add_argument("--step", help=argparse.SUPPRESS)
    p.add_argument("--graph", help=argparse.SUPPRESS)
    p.add_argument("--games-file", help=argparse.SUPPRESS)
    p.add_argument("--layout", help=argparse.SUPPRESS)
    p.add_argument("--routes-file", help=argparse.SUPPRESS)
    a = p.parse_args()
    steps = {
        "prepare": lambda: step_prepare(a.graph),
        "play": lambda: step_play(a.graph, a.games_file, a.layout, a.workers, a.routes_file),
        "float16": lambda: step_float16(a.graph, a.games_file, a.float16_games),
        "minilm": step_minilm,
    }
    if a.step:
        print(json.dumps(steps[a.step]()))
        return

    extras: dict = {}
    sizes = [(a.compare_nodes, ["today", "mapped"])] + ([(a.nodes, ["mapped"])] if a.nodes != a.compare_nodes else [])
    for n, layouts in sizes:
        r = bench_size(a, n, a.edges * n // a.nodes, layouts, extras)
        with open(os.path.join(a.out, f"bench_scale-{n}.json"), "w") as f:
            json.dump(r, f, indent=2)


def bench_size(a: argparse.Namespace, n: int, m: int, layouts: list[str], extras: dict) -> dict:
    """One graph size: generated once, its games sampled once, its files built and played per layout."""
    graph = os.path.join(a.out, f"scale-{n}-{m}")
    r: dict = {"nodes": n, "edges": m, "games": a.games, "workers": a.workers, "graph": graph}
    if not os.path.exists(f"{graph}/manifest.json"):
        t = time.perf_counter()
        bench_sampling.generate(graph, n, m)
        add_summaries(graph)
        write_vectors(graph, n)
        r["generate_s"] = round(time.perf_counter() - t, 1)
    games_file = os.path.join(a.out, f"scale-games-{n}-{m}-{a.games}.parquet")
    sampled = os.path.join(a.out, f"scale-sampling-{n}-{m}-{a.games}.json")  # the games' sampling, timed
    if not os.path.exists(sampled):
        argv = ["--graph", graph, "--step", "sample", "--method", "local", "--games", str(a.games)]
        with open(sampled, "w") as f:
            json.dump(bench_sampling.run_measured([*argv, "--games-file", games_file]), f)
    with open(sampled) as f:
        r["sampling"] = json.load(f)
    r["prepare"] = run_sampled(["--graph", graph, "--step", "prepare"])
    print(json.dumps(r["prepare"]), flush=True)
    routes = {}
    for layout in layouts:
        routes[layout] = os.path.join(a.out, f"scale-routes-{n}-{layout}.parquet")
        argv = ["--step", "play", "--graph", graph, "--games-file", games_file, "--layout", layout]
        r[layout] = run_sampled([*argv, "--workers", str(a.workers), "--routes-file", routes[layout]])
        print(json.dumps(r[layout]), flush=True)
    if not extras:  # once per run, on the first size
        extras["minilm"] = run_sampled(["--step", "minilm"])
        f16 = ["--step", "float16", "--graph", graph, "--games-file", games_file]
        extras["float16"] = run_sampled([*f16, "--float16-games", str(a.float16_games)])
    r.update(extras)
    report(r, routes)
    return r


if __name__ == "__main__":
    main()
