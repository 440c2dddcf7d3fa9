"""Single-node fast path: the graph as compressed sparse rows, exact distances by bidirectional BFS.

Used when the graph fits the driver's memory (``method: local``, or ``auto``, see
:mod:`wikigame_spark.graph.distances`). Node ids are mapped to positions 0…N−1 in id order, so any
id scheme works. The out-links are int32 CSR arrays — for a graph directory the play stage's mapped
files (:mod:`wikigame_spark.graph.mapped`), read from the page cache, not copied — and the in-links
are built from them by a counting sort, one bounded run of rows at a time: about 4 bytes per edge
in this process, plus the mapped 4. Reachability is decided first from strongly connected
components (:mod:`wikigame_spark.graph.reach`); only reachable pairs are searched.

Each search advances, level by level, whichever side (forward from the source on out-links,
backward from the target on in-links) has the frontier with fewer links to follow, and stops at
the first level where the two searches touch. When forward has settled depth ``a`` and backward
depth ``b`` without touching, the distance is more than ``a + b``; so the first touch, made by
advancing one side by one level, gives exactly ``a + b + 1``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from wikigame_spark.graph.reach import REACHABLE, Condensation, largest_component, neighbours

log = logging.getLogger(__name__)

RUN_EDGES = 1 << 22  # edges per run of rows when a CSR is transposed or its condensation is taken


def compact_ptr(ptr: np.ndarray, m: int) -> np.ndarray:
    """``ptr`` as int32 when the edges fit it, the index type of the mapped files and scipy."""
    return ptr.astype(np.int32 if m <= np.iinfo(np.int32).max else np.int64)


def row_runs(ptr: np.ndarray, run_edges: int = RUN_EDGES) -> Iterator[tuple[int, int]]:
    """Ranges ``[r0, r1)`` of whole rows holding about ``run_edges`` entries each, in order."""
    n, r0 = ptr.size - 1, 0
    while r0 < n:
        r1 = min(max(int(np.searchsorted(ptr, ptr[r0] + run_edges, side="right")) - 1, r0 + 1), n)
        yield r0, r1
        r0 = r1


def place(out: np.ndarray, cursor: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> None:
    """Append ``cols`` to their ``rows`` of a CSR being filled: ``cursor[r]`` is row ``r``'s next free
    slot of ``out``, advanced here. A row's entries keep their order within the call (stable)."""
    order = np.argsort(rows, kind="stable")
    rows, cols = rows[order], cols[order]
    if not rows.size:
        return
    starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
    runs = np.diff(np.append(starts, rows.size))
    out[cursor[rows] + np.arange(rows.size) - np.repeat(starts, runs)] = cols
    cursor[rows[starts]] += runs


def compress(counts: np.ndarray, pairs: Iterable[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """CSR arrays from each row's entry count and the (rows, columns) pairs in bounded chunks, by a
    counting sort; a row keeps its columns' order."""
    ptr = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    m = int(ptr[-1])
    idx = np.empty(m, dtype=np.int32)
    cursor = ptr[:-1].copy()
    for rows, cols in pairs:
        place(idx, cursor, rows, cols)
    return compact_ptr(ptr, m), idx


def transpose(ptr: np.ndarray, idx: np.ndarray, run_edges: int = RUN_EDGES) -> tuple[np.ndarray, np.ndarray]:
    """The CSR of the reversed links, in-neighbours ascending, built in bounded runs of rows."""
    reversed_links = (
        (idx[ptr[r0] : ptr[r1]], np.repeat(np.arange(r0, r1, dtype=np.int32), np.diff(ptr[r0 : r1 + 1])))
        for r0, r1 in row_runs(ptr, run_edges)
    )
    return compress(np.bincount(idx, minlength=ptr.size - 1), reversed_links)


def strong_components(ptr: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """SCC labels per position by scipy, on the CSR arrays as they are (mapped ones included).

    scipy wants float64 weights it never reads for components; a broadcast 1.0 costs no memory."""
    n = ptr.size - 1
    weights = np.broadcast_to(np.float64(1.0), (idx.size,))
    graph = sp.csr_matrix((weights, idx, ptr), shape=(n, n), copy=False)
    return connected_components(graph, directed=True, connection="strong")[1]


def condensation(scc: np.ndarray, ptr: np.ndarray, idx: np.ndarray, run_edges: int = RUN_EDGES) -> Condensation:
    """The condensation of the CSR's SCCs, its links gathered in bounded runs of rows; the giant SCC
    is the largest (ties: the one with the smallest member)."""
    keys = []
    n_names = int(scc.max()) + 1 if scc.size else 1
    for r0, r1 in row_runs(ptr, run_edges):
        a = np.repeat(scc[r0:r1].astype(np.int64), np.diff(ptr[r0 : r1 + 1]))
        b = scc[idx[ptr[r0] : ptr[r1]]].astype(np.int64)
        keep = a != b
        keys.append(np.unique(a[keep] * n_names + b[keep]))
    links = np.unique(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64)
    return Condensation(links // n_names, links % n_names, largest_component(scc))


def positions(node_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Positions (int32) of ``ids`` among sorted unique ``node_ids``; ``ValueError`` names an id
    that is not a node."""
    ids = np.asarray(ids, dtype=np.int64)
    n = node_ids.size
    if n == 0 or (node_ids[0] == 0 and node_ids[-1] == n - 1):  # ids 0…N−1: a position is its id
        bad = (ids < 0) | (ids >= n)
        pos = ids
    else:
        pos = np.minimum(np.searchsorted(node_ids, ids), n - 1)
        bad = node_ids[pos] != ids
    if np.any(bad):
        raise ValueError(f"node id {int(ids[np.argmax(bad)])} is not in the nodes table")
    return pos.astype(np.int32)


class CsrGraph:
    """A directed graph as out- and in-adjacency arrays, with exact pairwise distances."""

    def __init__(self, node_ids: np.ndarray, out_ptr: np.ndarray, out_idx: np.ndarray) -> None:
        """Build from sorted unique node ids and the out-links as CSR over their positions (arrays
        may be read-only maps; they are not copied)."""
        node_ids = np.asarray(node_ids, dtype=np.int64)
        if node_ids.size and np.any(np.diff(node_ids) <= 0):
            raise ValueError("CsrGraph: node ids must be sorted and unique")
        if out_ptr.size != node_ids.size + 1:
            raise ValueError(f"CsrGraph: {out_ptr.size - 1} CSR rows for {node_ids.size} nodes")
        self.node_ids = node_ids
        n = node_ids.size
        self.out_ptr, self.out_idx = out_ptr, out_idx
        self.in_ptr, self.in_idx = transpose(out_ptr, out_idx)
        self.out_deg = np.diff(self.out_ptr)
        self.in_deg = np.diff(self.in_ptr)
        self.scc = strong_components(out_ptr, out_idx)
        self.condensation = condensation(self.scc, out_ptr, out_idx)
        # Per-search marks: a node is seen in search k when its stamp equals k (no clearing).
        self._seen_f = np.zeros(n, dtype=np.int32)
        self._seen_b = np.zeros(n, dtype=np.int32)
        self._owner = np.zeros(n, dtype=np.int32)
        self._stamp = 0

    @classmethod
    def from_edges(cls, node_ids: np.ndarray, src: np.ndarray, dst: np.ndarray) -> CsrGraph:
        """Build from sorted unique node ids and edge endpoint ids (any integer dtype) by a counting
        sort in bounded runs. A link given twice stays twice: searches and components ignore the repeat.
        ``ValueError`` names an edge's node that is not in ``node_ids``."""
        node_ids = np.asarray(node_ids, dtype=np.int64)
        s, d = positions(node_ids, src), positions(node_ids, dst)
        chunks = ((s[a : a + RUN_EDGES], d[a : a + RUN_EDGES]) for a in range(0, s.size, RUN_EDGES))
        ptr, idx = compress(np.bincount(s, minlength=node_ids.size), chunks)
        return cls(node_ids, ptr, idx)

    @property
    def num_nodes(self) -> int:
        return int(self.node_ids.size)

    @property
    def num_edges(self) -> int:
        return int(self.out_idx.size)

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """Positions 0…N−1 of node ids; ``ValueError`` names an id that is not a node."""
        return positions(self.node_ids, ids)

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
