"""Seeded train/eval splits (sample_games --eval-games): no target shared, sizes, manifests, seeds."""

import json
import os
import re

import pyarrow.parquet as pq
import pytest

from jobs import sample_games
from wikigame_spark.config import ConfigError


def split(ltg_graph, out, *extra):
    argv = ["--graph", ltg_graph, "--games", "120", "--eval-games", "30", "--output", out, "--experiment", "t"]
    assert sample_games.main([*argv, *extra]) == 0
    sets = {}
    for side, folder in (("train", out), ("eval", f"{out}_eval")):
        with open(os.path.join(folder, "manifest.json")) as f:
            sets[side] = (pq.read_table(os.path.join(folder, "games")).to_pandas(), json.load(f))
    return sets


@pytest.fixture()
def tracking(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")


def test_train_and_eval_share_no_target(ltg_graph, tmp_path, tracking):
    sets = split(ltg_graph, str(tmp_path / "games"))
    (train, tm), (evals, em) = sets["train"], sets["eval"]
    assert len(train) == tm["games"] == 120 and len(evals) == em["games"] == 30
    assert not set(train["target"]) & set(evals["target"])
    assert train["game_id"].tolist() == list(range(120)) and evals["game_id"].tolist() == list(range(30))
    for side, m in (("train", tm), ("eval", em)):
        s = m["split"]
        assert s["side"] == side and s["train_games"] == 120 and s["eval_games"] == 30 and s["seed"] == 0
        assert s["held_out_share"] == pytest.approx(30 / 150) and s["sources_apart"] is False
        assert s["folders"] == {"train": str(tmp_path / "games"), "eval": str(tmp_path / "games_eval")}
        assert m["counts"]["discarded_by"]["other_split"] > 0  # the other side's draws, counted
    # the eval games are ordinary games: every optimal length is a real one
    assert (evals["optimal_steps"] >= 1).all() and (evals["source"] != evals["target"]).all()


def test_sources_apart_too_and_the_split_seed_moves_the_line(ltg_graph, tmp_path, tracking):
    apart = split(ltg_graph, str(tmp_path / "a"), "--split-sources", "--eval-share", "0.3")
    train, evals = apart["train"][0], apart["eval"][0]
    nodes = set(train["source"]) | set(train["target"])
    assert not nodes & (set(evals["source"]) | set(evals["target"]))
    again = split(ltg_graph, str(tmp_path / "b"), "--split-sources", "--eval-share", "0.3")
    assert again["train"][0].equals(train) and again["eval"][0].equals(evals)  # same seeds, same sets
    other = split(ltg_graph, str(tmp_path / "c"), "--split-sources", "--eval-share", "0.3", "--split-seed", "1")
    assert set(other["eval"][0]["target"]) != set(evals["target"])


def test_without_a_split_nothing_is_held_out(ltg_graph, tmp_path, tracking):
    """Without --eval-games the games set is as it always was: no split recorded, no eval folder."""
    plain_out = str(tmp_path / "plain")
    argv = ["--graph", ltg_graph, "--games", "120", "--output", plain_out, "--experiment", "t"]
    assert sample_games.main(argv) == 0
    with open(os.path.join(plain_out, "manifest.json")) as f:
        assert "split" not in json.load(f)
    assert not os.path.exists(f"{plain_out}_eval")


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--eval-share", "0.2"], "give --eval-games too"),
        (["--eval-games", "5", "--eval-share", "1.5"], "--eval-share 1.5"),
        (["--eval-games", "-1"], "--eval-games -1: must be"),
    ],
)
def test_a_split_needs_its_size(flags, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        sample_games.JOB.parse(["--graph", "g", *flags])
