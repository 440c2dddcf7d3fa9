"""The paper's evaluation of an experiment's play runs: tables, fits, figures → a report + MLflow run.

spark-submit jobs/report.py --help     (the settings: flags, conf/report.yaml, docs/jobs.md)
"""

from wikigame_spark.jobs.report import JOB

main = JOB.main

if __name__ == "__main__":
    JOB.program()
