# Databricks notebook source
# MAGIC %md
# MAGIC # 02 · Build OpenAlex citation graphs
# MAGIC An OpenAlex works snapshot → one symmetric citation graph per field, by `jobs/build_openalex.py`.
# MAGIC On Databricks point `snapshot` at `s3://openalex` (the public bucket) or a copy in a volume.
# MAGIC Locally the default is the README's: 670 real works (`openalex/real-works` under `data`), whose
# MAGIC Mathematics and Computer Science graphs are tiny (26 and 24 nodes). `allow_partial` reads a
# MAGIC snapshot whose manifest lists files that are not there (a partial copy), counting them.
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
snapshot = widget("snapshot", f"{data}/openalex/real-works", "s3://openalex")
default_fields = "Mathematics;Computer Science"
fields = [f.strip() for f in widget("fields", default_fields, "Medicine;Physics and Astronomy").split(";") if f.strip()]
language = widget("language", "en")
graphs = widget("graphs", f"{out}/openalex")
allow_partial = widget("allow_partial", "false") == "true"
overwrite = widget("overwrite", "true") == "true"

# COMMAND ----------

from wikigame_spark.jobs.build_openalex import JOB as build_openalex  # noqa: E402

argv = ["--input", snapshot, "--output", graphs, "--language", language]
argv += [a for f in fields for a in ("--field", f)]
argv += (["--allow-partial"] if allow_partial else []) + (["--overwrite"] if overwrite else [])
build_openalex.main(argv)

# COMMAND ----------

import pandas as pd  # noqa: E402

from wikigame_spark import manifests, storage  # noqa: E402
from wikigame_spark.ingest.openalex_records import field_slug  # noqa: E402
from wikigame_spark.session import build_session  # noqa: E402

spark = build_session("notebooks")
built = {f: manifests.read_manifest(storage.folder(graphs, spark).sub(field_slug(f))) for f in fields}
show(
    pd.DataFrame(
        [
            {"field": f, "nodes": m["counts"]["nodes"], "edges": m["counts"]["edges"], **m["records"]["dropped"]}
            for f, m in built.items()
        ]
    )
    .set_index("field")
    .fillna(0)  # a reason no record of that field was dropped for
    .astype(int)
    .reset_index()
)
