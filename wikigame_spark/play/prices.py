"""What a game costs in money: each play's ``price_usd``, from a prices file (``--prices FILE``).

No price is claimed without one: then every play's price is null. The file (YAML, docs/llm.md, Prices)
names a price per core-hour and, per model, a price per million tokens::

    core_hour: 0.0446              # USD per core-hour of the machine that computes
    models:
      gpt-4o-mini: {input: 0.15, cached_input: 0.075, output: 0.60}
      qwen2.5-coder-0.5b-instruct: {cores: 2}   # served here, on 2 cores

A game is priced one of two ways:

* **by tokens**, for a model the file prices so (an API's list prices): the input tokens the server
  did not read from its prefix cache at ``input``, those it did at ``cached_input``, every output
  token, reasoning included (as APIs bill them), at ``output``;
* **by compute**, at ``core_hour``, for everything else: the core-seconds the game took — its
  seconds (:attr:`Choice.seconds <wikigame_spark.agents.base.Choice.seconds>`, summed over its
  steps) on one core for an agent that computes in the worker, on the ``cores`` the file gives a
  served model (a model the file does not price either way: no price) — plus its share of the
  one-off work its agent prepared (an embedding cache: the CPU seconds per text it recorded, for the
  target and every link offered to the game, what embedding them on demand would cost).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import yaml

from wikigame_spark.config import ConfigError

MILLION = 1_000_000
TOKEN_KEYS = ("input", "cached_input", "output")


@dataclass(frozen=True)
class GamePrice:
    """How one run's games are priced (built on the driver, shipped to the workers)."""

    tokens: tuple[float, float, float] | None = None  # USD per million input, cached input, output tokens
    core_hour: float | None = None  # USD per core-hour
    cores: float = 1.0  # cores a game's seconds occupy
    target_core_s: float = 0.0  # one-off core-seconds per target text
    link_core_s: float = 0.0  # one-off core-seconds per link text

    def of(self, prompt: int, cached: int, completion: int, seconds: float, links: int) -> float | None:
        """The game's price in USD; None when nothing prices it (or its seconds are unknown)."""
        if self.tokens is not None:
            inp, cached_in, out = self.tokens
            return ((prompt - cached) * inp + cached * cached_in + completion * out) / MILLION
        if self.core_hour is None or not math.isfinite(seconds):
            return None
        core_s = seconds * self.cores + self.target_core_s + links * self.link_core_s
        return core_s * self.core_hour / 3600.0

    def describe(self) -> str:
        if self.tokens is not None:
            return "per million tokens: input {}, cached input {}, output {} USD".format(*self.tokens)
        if self.core_hour is None:
            return "no price"
        return f"{self.core_hour} USD per core-hour on {self.cores:g} core(s)"


NO_PRICE = GamePrice()


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or not math.isfinite(value):
        raise ConfigError(f"{where}: must be a non-negative number, got {value!r}")
    return float(value)


def read_prices(text: str, source: str) -> dict:
    """The prices file, checked: ``core_hour`` and ``models`` (name → token prices or ``cores``)."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{source}: not YAML ({e})") from e
    if not isinstance(data, dict) or set(data) - {"core_hour", "models", "source"}:
        raise ConfigError(f"{source}: expected the keys core_hour, models (and an optional source)")
    if data.get("core_hour") is not None:
        _number(data["core_hour"], f"{source}: core_hour")
    models = data.get("models") or {}
    if not isinstance(models, dict):
        raise ConfigError(f"{source}: models must map model names to prices")
    for name, entry in models.items():
        where = f"{source}: models.{name}"
        if not isinstance(entry, dict) or not entry or set(entry) - {*TOKEN_KEYS, "cores"}:
            raise ConfigError(f"{where}: give input, cached_input and output (USD per million tokens), or cores")
        given = [k for k in TOKEN_KEYS if k in entry]
        if given and len(given) != len(TOKEN_KEYS):
            missing = ", ".join(k for k in TOKEN_KEYS if k not in given)
            raise ConfigError(f"{where}: give all of {', '.join(TOKEN_KEYS)} (missing {missing})")
        for key, value in entry.items():
            _number(value, f"{where}.{key}")
        if "cores" in entry and entry["cores"] <= 0:
            raise ConfigError(f"{where}.cores: must be positive")
    return data


def load_prices(path: str) -> dict | None:
    """The prices file at ``path`` (a local file), checked; None for no file (no price claimed)."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return read_prices(f.read(), f"--prices {path}")
    except OSError as e:
        raise ConfigError(f"--prices {path}: cannot read it ({e.strerror})") from e


def game_price(prices: dict | None, model: str, served: bool, one_off: dict | None = None) -> GamePrice:
    """How a run's games are priced: ``model`` as the file names it; ``served``: the agent's model
    answers over HTTP (:attr:`Agent.served <wikigame_spark.agents.base.Agent.served>`), so only the
    file's entry for it can price it; ``one_off``: the agent's :data:`ONE_OFF_CORE_S
    <wikigame_spark.agents.base.ONE_OFF_CORE_S>`."""
    if not prices:
        return NO_PRICE
    entry = (prices.get("models") or {}).get(model) or {}
    if all(k in entry for k in TOKEN_KEYS):
        return GamePrice(tokens=tuple(float(entry[k]) for k in TOKEN_KEYS))
    core_hour = prices.get("core_hour")
    if core_hour is None or (served and "cores" not in entry):
        return NO_PRICE
    one_off = one_off or {}
    return GamePrice(
        core_hour=float(core_hour),
        cores=float(entry.get("cores", 1.0)),
        target_core_s=float(one_off.get("target", 0.0)),
        link_core_s=float(one_off.get("link", 0.0)),
    )
