"""``llm`` and ``reasoning``: prompted language models over any OpenAI-compatible endpoint.

Each step sends the paper's conversation (Listing 5) with at most ``max_titles`` link titles,
checks the answer against exactly the titles shown, and retries up to ``max_retries`` times in
the same conversation with the paper's follow-ups (Listings 6–9). Games in flight are asked
concurrently (``concurrency`` threads per worker). Every failure ends the game with an outcome:
``hallucination`` (retries used up on bad answers), ``bad_request`` (the server refused),
``no_response`` (timeouts/429/5xx after backoff), ``no_answer`` (reasoning reply without an
``<answer>`` block).

Beyond the paper, each off by default: ``shuffle_links`` (position-bias control), ``top_k``
(offer only the k links most similar to the target by embedding — the hybrid agent the paper's
discussion proposes), ``show_route`` (tell the model the pages visited so far and, when revisits
are allowed, which offered titles lead back to one).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from pyspark.sql import SparkSession

from wikigame_spark.agents import prompts
from wikigame_spark.agents.base import Agent, Choice, StepRequest, register_agent
from wikigame_spark.agents.embedding import EmbeddingAgent
from wikigame_spark.agents.llm_client import BadRequest, ChatClient, NoResponse, server_identity
from wikigame_spark.config import AgentOptions, non_negative, option, positive

# Completion caps when --max-tokens is not given. The paper's answer, {"title": …, "reason": …},
# takes well under 200 tokens; a reasoning reply thinks before its <answer>. Without a cap a model
# that never ends its turn (a base model) generates to the context limit for every query.
MAX_TOKENS = 200
REASONING_MAX_TOKENS = 1024

HALLUCINATION = "hallucination"
BAD_REQUEST = "bad_request"
NO_RESPONSE = "no_response"
NO_ANSWER = "no_answer"


@dataclass(frozen=True)
class LlmOptions(AgentOptions):
    """llm / reasoning agents (endpoint and key: OPENAI_BASE_URL, OPENAI_API_KEY)"""

    base_url: str = option("", "OpenAI-compatible endpoint (default OPENAI_BASE_URL)", plays=False)
    temperature: float = option(0.0, "sampling temperature (default 0)")
    timeout: float = option(60.0, "seconds per request (default 60)", plays=False)
    http_retries: int = option(5, "retries on timeouts/429/5xx, with backoff (default 5)", plays=False)
    backoff: float = option(1.0, "seconds before the first retry, doubling (default 1)", plays=False)
    max_tokens: int = option(0, "completion token cap (default: llm 200, reasoning 1024)")
    max_titles: int = option(200, "link titles shown per step (paper: 200, 500 for GPT; 0 = all)")
    max_retries: int = option(4, "follow-ups after a bad answer (paper: 4)")
    concurrency: int = option(8, "requests in flight per worker (default 8)", plays=False)
    response_cache: str = option("", "directory caching replies by request (reruns are free)", plays=False)
    shuffle_links: bool = option(False, "shuffle titles (position bias)")
    top_k: int = option(0, "offer only the k links most similar to the target (hybrid)")
    embedding_model: str = option("", f"model ranking links for --top-k (default {EmbeddingAgent.default_model})")
    show_route: bool = option(False, "tell the model the route so far")

    def validate(self) -> None:
        positive(self, "concurrency", "timeout")
        non_negative(self, "max_titles", "max_retries", "http_retries", "top_k", "max_tokens")

    @property
    def ranking_model(self) -> str:
        return self.embedding_model or EmbeddingAgent.default_model


@register_agent("llm", options=LlmOptions)
class LlmAgent(Agent):
    reasoning = False
    outcomes = (HALLUCINATION, BAD_REQUEST, NO_RESPONSE)
    default_max_tokens = MAX_TOKENS

    @classmethod
    def prepare(cls, spark: SparkSession, graph_dir: str, settings: dict) -> dict:
        if not settings.get("model"):
            raise ValueError(f"--agent {cls.name} needs --model (the model name the server knows)")
        options = cls.options_of(settings)
        if options.top_k > 0:
            embedding = {**settings, "model": options.ranking_model, "use_titles": False, "reencode": False}
            return {"embedding": EmbeddingAgent.prepare(spark, graph_dir, embedding)}
        return {}

    @classmethod
    def identity(cls, settings: dict) -> dict:
        base_url = cls.options_of(settings).base_url or None
        return server_identity(base_url, settings["model"], settings.get("api_key") or None)

    def __init__(self, graph, settings, resources) -> None:
        super().__init__(graph, settings, resources)
        o = self.opts
        self.client = ChatClient(
            model=settings["model"],
            base_url=o.base_url or None,
            api_key=settings.get("api_key") or None,
            temperature=float(o.temperature),
            seed=settings.get("seed"),
            timeout=float(o.timeout),
            retries=int(o.http_retries),
            backoff=float(o.backoff),
            max_tokens=int(o.max_tokens) or self.default_max_tokens,
            cache_dir=o.response_cache,
        )
        self.max_titles = int(o.max_titles)
        self.max_retries = int(o.max_retries)
        self.pool = ThreadPoolExecutor(max_workers=int(o.concurrency))
        self.ranker = None
        if o.top_k > 0:
            self.ranker = EmbeddingAgent(graph, {"model": o.ranking_model}, resources["embedding"])

    def choose(self, requests: list[StepRequest]) -> list[Choice]:
        return list(self.pool.map(self._step, requests))

    def _offered(self, r: StepRequest) -> list[int]:
        offered = r.offered
        if self.opts.shuffle_links:
            offered = np.random.default_rng([int(self.settings.get("seed") or 0), r.game_id, r.step]).permutation(
                offered
            )
        k = self.opts.top_k
        if self.ranker is not None and offered.size > k:
            scores = self.ranker.scores(r.target, offered)
            keep = np.sort(np.argsort(-scores, kind="stable")[:k])
            offered = offered[keep]
        return [int(i) for i in offered[: self.max_titles or None]]

    def _step(self, r: StepRequest) -> Choice:
        started = time.perf_counter()
        titles_of = self.graph.titles
        shown = self._offered(r)
        titles = [titles_of[i] for i in shown]
        node_of = dict(zip(titles, shown))
        target = titles_of[r.target]
        route = visited = None
        if self.opts.show_route:  # offered pages are visited ones only when revisits are allowed
            route, seen = [titles_of[i] for i in r.route], set(r.route)
            visited = [titles_of[i] for i in shown if i in seen]
        messages = prompts.first_messages(
            target, self.graph.summaries[r.target], titles, self.reasoning, route, visited
        )
        rng = np.random.default_rng([int(self.settings.get("seed") or 0), r.game_id, r.step, 1])
        queries = prompt_tokens = completion_tokens = 0

        def ended(node, outcome=None, detail=None) -> Choice:
            return Choice(
                node, outcome, queries, prompt_tokens, completion_tokens, time.perf_counter() - started, detail
            )

        reply = None
        for _ in range(1 + self.max_retries):
            try:
                reply = self.client.chat(messages)
            except BadRequest as e:
                return ended(None, BAD_REQUEST, str(e)[:500])
            except NoResponse as e:
                return ended(None, NO_RESPONSE, str(e)[:500])
            queries += 1
            prompt_tokens += reply.prompt_tokens
            completion_tokens += reply.completion_tokens
            parsed = prompts.parse_reply(reply.text, set(node_of), self.reasoning)
            if parsed.kind == prompts.OK:
                return ended(node_of[parsed.title])
            if parsed.kind == prompts.NO_ANSWER_REPLY:
                return ended(None, NO_ANSWER, (reply.text or "")[:500])
            examples = [titles[i] for i in rng.choice(len(titles), min(10, len(titles)), replace=False)]
            messages = messages + prompts.follow_up(parsed.kind, reply.text or "", target, parsed.title, examples)
        return ended(None, HALLUCINATION, f"last reply: {(reply.text if reply else '') or ''}"[:500])


@register_agent("reasoning", options=LlmOptions)
class ReasoningAgent(LlmAgent):
    """Chain-of-thought prompting; the answer must come inside ``<answer></answer>`` tags."""

    reasoning = True
    outcomes = (*LlmAgent.outcomes, NO_ANSWER)
    default_max_tokens = REASONING_MAX_TOKENS
