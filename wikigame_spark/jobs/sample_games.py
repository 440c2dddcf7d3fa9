"""Games: uniformly random reachable (source, target) pairs with exact optimal lengths → GRAPH/games
(and, with ``--eval-games``, a held-out eval set whose targets no train game has → GRAPH/games_eval);
or, with ``--human-plays``, the pairs people played (all, or a seeded sample), each with how many
played and won it."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import ClassVar

from wikigame_spark import layout, manifests, parquet, preflight, storage, tracking
from wikigame_spark.config import (
    EXPERIMENT_HELP,
    OVERWRITE_HELP,
    SEED_HELP,
    ConfigError,
    check_seed,
    non_negative,
    positive,
    setting,
)
from wikigame_spark.evaluation.bands import parse_bands
from wikigame_spark.graph import distances
from wikigame_spark.graph.frame import read_graph
from wikigame_spark.graph.played_pairs import PEOPLE_PAIRS, PLAYED_GAMES, played_pairs
from wikigame_spark.graph.sampling import EVAL, TRAIN, SampledGames, Split, sample_games
from wikigame_spark.handles import GraphHandle
from wikigame_spark.layout import GamesDir
from wikigame_spark.play import record
from wikigame_spark.protocols import LLM_WIKIRACE, PAPER, PROTOCOLS
from wikigame_spark.runner import Context, Input, InputKind, Job, Output, Result
from wikigame_spark.schemas import GAMES
from wikigame_spark.storage import Folder

KIND = "games"
log = logging.getLogger(__name__)


# --games' ceiling when not given: the paper's size of a games set, on a graph with that many nodes.
DEFAULT_GAMES = 10_000


@dataclass(frozen=True)
class SampleGamesConfig:
    """``jobs/sample_games.py``: reachable (source, target) pairs with exact optimal lengths."""

    PRESETS: ClassVar[dict] = {LLM_WIKIRACE: {"largest_scc": True, "stratify": "3-4,5-6,7-8"}}

    graph: str = setting("", "graph folder (nodes/, edges/, manifest.json)", required=True)
    output: str = setting("", "games folder (default GRAPH/games)")
    games: int = setting(0, "number of games (default: one per node of the graph, at most 10,000)")
    seed: int = setting(0, SEED_HELP)
    target_language: str = setting("", "targets only from nodes whose `language` is this code (OpenAlex)")
    targets_where: str = setting("", "targets only from nodes matching this SQL, e.g. 'page_id > 70000000'")
    stratify: str = setting("", "equal numbers of games per optimal-length band, e.g. 3-4,5-6,7-8")
    largest_scc: bool = setting(False, "sources and targets only from the largest strongly connected component")
    degree_quantiles: int = setting(
        0,
        "share the games equally among the k x k cells of the target's in-degree and the source's out-degree "
        "quantiles (over nodes with in-links / links; within each --stratify band); 0 = off",
    )
    method: str = setting(
        "auto", "distance method (auto: local when the graph fits the driver)", choices=distances.METHODS
    )
    bfs_batch_pairs: int = setting(8192, "graphframes method: pairs searched together", changes_output=False)
    cache_dir: str = setting(
        "", "where the local method's mapped graph files are made (default GRAPH/cache)", changes_output=False
    )
    max_draws: int = setting(0, "give up after this many draws (0: 1000 x games + 100000)")
    eval_games: int = setting(0, "also draw a held-out eval set of this many games, no target shared with --games'")
    eval_output: str = setting("", "the eval set's folder (default: the games folder's name + _eval, beside it)")
    split_seed: int = setting(0, "the seed that chooses which nodes are held out for eval")
    eval_share: float = setting(0.0, "share of the nodes held out as eval targets (0: eval games / all games)")
    split_sources: bool = setting(False, "keep the eval games' sources apart from the train games' too")
    human_plays: str = setting(
        "",
        "a people's play run folder (jobs/import_human_games.py): the games are the pairs they played "
        "(all, or --games of them in the seed's order), with how many played and won each",
    )
    won_only: bool = setting(False, "with --human-plays: only the pairs at least one person won")
    protocol: str = setting(
        PAPER,
        "the study whose defaults apply (llm-wikirace: largest SCC, bands 3-4,5-6,7-8)",
        choices=PROTOCOLS,
    )
    experiment: str = setting("", EXPERIMENT_HELP)
    overwrite: bool = setting(False, OVERWRITE_HELP)

    def validate(self) -> None:
        positive(self, "bfs_batch_pairs")
        non_negative(self, "games", "degree_quantiles", "eval_games")
        if not 0 <= self.eval_share < 1:
            raise ConfigError(f"--eval-share {self.eval_share}: a share of the nodes, at least 0 and below 1")
        if (self.eval_share or self.eval_output or self.split_sources) and not self.eval_games:
            raise ConfigError("--eval-share, --eval-output and --split-sources shape a split: give --eval-games too")
        if self.degree_quantiles == 1:
            raise ConfigError("--degree-quantiles 1: ask for at least 2 quantiles, or 0 for none")
        check_seed(self)
        if self.max_draws < 0 or 0 < self.max_draws < self.games:
            raise ConfigError(
                f"--max-draws: must be 0 (automatic) or at least --games {self.games}, got {self.max_draws}"
            )
        if self.human_plays:
            drawn = ("stratify", "largest_scc", "degree_quantiles", "eval_games", "target_language", "targets_where")
            given = [f"--{k.replace('_', '-')}" for k in drawn if getattr(self, k)]
            if given:
                raise ConfigError(
                    f"--human-plays takes the pairs people played, not drawn ones: drop {', '.join(given)}"
                )
        elif self.won_only:
            raise ConfigError("--won-only keeps the pairs people won: give --human-plays too")
        bands = self.strata()
        if bands and 0 < self.games < len(bands):
            raise ConfigError(
                f"--games: {self.games} is fewer than the {len(bands)} bands of --stratify {self.stratify!r}"
            )

    def strata(self) -> tuple[tuple[int, int], ...]:
        """``stratify`` as sorted ``(low, high)`` step bands, inclusive; empty when not stratified."""
        return parse_bands(self.stratify, "--stratify")

    def draw_limit(self) -> int:
        return self.max_draws or 1000 * (self.games + self.eval_games) + 100_000

    def split(self) -> Split | None:
        """The held-out eval set asked for (None: no split)."""
        if not self.eval_games:
            return None
        share = self.eval_share or self.eval_games / (self.games + self.eval_games)
        return Split(self.eval_games, self.split_seed, share, self.split_sources)


def eval_output(s: SampleGamesConfig, games: str) -> str:
    return s.eval_output or f"{games.rstrip('/')}_eval"


def sample(ctx: Context) -> Result:
    return from_people(ctx) if ctx.settings.human_plays else draw(ctx)


def from_people(ctx: Context) -> Result:
    """The games of the pairs a people's play run played."""
    s: SampleGamesConfig = ctx.settings
    graph = ctx.inputs["graph"]
    folder = storage.folder(preflight.absolute(s.human_plays), ctx.spark)
    made = read_people_run(folder, graph)
    games, c = played_pairs(record.read_run(ctx.spark, folder), s.seed, s.games, s.won_only)
    parquet.write_tables(ctx.stage(), {layout.GAMES_TABLE: (games, PLAYED_GAMES)})
    source = {"plays": folder.root, "mlflow_run_id": made.get("mlflow_run_id"), "run_name": made.get("run_name")}
    manifest = {"kind": KIND, "seed": s.seed, "games": c["games"], "draws": c["pairs"], "discarded": 0,
                "counts": c, "graph": graph.identity(), PEOPLE_PAIRS: source}  # fmt: skip
    tracking.log_json({**manifest, **ctx.provenance()}, "manifest.json")
    left = ", ".join(f"{k} {v}" for k, v in c["left_out"].items() if v)
    summary = (
        f"wrote {GamesDir(ctx.output()).games} and {layout.manifest(ctx.output())} (MLflow run {ctx.run.info.run_id}): "
        f"{c['games']} games from the {c['pairs']} pairs of {c['plays']} people's games"
        + (f"; pairs left out: {left}" if left else "")
    )
    return Result(summary, manifests={"": manifest}, metrics={"games": c["games"], "pairs": c["pairs"]})


def read_people_run(folder: Folder, graph: GraphHandle) -> dict:
    """The finished people's play run at ``folder``, imported on ``graph``: its manifest."""
    try:
        made = manifests.read_manifest(folder)
    except FileNotFoundError:
        raise ConfigError(f"--human-plays {folder.root}: no finished play run there (import people's games "
                          "with jobs/import_human_games.py)") from None  # fmt: skip
    recorded = (made.get("graph") or {}).get("manifest_sha1")
    if made.get("kind") != record.RUN_KIND or recorded != graph.sha1:
        raise ConfigError(
            f"--human-plays {folder.root}: not a play run on --graph {graph.path} (its manifest names "
            f"{(made.get('graph') or {}).get('path') or 'no graph'}); import the people's games on this graph"
        )
    return made


def draw(ctx: Context) -> Result:
    """Games drawn at random (the paper's)."""
    s: SampleGamesConfig = ctx.settings
    graph = read_graph(ctx.spark, ctx.inputs["graph"])
    if not s.games:  # a games set the graph's size: 26 games on a 26-work graph, not 10,000 repeats
        nodes = graph.handle.identity()["nodes"] or DEFAULT_GAMES
        s = dataclasses.replace(s, games=max(min(nodes, DEFAULT_GAMES), len(s.strata())))
        log.info("sample_games: %d games, one per node of the graph (at most %d; --games sets it)", s.games,
                 DEFAULT_GAMES)  # fmt: skip
    split = s.split()
    sampled = sample_games(graph.nodes, graph.edges, s, graph.handle, s.degree_quantiles, split)
    sets = {"": sampled.games} if split is None else {"": sampled.games, EVAL: sampled.eval_games}
    for key, games in sets.items():
        parquet.write_tables(ctx.stage(key), {layout.GAMES_TABLE: (games, GAMES)})
    manifests = {key: _manifest(s, graph, counts) for key, counts in _counts(sampled).items()}
    if split is not None:
        where = {TRAIN: ctx.output(), EVAL: ctx.output(EVAL)}
        for key, side in (("", TRAIN), (EVAL, EVAL)):
            manifests[key]["split"] = {"side": side, **split.describe(s.games), "folders": where}
    c = sampled.counts
    tracking.log_metrics(c["discarded_by"], prefix="discarded.")
    tracking.log_json({**manifests[""], **ctx.provenance()}, "manifest.json")
    by = ", ".join(f"{k} {v}" for k, v in c["discarded_by"].items() if v)
    summary = (
        f"wrote {GamesDir(ctx.output()).games} and {layout.manifest(ctx.output())} (MLflow run {ctx.run.info.run_id}): "
        f"{c['games']} games from {c['draws']} draws, {c['discarded']} discarded ({by}); "
        f"optimal steps {c['optimal_steps']} ({c['method']})"
    )
    metrics = {k: c[k] for k in ("games", "draws", "discarded", "unreachable")}
    if split is not None:
        e = sampled.eval_counts
        summary += f"; and {e['games']} held-out eval games (no target shared) in {ctx.output(EVAL)}"
        tracking.log_json({**manifests[EVAL], **ctx.provenance()}, "eval_manifest.json")
        metrics["eval_games"] = e["games"]
    return Result(summary, manifests=manifests, metrics=metrics)


def _counts(sampled: SampledGames) -> dict[str, dict]:
    return {"": sampled.counts, **({EVAL: sampled.eval_counts} if sampled.eval_counts else {})}


def _manifest(s: SampleGamesConfig, graph, c: dict) -> dict:
    return {
        "kind": KIND,
        "seed": s.seed,
        "games": c["games"],
        "draws": c["draws"],
        "discarded": c["discarded"],
        "counts": c,
        "graph": graph.identity(),
    }


def _outputs(s: SampleGamesConfig, inputs: dict) -> dict[str, str]:
    games = s.output or inputs["graph"].dir.games
    return {"": games} if not s.eval_games else {"": games, EVAL: eval_output(s, games)}


JOB = Job(
    name="sample_games",
    doc=__doc__,
    settings=SampleGamesConfig,
    body=sample,
    inputs=(Input("graph", InputKind.GRAPH, cache_setting="cache_dir"),),
    outputs=(Output(_outputs, what="games", kind=KIND),),
    run_name=lambda ctx: f"sample_games seed={ctx.settings.seed}",
)
