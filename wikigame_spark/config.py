"""Settings declared once: a frozen dataclass per job whose fields make the flags, YAML keys and help.

A field is a :func:`setting` (default, help, whether required, its choices, its flag's name). The
job runner turns the fields into ``argparse`` flags (:func:`add_flags`), reads ``--config`` YAML and
the flags given into the dataclass (:func:`load_config`: flags override YAML, unknown keys and bad
values fail naming the key and the file) and logs it flattened (:func:`flatten`, secrets left out).
Agents declare their options the same way (``wikigame_spark.agents.options``). This module knows
no agent, stage or store.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import yaml

from wikigame_spark import protocols
from wikigame_spark.protocols import LLM_WIKIRACE, PROTOCOLS

CONF_DIR = os.environ.get(
    "WIKIGAME_CONF_DIR", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conf")
)

T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration value or combination that cannot work; the message says what to change."""


def setting(
    default: Any,
    help: str,
    *,
    required: bool = False,
    choices: tuple | None = None,
    flag: str | None = None,
    plays: bool = True,
) -> Any:
    """A field of a settings dataclass: its default, its flag's help, whether it must be given,
    the values it may take, its flag (default ``--name-with-dashes``), and whether it changes what
    is made (a resumed play run must keep those) or only how fast."""
    metadata = {"help": help, "required": required, "choices": choices, "flag": flag, "plays": plays}
    if isinstance(default, (list, dict, set)):
        raise TypeError("settings are frozen: give a tuple, not a mutable default")
    return dataclasses.field(default=default, metadata=metadata)


def positive(settings: Any, *names: str) -> None:
    """Each named setting is above 0, else :class:`ConfigError` naming its flag."""
    for name in names:
        value = getattr(settings, name)
        if not value > 0 or (isinstance(value, float) and math.isinf(value)):
            raise ConfigError(f"{flag_of(settings, name)} {value}: must be a positive number")


def non_negative(settings: Any, *names: str) -> None:
    """Each named setting is 0 or more (and finite), else :class:`ConfigError`."""
    for name in names:
        value = getattr(settings, name)
        if not value >= 0 or (isinstance(value, float) and math.isinf(value)):
            raise ConfigError(f"{flag_of(settings, name)} {value}: must be a finite number, 0 or more")


def flag_of(cls_or_settings: Any, name: str) -> str:
    """The flag of setting ``name`` (``--name-with-dashes`` unless the field names another)."""
    cls = cls_or_settings if isinstance(cls_or_settings, type) else type(cls_or_settings)
    for f in dataclasses.fields(cls):
        if f.name == name:
            return f.metadata.get("flag") or "--" + name.replace("_", "-")
    return "--" + name.replace("_", "-")


def _plain_hint(hint: Any) -> tuple[Any, bool]:
    """``(type, optional)`` for a field's type hint (``int | None`` → ``(int, True)``)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint):
        return next(a for a in typing.get_args(hint) if a is not type(None)), True
    return hint, False


def coerce(name: str, value: Any, hint: Any, source: str) -> Any:
    """``value`` as the field's type, else :class:`ConfigError` naming the key and ``source``."""
    hint, optional = _plain_hint(hint)
    if value is None and optional:
        return None
    if typing.get_origin(hint) is tuple:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{source}: {name} must be a list of strings, got {value!r}")
        return tuple(value)
    if hint is bool and not isinstance(value, bool):
        raise ConfigError(f"{source}: {name} must be true or false, got {value!r}")
    if hint is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{source}: {name} must be an integer, got {value!r}")
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{source}: {name} must be a number, got {value!r}")
        return float(value)
    if hint is str and not isinstance(value, str):
        raise ConfigError(f"{source}: {name} must be a string, got {value!r}")
    return value


# --- Flags --------------------------------------------------------------------------------------
def _help(f: dataclasses.Field) -> str:
    """The setting's help, its default added unless the text already says it."""
    text = f.metadata.get("help") or ""
    if f.metadata.get("required"):
        return f"{text} (required)"
    if "default" in text:
        return text
    if f.default not in ("", None, (), False, 0) or (f.default == 0 and not isinstance(f.default, bool)):
        shown = ",".join(f.default) if isinstance(f.default, tuple) else f.default
        return f"{text} (default {shown})"
    return text


def add_flags(parser: argparse.ArgumentParser | Any, cls: type, skip: tuple[str, ...] = ()) -> None:
    """A flag per setting of ``cls`` (``--top-k`` for ``top_k``): booleans are ``--x/--no-x``,
    lists take one or more values (and the flag may repeat), choices are listed; every flag's
    default is None so that only the flags given override the YAML."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip or f.metadata.get("flag") is False or "help" not in f.metadata:
            continue
        hint, _ = _plain_hint(hints[f.name])
        flag = f.metadata.get("flag") or "--" + f.name.replace("_", "-")
        kwargs: dict[str, Any] = {"dest": f.name, "default": None, "help": _help(f)}
        if hint is bool and f.name.startswith("no_"):  # a switch that turns something off: no --no-no-x
            kwargs["action"] = "store_const"
            kwargs["const"] = True
        elif hint is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif typing.get_origin(hint) is tuple:
            kwargs.update(action="extend", nargs="+", metavar=f.name.rstrip("s").upper())
        else:
            kwargs["type"] = hint
            if f.metadata.get("choices"):
                kwargs["choices"] = f.metadata["choices"]
                if "" in kwargs["choices"]:  # the empty value is "off", the default: not offered as a choice
                    kwargs["metavar"] = "{" + ",".join(c for c in kwargs["choices"] if c) + "}"
            else:
                kwargs["metavar"] = {int: "N", float: "X"}.get(hint, f.name.upper())
        parser.add_argument(flag, **kwargs)


# --- Loading ------------------------------------------------------------------------------------
def read_yaml(yaml_path: str | None) -> dict:
    """A YAML mapping of settings (empty without a path); unreadable or invalid YAML is a
    :class:`ConfigError` naming the file and line."""
    if not yaml_path:
        return {}
    try:
        with open(yaml_path, encoding="utf-8") as f:
            loaded = yaml.safe_load(f) or {}
    except OSError as e:
        raise ConfigError(f"--config {yaml_path}: cannot read: {e.strerror or e}") from e
    except (UnicodeDecodeError, yaml.reader.ReaderError) as e:
        raise ConfigError(f"--config {yaml_path}: not UTF-8 text (YAML settings are UTF-8): {e}") from e
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"--config {yaml_path}:{where}: not valid YAML ({problem})") from e
    if not isinstance(loaded, dict):
        raise ConfigError(f"--config {yaml_path}: expected a mapping of settings, got {type(loaded).__name__}")
    return loaded


# A settings class may hold one nested options dataclass chosen by another setting (a play job's
# agent options, chosen by ``agent``): this callback names that field, the chosen class and every
# other class's option names, so that a YAML file may list other agents' defaults.
Nested = Callable[[dict, dict], tuple[str, type | None, dict[str, Callable[[Any, str], None]]]]


def load_config(
    cls: type[T], yaml_path: str | None = None, overrides: dict | None = None, nested: Nested | None = None
) -> T:
    """Build ``cls`` from a YAML file (optional) and flag overrides (None values are ignored),
    presets of its ``protocol`` applied first; then required settings, choices and ``validate()``."""
    hints = typing.get_type_hints(cls)
    loaded = read_yaml(yaml_path)
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    field_name, chosen, others = nested(loaded, overrides) if nested else ("", None, {})
    names = {f.name for f in dataclasses.fields(cls)} - {field_name}
    option_hints = typing.get_type_hints(chosen) if chosen else {}
    known = names | set(option_hints)
    unknown = sorted(set(loaded) - known - set(others))
    if unknown:
        raise ConfigError(f"--config {yaml_path}: unknown setting(s) {unknown}; valid: {sorted(known)}")
    values: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for source, given in ((f"--config {yaml_path}", loaded), ("command line", overrides)):
        for k, v in given.items():
            if k in names:
                values[k] = coerce(k, v, hints[k], source)
            elif k in option_hints:
                options[k] = coerce(k, v, option_hints[k], source)
            elif k in others:
                others[k](v, source)
            else:
                raise ConfigError(f"{flag_of(cls, k)} is not a setting of {cls.__name__}")
    protocol = values.get("protocol")
    if chosen is not None:
        values[field_name] = check_settings(chosen(**{**protocols.preset(chosen, protocol), **options}))
    return check_settings(cls(**{**protocols.preset(cls, protocol), **values}))


def check_settings(settings: T) -> T:
    """Required settings given, values among their choices, then the class's own ``validate()``."""
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if f.metadata.get("required") and value in ("", None, ()):
            key = f.name
            raise ConfigError(f"{flag_of(settings, f.name)} is required (or `{key}:` in the --config YAML)")
        choices = f.metadata.get("choices")
        if choices and value not in choices:
            raise ConfigError(f"{flag_of(settings, f.name)}: {value!r} is not one of {', '.join(map(str, choices))}")
    validate = getattr(settings, "validate", None)
    if validate:
        validate()
    return settings


def flatten(cfg: Any, secrets: tuple[str, ...] = ("api_key", "key", "secret", "token", "password")) -> dict:
    """Config as a flat dict for MLflow params and manifests, secrets removed; a nested options
    dataclass (an agent's) is flattened into it."""
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
    """The package's ``conf/<job>.yaml`` (or ``$WIKIGAME_CONF_DIR``'s) if it exists."""
    path = os.path.join(CONF_DIR, f"{job}.yaml")
    return path if os.path.isfile(path) else None


_PLAIN_NAME = re.compile(r"^[^/\\\x00-\x1f]+$")


def check_run_name(name: str) -> None:
    """Run names are used in paths: no ``/``, ``\\``, ``..``, control characters or edge spaces
    (empty: the job chooses one)."""
    if name and (not _PLAIN_NAME.match(name) or ".." in name or name.strip() != name):
        raise ConfigError(f"--run-name {name!r} is used in paths; give a plain name (no '/', '..' or edge spaces)")


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


# --- The jobs' settings -------------------------------------------------------------------------
# One dataclass per job; the stages take them as they are. Paths left empty get the job's default
# (the graph's own folders) from the runner.
DISTANCE_METHODS = ("auto", "local", "graphframes")
SEED_HELP = "seed; the same inputs, seed and settings give the same result"
EXPERIMENT_HELP = "MLflow experiment (default $MLFLOW_EXPERIMENT_NAME, else wikigame)"
OVERWRITE_HELP = "replace a finished output; the old one stays readable until the new one is complete"


def _seed(settings: Any) -> None:
    if not 0 <= settings.seed < 1 << 63:
        raise ConfigError(f"--seed: must be an integer from 0 to 2**63-1, got {settings.seed}")


@dataclass(frozen=True)
class WikipediaBuildConfig:
    """``jobs/build_wikipedia.py``: dumps → nodes/edges/redirects."""

    inputs: tuple[str, ...] = setting(
        (), "dump files, folders or globs: one wiki's split dump files build one graph", required=True, flag="--input"
    )
    output: str = setting("", "graph folder to write (local, hdfs://, s3a://, dbfs:/)", required=True)
    language: str = setting("", "the graph's language code, kept per node (default: from the dump's xml:lang / dbname)")
    method: str = setting("fast", "link and summary extraction", choices=("fast", "reference"))
    max_text_bytes: int = setting(8 << 20, "articles with more wikitext are rejected and counted")
    task_bytes: int = setting(
        64 << 20, "compressed bytes per task of a .bz2 dump (whole multistream streams, or bzip2 blocks)", plays=False
    )
    max_redirect_hops: int = setting(32, "longer redirect chains are counted as cycles")
    summary_chars: int = setting(1000, "characters kept of each article's summary")
    summary: str = setting(
        "paper",
        "each article's summary: the paper's stripped wikitext, or clean (file, category and "
        "interlanguage links, media tags and table markup left out)",
        choices=("paper", "clean"),
    )
    allow_empty: bool = setting(False, "write a graph without articles instead of failing")
    overwrite: bool = setting(False, OVERWRITE_HELP)

    def validate(self) -> None:
        positive(self, "max_text_bytes", "task_bytes", "max_redirect_hops", "summary_chars")


@dataclass(frozen=True)
class OpenAlexBuildConfig:
    """``jobs/build_openalex.py``: an OpenAlex works snapshot → one citation graph per field."""

    input: str = setting(
        "",
        "one snapshot: its folder (every part file under it) or one file, s3://bucket/prefix, or a Hadoop URI",
        required=True,
    )
    fields: tuple[str, ...] = setting(
        (), "primary-topic field, e.g. Medicine (repeat or list)", required=True, flag="--field"
    )
    output: str = setting("", "folder of the field graphs, one per field under it", required=True)
    language: str = setting(
        "",
        "language code recorded per node (nodes are not filtered; sample_games --target-language picks targets by it)",
    )
    endpoint_url: str = setting("", "S3-compatible endpoint other than AWS (path-style addressing)")
    format: str = setting(
        "auto", "which copy of the snapshot to read (auto: Parquet when present)", choices=("auto", "parquet", "jsonl")
    )
    allow_partial: bool = setting(False, "warn, not fail, on a snapshot whose files differ from its manifest")
    include_xpac: bool = setting(False, "keep XPAC works (is_xpac)")
    allow_empty: bool = setting(False, "write field graphs without nodes instead of failing")
    overwrite: bool = setting(False, OVERWRITE_HELP)

    def validate(self) -> None:
        if len(set(self.fields)) != len(self.fields):
            raise ConfigError(f"--field: {list(self.fields)} names a field twice")
        if self.language and not re.fullmatch(r"[a-z]{2,3}(-[A-Za-z0-9]+)*", self.language):
            raise ConfigError(f"--language: {self.language!r} is not a language code such as 'en'")
        if self.endpoint_url and not re.match(r"https?://", self.endpoint_url):
            raise ConfigError(f"--endpoint-url: {self.endpoint_url!r} must start with http:// or https://")


@dataclass(frozen=True)
class GraphStatsConfig:
    """``jobs/graph_stats.py``: the paper's Table 1 row and Figure 1B for one graph."""

    graph: str = setting("", "graph folder (nodes/, edges/, manifest.json)", required=True)
    output: str = setting("", "statistics folder (default GRAPH/stats)")
    pairs: int = setting(1000, "random pairs for the reachability curve")
    seed: int = setting(0, SEED_HELP)
    method: str = setting(
        "auto", "distance method (auto: local when the graph fits the driver)", choices=DISTANCE_METHODS
    )
    bfs_batch_pairs: int = setting(8192, "graphframes method: pairs searched together", plays=False)
    cache_dir: str = setting(
        "", "where the local method's mapped graph files are made (default GRAPH/cache)", plays=False
    )
    experiment: str = setting("", EXPERIMENT_HELP)
    overwrite: bool = setting(False, OVERWRITE_HELP)

    def validate(self) -> None:
        positive(self, "pairs", "bfs_batch_pairs")
        _seed(self)


@dataclass(frozen=True)
class SampleGamesConfig:
    """``jobs/sample_games.py``: reachable (source, target) pairs with exact optimal lengths."""

    PRESETS: ClassVar[dict] = {LLM_WIKIRACE: {"largest_scc": True, "stratify": "3-4,5-6,7-8"}}

    graph: str = setting("", "graph folder (nodes/, edges/, manifest.json)", required=True)
    output: str = setting("", "games folder (default GRAPH/games)")
    games: int = setting(0, "number of games (default: one per node of the graph, at most 10,000)")
    seed: int = setting(0, SEED_HELP)
    target_language: str = setting("", "targets only from nodes whose `language` is this code (OpenAlex)")
    targets_where: str = setting("", "targets only from nodes matching this SQL, e.g. 'page_id > 70000000'")
    stratify: str = setting("", "equal numbers of games per optimal-length band, e.g. 3-4,5-6,7-8")
    largest_scc: bool = setting(False, "sources and targets only from the largest strongly connected component")
    degree_quantiles: int = setting(
        0,
        "share the games equally among the k x k cells of the target's in-degree and the source's out-degree "
        "quantiles (over nodes with in-links / links; within each --stratify band); 0 = off",
    )
    method: str = setting(
        "auto", "distance method (auto: local when the graph fits the driver)", choices=DISTANCE_METHODS
    )
    bfs_batch_pairs: int = setting(8192, "graphframes method: pairs searched together", plays=False)
    cache_dir: str = setting(
        "", "where the local method's mapped graph files are made (default GRAPH/cache)", plays=False
    )
    max_draws: int = setting(0, "give up after this many draws (0: 1000 x games + 100000)")
    protocol: str = setting(
        "paper",
        "the study whose defaults apply (llm-wikirace: largest SCC, bands 3-4,5-6,7-8)",
        choices=PROTOCOLS,
    )
    experiment: str = setting("", EXPERIMENT_HELP)
    overwrite: bool = setting(False, OVERWRITE_HELP)

    def validate(self) -> None:
        positive(self, "bfs_batch_pairs")
        non_negative(self, "games", "degree_quantiles")
        if self.degree_quantiles == 1:
            raise ConfigError("--degree-quantiles 1: ask for at least 2 quantiles, or 0 for none")
        _seed(self)
        if self.max_draws < 0 or 0 < self.max_draws < self.games:
            raise ConfigError(
                f"--max-draws: must be 0 (automatic) or at least --games {self.games}, got {self.max_draws}"
            )
        bands = self.strata()
        if bands and 0 < self.games < len(bands):
            raise ConfigError(
                f"--games: {self.games} is fewer than the {len(bands)} bands of --stratify {self.stratify!r}"
            )

    def strata(self) -> tuple[tuple[int, int], ...]:
        """``stratify`` as sorted ``(low, high)`` step bands, inclusive; empty when not stratified."""
        return parse_bands(self.stratify, "--stratify")

    def draw_limit(self) -> int:
        return self.max_draws or 1000 * self.games + 100_000


@dataclass(frozen=True)
class PlayConfig:
    """``jobs/play_games.py``: agents play sampled games; plays Parquet + an MLflow run.

    The settings every agent shares; the chosen agent's own are its options class's
    (``agent_options``, registered with the agent: e.g. ``TfidfOptions``, ``LlmOptions``)."""

    PRESETS: ClassVar[dict] = {LLM_WIKIRACE: {"max_steps": 30, "allow_revisits": True}}

    graph: str = setting("", "graph folder (nodes, edges; its games by default)", required=True)
    agent: str = setting("", "agent name (see the agent options below)", required=True)
    model: str = setting("", "model name or path (sentence-transformers, or the LLM's name); default: the agent's")
    use_titles: bool = setting(False, "compare link titles, not summaries")
    games: int | None = setting(None, "play the first N games (default: all)")
    games_dir: str = setting("", "games folder (default GRAPH/games)")
    protocol: str = setting(
        "paper",
        "the study whose defaults apply: paper (100 steps, no revisits, 200 titles) or "
        "llm-wikirace (30 steps, revisits, every title)",
        choices=PROTOCOLS,
    )
    max_steps: int = setting(100, "step limit (llm-wikirace: 30)")
    allow_revisits: bool = setting(
        False, "offer visited pages too; a deterministic agent back in a state ends with `loop`"
    )
    seed: int = setting(0, SEED_HELP)
    experiment: str = setting("", EXPERIMENT_HELP)
    run_name: str = setting(
        "", "run name; the same name resumes an interrupted run (default from agent, model, seed, games)"
    )
    output: str = setting("", "plays folder (default GRAPH/plays/RUN_NAME)")
    overwrite: bool = setting(False, OVERWRITE_HELP)
    cache_dir: str = setting("", "embedding and vocabulary cache (default GRAPH/cache)", plays=False)
    chunk_games: int = setting(1000, "games per resumable chunk")
    partitions: int = setting(0, "Spark tasks per chunk of games (0: twice the default parallelism)", plays=False)
    agent_options: Any = dataclasses.field(default=None)  # the chosen agent's options (the play job fills it)

    def validate(self) -> None:
        positive(self, "max_steps", "chunk_games")
        _seed(self)
        if self.games is not None and self.games <= 0:
            raise ConfigError(f"--games {self.games}: must be a positive number (omit it to play every game)")
        non_negative(self, "partitions")
        check_run_name(self.run_name)


@dataclass(frozen=True)
class ReportConfig:
    """``jobs/report.py``: the play runs of an experiment → tables, fits, figures, report run."""

    experiment: str = setting("", EXPERIMENT_HELP)
    runs: tuple[str, ...] = setting((), "only these MLflow run ids (default: every finished play run)")
    output: str = setting("", "report folder (default out/report/EXPERIMENT)")
    overwrite: bool = setting(False, "replace an output folder that is not an earlier report")
    run_name: str = setting("report", "name of the report's MLflow run")
    human_cutoff: int = setting(10, "human games: more steps above optimal than this are unknown")
    human_mode: str = setting(
        "truncated", "how the unknown human games enter the fit", choices=("truncated", "censored")
    )
    bands: str = setting("1-2,3-4,5-6,7-8", "difficulty bands by optimal steps; games in none are 'other'")
    strict: bool = setting(False, "fail on a play run that cannot be evaluated instead of leaving it out")

    def validate(self) -> None:
        parse_bands(self.bands, "--bands")
        positive(self, "human_cutoff")
        if not self.run_name:
            raise ConfigError("--run-name: give a name for the report's MLflow run")


@dataclass(frozen=True)
class HumanImportConfig:
    """``jobs/import_human_games.py``: a TSV of human games → plays (agent ``human``) + a run."""

    graph: str = setting("", "graph folder the games were played on (nodes, redirects)", required=True)
    tsv: str = setting("", "TSV of human games (local path or any Hadoop URI)", required=True)
    experiment: str = setting("", EXPERIMENT_HELP)
    run_name: str = setting("human", "run name")
    output: str = setting("", "plays folder (default GRAPH/plays/RUN_NAME)")
    overwrite: bool = setting(False, OVERWRITE_HELP)

    def validate(self) -> None:
        if not self.run_name:
            raise ConfigError("--run-name: give a run name")
        check_run_name(self.run_name)


_HUMAN_RUN_NAME = re.compile(r"[\w][\w.-]{0,99}")


@dataclass(frozen=True)
class HumanPlayConfig:
    """``jobs/human_play.py``: people play the games in the browser; their games become a play run."""

    graph: str = setting("", "graph folder (nodes, edges; its games by default), on local disk", required=True)
    games_dir: str = setting("", "games folder (default GRAPH/games)")
    host: str = setting("127.0.0.1", "address to listen on")
    port: int = setting(8050, "port to listen on")
    time_limit: float = setting(600.0, "seconds per game, 0 for none")
    max_steps: int = setting(100, "step limit, as for agents")
    experiment: str = setting("", EXPERIMENT_HELP)
    run_name: str = setting("human-play", "run name; the same name resumes the run")

    def validate(self) -> None:
        if not _HUMAN_RUN_NAME.fullmatch(self.run_name):
            raise ConfigError(f"--run-name {self.run_name!r}: letters, digits, . - _ only (it names a folder)")
        if not 0 < self.port < 65536:
            raise ConfigError(f"--port {self.port}: not a port (1-65535)")
        non_negative(self, "time_limit")
        positive(self, "max_steps")
