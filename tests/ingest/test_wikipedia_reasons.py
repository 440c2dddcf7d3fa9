"""Every reason in build_wikipedia's accounting, each triggered by a page of a generated dump,
and the builds that must not write an empty graph."""

import json

import pytest

from jobs import build_wikipedia
from tests.jobs.jobrun import Finished, job_env, run_job
from wikigame_spark.devtools.dumpgen import page_xml, small_dump
from wikigame_spark.ingest.empty import EmptyGraphError
from wikigame_spark.ingest.pages import page_row
from wikigame_spark.ingest.titles import SiteInfo

LINKS = (
    "[[B]] [[B|again]] [[A]] [[Template:X]] [[en:Foo]] [[#Section]] [[Bad{name]] [[Nowhere]] "
    "[[Dangling]] [[Loop1]] [[ToTemplate]] [[ToInterwiki]] [[Good]]"
)


def no_text_page(title: str, page_id: int) -> str:
    return (
        f"  <page>\n    <title>{title}</title>\n    <ns>0</ns>\n    <id>{page_id}</id>\n"
        f"    <revision>\n      <id>{page_id * 10}</id>\n      <timestamp>2020-01-01T00:00:00Z</timestamp>\n"
        "    </revision>\n  </page>\n"
    )


def every_reason_dump() -> str:
    pages = [
        page_xml("A", 1, f"'''A''' links to everything: {LINKS}"),
        page_xml("B", 2, "The first B. [[A]]"),
        page_xml("B", 3, "The second B, same title: one of them is a duplicate_title. [[A]]"),
        page_xml("Big", 4, "x" * 5000),  # too_large with --max-text-bytes 4096
        no_text_page("Textless", 5),  # no_text
        page_xml("", 6, "A page without a title."),  # missing_field
        page_xml("Template:X", 7, "A template.", ns=10),  # other_namespace
        page_xml("Good", 8, "", redirect="A"),  # resolves
        page_xml("Dangling", 9, "", redirect="Nowhere else"),  # redirect_dangling
        page_xml("Loop1", 10, "", redirect="Loop2"),  # redirect_cycle
        page_xml("Loop2", 11, "", redirect="Loop1"),  # redirect_cycle
        page_xml("ToTemplate", 12, "", redirect="Template:X"),  # redirect_other_namespace
        page_xml("ToInterwiki", 13, "", redirect="en:Foo"),  # redirect_interwiki
    ]
    doc = small_dump(pages)
    # Cut off inside one more page: a truncated rejection, as a damaged download gives.
    return doc.replace("</mediawiki>\n", "  <page>\n    <title>Cut</title>\n    <ns>0</ns>\n")


def build(tmp_path, xml: str, *extra: str) -> Finished:
    dump = tmp_path / "testwiki-pages-articles.xml"
    dump.write_text(xml, encoding="utf-8")
    argv = ["--input", str(dump), "--output", str(tmp_path / "graph"), *extra]
    return run_job("build_wikipedia", *argv, env=job_env(f"sqlite:///{tmp_path}/m.db"))


@pytest.mark.slow
def test_every_page_redirect_and_link_reason_is_counted(spark, tmp_path):
    dump = tmp_path / "testwiki-pages-articles.xml"
    dump.write_text(every_reason_dump(), encoding="utf-8")
    out = str(tmp_path / "graph")
    assert build_wikipedia.main(["--input", str(dump), "--output", out, "--max-text-bytes", "4096"]) == 0
    c = json.load(open(f"{out}/manifest.json"))["counts"]
    assert c["pages"] == {
        "read": 14,
        "article": 2,  # A and the newer B
        "redirect": 6,
        "other_namespace": 1,
        "rejected": {"duplicate_title": 1, "missing_field": 1, "no_text": 1, "too_large": 1, "truncated": 1},
    }
    assert c["redirects"] == {
        "main_namespace": 6,
        "resolved": 1,
        "dropped": {
            "redirect_cycle": 2,
            "redirect_dangling": 1,
            "redirect_interwiki": 1,
            "redirect_other_namespace": 1,
        },
    }
    # A: B twice (an edge and a duplicate), itself, and one link for each way a link is lost;
    # Good resolves to A: the same pair (A, A) again, so a duplicate, and the pair a self-loop.
    # B (id 3) links to A: the second edge.
    assert c["links"]["dropped"] == {
        "duplicate": 2,
        "interwiki": 1,
        "invalid": 1,
        "missing": 1,
        "other_namespace": 1,
        "redirect_cycle": 1,
        "redirect_dangling": 1,
        "redirect_interwiki": 1,
        "redirect_other_namespace": 1,
        "section_only": 1,
        "self_loop": 1,
    }
    assert c["links"]["edges"] == c["edges"] == 2 and c["nodes"] == 2
    assert c["links"]["total"] == 2 + sum(c["links"]["dropped"].values())
    nodes = spark.read.parquet(f"{out}/nodes").orderBy("id").collect()
    assert [(r.title, r.page_id) for r in nodes] == [("A", 1), ("B", 3)]


def test_page_titles_follow_the_link_rules(spark, tmp_path):
    """Titles are normalised as link targets are (first letter, underscores, whitespace), and a
    page no link could reach is an invalid_title rejection, never a node."""
    invalid = ["   ", "Foo#Bar", "Foo%41", "AT&amp;T", "Bad[x]", "Category:Foo", "en:Foo", ":Colon"]
    pages = [
        page_xml("A", 1, "[[lower case title]] [[Trailing]] [[Spaced out]] [[Foo]] [[Gone]]"),
        page_xml("lower_case_title", 2, "[[A]]"),
        page_xml("Trailing ", 3, "[[A]]"),
        page_xml("  Spaced   out ", 4, "[[A]]"),
        page_xml("foo", 5, "", redirect="A"),  # a redirect's title too: [[Foo]] reaches A
        page_xml("Gone#Sec", 6, "", redirect="A"),  # an invalid redirect title: [[Gone]] is missing
        *(page_xml(title, 10 + i, "[[A]]") for i, title in enumerate(invalid)),
    ]
    out = str(tmp_path / "graph")
    dump = tmp_path / "testwiki-pages-articles.xml"
    dump.write_text(small_dump(pages), encoding="utf-8")
    assert build_wikipedia.main(["--input", str(dump), "--output", out]) == 0
    manifest = json.load(open(f"{out}/manifest.json"))
    c = manifest["counts"]
    assert c["pages"] == {
        "read": 6 + len(invalid),
        "article": 4,
        "redirect": 1,
        "other_namespace": 0,
        "rejected": {"invalid_title": len(invalid) + 1},
    }
    assert any("'Foo#Bar' is not a valid page title" in p for p in c["problems"])
    nodes = spark.read.parquet(f"{out}/nodes").orderBy("id").collect()
    assert [r.title for r in nodes] == ["A", "Lower case title", "Trailing", "Spaced out"]
    edges = {(r.src, r.dst) for r in spark.read.parquet(f"{out}/edges").collect()}
    assert edges == {(0, 1), (0, 2), (0, 3), (1, 0), (2, 0), (3, 0)}
    assert c["links"]["dropped"]["missing"] == 1 and c["links"]["dropped"]["self_loop"] == 1  # Gone; Foo → A


def test_unparseable_article_is_a_counted_rejection():
    """The extractor's own failure on an article's wikitext (deep recursion) is counted, not raised."""

    def recursion(text):
        raise RecursionError("maximum recursion depth exceeded")

    rec = {"title": "Deep", "ns": "0", "id": "1", "redirect": None, "timestamp": None, "text": "{{" * 10}
    site = SiteInfo(dbname="testwiki")
    row = page_row(rec, "f.xml", site, recursion, 1 << 20)
    assert row[1:3] == ("rejected", "unparseable") and "RecursionError" in row[-1]


def test_every_page_rejected_is_an_error(tmp_path):
    run = build(
        tmp_path, small_dump([page_xml("Big", 1, "x" * 5000), no_text_page("T", 2)]), "--max-text-bytes", "4096"
    )
    assert run.rc == 2, run.err[-2000:]
    last = run.err.strip().splitlines()[-1]
    assert last.startswith("error: ") and "every one of the 2 pages read was rejected" in last
    assert "no_text 1" in last and "too_large 1" in last
    assert not (tmp_path / "graph").exists()


@pytest.mark.slow
def test_a_graph_without_articles_needs_allow_empty(spark, tmp_path):
    xml = small_dump([page_xml("Template:X", 1, "t", ns=10), page_xml("R", 2, "", redirect="Template:X")])
    run = build(tmp_path, xml)
    assert run.rc == 2
    last = run.err.strip().splitlines()[-1]
    assert "no articles, the graph would be empty" in last and "--allow-empty" in last
    run = build(tmp_path, xml, "--allow-empty")
    assert run.rc == 0, run.err[-2000:]
    assert spark.read.parquet(str(tmp_path / "graph" / "nodes")).count() == 0


def test_duplicate_titles_of_the_real_english_head(spark, tmp_path):
    """The issue's case: a scaled copy of the English head repeats every title."""
    import bz2

    from tests.conftest import ENWIKI
    from wikigame_spark.devtools.dumpgen import split_dump

    header, pages, footer = split_dump(bz2.decompress(open(ENWIKI, "rb").read()))
    doubled = tmp_path / "enwiki-doubled-pages-articles.xml"
    doubled.write_bytes(header + b"".join(pages[:20]) + b"".join(pages[:20]) + footer)
    out = str(tmp_path / "en")
    assert build_wikipedia.main(["--input", str(doubled), "--output", out]) == 0
    c = json.load(open(f"{out}/manifest.json"))["counts"]["pages"]
    assert c["read"] == 40 and c["rejected"] == {"duplicate_title": 20}
    assert c["article"] + c["redirect"] + c["other_namespace"] == 20


@pytest.mark.parametrize("error", [KeyError("n"), ValueError("n")], ids=["KeyError", "ValueError"])
def test_an_unexpected_failure_names_job_stage_and_input(capsys, error):
    """A bug inside a stage (the issue's bare ``error: n``) ends with one line naming the job,
    the stage and the input, and exit status 1."""
    from wikigame_spark import cli

    def broken(argv):
        with cli.stage("build_wikipedia", "build_graph", ["/data/x.xml"]):
            raise error

    with pytest.raises(SystemExit) as e:
        cli.run(broken, [])
    assert e.value.code == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == f"error: build_wikipedia: stage build_graph failed on /data/x.xml: {type(error).__name__}: {error}"


def test_reported_bad_input_passes_through_a_stage():
    from wikigame_spark import cli

    with pytest.raises(EmptyGraphError, match="empty"), cli.stage("j", "s", "in"):
        raise EmptyGraphError("empty")
