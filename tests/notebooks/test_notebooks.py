"""Every Databricks notebook runs as a plain Python script against local Spark on the real data.

Each runs as Databricks runs a notebook: its cells top to bottom in a Python process that already
has a SparkSession (here the suite's), its widgets given as ``--name=value`` arguments (as
``python notebooks/X.py --name=value …`` takes them), outputs under a temporary folder and MLflow
in a temporary SQLite store. The Wikipedia chain shares one graph: 01 builds it, 03 samples games
on it, 04 plays them, 05 reports on the plays.
"""

import contextlib
import io
import json
import os
import runpy
import sys

import pytest

from tests.conftest import DATA, ROOT, suite_session
from tests.jobs.jobrun import environment
from wikigame_spark.devtools.openalexgen import PART_2021, PART_2023, Spec, generate
from wikigame_spark.evaluation.figures import PNG_SIGNATURE
from wikigame_spark.notebook import VOLUME, Notebook

NOTEBOOKS = os.path.join(ROOT, "notebooks")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tracking = tmp_path_factory.mktemp("mlflow")
    return {
        **os.environ,
        "MLFLOW_TRACKING_URI": f"sqlite:///{tracking}/mlflow.db",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "HF_HUB_OFFLINE": "1",
    }


def run(notebook: str, env: dict, **widgets: str) -> str:
    """The notebook's cells on the suite's SparkSession, with ``env`` as the environment; what it printed."""
    path = os.path.join(NOTEBOOKS, f"{notebook}.py")
    suite_session()
    out, argv = io.StringIO(), sys.argv
    sys.argv = [path, *(f"--{k}={v}" for k, v in widgets.items())]
    try:
        with environment(env), contextlib.redirect_stdout(out):
            runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv = argv
    return out.getvalue()


def test_notebooks_are_in_databricks_source_format():
    names = sorted(f for f in os.listdir(NOTEBOOKS) if f.endswith(".py"))
    assert names == [
        "01_build_wikipedia_graph.py",
        "02_build_openalex_graphs.py",
        "03_sample_games.py",
        "04_play.py",
        "05_report.py",
        "06_training_data.py",
        "07_wikispeedia_people.py",
    ]
    for name in names:
        text = open(os.path.join(NOTEBOOKS, name), encoding="utf-8").read()
        assert text.startswith("# Databricks notebook source\n")
        assert text.count("\n# COMMAND ----------\n") >= 3
        assert "Notebook(globals())" in text and "widget(" in text and "show(" in text
        assert "Databricks Runtime 17.x (Spark 4.0, Scala 2.13" in text
        # the wheel's name (its version) is written by make wheel into the requirements files only
        pip = [line for line in text.splitlines() if "%pip install" in line]
        extra = "-embedding-torch" if name == "04_play.py" else ""
        assert pip == [f"# MAGIC %pip install -r {VOLUME}/requirements{extra}.txt"], pip
    graphframes = open(os.path.join(NOTEBOOKS, "03_sample_games.py"), encoding="utf-8").read()
    assert "io.graphframes:graphframes-spark4_2.13:0.11.0" in graphframes


class Widgets:
    """Databricks' ``dbutils.widgets``: text widgets whose values the user may have changed."""

    def __init__(self, changed: dict):
        self.created, self.changed = {}, changed

    def text(self, name, default):
        self.created[name] = default

    def get(self, name):
        return self.changed.get(name, self.created[name])


def test_notebook_on_databricks_uses_widgets_display_and_the_workspace_mlflow(monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    shown = []
    dbutils = type("DBUtils", (), {"widgets": Widgets({"games": "50"})})()
    nb = Notebook({"dbutils": dbutils, "display": shown.append})
    assert nb.on_databricks and os.environ["MLFLOW_TRACKING_URI"] == "databricks"
    assert nb.widget("out", "/local/out", f"{VOLUME}/out") == f"{VOLUME}/out"
    assert nb.widget("games", "200") == "50" and dbutils.widgets.created == {"out": f"{VOLUME}/out", "games": "200"}
    nb.show("table")
    assert shown == ["table"]


def test_notebook_as_a_script_reads_name_value_arguments(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["04_play.py", "--games=7", "ignored"])
    nb = Notebook({"__file__": os.path.join(NOTEBOOKS, "04_play.py")})
    assert not nb.on_databricks and nb.widget("games", "200") == "7" and nb.widget("seed", "0") == "0"
    assert nb.data == os.path.join(os.path.dirname(ROOT), "shared", "data")
    assert nb.out == os.path.join(os.getcwd(), "out", "notebooks")  # beside the user, as the jobs write
    nb.show("printed")
    assert capsys.readouterr().out == "printed\n"


@pytest.mark.slow
def test_wikipedia_chain_build_sample_play_report(tmp_path, env):
    out = str(tmp_path)
    graph = f"{out}/ltgwiki"
    stdout = run("01_build_wikipedia_graph", env, data=DATA, out=out)
    assert "build_wikipedia: wrote" in stdout and "ltgwiki" in stdout
    assert json.load(open(f"{graph}/manifest.json"))["counts"]["nodes"] == 903

    stdout = run("03_sample_games", env, out=out, games="30", pairs="100")
    assert "graph_stats: wrote" in stdout and "sample_games: wrote" in stdout
    assert json.load(open(f"{graph}/games/manifest.json"))["games"] == 30

    # torch, not the default runtime: the widget reaches the job
    stdout = run("04_play", env, out=out, agents="random,embedding", games="12", embedding_backend="torch")
    assert stdout.count("play_games: wrote") == 2
    assert sorted(os.listdir(f"{graph}/plays")) == ["embedding-all-MiniLM-L6-v2-torch-s0-n12", "random-s0-n12"]
    assert os.listdir(f"{graph}/cache/embeddings") == ["all-MiniLM-L6-v2"]

    stdout = run("05_report", env, out=out)
    assert "report: wrote" in stdout and "2 runs, 24 games" in stdout
    figures = os.listdir(f"{out}/report/figures")
    assert "fig2a_success_by_agent.png" in figures and "fig15_outcomes.png" in figures
    assert "fig_frontier.png" in figures  # every game priced by the repository's conf/prices.yaml
    for name in figures:
        with open(f"{out}/report/figures/{name}", "rb") as f:
            assert f.read(8) == PNG_SIGNATURE
    assert os.path.getsize(f"{out}/report/report.html") > 10_000

    stdout = run("06_training_data", env, out=out, train_games="30", eval_games="8")
    assert "sample_games: wrote" in stdout and "decision_records: wrote" in stdout
    train, evals = (json.load(open(f"{graph}/{name}/manifest.json")) for name in ("train", "train_eval"))
    assert train["games"] == 30 and evals["games"] == 8 and train["split"]["side"] == "train"
    made = json.load(open(f"{graph}/train_decisions/manifest.json"))
    assert made["by_player"]["expert"]["optimal_share"] == 1.0 and made["sft_examples"] == made["records"] > 0
    assert made["eval"]["games"] == f"{graph}/train_eval" and made["eval"]["records"] > 0


@pytest.mark.slow
def test_openalex_notebook_runs_on_its_local_defaults(tmp_path, env):
    """As typed (no widgets but where the data is): the README's real works, two fields."""
    stdout = run("02_build_openalex_graphs", env, data=DATA, out=str(tmp_path))
    assert "build_openalex: wrote" in stdout and "(26 nodes, 50 edges)" in stdout
    assert sorted(os.listdir(f"{tmp_path}/openalex")) == ["computer-science", "mathematics"]


@pytest.mark.slow
def test_openalex_notebook_on_a_snapshot_with_real_part_files(tmp_path, env):
    """A snapshot in the 2025 schema (generated) holding the real 2021 and 2023 part files too:
    the shared real sample alone predates OpenAlex's topics, which the job refuses."""
    spec = Spec(works=300, seed=5, extra_files=(("2021-11-03", PART_2021), ("2023-05-16", PART_2023)))
    snap = generate(str(tmp_path / "snapshot"), spec)
    stdout = run("02_build_openalex_graphs", env, data=DATA, out=str(tmp_path), snapshot=snap.root, fields="Medicine")
    assert "build_openalex: wrote" in stdout
    manifest = json.load(open(f"{tmp_path}/openalex/medicine/manifest.json"))
    assert manifest["field"] == "Medicine" and manifest["records"]["read"] == sum(f["records"] for f in snap.files)
    assert manifest["counts"]["nodes"] > 0


@pytest.mark.slow
def test_wikispeedia_people_and_agents(tmp_path, env, wikispeedia_slice):
    out = str(tmp_path)
    stdout = run("07_wikispeedia_people", env, out=out, wikispeedia=wikispeedia_slice, games="12", agents="random")
    assert "build_wikispeedia: wrote" in stdout and "4604 nodes, 119772 edges" in stdout
    assert "import_human_games: wrote" in stdout and "of 4000 games imported" in stdout
    assert "sample_games: wrote" in stdout and "12 games from the" in stdout
    assert stdout.count("play_games: wrote") == 1 and "report: wrote" in stdout
    summary = json.load(open(f"{out}/report-wikispeedia/report.json"))
    people = {r["agent"]: r for r in summary["people_summary"]}
    assert set(people) == {"people", "random"} and people["people"]["pairs"] == people["random"]["pairs"] == 12
    assert "figures/people_by_optimal_length.png" in summary["figures"]
