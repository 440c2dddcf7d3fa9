"""wikigame-spark: the Wikipedia Game on Spark, from dumps to graphs to games to reports."""

__version__ = "0.1.0"
