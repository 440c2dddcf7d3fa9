"""Builds that would write nothing usable: an error the user sees, never an empty graph with rc 0.

An input whose every record is rejected, or that cannot hold what the graph needs (an OpenAlex
snapshot from before topics), is always an error; a graph that merely has no nodes is written
only when the user asks for it (``--allow-empty``).
"""

from __future__ import annotations


class EmptyGraphError(ValueError):
    """The build would produce an empty graph; the message says why and what to do."""


ALLOW_EMPTY_HINT = "pass --allow-empty to write it anyway"
