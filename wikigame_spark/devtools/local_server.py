"""A local OpenAI-compatible server: llama.cpp's, with a language model shipped on PyPI.

Used by ``make demo``, the tests and the benchmarks, so that the LLM agents run for real with no
model hub and no account. The server listens on 127.0.0.1 only and serves one of the bundled
models by name (:mod:`~wikigame_spark.devtools.models`: the base Gemma-3-270M by default,
SmolLM2-135M-Instruct, Qwen2.5-Coder-1.5B-Instruct). Two engines serve the same model:

* ``python``: ``python -m llama_cpp.server`` from ``llama-cpp-python[server]`` (installed by
  ``make install``). It answers one request at a time, however many are in flight.
* ``native``: llama.cpp's own ``llama-server``, with ``--parallel`` slots decoded together in one
  batch (continuous batching), as production servers (llama.cpp, vLLM) run. ``make install``
  builds it with the bindings' libraries, from the llama.cpp source inside llama-cpp-python's
  PyPI sdist; ``LLAMA_SERVER`` names another binary.

An instruction-tuned model's GGUF carries its chat template (ChatML for SmolLM2 and Qwen), which
both engines apply. Gemma's carries none, so both render the conversation in Gemma's own turn
format (``<start_of_turn>user … <end_of_turn>``, the system message folded into the first user
turn, as Gemma has no system role) and stop at the end of a turn: the format is named
(:data:`GEMMA_TURNS`, registered with llama-cpp-python; llama-server's built-in ``gemma``
template). Each engine reports its format at ``/props`` for the play run's record. The native
server also gives a request that names no ``max_tokens`` a cap of its own. Both stop generating a
reply whose client hung up: llama-server cancels the task; llama_cpp.server would finish a plain
(not streamed) reply, so :func:`serve_python` ends it with the end-of-sequence token once the
client is gone, and the reply keeps its token counts.

The python engine also serves the likelihood agent (``agents/likelihood.py``): the model is loaded
with ``logits_all``, so ``POST /v1/completions`` with ``echo`` and ``logprobs`` returns the prompt's
token log-probabilities in OpenAI's format, as llama-cpp-python's server does; but llama-cpp-python
ranks the whole vocabulary in Python for every token (Gemma's is 262,144), minutes per prompt, so
:func:`serve_python` answers such requests itself from the same model: the prompt's common prefix
with the last one is not evaluated again (llama-cpp-python's KV cache), its rows' log-normalisers
are kept, and only the echoed token's log-probability (and the top one) is returned.
``cache_prompt: false`` (llama.cpp's field) evaluates the whole prompt. llama.cpp's own server
returns no prompt log-probabilities.

The default Gemma is the pretrained **base** model (no chat template, no instruction tuning in
its metadata): its free-text games check the plumbing (a real server, real tokens, every outcome
path), they do not play the game. Runs made with it are labelled so
(``wikigame_spark.agents.llm.BASE_MODELS``).

    python -m wikigame_spark.devtools.local_server --port 8080 [--model smollm2-135m-instruct]
        [--engine native --parallel 8] [-- COMMAND ...]

With a command after ``--``, the server runs it once it is ready, with ``OPENAI_BASE_URL`` set to
its address, then stops and exits with the command's status (``make demo`` plays each model so).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

from wikigame_spark.agents import prompts
from wikigame_spark.devtools import models
from wikigame_spark.session import PROJECT_DIR

MODEL_ALIAS = models.GEMMA.name  # the default: the demo's and the tests' model
PYTHON, NATIVE = "python", "native"
ENGINES = (PYTHON, NATIVE)
CHAT_FORMAT = models.GEMMA.native_template  # llama-server's built-in template for Gemma
# llama-cpp-python's own "gemma" format drops the system message: the python engine registers this
# one instead, which folds it into the first user turn as Gemma's template and llama-server do.
GEMMA_TURNS = models.GEMMA.chat_format
# The native server's cap for a request that names none: above the reasoning agent's default cap.
SERVER_MAX_TOKENS = 2048
GGUF_TEMPLATE = "the GGUF's chat template"  # what /props names when no format was registered
gguf_path = models.GEMMA.path


def native_binary() -> str:
    """llama.cpp's ``llama-server``: ``$LLAMA_SERVER``, else the one ``make install`` built."""
    built = os.path.join(PROJECT_DIR, ".cache", "llama.cpp", "bin", "llama-server")
    path = os.environ.get("LLAMA_SERVER") or (built if os.path.exists(built) else shutil.which("llama-server"))
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError(f"no llama-server binary: run `make install` (builds {built}) or set LLAMA_SERVER")
    return path


def ended(returncode: int) -> str:
    """How a process ended, as a person reads it: ``died of SIGSEGV`` or ``exited with status 1``."""
    if returncode < 0:
        try:
            return f"died of {signal.Signals(-returncode).name}"
        except ValueError:
            return f"died of signal {-returncode}"
    return f"exited with status {returncode}"


def exit_status(returncode: int) -> int:
    """A shell's exit status for a child's ``returncode``: 128 + the signal that killed it, never 0."""
    return 128 - returncode if returncode < 0 else returncode or 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EngineDied(RuntimeError):
    """The server's engine process ended on its own: how (a signal, a status) and where its log is."""

    def __init__(self, server: LlamaServer, when: str):
        self.returncode = server.proc.returncode
        super().__init__(
            f"the llama.cpp server ({server.engine} engine, {server.model}) {ended(self.returncode)} {when}; "
            f"its log: {server.log_path}"
        )


class LlamaServer:
    """A llama.cpp server (either engine) on 127.0.0.1 for the lifetime of a ``with`` block."""

    def __init__(
        self,
        port: int = 0,
        n_ctx: int = 8192,
        threads: int | None = None,
        log_path: str | None = None,
        engine: str = PYTHON,
        parallel: int = 1,
        logits_all: bool = True,
        model: str = MODEL_ALIAS,
    ):
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
        if engine == PYTHON and parallel != 1:
            raise ValueError("llama_cpp.server has no parallel slots: use engine='native' for parallel > 1")
        self.port = port or free_port()
        self.n_ctx = n_ctx
        self.threads = threads or max(1, (os.cpu_count() or 2))
        self.engine = engine
        self.parallel = parallel
        self.logits_all = logits_all
        self.log_path = log_path or os.path.join(PROJECT_DIR, ".cache", f"llama-server-{self.port}.log")
        self.proc: subprocess.Popen | None = None
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.model = model
        self.bundled = models.bundled(model)

    def command(self) -> list[str]:
        where = ["--host", "127.0.0.1", "--port", str(self.port)]
        bundled = self.bundled
        if self.engine == NATIVE:
            # Every slot gets n_ctx tokens of context; a request without max_tokens gets SERVER_MAX_TOKENS;
            # a GGUF without a chat template gets the built-in one (no Jinja: with it, a template name would
            # be read as a template), any other its own (Jinja); no web UI.
            template = (
                ["--no-jinja", "--chat-template", bundled.native_template] if bundled.native_template else ["--jinja"]
            )
            return [native_binary(), "--model", bundled.path(), "--alias", bundled.name, *where, *template] + [
                "--n-predict",
                str(SERVER_MAX_TOKENS),
                "--ctx-size",
                str(self.n_ctx * self.parallel),
                "--parallel",
                str(self.parallel),
                "--threads",
                str(self.threads),
                "--no-webui",
            ]
        model = ["--model", bundled.path(), "--model_alias", bundled.name]
        model += ["--chat_format", bundled.chat_format] if bundled.chat_format else []  # else the GGUF's template
        return [
            sys.executable,
            "-c",
            "from wikigame_spark.devtools.local_server import serve_python; serve_python()",
            *model,
            *where,
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",  # prompts too, as llama-server's --threads does
            str(self.threads),
            "--logits_all",
            str(self.logits_all),
        ]

    def start(self, timeout: float = 300) -> LlamaServer:
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        cmd = self.command()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise EngineDied(self, "while loading")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as r:
                    if json.load(r).get("data"):
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"llama.cpp server not ready after {timeout:.0f}s; see {self.log_path}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)  # uvicorn may wait on a graceful shutdown
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def serve_python() -> None:
    """``python -m llama_cpp.server`` (its flags from ``sys.argv``) with :data:`GEMMA_TURNS` registered,
    and a ``/props`` route, as llama.cpp's own server has, naming the engine and each model's chat
    format: llama_cpp.server reports neither, and a play run records both."""
    import llama_cpp
    from fastapi import Request
    from fastapi.responses import JSONResponse
    from llama_cpp.llama_chat_format import ChatFormatterResponse, register_chat_format
    from llama_cpp.server import app
    from llama_cpp.server.__main__ import main as serve
    from llama_cpp.server.types import CreateChatCompletionRequest, CreateCompletionRequest
    from starlette.concurrency import run_in_threadpool

    @register_chat_format(GEMMA_TURNS)
    def gemma_turns(messages, **_):
        return ChatFormatterResponse(prompt=prompts.gemma_prompt(messages), stop=prompts.GEMMA_END)

    @app.router.get("/props", include_in_schema=False)
    def props() -> dict:
        # Read without get_llama_proxy, whose lock is held for as long as a reply is generated.
        served = app._llama_proxy._model_settings_dict if app._llama_proxy else {}
        return {
            "engine": f"llama-cpp-python server {llama_cpp.__version__}",
            "chat_format": {alias: settings.chat_format or GGUF_TEMPLATE for alias, settings in served.items()},
            "total_slots": 1,  # one request decoded at a time
        }

    stock = app.create_completion

    async def completion(request: Request):
        body = await request.json()
        if not (body.get("echo") and body.get("logprobs") is not None and isinstance(body.get("prompt"), str)):
            return await stock(request, CreateCompletionRequest(**body))
        async with contextlib.asynccontextmanager(app.get_llama_proxy)() as proxy:
            llama = proxy(body.get("model"))
            if not llama._logits_all:
                return JSONResponse({"error": {"message": "logprobs need logits_all"}}, status_code=400)
            return await run_in_threadpool(echo_logprobs, llama, body["prompt"], body.get("cache_prompt", True))

    stock_chat = app.create_chat_completion

    async def chat(request: Request):
        body = CreateChatCompletionRequest(**await request.json())
        if body.stream:  # llama_cpp.server stops a stream whose client is gone
            return await stock_chat(request, body)
        # The stock handler's plain path, with a logits processor that ends the reply once the client
        # is gone. Not under a grammar: llama.cpp aborts on an end token the grammar does not allow,
        # and a grammar's answer is short anyway.
        kwargs = body.model_dump(exclude={"n", "logit_bias_type", "user", "min_tokens"})
        async with contextlib.asynccontextmanager(app.get_llama_proxy)() as proxy:
            llama = app.prepare_request_resources(body, proxy, body.model, kwargs)
            if body.grammar is not None:
                return await run_in_threadpool(llama.create_chat_completion, **kwargs)
            gone = threading.Event()
            processors = kwargs.setdefault("logits_processor", llama_cpp.LogitsProcessorList())
            processors.append(EndWhenGone(gone, llama.token_eos()))
            watcher = asyncio.create_task(watch_disconnect(request, gone))
            try:
                return await run_in_threadpool(llama.create_chat_completion, **kwargs)
            finally:
                watcher.cancel()

    for route, path in ((completion, "/v1/completions"), (chat, "/v1/chat/completions")):
        route.__annotations__["request"] = Request  # the module's annotations are strings FastAPI cannot resolve
        app.router.add_api_route(path, route, methods=["POST"], include_in_schema=False)
        app.router.routes.insert(0, app.router.routes.pop())  # before the stock route of the same path
    serve()


async def watch_disconnect(request, gone: threading.Event, every: float = 0.1) -> None:
    """Set ``gone`` when the client of ``request`` hangs up (uvicorn reports it once the body is read)."""
    while not await request.is_disconnected():
        await asyncio.sleep(every)
    gone.set()


class EndWhenGone:
    """A llama-cpp-python logits processor: once ``gone`` is set, only ``eos`` can be sampled, so the
    reply ends at the next token (finish reason ``stop``) instead of running to its cap."""

    def __init__(self, gone: threading.Event, eos: int):
        self.gone, self.eos = gone, eos

    def __call__(self, input_ids, scores):
        if self.gone.is_set():
            scores[:] = -float("inf")
            scores[self.eos] = 0.0
        return scores


def echo_logprobs(llama, prompt: str, cache_prompt: bool = True) -> dict:
    """A completion response for ``echo`` + ``logprobs`` + one generated token, as
    llama-cpp-python's ``create_completion`` makes it (BOS dropped, the first token's log-prob
    null, character offsets), from rows of the model's own logits: tokens shared with the previous
    prompt are not evaluated again, and their log-normalisers are kept."""
    import numpy as np

    tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
    if len(tokens) >= llama.n_ctx():
        raise ValueError(f"Requested tokens ({len(tokens)}) exceed context window of {llama.n_ctx()}")
    empty = ([], np.zeros(0), np.zeros(0, dtype=np.int64))
    cached = getattr(llama, "_echo_cache", empty)
    if not cache_prompt:
        llama.reset()
        cached = empty
    same = 0
    for a, b in zip(llama.input_ids[: llama.n_tokens], tokens):
        if a != b:
            break
        same += 1
    same = min(same, len(tokens) - 1)  # the last row is evaluated again: it gives the next token
    llama.n_tokens = same
    llama.eval(tokens[same:])
    scores = llama.scores[: len(tokens)]
    kept = 0
    for a, b in zip(cached[0], tokens[:same]):
        if a != b:
            break
        kept += 1
    # Per row, once: its log-normaliser and its best token (a row is the whole vocabulary: a copy
    # or a pass over every row per request would cost more than the model's forward pass).
    new_rows = scores[kept:]
    peak = new_rows.max(axis=1)
    lse = np.concatenate([cached[1][:kept], peak + np.log(np.exp(new_rows - peak[:, None]).sum(axis=1))])
    argmax = np.concatenate([cached[2][:kept], new_rows.argmax(axis=1)])
    llama._echo_cache = (list(tokens), lse, argmax)
    bos = 1 if tokens[0] == llama.token_bos() else 0
    shown = [*tokens[bos:], int(argmax[-1])]  # the prompt, then the one token generated
    rows = np.arange(bos, len(tokens))  # row r predicts token r + 1
    picked = scores[rows, shown[1:]] - lse[rows]
    best = argmax[rows]
    best_lp = scores[rows, best] - lse[rows]

    raw = [llama.detokenize([t]) for t in shown]  # each token's bytes; offsets from their running sum
    running = [b"".join(raw[:i]) for i in range(len(raw) + 1)]
    pieces = [r.decode("utf-8", errors="ignore") for r in raw]
    offsets = [len(running[i].decode("utf-8", errors="ignore")) for i in range(len(raw))]
    lp = [None, *(float(x) for x in picked)]  # OpenAI's: none for the first token
    named = [llama.detokenize([int(b)]).decode("utf-8", errors="ignore") for b in best]
    top = [None] + [{named[i]: float(v), pieces[i + 1]: lp[i + 1]} for i, v in enumerate(best_lp)]
    return {
        "id": f"cmpl-echo-{len(tokens)}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": llama.model_path,
        "choices": [
            {
                "text": prompt + pieces[-1],
                "index": 0,
                "logprobs": {"tokens": pieces, "text_offset": offsets, "token_logprobs": lp, "top_logprobs": top},
                "finish_reason": "length",
            }
        ],
        "usage": {"prompt_tokens": len(tokens), "completion_tokens": 1, "total_tokens": len(tokens) + 1},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--n-ctx", type=int, default=8192, help="context tokens per request")
    p.add_argument("--engine", choices=ENGINES, default=PYTHON)
    p.add_argument("--model", choices=list(models.MODELS), default=MODEL_ALIAS, help="the bundled model to serve")
    p.add_argument("--parallel", type=int, default=1, help="requests decoded together (native engine)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="after --: run it against the server, then stop")
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    # `kill` (as `make demo` does when it is done) must stop the server process too, not orphan it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        with LlamaServer(args.port, args.n_ctx, engine=args.engine, parallel=args.parallel, model=args.model) as server:
            if command:
                print(f"serving {server.model} at {server.base_url} to: {' '.join(command)}", flush=True)
                with contextlib.suppress(KeyboardInterrupt):
                    rc = subprocess.call(command, env={**os.environ, "OPENAI_BASE_URL": server.base_url})
                    sys.exit(128 - rc if rc < 0 else rc)
                sys.exit(130)
            print(f"serving {server.model} at {server.base_url} (Ctrl-C to stop)", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                server.proc.wait()
                raise EngineDied(server, "while serving")
    except EngineDied as e:  # a client sees only a refused connection: the reason is said here
        print(f"error: {e}", file=sys.stderr, flush=True)
        sys.exit(exit_status(e.returncode))


if __name__ == "__main__":
    main()
