"""Benchmark: exact game sampling on generated scale-free directed graphs, every distance method.

    python bench/bench_sampling.py [--sizes 100000:1000000,1000000:34000000] [--games 10000]
        [--distributed-games 1600] [--methods graphframes,pregel,shortest-paths,components,python]
        [--out out/bench]

Each graph (power-law in- and out-degrees, 8 % of nodes without in-links, 0.5 % without out-links,
0.1 % isolated) is generated with numpy and written once to ``OUT/scalefree-N-M/`` in the graph
contract. Every step runs in its own process, so that its peak memory (the process tree: Python
plus Spark's JVM) is its own:

- ``local``: ``sample_games`` with the single-node method (CSR arrays, SCC reachability,
  bidirectional BFS), ``--games`` games;
- ``graphframes``: ``sample_games`` with the GraphFrames method (degrees and SCCs by GraphFrames,
  searches by the DataFrame BFS of ``wikigame_spark.graph.bfs``), ``--distributed-games`` games: the
  same draws as the local run's first games;
- ``pregel``: the same with the searches done by the candidate below (bidirectional, bit-parallel,
  on GraphFrames' Pregel), on the same draws;
- ``shortest-paths``: GraphFrames' ``shortestPaths`` with a batch of the games' targets as landmarks;
- ``components``: GraphFrames' strongly and weakly connected components, timed;
- ``python``: a per-pair breadth-first search in plain Python, the paper's way, on a few games.

Games of every method are compared with the local method's; pairs/s count the draws a method
resolved exactly (decided unreachable, or searched) per second of its search phase. Results go to
stdout and ``OUT/bench_sampling.json``.
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("SPARK_CONF_DIR", os.path.join(ROOT, "conf"))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from wikigame_spark.graph.reach import NO_PATH
from wikigame_spark.schemas import DST, ID, SRC

log = logging.getLogger(__name__)


# --- graph generation ----------------------------------------------------------------------------
def generate(path: str, n: int, m: int, seed: int = 42) -> dict:
    """Write a scale-free directed graph with about ``m`` distinct edges to ``path`` (Parquet)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    # Chung-Lu style: endpoint probabilities follow Zipf weights over shuffled ranks, giving
    # power-law degrees (in: exponent ~2.3, out: ~2.6); some nodes get no in- or out-weight.
    w_in = (np.arange(1, n + 1, dtype=np.float64) ** -0.77)[rng.permutation(n)]
    w_out = (np.arange(1, n + 1, dtype=np.float64) ** -0.62)[rng.permutation(n)]
    kind = rng.random(n)
    w_in[kind < 0.08] = 0  # unreachable: links out, none in
    w_out[(kind >= 0.08) & (kind < 0.085)] = 0  # dead ends
    isolated = (kind >= 0.085) & (kind < 0.086)
    w_in[isolated] = 0
    w_out[isolated] = 0
    w_in /= w_in.sum()
    w_out /= w_out.sum()
    keys = np.empty(0, dtype=np.int64)
    draw = int(m * 1.08)
    while keys.size < m:
        src = rng.choice(n, size=draw, p=w_out)
        dst = rng.choice(n, size=draw, p=w_in)
        keep = src != dst
        keys = np.unique(np.concatenate([keys, src[keep] * n + dst[keep]]))
        del src, dst, keep
        draw = int((m - keys.size) * 1.3) + 1000
    keys = keys[np.sort(rng.choice(keys.size, size=m, replace=False))]
    src, dst = keys // n, keys % n
    del keys
    os.makedirs(f"{path}/edges", exist_ok=True)
    os.makedirs(f"{path}/nodes", exist_ok=True)
    step = 4_000_000
    for i in range(0, m, step):
        pq.write_table(
            pa.table({"src": pa.array(src[i : i + step]), "dst": pa.array(dst[i : i + step])}),
            f"{path}/edges/part-{i // step:05d}.parquet",
        )
    ids = np.arange(n, dtype=np.int64)
    titles = pa.array([f"Node {i}" for i in range(n)])
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), False),
            pa.field("page_id", pa.int64(), False),
            pa.field("title", pa.string(), False),
            pa.field("summary", pa.string(), False),
        ]
    )
    nodes = pa.table([ids, ids + 1, titles, pa.array([""] * n)], schema=schema)
    pq.write_table(nodes, f"{path}/nodes/part-00000.parquet")
    escheme = pa.schema([pa.field("src", pa.int64(), False), pa.field("dst", pa.int64(), False)])
    assert pq.read_schema(f"{path}/edges/part-00000.parquet").types == escheme.types
    manifest = {
        "kind": "generated-scale-free",
        "counts": {"nodes": n, "edges": int(m)},
        "generator": {"seed": seed, "in_weight_exponent": 0.77, "out_weight_exponent": 0.62},
    }
    with open(f"{path}/manifest.json", "w") as f:
        json.dump(manifest, f, indent=2)
    return manifest


# --- memory of a process tree --------------------------------------------------------------------
def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants (from /proc)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
        except OSError:
            continue
    return total


def run_measured(args: list[str], script: str = __file__, sample=None) -> dict:
    """Run ``script`` (default: this one) in a child process; its JSON result plus the tree's peak
    resident memory, or, given ``sample``, what it records when called with the child's PID every
    0.2 s."""
    proc = subprocess.Popen([sys.executable, script, *args], stdout=subprocess.PIPE, text=True)
    peak = [0]

    def watch() -> None:
        while proc.poll() is None:
            if sample is None:
                peak[0] = max(peak[0], _tree_rss(proc.pid))
            else:
                sample(proc.pid)
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out, _ = proc.communicate()
    watcher.join()
    if proc.returncode != 0:
        raise RuntimeError(f"bench step {args} failed with exit code {proc.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    if sample is None:
        result["peak_rss_gib"] = round(peak[0] / 2**30, 2)
    return result


# --- the candidate search: bit-parallel bidirectional BFS on GraphFrames' Pregel --------------------
# A batch of up to ``batch_pairs`` pairs is searched together, one bit per pair. Every vertex holds,
# as arrays of longs, the bits of the pairs whose forward search (from the source, along out-links)
# has reached it, those whose backward search (from the target, against in-links) has, and the bits
# each added in the last superstep (its frontier). The edge list is doubled (each link forward and
# reversed, with a direction flag), so a message needs only its sender's state: Pregel joins only the
# vertices with a frontier to the edges and ORs the messages per receiver. One superstep advances
# both searches of every pair of the batch by one level.
#
# Exactness: after k supersteps without the two searches of a pair touching, its distance L is more
# than 2k − 2. In superstep k they first touch at a vertex newly reached by one search and seen
# before by the other (L = 2k − 1) or newly reached by both (L = 2k); vertices record such bits per
# superstep and a pair's distance is the smallest recorded. A pair whose forward or backward frontier
# empties first has no path. The search runs in a few Pregel runs (3 supersteps, then 2, then 1 at a
# time); between runs the pairs answered are cleared from the frontiers. Only per-pair answers come
# back to the driver.
WORD = 64
FORWARD, BACKWARD = 0, 1
# Supersteps of the first Pregel runs; each further run is one superstep. Every run pays for
# partitioning the edges once, so the first covers most distances (≤ 6) at once.
ROUNDS = (3, 2)
_DIR = "direction"
_INIT = "init"
_SEEN_F, _SEEN_B, _FRESH_F, _FRESH_B = "seen_f", "seen_b", "fresh_f", "fresh_b"
_ANY_F, _ANY_B = "any_f", "any_b"
_STEP, _MET, _V = "step", "met", "v"
_MET_TYPE = "array<struct<step:int,odd:array<bigint>,even:array<bigint>>>"


class PregelSearch:
    """The candidate: exact distances between nodes of one graph (``vertices``: ``id``; ``edges``:
    ``src, dst``), the same interface as ``wikigame_spark.graph.bfs.DataFrameSearch``."""

    def __init__(self, vertices: DataFrame, edges: DataFrame, batch_pairs: int) -> None:
        level = StorageLevel.MEMORY_AND_DISK
        self.vertices = vertices.select(ID).persist(level)
        links = edges.select(SRC, DST)
        reversed_links = links.select(F.col(DST).alias(SRC), F.col(SRC).alias(DST), F.lit(BACKWARD).alias(_DIR))
        self.edges = links.withColumn(_DIR, F.lit(FORWARD)).unionByName(reversed_links).persist(level)
        self.words = max(1, batch_pairs // WORD)

    def distances(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """int32 shortest path lengths (``NO_PATH`` if none) for pairs of node ids."""
        sources = np.asarray(sources, dtype=np.int64)
        targets = np.asarray(targets, dtype=np.int64)
        out = np.zeros(sources.size, dtype=np.int32)
        todo = np.flatnonzero(sources != targets)
        size = WORD * self.words
        for start in range(0, todo.size, size):
            part = todo[start : start + size]
            out[part] = self._batch(sources[part], targets[part])
            log.info("pregel bfs: %d of %d pairs", min(start + size, todo.size), todo.size)
        return out

    def _batch(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        from graphframes import GraphFrame

        words = (sources.size + WORD - 1) // WORD
        spark = self.vertices.sparkSession
        state = self.vertices
        for side, ends in (("f", sources), ("b", targets)):
            ids, masks = _masks(ends, words)
            bits = spark.createDataFrame(pd.DataFrame({ID: ids, side: list(masks)}), f"{ID} long, {side} array<long>")
            state = state.join(F.broadcast(bits), ID, "left")
        zeros = _zeros(words)
        f, b = F.coalesce("f", zeros), F.coalesce("b", zeros)
        # A run's input: each search's seen and frontier bits where the previous run left them
        # (null at vertices no search has reached).
        start = F.struct(f.alias(_SEEN_F), b.alias(_SEEN_B), f.alias(_FRESH_F), b.alias(_FRESH_B))
        state = state.select(ID, F.when(F.col("f").isNotNull() | F.col("b").isNotNull(), start).alias(_INIT))
        distance = np.full(sources.size, NO_PATH, dtype=np.int32)
        open_ = np.ones(sources.size, dtype=bool)
        step, runs = 0, 0
        while True:
            supersteps = ROUNDS[runs] if runs < len(ROUNDS) else 1
            runs += 1
            result = _run(GraphFrame(state, self.edges), words, step, supersteps)
            step += supersteps
            found = _met(result, words, sources.size)
            newly = open_ & (found > 0)
            distance[newly] = found[newly]
            open_ &= ~newly
            if open_.any():
                # A pair with an empty frontier on either side that never touched has no path.
                open_ &= _unpack(_frontier_bits(result, words), sources.size)
            log.debug("pregel bfs: %d supersteps, %d pairs open", step, int(open_.sum()))
            if not open_.any():
                result.unpersist()
                return distance
            keep = F.array(*[F.lit(x) for x in _pack(open_, words)])
            state = result.select(
                ID,
                F.struct(
                    F.col(_V)[_SEEN_F].alias(_SEEN_F),
                    F.col(_V)[_SEEN_B].alias(_SEEN_B),
                    _and(F.col(_V)[_FRESH_F], keep).alias(_FRESH_F),
                    _and(F.col(_V)[_FRESH_B], keep).alias(_FRESH_B),
                ).alias(_INIT),
            ).localCheckpoint()
            result.unpersist()


def _run(g, words: int, step: int, supersteps: int) -> DataFrame:
    """``supersteps`` supersteps after ``step``. Each vertex holds one struct ``v``: the seen and fresh
    bits of both searches, whether it has fresh bits, and ``met`` entries ``(step, odd, even)``: per
    word, the bits of the pairs whose searches touched there at length ``2·step − 1`` or ``2·step``."""
    from graphframes.lib import Pregel

    msg, v = Pregel.msg(), F.col(_V)
    zero, zeros = F.lit(0).cast("long"), _zeros(words)
    none = F.lit(None).cast("array<bigint>")
    forward = Pregel.edge(_DIR) == FORWARD
    # forward links carry the sender's new forward bits, reversed links its new backward bits
    send = F.when(
        forward & Pregel.src(_V)[_ANY_F], F.struct(Pregel.src(_V)[_FRESH_F].alias("f"), none.alias("b"))
    ).when(~forward & Pregel.src(_V)[_ANY_B], F.struct(none.alias("f"), Pregel.src(_V)[_FRESH_B].alias("b")))
    merged = F.struct(
        F.array(*[F.bit_or(msg["f"][i]) for i in range(words)]).alias("f"),
        F.array(*[F.bit_or(msg["b"][i]) for i in range(words)]).alias("b"),
    )

    def word(i: Column) -> Column:
        # word i after the superstep, from the bits that arrived and those seen before
        got_f, got_b = F.coalesce(msg["f"][i], zero), F.coalesce(msg["b"][i], zero)
        seen_f, seen_b = v[_SEEN_F][i], v[_SEEN_B][i]
        new_f, new_b = got_f.bitwiseAND(F.bitwise_not(seen_f)), got_b.bitwiseAND(F.bitwise_not(seen_b))
        odd = new_f.bitwiseAND(seen_b).bitwiseOR(seen_f.bitwiseAND(new_b))
        return F.struct(
            seen_f.bitwiseOR(got_f).alias(_SEEN_F),
            seen_b.bitwiseOR(got_b).alias(_SEEN_B),
            new_f.alias(_FRESH_F),
            new_b.alias(_FRESH_B),
            odd.alias("odd"),
            new_f.bitwiseAND(new_b).bitwiseAND(F.bitwise_not(odd)).alias("even"),
        )

    def state(w: Column) -> Column:
        # the new ``v`` from the words; computed once per vertex (bound as a lambda argument)
        field = lambda name: F.transform(w, lambda x: x[name])  # noqa: E731
        touched = F.struct((v[_STEP] + 1).alias("step"), field("odd").alias("odd"), field("even").alias("even"))
        return F.struct(
            field(_SEEN_F).alias(_SEEN_F),
            field(_SEEN_B).alias(_SEEN_B),
            field(_FRESH_F).alias(_FRESH_F),
            field(_FRESH_B).alias(_FRESH_B),
            F.exists(w, lambda x: x[_FRESH_F] != 0).alias(_ANY_F),
            F.exists(w, lambda x: x[_FRESH_B] != 0).alias(_ANY_B),
            F.when(F.exists(w, lambda x: (x["odd"] != 0) | (x["even"] != 0)), F.concat(v[_MET], F.array(touched)))
            .otherwise(v[_MET])
            .alias(_MET),
            (v[_STEP] + 1).alias(_STEP),
        )

    words_after = F.transform(F.sequence(F.lit(0), F.lit(words - 1)), word)
    quiet = F.struct(
        v[_SEEN_F],
        v[_SEEN_B],
        zeros.alias(_FRESH_F),
        zeros.alias(_FRESH_B),
        F.lit(False).alias(_ANY_F),
        F.lit(False).alias(_ANY_B),
        v[_MET],
        (v[_STEP] + 1).alias(_STEP),
    )
    update = F.when(msg.isNull(), quiet).otherwise(
        F.aggregate(F.array(F.lit(0)), words_after, lambda acc, _: acc, state)
    )
    init = F.col(_INIT)
    start = F.struct(
        F.coalesce(init[_SEEN_F], zeros).alias(_SEEN_F),
        F.coalesce(init[_SEEN_B], zeros).alias(_SEEN_B),
        F.coalesce(init[_FRESH_F], zeros).alias(_FRESH_F),
        F.coalesce(init[_FRESH_B], zeros).alias(_FRESH_B),
        F.coalesce(_nonzero(init[_FRESH_F]), F.lit(False)).alias(_ANY_F),
        F.coalesce(_nonzero(init[_FRESH_B]), F.lit(False)).alias(_ANY_B),
        F.array().cast(_MET_TYPE).alias(_MET),
        F.lit(step).alias(_STEP),
    )
    return (
        g.pregel.setMaxIter(supersteps)
        .setCheckpointInterval(1)  # a local checkpoint every superstep keeps each plan short
        .setUseLocalCheckpoints(True)
        .setSkipMessagesFromNonActiveVertices(True)
        .setInitialActiveVertexExpression(F.coalesce(_nonzero(init[_FRESH_F]) | _nonzero(init[_FRESH_B]), F.lit(False)))
        # a vertex that received bits may have new ones; one that sends checks ``any_f``/``any_b``
        .setUpdateActiveVertexExpression(msg.isNotNull())
        .required_src_columns(_V)
        .sendMsgToDst(send)
        .aggMsgs(merged)
        .withVertexColumn(_V, start, update)
        .run()
    )


def _met(result: DataFrame, words: int, pairs: int) -> np.ndarray:
    """Per pair, the smallest length at which its searches touched in this run (0: they did not)."""
    rows = (
        result.select(F.explode(f"{_V}.{_MET}").alias("m"))
        .select("m.step", F.posexplode(F.arrays_zip("m.odd", "m.even")).alias("w", "x"))
        .groupBy("step", "w")
        .agg(F.bit_or("x.odd").alias("odd"), F.bit_or("x.even").alias("even"))
        .collect()
    )
    found = np.zeros(pairs, dtype=np.int32)
    # longest first, so that each pair keeps its shortest length
    for step, w, odd, even in sorted(rows, key=lambda r: -r["step"]):
        for bits, length in ((even, 2 * step), (odd, 2 * step - 1)):
            word = np.zeros(words, dtype=np.int64)
            word[w] = bits
            found[_unpack(word, pairs)] = length
    return found


def _frontier_bits(result: DataFrame, words: int) -> np.ndarray:
    """Per word, the bits of the pairs whose forward and backward frontiers are both non-empty."""
    f, b = (
        result.select(F.posexplode(F.arrays_zip(f"{_V}.{_FRESH_F}", f"{_V}.{_FRESH_B}")).alias("w", "x"))
        .groupBy("w")
        .agg(F.bit_or(f"x.{_FRESH_F}").alias("f"), F.bit_or(f"x.{_FRESH_B}").alias("b"))
        .toPandas()
        .set_index("w")
        .reindex(range(words), fill_value=0)[["f", "b"]]
        .to_numpy(np.int64)
        .T
    )
    return f & b


def _masks(ids: np.ndarray, words: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ids and, per id, ``words`` longs: bit ``j % 64`` of word ``j // 64`` set for each pair ``j`` there."""
    j = np.arange(ids.size)
    table = pd.DataFrame({ID: ids, "w": j // WORD, "bit": np.uint64(1) << (j % WORD).astype(np.uint64)})
    by = table.groupby([ID, "w"])["bit"].agg(np.bitwise_or.reduce).unstack("w", fill_value=np.uint64(0))
    by = by.reindex(columns=range(words), fill_value=np.uint64(0))
    return by.index.to_numpy(np.int64), by.to_numpy(np.uint64).view(np.int64)


def _pack(flags: np.ndarray, words: int) -> list[int]:
    """Booleans per pair as ``words`` signed longs (pair ``j`` = bit ``j % 64`` of word ``j // 64``)."""
    padded = np.zeros(words * WORD, dtype=bool)
    padded[: flags.size] = flags
    return [int(x) for x in np.packbits(padded.reshape(words, WORD), axis=1, bitorder="little").view(np.int64).ravel()]


def _unpack(words: np.ndarray, pairs: int) -> np.ndarray:
    """The inverse of :func:`_pack`: a boolean per pair."""
    raw = np.asarray(words, dtype=np.int64).astype("<i8").view(np.uint8)
    return np.unpackbits(raw, bitorder="little")[:pairs].astype(bool)


def _zeros(words: int) -> Column:
    return F.array_repeat(F.lit(0).cast("long"), words)


def _nonzero(bits: Column) -> Column:
    return F.exists(bits, lambda x: x != 0)


def _and(a: Column, b: Column) -> Column:
    return F.zip_with(a, b, lambda x, y: x.bitwiseAND(y))


# --- the measured steps (each in its own process) ------------------------------------------------
def _session():
    from wikigame_spark.session import build_session

    memory = os.environ.get("BENCH_DRIVER_MEMORY", "4g")
    return build_session(
        "bench_sampling", conf={"spark.ui.showConsoleProgress": "false", "spark.driver.memory": memory}
    )


def step_sample(graph: str, method: str, games: int, games_out: str) -> dict:
    from wikigame_spark.config import SampleGamesConfig
    from wikigame_spark.graph import distances
    from wikigame_spark.graph.frame import read_graph
    from wikigame_spark.graph.sampling import sample_games

    spark = _session()
    if method == "pregel":
        distances.DataFrameSearch = PregelSearch
    g = read_graph(spark, graph)
    cfg = SampleGamesConfig(graph=graph, games=games, seed=1, method="local" if method == "local" else "graphframes")
    t0 = time.perf_counter()
    sampled = sample_games(g.nodes, g.edges, cfg)
    rows = sampled.games.toPandas()
    total = time.perf_counter() - t0
    search = sampled.timings["search"]
    rows.to_parquet(games_out, index=False)
    c = sampled.counts
    return {
        "method": method,
        "games": c["games"],
        "draws": c["draws"],
        "resolved_draws": c["resolved_draws"],
        "searched": c["searched"],
        "share_decided_by_reachability": round(c["decided_by_reachability"] / c["draws"], 4),
        "discarded_by": c["discarded_by"],
        "optimal_steps": c["optimal_steps"],
        "prepare_s": round(sampled.timings["prepare"], 1),
        "search_s": round(search, 1),
        "total_s": round(total, 1),
        "exact_pairs_per_s_search": round(c["resolved_draws"] / search, 2),
        "games_per_s_total": round(c["games"] / total, 2),
    }


def step_components(graph: str) -> dict:
    from wikigame_spark.graph import frame

    spark = _session()
    g = frame.read_graph(spark, graph)
    out = {"method": "components"}
    for name, find in (("scc", frame.strong_components), ("wcc", frame.weak_components)):
        t0 = time.perf_counter()
        sizes = frame.component_sizes(find(g.nodes, g.edges)).collect()
        out.update({f"{name}_s": round(time.perf_counter() - t0, 1), f"{name}_count": len(sizes)})
        out[f"largest_{name}"] = int(sizes[0]["size"])
    return out


def step_shortest_paths(graph: str, games_in: str, pairs: int) -> dict:
    """GraphFrames' shortestPaths from every vertex to a batch of the games' targets (landmarks)."""
    import pandas as pd
    from pyspark.sql import functions as F

    from wikigame_spark.graph import frame

    spark = _session()
    g = frame.read_graph(spark, graph)
    games = pd.read_parquet(games_in).head(pairs)
    t0 = time.perf_counter()
    sp = frame.graphframe(g.nodes, g.edges).shortestPaths(landmarks=[int(t) for t in games["target"]])
    wanted = [int(s) for s in games["source"]]
    rows = sp.filter(F.col("id").isin(wanted)).select("id", F.explode("distances")).collect()
    elapsed = time.perf_counter() - t0
    found = {(r[0], r[1]): r[2] for r in rows}
    got = [found.get((int(s), int(t)), -1) for s, t in zip(games["source"], games["target"])]
    return {
        "method": "shortest-paths",
        "pairs": len(games),
        "search_s": round(elapsed, 1),
        "exact_pairs_per_s_search": round(len(games) / elapsed, 2),
        "agrees_with_local": got == games["optimal_steps"].tolist(),
    }


def step_python(graph: str, games_in: str, pairs: int) -> dict:
    """The paper's way: adjacency lists, one breadth-first search per pair from the source."""
    import pandas as pd
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    edges = pq.read_table(f"{graph}/edges")
    src = edges.column("src").to_numpy()
    dst = edges.column("dst").to_numpy()
    del edges
    order = np.argsort(src, kind="stable")
    bounds = np.searchsorted(src[order], np.arange(int(src.max()) + 2))
    targets = dst[order]
    adjacency = {i: targets[bounds[i] : bounds[i + 1]].tolist() for i in range(bounds.size - 1)}
    del src, dst, order, targets
    build = time.perf_counter() - t0
    games = pd.read_parquet(games_in).head(pairs)

    def bfs(s: int, t: int) -> int:
        seen = {s}
        queue = collections.deque([(s, 0)])
        while queue:
            u, d = queue.popleft()
            for v in adjacency.get(u, ()):
                if v == t:
                    return d + 1
                if v not in seen:
                    seen.add(v)
                    queue.append((v, d + 1))
        return -1

    t1 = time.perf_counter()
    found = [bfs(int(s), int(t)) for s, t in zip(games["source"], games["target"])]
    search = time.perf_counter() - t1
    return {
        "method": "python_per_pair_bfs",
        "pairs": len(found),
        "build_s": round(build, 1),
        "search_s": round(search, 1),
        "pairs_per_s": round(len(found) / search, 2),
        "agrees_with_local": bool(np.array_equal(np.array(found), games["optimal_steps"].to_numpy())),
    }


def same_games(reference: str, other: str) -> bool:
    """Whether ``other``'s games are the first games of ``reference`` (same seed, same draws)."""
    import pandas as pd

    a, b = pd.read_parquet(reference), pd.read_parquet(other)
    return bool(a.head(len(b)).equals(b))


def bench_size(out: str, n: int, m: int, a: argparse.Namespace) -> dict:
    """Every method on one generated graph."""
    graph = os.path.join(out, f"scalefree-{n}-{m}")
    report: dict = {"graph": graph}
    if not os.path.exists(f"{graph}/manifest.json"):
        t = time.perf_counter()
        generate(graph, n, m)
        report["generate_s"] = round(time.perf_counter() - t, 1)
    games = {k: os.path.join(out, f"games-{n}-{m}-{k}.parquet") for k in ("local", "graphframes", "pregel")}
    sample = ["--graph", graph, "--step", "sample"]
    report["local"] = run_measured(
        [*sample, "--method", "local", "--games", str(a.games), "--games-file", games["local"]]
    )
    print(json.dumps(report["local"]), flush=True)
    for method in a.methods.split(","):
        if method in ("graphframes", "pregel"):
            args = [*sample, "--method", method, "--games", str(a.distributed_games), "--games-file", games[method]]
            report[method] = run_measured(args)
            report[method]["games_identical_to_local"] = same_games(games["local"], games[method])
        elif method == "components":
            report[method] = run_measured(["--graph", graph, "--step", method])
        else:
            pairs = a.landmarks if method == "shortest-paths" else a.python_pairs
            args = ["--graph", graph, "--step", method, "--games-file", games["local"], "--pairs", str(pairs)]
            report[method] = run_measured(args)
        print(json.dumps(report[method]), flush=True)
    if "graphframes" in report and "pregel" in report:
        ratio = report["pregel"]["exact_pairs_per_s_search"] / report["graphframes"]["exact_pairs_per_s_search"]
        report["pregel_over_dataframe_bfs"] = round(ratio, 2)
    return report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="100000:1000000,1000000:34000000", help="NODES:EDGES,…")
    p.add_argument("--methods", default="graphframes,pregel,shortest-paths,components,python")
    p.add_argument("--games", type=int, default=10_000)
    # 1,600 games: a first chunk of ~2,000 reachable draws, one batch of the searches (bfs_batch_pairs)
    p.add_argument("--distributed-games", type=int, default=1600)
    p.add_argument("--landmarks", type=int, default=64, help="shortest-paths: games whose targets are landmarks")
    p.add_argument("--python-pairs", type=int, default=5)
    p.add_argument("--out", default=os.path.join(ROOT, "out", "bench"))
    p.add_argument("--step", help=argparse.SUPPRESS)
    p.add_argument("--graph", help=argparse.SUPPRESS)
    p.add_argument("--method", help=argparse.SUPPRESS)
    p.add_argument("--games-file", help=argparse.SUPPRESS)
    p.add_argument("--pairs", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()

    steps = {
        "sample": lambda: step_sample(a.graph, a.method, a.games, a.games_file),
        "components": lambda: step_components(a.graph),
        "shortest-paths": lambda: step_shortest_paths(a.graph, a.games_file, a.pairs),
        "python": lambda: step_python(a.graph, a.games_file, a.pairs),
    }
    if a.step:
        print(json.dumps(steps[a.step]()))
        return
    os.makedirs(a.out, exist_ok=True)
    report: dict = {"cores": os.cpu_count(), "sizes": {}}
    for size in a.sizes.split(","):
        n, m = (int(x) for x in size.split(":"))
        report["sizes"][size] = r = bench_size(a.out, n, m, a)
        with open(os.path.join(a.out, "bench_sampling.json"), "w") as f:
            json.dump(report, f, indent=2)
        rates = [
            f"{k} {v['exact_pairs_per_s_search']}"
            for k, v in r.items()
            if isinstance(v, dict) and "exact_pairs_per_s_search" in v
        ]
        ratio = (
            f"; Pregel candidate / DataFrame BFS {r['pregel_over_dataframe_bfs']}x"
            if "pregel_over_dataframe_bfs" in r
            else ""
        )
        print(f"bench_sampling: {n} nodes, {m} edges: exact pairs/s " + ", ".join(rates) + ratio, flush=True)


if __name__ == "__main__":
    main()
