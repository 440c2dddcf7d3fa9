"""PySpark's worker daemon, quiet about the workers of tasks Spark killed (``spark.python.daemon.module``).

When one task of a stage fails (a corrupt dump block, a server that stopped answering), Spark kills
its sibling tasks and closes their workers' sockets; each forked worker then ends on an ``EOFError``
or ``BrokenPipeError`` that PySpark's daemon prints with its whole trace, above the job's one
``error:`` line. This daemon is PySpark's own, but a worker's end on a closed socket is not printed;
every other exception still is. conf/spark-defaults.conf names it for the project's local Spark.
"""

from __future__ import annotations

import sys
import traceback

from pyspark import daemon

_CLOSED = (EOFError, BrokenPipeError, ConnectionResetError)
_print_exc = traceback.print_exc


def _print_unless_closed(*args, **kwargs) -> None:
    if not isinstance(sys.exc_info()[1], _CLOSED):
        _print_exc(*args, **kwargs)


if __name__ == "__main__":
    traceback.print_exc = _print_unless_closed  # this process is the daemon and its forked workers only
    daemon.manager()
