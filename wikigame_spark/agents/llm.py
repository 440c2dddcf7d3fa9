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

import numpy as np
from pyspark.sql import SparkSession

from wikigame_spark.agents import prompts
from wikigame_spark.agents.base import Agent, Choice, StepRequest, register_agent
from wikigame_spark.agents.embedding import EmbeddingAgent
from wikigame_spark.agents.llm_client import BadRequest, ChatClient, NoResponse, server_identity

# Completion caps when --max-tokens is not given. The paper's answer, {"title": …, "reason": …},
# takes well under 200 tokens; a reasoning reply thinks before its <answer>. Without a cap a model
# that never ends its turn (a base model) generates to the context limit for every query.
MAX_TOKENS = 200
REASONING_MAX_TOKENS = 1024

HALLUCINATION = "hallucination"
BAD_REQUEST = "bad_request"
NO_RESPONSE = "no_response"
NO_ANSWER = "no_answer"


@register_agent("llm")
class LlmAgent(Agent):
    reasoning = False
    outcomes = (HALLUCINATION, BAD_REQUEST, NO_RESPONSE)
    default_max_tokens = MAX_TOKENS

    @classmethod
    def prepare(cls, spark: SparkSession, graph_dir: str, settings: dict) -> dict:
        if not settings.get("model"):
            raise ValueError(f"--agent {cls.name} needs --model (the model name the server knows)")
        if int(settings.get("top_k") or 0) > 0:
            embedding = {**settings, "model": settings.get("embedding_model"), "use_titles": False, "reencode": False}
            return {"embedding": EmbeddingAgent.prepare(spark, graph_dir, embedding)}
        return {}

    @classmethod
    def identity(cls, settings: dict) -> dict:
        return server_identity(settings.get("base_url") or None, settings["model"], settings.get("api_key") or None)

    def __init__(self, graph, settings, resources) -> None:
        super().__init__(graph, settings, resources)
        s = settings
        self.client = ChatClient(
            model=s["model"],
            base_url=s.get("base_url") or None,
            api_key=s.get("api_key") or None,
            temperature=float(s.get("temperature", 0.0)),
            seed=s.get("seed"),
            timeout=float(s.get("timeout", 60.0)),
            retries=int(s.get("http_retries", 5)),
            backoff=float(s.get("backoff", 1.0)),
            max_tokens=int(s.get("max_tokens") or 0) or self.default_max_tokens,
            cache_dir=s.get("response_cache") or "",
        )
        self.max_titles = int(s.get("max_titles", 200))
        self.max_retries = int(s.get("max_retries", 4))
        self.pool = ThreadPoolExecutor(max_workers=int(s.get("concurrency", 8)))
        self.ranker = None
        if int(s.get("top_k") or 0) > 0:
            self.ranker = EmbeddingAgent(graph, {"model": s.get("embedding_model")}, resources["embedding"])

    def choose(self, requests: list[StepRequest]) -> list[Choice]:
        return list(self.pool.map(self._step, requests))

    def _offered(self, r: StepRequest) -> list[int]:
        offered = r.offered
        if self.settings.get("shuffle_links"):
            offered = np.random.default_rng([int(self.settings.get("seed") or 0), r.game_id, r.step]).permutation(
                offered
            )
        k = int(self.settings.get("top_k") or 0)
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
        if self.settings.get("show_route"):  # offered pages are visited ones only when revisits are allowed
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


@register_agent("reasoning")
class ReasoningAgent(LlmAgent):
    """Chain-of-thought prompting; the answer must come inside ``<answer></answer>`` tags."""

    reasoning = True
    outcomes = (*LlmAgent.outcomes, NO_ANSWER)
    default_max_tokens = REASONING_MAX_TOKENS
