"""Job configuration: one frozen dataclass per job, from ``conf/*.yaml`` plus command-line flags.

Unknown keys and invalid values fail at load time with a message naming the key and the file.
Flags override YAML; the flattened config is what gets logged (secrets excluded).
"""

from __future__ import annotations

import dataclasses
import os
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, TypeVar

import yaml

CONF_DIR = os.environ.get(
    "WIKIGAME_CONF_DIR", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conf")
)

T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration value or combination that cannot work; the message says what to change."""


@dataclass(frozen=True)
class WikipediaBuildConfig:
    """``jobs/build_wikipedia.py``: dumps → nodes/edges/redirects."""

    inputs: tuple[str, ...] = ()
    output: str = ""
    lang: str = ""
    overwrite: bool = False
    method: str = "fast"
    max_text_bytes: int = 8 << 20
    multistream_task_bytes: int = 64 << 20
    max_redirect_hops: int = 32
    summary_chars: int = 1000
    allow_empty: bool = False  # write a graph without articles instead of failing

    def validate(self) -> None:
        if not self.inputs:
            raise ConfigError("inputs: give at least one dump file, directory or glob (--input)")
        if not self.output:
            raise ConfigError("output: give an output directory (--output)")
        if self.method not in ("fast", "reference"):
            raise ConfigError(f"method: {self.method!r} is not one of 'fast', 'reference'")
        for name in ("max_text_bytes", "multistream_task_bytes", "max_redirect_hops", "summary_chars"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name}: must be positive, got {getattr(self, name)}")


def _coerce(name: str, value: Any, hint: Any, source: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint):
        if value is None:
            return None
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
        origin = typing.get_origin(hint)
    if origin is tuple:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{source}: {name} must be a list, got {value!r}")
        return tuple(value)
    if hint is bool and not isinstance(value, bool):
        raise ConfigError(f"{source}: {name} must be true or false, got {value!r}")
    if hint is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{source}: {name} must be an integer, got {value!r}")
    if hint is float and not isinstance(value, (int, float)):
        raise ConfigError(f"{source}: {name} must be a number, got {value!r}")
    if hint is str and not isinstance(value, str):
        raise ConfigError(f"{source}: {name} must be a string, got {value!r}")
    return value


@dataclass(frozen=True)
class AgentOptions:
    """An agent's own settings, registered with it (``register_agent(name, options=…)``).

    Subclasses are frozen dataclasses of :func:`option` fields: the default, the help of the
    job's flag, and whether the setting changes the plays (a resumed run must keep it) or only
    how fast they are made. ``jobs/play_games.py`` makes its flags from them, its YAML keys are
    checked against them, and a play run's record lists them (:func:`agent_settings_record`).
    """

    def validate(self) -> None:
        """Raise :class:`ConfigError` naming a setting whose value cannot work (the base has none)."""


def option(default: Any, help: str, plays: bool = True) -> Any:
    """A field of an :class:`AgentOptions` class: default, flag help, whether it changes the plays."""
    return dataclasses.field(default=default, metadata={"help": help, "plays": plays})


def positive(settings: Any, *names: str) -> None:
    """Each named setting of ``settings`` (a config or options) is above 0, else :class:`ConfigError`."""
    for name in names:
        if getattr(settings, name) <= 0:
            raise ConfigError(f"{name}: must be positive, got {getattr(settings, name)}")


def non_negative(settings: Any, *names: str) -> None:
    """Each named setting of ``settings`` is 0 or more, else :class:`ConfigError`."""
    for name in names:
        if getattr(settings, name) < 0:
            raise ConfigError(f"{name}: must be 0 or more, got {getattr(settings, name)}")


AGENT_OPTIONS = "agent_options"  # the field of a job config that holds its agent's options


def _read_yaml(yaml_path: str | None) -> dict:
    if not yaml_path:
        return {}
    try:
        with open(yaml_path, encoding="utf-8") as f:
            loaded = yaml.safe_load(f) or {}
    except OSError as e:
        raise ConfigError(f"{yaml_path}: cannot read config: {e}") from e
    if not isinstance(loaded, dict):
        raise ConfigError(f"{yaml_path}: expected a mapping of settings, got {type(loaded).__name__}")
    return loaded


def _agent_options(cls: type, loaded: dict, overrides: dict) -> tuple[type | None, dict[str, list[str]]]:
    """For a config with agent options: the chosen agent's options class, and every other
    registered option's name → the agents it belongs to."""
    if AGENT_OPTIONS not in {f.name for f in dataclasses.fields(cls)}:
        return None, {}
    from wikigame_spark.agents.base import agent_class, registered_agents, registered_options

    registered_agents()  # the built-in agents, registered on import
    agent = overrides.get("agent") or loaded.get("agent")
    chosen = agent_class(agent).options if agent else None
    others: dict[str, list[str]] = {}
    for options, agents in registered_options().items():
        if options is not chosen:
            for f in dataclasses.fields(options):
                others.setdefault(f.name, []).extend(agents)
    return chosen, others


def load_config(cls: type[T], yaml_path: str | None = None, overrides: dict | None = None) -> T:
    """Build ``cls`` from a YAML file (optional) and flag overrides (None values are ignored).

    A config with agent options (``PlayConfig``) takes the chosen agent's settings too, into
    its :data:`AGENT_OPTIONS`; a setting of another agent is refused unless it is that agent's
    default (a YAML file may list defaults for every agent)."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)} - {AGENT_OPTIONS}
    loaded = _read_yaml(yaml_path)
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    chosen, others = _agent_options(cls, loaded, overrides)
    option_hints = typing.get_type_hints(chosen) if chosen else {}
    known = names | set(option_hints)
    unknown = sorted(set(loaded) - known - set(others))
    if unknown:
        raise ConfigError(f"{yaml_path}: unknown setting(s) {unknown}; valid: {sorted(known)}")
    values: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for source, given in ((yaml_path, loaded), ("command line", overrides)):
        for k, v in given.items():
            if k in names:
                values[k] = _coerce(k, v, hints[k], source)
            elif k in option_hints:
                options[k] = _coerce(k, v, option_hints[k], source)
            elif k in others:
                _check_not_set(k, v, others[k], source)
            else:
                raise ConfigError(f"flag --{k.replace('_', '-')} is not a setting of {cls.__name__}")
    protocol = values.get("protocol")
    if chosen is not None:
        values[AGENT_OPTIONS] = chosen(**{**protocol_preset(chosen, protocol), **options})
    cfg = cls(**{**protocol_preset(cls, protocol), **values})
    validate = getattr(cfg, "validate", None)
    if validate:
        validate()
    return cfg


def _check_not_set(name: str, value: Any, agents: list[str], source: str) -> None:
    """Another agent's setting: only its default may be given (it would change nothing)."""
    from wikigame_spark.agents.base import agent_class

    owner = agent_class(agents[0]).options
    default = next(f.default for f in dataclasses.fields(owner) if f.name == name)
    if _coerce(name, value, typing.get_type_hints(owner)[name], source) != default:
        flag = name.replace("_", "-")
        raise ConfigError(f"{name} (--{flag}) only applies to --agent {' or '.join(agents)}")


def flatten(cfg: Any, secrets: tuple[str, ...] = ("api_key", "key", "secret", "token", "password")) -> dict:
    """Config as a flat dict of strings for MLflow params and manifests, secrets removed; nested
    options (an agent's) are flattened into it."""
    out = {}
    for f in dataclasses.fields(cfg):
        if any(s in f.name.lower() for s in secrets):
            continue
        v = getattr(cfg, f.name)
        if dataclasses.is_dataclass(v):
            out.update(flatten(v, secrets))
        else:
            out[f.name] = ",".join(map(str, v)) if isinstance(v, tuple) else v
    return out


def default_yaml(job: str) -> str | None:
    """``conf/<job>.yaml`` if it exists."""
    path = os.path.join(CONF_DIR, f"{job}.yaml")
    return path if os.path.isfile(path) else None


def job_config(cls: type[T], job: str, args) -> T:
    """A job's settings: ``--config`` (default ``conf/<job>.yaml``), then every flag that was given."""
    overrides = {k: v for k, v in vars(args).items() if k != "config"}
    return load_config(cls, args.config or default_yaml(job), overrides)


__all__ = ["AGENT_OPTIONS", "AgentOptions", "ConfigError", "WikipediaBuildConfig", "default_yaml", "flatten"]
__all__ += ["job_config", "load_config", "non_negative", "option", "positive"]
__all__ += ["PROTOCOLS", "check_protocol", "check_run_name", "parse_bands", "protocol_preset"]


# --- Protocols (--protocol): each study's defaults in one word; YAML and flags still override ----
# The dataclass defaults are the paper's. LLM-WikiRace (Ziomek et al., 2026): games in the largest
# strongly connected component, equal numbers per difficulty band, 30 steps, revisits allowed,
# every out-link shown.
PROTOCOLS: dict[str, dict[str, dict[str, Any]]] = {
    "paper": {},
    "llm-wikirace": {
        "PlayConfig": {"max_steps": 30, "allow_revisits": True},
        "LlmOptions": {"max_titles": 0},
        "SampleGamesConfig": {"largest_scc": True, "stratify": "3-4,5-6,7-8"},
    },
}


def protocol_preset(cls: type, protocol: str | None) -> dict[str, Any]:
    """The settings ``protocol`` gives ``cls`` (a job's config, or an agent's options) in place of
    its defaults (none for an unknown name: ``check_protocol`` then says what is valid)."""
    if "protocol" not in {f.name for f in dataclasses.fields(cls)} and not issubclass(cls, AgentOptions):
        return {}
    return dict(PROTOCOLS.get(protocol or "paper", {}).get(cls.__name__, {}))


def check_protocol(protocol: str) -> None:
    if protocol not in PROTOCOLS:
        raise ConfigError(f"protocol: {protocol!r} is not one of {', '.join(PROTOCOLS)}")


_PLAIN_NAME = re.compile(r"^[^/\\\x00-\x1f]+$")


def check_run_name(name: str) -> None:
    """Run names are used in paths: no ``/``, ``\\``, ``..``, control characters or edge spaces
    (empty: the job chooses one)."""
    if name and (not _PLAIN_NAME.match(name) or ".." in name or name.strip() != name):
        raise ConfigError(f"run_name: {name!r} is used in paths; give a plain name (no '/', '..' or edge spaces)")


# --- Graph statistics and game sampling (jobs/graph_stats.py, jobs/sample_games.py) ------------
DISTANCE_METHODS = ("auto", "local", "graphframes")


def parse_bands(text: str, key: str) -> tuple[tuple[int, int], ...]:
    """Optimal-length bands like ``3-4,5-6,7-8`` (or ``5``) as sorted inclusive ``(low, high)``
    pairs; empty for an empty text. ``key`` names the setting in errors."""
    if not text.strip():
        return ()
    bands = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        try:
            band = (int(lo), int(hi if sep else lo))
        except ValueError as e:
            raise ConfigError(f"{key}: {part.strip()!r} is not a band like 3-4 or 5 (in {text!r})") from e
        if not 1 <= band[0] <= band[1]:
            raise ConfigError(f"{key}: band {part.strip()!r} must satisfy 1 <= low <= high")
        bands.append(band)
    bands.sort()
    for i in range(1, len(bands)):
        if bands[i][0] <= bands[i - 1][1]:
            raise ConfigError(f"{key}: bands overlap in {text!r}")
    return tuple(bands)


def _check_distance_method(cfg: Any) -> None:
    if not cfg.graph:
        raise ConfigError("graph: give a graph directory with nodes/, edges/ and manifest.json (--graph)")
    if cfg.method not in DISTANCE_METHODS:
        raise ConfigError(f"method: {cfg.method!r} is not one of {', '.join(DISTANCE_METHODS)}")
    if cfg.bfs_batch_pairs <= 0:
        raise ConfigError(f"bfs_batch_pairs: must be positive, got {cfg.bfs_batch_pairs}")
    if not 0 <= cfg.seed < 1 << 63:
        raise ConfigError(f"seed: must be an integer from 0 to 2**63-1, got {cfg.seed}")


@dataclass(frozen=True)
class GraphStatsConfig:
    """``jobs/graph_stats.py``: the paper's Table 1 row and Figure 1B for one graph."""

    graph: str = ""
    output: str = ""  # default <graph>/stats
    pairs: int = 1000
    seed: int = 0
    method: str = "auto"
    bfs_batch_pairs: int = 8192
    cache_dir: str = ""  # default <graph>/cache: where the local method's mapped files are made
    experiment: str = "graph_stats"
    overwrite: bool = False

    def validate(self) -> None:
        _check_distance_method(self)
        if self.pairs <= 0:
            raise ConfigError(f"pairs: must be positive, got {self.pairs}")


@dataclass(frozen=True)
class SampleGamesConfig:
    """``jobs/sample_games.py``: reachable (source, target) pairs with exact optimal lengths."""

    graph: str = ""
    output: str = ""  # default <graph>/games
    games: int = 10000
    seed: int = 0
    target_language: str = ""
    targets_where: str = ""
    stratify: str = ""  # e.g. "3-4,5-6,7-8": equal numbers of games per optimal-length band
    largest_scc: bool = False  # sources and targets only from the largest strongly connected component
    method: str = "auto"
    bfs_batch_pairs: int = 8192
    cache_dir: str = ""  # default <graph>/cache: where the local method's mapped files are made
    max_draws: int = 0  # 0: 1,000 × games + 100,000
    experiment: str = "sample_games"
    overwrite: bool = False
    protocol: str = "paper"  # paper | llm-wikirace (PROTOCOLS): the study whose defaults apply

    def validate(self) -> None:
        _check_distance_method(self)
        check_protocol(self.protocol)
        if self.games <= 0:
            raise ConfigError(f"games: must be positive, got {self.games}")
        if self.max_draws < 0 or 0 < self.max_draws < self.games:
            raise ConfigError(f"max_draws: must be 0 (automatic) or at least games={self.games}, got {self.max_draws}")
        bands = self.strata()
        if bands and self.games < len(bands):
            raise ConfigError(f"games: {self.games} is fewer than the {len(bands)} bands of stratify={self.stratify!r}")

    def strata(self) -> tuple[tuple[int, int], ...]:
        """``stratify`` as sorted ``(low, high)`` step bands, inclusive; empty when not stratified."""
        return parse_bands(self.stratify, "stratify")

    def draw_limit(self) -> int:
        return self.max_draws or 1000 * self.games + 100_000


__all__ += ["GraphStatsConfig", "SampleGamesConfig"]


# --- Play (jobs/play_games.py) ---------------------------------------------------------------------
@dataclass(frozen=True)
class PlayConfig:
    """``jobs/play_games.py``: agents play sampled games; plays Parquet + an MLflow run.

    The settings every agent shares; the chosen agent's own are its options class's
    (``agent_options``, registered with the agent: e.g. ``TfidfOptions``, ``LlmOptions``)."""

    graph: str = ""
    agent: str = ""
    model: str = ""  # default: the agent's own (embedding: all-MiniLM-L6-v2)
    use_titles: bool = False
    games: int | None = None  # None = every game of the games table
    games_dir: str = ""  # default <graph>/games
    max_steps: int = 100
    seed: int = 0
    experiment: str = "wikigame"
    run_name: str = ""
    output: str = ""  # default <graph>/plays/<run_name>
    overwrite: bool = False
    cache_dir: str = ""  # default <graph>/cache
    chunk_games: int = 1000
    partitions: int = 0  # 0 = twice the default parallelism
    protocol: str = "paper"  # paper | llm-wikirace (PROTOCOLS): the study whose defaults apply
    allow_revisits: bool = False  # offer visited pages too (LLM-WikiRace); a deterministic agent may loop
    agent_options: AgentOptions = AgentOptions()  # the chosen agent's (load_config fills it)

    def validate(self) -> None:
        if not self.graph:
            raise ConfigError("graph: give the graph directory (--graph)")
        check_protocol(self.protocol)
        if not self.agent:
            raise ConfigError("agent: give an agent name (--agent), e.g. embedding, tfidf, random")
        positive(self, "max_steps", "chunk_games")
        if self.games is not None and self.games <= 0:
            raise ConfigError(f"games: must be positive, got {self.games} (omit --games to play every game)")
        non_negative(self, "partitions")
        check_run_name(self.run_name)
        self.agent_options.validate()


# --- OpenAlex (jobs/build_openalex.py) -------------------------------------------------------------
OPENALEX_FORMATS = ("auto", "parquet", "jsonl")


@dataclass(frozen=True)
class OpenAlexBuildConfig:
    """``jobs/build_openalex.py``: an OpenAlex works snapshot → one citation graph per field."""

    input: str = ""  # local directory or file, s3://bucket/prefix (or s3a://), or any Hadoop URI
    fields: tuple[str, ...] = ()
    output: str = ""  # one graph per field under <output>/<field-slug>/
    language: str = ""  # recorded for game sampling (targets in this language); nodes are not filtered
    endpoint_url: str = ""  # S3-compatible server other than AWS (path-style addressing)
    format: str = "auto"  # auto: Parquet when the snapshot has it, else JSON lines
    overwrite: bool = False
    allow_partial: bool = False  # manifest entries missing or of another size/count: warn, not fail
    include_xpac: bool = False
    allow_empty: bool = False  # write a field graph without nodes instead of failing

    def validate(self) -> None:
        import re

        from wikigame_spark.ingest.openalex_records import FIELDS, field_slug

        if not self.input:
            raise ConfigError("input: give the snapshot folder, file or s3:// prefix (--input)")
        if not self.fields:
            raise ConfigError(f"fields: give at least one --field, one of: {'; '.join(FIELDS)}")
        unknown = [f for f in self.fields if f not in FIELDS]
        if unknown:
            raise ConfigError(f"fields: {unknown} not OpenAlex field names; valid: {'; '.join(FIELDS)}")
        if len(set(self.fields)) != len(self.fields):
            raise ConfigError(f"fields: {list(self.fields)} names a field twice")
        if len({field_slug(f) for f in self.fields}) != len(self.fields):
            raise ConfigError(f"fields: {list(self.fields)} give the same directory name twice")
        if not self.output:
            raise ConfigError("output: give an output directory (--output)")
        if self.format not in OPENALEX_FORMATS:
            raise ConfigError(f"format: {self.format!r} is not one of {', '.join(OPENALEX_FORMATS)}")
        if self.language and not re.fullmatch(r"[a-z]{2,3}(-[A-Za-z0-9]+)*", self.language):
            raise ConfigError(f"language: {self.language!r} is not a language code such as 'en'")
        if self.endpoint_url and not re.match(r"https?://", self.endpoint_url):
            raise ConfigError(f"endpoint_url: {self.endpoint_url!r} must start with http:// or https://")


__all__ += ["OpenAlexBuildConfig"]


# --- Evaluation (jobs/report.py, jobs/import_human_games.py) ---------------------------------------
@dataclass(frozen=True)
class ReportConfig:
    """``jobs/report.py``: the play runs of an experiment → tables, fits, figures, report run."""

    experiment: str = ""
    runs: tuple[str, ...] = ()  # MLflow run ids; empty = every finished play run of the experiment
    output: str = ""  # default out/report/<experiment>
    overwrite: bool = False  # replace an output folder that is not an earlier report
    run_name: str = "report"
    human_cutoff: int = 10  # human games: more than this many steps above optimal are unknown
    human_mode: str = "truncated"  # truncated (the paper's) | censored
    bands: str = "1-2,3-4,5-6,7-8"  # difficulty bands by optimal steps; games in none are "other"

    def validate(self) -> None:
        parse_bands(self.bands, "bands")
        if not self.experiment:
            raise ConfigError("experiment: give the MLflow experiment of the play runs (--experiment)")
        if self.human_cutoff <= 0:
            raise ConfigError(f"human_cutoff: must be positive, got {self.human_cutoff}")
        if self.human_mode not in ("truncated", "censored"):
            raise ConfigError(f"human_mode: {self.human_mode!r} is not one of 'truncated', 'censored'")
        if not self.run_name:
            raise ConfigError("run_name: give a name for the report's MLflow run (--run-name)")


@dataclass(frozen=True)
class HumanImportConfig:
    """``jobs/import_human_games.py``: a TSV of human games → plays (agent ``human``) + a run."""

    graph: str = ""
    tsv: str = ""
    experiment: str = "wikigame"
    run_name: str = "human"
    output: str = ""  # default <graph>/plays/<run_name>
    overwrite: bool = False

    def validate(self) -> None:
        if not self.graph:
            raise ConfigError("graph: give the graph directory the games were played on (--graph)")
        if not self.tsv:
            raise ConfigError("tsv: give the TSV of human games (--tsv)")
        if not self.run_name:
            raise ConfigError("run_name: give a run name (--run-name)")
        check_run_name(self.run_name)


__all__ += ["HumanImportConfig", "ReportConfig"]
