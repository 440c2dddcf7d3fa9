"""Benchmark: the OpenAlex job vs the paper's single-process reader, on a generated snapshot.

The snapshot (default 2,000,000 works, about the size of real records, in three ``updated_date``
partitions with a Redshift manifest; 5 % of works also have an older version, a few damaged
lines per file) is generated from the real 2025 record once and kept under ``out/bench/``.

Reference (the paper's way, one process): for every line ``json.loads``, rebuild the abstract from
the inverted index, filter (article, title, abstract, language, field), keep the newest version of
each work, then number the nodes and collect the citations between them, per field.
Ours: ``jobs/build_openalex.py`` end to end in local Spark (read, classify, deduplicate, graphs,
Parquet, manifests), ``--runs`` times per format in one session: the first run of the session also
pays the JVM's one-off warm-up, the next ones show the rate a long-lived cluster sees. Prints
records/s per core for both (wall clock / cores; also per CPU-second, which a busy machine does
not distort), the ratios, and whether both give the same graphs.

    python bench/bench_openalex.py [--works 2000000] [--fields Medicine …] [--runs 2] [--processes 2]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wikigame_spark.devtools.openalexgen import Spec, generate
from wikigame_spark.ingest.openalex_records import FIELDS, field_slug

OUT = os.path.join(ROOT, "out", "bench", "openalex")
# Rough shares of OpenAlex works by primary field: large fields, a long tail.
BIG = {
    "Medicine": 0.18,
    "Social Sciences": 0.09,
    "Engineering": 0.07,
    "Computer Science": 0.06,
    "Biochemistry, Genetics and Molecular Biology": 0.06,
    "Physics and Astronomy": 0.05,
    "Arts and Humanities": 0.05,
}
WEIGHTS = tuple(BIG.get(f, (1 - sum(BIG.values())) / (len(FIELDS) - len(BIG))) for f in FIELDS)


def snapshot(works: int, processes: int) -> tuple[str, list[str]]:
    """The generated snapshot in the 2026 layout: the same works as gzipped JSON lines
    (``data/jsonl/works``) and as Parquet (``data/parquet/works``), each with its manifest.json.
    Returns the root and the JSON-lines part files."""
    root = os.path.join(OUT, f"snapshot-{works}")
    for layout in ("jsonl", "parquet"):
        spec = Spec(
            works=works,
            seed=2026,
            layout=layout,
            fields=FIELDS,
            field_weights=WEIGHTS,
            files_per_partition=8,
            p_duplicate=0.05,
            malformed_per_file=2,
            mistyped_per_file=1,
            abstract_pool=512,
        )
        done = os.path.join(root, f".complete-{layout}")
        if not os.path.exists(done):
            start = time.perf_counter()
            gen = generate(root, spec, processes=processes)
            with open(done, "w") as f:
                json.dump({"files": len(gen.files), "seconds": time.perf_counter() - start}, f)
    with open(os.path.join(root, "data", "jsonl", "manifest.json")) as f:
        urls = [e["url"] for e in json.load(f)["entities"][0]["files"]]
    return root, [os.path.join(root, "data", "jsonl", "works", u.split("/works/", 1)[1]) for u in urls]


# --- The paper's way ----------------------------------------------------------------------------
def paper_abstract(index: dict | None) -> str | None:
    """Words placed at their positions, joined by spaces (the paper's loop, without its deletion
    of apostrophes and backslashes, so that the outputs can be compared)."""
    if not index:
        return None
    if "InvertedIndex" in index and "IndexLength" in index:
        index = index["InvertedIndex"]
    placed = sorted((p, w) for w, ps in index.items() for p in (ps or []) if p is not None)
    return " ".join(w for _, w in placed) if placed else None


def blank(v) -> bool:
    return v is None or not str(v).strip(" \t\n\r\f\v")


def reference(paths: list[str], fields: list[str]) -> tuple[dict, int, float, float]:
    wanted = set(fields)
    newest: dict[str, tuple] = {}
    read = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for path in paths:
        partition = re.search(r"updated_date=([^/]+)", path).group(1)
        key = "/".join(path.split(os.sep)[-2:])
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                read += 1
                try:
                    work = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(work, dict) or not isinstance(work.get("referenced_works", []), (list, type(None))):
                    continue
                abstract = paper_abstract(work.get("abstract_inverted_index"))
                if blank(work.get("id")):
                    continue
                wid = work["id"].rsplit("/", 1)[-1]
                order = (partition, work.get("updated_date") or "", key)
                if wid in newest and newest[wid][0] >= order:
                    continue
                field = ((work.get("primary_topic") or {}).get("field") or {}).get("display_name")
                ok = (
                    work.get("is_xpac") is not True
                    and work.get("type") == "article"
                    and not blank(work.get("title"))
                    and abstract is not None
                    and not blank(work.get("language"))
                    and field in wanted
                )
                node = (
                    (
                        work["title"],
                        abstract,
                        work["language"],
                        field,
                        work.get("publication_date"),
                        work.get("doi"),
                        work.get("referenced_works") or [],
                    )
                    if ok
                    else None
                )
                newest[wid] = (order, node)
    graphs = {}
    for field in fields:
        members = sorted(wid for wid, (_, node) in newest.items() if node and node[3] == field)
        ids = {wid: i for i, wid in enumerate(members)}
        nodes, edges = [], set()
        for wid in members:
            title, summary, language, _, date, doi, refs = newest[wid][1]
            nodes.append((ids[wid], wid, title, summary, language, field, date, doi))
            for ref in refs:
                target = ref.rsplit("/", 1)[-1]
                if target in ids and target != wid:
                    edges.add((ids[wid], ids[target]))
                    edges.add((ids[target], ids[wid]))
        graphs[field] = (nodes, edges)
    return graphs, read, time.perf_counter() - wall, time.process_time() - cpu


# --- Ours ---------------------------------------------------------------------------------------
def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by ``pid``'s descendants (the JVM, Python workers), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            children.setdefault(int(fields[1]), []).append((int(entry), (int(fields[11]) + int(fields[12])) / tick))
    total, stack = 0.0, [pid]
    while stack:
        for child, seconds in children.get(stack.pop(), []):
            total += seconds
            stack.append(child)
    return total


def ours(root: str, fields: list[str], fmt: str, runs: int) -> tuple[str, list[tuple[float, float]], int]:
    """The job ``runs`` times in one session: ``(output, [(wall, cpu)] per run, cores)``. The
    first run of the first format pays the JVM's one-off costs (class loading, JIT compilation
    of Spark's code, Python workers starting), which later runs and long-lived clusters do not."""
    from jobs import build_openalex
    from wikigame_spark.session import build_session

    spark = build_session("bench_openalex", conf={"spark.ui.showConsoleProgress": "false"})
    cores = spark.sparkContext.defaultParallelism
    spark.range(1).count()  # JVM start outside the timings
    out = os.path.join(OUT, f"graphs-{fmt}")
    args = ["--input", root, "--output", out, "--overwrite", "--format", fmt]
    for f in fields:
        args += ["--field", f]
    times = []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), tree_cpu_seconds(os.getpid())
        build_openalex.main(args)
        times.append((time.perf_counter() - wall, tree_cpu_seconds(os.getpid()) - cpu))
    return out, times, cores


def same_graphs(ref: dict, out: str) -> dict[str, tuple[bool, bool, int, int]]:
    import pyarrow.parquet as pq

    result = {}
    for field, (nodes, edges) in ref.items():
        d = os.path.join(out, field_slug(field))
        got = pq.read_table(os.path.join(d, "nodes")).to_pylist()
        got_nodes = sorted(tuple(r.values()) for r in got)
        got_edges = {(e["src"], e["dst"]) for e in pq.read_table(os.path.join(d, "edges")).to_pylist()}
        result[field] = (got_nodes == nodes, got_edges == edges, len(nodes), len(edges))
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--works", type=int, default=2_000_000, help="distinct works in the generated snapshot")
    p.add_argument("--fields", nargs="+", default=["Medicine", "Physics and Astronomy", "Computer Science"])
    p.add_argument(
        "--formats",
        nargs="+",
        default=["auto", "jsonl"],
        choices=["auto", "parquet", "jsonl"],
        help="copies the job reads (auto: Parquet, as the job does when the snapshot has it)",
    )
    p.add_argument("--processes", type=int, default=os.cpu_count(), help="processes generating the snapshot")
    p.add_argument("--runs", type=int, default=2, help="runs of the job per format, in one session")
    args = p.parse_args()

    root, paths = snapshot(args.works, args.processes)
    gb = sum(os.path.getsize(x) for x in paths) / 1e9
    load = os.getloadavg()[0]
    runs = {}
    for fmt in args.formats:
        out, times, cores = ours(root, args.fields, fmt, args.runs)
        with open(os.path.join(out, field_slug(args.fields[0]), "manifest.json")) as f:
            manifest = json.load(f)
        runs[fmt] = (out, times, cores, manifest["records"]["read"], manifest["snapshot"])
    ref, ref_read, ref_wall, ref_cpu = reference(paths, args.fields)

    ref_rate, ref_cpu_rate = ref_read / ref_wall, ref_read / ref_cpu
    print(
        f"input: {args.works:,} works, {ref_read:,} JSON lines in {len(paths)} gzipped files ({gb:.2f} GB), "
        f"the same works as Parquet; graphs for {', '.join(args.fields)}; load average at start {load:.1f}"
    )
    print(
        f"reference, paper's reader on JSON lines (1 process): {ref_wall:.1f} s wall, {ref_cpu:.1f} s CPU "
        f"= {ref_rate:,.0f} records/s per core ({ref_cpu_rate:,.0f} per CPU-second)"
    )
    for fmt, (out, times, cores, records, read) in runs.items():
        agree = same_graphs(ref, out)
        same = all(n and e for n, e, _, _ in agree.values())
        print(
            f"ours, build_openalex --format {fmt} (reads {read['format']} with {read['reader']}, "
            f"{cores} cores); same output as the reference: {'yes' if same else 'NO'}"
        )
        for i, (wall, cpu) in enumerate(times, 1):
            rate, cpu_rate = records / wall / cores, records / cpu
            print(
                f"    run {i}{' (first job of this JVM)' if i == 1 and fmt == args.formats[0] else ''}: "
                f"{wall:.1f} s wall, {cpu:.1f} s CPU = {rate:,.0f} records/s per core ({cpu_rate:,.0f} per "
                f"CPU-second); ratio {rate / ref_rate:.1f}x per core wall clock, {cpu_rate / ref_cpu_rate:.1f}x "
                "per CPU-second (bar >= 3x)"
            )
        for field, (same_nodes, same_edges, n, e) in agree.items():
            print(
                f"    {field}: {n:,} nodes {'identical' if same_nodes else 'DIFFER'}, "
                f"{e:,} edges {'identical' if same_edges else 'DIFFER'}"
            )


if __name__ == "__main__":
    main()
