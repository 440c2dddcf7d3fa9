"""Human games from a TSV log → PLAYS rows (agent ``human``), matched to graph nodes by title.

The paper's human data (wikispeedrun.org, ten-minute limit, self-reported) is a TSV with a start
title, an end title, success, steps, optimal steps and time; its header reads
``Num, Success?, Steps, Time (m:s), StartPage, EndPage, OptimalSteps``. Other spellings of those
columns are accepted (see :data:`COLUMNS`). Titles are normalised as the graph's own titles are
(spaces for underscores, first letter capitalised on wikis that do) and looked up among the
nodes, then among the graph's redirects.

No row disappears silently: a row that cannot become a play (no titles, a success without its
steps, no optimal steps, fewer steps than the optimum) is rejected by :func:`parse_tsv` with a
reason, and a game whose titles are not in the graph is returned by :func:`match_games` with a
reason; the import job counts both and keeps them as artifacts.

Failures become outcome ``time_limit`` (the games were time-limited). Routes were not recorded:
``route`` holds the source only and ``detail`` says what was not recorded; a failure without a
step count gets steps 0 and says so.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import asdict, dataclass

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DoubleType, IntegerType, LongType, StringType, StructField, StructType

from wikigame_spark.drops import Drops
from wikigame_spark.ingest.titles import capitalise_first
from wikigame_spark.outcomes import SUCCESS, TIME_LIMIT
from wikigame_spark.schemas import ID, NO_MODEL_USAGE, PLAYS, TARGET, TITLE, require_columns

HUMAN = "human"
# A people's run's param: "whole" when every page of every game was recorded (Wikispeedia), so its
# steps above optimal are known, not cut off as the paper's self-reported human games are.
HUMAN_ROUTES = "human_routes"

# Accepted header names per field, compared lower-case with everything but letters and digits
# removed ("Time (m:s)" → "timems").
COLUMNS = {
    "game_id": ("num", "gameid", "id", "game", "n"),
    "start": ("startpage", "start", "starttitle", "source", "sourcetitle", "from"),
    "end": ("endpage", "end", "endtitle", "target", "targettitle", "to"),
    "success": ("success", "foundtarget", "succeeded", "won", "result"),
    "steps": ("steps", "numsteps", "clicks"),
    "optimal": ("optimalsteps", "optimal", "optimum", "shortestpath"),
    "time": ("timems", "time", "seconds", "duration", "timeseconds"),
}
REQUIRED = ("start", "end", "success", "steps", "optimal")
_TRUE = {"yes", "y", "true", "t", "1", "success", "won"}
_FALSE = {"no", "n", "false", "f", "0", "fail", "failure", "lost", ""}
_SPACES = re.compile(r"[\s_\u00a0]+")

# One parsed game, as handed to Spark for matching.
HUMAN_GAMES = StructType(
    [
        StructField("line", IntegerType(), False),
        StructField("game_id", LongType(), False),
        StructField("start_title", StringType(), False),
        StructField("end_title", StringType(), False),
        StructField("success", BooleanType(), False),
        StructField("steps", IntegerType(), True),
        StructField("optimal_steps", IntegerType(), False),
        StructField("seconds", DoubleType(), True),
    ]
)
# Titles the graph does not know, with the reason.
UNMATCHED = StructType(
    [
        StructField("line", IntegerType(), False),
        StructField("game_id", LongType(), False),
        StructField("start_title", StringType(), False),
        StructField("end_title", StringType(), False),
        StructField("reason", StringType(), False),
    ]
)


class HumanLogError(ValueError):
    """The TSV cannot be read as a log of human games; the message names the file and line."""


@dataclass(frozen=True)
class HumanGame:
    line: int
    game_id: int
    start_title: str
    end_title: str
    success: bool
    steps: int | None
    optimal_steps: int
    seconds: float | None

    def as_row(self) -> dict:
        return asdict(self)


def _key(header: str) -> str:
    return re.sub(r"[^a-z0-9]", "", header.lower())


def normalise_title(title: str, case: str = "first-letter") -> str:
    """A title as the graph stores it: underscores and runs of spaces as one space, trimmed,
    first letter upper-cased where the wiki does (``case`` from the dump's siteinfo)."""
    return capitalise_first(_SPACES.sub(" ", title).strip(), case)


def parse_success(text: str, where: str) -> bool:
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise HumanLogError(f"{where}: success {text!r} is not yes/no")


def parse_count(text: str, where: str, what: str) -> int | None:
    """A whole number, also written as a float ("8.0"); None when empty."""
    value = text.strip()
    if not value:
        return None
    try:
        number = float(value)
    except ValueError as e:
        raise HumanLogError(f"{where}: {what} {text!r} is not a number") from e
    if not math.isfinite(number) or number != int(number) or number < 0:
        raise HumanLogError(f"{where}: {what} {text!r} is not a whole number ≥ 0")
    return int(number)


def parse_time(text: str, where: str) -> float | None:
    """Seconds from ``m:s``, ``h:m:s`` or plain seconds; None when empty."""
    value = text.strip()
    if not value:
        return None
    try:
        parts = [float(p) for p in value.split(":")]
    except ValueError as e:
        raise HumanLogError(f"{where}: time {text!r} is not m:s, h:m:s or seconds") from e
    if len(parts) > 3 or any(p < 0 for p in parts):
        raise HumanLogError(f"{where}: time {text!r} is not m:s, h:m:s or seconds")
    seconds = 0.0
    for p in parts:
        seconds = seconds * 60 + p
    return seconds


def _columns(header: list[str], source: str) -> dict[str, int]:
    keys = [_key(h) for h in header]
    found = {}
    for field, names in COLUMNS.items():
        for name in names:
            if name in keys:
                found[field] = keys.index(name)
                break
    missing = [f for f in REQUIRED if f not in found]
    if missing:
        wanted = "; ".join(f"{f}: one of {', '.join(COLUMNS[f])}" for f in missing)
        raise HumanLogError(f"{source}: header {header} lacks {wanted}")
    return found


def parse_tsv(text: str, source: str, case: str = "first-letter") -> tuple[list[HumanGame], list[dict]]:
    """Games and rejected rows (line, game_id, reason, the row) of a TSV log of human games."""
    rows = list(csv.reader(io.StringIO(text), delimiter="\t"))
    rows = [(i + 1, r) for i, r in enumerate(rows) if any(c.strip() for c in r)]
    if not rows:
        raise HumanLogError(f"{source}: empty file")
    (_, header), body = rows[0], rows[1:]
    col = _columns(header, source)
    games, rejected = [], []
    seen_ids: set[int] = set()
    for line, row in body:
        where = f"{source}:{line}"
        cell = {field: row[i] if i < len(row) else "" for field, i in col.items()}
        game_id = parse_count(cell.get("game_id", ""), where, "game number") if "game_id" in col else None
        game_id = line - 1 if game_id is None else game_id
        if game_id in seen_ids:
            raise HumanLogError(f"{where}: game number {game_id} appears twice")
        seen_ids.add(game_id)
        start, end = normalise_title(cell.get("start", ""), case), normalise_title(cell.get("end", ""), case)
        success = parse_success(cell.get("success", ""), where)
        steps = parse_count(cell.get("steps", ""), where, "steps")
        optimal = parse_count(cell.get("optimal", ""), where, "optimal steps")
        seconds = parse_time(cell.get("time", ""), where) if "time" in col else None
        reason = None
        if not start or not end:
            reason = "no_titles"
        elif optimal is None:
            reason = "no_optimal_steps"
        elif success and steps is None:
            reason = "success_without_steps"
        elif success and steps < optimal:
            reason = "steps_below_optimal"
        if reason:
            rejected.append({"line": line, "game_id": game_id, "reason": reason, "row": "\t".join(row)})
            continue
        games.append(HumanGame(line, game_id, start, end, success, steps, optimal, seconds))
    return games, rejected


def _title_ids(nodes: DataFrame, redirects: DataFrame | None, titles: DataFrame) -> DataFrame:
    """(title, id) for the wanted titles: the node of that title, else the redirect's target."""
    found = nodes.select(TITLE, F.col(ID).alias("node_id"), F.lit(0).alias("rank"))
    if redirects is not None:
        found = found.unionByName(redirects.select(TITLE, F.col(TARGET).alias("node_id"), F.lit(1).alias("rank")))
    found = found.join(F.broadcast(titles), TITLE)
    best = F.min(F.struct("rank", "node_id")).alias("best")
    return found.groupBy(TITLE).agg(best).select(TITLE, F.col("best.node_id").alias("node_id"))


def match_games(games: DataFrame, nodes: DataFrame, redirects: DataFrame | None = None) -> tuple[DataFrame, DataFrame]:
    """HUMAN_GAMES → (PLAYS rows for the games whose titles are in the graph, UNMATCHED rows)."""
    require_columns(games, HUMAN_GAMES, "match_games(games)")
    require_columns(nodes, [ID, TITLE], "match_games(nodes)")
    if redirects is not None:
        require_columns(redirects, [TITLE, TARGET], "match_games(redirects)")
    titles = (
        games.select(F.col("start_title").alias(TITLE)).union(games.select(F.col("end_title").alias(TITLE))).distinct()
    )
    ids = _title_ids(nodes, redirects, titles)
    joined = games.join(
        F.broadcast(ids.select(F.col(TITLE).alias("start_title"), F.col("node_id").alias("source"))),
        "start_title",
        "left",
    ).join(
        F.broadcast(ids.select(F.col(TITLE).alias("end_title"), F.col("node_id").alias("target"))),
        "end_title",
        "left",
    )
    missing_source, missing_target = F.col("source").isNull(), F.col("target").isNull()
    reason = (
        F.when(missing_source & missing_target, "neither_title_in_graph")
        .when(missing_source, "start_title_not_in_graph")
        .when(missing_target, "end_title_not_in_graph")
    )
    unmatched = joined.filter(missing_source | missing_target).select(
        "line", "game_id", "start_title", "end_title", reason.alias("reason")
    )
    matched = joined.filter(~missing_source & ~missing_target)
    unknown = [
        F.when(F.col("steps").isNull(), F.lit("steps")),
        F.when(F.col("seconds").isNull(), F.lit("time")),
        F.lit("route"),
    ]
    columns = {
        "game_id": F.col("game_id").cast(LongType()),
        "agent": F.lit(HUMAN),
        "model": F.lit(None).cast(StringType()),
        "outcome": F.when(F.col("success"), F.lit(SUCCESS)).otherwise(F.lit(TIME_LIMIT)),
        "steps": F.coalesce(F.col("steps"), F.lit(0)).cast(IntegerType()),
        "optimal_steps": F.col("optimal_steps").cast(IntegerType()),
        # coalesce only tells Spark the element is never null (unmatched rows are gone), which
        # makes the array the contract's array<bigint> without nulls
        "route": F.array(F.coalesce(F.col("source"), F.lit(-1).cast(LongType()))),
        "source": F.col("source").cast(LongType()),
        "target": F.col("target").cast(LongType()),
        "seconds": F.coalesce(F.col("seconds"), F.lit(float("nan"))).cast(DoubleType()),
        "detail": F.concat(F.lit("human game; not recorded: "), F.concat_ws(", ", *unknown)),
    }
    columns.update({k: F.lit(v).cast(PLAYS[k].dataType) for k, v in NO_MODEL_USAGE.items()})
    plays = matched.select(*[columns[f.name].alias(f.name) for f in PLAYS.fields])
    return plays, unmatched


def left_out(rejected: list[dict], unmatched: pd.DataFrame, parsed: int, imported: int) -> tuple[pd.DataFrame, dict]:
    """Every row that did not become a play, with its reason, and the import's counts."""
    rows = pd.concat(
        [pd.DataFrame(rejected, columns=["line", "game_id", "reason", "row"]), unmatched], ignore_index=True
    ).sort_values("line", ignore_index=True)
    rows = rows.astype(object).where(rows.notna(), None)
    counts = {
        "rows": parsed + len(rejected),
        "imported": imported,
        "rejected": len(rejected),
        "unmatched": len(unmatched),
        "left_out_by": Drops(rows["reason"].astype(str)).as_dict(),
    }
    return rows, counts
