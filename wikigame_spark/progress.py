"""Progress of long work on the driver's log: a Spark write whose tasks take minutes shows where
it is even where Spark's own progress bar is off (a log file, a notebook, a cluster's driver log)."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator

log = logging.getLogger(__name__)

EVERY_S = 10.0  # seconds between two progress lines


def duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _tasks(tracker, group: str) -> tuple[int, int]:
    """(tasks done, tasks in all) of the stages of the jobs in ``group``."""
    done = total = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in job.stageIds if job else ():
            stage = tracker.getStageInfo(stage_id)
            if stage:
                done += stage.numCompletedTasks
                total += stage.numTasks
    return done, total


@contextlib.contextmanager
def _every(every_s: float, report) -> Iterator[None]:
    """Call ``report(seconds since the start)`` from a thread every ``every_s`` seconds while the
    block runs."""
    stop = threading.Event()
    started = time.perf_counter()

    def loop() -> None:
        while not stop.wait(every_s):
            report(time.perf_counter() - started)

    thread = threading.Thread(target=loop, name="progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


_focused: list[str] = []  # what spark_tasks blocks are reporting now: the job's reporter stays quiet


def _stages(sc) -> tuple[int, int, int]:
    """(running stages, their tasks done, their tasks in all)."""
    tracker = sc.statusTracker()
    infos = [i for i in map(tracker.getStageInfo, tracker.getActiveStageIds()) if i]
    return len(infos), sum(i.numCompletedTasks for i in infos), sum(i.numTasks for i in infos)


@contextlib.contextmanager
def running_stages(job: str, every_s: float = EVERY_S) -> Iterator[None]:
    """Log the tasks of the Spark stages running every ``every_s`` seconds while the block runs (a
    job's body: whatever it runs, once it has a session), unless a :func:`spark_tasks` block says more."""
    from pyspark import SparkContext

    def report(elapsed: float) -> None:
        sc = SparkContext._active_spark_context
        # a context still starting (the body starts the session: on a cluster, seconds) has no JVM side yet
        if sc is None or getattr(sc, "_jsc", None) is None or _focused:
            return
        stages, done, total = _stages(sc)
        if stages:
            log.info(
                "%s: %d of %d tasks of %d running stage(s) done, %s in", job, done, total, stages, duration(elapsed)
            )

    with _every(every_s, report):
        yield


@contextlib.contextmanager
def spark_tasks(spark, what: str, every_s: float = EVERY_S) -> Iterator[None]:
    """Log ``what``'s Spark tasks done every ``every_s`` seconds while the block runs, and the
    time it took at its end (only where it took longer than ``every_s``)."""
    sc = spark.sparkContext
    group = f"progress-{id(what)}-{time.monotonic_ns()}"
    sc.setJobGroup(group, what)
    started = time.perf_counter()

    def report(elapsed: float) -> None:
        done, total = _tasks(sc.statusTracker(), group)
        left = f", about {duration(elapsed / done * (total - done))} left" if 0 < done < total else ""
        log.info("%s: %d of %d tasks done in %s%s", what, done, total, duration(elapsed), left)

    _focused.append(what)
    try:
        with _every(every_s, report):
            yield
    finally:
        _focused.remove(what)
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
        elapsed = time.perf_counter() - started
        if elapsed > every_s:
            log.info("%s: done in %s", what, duration(elapsed))
