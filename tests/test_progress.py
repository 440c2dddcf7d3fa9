import logging
import time

from wikigame_spark import progress


def test_duration():
    assert [progress.duration(s) for s in (4.4, 65, 7260)] == ["4s", "1m05s", "2h01m"]


def test_a_slow_spark_write_logs_its_tasks_as_they_finish(spark, caplog, tmp_path):
    def slow(rows):
        time.sleep(0.4)
        return rows

    with caplog.at_level(logging.INFO, logger=progress.__name__):
        with progress.spark_tasks(spark, "sleeping", every_s=0.3):
            spark.sparkContext.parallelize(range(8), 8).mapPartitions(slow).saveAsTextFile(str(tmp_path / "t"))
        spark.range(3).count()  # outside the block: not reported
    lines = [r.getMessage() for r in caplog.records]
    assert lines[-1].startswith("sleeping: done in ")
    counts = [line for line in lines if " tasks done in " in line]
    assert counts and all(line.startswith("sleeping: ") and " of 8 tasks " in line for line in counts), lines
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None


def test_a_jobs_running_stages_are_logged_unless_a_block_says_more(spark, caplog, tmp_path):
    def slow(rows):
        time.sleep(0.4)
        return rows

    data = spark.sparkContext.parallelize(range(6), 6).mapPartitions(slow)
    with caplog.at_level(logging.INFO, logger=progress.__name__), progress.running_stages("some_job", every_s=0.3):
        data.count()
        stage_lines = [r.getMessage() for r in caplog.records]
        with progress.spark_tasks(spark, "focused", every_s=0.3):
            data.count()
    assert any(
        line.startswith("some_job: ") and " of 6 tasks of 1 running stage(s) done" in line for line in stage_lines
    )
    after = [r.getMessage() for r in caplog.records][len(stage_lines) :]
    assert after and not any(line.startswith("some_job") for line in after), after
