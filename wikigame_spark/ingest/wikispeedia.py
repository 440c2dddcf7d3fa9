"""West & Leskovec's Wikispeedia (SNAP) → a graph of the node contract, and people's games → routes.

Wikispeedia (Human Wayfinding in Information Networks, WWW 2012) is the game played on a 4,604-article
selection of English Wikipedia (the 2007 Wikipedia for Schools), with the routes of the people who
played it. A Wikispeedia folder is what SNAP's two archives unpack to: ``wikispeedia_paths-and-graph/``
(``articles.tsv``, ``links.tsv``, ``categories.tsv``, ``paths_finished.tsv`` or its path column
``paths_finished_paths.txt``, ``paths_unfinished.tsv``) and ``plaintext_articles/<name>.txt``.
Article names are URL-encoded with underscores; the graph's titles are decoded.

The graph (:func:`build_graph`): a node per listed article, numbered in the byte order of its name
(the order ``articles.tsv`` lists them); its summary the article's lead (:func:`lead`); its
categories kept as a column. An edge per distinct link between listed articles, self-links counted
and left out.

People's games (:func:`parse_games`): a path is ``;``-separated names, ``<`` the back button. A back
click becomes a move to the page returned to (the previous page of the player's history, as the
engine's back button, :class:`~wikigame_spark.play.rules.Walk`); the import checks every other move
against the graph and every name against its nodes, and leaves out, naming them, the games that
break either.
"""

from __future__ import annotations

import hashlib
import re
import urllib.parse
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BooleanType, DoubleType, LongType, StringType, StructField, StructType

from wikigame_spark.drops import Drops
from wikigame_spark.graph.distances import pair_distances
from wikigame_spark.graph.frame import Graph
from wikigame_spark.ingest.humans import HUMAN
from wikigame_spark.ingest.wikitext import SUMMARY_CHARS
from wikigame_spark.outcomes import GAVE_UP, SUCCESS, TIME_LIMIT
from wikigame_spark.schemas import DST, ID, NO_MODEL_USAGE, SRC, SUMMARY, TARGET, TITLE, require_columns
from wikigame_spark.storage import Folder

PATHS_FOLDER = "wikispeedia_paths-and-graph"
TEXTS_FOLDER = "plaintext_articles"
ARTICLES, LINKS, CATEGORIES = "articles.tsv", "links.tsv", "categories.tsv"
FINISHED, FINISHED_PATHS, UNFINISHED = "paths_finished.tsv", "paths_finished_paths.txt", "paths_unfinished.tsv"
BACK = "<"
CATEGORIES_COLUMN = "categories"
NAME = "name"  # an article's name as Wikispeedia writes it (URL-encoded)

# The nodes: the contract, then the article's name and its categories.
WIKISPEEDIA_NODES = StructType(
    [
        StructField(ID, LongType(), False),
        StructField(TITLE, StringType(), False),
        StructField(SUMMARY, StringType(), False),
        StructField(NAME, StringType(), False),
        StructField(CATEGORIES_COLUMN, ArrayType(StringType()), False),
    ]
)
# Why a link of links.tsv is no edge.
LINK_DROPS = ("self_link", "duplicate", "not_an_article")

# Why a person's game became no play, in the order they are checked.
NO_PATH = "no_path"
BACK_AT_START = "back_at_start"
TITLE_NOT_IN_GRAPH = "title_not_in_graph"
LINK_NOT_IN_GRAPH = "link_not_in_graph"
TARGET_UNREACHABLE = "target_unreachable"
GAME_DROPS = (NO_PATH, BACK_AT_START, TITLE_NOT_IN_GRAPH, LINK_NOT_IN_GRAPH, TARGET_UNREACHABLE)
# Why an unfinished game ended (paths_unfinished.tsv's type column) → the play's outcome.
ENDED = {"restart": GAVE_UP, "timeout": TIME_LIMIT}

_PROSE_LINE = re.compile(r"^   \S")  # a body paragraph's lines; headings start at the margin
_SENTENCE_END = re.compile(r"[.!?][\"')\]]?$")


class WikispeediaError(ValueError):
    """A folder that is not Wikispeedia's, or a file that cannot be read as its; names the file."""


# --- Names and texts -----------------------------------------------------------------------------
def title(name: str) -> str:
    """A Wikispeedia article name (URL-encoded, underscores) as the page's title."""
    return urllib.parse.unquote(name).replace("_", " ")


def lead(text: str, chars: int = SUMMARY_CHARS) -> str:
    """The article's lead from its plain-text export: the prose paragraphs before the first
    heading (the whole text's first prose paragraph where the lead has none), cut to ``chars``.

    The export starts with ``#copyright``, the title and the "2007 Schools Wikipedia Selection"
    line; infobox rows and captions are indented further or have no sentence end, so a paragraph
    counts as prose when every line is indented three spaces and it ends a sentence."""
    blocks = [b for b in re.split(r"\n\s*\n", text) if b.strip()]
    prose, in_lead = [], True
    for block in blocks[3:]:
        lines = block.split("\n")
        if len(lines) == 1 and not lines[0].startswith(" "):  # a section heading
            if prose:
                break
            in_lead = False
            continue
        para = " ".join(line.strip() for line in lines)
        if all(_PROSE_LINE.match(line) for line in lines) and len(para) >= 60 and _SENTENCE_END.search(para):
            prose.append(para)
            if not in_lead or len("\n\n".join(prose)) >= chars:
                break
    return "\n\n".join(prose)[:chars]


@dataclass(frozen=True)
class Files:
    """Where a Wikispeedia folder's files are."""

    root: Folder
    finished: str  # paths_finished.tsv, else its path column

    @property
    def paths(self) -> Folder:
        return self.root.sub(PATHS_FOLDER)

    @property
    def text_folder(self) -> Folder:
        return self.root.sub(TEXTS_FOLDER)

    def identities(self, names: tuple[str, ...]) -> list[dict]:
        """Path, size and SHA-1 of each of the files ``names`` of the paths folder."""
        return [self.identity(name, self.paths.read(name)) for name in names]

    def identity(self, name: str, data: bytes) -> dict:
        """Path, size and SHA-1 of the file ``name`` of the paths folder, read as ``data``."""
        return {"path": self.paths.path(name), "bytes": len(data), "sha1": hashlib.sha1(data).hexdigest()}

    def texts(self, spark: SparkSession) -> DataFrame:
        """The plain-text export: per file its article ``name``, ``text`` and ``sha1``."""
        files = spark.read.format("binaryFile").option("pathGlobFilter", "*.txt").load(self.text_folder.spark_path())
        return files.select(
            F.regexp_extract("path", r"([^/]+)\.txt$", 1).alias(NAME),  # as on disk (file_name is escaped)
            F.decode("content", "UTF-8").alias("text"),
            F.sha1("content").alias("sha1"),
            F.col("length"),
        )

    @classmethod
    def find(cls, root: Folder, games: bool = False) -> Files:
        """The files of the Wikispeedia folder ``root`` (``games``: people's games too); a missing
        one is a :class:`WikispeediaError` naming all that are missing."""
        paths = root.sub(PATHS_FOLDER)
        finished = FINISHED if paths.exists(FINISHED) else FINISHED_PATHS
        wanted = [f"{PATHS_FOLDER}/{n}" for n in (ARTICLES, LINKS, CATEGORIES)] + [f"{TEXTS_FOLDER}/"]
        if games:
            wanted += [f"{PATHS_FOLDER}/{finished}", f"{PATHS_FOLDER}/{UNFINISHED}"]
        missing = [w for w in wanted if not root.exists(w.rstrip("/"))]
        if missing:
            raise WikispeediaError(
                f"{root.root}: not a Wikispeedia folder, no {', '.join(missing)} (unpack SNAP's "
                "wikispeedia_paths-and-graph.tar.gz and plaintext_articles.tar.gz there)"
            )
        return cls(root, finished)


# --- The graph -----------------------------------------------------------------------------------
def _tsv(spark: SparkSession, path: str, columns: tuple[str, ...]) -> DataFrame:
    """A Wikispeedia TSV (``#`` comment lines, no quoting) with string columns."""
    schema = StructType([StructField(c, StringType(), True) for c in columns])
    return spark.read.options(sep="\t", comment="#", quote="\u0000", encoding="UTF-8").schema(schema).csv(path)


@dataclass
class WikispeediaGraph:
    nodes: DataFrame
    edges: DataFrame
    counts: dict = field(default_factory=dict)
    texts: dict = field(default_factory=dict)  # the plain-text folder's identity


def _texts_identity(texts: DataFrame, folder: Folder) -> dict:
    """The plain-text folder as one identity: its files' count and bytes, and the SHA-1 of their
    sorted ``name<TAB>sha1`` lines."""
    listing = F.array_sort(F.collect_list(F.concat_ws("\t", NAME, "sha1")))
    row = texts.agg(F.count("*"), F.sum("length"), F.sha1(F.encode(F.concat_ws("\n", listing), "UTF-8"))).first()
    return {"path": folder.root, "files": row[0], "bytes": int(row[1] or 0), "sha1": row[2]}


def build_graph(spark: SparkSession, files: Files, summary_chars: int = SUMMARY_CHARS) -> WikispeediaGraph:
    """The graph of a Wikispeedia folder (:data:`WIKISPEEDIA_NODES`, edges) and its accounting."""
    articles = _tsv(spark, files.paths.spark_path(ARTICLES), (NAME,)).filter(F.col(NAME).isNotNull()).distinct()
    numbered = articles.orderBy(NAME).rdd.zipWithIndex().map(lambda r: (r[1], r[0][0]))
    ids = spark.createDataFrame(
        numbered, StructType([StructField(ID, LongType(), False), StructField(NAME, StringType(), False)])
    )
    categories = (
        _tsv(spark, files.paths.spark_path(CATEGORIES), (NAME, "category"))
        .filter(F.col("category").isNotNull())
        .groupBy(NAME)
        .agg(F.array_sort(F.collect_set("category")).alias(CATEGORIES_COLUMN))
    )
    texts = files.texts(spark)
    to_title = F.udf(lambda name: title(name), StringType())  # a lambda: PySpark reads title's hints as a pandas UDF's
    to_lead = F.udf(lambda text: lead(text or "", summary_chars), StringType())
    joined = ids.join(categories, NAME, "left").join(texts, NAME, "left")
    # 4,604 articles: one part file, written after the leads are found in parallel
    nodes = (
        joined.select(
            F.col(ID),
            to_title(NAME).alias(TITLE),
            F.coalesce(to_lead("text"), F.lit("")).alias(SUMMARY),
            F.col(NAME),
            F.coalesce(CATEGORIES_COLUMN, F.array().cast(ArrayType(StringType()))).alias(CATEGORIES_COLUMN),
            F.col("text").isNull().alias("_no_text"),
        )
        .repartition(1)
        .cache()
    )
    links = _tsv(spark, files.paths.spark_path(LINKS), ("a", "b")).filter(F.col("b").isNotNull())
    named = links.join(ids.select(F.col(NAME).alias("a"), F.col(ID).alias(SRC)), "a", "left").join(
        ids.select(F.col(NAME).alias("b"), F.col(ID).alias(DST)), "b", "left"
    )
    known = named.filter(F.col(SRC).isNotNull() & F.col(DST).isNotNull())
    edges = known.filter(F.col(SRC) != F.col(DST)).select(SRC, DST).distinct().coalesce(1)
    n = nodes.agg(
        F.count("*").alias("nodes"),
        F.sum(F.col("_no_text").cast("long")).alias("no_text"),
        F.sum(((F.col(SUMMARY) == "") & ~F.col("_no_text")).cast("long")).alias("no_lead"),
        F.sum((F.size(CATEGORIES_COLUMN) == 0).cast("long")).alias("no_categories"),
        F.countDistinct(TITLE).alias("titles"),
    ).first()
    if n["titles"] != n["nodes"]:
        raise WikispeediaError(
            f"{files.paths.path(ARTICLES)}: {n['nodes'] - n['titles']} names decode to a title another has"
        )
    total, unknown, self_links = named.agg(
        F.count("*"),
        F.sum((F.col(SRC).isNull() | F.col(DST).isNull()).cast("long")),
        F.sum((F.col(SRC) == F.col(DST)).cast("long")),
    ).first()
    n_edges, known_pairs = edges.count(), known.filter(F.col(SRC) != F.col(DST)).count()
    drops = Drops(self_link=self_links or 0, duplicate=known_pairs - n_edges, not_an_article=unknown or 0)
    counts = {
        "nodes": n["nodes"],
        "edges": n_edges,
        "links": {"total": total, "edges": n_edges, "dropped": drops.as_dict(LINK_DROPS)},
        "summaries": {"chars": summary_chars, "no_text_file": n["no_text"], "no_prose_lead": n["no_lead"]},
        "no_categories": n["no_categories"],
    }
    texts_identity = _texts_identity(texts.select(NAME, "sha1", "length"), files.text_folder)
    return WikispeediaGraph(nodes.select(*WIKISPEEDIA_NODES.fieldNames()), edges, counts, texts_identity)


# --- People's games -------------------------------------------------------------------------------
@dataclass(frozen=True)
class PersonGame:
    """One person's game as the log tells it, its back clicks resolved."""

    game_id: int
    file: str
    line: int
    route: list[str]  # the names visited, a back click as the page returned to
    backs: list[bool]  # per page of ``route``: reached by the back button
    target: str
    outcome: str
    seconds: float | None

    def as_row(self) -> dict:
        return {
            "game_id": self.game_id,
            "file": self.file,
            "line": self.line,
            "route": self.route,
            "backs": self.backs,
            "target_name": self.target,
            "outcome": self.outcome,
            "seconds": self.seconds,
        }


def resolve(path: str) -> tuple[list[str], list[bool]] | str:
    """A ``;``-separated path → the pages visited and which of them the back button reached, or
    the reason it cannot be (:data:`NO_PATH`, :data:`BACK_AT_START`)."""
    names = [p for p in path.strip().split(";") if p]
    if not names:
        return NO_PATH
    route, backs, history = [], [], []
    for name in names:
        if name == BACK:
            if len(history) < 2:
                return BACK_AT_START
            history.pop()
            route.append(history[-1])
            backs.append(True)
        else:
            history.append(name)
            route.append(name)
            backs.append(False)
    return route, backs


def _lines(text: str) -> list[tuple[int, list[str]]]:
    return [
        (i + 1, line.split("\t"))
        for i, line in enumerate(text.splitlines())
        if line.strip() and not line.startswith("#")
    ]


def parse_games(
    finished: str, finished_name: str, unfinished: str, unfinished_name: str
) -> tuple[list[PersonGame], list[dict]]:
    """People's games of the two logs (finished games first, each file in its order; ``game_id``
    numbers them so) and the rows that cannot be games (file, line, game_id, reason, detail).

    ``finished``: ``paths_finished.tsv`` (hashed IP, time, seconds, path, rating) or its path
    column alone; ``unfinished``: ``paths_unfinished.tsv`` (hashed IP, time, seconds, path, target,
    type)."""
    games, rejected = [], []
    whole = finished_name.endswith(".tsv")
    rows = [(finished_name, line, cells, True) for line, cells in _lines(finished)]
    rows += [(unfinished_name, line, cells, False) for line, cells in _lines(unfinished)]
    for game_id, (name, line, cells, done) in enumerate(rows):
        where = f"{name}:{line}"
        if done:
            if whole and len(cells) < 4:
                raise WikispeediaError(f"{where}: {len(cells)} columns, paths_finished.tsv has 5")
            path, seconds = (cells[3], cells[2]) if whole else (cells[0], "")
            ended = SUCCESS
        else:
            if len(cells) < 6:
                raise WikispeediaError(f"{where}: {len(cells)} columns, paths_unfinished.tsv has 6")
            path, seconds, ended = cells[3], cells[2], ENDED.get(cells[5].strip())
            if ended is None:
                raise WikispeediaError(f"{where}: type {cells[5]!r} is not one of {', '.join(ENDED)}")
        resolved = resolve(path)
        if isinstance(resolved, str):
            rejected.append({"file": name, "line": line, "game_id": game_id, "reason": resolved, "detail": path})
            continue
        route, backs = resolved
        target = route[-1] if done else cells[4].strip()
        try:
            secs = float(seconds) if seconds.strip() else None
        except ValueError as e:
            raise WikispeediaError(f"{where}: seconds {seconds!r} is not a number") from e
        games.append(PersonGame(game_id, name, line, route, backs, target, ended, secs))
    return games, rejected


# One parsed game as handed to Spark (pages by their Wikispeedia names).
PEOPLE_GAMES = StructType(
    [
        StructField("game_id", LongType(), False),
        StructField("file", StringType(), False),
        StructField("line", LongType(), False),
        StructField("route", ArrayType(StringType(), False), False),
        StructField("backs", ArrayType(BooleanType(), False), False),
        StructField("target_name", StringType(), False),
        StructField("outcome", StringType(), False),
        StructField("seconds", DoubleType(), True),
    ]
)


def back_clicks(games: list[PersonGame]) -> int:
    return sum(sum(g.backs) for g in games)


def match_games(games: DataFrame, nodes: DataFrame, edges: DataFrame) -> tuple[DataFrame, DataFrame]:
    """People's games (:data:`PEOPLE_GAMES`) on a Wikispeedia graph → (the games whose every page is
    a node, by its name exactly as the log writes it, and every link move an edge, with their routes
    as node ids: ``game_id, route, source, target, outcome, seconds, backs``; the others:
    ``game_id, reason, detail`` naming the pages or moves)."""
    require_columns(nodes, [ID, NAME], "match_games(nodes)")
    ids = nodes.select(F.col(ID).alias("node"), F.col(NAME).alias("page"))
    pages = games.select("game_id", F.posexplode(F.arrays_zip("route", "backs")).alias("pos", "move")).select(
        "game_id", "pos", F.col("move.route").alias("page"), F.col("move.backs").alias("back")
    )
    pages = pages.join(ids, "page", "left")
    targets = games.select("game_id", F.col("target_name").alias("page")).join(ids, "page", "left")
    not_nodes = (
        pages.select("game_id", "page", "node")
        .unionByName(targets.select("game_id", "page", "node"))
        .filter(F.col("node").isNull())
        .groupBy("game_id")
        .agg(F.array_sort(F.collect_set("page")).alias("pages"))
        .select("game_id", F.lit(TITLE_NOT_IN_GRAPH).alias("reason"),
                F.concat(F.lit("not an article: "), F.concat_ws(" | ", "pages")).alias("detail"))
    )  # fmt: skip
    before = pages.select(
        "game_id", (F.col("pos") + 1).alias("pos"), F.col("node").alias(SRC), F.col("page").alias("from")
    )
    moves = pages.filter(~F.col("back") & (F.col("pos") > 0)).join(before, ["game_id", "pos"])
    moves = moves.filter(F.col(SRC).isNotNull() & F.col("node").isNotNull()).withColumnRenamed("node", DST)
    off_graph = (
        moves.join(edges.select(SRC, DST), [SRC, DST], "left_anti")
        .groupBy("game_id")
        .agg(F.array_sort(F.collect_list(F.concat_ws(" → ", "from", "page"))).alias("moves"))
        .select("game_id", F.lit(LINK_NOT_IN_GRAPH).alias("reason"),
                F.concat(F.lit("no such link: "), F.concat_ws(" | ", "moves")).alias("detail"))
    )  # fmt: skip
    off_graph = off_graph.join(not_nodes.select("game_id"), "game_id", "left_anti")  # one reason a game
    left_out = not_nodes.unionByName(off_graph)
    routes = pages.groupBy("game_id").agg(F.array_sort(F.collect_list(F.struct("pos", "node"))).alias("steps"))
    kept = (
        games.join(left_out.select("game_id"), "game_id", "left_anti")
        .join(routes, "game_id")
        .join(targets.select("game_id", F.col("node").alias(TARGET)), "game_id")
        .select("game_id", F.transform("steps", lambda s: s["node"]).alias("route"), TARGET, "outcome", "seconds",
                "file", "line")
        .withColumn("source", F.col("route")[0])
    )  # fmt: skip
    return kept, left_out


@dataclass
class People:
    """People's games imported: their plays (pandas, the PLAYS contract), the games left out with
    why, the counts the manifest keeps, and the log files read."""

    plays: pd.DataFrame
    left_out: pd.DataFrame
    counts: dict
    inputs: list[dict]


def _optimal(graph: Graph, kept: pd.DataFrame) -> np.ndarray:
    """Each game's shortest path length on the graph (negative: unreachable), one search per pair."""
    pairs = kept[["source", TARGET]].drop_duplicates()
    oracle = pair_distances(graph.nodes, graph.edges, graph_dir=graph.handle)
    found = oracle.distances(pairs["source"].to_numpy(), pairs[TARGET].to_numpy())
    lengths = dict(zip(zip(pairs["source"], pairs[TARGET]), found.tolist()))
    return np.array([lengths[p] for p in zip(kept["source"], kept[TARGET])], dtype=np.int64)


def import_people(spark: SparkSession, files: Files, graph: Graph) -> People:
    """People's games of a Wikispeedia folder as plays of agent ``human`` on ``graph`` (built from
    the same folder), every game that cannot be one counted and named."""
    finished, unfinished = files.paths.read(files.finished), files.paths.read(UNFINISHED)
    games, rejected = parse_games(finished.decode("utf-8"), files.finished, unfinished.decode("utf-8"), UNFINISHED)
    frame = spark.createDataFrame([g.as_row() for g in games], PEOPLE_GAMES)
    kept, left = match_games(frame, graph.nodes, graph.edges)
    kept = kept.toPandas().sort_values("game_id", ignore_index=True)
    optimal = _optimal(graph, kept)
    unreachable = kept[optimal < 0]
    kept, optimal = kept[optimal >= 0].reset_index(drop=True), optimal[optimal >= 0]
    by_id = {g.game_id: g for g in games}
    left_rows = [*rejected, *(r.asDict() for r in left.collect())]
    left_rows += [{"game_id": int(g), "reason": TARGET_UNREACHABLE, "detail": "no path to the target"}
                  for g in unreachable["game_id"]]  # fmt: skip
    for row in left_rows:
        game = by_id.get(row["game_id"])
        row.setdefault("file", game.file if game else "")
        row.setdefault("line", game.line if game else 0)
    left_out = pd.DataFrame(left_rows, columns=["file", "line", "game_id", "reason", "detail"])
    left_out = left_out.sort_values("game_id", ignore_index=True)
    steps = kept["route"].map(len) - 1
    plays = pd.DataFrame(
        {
            "game_id": kept["game_id"].astype("int64"),
            "agent": HUMAN,
            "model": None,
            "outcome": kept["outcome"],
            "steps": steps.astype("int32"),
            "optimal_steps": optimal.astype("int32"),
            "route": kept["route"].map(lambda r: [int(v) for v in r]),
            "source": kept["source"].astype("int64"),
            TARGET: kept[TARGET].astype("int64"),
            **NO_MODEL_USAGE,
            "seconds": kept["seconds"].astype("float64").fillna(np.nan),
            "detail": [
                f"wikispeedia {'finished' if f == files.finished else 'unfinished'} game ({f}:{line})"
                + ("; not recorded: time" if pd.isna(sec) else "")
                for f, line, sec in zip(kept["file"], kept["line"], kept["seconds"])
            ],
        }
    )
    counts = _counts(games, rejected, left_out, plays, kept["file"], files)
    inputs = [files.identity(files.finished, finished), files.identity(UNFINISHED, unfinished)]
    return People(plays, left_out, counts, inputs)


def _counts(
    games: list[PersonGame],
    rejected: list[dict],
    left_out: pd.DataFrame,
    plays: pd.DataFrame,
    from_file: pd.Series,
    files: Files,
) -> dict:
    """Per log file: its games, those imported (``from_file``: each play's log file), back clicks,
    outcomes, and the left out by reason (with the moves off the graph); and the totals."""
    per_file = {}
    for name in (files.finished, UNFINISHED):
        mine = [g for g in games if g.file == name]
        out = left_out[left_out["file"] == name]
        off = out[out["reason"] == LINK_NOT_IN_GRAPH]["detail"].map(lambda d: d.count(" | ") + 1)
        imported = plays[(from_file == name).to_numpy()]
        per_file[name] = {
            "rows": len(mine) + sum(r["file"] == name for r in rejected),
            "imported": len(imported),
            "back_clicks": back_clicks(mine),
            "outcomes": {k: int(v) for k, v in imported["outcome"].value_counts().sort_index().items()},
            "left_out_by": Drops(out["reason"]).as_dict(GAME_DROPS),
            "moves_not_in_graph": int(off.sum()),
        }
    return {
        "rows": sum(f["rows"] for f in per_file.values()),
        "imported": len(plays),
        "back_clicks": sum(f["back_clicks"] for f in per_file.values()),
        "left_out_by": Drops(left_out["reason"]).as_dict(GAME_DROPS),
        "files": per_file,
    }
