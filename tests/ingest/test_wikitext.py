import mwparserfromhell
import pytest

from tests.conftest import BNWIKI, ENWIKI, LTG
from wikigame_spark.ingest.dumps import DumpTask, iter_pages, read_siteinfo
from wikigame_spark.ingest.pages import normalise_links
from wikigame_spark.ingest.wikitext import extract_fast, extract_reference, fast_links, fast_summary, strip_code


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
@pytest.mark.parametrize(
    "path, min_links, min_summary", [(LTG, 0.995, 0.99), (ENWIKI, 0.99, 0.99), (BNWIKI, 0.99, 0.99)]
)
def test_fast_agrees_with_reference_on_real_dumps(path, min_links, min_summary):
    """Normalised link sets and summaries of every article, fast vs the paper's method."""
    site = read_siteinfo(path)
    articles = [
        r["text"]
        for r in iter_pages(DumpTask(path))
        if r.get("ns") == "0" and r.get("redirect") is None and r.get("text")
    ]
    same_links = same_summary = 0
    for text in articles:
        ref_links, ref_summary = extract_reference(text)
        fast, summary = extract_fast(text)
        same_links += set(normalise_links(ref_links, site)[0]) == set(normalise_links(fast, site)[0])
        same_summary += ref_summary == summary
    assert len(articles) > 100
    assert same_links / len(articles) >= min_links
    assert same_summary / len(articles) >= min_summary
