# Databricks notebook source
# MAGIC %md
# MAGIC # 05 · Report
# MAGIC The paper's evaluation of every finished play run of the experiment (`jobs/report.py`):
# MAGIC Table 4 (success ± SD), Table 5 (steps above optimal ± SE), outcome breakdowns, negative
# MAGIC binomial fits with the likelihood-ratio test, Figures 2–4 and 15, as Markdown and HTML in
# MAGIC `report` and as artifacts of a "report" run in the same experiment.
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

out = widget("out", OUT, f"{VOLUME}/out")
experiment = widget("experiment", "notebooks", "/Shared/wikigame")
report_dir = widget("report", f"{out}/report")
runs = widget("runs", "")  # space-separated MLflow run ids; empty = every finished play run

# COMMAND ----------

from wikigame_spark.jobs.report import JOB as report  # noqa: E402

argv = ["--experiment", experiment, "--output", report_dir, "--overwrite"]
report.main(argv + (["--runs", *runs.split()] if runs else []))

# COMMAND ----------

import pandas as pd  # noqa: E402

from wikigame_spark import storage  # noqa: E402
from wikigame_spark.session import build_session  # noqa: E402

spark = build_session("notebooks")
report = storage.folder(report_dir, spark)
summary = report.read_json("report.json")
show(pd.DataFrame(summary["success"]))
show(pd.DataFrame(summary["fits"])[["agent", "graph", "variant", "successes"]])
if ON_DATABRICKS:
    displayHTML(report.read_text("report.html"))  # noqa: F821
else:
    print(f"report: {report_dir}/report.html")
