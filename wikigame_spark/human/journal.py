"""The run's journal: one JSON line per event, on disk before the player sees the answer.

Each line is flushed and fsynced before :meth:`Journal.append` returns, so a crash or SIGKILL
loses no answered move. A last line cut short by a crash mid-write was never answered: reading
skips it with a warning, and reopening the journal cuts it off before appending.
"""

from __future__ import annotations

import json
import logging
import os

log = logging.getLogger(__name__)


class JournalError(ValueError):
    """A journal line other than the last one cannot be read."""


def read_events(path: str) -> list[dict]:
    """Every complete event of the journal at ``path`` (none when it does not exist)."""
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    events = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except ValueError as e:
            if number == len(lines):  # the last line, cut short by a crash: never answered
                log.warning("%s: skipping the unfinished last line %d", path, number)
                continue
            raise JournalError(f"{path}:{number}: not a JSON event ({e})") from e
    return events


class Journal:
    """Appends events to ``path``; the caller serialises calls (one lock for state and journal)."""

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self.path = path
        _drop_unfinished_line(path)
        self._file = open(path, "ab")  # noqa: SIM115 -- open for the run's lifetime

    def append(self, event: dict) -> None:
        self._file.write(json.dumps(event, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def _drop_unfinished_line(path: str) -> None:
    """Cut a last line that a crash left without its newline (it was never answered)."""
    if not os.path.exists(path):
        return
    with open(path, "r+b") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)
