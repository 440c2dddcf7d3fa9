"""Title normalisation and link-target classification, following MediaWiki's rules.

Namespace names come from the dump's own ``<siteinfo>`` (localised, e.g. Latgalian
``Kategoreja``) plus MediaWiki's canonical English names, which every wiki accepts as aliases.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote

# MediaWiki's canonical namespace names (valid on every wiki, whatever its language).
CANONICAL_NAMESPACES = {
    "media": -2,
    "special": -1,
    "talk": 1,
    "user": 2,
    "user talk": 3,
    "project": 4,
    "project talk": 5,
    "file": 6,
    "image": 6,
    "file talk": 7,
    "image talk": 7,
    "mediawiki": 8,
    "mediawiki talk": 9,
    "template": 10,
    "template talk": 11,
    "help": 12,
    "help talk": 13,
    "category": 14,
    "category talk": 15,
    "module": 828,
    "module talk": 829,
}

# Wikimedia's project interwiki prefixes; language prefixes are recognised by shape.
PROJECT_INTERWIKI = frozenset(
    (
        "w wikipedia wikt wiktionary commons c meta m species wikispecies q wikiquote s wikisource "
        "b wikibooks n wikinews v wikiversity voy wikivoyage d wikidata mw mediawikiwiki phab "
        "foundation wmf wikimedia metawikimedia incubator outreach betawiki wikitech mail "
        "bugzilla doi google imdb"
    ).split()
)
_LANGUAGE_PREFIX = re.compile(r"^[a-z]{2,3}(?:-[a-z0-9]{2,8})*$")
# Media, File, Category: a link there shows an image or files the page in a category, no text.
UNSEEN_NAMESPACES = frozenset({-2, 6, 14})
# A title with a namespace-like prefix and a media file's extension: a file link under one of the
# wiki's aliases for its File namespace, which a dump's siteinfo does not list (``Attēls:``).
_MEDIA_FILE = re.compile(
    r"^[^:]+:.+\.(?:jpe?g|png|gif|svg|tiff?|webp|xcf|pdf|djvu|og[agv]|webm|mp[34]|wav|flac|midi?|stl)$", re.I
)
_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.S)
_SPACES = re.compile(r"[\s_\u00a0\u200e\u200f]+")
_ILLEGAL = re.compile(r"[<>\[\]{}|]")
# What a page's stored title never holds, though a link's text may (MediaWiki refuses such titles):
# a section, markup, control characters, a percent escape or an HTML entity (a link decodes those).
_NOT_STORED = re.compile(r"[#<>\[\]{}|\x00-\x1f\x7f]|%[0-9A-Fa-f]{2}|&[A-Za-z0-9\x80-\U0010ffff]+;")

MAIN = "main"
OTHER_NAMESPACE = "other_namespace"
INTERWIKI = "interwiki"
INVALID = "invalid"
SECTION_ONLY = "section_only"
INVALID_TITLE = "invalid_title"


@dataclass(frozen=True)
class SiteInfo:
    """What a dump's ``<siteinfo>`` says about how its titles work."""

    dbname: str = ""
    sitename: str = ""
    base: str = ""
    generator: str = ""
    case: str = "first-letter"
    namespaces: dict[str, int] = field(default_factory=dict)
    lang: str = ""

    def namespace_of(self, prefix: str) -> int | None:
        """Namespace number of a title prefix, case-insensitively, or None."""
        key = _SPACES.sub(" ", prefix).strip().lower()
        if key in self.namespaces:
            return self.namespaces[key]
        return CANONICAL_NAMESPACES.get(key)

    def to_dict(self) -> dict:
        return {
            "dbname": self.dbname,
            "sitename": self.sitename,
            "base": self.base,
            "generator": self.generator,
            "case": self.case,
            "lang": self.lang,
            "namespaces": dict(self.namespaces),
        }

    @classmethod
    def from_dict(cls, d: dict) -> SiteInfo:
        return cls(**{**d, "namespaces": dict(d.get("namespaces", {}))})


def capitalise_first(title: str, case: str) -> str:
    """Upper-case the first letter where the wiki does (``first-letter``), as MediaWiki does."""
    if case != "first-letter" or not title:
        return title
    first = title[0].upper()
    # MediaWiki keeps characters whose upper case is longer than one (e.g. 'ß').
    return (first if len(first) == 1 else title[0]) + title[1:]


def classify_target(raw: str, site: SiteInfo) -> tuple[str, str]:
    """Classify a link or redirect target as written in wikitext.

    Returns ``(kind, title)``: kind is ``main`` (title is the normalised main-namespace title),
    ``other_namespace``, ``interwiki``, ``section_only`` (a link to a section of the same page) or
    ``invalid`` (markup that MediaWiki would not accept as a title).
    """
    text = raw
    if "<!--" in text:
        text = _COMMENT.sub("", text)
    if "&" in text:
        text = html.unescape(text)
    if "%" in text:
        text = unquote(text)
    text = text.split("#", 1)[0]
    text = _SPACES.sub(" ", text).strip()
    if not text:
        return (SECTION_ONLY if "#" in raw else INVALID), ""
    if _ILLEGAL.search(text):
        return INVALID, ""
    if text.startswith(":"):
        text = text[1:].lstrip()
    if ":" in text:
        prefix = text.split(":", 1)[0]
        if site.namespace_of(prefix) is not None:
            return OTHER_NAMESPACE, ""
        bare = prefix.strip()
        if bare.lower() in PROJECT_INTERWIKI or _LANGUAGE_PREFIX.match(bare):
            return INTERWIKI, ""
    if not text:
        return INVALID, ""
    return MAIN, capitalise_first(text, site.case)


def reads_as_text(raw: str, site: SiteInfo) -> bool:
    """Whether a wikilink shows as text in the article: not a file, media or category link, nor an
    interlanguage link (a leading colon makes any of them a plain link)."""
    text = _SPACES.sub(" ", raw).strip()
    if text.startswith(":") or ":" not in text:
        return True
    prefix = text.split(":", 1)[0].strip()
    if site.namespace_of(prefix) in UNSEEN_NAMESPACES or _MEDIA_FILE.match(text):
        return False
    return prefix.lower() in PROJECT_INTERWIKI or not _LANGUAGE_PREFIX.match(prefix)


def target_classifier(site: SiteInfo, cache_size: int = 1 << 17) -> Callable[[str], tuple[str, str]]:
    """:func:`classify_target` for one wiki, remembering its latest answers: the same targets are
    linked from many pages."""
    return functools.lru_cache(maxsize=cache_size)(functools.partial(classify_target, site=site))


def page_title(raw: str, site: SiteInfo) -> str | None:
    """A main-namespace page's own title as a link names it (the rules of :func:`classify_target`:
    first-letter case, underscores and whitespace), or None when no link could reach the page:
    empty, a ``#`` or other character a title cannot hold, a percent escape or HTML entity, or a
    namespace or interwiki prefix."""
    if _NOT_STORED.search(raw) or raw.lstrip(" _").startswith(":"):
        return None
    kind, title = classify_target(raw, site)
    return title if kind == MAIN else None
