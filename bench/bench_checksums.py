"""Benchmark: reading Parquet with every page checked against its CRC, against reading it unchecked.

An edges table the size of a large field graph (``--rows`` random ``(src, dst)`` pairs, written by
Spark as the jobs write it: page CRCs are parquet-mr's default) read whole without and with
verification, five times each (which goes first alternating), by pyarrow (as the workers map a
graph) and by Spark (a sum over both columns, so every page is decoded). Prints the median seconds
of each and their ratio.

    python bench/bench_checksums.py [--rows 20000000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

RUNS = 5
VERIFY = "parquet.page.verify-checksum.enabled"


def timed(read, verify: bool) -> float:
    start = time.perf_counter()
    read(verify)
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=20_000_000, help="edges in the table")
    args = p.parse_args()

    import pyarrow.dataset as ds
    from pyspark.sql import functions as F

    from wikigame_spark import parquet
    from wikigame_spark.session import build_session

    spark = build_session("bench_checksums")
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "edges")
        nodes = max(args.rows // 40, 1)
        edges = spark.range(args.rows).select(
            (F.rand(1) * nodes).cast("long").alias("src"), (F.rand(2) * nodes).cast("long").alias("dst")
        )
        edges.write.parquet(path)
        plain = ds.ParquetFileFormat()
        readers = {
            "pyarrow": lambda verify: ds.dataset(path, format=parquet.parquet_format() if verify else plain).to_table(),
            "Spark": lambda verify: (
                hadoop.set(VERIFY, str(verify).lower()),
                spark.read.parquet(path).agg(F.sum("src"), F.sum("dst")).collect(),
            ),
        }
        for name, read in readers.items():
            read(False)  # caches warm
            times = {False: [], True: []}
            for run in range(RUNS):  # which goes first alternates: neither gets the other's warm-up
                for verify in (False, True) if run % 2 else (True, False):
                    times[verify].append(timed(read, verify))
            plain_s, checked_s = statistics.median(times[False]), statistics.median(times[True])
            print(
                f"{name}: {args.rows:,} edges, unchecked {plain_s:.3f} s, checked {checked_s:.3f} s "
                f"(median of {RUNS}): checked/unchecked {checked_s / plain_s:.2f}x"
            )
        hadoop.set(VERIFY, "true")


if __name__ == "__main__":
    main()
