"""The paper's prompts (Listings 5–9) and the parsing of replies: pure functions, no I/O.

The texts are the experiment's inputs and are kept verbatim, including the paper's "tying".
JSON inside prompts is built with a JSON encoder, since titles and summaries contain quotes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

SYSTEM = "You are a helpful assistant that helps me to play the Wikipedia Game!"
INTRO = (
    "If I give you the title and a summary of the target page that I am trying to navigate to, "
    "can you help me navigate to the target page?"
)
INTRO_REPLY = "Of course! What is your target page?"
ASK_REPLY = "Sure! I can help you navigate to that page, what titles are there on your current page?"
ASK = (
    "Here is a list of titles, which one should I pick? Please provide your answer in JSON format with the "
    'selected title given with key "title" and a justification given with key "reason". The selected title '
    "must be from the following list: {titles}"
)
# Beyond the paper (reasoning agent): think first, answer inside tags.
ASK_REASONING = (
    "Here is a list of titles, which one should I pick? Think step by step about which title brings you "
    "closest to the target page, then give your final answer in JSON format with the selected title given "
    'with key "title" and a justification given with key "reason", inside <answer></answer> tags. The '
    "selected title must be from the following list: {titles}"
)
ROUTE_SO_FAR = " So far I have visited these pages, in order: {route}."
# Beyond the paper (revisits allowed, route shown): which of the titles lead back to visited pages.
VISITED = " Of the titles in the list, I have already visited: {visited}."

_ONLY_TWO_FIELDS = (
    'The JSON should only include the two fields "title" and "reason", and the title should only include the '
    "title text."
)
_FORMAT = (
    'Please try again and provide your answer in JSON format with the selected title given with key "title" '
    'and a justification given with key "reason".'
)
UNKNOWN_REPLY = '{"title": "Unknown title", "reason": "I did not know which title to select."}'
BLANK = (
    'But "Unknown title" is not in the list that was provided! You must select a title from the list of '
    f"titles. {_FORMAT} {_ONLY_TWO_FIELDS} You are tying to select the best page title to reach the target "
    'page "{target}".'
)
NOT_JSON = (
    f"You did not provide your response in JSON format - please try again! {_ONLY_TWO_FIELDS} You are tying "
    'to select the best page title to reach the target page "{target}".'
)
NO_TITLE = (
    f"You must provide a title to navigate to. {_FORMAT} {_ONLY_TWO_FIELDS} You are tying to select the best "
    'page title to reach the target page "{target}"'
)
NOT_IN_LIST = (
    'But "{title}" is not in the list that was provided! You must select a title from the list of titles. '
    f"{_FORMAT} To jog your memory, 10 example titles from the list are: {{examples}}. {_ONLY_TWO_FIELDS} "
    'You are tying to select the best page title to reach the target page "{target}".'
)

OK = "ok"
BLANK_REPLY = "blank"
NOT_JSON_REPLY = "not_json"
NO_TITLE_REPLY = "no_title"
NOT_IN_LIST_REPLY = "not_in_list"
NO_ANSWER_REPLY = "no_answer"


def first_messages(
    target_title: str,
    target_summary: str,
    titles: list[str],
    reasoning: bool = False,
    route: list[str] | None = None,
    visited: list[str] | None = None,
) -> list[dict]:
    """Listing 5: the conversation sent at every step (plus the route and the visited titles
    among those offered, when given)."""
    ask = (ASK_REASONING if reasoning else ASK).format(titles=json.dumps(titles, ensure_ascii=False))
    if route:
        ask += ROUTE_SO_FAR.format(route=json.dumps(route, ensure_ascii=False))
    if visited:
        ask += VISITED.format(visited=json.dumps(visited, ensure_ascii=False))
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": INTRO},
        {"role": "assistant", "content": INTRO_REPLY},
        {"role": "user", "content": json.dumps({"title": target_title, "summary": target_summary}, ensure_ascii=False)},
        {"role": "assistant", "content": ASK_REPLY},
        {"role": "user", "content": ask},
    ]


def follow_up(kind: str, reply: str, target_title: str, title: str = "", examples: list[str] = ()) -> list[dict]:
    """The model's reply and the paper's follow-up for a bad answer (Listings 6–9)."""
    if kind == BLANK_REPLY:
        return [
            {"role": "assistant", "content": UNKNOWN_REPLY},
            {"role": "user", "content": BLANK.format(target=target_title)},
        ]
    if kind == NOT_JSON_REPLY:
        text = NOT_JSON.format(target=target_title)
    elif kind == NO_TITLE_REPLY:
        text = NO_TITLE.format(target=target_title)
    elif kind == NOT_IN_LIST_REPLY:
        text = NOT_IN_LIST.format(
            title=title, examples=json.dumps(list(examples), ensure_ascii=False), target=target_title
        )
    else:
        raise ValueError(f"no follow-up for a reply of kind {kind!r}")
    return [{"role": "assistant", "content": reply}, {"role": "user", "content": text}]


@dataclass(frozen=True)
class Parsed:
    kind: str  # ok | blank | not_json | no_title | not_in_list | no_answer
    title: str = ""


_THINK = re.compile(r"<think>(.*?)</think>\s*", re.S | re.I)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S | re.I)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)


def json_objects(text: str) -> Iterator[dict]:
    """Every JSON object in the text, in order (bare or embedded in prose; those nested in one not apart)."""
    decoder, start = json.JSONDecoder(), text.find("{")
    while start != -1:
        try:
            obj, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        yield obj
        start = text.find("{", end)


def split_thinking(text: str | None) -> tuple[str | None, str | None]:
    """(answer, thinking): a reply's ``<think>…</think>`` blocks cut from its text."""
    if not text or "<think>" not in text.lower():
        return text, None
    thoughts = _THINK.findall(text)
    return _THINK.sub("", text), "\n".join(thoughts) if thoughts else None


def _json_object(text: str) -> dict | None:
    """The first JSON object in the text (bare, fenced, or embedded in prose), or None."""
    for candidate in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        for obj in json_objects(candidate):
            return obj
    return None


def parse_reply(reply: str | None, shown: set[str], reasoning: bool = False) -> Parsed:
    """Classify a reply: an answer among the titles shown, or which follow-up it needs."""
    if reply is None or not reply.strip() or reply.strip().lower() == "null":
        return Parsed(BLANK_REPLY)
    text, _ = split_thinking(reply)
    if reasoning:
        answers = _ANSWER.findall(text)
        if not answers:
            return Parsed(NO_ANSWER_REPLY)
        text = answers[-1]
    obj = _json_object(text)
    if obj is None:
        return Parsed(NOT_JSON_REPLY)
    title = obj.get("title")
    if not isinstance(title, str) or not title.strip():
        return Parsed(NO_TITLE_REPLY)
    title = title.strip()
    return Parsed(OK, title) if title in shown else Parsed(NOT_IN_LIST_REPLY, title)


# Gemma's own turn format, for servers of a GGUF that carries no chat template (devtools/local_server.py).
GEMMA_START = "<start_of_turn>"
GEMMA_END = "<end_of_turn>"


def gemma_prompt(messages: list[dict]) -> str:
    """The conversation as Gemma's chat template (and llama.cpp's built-in ``gemma`` template)
    renders it: ``<start_of_turn>user|model`` turns closed by ``<end_of_turn>``, the system message
    folded into the first user turn (Gemma has no system role), contents trimmed, and an open model
    turn at the end for the reply."""
    system = "".join(m["content"].strip() for m in messages if m["role"] == "system")
    out = []
    for m in messages:
        if m["role"] == "system":
            continue
        role = "model" if m["role"] == "assistant" else m["role"]
        out.append(f"{GEMMA_START}{role}\n")
        if system and role != "model":
            out.append(f"{system}\n\n")
            system = ""
        out.append(f"{m['content'].strip()}{GEMMA_END}\n")
    return "".join(out) + f"{GEMMA_START}model\n"


# Beyond the paper (likelihood agent): the paper's prompt as plain text a base model continues;
# each offered title is scored as the continuation, a newline closing it so that a title that is
# the start of another does not win by stopping early.
LIKELIHOOD_PROMPT = (
    "{intro}\nThe target page: {target}\nI am on the page {current}. Of the titles on this page, "
    "the next page to click is:"
)


def likelihood_prefix(target_title: str, target_summary: str, current_title: str) -> str:
    """The prompt every offered title continues: the paper's opening, the target's title and summary
    (JSON, as the paper sends them), the current page, and "the next page to click is:"."""
    target = json.dumps({"title": target_title, "summary": target_summary}, ensure_ascii=False)
    current = json.dumps(current_title, ensure_ascii=False)
    return LIKELIHOOD_PROMPT.format(intro=f"{SYSTEM} {INTRO}", target=target, current=current)


def likelihood_continuation(title: str) -> str:
    return f" {title}\n"


def continuation_score(offsets: list[int], logprobs: list[float | None], start: int, end: int) -> tuple[float, int]:
    """(sum of log-probs, tokens) of the tokens of ``prompt[start:end]``, from a server's echoed
    offsets: from the token that holds character ``start`` (a token across the boundary counts as
    the continuation's), up to the tokens generated after the prompt (offset ``end`` and on)."""
    first = max(i for i, o in enumerate(offsets) if o <= start)
    picked = [lp for o, lp in zip(offsets[first:], logprobs[first:]) if o < end]
    if not picked or any(lp is None for lp in picked):
        raise ValueError(f"no log-probs for the continuation at characters {start}..{end}")
    return float(sum(picked)), len(picked)


# Constrained choice (beyond the paper): the answer restricted to the offered titles by the server.
REASON_CHARS = 40  # each free character is a grammar-checked token: keep the reason short


def answer_schema(titles: list[str]) -> dict:
    """The paper's answer as a JSON schema: a title among ``titles`` and a reason."""
    return {
        "type": "object",
        "properties": {"title": {"type": "string", "enum": list(titles)}, "reason": {"type": "string"}},
        "required": ["title", "reason"],
        "additionalProperties": False,
    }


def _gbnf_literal(text: str) -> str:
    for raw, escaped in (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t")):
        text = text.replace(raw, escaped)
    return f'"{text}"'


def answer_grammar(titles: list[str], reasoning: bool = False) -> str:
    """A GBNF grammar (llama.cpp) for the paper's answer, ``{"title": <an offered title>, "reason":
    "…"}`` (JSON-encoded as the prompt shows them, a reason of at most :data:`REASON_CHARS`
    characters); for the reasoning agent, free thinking (no ``<``) before it in ``<answer>`` tags."""
    choices = " | ".join(_gbnf_literal(json.dumps(t, ensure_ascii=False)) for t in titles)
    answer = '"{\\"title\\": " title ", \\"reason\\": \\"" reason "\\"}"'
    root = f"think {_gbnf_literal('<answer>')} answer {_gbnf_literal('</answer>')}" if reasoning else "answer"
    lines = [f"root ::= {root}"]
    lines.append(f"answer ::= {answer}")
    lines.append(f"title ::= {choices}")
    lines.append(f'reason ::= [^"\\\\\\n<]{{0,{REASON_CHARS}}}')
    if reasoning:
        lines.append("think ::= [^<]*")
    return "\n".join(lines) + "\n"
