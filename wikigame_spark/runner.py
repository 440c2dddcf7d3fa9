"""The one owner of a job's lifecycle: a job is a spec (:class:`Job`) and a body; this runs it.

The spec declares the job's settings (a frozen dataclass of :func:`~wikigame_spark.config.setting`
fields: they make its flags, YAML keys and ``--help``), the inputs it takes (:class:`Input`: a graph,
games, dumps, a snapshot, a file) and the outputs it makes (:class:`Output`). Its body does only the
job's own work with the opened inputs and the staging folders the runner gives it (:class:`Context`),
and returns a :class:`Result`. The runner does the rest, the same way for every job:

1. parse the flags and ``--config`` (default ``conf/<job>.yaml``) into the settings, validated;
2. preflight: local inputs, outputs and the tracking store before Spark starts, other URIs right
   after it; each input opened once into a handle (:mod:`wikigame_spark.handles`);
3. one writer per output (``outputs.output_lock``), staging folders of dead runs removed;
4. the MLflow run started (or resumed, for a play run's unfinished plays), tagged with the stage;
5. the body, writing into staging folders; then each output's manifest (what made it) and the
   rename into place — an older output stays readable until the new one is complete;
6. the summary: the last line the job prints, naming what it wrote and the headline counts.

A user's fault ends with one ``error:`` line and status 2 (:mod:`wikigame_spark.cli`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import enum
import logging
import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from wikigame_spark import cli, config, manifests, outputs, preflight, progress, storage, tracking
from wikigame_spark.config import ConfigError, flatten
from wikigame_spark.contents import CONTENTS, check_ids, describe, verify
from wikigame_spark.handles import GamesHandle, GraphHandle
from wikigame_spark.layout import MANIFEST
from wikigame_spark.storage import Folder

log = logging.getLogger(__name__)


class InputKind(enum.Enum):
    """What an input's flag must name."""

    GRAPH = "graph"  # a graph folder: opened as a GraphHandle
    GAMES = "games"  # a games folder, sampled on the job's graph input: a GamesHandle
    DUMPS = "dumps"  # Wikipedia dump files, folders or globs
    SNAPSHOT = "snapshot"  # an OpenAlex works snapshot: a folder, a file, an s3:// prefix
    FILE = "file"  # one file (a TSV of human games)
    FOLDER = "folder"  # a source's folder of files (Wikispeedia's)


@dataclass(frozen=True)
class Input:
    """An input a job takes: the setting holding its path, its kind, and its default path.

    ``bound_to``: a games input's graph input (the games must have been sampled on it).
    ``default``: the path when the setting is empty, from the inputs opened before it."""

    setting: str
    kind: InputKind
    default: Callable[[dict], str] | None = None
    bound_to: str = ""
    cache_setting: str = ""  # a graph's cache folder setting (default GRAPH/cache)
    optional: bool = False  # with no path given nor defaulted, the body gets None


@dataclass(frozen=True)
class Output:
    """An output a job makes, replaced only whole.

    ``paths``: the folder(s) from the settings and the opened inputs — one, or one per key (the
    OpenAlex job's field graphs). ``resumable``: unfinished work stays where the next run of the
    same output picks it up (a play run's chunks); a finished output given ``--overwrite`` is
    remade beside it and swapped in at the end. ``replace``: always replaced, no ``--overwrite``
    needed (a human play run's plays at each stop, a report). Whichever, an existing folder is
    replaced only if it is an earlier output of the same ``kind`` holding none of the job's inputs
    (:func:`~wikigame_spark.preflight.check_replaceable`)."""

    paths: Callable[[Any, dict], dict[str, str]]
    flag: str = "--output"
    resumable: bool = False
    replace: bool = False
    what: str = "output"
    kind: str = ""  # its manifest's kind: an existing folder is replaced only if it is one


class NothingMade(Exception):
    """Raised by a job's ``before_run`` when there is nothing to record (a human play run stopped
    before any game finished): the job ends with this message as its summary, status 0."""


@dataclass
class Result:
    """What a body made: the summary line (after ``job: ``), each output's manifest by key, the
    metrics and params for the MLflow run."""

    summary: str
    manifests: dict[str, dict] = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)


class Context:
    """What a body gets: its settings, opened inputs, staging folders, the session and the run, and
    what its job's ``before_run`` found (``before``: the job's own type, e.g. a play run's plan)."""

    def __init__(self, job: Job, settings: Any) -> None:
        self.job = job
        self.settings = settings
        self.started = dt.datetime.now(dt.timezone.utc)
        self.inputs: dict[str, Any] = {}
        self.outputs: dict[str, str] = {}
        self.staging: dict[str, Folder] = {}
        self.run = None
        self.identity: dict = {}  # params that a resumed MLflow run must share
        self.tags: dict[str, str] = {}
        self.resume = False
        self.before: Any = None
        self._spark = None

    @property
    def spark(self):
        """The job's SparkSession, started on first use (a job that needs none never starts one)."""
        if self._spark is None:
            self._spark = cli.session(self.job.name)
            if self.job.connect:
                self.job.connect(self)
        return self._spark

    @property
    def experiment(self) -> str:
        return tracking.experiment_name(getattr(self.settings, "experiment", ""))

    def output(self, key: str = "") -> str:
        return self.outputs[key]

    def stage(self, key: str = "") -> Folder:
        """Where the body writes output ``key``; renamed into place when the job succeeds."""
        return self.staging[key]

    def folder(self, key: str = "") -> Folder:
        """Output ``key``'s folder, reached as its path needs (a local one without the session)."""
        path = self.outputs[key]
        return storage.folder(path, None if preflight.is_local(path) else self.spark)

    def provenance(self) -> dict:
        """What every manifest of this job records about its making: settings, code, time, Spark."""
        spark_version = self._spark.version if self._spark is not None else None
        return {
            "parameters": flatten(self.settings),
            "code_version": manifests.code_version(),
            "created": self.started.isoformat(),
            "spark_version": spark_version,
        }


@dataclass(frozen=True)
class Job:
    """A job's spec: its name, settings, inputs, outputs and body (see the module docstring).

    ``before_run``: the work done after the outputs are locked and staged and before the MLflow run
    starts; what it returns is the body's ``ctx.before`` (a play run decides there whether it
    resumes and sets the identity a resumed run must share; the report finds its runs; people play
    in the browser, so that a session without a finished game makes no run).
    ``run_name``: the MLflow run's name. ``tracked``: whether the job makes an MLflow run.
    ``check``: validation of the settings that needs the library (e.g. OpenAlex field names).
    ``flags``/``load``: more flags and how the settings are loaded (a play job's agent options)."""

    name: str
    doc: str
    settings: type
    body: Callable[[Context], Result]
    inputs: tuple[Input, ...] = ()
    outputs: tuple[Output, ...] = ()
    tracked: bool = True
    run_name: Callable[[Context], str] | None = None
    before_run: Callable[[Context], Any] | None = None
    check: Callable[[Any], None] | None = None
    connect: Callable[[Context], None] | None = None  # once the session exists: e.g. S3 settings
    flags: Callable[[argparse.ArgumentParser], None] | None = None
    load: Callable[[type, str | None, dict], Any] | None = None

    # --- settings -----------------------------------------------------------------------------
    def parser(self) -> argparse.ArgumentParser:
        p = _Parser(prog=f"{self.name}.py", description=self.doc, formatter_class=argparse.RawDescriptionHelpFormatter)
        config.add_flags(p, self.settings)
        if self.flags:
            self.flags(p)
        default = config.default_yaml(self.name)
        p.add_argument("--config", metavar="YAML", help="settings file" + (f" (default {default})" if default else ""))
        p.add_argument("--verbose", action="store_true", help="Spark's task traces and the fault's traceback too")
        p.add_argument("--version", action="version", version=f"wikigame-spark {manifests.code_version()}")
        return p

    def parse(self, argv: list[str] | None) -> Any:
        """The settings from ``argv``: ``--config`` YAML (default ``conf/<job>.yaml``), then the flags."""
        args = vars(self.parser().parse_args(argv))
        if args.pop("verbose"):
            os.environ["WIKIGAME_VERBOSE"] = "1"
        yaml_path = args.pop("config") or config.default_yaml(self.name)
        settings = (self.load or config.load_config)(self.settings, yaml_path, args)
        if self.check:
            self.check(settings)
        return settings

    # --- the lifecycle ------------------------------------------------------------------------
    def main(self, argv: list[str] | None = None) -> int:
        """Run the job on ``argv`` (a program's arguments; a notebook's list); returns 0."""
        logging.getLogger("py4j").setLevel(logging.WARNING)  # its "closing down" must not follow the summary
        ctx = Context(self, self.parse(argv))
        self._open(ctx, spark=None)
        if self.tracked:
            preflight.check_tracking()
        remote = any(not preflight.is_local(p) for p in self._paths(ctx))
        with contextlib.ExitStack() as stack:
            if remote:
                self._open(ctx, spark=ctx.spark)
            for out in self.outputs:
                what = f"{out.what} {self.run_name(ctx)!r}" if self.run_name else out.what
                for key in out.paths(ctx.settings, ctx.inputs):
                    stack.enter_context(outputs.output_lock(ctx.folder(key), what=what))
            self._stage(ctx)
            _tag_inputs(ctx)
            try:
                if self.before_run:
                    ctx.before = self.before_run(ctx)
            except NothingMade as e:
                cli.clear_progress_line()
                print(f"{self.name}: {e}", flush=True)
                return 0
            with _terminated_as_interrupt(), self._tracked(ctx), progress.running_stages(self.name):
                result = self.body(ctx)
                self._publish(ctx, result)
                if self.tracked:
                    tracking.log_params_resumable(ctx.run, result.params)
                    tracking.log_metrics(result.metrics)
        cli.clear_progress_line()
        print(f"{self.name}: {result.summary}", flush=True)
        return 0

    def program(self) -> None:
        """The job as a program: ``jobs/<name>.py`` under ``__main__``, and the wheel's console
        script ``wikigame-<name>``; exit status, ``error:`` lines (:func:`wikigame_spark.cli.run`)."""
        cli.run(self.main)

    def _paths(self, ctx: Context) -> list[str]:
        given = [p for i in self.inputs for p in _as_list(getattr(ctx.settings, i.setting)) if p]
        return given + list(ctx.outputs.values())

    def _open(self, ctx: Context, spark) -> None:
        """Check and open every input, resolve and check every output (local paths without a
        session; with one, the other URIs)."""
        for spec in self.inputs:
            if spec.setting in ctx.inputs:
                continue
            path = getattr(ctx.settings, spec.setting) or (spec.default(ctx.inputs) if spec.default else "")
            if not path and spec.optional:
                ctx.inputs[spec.setting] = None
                continue
            opened = _open_input(spec, path, ctx, spark)
            if opened is None:  # a URI that needs the session
                return
            ctx.inputs[spec.setting] = opened
            if isinstance(opened, (GraphHandle, GamesHandle)):  # params and manifests name absolute paths
                ctx.settings = dataclasses.replace(ctx.settings, **{spec.setting: opened.path})
        if not ctx.outputs:
            for out in self.outputs:
                for key, path in out.paths(ctx.settings, ctx.inputs).items():
                    ctx.outputs[key] = preflight.absolute(storage.spark_uri(path))
            if set(ctx.outputs) == {""} and hasattr(ctx.settings, "output"):
                ctx.settings = dataclasses.replace(ctx.settings, output=ctx.outputs[""])
        overwrite = bool(getattr(ctx.settings, "overwrite", False))
        inputs, sources = _input_paths(ctx), _input_paths(ctx, (*_SOURCES, InputKind.FILE))
        for out in self.outputs:
            for key in out.paths(ctx.settings, ctx.inputs):
                path = ctx.outputs[key]
                if spark is None and not preflight.is_local(path):
                    continue
                preflight.check_output(
                    path, overwrite or out.replace, out.flag, spark, out.resumable, out.what, out.kind, inputs, sources
                )

    def _stage(self, ctx: Context) -> None:
        """Each output's staging folder, once the dead runs' staging folders are gone."""
        for out in self.outputs:
            for key in out.paths(ctx.settings, ctx.inputs):
                target = ctx.folder(key)
                finished = target.exists(MANIFEST)
                outputs.clean_staging(target)
                if out.resumable and not finished:
                    ctx.staging[key] = target  # unfinished plays are resumed in place
                elif out.resumable:
                    ctx.staging[key] = outputs.resume_staging(target)
                else:
                    ctx.staging[key] = outputs.new_staging(target)

    @contextlib.contextmanager
    def _tracked(self, ctx: Context) -> Iterator[None]:
        if not self.tracked:
            yield
            return
        name = self.run_name(ctx) if self.run_name else self.name
        tags = {"stage": self.name, **ctx.tags, tracking.OUTPUT_TAG: ";".join(sorted(ctx.outputs.values()))}
        with tracking.run(ctx.experiment, name, ctx.identity, tags, resume=ctx.resume) as run:
            ctx.run = run
            params = {**flatten(ctx.settings), "code_version": manifests.code_version(), **ctx.identity}
            tracking.log_params_resumable(run, params)
            if not ctx.resume:
                _log_datasets(ctx)
            yield

    def _publish(self, ctx: Context, result: Result) -> None:
        """Each output's manifest into its staging folder, then the staging folder into place."""
        for key, path in ctx.outputs.items():
            staging = ctx.staging[key]
            body = result.manifests.get(key)
            if body is not None:
                manifest = {**body, **ctx.provenance(), CONTENTS: describe(staging)}
                if ctx.run is not None:
                    manifest.update(
                        mlflow_run_id=ctx.run.info.run_id,
                        experiment=ctx.experiment,
                        tracking_uri=tracking.tracking_uri(),
                    )
                manifests.write_manifest(staging, manifest)
            if staging.root != path:
                outputs.publish(staging, ctx.folder(key))


def _input_paths(ctx: Context, kinds: tuple[InputKind, ...] = ()) -> tuple[str, ...]:
    """The paths the job reads from (of ``kinds`` of input; all for none): graphs' and games'
    folders, dumps, snapshots, files."""
    paths = []
    for spec in ctx.job.inputs:
        opened = ctx.inputs.get(spec.setting)
        if opened is None or (kinds and spec.kind not in kinds):
            continue
        path = getattr(opened, "path", opened)
        paths.extend([path] if isinstance(path, str) else list(path))
    return tuple(paths)


def _tag_inputs(ctx: Context) -> None:
    """Tags a researcher filters and groups a study's runs by, from the opened inputs; a graph's
    and games' digests are the identity a resumed run must share."""
    for handle in ctx.inputs.values():
        if isinstance(handle, GraphHandle):
            ctx.tags.update(graph=handle.name, graph_kind=str(handle.manifest.get("kind")))
            ctx.identity.setdefault("graph_manifest_sha1", handle.sha1)
        elif isinstance(handle, GamesHandle):
            ctx.tags.setdefault("games", handle.path)  # the first: the games a job is about


def _log_datasets(ctx: Context) -> None:
    """The games set a run played (or the graph it measured) as the run's dataset input."""
    games = [h for h in ctx.inputs.values() if isinstance(h, GamesHandle)]
    graphs = [h for h in ctx.inputs.values() if isinstance(h, GraphHandle)]
    for h in games:
        tracking.log_dataset(h.path, f"{h.graph.name} games seed={h.seed} n={h.count}", h.sha1, "games")
    if not games:
        for h in graphs:
            nodes = h.manifest.get("counts", {}).get("nodes")
            tracking.log_dataset(h.path, f"{h.name} graph ({nodes} nodes)", h.sha1, "graph")


class _Parser(argparse.ArgumentParser):
    """argparse's own refusals as a :class:`ConfigError` (one ``error:`` line, status 2)."""

    def error(self, message: str):
        raise ConfigError(f"{self.prog}: {message}")


def _as_list(value) -> list[str]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


# Source inputs, and what their flag must name.
_SOURCES = {
    InputKind.DUMPS: "a dump file or a folder of dumps",
    InputKind.SNAPSHOT: "an OpenAlex snapshot (folder, file or s3:// prefix)",
    InputKind.FOLDER: "a folder of source files",
}


def _open_input(spec: Input, path, ctx: Context, spark):
    """The input as the body takes it: a handle for graphs and games, paths for the rest; None
    while a URI waits for the session."""
    flag = config.flag_of(ctx.settings, spec.setting)
    if spec.kind in _SOURCES:
        paths = _as_list(path)
        preflight.require_source(paths, flag, want=_SOURCES[spec.kind])
        return tuple(paths) if spec.kind is InputKind.DUMPS else path
    if spec.kind is InputKind.FILE:
        if not preflight.is_local(path) and spark is None:
            return None
        preflight.require_file(path, flag, spark=spark)
        return path
    path = preflight.absolute(path)
    if not preflight.is_local(path) and spark is None:
        return None
    folder = storage.folder(path, spark)
    if spec.kind is InputKind.GRAPH:
        manifest = preflight.require_graph(folder, flag)
        verify(folder, manifest, flag)
        check_ids(folder, flag)
        cache = getattr(ctx.settings, spec.cache_setting, "") if spec.cache_setting else ""
        return GraphHandle(folder, manifest, preflight.absolute(cache) if cache else "")
    graph = ctx.inputs[spec.bound_to]
    manifest = preflight.require_games(folder, flag)
    verify(folder, manifest, flag)
    preflight.games_bound_to(manifest, graph.manifest, path, graph.path)
    return GamesHandle(folder, manifest, graph)


@contextlib.contextmanager
def _terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the job as Ctrl-C does, so its MLflow run ends KILLED rather than RUNNING."""
    if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread (a notebook's worker thread): leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


__all__ = ["Context", "Input", "InputKind", "Job", "NothingMade", "Output", "Result"]
