"""Human games (a TSV log) → plays of agent ``human`` on a graph, with an MLflow run like a play run's.

spark-submit jobs/import_human_games.py --help     (the settings: flags, conf/import_human_games.yaml, docs/jobs.md)
"""

from wikigame_spark.jobs.import_human_games import JOB

main = JOB.main

if __name__ == "__main__":
    JOB.program()
