# Databricks notebook source
# MAGIC %md
# MAGIC # 02 · Build OpenAlex citation graphs
# MAGIC An OpenAlex works snapshot → one symmetric citation graph per field, by `jobs/build_openalex.py`.
# MAGIC On Databricks point `snapshot` at `s3://openalex` (the public bucket) or a copy in a volume.
# MAGIC Locally the default is the real two-file sample in `../shared/data/openalex/snapshot`, whose
# MAGIC manifest lists 465 files (hence `allow_partial`). Its works (2021-2023) have no `primary_topic`,
# MAGIC so the job stops with one line saying the snapshot predates OpenAlex topics: set `snapshot`
# MAGIC to a works snapshot from 2024 or later (any copy of `s3://openalex`, or a local one).
# MAGIC
# MAGIC Cluster libraries: the wikigame-spark wheel (next cell; `make wheel`
# MAGIC builds it in `dist/`, upload it to the volume), nothing else.

# COMMAND ----------

# MAGIC %pip install /Volumes/main/default/wikigame/wikigame_spark-0.1.0-py3-none-any.whl

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
snapshot = widget("snapshot", f"{data}/openalex/snapshot", "s3://openalex")
fields = [f.strip() for f in widget("fields", "Medicine;Physics and Astronomy").split(";") if f.strip()]
language = widget("language", "en")
graphs = widget("graphs", f"{out}/openalex")
allow_partial = widget("allow_partial", "true", "false") == "true"
overwrite = widget("overwrite", "true") == "true"

# COMMAND ----------

from wikigame_spark.jobs.build_openalex import JOB as build_openalex  # noqa: E402

argv = ["--input", snapshot, "--output", graphs, "--language", language]
argv += [a for f in fields for a in ("--field", f)]
argv += (["--allow-partial"] if allow_partial else []) + (["--overwrite"] if overwrite else [])
build_openalex.main(argv)

# COMMAND ----------

import pandas as pd  # noqa: E402

from wikigame_spark import io, layout  # noqa: E402
from wikigame_spark.ingest.openalex_records import field_slug  # noqa: E402
from wikigame_spark.session import build_session  # noqa: E402

spark = build_session("notebooks")
manifests = {f: io.read_manifest(spark, layout.join(graphs, field_slug(f))) for f in fields}
show(
    pd.DataFrame(
        [
            {"field": f, "nodes": m["counts"]["nodes"], "edges": m["counts"]["edges"], **m["records"]["dropped"]}
            for f, m in manifests.items()
        ]
    )
)
