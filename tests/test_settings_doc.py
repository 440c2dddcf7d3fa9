"""docs/settings.md is what the job specs declare (regenerate: python -m wikigame_spark.devtools.settings_doc)."""

import os

from tests.conftest import ROOT
from wikigame_spark import jobs
from wikigame_spark.devtools.settings_doc import page


def test_the_settings_page_is_made_from_the_specs():
    with open(os.path.join(ROOT, "docs", "settings.md"), encoding="utf-8") as f:
        assert f.read() == page(), (
            "docs/settings.md is stale: python -m wikigame_spark.devtools.settings_doc > docs/settings.md"
        )


def test_every_job_is_found_with_its_entry_point():
    """A job is its library module and its entry point: the page lists it without a hand list."""
    found = [job.name for job in jobs.specs()]
    entry_points = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "jobs")) if f.endswith(".py") and f[0] != "_")
    assert found == entry_points and len(found) == 10
