"""The jobs as specs and bodies (:mod:`wikigame_spark.runner`): one module per job, each a ``JOB``.

``jobs/<name>.py`` runs ``JOB`` under ``spark-submit``; notebooks and tests call ``JOB.main([...])``.
"""
