"""The paper's evaluation of an experiment's play runs: tables, fits, figures → a report + MLflow run.

spark-submit jobs/report.py --experiment NAME [--runs ID [ID…]] [--output DIR] [--overwrite]
    [--human-cutoff 10] [--human-mode truncated|censored] [--run-name report]

Writes DIR (default out/report/<experiment>): report.md, report.html, figures/*.png,
tables/*.csv, report.json; and logs the same files as artifacts of a new run in the experiment.
"""

from __future__ import annotations

import argparse

from wikigame_spark import cli, io, preflight, tracking
from wikigame_spark.config import ReportConfig, flatten, job_config, parse_bands
from wikigame_spark.evaluation import evaluate, render
from wikigame_spark.play import record


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--experiment", help="MLflow experiment holding the play runs")
    p.add_argument("--runs", nargs="+", help="only these run ids (default: every finished play run)")
    p.add_argument("--output", help="report folder (default out/report/<experiment>)")
    p.add_argument("--overwrite", action="store_true", default=None, help="replace an output that is not a report")
    p.add_argument("--run-name", help="name of the report's MLflow run (default report)")
    p.add_argument("--human-cutoff", type=int, help="human games: steps above optimal beyond this are unknown (10)")
    p.add_argument("--human-mode", choices=["truncated", "censored"], help="how the unknown human games enter the fit")
    p.add_argument("--bands", help="difficulty bands by optimal steps (default 1-2,3-4,5-6,7-8)")
    p.add_argument("--config", help="YAML settings (default conf/report.yaml)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = job_config(ReportConfig, "report", args)
    output = (cfg.output or render.default_output(cfg.experiment)).rstrip("/")
    preflight.check_output(output, overwrite=True)  # writable; an earlier report is replaced (below)
    preflight.check_tracking()
    spark = cli.session("report")
    preflight.check_output(output, overwrite=True, spark=spark)
    render.check_output(spark, output, cfg.overwrite)
    found, skipped = record.find_runs(cfg.experiment, cfg.runs)
    runs = evaluate.labelled(found)
    if not runs:
        raise ValueError(f"experiment {cfg.experiment!r} has no finished play runs to report on")

    plays, sources = evaluate.labelled_plays(spark, runs)
    bands = parse_bands(cfg.bands, "bands")
    ev = evaluate.evaluate(plays, runs, skipped, sources, cfg.human_cutoff, cfg.human_mode, bands)
    params = {**flatten(cfg), "output": output, "play_runs": ",".join(r.run_id for r in runs)}
    params["code_version"] = io.code_version()
    with tracking.start_run(cfg.experiment, cfg.run_name, params, tags={render.KIND_TAG: "report"}) as run:
        files = render.render(ev, cfg.experiment, run_id=run.info.run_id)
        tracking.log_metrics(ev.metrics())
        render.log_artifacts(files)
        io.publish_files(spark, files, output)
    best = ev.success.sort_values("success_rate", ascending=False).iloc[0]
    figures = sum(k.startswith("figures/") for k in files)
    print(
        f"report: wrote {output} (report.md, report.html, {figures} figures, tables) and MLflow run "
        f"{run.info.run_id} ({cfg.experiment}/{cfg.run_name}): {len(runs)} runs, "
        f"{int(ev.success['games'].sum())} games, {len(ev.fits)} fits"
        + (f", {len(skipped)} runs left out" if skipped else "")
        + f"; best success {best['label']} on {best['graph']} "
        f"{best['success_rate']:.3f} ± {best['success_rate_sd']:.3f}"
    )
    return 0


if __name__ == "__main__":
    cli.run(main)
