"""Optimal moves: the exact distance to a target of the pages a player is offered, and the offered
pages nearest it.

The distances to one target are found the cheaper of two exact ways, as the report's distance
profiles choose (:class:`~wikigame_spark.graph.profiles.ProfileGraph`): one backward BFS on the
in-links gives every page's distance at once and costs about the links it follows, whatever the
number of pages asked; one bidirectional search per page (after the SCC condensation has settled
the unreachable ones) costs per page. :class:`Searches` takes the BFS when a target's routes ask
about :func:`bfs_pages` pages or more (the break-even, which grows with the graph), else the pair
searches (``bench/bench_decisions.py`` measures both). An optimal move is to an offered page at the least
finite distance; among several, the seed breaks the tie, so an expert's route (the ``oracle``
agent's, the decision records') is a function of (seed, game, step).
"""

from __future__ import annotations

import math

import numpy as np

from wikigame_spark.graph.profiles import UNREACHED, ProfileGraph, backward_distances
from wikigame_spark.graph.worker_graph import WorkerGraph

# A whole backward search costs about as much as this many pair searches of offered pages, measured
# at 1 M nodes / 32 M edges by bench/bench_decisions.py (1.5–1.9 s a target against 0.3–0.7 ms a
# page: offered pages, many without a path, cost more per page than a route's, hence below the
# distance profiles' BFS_PAGES); and on Wikispeedia's 4,604 pages / 119,772 links (2.4 ms a target
# against 0.062 ms a page: 38 pages).
BFS_PAGES = 3_000
BREAK_EVEN = ((119_772, 38), (32_000_000, BFS_PAGES))  # (links, pages)


def bfs_pages(links: int) -> int:
    """The pages a target's routes ask about from which one backward search is the cheaper: the
    measured break-evens (:data:`BREAK_EVEN`), a power of the links between and beyond them."""
    (l0, p0), (l1, p1) = BREAK_EVEN
    power = math.log(p1 / p0) / math.log(l1 / l0)
    return max(1, round(p0 * (max(links, 1) / l0) ** power))


def optimal_links(offered: np.ndarray, distances: np.ndarray) -> np.ndarray:
    """The offered pages at the least finite distance (``distances`` aligned with ``offered``),
    ascending; empty when none of them reaches the target."""
    reach = distances != UNREACHED
    if not reach.any():
        return offered[:0]
    return offered[reach & (distances == distances[reach].min())]


def optimal_choice(offered: np.ndarray, distances: np.ndarray, seed: int, game_id: int, step: int) -> int | None:
    """One optimal move, the tie broken by (seed, game, step); None when no offered page reaches."""
    best = optimal_links(offered, distances)
    if not best.size:
        return None
    if best.size == 1:
        return int(best[0])
    return int(best[np.random.default_rng([seed, game_id, step, 2]).integers(best.size)])


class Distances:
    """Exact distances to one target, asked for by pages: read from a whole backward search, or
    found by a pair search per page not asked before."""

    def __init__(self, profile: ProfileGraph, target: int, whole: np.ndarray | None) -> None:
        self.profile, self.target, self.whole = profile, int(target), whole
        self.known: dict[int, int] = {}

    def __call__(self, pages: np.ndarray) -> np.ndarray:
        """The distance (int32) of each of ``pages`` to the target; :data:`UNREACHED` where none."""
        pages = np.asarray(pages, dtype=np.int64)
        if self.whole is not None:
            return self.whole[pages]
        new = np.array([p for p in np.unique(pages).tolist() if p not in self.known], dtype=np.int64)
        if new.size:
            found = self.profile.pair_distances(new, np.full(new.size, self.target, dtype=np.int64))
            self.known.update(zip(new.tolist(), found.tolist()))
        return np.array([self.known[p] for p in pages.tolist()], dtype=np.int32)


class Searches:
    """A worker's searches to targets on one graph (ids 0…N−1), the in-links and the SCC
    condensation each built on first use."""

    def __init__(self, graph: WorkerGraph, bfs_at: int | None = None) -> None:
        self.graph = graph
        self.bfs_pages = bfs_pages(int(graph.indices.size)) if bfs_at is None else bfs_at
        self.profile = ProfileGraph.from_mapped(graph)

    def to(self, target: int, pages: int) -> Distances:
        """The distances to ``target`` for routes that will ask about ``pages`` pages."""
        whole = backward_distances(*self.profile.in_links, int(target)) if pages >= self.bfs_pages else None
        return Distances(self.profile, target, whole)

    def expected_pages(self, steps: int) -> int:
        """What an expert's route of ``steps`` moves asks about: the links of its pages, on average."""
        return int(steps * self.graph.indices.size / max(self.graph.indptr.size - 1, 1)) + 1


def descend(
    graph: WorkerGraph, distances: Distances, source: int, seed: int, game_id: int, first_step: int = 0
) -> list[int] | None:
    """A shortest route from ``source`` to the target of ``distances`` (None: unreachable), each move
    an optimal one with ties broken as :func:`optimal_choice` breaks them, the first being step
    ``first_step`` of the game. A route that only descends never revisits, so it is the same under
    every rule of :mod:`~wikigame_spark.play.rules`."""
    (here,) = distances(np.array([source]))
    if here == UNREACHED:
        return None
    route = [int(source)]
    step = first_step
    while here > 0:
        links = graph.out_links(route[-1])
        d = distances(links)
        nearer = d == here - 1
        route.append(optimal_choice(links[nearer], d[nearer], seed, game_id, step))
        here -= 1
        step += 1
    return route
