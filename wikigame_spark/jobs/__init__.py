"""The jobs as specs and bodies (:mod:`wikigame_spark.runner`): one module per job, each a ``JOB``.

``jobs/<name>.py`` runs ``JOB`` under ``spark-submit``; notebooks and tests call ``JOB.main([...])``.
"""

from __future__ import annotations

import importlib
import pkgutil


def specs() -> list:
    """Every job's spec, by name: each module of this package that has a ``JOB`` (a new job is
    found here, by the settings page and by the tests, without a list to extend)."""
    modules = (importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__))
    return sorted((m.JOB for m in modules if hasattr(m, "JOB")), key=lambda job: job.name)
