# Databricks notebook source
# MAGIC %md
# MAGIC # 06 · Training data
# MAGIC A seeded train/eval split of games whose targets never meet (`jobs/sample_games.py
# MAGIC --eval-games`), then decision records for fine-tuning a navigating agent
# MAGIC (`jobs/decision_records.py`): every step of an expert's shortest route — and of any play runs
# MAGIC you name — with every offered link's exact distance to the target, as Parquet, SFT
# MAGIC conversations (the paper's Listing 5 with an optimal answer) and preference pairs (JSON lines).
# MAGIC Locally the default graph is the one notebook 01 builds.
# MAGIC
# MAGIC Cluster: Databricks Runtime 17.x (Spark 4.0, Scala 2.13; 17.3 LTS), the wheel needing PySpark
# MAGIC 4.0 or 4.1. Libraries: the wikigame-spark wheel, by the next cell (`make wheel` writes it and
# MAGIC its `requirements*.txt` in `dist/`: upload those to the volume), and GraphFrames as a Maven
# MAGIC library of the cluster, as notebook 03 says.

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
train_games = widget("train_games", "200", "50000")
eval_games = widget("eval_games", "50", "1000")
seed = widget("seed", "0")
runs = widget("runs", "")  # comma-separated MLflow run ids of play runs on the train games
max_titles = widget("max_titles", "200")
experiment = widget("experiment", "notebooks", "/Shared/wikigame")

# COMMAND ----------

from wikigame_spark.jobs.decision_records import JOB as decision_records  # noqa: E402
from wikigame_spark.jobs.sample_games import JOB as sample_games  # noqa: E402

train = f"{graph}/train"
common = ["--graph", graph, "--seed", seed, "--experiment", experiment, "--overwrite"]
sample_games.main([*common, "--games", train_games, "--eval-games", eval_games, "--output", train])
argv = [*common, "--games-dir", train, "--max-titles", max_titles]
decision_records.main(argv + [f for r in runs.split(",") if r.strip() for f in ("--runs", r.strip())])

# COMMAND ----------

import pandas as pd  # noqa: E402

from wikigame_spark import manifests, parquet, storage  # noqa: E402
from wikigame_spark.jobs.decision_records import DECISIONS_TABLE, SFT_FOLDER  # noqa: E402
from wikigame_spark.session import build_session  # noqa: E402
from wikigame_spark.training.chat import SFT  # noqa: E402
from wikigame_spark.training.decisions import DECISIONS  # noqa: E402

spark = build_session("notebooks")
made = storage.folder(f"{train}_decisions", spark)
manifest = manifests.read_manifest(made)
show(pd.DataFrame([{"player": p, **c} for p, c in manifest["by_player"].items()]))
columns = ["game_id", "player", "step", "current_title", "target_title", "best_distance", "move_title", "reward"]
show(parquet.read_table(spark, made.sub(DECISIONS_TABLE), DECISIONS).select(*columns).limit(10))
show(parquet.read_json_lines(spark, made.sub(SFT_FOLDER), SFT).limit(3))
