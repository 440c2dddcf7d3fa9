"""What the Databricks notebooks share: widgets, ``display``, and where data and outputs live.

A notebook runs on Databricks (widgets, ``display``, a Unity Catalog volume, the workspace's MLflow)
or as a plain script here (``--name=value`` arguments, printouts, the real small data beside the
repository). The notebook passes its ``globals()``, where Databricks puts ``dbutils`` and ``display``
(and a script its ``__file__``). ``wikigame_spark`` is importable in both: installed in the project's
``.venv``, and on a cluster as the wheel the README says to install.
"""

from __future__ import annotations

import os
import sys

VOLUME = "/Volumes/main/default/wikigame"  # Databricks defaults: a Unity Catalog volume


class Notebook:
    def __init__(self, namespace: dict):
        try:  # run as a script: the repository is the notebook folder's parent
            root = os.path.dirname(os.path.dirname(os.path.abspath(namespace["__file__"])))
        except KeyError:  # on Databricks the working directory is the notebook's folder
            root = os.path.dirname(os.getcwd())
        self.root = root  # the repository (a Databricks Git folder on Databricks)
        self.dbutils = namespace.get("dbutils")
        self.display = namespace.get("display")
        self.on_databricks = self.dbutils is not None
        self.args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
        self.data = os.path.join(os.path.dirname(root), "shared", "data")  # local: the real small data
        self.out = os.path.join(os.getcwd(), "out", "notebooks")  # local: beside the user, as jobs write
        if self.on_databricks:
            os.environ.setdefault("MLFLOW_TRACKING_URI", "databricks")

    def widget(self, name: str, default: str, on_databricks: str | None = None) -> str:
        """A text widget on Databricks; elsewhere ``--name=value`` on the command line, else the default."""
        if self.on_databricks:
            self.dbutils.widgets.text(name, default if on_databricks is None else on_databricks)
            return self.dbutils.widgets.get(name)
        return self.args.get(name, default)

    def show(self, table) -> None:
        """Databricks' ``display``; a printout elsewhere."""
        if self.on_databricks:
            self.display(table)
        elif hasattr(table, "show"):
            table.show(20, truncate=60)
        else:
            print(table.to_string() if hasattr(table, "to_string") else table)
