import functools
import re

import mwparserfromhell
import pytest

from tests.conftest import BNWIKI, ENWIKI, LTG
from wikigame_spark.ingest.dumps import DumpTask, iter_pages, read_siteinfo
from wikigame_spark.ingest.pages import ARTICLE, CLEAN_SUMMARY, PAPER_SUMMARY, normalise_links, task_rows
from wikigame_spark.ingest.titles import SiteInfo, reads_as_text, target_classifier
from wikigame_spark.ingest.wikitext import (
    FAST,
    extract_fast,
    extract_reference,
    fast_links,
    fast_summary,
    strip_code,
)


@pytest.mark.parametrize(
    "text",
    [
        "Plain [[Foo]] and [[bar|label]] and [[Baz#Section|x]].",
        "[[Foo|a [[Bar]] b]] nested",
        "<!-- [[Hidden]] --> [[Shown]]",
        "<!-- unclosed [[Visible]]",
        "<nowiki>[[NoWiki]]</nowiki> <nowiki>[[Unclosed]]",
        "<math>[[x]]</math><pre>[[y]]</pre><ref>[[InRef]]</ref>",
        "[[A\nB]] [[A]B]] [[C<d>]] [[Foo{{x}}]]",
        "{{Infobox|capital=[[Riga]]|x={{nested|[[Deep]]}}}} [[File:a.jpg|thumb|cap [[Y]] z]]",
        "[[Foo|[http://x.com y]]] [[Multi|line\nlabel]]",
    ],
)
def test_fast_links_follow_the_parser(text):
    assert fast_links(text) == extract_reference(text)[0]


def test_fast_summary_equals_full_parse_on_long_text():
    infobox = "{{Infobox person\n| name = X\n| birth = {{birth date|1900|1|1}}\n| note = a [[Link]]\n}}\n"
    body = "\n\n".join(f"'''Para {i}''' has [[link {i}|text]] and <ref>cite {i}</ref> words. " * 5 for i in range(40))
    text = infobox + body + "\n\n{| class=wikitable\n| a || b\n|}\n"
    assert fast_summary(text) == extract_reference(text)[1]
    assert len(fast_summary(text)) == 1000


PARAGRAPH = "'''Word''' [[link|text]] and a <ref>{{cite|x}}</ref> sentence that goes on for a while. " * 6


@pytest.mark.parametrize(
    "head",
    [
        # A "|}" inside a template is not the end of a table; a tag inside a comment is not a tag.
        "{{Infobox|a={{x|}}|b=1}}\n<!-- <ref> not a tag\n\n-->",
        # A tag never closed is text to the parser, and a closing tag with nothing open too.
        "{{Infobox|anthem=<center>song}}\n</div>",
        "{|\n| a cell [[x]]\n|}",
        # Bold and italic marks left unpaired in one paragraph may pair with a later one's.
        "{{IPA|he'publi'ka}} " + "x " * 250 + "''open\n\nclose'' [[y]]",
        "<nowiki>{{</nowiki> {{tpl\n\n|x=1}} <math>\\frac{{a}}{b}</math>",
    ],
)
def test_fast_summary_reads_paragraph_chunks_as_the_whole_parse_does(head):
    # The first chunk read is at least 2,000 characters long: the head is where it ends.
    text = "\n\n".join([PARAGRAPH] * 3 + [head] + [PARAGRAPH] * 12)
    assert fast_summary(text) == extract_reference(text)[1]


@pytest.mark.parametrize(
    "text",
    [
        "'''Bold''' and ''italic'' &amp; &#931; &#x3a3; &nbsp; &bogus; text",
        "== Heading [[Link|label]] ==\n\n\n\nbody {{{arg|default [[D]]}}} {{{noarg}}}",
        "[http://example.com title ''x''] [http://example.com] http://bare.example.com/x y",
        "a<ref name=x>{{cite|[[X]]}}</ref>b<ref name=y/>c<references/><gallery>\nFile:a.jpg\n</gallery>",
        '<span style="{{x}}" class=a>visible</span> <br/> <div>un<b>closed',
        "<REF>upper</REF> <Math>x</Math> <!-- comment --> <nowiki>[[no]] {{no}}</nowiki>",
        "{| class=wikitable\n|+ caption\n! h1 !! h2\n|-\n| [[a]] || b\n|}\n* item\n# num\n; term : def",
        "[[File:a.jpg|thumb|caption with [[Nested|link]] and {{tpl}}]] [[Category:X]] [[:en:Y|z]]",
        "{{unclosed [[Link]] text",
        "[[Foo|]] [[|bar]] [[]] [[a|b|c]] <ref>unclosed ref",
    ],
)
def test_strip_code_equals_the_librarys(text):
    assert strip_code(text) == mwparserfromhell.parse(text).strip_code()


@pytest.mark.slow
@pytest.mark.parametrize("path", [LTG, ENWIKI, BNWIKI])
def test_strip_code_equals_the_librarys_on_every_real_page(path):
    """Every page of every namespace: templates, tables, galleries, references, localised markup."""
    texts = [r["text"] for r in iter_pages(DumpTask(path)) if r.get("text")]
    assert len(texts) > 200
    assert [t[:60] for t in texts if strip_code(t) != mwparserfromhell.parse(t).strip_code()] == []


@pytest.mark.slow
@pytest.mark.parametrize("path, link_differences", [(LTG, 1), (ENWIKI, 1), (BNWIKI, 1)])
def test_fast_agrees_with_reference_on_real_dumps(path, link_differences):
    """Normalised link sets and summaries of every article, fast vs the paper's method: every
    summary is the same; the link sets differ on one article of each dump, where the parser's
    own limits decide (tags nested deeper than it recurses, bold marks that pair across a
    template, an italic mark inside a link's title)."""
    classify = target_classifier(read_siteinfo(path))
    articles = [
        r["text"]
        for r in iter_pages(DumpTask(path))
        if r.get("ns") == "0" and r.get("redirect") is None and r.get("text")
    ]
    other_links = other_summary = 0
    for text in articles:
        ref_links, ref_summary = extract_reference(text)
        fast, summary = extract_fast(text)
        other_links += set(normalise_links(ref_links, classify)[0]) != set(normalise_links(fast, classify)[0])
        other_summary += ref_summary != summary
    assert len(articles) > 100
    assert (other_links, other_summary) == (link_differences, 0)


# What the paper's summary keeps of markup: image parameters, captions and table syntax.
_RESIDUE = re.compile(r"\d+\s?px|\bthumb\b|^\s*[|!{]", re.M)
_EN = SiteInfo(dbname="enwiki", case="first-letter", namespaces={"category": 14, "file": 6})


def _clean(text: str, chars: int = 1000) -> str:
    return fast_summary(text, chars, functools.partial(reads_as_text, site=_EN))


@pytest.mark.parametrize(
    "text, paper, clean",
    [
        ("[[File:a.jpg|thumb|200px|A cat]] The cat.", "thumb|200px|A cat The cat.", "The cat."),
        ("[[Attēls:a.svg|150px|border]] X", "150px|border X", "X"),
        ("X [[de:X]] [[Category:Y]]", "X de:X Category:Y", "X"),
        ("[[:Category:Y|the category]] [[Foo|foo]]", "the category foo", "the category foo"),
        ("<gallery>\na.jpg|One\n</gallery>\nText", "Text", "Text"),
        ("{| class=x\n|-\n| a || b\n|}\nAfter", " a  b\nAfter", "a b\nAfter"),
        # table markup the parser leaves as text (a cell holding a link opens no table)
        (
            "Intro\n| style=x | Riga || 600\n|-\n! Year\n",
            "Intro\n| style=x | Riga || 600\n|-\n! Year",
            "Intro\nRiga 600\n\nYear",
        ),
    ],
)
def test_clean_summary_leaves_out_markup_residue(text, paper, clean):
    assert fast_summary(text) == paper == mwparserfromhell.parse(text).strip_code()
    assert _clean(text) == clean


def test_clean_summary_is_cut_to_length_after_cleaning():
    text = "[[File:a.jpg|thumb|A long caption]] " + "word " * 400
    assert _clean(text, 50) == "word " * 10
    assert len(_clean(text)) == 1000


@pytest.mark.slow
@pytest.mark.parametrize("path, residue", [(LTG, 1), (ENWIKI, 0), (BNWIKI, 5)])
def test_clean_summaries_on_real_dumps(path, residue):
    """Every article of each dump: the paper's summaries hold markup residue, the clean ones
    almost none (what is left is markup the source itself breaks: an unclosed file link, an
    unclosed infobox); links are the same either way."""
    site = read_siteinfo(path)
    task = DumpTask(path)
    paper, clean = (
        {r[6]: r for r in task_rows(task, site, FAST, 8 << 20, style) if r[1] == ARTICLE}
        for style in (PAPER_SUMMARY, CLEAN_SUMMARY)
    )
    assert paper.keys() == clean.keys() and len(paper) > 100
    assert all(paper[t][11] == clean[t][11] for t in paper)
    left = [t for t, r in clean.items() if _RESIDUE.search(r[10])]
    assert sum(1 for r in paper.values() if _RESIDUE.search(r[10])) > len(paper) / 4
    assert len(left) == residue, left
