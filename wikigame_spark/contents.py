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

from wikigame_spark.storage import Storage

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


def _rows(storage: Storage, path: str) -> int:
    fs, p = storage.arrow(path)
    with fs.open_input_file(p) as f:
        return pq.ParquetFile(f).metadata.num_rows


def describe(storage: Storage, directory: str) -> dict:
    """``{table: {"rows": n, "files": {name: bytes}}}`` for the Parquet tables under ``directory``
    (rows from the footers on a local disk; on other stores the listing alone, rows None)."""
    local = storage.local_disk(directory) is not None
    out = {}
    for table, files in sorted(_parquet(storage.list(directory)).items()):
        rows = sum(_rows(storage, storage.join(directory, f"{table}/{name}")) for name in files) if local else None
        out[table] = {"rows": rows, "files": dict(sorted(files.items()))}
    return out


def verify(storage: Storage, directory: str, manifest: dict, flag: str, rows: bool = True) -> None:
    """The tables ``manifest`` records hold the Parquet files it lists (names and sizes; with
    ``rows``, each table's rows from the footers), else :class:`ContentsError`. Folders it does not
    record are other outputs kept inside this one (a graph's games, plays and caches); a manifest
    that records no contents is taken as it is."""
    recorded = manifest.get(CONTENTS)
    if recorded is None:
        return
    for table, entry in sorted(recorded.items()):
        table_dir = directory if table == "." else storage.join(directory, table)
        listing = storage.list(table_dir) if storage.exists(table_dir) else {}
        have = _parquet(listing).get(".", {})
        want = entry.get("files", {})
        where = f"{flag} {directory}: table {table}"
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
        if rows and entry.get("rows") is not None and storage.local_disk(table_dir) is not None:
            counted = sum(_rows(storage, storage.join(table_dir, n)) for n in have)
            if counted != entry["rows"]:
                raise ContentsError(f"{where}: {counted} rows, the manifest says {entry['rows']}")


def _column_range(storage: Storage, table_dir: str, column: str) -> tuple[int, int | None, int | None]:
    """``(rows, min, max)`` of an integer column from a table's footers (None: not recorded)."""
    rows, low, high = 0, None, None
    for name in _parquet(storage.list(table_dir)).get(".", {}):
        fs, p = storage.arrow(storage.join(table_dir, name))
        with fs.open_input_file(p) as f:
            meta = pq.ParquetFile(f).metadata
        rows += meta.num_rows
        index = meta.schema.names.index(column) if column in meta.schema.names else None
        for g in range(meta.num_row_groups):
            stats = meta.row_group(g).column(index).statistics if index is not None else None
            if stats is None or not stats.has_min_max:
                return rows, None, None
            low = stats.min if low is None else min(low, stats.min)
            high = stats.max if high is None else max(high, stats.max)
    return rows, low, high


def check_ids(storage: Storage, nodes_dir: str, edges_dir: str, flag: str) -> None:
    """The graph contract's dense ids, as far as the footers tell in seconds: node ids 0…N−1 and
    every edge's ends among them (duplicates inside that range are found when the graph is mapped).
    Footers are read on a local disk only: elsewhere the first stage that maps the graph checks."""
    if storage.local_disk(nodes_dir) is None:
        return
    n, low, high = _column_range(storage, nodes_dir, "id")
    if low is not None and (low != 0 or high != n - 1):
        raise ContentsError(
            f"{flag}: {nodes_dir}: node ids run {low}…{high} over {n} rows, not 0…{n - 1} (the contract)"
        )
    for column in ("src", "dst"):
        _, e_low, e_high = _column_range(storage, edges_dir, column)
        if e_low is not None and (e_low < 0 or e_high >= n):
            bad = e_high if e_high >= n else e_low
            raise ContentsError(f"{flag}: {edges_dir}: an edge's {column} is node {bad}, outside the graph's 0…{n - 1}")
