"""The pyarrow way into Parquet snapshots, held to the rules (``openalex_records``) and to the
Spark way on the same files: edge-case records, real abstracts, column-type variants."""

from __future__ import annotations

import gzip
import itertools
import json
import random
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import PythonException

from wikigame_spark.devtools.openalexgen import PART_2021, TEMPLATE_2025, make_inverted_index
from wikigame_spark.ingest.openalex import classified_works
from wikigame_spark.ingest.openalex_arrow import rebuild_abstracts
from wikigame_spark.ingest.openalex_records import drop_reason, rebuild_abstract
from wikigame_spark.ingest.openalex_snapshot import plan_snapshot

INDEX = pa.map_(pa.string(), pa.list_(pa.int64()))
FIELDS = ["Medicine", "Physics and Astronomy"]


def real_indexes() -> list[dict]:
    with open(TEMPLATE_2025, encoding="utf-8") as f:
        out = [json.load(f)["abstract_inverted_index"]]
    with gzip.open(PART_2021, "rt", encoding="utf-8") as f:
        for line in f:
            index = json.loads(line).get("abstract_inverted_index")
            if index:
                out.append(index["InvertedIndex"])
    return out


ODD = [
    None,
    {},
    {"a": [None]},
    {"a": None, "b": []},
    {"the": [0, 2], "cat": [1]},
    {"y": [0], "x": [0]},  # two words at one position: ordered by word
    {"b": [9], "a": [3]},  # sparse positions
    {"a": [None, 1], "b": None},
    {"a": [1], "b": [2]},  # no position 0
    {"a": [0], "b": [0], "c": [1]},
    {"a": [-1, 0]},
    {"don't": [1], "C:\\x": [0], "naïve": [2], "": [3], " ": [4]},
]


def test_abstracts_rebuild_as_the_rule_on_real_and_odd_indexes():
    rng = random.Random(3)
    real = real_indexes()
    words = sorted({w for index in real for w in index})
    made = [make_inverted_index([rng.choice(words) for _ in range(rng.randint(1, 120))]) for _ in range(300)]
    cases = [*ODD, *real, *made]
    rng.shuffle(cases)
    array = pa.array([None if c is None else list(c.items()) for c in cases], INDEX)
    assert len(real) > 10
    expected = [rebuild_abstract(c) for c in cases]
    assert rebuild_abstracts(array).to_pylist() == expected
    # slices (offsets into shared children), and words read as a dictionary
    for start, stop in ((5, 40), (100, len(cases))):
        assert rebuild_abstracts(array[start:stop]).to_pylist() == expected[start:stop]
    keyed = pa.array(array.keys.dictionary_encode())
    as_dictionary = pa.MapArray.from_arrays(array.offsets, keyed, array.items, mask=array.is_null())
    assert rebuild_abstracts(as_dictionary).to_pylist() == expected
    assert rebuild_abstracts(pa.array([], INDEX)).to_pylist() == []


def edge_records() -> list[dict]:
    """One record per combination of the values each rule looks at (every fate, every way)."""
    values = {
        "id": ["https://openalex.org/W{}", "W{}", " \t", None],
        "is_xpac": [False, True, None],
        "type": ["article", "review", None],
        "field": ["Medicine", "Physics and Astronomy", "Chemistry", None, "no topic"],
        "title": ["A title", " ", "\u00a0", None],  # a no-break space is not blank
        "abstract": [0, 4, 6, None, 2, 3],  # indexes into ODD
        "language": ["en", "\n", None],
    }
    records = []
    for n, combo in enumerate(itertools.product(*values.values())):
        v = dict(zip(values, combo))
        if n % 7 and v["field"] not in ("Medicine", None):
            continue  # fewer of the combinations that end at the field
        topic = None if v["field"] == "no topic" else {"field": {"display_name": v["field"]}}
        abstract = None if v["abstract"] is None else ODD[v["abstract"]]
        records.append(
            {
                "id": v["id"].format(n) if v["id"] and "{}" in v["id"] else v["id"],
                "doi": f"https://doi.org/10.1/{n}" if n % 3 else None,
                "title": v["title"],
                "publication_date": "2024-05-0" + str(n % 9 + 1),
                "language": v["language"],
                "type": v["type"],
                "primary_topic": topic,
                "referenced_works": [f"https://openalex.org/W{(n * 7) % 50}", "W1"] if n % 4 else None,
                "abstract_inverted_index": None if abstract is None else list(abstract.items()),
                "updated_date": "2025-01-01T00:00:00",
                "is_xpac": v["is_xpac"],
            }
        )
    return records


TOPIC = pa.struct([("field", pa.struct([("display_name", pa.string())]))])
COLUMNS = {
    "id": pa.string(),
    "doi": pa.string(),
    "title": pa.string(),
    "publication_date": pa.string(),
    "language": pa.string(),
    "type": pa.string(),
    "primary_topic": TOPIC,
    "referenced_works": pa.list_(pa.string()),
    "abstract_inverted_index": INDEX,
    "updated_date": pa.string(),
    "is_xpac": pa.bool_(),
}


def write_part(root, name, records, columns=COLUMNS):
    path = root / "works" / "updated_date=2025-01-01" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table({c: pa.array([r[c] for r in records], t) for c, t in columns.items()})
    pq.write_table(table, path, row_group_size=64)  # several row groups per file
    return path


def both_ways(spark, root, fields=FIELDS):
    plan = plan_snapshot(str(root / "works"))
    arrow, how = classified_works(spark, plan, fields)
    spark_way, baseline = classified_works(spark, plan, fields, reader="spark")
    rows = [sorted((tuple(r) for r in df.collect()), key=repr) for df in (arrow, spark_way)]
    return how, baseline, rows


def test_edge_records_take_the_same_fate_both_ways_and_by_the_rules(spark, tmp_path):
    records = edge_records()
    write_part(tmp_path, "part_0000.parquet", records[: len(records) // 2])
    write_part(tmp_path, "part_0001.parquet", records[len(records) // 2 :])
    how, baseline, (arrow, spark_way) = both_ways(spark, tmp_path)
    assert (how, baseline) == ("pyarrow", "spark (asked for)")
    assert arrow == spark_way and len(arrow) == len(records)
    reasons = {r[3]: r[4] for r in arrow if r[3] is not None}
    for r in records:
        plain = {**r, "abstract_inverted_index": dict(r["abstract_inverted_index"] or []) or None}
        if plain["id"] and plain["id"].strip(" \t"):
            assert reasons[plain["id"].rsplit("/", 1)[-1]] == drop_reason(plain, set(FIELDS)), plain
    assert {r[4] for r in arrow} >= {None, "xpac", "wrong_type", "missing_field", "other_field", "missing_title"}
    assert {r[4] for r in arrow} >= {"missing_abstract", "missing_language", "missing_id"}


def test_missing_columns_read_as_nulls_both_ways(spark, tmp_path):
    records = edge_records()[:200]
    lean = {c: t for c, t in COLUMNS.items() if c not in ("is_xpac", "doi", "publication_date")}
    write_part(tmp_path, "part_0000.parquet", records, lean)
    how, _, (arrow, spark_way) = both_ways(spark, tmp_path)
    assert how == "pyarrow" and arrow == spark_way


def test_other_column_types_take_the_spark_way(spark, tmp_path):
    records = edge_records()[:50]
    dated = {**COLUMNS, "publication_date": pa.date32()}
    for r in records:
        r["publication_date"] = None
    write_part(tmp_path, "part_0000.parquet", records, dated)
    plan = plan_snapshot(str(tmp_path / "works"))
    assert classified_works(spark, plan, FIELDS)[1] == "spark (columns of another type: publication_date)"


def test_a_later_file_of_other_types_is_a_clear_error(spark, tmp_path):
    records = edge_records()[:50]
    write_part(tmp_path, "part_0000.parquet", records)
    as_text = {**COLUMNS, "abstract_inverted_index": pa.string()}
    for r in records:
        r["abstract_inverted_index"] = None
    write_part(tmp_path, "part_0001.parquet", records, as_text)
    works, how = classified_works(spark, plan_snapshot(str(tmp_path / "works")), FIELDS)
    assert how == "pyarrow"
    with pytest.raises(PythonException, match=re.escape("part_0001.parquet: columns ['abstract_inverted_index']")):
        works.count()
