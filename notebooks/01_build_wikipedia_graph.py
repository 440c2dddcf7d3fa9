# Databricks notebook source
# MAGIC %md
# MAGIC # 01 · Build a Wikipedia graph
# MAGIC A `pages-articles` dump → `nodes`, `edges`, `redirects` (Parquet) and `manifest.json`, by
# MAGIC `jobs/build_wikipedia.py`. On Databricks set the widgets and run all; locally
# MAGIC `python notebooks/01_build_wikipedia_graph.py [--name=value …]` runs it on the real Latgalian dump.

# COMMAND ----------

import os
import sys

try:  # run as a script: the repository is this folder's parent
    ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
except NameError:  # on Databricks the working directory is the notebook's folder
    ROOT = os.path.dirname(os.getcwd())
sys.path.insert(0, ROOT)
ON_DATABRICKS = "dbutils" in globals()
if ON_DATABRICKS:
    os.environ.setdefault("MLFLOW_TRACKING_URI", "databricks")
else:
    os.environ.setdefault("SPARK_CONF_DIR", os.path.join(ROOT, "conf"))
ARGS = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
DATA = os.path.join(os.path.dirname(ROOT), "shared", "data")  # local defaults: the real small data
OUT = os.path.join(ROOT, "out", "notebooks")
VOLUME = "/Volumes/main/default/wikigame"  # Databricks defaults: a Unity Catalog volume


def widget(name: str, default: str, on_databricks: str | None = None) -> str:
    """A text widget on Databricks; elsewhere ``--name=value`` on the command line, else the default."""
    if ON_DATABRICKS:
        dbutils.widgets.text(name, default if on_databricks is None else on_databricks)  # noqa: F821
        return dbutils.widgets.get(name)  # noqa: F821
    return ARGS.get(name, default)


def show(table) -> None:
    """Databricks' ``display``; a printout elsewhere."""
    if ON_DATABRICKS:
        display(table)  # noqa: F821
    elif hasattr(table, "show"):
        table.show(20, truncate=60)
    else:
        print(table.to_string() if hasattr(table, "to_string") else table)


# COMMAND ----------

data = widget("data", DATA, f"{VOLUME}/data")
out = widget("out", OUT, f"{VOLUME}/out")
dump = widget("dump", f"{data}/wikipedia/ltgwiki-20170901-pages-articles.xml.bz2")
graph = widget("graph", f"{out}/ltgwiki")
overwrite = widget("overwrite", "true") == "true"

# COMMAND ----------

from jobs import build_wikipedia  # noqa: E402

build_wikipedia.main(["--input", dump, "--output", graph] + (["--overwrite"] if overwrite else []))

# COMMAND ----------

import pandas as pd  # noqa: E402

from wikigame_spark import io  # noqa: E402
from wikigame_spark.schemas import NODES  # noqa: E402
from wikigame_spark.session import build_session  # noqa: E402

spark = build_session("notebooks")
manifest = io.read_manifest(spark, graph)
counts = {k: v for k, v in manifest["counts"].items() if not isinstance(v, dict)}
show(pd.DataFrame([{"graph": graph, "dbname": manifest["dbname"], **counts}]))
show(io.read_table(spark, f"{graph}/nodes", NODES).select("id", "title", "summary").limit(10))
