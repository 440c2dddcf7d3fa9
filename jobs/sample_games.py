"""Games: uniformly random reachable (source, target) pairs with exact optimal lengths → DIR/games.

spark-submit jobs/sample_games.py --graph DIR --games N --seed S [--output DIR2]
    [--target-language CODE] [--targets-where SQL] [--protocol paper|llm-wikirace] [--stratify 3-4,5-6,7-8]
    [--largest-scc] [--method auto|local|graphframes] [--max-draws M] [--overwrite]
"""

from __future__ import annotations

import argparse
import datetime as dt

from wikigame_spark import cli, io, layout, preflight, tracking
from wikigame_spark.config import SampleGamesConfig, flatten, job_config
from wikigame_spark.graph.frame import read_graph
from wikigame_spark.graph.sampling import sample_games
from wikigame_spark.layout import GamesDir, GraphDir
from wikigame_spark.schemas import GAMES


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graph", help="graph directory (nodes/, edges/, manifest.json)")
    p.add_argument("--games", type=int, help="number of games (default 10000)")
    p.add_argument("--seed", type=int, help="seed; same graph + seed + options = same games (default 0)")
    p.add_argument("--output", help="games directory (default GRAPH/games)")
    p.add_argument("--target-language", help="targets only from nodes whose `language` is CODE (OpenAlex)")
    p.add_argument("--targets-where", help="targets only from nodes matching this SQL, e.g. 'page_id > 70000000'")
    p.add_argument(
        "--protocol",
        choices=["paper", "llm-wikirace"],
        help="the study whose defaults apply: llm-wikirace samples in the largest SCC, stratified 3-4,5-6,7-8 "
        "(default paper)",
    )
    p.add_argument("--stratify", help="equal numbers of games per optimal-length band, e.g. 3-4,5-6,7-8")
    p.add_argument(
        "--largest-scc",
        action="store_true",
        default=None,
        help="sources and targets only from the largest strongly connected component (LLM-WikiRace)",
    )
    p.add_argument("--method", choices=["auto", "local", "graphframes"], help="distance method (default auto)")
    p.add_argument("--cache-dir", help="where the local method's mapped graph files are made (default GRAPH/cache)")
    p.add_argument("--max-draws", type=int, help="give up after this many draws (default 1000 x games + 100000)")
    p.add_argument("--experiment", help="MLflow experiment (default sample_games)")
    p.add_argument("--overwrite", action="store_true", default=None, help="replace existing games")
    p.add_argument("--config", help="YAML settings (default conf/sample_games.yaml)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = job_config(SampleGamesConfig, "sample_games", args)
    output = (cfg.output or GraphDir(cfg.graph).games).rstrip("/")
    started = dt.datetime.now(dt.timezone.utc)
    preflight.require_graph(cfg.graph)
    preflight.check_output(output, cfg.overwrite)
    preflight.check_tracking()
    spark = cli.session("sample_games")  # then other URIs than local paths, with the session
    preflight.require_graph(cfg.graph, spark=spark)
    preflight.check_output(output, cfg.overwrite, spark=spark)
    graph = read_graph(spark, cfg.graph)

    sampled = sample_games(graph.nodes, graph.edges, cfg, graph.path)
    c = sampled.counts
    manifest = {
        "kind": "games",
        "seed": cfg.seed,
        "games": c["games"],
        "draws": c["draws"],
        "discarded": c["discarded"],
        "counts": c,
        "graph": graph.identity(),
        "options": flatten(cfg),
        "code_version": io.code_version(),
        "created": started.isoformat(),
        "spark_version": spark.version,
    }
    io.write_graph(spark, output, {layout.GAMES: (sampled.games, GAMES)}, manifest, cfg.overwrite)
    params = {**flatten(cfg), "graph_manifest_sha1": manifest["graph"]["manifest_sha1"]}
    with tracking.start_run(cfg.experiment, run_name=f"sample_games seed={cfg.seed}", params=params) as run:
        tracking.log_metrics({k: c[k] for k in ("games", "draws", "discarded", "unreachable")})
        tracking.log_metrics(c["discarded_by"], prefix="discarded.")
        tracking.log_json(manifest, "manifest.json")
    by = ", ".join(f"{k} {v}" for k, v in c["discarded_by"].items() if v)
    print(
        f"sample_games: wrote {GamesDir(output).games} and {layout.manifest(output)} (MLflow run {run.info.run_id}): "
        f"{c['games']} games from {c['draws']} draws, {c['discarded']} discarded ({by}); "
        f"optimal steps {c['optimal_steps']} ({c['method']})"
    )
    return 0


if __name__ == "__main__":
    cli.run(main)
