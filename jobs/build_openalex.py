"""OpenAlex works snapshot → one symmetric citation graph per field (nodes, edges, manifest.json).

spark-submit jobs/build_openalex.py --help     (the settings: flags, conf/build_openalex.yaml, docs/jobs.md)
"""

from wikigame_spark.jobs.build_openalex import JOB

main = JOB.main

if __name__ == "__main__":
    JOB.program()
