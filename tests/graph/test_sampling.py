"""Game sampling: seeded draws, acceptance rules, exact optimal lengths, options, determinism."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tests.conftest import ROOT
from tests.graph.graphs import adjacency_of, parquet_graph, plain_bfs, write_graph_dir
from wikigame_spark.config import ConfigError, load_config
from wikigame_spark.graph import frame
from wikigame_spark.graph.sampling import SAME_NODE_CODE, accept, draw_ranks, sample_games
from wikigame_spark.jobs.sample_games import SampleGamesConfig


def test_draws_are_a_pure_function_of_seed_and_index():
    s, t = draw_ranks(7, 0, 1000, 903, 50)
    s2, t2 = draw_ranks(7, 0, 1000, 903, 50)
    assert s.tolist() == s2.tolist() and t.tolist() == t2.tolist()
    a, b = draw_ranks(7, 0, 370, 903, 50), draw_ranks(7, 370, 630, 903, 50)
    assert np.concatenate([a[0], b[0]]).tolist() == s.tolist()  # chunking does not matter
    assert np.concatenate([a[1], b[1]]).tolist() == t.tolist()
    assert s.min() >= 0 and s.max() < 903 and t.min() >= 0 and t.max() < 50
    assert draw_ranks(8, 0, 1000, 903, 50)[0].tolist() != s.tolist()
    # Roughly uniform: 100,000 draws over 10 values, each within 3 % of 10,000.
    counts = np.bincount(draw_ranks(1, 0, 100_000, 10, 10)[0], minlength=10)
    assert np.all(np.abs(counts - 10_000) < 300)


def test_accept_unstratified():
    d = np.array([3, -1, SAME_NODE_CODE, 2, -2, 5, 1, 4], dtype=np.int32)
    idx, c = accept(d, 3, ())
    assert idx.tolist() == [0, 3, 5]
    assert c["draws"] == 6 and c["games"] == 3 and c["discarded"] == 3
    assert c["discarded_by"]["same_node"] == 1 and c["unreachable"] == 2
    assert c["discarded_by"]["no_path"] == 1 and c["discarded_by"]["source_no_out_links"] == 1


def test_accept_stratified_equal_bands():
    d = np.array([1, 3, 3, 5, 9, 4, 7, 6, -1, 8], dtype=np.int32)
    idx, c = accept(d, 4, ((3, 4), (5, 6)))
    assert idx.tolist() == [1, 2, 3, 7]
    assert c["band_games"] == [2, 2] and c["draws"] == 8
    assert c["discarded_by"]["outside_strata"] == 3  # steps 1, 9, 7
    assert c["discarded_by"]["stratum_full"] == 1  # the 4 after band 3-4 was full
    assert c["discarded"] == 4


def test_stratify_config_is_checked():
    assert SampleGamesConfig(graph="g", stratify="3-4, 5-6,7-8").strata() == ((3, 4), (5, 6), (7, 8))
    assert SampleGamesConfig(graph="g", stratify="5,2-3").strata() == ((2, 3), (5, 5))
    for bad, msg in [("3-4,4-5", "overlap"), ("0-2", "low"), ("x-2", "band like"), ("5-3", "low")]:
        with pytest.raises(ConfigError, match=msg):
            load_config(SampleGamesConfig, None, {"graph": "g", "stratify": bad})
    with pytest.raises(ConfigError, match="fewer than"):
        load_config(SampleGamesConfig, None, {"graph": "g", "stratify": "2,3,4", "games": 2})
    with pytest.raises(ConfigError, match="method"):
        load_config(SampleGamesConfig, None, {"graph": "g", "method": "distributed"})
    with pytest.raises(ConfigError, match="--graph"):
        load_config(SampleGamesConfig, None, {})


def check_games(games: pd.DataFrame, ltg_graph: str, n: int) -> None:
    """Every game is a distinct reachable pair whose optimal_steps equals a plain BFS distance."""
    _, edges, _ = parquet_graph(ltg_graph)
    adj = adjacency_of(edges)
    assert games["game_id"].tolist() == list(range(n))
    for s, t, d in zip(games["source"], games["target"], games["optimal_steps"]):
        assert s != t
        assert plain_bfs(adj, int(s), int(t)) == d, (s, t)


def test_games_on_latgalian_wikipedia_are_exact(spark, ltg_graph):
    g = frame.read_graph(spark, ltg_graph)
    cfg = SampleGamesConfig(graph=ltg_graph, games=300, seed=42, method="local")
    sampled = sample_games(g.nodes, g.edges, cfg)
    games = sampled.games.toPandas()
    check_games(games, ltg_graph, 300)
    c = sampled.counts
    assert c["draws"] == c["games"] + c["discarded"]
    assert sum(c["discarded_by"].values()) == c["discarded"]
    assert c["unreachable"] > 0  # the real graph has unreachable pairs, and they are counted
    again = sample_games(g.nodes, g.edges, cfg).games.toPandas()
    assert again.equals(games)
    mapped = sample_games(g.nodes, g.edges, cfg, ltg_graph)  # the job's way: the graph's mapped int32 files
    assert mapped.games.toPandas().equals(games) and mapped.counts == c


def test_the_mapped_files_of_another_graph_are_refused(spark, ltg_graph, union_dir):
    g = frame.read_graph(spark, union_dir)
    cfg = SampleGamesConfig(graph=union_dir, games=5, seed=1, method="local")
    with pytest.raises(ValueError, match="pass the directory the tables were read from"):
        sample_games(g.nodes, g.edges, cfg, ltg_graph)


def test_stratified_games(spark, ltg_graph):
    g = frame.read_graph(spark, ltg_graph)
    cfg = SampleGamesConfig(graph=ltg_graph, games=90, seed=1, stratify="2-3,4,5-6", method="local")
    games = sample_games(g.nodes, g.edges, cfg).games.toPandas()
    check_games(games, ltg_graph, 90)
    steps = games["optimal_steps"]
    assert [steps.between(2, 3).sum(), (steps == 4).sum(), steps.between(5, 6).sum()] == [30, 30, 30]


def test_targets_where_and_target_language(spark, ltg_graph, tmp_path):
    g = frame.read_graph(spark, ltg_graph)
    cfg = SampleGamesConfig(graph=ltg_graph, games=50, seed=2, targets_where="page_id > 2000", method="local")
    sampled = sample_games(g.nodes, g.edges, cfg)
    games = sampled.games.toPandas()
    nodes, _, _ = parquet_graph(ltg_graph)
    page = dict(zip(nodes["id"], nodes["page_id"]))
    assert all(page[t] > 2000 for t in games["target"])
    assert any(page[s] <= 2000 for s in games["source"])  # sources are not filtered
    check_games(games, ltg_graph, 50)

    with pytest.raises(ValueError, match="--target-language en: the nodes table has no 'language' column"):
        sample_games(g.nodes, g.edges, SampleGamesConfig(graph=ltg_graph, target_language="en"))
    with pytest.raises(ValueError, match="--targets-where"):
        sample_games(g.nodes, g.edges, SampleGamesConfig(graph=ltg_graph, targets_where="no_such_column > 1"))

    # An OpenAlex-like graph: a cycle of 6 works, languages alternate; targets only "en".
    path = write_graph_dir(
        spark,
        str(tmp_path / "oa"),
        range(6),
        [(i, (i + 1) % 6) for i in range(6)],
        extra={"language": ["en", "fr"] * 3},
    )
    oa = frame.read_graph(spark, path)
    cfg = SampleGamesConfig(graph=path, games=20, seed=3, target_language="en", method="local")
    games = sample_games(oa.nodes, oa.edges, cfg).games.toPandas()
    assert set(games["target"]) <= {0, 2, 4}
    assert all(d == (t - s) % 6 for s, t, d in zip(games["source"], games["target"], games["optimal_steps"]))


@pytest.mark.slow
def test_largest_scc_with_strata_on_latgalian_wikipedia(spark, ltg_graph):
    """LLM-WikiRace's setting: sources and targets in the largest SCC, three difficulty bands."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    nodes, edges, _ = parquet_graph(ltg_graph)
    ids = np.array(sorted(nodes["id"].tolist()))
    m = csr_matrix((np.ones(len(edges)), ([a for a, _ in edges], [b for _, b in edges])), (ids.size, ids.size))
    _, lab = connected_components(m, directed=True, connection="strong")
    giant = set(ids[lab == np.bincount(lab).argmax()].tolist())
    g = frame.read_graph(spark, ltg_graph)
    cfg = SampleGamesConfig(graph=ltg_graph, games=60, seed=4, largest_scc=True, stratify="2,3,4-5", method="local")
    sampled = sample_games(g.nodes, g.edges, cfg)
    games = sampled.games.toPandas()
    check_games(games, ltg_graph, 60)
    assert set(games["source"]) | set(games["target"]) <= giant
    steps = games["optimal_steps"]
    assert [(steps == 2).sum(), (steps == 3).sum(), steps.between(4, 5).sum()] == [20, 20, 20]
    c = sampled.counts
    assert c["largest_scc"] and c["sources"] == c["largest_scc_nodes"] == len(giant) == c["eligible_targets"]
    assert c["unreachable"] == 0  # inside one SCC every pair is reachable
    same = sample_games(g.nodes, g.edges, dataclasses.replace(cfg, method="graphframes"))
    assert same.games.toPandas().equals(games) and same.counts["discarded_by"] == c["discarded_by"]


def test_too_few_reachable_pairs_is_a_clear_error(spark, tmp_path):
    path = write_graph_dir(spark, str(tmp_path / "tiny"), range(3), [(0, 1)])
    g = frame.read_graph(spark, path)
    cfg = SampleGamesConfig(graph=path, games=5, seed=0, stratify="2", max_draws=500, method="local")
    with pytest.raises(ValueError, match="band 2-2 has 0 of 5"):
        sample_games(g.nodes, g.edges, cfg)


@pytest.mark.slow
def test_sample_games_job_is_identical_on_local1_and_local2_and_both_methods(spark, ltg_graph, tmp_path):
    """The job in this process (local[2]) and by a flag-less spark-submit on local[1] (GraphFrames
    from spark-defaults' spark.jars), both with the GraphFrames method, and the stage with the local
    method: the same games and the same counts."""
    from jobs import sample_games as job
    from wikigame_spark import parquet, storage
    from wikigame_spark.schemas import GAMES

    common = ["--graph", ltg_graph, "--games", "30", "--seed", "9"]
    out2 = str(tmp_path / "games2")
    assert job.main([*common, "--output", out2, "--method", "graphframes"]) == 0
    out1 = str(tmp_path / "games1")
    # the venv's Spark settings (make install puts them in its pyspark/conf), as a user has them
    env = {**{k: v for k, v in os.environ.items() if k != "SPARK_CONF_DIR"}, "PYTHONPATH": ROOT}
    submit = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    cmd = [submit, "--master", "local[1]", "jobs/sample_games.py", *common]
    run = [*cmd, "--output", out1, "--method", "graphframes"]
    done = subprocess.run(run, env=env, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "sample_games: wrote" in done.stdout + done.stderr

    def table(path: str) -> pd.DataFrame:
        return parquet.read_table(spark, storage.folder(f"{path}/games"), GAMES).orderBy("game_id").toPandas()

    g = frame.read_graph(spark, ltg_graph)
    cfg = SampleGamesConfig(graph=ltg_graph, games=30, seed=9, method="local")
    local = sample_games(g.nodes, g.edges, cfg)
    a, b = table(out2), table(out1)
    assert a.equals(b)
    assert a.equals(local.games.toPandas())
    check_games(a, ltg_graph, 30)

    m1, m2 = (json.load(open(os.path.join(p, "manifest.json"))) for p in (out1, out2))
    for m in (m1, m2):
        assert m["kind"] == "games" and m["seed"] == 9 and m["games"] == 30
        assert m["graph"]["dbname"] == "ltgwiki" and m["parameters"]["games"] == 30
        assert m["draws"] == m["counts"]["draws"] == 30 + m["discarded"]
    assert m2["counts"]["method"] == m1["counts"]["method"] == "graphframes"
    assert m1["counts"]["decided_by_reachability"] == m1["counts"]["unreachable"] > 0
    same = {k: v for k, v in local.counts.items() if k != "method"}
    assert {k: v for k, v in m1["counts"].items() if k != "method"} == json.loads(json.dumps(same))
    assert {k: v for k, v in m2["counts"].items() if k != "method"} == json.loads(json.dumps(same))
    assert m1["discarded"] == m2["discarded"] > 0
    with pytest.raises(FileExistsError):
        job.main([*common, "--output", out2])


@pytest.mark.slow
def test_the_jobs_local_method_makes_the_mapped_files_under_cache_dir(spark, ltg_graph, tmp_path):
    """--cache-dir (a graph directory that is read-only to this user): the mapped files go there,
    and the games are those of the stage on collected columns."""
    from jobs import graph_stats as stats_job
    from jobs import sample_games as job
    from wikigame_spark.layout import CacheDir

    cache = str(tmp_path / "cache")
    out = str(tmp_path / "games")
    argv = ["--graph", ltg_graph, "--games", "40", "--seed", "4", "--method", "local", "--cache-dir", cache]
    assert job.main([*argv, "--output", out]) == 0
    assert os.path.isfile(f"{CacheDir(cache).mapped_graph}/manifest.json")
    g = frame.read_graph(spark, ltg_graph)
    collected = sample_games(g.nodes, g.edges, SampleGamesConfig(graph=ltg_graph, games=40, seed=4, method="local"))
    assert (
        pd.read_parquet(f"{out}/games").sort_values("game_id").reset_index(drop=True).equals(collected.games.toPandas())
    )
    stats_argv = ["--graph", ltg_graph, "--method", "local", "--cache-dir", cache, "--output", str(tmp_path / "stats")]
    assert stats_job.main([*stats_argv, "--pairs", "50"]) == 0


def test_accept_by_degree_cells_shares_games_equally():
    d = np.array([2, 3, 2, -1, 4, 2, 3, 5], dtype=np.int32)
    cells = np.array([0, 0, 1, 1, 0, 1, 2, 3])
    idx, c = accept(d, 4, (), cells, 4)
    assert idx.tolist() == [0, 2, 6, 7]
    assert c["band_games"] == [1, 1, 1, 1] and c["discarded_by"]["stratum_full"] == 3  # draws 1, 4, 5


def test_degree_quantile_games_on_latgalian_wikipedia(spark, ltg_graph):
    g = frame.read_graph(spark, ltg_graph)
    cfg = SampleGamesConfig(graph=ltg_graph, games=40, seed=3, method="local")
    sampled = sample_games(g.nodes, g.edges, cfg, degree_quantiles=2)
    games = sampled.games.toPandas()
    check_games(games, ltg_graph, 40)
    edges = g.edges.toPandas()
    ins = edges.groupby("dst").size()
    outs = edges.groupby("src").size()
    cut_in = np.quantile(ins.to_numpy(), 0.5)  # over the nodes with in-links (with links, below)
    cut_out = np.quantile(outs.to_numpy(), 0.5)
    popular = games["target"].map(lambda t: ins.get(t, 0) > cut_in)
    linky = games["source"].map(lambda s: outs.get(s, 0) > cut_out)
    assert pd.crosstab(popular, linky).to_numpy().tolist() == [[10, 10], [10, 10]]
    assert sampled.counts["degree_strata"]["target_in_degree_cuts"] == [pytest.approx(cut_in)]
    with pytest.raises(ValueError, match="at least 2"):
        sample_games(g.nodes, g.edges, cfg, degree_quantiles=1)
