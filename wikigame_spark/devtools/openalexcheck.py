"""The independent computation the tests hold ``build_openalex`` to, over an OpenAlex snapshot.

Plain Python over the files as written (by :mod:`~wikigame_spark.devtools.openalexgen`, or real
ones): ``json.loads`` per line, the Spark schema's type rules for the fields the job reads, the
newest version per work, the paper's filters, edges between nodes (:func:`expected_graphs`).
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from dataclasses import dataclass

WS = " \t\n\r\f\v"


def part_records(path: str):
    """The lines of a JSON-lines part file, or the rows of a Parquet one as JSON-like dicts."""
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        for row in pq.read_table(path).to_pylist():
            index = row.get("abstract_inverted_index")
            if isinstance(index, str):
                row["abstract_inverted_index"] = json.loads(index)
            elif index is not None:
                row["abstract_inverted_index"] = dict(index)
            yield row
        return
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            yield line.rstrip("\n")


def _int_list(v) -> bool:
    return v is None or (isinstance(v, list) and all(p is None or (type(p) is int) for p in v))


def _index(v):
    """(ok, index): the abstract as the job's schema sees it, 2021 form unwrapped."""
    if v is None:
        return True, None
    if not isinstance(v, dict):
        return False, None
    if all(_int_list(x) for x in v.values()):
        return True, v
    inner = v.get("InvertedIndex")
    if (
        isinstance(inner, dict)
        and all(_int_list(x) for x in inner.values())
        and type(v.get("IndexLength")) in (int, type(None))
    ):
        return True, inner
    return False, None


def _fits(rec: dict):
    """The record with the fields the job reads, or None when a field has the wrong JSON type."""
    if type(rec.get("is_xpac")) not in (bool, type(None)):
        return None
    topic = rec.get("primary_topic")
    if topic is not None and (not isinstance(topic, dict) or type(topic.get("field")) not in (dict, type(None))):
        return None
    refs = rec.get("referenced_works")
    if refs is not None and not isinstance(refs, list):
        return None
    ok, index = _index(rec.get("abstract_inverted_index"))
    if not ok:
        return None
    field = ((topic or {}).get("field") or {}).get("display_name")
    return {**rec, "_field": field, "_index": index}


def _blank(v) -> bool:
    return v is None or not str(v).strip(WS)


def _text(index) -> str | None:
    placed = sorted((p, w) for w, ps in (index or {}).items() for p in (ps or []) if p is not None)
    return " ".join(w for _, w in placed) if placed else None


@dataclass
class Expected:
    read: int
    tally: dict  # (reason, field) -> n; field given for works of the requested fields
    nodes: dict  # field -> list of node dicts in id order
    edges: dict  # field -> set of (src, dst)
    per_file: dict  # file key -> records
    older_version_was_a_node: int  # works whose older version passes the rules but the newest does not

    @property
    def dropped(self) -> dict:
        out: dict = {}
        for (reason, _), n in self.tally.items():
            if reason:
                out[reason] = out.get(reason, 0) + n
        return out

    def accounting(self, field: str) -> dict:
        dropped: dict = {}
        for (reason, f), n in self.tally.items():
            if f is not None and f != field:
                reason = "other_field"
            if reason is not None:
                dropped[reason] = dropped.get(reason, 0) + n
        kept = self.tally.get((None, field), 0)
        return {"read": self.read, "kept": kept, "dropped": dropped}


def expected_graphs(files: list[tuple[str, str]], fields: list[str], include_xpac: bool = False) -> Expected:
    """``files``: (key = last two path components, path)."""
    from collections import Counter

    dropped: Counter = Counter()
    per_file: Counter = Counter()
    versions: dict[str, list] = {}
    for key, path in files:
        m = re.search(r"updated_date=([^/]+)", key)
        partition = m.group(1) if m else ""
        for line in part_records(path):
            if isinstance(line, str) and not line.strip(" \t\r\n"):
                continue  # not a record
            per_file[key] += 1
            try:
                rec = json.loads(line) if isinstance(line, str) else line
            except ValueError:
                dropped["malformed_json"] += 1
                continue
            if not isinstance(rec, dict):
                dropped["malformed_json"] += 1
                continue
            rec = _fits(rec)
            if rec is None:
                dropped["malformed_record"] += 1
                continue
            if _blank(rec.get("id")):
                dropped["missing_id"] += 1
                continue
            updated = rec.get("updated_date")
            order = (partition, updated is not None, updated or "", key)
            versions.setdefault(rec["id"].rsplit("/", 1)[-1], []).append((order, rec))

    def fate(rec):
        if rec.get("is_xpac") is True and not include_xpac:
            return "xpac"
        if rec.get("type") != "article":
            return "wrong_type"
        if rec["_field"] is None:
            return "missing_field"
        if rec["_field"] not in fields:
            return "other_field"
        if _blank(rec.get("title")):
            return "missing_title"
        if _text(rec["_index"]) is None:
            return "missing_abstract"
        if _blank(rec.get("language")):
            return "missing_language"
        return None

    tally: Counter = Counter({(reason, None): n for reason, n in dropped.items()})
    members: dict[str, dict] = {f: {} for f in fields}
    older_nodes = 0
    for wid, recs in versions.items():
        recs.sort(key=lambda x: x[0], reverse=True)
        if len(recs) > 1:
            tally[("duplicate", None)] += len(recs) - 1
        newest = recs[0][1]
        reason = fate(newest)
        if reason is not None and any(fate(r) is None for _, r in recs[1:]):
            older_nodes += 1
        own = reason in (None, "missing_title", "missing_abstract", "missing_language")
        tally[(reason, newest["_field"] if own else None)] += 1
        if reason is None:
            members[newest["_field"]][wid] = newest
    nodes, edges = {}, {}
    for f in fields:
        ids = {wid: i for i, wid in enumerate(sorted(members[f]))}
        nodes[f] = [
            {
                "id": ids[wid],
                "work_id": wid,
                "title": rec["title"],
                "summary": _text(rec["_index"]),
                "language": rec["language"],
                "field": f,
                "publication_date": rec.get("publication_date"),
                "doi": rec.get("doi"),
            }
            for wid, rec in sorted(members[f].items())
        ]
        pairs = set()
        for wid, rec in members[f].items():
            for ref in rec.get("referenced_works") or []:
                target = None if ref is None else ref.rsplit("/", 1)[-1]
                if target in ids and target != wid:
                    pairs.add((ids[wid], ids[target]))
                    pairs.add((ids[target], ids[wid]))
        edges[f] = pairs
    return Expected(
        read=sum(per_file.values()),
        tally=dict(tally),
        nodes=nodes,
        edges=edges,
        per_file=dict(per_file),
        older_version_was_a_node=older_nodes,
    )
