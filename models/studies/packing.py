"""Spanning-tree packings that meet the broadcast / all_gather bounds: the schedule, as data.

A tree here is an arborescence over the GPU set whose every arc is a path through the fabric
(relays forward, they do not copy: NVSwitch gen 1, PCIe switches and CPUs do not multicast).
By the edge-splitting theorem for Eulerian digraphs (Bang-Jensen, Frank, Jackson, 1995), as
ForestColl uses it (Zhao et al., 2024), such trees reach the cut bound of
:mod:`models.studies.bounds` whenever every relay's in- and out-capacity are equal; otherwise the
packing may fall short, and says so.

The packing is the linear program "maximise the per-root rate ``x`` such that each root's
trees carry ``x`` together and no arc carries more than its capacity", solved by column
generation: the master LP (HiGHS, ``scipy.optimize.linprog``) prices the arcs (its duals),
and the cheapest tree of each root under those prices is Edmonds' minimum arborescence on the
complete digraph of the GPUs weighted by shortest-path prices (exact: each tree arc picks its
path independently). A tree whose price is below its root's dual enters; when none does, the
packing is optimal among such trees.

reduce and reduce_scatter are packed on the reversed fabric; their trees carry data from the
leaves to the root.

Examples
--------
>>> import topo
>>> p = pack_trees(topo.dgx1v(), "all_gather", [0, 1, 2, 3], edge_kinds=["nvlink"])
>>> round(p.rate / 1e9, 2), p.max_utilisation <= 1 + 1e-9
(33.33, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

import topo
from topo.errors import DgxTopoError

from ..engine.results import tidy_records
from ..engine.fabric import graph_of
from .relays import capacity_graph

__all__ = ["PackingError", "Tree", "TreePacking", "pack_trees", "PACKED_COLLECTIVES"]

#: Collectives whose schedule is a tree packing.
PACKED_COLLECTIVES = ("broadcast", "reduce", "all_gather", "reduce_scatter")
_ROUNDS = 400


class PackingError(DgxTopoError):
    """A packing that cannot be asked (collective, root, GPU count) or solved."""


@dataclass(frozen=True, slots=True)
class Tree:
    """One tree of a packing.

    Attributes
    ----------
    root : int
        GPU id of the root (whose shard it carries; for reduce / reduce_scatter the GPU it
        reduces to).
    rate : float
        Data rate the tree carries. [B/s]
    arcs : tuple of (int, int, tuple)
        ``(from GPU id, to GPU id, fabric path as node ids)`` in the direction data flows.
    """

    root: int
    rate: float
    arcs: tuple

    def to_records(self) -> list:
        """Tidy rows, one per arc: the tree's root and rate, the arc's GPUs and its fabric path's hops."""
        return tidy_records({"root": self.root, "rate_Bps": self.rate, "from": [a for a, _, _ in self.arcs],
                             "to": [b for _, b, _ in self.arcs], "hops": [len(p) - 1 for _, _, p in self.arcs]})


@dataclass(frozen=True, slots=True)
class TreePacking:
    """A schedule of trees with their rates, checked against the link capacities.

    Attributes
    ----------
    collective : str
    gpus : tuple of int
    relay : str
    rate : float
        Rate each root's trees carry together (the per-root rate of :mod:`models.studies.bounds`). [B/s]
    trees : tuple of Tree
    loads : tuple of ((node, node), float, float)
        Per arc used: the sum of the rates of the trees crossing it (once per crossing) and
        its capacity. [B/s]
    rounds : int
        Column-generation rounds.
    """

    collective: str
    gpus: tuple
    relay: str
    rate: float
    trees: tuple
    loads: tuple
    rounds: int

    @property
    def max_utilisation(self) -> float:
        """Largest load / capacity over the arcs (at most 1 for a feasible packing)."""
        return max((load / cap for _, load, cap in self.loads), default=0.0)

    def to_records(self) -> list:
        """Tidy rows, one per tree: its root and rate, its arcs, and the packing's per-root rate."""
        return tidy_records({"collective": self.collective, "relay": self.relay, "rate_Bps": self.rate,
                             "tree": list(range(len(self.trees))), "root": [t.root for t in self.trees],
                             "tree_rate_Bps": [t.rate for t in self.trees],
                             "arcs": [len(t.arcs) for t in self.trees]})


def _cheapest_trees(K, members, roots, price):
    """For each root, the cheapest path-tree under arc prices: (cost, [(u, t, path)])."""
    dist, paths = {}, {}
    for u in members:
        dist[u], paths[u] = nx.single_source_dijkstra(K, u, weight=lambda a, b, d: price[a, b])
    found = {}
    for r in roots:
        D = nx.DiGraph()
        D.add_nodes_from(members)
        D.add_weighted_edges_from((u, t, dist[u][t]) for u in members for t in members
                                  if t != u and t != r and t in dist[u])
        try:
            A = nx.minimum_spanning_arborescence(D, preserve_attrs=True)
        except nx.NetworkXException:
            continue  # some GPU is unreachable from r: no tree, the rate is 0
        found[r] = (sum(d["weight"] for _, _, d in A.edges(data=True)),
                    [(u, t, tuple(paths[u][t])) for u, t in A.edges()])
    return found


def pack_trees(G, collective: str, gpus=None, *, relay: str = "switches", root=None,
               edge_kinds=None) -> TreePacking:
    """Pack path-trees meeting the broadcast / reduce / all_gather / reduce_scatter bound.

    Parameters
    ----------
    G : networkx.DiGraph
    collective : {"broadcast", "reduce", "all_gather", "reduce_scatter"}
    gpus : str or iterable of int, optional
        GPU ids (default every GPU).
    relay : {"none", "switches", "all"}
    root : int, optional
        broadcast / reduce root (default the lowest id).
    edge_kinds : iterable of str, optional

    Returns
    -------
    TreePacking

    Raises
    ------
    PackingError
        For another collective, fewer than 2 GPUs or a root outside the set.
    """
    if collective not in PACKED_COLLECTIVES:
        raise PackingError(f"tree packings exist for {', '.join(PACKED_COLLECTIVES)}, received {collective!r}")
    try:
        from scipy.optimize import linprog
    except ImportError as error:  # pragma: no cover - scipy is a test dependency
        raise PackingError("tree packing solves LPs with scipy (HiGHS): install scipy") from error
    G = graph_of(G)
    ids_of = {g: i for i, g in enumerate(topo.gpus(G))}
    nodes = sorted(topo.select_gpus(G, gpus), key=ids_of.__getitem__)
    ids = tuple(ids_of[g] for g in nodes)
    if len(nodes) < 2:
        raise PackingError(f"a packing needs at least 2 GPUs, received {list(ids)}")
    H = capacity_graph(G, nodes, relay=relay, edge_kinds=edge_kinds)
    reverse = collective in ("reduce", "reduce_scatter")
    K = H.reverse(copy=True) if reverse else H
    if collective in ("broadcast", "reduce"):
        root_id = ids[0] if root is None else root
        if isinstance(root_id, bool) or root_id not in ids:
            raise PackingError(f"root must be a GPU id of the set {list(ids)}, received {root!r}")
        roots = [nodes[ids.index(root_id)]]
    else:
        if root is not None:
            raise PackingError(f"{collective} has no root: expected root=None, received {root!r}")
        roots = list(nodes)
    arcs = list(K.edges(data="capacity"))
    arc_index = {(u, v): e for e, (u, v, _) in enumerate(arcs)}
    scale = 1e9  # solve in GB/s
    capacity = np.array([c / scale for _, _, c in arcs])
    columns = []  # (root, tree arcs, load vector)

    def add(r, tree):
        load = np.zeros(len(arcs))
        for _, _, path in tree:
            for a, b in zip(path, path[1:]):
                load[arc_index[a, b]] += 1
        columns.append((r, tree, load))

    # Start from hop-count shortest-path trees (any feasible column set would do).
    for r, (_, tree) in _cheapest_trees(K, nodes, roots, {(u, v): 1.0 for u, v, _ in arcs}).items():
        add(r, tree)
    root_row = {r: i for i, r in enumerate(roots)}
    solution = None
    rounds = 0
    for rounds in range(1, _ROUNDS + 1):
        m = len(columns)
        A = np.zeros((len(roots) + len(arcs), m + 1))
        A[:len(roots), m] = 1.0
        for j, (r, _, load) in enumerate(columns):
            A[root_row[r], j] = -1.0
            A[len(roots):, j] = load
        b = np.concatenate([np.zeros(len(roots)), capacity])
        c = np.zeros(m + 1)
        c[m] = -1.0
        solution = linprog(c, A_ub=A, b_ub=b, bounds=(0, None), method="highs")
        if solution.status != 0:  # pragma: no cover - feasible (0) and bounded by the capacities
            raise PackingError(f"the packing LP failed: {solution.message}")
        if len({r for r, _, _ in columns}) < len(roots):
            break  # a root reaches no tree: the rate is 0
        duals = -solution.ineqlin.marginals
        mu = dict(zip(roots, duals[:len(roots)]))
        price = {(u, v): max(duals[len(roots) + e], 0.0) for e, (u, v, _) in enumerate(arcs)}
        added = 0
        for r, (cost, tree) in _cheapest_trees(K, nodes, roots, price).items():
            if cost < mu[r] - 1e-9 * max(mu[r], 1e-12) - 1e-12:
                add(r, tree)
                added += 1
        if not added:
            break
    x = float(solution.x[-1]) * scale
    # The LP asks each root for at least x; a root may get more where its links are idle.
    # Trim each root's trees to x so the packing carries exactly what the collective needs.
    per_root: dict = {}
    for j, (r, _, _) in enumerate(columns):
        per_root[r] = per_root.get(r, 0.0) + float(solution.x[j]) * scale
    trees, load = [], {}
    for j, (r, tree, _) in enumerate(columns):
        y = float(solution.x[j]) * scale
        if per_root[r] > x > 0:
            y *= x / per_root[r]
        if y <= 1e-9 * max(x, 1.0):
            continue
        if reverse:  # data flows from the leaves to the root
            tree = [(t, u, tuple(reversed(path))) for u, t, path in tree]
        for _, _, path in tree:
            for a, b_ in zip(path, path[1:]):
                load[a, b_] = load.get((a, b_), 0.0) + y
        trees.append(Tree(ids_of[r], y, tuple((ids_of[a], ids_of[b_], p) for a, b_, p in tree)))
    trees.sort(key=lambda t: (t.root, -t.rate))
    loads = tuple(sorted(((edge, value, float(G.edges[edge]["bandwidth"])) for edge, value in load.items()),
                         key=lambda item: (-item[1] / item[2], str(item[0]))))
    return TreePacking(collective, ids, relay, x, tuple(trees), loads, rounds)
