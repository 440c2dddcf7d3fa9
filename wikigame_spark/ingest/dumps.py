"""Reading MediaWiki XML dumps: input discovery, task planning, streaming pages.

Runs on plain Python values so it can execute inside Spark tasks and be tested without Spark.
A task is a whole file, a byte range of whole bz2 streams of a multistream ``.bz2`` with its
``-index`` file beside it, or a byte range of the bzip2 blocks of any other ``.bz2``: one large file
splits into many tasks. ``.xml``, ``.xml.gz`` and ``.xml.xz`` files are one task each.
"""

from __future__ import annotations

import bz2
import glob
import logging
import lzma
import os
import re
import xml.etree.ElementTree as ET
import xml.parsers.expat as expat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from wikigame_spark.ingest.bz2blocks import CorruptBlock, TruncatedBlocks, iter_blocks
from wikigame_spark.ingest.titles import SiteInfo

log = logging.getLogger(__name__)

DUMP_SUFFIXES = (".xml", ".xml.bz2", ".xml.xz", ".xml.gz", ".bz2", ".xz", ".gz")
BLOCK = 1 << 20
# The <siteinfo> is in the first kilobytes: read in steps this small, only its first compressed
# block is decoded.
HEADER_READ = 64 << 10
PROGRESS_EVERY = 10_000
# A plain .bz2 splits into no more tasks than it has MiBs: a task of fewer bytes may own no block
# (a block of 900 kB of XML compresses to about 200 kB).
MIN_SPLIT_BYTES = 1 << 20
PAGE_START = b"<page>"
# Kept back from each block's data so that a tag across two blocks is found whole.
TAG_TAIL = 64


class DumpError(ValueError):
    """A dump that cannot be read; the message names the file and the position."""


@dataclass(frozen=True)
class DumpTask:
    """A unit of parsing work: a whole file, ``[start, end)`` bytes of whole streams of a
    multistream file, or (``blocks``) the bzip2 blocks that start in ``[start, end)``."""

    path: str
    start: int = 0
    end: int = -1
    blocks: bool = False

    @property
    def whole_file(self) -> bool:
        return self.start == 0 and self.end == -1

    def describe(self) -> str:
        return self.path if self.whole_file else f"{self.path} [bytes {self.start}-{self.end})"


def _is_index(path: str) -> bool:
    return "-index" in os.path.basename(path)


def expand_inputs(paths: list[str]) -> list[str]:
    """Files, directories (their dump files) and globs, as a sorted list of dump files."""
    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            found = [
                os.path.join(p, f)
                for f in os.listdir(p)
                if f.endswith(DUMP_SUFFIXES) and not _is_index(f) and ".xml" in f
            ]
        elif any(ch in p for ch in "*?["):
            found = [f for f in glob.glob(p) if os.path.isfile(f) and not _is_index(f)]
        elif os.path.isfile(p):
            found = [p]
        else:
            raise DumpError(f"input {p!r}: no such file or directory")
        if not found:
            raise DumpError(f"input {p!r}: matches no dump file ({', '.join(DUMP_SUFFIXES)})")
        files.extend(os.path.abspath(f) for f in found)
    return sorted(dict.fromkeys(files))


def index_path_for(path: str) -> str | None:
    """The ``-multistream-index`` file published beside a multistream dump, if present."""
    base = os.path.basename(path)
    if "multistream" not in base or not path.endswith(".bz2"):
        return None
    name = base.replace("multistream", "multistream-index", 1).replace(".xml", ".txt", 1)
    candidate = os.path.join(os.path.dirname(path), name)
    return candidate if os.path.isfile(candidate) else None


def read_stream_offsets(index_path: str) -> list[int]:
    """Distinct stream offsets from a multistream index (``offset:page_id:title`` lines)."""
    offsets: set[int] = set()
    opener = bz2.open if index_path.endswith(".bz2") else open
    with opener(index_path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            head = line.split(":", 1)[0]
            if not head.strip():
                continue
            if not head.isdigit():
                raise DumpError(f"{index_path}: line {n}: expected 'offset:page_id:title', got {line[:80]!r}")
            offsets.add(int(head))
    return sorted(offsets)


def split_bz2(path: str, task_bytes: int, parallelism: int) -> list[DumpTask]:
    """A plain ``.bz2`` as byte ranges of its blocks: one per ``task_bytes``, and at least one per
    core (``parallelism``) while each range keeps ``MIN_SPLIT_BYTES``; one small file is one task."""
    size = os.path.getsize(path)
    n = max(-(-size // task_bytes), min(parallelism, size // MIN_SPLIT_BYTES))
    if n <= 1:
        return [DumpTask(path)]
    bounds = [size * k // n for k in range(n + 1)]
    return [DumpTask(path, bounds[k], bounds[k + 1], blocks=True) for k in range(n)]


def plan_tasks(files: list[str], task_bytes: int = 64 << 20, parallelism: int = 1) -> list[DumpTask]:
    """The tasks of the input files: multistream files with an index become byte ranges of whole
    streams, other ``.bz2`` files byte ranges of their blocks, any other file one task."""
    tasks: list[DumpTask] = []
    for path in files:
        index = index_path_for(path)
        if index is None:
            tasks.extend(split_bz2(path, task_bytes, parallelism) if path.endswith(".bz2") else [DumpTask(path)])
            continue
        offsets = read_stream_offsets(index)
        size = os.path.getsize(path)
        if not offsets:
            tasks.append(DumpTask(path))
            continue
        # The header stream before the first page stream holds <siteinfo>, read by the driver.
        bounds = offsets + [size]
        start = bounds[0]
        for i in range(1, len(bounds)):
            if bounds[i] - start >= task_bytes or i == len(bounds) - 1:
                tasks.append(DumpTask(path, start, bounds[i]))
                start = bounds[i]
    return tasks


_DECOMPRESSORS = {
    ".bz2": bz2.BZ2Decompressor,
    ".xz": lzma.LZMADecompressor,
    ".gz": lambda: zlib.decompressobj(wbits=31),
}


def _owned_pages(task: DumpTask) -> Iterator[bytes]:
    """The decompressed bytes of the pages a block-range task owns.

    A page belongs to the task whose blocks hold the first byte of its ``<page>`` tag: the task
    starts at the first such tag in its own blocks and reads on into the next task's blocks until
    the next tag there (or the dump's end), so every page is read once, whole, by one task.
    """
    end_bit = task.end * 8
    pending = b""
    ours = 0  # bytes of pending from the task's own blocks: a tag starting there is the task's
    started = False
    try:
        for bit, data in iter_blocks(task.path, task.start):
            owned = bit < end_bit
            pending += data
            if owned:
                ours = len(pending)
            if not started:
                i = pending.find(PAGE_START)
                if not 0 <= i < ours:  # no page starts in the task's blocks so far
                    if not owned:
                        return
                    pending = pending[-TAG_TAIL:]
                    ours = len(pending)
                    continue
                pending, ours, started = pending[i:], ours - i, True
            if not owned:
                i = pending.find(PAGE_START, ours)
                if i >= 0:
                    yield pending[:i]
                    return
            if len(pending) > TAG_TAIL:
                cut = len(pending) - TAG_TAIL
                yield pending[:cut]
                pending, ours = pending[cut:], max(ours - cut, 0)
    except CorruptBlock as e:
        raise DumpError(f"{task.describe()}: {e}") from e
    except TruncatedBlocks as e:
        if not (started or task.start == 0):
            return  # the task that reads into the cut from an earlier block says so
        if started and pending:
            yield pending
        raise _Truncated(f"compressed stream ends early ({e}; a cut-off download?)") from e
    if started and pending:
        yield pending


def _decompressed_blocks(task: DumpTask, read_bytes: int = BLOCK) -> Iterator[bytes]:
    """Decompressed bytes of a task, stream by stream (multistream and concatenated files too).

    Decompressor objects rather than file wrappers, so that a file cut off mid-stream still
    yields everything before the cut. Corrupt data raises :class:`DumpError` naming the file
    and compressed byte offset; a cut-off stream raises :class:`_Truncated`.
    """
    if task.blocks:
        yield from _owned_pages(task)
        return
    suffix = next((s for s in _DECOMPRESSORS if task.path.endswith(s)), None)
    end = task.end if task.end >= 0 else os.path.getsize(task.path)
    with open(task.path, "rb") as f:
        f.seek(task.start)
        pos = task.start
        if suffix is None:
            while pos < end:
                block = f.read(min(read_bytes, end - pos))
                if not block:
                    return
                pos += len(block)
                yield block
            return
        make = _DECOMPRESSORS[suffix]
        decomp = make()
        mid_stream = False
        while pos < end:
            chunk = f.read(min(read_bytes, end - pos))
            if not chunk:
                break
            pos += len(chunk)
            while chunk:
                try:
                    out = decomp.decompress(chunk)
                except (OSError, lzma.LZMAError, zlib.error) as e:
                    raise DumpError(f"{task.path}: corrupt compressed data near byte {pos}: {e}") from e
                mid_stream = not decomp.eof
                if out:
                    yield out
                if decomp.eof:
                    chunk = decomp.unused_data
                    decomp = make()
                else:
                    chunk = b""
        if mid_stream:
            raise _Truncated(f"compressed stream ends early at byte {pos} (a cut-off download?)")


class _Truncated(Exception):
    """Input ended before the document did; becomes a counted rejection, not a crash."""


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _check_encoding(first: bytes, where: str) -> None:
    if first.startswith((b"\xff\xfe", b"\xfe\xff")) or first[:4] in (b"<\x00?\x00", b"\x00<\x00?"):
        raise DumpError(f"{where}: file is UTF-16; MediaWiki dumps are UTF-8 (convert it with iconv)")
    if first.startswith(b"\xef\xbb\xbf"):
        return
    if not first.lstrip().startswith(b"<"):
        raise DumpError(f"{where}: not an XML dump: starts with {first[:40]!r}")


def _siteinfo_from(elem: ET.Element, lang: str) -> SiteInfo:
    names: dict[str, int] = {}
    case = "first-letter"
    values: dict[str, str] = {}
    for child in elem:
        tag = _local(child.tag)
        if tag == "namespaces":
            for ns in child:
                key = int(ns.get("key", "0"))
                if ns.text and key != 0:
                    names[re.sub(r"[\s_]+", " ", ns.text).strip().lower()] = key
        elif tag == "case":
            case = (child.text or case).strip()
        else:
            values[tag] = (child.text or "").strip()
    dbname = values.get("dbname", "")
    if not lang and dbname.endswith("wiki"):
        lang = dbname[: -len("wiki")].replace("_", "-")
    return SiteInfo(
        dbname=dbname,
        sitename=values.get("sitename", ""),
        base=values.get("base", ""),
        generator=values.get("generator", ""),
        case=case,
        namespaces=names,
        lang=lang,
    )


def read_siteinfo(path: str) -> SiteInfo:
    """The ``<siteinfo>`` of a dump file, reading only as far as its end."""
    parser = ET.XMLPullParser(events=("start", "end"))
    lang = ""
    first = True
    for block in _decompressed_blocks(DumpTask(path), HEADER_READ):
        if first:
            if not block.strip():
                continue
            _check_encoding(block, path)
            first = False
        try:
            parser.feed(block)
            for event, elem in parser.read_events():
                if event == "start" and _local(elem.tag) == "mediawiki":
                    lang = elem.get("{http://www.w3.org/XML/1998/namespace}lang", "")
                elif event == "end" and _local(elem.tag) == "siteinfo":
                    return _siteinfo_from(elem, lang)
                elif event == "start" and _local(elem.tag) == "page":
                    raise DumpError(f"{path}: no <siteinfo> before the first <page>")
        except ET.ParseError as e:
            raise DumpError(f"{path}: malformed XML at line {e.position[0]}, column {e.position[1]}: {e}") from e
    if first:
        raise DumpError(f"{path}: empty file")
    raise DumpError(f"{path}: no <siteinfo> found (not a MediaWiki XML dump?)")


class _PageReader:
    """Expat handlers that gather each ``<page>``'s title, ns, id, redirect and its newest
    revision's timestamp and text into a record: no element tree is built for a page's parts."""

    _PAGE_FIELDS = ("title", "ns", "id")
    _REVISION_FIELDS = ("timestamp", "text")

    def __init__(self):
        self.parser = expat.ParserCreate(namespace_separator="}")
        self.parser.buffer_text = True
        self.parser.buffer_size = 1 << 16
        self.parser.StartElementHandler = self._start
        self.parser.EndElementHandler = self._end
        self.parser.CharacterDataHandler = self._data
        self.depth = 0  # <mediawiki> is 1, a <page> 2, its fields 3, a revision's 4
        self.record: dict | None = None
        self.field: str | None = None  # the field being read, at depth field_depth
        self.field_depth = 0
        self.in_revision = False
        self.text: list[str] = []
        self.done: list[dict] = []

    def _start(self, name: str, attrs: dict) -> None:
        self.depth += 1
        name = _local(name)
        if self.depth == 2:
            if name == "page":
                self.record = {"title": None, "ns": None, "id": None, "redirect": None, "timestamp": None, "text": None}
        elif self.record is None:
            return
        elif self.depth == 3:
            if name in self._PAGE_FIELDS:
                self.field, self.field_depth, self.text = name, 3, []
            elif name == "revision":
                self.in_revision = True
            elif name == "redirect":
                self.record["redirect"] = attrs.get("title", "")
        elif self.depth == 4 and self.in_revision and name in self._REVISION_FIELDS:
            self.field, self.field_depth, self.text = name, 4, []

    def _end(self, name: str) -> None:
        depth, self.depth = self.depth, self.depth - 1
        if self.record is None:
            return
        if self.field is not None and depth == self.field_depth:
            # An empty element has no text: None, but the text of a revision is "" (deleted).
            self.record[self.field] = "".join(self.text) if self.text or self.field == "text" else None
            self.field = None
        elif depth == 3 and self.in_revision:
            self.in_revision = False
        elif depth == 2:
            self.done.append(self.record)
            self.record = None

    def _data(self, data: str) -> None:
        if self.field is not None and self.depth == self.field_depth:
            self.text.append(data)


def iter_pages(task: DumpTask) -> Iterator[dict]:
    """Page records of a task, in file order.

    Each record has ``title, ns, id, redirect, timestamp, text`` as strings (or None).
    A dump cut off mid-page yields its complete pages, then one record with ``truncated`` set
    saying where the input ended. Malformed XML or corrupt compression raises :class:`DumpError`.
    """
    where = task.describe()
    reader = _PageReader()
    feed = reader.parser.Parse
    if not task.whole_file:
        feed(b"<mediawiki>", False)
    first = True
    pages = 0
    consumed = 0
    last_id = None
    try:
        for block in _decompressed_blocks(task):
            if first:
                if not block.strip():
                    continue
                if task.whole_file:
                    _check_encoding(block, where)
                first = False
            consumed += len(block)
            if not task.whole_file and block.rstrip().endswith(b"</mediawiki>"):
                block = block.rstrip()[: -len(b"</mediawiki>")]
            malformed = None
            try:
                feed(block, False)
            except expat.ExpatError as e:
                malformed = e  # the pages before it come first
            for rec in reader.done:
                pages += 1
                last_id = rec["id"]
                if pages % PROGRESS_EVERY == 0:
                    log.info("%s: %d pages parsed (%.1f MB XML)", where, pages, consumed / 1e6)
                yield rec
            reader.done.clear()
            if malformed is not None:
                line, column = malformed.lineno, malformed.offset
                raise DumpError(
                    f"{where}: malformed XML at line {line}, column {column} (after page id {last_id}): {malformed}"
                ) from malformed
        if first and not task.blocks:  # a block range may hold no page start
            raise DumpError(f"{where}: empty file")
        try:
            feed(b"</mediawiki>" if not task.whole_file else b"", True)
        except expat.ExpatError as e:
            raise _Truncated(
                f"XML ends at byte {consumed} of the decompressed stream"
                + (" inside a page" if reader.record is not None else "")
            ) from e
    except _Truncated as e:
        log.warning("%s: truncated after %d complete pages (last page id %s): %s", where, pages, last_id, e)
        yield {"truncated": f"{where}: {e}; {pages} complete pages read, last complete page id {last_id}"}
        return
    log.info("%s: %d pages parsed (%.1f MB XML), done", where, pages, consumed / 1e6)
