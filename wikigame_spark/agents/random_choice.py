"""``random``: a uniform choice among the offered links — the floor, and the smoke-test agent."""

from __future__ import annotations

import numpy as np

from wikigame_spark.agents.base import Agent, Choice, StepRequest, register_agent


@register_agent("random")
class RandomAgent(Agent):
    """Seeded by (seed, game, step), so a game's route does not depend on how games are partitioned."""

    def choose(self, requests: list[StepRequest]) -> list[Choice]:
        seed = self.settings.seed
        out = []
        for r in requests:
            rng = np.random.default_rng([seed, r.game_id, r.step])
            out.append(Choice(node=int(r.offered[rng.integers(r.offered.size)])))
        return out
