"""Single-node fast path: the graph as compressed sparse rows, exact distances by bidirectional BFS.

Used when the graph fits the driver's memory (``method: local``, or ``auto``, see
:mod:`wikigame_spark.graph.distances`). Node ids are mapped to positions 0…N−1 in id order, so any
id scheme works; the graph is held twice (out-links and in-links) as int32 arrays, about 8 bytes
per edge. Reachability is decided first from strongly connected components
(:mod:`wikigame_spark.graph.reach`); only reachable pairs are searched.

Each search advances, level by level, whichever side (forward from the source on out-links,
backward from the target on in-links) has the frontier with fewer links to follow, and stops at
the first level where the two searches touch. When forward has settled depth ``a`` and backward
depth ``b`` without touching, the distance is more than ``a + b``; so the first touch, made by
advancing one side by one level, gives exactly ``a + b + 1``.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from wikigame_spark.graph.reach import REACHABLE, condensation_of, neighbours

log = logging.getLogger(__name__)


class CsrGraph:
    """A directed graph as out- and in-adjacency arrays, with exact pairwise distances."""

    def __init__(self, node_ids: np.ndarray, src: np.ndarray, dst: np.ndarray) -> None:
        """Build from sorted unique node ids and edge endpoint ids (any integer dtype).

        Raises ``ValueError`` when an edge names a node that is not in ``node_ids``.
        """
        node_ids = np.asarray(node_ids, dtype=np.int64)
        if node_ids.size and np.any(np.diff(node_ids) <= 0):
            raise ValueError("CsrGraph: node ids must be sorted and unique")
        self.node_ids = node_ids
        n = node_ids.size
        self.dense = bool(n == 0 or (node_ids[0] == 0 and node_ids[-1] == n - 1))
        s = self.positions(src)
        d = self.positions(dst)
        ones = np.ones(s.size, dtype=np.bool_)
        out = sp.csr_matrix((ones, (s, d)), shape=(n, n))
        self.out_ptr = out.indptr.astype(np.int64)
        self.out_idx = out.indices.astype(np.int32, copy=False)
        inn = out.tocsc()
        self.in_ptr = inn.indptr.astype(np.int64)
        self.in_idx = inn.indices.astype(np.int32, copy=False)
        self.out_deg = np.diff(self.out_ptr)
        self.in_deg = np.diff(self.in_ptr)
        _, self.scc = connected_components(out, directed=True, connection="strong")
        del out, inn
        self.condensation = condensation_of(self.scc, s, d)
        # Per-search marks: a node is seen in search k when its stamp equals k (no clearing).
        self._seen_f = np.zeros(n, dtype=np.int32)
        self._seen_b = np.zeros(n, dtype=np.int32)
        self._owner = np.zeros(n, dtype=np.int32)
        self._stamp = 0

    @property
    def num_nodes(self) -> int:
        return int(self.node_ids.size)

    @property
    def num_edges(self) -> int:
        return int(self.out_idx.size)

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """Positions 0…N−1 of node ids; ``ValueError`` names an id that is not a node."""
        ids = np.asarray(ids, dtype=np.int64)
        if self.dense:
            bad = (ids < 0) | (ids >= self.node_ids.size)
            pos = ids
        else:
            pos = np.searchsorted(self.node_ids, ids)
            pos = np.minimum(pos, max(self.node_ids.size - 1, 0))
            bad = self.node_ids[pos] != ids if self.node_ids.size else np.ones(ids.shape, bool)
        if np.any(bad):
            raise ValueError(f"node id {int(ids[np.argmax(bad)])} is not in the nodes table")
        return pos.astype(np.int32)

    def distances(self, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """Exact shortest path lengths (int32) for node-id pairs, or a negative reason code."""
        s = self.positions(sources)
        t = self.positions(targets)
        out = np.zeros(s.size, dtype=np.int32)
        differ = np.flatnonzero(s != t)
        a, b = s[differ], t[differ]
        out[differ] = self.condensation.decide(self.out_deg[a], self.in_deg[b], self.scc[a], self.scc[b])
        for i in np.flatnonzero(out == REACHABLE):
            out[i] = self._distance(int(s[i]), int(t[i]))
        return out

    def _distance(self, s: int, t: int) -> int:
        """Bidirectional BFS between distinct nodes known to be connected by a directed path."""
        if self._stamp == np.iinfo(np.int32).max:
            self._seen_f[:] = 0
            self._seen_b[:] = 0
            self._stamp = 0
        self._stamp += 1
        stamp = self._stamp
        seen_f, seen_b = self._seen_f, self._seen_b
        seen_f[s] = stamp
        seen_b[t] = stamp
        front_f = np.array([s], dtype=np.int32)
        front_b = np.array([t], dtype=np.int32)
        cost_f = int(self.out_deg[s])
        cost_b = int(self.in_deg[t])
        steps = 0
        while True:
            forward = cost_f <= cost_b
            if forward:
                front, cost = front_f, cost_f
                ptr, idx, deg, seen, other = self.out_ptr, self.out_idx, self.out_deg, seen_f, seen_b
            else:
                front, cost = front_b, cost_b
                ptr, idx, deg, seen, other = self.in_ptr, self.in_idx, self.in_deg, seen_b, seen_f
            nbrs = neighbours(ptr, idx, front, cost)
            new = nbrs[seen[nbrs] != stamp]
            steps += 1
            if new.size == 0:
                raise RuntimeError(f"positions {s} -> {t}: search ended without a path the SCCs promised")
            if np.any(other[new] == stamp):
                return steps
            new = self._unique(new)
            seen[new] = stamp
            if forward:
                front_f, cost_f = new, int(deg[new].sum())
            else:
                front_b, cost_b = new, int(deg[new].sum())

    def _unique(self, nodes: np.ndarray) -> np.ndarray:
        """Distinct values without sorting: the last writer of each node's slot keeps it."""
        owner = self._owner
        order = np.arange(nodes.size, dtype=np.int32)
        owner[nodes] = order
        return nodes[owner[nodes] == order]
