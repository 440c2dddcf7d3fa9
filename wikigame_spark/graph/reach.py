"""Exact reachability without a search: strongly connected components and their condensation.

A target is reachable from a source iff both are in one strongly connected component (SCC), or the
source's SCC reaches the target's in the condensation: the DAG with an edge A → B when a link goes
from SCC A to SCC B. Where most nodes share one giant SCC (Wikipedia) the condensation is small, so
it is held in the driver as arrays of SCC names (16 bytes per condensation edge); the graph's own
edge list never is. Unreachable pairs are the dearest searches of all (a search explores everything
the source reaches), so every distance method asks this module first and searches only pairs that
are known to be reachable.

A query is settled by cheap tests in most cases: different weakly connected components (computed on
the condensation); topological levels (an edge always goes to a higher level, so a source SCC at a
level not below the target's cannot reach it); through the giant SCC (the source reaches it and it
reaches the target). The rest get a breadth-first search in the DAG kept below the target's level.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, connected_components

# Distance codes shared by every method: a shortest path length (≥ 0), or why there is none.
NO_PATH = -1  # no directed path (decided from the strongly connected components)
SOURCE_NO_OUT_LINKS = -2  # the source has no out-links
TARGET_NO_IN_LINKS = -3  # the target has no in-links
DIFFERENT_COMPONENT = -4  # not even weakly connected
REACHABLE = -50  # not a result: the pair is to be searched, its target being reachable

UNREACHABLE_REASONS = {
    NO_PATH: "no_path",
    SOURCE_NO_OUT_LINKS: "source_no_out_links",
    TARGET_NO_IN_LINKS: "target_no_in_links",
    DIFFERENT_COMPONENT: "different_component",
}


class Condensation:
    """The condensation DAG of a graph's SCCs, named by any int64 labels, with exact reachability."""

    def __init__(self, dag_src: np.ndarray, dag_dst: np.ndarray, giant: int) -> None:
        """``dag_src → dag_dst``: SCC names of the links between different SCCs (duplicates allowed);
        ``giant``: the name of the largest SCC."""
        dag_src = np.asarray(dag_src, dtype=np.int64)
        dag_dst = np.asarray(dag_dst, dtype=np.int64)
        self.names = np.unique(np.concatenate([dag_src, dag_dst, [giant]]))
        n = self.names.size
        s, d = np.searchsorted(self.names, dag_src), np.searchsorted(self.names, dag_dst)
        dag = sp.csr_matrix((np.ones(s.size, dtype=np.int8), (s, d)), shape=(n, n))
        dag.sum_duplicates()
        self.num_edges = int(dag.nnz)
        self._out, self._in = dag, dag.T.tocsr()
        _, self.weak = connected_components(dag, directed=True, connection="weak")
        self.level = _levels(dag)
        g = int(np.searchsorted(self.names, giant))
        self.to_giant = np.zeros(n, dtype=bool)
        self.to_giant[breadth_first_order(self._in, g, return_predecessors=False)] = True
        self.from_giant = np.zeros(n, dtype=bool)
        self.from_giant[breadth_first_order(self._out, g, return_predecessors=False)] = True

    def _positions(self, names: np.ndarray) -> np.ndarray:
        """Positions of SCC names in the DAG, −1 for an SCC without links to other SCCs."""
        pos = np.minimum(np.searchsorted(self.names, names), self.names.size - 1)
        return np.where(self.names[pos] == names, pos, -1)

    def weak_labels(self, scc: np.ndarray) -> np.ndarray:
        """Weak component labels per node, from its SCC's name: an SCC is connected, so the graph's
        weak components are the DAG's, plus each SCC without links to other SCCs on its own."""
        scc = np.asarray(scc, dtype=np.int64)
        pos = self._positions(scc)
        alone = int(self.weak.max(initial=-1)) + 1 - int(scc.min(initial=0))  # past every DAG label
        return np.where(pos >= 0, self.weak[np.maximum(pos, 0)], alone + scc)

    def decide(self, s_out: np.ndarray, t_in: np.ndarray, s_scc: np.ndarray, t_scc: np.ndarray) -> np.ndarray:
        """Codes for pairs of distinct nodes: ``REACHABLE``, or why not (the codes of
        :mod:`wikigame_spark.graph.csr`, checked in this order): the source has no out-links, the
        target no in-links, they are in different weak components, or there is no directed path."""
        s_scc, t_scc = np.asarray(s_scc, dtype=np.int64), np.asarray(t_scc, dtype=np.int64)
        ps, pt = self._positions(s_scc), self._positions(t_scc)
        same = s_scc == t_scc
        linked = (ps >= 0) & (pt >= 0)
        weak_apart = ~same & (~linked | (self.weak[ps] != self.weak[pt]))
        code = np.full(s_scc.size, REACHABLE, dtype=np.int32)
        open_ = ~same & ~weak_apart
        code[open_ & (self.level[ps] >= self.level[pt])] = NO_PATH
        unsure = np.flatnonzero(open_ & (code == REACHABLE) & ~(self.to_giant[ps] & self.from_giant[pt]))
        for i in unsure:
            if not self._search(int(ps[i]), int(pt[i])):
                code[i] = NO_PATH
        code[weak_apart] = DIFFERENT_COMPONENT
        code[np.asarray(t_in) == 0] = TARGET_NO_IN_LINKS
        code[np.asarray(s_out) == 0] = SOURCE_NO_OUT_LINKS
        return code

    def _search(self, s: int, t: int) -> bool:
        """Whether DAG node ``s`` reaches ``t``: BFS through nodes below ``t``'s level only, and
        around the giant SCC's side that cannot lead to ``t``."""
        top = self.level[t]
        allowed = self.level < top
        if not self.from_giant[t]:
            allowed &= ~self.from_giant  # what the giant reaches cannot reach t
        if not self.to_giant[s]:
            allowed &= ~self.to_giant  # s reaches nothing that reaches the giant
        seen = np.zeros(self.names.size, dtype=bool)
        seen[s] = True
        front = np.array([s])
        ptr, idx = self._out.indptr, self._out.indices
        while front.size:
            nxt = neighbours(ptr, idx, front)
            if np.any(nxt == t):
                return True
            nxt = np.unique(nxt[allowed[nxt] & ~seen[nxt]])
            seen[nxt] = True
            front = nxt
        return False


def _levels(dag: sp.csr_matrix) -> np.ndarray:
    """Longest-path depth of every DAG node from the nodes without in-edges (Kahn's algorithm by layers)."""
    n = dag.shape[0]
    indeg = np.diff(dag.tocsc().indptr).astype(np.int64)
    level = np.zeros(n, dtype=np.int64)
    front = np.flatnonzero(indeg == 0)
    depth, done = 0, 0
    ptr, idx = dag.indptr, dag.indices
    while front.size:
        level[front] = depth
        done += front.size
        heads = neighbours(ptr, idx, front)
        np.subtract.at(indeg, heads, 1)
        front = np.unique(heads[indeg[heads] == 0])
        depth += 1
    if done != n:
        raise ValueError(f"the condensation has a cycle ({n - done} nodes never reached level 0): the SCCs are wrong")
    return level


def largest_component(labels: np.ndarray) -> int:
    """Label of the largest component of per-node labels (positions in id order); ties: smallest member."""
    names, first, size = np.unique(labels, return_index=True, return_counts=True)
    order = np.lexsort((first, -size))
    return int(names[order[0]])


def neighbours(ptr: np.ndarray, idx: np.ndarray, front: np.ndarray, total: int | None = None) -> np.ndarray:
    """All entries of the frontier's CSR rows, concatenated (``total`` = their count, if known)."""
    if total is None:
        total = int((ptr[front + 1] - ptr[front]).sum())
    if front.size == 1:
        v = int(front[0])
        return idx[ptr[v] : ptr[v + 1]]
    starts = ptr[front]
    lens = ptr[front + 1] - starts
    shift = np.repeat(starts - (np.cumsum(lens) - lens), lens)
    return idx[shift + np.arange(total, dtype=np.int64)]
