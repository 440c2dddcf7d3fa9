import bz2
import lzma
import os
import random
import shutil
import string
from collections import Counter

import pytest

from tests.conftest import BNWIKI, ENWIKI, LTG
from wikigame_spark.devtools.dumpgen import page_xml, small_dump, write_multistream
from wikigame_spark.ingest import dumps
from wikigame_spark.ingest.bz2blocks import BLOCK_MAGIC, END_MAGIC, CorruptBlock, find_magics, iter_blocks
from wikigame_spark.ingest.dumps import (
    DumpError,
    DumpTask,
    expand_inputs,
    iter_pages,
    plan_tasks,
    read_siteinfo,
    split_bz2,
)
from wikigame_spark.ingest.pages import task_rows


def kinds(path):
    return Counter(
        (r.get("ns"), r.get("redirect") is not None) if "truncated" not in r else "truncated"
        for r in iter_pages(DumpTask(path))
    )


def test_latgalian_dump_page_counts():
    c = kinds(LTG)
    assert sum(c.values()) == 2004
    assert c[("0", False)] + c[("0", True)] == 1050
    assert c[("0", True)] == 147
    assert sum(n for (ns, red), n in c.items() if red) == 195
    assert c[("14", False)] + c[("14", True)] == 539


def test_english_head_page_counts():
    c = kinds(ENWIKI)
    assert sum(c.values()) == 206
    assert c[("0", False)] == 106 and c[("0", True)] == 99 and c[("4", True)] == 1


def test_truncated_bengali_dump_yields_complete_pages_then_a_counted_truncation():
    records = list(iter_pages(DumpTask(BNWIKI)))
    assert len(records) == 723
    assert "truncated" in records[-1]
    assert BNWIKI in records[-1]["truncated"] and "722 complete pages" in records[-1]["truncated"]
    complete = records[:-1]
    assert sum(r["ns"] == "0" and r["redirect"] is None for r in complete) == 380
    assert sum(r["ns"] == "0" and r["redirect"] is not None for r in complete) == 69


def test_multistream_splits_into_tasks_with_the_same_pages(tmp_path):
    xml = bz2.decompress(open(LTG, "rb").read())
    dump, _ = write_multistream(xml, str(tmp_path), "ltgwiki-20170901", pages_per_stream=50)
    tasks = plan_tasks([dump], task_bytes=64 * 1024)
    assert len(tasks) > 5 and all(not t.whole_file for t in tasks)
    assert tasks[0].start > 0 and tasks[-1].end == (tmp_path / dump).stat().st_size
    split = [r["id"] for t in tasks for r in iter_pages(t)]
    whole = [r["id"] for r in iter_pages(DumpTask(LTG))]
    assert split == whole
    assert read_siteinfo(dump).dbname == "ltgwiki"
    # the index beside the dump is found; a directory input lists the dump but not the index
    assert expand_inputs([str(tmp_path)]) == [dump]


def write(path, data: bytes):
    path.write_bytes(data)
    return str(path)


def test_magics_are_found_at_every_bit_shift():
    rng = random.Random(0)
    for magic in (BLOCK_MAGIC, END_MAGIC):
        for at in range(24, 32):  # every bit shift within a byte
            tail = 13 * 8 - at - 48
            bits = rng.getrandbits(at) << (48 + tail) | magic << tail | rng.getrandbits(tail)
            assert find_magics(bits.to_bytes(13, "big"), magic) == [at]


@pytest.fixture
def split_everywhere(monkeypatch):
    """Plain .bz2 files split however small: the shared dumps are under a MiB."""
    monkeypatch.setattr(dumps, "MIN_SPLIT_BYTES", 1)


@pytest.mark.parametrize("path", [LTG, ENWIKI])
@pytest.mark.parametrize("task_bytes", [40_000, 150_000, 400_000])
def test_plain_bz2_splits_into_block_ranges_with_the_same_pages(split_everywhere, path, task_bytes):
    tasks = split_bz2(path, task_bytes, parallelism=1)
    assert len(tasks) > 1 and all(t.blocks for t in tasks)
    assert tasks[0].start == 0 and tasks[-1].end == os.path.getsize(path)
    per_task = [list(iter_pages(t)) for t in tasks]
    assert [r for records in per_task for r in records] == list(iter_pages(DumpTask(path)))
    if task_bytes == 40_000:  # smaller than a block: some tasks own no block, so no page
        assert [] in per_task


def test_plan_has_a_task_per_core_for_a_plain_bz2(split_everywhere, tmp_path):
    (tasks,) = [plan_tasks([LTG], task_bytes=64 << 20, parallelism=1)]
    assert tasks == [DumpTask(LTG)]
    assert len(plan_tasks([LTG], task_bytes=64 << 20, parallelism=4)) == 4
    xml = tmp_path / "ltg-pages-articles.xml"
    xml.write_bytes(bz2.decompress(open(LTG, "rb").read()))
    assert plan_tasks([str(xml)], task_bytes=1000, parallelism=4) == [DumpTask(str(xml))]


def test_a_false_magic_before_a_ranges_first_block_is_passed_over(tmp_path):
    """Bytes that read as a block magic but start no block (a chance match inside compressed data)
    are skipped by a range that starts before them, and are corrupt data to one from byte 0."""
    real = open(LTG, "rb").read()
    path = tmp_path / "false-magic.xml.bz2"
    path.write_bytes(b"\x00" + BLOCK_MAGIC.to_bytes(6, "big") + bytes(range(256)) * 4 + real)
    blocks = list(iter_blocks(str(path), 1))
    assert b"".join(data for _, data in blocks) == bz2.decompress(real)
    assert blocks[0][0] == (7 + 1024 + 4) * 8  # the real first block, after the stream's header
    with pytest.raises(CorruptBlock, match="near byte 1"):
        next(iter_blocks(str(path), 0))


def test_a_page_tag_across_two_tasks_blocks_is_read_once_by_the_first(tmp_path):
    """A task whose one block holds no page but the first bytes of a ``<page>`` tag: the page is
    its own, read from the next task's blocks, and that task starts at the page after."""
    head, rest = small_dump([page_xml(f"Page {i}", i + 1, "Some text. " * 40) for i in range(60)]).split("  <page>", 1)
    path = str(tmp_path / "straddle-pages-articles.xml.bz2")

    def write(filler: str) -> bytes:  # letters in turn: no runs for bzip2's first encoding to shorten
        data = f"{head}<!-- {filler} -->\n  <page>{rest}".encode()
        with open(path, "wb") as f:
            f.write(bz2.compress(data, 9))
        return data

    letters, size = string.ascii_lowercase * 40_000, 880_000
    for _ in range(6):  # where block 1 ends depends a little on what it holds: aim again
        data = write(letters[:size])
        (_, first), (second, _) = list(iter_blocks(path))[:2]
        if len(first) - 6 < data.index(b"<page>") < len(first):
            break
        size += len(first) - 3 - data.index(b"<page>")
    assert len(first) - 6 < data.index(b"<page>") < len(first)  # the tag begins in block 1, ends in 2
    tasks = [DumpTask(path, 0, second // 8, blocks=True), DumpTask(path, second // 8, os.path.getsize(path), True)]
    per_task = [[r["title"] for r in iter_pages(t)] for t in tasks]
    assert per_task[0] == ["Page 0"] and per_task[1][0] == "Page 1"
    assert [r for t in tasks for r in iter_pages(t)] == list(iter_pages(DumpTask(path)))


@pytest.mark.parametrize("cut", [150_000, 400_000, 650_000, -10, -4])
def test_cut_plain_bz2_split_or_whole_gives_the_same_pages_and_one_truncation(split_everywhere, tmp_path, cut):
    data = open(LTG, "rb").read()
    path = tmp_path / "cut-pages-articles.xml.bz2"
    path.write_bytes(data[:cut])
    whole = list(iter_pages(DumpTask(str(path))))
    for task_bytes in (40_000, 150_000):
        split = [r for t in split_bz2(str(path), task_bytes, 1) for r in iter_pages(t)]
        assert [r for r in split if "truncated" not in r] == whole[:-1]
        (truncated,) = [r["truncated"] for r in split if "truncated" in r]
        assert str(path) in truncated and "a cut-off download" in truncated
    assert "truncated" in whole[-1]


def test_corrupt_block_of_a_split_bz2_names_file_and_byte(split_everywhere, tmp_path):
    data = bytearray(open(LTG, "rb").read())
    data[300_000] ^= 0xFF
    path = tmp_path / "bad-pages-articles.xml.bz2"
    path.write_bytes(bytes(data))
    failed = []
    for task in split_bz2(str(path), 100_000, 1):
        try:
            list(iter_pages(task))
        except DumpError as e:
            failed.append(str(e))
    assert failed and all(f"{path} [bytes " in e and "corrupt bzip2 block near byte" in e for e in failed)


@pytest.mark.parametrize("tail", [os.urandom(5_000), b"\x00" * 3])
def test_bytes_after_the_last_stream_are_an_error_split_or_whole(split_everywhere, tmp_path, tail):
    """Whatever the split, the same answer: one task or many, the dump is refused."""
    path = tmp_path / "appended-pages-articles.xml.bz2"
    path.write_bytes(open(LTG, "rb").read() + tail)
    with pytest.raises(DumpError, match=r"appended-pages-articles\.xml\.bz2"):
        list(iter_pages(DumpTask(str(path))))
    for task_bytes in (200_000, 40_000):
        failed = []
        for task in split_bz2(str(path), task_bytes, 1):
            try:
                list(iter_pages(task))
            except DumpError as e:
                failed.append(str(e))
        assert len(failed) == 1 and f"{len(tail)} bytes after the end of the last bzip2 stream" in failed[0], failed


def test_empty_file_is_a_clear_error(tmp_path):
    p = write(tmp_path / "empty.xml", b"")
    with pytest.raises(DumpError, match=r"empty\.xml: empty file"):
        list(iter_pages(DumpTask(p)))


def test_utf16_file_is_a_clear_error(tmp_path):
    p = write(tmp_path / "u16.xml", small_dump([page_xml("A", 1, "x")]).encode("utf-16"))
    with pytest.raises(DumpError, match=r"u16\.xml: file is UTF-16"):
        list(iter_pages(DumpTask(p)))
    with pytest.raises(DumpError, match="UTF-16"):
        read_siteinfo(p)


def test_malformed_xml_names_file_and_line(tmp_path):
    good = page_xml("A", 1, "[[B]]")
    bad = "  <page>\n    <title>B</title>\n    <ns>0</ns>\n  </pgae>\n"
    p = write(tmp_path / "bad.xml", small_dump([good, bad]).encode())
    with pytest.raises(DumpError, match=r"bad\.xml: malformed XML at line \d+, column \d+ \(after page id 1\)"):
        list(iter_pages(DumpTask(p)))


def test_corrupt_bz2_stream_names_file_and_byte(tmp_path):
    data = bytearray(open(LTG, "rb").read())
    data[300_000:300_200] = b"\x00" * 200
    p = write(tmp_path / "corrupt.xml.bz2", bytes(data))
    with pytest.raises(DumpError, match=r"corrupt\.xml\.bz2: corrupt compressed data near byte \d+"):
        list(iter_pages(DumpTask(p)))


def test_cut_compressed_file_is_a_counted_truncation(tmp_path):
    data = open(LTG, "rb").read()
    p = write(tmp_path / "cut.xml.bz2", data[: len(data) // 2])
    records = list(iter_pages(DumpTask(p)))
    assert "truncated" in records[-1] and "compressed stream ends early" in records[-1]["truncated"]
    assert 100 < len(records) < 2004


def test_xz_and_plain_xml_read_alike(tmp_path):
    xml = small_dump([page_xml("A", 1, "[[B]]"), page_xml("B", 2, "", redirect="A")])
    plain = write(tmp_path / "t.xml", xml.encode())
    xz = write(tmp_path / "t.xml.xz", lzma.compress(xml.encode()))
    assert list(iter_pages(DumpTask(plain))) == list(iter_pages(DumpTask(xz)))


def test_huge_page_and_missing_fields_are_counted_rejections(tmp_path):
    xml = small_dump(
        [page_xml("Big", 1, "x" * 5000), page_xml("Ok", 2, "[[Big]]"), "  <page>\n    <ns>0</ns>\n  </page>\n"]
    )
    p = write(tmp_path / "t.xml", xml.encode())
    site = read_siteinfo(p)
    rows = list(task_rows(DumpTask(p), site, "fast", max_text_bytes=1000))
    assert [(r[1], r[2]) for r in rows] == [("rejected", "too_large"), ("article", None), ("rejected", "missing_field")]


def test_missing_input_is_a_clear_error(tmp_path):
    with pytest.raises(DumpError, match="no such file"):
        expand_inputs([str(tmp_path / "nope.xml.bz2")])
    with pytest.raises(DumpError, match="matches no dump file"):
        expand_inputs([str(tmp_path / "*.xml.bz2")])
    shutil.copy(LTG, tmp_path / "a-pages-articles.xml.bz2")
    assert len(expand_inputs([str(tmp_path / "*.bz2")])) == 1
