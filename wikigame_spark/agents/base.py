"""The agent interface: one batch method, output aligned with input, agents registered by name.

The engine asks every active game of a partition at once (:meth:`Agent.choose`), which is what a
pandas UDF wants and lets HTTP agents keep many requests in flight. An agent only chooses among
the links it is offered; the engine enforces the rules.

Heavy objects (models, vocabularies, clients) are built in ``__init__``, which runs once per
worker process (:func:`worker_agent`), never on the driver to be pickled.
"""

from __future__ import annotations

import abc
import json
import threading
from dataclasses import dataclass, field

import numpy as np
from pyspark.sql import SparkSession

from wikigame_spark.graph.worker_graph import WorkerGraph


@dataclass
class StepRequest:
    """What a player may see at one step of one game."""

    game_id: int
    step: int  # moves made so far
    current: int
    target: int
    offered: np.ndarray  # out-links of ``current`` (unvisited ones unless revisits are allowed), ascending ids
    route: list[int]


@dataclass
class Choice:
    """An agent's answer: a node among those offered, or no node and the outcome that ends the game."""

    node: int | None
    outcome: str | None = None
    queries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    detail: str | None = None


@dataclass(frozen=True)
class AgentSpec:
    """Everything a worker needs to build an agent: name, settings, and prepared resources."""

    name: str
    settings: dict = field(default_factory=dict)
    resources: dict = field(default_factory=dict)

    def key(self) -> str:
        return json.dumps([self.name, self.settings, self.resources], sort_keys=True, default=str)


class Agent(abc.ABC):
    """Base class: ``choose`` returns one :class:`Choice` per request, in order."""

    #: outcomes this agent can end a game with besides the engine's own
    outcomes: tuple[str, ...] = ()
    #: the choice depends only on (current page, offered links, target): a repeated state is a loop
    deterministic: bool = False

    def __init__(self, graph: WorkerGraph, settings: dict, resources: dict) -> None:
        self.graph = graph
        self.settings = settings
        self.resources = resources

    @classmethod
    def prepare(cls, spark: SparkSession, graph_dir: str, settings: dict) -> dict:
        """Driver-side preparation (e.g. an embedding cache); returns resources for the workers."""
        return {}

    @classmethod
    def identity(cls, settings: dict) -> dict:
        """What names the model behind this agent (a play run records it): name, files' digest,
        engine, chat format. Agents without a model have none."""
        return {}

    @abc.abstractmethod
    def choose(self, requests: list[StepRequest]) -> list[Choice]: ...


_REGISTRY: dict[str, type[Agent]] = {}


def register_agent(name: str):
    def add(cls: type[Agent]) -> type[Agent]:
        _REGISTRY[name] = cls
        cls.name = name
        return cls

    return add


def agent_class(name: str) -> type[Agent]:
    """The agent registered under ``name``; an unknown name lists the valid ones."""
    from wikigame_spark import agents  # noqa: F401  (registers the built-in agents)

    if name not in _REGISTRY:
        raise ValueError(f"unknown agent {name!r}; valid agents: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


_lock = threading.Lock()
_agents: dict[str, Agent] = {}


def worker_agent(spec: AgentSpec, graph: WorkerGraph) -> Agent:
    """The agent for ``spec`` on ``graph`` (the one its worker loaded), built at most once per worker process."""
    key = spec.key()
    with _lock:
        agent = _agents.get(key)
        if agent is None or agent.graph is not graph:
            _agents.clear()  # one agent per worker at a time: models are large
            agent = _agents[key] = agent_class(spec.name)(graph, spec.settings, spec.resources)
        return agent
