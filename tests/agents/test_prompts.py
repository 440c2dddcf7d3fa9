"""The prompt texts against the paper's listings (read from PAPER.md), and reply parsing."""

import json
import os
import re

import pytest

from tests.agents.test_chat_format import EXPECTED, MESSAGES
from tests.conftest import DATA
from wikigame_spark.agents import prompts as P
from wikigame_spark.agents.llm import MAX_TOKENS, REASONING_MAX_TOKENS, LlmAgent, ReasoningAgent
from wikigame_spark.devtools.local_server import SERVER_MAX_TOKENS

PAPER = os.path.join(os.path.dirname(DATA), "docs", "PAPER.md")


@pytest.fixture(scope="module")
def paper():
    with open(PAPER, encoding="utf-8") as f:
        return f.read()


def listing(paper, number):
    """The backquoted texts of the paper's bullet for "(Listing N)"."""
    block = paper.split(f"(Listing {number})", 1)[1].split("\n- ", 1)[0]
    texts = re.findall(r"`([^`]+)`", block)
    return texts if number == 6 else texts[0]


def test_listing5_conversation(paper):
    block = paper.split("### Prompt (Listing 5)", 1)[1].split("```", 2)[1]
    lines = [line.split(":", 1)[1].strip() for line in block.strip().splitlines() if ":" in line]
    msgs = P.first_messages('Title "quoted"', "A summary.", ["A", 'B "b"'])
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[0]["content"] == lines[0] and msgs[1]["content"] == lines[1] and msgs[2]["content"] == lines[2]
    assert json.loads(msgs[3]["content"]) == {"title": 'Title "quoted"', "summary": "A summary."}
    assert msgs[4]["content"] == lines[4]
    assert msgs[5]["content"] == lines[5].replace("<list_of_titles>", json.dumps(["A", 'B "b"']))


def test_follow_ups_are_the_paper_listings(paper):
    target = "Riga"
    stand_in, blank = listing(paper, 6)
    msgs = P.follow_up(P.BLANK_REPLY, "", target)
    assert msgs[0] == {"role": "assistant", "content": stand_in}
    assert msgs[1]["content"] == blank.replace("<target_title>", target)
    assert P.follow_up(P.NOT_JSON_REPLY, "hm", target)[1]["content"] == listing(paper, 7).replace(
        "<target_title>", target
    )
    assert P.follow_up(P.NO_TITLE_REPLY, "{}", target)[1]["content"] == listing(paper, 8).replace(
        "<target_title>", target
    )
    examples = [f"T{i}" for i in range(10)]
    got = P.follow_up(P.NOT_IN_LIST_REPLY, '{"title": "X"}', target, "X", examples)
    expected = listing(paper, 9).replace("<title>", "X").replace("<list_of_10_random_titles>", json.dumps(examples))
    assert got[0] == {"role": "assistant", "content": '{"title": "X"}'}
    assert got[1]["content"] == expected.replace("<target_title>", target)


@pytest.mark.parametrize(
    "reply, kind, title",
    [
        ('{"title": "A", "reason": "close"}', P.OK, "A"),
        ('Sure! ```json\n{"title": "B \\"b\\"", "reason": "x"}\n``` done', P.OK, 'B "b"'),
        ('I pick {"title": " A ", "reason": "x"} because', P.OK, "A"),
        ("", P.BLANK_REPLY, ""),
        ("null", P.BLANK_REPLY, ""),
        (None, P.BLANK_REPLY, ""),
        ("I would go to A.", P.NOT_JSON_REPLY, ""),
        ('{"reason": "no title"}', P.NO_TITLE_REPLY, ""),
        ('{"title": "Atlantis"}', P.NOT_IN_LIST_REPLY, "Atlantis"),
        ('<think>{"title": "Atlantis"}</think>{"title": "A"}', P.OK, "A"),
    ],
)
def test_parse_reply(reply, kind, title):
    assert P.parse_reply(reply, {"A", 'B "b"'}) == P.Parsed(kind, title)


def test_parse_reasoning_reply():
    shown = {"A"}
    assert P.parse_reply('Let me think... <answer>{"title": "A"}</answer>', shown, True) == P.Parsed(P.OK, "A")
    assert P.parse_reply('{"title": "A"}', shown, True) == P.Parsed(P.NO_ANSWER_REPLY)
    assert P.parse_reply("<answer>A</answer>", shown, True) == P.Parsed(P.NOT_JSON_REPLY)


def test_gemma_prompt_is_gemmas_turn_format():
    assert P.gemma_prompt(MESSAGES) == EXPECTED


def test_agents_have_a_default_completion_cap():
    assert LlmAgent.default_max_tokens == MAX_TOKENS == 200
    assert ReasoningAgent.default_max_tokens == REASONING_MAX_TOKENS > MAX_TOKENS
    assert SERVER_MAX_TOKENS >= REASONING_MAX_TOKENS
