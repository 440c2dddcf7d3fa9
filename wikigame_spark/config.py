"""The settings mechanism: a job's settings are a frozen dataclass, declared beside the job's spec
(``wikigame_spark.jobs.*``), whose fields make the flags, YAML keys and help.

A field is a :func:`setting` (default, help, whether required, its choices, its flag's name). The
job runner turns the fields into ``argparse`` flags (:func:`add_flags`), reads ``--config`` YAML and
the flags given into the dataclass (:func:`load_config`: flags override YAML, unknown keys and bad
values fail naming the key and the file) and logs it flattened (:func:`flatten`, secrets left out).
Agents declare their options the same way (``wikigame_spark.agents.options``). This module knows
no job, agent, stage or store; the settings every job shares (seed, experiment, overwrite) have
their help and check here.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import yaml

from wikigame_spark import protocols

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
    changes_output: bool = True,
) -> Any:
    """A field of a settings dataclass: its default, its flag's help, whether it must be given,
    the values it may take, its flag (default ``--name-with-dashes``), and whether it changes what
    is made (a resumed play run must keep those) or only how fast."""
    metadata = {"help": help, "required": required, "choices": choices, "flag": flag, "changes_output": changes_output}
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


# --- Settings every job shares ---------------------------------------------------------------------
SEED_HELP = "seed; the same inputs, seed and settings give the same result"
EXPERIMENT_HELP = "MLflow experiment (default $MLFLOW_EXPERIMENT_NAME, else wikigame)"
OVERWRITE_HELP = "replace a finished output; the old one stays readable until the new one is complete"


def check_seed(settings: Any) -> None:
    """A ``seed`` setting Spark and numpy both take."""
    if not 0 <= settings.seed < 1 << 63:
        raise ConfigError(f"--seed: must be an integer from 0 to 2**63-1, got {settings.seed}")
