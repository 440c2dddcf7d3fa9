"""The settings mechanism (wikigame_spark/config.py) on a settings class of its own, and where the
jobs' settings live: each beside its job's spec."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
from dataclasses import dataclass
from typing import ClassVar

import pytest

from wikigame_spark import jobs
from wikigame_spark.config import (
    SEED_HELP,
    ConfigError,
    add_flags,
    check_seed,
    flag_of,
    flatten,
    load_config,
    positive,
    setting,
)


@dataclass(frozen=True)
class Study:
    """A job's settings as every job declares them."""

    PRESETS: ClassVar[dict] = {"quick": {"steps": 5}}

    graph: str = setting("", "graph folder", required=True)
    steps: int = setting(100, "step limit")
    rate: float = setting(0.5, "a rate")
    tags: tuple[str, ...] = setting((), "tags", flag="--tag")
    mode: str = setting("a", "mode", choices=("a", "b"))
    revisit: bool = setting(False, "revisit")
    protocol: str = setting("paper", "protocol", choices=("paper", "quick"))
    seed: int = setting(0, SEED_HELP)
    api_key: str = setting("", "a secret", changes_output=False)

    def validate(self) -> None:
        positive(self, "steps")
        check_seed(self)


def parse(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser()
    add_flags(parser, Study)
    return {k: v for k, v in vars(parser.parse_args(argv)).items() if v is not None}


def test_flags_override_the_yaml_which_overrides_the_preset(tmp_path):
    yaml_path = tmp_path / "study.yaml"
    yaml_path.write_text("graph: g\nsteps: 7\nrate: 2\ntags: [x, y]\n")
    from_yaml = load_config(Study, str(yaml_path), parse(["--protocol", "quick"]))
    assert (from_yaml.steps, from_yaml.rate, from_yaml.tags) == (7, 2.0, ("x", "y"))  # YAML over the preset
    flags = parse(["--graph", "h", "--steps", "9", "--tag", "z", "--revisit", "--mode", "b"])
    cfg = load_config(Study, str(yaml_path), flags)
    assert (cfg.graph, cfg.steps, cfg.tags, cfg.revisit, cfg.mode) == ("h", 9, ("z",), True, "b")
    assert load_config(Study, None, {"graph": "g", "protocol": "quick"}).steps == 5  # the preset
    assert load_config(Study, None, {"graph": "g"}).steps == 100  # the default


@pytest.mark.parametrize(
    ("yaml", "flags", "message"),
    [
        ("graph: g\nstepz: 3\n", {}, r"unknown setting\(s\) \['stepz'\]"),
        ("graph: g\nsteps: many\n", {}, r"steps must be an integer, got 'many'"),
        ("graph: g\nrevisit: yes please\n", {}, r"revisit must be true or false"),
        ("graph: [g\n", {}, r"line 2, column 1: not valid YAML \(expected .,. or .\]."),
        ("- graph\n", {}, r"expected a mapping of settings, got list"),
        ("", {}, r"--graph is required \(or `graph:` in the --config YAML\)"),
        ("graph: g\n", {"mode": "c"}, r"--mode: 'c' is not one of a, b"),
        ("graph: g\n", {"steps": 0}, r"--steps 0: must be a positive number"),
        ("graph: g\n", {"seed": -1}, r"--seed: must be an integer from 0"),
    ],
)
def test_a_bad_setting_names_its_key_and_where_it_came_from(tmp_path, yaml, flags, message):
    yaml_path = tmp_path / "study.yaml"
    yaml_path.write_text(yaml)
    with pytest.raises(ConfigError, match=message):
        load_config(Study, str(yaml_path), flags)


def test_flags_and_help_come_from_the_fields():
    parser = argparse.ArgumentParser()
    add_flags(parser, Study)
    text = parser.format_help()
    assert "--tag TAG [TAG ...]" in text and "--revisit, --no-revisit" in text and "{a,b}" in text
    assert "step limit (default 100)" in text and "graph folder (required)" in text
    assert flag_of(Study, "tags") == "--tag" and flag_of(Study, "api_key") == "--api-key"
    assert parse(["--no-revisit"]) == {"revisit": False}  # only the flags given: the YAML stays


def test_flatten_leaves_the_secrets_out():
    cfg = load_config(Study, None, {"graph": "g", "tags": ["x", "y"], "api_key": "sk-1"})
    assert flatten(cfg) == {
        "graph": "g",
        "steps": 100,
        "rate": 0.5,
        "tags": "x,y",
        "mode": "a",
        "revisit": False,
        "protocol": "paper",
        "seed": 0,
    }
    assert [f.name for f in dataclasses.fields(Study) if not f.metadata["changes_output"]] == ["api_key"]


def test_every_jobs_settings_are_beside_its_spec():
    """Adding a job is its module (settings, spec, body), its entry point and its YAML."""
    specs = jobs.specs()
    assert len(specs) == 10
    for job in specs:
        module = importlib.import_module(f"wikigame_spark.jobs.{job.name}")
        assert module.JOB is job and job.settings.__module__ == module.__name__, job.name
        assert dataclasses.is_dataclass(job.settings) and job.settings.__dataclass_params__.frozen
