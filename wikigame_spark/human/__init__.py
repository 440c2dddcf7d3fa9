"""People play the agents' games in the browser: the same games, the same offered links, the same tables.

:mod:`~wikigame_spark.human.arena` holds the rules and every player's progress, rebuilt from the
:mod:`~wikigame_spark.human.journal` on restart; :mod:`~wikigame_spark.human.app` is the web app
over it and :mod:`~wikigame_spark.human.server` runs it until SIGTERM/Ctrl-C, after which
``jobs/human_play.py`` records the finished games as a play run of agent ``human``.
"""
