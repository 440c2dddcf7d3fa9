"""An agent's own settings: a frozen dataclass of :func:`option` fields, registered with the agent.

Options are declared like every job setting (:func:`wikigame_spark.config.setting`): the default,
the help of the play job's flag, and whether the option changes the plays (a resumed run must keep
it) or only how fast they are made. The play job makes a flag group per options class, checks its
YAML keys against them (:func:`wikigame_spark.jobs.play_games.load_play_config`), and gives the chosen
agent's options to the workers as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wikigame_spark.config import non_negative, positive, setting

__all__ = ["AgentOptions", "non_negative", "option", "positive"]


@dataclass(frozen=True)
class AgentOptions:
    """Base of every agent's options (an agent without options has these: none)."""

    def validate(self) -> None:
        """Raise :class:`ConfigError` naming a setting whose value cannot work (the base has none)."""

    def run_name_parts(self) -> tuple[str, ...]:
        """What a run's default name adds after the model for these options (the base: nothing)."""
        return ()

    @classmethod
    def label_parts(cls, params: dict) -> tuple[str, ...]:
        """What a report's label adds after the model for a run logged with ``params`` (its MLflow
        params, as strings): the options that change how it plays (the base: nothing)."""
        return ()


def option(default: Any, help: str, changes_output: bool = True, choices: tuple | None = None) -> Any:
    """A field of an :class:`AgentOptions` class: default, flag help, whether it changes the plays."""
    return setting(default, help, changes_output=changes_output, choices=choices)
