"""How a game ends: the one definition of every outcome name, below every layer that uses them.

The play engine, the agents, human play, the human-games import and the evaluation all write or
read these strings in the plays table's ``outcome`` column.
"""

from __future__ import annotations

# The rules (play/engine.py)
SUCCESS = "success"
STEP_LIMIT = "step_limit"
DEAD_END = "dead_end"
LOOP = "loop"
INVALID_CHOICE = "invalid_choice"
ENGINE_OUTCOMES = (SUCCESS, STEP_LIMIT, DEAD_END, LOOP)

# An LLM agent's failures (agents/llm.py)
HALLUCINATION = "hallucination"
BAD_REQUEST = "bad_request"
NO_RESPONSE = "no_response"
NO_ANSWER = "no_answer"
INVALID_CALLS = "invalid_calls"  # the tool protocol: too many replies without one valid tool call

# A person's (human/arena.py, ingest/humans.py)
GAVE_UP = "gave_up"
TIME_LIMIT = "time_limit"

# The server never answered (no_response): says nothing of the player, so it stays out of a
# success rate's denominator.
SERVER_FAILURES = (NO_RESPONSE,)

# Why a game was lost, as the report groups the losses: no usable answer after the paper's follow-ups
# or the tool protocol's limit of invalid calls (the answer's form), against valid moves every step
# that never reached the target (the route).
FORMATTING = (HALLUCINATION, NO_ANSWER, INVALID_CALLS)
NAVIGATION = (DEAD_END, STEP_LIMIT, LOOP)
