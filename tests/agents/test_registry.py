"""Agents own their options: registered with the agent, refused where they do not belong, the
job's flags made from them, and a play run's record listing the shared settings and its agent's."""

from __future__ import annotations

import dataclasses

import pytest

from wikigame_spark import storage
from wikigame_spark.agents.base import (
    Agent,
    agent_class,
    register_agent,
    registered_agents,
    registered_options,
)
from wikigame_spark.agents.llm import LlmOptions
from wikigame_spark.agents.options import AgentOptions, option
from wikigame_spark.agents.tfidf import TfidfOptions
from wikigame_spark.config import ConfigError, flatten
from wikigame_spark.handles import GraphHandle
from wikigame_spark.jobs.play_games import JOB, load_play_config
from wikigame_spark.play import runs

# The settings every play run records, whatever its agent (PlayConfig's fields).
SHARED = (
    "graph agent model use_titles games games_dir max_steps seed experiment run_name output overwrite cache_dir "
    "chunk_games partitions protocol allow_revisits allow_back prices"
).split()
SHARED_PLAY_OPTIONS = "use_titles allow_revisits allow_back protocol chunk_games".split()


def test_the_registry_refuses_a_name_twice_and_a_class_that_is_not_an_agent():
    with pytest.raises(ValueError, match="agent 'tfidf' is registered twice"):
        register_agent("tfidf")(type("Other", (Agent,), {"choose": lambda self, r: []}))
    with pytest.raises(TypeError, match="is not a subclass of Agent"):
        register_agent("not-an-agent")(dict)
    with pytest.raises(TypeError, match="not a frozen AgentOptions dataclass"):
        register_agent("loose", options=dict)(type("Loose", (Agent,), {"choose": lambda self, r: []}))

    @dataclasses.dataclass(frozen=True)
    class Clash(AgentOptions):
        top_k: int = option(3, "another meaning")

    with pytest.raises(ValueError, match=r"option\(s\) \['top_k'\] of Clash are already LlmOptions's"):
        register_agent("clash", options=Clash)(type("Clash", (Agent,), {"choose": lambda self, r: []}))
    assert not {"not-an-agent", "loose", "clash"} & set(registered_agents())


def test_each_agent_has_its_options_and_the_chosen_ones_are_loaded():
    assert agent_class("tfidf").options is TfidfOptions
    assert agent_class("llm").options is agent_class("reasoning").options is LlmOptions
    assert {"llm", "reasoning"} <= set(registered_options()[LlmOptions])
    cfg = load_play_config(None, {"graph": "g", "agent": "llm", "top_k": 5, "max_titles": 30})
    assert cfg.agent_options == LlmOptions(top_k=5, max_titles=30)
    assert load_play_config(None, {"graph": "g", "agent": "tfidf"}).agent_options == TfidfOptions()
    with pytest.raises(ConfigError, match="--tfidf-sample-size 0: must be a positive number"):
        load_play_config(None, {"graph": "g", "agent": "tfidf", "tfidf_sample_size": 0})
    with pytest.raises(ConfigError, match="--concurrency 0: must be a positive number"):
        load_play_config(None, {"graph": "g", "agent": "reasoning", "concurrency": 0})


def test_another_agents_setting_is_refused_unless_it_is_that_agents_default(tmp_path):
    with pytest.raises(ConfigError, match=r"--top-k only applies to --agent llm or reasoning( or likelihood)?"):
        load_play_config(None, {"graph": "g", "agent": "embedding", "top_k": 5})
    with pytest.raises(ConfigError, match=r"--corpus-graph only applies to --agent tfidf"):
        load_play_config(None, {"graph": "g", "agent": "random", "corpus_graph": "/x"})
    shared = tmp_path / "play.yaml"
    shared.write_text("tfidf_sample_size: 100000\nmax_titles: 200\n")  # defaults for every agent: fine
    assert load_play_config(str(shared), {"graph": "g", "agent": "random"}).agent_options == AgentOptions()
    shared.write_text("no_such_setting: 1\n")
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) \['no_such_setting'\]"):
        load_play_config(str(shared), {"graph": "g", "agent": "random"})


def test_the_jobs_flags_are_made_from_the_options():
    args = vars(
        JOB.parser().parse_args(["--agent", "llm", "--top-k", "4", "--shuffle-links", "--tfidf-sample-size", "9"])
    )
    assert (args["top_k"], args["shuffle_links"], args["tfidf_sample_size"]) == (4, True, 9)
    assert (args["reencode"], args["backoff"], args["corpus_graph"]) == (None, None, None)  # not given: YAML, defaults
    assert JOB.parse(["--graph", "g", "--agent", "llm", "--top-k", "4"]).agent_options.top_k == 4


def test_the_record_lists_the_shared_settings_and_its_own_agents_options():
    for agent, cls in registered_agents().items():
        cfg = load_play_config(None, {"graph": "g", "agent": agent, "model": "m"})
        own = [f.name for f in dataclasses.fields(cls.options) if "token" not in f.name and "key" not in f.name]
        assert sorted(flatten(cfg)) == sorted(SHARED + own), agent
        plays = [f.name for f in dataclasses.fields(cls.options) if f.metadata.get("changes_output")]
        assert sorted(runs.play_options(cfg)) == sorted(SHARED_PLAY_OPTIONS + plays), agent
    race = load_play_config(None, {"graph": "g", "agent": "llm", "protocol": "llm-wikirace"})
    assert flatten(race)["max_titles"] == 0  # the protocol's
    assert "base_url" not in flatten(load_play_config(None, {"graph": "g", "agent": "tfidf"}))
    top = load_play_config(None, {"graph": "g", "agent": "llm", "model": "m", "top_k": 7})
    assert flatten(top)["top_k"] == 7 and runs.play_options(top)["top_k"] == 7
    built = runs.agent_settings(top, GraphHandle(storage.folder("g"), {}))
    assert (
        built.options.top_k == 7
        and built.model == "m"
        and built.cache_dir == GraphHandle(storage.folder("g"), {}).cache_dir
    )
