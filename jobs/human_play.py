"""People play the games in the browser; on SIGTERM/Ctrl-C their finished games become a play run.

python jobs/human_play.py --help     (the settings: flags, docs/human_play.md)
"""

from wikigame_spark.jobs.human_play import JOB

main = JOB.main

if __name__ == "__main__":
    JOB.program()
