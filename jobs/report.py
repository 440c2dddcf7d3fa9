"""The paper's evaluation of an experiment's play runs: tables, fits, figures → a report + MLflow run.

spark-submit jobs/report.py --help     (the settings: flags, conf/report.yaml, docs/jobs.md)
"""

from wikigame_spark.jobs.report import JOB
from wikigame_spark.runner import run

main = JOB.main

if __name__ == "__main__":
    run(JOB)
