"""Agents play sampled games in parallel; plays Parquet + an MLflow run with params, metrics, artifacts.

spark-submit jobs/play_games.py --help     (the settings: flags, conf/play_games.yaml, docs/jobs.md)
"""

from wikigame_spark.jobs.play_games import JOB

main = JOB.main

if __name__ == "__main__":
    JOB.program()
