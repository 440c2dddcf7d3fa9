"""Wikipedia pages-articles dumps → a Parquet graph (nodes, edges, redirects, manifest.json).

spark-submit jobs/build_wikipedia.py --help     (the settings: flags, conf/build_wikipedia.yaml, docs/jobs.md)
"""

from wikigame_spark.jobs.build_wikipedia import JOB

main = JOB.main

if __name__ == "__main__":
    JOB.program()
