"""Development tools that tests and benchmarks share; no job runs them.

``identity`` runs the Latgalian pipeline of a checkout and compares two such runs (the check that a
refactor changed no output); ``local_server`` serves a local GGUF model over an OpenAI-compatible
API for the LLM agents' tests, benchmarks and the demo; ``faulty_server`` is a deliberately faulty
one for the error paths; ``games``, ``dumpgen`` and ``openalexgen`` generate games tables, dumps and
OpenAlex snapshots in the real schema for tests and benchmarks, and ``openalexcheck`` computes
independently what ``build_openalex`` must make of a snapshot.
"""

import os

from wikigame_spark.session import PROJECT_DIR

# The real dumps and snapshot files (../shared/data beside the project, or $WIKIGAME_DATA).
DATA = os.environ.get("WIKIGAME_DATA", os.path.join(os.path.dirname(PROJECT_DIR), "shared", "data"))
