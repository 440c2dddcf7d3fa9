"""The local servers speak Gemma's own turn format, name it at ``/props``, stop at a turn's end, cap
replies, and (native engine) stop generating a reply whose client hung up. Real servers on 127.0.0.1, the real GGUF."""

import json
import re
import time
import urllib.request

import llama_cpp
import pytest

from tests.conftest import LLAMA_THREADS
from wikigame_spark.agents import prompts
from wikigame_spark.agents.llm_client import ChatClient, NoResponse, server_identity
from wikigame_spark.devtools.local_server import (
    GEMMA_TURNS,
    NATIVE,
    PYTHON,
    LlamaServer,
    gguf_path,
)

MESSAGES = prompts.first_messages("Rēzne", "Rēzne is a town in Latgale.", ["Latgola", "Daugpiļs", "Rēzne"])
CAP = 24

EXPECTED = (
    "<start_of_turn>user\n"
    f"{prompts.SYSTEM}\n\n{prompts.INTRO}<end_of_turn>\n"
    f"<start_of_turn>model\n{prompts.INTRO_REPLY}<end_of_turn>\n"
    f"<start_of_turn>user\n{MESSAGES[3]['content']}<end_of_turn>\n"
    f"<start_of_turn>model\n{prompts.ASK_REPLY}<end_of_turn>\n"
    f"<start_of_turn>user\n{MESSAGES[5]['content']}<end_of_turn>\n"
    "<start_of_turn>model\n"
)


def prompt_tokens(text: str) -> int:
    """Tokens of a rendered prompt, by the model's own tokenizer (BOS added, special tokens parsed)."""
    from llama_cpp import Llama

    vocab = Llama(model_path=gguf_path(), vocab_only=True, verbose=False)
    return len(vocab.tokenize(text.encode("utf-8"), add_bos=True, special=True))


@pytest.mark.parametrize("engine", [pytest.param(PYTHON, marks=pytest.mark.slow), NATIVE])
def test_server_renders_gemma_turns_and_caps_replies(engine, tmp_path):
    log = str(tmp_path / "server.log")
    with LlamaServer(engine=engine, n_ctx=2048, threads=LLAMA_THREADS, log_path=log, logits_all=False) as server:
        client = ChatClient(server.model, base_url=server.base_url, max_tokens=CAP, timeout=300)
        reply = client.chat(MESSAGES)
        if engine == NATIVE:  # the server's own rendering of the conversation
            request = urllib.request.Request(
                server.base_url.removesuffix("/v1") + "/apply-template",
                data=json.dumps({"messages": MESSAGES}).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=30) as r:
                assert json.load(r)["prompt"] == EXPECTED
        identity = server_identity(server.base_url, server.model)
    # each engine names the format it renders, for the play run's record
    assert identity["model"] == server.model
    if engine == NATIVE:
        assert identity["llm_engine"].startswith("llama.cpp server ")
        assert identity["chat_format"] == "gemma (built-in template)"
    else:
        assert identity["llm_engine"] == f"llama-cpp-python server {llama_cpp.__version__}"
        assert identity["chat_format"] == GEMMA_TURNS
    # the server tokenised exactly Gemma's turns: the same count as the rendered prompt
    assert reply.prompt_tokens == prompt_tokens(EXPECTED)
    assert 0 < reply.completion_tokens <= CAP
    assert "fallback chat format" not in open(log, encoding="utf-8", errors="replace").read().lower()


@pytest.mark.slow
def test_an_abandoned_request_is_cancelled_by_the_native_server(tmp_path):
    """A client that gives up on a reply hangs up, and the native server stops generating it (its
    log: ``stop: cancel task``) long before the reply's cap; the slot then serves the next request."""
    log = tmp_path / "server.log"
    with LlamaServer(engine=NATIVE, n_ctx=2048, threads=LLAMA_THREADS, log_path=str(log)) as server:
        client = ChatClient(server.model, base_url=server.base_url, max_tokens=400, timeout=3, retries=0)
        with pytest.raises(NoResponse, match="APITimeoutError"):
            client.chat(MESSAGES, {"ignore_eos": True})  # ignore_eos: the reply runs to its cap unless stopped
        gave_up = time.monotonic()
        # The log, not /slots, says when the slot is free: a request to the server while it waits on
        # the reply keeps it from noticing the hang-up (2 of 4 runs polling /slots ran to the cap).
        while "stop processing" not in log.read_text(errors="replace") and time.monotonic() < gave_up + 900:
            time.sleep(0.1)
        idle_after = time.monotonic() - gave_up
        reply = ChatClient(server.model, base_url=server.base_url, max_tokens=CAP, timeout=600).chat(MESSAGES)
    text = log.read_text(encoding="utf-8", errors="replace")
    assert "stop: cancel task" in text, text[-3000:]
    decoded = int(re.search(r"stop processing: n_tokens = (\d+)", text).group(1)) - prompt_tokens(EXPECTED)
    print(f"slot idle {idle_after:.1f} s after the client gave up; {decoded} of 400 tokens decoded")
    assert 0 <= decoded < 400
    assert 0 < reply.completion_tokens <= CAP


@pytest.mark.slow
def test_an_abandoned_request_is_ended_by_the_python_server(tmp_path):
    """llama_cpp.server finishes a plain reply whose client hung up; the devtools server ends it at
    the next token instead (its log: the reply's decoded tokens far below the cap), and then serves
    the next request."""
    log = tmp_path / "server.log"
    with LlamaServer(engine=PYTHON, n_ctx=2048, threads=LLAMA_THREADS, log_path=str(log)) as server:
        client = ChatClient(server.model, base_url=server.base_url, max_tokens=400, timeout=3, retries=0)
        with pytest.raises(NoResponse, match="APITimeoutError"):
            client.chat(MESSAGES, {"min_tokens": 400})  # llama_cpp.server's: no end of sequence before the cap
        gave_up = time.monotonic()
        reply = ChatClient(server.model, base_url=server.base_url, max_tokens=CAP, timeout=600).chat(MESSAGES)
        answered_after = time.monotonic() - gave_up
    text = log.read_text(encoding="utf-8", errors="replace")
    runs = [int(n) for n in re.findall(r"^llama_perf_context_print:\s+eval time =.*/\s*(\d+) runs", text, re.M)]
    print(f"next reply {answered_after:.1f} s after the client gave up; the abandoned one decoded {runs[0]} of 400")
    assert len(runs) == 2 and runs[0] < 300, text[-3000:]
    assert 0 < reply.completion_tokens <= CAP
