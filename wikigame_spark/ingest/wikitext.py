"""Per-article extraction of link targets and the summary from wikitext.

Two methods with the same output contract, ``(raw link titles, summary)``:

* :func:`extract_reference` is the paper's method: a full ``mwparserfromhell`` parse of the
  article, ``filter_wikilinks()`` and ``strip_code()[:1000]``. It is the verified baseline.
* :func:`extract_fast` finds links with a regular-expression scan that follows the parser's own
  rules (comments and parser-blacklisted tags such as ``<nowiki>`` hide links; a title may not
  contain a newline or brackets) and builds the summary by parsing only a balanced prefix of
  the article that is long enough to yield the first 1,000 characters of stripped text.

Raw titles are normalised later by :mod:`wikigame_spark.ingest.titles`; equality between the two
methods is measured on the normalised, resolved edge sets (``make bench``).
"""

from __future__ import annotations

import re

import mwparserfromhell
from mwparserfromhell.definitions import PARSER_BLACKLIST

SUMMARY_CHARS = 1000

FAST = "fast"
REFERENCE = "reference"


def extract_reference(text: str, summary_chars: int = SUMMARY_CHARS) -> tuple[list[str], str]:
    """The paper's method: full parse, every wikilink, stripped text cut to length."""
    code = mwparserfromhell.parse(text)
    links = [str(link.title) for link in code.filter_wikilinks()]
    return links, code.strip_code()[:summary_chars]


# Spans whose contents the parser does not read as wikitext: closed comments and closed
# parser-blacklisted tags (an unclosed one is plain text to the parser, so it hides nothing).
_HIDDEN = re.compile(
    r"<!--.*?-->|<(" + "|".join(PARSER_BLACKLIST) + r")(?:\s[^>]*)?(?:/>|>.*?</\1\s*>)",
    re.S | re.I,
)
# A wikilink: a title without newline, brackets or angle brackets (the parser's rule), then an
# optional label that may hold nested links, single-bracket external links or a lone "]".
_LINK = re.compile(
    r"\[\[([^\[\]\n<>|]*(?:<!--.*?-->[^\[\]\n<>|]*)*)"
    r"(?:\|((?:[^\[\]]|\[\[[^\[\]]*\]\]|\[[^\[\]]*\]|\](?!\]))*))?\]\]",
    re.S,
)


def _scan_links(text: str, out: list[str]) -> None:
    for m in _LINK.finditer(text):
        out.append(m.group(1))
        label = m.group(2)
        if label and "[[" in label:
            _scan_links(label, out)


def fast_links(text: str) -> list[str]:
    """Raw link titles, in order, as ``filter_wikilinks`` would report them."""
    if "[[" not in text:
        return []
    if "<" in text:
        text = _HIDDEN.sub(" ", text)
    out: list[str] = []
    _scan_links(text, out)
    return out


# Constructs whose opening and closing must balance before a prefix may be cut.
_PAIRS = (("{{", "}}"), ("[[", "]]"), ("{|", "|}"), ("<!--", "-->"))
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)\b[^<>]*?(/?)>")
_VOID_TAGS = frozenset(("br", "hr", "wbr", "li", "p"))


def _safe_cuts(text: str, start: int):
    """Paragraph breaks at or after ``start`` where every construct opened before is closed.

    Counts are kept incrementally, so scanning the whole article costs one pass.
    """
    balance = [0] * len(_PAIRS)
    tags: dict[str, int] = {}
    done = 0
    pos = text.find("\n\n", start)
    while pos != -1:
        for i, (opening, closing) in enumerate(_PAIRS):
            balance[i] += text.count(opening, done, pos) - text.count(closing, done, pos)
        if "<" in text[done:pos]:
            for close, name, self_closing in _TAG.findall(text, done, pos):
                if not self_closing and name.lower() not in _VOID_TAGS:
                    key = name.lower()
                    tags[key] = tags.get(key, 0) + (-1 if close else 1)
        done = pos
        if not any(balance) and not any(tags.values()):
            yield pos
        pos = text.find("\n\n", pos + 2)


_PARSER = mwparserfromhell.parser.Parser()
_OPENERS = tuple(
    getattr(mwparserfromhell.parser.tokens, n)
    for n in (
        "TemplateOpen",
        "ArgumentOpen",
        "WikilinkOpen",
        "ExternalLinkOpen",
        "HeadingStart",
        "CommentStart",
        "TagOpenOpen",
    )
)
_CLOSERS = tuple(
    getattr(mwparserfromhell.parser.tokens, n)
    for n in (
        "TemplateClose",
        "ArgumentClose",
        "WikilinkClose",
        "ExternalLinkClose",
        "HeadingEnd",
        "CommentEnd",
        "TagCloseClose",
        "TagCloseSelfclose",
    )
)
_TEMPLATE_OPEN = mwparserfromhell.parser.tokens.TemplateOpen


def _strip_prefix(prefix: str) -> str:
    """``parse(prefix).strip_code()``, building no nodes for top-level templates.

    The C tokenizer reads the whole prefix exactly as ``parse`` does; only the (slow, Python)
    building of nodes is skipped for top-level templates, which ``strip_code`` renders as
    nothing. Infoboxes are most of an article's opening, so this is most of the work.
    """
    tokens = _PARSER._tokenizer.tokenize(prefix)
    kept = []
    depth = 0
    skip_from = None
    for tok in tokens:
        if isinstance(tok, _OPENERS):
            if depth == 0 and type(tok) is _TEMPLATE_OPEN:
                skip_from = depth
            depth += 1
        elif isinstance(tok, _CLOSERS):
            depth -= 1
            if skip_from is not None and depth == 0:
                skip_from = None
                continue
        if skip_from is None:
            kept.append(tok)
    return _PARSER._builder.build(kept).strip_code()


def fast_summary(text: str, summary_chars: int = SUMMARY_CHARS) -> str:
    """``parse(text).strip_code()[:summary_chars]``, parsing only as much of the text as needed.

    The prefix is cut at a paragraph break where all templates, links, tables, comments and tags
    are closed, so the parse of the prefix is the parse of the start of the whole article. The
    stripped prefix must exceed the wanted length by a margin so that whitespace collapsing at
    the cut cannot reach the kept characters; otherwise the prefix grows, up to the whole text.
    """
    want = summary_chars + 8
    start = 2 * summary_chars
    for cut in _safe_cuts(text, start):
        if cut < start:
            continue
        stripped = _strip_prefix(text[:cut])
        if len(stripped) >= want:
            return stripped[:summary_chars]
        start = max(2 * cut, cut + 2 * (want - len(stripped)))
    return _strip_prefix(text)[:summary_chars]


def extract_fast(text: str, summary_chars: int = SUMMARY_CHARS) -> tuple[list[str], str]:
    """Same contract as :func:`extract_reference`, several times faster."""
    return fast_links(text), fast_summary(text, summary_chars)


EXTRACTORS = {FAST: extract_fast, REFERENCE: extract_reference}
