"""GPU-to-GPU copies: what p2pBandwidthLatencyTest measures, predicted from the fabric.

Two modes:

``"route"``
    The copy CUDA makes (``cudaMemcpyPeer``), over the route of :func:`models.routes.route`:
    a direct NVLink bundle, the NVSwitch fabric, PCIe peer-to-peer, or staged through host
    memory when the GPUs cannot access each other (across the host bridge or the sockets).
``"maxflow"``
    The bound a copy split over several paths could reach: the maximum flow between the two
    GPUs over all NVLink edges, relaying through other GPUs and switches (or the routed
    figure, when that is higher, e.g. a pair without any NVLink path).

The model
---------
*Achieved bandwidth* = line rate of each edge x an efficiency for its link technology
(:data:`EFFICIENCIES`), taken at the route's bottleneck. *Latency* = the hops' latencies
along the route (edge attribute ``latency``) + a fixed software overhead
(:data:`OVERHEADS`), one for peer copies and one for staged copies.
*Bidirectional* is what p2pBandwidthLatencyTest reports with both directions copying at
once: the sum of the two rates. Links are full duplex (an edge per direction), and the copy
back never crosses a directed edge the copy forth crosses: both routes are shortest paths
(through the switches, over PCIe, or staged), and if the path from a to b took x -> y and
the path from b to a did too, d(a,x) + d(y,b) + d(b,x) + d(y,a) would be 2D - 2 for the
distance D between a and b, below the 2D the triangle inequality demands. So each direction
keeps its one-way rate; the only resource both copies share is the GPU's memory on the
diagonal. The model never stores a bidirectional figure.

Calibration
-----------
The fitted constants come from one published p2pBandwidthLatencyTest row, GPU0 of a
DGX-1V (bidirectional bandwidth and P2P-write latency, tests/data/dgx1v_p2p_gpu0_row.json);
each says what it was fitted to. The same constants then predict DGX-1 (P100, NVLink 1.0)
and DGX-2 (NVSwitch) from their hardware facts alone. The row has no unidirectional
figures: taking the bidirectional per-direction efficiency for one direction alone is an
assumption [U] (on an HGX H100 the test's unidirectional efficiency is ~83%, the
bidirectional ~87% [S32], so the unidirectional predictions may be a few percent high).

Diagonal
--------
The device-local copy, as p2pBandwidthLatencyTest counts it (read and write bytes both
counted): the GPU's HBM bandwidth (``memory_bandwidth`` node attribute, from
``GpuSpec.memory_bandwidth``) x the ``"hbm"`` efficiency; NaN (null in JSON) for a GPU
without that attribute. Both copies of the bidirectional test share the one memory, so the
bidirectional diagonal equals the unidirectional one. Path type LOC; latency the peer
overhead with no hop.

Examples
--------
>>> from topo import dgx1v
>>> G = dgx1v()
>>> r = p2p_path(G, 0, 3)
>>> r.path_type.name, r.smi_class, r.line_rate / 1e9, round(r.bandwidth / 1e9, 2)
('NVL', 'NV2', 50.0, 48.47)
>>> r = p2p_path(G, 0, 5)
>>> r.path_type.name, r.p2p, r.nodes
('SYS', False, ('gpu0', 'pcie0', 'cpu0', 'cpu1', 'pcie2', 'gpu5'))
>>> (p2p_matrix(G, [0, 1, 3, 5], bidirectional=True) / 1e9).round(1)
array([[784.9,  48.5,  96.9,  14.4],
       [ 48.5, 784.9,  48.5,  96.9],
       [ 96.9,  48.5, 784.9,  14.4],
       [ 14.4,  96.9,  14.4, 784.9]])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import networkx as nx
import numpy as np

from topo.errors import DgxTopoError
from topo.nvidia_smi import connection_matrix
from topo.schema import validate
from topo.select import select_gpus
from topo.specs import LINKS
from topo.symmetry import interchangeable_gpus
from topo.units import to_GBps, to_us, us

from .nccl.profiles import nccl_profile
from .nccl.system import nccl_capacity
from .routes import PathType, Route, Router, line_rate, route_bandwidth

__all__ = [
    "Calibrated", "EFFICIENCIES", "OVERHEADS", "MODES",
    "P2PResult", "P2PReport", "P2PError",
    "p2p_path", "p2p_matrix", "p2p_latency_matrix", "p2p_report", "path_type_matrix",
    "format_p2p_report",
    "maxflow_matrix", "achieved_capacity", "SCIPY_FROM_EDGES",
]

#: The two ways of answering "how fast can GPU i send to GPU j".
MODES = ("route", "maxflow")


class P2PError(DgxTopoError):
    """A P2P request the model cannot answer as asked (unknown mode or backend)."""


@dataclass(frozen=True, slots=True)
class Calibrated:
    """A model constant with its provenance.

    Attributes
    ----------
    value : float
        The constant (an efficiency is dimensionless, an overhead in [s]).
    applies_to : str
        What it multiplies or adds to.
    fitted_to : str
        The measurements it was fitted to, and how; empty if it was not fitted.
    source : str
        Where the value or the measurements come from.
    uncertain : str
        What about it is not verified.
    """

    value: float
    applies_to: str
    fitted_to: str
    source: str
    uncertain: str = ""


_ROW = ("p2pBandwidthLatencyTest on a DGX-1V, GPU0's row (NVIDIA/OpenACC GPU bootcamp material; "
        "tests/data/dgx1v_p2p_gpu0_row.json)")

#: Achieved / line rate, per link technology: the one table of efficiencies.
EFFICIENCIES: dict[str, Calibrated] = {
    # (48.49/50 + 48.49/50 + 96.85/100 + 96.9/100) / 4 = 0.96928
    "nvlink": Calibrated(
        0.9693, "line rate of NVLink edges on a peer route, every NVLink generation, direct or "
        "through NVSwitches; and of every NVLink edge in maxflow mode",
        "mean of measured / line rate over the 4 NVLink entries (GPU1-2 NV1, GPU3-4 NV2), "
        "bidirectional P2P=Enabled", _ROW,
        "one figure for all NVLink generations: P100 (NVLink 1.0) and NVSwitch hops are "
        "predicted, not measured; unidirectional efficiency assumed equal to bidirectional"),
    # NCCL's PCI_BW 12.0 GB/s of PCIe 3.0 x16's 15.75 (and Gen4 24 of 31.5): 0.7617.
    "pcie": Calibrated(
        round(nccl_profile().link_bandwidth("pcie3_x16") / LINKS["pcie3_x16"].bandwidth, 4),
        "line rate of PCIe edges on a peer route (PIX, PXB)", "",
        "NCCL src/graph/topo.h PCI_BW 12.0 GB/s for a Gen3 x16 link [S30], / 15.75 line rate",
        "not fitted: the DGX-1V row has no PCIe peer pair; NCCL's figure is for SM-driven "
        "transfers, not copy engines"),
    # (14.25 + 14.54 + 14.49) / 3 / (2 x 15.754) = 0.45788
    "staged": Calibrated(
        0.4579, "line rate of every edge of a copy staged through host memory (PCIe legs, "
        "socket-to-socket link), per direction",
        "mean of measured / (2 x PCIe 3.0 x16 line rate) over the 3 entries without NVLink "
        "(GPU5-7, SYS), bidirectional P2P=Enabled", _ROW,
        "only cross-socket pairs measured; PHB (same-socket) staging assumed equal, which the "
        "same row with P2P disabled supports (GPU2-3: 14.43, 14.46 GB/s)"),
    # NCCL's NET_BW 12.0 GB/s for a 100 Gb/s port, of EDR's 12.5 GB/s line rate: 0.96.
    "network": Calibrated(
        round(12.0 / 12.5, 4), "line rate of network edges (NIC ports, switch links) of a copy "
        "between hosts (NCCL's NET transport)", "",
        "NCCL src/graph/topo.h NET_BW 12.0 GB/s for a 100 Gbit port [S30], / 12.5 line rate",
        "not fitted: no measured GPU-to-GPU copy between hosts in the shared data"),
    # 784.87 / 900 = 0.87208
    "hbm": Calibrated(
        0.8721, "HBM bandwidth (GpuSpec.memory_bandwidth) for the device-local copy (diagonal)",
        "measured / HBM bandwidth of the diagonal entry (784.87 GB/s of V100's 900)", _ROW,
        "900 GB/s is NVIDIA's datasheet figure, not in the shared reference"),
}

#: Fixed software overheads added to the hops' latencies.
OVERHEADS: dict[str, Calibrated] = {
    "network": Calibrated(
        2.7 * us, "latency of a copy between hosts (GPUDirect RDMA), on top of the hops",
        "", "NCCL 2.27.7 src/graph/tuning.cc hwLat[NET][Ring][LL] = 2.7 us, NCCL's own per-step "
        "network latency for its lowest-latency protocol (nccl-model.md 5.2)",
        "not fitted: no measured latency between hosts in the shared data; a staged end adds "
        "the staged overhead"),
    # mean(1.76, 1.62 - 0.5, 1.61 - 0.5, 2.01 - 0.5, 2.02 - 0.5) = 1.404 us
    "p2p": Calibrated(
        1.404 * us, "latency of a peer copy (and of the device-local copy), on top of the hops",
        "mean of measured minus the route's hop latency over the 5 peer entries (diagonal, "
        "GPU1-4), P2P=Enabled writes", _ROW,
        "the hop latencies themselves are assumptions (500 ns per NVLink hop, topo.specs); "
        "the row has NV2 pairs slower than NV1 ones, which no per-hop model reproduces"),
    # mean(18.44, 19.15, 19.34) - (4 x 150 ns PCIe + 100 ns QPI) = 18.277 us
    "staged": Calibrated(
        18.28 * us, "latency of a copy staged through host memory, on top of the hops",
        "mean of measured minus the route's hop latency (0.7 us) over the 3 entries without "
        "NVLink (GPU5-7), P2P=Enabled writes", _ROW,
        "what it stands for (two DMA copies through a host bounce buffer and their "
        "synchronisation) is an interpretation [U]; measured on cross-socket pairs only"),
}


@dataclass(frozen=True, slots=True)
class P2PResult:
    """One GPU pair: its route, classes and predicted bandwidth and latency.

    Attributes
    ----------
    src, dst : int
        GPU ids (position in :func:`topo.gpus` order).
    route : Route
        The path (edges, parallel paths, shares), NCCL path type, peer access or staging.
    smi_class : str or None
        nvidia-smi's class of the pair (NV#, PIX, PXB, PHB, NODE, SYS; X on the diagonal),
        from :func:`topo.connection_matrix`; None for GPUs of different hosts.
    line_rate : float
        Line rate of the route per direction (HBM bandwidth on the diagonal). [B/s]
    bandwidth : float
        Predicted achieved bandwidth, one direction at a time. [B/s]
    bottleneck : tuple or None
        The edge that limits the achieved bandwidth (None on the diagonal).
    nccl_bandwidth : float
        What NCCL's topology model charges for the route (``inf`` on the diagonal). [B/s]
    latency : float
        Predicted latency of a small write. [s]
    """

    src: int
    dst: int
    route: Route
    smi_class: str | None
    line_rate: float
    bandwidth: float
    bottleneck: tuple | None
    nccl_bandwidth: float
    latency: float

    @property
    def path_type(self) -> PathType:
        """NCCL's path type."""
        return self.route.path_type

    @property
    def p2p(self) -> bool:
        """Peer access; False when the copy is staged through host memory."""
        return self.route.p2p

    @property
    def nodes(self) -> tuple:
        """The node path (the first of the parallel paths)."""
        return self.route.nodes


def achieved_capacity(G, u, v, *, staged: bool = False) -> float:
    """Predicted achievable rate of the edge (u, v) per direction: line rate x efficiency.

    Parameters
    ----------
    G : networkx.DiGraph
    u, v : node ids
    staged : bool
        The edge carries a copy staged through host memory (efficiency ``"staged"``);
        otherwise the efficiency of the edge's kind (``"nvlink"`` or ``"pcie"``).

    Returns
    -------
    float
        [B/s]

    Raises
    ------
    P2PError
        For a peer copy over an edge kind without an efficiency (``cpu-to-cpu``, ``network``).
    """
    data = G.adj[u][v]
    key = "network" if data["kind"] == "network" else "staged" if staged else data["kind"]
    if key not in EFFICIENCIES:
        raise P2PError(f"edge ({u!r}, {v!r}) of kind {data['kind']!r} on a peer route: expected "
                       f"one of nvlink, pcie (peer copies never cross {data['kind']})")
    return float(data["bandwidth"]) * EFFICIENCIES[key].value


def _capacity(r: Route, achieved: bool):
    if not achieved:
        return line_rate
    return partial(achieved_capacity, staged=r.host_memory is not None)


def _hbm(G, node, achieved: bool) -> float:
    value = G.nodes[node].get("memory_bandwidth")
    if value is None:
        return math.nan
    return float(value) * (EFFICIENCIES["hbm"].value if achieved else 1.0)


def _latency(r: Route) -> float:
    if r.path_type == PathType.NET:
        return OVERHEADS["network"].value + (OVERHEADS["staged"].value if r.host_memory else 0.0) + r.latency
    return (OVERHEADS["p2p"] if r.p2p else OVERHEADS["staged"]).value + r.latency


# -- symmetry: GPUs whose swap is an automorphism of the fabric give identical rows ---------
def _classes(G, nodes) -> list:
    """Partition ``nodes`` into classes of interchangeable GPUs (positions into ``nodes``).

    Swapping two interchangeable GPUs is an automorphism of the attributed fabric, which
    leaves every routed and max-flow figure unchanged; so one representative pair per pair
    of classes gives the whole matrix (DGX-2: GPUs sharing a PCIe leaf switch are
    interchangeable, 8 classes of 2). See :func:`topo.interchangeable_gpus`.
    """
    position = {n: i for i, n in enumerate(nodes)}
    classes = []
    for members in interchangeable_gpus(G):
        chosen = [position[n] for n in members if n in position]
        if chosen:
            classes.append(chosen)
    return classes


class _Table:
    """Per-pair figures for a GPU selection, computed once per pair of symmetry classes."""

    def __init__(self, G, nodes, *, symmetry: bool = True):
        self.G = G
        self.nodes = nodes
        self.router = Router(G)
        classes = _classes(G, nodes) if symmetry else [[i] for i in range(len(nodes))]
        self.index = np.empty(len(nodes), dtype=np.intp)
        for c, members in enumerate(classes):
            self.index[members] = c
        self.first = [nodes[m[0]] for m in classes]
        self.second = [nodes[m[1]] if len(m) > 1 else None for m in classes]
        self._routes: dict = {}
        self._flows: dict = {}

    def maxflow(self, achieved: bool) -> np.ndarray:
        if achieved not in self._flows:
            self._flows[achieved] = _maxflow(self.G, self.nodes, achieved)
        return self._flows[achieved]

    def route(self, a, b) -> Route:
        if (a, b) not in self._routes:
            self._routes[a, b] = self.router.route(a, b)
        return self._routes[a, b]

    def matrix(self, pair, diagonal, dtype=float, fill=math.nan) -> np.ndarray:
        """Expand ``pair(a, b)`` over representative pairs and ``diagonal(a)`` to all GPUs."""
        k = len(self.first)
        reduced = np.full((k, k), fill, dtype=dtype)
        for i in range(k):
            for j in range(k):
                if i != j:
                    reduced[i, j] = pair(self.first[i], self.first[j])
                elif self.second[i] is not None:
                    reduced[i, i] = pair(self.first[i], self.second[i])
        full = reduced[np.ix_(self.index, self.index)]
        local = [diagonal(self.first[c]) for c in range(k)]
        for position, c in enumerate(self.index):
            full[position, position] = local[c]
        return full

    # -- the figures ----------------------------------------------------------------------
    def unidirectional(self, achieved: bool) -> np.ndarray:
        def pair(a, b):
            r = self.route(a, b)
            return route_bandwidth(self.G, r, _capacity(r, achieved))[0]
        return self.matrix(pair, lambda a: _hbm(self.G, a, achieved))

    def bidirectional(self, achieved: bool) -> np.ndarray:
        # Both copies at once: a routed copy and the copy back never cross the same directed
        # edge (module docstring), so each keeps its one-way rate. On the diagonal both
        # copies share the GPU's memory: the same figure as one way.
        one_way = self.unidirectional(achieved)
        both = one_way + one_way.T
        np.fill_diagonal(both, np.diag(one_way))
        return both

    def latency(self) -> np.ndarray:
        return self.matrix(lambda a, b: _latency(self.route(a, b)),
                           lambda a: OVERHEADS["p2p"].value)

    def path_types(self) -> np.ndarray:
        types = self.matrix(lambda a, b: self.route(a, b).path_type.name,
                            lambda a: PathType.LOC.name, dtype=object, fill="")
        return types.astype(str)


# -- max flow over NVLink ---------------------------------------------------------------------
def _nvlink_graph(G, achieved: bool) -> nx.Graph:
    """NVLink edges as an undirected capacity graph (a validated fabric's links are symmetric)."""
    factor = EFFICIENCIES["nvlink"].value if achieved else 1.0
    H = nx.Graph()
    for u, v, d in G.edges(data=True):
        if d["kind"] == "nvlink":
            H.add_edge(u, v, capacity=float(d["bandwidth"]) * factor)
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


#: NVLink edge count from which ``backend=None`` takes scipy, when installed. Measured with
#: examples/p2p_benchmark.py's fat trees: networkx is faster on a DGX-2's 102 edges (5.5 vs
#: 10.7 ms), even at 192 (13 vs 12 ms), scipy 4x faster at 3,072 edges and 8-13x on the
#: 1,024-GPU fabric's 12,288 (1.7-2.5 s vs 20-22 s).
SCIPY_FROM_EDGES = 200


def _scipy_installed() -> bool:
    try:
        import scipy.sparse.csgraph  # noqa: F401
    except ImportError:
        return False
    return True


def _cut_function(H, backend):
    if backend not in (None, "networkx", "scipy"):
        raise P2PError(f"unknown max-flow backend {backend!r}: expected None (automatic), "
                       f"'networkx' or 'scipy'")
    if backend is None:
        large = H.number_of_edges() >= SCIPY_FROM_EDGES
        backend = "scipy" if large and _scipy_installed() else "networkx"
    if backend == "scipy":
        if not _scipy_installed():
            raise P2PError("max-flow backend 'scipy' needs scipy, which is not installed: "
                           "expected backend=None or 'networkx', or `pip install scipy`")
        return _scipy_cut(H)
    return _networkx_cut(H)


def maxflow_matrix(G, gpus=None, *, achieved: bool = True, backend=None) -> np.ndarray:
    """Maximum flow over NVLink edges only between every pair of GPUs, per direction.

    Intermediate GPUs and NVSwitches relay freely. A validated fabric's links are the same
    both ways, so the maximum flow from i to j is the minimum i-j cut of the undirected
    capacity graph and equals the flow from j to i; Gusfield's equivalent flow tree then
    gives every pair with ``n - 1`` minimum cuts for ``n`` GPUs, not ``n (n - 1) / 2``.

    Parameters
    ----------
    G : networkx.DiGraph
    gpus : iterable of int or str, optional
        GPU ids (see :func:`topo.select_gpus`); all GPUs by default. Unselected GPUs still
        relay.
    achieved : bool
        Capacities are line rate x the ``"nvlink"`` efficiency (default), or line rates.
    backend : {None, "networkx", "scipy"}
        Minimum-cut routine: networkx's Boykov-Kolmogorov, or scipy's Dinic (an optional
        dependency; 32-bit integer capacities, relative rounding below 1e-7 on DGX fabrics). None takes scipy when it is
        installed and the fabric has at least :data:`SCIPY_FROM_EDGES` NVLink edges, the
        measured crossover; networkx otherwise.

    Returns
    -------
    numpy.ndarray
        ``[i, j]`` the maximum flow [B/s]; 0 on the diagonal and for GPUs without NVLink.

    Raises
    ------
    P2PError
        For an unknown backend, or ``"scipy"`` without scipy installed.

    Examples
    --------
    >>> from topo import dgx1v
    >>> (maxflow_matrix(dgx1v(), [0, 5], achieved=False) / 1e9).tolist()
    [[0.0, 150.0], [150.0, 0.0]]
    """
    validate(G)
    return _maxflow(G, select_gpus(G, gpus), achieved, backend)


def _maxflow(G, nodes, achieved, backend=None) -> np.ndarray:
    H = _nvlink_graph(G, achieved)
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


# -- public API -----------------------------------------------------------------------------
def _check_mode(mode):
    if mode not in MODES:
        raise P2PError(f"unknown P2P mode {mode!r}: expected one of {', '.join(MODES)}")


def p2p_path(G, src: int, dst: int) -> P2PResult:
    """Route, classes and predicted bandwidth and latency of a copy from GPU src to dst.

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric (validated here).
    src, dst : int
        GPU ids (position in :func:`topo.gpus` order; the CUDA index in one system). Equal
        ids give the device-local copy.

    Returns
    -------
    P2PResult

    Raises
    ------
    GpuSelectionError
        For an id out of range or not an integer.
    RouteError
        For GPUs without any route between them.

    Examples
    --------
    >>> from topo import dgx2
    >>> r = p2p_path(dgx2(), 0, 9)
    >>> r.smi_class, r.path_type.name, len(r.route.paths), r.line_rate / 1e9
    ('NV6', 'NVL', 6, 150.0)
    >>> round(r.bandwidth / 1e9, 2), round(r.latency / 1e-6, 2), r.nccl_bandwidth / 1e9
    (145.4, 2.9, 120.0)
    """
    validate(G)
    (a,), (b,) = select_gpus(G, [src]), select_gpus(G, [dst])
    r = Router(G).route(a, b)
    host = G.nodes[a]["host"]
    if a == b:
        smi = "X"
    elif G.nodes[b]["host"] == host:
        cm = connection_matrix(G, host=host)
        smi = cm.cells[cm.nodes.index(a)][cm.nodes.index(b)]
    else:  # an NVLink domain spanning hosts: nvidia-smi shows one host only
        smi = None
    if a == b:
        return P2PResult(src, dst, r, smi, _hbm(G, a, False), _hbm(G, a, True), None, math.inf,
                         OVERHEADS["p2p"].value)
    achieved, bottleneck = route_bandwidth(G, r, _capacity(r, True))
    return P2PResult(src, dst, r, smi, r.bandwidth, achieved, bottleneck,
                     route_bandwidth(G, r, nccl_capacity)[0], _latency(r))


def p2p_matrix(G, gpus=None, *, mode: str = "route", bidirectional: bool = False,
               achieved: bool = True) -> np.ndarray:
    """Bandwidth between every pair of GPUs, as p2pBandwidthLatencyTest lays it out.

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric (validated here).
    gpus : iterable of int or str, optional
        GPU ids or a list such as ``"0,3,5-7"`` (rows and columns in that order); all GPUs
        by default.
    mode : {"route", "maxflow"}
        The routed copy, or the NVLink maximum flow (at least the routed figure).
    bidirectional : bool
        Both directions copying at once; the entry is the sum of the two rates.
    achieved : bool
        Predicted achieved bandwidth (default) or line rate.

    Returns
    -------
    numpy.ndarray
        ``[i, j]`` from GPU ``gpus[i]`` to ``gpus[j]``, per direction unless
        ``bidirectional``. [B/s] The diagonal is the device-local copy (see the module
        docstring), NaN for a GPU without ``memory_bandwidth``.

    Raises
    ------
    GpuSelectionError
        For ids out of range, repeated or malformed.
    P2PError
        For an unknown mode.
    RouteError
        For GPUs without any route between them.

    Examples
    --------
    >>> from topo import dgx1
    >>> (p2p_matrix(dgx1(), [0, 1, 5], achieved=False) / 1e9).round(2)
    array([[732.  ,  20.  ,  15.75],
           [ 20.  , 732.  ,  20.  ],
           [ 15.75,  20.  , 732.  ]])
    >>> (p2p_matrix(dgx1(), [0, 1, 5], mode="maxflow", achieved=False) / 1e9).round(2)
    array([[732.,  80.,  80.],
           [ 80., 732.,  80.],
           [ 80.,  80., 732.]])
    """
    _check_mode(mode)
    validate(G)
    nodes = select_gpus(G, gpus)
    table = _Table(G, nodes)
    return _bandwidth(table, mode, bidirectional, achieved)


def _bandwidth(table: _Table, mode, bidirectional, achieved) -> np.ndarray:
    routed = table.bidirectional(achieved) if bidirectional else table.unidirectional(achieved)
    if mode == "route":
        return routed
    # Full duplex: both directions at once carry two independent maximum flows.
    flows = table.maxflow(achieved) * (2 if bidirectional else 1)
    best = np.maximum(routed, flows)
    np.fill_diagonal(best, np.diag(routed))  # the device-local copy is the same in both modes
    return best


def p2p_latency_matrix(G, gpus=None) -> np.ndarray:
    """Predicted latency of a small write between every pair of GPUs (routed copy).

    Parameters
    ----------
    G : networkx.DiGraph
    gpus : iterable of int or str, optional
        GPU ids; all GPUs by default.

    Returns
    -------
    numpy.ndarray
        ``[i, j]`` hop latencies of the route + the peer or staged overhead; the peer
        overhead on the diagonal. [s]

    Raises
    ------
    GpuSelectionError
        For ids out of range, repeated or malformed.

    Examples
    --------
    >>> from topo import dgx1v
    >>> (p2p_latency_matrix(dgx1v(), [0, 1, 5]) / 1e-6).round(2)
    array([[ 1.4 ,  1.9 , 18.98],
           [ 1.9 ,  1.4 ,  1.9 ],
           [18.98,  1.9 ,  1.4 ]])
    """
    validate(G)
    return _Table(G, select_gpus(G, gpus)).latency()


def path_type_matrix(G, gpus=None) -> np.ndarray:
    """NCCL's path type of the route between every pair of GPUs.

    Parameters
    ----------
    G : networkx.DiGraph
    gpus : iterable of int or str, optional

    Returns
    -------
    numpy.ndarray of str
        ``LOC`` on the diagonal, else ``NVL``, ``PIX``, ``PXB``, ``PHB`` or ``SYS``.

    Examples
    --------
    >>> from topo import dgx1v
    >>> path_type_matrix(dgx1v(), [0, 1, 5]).tolist()
    [['LOC', 'NVL', 'SYS'], ['NVL', 'LOC', 'NVL'], ['SYS', 'NVL', 'LOC']]
    """
    validate(G)
    return _Table(G, select_gpus(G, gpus)).path_types()


@dataclass(frozen=True, slots=True)
class P2PReport:
    """Every P2P matrix of a GPU selection: what ``dgxtopo p2p`` prints.

    Attributes
    ----------
    system : str
        Registry key of the fabric (graph attribute ``system``, or its name).
    name : str
        Display name of the fabric (graph attribute ``name``).
    gpus : tuple of int
        GPU ids, the rows and columns.
    mode : str
        ``"route"`` or ``"maxflow"``.
    unidirectional, bidirectional : numpy.ndarray
        Predicted achieved bandwidth. [B/s]
    latency : numpy.ndarray
        Predicted latency of the routed copy, in both modes. [s]
    path_type : numpy.ndarray of str
        NCCL's path type of the routed copy, in both modes.
    """

    system: str
    name: str
    gpus: tuple
    mode: str
    unidirectional: np.ndarray
    bidirectional: np.ndarray
    latency: np.ndarray
    path_type: np.ndarray

    def to_dict(self) -> dict:
        """The JSON form of ``dgxtopo p2p --json``: GB/s and µs rounded to 4 decimals, NaN
        (a diagonal without ``memory_bandwidth``) as null."""
        def table(matrix, convert):
            return [[None if math.isnan(x) else round(float(convert(x)), 4) for x in row]
                    for row in matrix]
        return {
            "system": self.system,
            "gpus": list(self.gpus),
            "mode": self.mode,
            "unidirectional_gbps": table(self.unidirectional, to_GBps),
            "bidirectional_gbps": table(self.bidirectional, to_GBps),
            "latency_us": table(self.latency, to_us),
            "path_type": [list(map(str, row)) for row in self.path_type],
        }


def p2p_report(G, gpus=None, *, mode: str = "route") -> P2PReport:
    """All P2P matrices of a GPU selection at once (one routing pass).

    Parameters
    ----------
    G : networkx.DiGraph
    gpus : iterable of int or str, optional
        GPU ids or a list such as ``"0,3,5-7"``; all GPUs by default.
    mode : {"route", "maxflow"}

    Returns
    -------
    P2PReport

    Raises
    ------
    GpuSelectionError, P2PError, RouteError
        As :func:`p2p_matrix`.

    Examples
    --------
    >>> from topo import dgx2
    >>> report = p2p_report(dgx2(), "0,8")
    >>> report.to_dict()["bidirectional_gbps"]
    [[784.89, 290.79], [290.79, 784.89]]
    """
    _check_mode(mode)
    validate(G)
    nodes = select_gpus(G, gpus)
    position = {n: i for i, n in enumerate(select_gpus(G))}
    ids = tuple(position[n] for n in nodes)
    table = _Table(G, nodes)
    matrices = [_bandwidth(table, mode, b, True) for b in (False, True)]
    for m in matrices:
        m.setflags(write=False)
    latency, types = table.latency(), table.path_types()
    latency.setflags(write=False)
    types.setflags(write=False)
    name = G.graph.get("name", "fabric")
    return P2PReport(G.graph.get("system", name), name, ids, mode, matrices[0], matrices[1], latency,
                     types)


def _layout(title: str, corner: str, ids, matrix, cell) -> list:
    """One matrix as p2pBandwidthLatencyTest prints it: ``%6d`` labels, ``%6.02f`` cells."""
    lines = [title, f"{corner:>6} " + "".join(f"{i:6d} " for i in ids).rstrip()]
    for i, row in zip(ids, matrix):
        lines.append((f"{i:6d} " + "".join(f"{cell(x):>6} " for x in row)).rstrip())
    return lines


def format_p2p_report(report: P2PReport, *, bidirectional: bool = False,
                      latency: bool = False) -> str:
    """Lay out a report as p2pBandwidthLatencyTest prints its matrices (GB/s, µs).

    Parameters
    ----------
    report : P2PReport
    bidirectional : bool
        Print the bidirectional bandwidth matrix instead of the unidirectional one.
    latency : bool
        Also print the latency matrix.

    Returns
    -------
    str

    Examples
    --------
    >>> from topo import dgx1v
    >>> print(format_p2p_report(p2p_report(dgx1v(), "0,3,5"), bidirectional=True))
    Path Type (NCCL) Matrix
       D\\D      0      3      5
         0    LOC    NVL    SYS
         3    NVL    LOC    SYS
         5    SYS    SYS    LOC
    <BLANKLINE>
    Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)
       D\\D      0      3      5
         0 784.89  96.93  14.43
         3  96.93 784.89  14.43
         5  14.43  14.43 784.89
    <BLANKLINE>
    Predicted for DGX-1V (mode route): line rate x an efficiency per link technology, fitted to
    a DGX-1V p2pBandwidthLatencyTest row. SYS and PHB pairs are staged through host memory.
    Diagonal: device-local copy (HBM, read and write counted).
    """
    def number(convert):
        return lambda x: "n/a" if math.isnan(x) else f"{convert(x):6.02f}"

    direction = "Bidirectional" if bidirectional else "Unidirectional"
    kind = "P2P=Enabled" if report.mode == "route" else "NVLink Max-Flow"
    lines = _layout("Path Type (NCCL) Matrix", "D\\D", report.gpus, report.path_type, str)
    lines.append("")
    lines += _layout(f"{direction} {kind} Bandwidth Matrix (GB/s)", "D\\D", report.gpus,
                     report.bidirectional if bidirectional else report.unidirectional,
                     number(to_GBps))
    if latency:
        lines.append("")
        lines += _layout("P2P=Enabled Latency (P2P Writes) Matrix (us)", "GPU", report.gpus,
                         report.latency, number(to_us))
    lines += ["", f"Predicted for {report.name} (mode {report.mode}): line rate x an efficiency "
              f"per link technology, fitted to", "a DGX-1V p2pBandwidthLatencyTest row. SYS and "
              "PHB pairs are staged through host memory.",
              "Diagonal: device-local copy (HBM, read and write counted)."]
    return "\n".join(lines)
