"""Games from the pairs people played: each (source, target) of a people's play run once, with its
optimal length and how many people played and won it, so agents play exactly those pairs.

The pairs are numbered in a seeded order (an xxhash64 of seed, source and target; ties by the ids),
so the first N games are a seeded uniform sample of the pairs and every agent that plays the first
N plays the same ones. A pair whose source is its target (a one-page game) is no game; with
``won_only`` only pairs at least one person won are kept. Each is counted.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from wikigame_spark.drops import Drops
from wikigame_spark.outcomes import SUCCESS
from wikigame_spark.schemas import GAME_ID, GAMES, OPTIMAL_STEPS, OUTCOME, SOURCE, TARGET, require_columns

PEOPLE, PEOPLE_WON = "people", "people_won"
PEOPLE_PAIRS = "people_pairs"  # a games manifest's key: the people's play run whose pairs the games are
# A games table of played pairs: the games contract, then how many people played and won the pair.
PLAYED_GAMES = StructType(
    [*GAMES.fields, StructField(PEOPLE, IntegerType(), False), StructField(PEOPLE_WON, IntegerType(), False)]
)
SAME_NODE, NEVER_WON, NOT_DRAWN = "same_node", "never_won", "not_drawn"
PAIR_DROPS = (SAME_NODE, NEVER_WON, NOT_DRAWN)


def played_pairs(plays: DataFrame, seed: int, games: int = 0, won_only: bool = False) -> tuple[DataFrame, dict]:
    """The games (:data:`PLAYED_GAMES`) of the pairs in ``plays`` (the PLAYS columns source, target,
    outcome, optimal_steps): all of them, or the first ``games`` in the seed's order; and the counts."""
    require_columns(plays, [SOURCE, TARGET, OUTCOME, OPTIMAL_STEPS], "played_pairs(plays)")
    pairs = plays.groupBy(SOURCE, TARGET).agg(
        F.count("*").cast(IntegerType()).alias(PEOPLE),
        F.sum((F.col(OUTCOME) == SUCCESS).cast("int")).cast(IntegerType()).alias(PEOPLE_WON),
        F.min(OPTIMAL_STEPS).alias("low"),
        F.max(OPTIMAL_STEPS).alias(OPTIMAL_STEPS),
    )
    c = pairs.agg(
        F.count("*").alias("pairs"),
        F.sum((F.col(SOURCE) == F.col(TARGET)).cast("long")).alias(SAME_NODE),
        F.sum(((F.col(SOURCE) != F.col(TARGET)) & (F.col(PEOPLE_WON) == 0)).cast("long")).alias(NEVER_WON),
        F.sum((F.col("low") != F.col(OPTIMAL_STEPS)).cast("long")).alias("disagree"),
        F.sum(PEOPLE).alias("plays"),
    ).first()
    if c["disagree"]:
        raise ValueError(f"plays: {c['disagree']} pairs were recorded with different optimal lengths; re-import them")
    kept = pairs.filter(F.col(SOURCE) != F.col(TARGET))
    if won_only:
        kept = kept.filter(F.col(PEOPLE_WON) > 0)
    order = F.xxhash64(F.lit(seed).cast(LongType()), F.col(SOURCE), F.col(TARGET))
    ranked = kept.orderBy(order, SOURCE, TARGET).select(SOURCE, TARGET, OPTIMAL_STEPS, PEOPLE, PEOPLE_WON)
    numbered = ranked.rdd.zipWithIndex()
    if games:
        numbered = numbered.filter(lambda r: r[1] < games)
    rows = numbered.map(lambda r: (r[1], r[0][0], r[0][1], int(r[0][2]), r[0][3], r[0][4]))
    table = plays.sparkSession.createDataFrame(rows, PLAYED_GAMES).cache()
    n = table.count()
    eligible = c["pairs"] - (c[SAME_NODE] or 0) - ((c[NEVER_WON] or 0) if won_only else 0)
    drops = Drops({SAME_NODE: c[SAME_NODE] or 0, NOT_DRAWN: eligible - n})
    if won_only:
        drops[NEVER_WON] = c[NEVER_WON] or 0
    counts = {
        "games": n,
        "pairs": c["pairs"],
        "plays": int(c["plays"] or 0),
        "pairs_never_won": c[NEVER_WON] or 0,
        "left_out": drops.as_dict(PAIR_DROPS),
        "won_only": won_only,
    }
    return table.select(GAME_ID, SOURCE, TARGET, OPTIMAL_STEPS, PEOPLE, PEOPLE_WON), counts
