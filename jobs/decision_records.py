"""Training data: every step of an expert's routes (and of play runs) with exact optimal moves →
decision records, SFT conversations and preference pairs.

spark-submit jobs/decision_records.py --help     (the settings: flags, conf/decision_records.yaml, docs/jobs.md)
"""

from wikigame_spark.jobs.decision_records import JOB

main = JOB.main

if __name__ == "__main__":
    JOB.program()
