"""MLflow traces of an LLM agent's games, opt-in (``--trace-games N``): each step of the first N
games is one trace in the play run (its Traces tab), the step's queries its chat spans, so a
person reads every prompt, reply, token count and latency in the UI.

Written by the workers that play the games, straight to the tracking store, with the times the
agent measured; nothing goes into the plays table, so traced and untraced runs are the same plays.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TraceTarget:
    """Where a worker writes traces: the play run (filled in by the job once the run exists)."""

    tracking_uri: str
    experiment_id: str
    run_id: str


@dataclass
class Query:
    """One request of a step: the conversation sent, the reply, its tokens and its times (ns)."""

    messages: list[dict]
    started_ns: int
    ended_ns: int = 0
    reply: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str = ""
    reasoning: str | None = None  # the thinking, apart from the reply
    tool_calls: list = field(default_factory=list)  # the reply's calls (llm_client.ToolCall)
    cached_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass
class Step:
    """What one step of a traced game did, gathered while the agent plays it."""

    game_id: int
    step: int
    page: str
    target: str
    offered: int
    started_ns: int = field(default_factory=time.time_ns)
    queries: list[Query] = field(default_factory=list)


class StepTracer:
    """Writes a :class:`Step` as a trace of the run: the root span the step (its page, target and
    choice), a ``CHAT_MODEL`` span per query. Built once per worker agent."""

    def __init__(self, target: TraceTarget, games: int) -> None:
        # Each trace written when it ends: a worker's task may end with its games, before a queue
        # drains (MLflow's default, and flushing that queue costs about a second a trace).
        os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
        import mlflow

        mlflow.set_tracking_uri(target.tracking_uri)  # the exporter writes where the global URI points
        self.client = mlflow.MlflowClient(target.tracking_uri)
        self.target = target
        self.games = games

    def wants(self, game_id: int) -> bool:
        return game_id < self.games

    def write(self, step: Step, chosen: str | None, outcome: str | None) -> None:
        from mlflow.entities import SpanStatus, SpanType
        from mlflow.tracing.constant import SpanAttributeKey, TokenUsageKey

        t = self.target
        root = self.client.start_trace(
            f"game {step.game_id} step {step.step}",
            span_type=SpanType.AGENT,
            inputs={"page": step.page, "target": step.target, "links_offered": step.offered},
            tags={"game_id": str(step.game_id), "step": str(step.step)},
            experiment_id=t.experiment_id,
            start_time_ns=step.started_ns,
            run_id=t.run_id,
        )
        for k, q in enumerate(step.queries, 1):
            span = self.client.start_span(
                f"query {k}",
                root.trace_id,
                root.span_id,
                span_type=SpanType.CHAT_MODEL,
                inputs={"messages": q.messages},
                start_time_ns=q.started_ns,
            )
            outputs = {"reply": q.reply}
            if q.tool_calls:
                outputs["tool_calls"] = [{"name": c.name, "arguments": c.arguments} for c in q.tool_calls]
            if q.reasoning:
                outputs["reasoning"] = q.reasoning
            self.client.end_span(
                root.trace_id,
                span.span_id,
                outputs=outputs if not q.error else None,
                attributes={
                    "prompt_tokens": q.prompt_tokens,
                    "cached_tokens": q.cached_tokens,
                    "completion_tokens": q.completion_tokens,
                    "reasoning_tokens": q.reasoning_tokens,
                    SpanAttributeKey.CHAT_USAGE: {  # MLflow's own: the UI's Tokens column, summed per trace
                        TokenUsageKey.INPUT_TOKENS: q.prompt_tokens,
                        TokenUsageKey.OUTPUT_TOKENS: q.completion_tokens,
                        TokenUsageKey.TOTAL_TOKENS: q.prompt_tokens + q.completion_tokens,
                    },
                },
                status=SpanStatus("ERROR", q.error) if q.error else "OK",
                end_time_ns=q.ended_ns,
            )
        outputs = {"chosen": chosen, "outcome": outcome or "moved"}
        self.client.end_trace(root.trace_id, outputs=outputs, end_time_ns=time.time_ns())
