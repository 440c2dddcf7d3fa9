"""Games: uniformly random reachable (source, target) pairs with exact optimal lengths → GRAPH/games.

spark-submit jobs/sample_games.py --help     (the settings: flags, conf/sample_games.yaml, docs/jobs.md)
"""

from wikigame_spark.jobs.sample_games import JOB

main = JOB.main

if __name__ == "__main__":
    JOB.program()
