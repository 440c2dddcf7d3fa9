"""Benchmark: one plain single-stream ``.bz2`` read by one task (the reference) vs split by its blocks.

The real English head replicated to ``--target-mb`` of wikitext in ONE bzip2 stream (as
``enwiki-latest-pages-articles.xml.bz2`` is published), read into the ``PAGES`` table by
``read_dump_pages`` twice in one Spark session: as one task, and as the job plans it (byte ranges
of bzip2 blocks, at least one per core). Prints both times, the ratio, and whether the two tables
are the same rows (count and an order-free checksum of every column).

    python bench/bench_bz2_split.py [--target-mb 300]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.bench_wikipedia import scaled_dump


def fingerprint(pages) -> tuple[int, int]:
    """(rows, sum of a 64-bit hash of each whole row): equal tables give equal pairs."""
    from pyspark.sql import functions as F

    row = F.xxhash64(*[F.to_json(F.struct(c)) for c in pages.columns])
    got = pages.agg(F.count("*").alias("n"), F.sum(row.cast("decimal(38,0)")).alias("h")).first()
    return got["n"], int(got["h"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target-mb", type=int, default=300, help="MB of wikitext in the one-stream dump")
    args = p.parse_args()

    from wikigame_spark.ingest.dumps import DumpTask, plan_tasks
    from wikigame_spark.ingest.wikipedia import dump_siteinfo, read_dump_pages
    from wikigame_spark.session import build_session

    (path,) = scaled_dump(args.target_mb, 1)
    spark = build_session("bench_bz2_split")
    cores = spark.sparkContext.defaultParallelism
    site = dump_siteinfo([path])
    spark.range(1).count()  # JVM warm-up outside the timings
    results = {}
    for name, tasks in (("one task", [DumpTask(path)]), ("blocks", plan_tasks([path], 64 << 20, cores))):
        start = time.perf_counter()
        got = fingerprint(read_dump_pages(spark, tasks, site, "fast", 8 << 20))
        results[name] = (len(tasks), time.perf_counter() - start, got)
    size = os.path.getsize(path) / 1e6
    print(f"input: {path} ({size:.0f} MB bz2, one stream), {cores} cores")
    for name, (n, seconds, (rows, _)) in results.items():
        print(f"{name}: {n} tasks, {seconds:.1f} s, {rows} pages")
    (_, one, a), (_, split, b) = results.values()
    print(f"ratio {one / split:.2f}x; pages identical: {a == b}")


if __name__ == "__main__":
    main()
