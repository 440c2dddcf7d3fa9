"""The library's architecture as a test: each layer imports only from below itself, no module
sits in an import circle, and the outcome names are defined in one module.

Pure Python: every module under ``wikigame_spark/`` is parsed with :mod:`ast` (imports at the top
and inside functions alike, since both load the module they name) and nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "wikigame_spark"
LIBRARY = "wikigame_spark"

# jobs → evaluation/human → play → agents/ingest → graph → storage/outputs/tracking → config/schemas/layout.
# A package may import its own layer or any below it. A new top-level module or package has to be
# placed here, so its layer is a decision, not an accident.
RANK = {
    # the shared vocabulary and the pure helpers every layer may use
    LIBRARY: 0,  # the package itself (its version)
    "config": 0,
    "schemas": 0,
    "protocols": 0,
    "layout": 0,
    "outcomes": 0,
    "summary": 0,
    "document": 0,
    "drops": 0,
    "full_size": 0,
    # storage, opened inputs, tracking, the Spark session and the checks made with them
    "parquet": 1,
    "manifests": 1,
    "outputs": 1,
    "stores": 1,
    "storage": 1,
    "contents": 1,
    "handles": 1,
    "tracking": 1,
    "session": 1,
    "quiet_daemon": 1,  # PySpark's worker daemon, as the session's Spark runs it
    "preflight": 1,
    "progress": 1,
    "graph": 2,
    "agents": 3,
    "ingest": 3,
    "play": 4,
    "evaluation": 5,
    "human": 5,
    "training": 5,
    # the jobs, what runs them, and what the notebooks, tests and benchmarks share
    "jobs": 6,
    "runner": 6,
    "cli": 6,
    "notebook": 6,
    "devtools": 6,
}

# Today's violations in modules this change does not own; whoever fixes one removes its entry
# (a fixed violation left here fails the test). Each is an import edge (importer, imported).
KNOWN: set[tuple[str, str]] = set()

# Outcome names defined outside outcomes.py, in modules this change does not own.
KNOWN_OUTCOME_DEFINITIONS = {
    # a parsed reply's kind spelled as the outcome it leads to
    ("wikigame_spark.agents.prompts", "NO_ANSWER_REPLY"),
}


def _modules() -> dict[str, Path]:
    """Module name → file, for every module of the library."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = (LIBRARY, *path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _known_module(name: str) -> str | None:
    """The library module an import of ``name`` loads: ``name`` or its nearest module ancestor."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, path: Path) -> set[str]:
    """The library modules ``module`` imports, anywhere in its body."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(_known_module(a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                found.add(sub if sub in MODULES else _known_module(source))
    found.discard(None)
    found.discard(module)
    return found


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else LIBRARY


def _upward(importer: str, imported: str) -> bool:
    return RANK[_package(importer)] < RANK[_package(imported)]


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        if m == goal:
            return True
        if m not in seen:
            seen.add(m)
            todo.extend(graph[m])
    return False


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []

    def visit(m: str) -> None:
        index[m] = low[m] = len(index)
        stack.append(m)
        on_stack.add(m)
        for n in sorted(graph[m]):
            if n not in index:
                visit(n)
                low[m] = min(low[m], low[n])
            elif n in on_stack:
                low[m] = min(low[m], index[n])
        if low[m] == index[m]:
            component = []
            while True:
                n = stack.pop()
                on_stack.discard(n)
                component.append(n)
                if n == m:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for m in sorted(graph):
        if m not in index:
            visit(m)
    return out


def _without_known() -> dict[str, set[str]]:
    return {m: {n for n in targets if (m, n) not in KNOWN} for m, targets in GRAPH.items()}


def test_the_parser_sees_the_library():
    assert "wikigame_spark.play.engine" in MODULES and "wikigame_spark.agents" in MODULES
    assert "wikigame_spark.agents.base" in GRAPH["wikigame_spark.play.engine"]
    assert "wikigame_spark.graph.mapped" in GRAPH["wikigame_spark.play.engine"]  # from package import module
    assert "wikigame_spark.document" in GRAPH["wikigame_spark.graph.stats"]  # an import inside a function


def test_every_package_has_a_layer():
    unplaced = sorted({_package(m) for m in MODULES} - set(RANK))
    assert not unplaced, f"place these in tests/test_layers.py RANK (their layer): {unplaced}"


def test_no_upward_import():
    upward = sorted((m, n) for m, targets in _without_known().items() for n in targets if _upward(m, n))
    assert not upward, "imports from a layer above:\n" + "\n".join(
        f"  {m} ({_package(m)}) imports {n} ({_package(n)})" for m, n in upward
    )


def test_no_import_circle():
    circles = _circles(_without_known())
    assert not circles, "import circles:\n" + "\n".join("  " + " ↔ ".join(c) for c in circles)


def test_no_circle_between_packages():
    """Packages of one layer (agents and ingest, evaluation and human) may import each other one way."""
    packages: dict[str, set[str]] = {_package(m): set() for m in MODULES}
    for m, targets in _without_known().items():
        packages[_package(m)].update(_package(n) for n in targets if _package(n) != _package(m))
    circles = _circles(packages)
    assert not circles, "package circles:\n" + "\n".join("  " + " ↔ ".join(c) for c in circles)


def test_known_violations_are_current():
    stale = sorted(
        (m, n) for m, n in KNOWN if n not in GRAPH.get(m, ()) or not (_upward(m, n) or _reaches(GRAPH, n, m))
    )
    assert not stale, f"no longer violations, remove them from KNOWN in tests/test_layers.py: {stale}"


def _outcome_values() -> dict[str, str]:
    tree = ast.parse(MODULES["wikigame_spark.outcomes"].read_text(encoding="utf-8"))
    return {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def _outcome_definitions() -> set[tuple[str, str]]:
    """(module, name) of every module-level string constant spelled as an outcome, outside outcomes.py."""
    words = set(_outcome_values().values())
    found = set()
    for module, path in MODULES.items():
        if module == "wikigame_spark.outcomes":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value in words:
                found.update((module, t.id) for t in node.targets if isinstance(t, ast.Name))
    return found


def test_outcome_names_are_defined_once():
    assert {"SUCCESS", "GAVE_UP", "HALLUCINATION"} <= set(_outcome_values())
    found = _outcome_definitions()
    extra = sorted(found - KNOWN_OUTCOME_DEFINITIONS)
    assert not extra, f"outcome names defined outside wikigame_spark/outcomes.py (import them from it): {extra}"
    stale = sorted(KNOWN_OUTCOME_DEFINITIONS - found)
    assert not stale, f"no longer defined there, remove them from KNOWN_OUTCOME_DEFINITIONS: {stale}"


# Who reads and writes with Spark's reader and writer, and who reaches Hadoop's FileSystem: the
# modules that own them. Everyone else goes through a storage Folder and parquet's tables.
STORAGE_OWNERS = {
    "wikigame_spark.storage": "every path: Hadoop's FileSystem on the driver",
    "wikigame_spark.stores": "the input stores, and the S3 settings Hadoop reads",
    "wikigame_spark.parquet": "the project's tables, and a snapshot's Parquet files",
    "wikigame_spark.ingest.openalex_snapshot": "a snapshot's JSON lines files",
    "wikigame_spark.ingest.wikispeedia": "Wikispeedia's TSV files and plain-text articles",
}
_RAW_IO = ("spark.read", ".write.mode(", ".write.parquet(", "hadoopConfiguration(", "getFileSystem(", "hadoop.fs.Path(")


def test_reads_and_writes_go_through_their_owners():
    found = sorted(
        (m, needle)
        for m, path in MODULES.items()
        if m not in STORAGE_OWNERS
        for needle in _RAW_IO
        if needle in path.read_text(encoding="utf-8")
    )
    assert not found, (
        "raw Spark or Hadoop I/O outside "
        + ", ".join(STORAGE_OWNERS)
        + ":\n"
        + "\n".join(f"  {m}: {needle}" for m, needle in found)
    )
