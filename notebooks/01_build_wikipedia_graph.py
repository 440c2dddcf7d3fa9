# Databricks notebook source
# MAGIC %md
# MAGIC # 01 · Build a Wikipedia graph
# MAGIC A `pages-articles` dump → `nodes`, `edges`, `redirects` (Parquet) and `manifest.json`, by
# MAGIC `jobs/build_wikipedia.py`. On Databricks set the widgets and run all; locally
# MAGIC `python notebooks/01_build_wikipedia_graph.py [--name=value …]` runs it on the real Latgalian dump.
# MAGIC
# MAGIC Cluster: Databricks Runtime 17.x (Spark 4.0, Scala 2.13; 17.3 LTS), the wheel needing PySpark
# MAGIC 4.0 or 4.1. Libraries: the wikigame-spark wheel, by the next cell (`make wheel` writes it and
# MAGIC its `requirements*.txt` in `dist/`: upload those to the volume), nothing else.

# COMMAND ----------

# MAGIC %pip install -r /Volumes/main/default/wikigame/requirements.txt

# COMMAND ----------

if "dbutils" in globals():  # on Databricks: Python restarts to import the wheel just installed
    dbutils.library.restartPython()  # noqa: F821

# COMMAND ----------

from wikigame_spark.notebook import VOLUME, Notebook

nb = Notebook(globals())
ON_DATABRICKS, DATA, OUT, widget, show = nb.on_databricks, nb.data, nb.out, nb.widget, nb.show

# COMMAND ----------

data = widget("data", DATA, f"{VOLUME}/data")
out = widget("out", OUT, f"{VOLUME}/out")
dump = widget("dump", f"{data}/wikipedia/ltgwiki-20170901-pages-articles.xml.bz2")
graph = widget("graph", f"{out}/ltgwiki")
overwrite = widget("overwrite", "true") == "true"

# COMMAND ----------

from wikigame_spark.jobs.build_wikipedia import JOB as build_wikipedia  # noqa: E402

build_wikipedia.main(["--input", dump, "--output", graph] + (["--overwrite"] if overwrite else []))

# COMMAND ----------

import pandas as pd  # noqa: E402

from wikigame_spark import manifests, parquet, storage  # noqa: E402
from wikigame_spark.layout import NODES_TABLE  # noqa: E402
from wikigame_spark.schemas import NODES  # noqa: E402
from wikigame_spark.session import build_session  # noqa: E402

spark = build_session("notebooks")
folder = storage.folder(graph, spark)
manifest = manifests.read_manifest(folder)
counts = {k: v for k, v in manifest["counts"].items() if not isinstance(v, dict)}
show(pd.DataFrame([{"graph": graph, "dbname": manifest["dbname"], **counts}]))
show(parquet.read_table(spark, folder.sub(NODES_TABLE), NODES).select("id", "title", "summary").limit(10))
