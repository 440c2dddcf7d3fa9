# Databricks notebook source
# MAGIC %md
# MAGIC # 07 · People and agents on Wikispeedia's games
# MAGIC West & Leskovec's Wikispeedia (SNAP): its 4,604-article graph (`jobs/build_wikispeedia.py`),
# MAGIC the routes of the 76,193 games people played on it imported as plays of agent `human`
# MAGIC (`jobs/import_human_games.py --wikispeedia`), games made of the pairs people played
# MAGIC (`jobs/sample_games.py --human-plays`: a seeded sample, each pair with how many people played
# MAGIC and won it), agents playing exactly those pairs, and the report's comparison of people and
# MAGIC agents on the same pairs. `wikispeedia` is the folder SNAP's two archives unpack to
# MAGIC (`wikispeedia_paths-and-graph/`, `plaintext_articles/`), on the volume or anywhere Spark reads.
# MAGIC
# MAGIC Cluster: Databricks Runtime 17.x (Spark 4.0, Scala 2.13; 17.3 LTS), the wheel needing PySpark
# MAGIC 4.0 or 4.1. Libraries: the wikigame-spark wheel, by the next cell (`make wheel` writes it and
# MAGIC its `requirements*.txt` in `dist/`: upload those to the volume), and GraphFrames as a Maven
# MAGIC library of the cluster (`io.graphframes:graphframes-spark4_2.13:0.11.0`). The embedding agent
# MAGIC needs the embedding extra: play it with notebook 04 on the games folder this one writes.

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
wikispeedia = widget("wikispeedia", f"{DATA}/wikispeedia", f"{VOLUME}/wikispeedia")
graph = widget("graph", f"{out}/wikispeedia")
games = widget("games", "200")  # pairs people played, a seeded sample; 0 = all of them
seed = widget("seed", "0")
won_only = widget("won_only", "false") == "true"  # only the pairs someone finished
agents = [a for a in widget("agents", "tfidf,random").split(",") if a]
experiment = widget("experiment", "notebooks", "/Shared/wikigame")
report_dir = widget("report", f"{out}/report-wikispeedia")

# COMMAND ----------

from wikigame_spark.jobs.build_wikispeedia import JOB as build  # noqa: E402
from wikigame_spark.jobs.import_human_games import JOB as import_people  # noqa: E402
from wikigame_spark.jobs.play_games import JOB as play  # noqa: E402
from wikigame_spark.jobs.report import JOB as report  # noqa: E402
from wikigame_spark.jobs.sample_games import JOB as sample  # noqa: E402

people = f"{graph}/plays/human"
build.main(["--input", wikispeedia, "--output", graph, "--overwrite"])
import_people.main(["--graph", graph, "--wikispeedia", wikispeedia, "--output", people, "--experiment", experiment,
                    "--overwrite"])  # fmt: skip
sample.main(["--graph", graph, "--human-plays", people, "--games", games, "--seed", seed, "--experiment", experiment,
             "--overwrite"] + (["--won-only"] if won_only else []))  # fmt: skip
for agent in agents:
    play.main(["--graph", graph, "--agent", agent, "--experiment", experiment, "--overwrite"])
report.main(["--experiment", experiment, "--output", report_dir, "--overwrite"])

# COMMAND ----------

import pandas as pd  # noqa: E402

from wikigame_spark import manifests, storage  # noqa: E402
from wikigame_spark.session import build_session  # noqa: E402

spark = build_session("notebooks")
imported = manifests.read_manifest(storage.folder(people, spark))["counts"]
show(pd.DataFrame([{"file": f, **{k: v for k, v in c.items() if not isinstance(v, dict)}}
                   for f, c in imported["files"].items()]))  # fmt: skip
summary = storage.folder(report_dir, spark).read_json("report.json")
show(pd.DataFrame(summary["people_summary"]))
show(pd.DataFrame(summary["people_paired"]))
if ON_DATABRICKS:
    displayHTML(storage.folder(report_dir, spark).read_text("report.html"))  # noqa: F821
else:
    print(f"report: {report_dir}/report.html")
