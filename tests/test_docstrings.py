"""Every name a docstring of the library cites exists: a Sphinx role (``:func:`x```) names a
function, class or module that is defined or importable, and a name in double backticks is one the
code uses (a definition, an argument, an attribute, an import, a string's word, a builtin)."""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "wikigame_spark"
ROLE = re.compile(r":(func|class|meth|mod|data|attr|exc):`~?([^`<>]+?)`")
LITERAL = re.compile(r"``([^`]+)``")
NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
# Words in double backticks that are not the code's names: HTTP headers, a wiki's words, settings
# of other programs, folder and class names of other codebases.
NOT_NAMES = {
    "Origin", "Referer", "Host", "Kategoreja", "thumb", "DIR", "BZip2Codec", "DataFolder", "_temporary",
    "spark.executor.resource.gpu.amount", "spark.task.resource.gpu.amount", "pkg.mod.Name",
}  # fmt: skip
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("wikigame_spark", *path.relative_to(ROOT).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return out


MODULES = _modules()


def _docstrings(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, *DEFINITIONS)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield node, doc


def _names() -> tuple[set[str], set[str]]:
    """(functions and classes defined in the library, every name the code uses)."""
    defined, used = set(), set(dir(builtins))
    for tree in MODULES.values():
        docs = {doc for _, doc in _docstrings(tree)}
        for node in ast.walk(tree):
            if isinstance(node, DEFINITIONS):
                defined.add(node.name)
            elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg):
                used.add(node.arg)
            elif isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.alias):
                used.update((node.asname or node.name).split("."), node.name.split("."))
            elif isinstance(node, ast.ImportFrom) and node.module:
                used.update(node.module.split("."))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value not in docs:
                used.update(re.findall(r"[A-Za-z_]\w*", node.value))
        classes = [c for c in tree.body if isinstance(c, ast.ClassDef)]
        for node in [*tree.body, *(n for c in classes for n in c.body)]:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            used.update(n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name))
    return defined, used | defined


DEFINED, USED = _names()


def _importable(dotted: str) -> bool:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def _cited_name_exists(role: str | None, name: str) -> bool:
    name = name.strip().removesuffix("()")
    if any(m == name or m.endswith(f".{name}") for m in MODULES):  # a module, by its last parts too
        return True
    if role == "mod":
        return _importable(name)
    if role in ("func", "meth", "class", "exc"):
        return name.rsplit(".", 1)[-1] in DEFINED or hasattr(builtins, name) or _importable(name)
    return all(part in USED for part in name.split(".")) or _importable(name)


def _citations():
    for module, tree in MODULES.items():
        for node, doc in _docstrings(tree):
            for role, name in ROLE.findall(doc):
                yield module, getattr(node, "name", ""), role, name
            for name in LITERAL.findall(doc):
                if NAME.match(name.removesuffix("()")) and name not in NOT_NAMES:
                    yield module, getattr(node, "name", ""), None, name


def test_docstrings_cite_names_that_exist():
    cited = list(_citations())
    assert len(cited) > 500
    missing = [
        f"{m}.{where or '<module>'}: {name}" for m, where, role, name in cited if not _cited_name_exists(role, name)
    ]
    assert missing == [], "\n".join(missing)


@pytest.mark.parametrize(
    "role, name, exists",
    [
        ("func", "write_chunk", True),
        ("func", "started", False),
        ("class", "~wikigame_spark.layout.PlaysDir", True),
        ("mod", "wikigame_spark.ingest.wikitext", True),
        (None, "summary_chars", True),
        (None, "PLAY_OPTIONS", False),
        (None, "mwparserfromhell.parse", True),
    ],
)
def test_the_check_tells_names_that_exist(role, name, exists):
    assert _cited_name_exists(role, name.lstrip("~")) is exists
