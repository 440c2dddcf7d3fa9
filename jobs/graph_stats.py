"""Graph statistics: Table 1, components (GraphFrames), Figure 1B → GRAPH/stats/ (JSON, Markdown, HTML, PNG), MLflow.

spark-submit jobs/graph_stats.py --help     (the settings: flags, conf/graph_stats.yaml, docs/jobs.md)
"""

from wikigame_spark.jobs.graph_stats import JOB

main = JOB.main

if __name__ == "__main__":
    JOB.program()
