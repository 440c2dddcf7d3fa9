"""Benchmark: LLM games per minute with many requests in flight vs one at a time.

Plays the same games on the real Latgalian graph against a llama.cpp OpenAI-compatible server with
the Gemma-3-270M GGUF (started here on 127.0.0.1), with ``concurrency`` 1 and N on the same server;
prints games per minute, the ratio, and queries and tokens per game. Replies are not cached. Each
engine is measured: ``python`` (llama_cpp.server: one request at a time whatever is in flight) and
``native`` (llama.cpp's llama-server with N parallel slots decoded in one batch). Both run on this
machine's 2 cores, so they show what limits a local server; the same games against a stand-in for
a hosted API (a fixed ``--latency`` per request, no work here) show what the client itself does.

The servers render Gemma's own turn format and the agent caps replies at its default (200 tokens)
unless ``--max-tokens`` says otherwise. The bundled model is the base Gemma-3-270M: the outcome
counts printed check the plumbing, they are not a measure of play.

The likelihood agent (``--likelihood-links 50 200``): steps per minute and prompt tokens per step
when each step offers that many links, with the server's prefix cache and without it
(``no_prefix_reuse``: every candidate's whole prompt evaluated), on the python engine (the one
that returns prompt log-probs). Constrained choice (``--constrained``): the same games played by
the ``llm`` agent free (the paper's) and with ``constrained=grammar``: games per minute, queries
per game and outcomes. Tracing (``--sections tracing``): the same games with every game traced
(``trace_games``, one MLflow trace a step into a SQLite store) and untraced, against the hosted-API
stand-in with no latency (the worst case: a step costs only the client's work and the trace's) and
with ``--latency``: seconds per game both ways and milliseconds per trace written.

Bundled models (``--sections models``): each bundled model the machine has (``--models``; Qwen only
once its part packages are installed) plays the same games as each agent — ``llm`` free (the
paper's), ``llm`` constrained (grammar), ``likelihood`` — and prints steps per minute. On llama.cpp's
own server, whose log times every request, the free runs also say where the time goes (prompt
evaluation against generation) and how many prompt tokens a request evaluates with the server's prefix
cache (``cache_prompt``, the default: the paper's conversation repeats its opening at every step and
each follow-up extends the step's conversation) and without it (``--no-prefix-reuse``); one slot with
one request in flight against two slots with two (what two Spark tasks of one request each send);
and the cost of the paper's 200-title cap: one step offering 50 titles against 200.

The tool interface (``--sections tools``): each installed instruction-tuned model on llama.cpp's own
server plays the same games free (the paper's) and by tool calls (``interface=tools``, strict, and
with ``calls_in_text``): steps per minute, the invalid-call rate and the prompt's share the server's
prefix cache held.

    python bench/bench_llm.py [--games 8] [--concurrency 8] [--max-steps 3] [--engines python native]
        [--latency 1.0] [--max-tokens N] [--sections concurrency likelihood constrained tracing models tools]
        [--likelihood-links 50 200] [--likelihood-steps 3] [--models smollm2-135m-instruct ...]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np
import pyarrow.parquet as pq

from bench.bench_play import build_real
from wikigame_spark.agents.base import StepRequest
from wikigame_spark.agents.likelihood import LikelihoodAgent
from wikigame_spark.agents.llm import LlmAgent
from wikigame_spark.devtools import models
from wikigame_spark.devtools.faulty_server import FaultyServer
from wikigame_spark.devtools.games import write_games
from wikigame_spark.devtools.local_server import ENGINES, NATIVE, PYTHON, LlamaServer
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.play.engine import play_games


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=8)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--max-steps", type=int, default=3)
    p.add_argument("--max-titles", type=int, default=50)
    p.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    p.add_argument("--max-tokens", type=int, default=0, help="completion cap per request (0: the agent's default)")
    p.add_argument(
        "--latency", type=float, default=1.0, help="seconds per request of the hosted-API stand-in (0: skip)"
    )
    p.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    p.add_argument("--likelihood-links", type=int, nargs="+", default=[50, 200], help="links offered per step")
    p.add_argument("--likelihood-steps", type=int, default=3, help="steps timed per setting")
    p.add_argument("--models", nargs="+", default=installed_llms(), help="bundled models (default: installed)")
    args = p.parse_args()
    from wikigame_spark.session import build_session

    graph_dir = build_real(build_session("bench_llm"))
    games_dir = f"{graph_dir}/bench-llm-games-{args.games}"
    if not os.path.exists(games_dir):
        write_games(graph_dir, args.games, seed=3, path=games_dir)
    games = pq.read_table(f"{games_dir}/games").to_pylist()
    graph = WorkerGraph.from_directory(graph_dir)
    print(f"{len(games)} games on the Latgalian graph, <= {args.max_steps} steps, <= {args.max_titles} titles shown")
    if "likelihood" in args.sections or "constrained" in args.sections:
        with LlamaServer(engine=PYTHON) as server:
            if "likelihood" in args.sections:
                likelihood(games, graph, server, args)
            if "constrained" in args.sections:
                constrained(games, graph, server, args)
    if "tracing" in args.sections:
        tracing(games, graph, args)
    if "models" in args.sections:
        for name in args.models:
            bundled_model(name, games, graph, args)
    if "tools" in args.sections:
        for name in (m for m in args.models if models.bundled(m).instruct):
            tool_interface(name, games, graph, args)
    if "concurrency" not in args.sections:
        return
    for engine in args.engines:
        parallel = args.concurrency if engine == NATIVE else 1
        with LlamaServer(engine=engine, parallel=parallel) as server:
            label = f"{engine} engine ({parallel} slot{'s' if parallel > 1 else ''})"
            compare(label, games, graph, server.base_url, server.model, args)
    if args.latency > 0:
        with FaultyServer(latency=args.latency) as server:
            compare(f"hosted-API stand-in ({args.latency:.1f} s per request)", games, graph, server.url, "any", args)


SECTIONS = ("concurrency", "likelihood", "constrained", "tracing", "models", "tools")


def installed_llms() -> list[str]:
    """The bundled models whose packages are installed here."""
    found = []
    for name, model in models.MODELS.items():
        try:
            model.path()
        except models.ModelMissing:
            continue
        found.append(name)
    return found


_PROMPT = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
_GENERATION = re.compile(r"(?<!prompt )eval time =\s*([\d.]+) ms /\s*(\d+) tokens")


def server_timings(log_path: str, start: int) -> dict:
    """llama-server's own timing of the requests it logged after byte ``start``: prompt tokens
    evaluated (not those its prefix cache held) and milliseconds, tokens generated and milliseconds."""
    with open(log_path, encoding="utf-8", errors="replace") as f:
        f.seek(start)
        text = f.read()
    prompt = [(float(ms), int(n)) for ms, n in _PROMPT.findall(text)]
    generation = [(float(ms), int(n)) for ms, n in _GENERATION.findall(text)]
    return {
        "prompt_ms": sum(ms for ms, _ in prompt),
        "prompt_tokens": sum(n for _, n in prompt),
        "generation_ms": sum(ms for ms, _ in generation),
        "generated": sum(n for _, n in generation),
    }


def timed_play(agent, games, graph, args, label: str, model: str) -> tuple[list[dict], float]:
    start = time.perf_counter()
    rows = play_games(games, graph, agent, args.max_steps, label, model)
    return rows, time.perf_counter() - start


def per_minute(rows: list[dict], seconds: float) -> str:
    steps, queries = sum(r["steps"] for r in rows), sum(r["queries"] for r in rows)
    outcomes = dict(sorted(Counter(r["outcome"] for r in rows).items()))
    return (
        f"{steps / seconds * 60:.1f} steps/min, {queries / seconds * 60:.1f} queries/min "
        f"({seconds:.0f} s, {steps} steps, {queries} queries); outcomes {outcomes}"
    )


TOOL_WAYS = {
    "free": {},
    "tools": {"interface": "tools"},
    "tools, calls in text": {"interface": "tools", "calls_in_text": True},
}


def tool_interface(name: str, games: list[dict], graph: WorkerGraph, args) -> None:
    """An instruction-tuned model on the same games by free text and by tool calls (strict, and
    with calls written in the text counted), one slot of llama-server: steps per minute."""
    llm = {"model": name, "max_titles": args.max_titles, "timeout": 3600, "max_tokens": args.max_tokens}
    log = os.path.join(ROOT, ".cache", "bench-llm", f"{name}-tools.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    with LlamaServer(engine=NATIVE, model=name, log_path=log) as server:
        for way, options in TOOL_WAYS.items():
            settings = LlmAgent.configure(**llm, **options, base_url=server.base_url, concurrency=1)
            rows, seconds = timed_play(LlmAgent(graph, settings, {}), games, graph, args, "llm", name)
            calls = f"; {tool_calls(rows)}" if options else ""
            print(f"{name}, llm {way}, native engine: {per_minute(rows, seconds)}{calls}")


def tool_calls(rows: list[dict]) -> str:
    """The tool interface's invalid calls over all calls, and the prompt's share read from the server's cache."""
    invalid, moves = sum(r["invalid_calls"] for r in rows), sum(r["steps"] for r in rows)
    cached, sent = sum(r["cached_tokens"] for r in rows), sum(r["prompt_tokens"] for r in rows)
    return (
        f"invalid-call rate {invalid / max(invalid + moves, 1):.2f} ({invalid} invalid calls, {moves} moves); "
        f"{cached / max(sent, 1):.0%} of the prompt tokens read from the prefix cache"
    )


def bundled_model(name: str, games: list[dict], graph: WorkerGraph, args) -> None:
    """One bundled model, each agent on the same games; on llama-server, where the time goes."""
    llm = {"model": name, "max_titles": args.max_titles, "timeout": 3600, "max_tokens": args.max_tokens}
    logs = os.path.join(ROOT, ".cache", "bench-llm")
    os.makedirs(logs, exist_ok=True)
    free = {}
    for parallel in (1, 2):
        log = os.path.join(logs, f"{name}-native-{parallel}.log")
        with LlamaServer(engine=NATIVE, parallel=parallel, model=name, log_path=log) as server:
            ways = [("free", {})] + (
                [("free, no prefix cache", {"no_prefix_reuse": True}), ("constrained", {"constrained": "grammar"})]
                if parallel == 1
                else []
            )
            for way, options in ways:
                settings = LlmAgent.configure(**llm, **options, base_url=server.base_url, concurrency=parallel)
                start = os.path.getsize(log)
                rows, seconds = timed_play(LlmAgent(graph, settings, {}), games, graph, args, "llm", name)
                t = server_timings(log, start)
                queries = max(sum(r["queries"] for r in rows), 1)
                sent = sum(r["prompt_tokens"] for r in rows)
                busy = t["prompt_ms"] + t["generation_ms"]
                if way == "free":
                    free[parallel] = seconds
                rate = lambda n, ms: n / max(ms, 1e-9) * 1000  # noqa: E731
                print(
                    f"{name}, llm {way}, native engine {parallel} slot(s), {parallel} request(s) in flight: "
                    f"{per_minute(rows, seconds)}; prompt tokens per query {sent / queries:.0f} sent, "
                    f"{t['prompt_tokens'] / queries:.0f} evaluated; server time {busy / 1000:.0f} s: prompt "
                    f"{t['prompt_ms'] / max(busy, 1e-9):.0%} ({rate(t['prompt_tokens'], t['prompt_ms']):.0f} tok/s), "
                    f"generation {t['generation_ms'] / max(busy, 1e-9):.0%} "
                    f"({rate(t['generated'], t['generation_ms']):.1f} tok/s)"
                )
            if parallel == 1:
                title_cap(name, graph, games, server, llm, log)
    print(f"{name}, llm free: two slots and two requests in flight {free[1] / free[2]:.2f}x one slot's speed")
    with LlamaServer(engine=PYTHON, model=name, log_path=os.path.join(logs, f"{name}-python.log")) as server:
        settings = LikelihoodAgent.configure(**llm, base_url=server.base_url)
        rows, seconds = timed_play(LikelihoodAgent(graph, settings, {}), games, graph, args, "likelihood", name)
        tokens = sum(r["prompt_tokens"] for r in rows) / max(sum(r["steps"] for r in rows), 1)
        print(f"{name}, likelihood, python engine: {per_minute(rows, seconds)}; {tokens:.0f} prompt tokens per step")


def title_cap(name: str, graph: WorkerGraph, games: list[dict], server: LlamaServer, llm: dict, log: str) -> None:
    """One step offering 50 titles against 200 (the paper's cap), the same pages: prompt tokens and time."""
    for links in (50, 200):
        settings = LlmAgent.configure(**{**llm, "max_titles": links}, base_url=server.base_url, max_retries=0)
        agent = LlmAgent(graph, settings, {})
        g = games[0]
        others = np.setdiff1d(np.arange(graph.num_nodes), [g["source"]])[:links]
        start = os.path.getsize(log)
        began = time.perf_counter()
        choice = agent.choose([StepRequest(0, 0, int(g["source"]), int(g["target"]), others, [int(g["source"])])])[0]
        seconds = time.perf_counter() - began
        t = server_timings(log, start)
        print(
            f"{name}, one step offering {links} titles: {choice.prompt_tokens} prompt tokens, "
            f"{t['prompt_tokens']} evaluated in {t['prompt_ms'] / 1000:.1f} s, {seconds:.1f} s in all"
        )


def likelihood(games: list[dict], graph: WorkerGraph, server: LlamaServer, args) -> None:
    """Steps per minute of the likelihood agent with N links offered, with and without prefix reuse."""
    for links in args.likelihood_links:
        for reuse in (True, False):
            settings = LikelihoodAgent.configure(
                model=server.model, base_url=server.base_url, max_titles=links, timeout=3600, no_prefix_reuse=not reuse
            )
            agent = LikelihoodAgent(graph, settings, {})
            requests = []
            for i, g in enumerate(games[: args.likelihood_steps]):
                # ``links`` candidates whatever the page's degree: the cost depends on their number
                others = np.setdiff1d(np.arange(graph.num_nodes), [g["source"]])[i : i + links]
                requests.append(StepRequest(i, 0, int(g["source"]), int(g["target"]), others, [int(g["source"])]))
            start = time.perf_counter()
            choices = [agent.choose([r])[0] for r in requests]
            seconds = time.perf_counter() - start
            tokens = sum(c.prompt_tokens for c in choices) / len(choices)
            print(
                f"likelihood agent, {links} links, prefix reuse {'on' if reuse else 'off'}: "
                f"{len(choices) / seconds * 60:.2f} steps/min ({seconds / len(choices):.1f} s and "
                f"{tokens:.0f} prompt tokens per step, {len(choices)} steps)"
            )


def constrained(games: list[dict], graph: WorkerGraph, server: LlamaServer, args) -> None:
    """The llm agent free (the paper's protocol) and constrained to the offered titles, same games."""
    for constraint in ("", "grammar"):
        settings = {
            "model": server.model,
            "base_url": server.base_url,
            "max_titles": args.max_titles,
            "timeout": 600,
            "max_tokens": args.max_tokens,
            "constrained": constraint,
        }
        agent = LlmAgent(graph, LlmAgent.configure(**settings), {})
        start = time.perf_counter()
        rows = play_games(games, graph, agent, args.max_steps, "llm", server.model)
        seconds = time.perf_counter() - start
        queries = sum(r["queries"] for r in rows) / len(rows)
        steps = sum(r["steps"] for r in rows) / len(rows)
        outcomes = Counter(r["outcome"] for r in rows)
        print(
            f"llm agent, {'constrained (grammar)' if constraint else 'free (the paper)'}: "
            f"{len(rows) / seconds * 60:.2f} games/min ({seconds:.0f} s), {steps:.1f} steps and "
            f"{queries:.1f} queries per game; outcomes {dict(sorted(outcomes.items()))}"
        )


def tracing(games: list[dict], graph: WorkerGraph, args) -> None:
    """Seconds per game with every game traced and untraced; milliseconds per trace written."""
    import dataclasses
    import tempfile

    import mlflow

    from wikigame_spark.agents.traces import TraceTarget

    uri = f"sqlite:///{tempfile.mkdtemp(prefix='bench-traces-')}/mlflow.db"
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment("bench-traces")
    target = TraceTarget(uri, experiment, client.create_run(experiment).info.run_id)
    for latency in sorted({0.0, args.latency}):
        with FaultyServer(latency=latency) as server:
            seconds, steps = {}, 0
            for traced in (False, True):
                options = {"max_titles": args.max_titles, "concurrency": args.concurrency, "timeout": 600}
                settings = LlmAgent.configure(
                    model="any", base_url=server.url, trace_games=len(games) if traced else 0, **options
                )
                agent = LlmAgent(graph, dataclasses.replace(settings, trace=target), {})
                start = time.perf_counter()
                rows = play_games(games, graph, agent, args.max_steps, "llm", "any")
                seconds[traced] = time.perf_counter() - start
                steps = sum(r["queries"] for r in rows)
        per_trace = (seconds[True] - seconds[False]) / max(steps, 1) * 1000
        print(
            f"tracing, {latency:.1f} s per request: {seconds[False] / len(games):.3f} s per game untraced, "
            f"{seconds[True] / len(games):.3f} s traced ({steps} traces, {per_trace:.1f} ms each); "
            f"ratio {seconds[True] / seconds[False]:.2f}x"
        )


def compare(label: str, games: list[dict], graph: WorkerGraph, base_url: str, model: str, args) -> None:
    """Play the games with one request at a time, then with ``args.concurrency`` in flight."""
    results = {}
    for concurrency in (1, args.concurrency):
        settings = {
            "model": model,
            "base_url": base_url,
            "max_titles": args.max_titles,
            "concurrency": concurrency,
            "timeout": 600,
            "max_tokens": args.max_tokens,
        }
        agent = LlmAgent(graph, LlmAgent.configure(**settings), {})
        start = time.perf_counter()
        rows = play_games(games, graph, agent, args.max_steps, "llm", model)
        results[concurrency] = (rows, time.perf_counter() - start)
    for concurrency, (rows, seconds) in results.items():
        tokens = sum(r["prompt_tokens"] + r["completion_tokens"] for r in rows) / len(rows)
        completion = sum(r["completion_tokens"] for r in rows) / len(rows)
        queries = sum(r["queries"] for r in rows) / len(rows)
        outcomes = Counter(r["outcome"] for r in rows)
        print(
            f"{label}, concurrency {concurrency}: {len(rows) / seconds * 60:.1f} games/min ({seconds:.0f} s), "
            f"{queries:.1f} queries, {tokens:.0f} tokens ({completion:.0f} generated, "
            f"{completion / max(queries, 1e-9):.0f} per reply) per game; outcomes {dict(sorted(outcomes.items()))}"
        )
    (_, t1), (_, tn) = results[1], results[args.concurrency]
    print(f"{label}: ratio {t1 / tn:.2f}x with concurrency {args.concurrency} (bar >= 4x)")


if __name__ == "__main__":
    main()
