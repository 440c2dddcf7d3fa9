"""Games: uniformly random reachable (source, target) pairs with exact optimal lengths → GRAPH/games."""

from __future__ import annotations

import dataclasses
import logging

from wikigame_spark import layout, parquet, tracking
from wikigame_spark.config import SampleGamesConfig
from wikigame_spark.graph.frame import read_graph
from wikigame_spark.graph.sampling import sample_games
from wikigame_spark.layout import GamesDir
from wikigame_spark.runner import Context, Input, InputKind, Job, Output, Result
from wikigame_spark.schemas import GAMES

KIND = "games"
log = logging.getLogger(__name__)


# --games' ceiling when not given: the paper's size of a games set, on a graph with that many nodes.
DEFAULT_GAMES = 10_000


def sample(ctx: Context) -> Result:
    s: SampleGamesConfig = ctx.settings
    graph = read_graph(ctx.spark, ctx.inputs["graph"])
    if not s.games:  # a games set the graph's size: 26 games on a 26-work graph, not 10,000 repeats
        nodes = graph.handle.identity()["nodes"] or DEFAULT_GAMES
        s = dataclasses.replace(s, games=max(min(nodes, DEFAULT_GAMES), len(s.strata())))
        log.info("sample_games: %d games, one per node of the graph (at most %d; --games sets it)", s.games,
                 DEFAULT_GAMES)  # fmt: skip
    sampled = sample_games(graph.nodes, graph.edges, s, graph.handle, degree_quantiles=s.degree_quantiles)
    parquet.write_tables(ctx.spark, ctx.stage(), {layout.GAMES: (sampled.games, GAMES)})
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
    tracking.log_json({**manifest, **ctx.made_by()}, "manifest.json")
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
