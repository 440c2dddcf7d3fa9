"""The paper's evaluation of an experiment's play runs: tables, fits, figures → a report + MLflow run.

Writes OUTPUT (default out/report/EXPERIMENT): report.md, report.html, figures/*.png, tables/*.csv,
report.json; and logs the same files as artifacts of a new run in the experiment.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import mlflow
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wikigame_spark import outputs, tracking
from wikigame_spark.config import EXPERIMENT_HELP, ConfigError, positive, setting
from wikigame_spark.evaluation import evaluate, render, tables
from wikigame_spark.evaluation.bands import parse_bands
from wikigame_spark.outcomes import SUCCESS
from wikigame_spark.play import catalog
from wikigame_spark.runner import Context, Job, Output, Result
from wikigame_spark.schemas import OUTCOME, STEPS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReportConfig:
    """``jobs/report.py``: the play runs of an experiment → tables, fits, figures, report run."""

    experiment: str = setting("", EXPERIMENT_HELP)
    runs: tuple[str, ...] = setting((), "only these MLflow run ids (default: every finished play run)")
    output: str = setting("", "report folder (default out/report/EXPERIMENT)")
    overwrite: bool = setting(False, "replace an output folder that is not an earlier report")
    run_name: str = setting("report", "name of the report's MLflow run")
    human_cutoff: int = setting(10, "human games: more steps above optimal than this are unknown")
    human_mode: str = setting(
        "truncated", "how the unknown human games enter the fit", choices=("truncated", "censored")
    )
    bands: str = setting("1-2,3-4,5-6,7-8", "difficulty bands by optimal steps; games in none are 'other'")
    strict: bool = setting(False, "fail on a play run that cannot be evaluated instead of leaving it out")

    def validate(self) -> None:
        parse_bands(self.bands, "--bands")
        positive(self, "human_cutoff")
        if not self.run_name:
            raise ConfigError("--run-name: give a name for the report's MLflow run")


@dataclass(frozen=True)
class Found:
    """The play runs to report on, and those left out with the reason."""

    runs: list[evaluate.ReportRun]
    skipped: list[dict]


def find_runs(ctx: Context) -> Found:
    """The play runs to report on, found before the report's own run is made."""
    found, skipped = catalog.find_runs(ctx.experiment, ctx.settings.runs)
    runs = evaluate.labelled(found)
    if not runs:
        raise ValueError(f"experiment {ctx.experiment!r} has no finished play runs to report on")
    ctx.tags[render.KIND_TAG] = render.KIND
    return Found(runs, list(skipped))


def unusable(plays: DataFrame) -> dict[str, str]:
    """Runs whose plays contradict the rules (a success in fewer steps than the optimal length: the
    plays were made on other files than the graph's manifest records), by run id, with the reason."""
    short = F.col(OUTCOME) == F.lit(SUCCESS)
    short &= F.col(STEPS) < F.col("optimal_steps")
    found = plays.filter(short).groupBy(tables.RUN_ID).count().collect()
    return {r[tables.RUN_ID]: f"{r['count']} successes in fewer steps than the optimal length" for r in found}


def report(ctx: Context) -> Result:
    s: ReportConfig = ctx.settings
    found: Found = ctx.before
    runs, skipped = found.runs, list(found.skipped)
    plays, sources = evaluate.labelled_plays(ctx.spark, runs)
    bad = unusable(plays)
    if bad:
        names = "; ".join(f"{r.run_name} ({r.run_id}): {bad[r.run_id]}" for r in runs if r.run_id in bad)
        if s.strict or len(bad) == len(runs):
            raise ValueError(f"play runs that cannot be evaluated: {names}")
        log.warning("report: leaving out play runs that cannot be evaluated: %s", names)
        skipped += [
            {"run_id": r.run_id, "run_name": r.run_name, "reason": bad[r.run_id]} for r in runs if r.run_id in bad
        ]
        runs = [r for r in runs if r.run_id not in bad]
        plays = plays.filter(~F.col(tables.RUN_ID).isin(list(bad)))
    ev = evaluate.evaluate(plays, runs, skipped, sources, s.human_cutoff, s.human_mode, parse_bands(s.bands, "--bands"))
    files = render.render(ev, ctx.experiment, run_id=ctx.run.info.run_id)
    render.log_artifacts(files)
    if not ev.routes.leaderboard.empty:  # the runs' ranking as a table the MLflow UI shows
        mlflow.log_table(ev.routes.leaderboard, "leaderboard.json")
    outputs.write_files(ctx.stage(), files)
    log.info("report: compare the runs in the MLflow UI: %s", tracking.ui_hint(ctx.run.info.experiment_id))
    baselines = {r.label for r in runs if evaluate.is_baseline(r.params)}
    players = ev.success[~ev.success["label"].isin(baselines)]
    best = (players if len(players) else ev.success).sort_values("success_rate", ascending=False).iloc[0]
    figures = sum(k.startswith("figures/") for k in files)
    summary = (
        f"wrote {ctx.output()} (report.md, report.html, {figures} figures, tables) and MLflow run "
        f"{ctx.run.info.run_id} ({ctx.experiment}/{s.run_name}): {len(runs)} runs, "
        f"{int(ev.success['games'].sum())} games, {len(ev.fits)} fits"
        + (f", {len(skipped)} runs left out" if skipped else "")
        + f"; best success {best['label']} on {best['graph']} "
        f"{best['success_rate']:.3f} ± {best['success_rate_sd']:.3f}"
    )
    params = {"output": ctx.output(), "play_runs": ",".join(r.run_id for r in runs)}
    return Result(summary, metrics=ev.metrics(), params=params)


JOB = Job(
    name="report",
    doc=__doc__,
    settings=ReportConfig,
    body=report,
    outputs=(
        Output(
            lambda s, _: {"": s.output or render.default_output(tracking.experiment_name(s.experiment))},
            what="report",
            kind=render.KIND,
        ),
    ),
    run_name=lambda ctx: ctx.settings.run_name,
    before_run=find_runs,
)
