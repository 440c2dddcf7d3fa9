"""The play runs of an experiment as the report finds them, and their plays read back: from the
run's plays folder when its manifest names the run, else from the run's ``plays.parquet``."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field

import mlflow
import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from wikigame_spark import manifests, storage, tracking
from wikigame_spark.layout import GraphDir
from wikigame_spark.play import artifacts, record
from wikigame_spark.schemas import NO_MODEL_USAGE


@dataclass(frozen=True)
class PlayRun:
    """One finished play run as its record says: MLflow run, params, metrics, tags, plays folder."""

    run_id: str
    run_name: str
    start_time: int
    params: dict
    plays_dir: str
    metrics: dict = field(default_factory=dict)
    tags: dict = field(default_factory=dict)

    @property
    def agent(self) -> str:
        return self.params.get(record.AGENT, "")

    @property
    def model(self) -> str | None:
        return self.params.get(record.MODEL) or None

    @property
    def max_steps(self) -> int | None:
        steps = self.params.get("max_steps")
        return int(steps) if steps not in (None, "") else None


def _play_run(run) -> PlayRun:
    p = dict(run.data.params)
    graph = (p.get("graph") or "").rstrip("/")
    plays_dir = p.get("output") or GraphDir(graph).plays(p.get("run_name") or run.info.run_name)
    return PlayRun(
        run.info.run_id,
        run.info.run_name or "",
        int(run.info.start_time or 0),
        p,
        plays_dir,
        dict(run.data.metrics),
        dict(run.data.tags),
    )


def find_runs(experiment: str, run_ids: Sequence[str] = ()) -> tuple[list[PlayRun], list[dict]]:
    """The play runs of ``experiment`` (those with an ``agent`` param): ``run_ids`` if given (each
    must be a finished play run of it), else every finished one, the latest of several that wrote
    the same plays folder (a run played again under its name, on its graph: the later replaced the
    plays); and the ones left out with the reason. Runs of one name on different graphs are
    different runs."""
    from mlflow.exceptions import MlflowException

    mlflow.set_tracking_uri(tracking.tracking_uri())
    exp = mlflow.get_experiment_by_name(experiment)
    if exp is None:
        raise ValueError(f"experiment {experiment!r} not found at {tracking.tracking_uri()}")
    client = mlflow.MlflowClient()
    if run_ids:
        runs = []
        for run_id in run_ids:
            try:
                run = client.get_run(run_id)
            except MlflowException as e:
                raise ValueError(f"--runs: run {run_id} not found at {tracking.tracking_uri()}") from e
            if run.info.experiment_id != exp.experiment_id:
                raise ValueError(f"--runs: run {run_id} is not in experiment {experiment!r}")
            if record.AGENT not in run.data.params:
                raise ValueError(f"--runs: run {run_id} ({run.info.run_name}) is not a play run (no agent param)")
            if run.info.status != "FINISHED":
                raise ValueError(f"--runs: run {run_id} ({run.info.run_name}) is {run.info.status}, not finished")
            runs.append(_play_run(run))
        return runs, []
    found = mlflow.search_runs(experiment_ids=[exp.experiment_id], output_format="list")
    candidates = [r for r in found if record.AGENT in r.data.params]
    skipped, latest = [], {}
    for run in sorted(candidates, key=lambda r: r.info.start_time or 0, reverse=True):
        name, plays = run.info.run_name, _play_run(run).plays_dir.rstrip("/")
        if run.info.status != "FINISHED":
            skipped.append({"run_id": run.info.run_id, "run_name": name, "reason": f"status {run.info.status}"})
        elif plays in latest:
            reason = f"superseded by run {latest[plays]}, which played again into its plays folder {plays}"
            skipped.append({"run_id": run.info.run_id, "run_name": name, "reason": reason})
        else:
            latest[plays] = run.info.run_id
    keep = set(latest.values())
    return [_play_run(r) for r in candidates if r.info.run_id in keep], skipped


def load_plays(spark: SparkSession, run: PlayRun) -> tuple[DataFrame, str]:
    """The run's plays, and where they were read from: its plays folder when that folder's
    manifest names the run (Spark reads the chunks in parallel), else its ``plays.parquet``."""
    folder = storage.folder(run.plays_dir, spark)
    try:
        manifest = manifests.read_manifest(folder)
    except FileNotFoundError:
        manifest = {}
    if manifest.get("mlflow_run_id") == run.run_id:
        return record.read_run(spark, folder), run.plays_dir
    with tempfile.TemporaryDirectory() as tmp:
        try:
            path = mlflow.artifacts.download_artifacts(
                run_id=run.run_id, artifact_path=artifacts.PLAYS_ARTIFACT, dst_path=tmp
            )
        except Exception as e:  # MLflow raises several types for a missing artifact
            raise FileNotFoundError(
                f"run {run.run_id} ({run.run_name}): no plays folder naming it at {run.plays_dir} "
                f"and no {artifacts.PLAYS_ARTIFACT} artifact ({e})"
            ) from e
        pdf = pd.read_parquet(path)
    for column, value in NO_MODEL_USAGE.items():  # a run recorded without these columns
        if column not in pdf:
            pdf[column] = value
    pdf["route"] = pdf["route"].map(lambda r: [int(v) for v in r])
    pdf["model"] = pdf["model"].astype(object).where(pdf["model"].notna(), None)
    pdf["detail"] = pdf["detail"].astype(object).where(pdf["detail"].notna(), None)
    return record.plays_frame(spark, pdf), f"runs:/{run.run_id}/{artifacts.PLAYS_ARTIFACT}"
