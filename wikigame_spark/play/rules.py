"""The rules of a move, one definition for agents (the engine) and people (the arena).

A player at a page is offered its out-links minus the pages already visited (the paper), or all
of them (``allow_revisits``, LLM-WikiRace). With ``allow_back`` the browser's back button is a
move too: the page before the current one in the player's history is offered as well, and moving
to it is a back move (it counts as a step) that shortens the history, where a link move extends
it. At the source there is nothing to go back to. Whether a move was a back move follows from the
route alone (:meth:`Walk.replay`), so plays keep no column for it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from wikigame_spark.graph.worker_graph import WorkerGraph


@dataclass(frozen=True)
class Rules:
    """What a player may do at a page (the play job's and the human play's settings)."""

    allow_revisits: bool = False
    allow_back: bool = False

    @classmethod
    def of_params(cls, params: dict) -> Rules:
        """The rules a play run was logged with (MLflow params, as strings)."""
        return cls(params.get("allow_revisits") == "True", params.get("allow_back") == "True")


PAPER_RULES = Rules()  # no revisits, no back button


def offered_links(graph: WorkerGraph, route: Sequence[int], allow_revisits: bool = False) -> np.ndarray:
    """The out-links of ``route[-1]`` a player may follow, ascending node ids: minus the pages
    already visited unless revisits are allowed."""
    links = graph.out_links(route[-1])
    if allow_revisits or not links.size:
        return links
    return links[~np.isin(links, route)]


class Walk:
    """A player's position: the route so far and the history the back button walks."""

    __slots__ = ("back_moves", "history", "route", "rules")

    def __init__(self, source: int, rules: Rules) -> None:
        self.rules = rules
        self.route = [int(source)]
        self.history = [int(source)]
        self.back_moves = 0

    @property
    def current(self) -> int:
        return self.route[-1]

    @property
    def back_page(self) -> int | None:
        """Where the back button leads now (None: not allowed, or at the start of the history)."""
        return self.history[-2] if self.rules.allow_back and len(self.history) > 1 else None

    def offered(self, graph: WorkerGraph) -> np.ndarray:
        """Every page a move may go to now, ascending: the links the rules offer, and the back page."""
        links = offered_links(graph, self.route, self.rules.allow_revisits)
        back = self.back_page
        if back is None:
            return links
        i = int(np.searchsorted(links, back))
        return links if i < links.size and links[i] == back else np.insert(links, i, back)

    def move(self, node: int) -> bool:
        """Move to ``node`` (the caller checked it was offered); True when it was a back move."""
        node = int(node)
        back = node == self.back_page
        if back:
            self.history.pop()
            self.back_moves += 1
        else:
            self.history.append(node)
        self.route.append(node)
        return back

    def state(self) -> tuple:
        """What a deterministic agent's choice depends on besides the offered links: the page, and
        with the back button the history it would walk back along."""
        return (self.current, tuple(self.history)) if self.rules.allow_back else (self.current,)

    @classmethod
    def replay(cls, route: Sequence[int], rules: Rules) -> Iterator[tuple[Walk, int, bool]]:
        """Each move of ``route`` as it was made: the walk before it (do not keep it: it moves on),
        the page moved to, and whether that was a back move."""
        walk = cls(route[0], rules)
        for node in route[1:]:
            is_back = int(node) == walk.back_page
            yield walk, int(node), is_back
            walk.move(node)
