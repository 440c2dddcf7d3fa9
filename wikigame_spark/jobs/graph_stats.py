"""Graph statistics: Table 1, components, Figure 1B → GRAPH/stats/ (JSON, Markdown, HTML, PNG), MLflow."""

from __future__ import annotations

from dataclasses import dataclass

from wikigame_spark import tracking
from wikigame_spark.config import EXPERIMENT_HELP, OVERWRITE_HELP, SEED_HELP, check_seed, positive, setting
from wikigame_spark.graph import distances
from wikigame_spark.graph.frame import read_graph
from wikigame_spark.graph.stats import graph_stats, plot_reach, render
from wikigame_spark.runner import Context, Input, InputKind, Job, Output, Result

STATS_JSON = "stats.json"
REACH_PNG = "reachability.png"
KIND = "graph-stats"


@dataclass(frozen=True)
class GraphStatsConfig:
    """``jobs/graph_stats.py``: the paper's Table 1 row and Figure 1B for one graph."""

    graph: str = setting("", "graph folder (nodes/, edges/, manifest.json)", required=True)
    output: str = setting("", "statistics folder (default GRAPH/stats)")
    pairs: int = setting(1000, "random pairs for the reachability curve")
    seed: int = setting(0, SEED_HELP)
    method: str = setting(
        "auto", "distance method (auto: local when the graph fits the driver)", choices=distances.METHODS
    )
    bfs_batch_pairs: int = setting(8192, "graphframes method: pairs searched together", changes_output=False)
    cache_dir: str = setting(
        "", "where the local method's mapped graph files are made (default GRAPH/cache)", changes_output=False
    )
    experiment: str = setting("", EXPERIMENT_HELP)
    overwrite: bool = setting(False, OVERWRITE_HELP)

    def validate(self) -> None:
        positive(self, "pairs", "bfs_batch_pairs")
        check_seed(self)


def stats(ctx: Context) -> Result:
    s: GraphStatsConfig = ctx.settings
    handle = ctx.inputs["graph"]
    graph = read_graph(ctx.spark, handle)
    found = graph_stats(graph.nodes, graph.edges, s, graph.handle)
    png = plot_reach(found["reachability"], f"{handle.name}: reachable within k steps")
    report = {"kind": KIND, **found, "graph": handle.identity(), **ctx.provenance()}
    pages = render(report, f"Graph statistics: {handle.name}", png, REACH_PNG)
    staging = ctx.stage()
    staging.write_json(STATS_JSON, report)
    for name, content in {REACH_PNG: png, **pages}.items():
        staging.write(name, content)
        tracking.log_bytes(content, name)
    tracking.log_json(report, STATS_JSON)
    t, c, curve = found["table1"], found["components"], found["reachability"]
    reach = {k: curve[k] for k in ("fraction_reachable", "max_steps", "mean_steps_reachable")}
    out = ctx.output()
    summary = (
        f"wrote {out}/{STATS_JSON}, {out}/{REACH_PNG} and MLflow run {ctx.run.info.run_id}: "
        f"{t['nodes']} nodes, {t['edges']} edges, {t['pct_disconnected']:.2f}% disconnected, "
        f"{t['pct_unreachable']:.2f}% unreachable, {t['pct_dead_ends']:.2f}% dead ends, "
        f"{t['mean_edges_per_node']:.2f} edges/node; {c['scc_count']} SCCs, the largest "
        f"{c['largest_scc_nodes']} nodes ({100 * c['largest_scc_share']:.1f}%); {c['wcc_count']} WCCs; "
        f"{curve['reachable']}/{curve['pairs']} random pairs reachable ({curve['method']})"
    )
    manifest = {"kind": KIND, "graph": report["graph"], "files": [STATS_JSON, REACH_PNG, *pages]}
    return Result(summary, manifests={"": manifest}, metrics={**t, **c, **reach})


JOB = Job(
    name="graph_stats",
    doc=__doc__,
    settings=GraphStatsConfig,
    body=stats,
    inputs=(Input("graph", InputKind.GRAPH, cache_setting="cache_dir"),),
    outputs=(Output(lambda s, inputs: {"": s.output or inputs["graph"].dir.stats}, what="statistics", kind=KIND),),
    run_name=lambda ctx: f"graph_stats {ctx.inputs['graph'].name}",
)
