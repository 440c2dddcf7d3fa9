"""Fixtures for the graph tests: a throwaway MLflow store and the union of the known-answer graphs."""

from __future__ import annotations

import os

import pytest

from tests.graph.graphs import union_graph, write_graph_dir


@pytest.fixture(scope="session", autouse=True)
def mlflow_tmp(tmp_path_factory):
    """Jobs log to a throwaway SQLite MLflow store, not the project's."""
    path = tmp_path_factory.mktemp("mlflow") / "mlflow.db"
    old = os.environ.get("MLFLOW_TRACKING_URI")
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{path}"
    yield os.environ["MLFLOW_TRACKING_URI"]
    if old is None:
        os.environ.pop("MLFLOW_TRACKING_URI", None)
    else:
        os.environ["MLFLOW_TRACKING_URI"] = old


@pytest.fixture(scope="session")
def union_dir(spark, tmp_path_factory):
    nodes, edges, _ = union_graph()
    return write_graph_dir(spark, str(tmp_path_factory.mktemp("graphs") / "union"), nodes, edges)
