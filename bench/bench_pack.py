"""Benchmark: the packed environment on a standalone cluster, lean (``make pack``: no torch) against
heavy (``PACK_EXTRAS=embedding-torch``: torch and sentence-transformers on the executors).

    python bench/bench_pack.py [--out out/bench/pack]

One run of the chain of tests/jobs/test_packed_env.py (the real Latgalian build_wikipedia →
graph_stats → sample_games → play_games embedding and TF-IDF → report): in local mode, then
submitted to a bare-worker standalone cluster (one worker, 2 cores) whose executors run each PEX on
Debian's python3.11; each job's wall time, and that all three runs write the same graph, games and
routes. Beside it, each PEX's size and build time, and what a node pays once: its first start on
an empty PEX_ROOT (pex unpacks the packages) against a warm one, importing the library and the
embedding runtime.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.jobs.jobrun import job_env, run_job
from tests.jobs.test_packed_env import NODE_PYTHON, chain, outputs, submit, submitter_env
from tests.standalone import SPARK_HOME, StandaloneCluster

PY = os.path.join(ROOT, ".venv", "bin", "python")
WHEEL = os.path.join(ROOT, "dist", "wikigame_spark-0.1.0-py3-none-any.whl")
PEXES = {"lean": ("embedding", "dist/wikigame-env.pex"), "heavy": ("embedding-torch", "dist/wikigame-env-torch.pex")}
IMPORT = "import wikigame_spark.agents.inference, openvino, tokenizers, pandas, pyarrow"


def build(extras: str, out: str) -> dict:
    """The PEX (kept while unchanged, as make pack keeps it), its size and build seconds."""
    subprocess.run(["make", "--no-print-directory", "-C", ROOT, "-o", ".venv/.installed", "wheel"], check=True)
    made = subprocess.run(
        ["bash", "conf/pack_env.sh", PY, WHEEL, extras, "python3", out], cwd=ROOT, capture_output=True, text=True
    )
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    line = made.stdout.strip().splitlines()[-1]
    print(line, flush=True)
    built = re.search(r"built in (\d+)s", line)
    seconds = int(built.group(1)) if built else None  # None: up to date, built before
    return {
        "bytes": os.path.getsize(os.path.join(ROOT, out)),
        "build_s": seconds,
    }


def start(pex: str, pex_root: str | None) -> float:
    """Seconds for the node's Python to run the PEX and import the library and the runtime."""
    lib = os.path.join(SPARK_HOME, "python", "lib")  # the node's PySpark, as Spark puts it on the path
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ["HOME"], **({"PEX_ROOT": pex_root} if pex_root else {})}
    env["PYTHONPATH"] = os.pathsep.join(os.path.join(lib, z) for z in sorted(os.listdir(lib)) if z.endswith(".zip"))
    started = time.perf_counter()
    subprocess.run([os.path.join(ROOT, pex), "-c", IMPORT], env=env, check=True)
    return round(time.perf_counter() - started, 1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(ROOT, "out", "bench", "pack"))
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    result = {"pex": {}, "jobs": []}
    for name, (extras, out) in PEXES.items():
        row = build(extras, out)
        with tempfile.TemporaryDirectory() as empty:
            row["first_start_s"] = start(out, empty)  # pex unpacks into the empty PEX_ROOT
            row["warm_start_s"] = start(out, empty)
        start(out, None)  # the cluster's executors find it unpacked in their PEX_ROOT
        result["pex"][name] = row
        print(name, json.dumps(row), flush=True)

    with tempfile.TemporaryDirectory(dir=a.out) as work:
        local = os.path.join(work, "local")
        env = job_env(f"sqlite:///{work}/local.db", MLFLOW_EXPERIMENT_NAME="bench-pack")
        for job, args in chain(local):
            started = time.perf_counter()
            done = run_job(job, *args, env=env, process=True)
            assert done.rc == 0, done.err[-3000:]
            label = f"{job} {args[args.index('--agent') + 1]}" if "--agent" in args else job
            result["jobs"].append({"job": label, "local": round(time.perf_counter() - started, 1)})
        expected = outputs(local)
        user = os.path.join(work, "user")
        os.makedirs(user)
        os.makedirs(os.path.join(work, "cluster"))
        with StandaloneCluster(os.path.join(work, "cluster"), workers=1, cores=2, memory="3g", bare=True) as cluster:
            for name, (_, out) in PEXES.items():
                pex = os.path.join(ROOT, out)
                shipped = ["--files", pex, "--conf", f"spark.pyspark.python=./{os.path.basename(pex)}"]
                base = os.path.join(user, name)
                os.makedirs(base)
                senv = submitter_env(base)  # an MLflow store of its own: the report reads one variant's runs
                for i, (job, args) in enumerate(chain(base)):
                    started = time.perf_counter()
                    done = submit(cluster, job, args, senv, user, *shipped)
                    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
                    row = result["jobs"][i]
                    row[name] = round(time.perf_counter() - started, 1)
                    print(row["job"], name, row[name], flush=True)
                assert f"the executors' Python: {NODE_PYTHON} " in done.stdout + done.stderr
                assert outputs(base) == expected, f"{name}: not the local run's outputs"
            cluster.stop()
    with open(os.path.join(a.out, "bench_pack.json"), "w") as f:
        json.dump(result, f, indent=2)
    print("| job | local | lean PEX | heavy PEX (torch) | heavy ÷ lean |")
    print("|---|---|---|---|---|")
    for r in result["jobs"]:
        print(f"| {r['job']} | {r['local']} s | {r['lean']} s | {r['heavy']} s | {r['heavy'] / r['lean']:.2f} |")
    for name, r in result["pex"].items():
        size = f"{r['bytes'] / 1e6:,.0f} MB, built in {r['build_s']} s"
        print(f"{name}: {size}, first start {r['first_start_s']} s, warm {r['warm_start_s']} s")


if __name__ == "__main__":
    main()
