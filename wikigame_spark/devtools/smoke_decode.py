"""Does this machine's llama.cpp decode? A short completion of the bundled model through each engine.

``make install`` runs it after compiling llama.cpp and before keeping the build in the user's cache
folder: a build that compiles but cannot decode on this CPU (ggml's AMX kernels on some Xeons died
at their first decode) fails here, in one line naming the engine and the signal, instead of at the
first game of a demo. Each engine runs in a process of its own, so a crash is its exit, not ours.

    python -m wikigame_spark.devtools.smoke_decode
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request

from wikigame_spark.devtools.local_server import MODEL_ALIAS, NATIVE, EngineDied, LlamaServer, ended, gguf_path
from wikigame_spark.session import PROJECT_DIR

PROMPT = "The Wikipedia Game: reach a target article using only links. The first link to follow is"
TOKENS = 8
# The Python engine's library, as llama_cpp.server loads it: a plain process, greedy decoding.
_BINDINGS = """
import sys, llama_cpp
llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=256, verbose=False)
out = llm.create_completion(sys.argv[2], max_tokens=int(sys.argv[3]), temperature=0)
print(out["usage"]["completion_tokens"], llama_cpp.llama_cpp._lib._name)
"""


class SmokeFailed(RuntimeError):
    """An engine did not decode: which, how it ended, where to look."""


def python_bindings(model: str) -> str:
    """``TOKENS`` tokens decoded by llama-cpp-python's ``Llama`` (the python engine's library)."""
    done = subprocess.run(
        [sys.executable, "-c", _BINDINGS, model, PROMPT, str(TOKENS)], capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:  # a Python error's last line says what; a signal's says nothing more
        last = (done.stderr.strip().splitlines() or [""])[-1][:200] if done.returncode > 0 else ""
        raise SmokeFailed(
            f"llama.cpp's Python bindings (python engine) {ended(done.returncode)} decoding {MODEL_ALIAS}"
            + (f": {last}" if last else "")
        )
    tokens, library = done.stdout.split()
    return f"python engine: {tokens} tokens ({library})"


def native_server(model: str) -> str:
    """``TOKENS`` tokens from llama.cpp's ``llama-server`` (the native engine), with its own timings."""
    log = os.path.join(PROJECT_DIR, ".cache", "llama.cpp", "smoke-server.log")
    server = LlamaServer(engine=NATIVE, n_ctx=512, log_path=log)
    try:
        with server:
            body = {"prompt": PROMPT, "n_predict": TOKENS, "temperature": 0, "cache_prompt": False}
            request = urllib.request.Request(
                server.base_url.removesuffix("/v1") + "/completion",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=600) as r:
                    timings = json.load(r)["timings"]
            except OSError as e:
                if server.proc.poll() is not None:
                    raise EngineDied(server, "at its first completion") from e
                raise SmokeFailed(
                    f"llama-server (native engine) did not answer a completion: {e}; its log: {log}"
                ) from e
    except EngineDied as e:
        raise SmokeFailed(str(e)) from e
    return (
        f"native engine: {timings['predicted_n']} tokens, prompt {timings['prompt_per_second']:.0f} tokens/s, "
        f"generation {timings['predicted_per_second']:.1f} tokens/s"
    )


def main() -> int:
    model = gguf_path()
    try:
        said = [python_bindings(model), native_server(model)]
    except SmokeFailed as e:
        print(f"error: this llama.cpp build cannot decode on this machine: {e}", file=sys.stderr)
        return 1
    print(f"llama.cpp decodes {MODEL_ALIAS} here: " + "; ".join(said))
    return 0


if __name__ == "__main__":
    sys.exit(main())
