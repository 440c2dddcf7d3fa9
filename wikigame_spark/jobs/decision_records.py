"""Training data: every step of an expert's routes (and of any play runs) with exact optimal moves
→ decision records (Parquet), SFT conversations and preference pairs (JSON lines)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, StringType

from wikigame_spark import parquet, tracking
from wikigame_spark.config import (
    EXPERIMENT_HELP,
    OVERWRITE_HELP,
    SEED_HELP,
    ConfigError,
    check_seed,
    non_negative,
    setting,
)
from wikigame_spark.graph import mapped
from wikigame_spark.handles import GamesHandle
from wikigame_spark.layout import GAMES_TABLE
from wikigame_spark.outcomes import SUCCESS
from wikigame_spark.play import catalog, record
from wikigame_spark.play.rules import Rules
from wikigame_spark.play.runs import select_games
from wikigame_spark.play.steps import REWARD_RULE
from wikigame_spark.protocols import PAPER, PLAY_RULES
from wikigame_spark.runner import Context, Input, InputKind, Job, Output, Result
from wikigame_spark.schemas import GAMES
from wikigame_spark.storage import Folder
from wikigame_spark.training import chat
from wikigame_spark.training.decisions import DECISIONS, EXPERT, ROUTES, decision_stage

KIND = "decision-records"
EVAL_FOLDER = "eval"
DECISIONS_TABLE = "decisions"
SFT_FOLDER = "sft"
PREFERENCES_FOLDER = "preferences"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DecisionRecordsConfig:
    """``jobs/decision_records.py``: games (and play runs) → decision records and chat training data."""

    graph: str = setting("", "graph folder (nodes, edges; its games by default)", required=True)
    games_dir: str = setting("", "games folder (default GRAPH/games): an expert route per game")
    eval_games_dir: str = setting(
        "", "held-out games whose expert routes are recorded too, under OUTPUT/eval (default: the games' split's)"
    )
    output: str = setting("", "training data folder (default: the games folder's name + _decisions, beside it)")
    games: int | None = setting(None, "the first N games (default: all)")
    runs: tuple[str, ...] = setting((), "MLflow run ids of play runs on these games: their steps too")
    expert: bool = setting(True, "record an expert's shortest route for every game")
    allow_revisits: bool = setting(
        PLAY_RULES[PAPER]["allow_revisits"], "the expert's rules: visited pages offered too (as a play run's)"
    )
    allow_back: bool = setting(False, "the expert's rules: the back button offered (as a play run's)")
    max_titles: int = setting(chat.MAX_TITLES, "link titles a conversation shows per step (paper: 200; 0 = all)")
    view: str = setting(
        chat.VIEWS[0],
        "the target in a conversation: by title and summary (the paper), or by title only",
        choices=chat.VIEWS,
    )
    seed: int = setting(0, SEED_HELP + " (breaks ties between optimal moves)")
    partitions: int = setting(0, "Spark tasks (0: twice the default parallelism)", changes_output=False)
    experiment: str = setting("", EXPERIMENT_HELP)
    overwrite: bool = setting(False, OVERWRITE_HELP)

    def validate(self) -> None:
        check_seed(self)
        non_negative(self, "max_titles", "partitions")
        if self.games is not None and self.games <= 0:
            raise ConfigError(f"--games {self.games}: must be a positive number (omit it for every game)")
        if not self.expert and not self.runs:
            raise ConfigError("nothing to record: --no-expert and no --runs; give play runs, or keep the expert")


def _expert_routes(games: DataFrame, rules: Rules) -> DataFrame:
    return games.select(
        "game_id",
        "source",
        "target",
        "optimal_steps",
        F.lit(EXPERT).alias("player"),
        F.lit(None).cast(StringType()).alias("run_id"),
        F.lit(SUCCESS).alias("outcome"),
        F.lit(None).cast(ROUTES["route"].dataType).alias("route"),
        F.lit(rules.allow_revisits).cast(BooleanType()).alias("allow_revisits"),
        F.lit(rules.allow_back).cast(BooleanType()).alias("allow_back"),
    )


def _play_routes(ctx: Context, games: GamesHandle, game_ids: DataFrame) -> list[tuple[catalog.PlayRun, DataFrame]]:
    """Each run's plays as ROUTES rows; a run of other games is refused."""
    if not ctx.settings.runs:
        return []
    found, _ = catalog.find_runs(ctx.experiment, ctx.settings.runs)
    out = []
    for run in found:
        if run.params.get(record.GAMES_MANIFEST_SHA1) != games.sha1:
            raise ValueError(
                f"--runs: run {run.run_id} ({run.run_name}) played other games "
                f"({run.params.get(record.GAMES_URI)}), not {games.path}"
            )
        rules = Rules.of_params(run.params)
        plays, _ = catalog.load_plays(ctx.spark, run)
        rows = plays.join(game_ids, "game_id", "left_semi").select(
            "game_id",
            "source",
            "target",
            "optimal_steps",
            F.col("agent").alias("player"),
            F.lit(run.run_id).alias("run_id"),
            "outcome",
            "route",
            F.lit(rules.allow_revisits).alias("allow_revisits"),
            F.lit(rules.allow_back).alias("allow_back"),
        )
        out.append((run, rows))
    return out


def _games(ctx: Context, games: GamesHandle) -> DataFrame:
    table = parquet.read_table(ctx.spark, games.folder.sub(GAMES_TABLE), GAMES)
    return select_games(table, ctx.settings.games)


def _write(
    ctx: Context, routes: DataFrame, files: str, folder: Folder, preferences: bool
) -> tuple[DataFrame, int, int]:
    """The decision records of ``routes`` and their chat data under ``folder``: the records as
    written, the SFT examples and the preference pairs."""
    s: DecisionRecordsConfig = ctx.settings
    partitions = s.partitions or 2 * ctx.spark.sparkContext.defaultParallelism
    parquet.write_tables(folder, {DECISIONS_TABLE: (decision_stage(routes, files, s.seed, partitions), DECISIONS)})
    written = parquet.read_table(ctx.spark, folder.sub(DECISIONS_TABLE), DECISIONS)
    parquet.write_json_lines(chat.sft_examples(written, s.max_titles, s.view, s.seed), folder.sub(SFT_FOLDER), chat.SFT)
    pairs = 0
    if preferences:
        made = chat.preference_pairs(written, s.max_titles, s.view, s.seed)
        parquet.write_json_lines(made, folder.sub(PREFERENCES_FOLDER), chat.PREFERENCES)
        pairs = parquet.read_json_lines(ctx.spark, folder.sub(PREFERENCES_FOLDER), chat.PREFERENCES).count()
    return written, parquet.read_json_lines(ctx.spark, folder.sub(SFT_FOLDER), chat.SFT).count(), pairs


def records(ctx: Context) -> Result:
    s: DecisionRecordsConfig = ctx.settings
    games: GamesHandle = ctx.inputs["games_dir"]
    held_out: GamesHandle | None = ctx.inputs["eval_games_dir"]
    rules = Rules(s.allow_revisits, s.allow_back)
    table = _games(ctx, games)
    parts = [_expert_routes(table, rules)] if s.expert else []
    runs = _play_routes(ctx, games, table.select("game_id"))
    parts += [rows for _, rows in runs]
    routes = parts[0]
    for more in parts[1:]:
        routes = routes.unionByName(more)
    files = mapped.ensure_graph(ctx.spark, games.graph)
    stage = ctx.stage()
    written, sft, pairs = _write(ctx, routes, files, stage, preferences=True)
    counts = _counts(written)
    held = None
    if held_out is not None:  # the held-out games' expert routes: what a trained agent is measured against
        eval_routes = _expert_routes(_games(ctx, held_out), rules)
        kept, held_sft, _ = _write(ctx, eval_routes, files, stage.sub(EVAL_FOLDER), preferences=False)
        held = {"games": held_out.path, "manifest_sha1": held_out.sha1, "sft_examples": held_sft, **_counts(kept)}
    manifest = {
        "kind": KIND,
        "records": counts["records"],
        "sft_examples": sft,
        "preference_pairs": pairs,
        "by_player": counts["by_player"],
        "expert_rules": {"allow_revisits": s.allow_revisits, "allow_back": s.allow_back} if s.expert else None,
        "runs": [{"run_id": r.run_id, "run_name": r.run_name, "agent": r.agent} for r, _ in runs],
        "reward_rule": REWARD_RULE,
        "view": s.view,
        "max_titles": s.max_titles,
        "seed": s.seed,
        "games": games.manifest | {"path": games.path, "manifest_sha1": games.sha1},
        EVAL_FOLDER: held,
    }
    metrics = {"records": counts["records"], "sft_examples": sft, "preference_pairs": pairs}
    if held:
        metrics.update(eval_records=held["records"], eval_sft_examples=held["sft_examples"])
    tracking.log_json({**manifest, **ctx.provenance()}, "manifest.json")
    by = ", ".join(f"{p} {c['records']} ({c['optimal_share']:.0%} optimal)" for p, c in counts["by_player"].items())
    summary = (
        f"wrote {ctx.output()} ({DECISIONS_TABLE}, {SFT_FOLDER}, {PREFERENCES_FOLDER}"
        + (f", {EVAL_FOLDER}" if held else "")
        + f", manifest.json) and MLflow run {ctx.run.info.run_id}: {counts['records']} decision records ({by}); "
        f"{sft} SFT examples, {pairs} preference pairs"
        + (f"; held-out eval games: {held['records']} records, {held['sft_examples']} SFT examples" if held else "")
    )
    return Result(summary, manifests={"": manifest}, metrics=metrics)


def _held_out(inputs: dict) -> str:
    """The eval side of the games' split, when the games are its train side."""
    split = inputs["games_dir"].manifest.get("split") or {}
    return split.get("folders", {}).get("eval", "") if split.get("side") == "train" else ""


def _counts(decisions: DataFrame) -> dict:
    rows = (
        decisions.groupBy("player")
        .agg(
            F.count(F.lit(1)).alias("records"),
            F.countDistinct("game_id", F.coalesce("run_id", F.lit(""))).alias("routes"),  # the expert's: no run
            F.avg(F.col("optimal_move").cast("double")).alias("optimal_share"),
            F.avg("reward").alias("mean_reward"),
            F.sum(F.col("back").cast("int")).alias("back_moves"),
        )
        .orderBy("player")
        .collect()
    )
    by = {
        r["player"]: {k: r[k] for k in ("records", "routes", "optimal_share", "mean_reward", "back_moves")}
        for r in rows
    }
    return {"records": sum(c["records"] for c in by.values()), "by_player": by}


JOB = Job(
    name="decision_records",
    doc=__doc__,
    settings=DecisionRecordsConfig,
    body=records,
    inputs=(
        Input("graph", InputKind.GRAPH),
        Input("games_dir", InputKind.GAMES, default=lambda inputs: inputs["graph"].dir.games, bound_to="graph"),
        Input("eval_games_dir", InputKind.GAMES, default=_held_out, bound_to="graph", optional=True),
    ),
    outputs=(
        Output(
            lambda s, inputs: {"": s.output or f"{inputs['games_dir'].path.rstrip('/')}_decisions"},
            what="decision records",
            kind=KIND,
        ),
    ),
    run_name=lambda ctx: f"decision_records seed={ctx.settings.seed}",
)
