"""Each step a player faced, scored: what it was offered, how far each offered page is from the
target, which were optimal, where it went and what that move was worth.

One definition for the decision records (:mod:`wikigame_spark.training.decisions`) and the report's
moves against the oracle and the hub (:mod:`wikigame_spark.evaluation.baselines`). A route is replayed
under the rules it was played by (:class:`~wikigame_spark.play.rules.Walk`), and all the routes to
one target are scored together, every page they were offered asked about at once
(:class:`~wikigame_spark.graph.optimal.Searches` finds those distances the cheaper exact way).

The graded reward is reasoning-gym's wikirace rule: 1.0 for a move to an optimal page, 0.5 for one
a step farther than that, 0.1 for two steps farther, else 0 (a page that cannot reach the target
included). ``progress`` is the other common signal: how many steps nearer the target the move
took the player (negative when it took them farther; none when the page cannot reach it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from wikigame_spark.graph.optimal import Distances, optimal_links
from wikigame_spark.graph.profiles import UNREACHED
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.play.rules import Rules, Walk

REWARDS = (1.0, 0.5, 0.1)  # by how many steps a move is farther than an optimal one
REWARD_RULE = "reasoning-gym wikirace: 1.0 optimal, 0.5 one step worse, 0.1 two steps worse, else 0"


@dataclass
class Step:
    """One move of one route, scored against the target's distances."""

    step: int  # moves made before this one
    current: int
    current_distance: int
    offered: np.ndarray  # every page the move could go to, ascending (the back page included)
    offered_distances: np.ndarray  # aligned with ``offered``; UNREACHED where none
    optimal: np.ndarray  # the offered pages at the least distance
    move: int
    move_distance: int
    back: bool  # the move was the back button

    @property
    def best_distance(self) -> int:
        return (
            int(self.offered_distances[np.searchsorted(self.offered, self.optimal[0])])
            if self.optimal.size
            else UNREACHED
        )

    @property
    def is_optimal(self) -> bool:
        return bool(self.optimal.size) and self.move_distance == self.best_distance

    @property
    def reward(self) -> float:
        if not self.optimal.size or self.move_distance == UNREACHED:
            return 0.0
        worse = self.move_distance - self.best_distance
        return REWARDS[worse] if worse < len(REWARDS) else 0.0

    @property
    def progress(self) -> int | None:
        if UNREACHED in (self.current_distance, self.move_distance):
            return None
        return self.current_distance - self.move_distance


def offered_along(graph: WorkerGraph, route: Sequence[int], rules: Rules) -> list[np.ndarray]:
    """What each move of ``route`` was chosen from (one array per move)."""
    return [walk.offered(graph) for walk, _, _ in Walk.replay(route, rules)]


def score_routes(
    graph: WorkerGraph, distances: Distances, routes: Sequence[tuple[Sequence[int], Rules]]
) -> list[list[Step]]:
    """The steps of every route to the target of ``distances`` (each route with its rules), every
    page they were offered asked about at once."""
    offers = [offered_along(graph, route, rules) for route, rules in routes]
    pages = [np.asarray(route, dtype=np.int64) for route, _ in routes]
    asked = np.unique(np.concatenate([*pages, *(o for offered in offers for o in offered)] or [np.zeros(0, np.int64)]))
    found = distances(asked)

    def of(p: np.ndarray) -> np.ndarray:
        return found[np.searchsorted(asked, p)]

    out = []
    for (route, rules), offered in zip(routes, offers):
        steps = []
        for (walk, node, back), links in zip(Walk.replay(route, rules), offered):
            d = of(links)
            steps.append(
                Step(
                    step=len(walk.route) - 1,
                    current=walk.current,
                    current_distance=int(of(np.array([walk.current]))[0]),
                    offered=links,
                    offered_distances=d,
                    optimal=optimal_links(links, d),
                    move=node,
                    move_distance=int(of(np.array([node]))[0]),
                    back=back,
                )
            )
        out.append(steps)
    return out
