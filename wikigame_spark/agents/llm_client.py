"""Calling an OpenAI-compatible server: timeouts, bounded retries with backoff, a reply cache,
requests in flight bounded by what the server serves, the server checked before any game.

Kept apart from building requests and parsing replies (:mod:`prompts`). A refused request
(4xx other than 429) raises :class:`BadRequest` at once; timeouts, 429 and 5xx are retried with
exponential backoff and then raise :class:`NoResponse`. The optional on-disk cache is keyed by
the request itself, so a rerun of the same games costs no calls.

Every request first takes one of the server's slots (:class:`Slots`: one lock file per slot,
shared by every thread and process of this machine), so the client never queues more requests at
the server than it decodes at once, and a request's timeout starts when it is sent: time spent
waiting for a slot is the client's, never counted as the server's failure.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import ipaddress
import json
import logging
import os
import re
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import openai

from wikigame_spark.agents.prompts import split_thinking

log = logging.getLogger(__name__)


class BadRequest(Exception):
    """The server refused the request (content filter, invalid request, auth): no retry helps."""


class NoResponse(Exception):
    """No usable response after every retry (timeouts, 429, 5xx, connection errors);
    ``connection``: the last attempt could not reach the server at all."""

    def __init__(self, message: str, connection: bool = False) -> None:
        super().__init__(message)
        self.connection = connection


class ServerUnreachable(ValueError):
    """The LLM server does not answer, or cannot do what the agent needs: the user's to fix
    (a ``ValueError``, so a job ends with one ``error:`` line and exit 2)."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply, as the server parsed it: ``arguments`` the JSON text it generated."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Reply:
    """A completion: its answer (``text``), its thinking (``reasoning``: the server's
    ``reasoning_content``, or ``<think>`` tags cut from the text), its tool calls and its tokens
    (``cached_tokens`` of the prompt's read from the server's prefix cache, ``reasoning_tokens`` of
    the completion's spent thinking); ``cached``: read from the reply cache, no request made."""

    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()

    @classmethod
    def from_json(cls, data: dict) -> Reply:
        calls = tuple(ToolCall(**c) for c in data.pop("tool_calls", ()))
        return cls(**data, tool_calls=calls)


def _usage(response, text: str | None, reasoning: str | None) -> dict:
    """The reply's token counts: cached prompt tokens as OpenAI reports them
    (``prompt_tokens_details.cached_tokens``) or llama.cpp (``timings.cache_n``); reasoning tokens
    as OpenAI reports them (``completion_tokens_details.reasoning_tokens``), else the completion's
    tokens in proportion to the thinking's characters (a server that returns the thinking but does
    not count it)."""
    usage = getattr(response, "usage", None)
    prompt = getattr(usage, "prompt_tokens", 0) or 0
    completion = getattr(usage, "completion_tokens", 0) or 0
    cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None)
    if cached is None:
        cached = (getattr(response, "timings", None) or {}).get("cache_n", 0)
    thinking = getattr(getattr(usage, "completion_tokens_details", None), "reasoning_tokens", None)
    if thinking is None and reasoning:
        thinking = round(completion * len(reasoning) / (len(reasoning) + len(text or "")))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cached_tokens": min(int(cached or 0), prompt),
        "reasoning_tokens": int(thinking or 0),
    }


_RETRIABLE = (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)


class ChatClient:
    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        timeout: float = 60.0,
        retries: int = 5,
        backoff: float = 1.0,
        max_tokens: int | None = None,
        cache_dir: str = "",
        slots: Slots | None = None,
    ) -> None:
        self.slots = slots
        self.model = model
        self.temperature = temperature
        self.seed = seed
        self.retries = retries
        self.backoff = backoff
        self.max_tokens = max_tokens
        self.cache_dir = cache_dir
        self.client = openai.OpenAI(
            base_url=base_url or os.environ.get("OPENAI_BASE_URL") or None,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
            timeout=timeout,
            max_retries=0,  # retries are ours, so that every kind of failure is counted the same way
        )

    def _request(self, messages: list[dict], extra: dict | None = None, tools: list[dict] | None = None) -> dict:
        request = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if tools:  # one call a turn, the model's choice whether to call (OpenAI's "auto")
            request.update(tools=tools, tool_choice="auto", parallel_tool_calls=False)
        if self.seed is not None:
            request["seed"] = self.seed
        if self.max_tokens:
            request["max_tokens"] = self.max_tokens
        if extra:  # fields beyond OpenAI's (a grammar) travel in the body as they are
            request["extra_body"] = extra
        return request

    def _cache_file(self, request: dict) -> str:
        key = hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        return os.path.join(self.cache_dir, key[:2], f"{key}.json")

    def chat(self, messages: list[dict], extra: dict | None = None, tools: list[dict] | None = None) -> Reply:
        """One completion (``extra``: request fields such as ``response_format`` or ``grammar``;
        ``tools``: OpenAI function tools the model may call); raises :class:`BadRequest` or
        :class:`NoResponse`."""
        request = self._request(messages, extra, tools)
        if self.cache_dir:
            path = self._cache_file(request)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    return dataclasses.replace(Reply.from_json(json.load(f)), cached=True)
        reply = self._call(request)
        if self.cache_dir:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({k: v for k, v in dataclasses.asdict(reply).items() if k != "cached"}, f)
            os.replace(tmp, path)
        return reply

    def _call(self, request: dict) -> Reply:
        response = retrying(
            lambda: self.client.chat.completions.create(**request), self.retries, self.backoff, self.slots
        )
        choices = getattr(response, "choices", None) or []
        message = choices[0].message if choices else None
        text, reasoning = split_thinking(message.content if message else None)
        reasoning = getattr(message, "reasoning_content", None) or reasoning
        calls = tuple(
            ToolCall(c.id or f"call_{i}", c.function.name or "", c.function.arguments or "")
            for i, c in enumerate(getattr(message, "tool_calls", None) or [])
            if getattr(c, "function", None) is not None
        )
        return Reply(text, reasoning=reasoning, tool_calls=calls, **_usage(response, text, reasoning))


def retrying(call: Callable, retries: int, backoff: float, slots: Slots | None = None):
    """``call()`` inside a slot, retried on timeouts, 429, 5xx and connection errors with
    exponential backoff (the slot is given back while waiting); raises :class:`BadRequest` or
    :class:`NoResponse`."""
    for attempt in range(retries + 1):
        try:
            with slots.held() if slots else contextlib.nullcontext():
                return call()
        except _RETRIABLE as e:
            if attempt == retries:
                raise NoResponse(
                    f"{type(e).__name__} after {attempt + 1} attempts: {e}",
                    connection=isinstance(e, openai.APIConnectionError) and not isinstance(e, openai.APITimeoutError),
                ) from e
            delay = backoff * 2**attempt
            log.info("%s; retrying in %.1fs", type(e).__name__, delay)
            time.sleep(delay)
        except openai.APIStatusError as e:
            raise BadRequest(f"HTTP {e.status_code}: {e.message}") from e
        except openai.APIResponseValidationError as e:
            raise NoResponse(f"malformed response: {e}") from e
    raise NoResponse("no attempt made")  # retries < 0


@dataclass(frozen=True)
class PromptLogprobs:
    """A prompt as the server tokenised it: each token's text, its offset in the prompt and its
    log-probability given the tokens before it (None for the first)."""

    tokens: list[str]
    offsets: list[int]
    logprobs: list[float | None]
    prompt_tokens: int = 0


class CompletionClient:
    """``POST /v1/completions`` with ``echo`` and ``logprobs``: the server's log-probabilities of
    a prompt's own tokens, lm-evaluation-harness's ``local-completions`` convention (one token
    generated: llama-cpp-python refuses ``max_tokens`` 0; its token is after the prompt and ignored)."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        retries: int = 5,
        backoff: float = 1.0,
        slots: Slots | None = None,
    ) -> None:
        self.model, self.retries, self.backoff, self.slots = model, retries, backoff, slots
        self.client = openai.OpenAI(
            base_url=base_url or os.environ.get("OPENAI_BASE_URL") or None,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
            timeout=timeout,
            max_retries=0,
        )

    def logprobs(self, prompt: str, reuse_prefix: bool = True) -> PromptLogprobs:
        """The echoed prompt's token log-probs; raises :class:`BadRequest`, :class:`NoResponse`,
        or :class:`ServerUnreachable` for a server that answers without them."""
        extra = {} if reuse_prefix else {"cache_prompt": False}  # llama.cpp's name for its prefix cache

        def call():
            return self.client.completions.create(
                model=self.model,
                prompt=prompt,
                echo=True,
                logprobs=1,
                max_tokens=1,
                temperature=0.0,
                extra_body=extra or None,
            )

        response = retrying(call, self.retries, self.backoff, self.slots)
        choices = getattr(response, "choices", None) or []
        lp = getattr(choices[0], "logprobs", None) if choices else None
        offsets = getattr(lp, "text_offset", None) if lp else None
        values = getattr(lp, "token_logprobs", None) if lp else None
        if not offsets or values is None or len(offsets) != len(values):
            raise ServerUnreachable(
                "the LLM server returned no log-probabilities of the prompt (echo with logprobs); "
                "the likelihood agent needs a server that does (llama-cpp-python's server with "
                "logits_all, vLLM; llama.cpp's llama-server does not)"
            )
        usage = getattr(response, "usage", None)
        return PromptLogprobs(
            list(lp.tokens or []), list(offsets), list(values), getattr(usage, "prompt_tokens", 0) or 0
        )


def api_root(base_url: str | None) -> tuple[str, str]:
    """The OpenAI base URL (``…/v1``) and the server's root (where llama.cpp serves ``/props``)."""
    base = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
    return base, base[: -len("/v1")] if base.endswith("/v1") else base


def is_local(base_url: str | None) -> bool:
    """The server is on this machine (a loopback address or ``localhost``)."""
    host = urllib.parse.urlsplit(api_root(base_url)[0]).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def server_slots(base_url: str | None, api_key: str | None = None, timeout: float = 5.0) -> int | None:
    """How many requests the server decodes at once, where it says: llama-server's ``/props``
    (``total_slots``) or ``/slots``, devtools.local_server's ``/props``; else one for a server on
    this machine (llama-cpp-python's serves one at a time) and None (unknown) for a remote one."""
    _, root = api_root(base_url)
    key = api_key or os.environ.get("OPENAI_API_KEY") or None
    props = _get_json(f"{root}/props", key, timeout) or {}
    if isinstance(props.get("total_slots"), int) and props["total_slots"] > 0:
        return props["total_slots"]
    slots = _get_json(f"{root}/slots", key, timeout)
    if isinstance(slots, list) and slots:
        return len(slots)
    return 1 if is_local(base_url) else None


class Slots:
    """At most ``n`` requests in flight to one server from every thread and process of this
    machine: one ``flock``-ed file per slot (a lock is per open file, so threads of one process
    exclude each other as processes do; a dead holder's lock is released by the kernel)."""

    def __init__(self, base_url: str, n: int, folder: str | None = None) -> None:
        digest = hashlib.sha1(api_root(base_url)[0].encode()).hexdigest()[:16]
        self.folder = folder or os.path.join(tempfile.gettempdir(), "wikigame-llm-slots", digest)
        self.n = n
        os.makedirs(self.folder, exist_ok=True)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        delay = 0.005
        while True:
            for i in range(self.n):
                fd = os.open(os.path.join(self.folder, f"slot-{i}.lock"), os.O_RDWR | os.O_CREAT, 0o666)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                try:
                    yield
                finally:
                    os.close(fd)  # closing the file releases its lock
                return
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


def check_server(base_url: str | None, api_key: str | None = None, timeout: float = 10.0) -> list[str]:
    """The model names the server lists at ``/v1/models``; :class:`ServerUnreachable` naming
    ``--base-url`` when it does not answer, refuses the key, or answers with something else."""
    base, _ = api_root(base_url)
    key = api_key or os.environ.get("OPENAI_API_KEY") or None
    request = urllib.request.Request(f"{base}/models", headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            listed = json.load(r).get("data")
    except urllib.error.HTTPError as e:
        raise ServerUnreachable(f"--base-url {base}: GET /models answered HTTP {e.code} ({e.reason})") from e
    except (OSError, ValueError, AttributeError) as e:
        reason = getattr(e, "reason", None) or e
        raise ServerUnreachable(f"--base-url {base}: the LLM server does not answer GET /models ({reason})") from e
    if not isinstance(listed, list):
        raise ServerUnreachable(f"--base-url {base}: GET /models is not an OpenAI model list")
    return [str(m.get("id")) for m in listed if isinstance(m, dict)]


# Chat formats recognised by their turn markers in a server's reported template.
_TEMPLATE_MARKERS = (
    ("<start_of_turn>", "gemma"),
    ("<|start_header_id|>", "llama-3"),
    ("<|im_start|>", "chatml"),
    ("[INST]", "llama-2"),
)


def _get_json(url: str, api_key: str | None, timeout: float) -> dict | None:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return json.load(r)
    except (OSError, ValueError):
        return None


def server_identity(base_url: str | None, model: str, api_key: str | None = None, timeout: float = 5.0) -> dict:
    """What the server says it serves, for a play run's record: the model's name as the server
    reports it, the engine, the chat format (from ``/props`` when offered: llama.cpp's template, or
    the format per model that local_server's python engine names; ``unreported`` otherwise)."""
    base = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
    key = api_key or os.environ.get("OPENAI_API_KEY") or None
    listed = (_get_json(f"{base}/models", key, timeout) or {}).get("data") or []
    entry = next((m for m in listed if m.get("id") == model), listed[0] if len(listed) == 1 else {})
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    props = _get_json(f"{root}/props", key, timeout) or {}
    identity = {"model": entry.get("id") or model, "llm_engine": "", "chat_format": "unreported", "model_digest": ""}
    if "chat_template" in props or "build_info" in props:
        template = props.get("chat_template") or ""
        identity["llm_engine"] = f"llama.cpp server {props.get('build_info') or ''}".strip()
        named = next((name for marker, name in _TEMPLATE_MARKERS if marker in template), None)
        digest = hashlib.sha1(template.encode("utf-8")).hexdigest()[:12]
        if re.fullmatch(r"[\w.-]+", template):  # a built-in template named by --chat-template, not Jinja
            identity["chat_format"] = f"{template} (built-in template)"
        else:
            identity["chat_format"] = f"{named or 'template'} (template sha1 {digest})" if template else "unreported"
    elif isinstance(props.get("chat_format"), dict):  # local_server's python engine: a format per model
        identity["llm_engine"] = str(props.get("engine") or "")
        identity["chat_format"] = props["chat_format"].get(identity["model"]) or "unreported"
    elif "llama.cpp" in str((_get_json(f"{root}/openapi.json", key, timeout) or {}).get("info", {}).get("title")):
        identity["llm_engine"] = "llama-cpp-python server"
    else:
        identity["llm_engine"] = entry.get("owned_by") or ("unreachable" if not listed else "")
    return identity
