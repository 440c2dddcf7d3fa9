# Databricks notebook source
# MAGIC %md
# MAGIC # 03 · Graph statistics and games
# MAGIC The paper's Table 1 row and reachability curve (`jobs/graph_stats.py`), then uniformly random
# MAGIC reachable (source, target) pairs with exact shortest-path lengths (`jobs/sample_games.py`).
# MAGIC Locally the default graph is the one notebook 01 builds.
# MAGIC
# MAGIC Cluster: Databricks Runtime 17.x (Spark 4.0, Scala 2.13; 17.3 LTS), the wheel needing PySpark
# MAGIC 4.0 or 4.1. Libraries: the wikigame-spark wheel, by the next cell (`make wheel` writes it and
# MAGIC its `requirements*.txt` in `dist/`: upload those to the volume), and GraphFrames as a Maven
# MAGIC library of the cluster: Compute → the cluster → Libraries → Install new → Maven, coordinates
# MAGIC `io.graphframes:graphframes-spark4_2.13:0.11.0` (its Python side comes with the wheel).

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

out = widget("out", OUT, f"{VOLUME}/out")
graph = widget("graph", f"{out}/ltgwiki")
games = widget("games", "100", "10000")
seed = widget("seed", "0")
target_language = widget("target_language", "")  # e.g. en for OpenAlex graphs
stats = widget("stats", "true") == "true"
pairs = widget("pairs", "1000")
experiment = widget("experiment", "notebooks", "/Shared/wikigame")

# COMMAND ----------

from wikigame_spark.jobs.graph_stats import JOB as graph_stats  # noqa: E402
from wikigame_spark.jobs.sample_games import JOB as sample_games  # noqa: E402

if stats:
    graph_stats.main(["--graph", graph, "--pairs", pairs, "--seed", seed, "--experiment", experiment, "--overwrite"])
argv = ["--graph", graph, "--games", games, "--seed", seed, "--experiment", experiment, "--overwrite"]
sample_games.main(argv + (["--target-language", target_language] if target_language else []))

# COMMAND ----------

import pandas as pd  # noqa: E402

from wikigame_spark import manifests, parquet, storage  # noqa: E402
from wikigame_spark.layout import GAMES_FOLDER, GAMES_TABLE  # noqa: E402
from wikigame_spark.schemas import GAMES  # noqa: E402
from wikigame_spark.session import build_session  # noqa: E402

spark = build_session("notebooks")
folder = storage.folder(graph, spark)
if stats:
    show(pd.DataFrame([folder.read_json("stats/stats.json")["table1"]]))
games = folder.sub(GAMES_FOLDER)
manifest = manifests.read_manifest(games)
show(pd.DataFrame([{k: v for k, v in manifest["counts"].items() if not isinstance(v, dict)}]))
show(parquet.read_table(spark, games.sub(GAMES_TABLE), GAMES).orderBy("game_id").limit(10))
