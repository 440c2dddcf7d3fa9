"""Per-article extraction of link targets and the summary from wikitext.

Two methods with the same output contract, ``(raw link titles, summary)``:

* :func:`extract_reference` is the paper's method: a full ``mwparserfromhell`` parse of the
  article, ``filter_wikilinks()`` and ``strip_code()[:1000]``. It is the verified baseline.
* :func:`extract_fast` finds links with a regular-expression scan that follows the parser's own
  rules (comments and parser-blacklisted tags such as ``<nowiki>`` hide links; a title may not
  contain a newline or brackets) and builds the summary from only as many paragraph chunks of
  the article as yield the first 1,000 characters of stripped text (:func:`fast_summary`). The
  chunks go through the library's C tokenizer; ``strip_code()`` is then computed straight from
  the tokens instead of building the node tree in Python (most of the parse's cost).

A clean summary (:func:`fast_summary` given which links read as text) leaves out what the
paper's method keeps of file, category and interlanguage links (captions, ``thumb``, ``250px``),
media tags, and the markup of tables (their cells are kept, as the paper keeps them).

Raw titles are normalised later by :mod:`wikigame_spark.ingest.titles`; equality between the two
methods is measured on the normalised, resolved edge sets (``make bench``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import mwparserfromhell
from mwparserfromhell.definitions import INVISIBLE_TAGS, PARSER_BLACKLIST

SUMMARY_CHARS = 1000

FAST = "fast"
REFERENCE = "reference"


# A wikilink's title → whether the link shows as text (titles.reads_as_text of one wiki).
ReadsAsText = Callable[[str], bool]


def extract_reference(
    text: str, summary_chars: int = SUMMARY_CHARS, reads_as_text: ReadsAsText | None = None
) -> tuple[list[str], str]:
    """The paper's method: full parse, every wikilink, stripped text cut to length (or the clean
    summary, given ``reads_as_text``)."""
    code = mwparserfromhell.parse(text)
    links = [str(link.title) for link in code.filter_wikilinks()]
    if reads_as_text is not None:
        return links, fast_summary(text, summary_chars, reads_as_text)
    return links, code.strip_code()[:summary_chars]


# Spans whose contents the parser does not read as wikitext: closed comments and closed
# parser-blacklisted tags (an unclosed one is plain text to the parser, so it hides nothing).
_HIDDEN = re.compile(
    r"<!--.*?-->|<(" + "|".join(PARSER_BLACKLIST) + r")(?:\s[^>]*)?(?:/>|>.*?</\1\s*>)",
    re.S | re.I,
)
# A wikilink: a title without newline, brackets or angle brackets (the parser's rule), then an
# optional label that may hold nested links, single-bracket external links or a lone bracket.
_LINK = re.compile(
    r"\[\[([^\[\]\n<>|]*(?:<!--.*?-->[^\[\]\n<>|]*)*)"
    r"(?:\|((?:[^\[\]]|\[\[[^\[\]]*\]\]|\[[^\[\]]*\]|\](?!\])|\[(?!\[))*))?\]\]",
    re.S,
)


def _scan_links(text: str, out: list[str]) -> None:
    for title, label in _LINK.findall(text):
        out.append(title)
        if "[[" in label:
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


# Constructs whose opening and closing must balance before the text may be cut. Tables open and
# close only at the start of a line (the parser's rule), so a "|}" inside a template is not one.
_PAIRS = (("{{", "}}"), ("[[", "]]"))
_TABLE_OPEN = re.compile(r"(?:^|\n)[^\S\n]*\{\|")
_TABLE_CLOSE = re.compile(r"\n[^\S\n]*\|\}")
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)\b[^<>]*?(/?)>")
_VOID_TAGS = frozenset(("br", "hr", "wbr", "li", "p"))


_CLOSE_TAGS: dict[str, re.Pattern] = {}


def _blank(match: re.Match) -> str:
    return " " * len(match.group())


class _Balance:
    """Whether every construct opened before a position is closed, scanning forward once.

    The counts are read from the text as the parser sees it: closed comments and the contents of
    parser-blacklisted tags are blanked first (same length). A tag with no closing tag anywhere
    after it is text to the parser, and so is a closing tag with nothing open, so neither counts.
    """

    def __init__(self, text: str):
        self.text = _HIDDEN.sub(_blank, text) if "<" in text else text
        self.next_close: dict[str, int] = {}  # per tag name: where its next closing tag starts, or -1
        self.pairs = [0] * len(_PAIRS)
        self.tables = 0
        self.tags: dict[str, int] = {}
        self.done = 0

    def _closable(self, name: str, at: int) -> bool:
        known = self.next_close.get(name)
        if known is None or 0 <= known <= at:
            pattern = _CLOSE_TAGS.get(name)
            if pattern is None:
                pattern = _CLOSE_TAGS[name] = re.compile(f"</{re.escape(name)}\\b", re.I)
            found = pattern.search(self.text, at)
            known = self.next_close[name] = found.start() if found else -1
        return known > at

    def closed_at(self, pos: int) -> bool:
        """Advance to ``pos``; true if nothing opened before it is still open."""
        text, done = self.text, self.done
        for i, (opening, closing) in enumerate(_PAIRS):
            self.pairs[i] += text.count(opening, done, pos) - text.count(closing, done, pos)
        if text.find("{|", done, pos) != -1 or text.find("|}", done, pos) != -1:
            self.tables += len(_TABLE_OPEN.findall(text, done, pos))
            self.tables = max(self.tables - len(_TABLE_CLOSE.findall(text, done, pos)), 0)
        if text.find("<", done, pos) != -1:
            tags = self.tags
            for m in _TAG.finditer(text, done, pos):
                close, name, self_closing = m.groups()
                name = name.lower()
                if self_closing or name in _VOID_TAGS:
                    continue
                if close:
                    if tags.get(name):
                        tags[name] -= 1
                elif self._closable(name, m.start()):
                    tags[name] = tags.get(name, 0) + 1
        self.done = pos
        return not any(self.pairs) and not self.tables and not any(self.tags.values())


def _safe_cuts(text: str):
    """Paragraph breaks where every construct opened before is closed, in order."""
    balance = _Balance(text)
    visible = balance.text
    pos = visible.find("\n\n")
    while pos != -1:
        if balance.closed_at(pos):
            yield pos
        pos = visible.find("\n\n", pos + 2)


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
_DEPTH = {**dict.fromkeys(_OPENERS, 1), **dict.fromkeys(_CLOSERS, -1)}
_TAG_NAME_ENDS = (_T.TagAttrStart, _T.TagCloseOpen, _T.TagCloseSelfclose)
_INVISIBLE = frozenset(INVISIBLE_TAGS)


def _collapse(parts: list[str]) -> str:
    """What ``mwparserfromhell.wikicode.Wikicode.strip_code`` does with its nodes' stripped texts
    (``collapse=True``)."""
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
        # Whether the parse left a bold or italic mark as plain text: unlike the constructs
        # counted by _Balance, such a mark may pair with one in a later paragraph.
        self.unsettled = False

    def code(self, stops: tuple) -> str:
        """The stripped text of the tokens up to (not including) one of type ``stops``."""
        tokens, n, parts = self.tokens, len(self.tokens), []
        while self.i < n:
            tok = tokens[self.i]
            kind = type(tok)
            if kind in stops:
                break
            if kind is _T.Text:
                text = tok["text"]  # tokens are dicts; attribute access is a slow __getattr__
                if "''" in text:
                    self.unsettled = True
                parts.append(text)
                self.i += 1
                continue
            stripped = self.node(kind)
            if stripped:
                parts.append(stripped)
        return _collapse(parts)

    def skip(self) -> None:
        """Step over the whole node opened at the current token."""
        self.i = self._through(self.i, 0)

    def _through(self, i: int, depth: int, stops: tuple = ()) -> int:
        """The index after the token that brings ``depth`` to zero, or of the first token of
        type ``stops`` met at depth zero, from token ``i``."""
        tokens, delta = self.tokens, _DEPTH.get
        while True:
            tok = tokens[i]
            kind = type(tok)
            if kind is _T.Text:
                if "''" in tok["text"]:
                    self.unsettled = True
            elif depth == 0 and kind in stops:
                return i
            else:
                depth += delta(kind, 0)
                if depth == 0 and not stops:
                    return i + 1
            i += 1

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
        if name["text"].lower() in _INVISIBLE:
            self.skip()
            return None
        # Attributes may hold templates and links.
        self.i = self._through(start + 2, 0, (_T.TagCloseOpen, _T.TagCloseSelfclose))
        tok = tokens[self.i]
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


# Tags whose content is no prose: galleries, image maps, timelines, maps, scores.
_UNSEEN_TAGS = frozenset("gallery imagemap timeline graph mapframe maplink score".split())
# A line the parser left as text that is table markup: ``{|``, ``|}``, ``|-``, ``|+``, ``| cell``,
# ``! header``.
_TABLE_LINE = re.compile(r"^[ \t]*(\{\||\|\}|\|-|\|\+|\||!)(.*)$", re.M)
_CELLS = re.compile(r"\|\||!!")


def _table_line_text(match: re.Match) -> str:
    """A table markup line as the reader sees it: its cells' contents (attributes and markup left
    out), a row or table delimiter as nothing."""
    mark, rest = match.groups()
    if mark in ("{|", "|}", "|-"):
        return ""
    if mark == "|+":
        return rest.strip()
    cells = (cell.split("|", 1)[-1].strip() for cell in _CELLS.split(rest))
    return " ".join(cell for cell in cells if cell)


class _CleanStripper(_Stripper):
    """:class:`_Stripper` leaving out links that show no text and tags that hold no prose,
    keeping of table markup the parser left as text only the cells' contents, and spaces single."""

    def __init__(self, tokens: list, reads_as_text: ReadsAsText):
        super().__init__(tokens)
        self.reads_as_text = reads_as_text

    def node(self, kind) -> str | None:
        if kind is _T.WikilinkOpen:
            title, text = self._two_parts(_T.WikilinkSeparator, _T.WikilinkClose)
            if not self.reads_as_text(title):
                return None
            return title if text is None else text
        return super().node(kind)

    def tag(self) -> str | None:
        name = self.tokens[self.i + 1] if self.i + 1 < len(self.tokens) else None
        if type(name) is _T.Text and name["text"].strip().lower() in _UNSEEN_TAGS:
            self.skip()
            return None
        return super().tag()

    def code(self, stops: tuple) -> str:
        text = super().code(stops)
        if stops:
            return text
        lines = (" ".join(line.split()) for line in _TABLE_LINE.sub(_table_line_text, text).split("\n"))
        return _collapse(["\n".join(lines)])


def _stripper(tokens: list, reads_as_text: ReadsAsText | None) -> _Stripper:
    return _Stripper(tokens) if reads_as_text is None else _CleanStripper(tokens, reads_as_text)


def strip_code(text: str) -> str:
    """``mwparserfromhell.parse(text).strip_code()``: the C tokenizer reads the text exactly as
    ``parse`` does; the (slow, Python) node tree is never built."""
    return _Stripper(_PARSER._tokenizer.tokenize(text)).code(())


def fast_summary(text: str, summary_chars: int = SUMMARY_CHARS, reads_as_text: ReadsAsText | None = None) -> str:
    """``parse(text).strip_code()[:summary_chars]``, parsing only as much of the text as needed
    (the clean summary, given ``reads_as_text``).

    The text is read in chunks that end at paragraph breaks where all templates, links, tables,
    comments and tags are closed, so each chunk parses as it does inside the whole article and the
    stripped text of the article is the chunks' stripped texts joined by the paragraph break
    (collapsed to one blank line). Chunks are read until the summary is long enough; a chunk whose
    parse is unsettled is read again, twice as long.
    """
    tokenize = _PARSER._tokenizer.tokenize
    least = 2 * summary_chars  # characters of wikitext read by the next chunk, at least
    if len(text) <= least:
        return _stripper(tokenize(text), reads_as_text).code(())[:summary_chars]
    stripped = ""
    done = 0
    for cut in _safe_cuts(text):
        if cut - done < least:
            continue
        stripper = _stripper(tokenize(text[done:cut]), reads_as_text)
        chunk = stripper.code(())
        if stripper.unsettled:
            least = 2 * (cut - done)
            continue
        stripped = _join(stripped, chunk)
        if len(stripped) >= summary_chars:
            return stripped[:summary_chars]
        done = cut
        least = 2 * (summary_chars - len(stripped))
    return _join(stripped, _stripper(tokenize(text[done:]), reads_as_text).code(()))[:summary_chars]


def _join(head: str, tail: str) -> str:
    """The stripped text of two chunks split at a paragraph break, from theirs."""
    return f"{head}\n\n{tail}" if head and tail else head or tail


def extract_fast(
    text: str, summary_chars: int = SUMMARY_CHARS, reads_as_text: ReadsAsText | None = None
) -> tuple[list[str], str]:
    """Same contract as :func:`extract_reference`, several times faster."""
    return fast_links(text), fast_summary(text, summary_chars, reads_as_text)


EXTRACTORS = {FAST: extract_fast, REFERENCE: extract_reference}
