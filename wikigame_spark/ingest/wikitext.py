"""Per-article extraction of link targets and the summary from wikitext.

Two methods with the same output contract, ``(raw link titles, summary)``:

* :func:`extract_reference` is the paper's method: a full ``mwparserfromhell`` parse of the
  article, ``filter_wikilinks()`` and ``strip_code()[:1000]``. It is the verified baseline.
* :func:`extract_fast` finds links with a regular-expression scan that follows the parser's own
  rules (comments and parser-blacklisted tags such as ``<nowiki>`` hide links; a title may not
  contain a newline or brackets) and builds the summary from only a balanced prefix of the
  article, long enough to yield the first 1,000 characters of stripped text. The prefix goes
  through the library's C tokenizer; :func:`strip_code` then computes ``strip_code()`` straight
  from the tokens instead of building the node tree in Python (most of the parse's cost).

Raw titles are normalised later by :mod:`wikigame_spark.ingest.titles`; equality between the two
methods is measured on the normalised, resolved edge sets (``make bench``).
"""

from __future__ import annotations

import re

import mwparserfromhell
from mwparserfromhell.definitions import INVISIBLE_TAGS, PARSER_BLACKLIST

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
_T = mwparserfromhell.parser.tokens
_OPENERS = (
    _T.TemplateOpen,
    _T.ArgumentOpen,
    _T.WikilinkOpen,
    _T.ExternalLinkOpen,
    _T.HeadingStart,
    _T.CommentStart,
    _T.TagOpenOpen,
)
_CLOSERS = (
    _T.TemplateClose,
    _T.ArgumentClose,
    _T.WikilinkClose,
    _T.ExternalLinkClose,
    _T.HeadingEnd,
    _T.CommentEnd,
    _T.TagCloseClose,
    _T.TagCloseSelfclose,
)
_TAG_NAME_ENDS = (_T.TagAttrStart, _T.TagCloseOpen, _T.TagCloseSelfclose)
_INVISIBLE = frozenset(INVISIBLE_TAGS)


def _collapse(parts: list[str]) -> str:
    """What ``Wikicode.strip_code`` does with its nodes' stripped texts (``collapse=True``)."""
    text = "".join(parts).strip("\n")
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text


class _Stripper:
    """``strip_code()`` computed from the tokenizer's tokens, without building the node tree.

    It follows ``mwparserfromhell``'s builder token by token and each node's ``__strip__`` rule:
    templates, comments and invisible tags (``<ref>``) are skipped whole; links, headings and
    visible tags give their stripped text; anything less common (HTML entities, odd tag names)
    is built by the library's own builder from its tokens and stripped by the library.
    """

    def __init__(self, tokens: list):
        self.tokens = tokens
        self.i = 0

    def code(self, stops: tuple) -> str:
        """The stripped text of the tokens up to (not including) one of type ``stops``."""
        tokens, n, parts = self.tokens, len(self.tokens), []
        while self.i < n:
            tok = tokens[self.i]
            kind = type(tok)
            if kind in stops:
                break
            if kind is _T.Text:
                parts.append(tok.text)
                self.i += 1
                continue
            stripped = self.node(kind)
            if stripped:
                parts.append(stripped)
        return _collapse(parts)

    def skip(self) -> None:
        """Step over the whole node opened at the current token."""
        tokens, depth = self.tokens, 0
        while True:
            tok = tokens[self.i]
            self.i += 1
            if isinstance(tok, _OPENERS):
                depth += 1
            elif isinstance(tok, _CLOSERS):
                depth -= 1
                if depth == 0:
                    return

    def library(self) -> str | None:
        """The node at the current token, built and stripped by ``mwparserfromhell`` itself."""
        start = self.i
        if isinstance(self.tokens[start], _OPENERS):
            self.skip()
        else:  # an HTML entity: start, [numeric, [hex]], text, end
            while not isinstance(self.tokens[self.i], _T.HTMLEntityEnd):
                self.i += 1
            self.i += 1
        node = _PARSER._builder.build(self.tokens[start : self.i]).nodes[0]
        return node.__strip__(normalize=True, collapse=True, keep_template_params=False)

    def _two_parts(self, separator, close) -> tuple[str, str | None]:
        """(first part, second part or None) of a link-like node; consumes through ``close``."""
        self.i += 1
        first = self.code((separator, close))
        second = None
        if type(self.tokens[self.i]) is separator:
            self.i += 1
            second = self.code((close,))
        self.i += 1
        return first, second

    def node(self, kind) -> str | None:
        if kind is _T.TemplateOpen or kind is _T.CommentStart:
            self.skip()
            return None
        if kind is _T.WikilinkOpen:
            title, text = self._two_parts(_T.WikilinkSeparator, _T.WikilinkClose)
            return title if text is None else text
        if kind is _T.TagOpenOpen:
            return self.tag()
        if kind is _T.HeadingStart:
            self.i += 1
            title = self.code((_T.HeadingEnd,))
            self.i += 1
            return title
        if kind is _T.ExternalLinkOpen:
            brackets = self.tokens[self.i].brackets
            url, title = self._two_parts(_T.ExternalLinkSeparator, _T.ExternalLinkClose)
            return title if brackets else url
        if kind is _T.ArgumentOpen:
            return self._two_parts(_T.ArgumentSeparator, _T.ArgumentClose)[1]
        return self.library()

    def tag(self) -> str | None:
        tokens, start = self.tokens, self.i
        name, end = tokens[start + 1], tokens[start + 2] if start + 2 < len(tokens) else None
        if type(name) is not _T.Text or not isinstance(end, _TAG_NAME_ENDS):
            return self.library()
        if name.text.lower() in _INVISIBLE:
            self.skip()
            return None
        self.i = start + 2
        depth = 0  # attributes may hold templates and links
        while True:
            tok = tokens[self.i]
            if depth == 0 and isinstance(tok, (_T.TagCloseOpen, _T.TagCloseSelfclose)):
                break
            if isinstance(tok, _OPENERS):
                depth += 1
            elif isinstance(tok, _CLOSERS):
                depth -= 1
            self.i += 1
        self.i += 1
        if type(tok) is _T.TagCloseSelfclose:
            return None
        contents = self.code((_T.TagOpenClose, _T.TagCloseClose))
        if type(tokens[self.i]) is _T.TagCloseClose:  # no closing tag: no contents
            self.i += 1
            return None
        while type(tokens[self.i]) is not _T.TagCloseClose:  # the closing tag's name
            self.i += 1
        self.i += 1
        return contents


def strip_code(text: str) -> str:
    """``mwparserfromhell.parse(text).strip_code()``: the C tokenizer reads the text exactly as
    ``parse`` does; the (slow, Python) node tree is never built."""
    return _Stripper(_PARSER._tokenizer.tokenize(text)).code(())


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
        stripped = strip_code(text[:cut])
        if len(stripped) >= want:
            return stripped[:summary_chars]
        start = max(2 * cut, cut + 2 * (want - len(stripped)))
    return strip_code(text)[:summary_chars]


def extract_fast(text: str, summary_chars: int = SUMMARY_CHARS) -> tuple[list[str], str]:
    """Same contract as :func:`extract_reference`, several times faster."""
    return fast_links(text), fast_summary(text, summary_chars)


EXTRACTORS = {FAST: extract_fast, REFERENCE: extract_reference}
