"""The Databricks Asset Bundle (databricks.yml, resources/), checked offline: its job against
Databricks' own models of the bundle schema (the ``databricks-bundles`` package, which refuses an
unknown field or a value of the wrong type), every task's entry point a console script of the wheel
running that job, every flag parsed by the job's own parser with the job parameters' defaults, and
the libraries those of the wheel: its path where the bundle's artifact build writes it, the
embedding-torch extra's requirements, GraphFrames at the version conf/maven/pom.xml pins."""

from __future__ import annotations

import fnmatch
import os
import re
from importlib.metadata import distribution

import pytest
import yaml
from databricks.bundles.jobs import Job

from tests.conftest import ROOT

DIST = distribution("wikigame-spark")
REFERENCE = re.compile(r"\$\{var\.(\w+)\}")
PARAMETER = re.compile(r"\{\{job\.parameters\.(\w+)\}\}")


def load(path: str) -> dict:
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return yaml.safe_load(f)


BUNDLE = load("databricks.yml")
RESOURCE_FILES = sorted(
    os.path.join("resources", name)
    for name in os.listdir(os.path.join(ROOT, "resources"))
    if any(fnmatch.fnmatch(f"resources/{name}", pattern) for pattern in BUNDLE["include"])
)
JOBS = {key: job for path in RESOURCE_FILES for key, job in load(path)["resources"]["jobs"].items()}
VARIABLES = {name: str(spec["default"]) for name, spec in BUNDLE["variables"].items()}


def resolved(value: str) -> str:
    """A value with the bundle's variables at their defaults."""
    return REFERENCE.sub(lambda m: VARIABLES[m.group(1)], value)


def test_the_bundle_has_dev_and_prod_targets_and_builds_the_wheel():
    assert BUNDLE["bundle"]["name"] == "wikigame-spark"
    assert BUNDLE["targets"]["dev"] == {"mode": "development", "default": True}
    assert BUNDLE["targets"]["prod"]["mode"] == "production"
    assert RESOURCE_FILES == ["resources/wikigame_pipeline.job.yml"]
    (artifact,) = BUNDLE["artifacts"].values()
    assert artifact["type"] == "whl" and artifact["path"] == "."
    assert artifact["build"].split()[-4:] == ["--no-deps", "--wheel-dir", "dist", "."]


def test_every_variable_used_is_defined_and_every_one_defined_is_used():
    used = set()
    for path in ("databricks.yml", *RESOURCE_FILES):
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            used |= set(REFERENCE.findall(f.read()))
    assert used == set(VARIABLES)


@pytest.mark.parametrize("key", sorted(JOBS))
def test_the_job_is_valid_against_databricks_models_of_the_bundle_schema(key):
    job = Job.from_dict(JOBS[key])
    assert job.name and len(job.tasks) == len(JOBS[key]["tasks"])


@pytest.mark.parametrize("key", sorted(JOBS))
def test_tasks_run_the_wheels_console_scripts_with_flags_their_jobs_parse(key):
    job = JOBS[key]
    parameters = {p["name"]: resolved(str(p["default"])) for p in job["parameters"]}
    scripts = {ep.name: ep for ep in DIST.entry_points if ep.group == "console_scripts"}
    keys = {task["task_key"] for task in job["tasks"]}
    used = set()
    for task in job["tasks"]:
        assert {d["task_key"] for d in task.get("depends_on", [])} <= keys
        wheel_task = task["python_wheel_task"]
        assert wheel_task["package_name"].replace("_", "-") == DIST.metadata["Name"]
        spec = scripts[wheel_task["entry_point"]].load().__self__  # the job whose program it is
        args = [str(a) for a in wheel_task["parameters"]]
        used |= {name for a in args for name in PARAMETER.findall(a)}
        argv = [PARAMETER.sub(lambda m: parameters[m.group(1)], a) for a in args]
        settings = spec.parse(argv)  # a flag the job does not have is refused here
        assert getattr(settings, "overwrite", True), f"{task['task_key']}: a rerun of the job replaces its outputs"
    assert used == set(parameters), "a job parameter no task uses, or a task naming one not defined"
    assert job["job_clusters"][0]["new_cluster"]["spark_version"].endswith("-scala2.13")


@pytest.mark.parametrize("key", sorted(JOBS))
def test_task_libraries_are_the_wheel_its_embedding_extra_and_graphframes(key):
    with open(os.path.join(ROOT, "conf", "maven", "pom.xml"), encoding="utf-8") as f:
        graphframes = re.search(r"<graphframes.version>(.+)</graphframes.version>", f.read()).group(1)
    embedding = sorted(
        re.sub(r"\s*;.*", "", r).replace(" ", "") for r in DIST.requires or [] if 'extra == "embedding-torch"' in r
    )
    for task in JOBS[key]["tasks"]:
        libraries = task["libraries"]
        wheels = [lib["whl"] for lib in libraries if "whl" in lib]
        assert wheels == ["../dist/*.whl"]  # relative to resources/: the artifact's dist/
        maven = [lib["maven"]["coordinates"] for lib in libraries if "maven" in lib]
        assert maven == [f"io.graphframes:graphframes-spark4_2.13:{graphframes}"]
        pypi = sorted(lib["pypi"]["package"] for lib in libraries if "pypi" in lib)
        args = task["python_wheel_task"]["parameters"]
        plays_embedding = "--agent" in args and args[args.index("--agent") + 1] == "embedding"
        assert pypi == (embedding if plays_embedding else []), task["task_key"]
