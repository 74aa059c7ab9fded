"""Maximum flow over NVLink between every pair of GPUs: the most a copy split over paths could move.

The NVLink edges of a fabric, with intermediate GPUs and NVSwitches relaying freely, form an
undirected capacity graph (a validated fabric's links are the same both ways), so the maximum
flow from GPU i to GPU j is the minimum i-j cut and equals the flow from j to i. Gusfield's
equivalent flow tree (D. Gusfield, "Very simple methods for all pairs network flow analysis",
SIAM J. Computing 19(1), 1990) then gives every pair with ``n - 1`` minimum cuts for ``n``
GPUs, not ``n (n - 1) / 2``.

Capacities are read from each edge's own attributes through a ``capacity(G, u, v)``
function: the line rate (``bandwidth``, the default) or, for instance, the P2P model's
achieved figure (:func:`models.predict.p2p.achieved_capacity`). A what-if is a transformed graph.

Examples
--------
>>> from topo import dgx1v
>>> (maxflow_matrix(dgx1v(), [0, 5]) / 1e9).tolist()
[[0.0, 150.0], [150.0, 0.0]]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from importlib.util import find_spec

import networkx as nx
import numpy as np

from topo.errors import DgxTopoError
from topo.select import GpuIds, select_gpus

from ..engine.fabric import PreparedFabric, graph_of
from ..engine.routes import line_rate

__all__ = ["BACKENDS", "MaxFlowError", "SCIPY_FROM_EDGES", "flow_matrix", "maxflow_matrix",
           "nvlink_capacity_graph"]

#: Minimum-cut routines: None chooses automatically (see :data:`SCIPY_FROM_EDGES`).
BACKENDS = (None, "networkx", "scipy")

#: NVLink edge count from which ``backend=None`` takes scipy, when installed. Measured with
#: examples/p2p_benchmark.py's fat trees: networkx is faster on a DGX-2's 102 edges (5.5 vs
#: 10.7 ms), even at 192 (13 vs 12 ms), scipy 4x faster at 3,072 edges and 8-13x on the
#: 1,024-GPU fabric's 12,288 (1.7-2.5 s vs 20-22 s).
SCIPY_FROM_EDGES = 200


class MaxFlowError(DgxTopoError):
    """A max-flow request that cannot be answered as asked (unknown or missing backend)."""


def nvlink_capacity_graph(G: nx.DiGraph, capacity: Callable[[nx.DiGraph, str, str], float] = line_rate) -> nx.Graph:
    """NVLink edges as an undirected capacity graph (attribute ``capacity``, [B/s]).

    Parameters
    ----------
    G : networkx.DiGraph
        A validated fabric (its links are the same both ways).
    capacity : callable
        ``capacity(G, u, v)`` -> capacity of the edge per direction. [B/s]

    Returns
    -------
    networkx.Graph
    """
    H = nx.Graph()
    for u, v, d in G.edges(data=True):
        if d["kind"] == "nvlink":
            H.add_edge(u, v, capacity=float(capacity(G, u, v)))
    return H


def _networkx_cut(H):
    from networkx.algorithms.flow import boykov_kolmogorov, build_residual_network

    # Built once and reused: each call resets the flows. Boykov-Kolmogorov was the fastest
    # of networkx's routines on a DGX-2 (0.19 ms a cut; Edmonds-Karp 0.19, preflow-push 0.28,
    # shortest augmenting path 0.33, Dinitz 0.44), and always completes the flow, so the
    # residual network gives the cut.
    residual = build_residual_network(H, "capacity")

    def cut(s, t):
        R = boykov_kolmogorov(H, s, t, capacity="capacity", residual=residual)
        side, stack = {s}, [s]
        while stack:  # source side of a minimum cut: reachable in the residual network
            u = stack.pop()
            for v, d in R.adj[u].items():
                if v not in side and d["flow"] < d["capacity"]:
                    side.add(v)
                    stack.append(v)
        return float(R.graph["flow_value"]), side
    return cut


def _scipy_cut(H):
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import breadth_first_order, maximum_flow

    names = list(H)
    where = {n: i for i, n in enumerate(names)}
    # scipy computes in 32-bit integers: count capacity in units that keep every node's total
    # below 2**30 (a few hundred B/s on DGX fabrics, so the rounding is below 1e-7 relative).
    unit = max(1.0, max(sum(c for _, _, c in H.edges(n, data="capacity")) for n in H) / 2**30)
    rows, cols, caps = [], [], []
    for u, v, c in H.edges(data="capacity"):
        value = int(round(c / unit))
        rows += [where[u], where[v]]
        cols += [where[v], where[u]]
        caps += [value, value]
    n = len(names)
    capacity = csr_array((np.array(caps, dtype=np.int32), (rows, cols)), shape=(n, n))

    def cut(s, t):
        result = maximum_flow(capacity, where[s], where[t], method="dinic")
        residual = (capacity - result.flow).tocsr()
        residual.data[residual.data < 0] = 0
        residual.eliminate_zeros()
        reached = breadth_first_order(residual, where[s], directed=True,
                                      return_predecessors=False)
        return float(result.flow_value) * unit, {names[i] for i in reached}
    return cut


def _scipy_installed() -> bool:
    try:  # the submodule's parents are imported to find it; the submodule is not
        return find_spec("scipy.sparse.csgraph") is not None
    except ImportError:  # scipy itself is not installed
        return False


def _cut_function(H, backend):
    if backend not in BACKENDS:
        raise MaxFlowError(f"unknown max-flow backend {backend!r}: expected None (automatic), "
                           f"'networkx' or 'scipy'")
    if backend is None:
        large = H.number_of_edges() >= SCIPY_FROM_EDGES
        backend = "scipy" if large and _scipy_installed() else "networkx"
    if backend == "scipy":
        if not _scipy_installed():
            raise MaxFlowError("max-flow backend 'scipy' needs scipy, which is not installed: "
                               "expected backend=None or 'networkx', or `pip install scipy`")
        return _scipy_cut(H)
    return _networkx_cut(H)


def flow_matrix(G: nx.DiGraph, nodes: Sequence[str], capacity: Callable[[nx.DiGraph, str, str], float] = line_rate,
                backend: str | None = None) -> np.ndarray:
    """:func:`maxflow_matrix` for GPU node ids, on a fabric already validated.

    Parameters
    ----------
    G : networkx.DiGraph
    nodes : sequence of node ids
        GPU nodes, the rows and columns.
    capacity : callable
        ``capacity(G, u, v)`` per NVLink edge and direction. [B/s]
    backend : {None, "networkx", "scipy"}

    Returns
    -------
    numpy.ndarray
        [B/s]

    Raises
    ------
    MaxFlowError
        For an unknown backend, or ``"scipy"`` without scipy installed.
    """
    H = nvlink_capacity_graph(G, capacity)
    cut = _cut_function(H, backend)
    k = len(nodes)
    result = np.zeros((k, k))
    present = [i for i, n in enumerate(nodes) if n in H]
    if len(present) < 2:
        return result
    terminals = [nodes[i] for i in present]
    m = len(terminals)
    parent = [0] * m
    weight = np.zeros(m)
    for s in range(1, m):  # Gusfield (1990): equivalent flow tree, m - 1 minimum cuts
        t = parent[s]
        weight[s], side = cut(terminals[s], terminals[t])
        for i in range(s + 1, m):
            if parent[i] == t and terminals[i] in side:
                parent[i] = s
    # The flow between two terminals is the smallest weight on their tree path. parent[s] < s,
    # so s's subtree holds larger indices only and its path to any j < s leaves via parent[s].
    flows = np.full((m, m), math.inf)
    for s in range(1, m):
        p = parent[s]
        flows[s, :s] = np.minimum(weight[s], flows[p, :s])
        flows[s, p] = weight[s]
        flows[:s, s] = flows[s, :s]
    np.fill_diagonal(flows, 0.0)
    result[np.ix_(present, present)] = flows
    return result


def maxflow_matrix(G: nx.DiGraph | PreparedFabric, gpus: GpuIds = None, *,
                   capacity: Callable[[nx.DiGraph, str, str], float] = line_rate,
                   backend: str | None = None) -> np.ndarray:
    """Maximum flow over NVLink edges only between every pair of GPUs, per direction.

    Intermediate GPUs and NVSwitches relay freely (see the module docstring).

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric (validated here) or a :class:`models.engine.fabric.PreparedFabric`.
    gpus : iterable of int or str, optional
        GPU ids (see :func:`topo.select_gpus`); all GPUs by default. Unselected GPUs still
        relay.
    capacity : callable
        ``capacity(G, u, v)`` -> capacity of an NVLink edge per direction [B/s]: the line
        rate by default; :func:`models.predict.p2p.achieved_capacity` for the P2P model's achieved
        figure.
    backend : {None, "networkx", "scipy"}
        Minimum-cut routine: networkx's Boykov-Kolmogorov, or scipy's Dinic (an optional
        dependency; 32-bit integer capacities, relative rounding below 1e-7 on DGX fabrics).
        None takes scipy when it is installed and the fabric has at least
        :data:`SCIPY_FROM_EDGES` NVLink edges, the measured crossover; networkx otherwise.

    Returns
    -------
    numpy.ndarray
        ``[i, j]`` the maximum flow [B/s]; 0 on the diagonal and for GPUs without NVLink.

    Raises
    ------
    GpuSelectionError
        For ids out of range, repeated or malformed.
    MaxFlowError
        For an unknown backend, or ``"scipy"`` without scipy installed.

    Examples
    --------
    >>> from topo import dgx1
    >>> (maxflow_matrix(dgx1(), [0, 1, 5]) / 1e9).tolist()
    [[0.0, 80.0, 80.0], [80.0, 0.0, 80.0], [80.0, 80.0, 0.0]]
    """
    G = graph_of(G)
    return flow_matrix(G, select_gpus(G, gpus), capacity, backend)
