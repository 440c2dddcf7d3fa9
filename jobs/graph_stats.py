"""Graph statistics: Table 1, components (GraphFrames), Figure 1B → DIR/stats/ (JSON, Markdown, HTML, PNG), MLflow.

spark-submit jobs/graph_stats.py --graph DIR [--output DIR/stats] [--pairs 1000] [--seed 0]
    [--method auto|local|graphframes] [--overwrite]
"""

from __future__ import annotations

import argparse
import datetime as dt

from wikigame_spark import cli, io, preflight, tracking
from wikigame_spark.config import GraphStatsConfig, flatten, job_config
from wikigame_spark.graph.frame import read_graph
from wikigame_spark.graph.stats import graph_stats, plot_reach, render
from wikigame_spark.layout import GraphDir

STATS_JSON = "stats.json"
REACH_PNG = "reachability.png"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graph", help="graph directory (nodes/, edges/, manifest.json)")
    p.add_argument("--output", help="statistics directory (default GRAPH/stats)")
    p.add_argument("--pairs", type=int, help="random pairs for the reachability curve (default 1000)")
    p.add_argument("--seed", type=int, help="seed of the random pairs (default 0)")
    p.add_argument("--method", choices=["auto", "local", "graphframes"], help="distance method (default auto)")
    p.add_argument("--cache-dir", help="where the local method's mapped graph files are made (default GRAPH/cache)")
    p.add_argument("--experiment", help="MLflow experiment (default graph_stats)")
    p.add_argument("--overwrite", action="store_true", default=None, help="replace existing statistics")
    p.add_argument("--config", help="YAML settings (default conf/graph_stats.yaml)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = job_config(GraphStatsConfig, "graph_stats", args)
    output = (cfg.output or GraphDir(cfg.graph).stats).rstrip("/")
    started = dt.datetime.now(dt.timezone.utc)
    preflight.require_graph(cfg.graph)
    preflight.check_output(output, cfg.overwrite)
    preflight.check_tracking()
    spark = cli.session("graph_stats")  # then other URIs than local paths, with the session
    preflight.require_graph(cfg.graph, spark=spark)
    preflight.check_output(output, cfg.overwrite, spark=spark)
    graph = read_graph(spark, cfg.graph)

    stats = graph_stats(graph.nodes, graph.edges, cfg, graph.path)
    identity = graph.identity()
    name = identity.get("dbname") or identity.get("language") or graph.path.rsplit("/", 1)[-1]
    png = plot_reach(stats["reachability"], f"{name}: reachable within k steps")
    report = {
        "kind": "graph-stats",
        **stats,
        "graph": identity,
        "parameters": flatten(cfg),
        "code_version": io.code_version(),
        "created": started.isoformat(),
        "spark_version": spark.version,
    }
    pages = render(report, f"Graph statistics: {name}", png, REACH_PNG)
    with io.staged_output(spark, output, cfg.overwrite) as staging:
        io.write_json(spark, f"{staging}/{STATS_JSON}", report)
        io.write_bytes(spark, f"{staging}/{REACH_PNG}", png)
        for page, content in pages.items():
            io.write_bytes(spark, f"{staging}/{page}", content)
    params = {**flatten(cfg), "graph_manifest_sha1": identity["manifest_sha1"], "code_version": io.code_version()}
    with tracking.start_run(cfg.experiment, run_name=f"graph_stats {name}", params=params) as run:
        tracking.log_metrics(stats["table1"])
        tracking.log_metrics(stats["components"])
        curve = stats["reachability"]
        tracking.log_metrics({k: curve[k] for k in ("fraction_reachable", "max_steps", "mean_steps_reachable")})
        tracking.log_json(report, STATS_JSON)
        tracking.log_bytes(png, REACH_PNG)
        for page, content in pages.items():
            tracking.log_bytes(content, page)
    t, c = stats["table1"], stats["components"]
    print(
        f"graph_stats: wrote {output}/{STATS_JSON}, {output}/{REACH_PNG} and MLflow run {run.info.run_id}: "
        f"{t['nodes']} nodes, {t['edges']} edges, {t['pct_disconnected']:.2f}% disconnected, "
        f"{t['pct_unreachable']:.2f}% unreachable, {t['pct_dead_ends']:.2f}% dead ends, "
        f"{t['mean_edges_per_node']:.2f} edges/node; {c['scc_count']} SCCs, the largest "
        f"{c['largest_scc_nodes']} nodes ({100 * c['largest_scc_share']:.1f}%); {c['wcc_count']} WCCs; "
        f"{curve['reachable']}/{curve['pairs']} random pairs "
        f"reachable ({curve['method']})"
    )
    return 0


if __name__ == "__main__":
    cli.run(main)
