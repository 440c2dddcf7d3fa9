"""Games: uniformly random reachable (source, target) pairs with exact optimal lengths → GRAPH/games."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import ClassVar

from wikigame_spark import layout, parquet, tracking
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
from wikigame_spark.graph.sampling import sample_games
from wikigame_spark.layout import GamesDir
from wikigame_spark.protocols import LLM_WIKIRACE, PAPER, PROTOCOLS
from wikigame_spark.runner import Context, Input, InputKind, Job, Output, Result
from wikigame_spark.schemas import GAMES

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
    protocol: str = setting(
        PAPER,
        "the study whose defaults apply (llm-wikirace: largest SCC, bands 3-4,5-6,7-8)",
        choices=PROTOCOLS,
    )
    experiment: str = setting("", EXPERIMENT_HELP)
    overwrite: bool = setting(False, OVERWRITE_HELP)

    def validate(self) -> None:
        positive(self, "bfs_batch_pairs")
        non_negative(self, "games", "degree_quantiles")
        if self.degree_quantiles == 1:
            raise ConfigError("--degree-quantiles 1: ask for at least 2 quantiles, or 0 for none")
        check_seed(self)
        if self.max_draws < 0 or 0 < self.max_draws < self.games:
            raise ConfigError(
                f"--max-draws: must be 0 (automatic) or at least --games {self.games}, got {self.max_draws}"
            )
        bands = self.strata()
        if bands and 0 < self.games < len(bands):
            raise ConfigError(
                f"--games: {self.games} is fewer than the {len(bands)} bands of --stratify {self.stratify!r}"
            )

    def strata(self) -> tuple[tuple[int, int], ...]:
        """``stratify`` as sorted ``(low, high)`` step bands, inclusive; empty when not stratified."""
        return parse_bands(self.stratify, "--stratify")

    def draw_limit(self) -> int:
        return self.max_draws or 1000 * self.games + 100_000


def sample(ctx: Context) -> Result:
    s: SampleGamesConfig = ctx.settings
    graph = read_graph(ctx.spark, ctx.inputs["graph"])
    if not s.games:  # a games set the graph's size: 26 games on a 26-work graph, not 10,000 repeats
        nodes = graph.handle.identity()["nodes"] or DEFAULT_GAMES
        s = dataclasses.replace(s, games=max(min(nodes, DEFAULT_GAMES), len(s.strata())))
        log.info("sample_games: %d games, one per node of the graph (at most %d; --games sets it)", s.games,
                 DEFAULT_GAMES)  # fmt: skip
    sampled = sample_games(graph.nodes, graph.edges, s, graph.handle, degree_quantiles=s.degree_quantiles)
    parquet.write_tables(ctx.stage(), {layout.GAMES_TABLE: (sampled.games, GAMES)})
    c = sampled.counts
    manifest = {
        "kind": KIND,
        "seed": s.seed,
        "games": c["games"],
        "draws": c["draws"],
        "discarded": c["discarded"],
        "counts": c,
        "graph": graph.identity(),
    }
    tracking.log_metrics(c["discarded_by"], prefix="discarded.")
    tracking.log_json({**manifest, **ctx.provenance()}, "manifest.json")
    by = ", ".join(f"{k} {v}" for k, v in c["discarded_by"].items() if v)
    summary = (
        f"wrote {GamesDir(ctx.output()).games} and {layout.manifest(ctx.output())} (MLflow run {ctx.run.info.run_id}): "
        f"{c['games']} games from {c['draws']} draws, {c['discarded']} discarded ({by}); "
        f"optimal steps {c['optimal_steps']} ({c['method']})"
    )
    metrics = {k: c[k] for k in ("games", "draws", "discarded", "unreachable")}
    return Result(summary, manifests={"": manifest}, metrics=metrics)


JOB = Job(
    name="sample_games",
    doc=__doc__,
    settings=SampleGamesConfig,
    body=sample,
    inputs=(Input("graph", InputKind.GRAPH, cache_setting="cache_dir"),),
    outputs=(Output(lambda s, inputs: {"": s.output or inputs["graph"].dir.games}, what="games", kind=KIND),),
    run_name=lambda ctx: f"sample_games seed={ctx.settings.seed}",
)
