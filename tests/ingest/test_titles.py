import pytest

from tests.conftest import LTG
from wikigame_spark.ingest.dumps import read_siteinfo
from wikigame_spark.ingest.titles import (
    INTERWIKI,
    INVALID,
    MAIN,
    OTHER_NAMESPACE,
    SECTION_ONLY,
    SiteInfo,
    capitalise_first,
    classify_target,
    page_title,
    reads_as_text,
)

EN = SiteInfo(dbname="enwiki", case="first-letter", namespaces={"category": 14, "file": 6, "template": 10})


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("foo bar", (MAIN, "Foo bar")),
        ("foo_bar#History", (MAIN, "Foo bar")),
        ("  Foo   bar  ", (MAIN, "Foo bar")),
        ("AT&amp;T", (MAIN, "AT&T")),
        ("Foo%20bar", (MAIN, "Foo bar")),
        (":Foo", (MAIN, "Foo")),
        ("Foo<!-- note -->", (MAIN, "Foo")),
        ("Star Wars: Episode I", (MAIN, "Star Wars: Episode I")),
        ("#Early life", (SECTION_ONLY, "")),
        ("Category:Physics", (OTHER_NAMESPACE, "")),
        (":Category:Physics", (OTHER_NAMESPACE, "")),
        ("image:x.jpg", (OTHER_NAMESPACE, "")),
        ("en:Physics", (INTERWIKI, "")),
        ("zh-min-nan:Physics", (INTERWIKI, "")),
        ("wikt:physics", (INTERWIKI, "")),
        ("Foo{{bar}}", (INVALID, "")),
        ("", (INVALID, "")),
    ],
)
def test_classify_target(raw, expected):
    assert classify_target(raw, EN) == expected


def test_localised_namespaces_come_from_the_dump():
    site = read_siteinfo(LTG)
    assert site.dbname == "ltgwiki" and site.lang == "ltg" and site.case == "first-letter"
    assert site.namespaces["kategoreja"] == 14 and site.namespaces["taiss"] == 10
    assert classify_target("Kategoreja:Latgola", site) == (OTHER_NAMESPACE, "")
    assert classify_target("kategoreja:Latgola", site) == (OTHER_NAMESPACE, "")
    assert classify_target("Fails:X.jpg", site) == (OTHER_NAMESPACE, "")
    # English canonical names are aliases on every wiki
    assert classify_target("Category:Latgola", site) == (OTHER_NAMESPACE, "")
    # but an English name that is no namespace stays a title
    assert classify_target("latgola", site) == (MAIN, "Latgola")


def test_case_sensitive_wiki_keeps_first_letter():
    site = SiteInfo(dbname="enwiktionary", case="case-sensitive")
    assert classify_target("physics", site) == (MAIN, "physics")
    assert capitalise_first("ßeta", "first-letter") == "ßeta"
    assert capitalise_first("ēka", "first-letter") == "Ēka"


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Foo bar", "Foo bar"),
        ("lower_case_title", "Lower case title"),  # as [[lower case title]] names it
        ("Trailing ", "Trailing"),
        ("  Spaced   out_ ", "Spaced out"),
        ("AT&T", "AT&T"),
        ("Star Wars: Episode I", "Star Wars: Episode I"),
        ("50% off", "50% off"),
        ("ēka", "Ēka"),
        ("   ", None),
        ("", None),
        ("Foo#Bar", None),  # a link to it reaches Foo
        ("Foo%41", None),  # a link decodes the escape
        ("AT&amp;T", None),  # and the entity
        ("Foo<!-- x -->", None),
        ("Bad[x]", None),
        ("Bad{x}", None),
        ("Pipe|x", None),
        ("Tab\there", None),
        (":Foo", None),
        ("Category:Foo", None),  # a link to it is another namespace's
        ("en:Foo", None),  # or another wiki's
    ],
)
def test_page_title_follows_the_link_rules(raw, expected):
    assert page_title(raw, EN) == expected
    if expected is not None:  # a link written as the page's raw title reaches it
        assert classify_target(raw, EN) == (MAIN, expected)


def test_page_title_keeps_case_where_the_wiki_does():
    site = SiteInfo(dbname="enwiktionary", case="case-sensitive")
    assert page_title("physics", site) == "physics"
    assert page_title("lower_case", site) == "lower case"


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("Foo", True),
        ("Star Wars: Episode I", True),
        ("File:a.jpg", False),
        ("image:a.jpg", False),
        ("Category:Physics", False),
        (":Category:Physics", True),
        ("Media:sound.ogg", False),
        ("de:Physik", False),
        ("wikt:physics", True),
        ("Template:Foo", True),
        # the wiki's own alias for File: not in the siteinfo, known by the file's extension
        ("Attēls:Flag of the Vatican City.svg", False),
        ("Chapter 2: Going.home", True),
    ],
)
def test_reads_as_text(raw, shown):
    assert reads_as_text(raw, EN) is shown


def test_localised_file_and_category_links_read_as_no_text():
    site = read_siteinfo(LTG)
    assert not reads_as_text("Fails:Caracal distribution.png", site)
    assert not reads_as_text("kategoreja:Latgola", site)
    assert reads_as_text("Latgola", site)
