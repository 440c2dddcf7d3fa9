"""Rows a stage leaves out, counted by reason: one counter for every accounting.

Wikipedia's pages, redirects and links, OpenAlex's records, sampling's discarded draws and the
human import's left-out rows all say *why* something is missing in the same way (datatrove counts
``dropped_<reason>`` in its filters' base class): a :class:`Drops` the stage fills, written into
the manifest by :meth:`Drops.as_dict` and shown to people by :meth:`Drops.summary`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


class Drops(Counter):
    """Rows left out, by reason. A reason set to 0 explicitly is one the stage always reports."""

    def as_dict(self, order: Iterable[str] | None = None, zeros: bool = True) -> dict[str, int]:
        """For a manifest: plain ints, in ``order`` (the stage's declared reasons) or by name.

        A reason counted but not declared is an error, never left out of the manifest."""
        keys = sorted(self) if order is None else [r for r in order if r in self]
        undeclared = set(self) - set(keys)
        if undeclared:
            raise ValueError(f"drop reasons {sorted(undeclared)} are not among the declared {list(order or [])}")
        return {k: int(self[k]) for k in keys if zeros or self[k]}

    def summary(self) -> str:
        """``malformed_json 3, wrong_type 1``: reasons by count, largest first (for messages)."""
        items = sorted(((k, v) for k, v in self.items() if v), key=lambda kv: (-kv[1], kv[0]))
        return ", ".join(f"{k} {v:,}" for k, v in items) or "none"
