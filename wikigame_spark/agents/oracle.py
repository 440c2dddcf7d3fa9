"""``oracle``: always an optimal link — the ceiling, and a check of the whole pipeline.

It knows every page's exact distance to the target (:mod:`wikigame_spark.graph.optimal`), so on a
reachable game it succeeds in exactly the optimal number of steps under every rule; a report that
shows it anywhere else has found a fault in sampling, playing or scoring. A game's route is planned
when the agent first meets it (the distances of the links along it, one pair search each) and
followed from then on; ties are broken by (seed, game, step), as the decision records'
expert breaks them.
"""

from __future__ import annotations

import itertools

from wikigame_spark.agents.base import Agent, Choice, StepRequest, register_agent
from wikigame_spark.graph.optimal import Searches, descend
from wikigame_spark.outcomes import DEAD_END


@register_agent("oracle")
class OracleAgent(Agent):
    deterministic = True
    baseline = True

    def __init__(self, graph, settings, resources) -> None:
        super().__init__(graph, settings, resources)
        self.searches = Searches(graph)
        self.plans: dict[int, dict[int, int]] = {}  # game → page → the next page of its planned route

    def choose(self, requests: list[StepRequest]) -> list[Choice]:
        return [self._step(r) for r in requests]

    def _step(self, r: StepRequest) -> Choice:
        plan = self.plans.get(r.game_id, {})
        if r.current not in plan:
            distances = self.searches.to(r.target, 0)  # a route's few pages: pair searches
            route = descend(self.graph, distances, r.current, self.settings.seed, r.game_id, r.step)
            if route is None:
                return Choice(None, DEAD_END, detail=f"page {r.current} has no path to the target")
            plan = self.plans[r.game_id] = dict(itertools.pairwise(route))
        node = plan[r.current]
        if node == r.target:
            del self.plans[r.game_id]
        return Choice(node=node)
