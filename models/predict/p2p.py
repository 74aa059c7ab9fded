"""GPU-to-GPU copies: what p2pBandwidthLatencyTest measures, predicted from the fabric.

Two modes:

``"route"``
    The copy CUDA makes (``cudaMemcpyPeer``), over the route of :func:`models.engine.routes.route`:
    a direct NVLink bundle, the NVSwitch fabric, PCIe peer-to-peer, or staged through host
    memory when the GPUs cannot access each other (across the host bridge or the sockets).
``"maxflow"``
    The bound a copy split over several paths could reach: the maximum flow between the two
    GPUs over all NVLink edges (:mod:`models.predict.maxflow`), relaying through other GPUs and
    switches (or the routed figure, when that is higher, e.g. a pair without any NVLink path).

and two settings of peer access, as p2pBandwidthLatencyTest prints them: ``p2p=True``
(P2P=Enabled, the default) and ``p2p=False`` (P2P=Disabled: every pair of one host staged
through host memory, whatever links it has; GPUs of different hosts copy over the network, or
over the NVLink domain of a GB200 NVL72's trays, either way).

The model
---------
*Peer copies*: achieved bandwidth = line rate of each edge x an efficiency for its link
technology and generation (:data:`EFFICIENCIES`, with the other constants in
:mod:`models.predict.p2p_constants`), taken at the route's bottleneck. Links are
full duplex and a peer copy and the copy back never cross the same directed edge (both are
shortest paths: if the copy from a to b took x -> y and the copy back did too, d(a,x) + d(y,b)
+ d(b,x) + d(y,a) would be 2D - 2 for the distance D between a and b, below the 2D the triangle
inequality demands), so *bidirectional* is the sum of the two one-way rates.

*Staged copies* (:class:`StagedCopy`) are two DMA legs, GPU -> host memory (the memory of the
CPU nearest the destination, as NCCL places its bounce buffer) -> GPU, pipelined. Every copy
is a stream on the directed edges its legs cross (a copy between two GPUs under one PCIe
switch crosses the switch's uplink once up and once down). A directed PCIe edge gives staged
streams ``"staged"`` x its line rate, shared between the streams that cross it; a GPU whose
own PCIe link moves staged data both ways at once gives each direction only
``"staged_duplex"`` x the line rate; the memory of the CPU holding the bounce buffers caps
the sum of the copies staged through it (:data:`HOST_CEILINGS`). Concurrent copies share by
max-min fairness (progressive filling). One way and both ways are computed separately:

- one way, any staged pair: ``"staged"`` x the PCIe line rate (9.56 GB/s on PCIe 3.0 x16);
- both ways, GPUs under different switches: each GPU's link moves data both ways, so each
  copy gets ``"staged_duplex"`` x the line rate (14.4 GB/s together);
- both ways, GPUs sharing a switch (or a parent switch): both copies cross its uplink in both
  directions, so together they get what one direction of the uplink carries (9.56 GB/s).

*Latency* = the hops' latencies along the route (edge attribute ``latency``; both legs of a
staged copy) + a fixed software overhead (:data:`OVERHEADS`), one for peer copies and one for
staged copies in each setting of peer access.

Calibration
-----------
The constants (:data:`EFFICIENCIES`, :data:`HOST_CEILINGS`, :data:`OVERHEADS`), what each was
fitted to or derived from, and the residuals on machines without data here are in
:mod:`models.predict.p2p_constants`; this module re-exports them, as its results name them by key.

Diagonal
--------
The device-local copy, as p2pBandwidthLatencyTest counts it (read and write bytes both
counted): the GPU's HBM bandwidth (``memory_bandwidth`` node attribute) x the HBM efficiency
of its generation (``"hbm_sm70"``, ``"hbm_sm60"``); NaN (null in JSON) for a GPU without that
attribute. Both copies of the bidirectional test share the one memory, so the bidirectional
diagonal equals the unidirectional one. Path type LOC; latency the peer overhead with no hop.

Examples
--------
>>> from topo import dgx1v
>>> G = dgx1v()
>>> r = p2p_path(G, 0, 3)
>>> r.path_type.name, r.smi_class, r.line_rate / 1e9, round(r.bandwidth / 1e9, 2)
('NVL', 'NV2', 50.0, 48.53)
>>> r = p2p_path(G, 0, 5)
>>> r.path_type.name, r.p2p, r.nodes
('SYS', False, ('gpu0', 'pcie0', 'cpu0', 'cpu1', 'pcie2', 'gpu5'))
>>> (p2p_matrix(G, [0, 1, 3, 5], bidirectional=True) / 1e9).round(1)
array([[784.9,  48.5,  97.1,  14.4],
       [ 48.5, 784.9,  48.5,  97.1],
       [ 97.1,  48.5, 784.9,  14.4],
       [ 14.4,  97.1,  14.4, 784.9]])
>>> (p2p_matrix(G, [0, 1, 3, 5], p2p=False) / 1e9).round(2)[0]
array([784.89,   9.56,   9.56,   9.56])
>>> (p2p_matrix(G, [0, 1, 3, 5], p2p=False, bidirectional=True) / 1e9).round(2)[0]
array([784.89,   9.56,  14.42,  14.42])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx
import numpy as np

from topo.errors import DgxTopoError, LimitError
from topo.nvidia_smi import connection_matrix
from topo.select import GpuIds, select_gpus

from .maxflow import flow_matrix
from .p2p_constants import EFFICIENCIES, HOST_CEILINGS, OVERHEADS, Calibrated
from ..engine.fabric import PreparedFabric, graph_of, prepare
from ..engine.results import tidy_records
from ..engine.symmetry import host_copies
from ..engine.routes import PathType, Route, Router, line_rate, route_bandwidth

__all__ = [
    "Calibrated", "EFFICIENCIES", "OVERHEADS", "HOST_CEILINGS", "MODES",
    "P2PResult", "P2PReport", "P2PError", "StagedCopy",
    "p2p_path", "p2p_matrix", "p2p_latency_matrix", "p2p_report", "path_type_matrix",
    "achieved_capacity", "hbm_efficiency", "staged_copy",
]

#: The two ways of answering "how fast can GPU i send to GPU j".
MODES = ("route", "maxflow")


class P2PError(DgxTopoError):
    """A P2P request the model cannot answer as asked (unknown mode, missing path or constant)."""


@dataclass(frozen=True, slots=True)
class StagedCopy:
    """A copy staged through host memory: two DMA legs, GPU -> host memory -> GPU.

    Attributes
    ----------
    src, dst : node ids
        The two GPU nodes.
    host_memory : node id
        The CPU whose memory holds the bounce buffer (the CPU nearest ``dst``).
    to_host : tuple
        Node path of the first leg, ``src`` ... ``host_memory`` (device to host).
    from_host : tuple
        Node path of the second leg, ``host_memory`` ... ``dst`` (host to device).
    """

    src: object
    dst: object
    host_memory: object
    to_host: tuple
    from_host: tuple

    @property
    def edges(self) -> tuple:
        """The directed edges of both legs, in order (an edge may appear in both legs'
        opposite directions, e.g. a switch's uplink)."""
        return (tuple(zip(self.to_host, self.to_host[1:]))
                + tuple(zip(self.from_host, self.from_host[1:])))

    def latency(self, G: nx.DiGraph) -> float:
        """Sum of the edges' ``latency`` over both legs (the legs run one after the other
        for a small copy). [s]"""
        return sum(float(G.adj[u][v]["latency"]) for u, v in self.edges)

    def to_records(self) -> list:
        """Tidy rows, one per directed edge of both legs, in order (:mod:`models.engine.results`).

        Columns: ``src``, ``dst``, ``host_memory`` (the nodes, as text), ``leg`` (``"to_host"``,
        device to host, then ``"from_host"``), ``hop`` (the edge's position in its leg, from 0),
        ``u``, ``v`` (the edge). A leg's edges chain from its first node to its last, so ``u`` of
        hop 0 of ``"to_host"`` is ``src`` and ``v`` of the last hop of ``"from_host"`` is ``dst``.
        The edges' latencies are the graph's (:meth:`latency` adds them up).

        Examples
        --------
        >>> from topo import dgx1v
        >>> rows = staged_copy(dgx1v(), 0, 1).to_records()   # up the PLX switch's uplink, then down
        >>> [f'{r["leg"]} {r["hop"]}: {r["u"]}-{r["v"]}' for r in rows]
        ['to_host 0: gpu0-pcie0', 'to_host 1: pcie0-cpu0', 'from_host 0: cpu0-pcie0', 'from_host 1: pcie0-gpu1']
        """
        legs = [("to_host", self.to_host), ("from_host", self.from_host)]
        hops = [(leg, k, u, v) for leg, path in legs for k, (u, v) in enumerate(zip(path, path[1:]))]
        return tidy_records({
            "src": str(self.src), "dst": str(self.dst), "host_memory": str(self.host_memory),
            "leg": [h[0] for h in hops], "hop": [h[1] for h in hops],
            "u": [str(h[2]) for h in hops], "v": [str(h[3]) for h in hops]}) if hops else []


@dataclass(frozen=True, slots=True)
class P2PResult:
    """One GPU pair: its route, classes and predicted bandwidth and latency.

    Attributes
    ----------
    src, dst : int
        GPU ids (position in :func:`topo.gpus` order).
    route : Route
        NCCL's route of the pair: path type, peer access or staging, and its edges (for a
        copy staged with P2P disabled, the PCIe path between the GPUs with the host memory
        marked; the copy itself is :attr:`staged`).
    smi_class : str or None
        nvidia-smi's class of the pair (NV#, PIX, PXB, PHB, NODE, SYS; X on the diagonal),
        from :func:`topo.connection_matrix`; None for GPUs of different hosts.
    line_rate : float
        Line rate of the copy per direction at its bottleneck (HBM bandwidth on the
        diagonal). [B/s]
    bandwidth : float
        Predicted achieved bandwidth, one direction at a time. [B/s]
    bottleneck : tuple or None
        What limits the achieved bandwidth: an edge ``(u, v)``, ``("host_memory", cpu)``
        for a host ceiling, or None on the diagonal.
    nccl_bandwidth : float
        What NCCL's topology model charges for the route (``inf`` on the diagonal), from
        :func:`models.engine.nccl.system.nccl_capacity`. [B/s]
    latency : float
        Predicted latency of a small write. [s]
    staged : StagedCopy or None
        The two legs of a copy staged through host memory; None for a peer copy.
    efficiency : str or None
        Key of :data:`EFFICIENCIES` (or of :data:`HOST_CEILINGS`) applied at the bottleneck.
    overhead : str
        Key of :data:`OVERHEADS` in the latency.
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
    staged: StagedCopy | None = None
    efficiency: str | None = None
    overhead: str = "p2p"

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
        """The node path (the first of the parallel paths; both legs of a staged copy)."""
        if self.staged is not None:
            return self.staged.to_host + self.staged.from_host[1:]
        return self.route.nodes

    def to_records(self) -> list:
        """One tidy row: the pair, its classes, and its predicted bandwidth and latency."""
        return tidy_records({
            "src": self.src, "dst": self.dst, "path_type": self.path_type.name, "p2p": self.p2p,
            "smi_class": self.smi_class, "line_rate_Bps": self.line_rate, "bandwidth_Bps": self.bandwidth,
            "nccl_bandwidth_Bps": self.nccl_bandwidth, "latency_s": self.latency,
            "staged": self.staged is not None, "efficiency": self.efficiency, "overhead": self.overhead})


# -- capacities -------------------------------------------------------------------------------
def hbm_efficiency(G: nx.DiGraph, gpu: str) -> str:
    """Key of :data:`EFFICIENCIES` for the device-local copy of a GPU node: ``"hbm_sm60"`` for
    Pascal (compute capability 6.x), ``"hbm_sm70"`` otherwise."""
    capability = G.nodes[gpu].get("compute_capability")
    return "hbm_sm60" if capability is not None and 60 <= capability < 70 else "hbm_sm70"


def _efficiency_key(G, u, v, staged: bool) -> str:
    data = G.adj[u][v]
    kind = data["kind"]
    if kind == "network":
        link = data.get("link")
        if link not in EFFICIENCIES:
            raise P2PError(f"network edge ({u!r}, {v!r}) of link {link!r}: expected one of "
                           f"ib_edr, ib_hdr, ib_ndr, ib_xdr (topo.specs.WIRES), which have an efficiency")
        return link
    if staged:
        return "staged"
    if kind == "nvlink":
        link = data.get("link")
        if link not in EFFICIENCIES:
            raise P2PError(f"NVLink edge ({u!r}, {v!r}) of link {link!r}: expected one of "
                           f"nvlink1 to nvlink5 (topo.specs.LINKS), which have an efficiency")
        return link
    if kind == "pcie":
        return "pcie"
    raise P2PError(f"edge ({u!r}, {v!r}) of kind {kind!r} on a peer route: expected one of "
                   f"nvlink, pcie (peer copies never cross {kind})")


def achieved_capacity(G: nx.DiGraph, u: str, v: str, *, staged: bool = False) -> float:
    """Predicted achievable rate of the edge (u, v) per direction: line rate x efficiency.

    Parameters
    ----------
    G : networkx.DiGraph
    u, v : node ids
    staged : bool
        The edge carries one stream of a copy staged through host memory (efficiency
        ``"staged"``); otherwise the efficiency of the edge's link (``"nvlink1"`` ...
        ``"nvlink5"``, ``"pcie"``; the port's, ``"ib_edr"`` ... ``"ib_xdr"``, either way).

    Returns
    -------
    float
        ``bandwidth`` attribute of the edge x the efficiency. [B/s]

    Raises
    ------
    P2PError
        For a peer copy over an edge kind without an efficiency (``cpu-to-cpu``), or an
        NVLink edge of an unknown generation.

    Examples
    --------
    >>> from topo import dgx1, dgx1v
    >>> round(achieved_capacity(dgx1v(), "gpu0", "gpu3") / 1e9, 2)   # NV2, NVLink 2.0
    48.53
    >>> round(achieved_capacity(dgx1(), "gpu0", "gpu1") / 1e9, 2)    # NV1, NVLink 1.0
    18.82
    """
    key = _efficiency_key(G, u, v, staged)
    return float(G.adj[u][v]["bandwidth"]) * EFFICIENCIES[key].value


def _hbm(G, node, achieved: bool) -> float:
    value = G.nodes[node].get("memory_bandwidth")
    if value is None:
        return math.nan
    return float(value) * (EFFICIENCIES[hbm_efficiency(G, node)].value if achieved else 1.0)


# -- staged copies ------------------------------------------------------------------------------
def _staged(router: Router, a, b) -> StagedCopy:
    """The two legs of a copy from GPU node a to b through the memory of the CPU nearest b."""
    kind = router.kind
    host = next((n for n in router.pcie_parents(b) if kind[n] == "cpu"), None)
    if host is None or host not in router.pcie_parents(a):
        raise P2PError(f"GPUs {a!r} and {b!r} cannot be staged through host memory: expected "
                       f"both under the PCIe tree of one host's CPUs, found "
                       f"{'no CPU above ' + repr(b) if host is None else 'no PCIe path from ' + repr(a) + ' to ' + repr(host)}")
    return StagedCopy(a, b, host, tuple(router.pcie_path(a, host)),
                      tuple(router.pcie_path(host, b)))


def staged_copy(G: nx.DiGraph | PreparedFabric, src: int, dst: int) -> StagedCopy:
    """The copy from GPU src to dst staged through host memory, as with P2P disabled.

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric (validated here) or a :class:`models.engine.fabric.PreparedFabric`.
    src, dst : int
        GPU ids of one host, distinct.

    Returns
    -------
    StagedCopy

    Raises
    ------
    GpuSelectionError
        For bad ids.
    P2PError
        For GPUs without a PCIe path through a CPU of their host, or ``src == dst``.

    Examples
    --------
    >>> from topo import dgx1v
    >>> c = staged_copy(dgx1v(), 0, 1)      # one PLX switch: up its uplink and back down
    >>> c.host_memory, c.to_host, c.from_host
    ('cpu0', ('gpu0', 'pcie0', 'cpu0'), ('cpu0', 'pcie0', 'gpu1'))
    """
    G = graph_of(G)
    (a,), (b,) = select_gpus(G, [src]), select_gpus(G, [dst])
    if a == b:
        raise P2PError(f"staged copy from GPU {src} to itself: expected two distinct GPUs "
                       f"(the device-local copy is never staged)")
    return _staged(Router(G), a, b)


@dataclass(frozen=True, slots=True)
class _Constraint:
    name: tuple          # the edge, or ("host_memory", cpu)
    key: str | None      # the EFFICIENCIES / HOST_CEILINGS key
    coefficients: dict   # copy index -> streams (or 1 for a host ceiling)
    capacity: float      # [B/s]
    line: float          # line rate of the edge [B/s]


def _constraints(G, copies, achieved: bool) -> list:
    uses: dict = {}
    for i, c in enumerate(copies):
        for e in c.edges:
            counts = uses.setdefault(e, {})
            counts[i] = counts.get(i, 0) + 1
    kind = G.nodes
    constraints = []
    for (u, v), coefficients in uses.items():
        line = float(G.adj[u][v]["bandwidth"])
        key = None
        if achieved:
            gpu_link = kind[u]["kind"] == "gpu" or kind[v]["kind"] == "gpu"
            key = (_efficiency_key(G, u, v, True) if G.adj[u][v]["kind"] == "network"
                   else "staged_duplex" if gpu_link and (v, u) in uses else "staged")
        capacity = line * (EFFICIENCIES[key].value if key else 1.0)
        constraints.append(_Constraint((u, v), key, coefficients, capacity, line))
    if achieved:
        for cpu in dict.fromkeys(c.host_memory for c in copies):
            model = kind[cpu].get("model")
            if model in HOST_CEILINGS:
                constraints.append(_Constraint(
                    ("host_memory", cpu), model,
                    {i: 1 for i, c in enumerate(copies) if c.host_memory == cpu},
                    HOST_CEILINGS[model].value, math.inf))
    return constraints


def _fill(G, copies, achieved: bool) -> list:
    """Max-min fair rates of concurrent staged copies (progressive filling).

    Returns, per copy, ``(rate, constraint)``: its rate [B/s] and the constraint that froze it.
    """
    constraints = _constraints(G, copies, achieved)
    rates = [0.0] * len(copies)
    frozen: list = [None] * len(copies)
    while any(f is None for f in frozen):
        best, which = math.inf, None
        for c in constraints:
            active = sum(n for i, n in c.coefficients.items() if frozen[i] is None)
            if active == 0:
                continue
            used = sum(n * rates[i] for i, n in c.coefficients.items())
            step = max(0.0, (c.capacity - used) / active)
            if step < best:
                best, which = step, c
        for i in range(len(copies)):
            if frozen[i] is None:
                rates[i] += best
        for i in which.coefficients:
            if frozen[i] is None:
                frozen[i] = which
    return list(zip(rates, frozen))


# -- symmetry: GPUs whose swap is an automorphism of the fabric give identical rows ---------
def _classes(symmetry, nodes) -> list:
    """Partition ``nodes`` into classes of interchangeable GPUs (positions into ``nodes``).

    Swapping two interchangeable GPUs is an automorphism of the attributed fabric, which
    leaves every routed, staged and max-flow figure unchanged; so one representative pair per
    pair of classes gives the whole matrix (DGX-2: GPUs sharing a PCIe leaf switch are
    interchangeable, 8 classes of 2). ``symmetry`` is the whole graph's
    (:meth:`models.engine.symmetry.FabricSymmetry.graph`).
    """
    position = {n: i for i, n in enumerate(nodes)}
    classes = []
    for members in symmetry.classes:
        chosen = [position[n] for n in members if n in position]
        if chosen:
            classes.append(chosen)
    return classes


def _peer_access(p2p) -> bool:
    """``p2p`` as a bool: True / "enabled" (the default of p2pBandwidthLatencyTest's first
    matrices) or False / "disabled"."""
    if isinstance(p2p, (bool, np.bool_)):
        return bool(p2p)
    if isinstance(p2p, str) and p2p.lower() in ("enabled", "disabled"):
        return p2p.lower() == "enabled"
    raise P2PError(f"peer access {p2p!r}: expected True or False, or 'enabled' or 'disabled'")


@dataclass(frozen=True, slots=True)
class _Pair:
    route: Route
    staged: StagedCopy | None


class _Table:
    """Per-pair figures for a GPU selection, computed once per pair of symmetry classes."""

    def __init__(self, G, nodes, *, p2p: bool = True, symmetry=None):
        """``symmetry``: the fabric's (:class:`models.engine.fabric.PreparedFabric`), or None to
        compute every pair."""
        self.G = G
        self.nodes = nodes
        self.p2p = p2p
        self.router = Router(G)
        self._flows: dict = {}  # achieved -> maxflow matrix
        copies = host_copies(G) if symmetry is not None else None
        if copies is not None:
            self._by_host(nodes, copies)
            return
        self.host_of = None
        classes = (_classes(symmetry.graph(), nodes) if symmetry is not None
                   else [[i] for i in range(len(nodes))])
        self.index = np.empty(len(nodes), dtype=np.intp)
        for c, members in enumerate(classes):
            self.index[members] = c
        self.first = [nodes[m[0]] for m in classes]
        self.second = [nodes[m[1]] if len(m) > 1 else None for m in classes]
        self._pairs: dict = {}
        self._one_way: dict = {}

    def _by_host(self, nodes, classes) -> None:
        """Representatives under host permutations (:func:`models.engine.symmetry.host_copies`)."""
        where = {}
        for c, hosts in enumerate(classes):
            for i, local in enumerate(hosts):
                for key, n in local.items():
                    where[n] = (c, i, key)
        self.classes = classes
        self.where = [where[n] for n in nodes]
        self.host_of = np.array([(c, i) for c, i, _ in self.where])
        self._pairs: dict = {}
        self._one_way: dict = {}
        self._keys: tuple | None = None  # _host_keys
        self.first = self.representatives()

    def _representative(self, a: int, b: int) -> tuple:
        """The pair of nodes standing for positions a and b (a != b) in host mode."""
        (c1, i1, p1), (c2, i2, p2) = self.where[a], self.where[b]
        hosts = self.classes
        second = hosts[c2][1 if c1 == c2 and i1 != i2 else 0]
        return hosts[c1][0][p1], second[p2]

    def representatives(self) -> list:
        """GPU nodes whose pairs stand for every pair of the selection (host mode), in the order
        the pairs first name them (read from :meth:`_host_keys`, whose pairs come first)."""
        return list(dict.fromkeys(x for key in self._host_keys()[0] if isinstance(key, tuple) for x in key))

    def expand(self, rows: dict) -> np.ndarray:
        """The full matrix from ``rows[(a, b)]`` over the representative pairs (off-diagonal)."""
        return self.matrix(lambda a, b: rows[a, b], lambda a: 0.0)

    def pair(self, a, b) -> _Pair:
        if (a, b) not in self._pairs:
            self._pairs[a, b] = self._make_pair(a, b)
        return self._pairs[a, b]

    def _make_pair(self, a, b) -> _Pair:
        router, G = self.router, self.G
        r = router.route(a, b)
        # GPUs of different hosts are no pair of p2pBandwidthLatencyTest's: their copy is the
        # network's, or the NVLink domain's (an NVL72's trays), whatever the peer setting.
        if r.path_type in (PathType.LOC, PathType.NET) or (self.p2p and r.p2p) \
                or G.nodes[a].get("host") != G.nodes[b].get("host"):
            return _Pair(r, None)
        staged = _staged(router, a, b)
        if not r.p2p:
            return _Pair(r, staged)
        # P2P disabled on a pair with peer access: NCCL's view is the PCIe path between the
        # GPUs (the copy itself goes up to host memory and back: ``staged``).
        path = router.pcie_path(a, b)
        edges = tuple(zip(path, path[1:]))
        line, bottleneck = min((float(G.adj[u][v]["bandwidth"]), (u, v)) for u, v in edges)
        latency = sum(float(G.adj[u][v]["latency"]) for u, v in edges)
        return _Pair(Route(a, b, router.pcie_type(path), False, edges, (1.0,) * len(edges),
                           line, bottleneck, latency, host_memory=staged.host_memory), staged)

    # -- one pair -------------------------------------------------------------------------
    def one_way(self, a, b, achieved: bool) -> tuple:
        """``(rate, bottleneck, efficiency key)`` of the copy from a to b alone."""
        key = (a, b, achieved)
        if key not in self._one_way:
            p = self.pair(a, b)
            if p.staged is not None:
                rate, c = _fill(self.G, [p.staged], achieved)[0]
                self._one_way[key] = (rate, c.name, c.key)
            else:
                staged = p.route.host_memory is not None  # a NET route with a staged end
                capacity = (lambda G, u, v: achieved_capacity(G, u, v, staged=staged)) \
                    if achieved else line_rate
                rate, edge = route_bandwidth(self.G, p.route, capacity)
                eff = _efficiency_key(self.G, *edge, staged) if achieved and edge else None
                self._one_way[key] = (rate, edge, eff)
        return self._one_way[key]

    def both_ways(self, a, b, achieved: bool) -> float:
        forth, back = self.pair(a, b), self.pair(b, a)
        if forth.staged is not None and back.staged is not None:
            return sum(rate for rate, _ in _fill(self.G, [forth.staged, back.staged], achieved))
        return self.one_way(a, b, achieved)[0] + self.one_way(b, a, achieved)[0]

    def latency_of(self, a, b) -> tuple:
        """``(latency, overhead key)`` of a small write from a to b."""
        p = self.pair(a, b)
        if p.route.path_type == PathType.LOC:
            return OVERHEADS["p2p"].value, "p2p"
        if p.staged is not None:
            key = "staged" if self.p2p else "staged_p2p_disabled"
            return OVERHEADS[key].value + p.staged.latency(self.G), key
        r = p.route
        if r.path_type == PathType.NET:
            extra = OVERHEADS["staged"].value if r.host_memory else 0.0
            return OVERHEADS["network"].value + extra + r.latency, "network"
        return OVERHEADS["p2p"].value + r.latency, "p2p"

    # -- matrices -------------------------------------------------------------------------
    def matrix(self, pair, diagonal, dtype=float, fill=math.nan) -> np.ndarray:
        """Expand ``pair(a, b)`` over representative pairs and ``diagonal(a)`` to all GPUs."""
        if self.host_of is not None:
            return self._host_matrix(pair, diagonal, dtype, fill)
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

    def _host_matrix(self, pair, diagonal, dtype, fill) -> np.ndarray:
        keys, index = self._host_keys()  # every position is a key's: ``fill`` is never seen
        values = np.empty(len(keys), dtype=dtype)
        for k, key in enumerate(keys):
            values[k] = pair(*key) if isinstance(key, tuple) else diagonal(key)
        return values[index]

    def _host_keys(self) -> tuple:
        """``(keys, index)``, computed once: the representative pairs ``(a, b)`` and diagonal GPUs
        (host mode) in first-seen order, and per position ``[a, b]`` of the matrix the index of
        its key; a matrix is its keys' figures taken at ``index``."""
        keys = self._keys
        if keys is None:
            n = len(self.nodes)
            index = np.empty((n, n), dtype=np.intp)
            seen: dict = {}
            for a in range(n):
                for b in range(n):
                    if a != b:
                        index[a, b] = seen.setdefault(self._representative(a, b), len(seen))
            for a, (c, _, p) in enumerate(self.where):
                index[a, a] = seen.setdefault(self.classes[c][0][p], len(seen))
            keys = self._keys = (tuple(seen), index)
        return keys

    def unidirectional(self, achieved: bool) -> np.ndarray:
        return self.matrix(lambda a, b: self.one_way(a, b, achieved)[0],
                           lambda a: _hbm(self.G, a, achieved))

    def bidirectional(self, achieved: bool) -> np.ndarray:
        # On the diagonal both copies share the GPU's memory: the same figure as one way.
        return self.matrix(lambda a, b: self.both_ways(a, b, achieved),
                           lambda a: _hbm(self.G, a, achieved))

    def latency(self) -> np.ndarray:
        return self.matrix(lambda a, b: self.latency_of(a, b)[0],
                           lambda a: OVERHEADS["p2p"].value)

    def path_types(self) -> np.ndarray:
        types = self.matrix(lambda a, b: self.pair(a, b).route.path_type.name,
                            lambda a: PathType.LOC.name, dtype=object, fill="")
        return types.astype(str)

    def maxflow(self, achieved: bool) -> np.ndarray:
        """The NVLink maximum flow between every pair, computed once per ``achieved`` (a report's
        one-way and both-ways matrices read the same flows). Read-only."""
        flows = self._flows.get(achieved)
        if flows is None:
            flows = self._flows[achieved] = self._maxflow(achieved)
            flows.setflags(write=False)
        return flows

    def _maxflow(self, achieved: bool) -> np.ndarray:
        capacity = achieved_capacity if achieved else line_rate
        if self.host_of is None:
            return flow_matrix(self.G, self.nodes, capacity)
        # A maximum flow does not depend on which other GPUs are selected (all relay): the
        # representatives' flows give every pair's.
        reps = self.representatives()
        # A handful of cuts (7 on an NVL72): networkx is as fast as scipy here (0.020 against
        # 0.017 s CPU measured) and spares importing scipy (0.3 s).
        flows = flow_matrix(self.G, reps, capacity, backend="networkx" if len(reps) <= 16 else None)
        rows = {(a, b): flows[i, j] for i, a in enumerate(reps) for j, b in enumerate(reps)}
        return self.expand(rows)


# -- public API -----------------------------------------------------------------------------
def _check_mode(mode, p2p: bool):
    if not isinstance(mode, str) or mode not in MODES:
        raise P2PError(f"unknown P2P mode {mode!r}: expected one of {', '.join(MODES)}")
    if mode == "maxflow" and not p2p:
        raise P2PError("mode 'maxflow' with P2P disabled: expected mode 'route' (with peer "
                       "access disabled every copy is staged through host memory, no NVLink "
                       "flow) or P2P enabled")


def p2p_path(G: nx.DiGraph | PreparedFabric, src: int, dst: int, *, p2p: bool | str = True) -> P2PResult:
    """Route, classes and predicted bandwidth and latency of a copy from GPU src to dst.

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric (validated here) or a :class:`models.engine.fabric.PreparedFabric`.
    src, dst : int
        GPU ids (position in :func:`topo.gpus` order; the CUDA index in one system). Equal
        ids give the device-local copy.
    p2p : bool or {"enabled", "disabled"}
        Peer access, as p2pBandwidthLatencyTest's P2P=Enabled (default) and P2P=Disabled
        runs: disabled, every copy between GPUs of one host is staged through host memory.

    Returns
    -------
    P2PResult

    Raises
    ------
    GpuSelectionError
        For an id out of range or not an integer.
    RouteError
        For GPUs without any route between them.
    P2PError
        For a bad ``p2p``, or GPUs that cannot be staged through host memory.

    Examples
    --------
    >>> from topo import dgx2
    >>> r = p2p_path(dgx2(), 0, 9)
    >>> r.smi_class, r.path_type.name, len(r.route.paths), r.line_rate / 1e9
    ('NV6', 'NVL', 6, 150.0)
    >>> round(r.bandwidth / 1e9, 2), round(r.latency / 1e-6, 2), r.nccl_bandwidth / 1e9
    (145.59, 2.9, 120.0)
    """
    peer = _peer_access(p2p)
    G = graph_of(G)
    (a,), (b,) = select_gpus(G, [src]), select_gpus(G, [dst])
    table = _Table(G, [a, b] if a != b else [a], p2p=peer)
    host = G.nodes[a]["host"]
    if a == b:
        smi = "X"
    elif G.nodes[b]["host"] == host:
        cm = connection_matrix(G, host=host)
        smi = cm.cells[cm.nodes.index(a)][cm.nodes.index(b)]
    else:  # an NVLink domain spanning hosts: nvidia-smi shows one host only
        smi = None
    p = table.pair(a, b)
    if a == b:
        return P2PResult(src, dst, p.route, smi, _hbm(G, a, False), _hbm(G, a, True), None,
                         math.inf, OVERHEADS["p2p"].value, efficiency=hbm_efficiency(G, a))
    rate, bottleneck, efficiency = table.one_way(a, b, True)
    line = table.one_way(a, b, False)[0] if p.staged is not None else p.route.bandwidth
    latency, overhead = table.latency_of(a, b)
    from ..engine.nccl.system import nccl_capacity  # NCCL's figure: this function's only

    return P2PResult(src, dst, p.route, smi, line, rate, bottleneck,
                     route_bandwidth(G, p.route, nccl_capacity)[0], latency, p.staged,
                     efficiency, overhead)


def p2p_matrix(G: nx.DiGraph | PreparedFabric, gpus: GpuIds = None, *, mode: str = "route", bidirectional: bool = False,
               achieved: bool = True, p2p: bool | str = True) -> np.ndarray:
    """Bandwidth between every pair of GPUs, as p2pBandwidthLatencyTest lays it out.

    The diagonal is not a pair: as in p2pBandwidthLatencyTest, it holds each GPU's copy within
    its own memory (HBM speed: 732 GB/s at line rate on a DGX-1's P100, against 20 GB/s for one
    NVLink). Leave it out when averaging the pairs (last example): on a DGX-1 the mean with it
    is six times the mean of the pairs.

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric (validated here) or a :class:`models.engine.fabric.PreparedFabric`.
    gpus : iterable of int or str, optional
        GPU ids or a list such as ``"0,3,5-7"`` (rows and columns in that order); all GPUs
        by default.
    mode : {"route", "maxflow"}
        The routed copy, or the NVLink maximum flow (at least the routed figure).
    bidirectional : bool
        Both directions copying at once; the entry is the sum of the two rates.
    achieved : bool
        Predicted achieved bandwidth (default) or line rate.
    p2p : bool or {"enabled", "disabled"}
        Peer access (default enabled); disabled, every pair of one host is staged through
        host memory (p2pBandwidthLatencyTest's P2P=Disabled matrices; mode "route" only).

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
        For an unknown mode, a bad ``p2p``, ``bidirectional`` or ``achieved`` that is not a
        bool, or mode "maxflow" with P2P disabled.
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
    >>> m = p2p_matrix(dgx1(), achieved=False)
    >>> pairs = m[~np.eye(len(m), dtype=bool)]                # the diagonal left out
    >>> round(float(pairs.mean()) / 1e9, 2), round(float(m.mean()) / 1e9, 2)
    (18.18, 107.41)
    """
    peer = _peer_access(p2p)
    _check_mode(mode, peer)
    for name, flag in (("bidirectional", bidirectional), ("achieved", achieved)):
        if not isinstance(flag, (bool, np.bool_)):
            raise P2PError(f"{name} must be True or False, received {type(flag).__name__}")
    fabric = prepare(G)
    G = fabric.G
    table = _Table(G, select_gpus(G, gpus), p2p=peer, symmetry=fabric.symmetry)
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


def p2p_latency_matrix(G: nx.DiGraph | PreparedFabric, gpus: GpuIds = None, *, p2p: bool | str = True) -> np.ndarray:
    """Predicted latency of a small write between every pair of GPUs (routed copy).

    Parameters
    ----------
    G : networkx.DiGraph
    gpus : iterable of int or str, optional
        GPU ids; all GPUs by default.
    p2p : bool or {"enabled", "disabled"}
        Peer access (default enabled); disabled, every pair of one host is staged.

    Returns
    -------
    numpy.ndarray
        ``[i, j]`` hop latencies of the route (both legs of a staged copy) + the peer or
        staged overhead; the peer overhead on the diagonal. [s]

    Raises
    ------
    GpuSelectionError
        For ids out of range, repeated or malformed.
    P2PError
        For a bad ``p2p``.

    Examples
    --------
    >>> from topo import dgx1v
    >>> (p2p_latency_matrix(dgx1v(), [0, 1, 5]) / 1e-6).round(2)
    array([[ 1.4 ,  1.9 , 18.98],
           [ 1.9 ,  1.4 ,  1.9 ],
           [18.98,  1.9 ,  1.4 ]])
    >>> (p2p_latency_matrix(dgx1v(), [0, 1, 5], p2p=False) / 1e-6).round(2)[0]
    array([ 1.4 , 16.91, 17.01])
    """
    peer = _peer_access(p2p)
    fabric = prepare(G)
    G = fabric.G
    return _Table(G, select_gpus(G, gpus), p2p=peer, symmetry=fabric.symmetry).latency()


def path_type_matrix(G: nx.DiGraph | PreparedFabric, gpus: GpuIds = None, *, p2p: bool | str = True) -> np.ndarray:
    """NCCL's path type of the route between every pair of GPUs.

    Parameters
    ----------
    G : networkx.DiGraph
    gpus : iterable of int or str, optional
    p2p : bool or {"enabled", "disabled"}
        Peer access (default enabled); disabled, the type of the PCIe path between the GPUs.

    Returns
    -------
    numpy.ndarray of str
        ``LOC`` on the diagonal, else ``NVL``, ``PIX``, ``PXB``, ``PHB`` or ``SYS``.

    Examples
    --------
    >>> from topo import dgx1v
    >>> path_type_matrix(dgx1v(), [0, 1, 5]).tolist()
    [['LOC', 'NVL', 'SYS'], ['NVL', 'LOC', 'NVL'], ['SYS', 'NVL', 'LOC']]
    >>> path_type_matrix(dgx1v(), [0, 1, 2], p2p="disabled").tolist()[0]
    ['LOC', 'PIX', 'PHB']
    """
    peer = _peer_access(p2p)
    fabric = prepare(G)
    G = fabric.G
    return _Table(G, select_gpus(G, gpus), p2p=peer, symmetry=fabric.symmetry).path_types()


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
    p2p : bool
        Peer access: True for p2pBandwidthLatencyTest's P2P=Enabled matrices, False for
        P2P=Disabled.
    """

    system: str
    name: str
    gpus: tuple
    mode: str
    unidirectional: np.ndarray
    bidirectional: np.ndarray
    latency: np.ndarray
    path_type: np.ndarray
    p2p: bool = True

    def to_records(self) -> list:
        """Tidy rows, one per (source, destination) pair in row-major order, the diagonal
        included: bandwidths one way and both ways, latency and path type."""
        ids = np.array(self.gpus)
        src, dst = np.repeat(ids, len(ids)), np.tile(ids, len(ids))
        return tidy_records({
            "system": self.system, "mode": self.mode, "p2p": self.p2p, "src": src, "dst": dst,
            "unidirectional_Bps": np.ravel(self.unidirectional), "bidirectional_Bps": np.ravel(self.bidirectional),
            "latency_s": np.ravel(self.latency), "path_type": np.ravel(self.path_type)})


def p2p_report(G: nx.DiGraph | PreparedFabric, gpus: GpuIds = None, *, mode: str = "route", p2p: bool | str = "enabled",
               max_pairs: int | None = None) -> P2PReport:
    """All P2P matrices of a GPU selection at once (one routing pass).

    Parameters
    ----------
    G : networkx.DiGraph
    gpus : iterable of int or str, optional
        GPU ids or a list such as ``"0,3,5-7"``; all GPUs by default.
    mode : {"route", "maxflow"}
    p2p : {"enabled", "disabled"} or bool
        Peer access (default enabled): p2pBandwidthLatencyTest's P2P=Enabled or
        P2P=Disabled matrices.
    max_pairs : int, optional
        Refuse (:class:`topo.LimitError`) before any routing a selection of more ordered GPU
        pairs than this, ``n (n - 1)`` for ``n`` GPUs.

    Returns
    -------
    P2PReport

    Raises
    ------
    GpuSelectionError, P2PError, RouteError
        As :func:`p2p_matrix`.
    topo.LimitError
        For more pairs than ``max_pairs``.

    Examples
    --------
    >>> from topo import dgx2
    >>> report = p2p_report(dgx2(), "0,8")
    >>> (report.bidirectional / 1e9).round(4).tolist()
    [[784.89, 291.1765], [291.1765, 784.89]]
    >>> (p2p_report(dgx2(), "0,1,2,8", p2p="disabled").bidirectional[0] / 1e9).round(4).tolist()
    [784.89, 9.5594, 9.5594, 14.4242]
    """
    peer = _peer_access(p2p)
    _check_mode(mode, peer)
    fabric = prepare(G)
    G = fabric.G
    nodes = select_gpus(G, gpus)
    pairs = len(nodes) * (len(nodes) - 1)
    if max_pairs is not None and pairs > max_pairs:
        raise LimitError(f"p2p of {len(nodes)} GPUs routes {pairs} GPU pairs", keyword="max_pairs",
                         size=pairs, limit=max_pairs)
    position = {n: i for i, n in enumerate(select_gpus(G))}
    ids = tuple(position[n] for n in nodes)
    table = _Table(G, nodes, p2p=peer, symmetry=fabric.symmetry)
    matrices = [_bandwidth(table, mode, b, True) for b in (False, True)]
    for m in matrices:
        m.setflags(write=False)
    latency, types = table.latency(), table.path_types()
    latency.setflags(write=False)
    types.setflags(write=False)
    name = G.graph.get("name", "fabric")
    return P2PReport(G.graph.get("system", name), name, ids, mode, matrices[0], matrices[1],
                     latency, types, peer)
