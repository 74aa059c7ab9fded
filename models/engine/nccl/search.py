"""NCCL's channel search on a fabric: the rings and trees a communicator of GPUs gets.

NCCL builds its collectives on *channels*: for the ring algorithm, each channel is an order
of the GPUs whose consecutive hops (and the hop back to the first) are routed over the
fabric; for the tree algorithm inside a node, each channel is a chain of the GPUs. Every
channel reserves its per-channel bandwidth ``bwIntra`` on every link its hops cross, so the
number of channels a fabric holds at a given speed is set by its links (NVIDIA/nccl v2.27.7-1
src/graph/search.cc). This module replays that search on our graphs as named passes over
frozen data:

1. **The problem** (:func:`_build_problem`). NCCL's view of the fabric
   (:class:`models.engine.nccl.system.NcclSystem`): only the communicator's GPUs are in NCCL's system
   (a GPU outside the communicator cannot relay), links are charged NCCL's figures, hops follow
   the router with NCCL's relay through one member GPU (NVB), a route through NVSwitches is
   sprayed over the parallel switch planes (NCCL's single aggregated NVSwitch node). Across
   hosts the node's NICs join: a channel enters the node by a NIC, crosses its GPUs and
   leaves by a NIC.
2. **Start.** ``maxBw`` is the widest GPU-to-GPU path (GPU-to-NET with NICs), ``totalBw`` the
   widest per-GPU sum of NVLink bandwidth (or its PCIe link); the search starts at the first
   speed of the profile's array not above ``maxBw`` with ``speed x minChannels <= totalBw``.
3. **Pass 1** (:func:`_pass1`). At each speed, find as many channels as fit (up to
   ``maxChannels``), first with every channel the same order (``sameChannels``), then with
   free orders, then with worse path types allowed, then at the next lower speed (while it is
   more than 0.49 of the best found). Stop when the channels fill ``totalBw`` or the search is
   perfect.
4. **Duplication** (:func:`models.engine.nccl.duplication.dup_channels`): fast channels are split
   in two.
5. **Pass 2** (:func:`_pass2`). Try higher speeds with the same number of channels.

Each channel search (:class:`_Dfs`) is a depth-first search with NCCL's candidate order (PCI
order first, then a replay of the previous channel, then the other GPUs by path bandwidth; on an
NVSwitch system only the next and previous GPU) and NCCL's budget of steps. It keeps the best set
of channels (most ``nChannels x bw``, then fewest hops). Deviations from NCCL, all marked in the
code: a branch (or a whole speed) that provably cannot beat the best set found is cut short, which
can only matter when NCCL's own search would have run out of budget (a tree search skips a speed
only when the chains the links hold (:func:`_chain_bound`) cannot reach what is asked, and stops when
it found that many; its steps inside a search stay NCCL's); a search that ran out of
budget below what the links admit is restarted with seeded orders, so that more links never give
fewer channels (not when an exhaustive check over the distinct ring channels shows that no more
fit: the restarts could not change the answer); a search stops at the first set as large as the
links admit (NCCL goes on for an equal set with fewer hops, which changes which channels are
listed, not their number). Not a deviation: a search below a closed channel from a state met
before (the same room left, channels placed, last channel, hops and best set) that found nothing
better is not run again; its steps are counted and its room left applied, so the budget runs out
exactly where NCCL's does (:meth:`_Dfs._next_channels`).

A host's search depends only on its problem (GPUs, NICs, edges, capacities, routes), the GPUs'
compute capability and the profile; results are kept by that content (the last 256), so an equal
host of another call, graph or copy is not searched again.

What is not modelled: crossNic, NVLS, CollNet, the pre-Ampere ``fwBw/8`` reverse charge (it
applies only to paths that start at an NVSwitch or a NIC).

Why one module
--------------
Over 1,200 lines, and kept whole: it is one algorithm, NCCL's ``ncclTopoCompute`` (one file,
src/graph/search.cc, in NCCL too). Its parts work on private, frozen state that only the search
reads (:class:`_Problem`, :class:`_Attempt`, :class:`_Found`, :class:`_Solution`): the bounds
(:func:`_channel_bound`, :func:`_chain_bound`) and the exhaustive check of ring kinds exist only
to cut the depth-first search short, and each deviation from NCCL above is argued against the
search's step budget, which the passes, the restarts and :class:`_Dfs` share. Split, that state
would become an interface between modules with no other reader. What stands alone has left:
channel duplication (:mod:`models.engine.nccl.duplication`), NCCL's view of the fabric
(:mod:`models.engine.nccl.system`), tree shapes (:mod:`models.engine.nccl.trees`).

Examples
--------
>>> import topo
>>> ring = search_channels(topo.dgx1v())
>>> ring.nchannels, ring.bw_intra / 1e9, ring.type_intra.name
(6, 20.0, 'NVL')
>>> search_channels(topo.dgx2(), [0, 5, 9]).nchannels
6
"""

from __future__ import annotations

import dataclasses
import functools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx

from topo.collector import collector_paused
from topo.schema import validate
from topo.select import GpuIds, select_gpus

from ..memo import LazyTable
from ..results import tidy_records
from ..routes import PathType
from .duplication import ChannelSearchError, dup_channels
from .profiles import NcclProfile
from .system import NcclSystem, link_key
from .tuning import ChannelGraph

__all__ = ["ChannelSearch", "ChannelSearchError", "LinkLoad", "SearchStep", "STEP_KINDS", "search_channels",
           "search_channels_in", "PATTERNS", "FALLBACK_BANDWIDTH"]

#: Search patterns: NCCL's ring graph (id 0) and its single-node tree graph (id 1).
PATTERNS = ("ring", "balanced_tree")

# Search budgets, counted in GPU placements (NVIDIA/nccl v2.27.7-1 src/graph/search.cc, v2.19+):
# NCCL_SEARCH_TIMEOUT 2^14, NCCL_SEARCH_TIMEOUT_TREE 2^14, NCCL_SEARCH_TIMEOUT_SAMECHANNELS 2^8.
_TIMEOUT = 1 << 14
_TIMEOUT_TREE = 1 << 14
_TIMEOUT_SAME_CHANNELS = 1 << 8
# Restarts after a search that ran out of budget below what the links admit (not NCCL's).
# Four seeds: on every subset of 3 to 8 GPUs of a DGX-1, a DGX-1V, a DGX-1V with one more 0-1
# NVLink and one with the 0-3 bundle thinned, and a sample of 2xdgx1v sets (1,136 searches),
# two seeds already find what sixteen find (checked 2026-11-30); four keep a margin.
_RESTARTS = 4
_RESTART_BUDGET = 1 << 11
# Lowering the speed stops once it would fall to 0.49 of the best solution (search.cc).
_SPEED_FLOOR = 0.49
# Capacity comparisons tolerate this much rounding, as NCCL's SUB_ROUND keeps 0.001 GB/s.
_SLACK = 1e3  # [B/s]
# The fallback when nothing is found: one channel in index order, type SYS, which NCCL tunes at
# 0.1 GB/s (NVIDIA/nccl v2.27.7-1 src/graph/search.cc, ncclTopoCompute "falling back to simple
# order"); the channel moves data at its paths' rate (_compute).
FALLBACK_BANDWIDTH = 0.1e9  # [B/s]
# More channels than any bound: no limit.
_UNBOUNDED = 1 << 30


@dataclass(frozen=True, slots=True)
class LinkLoad:
    """What the channels reserve on one directed edge.

    Attributes
    ----------
    edge : tuple
        ``(u, v)``.
    reserved : float
        Sum over channels of ``bwIntra x share`` (x 6/5 on PHB PCIe hops). [B/s]
    capacity : float
        NCCL's capacity of the edge (:func:`nccl_capacity`). [B/s]
    """

    edge: tuple
    reserved: float
    capacity: float

    @property
    def utilisation(self) -> float:
        """``reserved / capacity``."""
        return self.reserved / self.capacity


#: What a :class:`SearchStep` can be. The channel search: an ``attempt`` (a depth-first search at
#: one speed and path types), one ``skipped`` because the links hold too few channels or only a
#: ``tie`` with no fewer hops, NCCL's ``fallback`` when nothing is found, the channels
#: ``duplicated``, ``other_shape`` (another node shape of a communicator holds fewer), ``mnnvl``
#: (hosts fused into one NCCL node). NCCL 2.0-2.4's rings (:mod:`.legacy_rings`): ``domains``,
#: ``nvswitch``, ``nvlink_search``, ``oversubscribed``, ``copied``, ``pascal_threads``, ``pcie``,
#: ``simple_ring``, ``shared_memory``, ``ring_rate``, ``nics``, ``copied_across_nodes``.
STEP_KINDS = ("attempt", "skipped", "tie", "fallback", "duplicated", "other_shape", "mnnvl", "domains",
              "nvswitch", "nvlink_search", "oversubscribed", "copied", "pascal_threads", "pcie", "simple_ring",
              "shared_memory", "ring_rate", "nics", "copied_across_nodes", "nvls_attempt", "nvls_none",
              "nvls_bw_inter")


@dataclass(frozen=True, slots=True)
class SearchStep:
    """One step of how the channels were found, as numbers (``--explain`` words them:
    :func:`models.present.explain.search_step_text`).

    Attributes
    ----------
    kind : str
        One of :data:`STEP_KINDS`.
    speed : float
        The speed an attempt tried, or the per-channel bandwidth a step names (``duplicated``,
        ``other_shape``, ``ring_rate``; ``fallback``: NCCL's lowest speed). [B/s]
    type_intra, type_inter : str
        The worst path types an attempt allowed (``type_inter`` ``""`` on one node).
    same : bool
        An attempt of channels that all follow one order (NCCL's sameChannels).
    count : int
        Channels an attempt found (or the links hold, when skipped), channels or rings a step
        names, NIC or P2P-domain count, nThreads, NCCL nodes (``mnnvl``).
    limit : int
        An attempt's required channels when it found fewer (0 otherwise); the rings found before
        copying (``nvswitch``); the count doubled rings had to beat (``oversubscribed``).
    timed_out : bool
        The attempt ran out of NCCL's step budget.
    restart : int
        The seed of the restart that found more than NCCL's order (-1: none); ``in_budget``:
        what the order before it found in its budget.
    in_budget : int
    rate : float
        ``fallback``: the slowest hop's rate, at which its data moves. [B/s]
    names : tuple
        ``fallback``: the slowest edge ``(u, v)`` (or ``()``); ``mnnvl``: the hosts;
        ``shared_memory``: the hops ``((a, b), ...)``.
    release : str
        ``mnnvl``: the NCCL release.
    kept : bool
        ``oversubscribed``: the doubled rings were kept.
    """

    kind: str
    speed: float = 0.0
    type_intra: str = ""
    type_inter: str = ""
    same: bool = False
    count: int = 0
    limit: int = 0
    timed_out: bool = False
    restart: int = -1
    in_budget: int = 0
    rate: float = 0.0
    names: tuple = ()
    release: str = ""
    kept: bool = False


@dataclass(frozen=True, slots=True)
class ChannelSearch:
    """The channels NCCL's search finds for a set of GPUs: an ``ncclTopoGraph``.

    Attributes
    ----------
    pattern : str
        ``"ring"`` or ``"balanced_tree"``.
    gpus : tuple
        The communicator's GPU nodes, in index order.
    channels : tuple of tuple
        Per channel, the GPU order (a ring closes back to its first GPU; a tree channel is
        a chain from its first GPU). After duplication, as NCCL logs them.
    bw_intra : float
        Bandwidth each channel reserves on every link it crosses, NCCL's ``bwIntra``. [B/s]
    type_intra : PathType
        The worst path type the channels were allowed (NCCL's ``typeIntra``).
    same_channels : bool
        Every channel follows the same order.
    max_bw, total_bw : float
        NCCL's ``maxBw`` and ``totalBw`` of this GPU set. [B/s]
    loads : tuple of LinkLoad
        The edges the channels cross, most utilised first.
    duplicated : bool
        The channels were split by ``ncclTopoDupChannels``.
    timed_out : bool
        Some search ran out of NCCL's step budget.
    trace : tuple of SearchStep
        The searches tried, in order, with what each found (``--explain`` words them).
    nets : tuple of tuple
        Across nodes: per channel, the NIC it enters the node by and the NIC it leaves by.
    type_inter : PathType
        NCCL's ``typeInter``: the worst GPU-to-NIC path type allowed (PIX on one node).
    nnodes : int
        Hosts the communicator spans.
    """

    pattern: str
    gpus: tuple
    channels: tuple
    bw_intra: float
    type_intra: PathType
    same_channels: bool
    max_bw: float
    total_bw: float
    loads: tuple
    duplicated: bool
    timed_out: bool
    trace: tuple
    nets: tuple = ()
    type_inter: PathType = PathType.PIX
    nnodes: int = 1

    @property
    def nchannels(self) -> int:
        """Number of channels, NCCL's ``graph.nChannels`` (before ``ncclTopoPostset`` doubles
        ``comm->nChannels``)."""
        return len(self.channels)

    @property
    def bandwidth(self) -> float:
        """``nchannels x bw_intra``: the bus bandwidth the channels carry. [B/s]"""
        return self.nchannels * self.bw_intra

    @property
    def bottleneck(self) -> tuple:
        """The edges the channels fill (utilisation within 0.1 % of the highest)."""
        if not self.loads:
            return ()
        top = self.loads[0].utilisation
        return tuple(load.edge for load in self.loads if load.utilisation >= top * 0.999)

    def to_records(self) -> list:
        """One row per channel: its ``order`` (the GPU nodes, space-separated, in the order it
        visits them), the NICs it enters and leaves by (``""`` on one node), and what every
        channel shares: the pattern, ``bw_intra_Bps``, path types, node count and the search's
        flags."""
        return tidy_records({
            "pattern": self.pattern, "channel": list(range(self.nchannels)),
            "order": [" ".join(map(str, c)) for c in self.channels],
            "nic_in": [str(n[0]) for n in self.nets] if self.nets else "",
            "nic_out": [str(n[1]) for n in self.nets] if self.nets else "",
            "bw_intra_Bps": self.bw_intra, "type_intra": self.type_intra.name,
            "type_inter": self.type_inter.name, "nnodes": self.nnodes, "same_channels": self.same_channels,
            "duplicated": self.duplicated, "timed_out": self.timed_out})

    def graph(self) -> ChannelGraph:
        """The tuning model's view of this result."""
        return ChannelGraph(self.nchannels, self.bw_intra, self.type_intra.name,
                            type_inter=self.type_inter.name, pattern=self.pattern,
                            same_channels=self.same_channels)


# ----------------------------------------------------------------------- frozen problem data
@dataclass(frozen=True, slots=True)
class _Hop:
    """A routed hop (GPU to GPU, NIC to GPU or GPU to NIC) as the search charges it.

    ``flow`` lists every directed edge the hop crosses as ``(edge index, multiplier)``;
    ``charges`` is the same over edge *classes* (edges that every hop charges alike and that
    have the same capacity always have the same room left, so the search books one of them:
    the six planes of a DGX-2's NVSwitch hop are one class).
    """

    type: PathType
    bandwidth: float  # [B/s]
    flow: tuple
    charges: tuple
    nhops: int


@dataclass(frozen=True, slots=True)
class _Ports:
    """Per GPU, the edges its allowed hops leave and enter it by (see :func:`_channel_bound`).

    ``pairs`` are ``(out edge, in edge)`` of the direct NVLink bundles to a neighbour that only
    the direct hops use; ``exits`` and ``entries`` are ``(edge, smallest share)`` of the rest.
    """

    pairs: tuple
    exits: tuple
    entries: tuple


@dataclass(frozen=True, slots=True)
class _Problem:
    """The communicator's GPUs of one host (and its NICs), their hops and the edge capacities.

    Edges are numbered in the order the hops first cross them; ``edge_class[k]`` is the class
    the search books edge ``k`` under, ``class_capacity`` the starting room of each class.
    """

    gpus: tuple
    nvswitch: bool
    edges: tuple
    capacity: tuple  # per edge [B/s]
    edge_class: tuple
    class_capacity: tuple  # [B/s]
    hop: tuple  # hop[i][j]: _Hop from GPU i to GPU j (None on the diagonal)
    order: tuple  # order[i]: NCCL's candidates after GPU i, best first
    types: tuple  # the GPU-to-GPU path types present, ascending
    max_bw: float
    total_bw: float
    nets: tuple = ()
    net_in: tuple = ()  # net_in[m][i]: NIC m -> GPU i
    net_out: tuple = ()  # net_out[i][m]: GPU i -> NIC m
    net_ports: tuple = ()  # per NIC: (port-in class, port-out class)
    net_types: tuple = ()
    net_firsts: tuple = ()  # per NIC: the GPUs a channel may enter first, best first
    net_entries: tuple = ()  # the classes of the edges a channel from a NIC enters a GPU by
    net_exits: tuple = ()  # the classes of the edges a channel to a NIC leaves a GPU by
    gpu_out: tuple = ()  # the class of every edge a hop between two GPUs leaves its GPU by
    ports: dict = None  # PathType -> tuple of _Ports per GPU (rings without NICs)
    usable: dict = None  # typeInter -> the NIC-side classes that bound the channels at that type
    allowed: dict = None  # typeIntra -> per GPU, (j, charges) of its hops to / from j of that type or better
    bounds: dict = None  # (speed, typeIntra, ring, typeInter) -> {room left per class: channel bound}
    walks: dict = None  # (speed, typeIntra, ring) -> the DFS's tables of hops (_Dfs.__init__)
    n: int = 0  # len(gpus)
    ring_near: tuple = ()  # per GPU: the next then the previous GPU (NVSwitch candidates)
    tree_near: tuple = ()  # per GPU: the previous then the next GPU


def _build_problem(fabric, gpus, nets=()) -> _Problem:
    """Route every hop of the communicator once and number the edges they cross."""
    G, profile = fabric.G, fabric.profile
    members = set(gpus)
    n = len(gpus)
    edges: list = []
    index: dict = {}
    capacity: list = []

    def number(charges) -> tuple:
        """``((edge index, multiplier), ...)`` of ``((edge, multiplier), ...)``, numbering new edges."""
        numbered = []
        for edge, factor in charges:
            k = index.get(edge)
            if k is None:
                k = index[edge] = len(edges)
                edges.append(edge)
                capacity.append(fabric.capacity(*edge))
            numbered.append((k, factor))
        return tuple(numbered)

    raw_hop = [[None] * n for _ in range(n)]
    ends = [[None] * n for _ in range(n)]  # per hop: its edges leaving its GPU, entering the other
    for i, a in enumerate(gpus):
        for j, b in enumerate(gpus):
            if i != j:
                path_type, charges, width, nhops, (leaving, entering) = fabric.charged_hop(a, b, members)
                numbered = number(charges)
                raw_hop[i][j] = (path_type, width, numbered, nhops)
                ends[i][j] = (tuple(numbered[e] for e in leaving), tuple(numbered[e] for e in entering))
    # NET hops (multi-node): NIC -> GPU enters a channel, GPU -> NIC leaves it. Each charges the
    # PCIe links on the way and the NIC's network port in its direction (NCCL's NET node
    # bandwidth, speed / 8000 GB/s).
    raw_in = [[None] * n for _ in nets]
    raw_out = [[None] * len(nets) for _ in range(n)]
    net_ports = []
    for m, nic in enumerate(nets):
        for i, g in enumerate(gpus):
            route, out, back = fabric.charged_net(g, nic)
            for (charges, width, nhops), table in ((out, "out"), (back, "in")):
                path_type = route.path_type if table == "out" or route.inward else PathType.DIS
                if path_type == PathType.DIS:  # NCCL has no such path: never chosen, no width
                    width = 0.0
                hop = (path_type, width, number(charges), nhops)
                if table == "out":
                    raw_out[i][m] = hop
                else:
                    raw_in[m][i] = hop
        net_ports.append((index[route.port_in], index[route.port_out]))

    edge_class, class_capacity = _edge_classes(capacity, [h for row in raw_hop for h in row if h]
                                               + [h for row in raw_in for h in row]
                                               + [h for row in raw_out for h in row])

    def make(raw) -> _Hop:
        path_type, width, flow, nhops = raw
        merged = dict.fromkeys((edge_class[k], f) for k, f in flow)
        return _Hop(path_type, width, flow, tuple(merged), nhops)

    hop = tuple(tuple(make(h) if h else None for h in row) for row in raw_hop)
    net_in = tuple(tuple(make(h) for h in row) for row in raw_in)
    net_out = tuple(tuple(make(h) for h in row) for row in raw_out)
    nvswitch = any(G.nodes[v]["kind"] == "nvswitch" for g in gpus for v in G.successors(g))
    if n > 1:
        every = [hop[i][j] for i in range(n) for j in range(n) if i != j]
        max_bw = max(h.bandwidth for h in every)
        types = tuple(sorted({h.type for h in every}))
    else:
        max_bw, types = profile.loc_bandwidth, (PathType.LOC,)
    if nets:  # with NET nodes, maxBw is the widest GPU-to-NET path (search.cc)
        max_bw = max(h.bandwidth for row in net_out for h in row)
    total = 0.0
    for g in gpus:
        # NCCL's totalBw: the GPU's NVLink bandwidth (to switches and to GPUs of the
        # communicator; others are not in NCCL's system) or its PCIe link.
        nvlink = sum(fabric.capacity(g, v) for v, d in G.adj[g].items() if d["kind"] == "nvlink"
                     and (G.nodes[v]["kind"] != "gpu" or v in members))
        pcie = max((fabric.capacity(g, v) for v, d in G.adj[g].items() if d["kind"] == "pcie"), default=0.0)
        total = max(total, nvlink, pcie)
    # Candidate order after GPU i (search.cc ncclTopoSearchNextGpuSort without NET): wider path
    # first, then fewer hops, then index.
    order = tuple(tuple(sorted((j for j in range(n) if j != i),
                               key=lambda j, i=i: (-hop[i][j].bandwidth, hop[i][j].nhops, j)))
                  for i in range(n))
    problem = _Problem(
        tuple(gpus), nvswitch, tuple(edges), tuple(capacity), edge_class, class_capacity, hop, order,
        types, max_bw, total if n > 1 else profile.loc_bandwidth, nets=tuple(nets), net_in=net_in,
        net_out=net_out, net_ports=tuple((edge_class[a], edge_class[b]) for a, b in net_ports),
        net_types=tuple(sorted({h.type for row in net_out for h in row if h.type != PathType.DIS})),
        net_firsts=tuple(tuple(sorted(range(n), key=lambda g, m=m: (-net_in[m][g].bandwidth,
                                                                  net_in[m][g].type, g)))
                         for m in range(len(nets))),
        # The PCIe edges a channel uses to enter its first GPU from a NIC and to leave its last
        # GPU for a NIC, which bound the channels as tightly as the NIC ports do.
        net_entries=tuple(edge_class[k] for i in range(n)
                          for k in sorted({net_in[m][i].flow[-1][0] for m in range(len(nets))
                                           if net_in[m][i].type != PathType.DIS})),
        gpu_out=tuple(edge_class[k] for k in sorted({k for row in hop for h in row if h is not None
                                                     for k, _ in h.flow if edges[k][0] in members})),
        net_exits=tuple(edge_class[k] for i in range(n)
                        for k in sorted({net_out[i][m].flow[0][0] for m in range(len(nets))
                                         if net_out[i][m].type != PathType.DIS})),
        ports={}, usable={}, allowed={}, bounds={}, walks={}, n=n,
        ring_near=tuple(tuple(dict.fromkeys(((i + 1) % n, (i - 1) % n))) for i in range(n)),
        tree_near=tuple(tuple(dict.fromkeys(((i - 1) % n, (i + 1) % n))) for i in range(n)))
    if not nets and n > 1:
        problem.ports.update((t, _gpu_ports(problem, t, ends)) for t in types)

    return problem


def _edge_classes(capacity, hops) -> tuple:
    """Number edges that every hop charges with the same multiplier and that have the same capacity
    as one class (their room left is always equal)."""
    columns = [[] for _ in capacity]  # per edge: hop, multiplier, hop, multiplier, ...
    for h, (_, _, flow, _) in enumerate(hops):
        for k, f in flow:
            column = columns[k]
            column.append(h)
            column.append(f)
    classes: dict = {}
    edge_class = []
    class_capacity = []
    for k in range(len(capacity)):
        key = (capacity[k], *columns[k])
        if key not in classes:
            classes[key] = len(class_capacity)
            class_capacity.append(capacity[k])
        edge_class.append(classes[key])
    return tuple(edge_class), tuple(class_capacity)


def _gpu_ports(problem, type_intra, ends) -> tuple:
    """Per GPU, the :class:`_Ports` of the hops allowed up to ``type_intra``. ``ends[i][j]``: of hop
    ``(i, j)``, the ``(edge index, multiplier)`` of its edges that leave GPU i and of those that
    enter GPU j, in the hop's order."""
    n, gpus, edges, hop = problem.n, problem.gpus, problem.edges, problem.hop
    index = {e: k for k, e in enumerate(edges)}
    ports = []
    for i in range(n):
        out_use: dict = {}
        in_use: dict = {}
        for j in range(n):
            if j == i:
                continue
            # Out of GPU i by its hop to j, into GPU i by the hop from j.
            for h, found, use in ((hop[i][j], ends[i][j][0], out_use), (hop[j][i], ends[j][i][1], in_use)):
                if h.type > type_intra:
                    continue
                single = len(h.flow) == 1
                for k, f in found:
                    direct = single and f == 1.0
                    old = use.get(k, (True, math.inf))
                    use[k] = (old[0] and direct, min(old[1], f))
        pairs, exits, paired = [], [], set()
        for k, (direct, f) in out_use.items():
            back = index.get((edges[k][1], gpus[i]))
            if direct and back in in_use and in_use[back][0] and n > 2:
                pairs.append((k, back))
                paired.add(back)
            else:
                exits.append((k, f))
        entries = [(k, f) for k, (_, f) in in_use.items() if k not in paired]
        cls = problem.edge_class  # the bound reads the room left per class
        ports.append(_Ports(tuple((cls[o], cls[b]) for o, b in pairs), tuple((cls[k], f) for k, f in exits),
                            tuple((cls[k], f) for k, f in entries)))
    return tuple(ports)


# ----------------------------------------------------------------------------- the bound
def _connected(problem, remaining, speed, type_intra) -> bool:
    """Every GPU reaches every other by hops that fit ``speed`` now: a channel needs it."""
    n = problem.n
    rows = problem.allowed.get(type_intra)
    if rows is None:  # per GPU, its hops of this type or better: out to j, and in from j
        hop = problem.hop
        rows = problem.allowed[type_intra] = tuple(
            tuple(tuple((j, h[i][j].charges) for j in range(n) if j != i and h[i][j].type <= type_intra)
                  for i in range(n))
            for h in (hop, tuple(zip(*hop))))
    return _reach(rows[0], remaining, speed, n) and _reach(rows[1], remaining, speed, n)


def _reach(rows, remaining, speed, n) -> bool:
    """Whether GPU 0 reaches all ``n`` GPUs by the hops of ``rows`` (per GPU, ``(j, charges)``)
    that fit ``speed`` in ``remaining``."""
    seen = [False] * n
    seen[0] = True
    todo, count = [0], 1
    while todo:
        for j, charges in rows[todo.pop()]:
            if seen[j]:
                continue
            for k, f in charges:  # the hop fits
                if remaining[k] + _SLACK < speed * f:
                    break
            else:
                seen[j] = True
                count += 1
                if count == n:
                    return True
                todo.append(j)
    return count == n


def _channel_bound(problem, remaining, speed, type_intra, ring=True, type_inter=None) -> int:
    """Most ring channels the links could still hold at ``speed`` with hops up to ``type_intra``.

    ``remaining`` is the room left per edge class. No bound for trees here (a chain does not
    enter its first GPU nor leave its last; :func:`_chain_bound` counts those ends, outside the
    search). Every ring channel leaves and enters every GPU exactly once. Out of GPU i, an edge
    with room ``r`` carrying share ``f`` of a hop admits ``f x floor(r / (speed x f))`` channels
    (:func:`_port_room`); in a ring of three or more GPUs a channel cannot enter from and leave to
    the same direct neighbour, so with U entries and V exits of which neighbour x holds u_x and
    v_x, GPU i admits at most ``min(U, V, U - u_x + V - v_x)`` channels. With NICs, every
    channel enters through one NIC port and leaves through one, of the NICs the GPUs may reach
    at this ``type_inter``, and through the PCIe edges next to its first and last GPU; and its
    n - 1 hops between GPUs take their speed from the room on the edges leaving GPUs.
    """
    if problem.nets:
        groups = problem.usable.get(type_inter)
        if groups is None:
            # The in and out ports of the NICs some GPU reaches at this typeInter, and the PCIe
            # edges next to the first and last GPUs.
            usable = [problem.net_ports[m] for m in range(len(problem.nets))
                      if type_inter is None or any(row[m].type <= type_inter for row in problem.net_out)]
            groups = problem.usable[type_inter] = (tuple(a for a, _ in usable), tuple(b for _, b in usable),
                                                   problem.net_entries, problem.net_exits)
        floor = math.floor
        limit = _UNBOUNDED
        for group in groups:
            total = 0
            for k in group:
                total += floor((remaining[k] + _SLACK) / speed)
            if total < limit:
                limit = total
        if problem.n > 1 and limit != 0:
            # Inside the node a channel makes n - 1 hops between GPUs, each taking at least its
            # speed from the room on the edges leaving its GPU (shares of one hop add up to 1,
            # PCIe overheads only add): all channels together need (n - 1) x speed each.
            room_out = _SLACK
            for k in problem.gpu_out:
                room_out += remaining[k]
            limit = min(limit, floor(room_out / ((problem.n - 1) * speed)))
            if limit != 0 and not _connected(problem, remaining, speed, type_intra):
                return 0
        return limit
    if problem.n == 1:
        return _UNBOUNDED
    if not _connected(problem, remaining, speed, type_intra):
        return 0
    if not ring:
        return _UNBOUNDED

    bound = _UNBOUNDED
    for paired, out, inward in _port_room(problem, remaining, speed, type_intra):
        limit = min(out, inward)
        for v, u in paired:
            limit = min(limit, inward - u + out - v)
        bound = min(bound, math.floor(limit + 1e-9))
    return bound


def _port_room(problem, remaining, speed, type_intra) -> list:
    """Per GPU, the channels of ``speed`` the room left on its ports admits (hops up to
    ``type_intra``): ``(paired, out, inward)``, ``paired`` the ``(out, in)`` of each direct bundle
    to a neighbour, ``out`` and ``inward`` the totals. An edge with room ``r`` carrying share ``f``
    of a hop admits ``f x floor(r / (speed x f))`` channels."""
    def units(k, f):
        return f * math.floor((remaining[k] + _SLACK) / (speed * f))

    rooms = []
    for gpu in problem.ports[type_intra]:
        paired = [(units(o, 1.0), units(b, 1.0)) for o, b in gpu.pairs]
        rooms.append((paired, sum(v for v, _ in paired) + sum(units(k, f) for k, f in gpu.exits),
                      sum(u for _, u in paired) + sum(units(k, f) for k, f in gpu.entries)))
    return rooms


def _chain_bound(problem, remaining, speed, type_intra) -> int:
    """Most tree channels (chains of the n GPUs, without NICs) the links could hold at ``speed``
    with hops up to ``type_intra``; :data:`_UNBOUNDED` with NICs or fewer than three GPUs.

    A chain leaves every GPU but its last and enters every GPU but its first. With ``c`` chains,
    GPU i is last in ``l_i`` and first in ``f_i`` of them (``sum l_i = sum f_i = c``, and
    ``l_i + f_i <= c``: no chain starts and ends at one GPU), so it needs ``c - l_i`` channels of
    room out and ``c - f_i`` in. Out of GPU i, the room admits ``out_i`` channels and into it
    ``in_i`` (counted as :func:`_channel_bound` counts a ring's), so ``c`` chains fit only when
    ``sum_i max(0, c - out_i) <= c``, the same with ``in_i``, and ``max(0, c - out_i) + max(0,
    c - in_i) <= c`` for every GPU. Used to skip searches that cannot reach what is asked and
    to stop one that reached it; not inside a search, whose steps stay NCCL's.
    """
    if problem.nets or problem.n < 3:
        return _UNBOUNDED
    if not _connected(problem, remaining, speed, type_intra):
        return 0
    rooms = _port_room(problem, remaining, speed, type_intra)
    outs, ins = [out for _, out, _ in rooms], [inward for _, _, inward in rooms]

    def short(c, room) -> int:  # chains that must end (or start) at the GPU: at least c - room
        return max(0, math.ceil(c - room - 1e-9))

    def fits(c) -> bool:
        return (sum(short(c, r) for r in outs) <= c and sum(short(c, r) for r in ins) <= c
                and all(short(c, o) + short(c, i) <= c for o, i in zip(outs, ins)))

    c = math.floor(min(sum(outs), sum(ins)) / (problem.n - 1) + 1e-9)  # n - 1 hops each way
    while c > 0 and not fits(c):
        c -= 1
    return c


# ------------------------------------------------------------------------ one DFS (search.cc)
@dataclass(frozen=True, slots=True)
class _Attempt:
    """What one ``ncclTopoSearchRec`` is asked: a speed, the path types allowed, same channels."""

    speed: float  # [B/s]
    type_intra: PathType
    type_inter: PathType
    same: bool
    ring: bool
    max_channels: int


@dataclass(frozen=True, slots=True)
class _Found:
    """What one depth-first search found: its best set of channels (GPU indices) and NICs."""

    channels: tuple
    nets: tuple
    hops: float
    timed_out: bool
    ceiling: int
    restart: int = -1  # the seed of the restart this set came from (-1: NCCL's order)
    in_budget: int = 0  # what the order before that restart found in its budget


#: Outcomes a DFS step returns: go on, out of budget, nothing can beat what was found.
_GO, _OUT_OF_BUDGET, _PERFECT = 0, 1, 2


class _Dfs:
    """The state of one depth-first channel search (NCCL's ``ncclTopoSearchRec``).

    Every step returns :data:`_GO`, :data:`_OUT_OF_BUDGET` or :data:`_PERFECT`; a step that
    gets anything but ``_GO`` from below returns it at once, which ends the search.
    """

    __slots__ = ("p", "a", "budget", "steps", "remaining", "channels", "nets", "hops", "entry", "best",
                 "best_nets", "best_hops", "ceiling", "by_room", "rng", "net_ok", "spare", "exits",
                 "start_ways", "states", "improved", "rows", "following", "net_in", "net_out")

    def __init__(self, problem, attempt, budget, ceiling, by_room=False, rng=None):
        self.p, self.a, self.budget, self.ceiling = problem, attempt, budget, ceiling
        self.by_room = by_room  # candidate order: NCCL's static one, or widest room left first
        self.rng = rng  # a random.Random shuffles the candidates before that order
        self.steps = 0
        self.remaining = list(problem.class_capacity)
        self.channels: list = []
        self.nets: list = []  # per placed channel: (NIC index in, NIC index out)
        self.hops = 0
        self.entry = None  # NIC the channel being placed entered by
        self.best: list = []
        self.best_nets: list = []
        self.best_hops = math.inf
        walk = problem.walks.get((attempt.speed, attempt.type_intra, attempt.ring))
        if walk is None:
            walk = problem.walks[attempt.speed, attempt.type_intra, attempt.ring] = _walk_tables(problem, attempt)
        self.rows, following, self.net_in, self.net_out = walk
        # The candidates after each GPU, fixed (NCCL's order, or the NVSwitch neighbours); None:
        # made at each visit (a shuffled or room-sorted order, :meth:`_candidates`).
        self.following = following if rng is None and not by_room else None
        self.net_ok = attempt.type_inter
        self.exits: dict = {}  # (last GPU, entry NIC) -> _closings with NICs
        self.start_ways: dict = {}  # (previous channel, channels placed) -> _starts
        # Per room-left state met: the channel bound, and the searches below a closed channel
        # from it that found nothing better (their steps and the room they left, by the rest of
        # what they read: _next_channels; none with a shuffled order).
        self.states: dict = {}
        self.improved = 0  # how many times the best set was replaced
        # The bound of each room-left state met, shared by the searches of this attempt: the same
        # channels booked in another order leave the same room.
        self.spare = problem.bounds.setdefault((attempt.speed, attempt.type_intra, attempt.ring,
                                                attempt.type_inter), {})

    def run(self) -> _Found:
        status = self._start_channel()
        return _Found(tuple(self.best), tuple(self.best_nets), self.best_hops, status == _OUT_OF_BUDGET,
                      self.ceiling)

    # -- the recursion ---------------------------------------------------------------
    def _starts(self) -> list:
        """``(NIC, first GPU, forced order, the NIC's row of entry bookings)`` of each way to start
        the next channel, in NCCL's order: FORCED_ORDER_PCI (GPU 0, 1, ...) for the first
        channel, FORCED_ORDER_REPLAY of the previous one after it, then (free channels) every
        start; with NICs (ncclTopoSearchRecNet) each NIC in turn, from one that spreads the
        channels over them, as NCCL's local NICs do. A start whose entry hop is of a worse type
        than allowed is left out here, once, rather than passed over at every visit (it books
        nothing, takes no step)."""
        p = self.p
        previous = self.channels[-1] if self.channels else None
        key = (previous, len(self.channels) % len(p.nets) if p.nets else 0)
        ways = self.start_ways.get(key)
        if ways is not None:
            return ways
        free = not self.a.same or previous is None
        ways = self.start_ways[key] = []
        if not p.nets:
            ways.append((None, 0, tuple(range(p.n)), None) if previous is None
                        else (None, previous[0], previous, None))
            if free:
                ways.extend((None, start, None, None) for start in range(p.n))
            return ways
        m = len(p.nets)
        for k in range(m):
            net = (len(self.channels) + k) % m
            if previous is not None:
                ways.append((net, previous[0], previous))
            if free:
                ways.extend((net, first, None) for first in p.net_firsts[net])
        # The entry's booking is read from its row when the start is tried (made then, once).
        ways[:] = [(net, first, forced, self.net_in[net]) for net, first, forced in ways
                   if p.net_in[net][first].type <= self.net_ok]
        return ways

    def _start_channel(self) -> int:
        remaining = self.remaining
        for net, first, forced, entry in self._starts():
            if entry is None:
                status = self._place([first], forced)
            else:
                charges, nhops = entry[first]
                for k, amount in charges:  # the entry fits (once per start of a channel)
                    if remaining[k] + _SLACK < amount:
                        break
                else:
                    for k, amount in charges:  # book it
                        remaining[k] -= amount
                    self.hops += nhops
                    self.entry = net
                    status = self._place([first], forced)
                    for k, amount in charges:
                        remaining[k] += amount
                    self.hops -= nhops
                    if status != _GO:
                        return status
                continue
            if status != _GO:
                return status
        return _GO

    def _candidates(self, order, forced) -> list:
        p = self.p
        last = order[-1]
        if forced is not None:
            following = forced[len(order)] if len(order) < p.n else None
            return [] if following is None or following in order else [following]
        if p.nvswitch:
            # With an NVSwitch, NCCL tries only the neighbours: ring next then previous; trees
            # previous then next (search.cc ncclTopoSearchNextGpuSort).
            return [j for j in (p.ring_near if self.a.ring else p.tree_near)[last] if j not in order]
        candidates = [j for j in p.order[last] if j not in order]
        if self.rng is not None:
            self.rng.shuffle(candidates)
        if self.by_room:
            candidates.sort(key=self._room_after(last))  # stable: NCCL's order breaks ties
        return candidates

    def _room_after(self, last):
        """Sort key: the room left on the tightest edge of the hop from ``last``, widest first."""
        remaining, row = self.remaining, self.p.hop[last]

        def key(j):
            room = math.inf
            for k, f in row[j].charges:
                r = remaining[k] / f
                if r < room:
                    room = r
            return -room
        return key

    def _place(self, order, forced) -> int:
        """Extend the channel ``order`` GPU by GPU, depth first (NCCL's ``ncclTopoSearchTryGpu``).

        The walk keeps its own stack rather than recursing once per GPU: a channel through
        the 72 GPUs of an NVL72 rack, times the channels placed before it, went beyond
        Python's recursion limit. Same order, steps and bookings as the recursion it replaces.

        A level's candidates are NCCL's, in its order; a fixed list (:attr:`following`) holds
        the GPUs of allowed hops only and is read as the level is walked, skipping GPUs of the
        order (which does not change under a level while it is walked: GPUs placed deeper are
        taken back before it goes on), so it tries the GPUs a list made at the visit would.
        The hops' bookings at this speed are made once (:func:`_walk_tables`): ``speed x f``,
        the same product the search books and checks.
        """
        remaining, rows, following = self.remaining, self.rows, self.following
        n, budget, slack = self.p.n, self.budget, _SLACK
        used = [False] * n  # the GPUs of ``order``
        used[order[0]] = True
        levels: list = []  # per open GPU of the order: (candidates left, its row of bookings)
        taken: list = []   # booking from each open level to the GPU after it
        status = self._arrive(order, forced, levels)
        while status == _GO and levels:
            candidates, row = levels[-1]
            hop = None
            for j in candidates:
                booking = row[j]
                if booking is None or used[j]:
                    continue
                for k, amount in booking[0]:  # the hop fits (the innermost loop)
                    if remaining[k] + slack < amount:
                        break
                else:
                    hop = booking
                    break
            # Booked as x - s*f and taken back as x + s*f: the room may not come back to the
            # last bit (it never did), which _next_channels reproduces when it skips a search.
            if hop is None:  # this level is done: back to the one before
                levels.pop()
                if taken:
                    used[order.pop()] = False
                    charges, nhops = taken.pop()
                    for k, amount in charges:
                        remaining[k] += amount
                    self.hops -= nhops
                continue
            charges, nhops = hop
            for k, amount in charges:
                remaining[k] -= amount
            self.hops += nhops
            order.append(j)
            used[j] = True
            taken.append(hop)
            opened = len(levels)
            # _arrive inlined for the common case (a GPU to open); the rest as it does.
            self.steps += 1
            if self.steps > budget:
                status = _OUT_OF_BUDGET
            elif len(order) == n:
                status = self._close(order)
            else:
                if forced is not None:
                    candidates = (forced[len(order)],)
                elif following is not None:
                    candidates = following[j]
                else:
                    candidates = self._candidates(order, forced)
                levels.append((iter(candidates), rows[j]))
                status = _GO
            if len(levels) == opened:  # a closed channel or the budget: take the hop back
                used[order.pop()] = False
                charges, nhops = taken.pop()
                for k, amount in charges:
                    remaining[k] += amount
                self.hops -= nhops
        while taken:
            order.pop()
            charges, nhops = taken.pop()
            for k, amount in charges:
                remaining[k] += amount
            self.hops -= nhops
        return status

    def _arrive(self, order, forced, levels) -> int:
        """The first step of :meth:`_place` at ``order`` (one GPU): count it, close a channel of
        one GPU, or open the GPU as a level of ``levels`` to try its candidates."""
        self.steps += 1
        if self.steps > self.budget:
            return _OUT_OF_BUDGET
        if len(order) == self.p.n:
            return self._close(order)
        last = order[-1]
        if forced is not None:
            candidates = (forced[len(order)],)
        elif self.following is not None:
            candidates = self.following[last]
        else:
            candidates = self._candidates(order, forced)
        levels.append((iter(candidates), self.rows[last]))
        return _GO

    def _closings(self, order) -> list:
        """``(booking, exit NIC)`` of each way to close a channel (:func:`_booking`): a ring's hop
        back to its first GPU; with NICs, leaving the last GPU for the entry NIC first, then any
        other; a chain: none."""
        p, last = self.p, order[-1]
        if p.nets:
            key = (last, self.entry)
            ways = self.exits.get(key)
            if ways is None:
                exits = [self.entry] + [k for k in range(len(p.nets)) if k != self.entry]
                ways = self.exits[key] = [(self.net_out[last][k], k) for k in exits
                                          if p.net_out[last][k].type <= self.net_ok]
            return ways
        if self.a.ring and p.n > 1:
            booking = self.rows[last][order[0]]
            return [(booking, None)] if booking is not None else []
        return [(None, None)]

    def _close(self, order) -> int:
        """Close the channel ``order`` each way it can be closed (:meth:`_closings`), keep the
        channels if they beat the best (more, or as many with fewer hops), and search on for more
        (:meth:`_next_channels`) unless the channels reach the ceiling or the links admit no more
        than the best set has."""
        remaining, channels, nets, states = self.remaining, self.channels, self.nets, self.states
        with_nets = bool(self.p.nets)
        most = self.a.max_channels
        for booking, exit_nic in self._closings(order):
            if booking is not None:
                charges, nhops = booking
                fits = True
                for k, amount in charges:  # the closing hop fits (once per channel closed)
                    if remaining[k] + _SLACK < amount:
                        fits = False
                        break
                if not fits:
                    continue
                for k, amount in charges:  # book it
                    remaining[k] -= amount
                self.hops += nhops
            channels.append(tuple(order))
            if with_nets:
                nets.append((self.entry, exit_nic))
            count = len(channels)
            if count > len(self.best) or (count == len(self.best) and self.hops < self.best_hops):
                self.best, self.best_hops, self.best_nets = list(channels), self.hops, list(nets)
                self.improved += 1
            if count >= self.ceiling:
                # maxChannels (NCCL's "perfect" search) or all the links can hold: nothing found
                # later could have more channels. NCCL would search on for an equal set with fewer
                # hops, which changes which channels are listed, not their number.
                status = _PERFECT
            else:
                state = tuple(remaining)
                known = states.get(state)
                if known is None:
                    known = self._state(state)
                # The channels placed and what the links still admit: when no more than the best
                # set has, nothing below can be kept (the branch cut short of the module docstring).
                if count + min(most - count, known[0]) <= len(self.best):
                    status = _GO
                else:
                    status = self._next_channels(state, known[1])
            channels.pop()
            if with_nets:
                nets.pop()
            if booking is not None:
                for k, amount in charges:
                    remaining[k] += amount
                self.hops -= nhops
            if status != _GO:
                return status
        return _GO

    def _state(self, state) -> tuple:
        """The entry of :attr:`states` for a room-left state: ``(channel bound, {})``."""
        spare = self.spare.get(state)
        if spare is None:
            a = self.a
            spare = self.spare[state] = _channel_bound(self.p, self.remaining, a.speed, a.type_intra, a.ring,
                                                       a.type_inter)
        known = self.states[state] = (spare, {})
        return known

    def _next_channels(self, state, after) -> int:
        """The search for the channels after a closed one (:meth:`_start_channel`) from the
        room-left ``state``, or its known outcome from ``after`` (this state's searches).

        Exact (not a cut): what follows a closed channel reads only the room left (exact
        floats), the number of channels placed and the last of them (the replay and, with NICs,
        the NIC to start from), the hops booked, and of the best set its size and hops. With all
        of these equal, it visits the same GPUs in the same order, takes the same steps, again
        finds nothing better and leaves the same room (to the last bit): only its step count and
        that room are applied, and the budget then runs out exactly where NCCL's would (a search
        that would cross the budget is run). The same channels placed in another order reach
        such a state again and again in a search that runs its budget out. Not with a shuffled
        order (a restart), whose random draws the skipped steps would have taken.
        """
        entry = self.entry
        if self.rng is not None:
            status = self._start_channel()
            self.entry = entry
            return status
        channels = self.channels
        key = (len(channels), channels[-1], self.hops, len(self.best), self.best_hops)
        seen = after.get(key)
        if seen is not None and self.steps + seen[0] <= self.budget:
            self.steps += seen[0]
            if seen[1] is not None:
                self.remaining[:] = seen[1]
            return _GO
        steps, improved = self.steps, self.improved
        status = self._start_channel()
        self.entry = entry
        if status == _GO and self.improved == improved:
            # Booking and taking back a hop (x - s*f + s*f) may not give x again to the last
            # bit: the room the search leaves is kept too, and left as it would have been.
            left = tuple(self.remaining)
            after[key] = (self.steps - steps, None if left == state else left)
        return status


def _booking(hop, speed) -> tuple:
    """What a hop books at ``speed``: ``(((class, speed x multiplier), ...), hops)``, the products
    the search checks and books (made once, they are the same floats)."""
    return tuple((k, speed * f) for k, f in hop.charges), hop.nhops


def _hop_booking(problem, attempt, i, j) -> tuple | None:
    """A row entry of :func:`_walk_tables`: the booking of the hop from GPU i to GPU j
    (:func:`_booking`), None when the attempt does not allow it."""
    hop = problem.hop
    if i == j or hop[i][j].type > attempt.type_intra or (not attempt.ring and hop[j][i].type > attempt.type_intra):
        return None
    return _booking(hop[i][j], attempt.speed)


def _net_booking(row, speed, index) -> tuple:
    """A NIC hop's entry of :func:`_walk_tables`: the booking of ``row[index]`` (:func:`_booking`)."""
    return _booking(row[index], speed)


def _walk_tables(problem, attempt) -> tuple:
    """What the DFS of an attempt reads per hop: ``(rows, following, net_in, net_out)``. ``rows[i][j]``: the hop's
    bookings ``(((class, speed x multiplier), ...), hops)`` (:func:`_booking`), None when it is not
    allowed (its type, and on a tree the reverse hop's too, search.cc);
    ``following[i]``: the candidates after GPU i that NCCL tries in a fixed order, allowed ones
    only (its PCI and path order, or on an NVSwitch system only the next and previous GPU);
    ``net_in`` and ``net_out``: the bookings of the NIC hops, as :attr:`_Problem.net_in` and
    :attr:`_Problem.net_out` are laid out."""
    n, speed = problem.n, attempt.speed
    if problem.nvswitch:
        # With an NVSwitch, NCCL tries only the neighbours: ring next then previous; trees
        # previous then next (search.cc ncclTopoSearchNextGpuSort). A row's entries are made as
        # the search reads them (LazyTable): of a 72-GPU rack's 5,112 hops it reads a few hundred.
        near = problem.ring_near if attempt.ring else problem.tree_near
        rows = tuple(LazyTable(functools.partial(_hop_booking, problem, attempt, i)) for i in range(n))
        following = tuple(tuple(j for j in near[i] if rows[i][j] is not None) for i in range(n))
    else:
        rows = tuple(tuple(_hop_booking(problem, attempt, i, j) for j in range(n)) for i in range(n))
        following = tuple(tuple(j for j in problem.order[i] if rows[i][j] is not None) for i in range(n))
    # The NIC hops' rows, made as they are read: a rack of 72 GPUs and 72 NICs has 10,368, of
    # which a search reads a few hundred.
    net_in = tuple(LazyTable(functools.partial(_net_booking, row, speed)) for row in problem.net_in)
    net_out = tuple(LazyTable(functools.partial(_net_booking, row, speed)) for row in problem.net_out)
    return rows, following, net_in, net_out


# Limits of the exhaustive check below: channel kinds and steps (beyond them: unknown).
_KINDS_MAX = 256
_EXHAUSTIVE_STEPS = 1 << 12


def _ring_kinds(problem, attempt) -> list | None:
    """The distinct ring channels an attempt allows, each as its charges ``((class, multiplier
    summed over its hops), ...)``; without the ones another channel beats on every class (a set
    of channels that fits still fits with them swapped), nor the ones that alone do not fit.
    None when there are more than :data:`_KINDS_MAX` orders (NIC pairs included)."""
    n, hop, speed = problem.n, problem.hop, attempt.speed
    ok = [[i != j and hop[i][j].type <= attempt.type_intra for j in range(n)] for i in range(n)]
    nets = problem.nets
    ends = [(a, b) for a in range(len(nets)) for b in range(len(nets))] if nets else [None]
    # A ring without NICs closes on itself: its orders from GPU 0 are all its rotations.
    orders, stack = [], [[i] for i in range(n)] if nets else [[0]]
    while stack:
        order = stack.pop()
        if len(order) == n:
            if nets or ok[order[-1]][order[0]]:
                orders.append(order)
                if len(orders) * len(ends) > _KINDS_MAX:
                    return None
            continue
        stack.extend(order + [j] for j in range(n) if j not in order and ok[order[-1]][j])
    kinds = set()
    for order in orders:
        hops = [hop[i][j] for i, j in zip(order, order[1:])]
        for end in ends:
            if end is None:
                path = hops + [hop[order[-1]][order[0]]]
            else:
                entry, leave = problem.net_in[end[0]][order[0]], problem.net_out[order[-1]][end[1]]
                if entry.type > attempt.type_inter or leave.type > attempt.type_inter:
                    continue
                path = [entry, *hops, leave]
            use: dict = {}
            for h in path:
                for k, f in h.charges:
                    use[k] = use.get(k, 0.0) + f
            if all(speed * f <= problem.class_capacity[k] + 2 * _SLACK for k, f in use.items()):
                kinds.add(tuple(sorted(use.items())))
    kinds = sorted(kinds)
    return [a for a in kinds if not any(b != a and _dominates(b, a) for b in kinds)]


def _dominates(b, a) -> bool:
    """Channel ``b`` charges every class at most as much as channel ``a`` does."""
    charge = dict(a)
    return all(k in charge and f <= charge[k] for k, f in b)


def _admits_more(problem, attempt, count) -> bool:
    """Whether ``count + 1`` ring channels of the attempt could fit the links in some order, by
    exhaustive search over sets of channel kinds (:func:`_ring_kinds`). A relaxation of the
    channel search (the order of booking does not matter to what fits, and the tolerance is
    doubled): False proves no search finds more than ``count``. True when it cannot tell (too
    many kinds or steps)."""
    kinds = _ring_kinds(problem, attempt)
    if kinds is None or count >= attempt.max_channels:
        return kinds is None
    remaining = [c + _SLACK for c in problem.class_capacity]  # the doubled tolerance
    return _fill(problem, attempt, kinds, 0, count + 1, remaining, [_EXHAUSTIVE_STEPS])


def _fill(problem, attempt, kinds, first, wanted, remaining, steps) -> bool:
    """Whether ``wanted`` more channels of ``kinds[first:]`` fit ``remaining`` (True when the
    ``steps`` left run out)."""
    if wanted == 0:
        return True
    steps[0] -= 1
    if steps[0] < 0:
        return True
    speed = attempt.speed
    if _channel_bound(problem, remaining, speed, attempt.type_intra, True, attempt.type_inter) < wanted:
        return False
    for i in range(first, len(kinds)):
        kind = kinds[i]
        if all(remaining[k] + _SLACK >= speed * f for k, f in kind):
            saved = [remaining[k] for k, _ in kind]  # restored exactly, not by adding back
            for k, f in kind:
                remaining[k] -= speed * f
            fits = _fill(problem, attempt, kinds, i, wanted - 1, remaining, steps)
            for (k, _), value in zip(kind, saved):
                remaining[k] = value
            if fits:
                return True
    return False


def _search_once(problem, attempt, ceiling) -> _Found:
    """One channel search at one speed and type: NCCL's order in NCCL's budget, then (not NCCL's)
    seeded restarts when it ran out of budget below what the links admit (``ceiling``)."""
    budget = _TIMEOUT_SAME_CHANNELS if attempt.same else (_TIMEOUT if attempt.ring else _TIMEOUT_TREE)
    found = _Dfs(problem, attempt, budget, ceiling).run()
    # NCCL's static order can spend its whole budget behind a poor first channel (on a DGX-1V
    # with one more 0-1 link it finds 5 rings of 20 where 6 fit). So that more links never
    # give fewer channels, restart with the widest room first and ties broken by a seeded
    # shuffle, keeping the best (reproducible). A restart replays NCCL's own order in a
    # smaller budget, and so cannot find more, when every candidate list has at most one
    # GPU (two GPUs) or follows the NVSwitch neighbours: then it is not run.
    replays = problem.nvswitch or problem.n <= 2
    if not found.timed_out or attempt.same or len(found.channels) >= ceiling or replays:
        return found
    # Restarts keep a result only when it has more channels: when no set of more channels fits
    # the links (:func:`_admits_more`), they cannot change the answer and are not run.
    if attempt.ring and not _admits_more(problem, attempt, len(found.channels)):
        return found
    for seed in range(_RESTARTS):
        second = _Dfs(problem, attempt, _RESTART_BUDGET, ceiling, by_room=True, rng=random.Random(seed)).run()
        if len(second.channels) > len(found.channels):
            found = dataclasses.replace(second, restart=seed, in_budget=len(found.channels))
        if len(found.channels) >= ceiling:
            break
    return found


# ------------------------------------------------------------------------------ the passes
@dataclass(frozen=True, slots=True)
class _Solution:
    """An accepted set of channels (GPU indices of the problem) and what it was searched at."""

    channels: tuple
    nets: tuple
    speed: float  # [B/s]
    type_intra: PathType
    type_inter: PathType
    same: bool
    hops: float


@dataclass(frozen=True, slots=True)
class _Tried:
    """One attempt: the solution it gave (None below the minimum or skipped), its search (None if
    skipped) and its step of the trace."""

    solution: _Solution | None
    found: _Found | None
    step: SearchStep


@dataclass(frozen=True, slots=True)
class _PassResult:
    """What a pass leaves: the best solution, its trace steps, and whether searches ran out of
    budget (any of them; the last one run, after which NCCL skips pass 2)."""

    best: _Solution | None
    trace: tuple
    timed_out: bool
    last_timed_out: bool


def _try(problem, attempt, minimum, incumbent) -> _Tried:
    """Search at one speed and type unless the links show it cannot be accepted or beat ``incumbent``."""
    tried = functools.partial(SearchStep, speed=attempt.speed, type_intra=attempt.type_intra.name,
                              type_inter=attempt.type_inter.name if problem.nets else "", same=attempt.same)
    ceiling = min(attempt.max_channels,
                  _channel_bound(problem, problem.class_capacity, attempt.speed, attempt.type_intra,
                                 attempt.ring, attempt.type_inter))
    if not attempt.ring:
        ceiling = min(ceiling, _chain_bound(problem, problem.class_capacity, attempt.speed, attempt.type_intra))
    if ceiling < minimum or (incumbent is not None and ceiling * attempt.speed
                             < len(incumbent.channels) * incumbent.speed - _SLACK):
        # No set of channels at this speed can be accepted or beat the best: NCCL would search
        # in vain (and possibly run out of budget), so skip it; the outcome is the same.
        return _Tried(None, None, tried("skipped", count=ceiling))
    if incumbent is not None and ceiling * attempt.speed <= len(incumbent.channels) * incumbent.speed + _SLACK \
            and ceiling * _fewest_hops(problem, attempt) >= incumbent.hops:
        # At best a tie in bandwidth, which wins only with fewer hops (ncclTopoCompareGraphs):
        # even the shortest channels, as many as can tie, have no fewer. Skipped as above.
        return _Tried(None, None, tried("tie", count=ceiling))
    found = _search_once(problem, attempt, ceiling)
    count = len(found.channels)
    step = tried("attempt", count=count, limit=0 if count >= minimum else minimum, timed_out=found.timed_out,
                 restart=found.restart, in_budget=found.in_budget)
    if count < minimum:
        return _Tried(None, found, step)
    return _Tried(_Solution(found.channels, found.nets, attempt.speed, attempt.type_intra, attempt.type_inter,
                            attempt.same, found.hops), found, step)


def _fewest_hops(problem, attempt) -> float:
    """A lower bound on the hops of one channel of the attempt: its GPU-to-GPU hops (n on a ring
    without NICs, n - 1 otherwise) each at least the fewest any allowed hop counts, and with NICs
    the fewest of an entry and of an exit."""
    n = problem.n
    if n < 2:
        return 0.0
    allowed = [h.nhops for row in problem.hop for h in row if h is not None and h.type <= attempt.type_intra]
    if not allowed:
        return 0.0
    inner = (n if attempt.ring and not problem.nets else n - 1) * min(allowed)
    if not problem.nets:
        return inner
    entry = [h.nhops for row in problem.net_in for h in row if h.type <= attempt.type_inter]
    leave = [h.nhops for row in problem.net_out for h in row if h.type <= attempt.type_inter]
    return inner + min(entry, default=0) + min(leave, default=0)


def _better(candidate, incumbent) -> bool:
    """ncclTopoCompareGraphs: more nChannels x bwIntra, then fewer hops."""
    if incumbent is None:
        return True
    a = len(candidate.channels) * candidate.speed
    b = len(incumbent.channels) * incumbent.speed
    if not math.isclose(a, b, rel_tol=1e-12):
        return a > b
    return candidate.hops < incumbent.hops


def _pass1(problem, speeds, start, total, ring, min_channels, max_channels) -> _PassResult:
    """Search pass 1: from the start speed down, same channels then free ones, relaxing the
    intra-node path type (with NET: up to typeInter), then the NET path type (while no solution,
    or below the solution's, or below PXN), then the speed; stop when the channels fill
    ``totalBw`` or reach ``maxChannels``, or the speed falls to 0.49 of the best."""
    inter_types = problem.net_types if problem.nets else (PathType.PIX,)
    trace, timed_out, last_timed_out, best = [], False, False, None
    index, type_intra, type_inter, same = start, problem.types[0], inter_types[0], True
    while True:
        tried = _try(problem, _Attempt(speeds[index], type_intra, type_inter, same, ring, max_channels),
                     min_channels, best)
        trace.append(tried.step)
        if tried.found is not None:
            timed_out = timed_out or tried.found.timed_out
            last_timed_out = tried.found.timed_out
        if tried.solution is not None and _better(tried.solution, best):
            best = tried.solution
        if best is not None and (len(best.channels) == max_channels
                                 or len(best.channels) * best.speed >= total - _SLACK):
            break
        if same:
            same = False
            continue
        same = True
        limit = type_inter if problem.nets else problem.types[-1]
        higher = [t for t in problem.types if type_intra < t <= max(limit, problem.types[0])]
        if higher and (best is None or type_intra < best.type_intra):
            type_intra = higher[0]
            continue
        type_intra = problem.types[0]
        higher_inter = [t for t in inter_types if t > type_inter]
        if problem.nets and higher_inter and (best is None or type_inter < best.type_inter
                                              or type_inter < PathType.PXN):
            type_inter = higher_inter[0]
            continue
        type_inter = inter_types[0]
        if index + 1 < len(speeds) and (best is None or speeds[index + 1] / best.speed > _SPEED_FLOOR):
            index += 1
            continue
        return _PassResult(best, tuple(trace), timed_out, last_timed_out)
    return _PassResult(best, tuple(trace), timed_out, last_timed_out)


def _pass2(problem, speeds, solution, incumbent, max_channels) -> _PassResult:
    """Search pass 2 (rings): try each higher speed with as many channels as ``solution``."""
    trace, timed_out = [], False
    step = next((i for i, s in enumerate(speeds) if s <= solution.speed + _SLACK), len(speeds) - 1)
    while step > 0:
        step -= 1
        tried = _try(problem, _Attempt(speeds[step], solution.type_intra, solution.type_inter, True, True,
                                       max_channels), len(solution.channels), incumbent)
        trace.append(tried.step)
        if tried.found is not None and tried.found.timed_out:
            timed_out = True
            break
        candidate = tried.solution
        if candidate is None or (len(candidate.channels) * candidate.speed
                                 <= len(solution.channels) * solution.speed):
            break
        solution = dataclasses.replace(solution, channels=candidate.channels, nets=candidate.nets,
                                       speed=candidate.speed, same=candidate.same)
    return _PassResult(solution, tuple(trace), timed_out, timed_out)


def _search_host(fabric, nodes, nets, pattern, min_channels, max_channels) -> ChannelSearch:
    """NCCL's ncclTopoCompute for the GPUs of one host (and its NICs, on several nodes):
    pass 1, duplication, pass 2."""
    G, profile = fabric.G, fabric.profile
    # The ring and the tree search of a GPU set, and every later estimate of it, share its problem
    # and the problem's content key (both are costly to make; the fabric's graph is frozen).
    asked = (tuple(nodes), tuple(nets))
    made = fabric.problems.get(asked)
    if made is None:
        # Every tuple the build makes is kept (by the problem, and the fabric's hop bookings):
        # the collector is paused while they are made, as when a fabric is prepared, so that a
        # full collection does not traverse a large cluster's graph for them on the way (the
        # search below, likewise: what it makes is freed by reference counting or kept).
        with collector_paused():
            problem = _build_problem(fabric, nodes, nets)
        made = (problem, *_relative_key(G, problem))
        fabric.problems.put(asked, made)
    problem, content, names = made
    cc = min(G.nodes[n]["compute_capability"] for n in nodes)
    # The search reads only the problem, the GPUs' compute capability and the profile: a problem
    # equal in content (the same GPUs, NICs, edges, capacities and routes, under the names local
    # to their host) has the same answer, whichever host, graph object or call it comes from:
    # a what-if on host k of a cluster searches host k once per shape of the failure, not once
    # per host it is tried on, and the hosts it leaves alone are the baseline's.
    key = (content, cc, pattern, min_channels, max_channels, id(profile))
    # The memo is the fabric's (NcclSystem.searches), shared with fabrics whose hosts are alike.
    cached = fabric.searches.get(key)
    if cached is not None and cached[0] is profile:
        _, result, searched = cached
        return result if searched == names else _renamed(result, dict(zip(searched, names)))
    with collector_paused():
        result = _compute(problem, profile, cc, nets, pattern, min_channels, max_channels)
    fabric.searches.put(key, (profile, result, names))
    return result


def _relative_key(G, problem) -> tuple:
    """``(key, names)``: :func:`_problem_key` with every node name relative (a node of the
    problem's host by its local name, ``gpu0`` of ``h3.gpu0``, and how many nodes of that local
    name came before it: the trays an NVLink domain fuses into one host share local names; any
    other node by the order it first appears in), and the problem's node names in the order of
    their labels. Labels are one per node, so two problems with equal keys are the same problem
    under the renaming that pairs their names in that order (:func:`_renamed`)."""
    host = G.nodes[problem.gpus[0]].get("host")
    label: dict = {}
    seen: dict = {}

    def relative(n):
        found = label.get(n)
        if found is None:
            if G.nodes[n].get("host") == host:
                local = str(n).split(".", 1)[-1]
                seen[local] = seen.get(local, -1) + 1
                found = ("local", local, seen[local])
            else:
                found = ("other", len(label))
            label[n] = found
        return found

    gpus = tuple(map(relative, problem.gpus))
    edges = tuple((relative(u), relative(v)) for u, v in problem.edges)
    nets = tuple(map(relative, problem.nets))
    whole = _problem_key(problem)
    key = (gpus, problem.nvswitch, edges, *whole[3:11], nets, *whole[12:])
    return key, tuple(label)


def _renamed(result: ChannelSearch, name: dict) -> ChannelSearch:
    """A search result with its node names replaced through ``name`` (those it lacks kept)."""
    def each(nodes):
        return tuple(name.get(n, n) for n in nodes)

    return dataclasses.replace(
        result, gpus=each(result.gpus), channels=tuple(map(each, result.channels)),
        nets=tuple(map(each, result.nets)),
        loads=tuple(LinkLoad(each(load.edge), load.reserved, load.capacity) for load in result.loads),
        trace=tuple(dataclasses.replace(step, names=each(step.names)) if step.names else step
                    for step in result.trace))


def _problem_key(problem) -> tuple:
    """Everything of a :class:`_Problem` the search reads (its derived caches excluded)."""
    return (problem.gpus, problem.nvswitch, problem.edges, problem.capacity, problem.edge_class,
            problem.class_capacity, problem.hop, problem.order, problem.types, problem.max_bw,
            problem.total_bw, problem.nets, problem.net_in, problem.net_out, problem.net_ports,
            problem.net_types, problem.net_firsts, problem.net_entries, problem.net_exits)


def _compute(problem, profile, cc, nets, pattern, min_channels, max_channels) -> ChannelSearch:
    """Pass 1, duplication and pass 2 on a built problem."""
    ring = pattern == "ring"
    nodes = problem.gpus
    speeds = profile.speed_array(cc, inter=bool(nets))
    total = problem.total_bw * (1 if ring else problem.n / max(problem.n - 1, 1))
    start = next((i for i, s in enumerate(speeds)
                  if s <= problem.max_bw + _SLACK and s * min_channels <= total + _SLACK), len(speeds) - 1)
    first = _pass1(problem, speeds, start, total, ring, min_channels, max_channels)
    trace, timed_out, duplicated = list(first.trace), first.timed_out, False
    if first.best is None:  # NCCL's fallback: one channel in PCI order, 0.1 GB/s, type SYS.
        order, ends = (tuple(range(problem.n)),), ((0, 0),) if nets else ()
        # 0.1 GB/s is the figure NCCL tunes the fallback with, not a rate: the channel's data moves
        # over the paths it has, as fast as its slowest hop lets one channel move (capped at the
        # highest search speed), and that is what a run measures.
        used = _loads(problem, order, 1.0, ring, ends)
        rate = min(speeds[0], 1.0 / used[0].utilisation) if used and used[0].utilisation > 0 else FALLBACK_BANDWIDTH
        trace.append(SearchStep("fallback", speed=speeds[-1], rate=rate, names=tuple(used[0].edge) if used else ()))
        solution = _Solution(order, ends, rate, PathType.SYS, PathType.SYS if nets else PathType.PIX, True, 0)
    else:
        solution = first.best
        dup = dup_channels(len(solution.channels), solution.speed, compute_capability=cc,
                           max_channels=max_channels, pattern=pattern, profile=profile)
        duplicated = dup.duplicated
        if duplicated:
            solution = dataclasses.replace(solution, channels=(solution.channels * 2)[:dup.nchannels],
                                           nets=(solution.nets * 2)[:dup.nchannels], speed=dup.bw_intra)
            trace.append(SearchStep("duplicated", speed=dup.bw_intra, count=dup.nchannels))
        # Pass 2 raises the speed with as many channels (rings only; single-node trees have
        # bwIntra == bwInter, which NCCL does not raise); NCCL skips it after a search that ran
        # out of budget.
        if ring and not first.last_timed_out:
            second = _pass2(problem, speeds, solution, first.best, max_channels)
            solution, timed_out = second.best, timed_out or second.timed_out
            trace += second.trace
    channels = solution.channels
    return ChannelSearch(pattern, tuple(nodes), tuple(tuple(nodes[i] for i in c) for c in channels),
                         float(solution.speed), solution.type_intra, bool(solution.same),
                         float(problem.max_bw), float(problem.total_bw),
                         _loads(problem, channels, solution.speed, ring, solution.nets), duplicated,
                         timed_out, tuple(trace),
                         nets=tuple((problem.nets[a], problem.nets[b]) for a, b in solution.nets),
                         type_inter=solution.type_inter if nets else PathType.PIX)


def _loads(problem, channels, bw, ring, nets=()) -> tuple:
    """What the channels reserve on every edge they cross, most utilised first."""
    reserved = [0.0] * len(problem.edges)
    for c, order in enumerate(channels):
        hops = [problem.hop[i][j] for i, j in zip(order, order[1:])]
        if nets:
            entry, leave = nets[c]
            hops += [problem.net_in[entry][order[0]], problem.net_out[order[-1]][leave]]
        elif ring and len(order) > 1:
            hops.append(problem.hop[order[-1]][order[0]])
        for hop in hops:
            for k, f in hop.flow:
                reserved[k] += bw * f
    loads = [LinkLoad(problem.edges[k], reserved[k], problem.capacity[k])
             for k in range(len(problem.edges)) if reserved[k] > 0]
    loads.sort(key=lambda load: -load.utilisation)
    return tuple(loads)


def search_channels(G: nx.DiGraph, gpus: GpuIds = None, *, pattern: str = "ring", min_channels: int | None = None,
                    max_channels: int | None = None, profile: str | NcclProfile | None = None) -> ChannelSearch:
    """NCCL's channel search for a set of GPUs of one host (see the module docstring).

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric.
    gpus : iterable of int or str, optional
        GPU ids (``topo.select_gpus``); every GPU by default. Order does not matter: NCCL's
        search works in PCI (index) order.
    pattern : str
        ``"ring"`` (NCCL's ring graph) or ``"balanced_tree"`` (its tree graph).
    min_channels, max_channels : int, optional
        Defaults: ring 1 and ``MAXCHANNELS / 2``; tree both equal to the ring's channels
        (NCCL searches the tree graph with the ring's count, NVIDIA/nccl v2.27.7-1 src/graph/connect.cc and init.cc).
    profile : str or NcclProfile, optional
        NCCL version profile (default: the reference version).

    Returns
    -------
    ChannelSearch

    Raises
    ------
    ChannelSearchError
        For an unknown pattern or inconsistent channel bounds.
    topo.GpuSelectionError, topo.TopologyError
        For bad GPU ids or an invalid fabric.
    """
    validate(G)
    nodes = sorted(select_gpus(G, gpus), key=lambda n: (G.nodes[n]["host"], G.nodes[n]["index"]))
    return search_channels_in(NcclSystem(G, profile, validate=False), nodes, pattern=pattern,
                              min_channels=min_channels, max_channels=max_channels)


def search_channels_in(fabric: NcclSystem, nodes: Sequence[str], *, pattern: str = "ring",
                       min_channels: int | None = None, max_channels: int | None = None) -> ChannelSearch:
    """:func:`search_channels` on a prepared fabric, for GPU nodes in index order.

    GPUs of several hosts: NCCL searches every node with its NICs (channels enter the node
    through a NIC, cross all its GPUs and leave through a NIC) and keeps the minimum channel
    count and bandwidth over the nodes; hosts that are copies of each other
    (:meth:`NcclSystem.host_kind`) with the same local GPU set are searched once.
    """
    G, profile = fabric.G, fabric.profile
    if pattern not in PATTERNS:
        raise ChannelSearchError(f"unknown pattern {pattern!r}: expected one of {', '.join(PATTERNS)}")
    hosts: dict = {}
    for n in nodes:
        hosts.setdefault(G.nodes[n]["host"], []).append(n)
    ring = pattern == "ring"
    maxchannels = profile.require("max_channels")
    if len(hosts) > 1:
        if not ring:
            raise ChannelSearchError("across nodes only the ring graph is searched: NCCL's tree graph "
                                     "with NET nodes is taken as the ring's channels (expected pattern "
                                     "'ring')")
        return _search_nodes(fabric, hosts, min_channels, max_channels)
    if ring:
        min_channels = 1 if min_channels is None else min_channels
        max_channels = maxchannels // 2 if max_channels is None else max_channels
    elif min_channels is None or max_channels is None:
        ring_result = search_channels_in(fabric, nodes)
        min_channels = ring_result.nchannels if min_channels is None else min_channels
        max_channels = ring_result.nchannels if max_channels is None else max_channels
    _check_bounds(min_channels, max_channels, maxchannels)
    return _search_host(fabric, nodes, (), pattern, min_channels, max_channels)


def _check_bounds(min_channels, max_channels, maxchannels) -> None:
    if not (isinstance(min_channels, int) and isinstance(max_channels, int)
            and 1 <= min_channels <= max_channels <= maxchannels):
        raise ChannelSearchError(f"expected 1 <= min_channels <= max_channels <= {maxchannels}, "
                                 f"received {min_channels!r} and {max_channels!r}")


def _search_nodes(fabric, hosts, min_channels, max_channels) -> ChannelSearch:
    """Ring channels of a communicator that spans several hosts (one search per node shape)."""
    G, profile = fabric.G, fabric.profile
    maxchannels = profile.require("max_channels")
    min_channels = 1 if min_channels is None else min_channels
    max_channels = maxchannels // 2 if max_channels is None else max_channels
    _check_bounds(min_channels, max_channels, maxchannels)
    # The fabric's searches of host shapes: NCCL's search of a node depends only on the node's
    # GPUs, NICs and links, so a search applies to the hosts that are copies of its host (the
    # hosts of a built cluster are: topo.cluster; a what-if or an imported cluster may differ).
    done = fabric.host_searches
    results = {}
    for host, members in hosts.items():
        shape = (fabric.host_kind(host), tuple(G.nodes[n]["index"] for n in members))
        key = (*shape, min_channels, max_channels)
        if key not in done:
            nets = fabric.network_nics(host)
            if not nets:
                raise ChannelSearchError(f"host {host} has no NIC on a network: expected a cluster "
                                         f"fabric (topo.cluster) for GPUs of several hosts")
            done[key] = (host, _search_host(fabric, members, nets, "ring", min_channels, max_channels))
        if shape not in results:
            moved = _on_host(G, *done[key], host)
            if moved is None:  # not a copy of the host searched: search this one
                moved = _search_host(fabric, members, fabric.network_nics(host), "ring", min_channels, max_channels)
            results[shape] = moved
    # NCCL reduces nChannels and the bandwidths to the minimum over all ranks (init.cc).
    worst = min(results.values(), key=lambda r: (r.nchannels * r.bw_intra, r.nchannels))
    first = results[fabric.host_kind(min(hosts)), tuple(G.nodes[n]["index"] for n in hosts[min(hosts)])]
    nchannels = min(r.nchannels for r in results.values())
    bw = min(r.bw_intra for r in results.values())
    trace = first.trace + (() if worst is first else
                           (SearchStep("other_shape", speed=worst.bw_intra, count=worst.nchannels),))
    # The channels cross every node, each at the bandwidth all run at (NCCL's minimum): what they
    # reserve is each node shape's, scaled to it, most utilised first. The first host's alone
    # would hide a later host's degraded links (a what-if on host 1 would bind as on none).
    loads = sorted((LinkLoad(load.edge, load.reserved * bw / r.bw_intra, load.capacity)
                    for r in results.values() if r.bw_intra > 0 for load in r.loads),
                   key=lambda load: -load.utilisation)
    return ChannelSearch("ring", tuple(n for h in sorted(hosts) for n in hosts[h]),
                         first.channels[:nchannels], bw, max(r.type_intra for r in results.values()),
                         first.same_channels, first.max_bw, first.total_bw, tuple(loads),
                         first.duplicated, any(r.timed_out for r in results.values()), trace,
                         nets=first.nets[:nchannels], type_inter=max(r.type_inter for r in results.values()),
                         nnodes=len(hosts))


def _on_host(G, searched, result, host):
    """A host search done on host ``searched``, moved to the same GPUs and NICs of ``host``;
    None when some node of ``searched`` the result names has no counterpart on ``host`` (hosts
    that are not copies of each other, as the trays of a rack: then search ``host`` itself).

    A node outside both hosts that the search loads (the NVSwitch chips of a rack its trays
    reach) is the one of ``host``'s NVLink domain with the same kind and index when the two hosts
    are in different domains (the trays ``t6`` of racks 0 and 1 are copies, each wired to its own
    rack's chips); every moved edge must be an edge of ``G`` with the attributes NCCL's capacity
    reads equal to the searched one's (:func:`models.engine.nccl.system.link_key`), else None."""
    if searched == host:
        return result
    nodes = G.nodes
    local = {n.split(".", 1)[-1]: n for n, h in G.nodes(data="host") if h == host}
    name: dict = {}
    named = {n for c in result.channels for n in c} | set(result.gpus) \
        | {n for pair in result.nets for n in pair} | {n for load in result.loads for n in load.edge}
    domain = nodes[result.gpus[0]].get("nvlink_domain"), nodes[local.get(result.gpus[0].split(".", 1)[-1],
                                                                         result.gpus[0])].get("nvlink_domain")
    by_place: dict | None = None  # (NVLink domain, kind, index) -> node, outside every host
    for n in named:
        data = nodes[n]
        if data.get("host") == searched:
            counterpart = local.get(n.split(".", 1)[-1])
            if counterpart is None:
                return None
            name[n] = counterpart
        elif domain[0] != domain[1] and data.get("nvlink_domain") is not None \
                and data.get("nvlink_domain") == domain[0]:
            if by_place is None:
                by_place = {(d.get("nvlink_domain"), d["kind"], d.get("index")): m for m, d in nodes(data=True)
                            if d.get("nvlink_domain") is not None and d.get("host") not in (searched, host)}
            counterpart = by_place.get((domain[1], data["kind"], data.get("index")))
            if counterpart is None:
                return None
            name[n] = counterpart
        else:
            name[n] = n

    def move_edge(u, v):
        u2, v2 = name[u], name[v]
        if G.adj[u][v]["kind"] == "network":
            # A NIC's port: the other end is the network switch that host's NIC is cabled to.
            if u2 == u and v2 != v:
                u2 = next((w for w, d in G.pred[v2].items() if d["kind"] == "network"), None)
            elif v2 == v and u2 != u:
                v2 = next((w for w, d in G.adj[u2].items() if d["kind"] == "network"), None)
        return u2, v2

    loads = [LinkLoad(move_edge(*load.edge), load.reserved, load.capacity) for load in result.loads]
    adj = G.adj
    if any(None in load.edge or load.edge[1] not in adj[load.edge[0]]
           or link_key(adj[load.edge[0]][load.edge[1]]) != link_key(adj[old.edge[0]][old.edge[1]])
           for load, old in zip(loads, result.loads)):
        return None
    return dataclasses.replace(
        result, gpus=tuple(name[n] for n in result.gpus),
        channels=tuple(tuple(name[n] for n in c) for c in result.channels), loads=tuple(loads),
        nets=tuple((name[a], name[b]) for a, b in result.nets))
