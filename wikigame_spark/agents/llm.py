"""``llm`` and ``reasoning``: prompted language models over any OpenAI-compatible endpoint.

Each step sends the paper's conversation (Listing 5) with at most ``max_titles`` link titles,
checks the answer against exactly the titles shown, and retries up to ``max_retries`` times in
the same conversation with the paper's follow-ups (Listings 6–9). Games in flight are asked
concurrently (``concurrency`` threads per worker). Every failure ends the game with an outcome:
``hallucination`` (retries used up on bad answers), ``bad_request`` (the server refused),
``no_response`` (the server never answered: timeouts/429/5xx/connection errors after backoff;
the model's failure it is not), ``no_answer`` (reasoning reply without an ``<answer>`` block).

The server is checked before any game (``/v1/models``: a wrong ``--base-url`` is one ``error:``
line, exit 2), and ``max_server_failures`` games in a row that end ``no_response`` stop the run
the same way (chunks already written stay; the same ``--run-name`` resumes). Requests in flight
are bounded by the server's slots (:func:`~wikigame_spark.agents.llm_client.server_slots`).

Beyond the paper, each off by default: ``shuffle_links`` (position-bias control), ``top_k``
(offer only the k links most similar to the target by embedding — the hybrid agent the paper's
discussion proposes), ``show_route`` (tell the model the pages visited so far and, when revisits
are allowed, which offered titles lead back to one), ``constrained`` (the server restricts the
answer to the offered titles: ``grammar``, a GBNF grammar, llama.cpp's servers; ``json_schema``,
OpenAI's structured outputs with an ``enum``, OpenAI, vLLM, llama-server; docs/llm.md).

``interface``: ``text`` (the paper's: the answer is JSON in the reply's text) or ``tools``, as
today's benchmarks ask (:mod:`~wikigame_spark.agents.tool_calls`): one conversation per game, a
``click_link``/``go_back`` call a turn, the next page the call's result, invalid calls counted and
answered as wikiarena's "tool_strict_v1" answers them. A server's thinking (``reasoning_content``
or ``<think>`` tags) is counted apart from the answer in either (``reasoning_budget`` caps it on
llama.cpp's server).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from pyspark.sql import SparkSession

from wikigame_spark.agents import prompts, tool_calls
from wikigame_spark.agents.base import Agent, AgentSettings, Choice, ModelIdentity, StepRequest, register_agent
from wikigame_spark.agents.embedding import EmbeddingAgent, EmbeddingOptions
from wikigame_spark.agents.llm_client import (
    BadRequest,
    ChatClient,
    NoResponse,
    Reply,
    ServerUnreachable,
    Slots,
    check_server,
    server_identity,
    server_slots,
)
from wikigame_spark.agents.options import AgentOptions, non_negative, option, positive
from wikigame_spark.agents.sentence_models import check_model
from wikigame_spark.agents.traces import Query, Step, StepTracer
from wikigame_spark.config import ConfigError
from wikigame_spark.handles import GraphHandle
from wikigame_spark.outcomes import BAD_REQUEST, HALLUCINATION, INVALID_CALLS, NO_ANSWER, NO_RESPONSE
from wikigame_spark.protocols import LLM_WIKIRACE

# Completion caps when --max-tokens is not given. The paper's answer, {"title": …, "reason": …},
# takes well under 200 tokens; a reasoning reply thinks before its <answer>. Without a cap a model
# that never ends its turn (a base model) generates to the context limit for every query.
MAX_TOKENS = 200
REASONING_MAX_TOKENS = 1024

CONSTRAINTS = ("grammar", "json_schema")
TEXT, TOOLS = "text", "tools"
INTERFACES = (TEXT, TOOLS)


@dataclass(frozen=True)
class LlmOptions(AgentOptions):
    """llm / reasoning / likelihood agents (endpoint and key: OPENAI_BASE_URL, OPENAI_API_KEY)"""

    PRESETS: ClassVar[dict] = {LLM_WIKIRACE: {"max_titles": 0}}

    base_url: str = option("", "OpenAI-compatible endpoint (default OPENAI_BASE_URL)", changes_output=False)
    temperature: float = option(0.0, "sampling temperature (default 0)")
    timeout: float = option(60.0, "seconds per request (default 60)", changes_output=False)
    http_retries: int = option(5, "retries on timeouts/429/5xx, with backoff (default 5)", changes_output=False)
    backoff: float = option(1.0, "seconds before the first retry, doubling (default 1)", changes_output=False)
    max_tokens: int = option(0, "completion token cap (default: llm 200, reasoning 1024)")
    max_titles: int = option(200, "link titles shown per step (paper: 200, 500 for GPT; 0 = all)")
    max_retries: int = option(4, "follow-ups after a bad answer (paper: 4)")
    concurrency: int = option(
        8,
        "requests in flight at most (default 8; no more than the server's slots: 1 on a local server that "
        "does not say)",
        changes_output=False,
    )
    response_cache: str = option("", "directory caching replies by request (reruns are free)", changes_output=False)
    shuffle_links: bool = option(False, "shuffle titles (position bias)")
    top_k: int = option(0, "offer only the k links most similar to the target (hybrid)")
    embedding_model: str = option("", f"model ranking links for --top-k (default {EmbeddingAgent.default_model})")
    show_route: bool = option(False, "tell the model the route so far")
    constrained: str = option(
        "",
        "llm/reasoning: the server restricts the answer to the offered titles, by a GBNF grammar (llama.cpp) "
        "or a JSON schema (OpenAI, vLLM, llama-server); default off, the paper's",
        choices=("", *CONSTRAINTS),
    )
    interface: str = option(
        TEXT,
        "llm: how the model answers: text (the paper's JSON in the reply) or tools (a click_link/go_back tool "
        "call a turn, wikiarena's strict handling of invalid calls; docs/llm.md, Tool calls)",
        choices=INTERFACES,
    )
    history: int = option(0, "tools: the last N pages keep their links in the conversation (0: every page)")
    invalid_per_page: int = option(2, "tools: invalid calls allowed on one page before the game ends (wikiarena: 2)")
    invalid_per_game: int = option(15, "tools: invalid calls allowed in one game (wikiarena: 15)")
    calls_in_text: bool = option(
        False,
        'tools: a call written as JSON in the reply\'s text ({"name": …, "arguments": …}) counts too, for models '
        "without native tool calls (BFCL's prompt mode)",
    )
    reasoning_budget: int = option(
        0, "thinking tokens allowed per reply (llama.cpp's reasoning_budget_tokens; 0: the server's default)"
    )
    length_normalise: bool = option(False, "likelihood: rank titles by mean log-prob per token (default: the sum)")
    no_prefix_reuse: bool = option(
        False, "the server evaluates every prompt whole, no cached prefix (benchmarks)", changes_output=False
    )
    max_server_failures: int = option(
        3, "games in a row ending no_response that stop the run (0: never)", changes_output=False
    )
    trace_games: int = option(
        0, "trace the first N games in MLflow: prompts, replies, tokens, seconds per step", changes_output=False
    )

    def validate(self) -> None:
        positive(self, "concurrency", "timeout")
        counts = ("max_titles", "max_retries", "http_retries", "top_k", "max_tokens", "max_server_failures")
        tools = ("history", "invalid_per_page", "invalid_per_game", "reasoning_budget")
        non_negative(self, *counts, *tools, "trace_games", "temperature")
        if self.constrained and self.constrained not in CONSTRAINTS:
            raise ConfigError(
                f"constrained: must be one of {', '.join(CONSTRAINTS)} (or empty), got {self.constrained!r}"
            )
        if self.interface not in INTERFACES:
            raise ConfigError(f"interface: must be one of {', '.join(INTERFACES)}, got {self.interface!r}")
        if self.interface == TOOLS and self.constrained:
            raise ConfigError("constrained: not with --interface tools, whose click_link holds the title to the links")
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        tool_options = ("history", "invalid_per_page", "invalid_per_game", "calls_in_text")
        changed = [n for n in tool_options if getattr(self, n) != defaults[n]]
        if self.interface != TOOLS and changed:
            raise ConfigError(f"{', '.join(changed)}: only apply to --interface tools")

    @classmethod
    def label_parts(cls, params: dict) -> tuple[str, ...]:
        """The links pre-ranked, the answer held to the offered titles (grammar, json_schema), tool calls."""
        parts = (f"top-{params['top_k']}",) if params.get("top_k") not in (None, "", "0") else ()
        parts += (f"constrained={params['constrained']}",) if params.get("constrained") else ()
        if params.get("interface") == TOOLS:
            parts += ("tools (calls in text)",) if params.get("calls_in_text") == "True" else ("tools",)
        return parts

    def run_name_parts(self) -> tuple[str, ...]:
        """A run's default name tells apart the ways one model plays: its answer constrained, by tool
        calls, the links pre-ranked, titles ranked by mean log-prob."""
        parts = (self.constrained,) if self.constrained else ()
        parts += (TOOLS,) if self.interface == TOOLS else ()
        parts += ("textcalls",) if self.calls_in_text else ()
        parts += (f"top{self.top_k}",) if self.top_k else ()
        return parts + (("mean-logprob",) if self.length_normalise else ())

    @property
    def ranking_model(self) -> str:
        return self.embedding_model or EmbeddingAgent.default_model


# Servers that render tools into the prompt but return the model's calls as text (llama-cpp-python's,
# given a GGUF's own template): the tool interface cannot be played on them.
TEXT_TOOL_CALLS = ("llama-cpp-python",)

# Models that are not instruction-tuned: the base Gemma-3-270M that devtools/local_server.py serves
# (MODEL_ALIAS there), bundled to check the LLM agents' plumbing.
BASE_MODELS = frozenset({"gemma-3-270m"})
PLUMBING_NOTE = "base model: plumbing check"
BASE_NOTE = "base model"  # the same models where they play (by likelihood, or a constrained answer)


@register_agent("llm", options=LlmOptions)
class LlmAgent(Agent):
    reasoning = False
    outcomes = (HALLUCINATION, BAD_REQUEST, NO_RESPONSE, INVALID_CALLS)
    default_max_tokens = MAX_TOKENS
    served = True

    @classmethod
    def checks_plumbing(cls, params: dict) -> bool:
        """A base model generating free text checks the plumbing; held to the offered titles it plays."""
        return (params.get("model") or "") in BASE_MODELS and not params.get("constrained")

    @classmethod
    def model_note(cls, params: dict) -> str:
        if (params.get("model") or "") not in BASE_MODELS:
            return ""
        return PLUMBING_NOTE if cls.checks_plumbing(params) else BASE_NOTE

    @classmethod
    def prepare(cls, spark: SparkSession, graph: GraphHandle, settings: AgentSettings) -> dict:
        if not settings.model:
            raise ValueError(f"--agent {cls.name} needs --model (the model name the server knows)")
        if settings.options.top_k > 0:
            return {"embedding": EmbeddingAgent.prepare(spark, graph, cls.ranker_settings(settings))}
        return {}

    @staticmethod
    def ranker_settings(settings: AgentSettings) -> AgentSettings:
        """The hybrid prefilter's embedding agent: the ranking model on the summaries."""
        ranking = settings.options.ranking_model
        return dataclasses.replace(settings, options=EmbeddingOptions(), model=ranking, use_titles=False)

    @classmethod
    def check_options(cls, options: LlmOptions) -> None:
        """Refuse the options of the family that are not this agent's."""
        if options.length_normalise:
            raise ConfigError("length_normalise (--length-normalise) only applies to --agent likelihood")
        if options.constrained == "json_schema" and cls.reasoning:
            raise ConfigError("constrained: json_schema cannot hold the reasoning agent's <answer> tags; use grammar")
        if options.interface == TOOLS and cls.reasoning:
            raise ConfigError(
                "interface: tools is --agent llm's (a model that thinks plays it so: its thinking is counted apart)"
            )

    @classmethod
    def identity(cls, settings: AgentSettings) -> ModelIdentity:
        """The server checked (it answers ``/v1/models``, and :meth:`probe`) before any game, then
        what it serves."""
        options = settings.options
        cls.check_options(options)
        if options.top_k:
            check_model(options.ranking_model, "--embedding-model")
        base_url, key = options.base_url or None, settings.api_key or None
        check_server(base_url, key)
        cls.probe(options, settings.model, base_url, key)
        identity = ModelIdentity(**server_identity(base_url, settings.model, key))
        if options.interface == TOOLS and identity.llm_engine.startswith(TEXT_TOOL_CALLS):
            raise ServerUnreachable(
                f"--interface tools: {identity.llm_engine} returns a model's tool calls as text, not as tool_calls; "
                "serve the model with llama.cpp's llama-server (devtools: --engine native), vLLM or an API"
            )
        return identity

    @classmethod
    def probe(cls, options: LlmOptions, model: str, base_url: str | None, key: str | None) -> None:
        """What else the agent needs of the server, asked before any game (generation needs nothing more)."""

    def __init__(self, graph, settings, resources) -> None:
        super().__init__(graph, settings, resources)
        o = self.opts
        base_url = o.base_url or None
        slots = server_slots(base_url, settings.api_key or None)
        self.in_flight = min(int(o.concurrency), slots or int(o.concurrency))
        self.slots = Slots(base_url or "", self.in_flight)
        self.failures_in_a_row = 0
        self.client = ChatClient(
            model=settings.model,
            base_url=o.base_url or None,
            api_key=settings.api_key or None,
            temperature=float(o.temperature),
            seed=settings.seed,
            timeout=float(o.timeout),
            retries=int(o.http_retries),
            backoff=float(o.backoff),
            max_tokens=int(o.max_tokens) or self.default_max_tokens,
            cache_dir=o.response_cache,
            slots=self.slots,
        )
        self.max_titles = int(o.max_titles)
        self.max_retries = int(o.max_retries)
        self.pool = ThreadPoolExecutor(max_workers=self.in_flight)
        self.tracer = StepTracer(settings.trace, int(o.trace_games)) if settings.trace and o.trace_games else None
        self.ranker = None
        if o.top_k > 0:
            self.ranker = EmbeddingAgent(graph, self.ranker_settings(settings), resources["embedding"])
        self.games: dict[int, Conversation] = {}  # the tool interface's conversation of each game in play

    def choose(self, requests: list[StepRequest]) -> list[Choice]:
        # The engine asks every game in play each round: a conversation not asked for has ended.
        asked = {r.game_id for r in requests}
        for game_id in [g for g in self.games if g not in asked]:
            del self.games[game_id]
        step = self._tool_step if self.opts.interface == TOOLS else self._step
        choices = list(self.pool.map(step, requests))
        self._count_server_failures(choices)
        return choices

    def _count_server_failures(self, choices: list[Choice]) -> None:
        """Stop (a fault: exit 2) after ``max_server_failures`` games in a row the server never answered."""
        limit = int(self.opts.max_server_failures)
        for c in choices:
            self.failures_in_a_row = self.failures_in_a_row + 1 if c.outcome == NO_RESPONSE else 0
            if limit and self.failures_in_a_row >= limit:
                raise ServerUnreachable(
                    f"--base-url {self.opts.base_url or 'OPENAI_BASE_URL'}: {self.failures_in_a_row} games in a row "
                    f"got no answer from the LLM server (last: {c.detail}); the chunks already written stay, "
                    "rerun with the same --run-name to resume"
                )

    def _extra(self, titles: list[str]) -> dict | None:
        """Request fields beyond the paper's: the answer restricted to ``titles``, the server's prefix
        cache off (llama.cpp's ``cache_prompt``); None for neither."""
        extra = {"cache_prompt": False} if self.opts.no_prefix_reuse else {}
        if self.opts.reasoning_budget:
            extra["reasoning_budget_tokens"] = int(self.opts.reasoning_budget)
        if self.opts.constrained == "grammar":
            extra["grammar"] = prompts.answer_grammar(titles, self.reasoning)
        if self.opts.constrained == "json_schema":
            schema = {"name": "wikigame_choice", "strict": True, "schema": prompts.answer_schema(titles)}
            extra["response_format"] = {"type": "json_schema", "json_schema": schema}
        return extra or None

    def _offered(self, r: StepRequest) -> list[int]:
        offered = r.offered
        if self.opts.shuffle_links:
            offered = np.random.default_rng([self.settings.seed, r.game_id, r.step]).permutation(offered)
        k = self.opts.top_k
        if self.ranker is not None and offered.size > k:
            scores = self.ranker.scores(r.target, offered)
            keep = np.sort(np.argsort(-scores, kind="stable")[:k])
            offered = offered[keep]
        return [int(i) for i in offered[: self.max_titles or None]]

    def _tally(self, r: StepRequest, shown: list[int]) -> Tally:
        """The step's tally of requests, traced when its game is."""
        traced = self.tracer is not None and self.tracer.wants(r.game_id)
        titles_of = self.graph.titles
        step = Step(r.game_id, r.step, titles_of[r.current], titles_of[r.target], len(shown)) if traced else None
        return Tally(self.tracer, step, titles_of)

    def _ask(self, tally: Tally, messages: list[dict], extra: dict | None, tools: list[dict] | None = None):
        """One request, traced and counted; the reply, or the Choice that ends the game."""
        query = tally.query(messages)
        try:
            reply = self.client.chat(messages, extra, tools)
        except (BadRequest, NoResponse) as e:
            query.ended_ns, query.error = time.time_ns(), str(e)[:500]
            return tally.ended(None, BAD_REQUEST if isinstance(e, BadRequest) else NO_RESPONSE, query.error)
        tally.add(query, reply)
        return reply

    def _step(self, r: StepRequest) -> Choice:
        """The paper's step: a new conversation, follow-ups after a bad answer."""
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
        rng = np.random.default_rng([self.settings.seed, r.game_id, r.step, 1])
        tally = self._tally(r, shown)
        reply = None
        extra = self._extra(titles)
        for _ in range(1 + self.max_retries):
            reply = self._ask(tally, messages, extra)
            if isinstance(reply, Choice):
                return reply
            parsed = prompts.parse_reply(reply.text, set(node_of), self.reasoning)
            if parsed.kind == prompts.OK:
                return tally.ended(node_of[parsed.title])
            if parsed.kind == prompts.NO_ANSWER_REPLY:
                return tally.ended(None, NO_ANSWER, (reply.text or "")[:500])
            examples = [titles[i] for i in rng.choice(len(titles), min(10, len(titles)), replace=False)]
            messages = messages + prompts.follow_up(parsed.kind, reply.text or "", target, parsed.title, examples)
        return tally.ended(None, HALLUCINATION, f"last reply: {(reply.text if reply else '') or ''}"[:500])

    def _tool_step(self, r: StepRequest) -> Choice:
        """A turn of the tool interface: the page the last call led to as its result, then one valid
        call asked for, invalid ones answered (:mod:`~wikigame_spark.agents.tool_calls`)."""
        titles_of = self.graph.titles
        shown = self._offered(r)
        links = [i for i in shown if i != r.back]  # the back page is go_back's
        titles = [titles_of[i] for i in links]
        back = titles_of[r.back] if r.back is not None else None
        page = tool_calls.page(titles_of[r.current], titles, back)
        game = self.games.get(r.game_id) if r.step else None
        if game is None:
            game = self.games[r.game_id] = Conversation([tool_calls.system(back is not None)])
            task = tool_calls.task(titles_of[r.target], self.graph.summaries[r.target])
            game.add_page({"role": "user", "content": f"{task}{tool_calls.TASK_END}{page}"}, titles_of[r.current])
        else:
            game.add_page(tool_calls.result(game.pending, page), titles_of[r.current])
        tools = tool_calls.tools(titles, back is not None)
        node_of = dict(zip(titles, links))
        tally = self._tally(r, shown)
        extra = self._extra(titles)
        on_page = 0
        while True:
            reply = self._ask(tally, game.view(int(self.opts.history)), extra, tools)
            if isinstance(reply, Choice):
                return reply
            calls = [(c.id, c.name, c.arguments) for c in reply.tool_calls]
            game.messages.append(tool_calls.assistant(reply.text, calls))
            if not calls and self.opts.calls_in_text:  # no call id: the result comes as a user message
                calls = [("", name, arguments) for name, arguments in tool_calls.text_calls(reply.text)]
            call = tool_calls.check([(n, a) for _, n, a in calls], set(node_of), back is not None)
            if not call.reason:
                game.pending = calls[0][0]
                return tally.ended(r.back if call.back else node_of[call.title])
            on_page += 1
            game.invalid += 1
            tally.invalid += 1
            ids = [i for i, _, _ in calls if i]
            game.messages += tool_calls.invalid(call, titles_of[r.current], ids, back is not None)
            if on_page > self.opts.invalid_per_page:
                count, where = on_page, "on this page"
            elif game.invalid > self.opts.invalid_per_game:
                count, where = game.invalid, "in the game"
            else:
                continue
            detail = f"{count} invalid calls {where}; last: {call.reason}: {call.detail}"
            return tally.ended(None, INVALID_CALLS, detail[:500])


@dataclass
class Conversation:
    """One game's conversation under the tool interface, kept whole; :meth:`view` sends the last
    ``history`` pages' links and the earlier pages by title only."""

    messages: list[dict]
    pages: list[tuple[int, str]] = dataclasses.field(default_factory=list)  # (message index, page title)
    pending: str = ""  # the id of the valid call whose result is the next page
    invalid: int = 0

    def add_page(self, message: dict, title: str) -> None:
        self.pages.append((len(self.messages), title))
        self.messages.append(message)

    def view(self, history: int) -> list[dict]:
        if not history or len(self.pages) <= history:
            return self.messages
        out = list(self.messages)
        for index, title in self.pages[:-history]:
            short = tool_calls.EARLIER_PAGE.format(title=title)
            if out[index]["role"] == "user":  # the first page shares the task's message
                short = out[index]["content"].split(tool_calls.TASK_END, 1)[0] + tool_calls.TASK_END + short
            out[index] = {**out[index], "content": short}
        return out


@dataclass
class Tally:
    """A step's requests, tokens and invalid calls as its :class:`Choice` reports them."""

    tracer: StepTracer | None
    step: Step | None
    titles: Sequence[str]
    started: float = dataclasses.field(default_factory=time.perf_counter)
    queries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    invalid: int = 0

    def query(self, messages: list[dict]) -> Query:
        query = Query(messages, time.time_ns())
        if self.step is not None:
            self.step.queries.append(query)
        return query

    def add(self, query: Query, reply: Reply) -> None:
        query.ended_ns = time.time_ns()
        query.reply, query.reasoning, query.tool_calls = reply.text, reply.reasoning, list(reply.tool_calls)
        query.prompt_tokens, query.completion_tokens = reply.prompt_tokens, reply.completion_tokens
        query.cached_tokens, query.reasoning_tokens = reply.cached_tokens, reply.reasoning_tokens
        self.queries += 1
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.cached_tokens += reply.cached_tokens
        self.reasoning_tokens += reply.reasoning_tokens

    def ended(self, node: int | None, outcome: str | None = None, detail: str | None = None) -> Choice:
        if self.step is not None:
            self.tracer.write(self.step, self.titles[node] if node is not None else None, outcome)
        return Choice(
            node,
            outcome,
            self.queries,
            self.prompt_tokens,
            self.completion_tokens,
            time.perf_counter() - self.started,
            detail,
            self.cached_tokens,
            self.reasoning_tokens,
            self.invalid,
        )


@register_agent("reasoning", options=LlmOptions)
class ReasoningAgent(LlmAgent):
    """Chain-of-thought prompting; the answer must come inside ``<answer></answer>`` tags."""

    reasoning = True
    outcomes = (HALLUCINATION, BAD_REQUEST, NO_RESPONSE, NO_ANSWER)
    default_max_tokens = REASONING_MAX_TOKENS
