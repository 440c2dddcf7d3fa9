"""Reproducible games: uniformly random reachable (source, target) pairs with exact optimal lengths.

Draw ``i`` of seed ``S`` is a pure function of ``(S, i)``: two 64-bit SplitMix hashes pick a source
rank among the sources (all nodes, or the largest strongly connected component's) and a target rank
among the eligible targets (in id order). Nothing
depends on partitioning or on how many draws are resolved at once, so the same graph, seed and
options give the same games on any number of cores or executors, with either distance method.

Draws are resolved in order and a draw becomes a game when its source differs from its target,
the target is reachable, and (when stratified) its band still has room. Games are numbered in
draw order; ``draws`` is the number of draws up to and including the one that completed the set,
and every other draw in that range is counted under the reason it was discarded.

A split (:class:`Split`) draws a held-out eval set beside the train set from the same draws: a
node is held out when a hash of (split seed, id) falls below the held-out share, a draw whose
target is held out can only become an eval game and any other only a train game, so no target is
both (with ``sources_apart``, a draw whose source and target are on different sides is neither).
Each side fills its own quota, in draw order; each set numbers its games from 0.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wikigame_spark.drops import Drops
from wikigame_spark.graph.distances import PairDistances, pair_distances
from wikigame_spark.graph.profiles import degree_strata
from wikigame_spark.graph.reach import UNREACHABLE_REASONS
from wikigame_spark.schemas import DST, GAMES, ID, LANGUAGE, NODES, SRC, require_columns

log = logging.getLogger(__name__)

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
SAME_NODE = "same_node"
OUTSIDE_STRATA = "outside_strata"
STRATUM_FULL = "stratum_full"
OTHER_SPLIT = "other_split"  # a draw the other side of a split (or neither side) takes
TRAIN, EVAL = "train", "eval"


def splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's output function on uint64 values (wrapping arithmetic)."""
    z = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = z + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _uniform_below(h: np.ndarray, n: int) -> np.ndarray:
    """Map uint64 hashes to 0…n−1 through a 53-bit fraction (bias below n / 2**53)."""
    u = (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
    return np.minimum((u * n).astype(np.int64), n - 1)


def draw_ranks(seed: int, start: int, count: int, n_sources: int, n_targets: int) -> tuple[np.ndarray, np.ndarray]:
    """Source and target ranks of draws ``start … start+count−1`` of ``seed``."""
    if n_sources <= 0 or n_targets <= 0:
        raise ValueError(f"cannot draw pairs from {n_sources} sources and {n_targets} targets")
    index = np.arange(start, start + count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        base = splitmix64(np.uint64(seed)) ^ (index * np.uint64(2) * _GOLDEN)
    src = splitmix64(base)
    tgt = splitmix64(base ^ np.uint64(0xD1B54A32D192ED03))
    return _uniform_below(src, n_sources), _uniform_below(tgt, n_targets)


@dataclass
class Draws:
    """Resolved draws ``0 … len−1``: node ids and distance codes (``SAME_NODE_CODE`` for s = t)."""

    source: np.ndarray
    target: np.ndarray
    distance: np.ndarray

    def __len__(self) -> int:
        return int(self.source.size)


SAME_NODE_CODE = -100
OTHER_SPLIT_CODE = -200


def held_out(ids: np.ndarray, seed: int, share: float) -> np.ndarray:
    """Whether each node is held out for eval: a SplitMix hash of (split seed, id) below ``share``."""
    with np.errstate(over="ignore"):
        key = splitmix64(np.uint64(seed) ^ np.uint64(0x5851F42D4C957F2D))
        h = splitmix64(key ^ np.asarray(ids, dtype=np.int64).astype(np.uint64))
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53)) < share


@dataclass(frozen=True)
class Split:
    """A held-out eval set beside the train set: its size, its seed, the share of nodes held out
    (their games are eval's), and whether sources are kept apart too."""

    eval_games: int
    seed: int
    share: float
    sources_apart: bool = False

    def sides(self, source: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Each draw's side: 0 train, 1 eval, −1 neither (source and target held apart differently)."""
        t = held_out(target, self.seed, self.share)
        if not self.sources_apart:
            return t.astype(np.int8)
        s = held_out(source, self.seed, self.share)
        return np.where(s == t, t, -1).astype(np.int8)

    def describe(self, games: int) -> dict:
        return {
            "seed": self.seed,
            "held_out_share": self.share,
            "sources_apart": self.sources_apart,
            TRAIN + "_games": games,
            EVAL + "_games": self.eval_games,
        }


def on_side(distance: np.ndarray, sides: np.ndarray | None, side: int) -> np.ndarray:
    """The draws' distances as one side of a split sees them: the other side's are not its to take."""
    return distance if sides is None else np.where(sides == side, distance, OTHER_SPLIT_CODE).astype(np.int32)


def resolve_draws(oracle: PairDistances, seed: int, start: int, count: int) -> Draws:
    """Node ids and exact distances (or why not) for draws ``start … start+count−1``."""
    s_rank, t_rank = draw_ranks(seed, start, count, oracle.num_sources, oracle.num_targets)
    source = oracle.source_ids(s_rank)
    target = oracle.target_ids(t_rank)
    distance = np.full(count, SAME_NODE_CODE, dtype=np.int32)
    differ = source != target
    distance[differ] = oracle.distances(source[differ], target[differ])
    return Draws(source, target, distance)


def _concat(parts: list[Draws]) -> Draws:
    return Draws(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("source", "target", "distance")))


def eligible_targets(nodes: DataFrame, target_language: str = "", targets_where: str = "") -> DataFrame:
    """The nodes that may be targets: optionally of one language, optionally matching a SQL filter."""
    targets = nodes
    if target_language:
        if LANGUAGE not in nodes.columns:
            raise ValueError(
                f"--target-language {target_language}: the nodes table has no {LANGUAGE!r} column "
                f"(columns: {nodes.columns}); it exists in OpenAlex graphs, not Wikipedia ones"
            )
        targets = targets.filter(F.col(LANGUAGE) == target_language)
    if targets_where:
        try:
            targets = targets.filter(F.expr(targets_where))
            targets.schema  # noqa: B018 - analysis happens here; a bad column fails now, not later
        except Exception as e:  # AnalysisException / ParseException: name the flag, keep the cause
            raise ValueError(
                f"--targets-where {targets_where!r} is not a valid filter on node columns {nodes.columns}: "
                f"{str(e).splitlines()[0]}"
            ) from e
    return targets.select(ID)


@dataclass
class SampledGames:
    """The games table, the counts for its manifest, and where the time went (seconds)."""

    games: DataFrame
    counts: dict
    timings: dict
    eval_games: DataFrame | None = None  # a split's held-out set, and its counts
    eval_counts: dict | None = None


def groups_of(
    distance: np.ndarray, strata: tuple[tuple[int, int], ...], cells: np.ndarray | None = None, n_cells: int = 1
) -> tuple[np.ndarray, int]:
    """Each draw's group (its optimal-length band, crossed with its degree cell when ``cells`` is
    given), −1 for draws outside every group, and the number of groups."""
    reachable = distance > 0
    if not strata:
        band, n_bands = np.where(reachable, 0, -1), 1
    else:
        lows = np.array([lo for lo, _ in strata])
        highs = np.array([hi for _, hi in strata])
        pos = np.searchsorted(lows, distance, side="right") - 1
        band = np.where((pos >= 0) & (distance <= highs[np.maximum(pos, 0)]) & reachable, pos, -1)
        n_bands = len(strata)
    if cells is None:
        return band, n_bands
    return np.where((band >= 0) & (cells >= 0), band * n_cells + cells, -1), n_bands * n_cells


def accept(
    distance: np.ndarray,
    games: int,
    strata: tuple[tuple[int, int], ...],
    cells: np.ndarray | None = None,
    n_cells: int = 1,
    split: bool = False,
) -> tuple[np.ndarray, dict]:
    """Which draws become games, in draw order, and why the others were discarded.

    Games are shared equally among the groups (:func:`groups_of`); returns the indices of the
    accepted draws (at most ``games``) and per-reason discard counts over the draws up to the last
    accepted one (all draws if the set is incomplete); ``split``: one side of a split is counted,
    whose draws the other side takes are discarded as :data:`OTHER_SPLIT`.
    """
    band, n_groups = groups_of(distance, strata, cells, n_cells)
    stratified = bool(strata) or cells is not None
    if not stratified:
        accepted = np.flatnonzero(band == 0)[:games]
        quotas = [games]
    else:
        quotas = [games // n_groups + (1 if i < games % n_groups else 0) for i in range(n_groups)]
        accepted = np.sort(np.concatenate([np.flatnonzero(band == b)[: quotas[b]] for b in range(n_groups)]))
    complete = accepted.size == games
    draws = int(accepted[-1]) + 1 if complete else int(distance.size)
    d = distance[:draws]
    by = {SAME_NODE: int(np.sum(d == SAME_NODE_CODE))}
    by.update({name: int(np.sum(d == code)) for code, name in UNREACHABLE_REASONS.items()})
    if split:
        by[OTHER_SPLIT] = int(np.sum(d == OTHER_SPLIT_CODE))
    if stratified:
        by[OUTSIDE_STRATA] = int(np.sum((d > 0) & (band[:draws] < 0)))
        by[STRATUM_FULL] = int(np.sum(band[:draws] >= 0)) - int(accepted.size)
    counts = {
        "draws": draws,
        "games": int(accepted.size),
        "discarded": draws - int(accepted.size),
        "unreachable": sum(by[name] for name in UNREACHABLE_REASONS.values()),
        # every unreachable pair is decided from degrees and SCCs alone; only reachable ones are searched
        "decided_by_reachability": sum(by[name] for name in UNREACHABLE_REASONS.values()),
        "searched": int(np.sum(d > 0)),
        "discarded_by": Drops(by).as_dict(),
        "band_quotas": quotas,
        "band_games": [int(np.sum(band[accepted] == b)) for b in range(len(quotas))],
    }
    return accepted, counts


def _next_chunk(
    done: int, distance: np.ndarray, games: int, strata, limit: int, cells: np.ndarray | None = None, n_cells: int = 1
) -> int:
    """How many more draws to resolve: enough, at the rate seen so far, to finish (plus margin)."""
    _, counts = accept(distance, games, strata, cells, n_cells)
    need = np.array(counts["band_quotas"]) - np.array(counts["band_games"])
    if done == 0:
        guess = int(games * 1.25) + 256  # a first chunk of a few hundred also fits small sets
    else:
        band, n_groups = groups_of(distance, strata, cells, n_cells)
        hits = np.bincount(band[band >= 0], minlength=n_groups)
        rate = np.maximum(hits, 1) / done
        guess = int(np.max(need / rate) * 1.2) + 64
        guess = max(guess, done // 2) if np.any(hits == 0) else guess
    return int(min(max(guess, 64), limit - done))


@dataclass
class DegreeStrata:
    """Quantile strata of the targets' in-degree and the sources' out-degree over all the graph's
    nodes (the report's popularity strata): a draw's cell is ``target stratum × k + source stratum``."""

    quantiles: int
    node_ids: np.ndarray
    in_stratum: np.ndarray
    out_stratum: np.ndarray
    in_cuts: np.ndarray
    out_cuts: np.ndarray

    @property
    def cells(self) -> int:
        return self.quantiles * self.quantiles

    def cell(self, source: np.ndarray, target: np.ndarray) -> np.ndarray:
        s = np.searchsorted(self.node_ids, source)
        t = np.searchsorted(self.node_ids, target)
        return self.in_stratum[t] * self.quantiles + self.out_stratum[s]

    def describe(self) -> dict:
        return {
            "quantiles": self.quantiles,
            "target_in_degree_cuts": [float(c) for c in self.in_cuts],
            "source_out_degree_cuts": [float(c) for c in self.out_cuts],
        }


def degree_strata_of(nodes: DataFrame, edges: DataFrame, quantiles: int) -> DegreeStrata:
    """Every node's in- and out-degree quantile stratum (Spark counts the degrees)."""
    ins = edges.groupBy(F.col(DST).alias(ID)).agg(F.count(F.lit(1)).alias("in_degree"))
    outs = edges.groupBy(F.col(SRC).alias(ID)).agg(F.count(F.lit(1)).alias("out_degree"))
    table = (
        nodes.select(ID)
        .join(ins, ID, "left")
        .join(outs, ID, "left")
        .fillna(0, ["in_degree", "out_degree"])
        .orderBy(ID)
        .toPandas()
    )
    in_stratum, in_cuts = degree_strata(table["in_degree"].to_numpy(), quantiles)
    out_stratum, out_cuts = degree_strata(table["out_degree"].to_numpy(), quantiles)
    return DegreeStrata(quantiles, table[ID].to_numpy(np.int64), in_stratum, out_stratum, in_cuts, out_cuts)


def _games_table(draws: Draws, accepted: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "game_id": np.arange(accepted.size, dtype=np.int64),
            "source": draws.source[accepted].astype(np.int64),
            "target": draws.target[accepted].astype(np.int64),
            "optimal_steps": draws.distance[accepted].astype(np.int32),
        }
    )


def sample_games(
    nodes: DataFrame,
    edges: DataFrame,
    cfg: Any,
    graph_dir: str | None = None,
    degree_quantiles: int = 0,
    split: Split | None = None,
) -> SampledGames:
    """``cfg.games`` games on the graph ``nodes``/``edges`` (see the module doc for the rules;
    ``cfg``: the sample_games job's settings, :class:`~wikigame_spark.jobs.sample_games.SampleGamesConfig`);
    ``graph_dir``, the directory they were read from, lets the local method map its files.

    ``degree_quantiles`` k ≥ 2 shares the games equally among the k × k cells of the target's
    in-degree quantile and the source's out-degree quantile over all the graph's nodes (within each
    optimal-length band when ``cfg`` asks for bands); 0 leaves popularity free. ``split`` draws a
    held-out eval set beside them (:class:`Split`), under the same bands and cells."""
    require_columns(nodes, NODES, "sample_games(nodes)")
    require_columns(edges, [SRC, DST], "sample_games(edges)")
    started = time.perf_counter()
    targets = eligible_targets(nodes, cfg.target_language, cfg.targets_where)
    oracle = pair_distances(
        nodes,
        edges,
        targets if (cfg.target_language or cfg.targets_where) else None,
        cfg.method,
        cfg.largest_scc,
        cfg.bfs_batch_pairs,
        graph_dir,
        cfg.cache_dir or None,
    )
    where = " in the largest strongly connected component" if cfg.largest_scc else ""
    if oracle.num_targets == 0:
        raise ValueError(f"no node{where} passes the target filters (--target-language / --targets-where)")
    if oracle.num_sources < 2:
        raise ValueError(f"the graph has {oracle.num_sources} node(s){where}; a game needs two")
    if degree_quantiles and degree_quantiles < 2:
        raise ValueError(f"--degree-quantiles {degree_quantiles}: ask for at least 2 quantiles, or 0 for none")
    degrees = degree_strata_of(nodes, edges, degree_quantiles) if degree_quantiles else None
    n_cells = degrees.cells if degrees else 1
    prepared = time.perf_counter()
    strata = cfg.strata()
    limit = cfg.draw_limit()
    wanted = [cfg.games] if split is None else [cfg.games, split.eval_games]
    names = [""] if split is None else [f"{TRAIN} ", f"{EVAL} "]
    parts: list[Draws] = []
    done = 0
    while True:
        resolved = _concat(parts) if parts else Draws(*(np.empty(0, t) for t in (np.int64, np.int64, np.int32)))
        cells = degrees.cell(resolved.source, resolved.target) if degrees else None
        sides = split.sides(resolved.source, resolved.target) if split else None
        seen = [on_side(resolved.distance, sides, k) for k in range(len(wanted))]
        found = [accept(d, n, strata, cells, n_cells, split is not None) for d, n in zip(seen, wanted)]
        if done:  # the games the draws resolved so far make (draws resolve in batches: some go unused)
            for name, n, (_, counts) in zip(names, wanted, found):
                complete = counts["games"] == n
                unused = f" (complete at draw {counts['draws']}: the {done - counts['draws']} after it unused)"
                log.info("sample_games: %d draws resolved, %d of %d %sgames%s", done, counts["games"], n, name,
                         unused if complete else "")  # fmt: skip
        short = [k for k, (n, (_, counts)) in enumerate(zip(wanted, found)) if counts["games"] < n]
        if not short:
            break
        if done >= limit:
            name, n, counts = names[short[0]], wanted[short[0]], found[short[0]][1]
            bands = "".join(
                f"; band {lo}-{hi} has {got} of {want}"
                for (lo, hi), got, want in zip(strata, counts["band_games"], counts["band_quotas"])
            )
            if degrees:
                empty = sum(1 for got, want in zip(counts["band_games"], counts["band_quotas"]) if got < want)
                bands = f"; {empty} of {len(counts['band_quotas'])} cells of degree quantiles (and bands) are short"
            raise ValueError(
                f"only {counts['games']} of {n} {name}games after {done} draws (max_draws){bands}: the graph "
                "has too few reachable pairs of that kind; lower --games, change --stratify or "
                "--degree-quantiles, or raise --max-draws"
                + (" (or raise --eval-share: the held-out nodes' pairs are eval's)" if name else "")
            )
        chunk = max(_next_chunk(done, seen[k], wanted[k], strata, limit, cells, n_cells) for k in short)
        parts.append(resolve_draws(oracle, cfg.seed, done, chunk))
        done += chunk
    searched = time.perf_counter()
    draws = _concat(parts)
    shared = {
        "method": oracle.method,
        "resolved_draws": done,
        "eligible_targets": oracle.num_targets,
        "sources": oracle.num_sources,
        "largest_scc": cfg.largest_scc,
        "largest_scc_nodes": oracle.giant_size,
        "strata": [f"{lo}-{hi}" for lo, hi in strata],
        **({"degree_strata": degrees.describe()} if degrees else {}),
    }
    sets = []
    for accepted, counts in found:
        table = _games_table(draws, accepted)
        steps, freq = np.unique(table["optimal_steps"], return_counts=True)
        counts.update({**shared, "optimal_steps": {int(k): int(v) for k, v in zip(steps, freq)}})
        sets.append((nodes.sparkSession.createDataFrame(table, GAMES).coalesce(1), counts))
    timings = {"prepare": prepared - started, "search": searched - prepared}
    (games, counts), *held = sets
    if not held:
        return SampledGames(games=games, counts=counts, timings=timings)
    return SampledGames(games, counts, timings, eval_games=held[0][0], eval_counts=held[0][1])
