"""MLflow tracking for jobs: one run per job invocation, its config as params, results as metrics.

The tracking URI is ``MLFLOW_TRACKING_URI`` when set, else a SQLite database in the project
folder (``sqlite:///<project>/mlflow.db``; MLflow 3 deprecates the plain-file store). With a
local SQLite store, experiments created here keep their artifacts in ``mlruns/`` beside the
database.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from numbers import Real

from wikigame_spark.full_size import ENWIKI_CORE_HOURS

log = logging.getLogger(__name__)

MAX_PARAM_CHARS = 6000  # MLflow's limit on one param value


DEFAULT_EXPERIMENT = "wikigame"
OUTPUT_TAG = "wikigame.outputs"  # the folders a job's run writes: a later run of them ends a dead one


def tracking_uri() -> str:
    """``MLFLOW_TRACKING_URI``; else the workspace's tracking on a Databricks cluster; else
    ``mlflow.db`` in the working directory, where the jobs' default outputs (``out/…``) go too:
    a study's runs and outputs in one folder, and ``mlflow ui --backend-store-uri sqlite:///mlflow.db``
    run there shows them."""
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    if os.environ.get("DATABRICKS_RUNTIME_VERSION"):  # set on every Databricks cluster node
        return "databricks"
    return f"sqlite:///{os.path.abspath('mlflow.db')}"


def experiment_name(given: str = "") -> str:
    """The experiment a job logs to: the one given, else ``MLFLOW_EXPERIMENT_NAME`` (MLflow's own
    convention), else :data:`DEFAULT_EXPERIMENT` — one study, one experiment, whatever the job."""
    return given or os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT


def _artifact_root(uri: str) -> str | None:
    """``mlruns/`` beside a local SQLite database; other stores choose their own."""
    if uri.startswith("sqlite:///"):
        return os.path.join(os.path.dirname(os.path.abspath(uri[len("sqlite:///") :])), "mlruns")
    return None


# The experiment's kind for the MLflow UI: model development, not GenAI. (MLflow 3's UI still opens
# on its GenAI pages until the browser's "Model training" switch is on, or the address says
# workflowType=machine_learning, as :func:`runs_page` does.)
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")
# A shared view of the runs list (an experiment tag the UI reads by its key, ``viewStateShareKey``):
# the tags a study groups runs by and the headline metrics, as columns.
RUNS_VIEW = "wikigame-runs"
RUNS_VIEW_TAG = f"mlflow.sharedViewState.{RUNS_VIEW}"
RUNS_VIEW_COLUMNS = (
    "attributes.`Dataset`",
    *(f"tags.`{t}`" for t in ("stage", "graph", "agent", "model", "protocol")),
    *(f"metrics.`{m}`" for m in ("games", "success_rate", "success_rate_se", "steps_above_optimal_mean")),
    f"metrics.`{ENWIKI_CORE_HOURS}`",
)
RUNS_VIEW_STATE = json.dumps({"selectedColumns": list(RUNS_VIEW_COLUMNS), "runsHiddenMode": "SHOW_ALL"})


def runs_page(experiment_id: str) -> str:
    """The MLflow UI's address (after the server's) of the experiment's runs in :data:`RUNS_VIEW`."""
    return f"#/experiments/{experiment_id}/runs?viewStateShareKey={RUNS_VIEW}&workflowType=machine_learning"


def ui_hint(experiment_id: str) -> str:
    """Where a person compares the experiment's runs: the server's page, or how to serve a local store."""
    uri = tracking_uri()
    if uri.startswith(("http://", "https://")):
        return f"{uri.rstrip('/')}/{runs_page(experiment_id)}"
    if uri.startswith("databricks"):
        return "the workspace's Experiments page"
    return f"mlflow ui --backend-store-uri {uri}, then http://127.0.0.1:5000/{runs_page(experiment_id)}"


def _experiment_id(mlflow, name: str, uri: str) -> str:
    tags = dict([EXPERIMENT_KIND, (RUNS_VIEW_TAG, RUNS_VIEW_STATE)])
    found = mlflow.get_experiment_by_name(name)
    if found is not None:
        for key, value in tags.items():
            if found.tags.get(key) != value:
                mlflow.MlflowClient().set_experiment_tag(found.experiment_id, key, value)
        return found.experiment_id
    root = _artifact_root(uri)
    location = f"file://{os.path.join(root, name)}" if root else None
    return mlflow.create_experiment(name, artifact_location=location, tags=tags)


def setup(experiment: str) -> str:
    """Point MLflow at :func:`tracking_uri` and return ``experiment``'s id, creating it if needed."""
    import mlflow

    uri = tracking_uri()
    mlflow.set_tracking_uri(uri)
    return _experiment_id(mlflow, experiment, uri)


def find_run(experiment_id: str, run_name: str):
    """The latest run named ``run_name`` in the experiment, or None."""
    import mlflow

    escaped = run_name.replace("'", "\\'")
    runs = mlflow.search_runs(
        experiment_ids=[experiment_id],
        filter_string=f"tags.mlflow.runName = '{escaped}'",
        order_by=["attributes.start_time DESC"],
        max_results=1,
        output_format="list",
    )
    return runs[0] if runs else None


def clean_params(params: dict) -> dict[str, str]:
    """Params as MLflow takes them: strings within its length limit, None as empty."""
    return {k: ("" if v is None else str(v))[:MAX_PARAM_CHARS] for k, v in params.items()}


def _logged(params: dict) -> dict[str, str]:
    """The params a run shows: empty ones (a setting left unset) are not logged, as readers take
    a missing param as empty."""
    return {k: v for k, v in clean_params(params).items() if v != ""}


def log_params_resumable(run, params: dict) -> None:
    """Log ``params`` on a new or resumed run. MLflow refuses to change a logged param: a resumed
    run keeps its values, and any that differ now (settings that only change speed, since a
    resume is refused when anything that changes the plays differs) go to the tag ``resumed_with``."""
    import mlflow

    had = run.data.params
    clean = _logged(params)
    new = {k: v for k, v in clean.items() if k not in had}
    changed = {k: v for k, v in clean.items() if k in had and had[k] != v}
    if new:
        mlflow.log_params(new)
    if changed:
        mlflow.set_tag("resumed_with", json.dumps(changed, sort_keys=True)[:MAX_PARAM_CHARS])


@contextlib.contextmanager
def start_run(
    experiment: str, run_name: str | None = None, params: dict | None = None, tags: dict | None = None
) -> Iterator:
    """Open an MLflow run in ``experiment`` (created if missing) with ``params`` logged."""
    import mlflow

    experiment_id = setup(experiment)
    with mlflow.start_run(experiment_id=experiment_id, run_name=run_name, tags=tags) as run:
        if params:
            mlflow.log_params(_logged(params))
        log.info("mlflow: run %s in experiment %r at %s", run.info.run_id, experiment, tracking_uri())
        yield run


def resumable_run(experiment_id: str, run_name: str, identity: dict):
    """The unfinished MLflow run of this name whose recorded identity matches, if any."""
    previous = find_run(experiment_id, run_name)
    if previous is None or previous.info.status == "FINISHED":
        return None
    had = previous.data.params
    same = all(had.get(k, "") == v for k, v in clean_params(identity).items())
    return previous if same else None


def end_dead_runs(experiment_id: str, outputs: str, keep: str | None = None) -> int:
    """Mark KILLED the runs still RUNNING that wrote ``outputs``: the caller holds those outputs'
    locks, so their processes are gone (killed without a chance to end their run)."""
    import mlflow

    escaped = outputs.replace("'", "\\'")
    found = mlflow.search_runs(
        experiment_ids=[experiment_id],
        filter_string=f"tags.`{OUTPUT_TAG}` = '{escaped}' and attributes.status = 'RUNNING'",
        output_format="list",
    )
    client = mlflow.MlflowClient()
    dead = [r for r in found if r.info.run_id != keep]
    for r in dead:
        client.set_terminated(r.info.run_id, status="KILLED")
    return len(dead)


@contextlib.contextmanager
def run(experiment: str, run_name: str, identity: dict, tags: dict, resume: bool = False) -> Iterator:
    """A job's MLflow run: the unfinished one of this name and identity when ``resume``, else a new
    one; ended FINISHED, FAILED on an error, KILLED on an interrupt (Ctrl-C, SIGTERM)."""
    import mlflow

    experiment_id = setup(experiment)
    previous = resumable_run(experiment_id, run_name, identity) if resume else None
    run_id = previous.info.run_id if previous else None
    outputs = tags.get(OUTPUT_TAG)
    if outputs:
        end_dead_runs(experiment_id, outputs, keep=run_id)
    active = mlflow.start_run(run_id=run_id, run_name=run_name, experiment_id=experiment_id, tags=tags)
    try:
        yield active
    except KeyboardInterrupt:
        mlflow.end_run("KILLED")
        raise
    except BaseException:
        mlflow.end_run("FAILED")
        raise
    mlflow.end_run("FINISHED")
    log.info("mlflow: run %s in experiment %r at %s", active.info.run_id, experiment, tracking_uri())


def log_dataset(uri: str, name: str, digest: str, context: str) -> None:
    """An input of the active run as an MLflow dataset (the runs list's Dataset column): a games set
    or a graph, named and digested by its manifest; the data stays where it is."""
    import mlflow
    from mlflow.data.dataset_source import DatasetSource
    from mlflow.data.meta_dataset import MetaDataset

    class FolderSource(DatasetSource):
        """A wikigame-spark output folder on any store."""

        def __init__(self, uri: str) -> None:
            self.uri = uri

        @staticmethod
        def _get_source_type() -> str:
            return "wikigame-spark"

        def load(self):
            return self.uri

        @staticmethod
        def _can_resolve(raw_source) -> bool:
            return False

        @classmethod
        def _resolve(cls, raw_source):
            return cls(str(raw_source))

        def to_dict(self) -> dict:
            return {"uri": self.uri}

        @classmethod
        def from_dict(cls, source_dict: dict):
            return cls(source_dict["uri"])

    mlflow.log_input(MetaDataset(FolderSource(uri), name=name, digest=digest[:20]), context=context)


def log_metrics(metrics: dict, prefix: str = "") -> None:
    """Log the numeric values of a (possibly nested) dict; nested keys are joined with dots."""
    import mlflow

    flat: dict[str, float] = {}

    def walk(d: dict, path: str) -> None:
        for k, v in d.items():
            key = f"{path}{k}"
            if isinstance(v, dict):
                walk(v, f"{key}.")
            elif isinstance(v, Real) and not isinstance(v, bool):
                flat[key] = float(v)

    walk(metrics, prefix)
    if flat:
        mlflow.log_metrics(flat)


def log_json(obj: dict, name: str) -> None:
    import mlflow

    mlflow.log_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False), name)


def log_bytes(data: bytes, name: str) -> None:
    """Log a binary artifact (e.g. a PNG) under ``name``."""
    import mlflow

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, os.path.basename(name))
        with open(path, "wb") as f:
            f.write(data)
        mlflow.log_artifact(path, os.path.dirname(name) or None)
