"""Does a cheap embedding model still navigate? Every installed embedding model plays the same games
on a real Wikispeedia graph, paired against MiniLM, through the jobs a researcher runs.

    python bench/bench_navigation.py [--wikispeedia DIR] [--games 200] [--seed 7]
        [--models NAME …] [--out out/bench/navigation]

Wikispeedia (West & Leskovec, WWW 2012) is a 4,604-article selection of English Wikipedia (the
2007 Wikipedia for Schools) with its links, the classic graph of this game. DIR holds what SNAP's
two archives unpack to (https://snap.stanford.edu/data/wikispeedia.html):
``wikispeedia_paths-and-graph/articles.tsv``, ``…/links.tsv`` and ``plaintext_articles/*.txt``;
default ``../shared/data/wikispeedia``. Its files are read, never copied into the repository.

The graph (``OUT/wikispeedia``) is built by ``jobs/build_wikispeedia.py`` (once: a graph already
built from the same files is kept). Then, each in a process of its own with one MLflow store
under OUT: ``sample_games`` (``--games`` games, ``--seed``), ``play_games`` for
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
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from wikigame_spark.devtools import DATA

DEFAULT_DIR = os.path.join(DATA, "wikispeedia")
EXPERIMENT = "bench-navigation"
BASELINES = ("tfidf", "random")


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


def built(out: str, source: str, graph: str) -> dict:
    """The graph of ``source`` by jobs/build_wikispeedia.py, kept when already built from it."""
    manifest_path = os.path.join(graph, "manifest.json")
    if os.path.exists(manifest_path):
        with open(manifest_path, encoding="utf-8") as f:
            manifest = json.load(f)
        if manifest.get("parameters", {}).get("input") == source:
            return manifest
    job(out, "build_wikispeedia", "--input", source, "--output", graph, "--overwrite")
    with open(manifest_path, encoding="utf-8") as f:
        return json.load(f)


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
    os.makedirs(a.out, exist_ok=True)
    graph = os.path.join(os.path.abspath(a.out), "wikispeedia")
    manifest = built(a.out, os.path.abspath(a.wikispeedia), graph)
    print(json.dumps(manifest["counts"]), flush=True)
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
