"""Single-node fast path: the graph as compressed sparse rows, exact distances by bidirectional BFS.

Used when the edge list fits in one process's memory (``method: local``, or ``auto`` below
``local_max_edges``). Node ids are mapped to positions 0…N−1 in id order, so any id scheme works;
the graph is held twice (out-links and in-links) as int32 arrays, about 8 bytes per edge.

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

log = logging.getLogger(__name__)

# Distance codes shared by both methods: a shortest path length (≥ 0), or why there is none.
NO_PATH = -1  # searched: the target cannot be reached
SOURCE_NO_OUT_LINKS = -2  # pre-filter: the source has no out-links
TARGET_NO_IN_LINKS = -3  # pre-filter: the target has no in-links
DIFFERENT_COMPONENT = -4  # pre-filter: not even weakly connected

UNREACHABLE_REASONS = {
    NO_PATH: "no_path",
    SOURCE_NO_OUT_LINKS: "source_no_out_links",
    TARGET_NO_IN_LINKS: "target_no_in_links",
    DIFFERENT_COMPONENT: "different_component",
}


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
        _, self.component = connected_components(out, directed=True, connection="weak")
        del out, inn
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
        out = np.empty(s.size, dtype=np.int32)
        for i in range(s.size):
            out[i] = self._distance(int(s[i]), int(t[i]))
        return out

    def _distance(self, s: int, t: int) -> int:
        if s == t:
            return 0
        if self.out_deg[s] == 0:
            return SOURCE_NO_OUT_LINKS
        if self.in_deg[t] == 0:
            return TARGET_NO_IN_LINKS
        if self.component[s] != self.component[t]:
            return DIFFERENT_COMPONENT
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
            if cost == 0:
                return NO_PATH
            nbrs = _neighbours(ptr, idx, front, cost)
            new = nbrs[seen[nbrs] != stamp]
            steps += 1
            if new.size == 0:
                return NO_PATH
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


def _neighbours(ptr: np.ndarray, idx: np.ndarray, front: np.ndarray, total: int) -> np.ndarray:
    """All out-entries of the frontier's rows, concatenated (``total`` = their count)."""
    if front.size == 1:
        v = int(front[0])
        return idx[ptr[v] : ptr[v + 1]]
    starts = ptr[front]
    lens = ptr[front + 1] - starts
    shift = np.repeat(starts - (np.cumsum(lens) - lens), lens)
    return idx[shift + np.arange(total, dtype=np.int64)]
