"""What the two end-to-end tests share: the jobs run as a user runs them, one experiment across both
graph sources, the OpenAlex graph built once per session, and the checks of a play run."""

from __future__ import annotations

import gzip
import itertools
import json
import os

import pyarrow.parquet as pq
import pytest

from jobs import build_openalex, decision_records, graph_stats, play_games, report, sample_games
from tests.conftest import LLAMA_THREADS
from wikigame_spark.devtools.local_server import MODEL_ALIAS, LlamaServer
from wikigame_spark.devtools.openalexgen import TEMPLATE_2025, Spec, generate
from wikigame_spark.session import PROJECT_DIR

EXPERIMENT = "end-to-end"
PRICES = os.path.join(PROJECT_DIR, "conf", "prices.yaml")
FIELD = "Decision Sciences"  # the real 2025 record's field: it becomes a node of this graph
OPENALEX_SLUG = "decision-sciences"
REAL_WORK = "W2741809807"
CAP = 48  # completion tokens per LLM request in these tests


def chat_server(tmp_path_factory, model: str = MODEL_ALIAS) -> LlamaServer:
    """The local server for games without the likelihood agent: logits for the last prompt token
    only (with every token's, llama-cpp-python computes and copies each one's output row, about
    2.5 times the CPU per reply)."""
    log = str(tmp_path_factory.mktemp("llama") / "server.log")
    return LlamaServer(logits_all=False, threads=LLAMA_THREADS, log_path=log, model=model)


AGENT_OUTCOMES = {"success", "step_limit", "dead_end"}
LLM_OUTCOMES = AGENT_OUTCOMES | {"hallucination", "bad_request", "no_response"}


def session_dir(tmp_path_factory, name: str) -> str:
    """A folder shared by every test module of the session (built once, read by both tests)."""
    path = tmp_path_factory.getbasetemp() / name
    path.mkdir(exist_ok=True)
    return str(path)


def tracking_uri(tmp_path_factory) -> str:
    """One MLflow store for both tests, so that each report sees the runs of both sources."""
    return f"sqlite:///{session_dir(tmp_path_factory, 'e2e-mlflow')}/mlflow.db"


def openalex_snapshot(root: str) -> str:
    """Works in the real 2025 schema, generated from the real record, plus that record itself as a
    part file of its own partition, under one manifest: the layout of the public bucket."""
    real = os.path.join(root, "real-part.gz")
    with open(TEMPLATE_2025, encoding="utf-8") as f, gzip.open(real, "wt", encoding="utf-8") as out:
        out.write(json.dumps(json.load(f)) + "\n")
    spec = Spec(
        works=500,
        seed=17,
        fields=(FIELD, "Medicine"),
        field_weights=(0.7, 0.3),
        p_internal_ref=0.8,
        extra_files=(("2025-08-01", real),),
    )
    return generate(os.path.join(root, "snapshot"), spec).root


def openalex_graph(tmp_path_factory) -> str:
    """The Decision Sciences graph of the generated snapshot, built by the job once per session."""
    root = session_dir(tmp_path_factory, "e2e-openalex")
    out = os.path.join(root, "graphs")
    graph = os.path.join(out, OPENALEX_SLUG)
    if not os.path.exists(os.path.join(graph, "manifest.json")):
        argv = ["--input", openalex_snapshot(root), "--field", FIELD, "--field", "Medicine", "--output", out]
        assert build_openalex.main([*argv, "--language", "en"]) == 0
    return graph


def stats(graph: str, out: str) -> dict:
    assert graph_stats.main(["--graph", graph, "--output", out, "--pairs", "200", "--experiment", EXPERIMENT]) == 0
    with open(os.path.join(out, "stats.json"), encoding="utf-8") as f:
        return json.load(f)


def games(graph: str, out: str, n: int, *extra: str) -> tuple[list[dict], dict]:
    argv = ["--graph", graph, "--games", str(n), "--seed", "3", "--output", out, "--experiment", EXPERIMENT]
    assert sample_games.main([*argv, *extra]) == 0
    with open(os.path.join(out, "manifest.json"), encoding="utf-8") as f:
        return pq.read_table(os.path.join(out, "games")).to_pylist(), json.load(f)


def play(graph: str, games_dir: str, agent: str, out: str, run_name: str, *extra: str) -> list[dict]:
    """A play run, every game priced by the shipped prices file."""
    argv = ["--graph", graph, "--games-dir", games_dir, "--agent", agent, "--output", out, "--prices", PRICES]
    argv += ["--experiment", EXPERIMENT, "--run-name", run_name, "--overwrite", *extra]
    assert play_games.main(argv) == 0
    with open(os.path.join(out, "manifest.json"), encoding="utf-8") as f:
        assert json.load(f)["run_name"] == run_name
    return _plays(out)


def _plays(out: str) -> list[dict]:
    parts = sorted(p for p in os.listdir(out) if p.startswith("part-"))
    return [row for p in parts for row in pq.read_table(os.path.join(out, p, "plays")).to_pylist()]


def llm_args(server) -> list[str]:
    """A short LLM run: few titles, one follow-up, small replies (the base model does not stop)."""
    return [
        "--model",
        server.model,
        "--base-url",
        server.base_url,
        "--max-steps",
        "2",
        "--max-titles",
        "25",
        "--max-retries",
        "1",
        "--max-tokens",
        str(CAP),
        "--concurrency",
        "1",
        "--timeout",
        "300",
    ]


def play_every_agent(
    graph: str, games_dir: str, games_list: list[dict], out: str, prefix: str, llama, llm_games: int
) -> set[str]:
    """Embedding, TF-IDF, random and the two baselines (oracle, hub) on every game, the LLM on the
    first ``llm_games``, each run checked; the run names. The server's log must not show a fallback
    chat format."""
    runs = set()
    for agent in ("embedding", "tfidf", "random", "oracle", "hub"):
        name = f"{prefix}-{agent}"
        plays = play(graph, games_dir, agent, f"{out}/{agent}", name)
        check_plays(plays, games_list, agent)
        if agent == "oracle":  # the ceiling: every game won in exactly its optimal steps
            assert all(p["outcome"] == "success" and p["steps"] == p["optimal_steps"] for p in plays)
        runs.add(name)
    name = f"{prefix}-llm"
    plays = play(graph, games_dir, "llm", f"{out}/llm", name, "--games", str(llm_games), *llm_args(llama))
    check_plays(plays, sorted(games_list, key=lambda g: g["game_id"])[:llm_games], "llm")
    runs.add(name)
    assert "fallback chat format" not in open(llama.log_path, encoding="utf-8", errors="replace").read().lower()
    return runs


def check_plays(plays: list[dict], games_list: list[dict], agent: str) -> None:
    """Every game played once, routes that start at the source, outcomes the agent can have."""
    assert sorted(p["game_id"] for p in plays) == sorted(g["game_id"] for g in games_list)
    by_id = {g["game_id"]: g for g in games_list}
    for p in plays:
        g = by_id[p["game_id"]]
        assert p["route"][0] == g["source"] and p["target"] == g["target"]
        assert p["optimal_steps"] == g["optimal_steps"] and p["steps"] == len(p["route"]) - 1
        assert p["outcome"] in (LLM_OUTCOMES if agent == "llm" else AGENT_OUTCOMES)
        if p["outcome"] == "success":
            assert p["route"][-1] == g["target"] and p["steps"] >= p["optimal_steps"]
        if agent == "llm":  # real requests, replies bounded by the cap
            assert p["queries"] >= 1 and p["prompt_tokens"] > 0
            assert 0 < p["completion_tokens"] <= CAP * p["queries"]
        else:
            assert p["queries"] == 0


def decisions(graph: str, games_dir: str, plays_dir: str, out: str, games_list: list[dict]) -> dict:
    """Decision records of the expert and one play run (by its MLflow run id), checked for sums."""
    with open(os.path.join(plays_dir, "manifest.json"), encoding="utf-8") as f:
        run_id = json.load(f)["mlflow_run_id"]
    argv = ["--graph", graph, "--games-dir", games_dir, "--runs", run_id, "--output", out, "--experiment", EXPERIMENT]
    assert decision_records.main(argv) == 0
    with open(os.path.join(out, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    rows = pq.read_table(os.path.join(out, "decisions")).to_pylist()
    expert = [r for r in rows if r["player"] == "expert"]
    assert len(expert) == sum(g["optimal_steps"] for g in games_list) == manifest["by_player"]["expert"]["records"]
    assert all(r["optimal_move"] and r["move"] in r["optimal"] for r in expert)
    assert all(r["move_distance"] == r["current_distance"] - 1 for r in expert)
    assert manifest["records"] == len(rows) and manifest["sft_examples"] > 0
    assert {r["run_id"] for r in rows if r["player"] != "expert"} == {run_id}
    return manifest


def run_report(out: str) -> tuple[str, dict]:
    assert report.main(["--experiment", EXPERIMENT, "--output", out, "--overwrite"]) == 0
    with open(os.path.join(out, "report.md"), encoding="utf-8") as f, open(os.path.join(out, "report.json")) as j:
        return f.read(), json.load(j)


def check_report(md: str, summary: dict, graphs: set[str], run_names: set[str]) -> None:
    """Both graphs named, Fig 4 across them, every agent's lost games split by cause, and the
    inputs of every run listed."""
    named = {row["graph"] for row in summary["success"]}
    assert graphs <= named, named
    assert "figures/fig4_success_across_graphs.png" in summary["figures"]
    assert all(g in md for g in graphs)
    groups = lambda table: {(r["label"], r["graph"]) for r in summary[table]}  # noqa: E731
    assert groups("losses") == groups("success")
    for row in summary["losses"]:
        assert row["success"] + row["formatting"] + row["navigation"] + row["other"] == pytest.approx(1)
    inputs = {row["run_name"]: row for row in summary["run_inputs"]}
    assert run_names <= set(inputs), sorted(inputs)
    # Fig 2C: the embedding agent's cost on every graph it played (MiniLM's cache, hours at English Wikipedia's size)
    assert "figures/fig2c_success_vs_embedding_cost.png" in summary["figures"]
    embedded = {r["graph"] for r in summary["success"] if r["label"].startswith("embedding")}
    costs = {row["graph"]: row for row in summary["embedding_cost"]}
    assert embedded and set(costs) == embedded, (sorted(costs), sorted(embedded))
    assert all(row["embedding_core_hours_enwiki"] > 0 for row in costs.values())
    check_route_sections(md, summary, graphs)
    check_baselines(md, summary, graphs)
    check_prices(md, summary, graphs)


def check_prices(md: str, summary: dict, graphs: set[str]) -> None:
    """Every player priced (tokens or compute), a frontier on every graph, drawn."""
    assert "Price per game and the frontier" in md and "figures/fig_frontier.png" in summary["figures"]
    rows = summary["prices"]
    assert {(r["label"], r["graph"]) for r in rows} == {(r["label"], r["graph"]) for r in summary["success"]}
    assert all(r["price_per_game_usd"] > 0 for r in rows)
    for graph in graphs:
        edge = sorted(
            (r["price_per_game_usd"], r["success_rate"]) for r in rows if r["graph"] == graph and r["on_frontier"]
        )
        assert edge and all(a[1] < b[1] for a, b in itertools.pairwise(edge))  # dearer only where it wins more


def check_baselines(md: str, summary: dict, graphs: set[str]) -> None:
    """Every agent against the oracle and the hub: the oracle at no gap, the hub explaining its own
    moves, every share a share."""
    assert "Against the oracle and the hub" in md
    rows = summary["baselines"]
    assert graphs <= {r["graph"] for r in rows}
    for r in rows:
        assert r["moves"] >= 0 and r["plays"] > 0
        if r["moves"]:  # a run whose every game ended before a move (an LLM's first answer) has no shares
            assert 0 <= r["optimal_share"] <= 1 and 0 <= r["hub_share"] <= 1
        if r["label"] == "oracle":
            assert r["oracle_gap"] == 0 and r["optimal_share"] == 1 and r["steps_above_oracle"] == 0
        if r["label"] == "hub":
            assert r["hub_share"] == 1


def check_route_sections(md: str, summary: dict, graphs: set[str]) -> None:
    """Distance profiles on every graph: moves add up, a play starts optimal_steps away, failures are
    split by reason, every pair on a games set is compared and every player is rated."""
    for heading in ("Where the moves went", "How close the failures got", "Regret", "Leaderboard"):
        assert heading in md, heading
    assert "figures/progress_distance_by_step.png" in summary["figures"]
    assert graphs <= {row["graph"] for row in summary["moves"]}
    games = {(row["label"], row["graph"]): row["games"] for row in summary["success"]}
    steps = {(row["label"], row["graph"]): row for row in summary["moves"]}
    for key, row in steps.items():
        assert row["closer"] + row["same"] + row["farther"] == row["moves"]
        assert row["plays"] == games[key]
    for row in summary["progress"]:
        if row["step"] == 0:  # every play is on the board at its source
            assert row["n"] + row["unreached"] == games[(row["label"], row["graph"])]
    for row in summary["failures"]:
        assert row["outcome"] != "success" and row["plays"] > 0
        assert row["one_link_away"] <= row["plays"] and row["last_unreached"] <= row["plays"]
    for row in summary["paired"]:
        assert row["both"] + row["only_a"] + row["only_b"] + row["neither"] == row["games"]
        assert 0 <= row["mcnemar_p"] <= row["mcnemar_p_holm"] <= 1
    assert {r["label"] for r in summary["success"]} == {r["agent"] for r in summary["leaderboard"]}
    assert graphs <= {r["graph"] for r in summary["strata_target"]}


def check_plumbing(md: str, summary: dict) -> None:
    """The base model's free-text runs as plumbing checks only: outcome counts, no success rate."""
    plumbing = summary["plumbing_outcome_counts"]
    assert plumbing and all("plumbing check" in row["agent"] for row in plumbing)
    assert not any("plumbing" in row["label"] for row in summary["success"])  # no success rate for them
    assert "Plumbing checks (base models)" in md


def check_chat_model(summary: dict, run_name: str, graph: str, games: int) -> None:
    """A chat model's run as a player: success with its interval, losses split into formatting and
    navigation, and paired against TF-IDF and the embedding agent on the same games."""
    label = next(r["agent"] for r in summary["runs"] if r["run_name"] == run_name)
    assert "plumbing" not in label and "base model" not in label
    row = next(r for r in summary["success"] if r["label"] == label and r["graph"] == graph)
    assert row["games"] == games and 0 <= row["wilson_low"] <= row["success_rate"] <= row["wilson_high"] <= 1
    losses = next(r for r in summary["losses"] if r["label"] == label and r["graph"] == graph)
    assert losses["games"] == games and losses["success"] == pytest.approx(row["success_rate"])
    for other in ("tfidf", "embedding: all-MiniLM-L6-v2"):
        pairs = [r for r in summary["paired"] if {r["agent_a"], r["agent_b"]} == {label, other}]
        assert [r["games"] for r in pairs if r["graph"] == graph] == [games]
