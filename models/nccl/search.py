"""NCCL's channel search on a fabric: the rings and trees a communicator of GPUs gets.

NCCL builds its collectives on *channels*: for the ring algorithm, each channel is an order
of the GPUs whose consecutive hops (and the hop back to the first) are routed over the
fabric; for the tree algorithm inside a node, each channel is a chain of the GPUs. Every
channel reserves its per-channel bandwidth ``bwIntra`` on every link its hops cross, so the
number of channels a fabric holds at a given speed is set by its links
(nccl-model.md section 3; NCCL ``src/graph/search.cc``). This module replays that search on
our graphs:

1. **NCCL's view of the fabric.** Only the communicator's GPUs are in NCCL's system (a GPU
   outside the communicator cannot relay); links are charged NCCL's figures, not line rates
   (:func:`nccl_capacity`: per NVLink ``ncclTopoNVLinkBw`` of the profile, per PCIe link
   ``width x speed / 80``, the socket-to-socket connection ``BDW_QPI_BW`` / ``SKL_QPI_BW``).
   Hops follow :func:`models.routes.route` with NCCL's relay through one GPU (NVB) allowed.
   A route through NVSwitches is sprayed over the parallel switch planes, which is what
   NCCL's single aggregated NVSwitch node models.
2. **Start.** ``maxBw`` is the widest GPU-to-GPU path, ``totalBw`` the widest per-GPU sum of
   NVLink bandwidth (or its PCIe link); the search starts at the first speed of the
   profile's array not above ``maxBw`` with ``speed x minChannels <= totalBw``.
3. **Pass 1.** At each speed, find as many channels as fit (up to ``maxChannels``), first
   with every channel the same order (``sameChannels``), then with free orders, then with
   worse path types allowed, then at the next lower speed (while it is more than 0.49 of the
   best found). Stop when the channels fill ``totalBw`` or the search is perfect.
4. **Duplication** (:func:`models.nccl.tuning.dup_channels`): fast channels are split in two.
5. **Pass 2.** Try higher speeds with the same number of channels.

Each channel search is a depth-first search with NCCL's candidate order (PCI order first,
then a replay of the previous channel, then the other GPUs by path bandwidth; on an NVSwitch
system only the next and previous GPU) and NCCL's budget of steps. It keeps the best set of
channels (most ``nChannels x bw``, then fewest hops). One difference from NCCL: a branch that
provably cannot beat the best set found is cut short, which saves time but can only matter
when NCCL's own search would have run out of budget.

What is not modelled (single node only): NET nodes and the inter-node patterns (the
multi-node issue), crossNic, NVLS, CollNet, the pre-Ampere ``fwBw/8`` reverse charge (it
applies only to paths that start at an NVSwitch or a NIC).

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

import math
import random
from dataclasses import dataclass

import numpy as np

from topo.errors import DgxTopoError
from topo.schema import validate
from topo.select import select_gpus

from ..routes import PathType
from .profiles import nccl_profile
from .system import NcclSystem
from .tuning import PATTERNS as TUNING_PATTERNS, ChannelGraph

__all__ = ["ChannelSearch", "ChannelSearchError", "LinkLoad", "ChannelDuplication", "search_channels",
           "search_channels_in", "dup_channels", "PATTERNS"]

#: Search patterns: NCCL's ring graph (id 0) and its single-node tree graph (id 1).
PATTERNS = ("ring", "balanced_tree")

# Search budgets, counted in GPU placements (nccl-model.md 3.4, search.cc v2.19+):
# NCCL_SEARCH_TIMEOUT 2^14, NCCL_SEARCH_TIMEOUT_TREE 2^14, NCCL_SEARCH_TIMEOUT_SAMECHANNELS 2^8.
_TIMEOUT = 1 << 14
_TIMEOUT_TREE = 1 << 14
_TIMEOUT_SAME_CHANNELS = 1 << 8
# Restarts after a search that ran out of budget below what the links admit (not NCCL's).
_RESTARTS = 16
_RESTART_BUDGET = 1 << 11
# Lowering the speed stops once it would fall to 0.49 of the best solution (search.cc).
_SPEED_FLOOR = 0.49
# Capacity comparisons tolerate this much rounding, as NCCL's SUB_ROUND keeps 0.001 GB/s.
_SLACK = 1e3  # [B/s]
# The fallback when nothing is found: one channel in index order at 0.1 GB/s, type SYS.
_FALLBACK_BW = 0.1e9  # [B/s]


class ChannelSearchError(DgxTopoError):
    """Bad arguments to the channel search."""


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
    trace : tuple of str
        The searches tried, in order, with what each found (for ``--explain``).
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

    def graph(self) -> ChannelGraph:
        """The tuning model's view of this result."""
        return ChannelGraph(self.nchannels, self.bw_intra, self.type_intra.name,
                            type_inter=self.type_inter.name, pattern=self.pattern,
                            same_channels=self.same_channels)


class _Hop:
    """A routed GPU-to-GPU hop as the search charges it."""

    __slots__ = ("type", "bandwidth", "charges", "nhops")

    def __init__(self, path_type, bandwidth, charges, nhops):
        self.type = path_type
        self.bandwidth = bandwidth
        self.charges = charges  # tuple of (edge index, bandwidth multiplier)
        self.nhops = nhops


class _Problem:
    """The communicator's GPUs, their hops and the edge capacities, as plain arrays."""

    def __init__(self, fabric, gpus, nets=()):
        G, profile = fabric.G, fabric.profile
        members = set(gpus)
        self.n = len(gpus)
        self.gpus = list(gpus)
        self.edges: list = []
        self.index: dict = {}
        index = self.index
        self._port_cache: dict = {}
        self.capacity: list = []
        self.hop = [[None] * self.n for _ in range(self.n)]
        for i, a in enumerate(gpus):
            for j, b in enumerate(gpus):
                if i == j:
                    continue
                path_type, flow = fabric.hop(a, b, members)
                overhead = fabric.pcie_overhead(path_type)
                charges, width = [], math.inf
                for (u, v), share in flow:
                    if (u, v) not in index:
                        index[u, v] = len(self.edges)
                        self.edges.append((u, v))
                        self.capacity.append(fabric.capacity(u, v))
                    k = index[u, v]
                    factor = share * (overhead if G.adj[u][v]["kind"] == "pcie" else 1.0)
                    charges.append((k, factor))
                    width = min(width, self.capacity[k] / factor)
                # Parallel switch paths are equally long, so the shares add up to the hops of one.
                self.hop[i][j] = _Hop(path_type, width, tuple(charges), round(sum(f for _, f in flow)))
        self.nvswitch = any(G.nodes[v]["kind"] == "nvswitch" for g in gpus for v in G.successors(g))
        # NET hops (multi-node): NIC -> GPU enters a channel, GPU -> NIC leaves it. Each
        # charges the PCIe links on the way and the NIC's network port in its direction
        # (NCCL's NET node bandwidth, speed / 8000 GB/s).
        self.nets = list(nets)
        self.net_in = [[None] * self.n for _ in self.nets]
        self.net_out = [[None] * len(self.nets) for _ in range(self.n)]
        self.net_ports = []
        for m, nic in enumerate(self.nets):
            for i, g in enumerate(gpus):
                net = fabric.net_route(g, nic)
                path_type, edges, port_out, port_in = net.path_type, net.edges, net.port_out, net.port_in
                overhead = fabric.pcie_overhead(path_type)
                for flow, hops in (((*edges, port_out), "out"), ((port_in, *((v, u) for u, v in reversed(edges))), "in")):
                    charges, width = [], math.inf
                    for u, v in flow:
                        if (u, v) not in index:
                            index[u, v] = len(self.edges)
                            self.edges.append((u, v))
                            self.capacity.append(fabric.capacity(u, v))
                        k = index[u, v]
                        factor = overhead if G.adj[u][v]["kind"] == "pcie" else 1.0
                        charges.append((k, factor))
                        width = min(width, self.capacity[k] / factor)
                    hop = _Hop(path_type, width, tuple(charges), len(flow))
                    if hops == "out":
                        self.net_out[i][m] = hop
                    else:
                        self.net_in[m][i] = hop
            self.net_ports.append((index[port_in], index[port_out]))
        self.net_types = sorted({h.type for row in self.net_out for h in row})
        # The PCIe edges a channel uses to enter its first GPU from a NIC and to leave its last
        # GPU for a NIC (per GPU), which bound the channels as tightly as the NIC ports do.
        self.net_entries = [sorted({self.net_in[m][i].charges[-1][0] for m in range(len(self.nets))})
                            for i in range(self.n)] if self.nets else []
        self.net_exits = [sorted({self.net_out[i][m].charges[0][0] for m in range(len(self.nets))})
                          for i in range(self.n)] if self.nets else []
        if self.n > 1:
            hops = [self.hop[i][j] for i in range(self.n) for j in range(self.n) if i != j]
            self.max_bw = max(h.bandwidth for h in hops)
            self.types = sorted({h.type for h in hops})
        else:
            self.max_bw = profile.loc_bandwidth
            self.types = [PathType.LOC]
        if self.nets:  # with NET nodes, maxBw is the widest GPU-to-NET path (search.cc)
            self.max_bw = max(h.bandwidth for row in self.net_out for h in row)
        total = 0.0
        for g in gpus:
            # NCCL's totalBw: the GPU's NVLink bandwidth (to switches and to GPUs of the
            # communicator; others are not in NCCL's system) or its PCIe link.
            nvlink = sum(fabric.capacity(g, v) for v, d in G.adj[g].items() if d["kind"] == "nvlink"
                         and (G.nodes[v]["kind"] != "gpu" or v in members))
            pcie = max((fabric.capacity(g, v) for v, d in G.adj[g].items() if d["kind"] == "pcie"),
                       default=0.0)
            total = max(total, nvlink, pcie)
        self.total_bw = total if self.n > 1 else profile.loc_bandwidth
        # Candidate order after GPU i (search.cc ncclTopoSearchNextGpuSort without NET):
        # wider path first, then fewer hops, then index.
        self.order = [sorted((j for j in range(self.n) if j != i),
                             key=lambda j, i=i: (-self.hop[i][j].bandwidth, self.hop[i][j].nhops, j))
                      for i in range(self.n)]

    # -- upper bound on channels ---------------------------------------------------------
    def _ports(self, type_intra) -> list:
        """Per GPU: the edges its allowed hops leave and enter it by.

        Returns, per GPU, ``(pairs, exits, entries)``: ``pairs`` are ``(out edge, in edge)``
        of the direct NVLink bundles to a neighbour that only the direct hops use, the rest
        are ``(edge, smallest share)`` of every other edge a hop leaves or enters by.
        """
        if type_intra in self._port_cache:
            return self._port_cache[type_intra]
        ports = []
        for i in range(self.n):
            out_use: dict = {}
            in_use: dict = {}
            for j in range(self.n):
                if j == i:
                    continue
                for hop, use, end in ((self.hop[i][j], out_use, 0), (self.hop[j][i], in_use, 1)):
                    if hop.type > type_intra:
                        continue
                    for k, f in hop.charges:
                        if self.edges[k][end] == self.gpus[i]:
                            direct = len(hop.charges) == 1 and f == 1.0
                            old = use.get(k, (True, math.inf))
                            use[k] = (old[0] and direct, min(old[1], f))
            pairs, exits, entries = [], [], []
            paired = set()
            for k, (direct, f) in out_use.items():
                neighbour = self.edges[k][1]
                back = self.index.get((neighbour, self.gpus[i]))
                if direct and back in in_use and in_use[back][0] and self.n > 2:
                    pairs.append((k, back))
                    paired.add(back)
                else:
                    exits.append((k, f))
            entries = [(k, f) for k, (_, f) in in_use.items() if k not in paired]
            ports.append((tuple(pairs), tuple(exits), tuple(entries)))
        self._port_cache[type_intra] = ports
        return ports

    def _connected(self, speed, type_intra, remaining) -> bool:
        """Every GPU reaches every other by hops that fit ``speed`` now: a channel needs it."""
        def fits(i, j):
            hop = self.hop[i][j]
            return hop.type <= type_intra and all(remaining[k] + _SLACK >= speed * f
                                                  for k, f in hop.charges)
        n = self.n
        return (len(_reach(n, 0, fits)) == n
                and len(_reach(n, 0, lambda i, j: fits(j, i))) == n)

    def channel_bound(self, remaining, speed, type_intra, ring=True, type_inter=None) -> int:
        """Most ring channels the links could still hold at ``speed`` with hops up to ``type_intra``.

        No bound for trees (a chain does not enter its first GPU nor leave its last). Every
        ring channel leaves and enters every GPU exactly once. Out of GPU i, an edge with
        room ``r`` carrying share ``f`` of a hop admits ``f x floor(r / (speed x f))``
        channels; in a ring of three or more GPUs a channel cannot enter from and leave to
        the same direct neighbour, so with U entries and V exits of which neighbour x holds
        u_x and v_x, GPU i admits at most ``min(U, V, U - u_x + V - v_x)`` channels.
        """
        if self.nets:
            # Every channel enters through one NIC port and leaves through one, of the NICs
            # the GPUs may reach at this typeInter.
            usable = [m for m in range(len(self.nets))
                      if type_inter is None or any(self.net_out[i][m].type <= type_inter for i in range(self.n))]

            def ports(which):
                return sum(math.floor((remaining[self.net_ports[m][which]] + _SLACK) / speed) for m in usable)
            def gpu_side(edges_per_gpu):
                return sum(math.floor((remaining[k] + _SLACK) / speed)
                           for edges in edges_per_gpu for k in edges)
            limit = min(ports(0), ports(1), gpu_side(self.net_entries), gpu_side(self.net_exits))
            if self.n > 1 and not self._connected(speed, type_intra, remaining):
                return 0
            return limit
        if self.n == 1:
            return 1 << 30
        if not self._connected(speed, type_intra, remaining):
            return 0
        if not ring:
            return 1 << 30

        def units(k, f):
            return f * math.floor((remaining[k] + _SLACK) / (speed * f))

        bound = 1 << 30
        for pairs, exits, entries in self._ports(type_intra):
            paired = [(units(o, 1.0), units(b, 1.0)) for o, b in pairs]
            out = sum(v for v, _ in paired) + sum(units(k, f) for k, f in exits)
            inward = sum(u for _, u in paired) + sum(units(k, f) for k, f in entries)
            limit = min(out, inward)
            for v, u in paired:
                limit = min(limit, inward - u + out - v)
            bound = min(bound, math.floor(limit + 1e-9))
        return bound


def _reach(n, start, step) -> set:
    seen, todo = {start}, [start]
    while todo:
        i = todo.pop()
        for j in range(n):
            if j not in seen and step(i, j):
                seen.add(j)
                todo.append(j)
    return seen


class _Timeout(Exception):
    pass


class _Perfect(Exception):
    pass


class _Search:
    """One ``ncclTopoSearchRec``: as many channels as fit at one speed and type."""

    def __init__(self, problem, speed, type_intra, same_channels, ring, max_channels, budget,
                 type_inter=None):
        self.p = problem
        self.type_inter = type_inter
        self.nets: list = []  # per placed channel: (NIC index in, NIC index out)
        self.best_nets: list = []
        self.net_in = None  # NIC the channel being placed entered by
        self.speed = speed
        self.type_intra = type_intra
        self.same = same_channels
        self.ring = ring
        self.max_channels = max_channels
        self.budget = budget
        self.steps = 0
        self.remaining = list(problem.capacity)
        self.channels: list = []
        self.best: list = []
        self.best_hops = math.inf
        self.hops = 0
        self.timed_out = False
        self.by_room = False  # candidate order: NCCL's static one, or widest room left first
        self.rng = None  # a random.Random shuffles the candidates before that order
        self.ceiling = min(max_channels, problem.channel_bound(problem.capacity, speed, type_intra, ring,
                                                               type_inter))

    # -- capacity ----------------------------------------------------------------------
    def _allowed(self, i, j) -> bool:
        hop = self.p.hop[i][j]
        if hop.type > self.type_intra:
            return False
        if not self.ring and self.p.hop[j][i].type > self.type_intra:
            return False  # tree patterns check the reverse path type too (search.cc)
        need = self.speed
        remaining = self.remaining
        return all(remaining[k] + _SLACK >= need * f for k, f in hop.charges)

    def _charge(self, i, j, sign) -> None:
        hop = self.p.hop[i][j]
        amount = sign * self.speed
        for k, f in hop.charges:
            self.remaining[k] -= amount * f
        self.hops += sign * hop.nhops

    # -- recursion ---------------------------------------------------------------------
    def _candidates(self, order, forced):
        last = order[-1]
        n = self.p.n
        if forced is not None:
            following = forced[len(order)] if len(order) < n else None
            return [] if following is None or following in order else [following]
        if self.p.nvswitch:
            # With an NVSwitch, NCCL tries only the neighbours: ring next then previous;
            # trees previous then next (search.cc ncclTopoSearchNextGpuSort).
            near = [(last + 1) % n, (last - 1) % n]
            if not self.ring:
                near.reverse()
            return [j for j in dict.fromkeys(near) if j not in order]
        candidates = [j for j in self.p.order[last] if j not in order]
        if self.rng is not None:
            self.rng.shuffle(candidates)
        if self.by_room:
            remaining = self.remaining
            room = {j: min((remaining[k] / f for k, f in self.p.hop[last][j].charges), default=math.inf)
                    for j in candidates}
            candidates.sort(key=lambda j: -room[j])  # stable: NCCL's order breaks ties
        return candidates

    def _place(self, order, forced) -> None:
        self.steps += 1
        if self.steps > self.budget:
            raise _Timeout
        if len(order) == self.p.n:
            self._close(order)
            return
        for j in self._candidates(order, forced):
            if self._allowed(order[-1], j):
                self._charge(order[-1], j, +1)
                order.append(j)
                self._place(order, forced)
                order.pop()
                self._charge(order[-1], j, -1)

    def _record(self) -> None:
        count = len(self.channels)
        if count > len(self.best) or (count == len(self.best) and self.hops < self.best_hops):
            self.best, self.best_hops = list(self.channels), self.hops
            self.best_nets = list(self.nets)
        if count >= self.ceiling:
            raise _Perfect

    def _net_hop_fits(self, hop) -> bool:
        if hop.type > self.type_inter:
            return False
        remaining, need = self.remaining, self.speed
        return all(remaining[k] + _SLACK >= need * f for k, f in hop.charges)

    def _net_charge(self, hop, sign) -> None:
        amount = sign * self.speed
        for k, f in hop.charges:
            self.remaining[k] -= amount * f
        self.hops += sign * hop.nhops

    def _close_net(self, order) -> None:
        """A ring channel with NET: leave the last GPU for the entry NIC first, then any."""
        last = order[-1]
        m = len(self.p.nets)
        for out in [self.net_in] + [k for k in range(m) if k != self.net_in]:
            hop = self.p.net_out[last][out]
            if not self._net_hop_fits(hop):
                continue
            self._net_charge(hop, +1)
            self.channels.append(tuple(order))
            self.nets.append((self.net_in, out))
            self._record()
            if self._bound() > len(self.best):
                entry = self.net_in
                self.start_channel()
                self.net_in = entry
            self.channels.pop()
            self.nets.pop()
            self._net_charge(hop, -1)

    def _start_net_channel(self) -> None:
        """NCCL's ncclTopoSearchRecNet: pick a NIC, enter the first GPU from it."""
        p = self.p
        m = len(p.nets)
        previous = self.channels[-1] if self.channels else None
        start = len(self.channels) % m  # spread channels over the NICs, as NCCL's local NICs do
        for k in range(m):
            net = (start + k) % m
            firsts = sorted(range(p.n), key=lambda g: (-p.net_in[net][g].bandwidth, p.net_in[net][g].type, g))
            tries = []
            if previous is not None:
                tries.append((previous[0], previous))  # FORCED_ORDER_REPLAY
            if not self.same or previous is None:
                tries += [(g, None) for g in firsts]
            for first, forced in tries:
                hop = p.net_in[net][first]
                if not self._net_hop_fits(hop):
                    continue
                self._net_charge(hop, +1)
                self.net_in = net
                self._place([first], forced)
                self._net_charge(hop, -1)

    def _close(self, order) -> None:
        if self.p.nets:
            self._close_net(order)
            return
        closing = self.ring and self.p.n > 1
        if closing:
            if not self._allowed(order[-1], order[0]):
                return
            self._charge(order[-1], order[0], +1)
        self.channels.append(tuple(order))
        count = len(self.channels)
        if count > len(self.best) or (count == len(self.best) and self.hops < self.best_hops):
            self.best, self.best_hops = list(self.channels), self.hops
        if count >= self.ceiling:
            # max_channels (NCCL's "perfect" search) or all the links can hold: nothing
            # found later could have more channels. NCCL would search on for an equal set
            # with fewer hops, which changes which channels are listed, not their number.
            raise _Perfect
        if self._bound() > len(self.best):
            self.start_channel()
        self.channels.pop()
        if closing:
            self._charge(order[-1], order[0], -1)

    def _bound(self) -> int:
        """Channels reachable from here: those placed and what the links still admit."""
        spare = self.p.channel_bound(self.remaining, self.speed, self.type_intra, self.ring, self.type_inter)
        return len(self.channels) + min(self.max_channels - len(self.channels), spare)

    def start_channel(self) -> None:
        n = self.p.n
        if self.p.nets:
            self._start_net_channel()
            return
        if not self.channels:
            self._place([0], tuple(range(n)))  # FORCED_ORDER_PCI: GPU 0, 1, 2, ...
        else:
            previous = self.channels[-1]
            self._place([previous[0]], previous)  # FORCED_ORDER_REPLAY
        if not self.same or not self.channels:
            for start in range(n):
                self._place([start], None)

    def run(self) -> "_Search":
        try:
            self.start_channel()
        except _Timeout:
            self.timed_out = True
        except _Perfect:
            pass
        return self


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _positive_bandwidth(name, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value <= 0:
        raise ChannelSearchError(f"{name} must be a finite bandwidth > 0 [B/s], received {value!r}")
    return float(value)


def _better(candidate, incumbent) -> bool:
    """ncclTopoCompareGraphs: more nChannels x bwIntra, then fewer hops."""
    if incumbent is None:
        return True
    a = len(candidate["channels"]) * candidate["speed"]
    b = len(incumbent["channels"]) * incumbent["speed"]
    if not math.isclose(a, b, rel_tol=1e-12):
        return a > b
    return candidate["hops"] < incumbent["hops"]


def search_channels(G, gpus=None, *, pattern: str = "ring", min_channels: int | None = None,
                    max_channels: int | None = None, profile=None) -> ChannelSearch:
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
        (NCCL searches the tree graph with the ring's count, nccl-model.md 3.1).
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


def search_channels_in(fabric, nodes, *, pattern="ring", min_channels=None, max_channels=None):
    """:func:`search_channels` on a prepared fabric, for GPU nodes in index order.

    GPUs of several hosts: NCCL searches every node with its NICs (channels enter the node
    through a NIC, cross all its GPUs and leave through a NIC) and keeps the minimum channel
    count and bandwidth over the nodes; hosts with the same local GPU set are searched once.
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


def _search_nodes(fabric, hosts, min_channels, max_channels) -> "ChannelSearch":
    """Ring channels of a communicator that spans several hosts (one search per node shape)."""
    G, profile = fabric.G, fabric.profile
    from topo.cluster import compute_nics  # noqa: PLC0415 (topo.cluster imports nothing of ours)

    maxchannels = profile.require("max_channels")
    min_channels = 1 if min_channels is None else min_channels
    max_channels = maxchannels // 2 if max_channels is None else max_channels
    _check_bounds(min_channels, max_channels, maxchannels)
    results = {}
    for host, members in hosts.items():
        shape = tuple(G.nodes[n]["index"] for n in members)
        if shape not in results:
            nets = [v for v in compute_nics(G, host) if any(d["kind"] == "network" for d in G.adj[v].values())]
            if not nets:
                raise ChannelSearchError(f"host {host} has no NIC on a network: expected a cluster "
                                         f"fabric (topo.cluster) for GPUs of several hosts")
            results[shape] = _search_host(fabric, members, nets, "ring", min_channels, max_channels)
    # NCCL reduces nChannels and the bandwidths to the minimum over all ranks (init.cc).
    worst = min(results.values(), key=lambda r: (r.nchannels * r.bw_intra, r.nchannels))
    first = results[tuple(G.nodes[n]["index"] for n in hosts[min(hosts)])]
    nchannels = min(r.nchannels for r in results.values())
    bw = min(r.bw_intra for r in results.values())
    trace = first.trace + (() if worst is first else
                           (f"another node shape holds {worst.nchannels} x {worst.bw_intra / 1e9:g} GB/s",))
    return ChannelSearch("ring", tuple(n for h in sorted(hosts) for n in hosts[h]),
                         first.channels[:nchannels], bw, max(r.type_intra for r in results.values()),
                         first.same_channels, first.max_bw, first.total_bw, first.loads,
                         first.duplicated, any(r.timed_out for r in results.values()), trace,
                         nets=first.nets[:nchannels], type_inter=max(r.type_inter for r in results.values()),
                         nnodes=len(hosts))


def _search_host(fabric, nodes, nets, pattern, min_channels, max_channels) -> "ChannelSearch":
    """NCCL's ncclTopoCompute for the GPUs of one host (and its NICs, on several nodes)."""
    G, profile = fabric.G, fabric.profile
    ring = pattern == "ring"
    problem = _Problem(fabric, nodes, nets)
    cc = min(G.nodes[n]["compute_capability"] for n in nodes)
    speeds = profile.speed_array(cc, inter=bool(nets))
    total = problem.total_bw * (1 if ring else problem.n / max(problem.n - 1, 1))
    index = next((i for i, s in enumerate(speeds)
                  if s <= problem.max_bw + _SLACK and s * min_channels <= total + _SLACK),
                 len(speeds) - 1)
    trace: list[str] = []
    timed_out = False  # any search ran out of budget
    last_timed_out = False  # the last search did: NCCL then skips pass 2
    inter_types = problem.net_types if nets else [PathType.PIX]

    def attempt(speed, type_intra, type_inter, same, minimum):
        nonlocal timed_out, last_timed_out
        label = (f"{speed / 1e9:g} GB/s, type {type_intra.name}"
                 + (f"/{type_inter.name}" if nets else "") + f", {'same' if same else 'free'} channels")
        ceiling = min(max_channels, problem.channel_bound(problem.capacity, speed, type_intra, ring,
                                                          type_inter if nets else None))
        if ceiling < minimum or (best is not None
                                 and ceiling * speed < len(best["channels"]) * best["speed"] - _SLACK):
            # No set of channels at this speed can be accepted or beat the best: NCCL would
            # search in vain (and possibly time out), so skip it; the outcome is the same.
            trace.append(f"{label}: skipped, links hold at most {ceiling} channel(s)")
            return None, None
        budget = _TIMEOUT_SAME_CHANNELS if same else (_TIMEOUT if ring else _TIMEOUT_TREE)
        search = _Search(problem, speed, type_intra, same, ring, max_channels, budget, type_inter).run()
        retry = ""
        if search.timed_out and not same and len(search.best) < search.ceiling:
            # NCCL's static order can spend its whole budget behind a poor first channel
            # (on a DGX-1V with one more 0-1 link it finds 5 rings of 20 where 6 fit). So
            # that more links never give fewer channels, restart with the widest room first
            # and ties broken by a seeded shuffle, keeping the best (reproducible).
            for seed in range(_RESTARTS):
                second = _Search(problem, speed, type_intra, same, ring, max_channels, _RESTART_BUDGET,
                                 type_inter)
                second.by_room = True
                second.rng = random.Random(seed)
                second.run()
                if len(second.best) > len(search.best):
                    retry = f" (NCCL's order: {len(search.best)} in its budget; restart {seed}: more)"
                    search = second
                if len(search.best) >= search.ceiling:
                    break
        timed_out = timed_out or search.timed_out
        last_timed_out = search.timed_out
        found = len(search.best)
        trace.append(f"{label}: {found} channel(s)"
                     + (" (budget exhausted)" if search.timed_out else "") + retry
                     + ("" if found >= minimum else f", fewer than the {minimum} required"))
        if found < minimum:
            return None, search
        return {"channels": search.best, "nets": search.best_nets, "speed": speed, "type": type_intra,
                "type_inter": type_inter, "same": same, "hops": search.best_hops}, search

    best = None
    type_intra, type_inter = problem.types[0], inter_types[0]
    same = True
    while True:
        result, _ = attempt(speeds[index], type_intra, type_inter, same, min_channels)
        if result is not None and _better(result, best):
            best = result
        if best is not None and (len(best["channels"]) == max_channels
                                 or len(best["channels"]) * best["speed"] >= total - _SLACK):
            break
        if same:
            same = False
            continue
        same = True
        # Relax the intra-node path type (with NET: up to typeInter), then the NET path type
        # (while no solution, or below the solution's, or below PXN), then the speed.
        limit = type_inter if nets else problem.types[-1]
        higher = [t for t in problem.types if type_intra < t <= max(limit, problem.types[0])]
        if higher and (best is None or type_intra < best["type"]):
            type_intra = higher[0]
            continue
        type_intra = problem.types[0]
        higher_inter = [t for t in inter_types if t > type_inter]
        if nets and higher_inter and (best is None or type_inter < best["type_inter"]
                                      or type_inter < PathType.PXN):
            type_inter = higher_inter[0]
            continue
        type_inter = inter_types[0]
        if index + 1 < len(speeds) and (best is None or speeds[index + 1] / best["speed"] > _SPEED_FLOOR):
            index += 1
            continue
        break

    channel_nets: list = []
    if best is None:  # NCCL's fallback: one channel in PCI order, 0.1 GB/s, type SYS.
        trace.append("nothing found: fallback to one channel in index order at 0.1 GB/s")
        channels, bw, type_intra, same = [tuple(range(problem.n))], _FALLBACK_BW, PathType.SYS, True
        type_inter = PathType.SYS if nets else PathType.PIX
        channel_nets = [(0, 0)] if nets else []
        duplicated = False
    else:
        channels, bw, type_intra, same = best["channels"], best["speed"], best["type"], best["same"]
        type_inter, channel_nets = best["type_inter"], best["nets"]
        dup = dup_channels(len(channels), bw, compute_capability=cc, max_channels=max_channels,
                           pattern=pattern, profile=profile)
        duplicated = dup.duplicated
        if duplicated:
            channels = (channels * 2)[:dup.nchannels]
            channel_nets = (channel_nets * 2)[:dup.nchannels]
            bw = dup.bw_intra
            trace.append(f"duplicated: {dup.nchannels} channels x {bw / 1e9:g} GB/s")
        # Pass 2: raise the speed with as many channels (rings only; single-node trees
        # have bwIntra == bwInter, which NCCL does not raise).
        step = next((i for i, s in enumerate(speeds) if s <= bw + _SLACK), len(speeds) - 1)
        while ring and not last_timed_out and step > 0:
            step -= 1
            result, search = attempt(speeds[step], type_intra, type_inter, True, len(channels))
            if search is not None and search.timed_out:
                break
            if result is not None and len(result["channels"]) * result["speed"] > len(channels) * bw:
                channels, bw, same = result["channels"], result["speed"], result["same"]
                channel_nets = result["nets"]
            else:
                break

    loads = _loads(problem, channels, bw, ring, channel_nets)
    return ChannelSearch(pattern, tuple(nodes), tuple(tuple(nodes[i] for i in c) for c in channels),
                         float(bw), type_intra, bool(same), float(problem.max_bw),
                         float(problem.total_bw), loads, duplicated, timed_out, tuple(trace),
                         nets=tuple((problem.nets[a], problem.nets[b]) for a, b in channel_nets),
                         type_inter=type_inter if nets else PathType.PIX)


def _loads(problem, channels, bw, ring, nets=()) -> tuple:
    reserved = [0.0] * len(problem.edges)
    for c, order in enumerate(channels):
        hops = [problem.hop[i][j] for i, j in zip(order, order[1:])]
        if nets:
            entry, leave = nets[c]
            hops += [problem.net_in[entry][order[0]], problem.net_out[order[-1]][leave]]
        elif ring and len(order) > 1:
            hops.append(problem.hop[order[-1]][order[0]])
        for hop in hops:
            for k, f in hop.charges:
                reserved[k] += bw * f
    loads = [LinkLoad(problem.edges[k], reserved[k], problem.capacity[k])
             for k in range(len(problem.edges)) if reserved[k] > 0]
    loads.sort(key=lambda load: -load.utilisation)
    return tuple(loads)


@dataclass(frozen=True, slots=True)
class ChannelDuplication:
    """Result of ``ncclTopoDupChannels``.

    Attributes
    ----------
    nchannels : int
        Channels after the rule.
    bw_intra, bw_inter : float
        Per-channel bandwidths after the rule. [B/s]
    duplicated : bool
        Whether channels were duplicated.
    reason : str
        Which condition decided.
    """

    nchannels: int
    bw_intra: float
    bw_inter: float
    duplicated: bool
    reason: str


_DUP_PATTERNS = TUNING_PATTERNS + ("nvls",)


def dup_channels(nchannels: int, bw_intra: float, bw_inter: float | None = None, *,
                 compute_capability: int, max_channels: int | None = None,
                 pattern: str = "ring", profile=None) -> ChannelDuplication:
    """NCCL's channel duplication at the end of search pass 1 (``ncclTopoDupChannels``).

    No change for NVLS, for ``bwIntra`` < 25 GB/s, or for ccMin > 80 with ``bwIntra`` < 50
    GB/s and more than 4 channels. Otherwise ``dup = min(2 x nChannels, maxChannels)``, both
    bandwidths are divided by ``ceil(dup / nChannels)`` and ``nChannels = dup``
    (nccl-model.md 3.7, v2.18+). ``nChannels x bw`` is unchanged when ``dup`` is
    ``2 x nChannels``, and lower when ``maxChannels`` clips it.

    Parameters
    ----------
    nchannels : int
        Channels found by pass 1.
    bw_intra : float
        Per-channel ``bwIntra``. [B/s]
    bw_inter : float, optional
        Per-channel ``bwInter``; defaults to ``bw_intra``. [B/s]
    compute_capability : int
        Minimum compute capability of the GPUs (ccMin).
    max_channels : int, optional
        The graph's ``maxChannels``: ``MAXCHANNELS / 2`` for the ring graph (the default),
        the ring's ``nChannels`` for the tree graph (nccl-model.md 3.1).
    pattern : str
        ``"ring"``, ``"balanced_tree"``, ``"tree"``, ``"split_tree"`` or ``"nvls"``.
    profile : str or NcclProfile, optional

    Returns
    -------
    ChannelDuplication

    Raises
    ------
    MissingConstantError
        When the profile lacks the rule (v2.12).

    Examples
    --------
    The DGX-H100 ring of nccl-model.md 3.8 (6 x 60 GB/s) and tree (12 x 30 GB/s):

    >>> d = dup_channels(6, 60e9, compute_capability=90)
    >>> d.nchannels, d.bw_intra / 1e9
    (12, 30.0)
    >>> dup_channels(12, 30e9, compute_capability=90, max_channels=12).duplicated
    False
    """
    profile = nccl_profile(profile)
    if not _is_int(nchannels) or nchannels < 1:
        raise ChannelSearchError(f"nchannels must be an integer >= 1, received {nchannels!r}")
    bw_intra = _positive_bandwidth("bw_intra", bw_intra)
    bw_inter = bw_intra if bw_inter is None else _positive_bandwidth("bw_inter", bw_inter)
    if not _is_int(compute_capability) or compute_capability < 0:
        raise ChannelSearchError(f"compute_capability must be an integer such as 70 or 90, received "
                          f"{compute_capability!r}")
    if pattern not in _DUP_PATTERNS:
        raise ChannelSearchError(f"unknown pattern {pattern!r}: expected one of {list(_DUP_PATTERNS)}")
    rule = profile.require("dup_channels")
    if max_channels is None:
        max_channels = profile.require("max_channels") // 2
    if not _is_int(max_channels) or max_channels < nchannels:
        raise ChannelSearchError(f"max_channels must be an integer >= nchannels ({nchannels}), received "
                          f"{max_channels!r}")

    def keep(reason):
        return ChannelDuplication(nchannels, bw_intra, bw_inter, False, reason)

    if pattern == "nvls":
        return keep("NVLS graphs are never duplicated")
    if bw_intra < rule.min_bw:
        return keep(f"bwIntra below {rule.min_bw:g} B/s")
    if compute_capability > rule.cc_above and bw_intra < rule.cc_bw_below \
            and nchannels > rule.cc_nchannels_above:
        return keep(f"ccMin > {rule.cc_above}, bwIntra below {rule.cc_bw_below:g} B/s and more "
                    f"than {rule.cc_nchannels_above} channels")
    dup = min(2 * nchannels, max_channels)
    divisor = -(-dup // nchannels)
    if dup == nchannels:
        return keep(f"already at maxChannels ({max_channels})")
    return ChannelDuplication(dup, bw_intra / divisor, bw_inter / divisor, True,
                              f"duplicated to min(2 x {nchannels}, {max_channels}) channels")
