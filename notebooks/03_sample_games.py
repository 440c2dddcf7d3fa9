# Databricks notebook source
# MAGIC %md
# MAGIC # 03 · Graph statistics and games
# MAGIC The paper's Table 1 row and reachability curve (`jobs/graph_stats.py`), then uniformly random
# MAGIC reachable (source, target) pairs with exact shortest-path lengths (`jobs/sample_games.py`).
# MAGIC Locally the default graph is the one notebook 01 builds.

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

out = widget("out", OUT, f"{VOLUME}/out")
graph = widget("graph", f"{out}/ltgwiki")
games = widget("games", "100", "10000")
seed = widget("seed", "0")
target_language = widget("target_language", "")  # e.g. en for OpenAlex graphs
stats = widget("stats", "true") == "true"
pairs = widget("pairs", "1000")
experiment = widget("experiment", "notebooks", "/Shared/wikigame")

# COMMAND ----------

from jobs import graph_stats, sample_games  # noqa: E402

if stats:
    graph_stats.main(["--graph", graph, "--pairs", pairs, "--seed", seed, "--experiment", experiment, "--overwrite"])
argv = ["--graph", graph, "--games", games, "--seed", seed, "--experiment", experiment, "--overwrite"]
sample_games.main(argv + (["--target-language", target_language] if target_language else []))

# COMMAND ----------

import pandas as pd  # noqa: E402

from wikigame_spark import io  # noqa: E402
from wikigame_spark.schemas import GAMES  # noqa: E402
from wikigame_spark.session import build_session  # noqa: E402

spark = build_session("notebooks")
if stats:
    show(pd.DataFrame([io.read_json(spark, f"{graph}/stats/stats.json")["table1"]]))
manifest = io.read_manifest(spark, f"{graph}/games")
show(pd.DataFrame([{k: v for k, v in manifest["counts"].items() if not isinstance(v, dict)}]))
show(io.read_table(spark, f"{graph}/games/games", GAMES).orderBy("game_id").limit(10))
