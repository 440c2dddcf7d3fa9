"""Benchmark: the Wikipedia job vs the paper's method, on a real dump scaled up to over 1 GB.

Reference (the paper's method, single process): mwxml stream over the .bz2, full
``mwparserfromhell.parse`` of every article, ``filter_wikilinks``, ``strip_code()[:1000]``; its first
half is timed before ours and its second after, so that the machine's speed weighs alike on both.
Ours: ``jobs/build_wikipedia.py`` end to end in local Spark (decompression, XML, extraction,
graph assembly, Parquet) on the first part file and on all of them. Prints MB of wikitext per
second per core for both, the ratio, the job's marginal rate and fixed cost (from its two sizes),
and agreement: the share of articles whose edge set is identical and whose summary is identical.

    python bench/bench_wikipedia.py [--target-mb 1100] [--files 8] [--reference-mb 100]
"""

from __future__ import annotations

import argparse
import bz2
import json
import os
import re
import sys
import time
from collections.abc import Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wikigame_spark.devtools.dumpgen import split_dump

SOURCE = os.path.join(os.path.dirname(ROOT), "shared", "data", "wikipedia", "enwiki-pages-articles1-head.xml.bz2")
OUT = os.path.join(ROOT, "out", "bench", "wikipedia")
TITLE = re.compile(rb"<title>(.*?)</title>")
IDS = re.compile(rb"<id>(\d+)</id>")


def scaled_dump(target_mb: int, files: int) -> list[str]:
    """The real English head replicated under new titles and ids into ``files`` bz2 part files."""
    os.makedirs(OUT, exist_ok=True)
    paths = [os.path.join(OUT, f"enwiki-scaled{target_mb}-pages-articles{i + 1}.xml.bz2") for i in range(files)]
    if all(os.path.exists(p) for p in paths):
        return paths
    header, pages, footer = split_dump(bz2.decompress(open(SOURCE, "rb").read()))
    text_mb = sum(len(p) for p in pages) / 1e6
    copies = int(target_mb / text_mb) + 1
    per_file = -(-copies // files)
    copy = 0
    for path in paths:
        with open(path + ".tmp", "wb") as raw, bz2.open(raw, "wb", compresslevel=9) as f:
            f.write(header)
            for _ in range(per_file):
                for page in pages:
                    if copy:
                        page = TITLE.sub(rb"<title>\1 (%d)</title>" % copy, page, count=1)
                        page = IDS.sub(lambda m, k=copy: b"<id>%d</id>" % (int(m.group(1)) + k * 10_000_000), page)
                    f.write(page)
                copy += 1
            f.write(footer)
        os.replace(path + ".tmp", path)
    return paths


def reference(paths: list[str], limit_mb: float) -> Iterator:
    """The paper's method over the files (up to ``limit_mb`` of wikitext), timed in two halves:
    the caller runs ours between them, so a change in the machine's speed during the run weighs
    on both. Yields the first half's ``(MB, seconds)``, then ``(per-title results, bytes, seconds
    of both halves, second half's (MB, seconds))``."""
    import mwxml

    from wikigame_spark.ingest.dumps import read_siteinfo
    from wikigame_spark.ingest.pages import normalise_links
    from wikigame_spark.ingest.titles import target_classifier
    from wikigame_spark.ingest.wikitext import extract_reference

    def articles():
        for path in paths:
            for page in mwxml.Dump.from_file(bz2.open(path)):
                for rev in page:
                    text = rev.text or ""
                if page.namespace == 0 and not page.redirect:
                    yield page.title, text

    classify = target_classifier(read_siteinfo(paths[0]))
    results, nbytes, first = {}, 0, None
    start = time.perf_counter()
    for title, text in articles():
        links, summary = extract_reference(text)
        results[title] = (set(normalise_links(links, classify)[0]), summary)
        nbytes += len(text.encode())
        if first is None and nbytes / 1e6 >= limit_mb / 2:
            first = (nbytes / 1e6, time.perf_counter() - start)
            yield first
            start = time.perf_counter()
        if nbytes / 1e6 >= limit_mb:
            break
    second = (nbytes / 1e6 - first[0], time.perf_counter() - start)
    yield results, nbytes, first[1] + second[1], second


def ours(paths: list[str]) -> tuple[str, float, list[tuple[float, float]], int]:
    """Time the extraction stage alone (decompress, XML, links, summaries on the executors), then
    the whole job (plus graph assembly and Parquet) on the first file and on all of them: two
    sizes give the job's marginal rate and its fixed cost."""
    from jobs import build_wikipedia
    from wikigame_spark.ingest.dumps import plan_tasks
    from wikigame_spark.ingest.wikipedia import dump_siteinfo, read_dump_pages
    from wikigame_spark.session import build_session

    spark = build_session("bench_wikipedia")
    cores = spark.sparkContext.defaultParallelism
    spark.range(1).count()  # JVM warm-up outside the timings
    start = time.perf_counter()
    read_dump_pages(spark, plan_tasks(paths), dump_siteinfo(paths), "fast", 8 << 20).count()
    stage = time.perf_counter() - start
    runs = []
    for inputs in (paths[:1], paths):
        out = os.path.join(OUT, f"graph{len(inputs)}")
        start = time.perf_counter()
        build_wikipedia.main(["--input", *inputs, "--output", out, "--overwrite"])
        seconds = time.perf_counter() - start
        with open(f"{out}/manifest.json") as f:
            runs.append((json.load(f)["counts"]["wikitext_bytes"] / 1e6, seconds))
    return out, stage, runs, cores


def agreement(ref: dict, graph: str) -> tuple[float, float, int]:
    """Resolve the reference's link titles with the job's own title table, compare per article."""
    import pyarrow.parquet as pq

    nodes = pq.read_table(f"{graph}/nodes").to_pandas()
    edges = pq.read_table(f"{graph}/edges").to_pandas()
    redirects = pq.read_table(f"{graph}/redirects").to_pandas()
    title_of = dict(zip(nodes["id"], nodes["title"]))
    lookup = {t: t for t in nodes["title"]}
    lookup.update({r: title_of[t] for r, t in zip(redirects["title"], redirects["target"])})
    out_edges: dict[str, set] = {}
    for s, d in zip(edges["src"], edges["dst"]):
        out_edges.setdefault(title_of[s], set()).add(title_of[d])
    summary_of = dict(zip(nodes["title"], nodes["summary"]))
    same_edges = same_summary = 0
    for title, (links, summary) in ref.items():
        expected = {lookup[t] for t in links if t in lookup} - {title}
        same_edges += expected == out_edges.get(title, set())
        same_summary += summary == summary_of.get(title)
    return same_edges / len(ref), same_summary / len(ref), len(ref)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target-mb", type=int, default=1100, help="MB of wikitext in the scaled dump")
    p.add_argument("--files", type=int, default=8, help="part files (Spark tasks)")
    p.add_argument("--reference-mb", type=float, default=100, help="MB of wikitext the reference reads")
    args = p.parse_args()

    paths = scaled_dump(args.target_mb, args.files)
    timed_reference = reference(paths, args.reference_mb)
    first_half = next(timed_reference)
    graph, stage_seconds, runs, cores = ours(paths)
    with open(f"{graph}/manifest.json") as f:
        manifest = json.load(f)
    (small_mb, small_seconds), (mb, job_seconds) = runs
    ref, ref_bytes, ref_seconds, second_half = next(timed_reference)
    same_edges, same_summary, n = agreement(ref, graph)

    ref_rate = ref_bytes / 1e6 / ref_seconds
    stage_rate = mb / stage_seconds / cores
    job_rate = mb / job_seconds / cores
    marginal = (mb - small_mb) / (job_seconds - small_seconds) / cores
    fixed = small_seconds - small_mb / marginal / cores
    print(f"input: {len(paths)} bz2 files, {mb:.1f} MB of article wikitext, {manifest['counts']['nodes']} articles")
    print(f"reference, paper's method (1 process): {ref_bytes / 1e6:.1f} MB in {ref_seconds:.1f} s", end="")
    print(f" = {ref_rate:.2f} MB/s per core", end="")
    print(f" (before ours {first_half[0] / first_half[1]:.2f}, after {second_half[0] / second_half[1]:.2f})")
    print(f"ours, extraction stage ({cores} cores): {stage_seconds:.1f} s = {stage_rate:.2f} MB/s per core", end="")
    print(f"  ratio {stage_rate / ref_rate:.1f}x")
    print(f"ours, whole job incl. graph + Parquet: {job_seconds:.1f} s = {job_rate:.2f} MB/s per core", end="")
    print(f"  ratio {job_rate / ref_rate:.1f}x (bar >= 10x)")
    print(f"ours, whole job on {small_mb:.1f} MB: {small_seconds:.1f} s; ", end="")
    print(f"marginal rate {marginal:.2f} MB/s per core (ratio {marginal / ref_rate:.1f}x), ", end="")
    print(f"fixed cost {fixed:.1f} s on {cores} cores")
    print(f"agreement over {n} articles: edges identical {same_edges:.2%}, ", end="")
    print(f"summaries identical {same_summary:.2%} (bar 100%)")


if __name__ == "__main__":
    main()
