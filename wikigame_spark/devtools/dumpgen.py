"""Dumps generated for tests from the real ones: re-laid out, replicated or damaged on purpose."""

from __future__ import annotations

import bz2
import os
import re
from xml.sax.saxutils import escape

PAGE = re.compile(rb"  <page>.*?</page>\n", re.S)
PAGE_ID = re.compile(rb"<id>(\d+)</id>")
TITLE = re.compile(rb"<title>(.*?)</title>")


def split_dump(xml: bytes) -> tuple[bytes, list[bytes], bytes]:
    """Header (up to the first page), the pages, and the footer of a dump."""
    pages = PAGE.findall(xml)
    first = xml.index(b"  <page>")
    last = xml.rindex(b"</page>\n") + len(b"</page>\n")
    return xml[:first], pages, xml[last:]


def write_multistream(xml: bytes, directory: str, name: str, pages_per_stream: int = 100) -> tuple[str, str]:
    """Lay a dump out as Wikimedia's multistream files: one bz2 stream per N pages, plus index."""
    header, pages, footer = split_dump(xml)
    dump = os.path.join(directory, f"{name}-pages-articles-multistream.xml.bz2")
    index = os.path.join(directory, f"{name}-pages-articles-multistream-index.txt.bz2")
    lines = []
    with open(dump, "wb") as f:
        f.write(bz2.compress(header))
        for i in range(0, len(pages), pages_per_stream):
            offset = f.tell()
            group = pages[i : i + pages_per_stream]
            for page in group:
                pid = PAGE_ID.search(page).group(1).decode()
                title = TITLE.search(page).group(1).decode()
                lines.append(f"{offset}:{pid}:{title}\n")
            f.write(bz2.compress(b"".join(group)))
        f.write(bz2.compress(footer))
    with open(index, "wb") as f:
        f.write(bz2.compress("".join(lines).encode()))
    return dump, index


def page_xml(title: str, page_id: int, text: str, ns: int = 0, redirect: str | None = None) -> str:
    red = f'    <redirect title="{escape(redirect, {chr(34): "&quot;"})}" />\n' if redirect else ""
    return (
        f"  <page>\n    <title>{escape(title)}</title>\n    <ns>{ns}</ns>\n    <id>{page_id}</id>\n{red}"
        f"    <revision>\n      <id>{page_id * 10}</id>\n      <timestamp>2020-01-01T00:00:00Z</timestamp>\n"
        f'      <text xml:space="preserve">{escape(text)}</text>\n    </revision>\n  </page>\n'
    )


def small_dump(pages: list[str], dbname: str = "testwiki") -> str:
    """A complete dump document around the given page elements (English namespace names)."""
    return (
        '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="en">\n'
        f"  <siteinfo>\n    <sitename>Test</sitename>\n    <dbname>{dbname}</dbname>\n"
        "    <generator>MediaWiki 1.30.0</generator>\n    <case>first-letter</case>\n    <namespaces>\n"
        '      <namespace key="0" case="first-letter" />\n'
        '      <namespace key="10" case="first-letter">Template</namespace>\n'
        '      <namespace key="14" case="first-letter">Category</namespace>\n'
        "    </namespaces>\n  </siteinfo>\n" + "".join(pages) + "</mediawiki>\n"
    )
