"""OpenAlex snapshots generated from the real 2025 work record, for tests and the benchmark.

Every line is the real record (``api-records/W2741809807.json``) with the fields the graph
depends on replaced: id, title, type, language, primary topic, abstract, references, XPAC flag,
dates. The other fields (authorships, locations, concepts …) stay as published, trimmed to a
few sizes so records average about the size of the real snapshot's (1.6 TB / 250 M works).
A work may appear in several ``updated_date`` partitions (older versions differ), some lines are
damaged, and the layout and manifest follow the public bucket: the Redshift ``manifest`` of
``data/works/`` or the 2026 ``data/jsonl|parquet/`` folders with a ``manifest.json``.

Decisions per work come from numpy arrays drawn from the seed, and each part file is written
from those alone, so files can be written by parallel processes and the result never depends
on how many.

A command line makes a bigger snapshot than the real sample for a user (docs/data.md)::

    python -m wikigame_spark.devtools.openalexgen OUT --works 200000 --layout jsonl --processes 2
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import multiprocessing
import os
import random
from dataclasses import dataclass, field

import numpy as np

from wikigame_spark.devtools import DATA

OPENALEX = os.path.join(DATA, "openalex")
TEMPLATE_2025 = os.path.join(OPENALEX, "api-records", "W2741809807.json")
TEMPLATE_2023 = os.path.join(OPENALEX, "api-records", "W2741809807-2023.json")
SNAPSHOT = os.path.join(OPENALEX, "snapshot")
PART_2021 = os.path.join(SNAPSHOT, "data", "works", "updated_date=2021-11-03", "part_000.gz")
PART_2023 = os.path.join(SNAPSHOT, "data", "works", "updated_date=2023-05-16", "part_000.gz")

WRONG_TYPES = ("review", "preprint", "book-chapter", "journal-article", "dataset", "editorial")
LANGUAGES = ("en", "en", "en", "en", "de", "fr", "es", "pt", "ja", "zh")
# Words an abstract must keep exactly: apostrophes and backslashes (the paper's code deleted
# them), quotes, non-ASCII letters, JSON-escaped characters.
SPECIAL_WORDS = (
    "don't",
    "Smith's",
    "C:\\data\\x",
    "\\alpha",
    '"quoted"',
    "naïve",
    "α-helix",
    "50%",
    "{x}",
    "Zürich",
    "l'été",
    "<i>in",
)
_SENTINEL = "\u0000{}\u0000"
_VARYING = (
    "id",
    "doi",
    "title",
    "display_name",
    "publication_year",
    "publication_date",
    "language",
    "type",
    "primary_topic",
    "referenced_works_count",
    "referenced_works",
    "abstract_inverted_index",
    "updated_date",
)


@dataclass(frozen=True)
class Spec:
    """What to generate; probabilities are per version of a work."""

    works: int = 400
    seed: int = 0
    layout: str = "legacy"  # legacy (data/works + manifest) | jsonl | parquet (2026, manifest.json)
    fields: tuple[str, ...] = ("Medicine", "Physics and Astronomy", "Social Sciences", "Arts and Humanities")
    field_weights: tuple[float, ...] = (0.4, 0.3, 0.2, 0.1)
    partitions: tuple[str, ...] = ("2024-11-02", "2025-03-15", "2025-06-11")
    files_per_partition: int = 2
    p_wrong_type: float = 0.1
    p_no_title: float = 0.03
    p_no_abstract: float = 0.15
    p_no_language: float = 0.04
    p_no_topic: float = 0.03
    p_xpac: float = 0.03
    p_legacy_abstract: float = 0.0  # abstract in the 2021 form {"IndexLength", "InvertedIndex"}
    p_duplicate: float = 0.08  # the work also has an older version in an earlier partition
    malformed_per_file: int = 2  # damaged lines (truncated JSON, garbage, blank)
    mistyped_per_file: int = 1  # JSON objects whose fields have the wrong type
    refs_mean: float = 12.0
    p_internal_ref: float = 0.6
    abstract_pool: int = 64
    parquet_abstract_as_json: bool = False
    extra_files: tuple[tuple[str, str], ...] = field(default=())  # (partition, path of a real part file)
    template: str = TEMPLATE_2025  # the real work record (an OpenAlex API response) every line is made from


def work_id(i: int) -> str:
    """Distinct ids of varied length (so string order differs from numeric order)."""
    return f"W{(i * 2654435761) % 10**10}"


# (authorships, locations, concepts, topics, keywords, related works, counts by year) kept per
# size variant, and how often each variant is drawn: most works are small, a few are large.
SIZES = (
    (1, 1, 2, 1, 1, 3, 2),
    (2, 1, 4, 1, 2, 5, 3),
    (3, 2, 6, 2, 3, 10, 5),
    (5, 3, 12, 3, 4, 10, 9),
    (9, 7, 19, 3, 4, 10, 9),
)
SIZE_WEIGHTS = (0.5, 0.3, 0.12, 0.06, 0.02)


def _template_variants(template: dict) -> list[list[str]]:
    """The record cut into static fragments around the varying fields, at a few sizes."""
    variants = []
    for authors, locations, concepts, topics, keywords, related, years in SIZES:
        t = copy.deepcopy(template)
        t["authorships"] = t["authorships"][:authors]
        t["locations"] = t["locations"][:locations]
        t["locations_count"] = len(t["locations"])
        t["concepts"] = t["concepts"][:concepts]
        t["topics"] = t["topics"][:topics]
        t["keywords"] = t["keywords"][:keywords]
        t["related_works"] = t["related_works"][:related]
        t["counts_by_year"] = t["counts_by_year"][:years]
        t.setdefault("is_xpac", False)
        for i, key in enumerate(_VARYING):
            t[key] = _SENTINEL.format(i)
        text = json.dumps(t, ensure_ascii=False)
        pieces = []
        for i in range(len(_VARYING)):
            head, text = text.split(json.dumps(_SENTINEL.format(i)), 1)
            pieces.append(head)
        pieces.append(text)
        variants.append(pieces)
    return variants


def _abstract_words(template: dict) -> list[str]:
    index = template["abstract_inverted_index"]
    return sorted(index) + list(SPECIAL_WORDS)


def make_inverted_index(words: list[str]) -> dict[str, list[int]]:
    index: dict[str, list[int]] = {}
    for pos, w in enumerate(words):
        index.setdefault(w, []).append(pos)
    return index


class Plan:
    """Per-work decisions for the whole snapshot, drawn once from the seed."""

    def __init__(self, spec: Spec):
        self.spec = spec
        rng = np.random.default_rng(spec.seed)
        n, parts = spec.works, len(spec.partitions)
        self.n = n
        self.has_old = rng.random(n) < spec.p_duplicate if parts > 1 else np.zeros(n, bool)
        newest = rng.integers(0, parts, n)
        newest[self.has_old] = rng.integers(1, parts, int(self.has_old.sum()))
        self.newest = newest
        self.older = np.where(self.has_old, (newest * rng.random(n)).astype(int), -1)
        weights = np.array(spec.field_weights) / sum(spec.field_weights)
        self.flags = {}
        for version in ("new", "old"):
            self.flags[version] = {
                "wrong_type": rng.random(n) < spec.p_wrong_type,
                "no_title": rng.random(n) < spec.p_no_title,
                "no_abstract": rng.random(n) < spec.p_no_abstract,
                "no_language": rng.random(n) < spec.p_no_language,
                "no_topic": rng.random(n) < spec.p_no_topic,
                "xpac": rng.random(n) < spec.p_xpac,
                "field": rng.choice(len(spec.fields), n, p=weights),
                "legacy_abstract": rng.random(n) < spec.p_legacy_abstract,
                "variant": rng.choice(len(SIZES), n, p=SIZE_WEIGHTS),
            }
        self.files = [(p, f) for p in range(parts) for f in range(spec.files_per_partition)]

    def file_name(self, part: int, f: int) -> str:
        date = self.spec.partitions[part]
        if self.spec.layout == "legacy":
            return f"updated_date={date}/part_{f:03d}.gz"
        ext = "parquet" if self.spec.layout == "parquet" else "gz"
        return f"updated_date={date}/part_{f:04d}.{ext}"

    def versions_in(self, part: int, f: int) -> list[tuple[int, str]]:
        """(work index, version) pairs written to file ``f`` of partition ``part``."""
        fpp = self.spec.files_per_partition
        idx = np.arange(self.n)
        mine = idx % fpp == f
        new = idx[mine & (self.newest == part)]
        old = idx[mine & (self.older == part)]
        out = [(int(i), "new") for i in new] + [(int(i), "old") for i in old]
        return sorted(out)


class Writer:
    """Renders records for one :class:`Plan` (the template is parsed once per process)."""

    def __init__(self, plan: Plan):
        self.plan = plan
        with open(plan.spec.template, encoding="utf-8") as f:
            self.template = json.load(f)
        self.variants = _template_variants(self.template)
        words = _abstract_words(self.template)
        rng = random.Random(plan.spec.seed)
        self.abstracts = []
        for _ in range(plan.spec.abstract_pool):
            text = [rng.choice(words) for _ in range(rng.randint(20, 220))]
            self.abstracts.append(make_inverted_index(text))
        self.abstract_json = [json.dumps(a, ensure_ascii=False) for a in self.abstracts]
        self.topics = []
        for name in plan.spec.fields:
            topic = copy.deepcopy(self.template["primary_topic"])
            topic["field"]["display_name"] = name
            self.topics.append(topic)
        self.topic_json = [json.dumps(t, ensure_ascii=False) for t in self.topics]

    def record_values(self, i: int, version: str, part: int, rng: random.Random) -> dict:
        spec, fl = self.plan.spec, self.plan.flags[version]
        wid = work_id(i)
        refs = []
        for _ in range(rng.randint(0, int(2 * spec.refs_mean))):
            if rng.random() < spec.p_internal_ref:
                refs.append("https://openalex.org/" + work_id(rng.randrange(self.plan.n)))
            else:
                refs.append(f"https://openalex.org/W{rng.randrange(10**10, 10**11)}")
        if refs and rng.random() < 0.05:
            refs.append(refs[0])  # the same reference twice
        if rng.random() < 0.02:
            refs.append("https://openalex.org/" + wid)  # a self-citation
        topic = None if fl["no_topic"][i] else int(fl["field"][i])
        abstract = None if fl["no_abstract"][i] else rng.randrange(len(self.abstracts))
        date = spec.partitions[part]
        year = rng.randint(1990, 2025)
        title = None if fl["no_title"][i] else f"{version} {wid}: {rng.choice(SPECIAL_WORDS)} on {rng.random():.6f}"
        return {
            "id": "https://openalex.org/" + wid,
            "doi": f"https://doi.org/10.{rng.randint(1000, 9999)}/{wid.lower()}" if rng.random() < 0.8 else None,
            "title": title,
            "display_name": title,
            "publication_year": year,
            "publication_date": f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "language": None if fl["no_language"][i] else rng.choice(LANGUAGES),
            "type": rng.choice(WRONG_TYPES) if fl["wrong_type"][i] else "article",
            "primary_topic": topic,
            "referenced_works_count": len(refs),
            "referenced_works": refs,
            "abstract_inverted_index": abstract,
            "updated_date": f"{date}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:07.532706",
            "is_xpac": bool(fl["xpac"][i]),
            "_variant": int(fl["variant"][i]),
            "_legacy_abstract": bool(fl["legacy_abstract"][i]),
        }

    def line(self, values: dict) -> str:
        pieces = self.variants[values["_variant"]]
        out = [pieces[0]]
        for k, key in enumerate(_VARYING):
            v = values[key]
            if key == "abstract_inverted_index":
                if v is None:
                    out.append("null")
                elif values["_legacy_abstract"]:
                    n = sum(len(p) for p in self.abstracts[v].values())
                    out.append(f'{{"IndexLength": {n}, "InvertedIndex": {self.abstract_json[v]}}}')
                else:
                    out.append(self.abstract_json[v])
            elif key == "primary_topic":
                out.append("null" if v is None else self.topic_json[v])
            else:
                out.append(json.dumps(v, ensure_ascii=False))
            out.append(pieces[k + 1])
        text = "".join(out)
        if values["is_xpac"]:
            text = text.replace('"is_xpac": false', '"is_xpac": true')
        return text

    def parquet_row(self, values: dict) -> dict:
        row = {k: values[k] for k in _VARYING if k not in ("display_name", "referenced_works_count")}
        row["primary_topic"] = None if values["primary_topic"] is None else self.topics[values["primary_topic"]]
        a = values["abstract_inverted_index"]
        if a is None:
            row["abstract_inverted_index"] = None
        elif self.plan.spec.parquet_abstract_as_json:
            row["abstract_inverted_index"] = self.abstract_json[a]
        else:
            row["abstract_inverted_index"] = list(self.abstracts[a].items())
        row["is_xpac"] = values["is_xpac"]
        row["cited_by_count"] = 1
        return row


def _damaged_lines(rng: random.Random, good: str, malformed: int, mistyped: int) -> list[str]:
    out = []
    for k in range(malformed):
        kind = k % 3
        out.append(good[: len(good) // 2] if kind == 0 else ("not json at all" if kind == 1 else ""))
    for _ in range(mistyped):
        rec = json.loads(good)
        rec["referenced_works"] = 12345  # an array in the schema
        rec["id"] = rec["id"] + "M"  # no generated work has this id
        out.append(json.dumps(rec, ensure_ascii=False))
    return out


def _write_file(args) -> tuple[str, int, int]:
    plan, works_dir, part, f = args
    writer = _writer_for(plan)
    spec = plan.spec
    rng = random.Random(spec.seed * 1_000_003 + part * 1009 + f)
    name = plan.file_name(part, f)
    path = os.path.join(works_dir, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rows = [writer.record_values(i, v, part, rng) for i, v in plan.versions_in(part, f)]
    if spec.layout == "parquet":
        _write_parquet(path, [writer.parquet_row(r) for r in rows], spec.parquet_abstract_as_json)
        return name, len(rows), os.path.getsize(path)
    lines = [writer.line(r) for r in rows]
    if lines:
        for bad in _damaged_lines(rng, lines[0], spec.malformed_per_file, spec.mistyped_per_file):
            lines.insert(rng.randrange(len(lines) + 1), bad)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as out:
        for line in lines:
            out.write(line)
            out.write("\n")
    return name, len(lines), os.path.getsize(path)


_WRITERS: dict[int, Writer] = {}


def _writer_for(plan: Plan) -> Writer:
    key = id(plan)
    if key not in _WRITERS:
        _WRITERS.clear()
        _WRITERS[key] = Writer(plan)
    return _WRITERS[key]


def _write_parquet(path: str, rows: list[dict], abstract_as_json: bool) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    named = pa.struct([("id", pa.string()), ("display_name", pa.string())])
    topic = pa.struct(
        [
            ("id", pa.string()),
            ("display_name", pa.string()),
            ("score", pa.float64()),
            ("subfield", named),
            ("field", named),
            ("domain", named),
        ]
    )
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("doi", pa.string()),
            ("title", pa.string()),
            ("publication_year", pa.int64()),
            ("publication_date", pa.string()),
            ("language", pa.string()),
            ("type", pa.string()),
            ("primary_topic", topic),
            ("referenced_works", pa.list_(pa.string())),
            (
                "abstract_inverted_index",
                pa.string() if abstract_as_json else pa.map_(pa.string(), pa.list_(pa.int64())),
            ),
            ("updated_date", pa.string()),
            ("is_xpac", pa.bool_()),
            ("cited_by_count", pa.int64()),
        ]
    )
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


@dataclass
class Generated:
    root: str  # what to pass as --input
    works_dir: str
    manifest: str
    files: list[dict]  # {"name", "path", "records", "bytes"}


def layout_dirs(root: str, layout: str) -> tuple[str, str]:
    """(works directory, manifest path) of a layout under ``root``."""
    if layout == "legacy":
        works = os.path.join(root, "data", "works")
        return works, os.path.join(works, "manifest")
    fmt_dir = os.path.join(root, "data", layout)
    return os.path.join(fmt_dir, "works"), os.path.join(fmt_dir, "manifest.json")


def manifest_url(layout: str, name: str) -> str:
    prefix = "data/works" if layout == "legacy" else f"data/{layout}/works"
    return f"s3://openalex/{prefix}/{name}"


def write_manifest(path: str, layout: str, files: list[dict]) -> None:
    entries = [
        {"url": manifest_url(layout, f["name"]), "meta": {"content_length": f["bytes"], "record_count": f["records"]}}
        for f in files
    ]
    totals = {"content_length": sum(f["bytes"] for f in files), "record_count": sum(f["records"] for f in files)}
    if layout == "legacy":
        doc = {"entries": entries, "meta": totals}
    else:
        doc = {"date": "2026-06-26", "entities": [{"entity": "works", **totals, "files": entries}]}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)


def generate(root: str, spec: Spec, processes: int = 1) -> Generated:
    """Write the snapshot under ``root`` (the directory to pass as ``--input``)."""
    plan = Plan(spec)
    works_dir, manifest = layout_dirs(root, spec.layout)
    os.makedirs(works_dir, exist_ok=True)
    tasks = [(plan, works_dir, p, f) for p, f in plan.files]
    if processes > 1:
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            results = pool.map(_write_file, tasks, chunksize=1)
    else:
        results = [_write_file(t) for t in tasks]
    files = [{"name": n, "path": os.path.join(works_dir, n), "records": r, "bytes": b} for n, r, b in results]
    for k, (partition, source) in enumerate(spec.extra_files):
        name = f"updated_date={partition}/part_{900 + k:03d}.gz"
        dest = os.path.join(works_dir, name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(source, "rb") as src, open(dest, "wb") as out:
            out.write(src.read())
        with gzip.open(dest, "rt", encoding="utf-8") as fh:
            records = sum(1 for _ in fh)
        files.append({"name": name, "path": dest, "records": records, "bytes": os.path.getsize(dest)})
    write_manifest(manifest, spec.layout, files)
    return Generated(root=root, works_dir=works_dir, manifest=manifest, files=files)


def write_lines(path: str, lines: list[str]) -> None:
    """A gzipped JSON-lines part file holding exactly ``lines``."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for line in lines:
            out.write(line + "\n")


def generated_files(gen: Generated) -> list[tuple[str, str]]:
    return [("/".join(f["path"].split(os.sep)[-2:]), f["path"]) for f in gen.files]


def main(argv: list[str] | None = None) -> int:
    """Write a snapshot in the real schema for ``build_openalex --input`` (clean: every work usable)."""
    parser = argparse.ArgumentParser(
        prog="python -m wikigame_spark.devtools.openalexgen",
        description="An OpenAlex works snapshot in the real 2025 schema, made from one real work record.",
    )
    parser.add_argument("output", help="the snapshot folder to write (pass it as build_openalex --input)")
    parser.add_argument("--works", type=int, default=Spec.works, help="works to generate (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="the same seed writes the same files")
    parser.add_argument("--layout", choices=("legacy", "jsonl", "parquet"), default="jsonl", help="default %(default)s")
    parser.add_argument("--field", action="append", help="a field of the works (repeat; default: four fields)")
    parser.add_argument("--files-per-partition", type=int, default=Spec.files_per_partition)
    parser.add_argument("--processes", type=int, default=1, help="files written in parallel (same result)")
    parser.add_argument("--template", default=TEMPLATE_2025, help="a real work record, e.g. api.openalex.org/works/W…")
    parser.add_argument("--damaged", action="store_true", help="as the real snapshot: damaged lines, unusable works")
    args = parser.parse_args(argv)
    if args.works <= 0 or args.files_per_partition <= 0 or args.processes <= 0:
        parser.error("--works, --files-per-partition and --processes must be positive")
    if not os.path.isfile(args.template):
        parser.error(f"--template {args.template}: not found (save a work from https://api.openalex.org/works/W…)")
    fields = tuple(args.field or Spec.fields)
    clean = {} if args.damaged else {
        "p_wrong_type": 0.0, "p_no_title": 0.0, "p_no_abstract": 0.0, "p_no_language": 0.0, "p_no_topic": 0.0,
        "p_xpac": 0.0, "malformed_per_file": 0, "mistyped_per_file": 0,
    }  # fmt: skip
    spec = Spec(
        works=args.works,
        seed=args.seed,
        layout=args.layout,
        fields=fields,
        field_weights=(1.0,) * len(fields) if args.field else Spec.field_weights,
        files_per_partition=args.files_per_partition,
        template=args.template,
        **clean,
    )
    made = generate(args.output, spec, args.processes)
    records = sum(f["records"] for f in made.files)
    print(f"openalexgen: wrote {made.root} ({len(made.files)} files, {records} records; manifest {made.manifest})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
