"""Same outputs before and after a change: the Latgalian pipeline run by two checkouts, compared.

    python -m wikigame_spark.devtools.identity run --repo /path/to/checkout --out DIR [--games 50]
    python -m wikigame_spark.devtools.identity compare BEFORE_DIR AFTER_DIR

e.g. the checkout before a change in a second worktree (``git worktree add /tmp/base HEAD``; this
interpreter and this checkout's jars serve it), then this one, then ``compare``.

``run`` plays the demo's chain with the jobs of ``--repo`` (its ``wikigame_spark`` first on the
path, this interpreter and the jars of this checkout unless it has its own): build_wikipedia →
graph_stats → sample_games → play_games embedding, tfidf, random → report, into ``DIR`` with its
own SQLite MLflow store (``DIR/mlflow.db``). ``compare`` checks two such folders: every Parquet
table value-identical after sorting, every JSON manifest and text output identical once the
fields listed in ``VOLATILE_*`` are set aside (times, the code version, absolute paths, MLflow run
ids, the embedding cache's measured CPU cost and what the report derives from it), every figure
byte-identical (but Fig 2C, whose x-axis is that cost), and every MLflow run's params, metrics and
tags identical by run name. Inside every text (JSON values, Markdown, HTML, CSV, params) these are
set aside too: the folder's absolute path, MLflow run ids (32 hex digits), times (ISO 8601), the
code version (``0.1.0+<commit>``) and the SHA-1 digests of the folder's own manifests (full or
their 12-digit prefix), which differ between two runs because the manifests record their time of
making, and the UUIDs Spark puts in part files' names. Manifests' part files are compared by name,
not size (a table's bytes follow its volatile columns); the report's cache of distance profiles,
in folders named by run ids, is set aside (its content is in the report's tables). It prints each
difference and exits 1 when there is one. A refactor that changes behaviour shows
here; one that only moves code does not.
"""

from __future__ import annotations

import argparse
import functools
import glob
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import time

import pyarrow.dataset as ds

from wikigame_spark.devtools import DATA
from wikigame_spark.manifests import manifest_sha1
from wikigame_spark.session import PROJECT_DIR

HERE = PROJECT_DIR
DUMP = os.path.join(DATA, "wikipedia", "ltgwiki-20170901-pages-articles.xml.bz2")
EXPERIMENT = "identity"
AGENTS = ("embedding", "tfidf", "random")

# Fields that legitimately differ between two runs of the same code, by where they occur.
VOLATILE_JSON_KEYS = {
    "created",  # every manifest: when it was written
    "since",  # lock owners
    "code_version",  # package version + git commit of the checkout
    "source_created",  # caches: the graph's "created"
    "run_id",  # MLflow ids of play runs and the report
    "mlflow_run_id",
    "seconds",  # time spent choosing (plays, per-run summaries)
    "games_per_second",
    "wall_seconds",
    "elapsed_seconds",
    *("cpu_s", "embedding_cpu_s", "embedding_core_hours_enwiki"),  # an embedding cache's measured cost
}
VOLATILE_COLUMNS = {"seconds"}  # plays: time spent choosing
VOLATILE_METRICS = {"games_per_second", "llm_latency_mean_s", "embedding_cpu_s", "embedding_core_hours_enwiki"}
# The report's figure of success against the measured embedding cost (its x-axis is a measurement),
# as a file and inside the HTML page.
VOLATILE_FIGURES = {"fig2c_success_vs_embedding_cost.png"}
_MEASURED_FIGURE = re.compile(r"(<img alt='Fig 2C[^']*' src=')data:image/png;base64,[A-Za-z0-9+/=]+")
VOLATILE_PARAMS = {"code_version", "play_runs"}  # play_runs: the report's list of MLflow run ids
VOLATILE_TAGS_PREFIX = ("mlflow.",)  # MLflow's own tags: user, source file, git commit, log history
VOLATILE_FILES = {"mlflow.db"}
# The report's cache of distance profiles, in folders named by a digest of the games manifest and by
# MLflow run ids: what it holds is compared in the report's tables.
VOLATILE_DIRS = (os.path.join("cache", "profiles"),)


def _env(repo: str, out: str) -> dict:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=repo,
        MLFLOW_TRACKING_URI=f"sqlite:///{os.path.abspath(out)}/mlflow.db",
        HF_HUB_OFFLINE="1",
        SPARK_CONF_DIR=os.path.join(repo, "conf"),
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOCAL_IP=env.get("SPARK_LOCAL_IP", "127.0.0.1"),
    )
    if not os.path.isdir(os.path.join(repo, "jars")):
        env["WIKIGAME_JARS_DIR"] = os.path.join(HERE, "jars")
    env.pop("WIKIGAME_VERBOSE", None)
    return env


def run(repo: str, out: str, games: int) -> None:
    """The pipeline of ``repo``'s jobs into ``out`` (refused if ``out`` exists: a before folder is kept)."""
    repo, out = os.path.abspath(repo), os.path.abspath(out)
    if os.path.exists(out):
        raise SystemExit(f"error: {out} exists; give a new folder")
    os.makedirs(out)
    env, graph = _env(repo, out), os.path.join(out, "ltgwiki")
    common = ["--experiment", EXPERIMENT]
    steps = [
        ("build_wikipedia", ["--input", os.path.abspath(DUMP), "--output", graph]),
        ("graph_stats", ["--graph", graph, "--pairs", "200", *common]),
        ("sample_games", ["--graph", graph, "--games", str(games), "--seed", "0", *common]),
        *(("play_games", ["--graph", graph, "--agent", a, *common]) for a in AGENTS),
        ("report", ["--output", os.path.join(out, "report"), *common]),
    ]
    for job, args in steps:
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, os.path.join(repo, "jobs", f"{job}.py"), *args],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
        )
        with open(os.path.join(out, "jobs.log"), "a", encoding="utf-8") as log:
            log.write(f"$ {job} {' '.join(args)}\n{done.stdout}{done.stderr[-5000:]}\n")
        if done.returncode != 0:
            raise SystemExit(f"error: {job} exited {done.returncode}:\n{done.stderr[-3000:]}")
        print(f"{job}: {time.monotonic() - start:.0f} s  {done.stdout.strip().splitlines()[-1][:160]}")


def _scrub(value, root: str):
    """``value`` with volatile keys dropped and volatile text replaced (:func:`_scrub_text`); a
    manifest's part files by name only (a table's bytes follow its volatile columns, its values are
    compared as a table)."""
    if isinstance(value, dict) and isinstance(value.get("files"), dict):
        value = {**value, "files": sorted(value["files"])}
    if isinstance(value, dict):
        return {_scrub_text(k, root): _scrub(v, root) for k, v in value.items() if k not in VOLATILE_JSON_KEYS}
    if isinstance(value, list):
        return [_scrub(v, root) for v in value]
    if isinstance(value, str):
        return _scrub_text(value, root)
    return value


_RUN_ID = re.compile(r"\b[0-9a-f]{32}\b")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?")
_CODE_VERSION = re.compile(r"\b\d+\.\d+\.\d+\+[0-9a-f]{7,40}\b")
# Spark names each write's part files with a new UUID (manifests list them in their contents)
_PART_UUID = re.compile(r"(part-\d+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_DIGESTS: dict[str, dict[str, str]] = {}


def _digests(root: str) -> dict[str, str]:
    """The SHA-1 of each manifest under ``root`` (as games and play runs record them) → a name."""
    if root not in _DIGESTS:
        found = {}
        for path in glob.glob(os.path.join(root, "**", "manifest.json"), recursive=True):
            with open(path, encoding="utf-8") as f:
                digest = manifest_sha1(json.load(f))
            found[digest] = f"<sha1 of {os.path.relpath(path, root)}>"
        _DIGESTS[root] = found
    return _DIGESTS[root]


@functools.cache
def _measured(root: str) -> tuple[str, ...]:
    """The report's measured embedding costs as its tables write them (full, and to 3 decimals)."""
    path = os.path.join(root, "report", "report.json")
    if not os.path.isfile(path):
        return ()
    with open(path, encoding="utf-8") as f:
        rows = json.load(f).get("embedding_cost", [])
    values = [r[k] for r in rows for k in ("embedding_core_hours_enwiki",) if isinstance(r.get(k), float)]
    return tuple(text for v in values for text in (repr(v), f"{v:.3f}"))


def _scrub_text(text: str, root: str) -> str:
    text = text.replace(f"file://{root}", "<out>").replace(root, "<out>")
    for value in _measured(root):
        text = text.replace(value, "<measured>")
    text = _MEASURED_FIGURE.sub(r"\1<measured figure>", text)
    for digest, name in _digests(root).items():
        text = text.replace(digest, name).replace(digest[:12], name)
    text = _PART_UUID.sub(r"\1-<uuid>", text)
    return _CODE_VERSION.sub("<code version>", _TIME.sub("<time>", _RUN_ID.sub("<run id>", text)))


def _volatile_dir(rel: str) -> bool:
    """Whether a folder relative to the output is, or lies inside, a ``VOLATILE_DIRS`` folder."""
    return any(f"{os.sep}{d}{os.sep}" in f"{os.sep}{rel}{os.sep}" for d in VOLATILE_DIRS)


def _tables(root: str) -> set[str]:
    """Folders holding Parquet part files, relative to ``root``."""
    found = set()
    for path in glob.glob(os.path.join(root, "**", "*.parquet"), recursive=True):
        rel = os.path.relpath(os.path.dirname(path), root)
        if not rel.startswith("mlruns") and not _volatile_dir(rel):
            found.add(rel)
    return found


def _rows(path: str) -> list[tuple]:
    table = ds.dataset(path, format="parquet").to_table()
    keep = [c for c in table.column_names if c not in VOLATILE_COLUMNS]
    rows = table.select(keep).to_pylist()
    return sorted((tuple((k, _hashable(r[k])) for k in keep) for r in rows), key=repr)


def _hashable(v):
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return v


def _files(root: str) -> set[str]:
    found = set()
    for dirpath, _, names in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel.startswith("mlruns") or _volatile_dir(rel) or any(part.startswith(".") for part in rel.split(os.sep)):
            continue
        for name in names:
            if name in VOLATILE_FILES | VOLATILE_FIGURES or name.endswith((".parquet", ".crc")) or name == "_SUCCESS":
                continue
            found.add(os.path.normpath(os.path.join(rel, name)))
    return found


def _mlflow(root: str) -> dict:
    """Every run of the store by name: params, metrics (last value), tags."""
    db = sqlite3.connect(os.path.join(root, "mlflow.db"))
    out = {}
    for run_uuid, name in db.execute("select run_uuid, name from runs where lifecycle_stage = 'active'"):
        params = dict(db.execute("select key, value from params where run_uuid = ?", (run_uuid,)))
        metrics = dict(db.execute("select key, value from latest_metrics where run_uuid = ?", (run_uuid,)))
        tags = dict(db.execute("select key, value from tags where run_uuid = ?", (run_uuid,)))
        artifacts = _artifact_names(root, run_uuid)
        out[name] = {
            "params": {k: _scrub_text(v, root) for k, v in params.items() if k not in VOLATILE_PARAMS},
            "metrics": {k: v for k, v in metrics.items() if k not in VOLATILE_METRICS},
            "tags": {k: _scrub_text(v, root) for k, v in tags.items() if not k.startswith(VOLATILE_TAGS_PREFIX)},
            "artifacts": artifacts,
        }
    return out


def _artifact_names(root: str, run_uuid: str) -> list[str]:
    found = glob.glob(os.path.join(root, "mlruns", "*", run_uuid, "artifacts", "**", "*"), recursive=True)
    return sorted(p.split(f"{run_uuid}/artifacts/", 1)[1] for p in found if os.path.isfile(p))


def compare(before: str, after: str) -> list[str]:
    """Every difference between two pipeline folders, as lines (none: the same outputs)."""
    before, after = os.path.abspath(before), os.path.abspath(after)
    diffs = []
    tb, ta = _tables(before), _tables(after)
    diffs += [f"table only before: {t}" for t in sorted(tb - ta)] + [f"table only after: {t}" for t in sorted(ta - tb)]
    for t in sorted(tb & ta):
        rb, ra = _rows(os.path.join(before, t)), _rows(os.path.join(after, t))
        if rb != ra:
            first = next((i for i, (x, y) in enumerate(zip(rb, ra)) if x != y), min(len(rb), len(ra)))
            diffs.append(f"table {t}: {len(rb)} vs {len(ra)} rows, first difference at sorted row {first}")
    fb, fa = _files(before), _files(after)
    diffs += [f"file only before: {f}" for f in sorted(fb - fa)] + [f"file only after: {f}" for f in sorted(fa - fb)]
    for f in sorted(fb & fa):
        pb, pa = os.path.join(before, f), os.path.join(after, f)
        if f.endswith(".json"):
            with open(pb, encoding="utf-8") as x, open(pa, encoding="utf-8") as y:
                same = _scrub(json.load(x), before) == _scrub(json.load(y), after)
        elif f.endswith((".md", ".html", ".csv", ".log", ".jsonl")):
            if f == "jobs.log":
                continue
            with open(pb, encoding="utf-8") as x, open(pa, encoding="utf-8") as y:
                same = _scrub_text(x.read(), before) == _scrub_text(y.read(), after)
        else:
            with open(pb, "rb") as x, open(pa, "rb") as y:
                same = x.read() == y.read()
        if not same:
            diffs.append(f"file differs: {f}")
    mb, ma = _mlflow(before), _mlflow(after)
    diffs += [f"MLflow run only before: {r}" for r in sorted(set(mb) - set(ma))]
    diffs += [f"MLflow run only after: {r}" for r in sorted(set(ma) - set(mb))]
    for name in sorted(set(mb) & set(ma)):
        for part in ("params", "metrics", "tags", "artifacts"):
            x, y = mb[name][part], ma[name][part]
            if x != y:
                keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k)) if isinstance(x, dict) else []
                diffs.append(f"MLflow run {name} {part} differ: {keys or (x, y)}")
    return diffs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run the pipeline of a checkout into a new folder")
    r.add_argument("--repo", default=HERE, help="checkout whose jobs run (default this one)")
    r.add_argument("--out", required=True, help="new folder for every output and the MLflow store")
    r.add_argument("--games", type=int, default=50, help="games sampled and played per agent")
    c = sub.add_parser("compare", help="compare two pipeline folders")
    c.add_argument("before")
    c.add_argument("after")
    args = p.parse_args(argv)
    if args.command == "run":
        run(args.repo, args.out, args.games)
        return 0
    diffs = compare(args.before, args.after)
    for d in diffs:
        print(d)
    print(f"identity: {len(diffs)} differences" if diffs else "identity: same outputs")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
