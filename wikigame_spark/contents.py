"""What a finished output holds: every Parquet part file's name and size, and each table's rows.

The job runner records it in the manifest of every output it publishes (``contents``), and checks
it again when a job opens a graph or games folder, on the driver, from the listing and the files'
footers: a part file missing, extra, cut short or replaced since the manifest was written ends the
job naming the table and the file, before any Spark work — a graph's counts and games' distances
are only as true as the files they were computed from.
"""

from __future__ import annotations

import posixpath

import pyarrow.parquet as pq

from wikigame_spark.layout import EDGES_TABLE, NODES_TABLE
from wikigame_spark.storage import Folder

CONTENTS = "contents"  # the manifest's key


class ContentsError(ValueError):
    """An output's files are not those its manifest records; the message names table and file."""


def _parquet(listing: dict[str, int]) -> dict[str, dict[str, int]]:
    """``{table: {file: bytes}}`` of the visible Parquet part files in a recursive listing."""
    tables: dict[str, dict[str, int]] = {}
    for rel, size in listing.items():
        parts = rel.split("/")
        if not rel.endswith(".parquet") or any(p.startswith((".", "_")) for p in parts):
            continue
        tables.setdefault(posixpath.dirname(rel) or ".", {})[parts[-1]] = size
    return tables


def _footer(folder: Folder, name: str) -> pq.FileMetaData:
    fs, p = folder.arrow(name)
    with fs.open_input_file(p) as f:
        return pq.ParquetFile(f).metadata


def describe(folder: Folder) -> dict:
    """``{table: {"rows": n, "files": {name: bytes}}}`` for the Parquet tables under ``folder``
    (rows from the footers on a local disk; on other stores the listing alone, rows None)."""
    local = folder.local_disk() is not None
    out = {}
    for table, files in sorted(_parquet(folder.list()).items()):
        rows = sum(_footer(folder, f"{table}/{name}").num_rows for name in files) if local else None
        out[table] = {"rows": rows, "files": dict(sorted(files.items()))}
    return out


def verify(folder: Folder, manifest: dict, flag: str, rows: bool = True) -> None:
    """The tables ``manifest`` records hold the Parquet files it lists (names and sizes; with
    ``rows``, each table's rows from the footers), else :class:`ContentsError`. Folders it does not
    record are other outputs kept inside this one (a graph's games, plays and caches); a manifest
    that records no contents is taken as it is."""
    recorded = manifest.get(CONTENTS)
    if recorded is None:
        return
    for table, entry in sorted(recorded.items()):
        table_dir = folder if table == "." else folder.sub(table)
        listing = table_dir.list() if table_dir.exists() else {}
        have = _parquet(listing).get(".", {})
        want = entry.get("files", {})
        where = f"{flag} {folder.root}: table {table}"
        inside = sorted(rel for rel in listing if "/" in rel and not rel.startswith((".", "_")))
        if table != "." and inside:  # a table's folder holds its part files only (a root table: other outputs)
            raise ContentsError(
                f"{where}: holds {inside[0].split('/')[0]}/ ({inside[0]}), which is not one of its part files "
                "(something written inside the table?): move it out of the table's folder"
            )
        for name in sorted(set(want) | set(have)):
            if name not in have:
                raise ContentsError(f"{where}: part file {name} is missing (the manifest lists {len(want)} files)")
            if name not in want:
                raise ContentsError(f"{where}: part file {name} is not in the manifest (added after it was written)")
            if want[name] != have[name]:
                raise ContentsError(
                    f"{where}: part file {name} is {have[name]} bytes, the manifest says {want[name]} "
                    "(cut short or replaced)"
                )
        if rows and entry.get("rows") is not None and table_dir.local_disk() is not None:
            counted = sum(_footer(table_dir, n).num_rows for n in have)
            if counted != entry["rows"]:
                raise ContentsError(f"{where}: {counted} rows, the manifest says {entry['rows']}")


def _column_range(table: Folder, column: str) -> tuple[int, int | None, int | None]:
    """``(rows, min, max)`` of an integer column from a table's footers (None: not recorded)."""
    rows, low, high = 0, None, None
    for name in _parquet(table.list()).get(".", {}):
        meta = _footer(table, name)
        rows += meta.num_rows
        index = meta.schema.names.index(column) if column in meta.schema.names else None
        for g in range(meta.num_row_groups):
            stats = meta.row_group(g).column(index).statistics if index is not None else None
            if stats is None or not stats.has_min_max:
                return rows, None, None
            low = stats.min if low is None else min(low, stats.min)
            high = stats.max if high is None else max(high, stats.max)
    return rows, low, high


def check_ids(graph: Folder, flag: str) -> None:
    """The graph contract's dense ids, as far as the footers tell in seconds: node ids 0…N−1 and
    every edge's ends among them (duplicates inside that range are found when the graph is mapped).
    Footers are read on a local disk only: elsewhere the first stage that maps the graph checks."""
    nodes, edges = graph.sub(NODES_TABLE), graph.sub(EDGES_TABLE)
    if nodes.local_disk() is None:
        return
    n, low, high = _column_range(nodes, "id")
    if low is not None and (low != 0 or high != n - 1):
        raise ContentsError(
            f"{flag}: {nodes.root}: node ids run {low}…{high} over {n} rows, not 0…{n - 1} (the contract)"
        )
    for column in ("src", "dst"):
        _, e_low, e_high = _column_range(edges, column)
        if e_low is not None and (e_low < 0 or e_high >= n):
            bad = e_high if e_high >= n else e_low
            raise ContentsError(
                f"{flag}: {edges.root}: an edge's {column} is node {bad}, outside the graph's 0…{n - 1}"
            )
