"""What an NCCL algorithm answers, and the rules the algorithms of NCCL's tables share.

:class:`Algorithm` is the interface (:mod:`models.engine.nccl.algorithms` says how to write one);
:class:`LinkCharges` is what the simulator's decomposer offers an algorithm to say which links its
data fills (the decomposer, :class:`models.predict.decompose.Decomposer`, implements it). The
helpers below are the pieces of NCCL's ``ncclTopoTuneModel`` (src/graph/tuning.cc v2.27.7-1, and
the tags of older profiles) that more than one algorithm reads: the LL and LL128 caps, LL128's
enabling rules, and the inputs of every latency formula.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..communicator import (NCCL_COLLECTIVES, BandwidthStep, BusBandwidth, ChannelGraph, Communicator, Latency,
                            nsteps, path_above)
from ..profiles import NcclProfile
from ..releases import InterLatency, Ll128Cap, Ll128Rule, LlCap, RingBuilder
from ..reasons import Cause, Why

__all__ = ["Algorithm", "LinkCharges", "BusSteps", "LatencyInputs", "latency_inputs", "ll128_applies",
           "table_channels", "cta_capped"]


class LinkCharges(Protocol):
    """What the simulator's decomposer offers an algorithm to charge one collective's data phase.

    An algorithm's :meth:`Algorithm.charge` reads the estimate's channel graphs and calls the
    methods below; the decomposer turns the charges into the fraction of each link's capacity
    the collective fills alone.

    Attributes
    ----------
    collective : str
    nranks : int
    nnodes : int
        NCCL nodes (hosts, or NVLink domains of several) the communicator spans.
    profile : NcclProfile
        The release the estimate ran.
    ring, tree : ChannelSearch or None
        The estimate's ring and tree searches (``tree`` None across nodes and before v2.5).
    nvls : NvlsGraph or None
        The estimate's NVLS graph.
    """

    collective: str
    nranks: int
    nnodes: int
    profile: NcclProfile
    ring: Any
    tree: Any
    nvls: Any

    def channels(self, search: Any) -> float:
        """Charge every channel's reservations of a ring or tree search on the links it crosses
        inside every node, at the bus bandwidth that runs; return one channel's rate [B/s]."""

    def switch_channels(self, graph: Any) -> float:
        """Charge an NVLS graph's channels on every GPU's links to the NVSwitches (twice on a
        head's); return the scale of its reservations (the rate of a channel over its ``bwIntra``)."""

    def network_ring(self, nets: tuple, rate: float) -> None:
        """Charge the network between nodes with a ring per channel (``nets``: a channel's
        entering and leaving NIC on the searched node), each connection at ``rate`` [B/s]."""

    def network_tree(self, nets: tuple, rate: float) -> None:
        """Charge the network between nodes with NCCL's double binary tree per channel, both
        ways, each connection at ``rate`` [B/s]."""


@dataclass(frozen=True)
class Algorithm:
    """One NCCL algorithm: where it applies, its channels, its bandwidth and latency, its links.

    Subclass it (a frozen dataclass with defaults for ``name`` and ``index``) and override the
    methods that differ; every method gets the collective (a name of
    :data:`models.engine.nccltests.NCCL_COLLECTIVES`), the protocol (``"LL"``, ``"LL128"`` or
    ``"Simple"``) and the :class:`Communicator` already checked.

    Attributes
    ----------
    name : str
        Its name as results print it and ``--algo`` takes it (NCCL's algorithm in snake case).
    nccl_name : str
        How NCCL's source and ``NCCL_ALGO`` spell it (``"NVLSTree"``); the name for one NCCL lacks.
    index : int
        NCCL's algorithm index (``NCCL_ALGO_*``, src/include/device.h): the selection takes
        the lowest time and a tie goes to the lower index. A user's own algorithm takes one above
        NCCL's (its ties go to NCCL's).
    collectives : frozenset of str
        The collectives it can run at all (:meth:`applies` says whether it does here).
    pattern : str
        The search whose GPU orders stand for its channels: ``"ring"`` or ``"tree"`` (NVLS,
        reducing in the switch, has none: the ring NCCL also built). :meth:`searched` reads it.
    pipelined : bool
        It runs NCCL's chunk and slice pipeline (:mod:`models.engine.nccl.pipelining`).
    multimem : bool
        It reduces in the NVSwitches (NVLS): every NVLink of its GPUs runs its kernels and no
        GPU order binds.
    """

    name: str
    index: int
    collectives: frozenset = frozenset(NCCL_COLLECTIVES)
    pattern: str = "ring"
    pipelined: bool = False
    multimem: bool = False
    nccl_name: str = ""

    def __post_init__(self):
        if not self.nccl_name:
            object.__setattr__(self, "nccl_name", self.name)

    # ------------------------------------------------------------------ the tuning model
    def applies(self, collective: str, protocol: str, comm: Communicator) -> tuple:
        """``(True, None)`` when NCCL enables it with ``protocol`` for ``collective`` on ``comm``,
        else ``(False, Why)``. The default: it runs the collectives it lists, every protocol."""
        if collective not in self.collectives:
            return False, Why(Cause.NOT_SERVED, algorithm=self.name, collective=collective)
        return True, None

    def graph(self, comm: Communicator) -> ChannelGraph | None:
        """The channel graph its model reads (None when the communicator has none for it)."""
        return comm.ring

    def bus_bandwidth(self, collective: str, protocol: str, comm: Communicator) -> BusBandwidth:
        """NCCL's bus bandwidth, step by step (it need not check :meth:`applies`)."""
        raise NotImplementedError(f"{type(self).__name__} has no bus_bandwidth")

    def latency(self, collective: str, protocol: str, comm: Communicator) -> Latency:
        """NCCL's latency, term by term."""
        raise NotImplementedError(f"{type(self).__name__} has no latency")

    def bus_to_alg_ratio(self, collective: str, nranks: int, profile: NcclProfile, nnodes: int = 1) -> float:
        """Bus -> algorithm bandwidth ratio (the algorithm bandwidth divides the size). The
        default: a ring's, ``nRanks / nsteps``."""
        return nranks / nsteps(collective, nranks)

    def time_factors(self, collective: str, protocol: str, size: np.ndarray, comm: Communicator) -> tuple:
        """``(bandwidth factor, latency factor)`` per size (``size``: int64 bytes), as arrays of
        its shape: NCCL's tree correction and ring plateau. The default: 1 and 1."""
        return np.ones(size.shape), np.ones(size.shape)

    # ------------------------------------------------------------ what runs on the fabric
    def search(self, graphs: Any) -> Any:
        """The channels it runs on, of a :class:`~models.engine.nccl.channels.ChannelGraphs` or
        an estimate (anything with ``ring``, ``tree`` and ``nvls``): a ChannelSearch or NvlsGraph,
        or None (a tree where NCCL searched none). The default: its :attr:`pattern`'s search."""
        return graphs.tree if self.pattern == "tree" else graphs.ring

    def searched(self, graphs: Any) -> Any:
        """The ring or tree search that stands for its channels where GPU orders are read (the
        channels drawn, the bottleneck, the NICs a benchmark drives): its :attr:`pattern`'s (the
        ring's where no tree was searched: across nodes, before v2.5)."""
        return graphs.tree if self.pattern == "tree" and graphs.tree is not None else graphs.ring

    def network(self, graphs: Any) -> tuple | None:
        """``(search, pattern)`` whose connections between nodes it charges on the network
        (:func:`models.predict.network.network_load`, pattern ``"ring"`` or ``"tree"``), or None."""
        return None

    def nchannels(self, comm: Communicator) -> int:
        """The channels an estimate reports: its graph's."""
        graph = self.graph(comm)
        return 0 if graph is None else graph.nchannels

    def blocks(self, graph_channels: int, profile: NcclProfile, compute_capability: int, nnodes: int) -> int:
        """Channels its kernel runs on each GPU (one CUDA block each by default): ring, tree and
        PAT run ``comm->nChannels`` (:func:`table_channels`), at most the release's default CTAs
        (:meth:`NcclProfile.max_ctas <models.engine.nccl.profiles.NcclProfile.max_ctas>`: 16 on
        Blackwell from v2.28)."""
        return cta_capped(table_channels(graph_channels, profile), profile, compute_capability)

    def charge(self, links: LinkCharges) -> None:
        """Say which links its data phase fills (the decomposition for the simulator): the
        default runs a ring's channels, one ring per channel between nodes."""
        search = self.searched(links)
        if search is None:
            return
        rate = links.channels(search)
        if links.nnodes > 1 and search.nets:
            links.network_ring(search.nets, rate)


def table_channels(graph_channels: int, profile: NcclProfile) -> int:
    """``comm->nChannels`` of a graph's channels: ``ncclTopoPostset`` doubles them,
    ``min(MAXCHANNELS, 2 x nChannels)`` (NVIDIA/nccl v2.27.7-1 src/graph/connect.cc); releases
    before the topology search (v2.5) run their rings as built."""
    if profile.behaviour.ring_builder is RingBuilder.NVLINK_COUNTS:
        return graph_channels
    return min(profile.require("max_channels"), 2 * graph_channels)


def cta_capped(channels: int, profile: NcclProfile, compute_capability: int) -> int:
    """``channels`` clamped to the release's default maximum CTAs for the GPU (NCCL clamps
    ``comm->nChannels`` and ``comm->nvlsChannels`` to ``[minCTAs, maxCTAs]``, src/init.cc; Blackwell
    32, then 16 from v2.28.3-1)."""
    limit = profile.max_ctas(compute_capability)
    return channels if limit is None else min(channels, limit)


class BusSteps:
    """A bus bandwidth being refined: ``after = min(before x factor, cap)``, each step kept
    (:class:`BandwidthStep`), for the ring and tree models and a user's own."""

    def __init__(self, collective: str, algorithm: str, protocol: str, comm: Communicator, graph: ChannelGraph):
        self.collective, self.algorithm, self.protocol, self.comm = collective, algorithm, protocol, comm
        self.profile = comm.profile
        self.nnodes = comm.nnodes
        self.use_intra = comm.nnodes <= 2
        self.bw = graph.bw_intra if self.use_intra else graph.bw_inter
        self.nch = graph.nchannels
        self.raw = self.nch * self.bw
        self.col = min(comm.nnodes, 3) - 1
        self.value = self.raw
        self.steps: list = []

    def step(self, name: str, factor: float, cap: float | None = None, cap_name: str = "") -> None:
        """Apply one refinement."""
        scaled = self.value * factor
        after = scaled if cap is None else min(scaled, cap)
        if cap is None:
            cap_name = ""
        self.steps.append(BandwidthStep(name, factor, cap, cap_name, self.value, after,
                                        cap is not None and cap < scaled))
        self.value = after

    def cc_row(self) -> int:
        """compCapIndex, looked up only when a table needs it (an old profile may lack it)."""
        return self.profile.compute_capability_index(self.comm.compute_capability)

    def ll_cap(self) -> tuple:
        """llMaxBws (v2.8+; index1: compCapIndex on one node, else the CPU vendor row) or no cap
        (v2.5, v2.7)."""
        if self.profile.behaviour.ll_cap is LlCap.NONE:
            return None, ""
        row = self.cc_row() if self.nnodes == 1 else (1 if self.comm.cpu_vendor == "amd" else 0)
        return self.profile.ll_max_bw(row, self.nnodes), f"llMaxBws[{row}][{self.col}]"

    def ll128_cap(self, table_name: str, lookup) -> tuple:
        """The LL128 cap: per row and channel (v2.8+), or per collective (v2.5 totals, v2.7 per
        channel)."""
        rule = self.profile.behaviour.ll128_cap
        if rule is not Ll128Cap.PER_CHANNEL_PER_ROW:
            value = self.profile.ll128_per_collective[NCCL_COLLECTIVES.index(self.collective)]
            if rule is Ll128Cap.TOTAL_PER_COLLECTIVE:
                return value, f"ll128MaxBw[{self.collective}]"
            return self.nch * value, f"nChannels x ll128MaxBwPerCh[{self.collective}]"
        row = self.cc_row()
        return self.nch * lookup(row, self.nnodes), f"nChannels x {table_name}[{row}][{self.col}]"

    def result(self) -> BusBandwidth:
        """The bus bandwidth after the sm80 cap of the releases that have one."""
        profile = self.profile
        if profile.sm80_bus_cap is not None and self.comm.compute_capability >= 80:
            self.step("sm80 bus cap", 1.0, profile.sm80_bus_cap, "235 GB/s (sm80)")
        return BusBandwidth(self.collective, self.algorithm, self.protocol, self.nch, self.bw,
                            "bwIntra" if self.use_intra else "bwInter", self.raw, tuple(self.steps), self.value)


def ll128_applies(algorithm: str, collective: str, comm: Communicator, graph: ChannelGraph) -> tuple:
    """LL128's enabling rules for Ring and Tree (src/graph/tuning.cc): typeInter <= PXB (<= PXN
    on sm90+), typeIntra <= NVB, one compute capability >= 70 across GPUs, and not (sm90 + CUDA
    11.8 + Ring AllReduce on 2 ranks); v2.12: typeInter <= PXB, typeIntra <= NVL and all GPUs
    sm70 or all sm80; none before v2.5.6. ``(enabled, Why or None)``."""
    profile = comm.profile
    behaviour = profile.behaviour
    release = profile.version
    if behaviour.ll128 is Ll128Rule.NONE:
        return False, Why(Cause.NO_LL128, release=release)
    cc_min, cc_max = comm.compute_capability, comm.cc_max
    if cc_min < profile.ll128_min_compute_capability:
        return False, Why(Cause.LL128_COMPUTE_CAPABILITY, compute_capability=cc_min,
                          limit=profile.ll128_min_compute_capability)
    if behaviour.ll128 is Ll128Rule.LISTED_COMPUTE_CAPABILITIES:
        if cc_min != cc_max or cc_min not in profile.ll128_compute_capabilities:
            return False, Why(Cause.LL128_LISTED_COMPUTE_CAPABILITIES, release=release,
                              compute_capability=cc_min, compute_capability_max=cc_max,
                              allowed=tuple(profile.ll128_compute_capabilities))
    elif cc_min != cc_max:
        return False, Why(Cause.LL128_MIXED_COMPUTE_CAPABILITIES, compute_capability=cc_min,
                          compute_capability_max=cc_max)
    if path_above(profile, graph.type_intra, profile.ll128_max_type_intra):
        return False, Why(Cause.LL128_TYPE_INTRA, algorithm=algorithm,
                          path_limit=profile.ll128_max_type_intra, path_type=graph.type_intra)
    inter_limit = profile.ll128_max_type_inter
    if profile.ll128_max_type_inter_sm90 is not None and cc_min >= 90:
        inter_limit = profile.ll128_max_type_inter_sm90
    if path_above(profile, graph.type_inter, inter_limit):
        return False, Why(Cause.LL128_TYPE_INTER, algorithm=algorithm, path_limit=inter_limit,
                          path_type=graph.type_inter)
    return True, None


@dataclass(frozen=True, slots=True)
class LatencyInputs:
    """What every latency formula reads (src/graph/tuning.cc): ``intraLat = hwLat[intraHw][a][p]``
    and ``interLat = (ppn == 1 ? hwLat[NET][Tree][p] : hwLat[NET][a][p]) + latencyInter (x2 for
    Simple)`` (v2.23+; before, ``latencyInter`` or ``hwLat[NET][a][p]``).

    Attributes
    ----------
    graph : ChannelGraph
    intra_hw : str
        ``"NVLINK"`` or ``"PCI"``.
    hw : str
        ``intra_hw`` on one node, ``"NET"`` across nodes.
    base, intra, inter : float
        ``baseLat[a][p]``, ``intraLat``, ``interLat``. [s]
    inter_name : str
        How NCCL's source writes ``interLat``.
    steps : int
        Ring steps of the collective (:func:`nsteps`).
    """

    graph: ChannelGraph
    intra_hw: str
    hw: str
    base: float
    intra: float
    inter: float
    inter_name: str
    steps: int


def latency_inputs(table: str, collective: str, protocol: str, comm: Communicator,
                   graph: ChannelGraph) -> LatencyInputs:
    """The :class:`LatencyInputs` of an algorithm whose latencies are the profile's column ``table``
    (``"ring"``, ``"tree"``, ``"nvls"``, ... :meth:`NcclProfile.hw_lat`)."""
    algorithm = table
    profile = comm.profile
    intra_hw = graph.hardware
    hw = intra_hw if comm.nnodes == 1 else "NET"
    if profile.behaviour.inter_latency is InterLatency.PPN:
        net_algorithm = "tree" if comm.ppn == 1 else algorithm
        inter = profile.hw_lat("NET", net_algorithm, protocol) + graph.latency_inter \
            + (graph.latency_inter if protocol == "Simple" else 0.0)
        inter_name = f"hwLat[NET][{net_algorithm}][{protocol}] + latencyInter"
    else:
        inter = graph.latency_inter if graph.latency_inter else profile.hw_lat("NET", algorithm, protocol)
        inter_name = "latencyInter" if graph.latency_inter else f"hwLat[NET][{algorithm}][{protocol}]"
    return LatencyInputs(graph, intra_hw, hw, profile.base_lat(algorithm, protocol),
                         profile.hw_lat(intra_hw, algorithm, protocol), inter, inter_name,
                         nsteps(collective, comm.nranks))
