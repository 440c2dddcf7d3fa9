"""Optimal moves: every page's exact distance to a target, and the offered pages nearest it.

One backward BFS per target on the in-links (:func:`~wikigame_spark.graph.profiles.backward_distances`)
gives the distance of every page to it, so every step of every game with that target — an
expert's, an agent's, a person's — is scored by one search. An optimal move is to an offered page
at the least distance (finite); among several, the seed breaks the tie, so an expert's route (the
``oracle`` agent's, the decision records') is a function of (seed, game, step).
"""

from __future__ import annotations

import numpy as np

from wikigame_spark.graph.csr import transpose
from wikigame_spark.graph.profiles import UNREACHED, backward_distances
from wikigame_spark.graph.worker_graph import WorkerGraph


def optimal_links(offered: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """The offered pages at the least finite distance (``distance``: the target's array, by node
    id), ascending; empty when none of them reaches the target."""
    d = distance[offered]
    reach = d != UNREACHED
    if not reach.any():
        return offered[:0]
    return offered[reach & (d == d[reach].min())]


def optimal_choice(offered: np.ndarray, distance: np.ndarray, seed: int, game_id: int, step: int) -> int | None:
    """One optimal move, the tie broken by (seed, game, step); None when no offered page reaches."""
    best = optimal_links(offered, distance)
    if not best.size:
        return None
    if best.size == 1:
        return int(best[0])
    return int(best[np.random.default_rng([seed, game_id, step, 2]).integers(best.size)])


def descend(
    graph: WorkerGraph, distance: np.ndarray, source: int, target: int, seed: int, game_id: int, first_step: int = 0
) -> list[int] | None:
    """A shortest route from ``source`` to ``target`` down ``distance`` (the target's array, exact
    at least up to the source's distance; None: unreachable), each move an optimal one with ties
    broken as :func:`optimal_choice` breaks them, the first being step ``first_step`` of the game.
    A route that only descends never revisits, so it is the same under every rule of
    :mod:`~wikigame_spark.play.rules`."""
    if distance[source] == UNREACHED:
        return None
    route = [int(source)]
    step = first_step
    while route[-1] != target:
        links = graph.out_links(route[-1])
        nearer = links[distance[links] == distance[route[-1]] - 1]
        route.append(optimal_choice(nearer, distance, seed, game_id, step))
        step += 1
    return route


def expert_route(
    graph: WorkerGraph,
    in_links: tuple[np.ndarray, np.ndarray],
    source: int,
    target: int,
    seed: int,
    game_id: int,
    first_step: int = 0,
) -> list[int] | None:
    """:func:`descend` after a backward search from ``target`` stopped once the source is settled
    (which settles every page nearer the target)."""
    distance = backward_distances(*in_links, int(target), np.array([source]))
    return descend(graph, distance, source, target, seed, game_id, first_step)


def in_links(graph: WorkerGraph) -> tuple[np.ndarray, np.ndarray]:
    """The graph's in-link CSR (a pass over its links: build it once per worker)."""
    return transpose(graph.indptr, graph.indices)
