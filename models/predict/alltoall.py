"""All-to-all, all-to-allv, gather, scatter and send/recv as NCCL runs them: a per-peer schedule.

NCCL runs these as grouped sends and receives laid out in rounds of peers on its p2p channels
(:mod:`models.engine.nccl.p2p_plan`: rounds, channels per peer, chunk, protocol, batches). This
module times that layout on a fabric:

``time = base + the rounds' hwLat + fill + max(link term, channel term)``

- *base*: NCCL's Ring base latency of the protocol the largest transfer runs (the kernel launch
  as NCCL's tuner prices one operation, :meth:`NcclProfile.base_lat`).
- *rounds*: a round's send and receive on a channel are one p2p work (``ncclDevWorkP2p``, a
  send and a receive, src/include/device.h v2.19+ [U]); the kernel runs one block per channel,
  the blocks at once, and a block runs its works in batches of up to
  ``NCCL_MAX_DEV_WORK_P2P_PER_BATCH`` (8), a batch's works at once, the batches one after
  another in round order (src/device/sendrecv.h ``RunWorkBatch`` [U]). A batch waits for one hop
  of NCCL's ``hwLat`` of its works' hardware (``NVLINK`` inside a node over NVLink, ``PCI`` over
  PCIe or host memory, ``NET`` to another node) and protocol, its largest. The rounds' latency
  is the slowest channel's: the sum over its batches (:attr:`P2pSchedule.handshakes`). On one
  node of 8 GPUs each round has its own channels: one hop; across nodes the rounds of one node
  delta share a base channel (``ncclP2pChannelBaseForRound``): one hop per batch of them.
  [U] NCCL's source states no latency for p2p; the hop is its tuner's ``hwLat`` of a ring
  step (Ring column), as for the collectives.
- *link term*: every round's traffic runs at once over NCCL's paths (its NVB relays, its PCIe
  overhead, PXN and the network legs per NIC), each link shared by the bytes crossing it, at
  NCCL's capacity of the link: ``max over links of bytes / capacity``. This is the load model
  this module replaced, unchanged: bandwidth-bound sizes keep its figures. Across nodes a GPU
  sends through its nearest NIC, and to a network that NIC does not reach (another rail of a
  rail-only fabric) through NCCL's PXN proxy, the GPU beside a NIC of that network over NVLink
  (the PXN path of NVIDIA/nccl v2.27.7-1 src/graph/paths.cc, which the net transport's p2p sends
  take unless ``NCCL_PXN_DISABLE=1``, src/transport/net.cc [U]).
- *channel term*: one channel moves at most NCCL's per-channel bandwidth of the communicator's
  ring graph (the search's ``bwIntra``; half of it for LL, whose 16-byte lines carry 8 bytes of
  data), and a rank's parts on one channel run one after the other: ``max over channels of the
  bytes of its parts / rate``. It binds at mid sizes, where a peer's transfer takes few channels.
  [U] the per-channel rate of a p2p channel is taken as the ring's; a part is counted at the
  largest part NCCL cuts at its size or below (:func:`models.engine.nccl.p2p_plan.part_bytes`),
  so the time never falls where NCCL doubles a peer's channels.
- *steps*: a Simple part moves in steps of the chunk through the receiver's ``NCCL_STEPS`` (8)
  buffer slots, LL in one (a transfer of at most 16 KiB fits an LL step); the sender runs up to
  8 slots ahead, so a step's flag handshake hides behind the steps in flight, as a collective's
  chain does (:mod:`models.predict.pipeline`), and what each step adds is the kernel's per-step
  work of the protocol (:data:`models.predict.pipeline.DEFAULT_STEP_COSTS`, fitted on the DGX-2:
  LL 0, Simple 0), added to a channel's term.
- *fill*: a Simple part goes through the receiver's buffer one chunk at a time (the sender
  writes a step, posts it, the receiver copies it out), so the last chunk of each batch is
  copied out after it arrives: ``batches x min(part, chunk) / rate``. LL moves data with its
  flags and has no fill.
- *proxy*: every send or receive to a peer on another NCCL node is a network operation the
  rank's one proxy thread progresses, one after another (src/proxy.cc ``ncclProxyProgress``
  walks its ops in turn [U]); NCCL's tuner charges a network operation ``getNetOverhead()``,
  x3 for Simple (src/graph/tuning.cc v2.18+, 1 us on an Intel host, 2 on AMD, the floor of a
  ring's step across nodes: :meth:`NcclProfile.net_overhead_of`). The rank's network
  operations add that much each to the latency. 0 on one node and before v2.18.
- *enqueue* (the host's): nccl-tests posts one ``ncclSend`` and one ``ncclRecv`` per peer,
  itself included (src/alltoall.cu, gather.cu, scatter.cu loop over every rank), inside one
  ``ncclGroupStart``/``ncclGroupEnd``; each is a task the host appends (``taskAppend``) and
  the group lays out (``addP2pToPlan``, src/enqueue.cc v2.19+) before the one kernel launch.
  The measurement model's ``launch_per_gpu`` (fitted on one collective a GPU) holds one task
  and the launch; each further task costs the host ``getNetOverhead()`` (LL's, 1 us on Intel),
  NCCL's own figure for a host thread's work on one operation [U: NCCL prices its proxy's
  work so, not its enqueue's; no source here times the enqueue]. It is
  :attr:`P2pSchedule.enqueue`, per GPU a host thread drives, and lengthens the host term
  (:func:`models.predict.measure.measured`), which the GPU's latency overlaps.

The estimate (:func:`models.predict.collectives.estimate`) states the base, the rounds and the fill
as its latency and the size over the larger of the two terms as its bandwidth; the measurement
model (:mod:`models.predict.measure`) then adds the host and the achieved link rates as for every
collective. :func:`alltoallv`, :func:`gather`, :func:`scatter` and :func:`sendrecv` time any
matrix of per-pair bytes the same way and return a :class:`P2pEstimate`.

Examples
--------
>>> import topo
>>> e = alltoallv(topo.build("dgxh100"), [[0, 2**20], [2**20, 0]], gpus=[0, 1])
>>> e.schedule.plan.nchannels, e.schedule.rounds[0].parts, e.schedule.rounds[0].protocol
(32, 16, 'Simple')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

import topo
from topo.errors import DgxTopoError
from topo.select import GpuIds
from topo.units import is_int

from ..engine.fabric import PreparedFabric, prepare
from ..engine.nccl.channels import channel_graphs
from ..engine.nccl.p2p_plan import (MAX_P2P_PER_BATCH, P2pChannels, channel_base, channel_for_part, chunk_size,
                                    p2p_channels, part_bytes, parts, peer_nchannels, protocol,
                                    rank_rounds)
from ..engine.nccl.system import NcclSystem, cpu_vendor
from ..engine.results import gpu_set, tidy_records
from ..engine.routes import PathType
from .measure import CalibrationLike, Measured, measured, measurement_model
from .pipeline import DEFAULT_STEP_COSTS, StepCosts

__all__ = ["P2pError", "ScheduleRound", "P2pSchedule", "P2pLayout", "P2pEstimate", "p2p_layout", "flow_load",
           "nvlink_groups", "cpu_vendor", "alltoallv", "gather", "scatter", "sendrecv", "LL_DATA_SHARE"]

#: Share of an LL line that is data: 8 bytes of data and 8 of flags per 16-byte line
#: (NVIDIA/nccl v2.27.7-1 src/device/prims_ll.h, ``ncclLLFifoLine``).
LL_DATA_SHARE = 0.5


class P2pError(DgxTopoError):
    """A point-to-point request that cannot be timed (a matrix of the wrong shape, negative bytes,
    a root that is not a rank...)."""


@dataclass(frozen=True, slots=True)
class ScheduleRound:
    """One round of NCCL's p2p schedule with a transfer.

    Attributes
    ----------
    index : int
        The round (1 ... ; round 0 is each rank's copy to itself, not timed).
    delta : tuple of int
        ``(node delta, local delta)``: whom rank 0 sends to.
    hardware : str
        ``"NVLINK"``, ``"PCI"`` or ``"NET"``: NCCL's hardware column of the round's hops.
    protocol : str
        ``"LL"`` or ``"Simple"`` (the round's largest transfer's).
    nbytes : int
        The round's largest transfer. [bytes]
    parts : int
        Channels that transfer takes.
    channels : tuple of int
        The channels its parts run on (of the rank that sends it).
    latency : float
        ``hwLat`` of the round's hardware and protocol. [s]
    base : int
        Its base channel (``ncclP2pChannelBaseForRound``): across nodes the rounds of one node
        delta share one, and one batch.
    """

    index: int
    delta: tuple
    hardware: str
    protocol: str
    nbytes: int
    parts: int
    channels: tuple
    latency: float
    base: int = 0


@dataclass(frozen=True, slots=True)
class P2pSchedule:
    """A p2p operation timed as NCCL lays it out (the module docstring gives the terms).

    Attributes
    ----------
    plan : P2pChannels
        The communicator's p2p channels and chunk.
    rounds : tuple of ScheduleRound
        The rounds with a transfer, in NCCL's order.
    base_latency : float
        NCCL's Ring base latency of the largest transfer's protocol. [s]
    fill : float
        The Simple parts' last chunk per batch. [s]
    batches : int
        The most batches a channel runs one after the other.
    channel_rate : float
        NCCL's per-channel bandwidth (Simple). [B/s]
    link_time, channel_time : float
        The two bandwidth terms. [s]
    bottleneck : tuple
        The link that binds the link term, as ``((u, v),)``.
    nbytes : int
        The most one rank sends. [bytes]
    proxy : float
        The network operations' proxy work, one after another, of the rank with the most
        (module docstring). [s]
    network_ops : int
        That rank's sends and receives to other NCCL nodes.
    tasks : int
        The most p2p tasks one rank posts (its sends and receives, its copy to itself included
        where nccl-tests posts one).
    enqueue : float
        The host's work on those tasks beyond the first, per GPU (module docstring). [s]
    handshakes : tuple of float
        The hwLat of each batch of the slowest channel, in order (module docstring). [s]
    channel : int
        That channel (-1: none).
    """

    plan: P2pChannels
    rounds: tuple
    base_latency: float
    fill: float
    batches: int
    channel_rate: float
    link_time: float
    channel_time: float
    bottleneck: tuple
    nbytes: int
    proxy: float = 0.0
    network_ops: int = 0
    tasks: int = 0
    enqueue: float = 0.0
    handshakes: tuple = ()
    channel: int = -1

    @property
    def latency(self) -> float:
        """``base + the rounds' handshakes + proxy`` (:attr:`handshakes`, :attr:`proxy`). [s]"""
        return self.base_latency + sum(self.handshakes) + self.proxy

    @property
    def transfer(self) -> float:
        """The larger bandwidth term. [s]"""
        return max(self.link_time, self.channel_time)

    @property
    def binding(self) -> str:
        """``"channels"`` when the channel term binds, else ``"links"``."""
        return "channels" if self.channel_time > self.link_time else "links"

    @property
    def time(self) -> float:
        """NCCL's time of the operation as this schedule gives it (before the measurement
        model). [s]"""
        return self.latency + self.fill + self.transfer

    def to_records(self) -> list:
        """Tidy rows, one per round, with the schedule's terms on each."""
        rows = []
        for r in self.rounds:
            rows += tidy_records({
                "round": r.index, "node_delta": r.delta[0], "local_delta": r.delta[1], "hardware": r.hardware,
                "protocol": r.protocol, "nbytes": r.nbytes, "parts": r.parts,
                "channels": " ".join(map(str, r.channels)), "latency_s": r.latency,
                "p2p_nchannels": self.plan.nchannels, "chunk_bytes": self.plan.chunk,
                "link_time_s": self.link_time, "channel_time_s": self.channel_time, "fill_s": self.fill,
                "proxy_s": self.proxy, "enqueue_s": self.enqueue, "tasks": self.tasks, "time_s": self.time})
        return rows


# ----------------------------------------------------------------------------- flows on links
def flow_load(fabric: NcclSystem, nodes: Sequence, flows, load: dict | None = None, weights=None) -> tuple:
    """Per directed edge, the sum of the shares of the flows ``(i, j)`` (rank i to rank j) crossing
    it (times each flow's weight, its bytes, when ``weights`` is given), NCCL's PCIe overhead
    included, and the worst path type among them.

    Parameters
    ----------
    fabric : NcclSystem
    nodes : sequence of node ids
        The ranks' GPUs.
    flows : iterable of (int, int)
    load : dict, optional
        Added to (a new dict by default).
    weights : iterable of float, optional
        One per flow (1 each by default).
    """
    G = fabric.G
    members = set(nodes)
    load = {} if load is None else load
    worst_type = PathType.LOC
    weights = iter(weights) if weights is not None else None
    for i, j in flows:
        w = 1.0 if weights is None else float(next(weights))
        path_type, flow = fabric.hop(nodes[i], nodes[j], members)
        worst_type = max(worst_type, path_type)
        overhead = fabric.pcie_overhead(path_type)
        for (u, v), f in flow:
            load[u, v] = load.get((u, v), 0.0) + w * f * (overhead if G.adj[u][v]["kind"] == "pcie" else 1.0)
    return load, worst_type


def nvlink_groups(fabric: NcclSystem, nodes: Sequence) -> dict:
    """The ranks grouped by where their pairs stay on NVLink: one group per host, hosts joined
    when their GPUs reach each other over NVLink (an NVLink domain of several hosts, as the 18
    trays of a GB200 NVL72; a cluster marks its copies with ``nvlink_domain``). Keyed by the
    lowest host of the group, in order. NCCL's p2p schedule takes each group as one node [U]."""
    G, router = fabric.G, fabric.router
    hosts: dict = {}
    for i, g in enumerate(nodes):
        hosts.setdefault(G.nodes[g]["host"], []).append(i)
    groups: dict = {}  # first host -> ranks
    anchors: list = []  # (domain, first host, a GPU)
    for host in sorted(hosts):
        gpu = nodes[hosts[host][0]]
        domain = G.nodes[gpu].get("nvlink_domain")
        key = next((first for d, first, other in anchors
                    if d == domain and router.nvlink_reaches(gpu, other)), None)
        if key is None:
            anchors.append((domain, host, gpu))
            groups[host] = []
            key = host
        groups[key].extend(hosts[host])
    return groups


# ------------------------------------------------------------------------------- the layout
@dataclass(frozen=True, slots=True)
class P2pLayout:
    """What does not depend on the bytes: the ranks' NCCL nodes, the p2p channels, each round's
    hardware, the per-channel rate. :meth:`schedule` times a transfer on it.

    Attributes
    ----------
    fabric : NcclSystem
    nodes : tuple
        The ranks' GPUs.
    node_of, local_of : tuple of int
        Per rank, its NCCL node and its index there.
    plan : P2pChannels
    hardware : tuple of str
        Per round (rank 0's peer), NCCL's hardware column.
    channel_rate : float
        NCCL's per-channel bandwidth of the ring graph. [B/s]
    cpu_vendor : str
        The communicator's CPU vendor (NCCL's ``getNetOverhead`` column).
    step_costs : StepCosts
        The kernel's work per step (:data:`models.predict.pipeline.DEFAULT_STEP_COSTS`).
    """

    fabric: NcclSystem
    nodes: tuple
    node_of: tuple
    local_of: tuple
    plan: P2pChannels
    hardware: tuple
    channel_rate: float
    cpu_vendor: str = "intel"
    step_costs: StepCosts = DEFAULT_STEP_COSTS

    @property
    def nranks(self) -> int:
        """Ranks."""
        return len(self.nodes)

    def round_of(self, i: int, j: int) -> int:
        """The round in which rank ``i`` sends to rank ``j`` (and ``j`` receives from ``i``)."""
        nnodes, local = self.plan.nnodes, self.plan.local_ranks
        return ((self.node_of[j] - self.node_of[i]) % nnodes) * local + (self.local_of[j] - self.local_of[i]) % local

    def schedule(self, pairs, *, link_time: float, bottleneck: tuple, alike: bool = False,
                 self_copy: bool = False) -> P2pSchedule:
        """Time one transfer: ``pairs`` of ``(i, j, bytes)``, rank i sending rank j. With ``alike``
        the ranks are alike (a uniform alltoall) and rank 0's sends and receives stand for every
        rank's. The link term is given (:func:`flow_load` over the same pairs). With
        ``self_copy`` every rank with a transfer also posts a send and a receive to itself, as
        nccl-tests' alltoall, gather and scatter do (tasks for the host, no time on the GPU)."""
        profile = self.fabric.profile
        plan = self.plan
        ops: dict = {}  # (rank, round) -> [sent, received]
        tasks: dict = {}  # rank -> p2p tasks posted
        for i, j, b in pairs:
            if b <= 0 or i == j:
                continue
            k = self.round_of(i, j)
            if not alike or i == 0:
                ops.setdefault((i, k), [0, 0])[0] += int(b)
                tasks[i] = tasks.get(i, 0) + 1
            if not alike or j == 0:
                ops.setdefault((j, k), [0, 0])[1] += int(b)
                tasks[j] = tasks.get(j, 0) + 1
        per_channel: dict = {}  # (rank, channel) -> [send bytes, receive bytes, parts]
        works: dict = {}  # (rank, channel) -> {round: hwLat of its work there}
        stepwork: dict = {}  # (rank, channel) -> the kernel's per-step work of its parts
        largest: dict = {}  # round -> (bytes, parts, channels)
        sent: dict = {}
        proxy: dict = {}  # rank -> [network operations, their proxy work]
        step = 0
        for (rank, k), moved in ops.items():
            base = channel_base(k, plan.nnodes, plan.local_ranks)
            sent[rank] = sent.get(rank, 0) + moved[0]
            for direction, b in enumerate(moved):
                if b <= 0:
                    continue
                count = parts(plan, b)
                ids = tuple(channel_for_part(plan.nchannels, base, p) for p in range(count))
                proto = protocol(b)
                if self.hardware[k] == "NET":
                    entry = proxy.setdefault(rank, [0, 0.0])
                    entry[0] += 1
                    entry[1] += profile.net_overhead_of(self.cpu_vendor, proto)
                share = LL_DATA_SHARE if proto == "LL" else 1.0
                part = part_bytes(plan, b)
                hop = profile.hw_lat(self.hardware[k], "ring", proto)
                for c in ids:
                    entry = per_channel.setdefault((rank, c), [0.0, 0.0, 0])
                    entry[direction] += part / share
                    entry[2] += 1 - direction
                    work = works.setdefault((rank, c), {})
                    work[k] = max(work.get(k, 0.0), hop)
                    # the kernel's work per step, as a collective's pipeline charges it
                    steps = -(-part // plan.chunk) if proto == "Simple" else 1
                    stepwork[rank, c] = stepwork.get((rank, c), 0.0) + steps * self.step_costs.of(proto)
                if proto == "Simple":
                    step = max(step, min(part, plan.chunk))
                if b > largest.get(k, (0,))[0]:
                    largest[k] = (b, count, ids)
        rounds = []
        for k in sorted(largest):
            b, count, ids = largest[k]
            proto = protocol(b)
            hw = self.hardware[k]
            rounds.append(ScheduleRound(k, divmod(k, plan.local_ranks), hw, proto, b, count, ids,
                                        profile.hw_lat(hw, "ring", proto),
                                        channel_base(k, plan.nnodes, plan.local_ranks)))
        biggest = max((r.nbytes for r in rounds), default=0)
        base = profile.base_lat("ring", protocol(biggest))
        rate = self.channel_rate
        channel_time = max((max(s, g) / rate + stepwork.get(key, 0.0) for key, (s, g, _) in per_channel.items()),
                           default=0.0)
        handshakes, channel = _slowest_channel(works)
        batches = max((-(-len(w) // MAX_P2P_PER_BATCH) for w in works.values()), default=0)
        fill = batches * step / rate
        network_ops, proxy_time = max(proxy.values(), key=lambda v: v[1], default=(0, 0.0))
        most = max(tasks.values(), default=0) + (2 if self_copy and tasks else 0)
        enqueue = max(0, most - 1) * profile.net_overhead_of(self.cpu_vendor, "LL")
        return P2pSchedule(plan, tuple(rounds), base, fill, batches, rate, float(link_time), channel_time,
                           tuple(bottleneck), int(max(sent.values(), default=0)), float(proxy_time),
                           int(network_ops), int(most), float(enqueue), handshakes, channel)


def _slowest_channel(works: dict) -> tuple:
    """Per channel, its works in round order cut into batches of :data:`MAX_P2P_PER_BATCH`, each
    batch its largest hop: the batches' hops of the channel whose sum is largest, and the channel.

    >>> _slowest_channel({(0, 1): {1: 1.0}, (0, 2): {k: float(k) for k in range(2, 12)}})
    ((9.0, 11.0), 2)
    """
    best, channel = (), -1
    for (_, c), rounds in sorted(works.items()):
        order = [rounds[k] for k in sorted(rounds)]
        hops = tuple(max(order[i:i + MAX_P2P_PER_BATCH]) for i in range(0, len(order), MAX_P2P_PER_BATCH))
        if sum(hops) > sum(best):
            best, channel = hops, c
    return best, channel


def _path_bandwidth(fabric, a, b, members) -> tuple:
    """NCCL's path type and bandwidth from GPU a to GPU b (the hop's rate at NCCL's capacities)."""
    path_type, flow = fabric.hop(a, b, members)
    rate = min((fabric.capacity(u, v) / f for (u, v), f in flow if f > 0), default=0.0)
    return path_type, rate


def p2p_layout(fabric: NcclSystem, nodes: Sequence) -> P2pLayout:
    """The p2p layout of GPUs ``nodes`` (rank order) on a fabric (:class:`P2pLayout`).

    The channels per peer are the least over rank 0 of each NCCL node and its peers (NCCL takes
    the least over every pair; the ranks of a node of these fabrics see alike paths [U]).
    """
    nodes = tuple(nodes)
    n = len(nodes)
    groups = nvlink_groups(fabric, nodes)
    node_of, local_of = [0] * n, [0] * n
    for g, ranks in enumerate(groups.values()):
        for local, r in enumerate(ranks):
            node_of[r], local_of[r] = g, local
    G = fabric.G
    members = set(nodes)
    cc = min(G.nodes[g]["compute_capability"] for g in nodes)
    nvlink_bw = fabric.profile.nvlink_bandwidth(cc)
    least, all_nvlink = None, True
    for ranks in groups.values():
        first = nodes[ranks[0]]
        for r in ranks[1:]:
            path_type, rate = _path_bandwidth(fabric, first, nodes[r], members)
            nvl = path_type == PathType.NVL
            all_nvlink &= nvl
            c = peer_nchannels(rate, nvlink_bw, nvl, True)
            least = c if least is None else min(least, c)
    nnodes = len(groups)
    if nnodes > 1:
        least = peer_nchannels(0.0, nvlink_bw, False, False) if least is None else \
            min(least, peer_nchannels(0.0, nvlink_bw, False, False))
    graphs = channel_graphs(fabric, list(nodes))
    ring = graphs.ring
    try:
        max_channels = fabric.profile.require("max_channels")
    except DgxTopoError:  # releases without MAXCHANNELS in the profile: the v2.4 value
        max_channels = 16
    comm = graphs.communicator.nchannels or min(max_channels, 2 * ring.nchannels)
    local = max(len(r) for r in groups.values())
    plan = p2p_channels(n, nnodes, local, comm_nchannels=max(1, comm), peer_nchannels=least or 2,
                        chunk=chunk_size(nnodes, all_nvlink), max_channels=max_channels)
    rank0 = rank_rounds(tuple(node_of), tuple(local_of), 0)
    hardware = []
    for k, (send, recv) in enumerate(rank0):
        peer = send if send >= 0 else recv
        if k == 0 or peer < 0:
            hardware.append("NVLINK")
        elif node_of[peer] != node_of[0]:
            hardware.append("NET")
        else:
            path_type, _ = fabric.hop(nodes[0], nodes[peer], members)
            hardware.append("NVLINK" if path_type in (PathType.NVL, PathType.NVB) else "PCI")
    return P2pLayout(fabric, nodes, tuple(node_of), tuple(local_of), plan, tuple(hardware), float(ring.bw_intra),
                     cpu_vendor(G, nodes[0]))


# --------------------------------------------------------------------- matrices, public API
@dataclass(frozen=True, slots=True)
class P2pEstimate:
    """A point-to-point operation of a matrix of per-pair bytes, as nccl-tests would time it.

    Attributes
    ----------
    operation : str
        ``"alltoallv"``, ``"gather"``, ``"scatter"`` or ``"sendrecv"``.
    gpus : tuple of int
        The ranks' GPU ids (rank order).
    nodes : tuple
        Their graph nodes.
    matrix : numpy.ndarray
        ``matrix[i, j]``: bytes rank i sends rank j (the diagonal, a copy, is not timed). [bytes]
    schedule : P2pSchedule
    nccl_time : float
        The schedule's time. [s]
    time : float
        With the measurement model's host term and achieved link rates. [s]
    measurement : Measured
    """

    operation: str
    gpus: tuple
    nodes: tuple
    matrix: np.ndarray = field(repr=False)
    schedule: P2pSchedule = field(repr=False)
    nccl_time: float
    time: float
    measurement: Measured = field(repr=False)

    @property
    def nranks(self) -> int:
        """Ranks."""
        return len(self.gpus)

    @property
    def nbytes(self) -> int:
        """The most bytes one rank sends. [bytes]"""
        return self.schedule.nbytes

    def to_records(self) -> list:
        """One tidy row: the operation, its GPUs, its time and its schedule's terms."""
        s = self.schedule
        return tidy_records({"operation": self.operation, "gpus": gpu_set(self.gpus), "nranks": self.nranks,
                             "nbytes": self.nbytes, "time_s": self.time, "nccl_time_s": self.nccl_time,
                             "latency_s": s.latency, "fill_s": s.fill, "link_time_s": s.link_time,
                             "channel_time_s": s.channel_time, "rounds": len(s.rounds),
                             "p2p_nchannels": s.plan.nchannels})


@dataclass(frozen=True, slots=True)
class _Terms:
    """What :func:`models.predict.measure.measured` reads of an estimate, for a matrix."""

    collective: str
    gpus: tuple
    nodes: tuple
    nbytes: int
    latency: float
    bandwidth: float
    bottleneck: tuple
    time: float
    ring: object = None
    tree: object = None
    algorithm: str = "p2p"
    protocol: str = "Simple"
    nchannels: int = 0
    network: tuple = ()
    algorithms: tuple = ()
    schedule: object = None

    @property
    def nranks(self) -> int:
        return len(self.gpus)


def _matrix(matrix, n, where) -> np.ndarray:
    """A square matrix of whole non-negative bytes for ``n`` ranks, as int64."""
    try:
        m = np.asarray(matrix, dtype=float)
    except (TypeError, ValueError):
        raise P2pError(f"{where}: expected an {n} x {n} matrix of bytes, received {matrix!r:.80}") from None
    if m.shape != (n, n):
        raise P2pError(f"{where}: expected an {n} x {n} matrix of bytes (one row and column per rank), "
                       f"received shape {m.shape}")
    if not np.all(np.isfinite(m)) or np.any(m < 0) or np.any(m != np.floor(m)):
        bad = float(m[~(np.isfinite(m) & (m >= 0) & (m == np.floor(m)))].reshape(-1)[0])
        raise P2pError(f"{where}: expected whole non-negative bytes, received {bad!r}")
    return m.astype(np.int64)


def _prepared(G, profile, gpus):
    fabric = prepare(G, nccl=profile)
    nodes = topo.select_gpus(fabric.G, gpus)
    ids = tuple(fabric.ids[n] for n in nodes)
    return fabric, list(nodes), ids


def _estimate(operation, G, matrix, gpus, profile, gpus_per_thread, calibration) -> P2pEstimate:
    fabric, nodes, ids = _prepared(G, profile, gpus)
    n = len(nodes)
    if n < 2:
        raise P2pError(f"{operation} needs at least 2 GPUs, received {list(ids)}")
    m = _matrix(matrix, n, operation)
    system = fabric.nccl
    layout = p2p_layout(system, nodes)
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j and m[i, j] > 0]
    load, _ = flow_load(system, nodes, pairs, weights=[m[i, j] for i, j in pairs])
    if load:
        link_time, worst = max((b / system.capacity(*edge), edge) for edge, b in load.items())
        bottleneck = (worst,)
    else:
        link_time, bottleneck = 0.0, ()
    schedule = layout.schedule(((i, j, m[i, j]) for i, j in pairs), link_time=link_time, bottleneck=bottleneck,
                               self_copy=operation != "sendrecv")
    nbytes = max(1, schedule.nbytes)
    startup = schedule.latency + schedule.fill
    bandwidth = nbytes / schedule.transfer if schedule.transfer > 0 else float("inf")
    terms = _Terms("alltoall", ids, tuple(nodes), nbytes, startup, bandwidth, bottleneck, schedule.time,
                   schedule=schedule)
    m_ = measured(terms, system, gpus_per_thread=gpus_per_thread, model=measurement_model(calibration))
    return P2pEstimate(operation, ids, tuple(nodes), m, schedule, schedule.time, float(m_.time), m_)


def alltoallv(G: nx.DiGraph | PreparedFabric, matrix, gpus: GpuIds = None, *, profile=None,
              gpus_per_thread: int = 1, calibration: CalibrationLike = None) -> P2pEstimate:
    """All-to-allv: every rank sends ``matrix[i][j]`` bytes to rank j, as NCCL's grouped sends.

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    matrix : array_like
        ``n x n`` whole non-negative bytes, ``n`` the GPUs (the diagonal is a local copy, not timed;
        each rank's send to and receive from itself are still posted and charged as host tasks,
        as nccl-tests' alltoall posts them, whatever the diagonal holds).
    gpus : GPU ids, optional
        The ranks in id order (every GPU by default).
    profile, gpus_per_thread, calibration : optional
        As for :func:`models.estimate`.

    Raises
    ------
    P2pError
        For a matrix of another shape, negative or fractional bytes, fewer than 2 GPUs.
    """
    return _estimate("alltoallv", G, matrix, gpus, profile, gpus_per_thread, calibration)


def _rooted(operation, G, nbytes, root, gpus, profile, gpus_per_thread, calibration) -> P2pEstimate:
    fabric, nodes, ids = _prepared(G, profile, gpus)
    n = len(nodes)
    if isinstance(nbytes, bool) or not is_int(nbytes) or nbytes < 0:
        raise P2pError(f"{operation}: expected whole non-negative bytes per rank, received {nbytes!r}")
    if isinstance(root, bool) or not is_int(root) or int(root) not in ids:
        raise P2pError(f"{operation}: expected a root among the GPUs {list(ids)}, received {root!r}")
    r = ids.index(int(root))
    m = np.zeros((n, n), dtype=np.int64)
    if operation == "gather":
        m[:, r] = int(nbytes)
    else:
        m[r, :] = int(nbytes)
    m[r, r] = 0
    return _estimate(operation, fabric, m, list(ids), None, gpus_per_thread, calibration)


def gather(G: nx.DiGraph | PreparedFabric, nbytes: int, root: int = 0, gpus: GpuIds = None, *, profile=None,
           gpus_per_thread: int = 1, calibration: CalibrationLike = None) -> P2pEstimate:
    """Gather: every rank sends ``nbytes`` (its block) to ``root`` (a GPU id), as nccl-tests'
    gather (grouped sends to the root; nccl-tests' size is ``n x nbytes``). Raises :class:`P2pError`
    for a root outside the GPUs or bad bytes."""
    return _rooted("gather", G, nbytes, root, gpus, profile, gpus_per_thread, calibration)


def scatter(G: nx.DiGraph | PreparedFabric, nbytes: int, root: int = 0, gpus: GpuIds = None, *, profile=None,
            gpus_per_thread: int = 1, calibration: CalibrationLike = None) -> P2pEstimate:
    """Scatter: ``root`` sends ``nbytes`` to every other rank (the reverse of :func:`gather`)."""
    return _rooted("scatter", G, nbytes, root, gpus, profile, gpus_per_thread, calibration)


def sendrecv(G: nx.DiGraph | PreparedFabric, nbytes: int, gpus: GpuIds = None, *, profile=None,
             gpus_per_thread: int = 1, calibration: CalibrationLike = None) -> P2pEstimate:
    """nccl-tests' sendrecv: every rank sends ``nbytes`` to the next and receives from the previous."""
    fabric, nodes, ids = _prepared(G, profile, gpus)
    n = len(nodes)
    if isinstance(nbytes, bool) or not is_int(nbytes) or nbytes < 0:
        raise P2pError(f"sendrecv: expected whole non-negative bytes, received {nbytes!r}")
    m = np.zeros((n, n), dtype=np.int64)
    for i in range(n):
        if (i + 1) % n != i:
            m[i, (i + 1) % n] = int(nbytes)
    return _estimate("sendrecv", fabric, m, list(ids), None, gpus_per_thread, calibration)
