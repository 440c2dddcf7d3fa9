"""Wikispeedia (SNAP's files) → a Parquet graph (nodes with categories, edges, manifest.json).

spark-submit jobs/build_wikispeedia.py --help     (the settings: flags, conf/build_wikispeedia.yaml, docs/jobs.md)
"""

from wikigame_spark.jobs.build_wikispeedia import JOB

main = JOB.main

if __name__ == "__main__":
    JOB.program()
