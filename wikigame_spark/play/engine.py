"""The game engine: the paper's rules, enforced for every agent.

The player starts at the source and knows the target. At each step it is offered what the rules
offer (:mod:`wikigame_spark.play.rules`: the current page's links minus the pages already visited,
or all of them with ``allow_revisits``, and the back button with ``allow_back``) and must pick one.
A game ends with ``success`` (the target is reached), ``step_limit`` (``max_steps`` moves made),
``dead_end`` (nothing left to offer), ``loop`` (a deterministic agent is back in a state it has
been in: page, offered links and, with the back button, history, so it would cycle to the step
limit), or an outcome the agent ends it with (e.g. an LLM's ``hallucination``).
``steps`` counts pages moved to. All active games of a partition advance together, one step
per round, so an agent sees a batch of requests at a time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame

from wikigame_spark.agents.base import Agent, AgentSpec, StepRequest, worker_agent
from wikigame_spark.graph import mapped
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.handles import GraphHandle
from wikigame_spark.outcomes import DEAD_END, INVALID_CHOICE, LOOP, STEP_LIMIT, SUCCESS
from wikigame_spark.play.prices import NO_PRICE, GamePrice
from wikigame_spark.play.rules import PAPER_RULES, Rules, Walk
from wikigame_spark.schemas import GAMES, PLAYS, PRICE, require_columns

log = logging.getLogger(__name__)


class _Game:
    __slots__ = (
        "cached_tokens",
        "completion_tokens",
        "detail",
        "game",
        "invalid_calls",
        "links",
        "outcome",
        "prompt_tokens",
        "queries",
        "reasoning_tokens",
        "seconds",
        "states",
        "walk",
    )

    def __init__(self, game: dict, rules: Rules) -> None:
        self.game = game
        self.walk = Walk(int(game["source"]), rules)
        self.states: dict[tuple, int] = {}  # (state, offered links) → the step it was first seen at
        self.outcome = SUCCESS if self.walk.current == int(game["target"]) else None
        self.queries = self.prompt_tokens = self.completion_tokens = 0
        self.cached_tokens = self.reasoning_tokens = self.invalid_calls = 0
        self.links = 0  # links offered over the game's steps (its price's share of one-off work)
        self.seconds = 0.0
        self.detail = None


def _repeats(g: _Game, offered: np.ndarray) -> bool:
    """Record the game's state; True when it was in it before (the game then ends as a loop)."""
    step = len(g.walk.route) - 1
    first = g.states.setdefault((g.walk.state(), offered.tobytes()), step)
    if first == step:
        return False
    g.detail = f"step {step} is back in the state of step {first} (page {g.walk.current}, the same links offered)"
    return True


def play_games(
    games: list[dict],
    graph: WorkerGraph,
    agent: Agent,
    max_steps: int,
    agent_name: str,
    model: str | None,
    rules: Rules = PAPER_RULES,
    price: GamePrice = NO_PRICE,
) -> list[dict]:
    """Play ``games`` (dicts with game_id, source, target, optimal_steps) to the end; PLAYS rows,
    each priced by ``price``.

    Loops are detected only for agents whose choice depends on nothing but the state
    (``Agent.deterministic``): any other agent may choose differently on a second visit. Only
    with revisits or the back button can a page (and so a state) come back, so only then are the
    states kept: they are the one per-step cost of a worker's memory.
    """
    state = [_Game(g, rules) for g in games]
    revisiting = rules.allow_revisits or rules.allow_back
    active = [g for g in state if g.outcome is None]
    while active:
        asking, requests = [], []
        for g in active:
            offered = g.walk.offered(graph)
            if offered.size == 0:
                g.outcome = DEAD_END
                continue
            if agent.deterministic and revisiting and _repeats(g, offered):
                g.outcome = LOOP
                continue
            asking.append(g)
            g.links += int(offered.size)
            route = g.walk.route
            requests.append(
                StepRequest(
                    int(g.game["game_id"]),
                    len(route) - 1,
                    route[-1],
                    int(g.game["target"]),
                    offered,
                    list(route),
                    g.walk.back_page,
                )
            )
        started = time.perf_counter()
        choices = agent.choose(requests) if requests else []
        if len(choices) != len(requests):
            raise RuntimeError(f"agent {agent_name} answered {len(choices)} of {len(requests)} requests")
        per_request = (time.perf_counter() - started) / max(len(requests), 1)
        for g, request, choice in zip(asking, requests, choices):
            g.queries += choice.queries
            g.prompt_tokens += choice.prompt_tokens
            g.completion_tokens += choice.completion_tokens
            g.cached_tokens += choice.cached_tokens
            g.reasoning_tokens += choice.reasoning_tokens
            g.invalid_calls += choice.invalid_calls
            g.seconds += choice.seconds or per_request
            if choice.node is None:
                g.outcome = choice.outcome or INVALID_CHOICE
                g.detail = choice.detail
                continue
            if choice.node not in request.offered:
                g.outcome = INVALID_CHOICE
                g.detail = f"agent chose {choice.node}, which was not offered"
                continue
            g.walk.move(choice.node)
            if choice.node == request.target:
                g.outcome = SUCCESS
            elif len(g.walk.route) - 1 >= max_steps:
                g.outcome = STEP_LIMIT
        active = [g for g in active if g.outcome is None]
    return [
        {
            "game_id": int(g.game["game_id"]),
            "agent": agent_name,
            "model": model,
            "outcome": g.outcome,
            "steps": len(g.walk.route) - 1,
            "optimal_steps": int(g.game["optimal_steps"]),
            "route": g.walk.route,
            "source": int(g.game["source"]),
            "target": int(g.game["target"]),
            "queries": g.queries,
            "prompt_tokens": g.prompt_tokens,
            "completion_tokens": g.completion_tokens,
            "seconds": g.seconds,
            "detail": g.detail,
            "cached_tokens": g.cached_tokens,
            "reasoning_tokens": g.reasoning_tokens,
            "invalid_calls": g.invalid_calls,
            PRICE: price.of(g.prompt_tokens, g.cached_tokens, g.completion_tokens, g.seconds, g.links),
        }
        for g in state
    ]


def play_stage(
    games: DataFrame,
    graph: GraphHandle,
    spec: AgentSpec,
    max_steps: int,
    partitions: int,
    model: str | None = None,
    rules: Rules = PAPER_RULES,
    price: GamePrice = NO_PRICE,
) -> DataFrame:
    """GAMES → PLAYS, games spread over ``partitions`` tasks, each played by a pandas UDF.

    Every worker process maps the graph's files (:mod:`wikigame_spark.graph.mapped`) and builds
    the agent once; nothing but the games and the spec travels from the driver. The files are
    made first, on the driver, when the graph (or its build) is new to the cache folder — the
    stage's one write, so that no worker ever reads the graph's tables into its own memory.
    """
    require_columns(games, GAMES, "play_stage(games)")
    files = mapped.ensure_graph(games.sparkSession, graph)

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        graph = mapped.mapped_graph(files)
        agent = worker_agent(spec, graph)
        for pdf in batches:
            rows = play_games(pdf.to_dict("records"), graph, agent, max_steps, spec.name, model, rules, price)
            yield pd.DataFrame(rows, columns=PLAYS.fieldNames())

    return games.select(*GAMES.fieldNames()).repartition(partitions, "game_id").mapInPandas(run, PLAYS)
