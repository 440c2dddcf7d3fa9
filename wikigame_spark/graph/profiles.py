"""Distance profiles: the exact shortest-path distance to the target of every page of a play's route.

A play's profile is ``d(route[0]) … d(route[-1])`` with ``d(v)`` the length of a shortest path of
out-links from ``v`` to the game's target (0 at the target, :data:`UNREACHED` where none exists).
The evaluation reads from it where each move took the player (closer, same, farther), when a play
left the shortest paths, and how close a failure got.

Two exact methods over the local method's CSR (:mod:`wikigame_spark.graph.csr`), chosen per target:

- ``targets``: one backward BFS from the target on the in-links, shared by every route (of every
  run) with that target, stopped at the level where the last page asked about is settled; it costs
  about the in-links it follows, whatever the number of pages asked;
- ``pairs``: the sampler's bidirectional search for each distinct (page, target) pair, after the
  SCC condensation has settled the unreachable ones; it costs per page.

``auto`` searches a target's pages by pairs while they are fewer than ``bfs_pages`` and by one
backward BFS otherwise; ``bench/bench_profiles.py`` measures both at 1 M nodes / 32 M edges, which
sets :data:`BFS_PAGES`.

Plain numpy on plain arrays; the Spark side (reading plays, caching the profiles beside the games
set) is the evaluation's.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from pyspark.sql.types import ArrayType, IntegerType, LongType, StructField, StructType

from wikigame_spark.graph.csr import CsrGraph, positions, transpose
from wikigame_spark.graph.reach import neighbours

log = logging.getLogger(__name__)

UNREACHED = -1  # no path of out-links from the page to the target
METHODS = ("auto", "targets", "pairs")
# A backward BFS over the whole in-CSR costs about as much as this many pair searches, measured at
# 1 M nodes / 32 M edges by bench/bench_profiles.py (over 15 s a target against under 2 ms a pair);
# auto uses the cheaper per target.
BFS_PAGES = 10_000

GAME_ID = "game_id"
DISTANCES = "distances"
# One row per play of a run: the distance to the target of each page of its route, in route order.
PROFILES = StructType(
    [
        StructField(GAME_ID, LongType(), False),
        StructField(DISTANCES, ArrayType(IntegerType(), False), False),
    ]
)


def backward_distances(
    in_ptr: np.ndarray, in_idx: np.ndarray, target: int, wanted: np.ndarray | None = None
) -> np.ndarray:
    """Distance (int32) from every position to position ``target`` along out-links, found by a BFS
    backwards on the in-links; :data:`UNREACHED` where no path exists or the search stopped first.

    With ``wanted`` (positions) the search stops at the first level where all of them are settled;
    the distances of those are exact either way."""
    n = in_ptr.size - 1
    dist = np.full(n, UNREACHED, dtype=np.int32)
    dist[target] = 0
    open_ = None
    if wanted is not None:
        open_ = np.unique(np.asarray(wanted, dtype=np.int64))
        open_ = open_[dist[open_] == UNREACHED]
    front = np.array([target], dtype=np.int64)
    level = 0
    while front.size and (open_ is None or open_.size):
        level += 1
        nbrs = neighbours(in_ptr, in_idx, front)
        nbrs = np.unique(nbrs[dist[nbrs] == UNREACHED])
        dist[nbrs] = level
        front = nbrs.astype(np.int64, copy=False)
        if open_ is not None:
            open_ = open_[dist[open_] == UNREACHED]
    return dist


class ProfileGraph:
    """A graph's out-links (and, built on first use, in-links and SCCs) for distance profiles.

    ``node_ids`` sorted unique; positions 0…N−1 follow them. The arrays may be read-only maps
    (the play stage's files, :mod:`wikigame_spark.graph.mapped`); they are not copied."""

    def __init__(self, node_ids: np.ndarray, out_ptr: np.ndarray, out_idx: np.ndarray) -> None:
        self.node_ids = np.asarray(node_ids, dtype=np.int64)
        self.out_ptr, self.out_idx = out_ptr, out_idx
        self._in: tuple[np.ndarray, np.ndarray] | None = None
        self._pairs: CsrGraph | None = None

    @classmethod
    def from_mapped(cls, graph) -> ProfileGraph:
        """From a :class:`~wikigame_spark.graph.mapped.MappedGraph` (ids are 0…N−1)."""
        n = graph.indptr.size - 1
        return cls(np.arange(n, dtype=np.int64), graph.indptr, graph.indices)

    @property
    def in_links(self) -> tuple[np.ndarray, np.ndarray]:
        if self._in is None:
            self._in = transpose(self.out_ptr, self.out_idx)
        return self._in

    @property
    def in_degree(self) -> np.ndarray:
        return np.diff(self.in_links[0])

    @property
    def out_degree(self) -> np.ndarray:
        return np.diff(self.out_ptr)

    @property
    def pair_graph(self) -> CsrGraph:
        if self._pairs is None:
            self._pairs = CsrGraph(self.node_ids, self.out_ptr, self.out_idx)
        return self._pairs

    def positions(self, ids: np.ndarray) -> np.ndarray:
        return positions(self.node_ids, ids)

    def profiles(
        self,
        targets: Sequence[int] | np.ndarray,
        routes: Sequence[Sequence[int]],
        method: str = "auto",
        bfs_pages: int = BFS_PAGES,
    ) -> list[np.ndarray]:
        """The distance profile (int32, aligned with the route) of each play: ``routes[i]`` are the
        node ids a play visited in order, ``targets[i]`` its target's id."""
        if method not in METHODS:
            raise ValueError(f"distance profiles: method {method!r} is not one of {', '.join(METHODS)}")
        if len(targets) != len(routes):
            raise ValueError(f"distance profiles: {len(targets)} targets for {len(routes)} routes")
        lengths = np.array([len(r) for r in routes], dtype=np.int64)
        if not lengths.size:
            return []
        flat_ids = np.concatenate([np.asarray(r, dtype=np.int64) for r in routes] or [np.zeros(0, np.int64)])
        pages = self.positions(flat_ids).astype(np.int64)
        goal = np.repeat(self.positions(np.asarray(targets, dtype=np.int64)).astype(np.int64), lengths)
        out = np.full(pages.size, UNREACHED, dtype=np.int32)
        # Each distinct (page, target) is searched once, whichever plays and runs share it.
        n = max(self.node_ids.size, 1)
        keys, inverse = np.unique(goal * n + pages, return_inverse=True)
        key_goal, key_page = keys // n, keys % n
        found = np.full(keys.size, UNREACHED, dtype=np.int32)
        starts = np.flatnonzero(np.concatenate(([True], key_goal[1:] != key_goal[:-1]))) if keys.size else []
        bounds = list(zip(starts, [*starts[1:], keys.size]))
        by_pairs = []
        for a, b in bounds:
            t = int(key_goal[a])
            use_bfs = method == "targets" or (method == "auto" and b - a >= bfs_pages)
            if use_bfs:
                dist = backward_distances(*self.in_links, t, key_page[a:b])
                found[a:b] = dist[key_page[a:b]]
            else:
                by_pairs.append((a, b))
        if by_pairs:
            sel = np.concatenate([np.arange(a, b) for a, b in by_pairs])
            found[sel] = self.pair_distances(key_page[sel], key_goal[sel])
        out[:] = found[inverse]
        return np.split(out, np.cumsum(lengths)[:-1])

    def pair_distances(self, pages: np.ndarray, goals: np.ndarray) -> np.ndarray:
        """The distance of each position of ``pages`` to the one of ``goals`` beside it, one
        bidirectional search per pair (:data:`UNREACHED` where none)."""
        graph = self.pair_graph
        d = np.zeros(pages.size, dtype=np.int32)
        differ = pages != goals
        d[differ] = graph.distances(self.node_ids[pages[differ]], self.node_ids[goals[differ]])
        d[d < 0] = UNREACHED  # the condensation's reason codes: no path
        return d


def degree_strata(values: np.ndarray, quantiles: int) -> tuple[np.ndarray, np.ndarray]:
    """Quantile strata 0…k−1 of ``values`` (degrees) and the k − 1 cut points between them.

    The cuts are quantiles of the positive values: a page without in-links is never a target, one
    without links never a source, and counting them would fill the lowest strata with pages no
    game can use. A value equal to a cut falls in the stratum below, so equal degrees share one;
    with heavy ties a stratum can be empty, which callers report rather than hide."""
    if quantiles < 2:
        raise ValueError(f"degree strata: {quantiles} quantiles; ask for at least 2")
    values = np.asarray(values)
    positive = values[values > 0]
    probs = np.arange(1, quantiles) / quantiles
    cuts = np.quantile(positive, probs) if positive.size else np.zeros(quantiles - 1)
    return np.searchsorted(cuts, values, side="left").astype(np.int32), cuts
