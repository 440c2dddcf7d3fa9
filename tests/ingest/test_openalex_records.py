"""Per-record rules of the OpenAlex ingest, on plain values (no Spark)."""

from __future__ import annotations

import gzip
import json

import pytest

from wikigame_spark.devtools.openalexgen import PART_2021, TEMPLATE_2023, TEMPLATE_2025
from wikigame_spark.ingest.openalex_records import (
    FIELDS,
    MISSING_ABSTRACT,
    MISSING_FIELD,
    MISSING_ID,
    MISSING_LANGUAGE,
    MISSING_TITLE,
    OTHER_FIELD,
    WRONG_TYPE,
    XPAC,
    blank,
    drop_reason,
    field_slug,
    inverted_index,
    rebuild_abstract,
    record_field,
    short_id,
)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def test_rebuilds_the_real_2025_abstract_in_position_order():
    record = load(TEMPLATE_2025)
    text = rebuild_abstract(record["abstract_inverted_index"])
    assert text.startswith(
        "Despite growing interest in Open Access (OA) to scholarly literature, there is an unmet need"
    )
    assert text.endswith("as a way to inform OA policy and practice.")
    assert len(text.split(" ")) == 258  # every position 0…257 once
    # the 2023 record of the same work has the same index
    assert rebuild_abstract(load(TEMPLATE_2023)["abstract_inverted_index"]) == text


def test_nothing_is_dropped_from_words():
    # The paper's code deleted apostrophes and backslashes; every character must survive.
    index = {"don't": [0], "C:\\temp\\x": [1], '"quoted"': [2], "naïve": [3], "l'été,": [4], "": [5], "end.": [6]}
    assert rebuild_abstract(index) == "don't C:\\temp\\x \"quoted\" naïve l'été,  end."


def test_repeated_words_gaps_and_ties():
    assert rebuild_abstract({"the": [0, 2], "cat": [1], "hat": [3]}) == "the cat the hat"
    assert rebuild_abstract({"a": [10], "b": [3]}) == "b a"  # gaps in positions are closed
    assert rebuild_abstract({"y": [0], "x": [0], "z": [1]}) == "x y z"  # same position: by word


@pytest.mark.parametrize("index", [None, {}, {"a": []}, {"a": None}, {"a": [None]}])
def test_no_positions_is_no_abstract(index):
    assert rebuild_abstract(index) is None


def test_the_2021_mag_form_is_unwrapped():
    wrapped = {"IndexLength": 3, "InvertedIndex": {"b": [1], "a": [0], "c": [2]}}
    assert rebuild_abstract(inverted_index(wrapped)) == "a b c"
    # an ordinary index that happens to hold the word "InvertedIndex" stays as it is
    plain = {"InvertedIndex": [0], "is": [1]}
    assert inverted_index(plain) is plain


def test_real_2021_records_unwrap():
    with gzip.open(PART_2021, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    abstracts = [r["abstract_inverted_index"] for r in records if r["abstract_inverted_index"]]
    assert len(abstracts) == 19
    for a in abstracts:
        text = rebuild_abstract(inverted_index(a))
        positions = sorted(p for ps in a["InvertedIndex"].values() for p in ps)
        assert len(text.split(" ")) == len(positions) and positions[-1] < a["IndexLength"]


def test_field_slugs_name_directories():
    assert field_slug("Biochemistry, Genetics and Molecular Biology") == "biochemistry-genetics-and-molecular-biology"
    assert field_slug("Physics and Astronomy") == "physics-and-astronomy"
    assert len({field_slug(f) for f in FIELDS}) == len(FIELDS) == 26
    with pytest.raises(ValueError):
        field_slug("—")


def test_short_ids():
    assert short_id("https://openalex.org/W2741809807") == "W2741809807"
    assert short_id("W12") == "W12"
    assert short_id(None) is None


def test_blank_is_ascii_whitespace_only():
    assert blank(None) and blank("") and blank(" \t\n")
    assert not blank("x") and not blank("\u00a0")  # as Java's \s: a no-break space is not blank


def test_drop_reasons_in_order():
    good = load(TEMPLATE_2025)
    fields = {"Decision Sciences"}
    assert drop_reason(good, fields) is None
    assert drop_reason(good, {"Medicine"}) == OTHER_FIELD
    assert record_field(good) == "Decision Sciences"
    cases = [
        ({"id": None}, MISSING_ID),
        ({"is_xpac": True}, XPAC),
        ({"type": "journal-article"}, WRONG_TYPE),
        ({"type": None}, WRONG_TYPE),
        ({"title": " "}, MISSING_TITLE),
        ({"abstract_inverted_index": {}}, MISSING_ABSTRACT),
        ({"language": None}, MISSING_LANGUAGE),
        ({"primary_topic": None}, MISSING_FIELD),
        ({"is_xpac": True, "type": "review"}, XPAC),  # the first rule that holds is the one counted
        ({"title": None, "language": None}, MISSING_TITLE),
        ({"title": None, "primary_topic": None}, MISSING_FIELD),  # the field is checked first
    ]
    for change, reason in cases:
        assert drop_reason({**good, **change}, fields) == reason, change
    assert drop_reason({**good, "is_xpac": True}, fields, include_xpac=True) is None
    # the 2023 record of the same work has no primary topic
    assert drop_reason(load(TEMPLATE_2023), fields) == MISSING_FIELD
