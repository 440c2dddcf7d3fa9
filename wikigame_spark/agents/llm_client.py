"""Calling an OpenAI-compatible chat endpoint: timeouts, bounded retries with backoff, a reply cache.

Kept apart from building requests and parsing replies (:mod:`prompts`). A refused request
(4xx other than 429) raises :class:`BadRequest` at once; timeouts, 429 and 5xx are retried with
exponential backoff and then raise :class:`NoResponse`. The optional on-disk cache is keyed by
the request itself, so a rerun of the same games costs no calls.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import time
import urllib.request
from dataclasses import dataclass

import openai

log = logging.getLogger(__name__)


class BadRequest(Exception):
    """The server refused the request (content filter, invalid request, auth): no retry helps."""


class NoResponse(Exception):
    """No usable response after every retry (timeouts, 429, 5xx, connection errors)."""


@dataclass(frozen=True)
class Reply:
    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False


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
    ) -> None:
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

    def _request(self, messages: list[dict]) -> dict:
        request = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if self.seed is not None:
            request["seed"] = self.seed
        if self.max_tokens:
            request["max_tokens"] = self.max_tokens
        return request

    def _cache_file(self, request: dict) -> str:
        key = hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        return os.path.join(self.cache_dir, key[:2], f"{key}.json")

    def chat(self, messages: list[dict]) -> Reply:
        """One completion; raises :class:`BadRequest` or :class:`NoResponse`."""
        request = self._request(messages)
        if self.cache_dir:
            path = self._cache_file(request)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    return Reply(**{**json.load(f), "cached": True})
        reply = self._call(request)
        if self.cache_dir:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(
                    {
                        "text": reply.text,
                        "prompt_tokens": reply.prompt_tokens,
                        "completion_tokens": reply.completion_tokens,
                    },
                    f,
                )
            os.replace(tmp, path)
        return reply

    def _call(self, request: dict) -> Reply:
        for attempt in range(self.retries + 1):
            try:
                response = self.client.chat.completions.create(**request)
            except _RETRIABLE as e:
                if attempt == self.retries:
                    raise NoResponse(f"{type(e).__name__} after {attempt + 1} attempts: {e}") from e
                delay = self.backoff * 2**attempt
                log.info("%s; retrying in %.1fs", type(e).__name__, delay)
                time.sleep(delay)
                continue
            except openai.APIStatusError as e:
                raise BadRequest(f"HTTP {e.status_code}: {e.message}") from e
            except openai.APIResponseValidationError as e:
                raise NoResponse(f"malformed response: {e}") from e
            choices = getattr(response, "choices", None) or []
            text = choices[0].message.content if choices and choices[0].message else None
            usage = getattr(response, "usage", None)
            return Reply(
                text,
                getattr(usage, "prompt_tokens", 0) or 0,
                getattr(usage, "completion_tokens", 0) or 0,
            )
        raise NoResponse("no attempt made")  # retries < 0


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
