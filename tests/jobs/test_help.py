"""Every job's ``--help`` as a newcomer reads it: each default said once, no flag that negates a
negation, no empty choice offered, the agents listed, every agent with a section, and a default
settings file named only where it exists."""

from __future__ import annotations

import importlib
import os
import re

import pytest

from tests.conftest import ROOT

JOBS = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "jobs")) if f.endswith(".py") and f != "__init__.py")


def options(text: str) -> list[str]:
    """Each option's help: from its flag at the line's start to the next."""
    return re.split(r"\n(?=  -)", text)


@pytest.mark.parametrize("job", JOBS)
def test_help_says_each_default_once_and_offers_no_empty_or_doubled_flag(job):
    text = importlib.import_module(f"jobs.{job}").JOB.parser().format_help()
    for option in options(text):
        assert len(re.findall(r"\(default", option)) <= 1, option
    assert "--no-no-" not in text and "{," not in text and ",}" not in text
    named = re.search(r"--config YAML\s+settings file(?: \(default\s+(\S+)\))?", text)
    assert named, text
    if named.group(1):
        assert os.path.isfile(named.group(1).rstrip(")")), named.group(1)
    else:
        assert not os.path.isfile(os.path.join(ROOT, "conf", f"{job}.yaml"))


def test_play_games_lists_its_agents_and_gives_each_a_section():
    from wikigame_spark.agents.base import registered_agents

    text = importlib.import_module("jobs.play_games").JOB.parser().format_help()
    agents = sorted(registered_agents())
    assert f"--agent {{{','.join(agents)}}}" in text
    for agent in agents:
        # agents with options: a section titled by them; agents without: one section naming them all
        assert re.search(rf"\(--agent [^)]*\b{agent}\b[^)]*\)|^--agent (?:[\w-]+ or )*{agent}\b[^:]*:", text, re.M), (
            agent
        )
    assert "--no-prefix-reuse " in text and "--constrained {grammar,json_schema}" in text
