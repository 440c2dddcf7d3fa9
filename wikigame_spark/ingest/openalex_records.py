"""One OpenAlex work record → what the graph keeps of it: plain Python on plain values.

This module is the specification of the per-record rules: the Spark stage in
:mod:`wikigame_spark.ingest.openalex` evaluates the same rules as column expressions (so the
JVM does the work, not a Python worker per record), and the tests hold the two to agreement.
It is also what the benchmark's single-process reference reader runs.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

# The 26 fields of OpenAlex's topic taxonomy (``primary_topic.field.display_name``).
FIELDS = (
    "Agricultural and Biological Sciences",
    "Arts and Humanities",
    "Biochemistry, Genetics and Molecular Biology",
    "Business, Management and Accounting",
    "Chemical Engineering",
    "Chemistry",
    "Computer Science",
    "Decision Sciences",
    "Dentistry",
    "Earth and Planetary Sciences",
    "Economics, Econometrics and Finance",
    "Energy",
    "Engineering",
    "Environmental Science",
    "Health Professions",
    "Immunology and Microbiology",
    "Materials Science",
    "Mathematics",
    "Medicine",
    "Neuroscience",
    "Nursing",
    "Pharmacology, Toxicology and Pharmaceutics",
    "Physics and Astronomy",
    "Psychology",
    "Social Sciences",
    "Veterinary",
)

ARTICLE = "article"
OPENALEX_PREFIX = "https://openalex.org/"

# Why a record read from the snapshot is not a node, in the order the rules are applied: the
# first that holds is the one counted, so every record has exactly one fate. The field comes
# before the checks of the work itself: a graph's accounting details why its own field's works
# were left out, and a work of another field is simply another field's.
MALFORMED_JSON = "malformed_json"  # the line is not a JSON object
MALFORMED_RECORD = "malformed_record"  # a JSON object whose fields do not fit the works schema
MISSING_ID = "missing_id"
DUPLICATE = "duplicate"  # an older version of a work also found in a newer partition
XPAC = "xpac"
WRONG_TYPE = "wrong_type"
MISSING_FIELD = "missing_field"  # no primary_topic (records from before 2024)
OTHER_FIELD = "other_field"
MISSING_TITLE = "missing_title"
MISSING_ABSTRACT = "missing_abstract"
MISSING_LANGUAGE = "missing_language"
DROP_REASONS = (
    MALFORMED_JSON,
    MALFORMED_RECORD,
    MISSING_ID,
    DUPLICATE,
    XPAC,
    WRONG_TYPE,
    MISSING_FIELD,
    OTHER_FIELD,
    MISSING_TITLE,
    MISSING_ABSTRACT,
    MISSING_LANGUAGE,
)
# Reasons decided by the work itself, after its field: counted per field.
WORK_REASONS = (MISSING_TITLE, MISSING_ABSTRACT, MISSING_LANGUAGE)


def field_slug(field: str) -> str:
    """Directory name for a field: ``"Biochemistry, Genetics and Molecular Biology"`` →
    ``biochemistry-genetics-and-molecular-biology``."""
    ascii_name = unicodedata.normalize("NFKD", field).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")
    if not slug:
        raise ValueError(f"field {field!r} has no letters or digits to name a directory with")
    return slug


def short_id(url: str | None) -> str | None:
    """``https://openalex.org/W2741809807`` → ``W2741809807`` (the part after the last slash)."""
    if url is None:
        return None
    return url.rsplit("/", 1)[-1]


def inverted_index(value: object) -> Mapping | None:
    """The word → positions mapping of an ``abstract_inverted_index`` in any published form.

    Records since 2022 hold the mapping itself; the 2021 snapshot wraps it as
    ``{"IndexLength": n, "InvertedIndex": {...}}`` (the Microsoft Academic Graph form).
    """
    if not isinstance(value, Mapping):
        return None
    inner = value.get("InvertedIndex")
    if isinstance(inner, Mapping) and "IndexLength" in value:
        return inner
    return value


def rebuild_abstract(index: Mapping | None) -> str | None:
    """The abstract text: every word at each of its positions, in position order, joined by one
    space. Nothing is dropped or rewritten (the paper's code deleted apostrophes and
    backslashes); words at the same position keep a fixed order (by word) so the result is
    deterministic. ``None`` when there is no index or it holds no position.
    """
    if not index:
        return None
    placed = sorted((pos, word) for word, positions in index.items() for pos in (positions or ()) if pos is not None)
    if not placed:
        return None
    return " ".join(word for _, word in placed)


# What counts as blank: Java's regex \s, so the Spark stage agrees character for character.
WHITESPACE = " \t\n\r\f\v"


def blank(value: object) -> bool:
    """Absent, or a string of nothing but ASCII whitespace."""
    return value is None or (isinstance(value, str) and not value.strip(WHITESPACE))


def drop_reason(record: Mapping, fields: frozenset[str] | set[str], include_xpac: bool = False) -> str | None:
    """Why the newest version of a work is not a node of any of ``fields`` (``None``: it is).

    ``record`` is a parsed JSON object; malformed lines and duplicates are decided before this.
    """
    if blank(record.get("id")):
        return MISSING_ID
    if record.get("is_xpac") is True and not include_xpac:
        return XPAC
    if record.get("type") != ARTICLE:
        return WRONG_TYPE
    field = record_field(record)
    if field is None:
        return MISSING_FIELD
    if field not in fields:
        return OTHER_FIELD
    if blank(record.get("title")):
        return MISSING_TITLE
    if rebuild_abstract(inverted_index(record.get("abstract_inverted_index"))) is None:
        return MISSING_ABSTRACT
    if blank(record.get("language")):
        return MISSING_LANGUAGE
    return None


def record_field(record: Mapping) -> str | None:
    """``primary_topic.field.display_name``, ``None`` when the record has no primary topic."""
    topic = record.get("primary_topic") or {}
    field = (topic.get("field") or {}) if isinstance(topic, Mapping) else {}
    return field.get("display_name") if isinstance(field, Mapping) else None
