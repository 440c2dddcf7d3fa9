"""Job configuration: one frozen dataclass per job, from ``conf/*.yaml`` plus command-line flags.

Unknown keys and invalid values fail at load time with a message naming the key and the file.
Flags override YAML; the flattened config is what gets logged (secrets excluded).
"""

from __future__ import annotations

import dataclasses
import os
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


def load_config(cls: type[T], yaml_path: str | None = None, overrides: dict | None = None) -> T:
    """Build ``cls`` from a YAML file (optional) and flag overrides (None values are ignored)."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    values: dict[str, Any] = {}
    if yaml_path:
        try:
            with open(yaml_path, encoding="utf-8") as f:
                loaded = yaml.safe_load(f) or {}
        except OSError as e:
            raise ConfigError(f"{yaml_path}: cannot read config: {e}") from e
        if not isinstance(loaded, dict):
            raise ConfigError(f"{yaml_path}: expected a mapping of settings, got {type(loaded).__name__}")
        unknown = sorted(set(loaded) - names)
        if unknown:
            raise ConfigError(f"{yaml_path}: unknown setting(s) {unknown}; valid: {sorted(names)}")
        for k, v in loaded.items():
            values[k] = _coerce(k, v, hints[k], yaml_path)
    for k, v in (overrides or {}).items():
        if v is None:
            continue
        if k not in names:
            raise ConfigError(f"flag --{k.replace('_', '-')} is not a setting of {cls.__name__}")
        values[k] = _coerce(k, v, hints[k], "command line")
    cfg = cls(**values)
    validate = getattr(cfg, "validate", None)
    if validate:
        validate()
    return cfg


def flatten(cfg: Any, secrets: tuple[str, ...] = ("api_key", "key", "secret", "token", "password")) -> dict:
    """Config as a flat dict of strings for MLflow params and manifests, secrets removed."""
    out = {}
    for f in dataclasses.fields(cfg):
        if any(s in f.name.lower() for s in secrets):
            continue
        v = getattr(cfg, f.name)
        out[f.name] = ",".join(map(str, v)) if isinstance(v, tuple) else v
    return out


def default_yaml(job: str) -> str | None:
    """``conf/<job>.yaml`` if it exists."""
    path = os.path.join(CONF_DIR, f"{job}.yaml")
    return path if os.path.isfile(path) else None


__all__ = ["ConfigError", "WikipediaBuildConfig", "load_config", "flatten", "default_yaml"]
