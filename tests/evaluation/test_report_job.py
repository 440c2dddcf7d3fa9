"""jobs/report.py and jobs/import_human_games.py end to end on the real Latgalian graph: random and
embedding runs played by jobs/play_games.py, human games imported from a TSV of real titles, then
the report's files, figures and MLflow run."""

import json
import os
import shutil

import mlflow
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from mlflow.tracking import MlflowClient

from jobs import import_human_games, play_games
from jobs import report as report_job
from wikigame_spark import manifests, outputs, preflight, storage
from wikigame_spark.devtools.games import write_games
from wikigame_spark.evaluation.figures import PNG_SIGNATURE
from wikigame_spark.schemas import PLAYS

EXPERIMENT = "eval"
GAMES = 16


@pytest.fixture(scope="module")
def tracking(tmp_path_factory):
    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow')}/mlflow.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", uri)
        yield uri


def human_tsv(graph: str, games_dir: str, path: str) -> dict:
    """A log in the paper's layout with real titles: 14 games, a redirect title, an underscored and
    a lower-case title, a title not in the graph and a success without its steps."""
    nodes = pq.read_table(f"{graph}/nodes").to_pandas()
    redirects = pq.read_table(f"{graph}/redirects").to_pandas()
    games = pq.read_table(f"{games_dir}/games").to_pandas().sort_values("game_id")
    title = dict(zip(nodes["id"], nodes["title"]))
    redirect = redirects[redirects["target"].isin(nodes["id"])].iloc[0]
    rng = np.random.default_rng(11)
    lines = ["Num\tSuccess?\tSteps\tTime (m:s)\tStartPage\tEndPage\tOptimalSteps"]
    for g in games.head(14).itertuples():
        won = g.game_id % 4 != 3
        steps = f"{g.optimal_steps + int(rng.negative_binomial(3, 0.45))}.0" if won else ""
        start = title[g.source].replace(" ", "_") if g.game_id == 1 else title[g.source]
        end = title[g.target][0].lower() + title[g.target][1:] if g.game_id == 2 else title[g.target]
        time = f"0{rng.integers(1, 9)}:{rng.integers(10, 59)}" if won else ""
        lines.append(f"{g.game_id}\t{'Yes' if won else 'No'}\t{steps}\t{time}\t{start}\t{end}\t{g.optimal_steps}")
    lines.append(f"100\tNo\t9.0\t\t{redirect['title']}\t{title[games.iloc[0].target]}\t3")
    lines.append("101\tYes\t5.0\t01:00\tNo such page in Latgalian\tDaugpiļs\t3")
    lines.append(f"102\tYes\t\t01:00\t{title[games.iloc[0].source]}\t{title[games.iloc[0].target]}\t3")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return {"redirect_target": int(redirect["target"]), "games": games}


@pytest.fixture(scope="module")
def experiment(ltg_graph, tmp_path_factory, tracking):
    """Three play runs in one experiment: random, embedding, humans."""
    tmp = tmp_path_factory.mktemp("report")
    games_dir = write_games(ltg_graph, GAMES, path=str(tmp / "games"))
    outputs = {}
    for agent in ("random", "embedding"):
        outputs[agent] = str(tmp / "plays" / agent)
        argv = ["--graph", ltg_graph, "--games-dir", games_dir, "--agent", agent, "--games", str(GAMES)]
        argv += ["--experiment", EXPERIMENT, "--run-name", agent, "--output", outputs[agent]]
        assert play_games.main(argv) == 0
    tsv = str(tmp / "humans.tsv")
    facts = human_tsv(ltg_graph, games_dir, tsv)
    outputs["human"] = str(tmp / "plays" / "human")
    argv = ["--graph", ltg_graph, "--tsv", tsv, "--experiment", EXPERIMENT, "--output", outputs["human"]]
    assert import_human_games.main(argv) == 0
    return {"tmp": tmp, "outputs": outputs, **facts}


def read_plays(spark, directory):
    return spark.read.schema(PLAYS).parquet(f"{directory}/part-*/plays").toPandas()


@pytest.mark.slow
def test_human_import_matches_titles_and_counts_what_it_leaves_out(spark, experiment, tracking):
    out = experiment["outputs"]["human"]
    plays = read_plays(spark, out).set_index("game_id")
    manifest = manifests.read_manifest(storage.folder(out))
    assert manifest["counts"] == {
        "rows": 17,
        "imported": 15,
        "rejected": 1,
        "unmatched": 1,
        "left_out_by": {"start_title_not_in_graph": 1, "success_without_steps": 1},
    }
    assert sorted(plays.index) == [*range(14), 100]
    games = experiment["games"].set_index("game_id")
    for gid in range(14):  # underscores and a lower-case first letter matched too
        assert plays.loc[gid, "source"] == games.loc[gid, "source"]
        assert plays.loc[gid, "target"] == games.loc[gid, "target"]
    assert plays.loc[100, "source"] == experiment["redirect_target"]  # through the redirects table
    assert set(plays["agent"]) == {"human"} and set(plays["outcome"]) == {"success", "time_limit"}
    won = plays[plays.outcome == "success"]
    assert (won.steps >= won.optimal_steps).all()
    run = MlflowClient(tracking).get_run(manifest["mlflow_run_id"])
    assert run.data.params["agent"] == "human" and run.data.params["graph_source"] == "ltgwiki"
    assert run.data.metrics["rows_unmatched"] == 1 and run.data.metrics["games"] == 15
    left = mlflow.artifacts.load_text(f"runs:/{run.info.run_id}/rejected.tsv")
    assert "No such page in Latgalian" in left and "success_without_steps" in left


@pytest.mark.slow
def test_report_from_real_runs(spark, experiment, tracking, capsys):
    out = str(experiment["tmp"] / "report")
    capsys.readouterr()
    assert report_job.main(["--experiment", EXPERIMENT, "--output", out]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert (
        line.startswith(f"report: wrote {out} (report.md, report.html, ") and f"3 runs, {2 * GAMES + 15} games" in line
    )

    for name in ("report.md", "report.html", "report.json", "manifest.json"):
        assert os.path.getsize(os.path.join(out, name)) > 0
    figures = sorted(os.listdir(os.path.join(out, "figures")))
    assert all(name.endswith(".png") for name in figures), figures
    fig2 = ("fig2a_success_by_agent", "fig2b_success_vs_parameters", "fig2c_success_vs_embedding_cost")
    for required in (*fig2, "fig3d_mean_steps"):
        assert f"{required}.png" in figures
    assert {"fig15_outcomes.png", "fig3_steps_human_ltgwiki.png"} <= set(figures)
    assert "fig4_success_across_graphs.png" not in figures  # one graph: nothing to compare across
    for name in figures:
        with open(os.path.join(out, "figures", name), "rb") as f:
            data = f.read()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 5000, name

    # Table 4 from the plays themselves: p and √(p(1−p)/n)
    success = pd.read_csv(os.path.join(out, "tables", "table4_success.csv")).set_index("label")
    labels = {"random": "random", "embedding": "embedding: all-MiniLM-L6-v2", "human": "human"}
    for agent, directory in experiment["outputs"].items():
        plays = read_plays(spark, directory)
        p = (plays.outcome == "success").mean()
        row = success.loc[labels[agent]]
        assert row["games"] == len(plays) and row["graph"] == "ltgwiki"
        assert row["success_rate"] == pytest.approx(p)
        assert row["success_rate_sd"] == pytest.approx((p * (1 - p) / len(plays)) ** 0.5)

    # Route sections from the plays themselves: a move per link followed; the start page is
    # optimal_steps away
    moves = pd.read_csv(os.path.join(out, "tables", "moves.csv")).set_index("label")
    progress = pd.read_csv(os.path.join(out, "tables", "progress.csv"))
    for agent, directory in experiment["outputs"].items():
        plays = read_plays(spark, directory)
        row = moves.loc[labels[agent]]
        links = int(plays.route.map(len).sum()) - len(plays)
        assert row["moves"] == links == row["closer"] + row["same"] + row["farther"]
        assert row["plays"] == len(plays)
        start = progress[(progress.label == labels[agent]) & (progress.step == 0)].iloc[0]
        assert start["n"] + start["unreached"] == len(plays)
        if agent != "human":  # a log's optimal lengths are its own (a redirect title moves a start page)
            assert start["mean_distance"] == pytest.approx(plays.optimal_steps.mean())
    # Fig 2C's table: the embedding run's success beside the cost its run recorded
    costs = pd.read_csv(os.path.join(out, "tables", "embedding_cost.csv")).set_index("label")
    embedding_run = MlflowClient(tracking).get_run(
        manifests.read_manifest(storage.folder(experiment["outputs"]["embedding"]))["mlflow_run_id"]
    )
    assert list(costs.index) == [labels["embedding"]]  # random and humans have no embedding cache
    assert costs.loc[labels["embedding"], "embedding_core_hours_enwiki"] == pytest.approx(
        embedding_run.data.metrics["embedding_core_hours_enwiki"]
    )
    assert costs.loc[labels["embedding"], "success_rate"] == success.loc[labels["embedding"], "success_rate"]
    paired_table = pd.read_csv(os.path.join(out, "tables", "paired.csv"))
    pair = paired_table.iloc[0]
    assert pair["both"] + pair["only_a"] + pair["only_b"] + pair["neither"] == pair["games"]
    board = pd.read_csv(os.path.join(out, "tables", "leaderboard.csv"))
    assert set(board["agent"]) == set(labels.values())

    fits = pd.read_csv(os.path.join(out, "tables", "fits.csv"))
    human = fits[fits.agent == "human"].set_index("variant")
    assert set(human.index) == {"untruncated", "human_cutoff (truncated, > 10 unknown)"}
    human_plays = read_plays(spark, experiment["outputs"]["human"])
    assert human.loc["untruncated", "fitted"] == (human_plays.outcome == "success").sum()

    md = open(os.path.join(out, "report.md"), encoding="utf-8").read()
    html = open(os.path.join(out, "report.html"), encoding="utf-8").read()
    for text in ("Table 4", "Table 5", "Appendix J", "embedding: all-MiniLM-L6-v2", "(figures/fig15_outcomes.png)"):
        assert text in md
    assert "Fig 4 left out: every run played one graph (ltgwiki)" in md
    assert "Fig 15 · How each agent's games ended" in md  # captions say what a figure shows
    # 95 % Wilson interval beside the paper's σ, with the report's one rounding rule
    from wikigame_spark.document import rounded

    r = success.loc["random"]
    assert f"{rounded(r.success_rate)} ± {rounded(r.success_rate_sd)} [{rounded(r.wilson_low)}, " in md
    # runs without the traced params (made by this test's play job before it records them) are named
    trace = pd.read_csv(os.path.join(out, "tables", "run_inputs.csv")).set_index("run_name")
    assert set(trace.index) == {"random", "embedding", "human"}
    assert html.count("data:image/png;base64,") == len(figures) and "<table>" in html

    summary = json.load(open(os.path.join(out, "report.json"), encoding="utf-8"))
    client = MlflowClient(tracking)
    run = client.get_run(summary["mlflow_run_id"])
    assert run.info.run_name == "report" and run.data.tags["wikigame.kind"] == "report"
    assert run.info.experiment_id == mlflow.get_experiment_by_name(EXPERIMENT).experiment_id
    arts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"report.md", "report.html", "figures", "tables"} <= arts
    assert len(client.list_artifacts(run.info.run_id, "figures")) == len(figures)
    assert run.data.metrics["success_rate.human.ltgwiki"] == pytest.approx(success.loc["human", "success_rate"])
    # a report is replaced only when asked, as every job's output is
    with pytest.raises(outputs.OutputExistsError, match="exists; pass --overwrite to replace it"):
        report_job.main(["--experiment", EXPERIMENT, "--output", out])
    # the report run is not a play run: a second report reads the same three runs
    assert report_job.main(["--experiment", EXPERIMENT, "--output", out, "--overwrite"]) == 0
    assert f"3 runs, {2 * GAMES + 15} games" in capsys.readouterr().out


@pytest.mark.slow
def test_report_reads_the_plays_artifact_when_the_folder_is_gone(spark, experiment, tracking, capsys):
    client = MlflowClient(tracking)
    exp = mlflow.get_experiment_by_name(EXPERIMENT).experiment_id
    ids = {r.info.run_name: r.info.run_id for r in client.search_runs([exp]) if "agent" in r.data.params}
    moved = experiment["outputs"]["random"]
    shutil.move(moved, moved + ".moved")
    try:
        out = str(experiment["tmp"] / "report-runs")
        argv = ["--experiment", EXPERIMENT, "--runs", ids["random"], ids["embedding"], "--output", out]
        assert report_job.main(argv) == 0
    finally:
        shutil.move(moved + ".moved", moved)
    runs = pd.read_csv(os.path.join(out, "tables", "runs.csv")).set_index("run_name")
    assert list(runs.index) == ["embedding", "random"]
    assert runs.loc["random", "plays"] == f"runs:/{ids['random']}/plays.parquet"
    assert runs.loc["embedding", "plays"] == experiment["outputs"]["embedding"] and runs["games"].tolist() == [16, 16]

    with pytest.raises(ValueError, match="not a play run"):
        report_job.main(["--experiment", EXPERIMENT, "--runs", json.load(open(f"{out}/report.json"))["mlflow_run_id"]])
    with pytest.raises(preflight.PreflightError, match="holds a games, not a report"):
        report_job.main(["--experiment", EXPERIMENT, "--output", str(experiment["tmp"] / "games"), "--overwrite"])
    with pytest.raises(ValueError, match="experiment 'nope' not found"):
        report_job.main(["--experiment", "nope", "--output", str(experiment["tmp"] / "r3")])


def test_the_bundled_model_is_labelled_a_plumbing_check():
    from wikigame_spark.agents.llm import BASE_MODELS
    from wikigame_spark.devtools.local_server import MODEL_ALIAS

    assert MODEL_ALIAS in BASE_MODELS


def test_the_bundled_model_plays_when_it_chooses_among_the_titles():
    from wikigame_spark.devtools.local_server import MODEL_ALIAS
    from wikigame_spark.evaluation.evaluate import is_plumbing

    assert is_plumbing({"agent": "llm", "model": MODEL_ALIAS, "constrained": ""})
    assert not is_plumbing({"agent": "llm", "model": MODEL_ALIAS, "constrained": "grammar"})
    assert not is_plumbing({"agent": "likelihood", "model": MODEL_ALIAS})
    assert not is_plumbing({"agent": "llm", "model": "an-instruction-tuned-model", "constrained": ""})


def test_an_embedding_runtime_other_than_the_default_is_in_the_label():
    from wikigame_spark.evaluation.evaluate import run_label

    params = {"agent": "embedding", "model": "all-MiniLM-L6-v2"}
    assert run_label({**params, "backend": "openvino", "int8": "False"}) == "embedding: all-MiniLM-L6-v2"
    assert run_label({**params, "backend": "openvino", "int8": "True"}) == "embedding: all-MiniLM-L6-v2 openvino int8"
    assert run_label({**params, "backend": "torch", "int8": "False"}) == "embedding: all-MiniLM-L6-v2 torch"
    assert run_label({**params, "backend": "torch", "int8": "True"}) == "embedding: all-MiniLM-L6-v2 torch int8"
    assert run_label(params) == "embedding: all-MiniLM-L6-v2 torch"  # a run older than the option: torch's
    assert run_label({"agent": "tfidf"}) == "tfidf"  # another agent: no runtime


def test_the_bundled_model_is_named_a_base_model_wherever_it_plays():
    from wikigame_spark.devtools.local_server import MODEL_ALIAS
    from wikigame_spark.evaluation.evaluate import run_label

    assert run_label({"agent": "likelihood", "model": MODEL_ALIAS}) == "likelihood: gemma-3-270m (base model)"
    constrained = run_label({"agent": "llm", "model": MODEL_ALIAS, "constrained": "grammar"})
    assert constrained == "llm: gemma-3-270m constrained=grammar (base model)"
    assert run_label({"agent": "llm", "model": MODEL_ALIAS}).endswith("(base model: plumbing check)")
    assert "base" not in run_label({"agent": "llm", "model": "an-instruction-tuned-model"})


def test_runs_pooled_under_one_label_are_said_to_count_replayed_games_twice():
    from wikigame_spark.evaluation.evaluate import ReportRun, comparability_notes

    sha = {"graph_manifest_sha1": "g1", "games_manifest_sha1": "s1"}
    runs = [
        ReportRun("a", "tfidf-1", 1, sha, "", label="tfidf", graph="ltgwiki"),
        ReportRun("b", "tfidf-2", 2, sha, "", label="tfidf", graph="ltgwiki"),
        ReportRun("c", "random-1", 3, sha, "", label="random", graph="ltgwiki"),
    ]
    assert comparability_notes(runs) == [
        "tfidf on graph ltgwiki pools 2 runs (tfidf-1, tfidf-2): a game played in more than one of them counts "
        "once per run, as independent games, in its success rate, steps and fits"
    ]


def test_a_long_label_or_graph_name_still_makes_a_file_name():
    """A figure's file name holds a run's label and a graph's name; a file name is at most 255 bytes."""
    from wikigame_spark.evaluation.render import SLUG_CHARS, _slug

    assert _slug("embedding: all-MiniLM-L6-v2") == "embedding-all-minilm-l6-v2"
    first, second = "a graph folder " * 20 + "one", "a graph folder " * 20 + "two"
    assert len(_slug(first)) == SLUG_CHARS and _slug(first).startswith("a-graph-folder-a-graph")
    assert _slug(first) != _slug(second)
    assert len(f"fig3_steps_{_slug(first)}_{_slug(second)}.png".encode()) < 255


def test_a_graph_is_named_by_its_wiki_not_by_other_keys_of_its_manifest():
    from wikigame_spark.play.record import graph_params

    sources = {"path": "/data/wikispeedia", "sha256": {"links.tsv": "6f06"}}
    params = graph_params("/out/wikispeedia", {"kind": "wikispeedia", "source": sources, "counts": {"nodes": 3}})
    assert params["graph_source"] is None and params["graph_nodes"] == 3
    assert graph_params("/out/g", {"dbname": "ltgwiki"})["graph_source"] == "ltgwiki"
