"""Table schemas and column names shared by every stage.

Node and edge tables use GraphFrames' column names (``id``, ``src``, ``dst``) so a graph
directory loads straight into a GraphFrame.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

ID = "id"
SRC = "src"
DST = "dst"
PAGE_ID = "page_id"
TITLE = "title"
SUMMARY = "summary"
TARGET = "target"

# The node contract every source meets and every later stage reads: a graph's nodes table has
# these columns; the source's own key and any other columns are allowed and carried along.
NODES = StructType(
    [
        StructField(ID, LongType(), False),
        StructField(TITLE, StringType(), False),
        StructField(SUMMARY, StringType(), False),
    ]
)
# Wikipedia's nodes: the contract plus the wiki's page id (OpenAlex's: OPENALEX_NODES below).
WIKIPEDIA_NODES = StructType(
    [
        StructField(ID, LongType(), False),
        StructField(PAGE_ID, LongType(), False),
        StructField(TITLE, StringType(), False),
        StructField(SUMMARY, StringType(), False),
    ]
)

EDGES = StructType([StructField(SRC, LongType(), False), StructField(DST, LongType(), False)])

REDIRECTS = StructType([StructField(TITLE, StringType(), False), StructField(TARGET, LongType(), False)])

# One row per page read from a dump, after per-page extraction on the executors.
# kind: article | redirect | other_namespace | rejected; reason says why a page was rejected or
# why a main-namespace redirect cannot be followed. links are normalised main-namespace link
# targets, one per occurrence; links_dropped counts the other occurrences by reason.
PAGES = StructType(
    [
        StructField("file", StringType(), False),
        StructField("kind", StringType(), False),
        StructField("reason", StringType(), True),
        StructField("ns", IntegerType(), True),
        StructField("is_redirect", BooleanType(), False),
        StructField(PAGE_ID, LongType(), True),
        StructField(TITLE, StringType(), True),
        StructField("redirect_to", StringType(), True),
        StructField("timestamp", StringType(), True),
        StructField("text_bytes", LongType(), True),
        StructField(SUMMARY, StringType(), True),
        StructField("links", ArrayType(StringType(), False), True),
        StructField("links_dropped", MapType(StringType(), LongType(), False), True),
        StructField("detail", StringType(), True),
    ]
)


def require_columns(df: DataFrame, needed: StructType | list[str], what: str) -> None:
    """Fail early, naming the missing columns, when a stage gets the wrong table."""
    names = needed.fieldNames() if isinstance(needed, StructType) else list(needed)
    missing = [c for c in names if c not in df.columns]
    if missing:
        raise ValueError(f"{what}: missing column(s) {missing}; got {df.columns}")


# --- Games (jobs/sample_games.py) ----------------------------------------------------------------
# One row per game: a (source, target) pair of node ids known to be reachable, with the exact
# length of a shortest directed path; game_id numbers the games 0…N−1 in draw order.
GAME_ID = "game_id"
SOURCE = "source"
OPTIMAL_STEPS = "optimal_steps"
# Optional node column (OpenAlex graphs) that --target-language filters on.
LANGUAGE = "language"

GAMES = StructType(
    [
        StructField(GAME_ID, LongType(), False),
        StructField(SOURCE, LongType(), False),
        StructField(TARGET, LongType(), False),
        StructField(OPTIMAL_STEPS, IntegerType(), False),
    ]
)


# --- Plays (jobs/play_games.py) --------------------------------------------------------------------
# One row per game played by an agent. route starts at the source; steps = pages moved to.
# queries/tokens/seconds are filled by agents that make requests (LLMs): prompt_tokens counts every
# input token, cached_tokens those of them the server read from its prefix cache, completion_tokens
# every output token, reasoning_tokens those of them spent thinking; invalid_calls: replies without
# one valid tool call (the tool protocol); price_usd: what the game cost (play/prices.py), null when
# no price was given. detail says more about an outcome that ended a game early. outcome: the engine's
# success | step_limit | dead_end | loop (revisits allowed, a deterministic agent back in a state it
# was in) or an agent's own (hallucination…).
AGENT = "agent"
MODEL = "model"
OUTCOME = "outcome"
STEPS = "steps"
ROUTE = "route"
PRICE = "price_usd"

PLAYS = StructType(
    [
        StructField("game_id", LongType(), False),
        StructField(AGENT, StringType(), False),
        StructField(MODEL, StringType(), True),
        StructField(OUTCOME, StringType(), False),
        StructField(STEPS, IntegerType(), False),
        StructField("optimal_steps", IntegerType(), False),
        StructField(ROUTE, ArrayType(LongType(), False), False),
        StructField("source", LongType(), False),
        StructField(TARGET, LongType(), False),
        StructField("queries", IntegerType(), False),
        StructField("prompt_tokens", LongType(), False),
        StructField("completion_tokens", LongType(), False),
        StructField("seconds", DoubleType(), False),
        StructField("detail", StringType(), True),
        StructField("cached_tokens", LongType(), False),
        StructField("reasoning_tokens", LongType(), False),
        StructField("invalid_calls", IntegerType(), False),
        StructField(PRICE, DoubleType(), True),
    ]
)
# The usage columns of a play without model requests (a person's): nothing counted, no price.
NO_MODEL_USAGE = {
    "queries": 0,
    "prompt_tokens": 0,
    "completion_tokens": 0,
    "cached_tokens": 0,
    "reasoning_tokens": 0,
    "invalid_calls": 0,
    PRICE: None,
}


# --- OpenAlex works → citation graphs (jobs/build_openalex.py) ------------------------------------
# Node columns besides ID, TITLE, SUMMARY and LANGUAGE (above); summary is the rebuilt abstract.
WORK_ID = "work_id"
FIELD = "field"
PUBLICATION_DATE = "publication_date"
DOI = "doi"
REFERENCES = "references"

OPENALEX_NODES = StructType(
    [
        StructField(ID, LongType(), False),
        StructField(WORK_ID, StringType(), False),
        StructField(TITLE, StringType(), False),
        StructField(SUMMARY, StringType(), False),
        StructField(LANGUAGE, StringType(), False),
        StructField(FIELD, StringType(), False),
        StructField(PUBLICATION_DATE, StringType(), True),
        StructField(DOI, StringType(), True),
    ]
)

# A snapshot record, as read: only the fields the graph needs (the JSON reader skips the rest).
ABSTRACT_INVERTED_INDEX = MapType(StringType(), ArrayType(IntegerType()))
_DISPLAY_NAME = StructType([StructField("display_name", StringType())])


def _openalex_work(abstract_type) -> StructType:
    return StructType(
        [
            StructField("id", StringType()),
            StructField(DOI, StringType()),
            StructField(TITLE, StringType()),
            StructField(PUBLICATION_DATE, StringType()),
            StructField(LANGUAGE, StringType()),
            StructField("type", StringType()),
            StructField("is_xpac", BooleanType()),
            StructField("primary_topic", StructType([StructField(FIELD, _DISPLAY_NAME)])),
            StructField("referenced_works", ArrayType(StringType())),
            StructField("abstract_inverted_index", abstract_type),
            StructField("updated_date", StringType()),
        ]
    )


OPENALEX_WORK = _openalex_work(ABSTRACT_INVERTED_INDEX)
# The 2021 snapshot wraps the index Microsoft-Academic-Graph style: {"IndexLength", "InvertedIndex"}.
OPENALEX_WORK_2021 = _openalex_work(
    StructType([StructField("IndexLength", LongType()), StructField("InvertedIndex", ABSTRACT_INVERTED_INDEX)])
)
CORRUPT_RECORD = "_corrupt_record"
SOURCE_FILE = "file"
# What the snapshot reader hands to the stage: the record, the raw line when it did not fit the
# schema (JSON lines only), and the part file it came from (path relative to the works folder).
OPENALEX_RAW = StructType(
    [*OPENALEX_WORK.fields, StructField(CORRUPT_RECORD, StringType()), StructField(SOURCE_FILE, StringType(), False)]
)

# One row per record read, after classification: reason is null for a node of one of the requested
# fields, else the first rule it fails (wikigame_spark.ingest.openalex_records.DROP_REASONS);
# the node columns are filled only for nodes; references are OpenAlex URLs as in the record.
OPENALEX_WORKS = StructType(
    [
        StructField(SOURCE_FILE, StringType(), False),
        StructField("partition", StringType(), True),
        StructField("updated_date", StringType(), True),
        StructField(WORK_ID, StringType(), True),
        StructField("reason", StringType(), True),
        StructField(FIELD, StringType(), True),
        StructField(TITLE, StringType(), True),
        StructField(SUMMARY, StringType(), True),
        StructField(LANGUAGE, StringType(), True),
        StructField(PUBLICATION_DATE, StringType(), True),
        StructField(DOI, StringType(), True),
        StructField(REFERENCES, ArrayType(StringType()), True),
        StructField("detail", StringType(), True),  # the start of a malformed line
    ]
)
