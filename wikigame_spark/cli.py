"""What every job's entry point shares: argument helpers and error reporting.

A job fails with one clear line naming what is wrong (a file, a position, a flag) rather than a
JVM stack trace; errors raised inside Spark tasks are unwrapped to their Python message.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable

from wikigame_spark.config import ConfigError
from wikigame_spark.ingest.dumps import DumpError
from wikigame_spark.io import OutputExistsError

log = logging.getLogger(__name__)

USER_ERRORS = (ConfigError, DumpError, OutputExistsError, FileNotFoundError, ValueError)
_TASK_ERROR = re.compile(r"^\w*(?:Error|Exception): .*$", re.M)


def task_error_message(exc: BaseException) -> str | None:
    """The last Python exception line inside a Spark task failure, if any."""
    found = _TASK_ERROR.findall(str(exc))
    named = [line for line in found if line.split(":", 1)[0] in {e.__name__ for e in USER_ERRORS} | {"DumpError"}]
    return (named or found or [None])[-1]


def run(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> None:
    """Run a job's ``main`` and exit with its status; user errors exit 2 with one line."""
    try:
        code = main(argv)
    except USER_ERRORS as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except Exception as e:  # errors raised on executors arrive wrapped by Spark/Py4J
        message = task_error_message(e)
        if message is None:
            raise
        log.debug("task failure", exc_info=True)
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)
    sys.exit(code or 0)
