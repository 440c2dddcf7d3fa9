"""The report's distance profiles: every play's route scored against its graph, cached by games set.

For each graph the report's runs played, the play stage's mapped CSR files
(:func:`wikigame_spark.graph.mapped.ensure_graph`) are opened once, and the profiles of every run
not yet cached are computed together (:class:`~wikigame_spark.graph.profiles.ProfileGraph`: one
search per distinct page and target, shared by all the runs of a games set, humans' included).
Each run's profiles are kept beside the graph, under ``cache/profiles/<games set>/<run id>``, with a
manifest naming the graph build, the games set and the run, so the next report reads them.

Each play also gets its difficulty strata: the target's in-degree and the source's out-degree
quantile among all the graph's nodes (:func:`~wikigame_spark.graph.profiles.degree_strata`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import pandas as pd
from pyspark.sql import SparkSession

from wikigame_spark import layout, manifests, outputs, parquet, storage
from wikigame_spark.evaluation.tables import GAMES_SET
from wikigame_spark.graph import mapped
from wikigame_spark.graph.profiles import DISTANCES, GAME_ID, PROFILES, ProfileGraph, degree_strata
from wikigame_spark.handles import GraphHandle
from wikigame_spark.layout import GraphDir
from wikigame_spark.play import record
from wikigame_spark.storage import Folder

log = logging.getLogger(__name__)

TARGET_STRATUM = "target_in_degree"
SOURCE_STRATUM = "source_out_degree"
QUANTILES = 4
PROFILE_TABLE = "profiles"
COLUMNS = ["label", "graph", "run_id", "game_id", "outcome", "steps", "optimal_steps", "source", "target", "route"]


def games_set(params: dict) -> str:
    """What identifies the games a run played: the games manifest's digest (else its URI, else
    the run's own graph: imported human games have their own games)."""
    return (
        params.get(record.GAMES_MANIFEST_SHA1)
        or params.get(record.GAMES_URI)
        or f"{params.get('graph', '')}#{params.get('run_name', '')}"
    )


def cache_path(graph_dir: str, games: str, run_id: str) -> str:
    return layout.join(
        GraphDir(graph_dir).cache, "profiles", manifests.manifest_sha1({"games_set": games})[:16], run_id
    )


def _made_from(graph: GraphHandle, run, games: str) -> dict:
    return {"graph_manifest_sha1": graph.sha1, GAMES_SET: games, "run_id": run.run_id}


def _strata(values, quantiles: int, what: str):
    strata, cuts = degree_strata(values, quantiles)
    low = [0, *[math.floor(c) + 1 for c in cuts]]
    high = [*[math.floor(c) for c in cuts], int(values.max()) if values.size else 0]
    names = [f"Q{q + 1} ({what} {low[q]}–{high[q]})" for q in range(quantiles)]
    return strata, names


def profiled_plays(
    spark: SparkSession, plays, runs: Sequence, method: str = "auto", quantiles: int = QUANTILES
) -> tuple[pd.DataFrame, list[str]]:
    """The labelled plays (pandas: :data:`COLUMNS` plus ``games_set``, ``distances`` and the two
    strata) of every run whose graph can be opened, and notes on the runs left out."""
    frame = plays.select(*COLUMNS).toPandas()
    frame[GAMES_SET] = frame["run_id"].map({r.run_id: games_set(r.params) for r in runs})
    by_graph: dict[str, list] = {}
    for r in runs:
        by_graph.setdefault((r.params.get("graph") or "").rstrip("/"), []).append(r)
    parts, notes = [], []
    for graph_dir, group in sorted(by_graph.items()):
        names = ", ".join(r.run_name for r in group)
        try:
            handle = GraphHandle.open(graph_dir, spark) if graph_dir else None
        except FileNotFoundError:
            handle = None
        if handle is None:
            notes.append(
                f"distance profiles: the graph of run(s) {names} ({graph_dir or 'not recorded'}) is not readable"
            )
            continue
        graph = ProfileGraph.from_mapped(mapped.mapped_graph(mapped.ensure_graph(spark, handle)))
        ids = {r.run_id for r in group}
        mine = frame[frame["run_id"].isin(ids)].copy()
        mine[DISTANCES] = _profiles(spark, graph, handle, group, mine, method)
        in_strata, in_names = _strata(graph.in_degree, quantiles, "in-links")
        out_strata, out_names = _strata(graph.out_degree, quantiles, "links")
        mine[TARGET_STRATUM] = [in_names[s] for s in in_strata[graph.positions(mine["target"].to_numpy())]]
        mine[SOURCE_STRATUM] = [out_names[s] for s in out_strata[graph.positions(mine["source"].to_numpy())]]
        parts.append(mine)
    if not parts:
        return pd.DataFrame(columns=[*COLUMNS, GAMES_SET, DISTANCES, TARGET_STRATUM, SOURCE_STRATUM]), notes
    return pd.concat(parts, ignore_index=True), notes


def _profiles(
    spark: SparkSession, graph: ProfileGraph, handle: GraphHandle, runs: Sequence, plays: pd.DataFrame, method: str
):
    """Each play's profile (aligned with ``plays``): cached ones read, the rest computed in one go
    and cached per run."""
    out = pd.Series([None] * len(plays), index=plays.index, dtype=object)
    todo = []
    for run in runs:
        games = games_set(run.params)
        cache = storage.folder(cache_path(handle.path, games, run.run_id), spark)
        made_from = _made_from(handle, run, games)
        rows = plays["run_id"] == run.run_id
        cached = _read(spark, cache, made_from)
        if cached is not None and set(cached) >= set(plays.loc[rows, "game_id"]):
            out[rows] = plays.loc[rows, "game_id"].map(cached)
        else:
            todo.append((run, cache, made_from, rows))
    if todo:
        rows = pd.concat([r for *_, r in todo], axis=1).any(axis=1)
        sub = plays[rows]
        found = graph.profiles(sub["target"].to_numpy(), list(sub["route"]), method=method)
        out[rows] = pd.Series([p.tolist() for p in found], index=sub.index, dtype=object)
        for run, cache, made_from, r in todo:
            table = pd.DataFrame({GAME_ID: plays.loc[r, "game_id"].astype("int64"), DISTANCES: out[r]})
            df = spark.createDataFrame(table, PROFILES).coalesce(1)
            outputs.write_cache(
                cache, PROFILE_TABLE, df, PROFILES, {"kind": "distance_profiles", "made_from": made_from}
            )
            log.info("distance profiles of run %s (%d plays) cached at %s", run.run_name, int(r.sum()), cache.root)
    return out


def _read(spark: SparkSession, cache: Folder, made_from: dict) -> dict | None:
    try:
        manifest = manifests.read_manifest(cache)
    except FileNotFoundError:
        return None
    if manifest.get("made_from") != made_from:
        return None
    table = parquet.read_table(spark, cache.sub(PROFILE_TABLE), PROFILES).toPandas()
    return {int(g): [int(v) for v in d] for g, d in zip(table[GAME_ID], table[DISTANCES])}
