"""Faults recognised from the exception chain as Spark and MLflow raise them, and the one line."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from pyspark.sql import functions as F

from tests.jobs.jobrun import job_env, run_job
from wikigame_spark import cli


@pytest.mark.parametrize("checksum", [False, True])
def test_a_corrupt_parquet_file_inside_spark_is_named(spark, tmp_path, checksum):
    """Cut short after it was written: Hadoop's checksum file finds it first when it is there."""
    path = str(tmp_path / "t")
    spark.range(100).coalesce(1).write.parquet(path)
    (part,) = [f for f in os.listdir(path) if f.endswith(".parquet")]
    with open(os.path.join(path, part), "r+b") as f:
        f.truncate(40)
    if not checksum:
        os.remove(os.path.join(path, f".{part}.crc"))
    with pytest.raises(Exception) as raised:
        spark.read.schema("id long").parquet(path).agg(F.sum("id")).collect()
    line = cli.user_fault(raised.value)
    assert line is not None and os.path.join(path, part) in line
    assert ("checksum error" if checksum else "is not a Parquet file") in line


def test_an_unwritable_hadoop_path_is_a_users_fault(spark):
    with pytest.raises(Exception) as raised:
        spark.range(3).write.parquet("file:///proc/wikigame-test/out")
    line = cli.user_fault(raised.value)
    assert line is not None and "/proc/wikigame-test" in line


def test_task_errors_user_or_internal(spark):
    def bad_value(rows):
        raise ValueError("row 3: no title")
        yield  # pragma: no cover

    def bug(rows):
        return [][1]
        yield  # pragma: no cover

    with pytest.raises(Exception) as user:
        spark.range(4).rdd.mapPartitions(bad_value).collect()
    assert cli.user_fault(user.value) == "ValueError: row 3: no title"
    with pytest.raises(Exception) as internal:
        spark.range(4).rdd.mapPartitions(bug).collect()
    assert cli.user_fault(internal.value) is None  # a bug: its traceback is shown, status 1


def test_mlflow_refusal_is_one_line(tmp_path, monkeypatch):
    import mlflow

    uri = f"sqlite:///{tmp_path}/m.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    mlflow.set_tracking_uri(uri)
    with mlflow.start_run() as run:
        mlflow.log_param("max_steps", "100")
    with pytest.raises(Exception) as raised, mlflow.start_run(run_id=run.info.run_id):
        mlflow.log_param("max_steps", "50")
    line = cli.user_fault(raised.value)
    assert line.startswith(f"MLflow ({uri}): ") and "max_steps" in line


def test_internal_errors_keep_their_traceback(tmp_path):
    def main(argv):
        return {}["n"]

    with pytest.raises(KeyError):
        cli.run(main, [])


def test_verbose_shows_the_trace_and_still_ends_with_the_line(tmp_path):
    """``--verbose`` is the runner's (the job's parser never sees it): the fault's traceback, then the line."""
    env = job_env(f"sqlite:///{tmp_path}/m.db")
    done = run_job("graph_stats", "--graph", str(tmp_path / "none"), "--verbose", env=env)
    assert done.rc == 2 and "Traceback" in done.err and "PreflightError" in done.err
    assert done.err.rstrip().splitlines()[-1] == f"error: --graph {tmp_path / 'none'}: not found"


def test_a_fault_inside_a_task_ends_in_one_line_without_traces(tmp_path):
    """A corrupt dump found by a Spark task: no executor stack traces bury the line (issue: ~350 lines)."""
    from tests.conftest import LTG

    data = bytearray(open(LTG, "rb").read())
    data[300_000:300_200] = b"\x00" * 200
    dump = tmp_path / "corrupt.xml.bz2"
    dump.write_bytes(bytes(data))
    env = job_env(f"sqlite:///{tmp_path}/m.db")
    done = run_job("build_wikipedia", "--input", str(dump), "--output", str(tmp_path / "g"), env=env, process=True)
    done.refused(f"{dump}: corrupt compressed data near byte")
    assert "\tat " not in done.err and "Executor" not in done.err and "Lost task" not in done.err
    print(f"stderr: {len(done.err.splitlines())} lines")
    assert not os.path.exists(tmp_path / "g")


def test_a_fault_in_one_of_many_tasks_is_the_only_word(tmp_path):
    """A corrupt block read by one task of many: Spark kills the others, whose workers' closed
    sockets and never-stored blocks say nothing (wikigame_spark/quiet_daemon.py, the log profile)."""
    from tests.conftest import LTG

    data = bytearray(open(LTG, "rb").read())
    data[300_000] ^= 0xFF
    dump = tmp_path / "flipped-pages-articles.xml.bz2"
    dump.write_bytes(bytes(data))
    env = job_env(f"sqlite:///{tmp_path}/m.db")
    argv = ["--input", str(dump), "--output", str(tmp_path / "g"), "--task-bytes", "50000"]
    done = run_job("build_wikipedia", *argv, env=env, process=True)
    done.refused(f"{dump} [bytes ", "corrupt bzip2 block near byte")
    # the job's own progress reports (every 10 s) may come first on a slow machine; nothing else may
    said = [line for line in done.err.splitlines()[:-1] if " INFO wikigame_spark.progress: " not in line]
    assert said == ["WARNING: Using incubator modules: jdk.incubator.vector"], done.err


def test_output_checks_on_relative_paths(tmp_path, monkeypatch):
    from wikigame_spark import preflight

    monkeypatch.chdir(tmp_path)
    preflight.check_output("out/report/x", overwrite=False)  # nothing of it exists yet: writable here
    assert os.listdir(tmp_path) == []  # the probe was removed, nothing created
    (tmp_path / "out").write_text("a file")
    with pytest.raises(preflight.PreflightError, match=f"{tmp_path / 'out'} is a file, not a folder"):
        preflight.check_output("out/report/x", overwrite=False)


def flip_a_data_bit(table_dir: str) -> str:
    """One bit flipped a quarter into the table's first part file: its size, name and footer stay."""
    name = sorted(n for n in os.listdir(table_dir) if n.endswith(".parquet"))[0]
    path = os.path.join(table_dir, name)
    data = bytearray(open(path, "rb").read())
    data[len(data) // 4] ^= 0x10
    open(path, "wb").write(bytes(data))
    for crc in [n for n in os.listdir(table_dir) if n.endswith(".crc")]:
        os.remove(os.path.join(table_dir, crc))  # Hadoop's own checksum file would catch it first
    return name


def test_a_flipped_bit_in_a_part_file_is_named_by_both_readers(spark, ltg_graph, tmp_path):
    """Parquet's page checksums (written by Spark, checked by pyarrow and by Spark): an error line
    naming the part file, never a wrong value."""

    graph = tmp_path / "g"
    shutil.copytree(ltg_graph, graph, ignore=shutil.ignore_patterns("games", "stats", "plays", "cache", "human"))
    name = flip_a_data_bit(str(graph / "edges"))
    done = run_job("graph_stats", "--graph", str(graph), env=job_env(f"sqlite:///{tmp_path}/m.db"))
    done.refused(f"{graph}/edges: part file {name}: a Parquet page does not match the checksum written with it")
    with pytest.raises(Exception) as spark_read:
        spark.read.parquet(str(graph / "edges")).selectExpr("sum(src)").collect()
    assert cli.user_fault(spark_read.value) == (
        f"file://{graph}/edges/{name}: a Parquet page does not match the checksum written with it (changed since "
        "written); rebuild the output"
    )


@pytest.mark.slow
def test_a_killed_driver_jvm_is_one_line(tmp_path):
    """The kernel's OOM killer takes the JVM, not the job's Python: one line saying so, exit 2."""
    import signal
    import time

    from tests.conftest import LTG
    from tests.jobs.jobrun import command

    out = tmp_path / "g"
    env = job_env(f"sqlite:///{tmp_path}/m.db")
    job = subprocess.Popen(
        command("build_wikipedia", "--input", LTG, "--output", str(out)),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    jvm = ""
    for _ in range(600):  # the JVM started, then a few seconds into the work
        jvm = subprocess.run(["pgrep", "-P", str(job.pid), "java"], capture_output=True, text=True).stdout.split()
        if jvm or job.poll() is not None:
            break
        time.sleep(0.1)
    assert jvm, "no JVM under the job"
    time.sleep(4)
    os.kill(int(jvm[0]), signal.SIGKILL)
    _, err = job.communicate(timeout=120)
    assert job.returncode == 2, err[-3000:]
    assert err.rstrip().splitlines()[-1].startswith("error: the Spark driver's JVM is gone (killed"), err[-3000:]
    assert "Traceback" not in err and not out.exists()
