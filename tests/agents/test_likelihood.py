"""The likelihood agent and constrained choice against real local servers: llama-cpp-python's with
the bundled Gemma GGUF, and the faulty server (no log-probs)."""

import json

import numpy as np
import pytest

from tests.conftest import LLAMA_THREADS
from wikigame_spark.agents import prompts
from wikigame_spark.agents.likelihood import LikelihoodAgent
from wikigame_spark.agents.llm import LlmAgent, ReasoningAgent
from wikigame_spark.agents.llm_client import ServerUnreachable
from wikigame_spark.devtools.faulty_server import FaultyServer
from wikigame_spark.devtools.games import small_graph
from wikigame_spark.devtools.local_server import LlamaServer, gguf_path
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.play.engine import play_games

TITLES = ["Start", "Rēzne", "Daugpiļs", 'Quote "q"', "Latgola", "Rīga"]
SUMMARY = "Rēzne is a town in Latgale, on the river Rēzekne."
N_CTX = 2048


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    log = str(tmp_path_factory.mktemp("llama") / "server.log")
    with LlamaServer(n_ctx=N_CTX, threads=LLAMA_THREADS, log_path=log) as server:
        yield server


@pytest.fixture()
def graph(tmp_path):
    edges = [(0, t) for t in range(1, len(TITLES))] + [(t, 0) for t in range(1, len(TITLES))]
    summaries = [SUMMARY if t == "Rēzne" else f"{t} summary" for t in TITLES]
    return WorkerGraph.from_directory(small_graph(tmp_path, TITLES, edges, summaries=summaries))


def direct_scores(prefix: str, titles: list[str]) -> list[float]:
    """Each continuation's log-prob computed with llama-cpp-python itself: every logit of the prompt."""
    from llama_cpp import Llama

    model = Llama(model_path=gguf_path(), n_ctx=N_CTX, logits_all=True, verbose=False)
    out = []
    for title in titles:
        prompt = prefix + prompts.likelihood_continuation(title)
        tokens = model.tokenize(prompt.encode(), add_bos=True, special=True)
        model.reset()
        model.eval(tokens)
        logits = np.asarray(model.scores[: len(tokens)], dtype=np.float64)
        logp = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
        # the continuation's tokens: from the one that holds its first character
        pieces = [len(model.detokenize(tokens[1:i]).decode(errors="ignore")) for i in range(1, len(tokens))]
        first = 1 + max(i for i, o in enumerate(pieces) if o <= len(prefix))
        out.append(float(sum(logp[i - 1, tokens[i]] for i in range(first, len(tokens)))))
    return out


def settings(url, model, **extra):
    return LikelihoodAgent.configure(**{"model": model, "base_url": url, "timeout": 120, "seed": 1, **extra})


@pytest.mark.slow
def test_scores_are_the_models_log_probs(llama, graph):
    prefix = prompts.likelihood_prefix("Rēzne", SUMMARY, "Start")
    titles = TITLES[1:]
    expected = direct_scores(prefix, titles)
    agent = LikelihoodAgent(graph, settings(llama.base_url, llama.model), {})
    reused, queries, tokens = agent.scores(prefix, titles)
    whole = LikelihoodAgent(graph, settings(llama.base_url, llama.model, no_prefix_reuse=True), {})
    fresh, _, whole_tokens = whole.scores(prefix, titles)
    assert queries == len(titles)
    assert fresh == pytest.approx(expected, abs=2e-3)  # the whole prompt evaluated, as computed here
    # A few tokens decoded after a cached prefix take llama.cpp's small-batch kernels (other
    # rounding of the quantised weights' products): the same log-probs to well under 1 %.
    assert reused == pytest.approx(expected, rel=1e-2)
    # with the prefix reused a step costs the prefix once and the candidates' tokens
    assert tokens < whole_tokens / 3
    normalised = LikelihoodAgent(graph, settings(llama.base_url, llama.model, length_normalise=True), {})
    per_token, _, _ = normalised.scores(prefix, titles)
    assert all(p > s for p, s in zip(per_token, reused))  # a mean of negatives is above their sum


def test_likelihood_agent_plays_and_checks_its_server(llama, graph):
    agent = LikelihoodAgent(graph, settings(llama.base_url, llama.model), {})
    games = [{"game_id": 0, "source": 0, "target": 1, "optimal_steps": 1}]
    (row,) = play_games(games, graph, agent, 2, "likelihood", llama.model)
    assert row["outcome"] in {"success", "step_limit"} and row["queries"] == len(TITLES) - 1
    assert row["prompt_tokens"] > 0 and row["seconds"] > 0
    assert LikelihoodAgent.identity(settings(llama.base_url, llama.model)).model == llama.model


def test_a_server_without_prompt_log_probs_is_refused(graph):
    with FaultyServer() as server, pytest.raises(ServerUnreachable, match="no log-probabilities of the prompt"):
        LikelihoodAgent.identity(settings(server.url, "any"))


@pytest.mark.slow
def test_constrained_replies_are_offered_titles(llama, graph):
    extra = {"constrained": "grammar", "max_tokens": 48, "max_retries": 0, "timeout": 900}
    agent = LlmAgent(graph, settings(llama.base_url, llama.model, **extra), {})
    games = [{"game_id": i, "source": 0, "target": t, "optimal_steps": 1} for i, t in enumerate(range(1, 3))]
    rows = play_games(games, graph, agent, 1, "llm", llama.model)
    # the base model's free replies end in hallucination; constrained, every game makes its step
    assert all(r["outcome"] in {"success", "step_limit"} and r["steps"] == r["queries"] == 1 for r in rows), rows


def test_the_grammar_lists_exactly_the_titles():
    grammar = prompts.answer_grammar(['Quote "q"', "Rīga"])
    assert '"\\"Quote \\\\\\"q\\\\\\"\\"" | "\\"Rīga\\""' in grammar
    tagged = prompts.answer_grammar(["Rīga"], reasoning=True)
    assert tagged.startswith('root ::= think "<answer>" answer "</answer>"') and "think ::= [^<]*" in tagged
    schema = prompts.answer_schema(["A", "B"])
    assert schema["properties"]["title"]["enum"] == ["A", "B"] and json.dumps(schema)


def test_options_of_another_agent_are_refused():
    from wikigame_spark.agents.llm import LlmOptions
    from wikigame_spark.config import ConfigError

    with pytest.raises(ConfigError, match="json_schema cannot hold"):
        ReasoningAgent.check_options(LlmOptions(constrained="json_schema"))
    with pytest.raises(ConfigError, match="only applies to --agent likelihood"):
        LlmAgent.check_options(LlmOptions(length_normalise=True))
    with pytest.raises(ConfigError, match="only applies to --agent llm or reasoning"):
        LikelihoodAgent.check_options(LlmOptions(constrained="grammar"))
    with pytest.raises(ConfigError, match=r"trace_games \(--trace-games\) only applies to --agent llm or reasoning"):
        LikelihoodAgent.check_options(LlmOptions(trace_games=2))
