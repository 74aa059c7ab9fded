"""The capacity graph an optimal-schedule bound works on, and a small exact max-flow over it.

A bound (:mod:`models.studies.bounds`) or a tree packing (:mod:`models.studies.packing`) sees the fabric as a
directed graph whose arcs carry each edge's own ``bandwidth`` (per direction) as capacity. Which
nodes may forward data for the GPU set is the ``relay`` option:

``"none"``
    Only the links between GPUs of the set: no switch, CPU or other GPU forwards.
``"switches"`` (default)
    Plus every node that is not a GPU (NVSwitches, PCIe switches, CPUs, NICs, network
    switches): the relays NCCL itself uses. GPUs outside the set are left out, as NCCL's
    topology holds only the communicator's GPUs.
``"all"``
    Plus the GPUs outside the set, as forwarding nodes (their NVLinks become paths).

GPUs of the set always forward for each other (a tree's inner nodes). Nodes that cannot lie on
a path between two GPUs of the set (dead ends such as a NIC with one PCIe link) are pruned.

Examples
--------
>>> import topo
>>> G = topo.dgx1v()
>>> H = capacity_graph(G, ["gpu0", "gpu5"], relay="none")
>>> H.number_of_edges()
0
>>> H = capacity_graph(G, ["gpu0", "gpu5"], relay="all")
>>> round(FlowNetwork(H).min_cut("gpu0", "gpu5")[0] / 1e9, 2)  # 6 NVLinks via relays, plus PCIe
165.75
"""

from __future__ import annotations

import networkx as nx

import topo
from topo.errors import DgxTopoError

__all__ = ["RELAYS", "RelayError", "capacity_graph", "relay_edge_kinds", "FlowNetwork", "out_capacity"]

#: Relay options, from the most to the least restrictive.
RELAYS = ("none", "switches", "all")


class RelayError(DgxTopoError):
    """An unknown relay option or edge kind."""


def relay_edge_kinds(relay: str, edge_kinds=None) -> tuple | None:
    """The edge kinds of a bound's options as a tuple (None: every kind), the options checked.

    Parameters
    ----------
    relay : str
        One of :data:`RELAYS`.
    edge_kinds : str or iterable of str, optional
        Kinds of :data:`topo.EDGE_KINDS` the bound may use (default: every kind).

    Returns
    -------
    tuple of str or None

    Raises
    ------
    RelayError
        For an unknown relay or edge kind.

    Examples
    --------
    >>> relay_edge_kinds("switches", "nvlink"), relay_edge_kinds("all")
    (('nvlink',), None)
    """
    if relay not in RELAYS:
        raise RelayError(f"unknown relay {relay!r}: expected one of {', '.join(RELAYS)}")
    if edge_kinds is None:
        return None
    kinds = tuple(edge_kinds) if not isinstance(edge_kinds, str) else (edge_kinds,)
    bad = [k for k in kinds if k not in topo.EDGE_KINDS]
    if not kinds or bad:
        raise RelayError(f"edge_kinds must be a non-empty subset of {', '.join(topo.EDGE_KINDS)}, "
                         f"received {edge_kinds!r}")
    return kinds


def capacity_graph(G, members, *, relay: str = "switches", edge_kinds=None) -> nx.DiGraph:
    """The fabric as the bound sees it for the GPU nodes ``members``.

    Parameters
    ----------
    G : networkx.DiGraph
        A validated fabric.
    members : iterable
        GPU nodes of the set.
    relay : {"none", "switches", "all"}
        Which other nodes forward (module docstring).
    edge_kinds : iterable of str, optional
        Only edges of these kinds (default: all kinds).

    Returns
    -------
    networkx.DiGraph
        Nodes with their fabric attributes; arcs with the edge's attributes plus ``capacity``
        (= ``bandwidth``). [B/s]

    Raises
    ------
    RelayError
        For an unknown relay or edge kind.
    """
    kinds = relay_edge_kinds(relay, edge_kinds)
    members = set(members)
    if relay == "none":
        keep = members
    elif relay == "switches":
        keep = {n for n, k in G.nodes(data="kind") if k != "gpu"} | members
    else:
        keep = set(G)
    kept = [n for n in G if n in keep]
    H = nx.DiGraph()
    H.add_nodes_from((n, G.nodes[n]) for n in kept)
    # The kept nodes' arcs in the order of G.edges (node by node, each node's neighbours in order).
    H.add_edges_from((u, v, {**d, "capacity": float(d["bandwidth"])}) for u in kept for v, d in G.succ[u].items()
                     if v in keep and (kinds is None or d["kind"] in kinds))
    # A relay with at most one neighbour is a dead end: no path between two members crosses it.
    dead = [n for n in H if n not in members and len(set(H.pred[n]) | set(H.succ[n])) <= 1]
    while dead:
        neighbours = {m for n in dead for m in set(H.pred[n]) | set(H.succ[n])}
        H.remove_nodes_from(dead)
        dead = [n for n in neighbours if n in H and n not in members
                and len(set(H.pred[n]) | set(H.succ[n])) <= 1]
    return H


def out_capacity(H, side) -> float:
    """Capacity of the arcs leaving the node set ``side``. [B/s]"""
    side = set(side)
    return float(sum(d["capacity"] for u in side for v, d in H.succ[u].items() if v not in side))


class FlowNetwork:
    """Max-flow / min-cut on a small capacity graph, built once and solved many times.

    A plain Edmonds-Karp (shortest augmenting paths) over index arrays: the fabrics here have
    tens of nodes, where building networkx's residual graph on every call costs more than the
    flow. An optional super source ``SOURCE`` has an arc to each node of ``sources`` whose
    capacity is set per call.

    Parameters
    ----------
    H : networkx.DiGraph
        Arcs with a ``capacity`` attribute. [B/s]
    sources : iterable, optional
        Nodes the super source feeds.
    """

    SOURCE = ("_bounds_super_source",)

    def __init__(self, H, sources=()):
        self.nodes = list(H) + [self.SOURCE]
        self.index = {n: i for i, n in enumerate(self.nodes)}
        self.head: list = []
        self.cap: list = []
        self.adj: list = [[] for _ in self.nodes]
        largest = 0.0
        for u, v, c in H.edges(data="capacity"):
            self._arc(self.index[u], self.index[v], c)
            largest = max(largest, c)
        self.source_arcs = [self._arc(len(self.nodes) - 1, self.index[v], 0.0) for v in sources]
        # Residues below this are rounding: a billionth of the widest arc (bytes/s).
        self.eps = 1e-9 * max(largest, 1.0)

    def _arc(self, u, v, c) -> int:
        a = len(self.head)
        self.head += [v, u]
        self.cap += [float(c), 0.0]
        self.adj[u].append(a)
        self.adj[v].append(a + 1)
        return a

    def min_cut(self, source, sink, source_capacity: float = 0.0):
        """Max-flow value and the source side of a minimum cut.

        Parameters
        ----------
        source, sink
            Nodes of ``H`` (or :attr:`SOURCE`).
        source_capacity : float
            Capacity of each super-source arc for this call. [B/s]

        Returns
        -------
        (float, set)
            The value [B/s] and the nodes reachable from ``source`` in the residual graph.
        """
        cap = list(self.cap)
        for a in self.source_arcs:
            cap[a] = source_capacity
        s, t = self.index[source], self.index[sink]
        head, adj, eps = self.head, self.adj, self.eps
        total = 0.0
        while True:
            parent = [-1] * len(self.nodes)
            parent[s] = -2
            queue = [s]
            found = False
            for u in queue:
                for a in adj[u]:
                    v = head[a]
                    if parent[v] == -1 and cap[a] > eps:
                        parent[v] = a
                        if v == t:
                            found = True
                            break
                        queue.append(v)
                if found:
                    break
            if not found:
                return total, {self.nodes[i] for i in queue}
            push, v = float("inf"), t
            while v != s:
                a = parent[v]
                push = min(push, cap[a])
                v = head[a ^ 1]
            v = t
            while v != s:
                a = parent[v]
                cap[a] -= push
                cap[a ^ 1] += push
                v = head[a ^ 1]
            total += push
