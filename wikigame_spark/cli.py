"""What every job's entry point shares: error reporting, console verbosity, the session.

A fault the user can cause or fix (bad input, an unreadable or unwritable path, a corrupt Parquet
file, an unusable tracking store, a refused resume) ends the job with one last line
``error: <what, where>`` and exit status 2, recognised anywhere in the exception chain, including
the Java causes Py4J carries and errors raised inside Spark tasks. Anything else is a bug: its
traceback is shown and the status is 1. Spark's task failure traces stay off the console unless
``--verbose`` (or ``WIKIGAME_VERBOSE=1``) is given.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import logging
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator

from wikigame_spark import preflight
from wikigame_spark.config import ConfigError
from wikigame_spark.graph.frame import GraphFramesUnavailable
from wikigame_spark.ingest.dumps import DumpError
from wikigame_spark.outputs import OutputBusyError, OutputExistsError

log = logging.getLogger(__name__)

USER_ERRORS = (
    ConfigError,
    GraphFramesUnavailable,
    DumpError,
    OutputExistsError,
    OutputBusyError,
    FileNotFoundError,
    PermissionError,
    ValueError,
)
# A traceback's last line, ``pkg.mod.Name: message``: whether Name is a user error is its class's to say.
_TASK_ERROR = re.compile(r"^((?:[A-Za-z_]\w*\.)*)([A-Za-z_]\w*): (.*)$", re.M)
# Java causes a user can fix, as Py4J renders them: (pattern, message from its groups).
_JAVA_FAULTS = (
    (
        re.compile(r"error while reading file (\S+?)\.?\s.*?CRC checksum verification failed", re.S),
        "{0}: a Parquet page does not match the checksum written with it (changed since written); rebuild the output",
    ),
    (re.compile(r"(\S+) is not a Parquet file"), "{0}: is not a Parquet file (corrupt or cut short)"),
    (re.compile(r"Parquet magic bytes not found in footer"), "a Parquet file is corrupt or cut short ({line})"),
    (
        re.compile(r"ChecksumException: Checksum error: (\S+)"),
        "{0}: checksum error (changed or cut short since written)",
    ),
    (re.compile(r"Mkdirs failed to create (\S+)"), "{0}: cannot create the folder (Mkdirs failed)"),
    (re.compile(r"java\.nio\.file\.AccessDeniedException: (\S+)"), "{0}: access denied"),
    (re.compile(r"java\.io\.FileNotFoundException: (.+)"), "{0}"),
    (re.compile(r"\[PATH_NOT_FOUND\] Path does not exist: (\S+?)\.?(?: SQLSTATE|$)", re.M), "{0}: not found"),
    (re.compile(r"(?:Permission denied|EACCES)(.*)"), "permission denied{0}"),
)


def _error_class(module: str, name: str) -> type | None:
    """The exception class a task's traceback names (``pkg.mod.Name`` or a builtin). Only modules
    already loaded or the library's own are imported: any line of a trace can look like a name."""
    module = module.rstrip(".")
    if not module:
        return getattr(builtins, name, None)
    if module not in sys.modules and not module.startswith("wikigame_spark."):
        return None
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


def task_error_message(exc: BaseException) -> str | None:
    """The last user-error line (``Name: message``) inside a Spark task failure, if any."""
    found = []
    for module, name, message in _TASK_ERROR.findall(str(exc)):
        cls = _error_class(module, name)
        if isinstance(cls, type) and issubclass(cls, USER_ERRORS):
            found.append(f"{name}: {message}")
    return found[-1] if found else None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _external_fault(e: BaseException) -> str | None:
    """A tracking store's refusal or a Java cause a user can fix (corrupt Parquet, missing or
    unwritable paths), as one line; else None."""
    names = {c.__name__ for c in type(e).__mro__}
    if "Py4JNetworkError" in names or "JAVA_GATEWAY_EXITED" in str(e):  # the driver's JVM went away
        return (
            "the Spark driver's JVM is gone (killed: often by the kernel when memory runs out, see `dmesg`); "
            "nothing was published: run the job again, with more memory (spark.driver.memory) or less data per task"
        )
    if "MlflowException" in names or "OperationalError" in names:
        from wikigame_spark.tracking import tracking_uri

        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        return f"MLflow ({tracking_uri()}): {first}"
    text = str(e)
    if "Py4J" in type(e).__name__ or "java." in text:
        for pattern, template in _JAVA_FAULTS:
            m = pattern.search(text)
            if m:
                line = text[m.start() :].splitlines()[0][:300]
                return template.format(*(g.strip() for g in m.groups()), line=line)
    return None


def user_fault(exc: BaseException) -> str | None:
    """One line for a fault the user can cause or fix, found anywhere in ``exc``'s chain; else None."""
    for e in _chain(exc):
        if isinstance(e, USER_ERRORS):
            return str(e)
        message = task_error_message(e) or _external_fault(e)
        if message:
            return message
    return None


def verbose() -> bool:
    return os.environ.get("WIKIGAME_VERBOSE", "") not in ("", "0")


# The library's log4j2 profile (package data), and the one Spark falls back on without a profile.
LOG4J2_PROPERTIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
SPARK_DEFAULT_PROFILE = "org/apache/spark/log4j2-defaults.properties"

# Loggers that print a task's whole stack trace when it fails (local mode runs executors in the driver).
_TASK_TRACE_LOGGERS = (
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.scheduler.TaskSchedulerImpl",
    "org.apache.spark.api.python.PythonRunner",
    "org.apache.spark.sql.execution.datasources.FileFormatWriter",
    "org.apache.spark.internal.io.SparkHadoopWriter",
    "org.apache.spark.util.Utils",
)


def session(app_name: str):
    """The job's SparkSession, with task failure traces kept off the console unless verbose: a
    user's fault then ends in one ``error:`` line, not hundreds of lines of traces. On a cluster,
    its executors' Python is checked first (:func:`~wikigame_spark.preflight.check_executors`)."""
    from wikigame_spark.session import build_session

    # Spark's progress bar redraws one line with carriage returns: in a log file (not a terminal)
    # it is one endless line that the next message would be glued to.
    quiet = {} if sys.stderr.isatty() else {"spark.ui.showConsoleProgress": "false"}
    spark = build_session(app_name, conf=quiet)
    if not verbose():
        jvm = spark.sparkContext._jvm
        log4j = jvm.org.apache.logging.log4j
        # Spark on its built-in profile (an installed wheel's: no log4j2.properties in its conf) logs
        # every INFO line, thousands per job, and notes a user cannot act on: the library's profile,
        # the one `make install` gives the venv's Spark, replaces it. A configuration of one's own stays.
        source = log4j.LogManager.getContext(False).getConfiguration().getConfigurationSource()
        if str(source.getLocation()).endswith(SPARK_DEFAULT_PROFILE):
            log4j.core.config.Configurator.reconfigure(jvm.java.io.File(LOG4J2_PROPERTIES).toURI())
        for name in _TASK_TRACE_LOGGERS:
            log4j.core.config.Configurator.setLevel(name, log4j.Level.OFF)
    preflight.check_executors(spark)
    return spark


def clear_progress_line() -> None:
    """On a terminal, erase what Spark's progress bar left on the current line, so that the next
    line (a summary, an ``error:``) starts at its beginning."""
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
    sys.stderr.flush()


class StageError(RuntimeError):
    """An unexpected failure inside a job's stage, named by job, stage and input (cause chained)."""


# Reported bad input, by class name (so that errors raised inside Spark tasks match too).
_BAD_INPUT = {
    "ConfigError",
    "DumpError",
    "SnapshotError",
    "StorageError",
    "EmptyGraphError",
    "OutputExistsError",
    "FileNotFoundError",
}


@contextlib.contextmanager
def stage(job: str, name: str, inputs: str | list[str]) -> Iterator[None]:
    """Name the job, the stage and the input in any failure inside the block that is not a
    reported bad input (a bug, or a library's bare ``KeyError``/``ValueError``)."""
    try:
        yield
    except Exception as e:
        found = task_error_message(e)
        bad_input = {c.__name__ for c in type(e).__mro__} & _BAD_INPUT or (
            found and found.split(":", 1)[0] in _BAD_INPUT
        )
        if bad_input or any(_external_fault(c) for c in _chain(e)):
            raise
        where = inputs if isinstance(inputs, str) else ", ".join(inputs)
        raise StageError(f"{job}: stage {name} failed on {where}: {found or f'{type(e).__name__}: {e}'}") from e


def _stop_spark() -> None:
    from pyspark.sql import SparkSession

    with contextlib.suppress(Exception):  # a JVM that is gone (the fault reported) answers nothing
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()


def run(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> None:
    """Run a job's ``main`` and exit with its status: a user's fault exits 2 with one last line
    ``error: …``; a bug shows its traceback (status 1). ``--verbose`` anywhere in the arguments
    keeps Spark's task traces on the console and prints the fault's traceback too."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--verbose" in args:
        args = [a for a in args if a != "--verbose"]
        os.environ["WIKIGAME_VERBOSE"] = "1"
    try:
        code = main(args)
    except StageError as e:
        traceback.print_exception(e.__cause__, file=sys.stderr)
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    except Exception as e:  # errors raised on executors arrive wrapped by Spark/Py4J
        message = user_fault(e)
        if message is None:
            raise
        if verbose():
            traceback.print_exception(e, file=sys.stderr)
        logging.getLogger("py4j").setLevel(logging.WARNING)  # its "closing down" at exit would follow the line
        if argv is None:  # the job is the program: Spark's shutdown must not print after the line
            _stop_spark()
        clear_progress_line()
        print(f"error: {' '.join(message.split())}", file=sys.stderr, flush=True)
        sys.exit(2)
    sys.exit(code or 0)
