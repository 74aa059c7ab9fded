"""Routes between two GPUs, as a CUDA peer copy and NCCL's P2P transport take them.

A :class:`Route` says which edges a copy from one GPU to another crosses, how its traffic
divides over them, NCCL's path type for it, and whether the two GPUs can access each other
(peer-to-peer) or the copy is staged through host memory. :func:`route` computes one,
:func:`route_bandwidth` its bottleneck under any per-edge capacity (the line rate, NCCL's
effective figures of :func:`models.engine.nccl.system.nccl_capacity`, or a model's achieved figures), and
:meth:`Route.load` the traffic it puts on every edge, for bandwidth reservation.

Routing rules, in order (NVIDIA/nccl v2.27.7-1 src/graph/paths.cc):

1. **Direct NVLink** (``NVL``): the NVLink bundle between the two GPUs.
2. **Through NVSwitches** (``NVL``; NCCL folds all NVSwitches into one node, so the path
   type is NVL whatever the number of switches crossed): the shortest paths from the source
   GPU to the destination whose intermediate nodes are all NVSwitches.
3. **Through one intermediate GPU** (``NVB``), only with ``nvb=True``: two NVLink bundles
   via a GPU both are directly linked to; NCCL's P2P transport then relays through that
   GPU (its ``intermediateRank``). A CUDA peer copy cannot relay, and NCCL_NVB_DISABLE=1
   turns this off, so it is off by default (p2pBandwidthLatencyTest stages such pairs
   through the host: GPU0-GPU5 of a DGX-1V moves 14.3 GB/s both ways, not NVLink speed).
4. **PCIe**: the PCIe route (over PCIe and socket-to-socket edges, not through a GPU or a
   NIC). Its type is ``PIX`` (at most one PCIe switch), ``PXB`` (several switches, no
   host bridge), ``PHB`` (through a CPU's root complex; nvidia-smi's NODE is PHB for
   NCCL, whose CPU node is a NUMA domain) or ``SYS`` (across the socket-to-socket link).
   Peer access needs a type no worse than ``PXB`` (NCCL's default ``p2pLevel``).
   Otherwise there is no peer access and the copy is **staged through host memory**: the
   route is the same PCIe path, marked with the CPU whose memory holds the bounce buffer.
   As NCCL does (``addInterStep`` to the destination's local CPU), that is the CPU nearest
   the destination, so a cross-socket copy is GPU -> PCIe -> CPU0 -> QPI -> CPU1 (host
   memory) -> PCIe -> GPU.

5. **Between hosts** (``NET``, clusters of :func:`topo.cluster`): from the GPU to the
   host's network NIC with the best PCIe path type (then the lowest index), over the
   network, and from the NIC nearest the destination to it. GPUDirect RDMA when a GPU and
   its NIC are no further apart than ``PXB`` (NCCL's default ``netGdrLevel``); otherwise
   that end is staged through its CPU's memory (``host_memory``). When the two NICs have
   no network path (a rail-only fabric, the NICs on different rails), NCCL's PXN carries
   the data over NVLink to the GPU beside a NIC on the destination NIC's network first
   (the same NIC index when there is one), and that NIC sends it (PXN, NVIDIA/nccl
   v2.12.12-1 and later, src/graph/paths.cc and src/transport/net.cc); ``via`` names that
   GPU.

Parallel paths (DGX-2) and the choice of representation
-------------------------------------------------------
On a DGX-2 every GPU has one link to each of the 6 NVSwitches of its baseboard, so a pair
is connected by 6 parallel paths (``gpu0 -> nvswitch_s -> gpu1`` within a board,
``gpu0 -> nvswitch_s -> nvswitch_s+6 -> gpu8`` across), one link each: 150 GB/s line rate
per direction, where any single path carries 25. A route is therefore **a flow, not a
single path**: the directed edges it crosses, each with the fraction of the pair's traffic
it carries (:attr:`Route.shares`). The traffic is spread over all shortest switch paths the
way NVSwitch fabrics spray it: at the source and at every switch, over the next hops on a
shortest path, in proportion to their bandwidth (one sixth per plane on a DGX-2). The
route's bandwidth is ``min over edges of capacity / share``.

Why a flow rather than a tuple of parallel paths: on the DGX-2 the 6 paths share no edge,
but on larger NVSwitch fabrics (two switch levels) paths share the leaf-to-spine edges and
their number multiplies with every level; the (edge, share) form is what bandwidth
reservation needs (:meth:`Route.load`), stays linear in the fabric size, and still gives
the paths on demand (:attr:`Route.paths`). A single-path route is the special case where
every share is 1.

Caveat: proportional spraying is static, so on a fabric whose GPUs have *unequal* link
counts to the switches a pair's two directions can differ, and removing a link can
re-balance the split and raise a pair's figure (a Braess effect); on the built-in fabrics
the links are uniform and neither happens.

Examples
--------
>>> from topo import dgx1v, dgx2
>>> r = route(dgx1v(), "gpu0", "gpu3")
>>> r.path_type.name, r.nodes, r.bandwidth / 1e9
('NVL', ('gpu0', 'gpu3'), 50.0)
>>> r = route(dgx1v(), "gpu0", "gpu5")
>>> r.path_type.name, r.p2p, r.host_memory, r.nodes
('SYS', False, 'cpu1', ('gpu0', 'pcie0', 'cpu0', 'cpu1', 'pcie2', 'gpu5'))
>>> r = route(dgx2(), "gpu0", "gpu8")
>>> len(r.paths), r.paths[0], r.bandwidth / 1e9
(6, ('gpu0', 'nvswitch0', 'nvswitch6', 'gpu8'), 150.0)
>>> route_bandwidth(dgx2(), r)[0] / 1e9                   # 6 planes x 25 GB/s line rate
150.0
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType

import networkx as nx
import numpy as np

from topo.errors import TopologyError
from topo.pcie import pcie_class
from topo.schema import validate

from .memo import LazyTable
from .results import tidy_records

__all__ = [
    "PathType", "P2P_LEVEL", "Route", "RouteError", "Router",
    "route", "route_bandwidth", "line_rate",
]


# nvidia-smi's PCIe classes as NCCL's path types (NCCL has no NODE; NVIDIA/nccl v2.27.7-1
# src/graph/paths.cc classifies a path through a CPU as PHB whichever root ports it uses).
_NCCL_PCIE_TYPE = MappingProxyType({"PIX": "PIX", "PXB": "PXB", "PHB": "PHB", "NODE": "PHB", "SYS": "SYS"})


class PathType(IntEnum):
    """NCCL's path types with their numeric values (NCCL 2.27.7, ``src/include/graph.h``).

    Lower is better; NCCL compares them numerically (NVIDIA/nccl v2.27.7-1 src/include/graph.h).
    ``LOC`` self, ``NVL`` NVLink (direct or through NVSwitches), ``NVB`` NVLink through one
    intermediate GPU, ``C2C`` Grace chip-to-chip, ``PIX`` at most one PCIe switch, ``PXB``
    several PCIe switches, ``P2C`` C2C then PCIe, ``PXN`` NVLink to a peer then its PCIe,
    ``PHB`` through a PCIe host bridge (CPU), ``SYS`` across the socket-to-socket link,
    ``NET`` network, ``DIS`` disconnected. This module produces LOC, NVL, NVB, PIX, PXB,
    PHB and SYS.
    """

    LOC = 0
    NVL = 1
    NVB = 2
    C2C = 3
    PIX = 4
    PXB = 5
    P2C = 6
    PXN = 7
    PHB = 8
    SYS = 9
    NET = 10
    DIS = 11


#: NCCL's default P2P level: peer access for path types up to and including it (paths.cc).
P2P_LEVEL = PathType.PXB


class RouteError(TopologyError):
    """Two nodes that are not GPUs of the fabric, or GPUs without any route between them."""


@dataclass(frozen=True, slots=True)
class Route:
    """How a copy from one GPU to another crosses the fabric.

    Attributes
    ----------
    src, dst : node ids
        The two GPU nodes.
    path_type : PathType
        NCCL's type of the path.
    p2p : bool
        Peer access (the copy goes GPU to GPU); False when it is staged through host memory.
    edges : tuple of (u, v)
        The directed edges the copy crosses, from ``src`` towards ``dst`` (a topological
        order of the flow; empty for a device-local copy).
    shares : tuple of float
        Per edge, the fraction of the pair's traffic it carries (1 on a single path).
    bandwidth : float
        Line rate the route can carry per direction, ``min(bandwidth / share)``; ``inf``
        for a device-local copy (no edge limits it). [B/s]
    bottleneck : tuple or None
        The edge that sets ``bandwidth`` (first in route order on a tie), None if no edge.
    latency : float
        Sum of the edges' ``latency`` along the longest of the parallel paths; hardware
        only, without any software overhead. [s]
    via : node id or None
        The intermediate GPU of an NVB route.
    host_memory : node id or None
        The CPU whose memory stages a copy without peer access.
    """

    src: object
    dst: object
    path_type: PathType
    p2p: bool
    edges: tuple
    shares: tuple
    bandwidth: float
    bottleneck: tuple | None
    latency: float
    via: object = None
    host_memory: object = None

    def to_records(self) -> list:
        """One row per directed edge the route crosses (``u``, ``v``, the ``share`` of the
        copy it carries), with the route's ends, path type, bandwidth, latency and relays
        (one row with empty ``u`` and ``v`` for a GPU to itself)."""
        edges = self.edges or (("", ""),)
        return tidy_records({
            "src": str(self.src), "dst": str(self.dst), "path_type": self.path_type.name, "p2p": self.p2p,
            "u": [str(u) for u, _ in edges], "v": [str(v) for _, v in edges],
            "share": list(self.shares) if self.edges else 1.0,
            "bandwidth_Bps": self.bandwidth, "latency_s": self.latency,
            "via": None if self.via is None else str(self.via),
            "host_memory": None if self.host_memory is None else str(self.host_memory)})

    @property
    def paths(self) -> tuple:
        """All parallel node paths from ``src`` to ``dst`` (one for most routes).

        Returns
        -------
        tuple of tuple
            Node paths, in the order of the route's edges.
        """
        if not self.edges:
            return ((self.src,),)
        succ: dict = {}
        for u, v in self.edges:
            succ.setdefault(u, []).append(v)
        found = []

        def walk(path):
            last = path[-1]
            if last == self.dst:
                found.append(tuple(path))
                return
            for nxt in succ.get(last, ()):
                walk(path + [nxt])

        walk([self.src])
        return tuple(found)

    @property
    def nodes(self) -> tuple:
        """The node path; for a route of parallel paths, the first of :attr:`paths`."""
        return self.paths[0]

    def load(self, rate: float) -> dict:
        """Traffic on every edge when the pair moves ``rate`` per direction.

        Parameters
        ----------
        rate : float
            Rate of the copy. [B/s]

        Returns
        -------
        dict
            ``(u, v) -> rate x share``. [B/s]

        Examples
        --------
        >>> from topo import dgx2
        >>> r = route(dgx2(), "gpu0", "gpu1")
        >>> load = r.load(150e9)
        >>> len(load), load["gpu0", "nvswitch3"] / 1e9
        (12, 25.0)
        """
        if isinstance(rate, bool) or not isinstance(rate, (int, float, np.integer, np.floating)) \
                or not math.isfinite(rate) or rate < 0:
            raise RouteError(f"rate must be a finite bandwidth >= 0 [B/s], received {rate!r}")
        return {edge: rate * share for edge, share in zip(self.edges, self.shares)}


def line_rate(G: nx.DiGraph, u: str, v: str) -> float:
    """The edge's line rate per direction, its ``bandwidth`` attribute. [B/s]"""
    return float(G.adj[u][v]["bandwidth"])


def route_bandwidth(G: nx.DiGraph, r: Route, capacity: Callable[[nx.DiGraph, str, str], float] = line_rate) -> tuple:
    """Bottleneck of a route under a per-edge capacity.

    Parameters
    ----------
    G : networkx.DiGraph
        The fabric the route was computed on.
    r : Route
    capacity : callable
        ``capacity(G, u, v)`` -> capacity of the edge per direction [B/s]; for instance
        :func:`line_rate` (default) or :func:`models.engine.nccl.system.nccl_capacity`.

    Returns
    -------
    tuple
        ``(bandwidth, edge)``: ``min over edges of capacity / share`` [B/s] and the edge
        that sets it (``(inf, None)`` for a route without edges).
    """
    best, where = math.inf, None
    for (u, v), share in zip(r.edges, r.shares):
        value = capacity(G, u, v) / share
        if value < best:
            best, where = value, (u, v)
    return best, where


def route(G: nx.DiGraph, src: str, dst: str, *, nvb: bool = False) -> Route:
    """The route of a copy from GPU ``src`` to GPU ``dst`` (see the module docstring).

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric (validated here).
    src, dst : node ids
        GPU nodes of ``G``; equal for a device-local copy (path type LOC, no edges).
    nvb : bool
        Allow NCCL's relay through one intermediate GPU (path type NVB) for pairs without
        an NVLink or NVSwitch path; off by default, as a CUDA peer copy cannot relay.

    Returns
    -------
    Route

    Raises
    ------
    TopologyError
        If ``G`` is not a valid fabric.
    RouteError
        If ``src`` or ``dst`` is not a GPU of ``G``, or the two have neither an NVLink nor
        a PCIe route, nor (on different hosts) NICs on a network between them.
    """
    validate(G)
    return Router(G).route(src, dst, nvb=nvb)


class Router:
    """Routes on one fabric, with per-node searches cached for computing many pairs.

    ``Router(G).route(src, dst, nvb=False)`` is :func:`route` without validating ``G`` again;
    use it for many pairs of one (validated, unchanging) fabric.
    """

    def __init__(self, G: nx.DiGraph):
        self.G = G
        self.kind = dict(G.nodes(data="kind"))
        self.order = {n: i for i, n in enumerate(G)}
        # Per-node views, built on first use: a route reads a few hosts of a large cluster.
        # networkx's own successor dicts, read only (a dict of G.adj[u] is built by a Python call
        # per neighbour, through the view).
        self.adj = G._adj  # noqa: SLF001
        self.nv_succ = LazyTable(lambda u: [v for v, d in self.adj[u].items() if d["kind"] == "nvlink"])
        # In node order of the predecessors, as a pass over the edges would list them.
        self.nv_pred = LazyTable(lambda v: sorted((u for u, d in G.pred[v].items() if d["kind"] == "nvlink"),
                                                  key=self.order.__getitem__))
        self.pcie_adj = LazyTable(lambda u: [v for v, d in self.adj[u].items()
                                             if d["kind"] in ("pcie", "cpu-to-cpu")])
        self._forward: dict = {}
        self._backward: dict = {}
        self._pcie: dict = {}
        self._net_distance: dict = {}
        self._net_flows: dict = {}
        self._net_component: dict = {}
        self._switch_nbrs: dict = {}
        self._nearest: dict = {}
        self._gpus_by_host: dict | None = None

    # -- searches -------------------------------------------------------------------------
    def _switch_distances(self, start, neighbours) -> dict:
        """BFS hop counts from ``start`` expanding only NVSwitches (GPUs are end points)."""
        dist = {start: 0}
        queue = deque([start])
        while queue:
            x = queue.popleft()
            for y in neighbours[x]:
                if y not in dist:
                    dist[y] = dist[x] + 1
                    if self.kind[y] == "nvswitch":
                        queue.append(y)
        return dist

    def forward(self, src: str) -> dict:
        if src not in self._forward:
            self._forward[src] = self._switch_distances(src, self.nv_succ)
        return self._forward[src]

    def backward(self, dst: str) -> tuple:
        """Hop counts to ``dst`` through switches, and the switches at each count."""
        if dst not in self._backward:
            dist = self._switch_distances(dst, self.nv_pred)
            levels: dict = {}
            for node, d in dist.items():
                if self.kind[node] == "nvswitch":
                    levels.setdefault(d, []).append(node)
            self._backward[dst] = (dist, levels)
        return self._backward[dst]

    def pcie_parents(self, src: str) -> dict:
        """BFS tree over PCIe and socket-to-socket edges, through switches and CPUs only."""
        if src not in self._pcie:
            parent = {src: None}
            queue = deque([src])
            while queue:
                x = queue.popleft()
                if x != src and self.kind[x] not in ("pcie_switch", "cpu"):
                    continue
                for y in self.pcie_adj[x]:
                    if y not in parent:
                        parent[y] = x
                        queue.append(y)
            self._pcie[src] = parent
        return self._pcie[src]

    # -- route construction ---------------------------------------------------------------
    def _check(self, node, role):
        if node not in self.kind:
            raise RouteError(f"{role} {node!r} is not a node of the fabric: expected a GPU node "
                             f"such as {next((n for n, k in self.kind.items() if k == 'gpu'), None)!r}")
        if self.kind[node] != "gpu":
            raise RouteError(f"{role} {node!r} is a {self.kind[node]}: expected a GPU node")

    def _make(self, src, dst, path_type, p2p, flow, **extra) -> Route:
        edges = tuple(flow)
        shares = tuple(flow[e] for e in edges)
        adj = self.adj
        arrival = {src: 0.0}
        for u, v in edges:  # edges come in topological order: longest path by relaxation
            t = arrival[u] + adj[u][v]["latency"]
            arrival[v] = max(arrival.get(v, 0.0), t)
        bandwidth, bottleneck = math.inf, None
        for (u, v), share in zip(edges, shares):
            value = adj[u][v]["bandwidth"] / share
            if value < bandwidth:
                bandwidth, bottleneck = value, (u, v)
        return Route(src, dst, path_type, p2p, edges, shares, float(bandwidth), bottleneck,
                     arrival.get(dst, 0.0), **extra)

    def route(self, src: str, dst: str, *, nvb: bool = False) -> Route:
        self._check(src, "source")
        self._check(dst, "destination")
        if src == dst:
            return Route(src, dst, PathType.LOC, True, (), (), math.inf, None, 0.0)
        flow = self.nvlink_flow(src, dst)
        if flow:
            return self._make(src, dst, PathType.NVL, True, flow)
        if nvb:
            relay = self._relay(src, dst)
            if relay is not None:
                return self._make(src, dst, PathType.NVB, True,
                                  {(src, relay): 1.0, (relay, dst): 1.0}, via=relay)
        if self.G.nodes[src]["host"] != self.G.nodes[dst]["host"]:
            return self._network_route(src, dst)
        return self._pcie_route(src, dst)

    def pcie_path(self, src: str, dst: str) -> list:
        """Node path from ``src`` to ``dst`` over PCIe and socket links (``dst`` must be reachable)."""
        parent = self.pcie_parents(src)
        path = [dst]
        while path[-1] != src:
            path.append(parent[path[-1]])
        return path[::-1]

    def pcie_type(self, path: Sequence[str]) -> PathType:
        """NCCL's type of a PCIe node path: PIX, PXB, PHB (through a CPU) or SYS (across sockets).

        The path is classified once, by :func:`topo.pcie.pcie_class` (the classifier nvidia-smi's
        view uses too); NCCL has no NODE: two root ports of one CPU are PHB for it.
        """
        return PathType[_NCCL_PCIE_TYPE[pcie_class(self.G, path)]]

    def nearest_nic(self, gpu: str) -> str | None:
        """The host's network NIC closest to ``gpu`` (best PCIe path type, then index), the NIC
        a route between hosts leaves by; None without one. Cached per GPU."""
        if gpu not in self._nearest:
            self._nearest[gpu] = self._find_nearest_nic(gpu)
        return self._nearest[gpu]

    def _find_nearest_nic(self, gpu):
        parent = self.pcie_parents(gpu)
        best = None
        for nic in parent:
            if self.kind[nic] != "nic" or not any(d["kind"] == "network" for d in self.adj[nic].values()):
                continue
            key = (self.pcie_type(self.pcie_path(gpu, nic)), self.G.nodes[nic]["index"])
            if best is None or key < best[0]:
                best = (key, nic)
        return None if best is None else best[1]

    def nvlink_reaches(self, src: str, dst: str) -> bool:
        """``src`` reaches ``dst`` over NVLink: a direct bundle or a path through NVSwitches."""
        return bool(self.nvlink_flow(src, dst))

    def nvlink_flow(self, src: str, dst: str) -> dict:
        """The flow of :meth:`route` between two distinct GPUs when it is NVLink (path type NVL):
        ``{edge: share}`` of the direct bundle, else of the paths through NVSwitches; empty when
        neither exists. For many pairs, without building their :class:`Route`."""
        if self.adj[src].get(dst, {}).get("kind") == "nvlink":
            return {(src, dst): 1.0}
        return self._switch_flow(src, dst)

    def _network_route(self, src, dst) -> Route:
        """GPU -> nearest NIC -> network -> the NIC nearest dst -> GPU (NCCL's NET transport).

        GPUDirect RDMA when a GPU and its NIC share PCIe switches (path type up to PXB, NCCL's
        default ``netGdrLevel``); otherwise that end is staged through its CPU's memory.
        """
        first, last = self.nearest_nic(src), self.nearest_nic(dst)
        if first is None or last is None:
            G = self.G
            raise RouteError(
                f"GPUs {src!r} (host {G.nodes[src]['host']}) and {dst!r} (host {G.nodes[dst]['host']}) "
                f"are on different hosts without a NIC on a network: expected a cluster fabric "
                f"(topo.cluster) to route between hosts")
        network = self.network_flow(first, last)
        proxy = None
        if network is None:
            proxy, first = self.pxn_proxy(src, last)
            network = self.network_flow(first, last)
        if proxy is None:
            out_path = self.pcie_path(src, first)
            flow = {}
        else:
            out_path = self.pcie_path(proxy, first)
            nvlink = self.route(src, proxy)
            flow = dict(zip(nvlink.edges, nvlink.shares))
        in_path = self.pcie_path(dst, last)[::-1]
        flow.update({e: 1.0 for e in zip(out_path, out_path[1:])})
        flow.update(network)
        flow.update({e: 1.0 for e in zip(in_path, in_path[1:])})
        staged = [g for g, leg in ((out_path[0], out_path), (dst, in_path[::-1]))
                  if self.pcie_type(leg) > P2P_LEVEL]
        host = None
        if staged:
            leg = out_path if staged[0] == out_path[0] else in_path
            host = next(n for n in leg if self.kind[n] == "cpu")
        return self._make(src, dst, PathType.NET, False, flow, host_memory=host, via=proxy)

    def network_component(self, nic: str) -> str | None:
        """An id shared by the NICs that reach each other over the network (one per rail of a
        rail-only fabric, one for a fat tree); None for a NIC without a network port."""
        if nic not in self._net_component:
            if not any(d["kind"] == "network" for d in self.adj[nic].values()):
                self._net_component[nic] = None
            else:
                reached = [n for n in self._network_distances(nic) if self.kind[n] == "nic"]
                label = min(reached, key=self.order.__getitem__)
                for n in reached:
                    self._net_component[n] = label
        return self._net_component[nic]

    def pxn_proxy(self, src: str, nic: str) -> tuple:
        """NCCL's PXN for a GPU whose nearest NIC cannot reach ``nic``: the GPU of ``src``'s host
        it moves the data to over NVLink and that GPU's nearest NIC, which reaches ``nic``.

        Candidates are the host's GPUs that ``src`` reaches over NVLink (directly or through
        NVSwitches) and whose nearest NIC is on ``nic``'s network; the one whose NIC has the
        same index as ``nic`` (the same rail), else the first in fabric order. Without such a
        GPU, NCCL's path to a NIC of that network is the PCIe one (through the CPUs, path
        type PHB or SYS): the proxy is None and the NIC is the one of that network with the
        best PCIe path.

        Returns
        -------
        (node id or None, node id)
            The proxy GPU and the NIC that sends.

        Raises
        ------
        RouteError
            When the host has no NIC on ``nic``'s network.
        """
        target = self.network_component(nic)
        host = self.G.nodes[src]["host"]
        want = self.G.nodes[nic].get("index")
        best = None
        for gpu in self.host_gpus(host):
            if gpu == src:
                continue
            near = self.nearest_nic(gpu)
            if near is None or self.network_component(near) != target:
                continue
            if not self.nvlink_reaches(src, gpu):
                continue
            key = (self.G.nodes[near].get("index") != want, self.order[gpu])
            if best is None or key < best[0]:
                best = (key, gpu, near)
        if best is None:  # no NVLink peer beside that network: the GPU's PCIe path to such a NIC
            parent = self.pcie_parents(src)
            direct = [n for n in parent if self.kind[n] == "nic" and self.network_component(n) == target]
            if direct:
                return None, min(direct, key=lambda n: (self.G.nodes[n].get("index") != want,
                                                        self.pcie_type(self.pcie_path(src, n)),
                                                        self.order[n]))
            raise RouteError(f"no network path from the NICs of {src!r} to {nic!r}, and no GPU of host "
                             f"{host} on that network reachable over NVLink (PXN): expected the NICs on "
                             f"one network, or a rail-only fabric inside NVLink-connected hosts")
        return best[1], best[2]

    def host_gpus(self, host: int) -> list:
        """The GPUs of ``host``, in fabric order."""
        if self._gpus_by_host is None:
            self._gpus_by_host = {}
            for n, data in self.G.nodes(data=True):
                if data["kind"] == "gpu":
                    self._gpus_by_host.setdefault(data["host"], []).append(n)
        return self._gpus_by_host.get(host, [])

    def _network_distances(self, start) -> dict:
        """BFS hop counts over network edges from ``start``, expanding network switches only."""
        if start not in self._net_distance:
            dist = {start: 0}
            queue = deque([start])
            while queue:
                x = queue.popleft()
                for y, d in self.adj[x].items():
                    if d["kind"] == "network" and y not in dist:
                        dist[y] = dist[x] + 1
                        if self.kind[y] == "network_switch":
                            queue.append(y)
            self._net_distance[start] = dist
        return self._net_distance[start]

    def network_flow(self, first: str, last: str) -> dict | None:
        """NIC ``first`` to NIC ``last`` over every shortest network path, split at each switch
        in proportion to the bandwidth of its equal-cost links, as InfiniBand's routing spreads
        destinations over a fat tree's spines (ECMP); None without a path. The switch-to-switch
        part is computed once per pair of edge switches."""
        ends = [self.edge_switch(first), self.edge_switch(last)]
        if ends[0] is None or ends[1] is None:  # NICs joined directly, or several ports: plain BFS
            return self._ecmp(first, last)
        if ends[0] == ends[1]:
            return {(first, ends[0]): 1.0, (ends[0], last): 1.0}
        middle = self.switch_flow(ends[0], ends[1])
        if middle is None:
            return None
        return {(first, ends[0]): 1.0, **middle, (ends[1], last): 1.0}

    def edge_switch(self, nic: str) -> str | None:
        """The network switch a NIC's single port attaches to (its leaf), or None (no port, several
        ports, or a port cabled straight to another NIC)."""
        ports = [y for y, d in self.adj[nic].items() if d["kind"] == "network"]
        return ports[0] if len(ports) == 1 and self.kind[ports[0]] == "network_switch" else None

    def switch_flow(self, a: str, b: str) -> dict | None:
        """Edge switch ``a`` to edge switch ``b`` over every shortest network path, split as
        :meth:`network_flow` splits (per edge, the share of the traffic); cached."""
        if (a, b) not in self._net_flows:
            self._net_flows[a, b] = self._ecmp(a, b)
        return self._net_flows[a, b]

    def _switch_neighbours(self, x) -> list:
        """Network switches cabled to switch ``x`` (NICs are never between two switches)."""
        found = self._switch_nbrs.get(x)
        if found is None:
            kind = self.kind
            found = self._switch_nbrs[x] = [y for y, d in self.adj[x].items()
                                            if d["kind"] == "network" and kind[y] == "network_switch"]
        return found

    def _switch_ecmp(self, a, b):
        """:meth:`_ecmp` between two network switches by a bidirectional breadth-first search.

        Both ends grow one layer at a time, the smaller frontier first, until a new layer of one
        side touches the other side's ball: that meeting layer holds every node halfway along a
        shortest path (both balls are exact within their radii), so only the two balls around
        the ends are explored, not the whole network (a leaf pair of a 1,024-host cluster meets
        two tiers up instead of visiting its 1,248 switches).
        """
        if a == b:
            return {}
        nbrs = self._switch_neighbours
        sides = [[[a]], [[b]]]  # per side, its layers
        seen = [{a: 0}, {b: 0}]
        meet = None
        while meet is None:
            grow = 0 if len(sides[0][-1]) <= len(sides[1][-1]) else 1
            if not sides[grow][-1]:
                grow = 1 - grow
                if not sides[grow][-1]:
                    return None
            ball, other = seen[grow], seen[1 - grow]
            depth = len(sides[grow])
            layer = []
            for x in sides[grow][-1]:
                for y in nbrs(x):
                    if y not in ball:
                        ball[y] = depth
                        layer.append(y)
            sides[grow].append(layer)
            touching = [y for y in layer if y in other]
            if touching:
                meet = set(touching)
            elif not layer and not sides[1 - grow][-1]:
                return None
        # Keep, on each side, the nodes from which the meeting layer is reached layer by layer.
        on_path = []
        for layers, ball in zip(sides, seen):
            keep = [set() for _ in layers]
            top = len(layers) - 1
            while top >= 0 and not (meet & set(layers[top])):
                top -= 1
            keep[top] = meet & set(layers[top])
            for k in range(top - 1, -1, -1):
                above = keep[k + 1]
                keep[k] = {x for x in layers[k] if not above.isdisjoint(nbrs(x))}
            on_path.append(keep[:top + 1])
        path = on_path[0] + on_path[1][::-1][1:]  # a's layers, then b's from the meeting layer down
        adj = self.adj
        flow: dict = {}
        amounts = {a: 1.0}
        for k in range(len(path) - 1):
            following: dict = {}
            nxt = path[k + 1]
            for x, amount in amounts.items():
                out = adj[x]
                hops = [y for y in nbrs(x) if y in nxt]
                total = sum(out[y]["bandwidth"] for y in hops)
                for y in hops:
                    share = amount * out[y]["bandwidth"] / total
                    flow[x, y] = flow.get((x, y), 0.0) + share
                    following[y] = following.get(y, 0.0) + share
            amounts = following
        return flow

    def _ecmp(self, a, b):
        if self.kind[a] == "network_switch" and self.kind[b] == "network_switch":
            return self._switch_ecmp(a, b)
        forward = self._network_distances(a)
        if b not in forward:
            return None
        backward = self._network_distances(b)  # network links run both ways
        distance = forward[b]
        flow: dict = {}
        layer = {a: 1.0}
        for _ in range(distance):
            following: dict = {}
            for x, amount in layer.items():
                out = self.adj[x]
                hops = [y for y, d in out.items() if d["kind"] == "network" and forward.get(y) == forward[x] + 1
                        and backward.get(y) == distance - forward[x] - 1
                        and (y == b or self.kind[y] == "network_switch")]
                total = sum(out[y]["bandwidth"] for y in hops)
                for y in hops:
                    share = amount * out[y]["bandwidth"] / total
                    flow[x, y] = flow.get((x, y), 0.0) + share
                    following[y] = following.get(y, 0.0) + share
            layer = following
        return flow

    def _switch_flow(self, src, dst) -> dict:
        """Spray over all shortest paths through NVSwitches, split by bandwidth at each hop."""
        distance = self.forward(src).get(dst)
        if distance is None or distance < 2:
            return {}
        to_dst, levels = self.backward(dst)
        adj = self.adj
        flow: dict = {}
        layer = {src: 1.0}
        for step in range(distance):
            remaining = distance - step - 1
            candidates = [dst] if remaining == 0 else levels.get(remaining, [])
            following: dict = {}
            for x, amount in layer.items():
                out = adj[x]
                if len(candidates) <= len(out):
                    hops = [(y, d["bandwidth"]) for y in candidates
                            if (d := out.get(y)) is not None and d["kind"] == "nvlink"]
                else:
                    hops = [(y, d["bandwidth"]) for y, d in out.items() if d["kind"] == "nvlink"
                            and to_dst.get(y) == remaining
                            and (y == dst if remaining == 0 else self.kind[y] == "nvswitch")]
                total = sum(bandwidth for _, bandwidth in hops)
                for y, bandwidth in hops:
                    share = amount * bandwidth / total
                    flow[x, y] = flow.get((x, y), 0.0) + share
                    following[y] = following.get(y, 0.0) + share
            layer = following
        return flow

    def _relay(self, src, dst):
        """NCCL's NVB: the intermediate GPU with the widest two-bundle path (then fastest)."""
        G = self.G
        best = None
        for m in self.nv_succ[src]:
            if self.kind[m] != "gpu" or m == dst or not G.has_edge(m, dst):
                continue
            second = G.edges[m, dst]
            if second["kind"] != "nvlink":
                continue
            first = G.edges[src, m]
            key = (-min(first["bandwidth"], second["bandwidth"]),
                   first["latency"] + second["latency"], self.order[m])
            if best is None or key < best[0]:
                best = (key, m)
        return None if best is None else best[1]

    def _pcie_route(self, src, dst) -> Route:
        parent = self.pcie_parents(src)
        if dst not in parent:
            G = self.G
            raise RouteError(
                f"GPUs {src!r} (host {G.nodes[src]['host']}) and {dst!r} (host "
                f"{G.nodes[dst]['host']}) have neither an NVLink nor a PCIe route: expected GPUs "
                f"under the CPUs of one host")
        path = self.pcie_path(src, dst)
        edges = list(zip(path, path[1:]))
        path_type = self.pcie_type(path)
        flow = {e: 1.0 for e in edges}
        if path_type <= P2P_LEVEL:
            return self._make(src, dst, path_type, True, flow)
        # No peer access: staged through the memory of the CPU nearest the destination.
        host = next(n for n in reversed(path) if self.kind[n] == "cpu")
        return self._make(src, dst, path_type, False, flow, host_memory=host)
