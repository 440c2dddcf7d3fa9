"""docs/settings.md is what the job specs declare (regenerate: python -m wikigame_spark.devtools.settings_doc)."""

import os

from tests.conftest import ROOT
from wikigame_spark.devtools.settings_doc import page


def test_the_settings_page_is_made_from_the_specs():
    with open(os.path.join(ROOT, "docs", "settings.md"), encoding="utf-8") as f:
        assert f.read() == page(), (
            "docs/settings.md is stale: python -m wikigame_spark.devtools.settings_doc > docs/settings.md"
        )
