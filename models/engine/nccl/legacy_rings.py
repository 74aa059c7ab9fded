"""NCCL 2.0-2.4 ring construction: rings from NVLink counts, before the topology search.

Before v2.5, NCCL had no topology graph, no bandwidth figures and no search over paths. It
counted NVLinks between GPU pairs and searched rings over them (NVIDIA/nccl v2.3.7-1
src/init.cu ``initTransportsRank``, src/misc/rings.cu ``ncclGetRings``, src/transport/p2p.cu
``p2pGetRings`` / ``computeRingsRec``, src/include/nvlink.h ``getNvlinkGpu``; unchanged through
v2.4.8-1). This module replays it on a fabric graph:

1. **Connect values** (``canConnect``): a pair joined by NVLink gets ``0x10 x links`` (the
   edge's ``links``); a GPU with NVSwitch links gets ``0x100 x`` its NVSwitch link count for
   every peer; a pair without NVLink is P2P over PCIe when its path stays below the host
   bridge's root complex (PIX, PXB, PHB), otherwise it falls to shared memory (SHM).
2. **P2P domains**: connected components of the P2P pairs (transitively).
3. **Rings** (``p2pGetRings``), for one domain:

   - NVSwitch: ``min(16, NVSwitch links)`` rings in index order, copied x2 (cap 16);
   - NVLink: an exhaustive depth-first search for Hamiltonian cycles from rank 0, each
     directed NVLink carrying as many rings as it has links; the first set with the most
     rings wins. With 4 ranks or fewer and fewer rings than requested it is rerun with every
     capacity doubled, kept if it more than doubles the count. The rings are then copied x2
     (cap 16). There is **no relay through a GPU and no PCIe fallback**: if no NVLink ring
     covers the set, no ring is found;
   - PCIe only (no NVLink in the domain): one greedy ring by P2P score.

   When nothing is found NCCL warns "Could not create rings, falling back on simple ring"
   and builds **one ring in rank order** whose hops take whatever transport the pair has:
   NVLink, or shared memory through the CPUs (:attr:`LegacyRings.shm_hops`, named in the
   trace: the sender's kernel stores into the receiver's buffer in host memory, the
   receiver's kernel loads it back; on a DGX-1 every such hop crosses the sockets). The
   hop is charged on the PCIe and socket edges it crosses like any other; what it achieves
   is discussed in :mod:`models.predict.measure` ("NCCL 2.3 on a P100 DGX-1").
4. **Threads**: 256, halved to 128 on Pascal when the NVLink search ran (v2.3 only).

No trees, no LL128, no NVB relays in these releases. The ring's per-channel bandwidth for
the tuning model is what the rings' hops leave when they share the fabric's links, each edge
charged :meth:`models.engine.nccl.system.NcclSystem.capacity` (the edge's own ``bandwidth`` through
the profile), so a what-if graph changes both the rings (through ``links``) and their rate.

Simplified [U]: several P2P domains on one node (an SHM ring chaining them) are taken as one
ring in rank order; across nodes, one ring per NIC of the node (``netGetRings``), each
entering at the GPU nearest its NIC and running through the node by the NVLink search
constrained to start there (any end), or in rank order when none exists.

Examples
--------
>>> import topo
>>> from models.engine.nccl.system import NcclSystem
>>> fabric = NcclSystem(topo.dgx1(), "2.3.7")
>>> rings = legacy_rings(fabric, [f"gpu{i}" for i in range(4)])
>>> rings.nchannels, rings.nthreads, rings.search.channels[0]
(12, 128, ('gpu0', 'gpu1', 'gpu2', 'gpu3'))
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from networkx.utils import UnionFind

from topo.errors import DgxTopoError

from ..routes import PathType
from .releases import LegacyNodeRings, LegacyThreads
from .search import ChannelSearch, LinkLoad, SearchStep
from .system import NcclSystem
from .tuning import ChannelGraph

__all__ = ["LegacyRingsError", "LegacyRings", "legacy_rings", "nvlink_rings"]

# P2P connect scores over PCIe, 1 + PATH_SOC - pciDistance (p2p.cu v2.3.7): PIX 4, PXB 3, PHB 2.
_PCI_SCORE = MappingProxyType({PathType.PIX: 4, PathType.PXB: 3, PathType.PHB: 2})
# NCCL_MAX_SCORE (nccl_net.h): minScore starts here.
_MAX_SCORE = 7


class LegacyRingsError(DgxTopoError):
    """The pre-2.5 ring construction cannot run (wrong profile, not GPUs)."""


@dataclass(frozen=True, slots=True)
class LegacyRings:
    """The rings NCCL 2.0-2.4 builds for a set of GPUs.

    Attributes
    ----------
    search : ChannelSearch
        The rings as the channel search's result type (channels, loads, trace), for the
        estimate, ``--explain`` and the channel plot.
    nthreads : int
        ``comm->nThreads``: 256, or 128 on Pascal NVLink rings (v2.3).
    fallback : bool
        No ring was found and NCCL fell back to one ring in rank order.
    shm_hops : tuple of (node, node)
        Hops of the rings that go through shared memory (pairs with neither NVLink nor PCIe
        P2P: the sender's kernel stores into a buffer in host memory, the receiver's kernel
        loads it back), in ring order; empty when every hop is P2P.
    """

    search: ChannelSearch
    nthreads: int
    fallback: bool
    shm_hops: tuple = ()

    @property
    def nchannels(self) -> int:
        """Number of rings."""
        return self.search.nchannels

    def to_records(self) -> list:
        """Tidy rows, one per ring: :meth:`ChannelSearch.to_records`' columns, then
        ``nthreads``, ``fallback`` and ``shm_hops`` (how many of the ring's hops go through
        shared memory)."""
        shm = set(self.shm_hops)
        return [{**row, "nthreads": self.nthreads, "fallback": self.fallback,
                 "shm_hops": sum((a, b) in shm for a, b in zip(ring, ring[1:] + ring[:1]))}
                for row, ring in zip(self.search.to_records(), self.search.channels)]

    def graph(self) -> ChannelGraph:
        """The tuning model's view: rings x the rate their shared links leave each ring."""
        s = self.search
        return ChannelGraph(s.nchannels, s.bw_intra, s.type_intra.name, type_inter=s.type_inter.name,
                            pattern="ring", same_channels=s.same_channels, nthreads=self.nthreads)


def nvlink_rings(capacity, requested: int = 16, start: int = 0, end: int | None = None) -> list:
    """NCCL's exhaustive NVLink ring search (``computeRingsRec``, p2p.cu v2.3.7).

    Parameters
    ----------
    capacity : list of list of int
        ``capacity[i][j]``: rings the directed link i -> j can carry (its NVLink count).
    requested : int
        Stop as soon as this many rings are found (16).
    start : int
        Every ring starts at this rank (0).
    end : int, optional
        Constrained mode: paths from ``start`` to ``end`` instead of cycles (any end if
        ``end == -1``).

    Returns
    -------
    list of tuple of int
        The first set (in depth-first order, lower ranks first) with the most rings.

    Examples
    --------
    >>> k4 = [[0 if i == j else 1 for j in range(4)] for i in range(4)]
    >>> nvlink_rings(k4)
    [(0, 1, 2, 3), (0, 3, 2, 1)]
    """
    n = len(capacity)
    cap = [list(row) for row in capacity]
    best: list = []
    current: list = []

    def paths():
        """Every Hamiltonian cycle (or path) from ``start`` over links with capacity left."""
        order = [start]
        seen = [False] * n
        seen[start] = True

        def extend():
            last = order[-1]
            if len(order) == n:
                if end is None:
                    if cap[last][start] > 0:
                        yield tuple(order)
                elif end == -1 or last == end:
                    yield tuple(order)
                return
            for j in range(n):
                if not seen[j] and cap[last][j] > 0 and (end in (None, -1) or j != end or len(order) == n - 1):
                    seen[j] = True
                    order.append(j)
                    yield from extend()
                    order.pop()
                    seen[j] = False

        yield from extend()

    def hops(ring):
        pairs = list(zip(ring, ring[1:]))
        return pairs + [(ring[-1], ring[0])] if end is None else pairs

    def bound() -> int:
        """Rings that can still be added: each uses one outgoing link of every rank."""
        if n == 1:
            return 0
        outs = [sum(cap[i]) for i in range(n) if end is None or i != end]
        return min(outs) if outs else 0

    def rec() -> bool:
        nonlocal best
        if len(current) > len(best):
            best = list(current)
            if len(best) >= requested:
                return True
        if len(current) + bound() <= len(best):
            return False           # cannot strictly beat the best: NCCL would not replace it
        for ring in list(paths()):
            if any(cap[a][b] <= 0 for a, b in hops(ring)):
                continue
            for a, b in hops(ring):
                cap[a][b] -= 1
            current.append(ring)
            done = rec()
            current.pop()
            for a, b in hops(ring):
                cap[a][b] += 1
            if done:
                return True
        return False

    if n > 1:
        rec()
    return best


def _copy(rings: list, total: int, cap: int) -> list:
    """``copyRings``: repeat the rings up to ``min(total, cap)``."""
    count = min(total, cap)
    return [rings[i % len(rings)] for i in range(count)] if rings else []


def legacy_rings(fabric: NcclSystem, nodes) -> LegacyRings:
    """The rings NCCL 2.0-2.4 builds for GPUs ``nodes`` (see the module docstring).

    Parameters
    ----------
    fabric : NcclSystem
        The fabric under a pre-2.5 profile (its ``legacy`` constants are used).
    nodes : sequence of node ids
        GPUs in rank order (index order, hosts first).

    Returns
    -------
    LegacyRings

    Raises
    ------
    LegacyRingsError
        When the profile has no pre-2.5 ring construction or a node is not a GPU.
    """
    profile = fabric.profile
    legacy = profile.legacy
    if legacy is None:
        raise LegacyRingsError(f"NCCL {profile.version} builds rings with the topology search: "
                               f"expected a profile before 2.5 (2.0-2.4) for the ring construction")
    G = fabric.G
    nodes = list(nodes)
    for node in nodes:
        if node not in G or G.nodes[node].get("kind") != "gpu":
            raise LegacyRingsError(f"expected GPU nodes of the fabric, received {node!r}")
    hosts: dict = {}
    for node in nodes:
        hosts.setdefault(G.nodes[node].get("host", 0), []).append(node)
    if len(hosts) > 1:
        return _multi_node(fabric, hosts)
    return _single_node(fabric, nodes)


# ------------------------------------------------------------------------------ one node
def _nvswitch_links(G, gpu) -> int:
    return sum(d["links"] for v, d in G.adj[gpu].items()
               if d["kind"] == "nvlink" and G.nodes[v]["kind"] == "nvswitch")


def _nvlinks(G, a, b) -> int:
    d = G.adj[a].get(b)
    return d["links"] if d is not None and d["kind"] == "nvlink" else 0


def _pci_score(fabric, a, b) -> int:
    """P2P score of a pair without NVLink (0: not P2P, the pair uses SHM)."""
    return _PCI_SCORE.get(fabric.hop(a, b, ())[0], 0)


def _domains(fabric, nodes) -> list:
    """P2P domains: connected components of the pairs with transport P2P (fillCoords)."""
    G = fabric.G
    components = UnionFind(nodes)
    for a in nodes:
        for b in nodes:
            if a != b and (_nvlinks(G, a, b) or _nvswitch_links(G, a) or _pci_score(fabric, a, b)):
                components.union(a, b)
    groups: dict = {}  # in the order of each domain's first GPU
    for n in nodes:
        groups.setdefault(components[n], []).append(n)
    return list(groups.values())


def _single_node(fabric, nodes) -> LegacyRings:
    G, legacy, behaviour = fabric.G, fabric.profile.legacy, fabric.profile.behaviour
    n = len(nodes)
    cc = min(G.nodes[g]["compute_capability"] for g in nodes)
    threads = legacy.default_threads
    trace = []
    rings: list = []
    duplicated = False
    domains = _domains(fabric, nodes)
    if n == 1:
        rings = [(0,)]
    elif len(domains) > 1:
        trace.append(SearchStep("domains", count=len(domains)))
    else:
        switch_links = [_nvswitch_links(G, g) for g in nodes]
        links = [[_nvlinks(G, a, b) if a != b else 0 for b in nodes] for a in nodes]
        if all(switch_links):
            if len(set(switch_links)) > 1:
                raise LegacyRingsError(f"NVswitch links mismatch: {dict(zip(nodes, switch_links))} "
                                       f"(NCCL: Internal error); expected one count on every GPU")
            found = min(legacy.max_rings, switch_links[0])
            rings = _copy([tuple(range(n))] * found, 2 * found, legacy.max_rings)
            duplicated = True
            trace.append(SearchStep("nvswitch", count=len(rings), limit=found))
        elif min(sum(row) for row in links) > 0:
            found = nvlink_rings(links, legacy.max_rings)
            trace.append(SearchStep("nvlink_search", count=len(found)))
            if 0 < len(found) < legacy.max_rings and n <= legacy.oversubscribe_max_ranks:
                doubled = nvlink_rings([[2 * c for c in row] for row in links], legacy.max_rings)
                keep = len(doubled) > 2 * len(found)
                trace.append(SearchStep("oversubscribed", count=len(doubled), limit=2 * len(found), kept=keep))
                if keep:
                    found = doubled
            if found:
                rings = _copy(found, 2 * len(found), legacy.max_rings)
                duplicated = True
                trace.append(SearchStep("copied", count=len(rings)))
            if behaviour.legacy_threads is LegacyThreads.HALF_ON_PASCAL_NVLINK and cc // 10 == 6:
                threads //= 2
                trace.append(SearchStep("pascal_threads", count=threads))
        elif not any(any(row) for row in links):
            rings = [_pci_ring(fabric, nodes)]
            trace.append(SearchStep("pcie"))
    fallback = not rings
    shm: tuple = ()
    if fallback:
        rings = [tuple(range(n))]
        trace.append(SearchStep("simple_ring"))
        shm = _shm_hops(fabric, nodes, rings[0])
        if shm:
            trace.append(SearchStep("shared_memory", names=tuple(shm)))
    return LegacyRings(_result(fabric, nodes, rings, duplicated, trace), threads, fallback, shm)


def _shm_hops(fabric, nodes, ring) -> tuple:
    """Hops of a ring whose pair is neither NVLink nor PCIe P2P: ``selectTransport`` takes the
    first of P2P, SHM, NET that can connect the pair (NVIDIA/nccl v2.3.7-1 src/transport.cu),
    and ``p2pCanConnect`` refuses a pair without NVLink whose PCIe distance is SOC (p2p.cu)."""
    if len(ring) < 2:
        return ()
    order = [nodes[i] for i in ring]
    return tuple((a, b) for a, b in zip(order, order[1:] + order[:1])
                 if not _nvlinks(fabric.G, a, b) and not _nvswitch_links(fabric.G, a)
                 and not _pci_score(fabric, a, b))


def _pci_ring(fabric, nodes) -> tuple:
    """``p2pComputeRingsPci``: greedy by P2P score, lowering minScore until the ring closes."""
    n = len(nodes)
    score = [[_pci_score(fabric, a, b) if a != b else 0 for b in nodes] for a in nodes]
    for min_score in range(_MAX_SCORE, 0, -1):
        order = [0]
        while len(order) < n:
            options = [j for j in range(n) if j not in order and score[order[-1]][j] >= min_score]
            if not options:
                break
            order.append(max(options, key=lambda j: (score[order[-1]][j], -j)))  # [U] ties: lowest
        if len(order) == n and score[order[-1]][0] >= min_score:
            return tuple(order)
    return tuple(range(n))


def _result(fabric, nodes, rings, duplicated, trace, nets=None, nnodes=1) -> ChannelSearch:
    """Rings as a :class:`ChannelSearch`: the rate each ring gets when all share the links."""
    load: dict = {}
    worst = PathType.LOC
    for c, ring in enumerate(rings):
        order = [nodes[i] for i in ring]
        hops = list(zip(order, order[1:]))
        if nets is None and len(order) > 1:
            hops.append((order[-1], order[0]))
        for a, b in hops:
            if fabric.G.nodes[a].get("host") != fabric.G.nodes[b].get("host"):
                continue
            path_type, flow = fabric.hop(a, b, ())          # no relay through a GPU before v2.8
            worst = max(worst, path_type)
            for edge, share in flow:
                load[edge] = load.get(edge, 0.0) + share
        if nets is not None:
            entry, leave = nets[c]
            for gpu, nic, inbound in ((order[0], entry, True), (order[-1], leave, False)):
                route = fabric.net_route(gpu, nic)
                edges = [(v, u) for u, v in reversed(route.edges)] if inbound else list(route.edges)
                edges.append(route.port_in if inbound else route.port_out)
                for edge in edges:
                    load[edge] = load.get(edge, 0.0) + 1.0
    if load:
        rate = min(fabric.capacity(*edge) / share for edge, share in load.items())
    else:
        rate = fabric.profile.loc_bandwidth
    loads = sorted((LinkLoad(edge, rate * share, fabric.capacity(*edge)) for edge, share in load.items()),
                   key=lambda item: -item.utilisation)
    trace.append(SearchStep("ring_rate", speed=float(rate), count=len(rings)))
    channels = tuple(tuple(nodes[i] for i in ring) for ring in rings)
    return ChannelSearch("ring", tuple(nodes), channels, float(rate), PathType(max(worst, PathType.NVL)),
                         len(set(channels)) == 1, float(rate), float(rate * len(rings)), tuple(loads),
                         duplicated, False, tuple(trace),
                         nets=tuple(nets) if nets is not None else (),
                         type_inter=PathType.PIX, nnodes=nnodes)


# ---------------------------------------------------------------------------- several nodes
def _multi_node(fabric, hosts) -> LegacyRings:
    """One ring per NIC of the node (netGetRings), simplified (module docstring)."""
    from topo.cluster import network_nics  # noqa: PLC0415 (topo.cluster imports nothing of ours)

    G, legacy = fabric.G, fabric.profile.legacy
    first = sorted(hosts)[0]
    members = hosts[first]
    nics = network_nics(G, first)
    if not nics:
        raise LegacyRingsError(f"host {first} has no NIC on a network: expected a cluster fabric "
                               f"for GPUs of several hosts")
    n = len(members)
    links = [[_nvlinks(G, a, b) if a != b else 0 for b in members] for a in members]
    trace = [SearchStep("nics", count=len(nics))]
    rings, nets = [], []
    for nic in nics[:legacy.max_rings]:
        start = min(range(n), key=lambda i: (fabric.net_route(members[i], nic).path_type, i))
        found = nvlink_rings(links, 1, start=start, end=-1) if n > 1 else [(start,)]
        order = found[0] if found else (start,) + tuple(i for i in range(n) if i != start)
        rings.append(order)
        nets.append((nic, nic))
    nvlink = any(any(row) for row in links)
    duplicated = False
    if fabric.profile.behaviour.legacy_node_rings is LegacyNodeRings.NVLINK_DOUBLED and nvlink:
        rings, nets = _copy(rings, 2 * len(rings), legacy.max_rings), _copy(nets, 2 * len(nets), legacy.max_rings)
        duplicated = True
        trace.append(SearchStep("copied_across_nodes", count=len(rings)))
    cc = min(G.nodes[g]["compute_capability"] for g in members)
    halved = fabric.profile.behaviour.legacy_threads is LegacyThreads.HALF_ON_PASCAL_NVLINK
    threads = legacy.default_threads // (2 if halved and cc // 10 == 6 and nvlink else 1)
    all_nodes = tuple(g for h in sorted(hosts) for g in hosts[h])
    search = _result(fabric, members, rings, duplicated, trace, nets=nets, nnodes=len(hosts))
    search = ChannelSearch(search.pattern, all_nodes, search.channels, search.bw_intra, search.type_intra,
                           search.same_channels, search.max_bw, search.total_bw, search.loads,
                           search.duplicated, False, search.trace, nets=search.nets,
                           type_inter=PathType.PIX, nnodes=len(hosts))
    return LegacyRings(search, threads, False)
