"""An OpenAI-compatible chat server on 127.0.0.1 that misbehaves on purpose, per target title.

The target's title (from the conversation's JSON message) picks the behaviour, so one run covers
every failure: 500s, timeouts, refusals, non-JSON, blank replies, invented titles, replies
without a title or without answer tags, and transient 429/500 before a good answer. Any other
target gets a good answer (the target if listed, else the first title) after ``latency`` seconds:
the stand-in for a hosted API, whose time per request is waiting, not this machine's work.

A request with ``tools`` (the tool interface, agents/tool_calls.py) is answered by tool calls the
same way: a good ``click_link`` call, or by the target's last word no call (``garbage``), a title
not on the page (``invent``), no title (``notitle``), arguments that are not JSON (``malformed``),
an unknown tool (``unknown``), two calls (``several``), no call once then good ones (``oncebad``),
a good call written as fenced JSON in the text instead (``intext``),
or a good call with the server's thinking (``thinks``: ``reasoning_content``, and its reasoning
and cached tokens in ``usage``).

It lists one model at ``/v1/models``, says at ``/props`` that it serves ``slots`` requests at
once (llama-server's ``total_slots``), and answers ``/v1/completions`` without log-probabilities
whatever is asked (as a server that cannot echo them): the likelihood agent must refuse it.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _target(messages: list[dict]) -> str:
    for m in messages:
        if m["role"] == "user" and m["content"].startswith("{"):
            try:
                return json.loads(m["content"]).get("title", "")
            except json.JSONDecodeError:
                pass
    return ""


TOOL_TARGET = re.compile(r'^The target page is "(.*?)"\. ')
TOOL_LINKS = "Its links: "


def _tool_page(messages: list[dict]) -> tuple[str, list[str]]:
    """The tool interface's target and the last page's links."""
    target = next((m.group(1) for x in messages if x["role"] == "user" and (m := TOOL_TARGET.match(x["content"]))), "")
    text = next(x["content"] for x in reversed(messages) if TOOL_LINKS in (x.get("content") or ""))
    start = text.index(TOOL_LINKS) + len(TOOL_LINKS)
    return target, json.JSONDecoder().raw_decode(text, start)[0]


def _call(name: str, arguments: str, n: int = 0) -> dict:
    return {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": arguments}}


def _titles(messages: list[dict]) -> list[str]:
    text = messages[5]["content"]
    start = text.index("following list: ") + len("following list: ")
    return json.JSONDecoder().raw_decode(text, start)[0]


class FaultyServer:
    def __init__(self, delay: float = 2.0, latency: float = 0.0, slots: int = 8) -> None:
        self.slots = slots
        self.delay = delay
        self.latency = latency
        self.requests: list[dict] = []
        self.calls: dict[str, int] = {}
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def _count(self, body: dict, target: str) -> int:
        """Record the request; how many the target's games have asked so far."""
        with self._lock:
            self.requests.append(body)
            n = self.calls[target] = self.calls.get(target, 0) + 1
        return n

    def _tool_reply(self, body: dict) -> tuple[int, dict | None, dict]:
        """A tool-interface request: (status, message, extra usage)."""
        target, links = _tool_page(body["messages"])
        n = self._count(body, target)
        good = _call("click_link", json.dumps({"title": target if target in links else links[0]}))
        kind = target.split()[-1].lower() if target else "good"
        calls = {
            "invent": [_call("click_link", json.dumps({"title": "Atlantis"}))],
            "notitle": [_call("click_link", "{}")],
            "malformed": [_call("click_link", '{"title": ')],
            "unknown": [_call("search", json.dumps({"query": target}))],
            "several": [good, _call("click_link", json.dumps({"title": links[-1]}), 1)],
        }
        if kind == "500":
            return 500, None, {}
        if kind == "garbage" or (kind == "oncebad" and n == 1):
            return 200, {"role": "assistant", "content": "I would click the link to the target."}, {}
        if kind == "intext":
            written = {"name": "click_link", "arguments": json.loads(good["function"]["arguments"])}
            return 200, {"role": "assistant", "content": f"```json\n{json.dumps(written)}\n```"}, {}
        if kind in calls:
            return 200, {"role": "assistant", "content": None, "tool_calls": calls[kind]}, {}
        message = {"role": "assistant", "content": None, "tool_calls": [good]}
        if kind == "thinks":
            usage = {
                "completion_tokens_details": {"reasoning_tokens": 3},
                "prompt_tokens_details": {"cached_tokens": 4},
            }
            return 200, {**message, "reasoning_content": "The target is listed, so I click it."}, usage
        return 200, message, {}

    def _reply_for(self, body: dict) -> tuple[int, str | None]:
        time.sleep(self.latency)
        messages = body["messages"]
        target = _target(messages)
        n = self._count(body, target)
        good = json.dumps({"title": target if target in _titles(messages) else _titles(messages)[0], "reason": "ok"})
        kind = target.split()[-1].lower() if target else "good"
        if kind == "500":
            return 500, None
        if kind == "slow":
            time.sleep(self.delay)
            return 200, good
        if kind == "refuse":
            return 400, "content_filter"
        if kind == "garbage":
            return 200, "I am not sure, maybe go somewhere nice."
        if kind == "blank":
            return 200, ""
        if kind == "invent":
            return 200, json.dumps({"title": "Atlantis", "reason": "made up"})
        if kind == "notitle":
            return 200, json.dumps({"reason": "forgot the title"})
        if kind == "noanswer":
            return 200, "I think the answer is obvious but I will not tag it."
        if kind == "flaky" and n == 1:
            return 500, None
        if kind == "busy" and n == 1:
            return 429, None
        if body.get("messages") and "<answer>" in messages[5]["content"]:
            return 200, f"Thinking step by step... <answer>{good}</answer>"
        return 200, good

    def _handler(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, payload) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self):
                if self.path.endswith("/models"):
                    self._send(
                        200, {"object": "list", "data": [{"id": "any", "object": "model", "owned_by": "faulty"}]}
                    )
                elif self.path == "/props":
                    self._send(200, {"total_slots": outer.slots})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path.endswith("/completions") and "messages" not in body:
                    text = "no"
                    choice = {"index": 0, "finish_reason": "length", "text": text, "logprobs": None}
                    usage = {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
                    payload = {"id": "x", "object": "text_completion", "created": 0, "model": body.get("model")}
                    self._send(200, {**payload, "choices": [choice], "usage": usage})
                    return
                usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
                if body.get("tools"):
                    status, message, details = outer._tool_reply(body)
                    text = "server error"
                    usage.update(details)
                else:
                    status, text = outer._reply_for(body)
                    message = {"role": "assistant", "content": text}
                if status == 200:
                    payload = {
                        "id": "x",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                        "usage": usage,
                    }
                else:
                    payload = {"error": {"message": text or "server error", "type": "error", "code": text}}
                self._send(status, payload)

        return Handler

    def __enter__(self) -> FaultyServer:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
