"""Does a cheap embedding model still navigate? Every installed embedding model plays the same games
on a real Wikispeedia graph, paired against MiniLM, through the jobs a researcher runs.

    python bench/bench_navigation.py [--wikispeedia DIR] [--games 200] [--seed 7]
        [--models NAME …] [--out out/bench/navigation]

Wikispeedia (West & Leskovec, WWW 2012) is a 4,604-article selection of English Wikipedia (the
2007 Wikipedia for Schools) with its links, the classic graph of this game. DIR holds what SNAP's
two archives unpack to (https://snap.stanford.edu/data/wikispeedia.html):
``wikispeedia_paths-and-graph/articles.tsv``, ``…/links.tsv`` and ``plaintext_articles/*.txt``;
default ``../shared/data/wikispeedia``. Its files are read, never copied into the repository.

The graph (``OUT/wikispeedia``) gets the node contract: the URL-decoded title, and as summary the
article's lead, the prose paragraphs before its first heading (the plain-text export's infobox
lines, which are not prose, left out), cut to the Wikipedia builder's 1,000 characters. Self-links
are counted and dropped, as the builder drops them. Then, each in a process of its own with one
MLflow store under OUT: ``sample_games`` (``--games`` games, ``--seed``), ``play_games`` for
every installed embedding model and for TF-IDF and random as reference lines, and ``report``.
Prints the success of each model beside MiniLM's on the same games (the report's paired table,
McNemar's exact test) and its cache's core-hours at English Wikipedia's size (the report's Fig 2C
table), and writes ``OUT/bench_navigation.json``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wikigame_spark.ingest.wikitext import SUMMARY_CHARS

DEFAULT_DIR = os.path.join(ROOT, "..", "shared", "data", "wikispeedia")
ARTICLES = "wikispeedia_paths-and-graph/articles.tsv"
LINKS = "wikispeedia_paths-and-graph/links.tsv"
TEXTS = "plaintext_articles"
EXPERIMENT = "bench-navigation"
BASELINES = ("tfidf", "random")
_PROSE_LINE = re.compile(r"^   \S")  # a body paragraph's lines; headings start at the margin
_SENTENCE_END = re.compile(r"[.!?][\"')\]]?$")


# --- the graph ------------------------------------------------------------------------------------
def _rows(path: str) -> list[list[str]]:
    """A Wikispeedia TSV's rows: comment lines (``#``) and blank lines skipped."""
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip() and not line.startswith("#")]


def title(name: str) -> str:
    """A Wikispeedia article name (URL-encoded, underscores) as the page's title."""
    return urllib.parse.unquote(name).replace("_", " ")


def lead(text: str, chars: int = SUMMARY_CHARS) -> str:
    """The article's lead from its plain-text export: the prose paragraphs before the first
    heading (the whole text's first prose paragraph where the lead has none), cut to ``chars``.

    The export starts with ``#copyright``, the title and the "2007 Schools Wikipedia Selection"
    line; infobox rows and captions are indented further or have no sentence end, so a paragraph
    counts as prose when every line is indented three spaces and it ends a sentence."""
    blocks = [b for b in re.split(r"\n\s*\n", text) if b.strip()]
    prose, in_lead = [], True
    for block in blocks[3:]:
        lines = block.split("\n")
        if len(lines) == 1 and not lines[0].startswith(" "):  # a section heading
            if prose:
                break
            in_lead = False
            continue
        para = " ".join(line.strip() for line in lines)
        if all(_PROSE_LINE.match(line) for line in lines) and len(para) >= 60 and _SENTENCE_END.search(para):
            prose.append(para)
            if not in_lead or len("\n\n".join(prose)) >= chars:
                break
    return "\n\n".join(prose)[:chars]


def build_graph(source: str, graph: str) -> dict:
    """The Wikispeedia folder ``source`` as a graph folder (nodes, edges, manifest), made once."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    from wikigame_spark.manifests import file_digest
    from wikigame_spark.schemas import EDGES, NODES

    sources = {p: file_digest(os.path.join(source, p)) for p in (ARTICLES, LINKS)}
    manifest_path = os.path.join(graph, "manifest.json")
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
        if manifest["source"]["sha256"] == sources:
            return manifest
    names = [row[0] for row in _rows(os.path.join(source, ARTICLES))]
    ids = {name: i for i, name in enumerate(names)}
    summaries, no_text, no_lead = [], 0, 0
    for name in names:
        path = os.path.join(source, TEXTS, f"{name}.txt")
        text = open(path, encoding="utf-8", errors="replace").read() if os.path.exists(path) else ""
        no_text += not text
        summaries.append(lead(text))
        no_lead += bool(text) and not summaries[-1]
    links = {(ids[a], ids[b]) for a, b in _rows(os.path.join(source, LINKS))}
    self_links = sum(a == b for a, b in links)
    src, dst = zip(*sorted((a, b) for a, b in links if a != b), strict=True)
    for table in ("nodes", "edges"):
        os.makedirs(os.path.join(graph, table), exist_ok=True)
    nodes = {"id": range(len(names)), "title": [title(n) for n in names], "summary": summaries}
    pq.write_table(pa.table(nodes, schema=to_arrow_schema(NODES)), f"{graph}/nodes/part-00000.parquet")
    edges = pa.table({"src": src, "dst": dst}, schema=to_arrow_schema(EDGES))
    pq.write_table(edges, f"{graph}/edges/part-00000.parquet")
    manifest = {
        "kind": "wikispeedia",
        "counts": {"nodes": len(names), "edges": len(src)},
        "rejected": {"self_links": self_links},
        "summaries": {"chars": SUMMARY_CHARS, "no_text_file": no_text, "no_prose_lead": no_lead},
        "source": {"path": os.path.abspath(source), "sha256": sources,
                   "cite": "Robert West and Jure Leskovec: Human Wayfinding in Information Networks. WWW 2012"},
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }  # fmt: skip
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=2)
    return manifest


# --- the jobs ------------------------------------------------------------------------------------
def job(out: str, name: str, *args: str) -> str:
    """Run ``jobs/NAME.py`` as a researcher would, with OUT's MLflow store: its summary line."""
    store = f"sqlite:///{os.path.abspath(out)}/mlflow.db"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               MLFLOW_TRACKING_URI=store, MLFLOW_EXPERIMENT_NAME=EXPERIMENT)  # fmt: skip
    t = time.perf_counter()
    done = subprocess.run([sys.executable, os.path.join(ROOT, "jobs", f"{name}.py"), *args],
                          env=env, cwd=out, capture_output=True, text=True)  # fmt: skip
    if done.returncode:
        sys.exit(f"error: {name} {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    line = done.stdout.strip().splitlines()[-1]
    print(f"[{time.perf_counter() - t:5.0f} s] {line}", flush=True)
    return line


def _csv(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def compare(report: str, minilm: str) -> list[dict]:
    """Per embedding model and baseline: success on the games, and against MiniLM on the same games."""
    success = {r["label"]: r for r in _csv(f"{report}/tables/table4_success.csv")}
    cost = {r["label"]: r for r in _csv(f"{report}/tables/embedding_cost.csv")}
    paired = {}
    for r in _csv(f"{report}/tables/paired.csv"):
        if minilm in (r["agent_a"], r["agent_b"]):
            other, wins, losses = (
                (r["agent_b"], r["only_b"], r["only_a"])
                if r["agent_a"] == minilm
                else (r["agent_a"], r["only_a"], r["only_b"])
            )
            paired[other] = {"wins_over_minilm": int(wins), "losses_to_minilm": int(losses),
                             "mcnemar_p": float(r["mcnemar_p"])}  # fmt: skip
    return [{"agent": label, "success": float(s["success_rate"]), "games": int(s["games"]),
             "core_hours_enwiki": float(cost[label]["embedding_core_hours_enwiki"]) if label in cost else None,
             **paired.get(label, {})} for label, s in success.items()]  # fmt: skip


def main() -> None:
    from wikigame_spark.agents.sentence_models import DEFAULT_MODEL, installed_models

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wikispeedia", default=DEFAULT_DIR, help="SNAP's Wikispeedia files, unpacked")
    ap.add_argument("--games", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--models", nargs="+", help="embedding models (default: every one installed)")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "bench", "navigation"))
    a = ap.parse_args()
    missing = [p for p in (ARTICLES, LINKS, TEXTS) if not os.path.exists(os.path.join(a.wikispeedia, p))]
    if missing:
        sys.exit(f"error: --wikispeedia {a.wikispeedia}: no {', '.join(missing)} (unpack SNAP's "
                 "wikispeedia_paths-and-graph.tar.gz and wikispeedia_articles_plaintext.tar.gz there)")  # fmt: skip
    os.makedirs(a.out, exist_ok=True)
    graph = os.path.join(os.path.abspath(a.out), "wikispeedia")  # the report names a graph by its folder
    manifest = build_graph(a.wikispeedia, graph)
    print(json.dumps({k: manifest[k] for k in ("counts", "rejected", "summaries")}), flush=True)
    games = os.path.join(graph, "games")
    if not os.path.exists(os.path.join(games, "manifest.json")):
        job(a.out, "sample_games", "--graph", graph, "--games", str(a.games), "--seed", str(a.seed))
    models = a.models or installed_models()
    for model in models:
        job(a.out, "play_games", "--graph", graph, "--agent", "embedding", "--model", model, "--overwrite")
    for agent in BASELINES:
        job(a.out, "play_games", "--graph", graph, "--agent", agent, "--overwrite")
    report = os.path.join(os.path.abspath(a.out), "report")
    job(a.out, "report", "--experiment", EXPERIMENT, "--output", report, "--overwrite")
    rows = compare(report, f"embedding: {DEFAULT_MODEL}")
    print("\n| agent | success | wins / losses against MiniLM | McNemar p | core-hours, English Wikipedia |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        pair = f"{r['wins_over_minilm']} / {r['losses_to_minilm']}" if "mcnemar_p" in r else "–"
        p = f"{r['mcnemar_p']:.2g}" if "mcnemar_p" in r else "–"
        hours = f"{r['core_hours_enwiki']:,.2f}" if r["core_hours_enwiki"] is not None else "–"
        print(f"| {r['agent']} | {r['success']:.3f} | {pair} | {p} | {hours} |")
    with open(os.path.join(a.out, "bench_navigation.json"), "w") as f:
        json.dump({"graph": manifest, "games": a.games, "seed": a.seed, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
