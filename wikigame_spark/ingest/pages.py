"""One dump page record → one row of the ``PAGES`` table: classify, extract, normalise.

Plain Python on plain values: runs inside Spark tasks and in unit tests alike.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterator

from wikigame_spark.ingest.dumps import DumpTask, iter_pages
from wikigame_spark.ingest.titles import (
    INVALID_TITLE,
    MAIN,
    SiteInfo,
    classify_target,
    page_title,
    reads_as_text,
    target_classifier,
)
from wikigame_spark.ingest.wikitext import EXTRACTORS, SUMMARY_CHARS

ARTICLE = "article"
REDIRECT = "redirect"
OTHER_NAMESPACE = "other_namespace"
REJECTED = "rejected"
# Why a page is rejected; build_graph adds duplicate_title.
TRUNCATED = "truncated"
MISSING_FIELD = "missing_field"
NO_TEXT = "no_text"
TOO_LARGE = "too_large"
UNPARSEABLE = "unparseable"
REJECTIONS = (TRUNCATED, MISSING_FIELD, INVALID_TITLE, NO_TEXT, TOO_LARGE, UNPARSEABLE)

# How an article's summary is made: the paper's stripped text, or that without markup residue.
PAPER_SUMMARY = "paper"
CLEAN_SUMMARY = "clean"

Extractor = Callable[[str], tuple[list[str], str]]
Classifier = Callable[[str], tuple[str, str]]


def _row(
    file,
    kind,
    reason=None,
    ns=None,
    is_redirect=False,
    page_id=None,
    title=None,
    redirect_to=None,
    timestamp=None,
    text_bytes=None,
    summary=None,
    links=None,
    links_dropped=None,
    detail=None,
) -> tuple:
    return (
        file,
        kind,
        reason,
        ns,
        is_redirect,
        page_id,
        title,
        redirect_to,
        timestamp,
        text_bytes,
        summary,
        links,
        links_dropped,
        detail,
    )


def _int(value: str | None) -> int | None:
    try:
        return int(value.strip()) if value is not None else None
    except ValueError:
        return None


def normalise_links(raw_links: list[str], classify: Classifier) -> tuple[list[str], dict[str, int]]:
    """Main-namespace targets (one per occurrence) and counts of the rest by reason; ``classify``
    is :func:`~wikigame_spark.ingest.titles.target_classifier` of the wiki."""
    targets = list(map(classify, raw_links))
    kept = [title for kind, title in targets if kind == MAIN]
    if len(kept) == len(targets):
        return kept, {}
    return kept, dict(Counter(kind for kind, _ in targets if kind != MAIN))


def page_row(
    rec: dict, file: str, site: SiteInfo, extract: Extractor, max_text_bytes: int, classify: Classifier | None = None
) -> tuple:
    """Classify one page and, for an article, extract its links and summary."""
    if "truncated" in rec:
        return _row(file, REJECTED, TRUNCATED, detail=rec["truncated"])
    ns = _int(rec["ns"])
    page_id = _int(rec["id"])
    title = rec["title"]
    is_redirect = rec["redirect"] is not None
    text = rec["text"]
    common = dict(ns=ns, is_redirect=is_redirect, page_id=page_id, title=title, timestamp=rec["timestamp"])
    if ns is None or page_id is None or not title:
        missing = [k for k, v in (("ns", ns), ("id", page_id), ("title", title)) if not v and v != 0]
        return _row(file, REJECTED, MISSING_FIELD, detail=f"page without {', '.join(missing)}", **common)
    if ns != 0:
        return _row(file, OTHER_NAMESPACE, redirect_to=rec["redirect"], **common)
    # A node or redirect is found by the title links normalise to; one no link can name is dropped.
    name = page_title(title, site)
    if name is None:
        detail = f"title {title!r} is not a valid page title: no link can reach it"
        return _row(file, REJECTED, INVALID_TITLE, detail=detail, **common)
    common["title"] = name
    if is_redirect:
        kind, target = classify_target(rec["redirect"], site)
        if kind == MAIN:
            return _row(file, REDIRECT, redirect_to=target, **common)
        return _row(file, REDIRECT, reason=f"redirect_{kind}", detail=rec["redirect"], **common)
    if text is None:
        return _row(file, REJECTED, NO_TEXT, detail="revision text missing or deleted", **common)
    size = len(text.encode("utf-8"))
    if size > max_text_bytes:
        return _row(
            file,
            REJECTED,
            TOO_LARGE,
            text_bytes=size,
            detail=f"{size} bytes of wikitext > max_text_bytes={max_text_bytes}",
            **common,
        )
    try:
        raw_links, summary = extract(text)
    except (RecursionError, ValueError, MemoryError) as e:
        return _row(file, REJECTED, UNPARSEABLE, text_bytes=size, detail=f"{type(e).__name__}: {e}", **common)
    links, dropped = normalise_links(raw_links, classify or target_classifier(site))
    return _row(file, ARTICLE, text_bytes=size, summary=summary, links=links, links_dropped=dropped, **common)


def extractor(
    method: str, site: SiteInfo, summary: str = PAPER_SUMMARY, summary_chars: int = SUMMARY_CHARS
) -> Extractor:
    """One wiki's extraction: ``method``'s links, and its summary made as ``summary`` says."""
    shows = None
    if summary == CLEAN_SUMMARY:
        shows = functools.lru_cache(maxsize=1 << 12)(functools.partial(reads_as_text, site=site))
    return functools.partial(EXTRACTORS[method], summary_chars=summary_chars, reads_as_text=shows)


def task_rows(
    task: DumpTask,
    site: SiteInfo,
    method: str,
    max_text_bytes: int,
    summary: str = PAPER_SUMMARY,
    summary_chars: int = SUMMARY_CHARS,
) -> Iterator[tuple]:
    """All ``PAGES`` rows of one dump task."""
    extract = extractor(method, site, summary, summary_chars)
    classify = target_classifier(site)
    for rec in iter_pages(task):
        yield page_row(rec, task.path, site, extract, max_text_bytes, classify)
