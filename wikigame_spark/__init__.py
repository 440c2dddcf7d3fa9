"""wikigame-spark: the Wikipedia Game on Spark, from dumps to graphs to games to reports."""

import os
from importlib.metadata import PackageNotFoundError, version

try:  # setup.py holds the one version number; an installed package (wheel or editable) carries it
    __version__ = version("wikigame-spark")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

# The source checkout the package runs from (an editable install, the tests), else None: an
# installed wheel's parent folder is site-packages, no place for the project's files or git.
_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHECKOUT_DIR: str | None = _root if os.path.isfile(os.path.join(_root, "setup.py")) else None
