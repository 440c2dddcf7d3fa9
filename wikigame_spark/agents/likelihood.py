"""``likelihood``: a language model chooses a link by how likely it finds each offered title.

At each step every offered title is scored as the continuation of one prompt
(:func:`~wikigame_spark.agents.prompts.likelihood_prefix`: the paper's opening, the target's title
and summary, the current page, "the next page to click is:") by the server's log-probabilities of
the prompt's own tokens (``POST /v1/completions`` with ``echo`` and ``logprobs``, one token
generated and ignored: lm-evaluation-harness's ``local-completions`` convention), and the best is
clicked. So a base model, which cannot answer the paper's chat prompt, still plays: it never
names a page that is not offered, and there is nothing to parse.

The score is the sum of the continuation's token log-probs, or with ``length_normalise`` their
mean per token. The candidates of one step are asked one after another with the same prefix, so a
server with a prefix cache (llama-cpp-python's, llama.cpp's ``cache_prompt``, vLLM's automatic
prefix caching) evaluates the prefix once and each candidate's few tokens after it: the
``prompt_tokens`` of a step count that (the prefix once, then each candidate's tokens);
``no_prefix_reuse`` asks the server to evaluate every prompt whole and counts so. Ties go to the
lower node id. The paper's link cap (``max_titles``), the hybrid ``top_k`` prefilter and
``shuffle_links`` apply as for the ``llm`` agent, and so do the server checks: before any game the
server must answer ``/v1/models`` and return prompt log-probs for a probe (else one ``error:``
line, exit 2).
"""

from __future__ import annotations

import time

import numpy as np

from wikigame_spark.agents import prompts
from wikigame_spark.agents.base import Choice, StepRequest, register_agent
from wikigame_spark.agents.llm import LlmAgent, LlmOptions
from wikigame_spark.agents.llm_client import (
    BadRequest,
    CompletionClient,
    NoResponse,
    ServerUnreachable,
)
from wikigame_spark.config import ConfigError
from wikigame_spark.outcomes import BAD_REQUEST, NO_RESPONSE

PROBE = prompts.likelihood_prefix("Rīga", "Rīga is the capital of Latvia.", "Latvija")


@register_agent("likelihood", options=LlmOptions)
class LikelihoodAgent(LlmAgent):
    outcomes = (BAD_REQUEST, NO_RESPONSE)

    @classmethod
    def checks_plumbing(cls, params: dict) -> bool:
        """A base model ranking titles by likelihood plays."""
        return False

    @classmethod
    def check_options(cls, options: LlmOptions) -> None:
        if options.constrained:
            raise ConfigError("constrained (--constrained) only applies to --agent llm or reasoning")
        if options.trace_games:
            raise ConfigError("trace_games (--trace-games) only applies to --agent llm or reasoning")

    @classmethod
    def probe(cls, options: LlmOptions, model: str, base_url: str | None, key: str | None) -> None:
        """The server returns prompt log-probs (echo), which scoring the titles needs."""
        client = CompletionClient(model, base_url, key, timeout=float(options.timeout), retries=0)
        try:
            client.logprobs(PROBE + prompts.likelihood_continuation("Rīga"))
        except (BadRequest, NoResponse) as e:
            raise ServerUnreachable(
                f"--base-url {options.base_url or 'OPENAI_BASE_URL'}: the server refused a completion with echo "
                f"and logprobs, which the likelihood agent needs ({e})"
            ) from e

    def __init__(self, graph, settings, resources) -> None:
        super().__init__(graph, settings, resources)
        o = self.opts
        self.deterministic = not o.shuffle_links  # the scores depend on the state alone
        self.scorer = CompletionClient(
            settings.model,
            o.base_url or None,
            settings.api_key or None,
            timeout=float(o.timeout),
            retries=int(o.http_retries),
            backoff=float(o.backoff),
            slots=self.slots,
        )

    def scores(self, prefix: str, titles: list[str]) -> tuple[np.ndarray, int, int]:
        """Each title's score as the continuation of ``prefix``, the requests made and the prompt
        tokens a prefix-caching server evaluates for them."""
        reuse = not self.opts.no_prefix_reuse
        out, tokens = np.empty(len(titles)), 0
        for i, title in enumerate(titles):
            prompt = prefix + prompts.likelihood_continuation(title)
            echoed = self.scorer.logprobs(prompt, reuse_prefix=reuse)
            total, n = prompts.continuation_score(echoed.offsets, echoed.logprobs, len(prefix), len(prompt))
            out[i] = total / n if self.opts.length_normalise else total
            tokens += n if reuse and i else len(echoed.offsets) - 1  # the generated token is not the prompt's
        return out, len(titles), tokens

    def _step(self, r: StepRequest) -> Choice:
        started = time.perf_counter()
        shown = self._offered(r)
        titles_of = self.graph.titles
        prefix = prompts.likelihood_prefix(titles_of[r.target], self.graph.summaries[r.target], titles_of[r.current])
        queries = tokens = 0
        try:
            scores, queries, tokens = self.scores(prefix, [titles_of[i] for i in shown])
        except BadRequest as e:
            return Choice(None, BAD_REQUEST, queries, tokens, 0, time.perf_counter() - started, str(e)[:500])
        except NoResponse as e:
            return Choice(None, NO_RESPONSE, queries, tokens, 0, time.perf_counter() - started, str(e)[:500])
        order = np.lexsort((np.asarray(shown), -scores))  # best score, then the lowest node id
        return Choice(int(shown[order[0]]), None, queries, tokens, queries, time.perf_counter() - started)
