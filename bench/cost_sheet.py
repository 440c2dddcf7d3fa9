"""Benchmark: what a full-size study costs — each stage's core-hours and peak memory for English
Wikipedia and OpenAlex Medicine, from the real jobs measured here at two sizes.

    python bench/cost_sheet.py [--wiki-mb 60 240] [--works 200000 1600000]
        [--graphs 25000:400000 100000:1600000] [--summaries 500 2000] [--static-summaries 20000 80000]
        [--models all-MiniLM-L6-v2 …] [--play-games 1000 4000] [--decision-games 400] [--stages WORD …]
        [--out out/bench/cost]

Each stage is the job a user runs (``python jobs/….py``, local Spark on this machine's cores),
each run in a process of its own, measured as a process tree: CPU seconds (every process's user
and system time, the JVM's and the Python workers' too) and the peak of the tree's summed PSS
(proportional set size: a page mapped by several processes counted once in all). Two sizes of
each input give a line, CPU = fixed + marginal × size: the fixed part is the job's cost at no
input (JVM and session start, the small stages), the marginal part its rate. Full size is that
line at the stated size, with the assumption written beside it; memory is either flat (Spark's
stages, bounded by the JVM's heap: Spark spills past it; the embedding workers' model and batch)
or, where the job holds the graph in its Python driver, the JVMs' peak (bounded by the heap) plus
the line through the two peaks of the other processes. Inputs are real or generated
in the real schema: the English dump's head replicated (``bench_wikipedia``), a generated
OpenAlex snapshot (``bench_openalex``), scale-free graphs (``bench_sampling``) with 1,000-character
summaries cut from the real Latgalian text (``bench_scale``).

The embedding cache is measured for every embedding model installed offline (``--models``): a
static model at larger sizes, where its rate shows past the job's fixed cost.

Prints the sheet and writes ``OUT/cost_sheet.md`` and ``OUT/cost_sheet.json``; ``--stages`` measures
only the stages whose names hold one of the words given (a line re-measured alone).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.bench_scale import _descendants, _pss
from wikigame_spark.agents.sentence_models import model_slug
from wikigame_spark.full_size import MEDICINE, WIKIPEDIA

OUT = os.path.join(ROOT, "out", "bench", "cost")


# --- a process tree, measured --------------------------------------------------------------------
def _cpu(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _is_jvm(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0", 1)[0].endswith(b"/java")
    except OSError:
        return False


def measured(command: list[str], env: dict | None = None) -> dict:
    """``command`` run to its end: wall and CPU seconds of its process tree, its peak PSS, and the
    peaks of its JVMs' and of its other processes'. A process's CPU is its last sample (every 0.2 s),
    so each may lose up to 0.2 s at its end."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    cpu: dict[int, float] = {}
    peaks = [0, 0, 0]  # the whole tree's, its JVMs', its other processes'

    def watch() -> None:
        while proc.poll() is None:
            pids = [proc.pid, *_descendants(proc.pid)]
            for p in pids:
                seconds = _cpu(p)
                if seconds is not None:
                    cpu[p] = max(cpu.get(p, 0.0), seconds)
            pss = {p: _pss(p)[0] for p in pids}
            total, jvm = sum(pss.values()), sum(v for p, v in pss.items() if _is_jvm(p))
            peaks[:] = map(max, peaks, (total, jvm, total - jvm))
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    output, _ = proc.communicate()
    watcher.join()
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed ({proc.returncode}):\n{output[-3000:]}")
    summary = output.strip().splitlines()[-1]
    gib = {k: v / 2**30 for k, v in zip(("peak_gib", "peak_jvm_gib", "peak_other_gib"), peaks)}
    return {"wall_s": time.perf_counter() - start, "cpu_s": sum(cpu.values()), **gib, "summary": summary}


def job(name: str, *args: str, tracking: str) -> dict:
    env = dict(os.environ, MLFLOW_TRACKING_URI=tracking, MLFLOW_EXPERIMENT_NAME="cost-sheet")
    return measured([sys.executable, os.path.join(ROOT, "jobs", f"{name}.py"), *args, "--overwrite"], env)


# --- the inputs ----------------------------------------------------------------------------------
def graph_at(out: str, n: int, m: int, summaries: bool = False) -> str:
    from bench.bench_sampling import generate
    from bench.bench_scale import add_summaries

    path = os.path.join(out, f"scalefree-{n}-{m}{'-summaries' if summaries else ''}")
    if not os.path.exists(f"{path}/manifest.json"):
        generate(path, n, m)
        if summaries:
            add_summaries(path)
    return path


# --- the stages, each at one size: (size in the stage's unit, its measurement) ------------------
def build_wikipedia(mb: int, out: str, tracking: str) -> tuple[float, dict]:
    from bench.bench_wikipedia import scaled_dump

    paths = scaled_dump(mb, 2)
    graph = os.path.join(out, f"enwiki-{mb}")
    m = job("build_wikipedia", "--input", *paths, "--output", graph, tracking=tracking)
    with open(f"{graph}/manifest.json") as f:
        return json.load(f)["counts"]["wikitext_bytes"] / 1e6, m


def build_openalex(works: int, out: str, tracking: str) -> tuple[float, dict]:
    from bench.bench_openalex import snapshot

    root, _ = snapshot(works, os.cpu_count() or 1)
    graphs = os.path.join(out, f"openalex-{works}")
    m = job("build_openalex", "--input", root, "--field", "Medicine", "--output", graphs, "--format", "parquet",
            tracking=tracking)  # fmt: skip
    return float(works), m


def graph_stats(graph: str, edges: int, tracking: str) -> tuple[float, dict]:
    return float(edges), job("graph_stats", "--graph", graph, tracking=tracking)


def sample_games(graph: str, edges: int, tracking: str) -> tuple[float, dict]:
    return float(edges), job("sample_games", "--graph", graph, "--games", "10000", "--seed", "0", tracking=tracking)


def embed(graph: str, nodes: int, tracking: str, model: str) -> tuple[float, dict]:
    """The embedding agent's node cache (``model`` on the default runtime), built afresh by play_games
    for a few games: the cache is nearly all of the run."""
    job("sample_games", "--graph", graph, "--games", "20", "--seed", "0", tracking=tracking)
    # a cache left by an earlier run would be reused, not made (the graph's other caches stay)
    for made in glob.glob(os.path.join(graph, "cache", "embeddings", f"{model_slug(model)}*")):  # any runtime's
        shutil.rmtree(made)
    m = job("play_games", "--graph", graph, "--agent", "embedding", "--games", "20", "--model", model, "--output",
            os.path.join(graph, "plays", f"embed-{model}"), tracking=tracking)  # fmt: skip
    return float(nodes), m


def play(graph: str, nodes: int, games: int, tracking: str) -> tuple[float, dict]:
    """Embedding-agent games on the mapped files, the cache given (seeded unit vectors): its size
    is links scored, the steps times the mean out-degree of the pages they were on."""
    import pyarrow.parquet as pq

    from bench.bench_scale import write_vectors
    from wikigame_spark.layout import PlaysDir
    from wikigame_spark.schemas import STEPS

    write_vectors(graph, nodes)
    plays = os.path.join(graph, "plays", "play")
    m = job("play_games", "--graph", graph, "--agent", "embedding", "--games", str(games), "--output", plays,
            tracking=tracking)  # fmt: skip
    with open(f"{graph}/manifest.json") as f:
        counts = json.load(f)["counts"]
    chunks = [PlaysDir.plays(c) for c in sorted(glob.glob(os.path.join(plays, PlaysDir.CHUNKS)))]
    steps = sum(int(pq.read_table(c, columns=[STEPS]).column(STEPS).to_numpy().sum()) for c in chunks)
    return steps * counts["edges"] / counts["nodes"], m


def decisions(graph: str, edges: int, games: int, tracking: str) -> tuple[float, dict]:
    """Decision records of an expert's route per game: the cheaper exact search per target (pair
    searches for one route), so its size is the games (distinct targets) times the links a search
    may follow."""
    games_dir = os.path.join(graph, "games-decisions")
    job("sample_games", "--graph", graph, "--games", str(games), "--seed", "0", "--output", games_dir,
        "--overwrite", tracking=tracking)  # fmt: skip
    m = job("decision_records", "--graph", graph, "--games-dir", games_dir, "--overwrite", tracking=tracking)
    return float(games) * edges, m


# --- the sheet -----------------------------------------------------------------------------------
def line(points: list[tuple[float, dict]], key: str) -> tuple[float, float]:
    """(fixed, marginal) of the line through the two sizes' ``key``."""
    (x1, a), (x2, b) = points
    marginal = (b[key] - a[key]) / (x2 - x1)
    return a[key] - marginal * x1, marginal


@dataclass(frozen=True)
class Stage:
    name: str
    unit: str
    measure: Callable[[], list]  # the two sizes' (size, measurement), measured when called
    full: dict  # the study's name → its size in ``unit`` (absent: not a stage of that study)
    memory: str  # "flat", or "driver": the JVMs' peak plus a line through the other processes' peaks
    assumption: str


def rows(stages: list[Stage]) -> list[dict]:
    out = []
    for s in stages:
        points = s.measure()
        fixed, marginal = line(points, "cpu_s")
        mem_fixed, mem_marginal = line(points, "peak_other_gib")
        flat, jvm = (max(m[k] for _, m in points) for k in ("peak_gib", "peak_jvm_gib"))
        row = {"stage": s.name, "unit": s.unit, "fixed_cpu_s": fixed, "marginal_cpu_s": marginal,
               "measured": [{"size": x, **m} for x, m in points], "assumption": s.assumption, "full": {}}  # fmt: skip
        for study, size in s.full.items():
            if marginal <= 0:  # the fixed cost hides the input's at these sizes: no rate to scale
                row["full"][study] = None
                continue
            peak = flat if s.memory == "flat" else jvm + mem_fixed + mem_marginal * size
            row["full"][study] = {"size": size, "core_hours": (fixed + marginal * size) / 3600, "peak_gib": peak}
        out.append(row)
    return out


def core_time(hours: float) -> str:
    """Core-hours, or core-minutes below one hour (a stage of minutes would read as 0.0 h)."""
    return f"{hours:,.1f} h" if hours >= 1 else f"{hours * 60:.0f} core-min"


def markdown(table: list[dict], cores: int) -> str:
    studies = [WIKIPEDIA.name, MEDICINE.name]
    head = "| stage | " + " | ".join(f"{s}: core-hours, peak memory per node" for s in studies)
    lines = [head + " | measured here | assumption |", "|---" * (len(studies) + 3) + "|"]
    for r in table:
        cells = []
        for s in studies:
            if s not in r["full"]:
                cells.append("—")
            elif r["full"][s] is None:
                cells.append("not resolved: larger sizes needed")
            else:
                cells.append(f"{core_time(r['full'][s]['core_hours'])}, {r['full'][s]['peak_gib']:.1f} GiB")
        if r["marginal_cpu_s"] > 0:
            rate = 1 / r["marginal_cpu_s"]
            here = f"{rate:,.3g} {r['unit']} per CPU-second, fixed {r['fixed_cpu_s']:.0f} CPU-s a job"
        else:
            sizes = " and ".join(f"{m['size']:,.0f}" for m in r["measured"])
            here = f"the same CPU at {sizes} {r['unit']} (fixed cost {r['fixed_cpu_s']:.0f} CPU-s)"
        lines.append(f"| {r['stage']} | {' | '.join(cells)} | {here} | {r['assumption']} |")
    lines.append("")
    lines.append(f"Measured on {cores} cores. Peak memory: the job's process tree (PSS) on that one node, with")
    lines.append(f"{cores} Python workers; a node with more cores runs a worker per core (~0.2 GiB each, and the")
    lines.append("embedding stage's model and batch each).")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--wiki-mb", type=int, nargs=2, default=[60, 240], help="MB of wikitext, two sizes")
    p.add_argument("--works", type=int, nargs=2, default=[200_000, 1_600_000], help="snapshot works, two sizes")
    p.add_argument("--graphs", nargs=2, default=["25000:400000", "100000:1600000"], help="NODES:EDGES, two sizes")
    p.add_argument("--summaries", type=int, nargs=2, default=[500, 2000], help="nodes embedded, two sizes")
    p.add_argument("--static-summaries", type=int, nargs=2, default=[20_000, 80_000], help="the same, static models")
    p.add_argument("--models", nargs="+", default=None, help="embedding models (default: every one installed)")
    p.add_argument("--play-games", type=int, nargs=2, default=[1000, 4000], help="games played, two counts")
    p.add_argument("--decision-games", type=int, default=400, help="games of the decision records, at both sizes")
    p.add_argument("--stages", nargs="+", default=[], metavar="WORD", help="only the stages whose names hold a word")
    p.add_argument("--out", default=OUT)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tracking = f"sqlite:///{os.path.join(a.out, 'mlflow.db')}"
    w, m = WIKIPEDIA.name, MEDICINE.name
    graphs = [tuple(int(v) for v in g.split(":")) for g in a.graphs]

    def each(stage, sizes, *rest):
        def measure() -> list:
            points = []
            for size in sizes():
                points.append(stage(*size, *rest) if isinstance(size, tuple) else stage(size, *rest))
                print(f"{stage.__name__} at {size}: {json.dumps(points[-1][1])}", flush=True)
            return points

        return measure

    def wanted(name: str) -> bool:
        return not a.stages or any(word in name for word in a.stages)

    # The snapshots before anything starts Spark here: their generator forks workers, and a fork
    # of a process holding the Spark gateway's connection resets it as it exits.
    from bench.bench_openalex import snapshot

    if wanted("build the graph (OpenAlex snapshot)"):
        for works in a.works:
            snapshot(works, os.cpu_count() or 1)

    def generated() -> list:
        return [(graph_at(a.out, n, e), e) for n, e in graphs]

    def embedded(model: str) -> Callable[[], list]:
        sizes = a.static_summaries if is_static(model) else a.summaries
        return lambda: [(graph_at(a.out, n, n * 16, summaries=True), n) for n in sizes]

    from wikigame_spark.agents.encoders import DEFAULT, runtime_for
    from wikigame_spark.agents.sentence_models import installed_models, is_static

    embedding_models = a.models or installed_models()

    wiki_links, medicine_links = (10_000 * 100 * s.edges / s.nodes for s in (WIKIPEDIA, MEDICINE))
    stages = [
        Stage(
            "build the graph (Wikipedia dump)",
            "MB of wikitext",
            each(build_wikipedia, lambda: a.wiki_mb, a.out, tracking),
            {w: WIKIPEDIA.input_units},
            "flat",
            "the dump's ~95 GB of wikitext; the rate on this machine's cores holds per core",
        ),
        Stage(
            "build the graph (OpenAlex snapshot)",
            "works read",
            each(build_openalex, lambda: a.works, a.out, tracking),
            {m: MEDICINE.input_units},
            "flat",
            "the job reads the whole snapshot (~260 M works) to keep one field's; records alike in size",
        ),
        Stage(
            "graph statistics (local)",
            "edges",
            each(graph_stats, generated, tracking),
            {w: WIKIPEDIA.edges, m: MEDICINE.edges},
            "driver",
            "linear in edges (components and searches on the mapped CSR); the driver's Python holds the CSR: "
            "its memory linear",
        ),
        Stage(
            "10,000 games sampled (local)",
            "edges",
            each(sample_games, generated, tracking),
            {w: WIKIPEDIA.edges, m: MEDICINE.edges},
            "driver",
            "linear in edges (the searches grow slower); the driver's Python holds the CSR: its memory linear",
        ),
        *(
            Stage(
                f"embedding cache, {model} ({runtime_for(model, DEFAULT).name} runtime)",
                "summaries",
                each(embed, embedded(model), tracking, model),
                {w: WIKIPEDIA.nodes, m: MEDICINE.nodes},
                "flat",
                "every summary at 1,000 characters (the 256-token cap of a transformer); a worker's model and "
                "batch per core",
            )
            for model in embedding_models
        ),
        Stage(
            "10,000 embedding games",
            "links scored",
            each(play, lambda: [(generated()[-1][0], graphs[-1][0], games) for games in a.play_games], tracking),
            {w: wiki_links, m: medicine_links},
            "flat",
            "worst case: every game 100 steps; a step's cost ∝ the page's out-degree; memory at the larger "
            "graph: the mapped files (CSR + matrix) grow with the graph",
        ),
        Stage(
            "decision records of 100,000 games (expert)",
            "games x edges",
            each(decisions, lambda: [(g, e, a.decision_games) for g, e in generated()], tracking),
            {w: 100_000 * WIKIPEDIA.edges, m: 100_000 * MEDICINE.edges},
            "flat",
            "per distinct target the cheaper exact search (pair searches, or one backward search over up to every "
            "link), taken as ∝ games × edges: an upper estimate; a worker's searches grow with the graph",
        ),
    ]
    table = rows([s for s in stages if wanted(s.name)])
    sheet = markdown(table, os.cpu_count() or 1)
    print("\n" + sheet)
    with open(os.path.join(a.out, "cost_sheet.md"), "w") as f:
        f.write(sheet + "\n")
    with open(os.path.join(a.out, "cost_sheet.json"), "w") as f:
        json.dump(table, f, indent=2)
    total = {s: sum(r["full"][s]["core_hours"] for r in table if r["full"].get(s)) for s in (w, m)}
    print(f"cost sheet: {os.path.join(a.out, 'cost_sheet.md')}; "
          + "; ".join(f"{s} {h:,.0f} core-hours" for s, h in total.items()))  # fmt: skip


if __name__ == "__main__":
    main()
