"""Agents own their options: registered with the agent, refused where they do not belong, the
job's flags made from them, and a play run's record listing every agent's as before."""

from __future__ import annotations

import dataclasses

import pytest

from jobs import play_games
from wikigame_spark.agents.base import Agent, agent_class, register_agent, registered_agents, registered_options
from wikigame_spark.agents.llm import LlmOptions
from wikigame_spark.agents.tfidf import TfidfOptions
from wikigame_spark.config import AgentOptions, ConfigError, PlayConfig, load_config, option
from wikigame_spark.play import runs

# The settings a play run recorded before agents owned their options (PlayConfig's 34 fields).
RECORDED = (
    "graph agent model use_titles games games_dir max_steps seed experiment run_name output overwrite cache_dir "
    "chunk_games partitions corpus_graph tfidf_sample_size reencode base_url temperature timeout http_retries "
    "backoff max_titles max_retries concurrency response_cache shuffle_links top_k embedding_model show_route "
    "protocol allow_revisits"
).split()  # max_tokens is left out of records as a secret-like name ("token"), as it always was
PLAY_OPTIONS = (
    "use_titles corpus_graph tfidf_sample_size reencode temperature max_tokens max_titles max_retries "
    "shuffle_links top_k embedding_model show_route allow_revisits protocol chunk_games"
).split()


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
    assert registered_options()[LlmOptions] == ["llm", "reasoning"]
    cfg = load_config(PlayConfig, None, {"graph": "g", "agent": "llm", "top_k": 5, "max_titles": 30})
    assert cfg.agent_options == LlmOptions(top_k=5, max_titles=30)
    assert load_config(PlayConfig, None, {"graph": "g", "agent": "tfidf"}).agent_options == TfidfOptions()
    with pytest.raises(ConfigError, match="tfidf_sample_size: must be positive, got 0"):
        load_config(PlayConfig, None, {"graph": "g", "agent": "tfidf", "tfidf_sample_size": 0})
    with pytest.raises(ConfigError, match="concurrency: must be positive, got 0"):
        load_config(PlayConfig, None, {"graph": "g", "agent": "reasoning", "concurrency": 0})


def test_another_agents_setting_is_refused_unless_it_is_that_agents_default(tmp_path):
    with pytest.raises(ConfigError, match=r"top_k \(--top-k\) only applies to --agent llm or reasoning"):
        load_config(PlayConfig, None, {"graph": "g", "agent": "embedding", "top_k": 5})
    with pytest.raises(ConfigError, match=r"corpus_graph \(--corpus-graph\) only applies to --agent tfidf"):
        load_config(PlayConfig, None, {"graph": "g", "agent": "random", "corpus_graph": "/x"})
    shared = tmp_path / "play.yaml"
    shared.write_text("tfidf_sample_size: 100000\nmax_titles: 200\n")  # defaults for every agent: fine
    assert load_config(PlayConfig, str(shared), {"graph": "g", "agent": "random"}).agent_options == AgentOptions()
    shared.write_text("no_such_setting: 1\n")
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) \['no_such_setting'\]"):
        load_config(PlayConfig, str(shared), {"graph": "g", "agent": "random"})


def test_the_jobs_flags_are_made_from_the_options():
    args = play_games.parse_args(["--agent", "llm", "--top-k", "4", "--shuffle-links", "--tfidf-sample-size", "9"])
    assert (args.top_k, args.shuffle_links, args.tfidf_sample_size) == (4, True, 9)
    assert (args.reencode, args.backoff, args.corpus_graph) == (None, None, None)  # not given: YAML or defaults


def test_the_record_lists_every_agents_options_as_before():
    for agent in registered_agents():
        cfg = load_config(PlayConfig, None, {"graph": "g", "agent": agent, "model": "m"})
        assert sorted(runs.settings_record(cfg)) == sorted(RECORDED), agent
        assert sorted(runs.play_options(cfg)) == sorted(PLAY_OPTIONS), agent
    race = load_config(PlayConfig, None, {"graph": "g", "agent": "tfidf", "protocol": "llm-wikirace"})
    assert runs.settings_record(race)["max_titles"] == 0  # the protocol's, for every agent's record
    top = load_config(PlayConfig, None, {"graph": "g", "agent": "llm", "model": "m", "top_k": 7})
    assert runs.settings_record(top)["top_k"] == 7 and runs.play_options(top)["top_k"] == 7
    assert runs.agent_settings(top)["top_k"] == 7 and runs.agent_settings(top)["model"] == "m"
