"""jobs/decision_records.py on the real Latgalian graph: the expert's and a play run's steps, every
distance and optimal set checked against networkx, the chat data read back by a real tokenizer."""

import glob
import json
import os

import networkx as nx
import numpy as np
import pyarrow.parquet as pq
import pytest

from jobs import decision_records, play_games
from tests.graph.graphs import parquet_graph
from wikigame_spark.devtools import models
from wikigame_spark.devtools.games import write_games
from wikigame_spark.play.steps import REWARDS

GAMES = 40


@pytest.fixture(scope="module")
def setup(ltg_graph, tmp_path_factory):
    """The games, a random play run on them (its MLflow run id), and the MLflow store."""
    root = tmp_path_factory.mktemp("decisions")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{root}/mlflow.db")
        games = write_games(ltg_graph, GAMES, path=str(root / "games"))
        plays = str(root / "plays")
        argv = ["--graph", ltg_graph, "--games-dir", games, "--agent", "random", "--output", plays]
        assert play_games.main([*argv, "--experiment", "t", "--run-name", "random", "--max-steps", "12"]) == 0
        with open(os.path.join(plays, "manifest.json")) as f:
            run_id = json.load(f)["mlflow_run_id"]
        yield {"games": games, "run_id": run_id, "plays": plays, "root": root, "mp": mp}


def records(ltg_graph, setup, out, *extra):
    argv = ["--graph", ltg_graph, "--games-dir", setup["games"], "--output", out, "--experiment", "t", *extra]
    assert decision_records.main(argv) == 0
    with open(os.path.join(out, "manifest.json")) as f:
        manifest = json.load(f)
    table = pq.read_table(os.path.join(out, "decisions")).to_pandas()
    return table.sort_values(["player", "game_id", "step"], ignore_index=True), manifest


def json_lines(folder):
    return [json.loads(line) for path in sorted(glob.glob(f"{folder}/part-*.json")) for line in open(path)]


def test_every_record_is_exact_and_the_chat_data_reads_back(ltg_graph, setup, tmp_path):
    out = str(tmp_path / "decisions")
    table, manifest = records(ltg_graph, setup, out, "--runs", setup["run_id"], "--max-titles", "30")
    _, edges, _ = parquet_graph(ltg_graph)
    graph = nx.DiGraph(edges)
    out_links = {u: sorted(graph.successors(u)) for u in graph.nodes}
    games = pq.read_table(os.path.join(setup["games"], "games")).to_pandas().set_index("game_id")
    dist = {t: dict(nx.single_target_shortest_path_length(graph, t)) for t in games["target"].unique()}

    expert = table[table["player"] == "expert"]
    assert set(table["player"]) == {"expert", "random"}
    # an expert's route per game, exactly as long as the game's optimal length, every move optimal
    assert expert.groupby("game_id").size().to_dict() == games["optimal_steps"].to_dict()
    assert expert["optimal_move"].all() and (expert["reward"] == REWARDS[0]).all() and (expert["progress"] == 1).all()
    plays = table[table["player"] == "random"]
    assert plays["run_id"].eq(setup["run_id"]).all() and set(plays["game_id"]) == set(games.index)

    for row in table.itertuples():
        d = dist[row.target]
        route_so_far = None
        if row.player == "expert":
            visited = set(expert[(expert.game_id == row.game_id) & (expert.step < row.step)]["current"])
        else:
            route_so_far = plays[(plays.game_id == row.game_id) & (plays.step <= row.step)]["current"].tolist()
            visited = set(route_so_far)
        want = [v for v in out_links.get(row.current, []) if v not in visited]  # the paper's rules
        assert list(row.offered) == want
        assert list(row.offered_distances) == [d.get(v, -1) for v in want]
        best = min((d[v] for v in want if v in d), default=None)
        assert sorted(row.optimal) == sorted(v for v in want if v in d and d[v] == best)
        assert row.move in want and row.move_distance == d.get(row.move, -1)
        assert row.current_distance == d.get(row.current, -1) and row.back is False
        worse = None if row.move not in d else d[row.move] - best
        assert row.reward == (REWARDS[worse] if worse is not None and worse < len(REWARDS) else 0.0)
        assert list(row.offered_titles) and row.target_title and row.current_title

    by = manifest["by_player"]
    assert by["expert"]["optimal_share"] == 1.0 and by["expert"]["records"] == len(expert)
    assert by["expert"]["routes"] == by["random"]["routes"] == GAMES
    assert manifest["records"] == len(table) and manifest["runs"][0]["run_id"] == setup["run_id"]
    assert manifest["games"]["manifest_sha1"] and "reasoning-gym" in manifest["reward_rule"]

    sft, pairs = json_lines(f"{out}/sft"), json_lines(f"{out}/preferences")
    assert len(sft) == manifest["sft_examples"] and len(pairs) == manifest["preference_pairs"] > 0
    by_step = {(r.player, r.game_id, r.step): r for r in table.itertuples()}
    assert {(e["player"], e["run_id"]) for e in sft} == {("expert", None), ("random", setup["run_id"])}
    for example in sft:
        row = by_step[(example["player"], example["game_id"], example["step"])]
        roles = [m["role"] for m in example["messages"]]
        assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
        shown = json.loads(example["messages"][5]["content"].split("following list: ", 1)[1])
        assert shown == list(row.offered_titles[:30])
        answer = json.loads(example["messages"][-1]["content"])["title"]
        d = dict(zip(row.offered_titles[:30], row.offered_distances[:30]))
        assert d[answer] == min(v for v in d.values() if v >= 0)
    for pair in pairs:
        row = by_step[(pair["player"], pair["game_id"], pair["step"])]
        d = dict(zip(row.offered_titles, row.offered_distances))
        chosen, rejected = (json.loads(pair[k][0]["content"])["title"] for k in ("chosen", "rejected"))
        assert (
            (pair["player"], pair["run_id"]) == ("random", setup["run_id"])
            and d[chosen] >= 0
            and (d[rejected] < 0 or d[rejected] > d[chosen])
        )

    # a real tokenizer's chat template (SmolLM2's, from its GGUF) reads the conversations as they are
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    llm = Llama(model_path=models.SMOLLM2.path(), vocab_only=True, verbose=False)
    template = llm.metadata["tokenizer.chat_template"]
    bos, eos = (llm.detokenize([t]).decode() for t in (llm.token_bos(), llm.token_eos()))
    render = Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos)
    for example in sft[:20]:
        prompt = render(messages=example["messages"]).prompt
        assert example["messages"][-1]["content"] in prompt and "<|im_start|>assistant" in prompt
        assert len(llm.tokenize(prompt.encode("utf-8"), special=True)) > 50
    for pair in pairs[:5]:
        assert pair["chosen"][0]["content"] in render(messages=pair["prompt"] + pair["chosen"]).prompt


def test_same_seed_same_records_on_any_number_of_tasks(ltg_graph, setup, tmp_path):
    one, _ = records(ltg_graph, setup, str(tmp_path / "one"), "--partitions", "1", "--games", "15")
    three, manifest = records(ltg_graph, setup, str(tmp_path / "three"), "--partitions", "3", "--games", "15")
    assert len(one) == manifest["records"] > 0
    for column in one.columns:
        assert [np.asarray(v).tolist() for v in one[column]] == [np.asarray(v).tolist() for v in three[column]]


def test_titles_view_and_no_cap(ltg_graph, setup, tmp_path):
    out = str(tmp_path / "titles")
    table, manifest = records(ltg_graph, setup, out, "--view", "titles", "--max-titles", "0", "--games", "5")
    assert manifest["view"] == "titles" and manifest["max_titles"] == 0
    example = json_lines(f"{out}/sft")[0]
    assert json.loads(example["messages"][3]["content"]).keys() == {"title"}
    row = table[
        (table.player == example["player"]) & (table.game_id == example["game_id"]) & (table.step == example["step"])
    ].iloc[0]
    assert json.loads(example["messages"][5]["content"].split("following list: ", 1)[1]) == list(row.offered_titles)


def test_a_run_of_other_games_is_refused(ltg_graph, setup, tmp_path):
    other = write_games(ltg_graph, 5, seed=9, path=str(tmp_path / "other"))
    argv = ["--graph", ltg_graph, "--games-dir", other, "--runs", setup["run_id"], "--experiment", "t"]
    with pytest.raises(ValueError, match="played other games"):
        decision_records.main([*argv, "--output", str(tmp_path / "out")])
    assert not os.path.exists(tmp_path / "out" / "manifest.json")


def test_a_split_gives_train_and_held_out_eval_records_in_one_command(ltg_graph, setup, tmp_path):
    from jobs import sample_games

    train = str(tmp_path / "train")
    argv = ["--graph", ltg_graph, "--games", "30", "--eval-games", "10", "--output", train, "--experiment", "t"]
    assert sample_games.main(argv) == 0
    out = str(tmp_path / "records")
    argv = ["--graph", ltg_graph, "--games-dir", train, "--output", out, "--experiment", "t"]
    assert decision_records.main(argv) == 0
    with open(os.path.join(out, "manifest.json")) as f:
        manifest = json.load(f)
    held = manifest["eval"]
    assert held["games"] == f"{train}_eval" and held["by_player"]["expert"]["optimal_share"] == 1.0
    evals = pq.read_table(os.path.join(f"{train}_eval", "games")).to_pandas()
    rows = pq.read_table(os.path.join(out, "eval", "decisions")).to_pandas()
    assert len(rows) == held["records"] == evals["optimal_steps"].sum()
    assert len(json_lines(f"{out}/eval/sft")) == held["sft_examples"] == len(rows)
    trained = pq.read_table(os.path.join(out, "decisions")).to_pandas()
    assert not set(trained["target"]) & set(rows["target"])  # the held-out targets stay held out
