"""NCCL's view of a fabric: the hops its channels take and what each link is charged.

NCCL does not see line rates. It charges every link a figure of its own (``topo.h``: per
NVLink ``ncclTopoNVLinkBw(cc)``, per PCIe link ``width x speed / 80``, one figure for a whole
socket-to-socket connection, a NIC its port speed / 8000) and builds its channels against
those figures. :class:`NcclSystem` is that view, built from the graph and one NCCL profile,
and it is the only place in :mod:`models` that turns an edge into an NCCL capacity. The
channel search, the tuning inputs, the point-to-point (alltoall/sendrecv) model, the symmetry
keys of ``subsets`` and P2P's ``nccl_bandwidth`` all read it.

**The edge's own attributes are the truth.** NCCL's figure for a technology is scaled by how
much of that technology's nominal line rate the edge carries::

    capacity = NCCL figure of the connection x bandwidth / (links x line rate of one link)

so a built-in edge (``bandwidth == links x line rate``) gets exactly NCCL's figure, and an
edge that a what-if halved, thinned to one link or set to 1 B/s (``topo.transform``, or by
hand) is charged in proportion: every model downstream sees the same edited fabric.

Hops follow :class:`models.engine.routes.Router`: a direct NVLink bundle (NVL); the parallel NVSwitch
planes, sprayed evenly (NCCL's single aggregated NVSwitch node); else NCCL's relay through
one GPU of the communicator over two NVLink bundles (NVB), since NCCL's system holds only the
communicator's GPUs; else the PCIe / host path (PIX, PXB, PHB, SYS).

References
----------
NVIDIA/nccl v2.27.7-1 src/graph/topo.h (link bandwidth constants, ``ncclTopoNVLinkBw``),
src/graph/topo.cc (``ncclTopoAddPci``: ``width * speed / 80``; ``ncclTopoAddNet``:
``speed / 8000``; ``ncclTopoGetInterCpuBw``), src/graph/paths.cc (path types, NVB relays).

Examples
--------
>>> import topo
>>> from models.engine.nccl.system import NcclSystem
>>> system = NcclSystem(topo.dgx1v())
>>> system.capacity("gpu0", "gpu3") / 1e9, system.capacity("cpu0", "cpu1") / 1e9
(40.0, 6.0)
>>> half = topo.dgx1v()
>>> for u, v in (("gpu0", "gpu3"), ("gpu3", "gpu0")):      # a degraded NV2 bundle
...     half.edges[u, v]["bandwidth"] /= 2
>>> NcclSystem(half).capacity("gpu0", "gpu3") / 1e9
20.0
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx

from topo.cluster import network_nics
from topo.errors import DgxTopoError, TopologyError
from topo.schema import validate as validate_graph
from topo.specs import LINKS

from ..memo import BoundedMemo
from ..results import tidy_records
from ..routes import PathType, Router
from ..symmetry import host_classes
from .profiles import NcclProfile, nccl_profile
from .releases import NvbRelay, Pxn

__all__ = ["NcclSystem", "NetRoute", "NcclSystemError", "nccl_capacity", "INTEL_P2P_OVERHEAD", "link_key",
           "cpu_vendor"]

#: NCCL charges PCIe links 6/5 of the bandwidth on a PHB path through an Intel CPU
#: (``INTEL_P2P_OVERHEAD``, NVIDIA/nccl v2.27.7-1 src/graph/topo.h, v2.9+).
INTEL_P2P_OVERHEAD = 6 / 5


class NcclSystemError(DgxTopoError):
    """NCCL's view cannot be formed: a NIC without a route or a network port."""


@dataclass(frozen=True, slots=True)
class NetRoute:
    """How a GPU reaches a NIC's network port, as NCCL's NET path sees it.

    Attributes
    ----------
    path_type : PathType
        PIX/PXB when the NIC sits under the GPU's PCIe switches (GPUDirect RDMA), PHB/SYS when
        the traffic crosses a CPU and is staged in host memory.
    edges : tuple
        The edges from the GPU to the NIC: PCIe, preceded by the NVLink part of a PXN route;
        empty for ``DIS``.
    port_out, port_in : tuple
        The NIC's network edge leaving the node and the one entering it.
    shares : tuple
        Per edge, the share of the traffic it carries (empty: 1 on every edge).
    inward : bool
        The NIC reaches the GPU the same way back. False for PXN, which NCCL applies only from
        the GPU to the NIC; the NIC to the GPU is then ``DIS``.
    """

    path_type: PathType
    edges: tuple
    port_out: tuple
    port_in: tuple
    shares: tuple = ()
    inward: bool = True

    @property
    def flow(self) -> tuple:
        """``((edge, share), ...)`` from the GPU to the NIC (shares below 1 where an NVLink part
        is sprayed over switch planes)."""
        return tuple(zip(self.edges, self.shares or (1.0,) * len(self.edges)))

    def to_records(self) -> list:
        """Tidy rows (:mod:`models.engine.results`): one per edge from the GPU to the NIC
        (``part`` ``"path"``, with its ``share``), then the NIC's network port out and in
        (``"port_out"``, ``"port_in"``, share 1); each with the route's ``path_type`` and
        ``inward``."""
        parts = ["path"] * len(self.edges) + ["port_out", "port_in"]
        edges = list(self.edges) + [self.port_out, self.port_in]
        shares = [share for _, share in self.flow] + [1.0, 1.0]
        return tidy_records({"part": parts, "u": [str(u) for u, _ in edges], "v": [str(v) for _, v in edges],
                             "share": shares, "path_type": self.path_type.name, "inward": self.inward})


def cpu_vendor(G: nx.DiGraph, gpu: str) -> str:
    """NCCL's CPU vendor of the host of ``gpu`` (``ncclTopoCpuType``, src/graph/topo.cc, reads the
    vendor string of the topology's first CPU): ``"amd"`` or ``"intel"`` by the model of the CPU
    nearest the GPU in its host, else ``"other"`` (an Arm Grace, or a fabric without CPUs); the
    same CPU as NCCL's on any host whose sockets share a vendor, as every built-in one does [U]
    for a host of mixed sockets. It picks the multi-node ``llMaxBws`` row and ``getNetOverhead``
    (src/graph/tuning.cc) of the collectives and of p2p.

    >>> import topo
    >>> [cpu_vendor(topo.build(s), "gpu0") for s in ("dgxa100", "dgxh100", "dgx1v")]
    ['amd', 'intel', 'intel']
    """
    host = G.nodes[gpu].get("host")
    seen, frontier = {gpu}, [gpu]
    while frontier:  # breadth first through the host's PCIe and C2C parts: a few nodes
        step = []
        for node in frontier:
            for other in G.successors(node):
                data = G.nodes[other]
                if other in seen or data.get("host") != host or data.get("kind") in ("gpu", "nvswitch"):
                    continue
                if data.get("kind") == "cpu":
                    model = str(data.get("model", ""))
                    return "amd" if model.startswith("AMD") else "intel" if model.startswith("Intel") else "other"
                seen.add(other)
                step.append(other)
        frontier = step
    return "other"


def _slowest_gpu(G) -> int:
    return min((data["compute_capability"] for _, data in G.nodes(data=True) if data["kind"] == "gpu"),
               default=0)


def _edge_capacity(G, u, v, profile: NcclProfile, fabric_cc: int | None = None) -> float:
    data = G.adj[u][v]
    link = data.get("link")
    if link not in LINKS:
        raise TopologyError(f"edge ({u!r}, {v!r}): NCCL's view needs attribute 'link' naming one of "
                            f"{', '.join(LINKS)}, received {link!r}")
    spec = LINKS[link]
    links = data["links"]
    if data["kind"] == "nvlink":
        ends = [G.nodes[n]["compute_capability"] for n in (u, v) if G.nodes[n]["kind"] == "gpu"]
        # A switch-to-switch trunk is not in NCCL's model at all; it is charged at the rate of
        # the slowest GPU of the fabric.
        cc = min(ends) if ends else (_slowest_gpu(G) if fabric_cc is None else fabric_cc)
        figure = links * profile.nvlink_bandwidth(cc)
    elif data["kind"] == "cpu-to-cpu":
        figure = profile.inter_cpu_bandwidth(link)  # one figure for the whole connection
    else:
        figure = links * profile.link_bandwidth(link)
    return figure * (data["bandwidth"] / (links * spec.bandwidth))


def link_key(data: dict) -> tuple:
    """What NCCL's capacity of an edge reads of its attributes (:func:`_edge_capacity`)."""
    return data["kind"], data.get("link"), data.get("links"), data.get("bandwidth")


def _renamed(charged: tuple, first: tuple, pair: tuple) -> tuple:
    """:meth:`NcclSystem.charged_hop`'s record of hop ``first`` (through switches only: edges
    leaving its first GPU, entering its second) for hop ``pair`` of the same shape."""
    (a0, b0), (a, b) = first, pair
    path_type, charges, width, nhops, ends = charged
    return (path_type, tuple(((a if u == a0 else u, b if v == b0 else v), f) for (u, v), f in charges),
            width, nhops, ends)


def nccl_capacity(G: nx.DiGraph, u: str, v: str, profile: str | NcclProfile | None = None) -> float:
    """NCCL's bandwidth for the directed edge (u, v) under a profile, per direction.

    The profile's figure for the edge's technology (:meth:`NcclProfile.nvlink_bandwidth` per
    NVLink with the compute capability of the GPU end, :meth:`NcclProfile.link_bandwidth` per
    PCIe link or NIC port, :meth:`NcclProfile.inter_cpu_bandwidth` for a whole socket-to-socket
    connection) scaled by ``bandwidth / (links x line rate)`` of the edge (module docstring).
    For many edges of one fabric, build an :class:`NcclSystem` once instead.

    Parameters
    ----------
    G : networkx.DiGraph
    u, v : node ids
    profile : str or NcclProfile, optional

    Returns
    -------
    float
        [B/s]

    Examples
    --------
    >>> import topo
    >>> G = topo.dgx1v()
    >>> nccl_capacity(G, "gpu0", "gpu3") / 1e9, nccl_capacity(G, "gpu0", "gpu3", "2.12.12") / 1e9
    (40.0, 44.0)
    """
    return _edge_capacity(G, u, v, nccl_profile(profile))


class NcclSystem:
    """NCCL's view of one fabric under one profile, shared by every GPU set of it.

    Routes between two GPUs pass through no other GPU except NCCL's NVB relay, so they are
    computed once for the whole fabric and cached; a GPU set decides only which relay GPUs
    exist. The object caches, but what it answers depends only on ``G`` and ``profile``: it is
    held by a :class:`models.engine.fabric.PreparedFabric`, which freezes the graph.

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric (validated here unless ``validate=False``).
    profile : str or NcclProfile, optional
        NCCL version profile (default: the reference version).
    searches : models.engine.memo.BoundedMemo, optional
        Memo of host channel searches by problem content, which fabrics with alike hosts may
        share (a new one by default).
    hosts_alike : bool
        Hosts with the same local node names are copies (a cluster :func:`topo.build` joined and
        nobody edited since): :meth:`host_kind` need not compare them.

    Attributes
    ----------
    G : networkx.DiGraph
    profile : NcclProfile
    router : models.engine.routes.Router
    intel : bool
        Every CPU is an Intel part (NCCL's PHB overhead applies).
    searches : models.engine.memo.BoundedMemo
        Host channel searches by problem content (:mod:`models.engine.nccl.search`).
    problems : models.engine.memo.BoundedMemo
        The channel search's problems (routed hops, numbered edges) and their content keys, by
        ``(GPUs, NICs)`` of a host (:mod:`models.engine.nccl.search`).
    host_searches : dict
        Searches of host shapes of a cluster, ``(host kind, shape, bounds) -> (host,
        ChannelSearch)`` (:meth:`host_kind`).
    hosts_alike : bool
        Hosts with the same local node names are copies (the parameter).
    views : dict
        MNNVL views of this fabric by fused hosts and the communicator's hosts
        (:func:`models.engine.nccl.channels.nccl_view`).
    clique_of : dict
        Every GPU's NVLink domain, numbered (:func:`models.engine.nccl.channels.nccl_view` fills
        it on first use from :func:`models.engine.nccl.nvls.nvlink_cliques` of all GPUs).
    split : dict
        In an MNNVL view whose switch chips were merged: merged node -> ((chip, share), ...).
    network_loads : dict
        The network's charge of channel sets (:func:`models.predict.network.network_load`), and
        under the key ``"tiers"`` the switch tiers it charges by (``TierView``).
    """

    def __init__(self, G: nx.DiGraph, profile: str | NcclProfile | None = None, *, validate: bool = True,
                 searches: BoundedMemo | None = None, hosts_alike: bool = False):
        if validate:
            validate_graph(G)
        self.G = G
        self.profile = nccl_profile(profile)
        self.router = Router(G)
        self.intel = all("Intel" in str(G.nodes[c].get("model", "Intel"))
                         for c, k in G.nodes(data="kind") if k == "cpu")
        self._fabric_cc = _slowest_gpu(G)
        self._order = {n: i for i, n in enumerate(G)}
        self._routes: dict = {}
        self._net_routes: dict = {}
        self._pxn_proxies: dict = {}
        self._ports: dict = {}
        self._dis: dict = {}
        self._relays: dict = {}
        self._capacity: dict = {}
        self._charged: dict = {}
        self._signatures: dict = {}  # (GPU, True): its side of a switch hop's shape leaving it; (GPU, False): entering it
        self._shapes: dict = {}  # a switch hop's shape -> the first hop of it, () when it is no hop through switches
        self.searches = BoundedMemo(256) if searches is None else searches
        # A problem is the size of its GPU set squared: the recent ones are the ones asked again
        # (a set's ring then tree search, its next estimate).
        self.problems = BoundedMemo(64)
        self.host_searches: dict = {}
        self.hosts_alike = hosts_alike
        self._host_kinds: dict = {}
        self.views: dict = {}
        self.clique_of: dict = {}
        self.split: dict = {}
        self.network_loads: dict = {}
        self._network_nics: dict = {}  # host (None: every host) -> its NICs on a network
        self._nvlink_leaving: frozenset | None = None  # hosts an NVLink leaves (:meth:`nvlink_leaves`)
        # What models.predict.measure reads of the fabric for every estimate across hosts (the
        # network's link classes, each NIC's path), found once per fabric: keyed by its arguments.
        self.measure_facts: dict = {}

    def capacity(self, u: str, v: str) -> float:
        """NCCL's charge for the directed edge (u, v) (:func:`nccl_capacity`). [B/s]"""
        value = self._capacity.get((u, v))
        if value is None:
            value = self._capacity[u, v] = _edge_capacity(self.G, u, v, self.profile, self._fabric_cc)
        return value

    def network_nics(self, host: int | None = None) -> tuple:
        """:func:`topo.cluster.network_nics` of the graph (NCCL's NET nodes of ``host``, of
        every host if None, in (host, index) order), listed once per fabric: the list scans
        every node."""
        cache = self._network_nics
        if not cache:
            every = cache[None] = tuple(network_nics(self.G))
            for n in every:
                cache.setdefault(self.G.nodes[n]["host"], []).append(n)
            for h in list(cache):
                cache[h] = tuple(cache[h])
        return cache.get(host, ())

    def nvlink_leaves(self, hosts: Iterable[int]) -> bool:
        """Whether an NVLink leaves a GPU or NVSwitch of one of ``hosts`` for a GPU or NVSwitch of
        another host (the hosts it leaves are found once per fabric: one scan of the edges)."""
        if self._nvlink_leaving is None:
            G, kind = self.G, self.router.kind
            fabric_nodes = ("gpu", "nvswitch")
            host_of = {n: data.get("host") for n, data in G.nodes(data=True) if data["kind"] in fabric_nodes}
            leaving = set()
            for u, neighbours in G.adjacency():
                if u not in host_of:
                    continue
                host = host_of[u]
                for v, data in neighbours.items():
                    if data["kind"] == "nvlink" and kind[v] in fabric_nodes and host_of[v] != host:
                        leaving.add(host)
                        break
            self._nvlink_leaving = frozenset(leaving)
        return not self._nvlink_leaving.isdisjoint(hosts)

    def host_kind(self, host: int) -> int:
        """A number shared by the hosts that are copies of each other as a host's channel search
        sees them: the same nodes, links and attributes under their local names, and links of the
        same attributes to nodes of the same kinds outside
        (:func:`models.engine.symmetry.host_classes` with ``outside="kind"``). A search of one
        applies to the others. With :attr:`hosts_alike` every host is of kind 0 (hosts whose
        local names differ, as the trays of a rack, are then told apart by their names).
        """
        if self.hosts_alike:
            return 0
        if not self._host_kinds:
            self._host_kinds.update((h, k) for k, hosts in enumerate(host_classes(self.G, outside="kind"))
                                    for h in hosts)
        return self._host_kinds.get(host, -1)

    def pcie_overhead(self, path_type: PathType) -> float:
        """Multiplier NCCL's search applies to PCIe links of a path of this type (6/5 on PHB
        through Intel CPUs, otherwise 1)."""
        return INTEL_P2P_OVERHEAD if self.intel and path_type == PathType.PHB else 1.0

    def _relay_order(self, a, b) -> list:
        """GPUs that can relay a -> b over two NVLink bundles, best first (as the router picks)."""
        if (a, b) not in self._relays:
            G = self.G
            found = []
            for m, first in G.adj[a].items():
                second = G.adj[m].get(b)
                if (m != b and G.nodes[m]["kind"] == "gpu" and first["kind"] == "nvlink"
                        and second is not None and second["kind"] == "nvlink"):
                    key = (-min(first["bandwidth"], second["bandwidth"]),
                           first["latency"] + second["latency"], self._order[m])
                    found.append((key, m))
            self._relays[a, b] = [m for _, m in sorted(found)]
        return self._relays[a, b]

    def hop(self, a: str, b: str, members: Iterable[str] = ()) -> tuple:
        """How NCCL's channel goes from GPU ``a`` to GPU ``b`` in a communicator.

        Parameters
        ----------
        a, b : node ids
            GPUs of one host.
        members : collection of node ids
            The communicator's GPUs (the relays NCCL may use); empty: no relay. A release without
            NVB paths (:attr:`NvbRelay.NONE <models.engine.nccl.releases.NvbRelay>`, before v2.8)
            relays through none of them.

        Returns
        -------
        tuple
            ``(path type, ((edge, share), ...))``: every edge the hop crosses and the share of
            the hop's traffic it carries (1 on a single path; 1/k on k parallel switch planes).
        """
        if (a, b) not in self._routes:
            flow = self.router.nvlink_flow(a, b) if a != b else None
            if flow:  # the route's flow, without building the Route
                self._routes[a, b] = (PathType.NVL, tuple(flow.items()))
            else:
                r = self.router.route(a, b, nvb=False)
                self._routes[a, b] = (r.path_type, tuple(zip(r.edges, r.shares)))
        path_type, flow = self._routes[a, b]
        if path_type == PathType.NVL or self.profile.behaviour.nvb is NvbRelay.NONE:
            return path_type, flow
        for m in self._relay_order(a, b):
            if m in members:
                return PathType.NVB, (((a, m), 1.0), ((m, b), 1.0))
        return path_type, flow

    def charge(self, flow: tuple, overhead: float) -> tuple:
        """What a hop of ``flow`` (``((edge, share), ...)``) books in NCCL's search.

        Parameters
        ----------
        flow : tuple
            ``((edge, share), ...)`` as :meth:`hop` gives it.
        overhead : float
            The multiplier of PCIe edges (:meth:`pcie_overhead` of the hop's path type).

        Returns
        -------
        tuple
            ``(((edge, multiplier), ...), width, hops)``: per edge the share times ``overhead``
            on PCIe; the hop's width, ``min(capacity / multiplier)`` [B/s]; and its hops (the
            shares add up to the hops of one path, as parallel switch paths are equally long).
        """
        adj, known = self.router.adj, self._capacity
        charges, width = [], math.inf
        for edge, share in flow:
            u, v = edge
            factor = share * (overhead if adj[u][v]["kind"] == "pcie" else 1.0)
            charges.append((edge, factor))
            capacity = known.get(edge)
            if capacity is None:
                capacity = self.capacity(u, v)
            width = min(width, capacity / factor)
        return tuple(charges), width, round(sum(f for _, f in flow))

    def charged_hop(self, a: str, b: str, members: Iterable[str] = ()) -> tuple:
        """:meth:`hop` as NCCL's search books it, computed once per hop of the fabric:
        ``(path type, ((edge, multiplier), ...), width, hops, (leaving, entering))``
        (:meth:`charge`); ``leaving`` and ``entering`` are the positions of the edges that leave
        ``a`` and of those that enter ``b``.

        A hop through one tier of NVSwitches is a function of ``a``'s NVLinks to switches and
        ``b``'s from them (:meth:`_switch_shape`): the hops of one shape are the first one's,
        renamed (:func:`_renamed`), not routed again. On an NVSwitch host every GPU pair is of one
        shape (GB200 NVL72: 5,112 hops, one routed)."""
        shape = self._switch_shape(a, b)
        first = None if shape is None else self._shapes.get(shape)
        if first:  # a hop of the same shape through the same switches: its charges renamed
            found = self._charged.get((a, b))
            if found is None:
                found = self._charged[a, b] = _renamed(self._charged[first], first, (a, b))
            return found
        path_type, flow = self.hop(a, b, members)
        key = (a, b, flow[0][0][1]) if path_type == PathType.NVB else (a, b)
        found = self._charged.get(key)
        if found is None:
            ends = (tuple(e for e, ((u, _), _) in enumerate(flow) if u == a),
                    tuple(e for e, ((_, v), _) in enumerate(flow) if v == b))
            found = self._charged[key] = (path_type, *self.charge(flow, self.pcie_overhead(path_type)), ends)
        if shape is not None and first is None:  # the first of its shape: the others rename it if it is a switch hop
            kind = self.router.kind
            switched = path_type == PathType.NVL and all(
                (u == a and kind[v] == "nvswitch") or (v == b and kind[u] == "nvswitch") for (u, v), _ in found[1])
            self._shapes[shape] = (a, b) if switched else ()
        return found

    def _switch_shape(self, a: str, b: str) -> tuple | None:
        """What NCCL's hop from GPU ``a`` to GPU ``b`` through one tier of NVSwitches depends on, or
        None where it may depend on more (the same GPU; a direct NVLink between them).

        :meth:`Router.nvlink_flow <models.engine.routes.Router.nvlink_flow>` sprays such a hop
        over the switches that ``a`` reaches and that reach ``b``, split by the bandwidth of
        ``a``'s links, in the order of ``a``'s adjacency or of ``b``'s predecessors (whichever
        list is shorter); :meth:`charge` books each edge at its capacity, which reads the edge's
        attributes and the compute capability of its GPU end. So the shape is: ``a``'s number of
        neighbours, compute capability and NVLinks to switches (in adjacency order, with their
        attributes), and ``b``'s compute capability and NVLinks from switches (in predecessor
        order). Two hops of one shape through one tier of switches cross the same switches in
        the same order with the same charges, ``a`` and ``b`` renamed.
        """
        if a == b:
            return None
        router = self.router
        out = router.adj[a]
        direct = out.get(b)
        if direct is not None and direct["kind"] == "nvlink":
            return None
        signatures = self._signatures
        key_a, key_b = (a, True), (b, False)
        if key_a not in signatures:
            signatures[key_a] = (len(out), self.G.nodes[a].get("compute_capability"),
                                 tuple((v, *link_key(d)) for v, d in out.items()
                                       if d["kind"] == "nvlink" and router.kind[v] == "nvswitch"))
        if key_b not in signatures:
            into = router.adj
            signatures[key_b] = (self.G.nodes[b].get("compute_capability"),
                                 tuple((u, *link_key(into[u][b])) for u in router.nv_pred[b]
                                       if router.kind[u] == "nvswitch"))
        shape_a, shape_b = signatures[key_a], signatures[key_b]
        if not shape_a[2] or not shape_b[1]:  # no switch on one side: no hop through switches
            return None
        return shape_a, shape_b

    def charged_net(self, gpu: str, nic: str) -> tuple:
        """``(route, out, back)``: :meth:`net_route` and what its two directions book, GPU to NIC
        then its port out, and the port in then NIC to GPU (each as :meth:`charge` gives it),
        computed once per GPU and NIC."""
        key = ("net", gpu, nic)
        found = self._charged.get(key)
        if found is None:
            route = self.net_route(gpu, nic)
            overhead = self.pcie_overhead(route.path_type)
            out = (*route.flow, (route.port_out, 1.0))
            back = ((route.port_in, 1.0), *(((v, u), f) for (u, v), f in reversed(route.flow)))
            found = self._charged[key] = (route, self.charge(out, overhead), self.charge(back, overhead))
        return found

    def net_route(self, gpu: str, nic: str) -> NetRoute:
        """How a GPU reaches a NIC and the NIC's network port (:class:`NetRoute`).

        The PCIe route when the NIC is under the GPU's CPUs. Otherwise (a NIC of another host of
        a multi-node NVLink domain, fused into one NCCL node) NCCL's PXN when the profile has it:
        over NVLink to the NIC's own GPU, then that GPU's PCIe route, provided it is no worse than
        PXB and only from the GPU to the NIC (NVIDIA/nccl v2.27.7-1 src/graph/paths.cc,
        ``ncclTopoComputePaths``; a GB200 tray's NIC behind the Grace CPU is PHB, so no PXN
        there). Else the NIC is unreachable from that GPU: path type ``DIS``, which NCCL's search
        never uses.

        Raises
        ------
        NcclSystemError
            When the NIC has no network link.
        """
        key = (gpu, nic)
        if key not in self._net_routes:
            port = self._ports.get(nic)
            if port is None:
                ports = [v for v, d in self.G.adj[nic].items() if d["kind"] == "network"]
                if not ports:
                    raise NcclSystemError(f"NIC {nic!r} has no network link: expected a cluster fabric")
                port = self._ports[nic] = ports[0]
            port_out, port_in = (nic, port), (port, nic)
            router = self.router
            if nic in router.pcie_parents(gpu):
                path = router.pcie_path(gpu, nic)
                route = NetRoute(router.pcie_type(path), tuple(zip(path, path[1:])), port_out, port_in)
            else:
                route = self._pxn_route(gpu, nic, port_out, port_in)
            self._net_routes[key] = route
        return self._net_routes[key]

    def _pxn_route(self, gpu, nic, port_out, port_in) -> NetRoute:
        router = self.router
        if self.profile.behaviour.pxn is Pxn.NVLINK_PEER:
            if nic not in self._pxn_proxies:  # the NIC's own GPUs within PXB, best first
                self._pxn_proxies[nic] = [p for t, _, p in sorted(
                    (router.pcie_type(router.pcie_path(p, nic)), self._order[p], p)
                    for p in router.host_gpus(self.G.nodes[nic]["host"])
                    if nic in router.pcie_parents(p)) if t <= PathType.PXB]
            if not self._pxn_proxies[nic]:  # no GPU of the NIC within PXB: DIS from every other
                return self._unreachable(nic, port_out, port_in)
            for proxy in self._pxn_proxies[nic]:
                if proxy != gpu and router.nvlink_reaches(gpu, proxy):
                    nvlink = router.route(gpu, proxy)
                    path = router.pcie_path(proxy, nic)
                    edges = tuple(nvlink.edges) + tuple(zip(path, path[1:]))
                    shares = tuple(nvlink.shares) + (1.0,) * (len(path) - 1)
                    return NetRoute(PathType.PXN, edges, port_out, port_in, shares, inward=False)
        return self._unreachable(nic, port_out, port_in)

    def _unreachable(self, nic, port_out, port_in) -> NetRoute:
        route = self._dis.get(nic)
        if route is None:
            route = self._dis[nic] = NetRoute(PathType.DIS, (), port_out, port_in, inward=False)
        return route
