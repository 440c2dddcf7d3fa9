"""The tool protocol (``--interface tools``): the game as OpenAI function tools, pure functions, no I/O.

The model gets ``click_link(title)`` (its ``title`` an ``enum`` of the page's link titles, which
servers that build a grammar from the schema, as llama.cpp's does, hold it to) and, when the back
button is allowed, ``go_back()``. Each turn it must make one call; the call's result is the next
page as the agent sees it: its title and its links (and where the back button leads).

Invalid calls are handled as wikiarena's "tool_strict_v1" handles them: checked in its order
(several calls, no call, an unknown tool, no title, a title not on the page), answered with an
``Invalid move`` message that names the reason and the fix (as the result of every call the reply
made, or a user message when it made none), and the model is asked again on the same page. The
game ends ``invalid_calls`` after more than ``invalid_per_page`` on one page or ``invalid_per_game``
in all (wikiarena: 2 and 15).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from wikigame_spark.agents.prompts import json_objects

CLICK_LINK = "click_link"
GO_BACK = "go_back"

SYSTEM = (
    "You are playing the Wikipedia Game: starting from one Wikipedia page, reach the target page by following "
    "links. You only see the current page's links. Each turn, call the tool {tools} exactly once."
)
TASK = 'The target page is "{target}". Its summary: {summary}'
TASK_END = "\n\n"  # between the task and the first page, in the first user message
PAGE = 'You are on the page "{title}".\nIts links: {links}'
BACK = '\nThe back button (go_back) leads to "{title}".'
EARLIER_PAGE = 'You were on the page "{title}".'  # a page's result once it is out of the history kept

# Invalid calls, in the order they are checked (wikiarena's reason codes).
MULTIPLE = "multiple_tool_calls"
NO_CALL = "tool_call_required"
UNKNOWN_TOOL = "tool_not_allowed"
NO_TITLE = "missing_link_selection"
NOT_ON_PAGE = "link_not_present"
REASONS = {
    MULTIPLE: "you made {count} tool calls; make exactly one",
    NO_CALL: "you made no tool call",
    UNKNOWN_TOOL: "{name!r} is not one of your tools",
    NO_TITLE: "click_link needs a title (arguments: {arguments})",
    NOT_ON_PAGE: "{title!r} is not a link on this page",
}
INVALID = 'Invalid move. You are still on the page "{page}". Reason: {reason}. Fix: call {fix}.'


def tools(titles: list[str], back: bool) -> list[dict]:
    """The OpenAI function tools of one turn: click_link among ``titles``, and go_back if allowed."""
    click = {
        "type": "function",
        "function": {
            "name": CLICK_LINK,
            "description": "Follow one link of the current page to the page it leads to.",
            "parameters": {
                "type": "object",
                "properties": {"title": {"type": "string", "enum": list(titles), "description": "the link's title"}},
                "required": ["title"],
            },
        },
    }
    if not back:
        return [click]
    go_back = {
        "type": "function",
        "function": {
            "name": GO_BACK,
            "description": "Go back to the previous page (a move, as a click is).",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    return [click, go_back]


def system(back: bool) -> dict:
    names = f"{CLICK_LINK} (or {GO_BACK})" if back else CLICK_LINK
    return {"role": "system", "content": SYSTEM.format(tools=names)}


def page(title: str, links: list[str], back: str | None) -> str:
    """A page as the agent sees it: its title, its links (JSON), where the back button leads."""
    text = PAGE.format(title=title, links=json.dumps(links, ensure_ascii=False))
    return text + (BACK.format(title=back) if back is not None else "")


def task(target: str, summary: str) -> str:
    return TASK.format(target=target, summary=summary)


@dataclass(frozen=True)
class Call:
    """A reply's call, checked: ``reason`` empty for a valid one (``back`` or ``title`` chosen)."""

    reason: str = ""
    detail: str = ""
    title: str = ""
    back: bool = False


def check(calls: list[tuple[str, str]], titles: set[str], back: bool) -> Call:
    """The reply's calls (name, JSON arguments), checked in wikiarena's order against the page."""
    if len(calls) > 1:
        return Call(MULTIPLE, REASONS[MULTIPLE].format(count=len(calls)))
    if not calls:
        return Call(NO_CALL, REASONS[NO_CALL])
    name, arguments = calls[0]
    if name == GO_BACK and back:
        return Call(back=True)
    if name != CLICK_LINK:
        return Call(UNKNOWN_TOOL, REASONS[UNKNOWN_TOOL].format(name=name))
    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        args = None
    title = args.get("title") if isinstance(args, dict) else None
    if not isinstance(title, str) or not title.strip():
        return Call(NO_TITLE, REASONS[NO_TITLE].format(arguments=(arguments or "")[:200]))
    if title not in titles:
        return Call(NOT_ON_PAGE, REASONS[NOT_ON_PAGE].format(title=title), title)
    return Call(title=title)


def text_calls(text: str | None) -> list[tuple[str, str]]:
    """The calls written in a reply's text: every JSON object with a ``name`` (name, arguments as JSON)."""
    calls = []
    for obj in json_objects(text or ""):
        if isinstance(obj.get("name"), str):
            arguments = obj.get("arguments", obj.get("parameters", {}))
            calls.append((obj["name"], arguments if isinstance(arguments, str) else json.dumps(arguments)))
    return calls


def assistant(text: str | None, calls: list[tuple[str, str, str]]) -> dict:
    """The model's reply as the conversation keeps it: its text and its calls (id, name, arguments)."""
    message: dict = {"role": "assistant", "content": text or ""}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls
        ]
    return message


def invalid(call: Call, page_title: str, call_ids: list[str], back: bool) -> list[dict]:
    """The answer to an invalid reply: the error as each call's result, or a user message if none."""
    fix = f'{CLICK_LINK}({{"title": <one of the page\'s links>}})' + (f" or {GO_BACK}()" if back else "")
    text = INVALID.format(page=page_title, reason=call.detail, fix=fix)
    if not call_ids:
        return [{"role": "user", "content": text}]
    return [{"role": "tool", "tool_call_id": i, "content": text} for i in call_ids]


def result(call_id: str, text: str) -> dict:
    """The valid call's result: the page it led to (a user message for a call written in text)."""
    if not call_id:
        return {"role": "user", "content": text}
    return {"role": "tool", "tool_call_id": call_id, "content": text}
