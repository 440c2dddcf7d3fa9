"""The agent interface: one batch method, output aligned with input, agents registered by name.

The engine asks every active game of a partition at once (:meth:`Agent.choose`), which is what a
pandas UDF wants and lets HTTP agents keep many requests in flight. An agent only chooses among
the links it is offered; the engine enforces the rules.

Heavy objects (models, vocabularies, clients) are built in ``__init__``, which runs once per
worker process (:func:`worker_agent`), never on the driver to be pickled.

An agent registers with its options class (a frozen dataclass of
:class:`~wikigame_spark.agents.options.AgentOptions`: defaults, validation, help); it is built from
an :class:`AgentSettings` (the play's shared settings it reads and those options, typed from the
job's flags to the workers). Adding an agent is one module and its import in ``agents/__init__.py``.
"""

from __future__ import annotations

import abc
import dataclasses
import json
import threading
import typing
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from pyspark.sql import SparkSession

from wikigame_spark.agents.options import AgentOptions
from wikigame_spark.agents.traces import TraceTarget
from wikigame_spark.config import ConfigError, add_flags, coerce
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.handles import GraphHandle


@dataclass
class StepRequest:
    """What a player may see at one step of one game."""

    game_id: int
    step: int  # moves made so far
    current: int
    target: int
    offered: np.ndarray  # what the rules offer: out-links of ``current`` (unvisited ones unless revisits are
    # allowed) and the back page, if any; ascending ids
    route: list[int]
    back: int | None = None  # where the back button leads (it is among ``offered``), when the rules offer it


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
    cached_tokens: int = 0  # of prompt_tokens, read from the server's prefix cache
    reasoning_tokens: int = 0  # of completion_tokens, spent thinking
    invalid_calls: int = 0  # replies without one valid tool call (the tool protocol)


@dataclass(frozen=True)
class AgentSettings:
    """What an agent is built from: the play's shared settings it reads, and its own options
    (an instance of the options class it registered with)."""

    options: AgentOptions = field(default_factory=AgentOptions)
    model: str = ""  # empty: the agent's default model
    use_titles: bool = False
    seed: int = 0
    cache_dir: str = ""  # empty: the graph's cache folder
    api_key: str = field(default="", repr=False)  # OPENAI_API_KEY, to the workers; never logged
    trace: TraceTarget | None = None  # the play run, for agents that trace games (agents/traces.py)


@dataclass(frozen=True)
class ModelIdentity:
    """What names the model behind an agent (a play run records it); empty for agents without one."""

    model: str = ""
    model_digest: str = ""
    llm_engine: str = ""
    chat_format: str = ""


@dataclass(frozen=True)
class AgentSpec:
    """Everything a worker needs to build an agent: name, settings, and prepared resources."""

    name: str
    settings: AgentSettings = field(default_factory=AgentSettings)
    resources: dict = field(default_factory=dict)

    def key(self) -> str:
        settings = {**dataclasses.asdict(self.settings), "options": type(self.settings.options).__name__}
        options = dataclasses.asdict(self.settings.options)
        return json.dumps([self.name, settings, options, self.resources], sort_keys=True, default=str)


# A resources key: numbers an agent's preparation measured (the embedding cache's cost).
PREPARED_METRICS = "prepared_metrics"
# A resources key: the one-off work's core-seconds per text, {"target": s, "link": s} (embedding
# caches), a game's share of which its price counts (play/prices.py).
ONE_OFF_CORE_S = "one_off_core_s"


class Agent(abc.ABC):
    """Base class: ``choose`` returns one :class:`Choice` per request, in order."""

    #: outcomes this agent can end a game with besides the engine's own
    outcomes: tuple[str, ...] = ()
    #: the choice depends only on (current page, offered links, target): a repeated state is a loop
    deterministic: bool = False
    #: a baseline that frames the others (the oracle's ceiling, the hub's heuristic): the report
    #: shows it in every table but never names it the best agent
    baseline: bool = False
    #: the model played when none is given (agents without a model: none)
    default_model: str = ""
    #: its model answers over HTTP (an LLM server): only a price for that model prices its games
    served: bool = False
    #: the agent's own settings (``register_agent`` sets them)
    options: type[AgentOptions] = AgentOptions
    name: str = ""

    def __init__(self, graph: WorkerGraph, settings: AgentSettings, resources: dict) -> None:
        self.graph = graph
        self.settings = self.checked(settings)
        self.resources = resources
        self.opts = settings.options

    @classmethod
    def checked(cls, settings: AgentSettings) -> AgentSettings:
        """``settings``, if its options are this agent's, else :class:`TypeError`."""
        if not isinstance(settings.options, cls.options):
            raise TypeError(f"agent {cls.name!r} takes {cls.options.__name__}, not {type(settings.options).__name__}")
        return settings

    @classmethod
    def configure(cls, **values: Any) -> AgentSettings:
        """Settings from keywords: the shared ones (:class:`AgentSettings`' fields) and this agent's
        options, each missing one at its default (an unknown name is a :class:`TypeError`)."""
        shared = {f.name for f in fields(AgentSettings)} - {"options"}
        options = cls.options(**{k: v for k, v in values.items() if k not in shared})
        return AgentSettings(options, **{k: v for k, v in values.items() if k in shared})

    @classmethod
    def model_of(cls, settings: AgentSettings) -> str:
        return settings.model or cls.default_model

    @classmethod
    def prepare(cls, spark: SparkSession, graph: GraphHandle, settings: AgentSettings) -> dict:
        """Driver-side preparation (e.g. an embedding cache) for the opened graph; returns resources
        for the workers, and under :data:`PREPARED_METRICS` what the preparation measured (logged
        with the run's metrics)."""
        return {}

    @classmethod
    def identity(cls, settings: AgentSettings) -> ModelIdentity:
        """What names the model behind this agent: name, files' digest, engine, chat format
        (agents without a model: the model setting, if any)."""
        return ModelIdentity(model=cls.model_of(settings))

    @classmethod
    def checks_plumbing(cls, params: dict) -> bool:
        """Whether a run logged with ``params`` (MLflow params, as strings) checks the plumbing
        rather than plays: the report keeps it out of the comparisons (the base: it plays)."""
        return False

    @classmethod
    def model_note(cls, params: dict) -> str:
        """What a report says of the model of a run logged with ``params``, e.g. that it is a base
        model (the base: nothing)."""
        return ""

    @abc.abstractmethod
    def choose(self, requests: list[StepRequest]) -> list[Choice]: ...


_REGISTRY: dict[str, type[Agent]] = {}


def register_agent(name: str, options: type[AgentOptions] = AgentOptions):
    """Register an :class:`Agent` subclass under ``name`` with its options class. A name
    registered twice, a class that is not an agent, options that are not a frozen
    :class:`AgentOptions` dataclass, or an option name another agent's options use for another
    setting (one flag, one meaning) are refused."""

    def add(cls: type[Agent]) -> type[Agent]:
        if not (isinstance(cls, type) and issubclass(cls, Agent)):
            raise TypeError(f"register_agent({name!r}): {cls!r} is not a subclass of Agent")
        if name in _REGISTRY:
            raise ValueError(
                f"agent {name!r} is registered twice: {_REGISTRY[name].__qualname__} and {cls.__qualname__}"
            )
        if not (
            isinstance(options, type) and issubclass(options, AgentOptions) and options.__dataclass_params__.frozen
        ):
            raise TypeError(f"register_agent({name!r}): options {options!r} is not a frozen AgentOptions dataclass")
        for other, agents in registered_options().items():
            shared = {f.name for f in fields(other)} & {f.name for f in fields(options)}
            if other is not options and shared:
                raise ValueError(
                    f"agent {name!r}: option(s) {sorted(shared)} of {options.__name__} are already "
                    f"{other.__name__}'s (agents {', '.join(agents)}); give them other names"
                )
        cls.name, cls.options = name, options
        _REGISTRY[name] = cls
        return cls

    return add


def registered_options() -> dict[type[AgentOptions], list[str]]:
    """Every registered options class and the agents that use it, in registration order."""
    out: dict[type[AgentOptions], list[str]] = {}
    for name, cls in _REGISTRY.items():
        out.setdefault(cls.options, []).append(name)
    return out


def registered_agents() -> dict[str, type[Agent]]:
    """The agents by name, the built-in ones registered first (importing this module runs the
    package's ``__init__`` first, which imports, and so registers, the built-in agents)."""
    return dict(_REGISTRY)


def add_option_flags(parser) -> None:
    """One ``argparse`` group per registered options class, a flag per option (``--top-k`` for
    ``top_k``), declared by the options' fields as every setting is."""
    agent = parser._option_string_actions.get("--agent")
    if agent is not None:  # the registered agents, listed and checked by argparse
        agent.choices = sorted(registered_agents())
        agent.metavar = None
    for options, agents in registered_options().items():
        title = (options.__doc__ or "").strip().splitlines()[0] if options.__doc__ else ""
        fields = dataclasses.fields(options)
        group = parser.add_argument_group(
            f"{title} (--agent {' or '.join(agents)})".strip() if fields else f"--agent {' or '.join(agents)}",
            description=None if fields else "no options of its own",
        )
        add_flags(group, options)


def agent_class(name: str) -> type[Agent]:
    """The agent registered under ``name``; an unknown name lists the valid ones."""
    known = registered_agents()
    if name not in known:
        raise ValueError(f"unknown agent {name!r}; valid agents: {', '.join(sorted(known))}")
    return known[name]


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


AGENT_OPTIONS = "agent_options"  # the field of the play settings that holds the chosen agent's options


def nested_options(loaded: dict, overrides: dict):
    """For :func:`wikigame_spark.config.load_config`: the chosen agent's options class and, for
    every other agent's option, a check that only its default is given (a YAML file may list
    defaults for every agent; another agent's setting would change nothing)."""
    agent = overrides.get("agent") or loaded.get("agent")
    chosen = agent_class(agent).options if agent else None
    others: dict[str, Any] = {}
    for options, agents in registered_options().items():
        if options is chosen:
            continue
        hints = typing.get_type_hints(options)
        for f in dataclasses.fields(options):
            others[f.name] = _only_default(f, hints[f.name], agents)
    return AGENT_OPTIONS, chosen, others


def _only_default(f: dataclasses.Field, hint: Any, agents: list[str]):
    def check(value: Any, source: str) -> None:
        if coerce(f.name, value, hint, source) != f.default:
            flag = "--" + f.name.replace("_", "-")
            raise ConfigError(f"{flag} only applies to --agent {' or '.join(agents)}")

    return check
