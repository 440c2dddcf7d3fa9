"""The game summary as the evaluation and the jobs name it; defined in :mod:`wikigame_spark.summary`."""

from wikigame_spark.summary import mean_with_se, outcome_fractions, steps_above_optimal, success_rate, summarise

__all__ = ["mean_with_se", "outcome_fractions", "steps_above_optimal", "success_rate", "summarise"]
