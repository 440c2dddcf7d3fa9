"""A Python that cannot import torch: this one, behind a ``sitecustomize`` that makes importing torch,
sentence-transformers or transformers fail as where they are not installed.

It stands for the executors of a lean environment (``make pack``) where a test or a benchmark runs
in local mode: ``PYSPARK_PYTHON`` set to :func:`torchless_python`'s wrapper. Each process it starts
leaves an empty file named by its PID in the folder ``TORCHLESS_MARKS`` names, so a caller can see
that the executors ran it.
"""

from __future__ import annotations

import os
import sys

REFUSED = ("torch", "sentence_transformers", "transformers")
MARKS = "TORCHLESS_MARKS"
SITECUSTOMIZE = f"""
import importlib.abc, importlib.machinery, os, sys


class _Refused(importlib.abc.Loader):
    def create_module(self, spec):
        raise ModuleNotFoundError(f"No module named {{spec.name!r}}", name=spec.name)

    def exec_module(self, module):
        pass


class _NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {REFUSED!r}:
            return importlib.machinery.ModuleSpec(name, _Refused())
        return None


sys.meta_path.insert(0, _NoTorch())
if os.environ.get({MARKS!r}):
    open(os.path.join(os.environ[{MARKS!r}], str(os.getpid())), "w").close()
"""


def torchless_python(folder: str) -> str:
    """The wrapper's path, made in ``folder``: it runs this Python with the refusing ``sitecustomize`` first."""
    site = os.path.join(folder, "site")
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, "sitecustomize.py"), "w", encoding="utf-8") as f:
        f.write(SITECUSTOMIZE)
    python = os.path.join(folder, "python")
    with open(python, "w", encoding="utf-8") as f:
        f.write(f'#!/bin/sh\nPYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec {sys.executable} "$@"\n')
    os.chmod(python, 0o755)
    return python
