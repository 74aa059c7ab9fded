"""NCCL's NVLS (NVLink SHARP): the reduction in the NVSwitches, on one node, Simple only, on the
NVLS graph (NVIDIA/nccl v2.17+ src/graph/tuning.cc, src/transport/nvls.cc; the graph:
:mod:`models.engine.nccl.nvls`). NVLSTree (:mod:`.nvls_tree`) is NVLS inside each node with a
tree between them, and shares these rules.

Examples
--------
>>> from models.engine.nccl.algorithms import NVLS
>>> from models.engine.nccl.communicator import ChannelGraph, Communicator
>>> g = ChannelGraph(12, 30e9, "NVL", pattern="balanced_tree")
>>> nvls = ChannelGraph(8, 40e9, "NVL", bw_inter=60e9, pattern="nvls", same_channels=False)
>>> NVLS.applies("all_reduce", "Simple", Communicator(8, g, g, 90, nvls=nvls))
(True, None)
>>> round(NVLS.bus_bandwidth("all_reduce", "Simple", Communicator(8, g, g, 90, nvls=nvls)).value / 1e9)
320
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..communicator import BusBandwidth, ChannelGraph, Communicator, Latency, LatencyTerm, log2i, nsteps
from ..profiles import NcclProfile
from ..reasons import Cause, Why
from ..releases import NvlsAlgorithms, NvlsLatency, NvlsRatio
from .base import Algorithm, LinkCharges, cta_capped, latency_inputs

__all__ = ["Nvls", "NVLS"]


@dataclass(frozen=True)
class Nvls(Algorithm):
    """NCCL_ALGO_NVLS (index 4).

    Attributes
    ----------
    across_nodes : bool
        NVLSTree's rules (a tree between nodes) rather than NVLS's (one node).
    """

    name: str = "nvls"
    index: int = 4
    #: The column of the profile's latency tables it reads (NCCL's; a subclass keeps it).
    table: ClassVar[str] = "nvls"
    nccl_name: str = "NVLS"
    collectives: frozenset = frozenset({"all_reduce", "all_gather", "reduce_scatter"})
    multimem: bool = True
    across_nodes: bool = False

    def applies(self, collective: str, protocol: str, comm: Communicator) -> tuple:
        """NVLS / NVLSTree enabling (src/graph/tuning.cc, src/enqueue.cc at the profile's tag)."""
        profile = comm.profile
        release, rules, present = profile.version, profile.nvls, profile.behaviour.nvls
        tree = self.across_nodes
        if present is NvlsAlgorithms.NONE:
            return False, Why(Cause.NO_NVLS_ALGORITHM, release=release, algorithm=self.name)
        if tree and present is not NvlsAlgorithms.NVLS_AND_TREE:
            return False, Why(Cause.NO_NVLS_TREE, release=release)
        if comm.nvls is None:
            return False, Why(Cause.NO_NVLS_SUPPORT, support=comm.nvls_why)
        if protocol != "Simple":
            return False, Why(Cause.NVLS_PROTOCOL, algorithm=self.name)
        if tree and collective not in self.collectives:
            return False, Why(Cause.NVLS_TREE_COLLECTIVE, collective=collective)
        if collective not in rules.collectives:
            return False, Why(Cause.NVLS_COLLECTIVE, release=release, collective=collective,
                              allowed=tuple(rules.collectives))
        if not tree and comm.nnodes > 1:
            return False, Why(Cause.NVLS_ACROSS_NODES)
        if tree and comm.nnodes == 1:
            return False, Why(Cause.NVLS_TREE_SINGLE_NODE)
        if collective != "all_reduce" and comm.ppn > rules.max_arity:
            return False, Why(Cause.NVLS_ARITY, collective=collective, limit=rules.max_arity, count=comm.ppn)
        if comm.nvls.nchannels < rules.min_tuning_channels:
            return False, Why(Cause.NVLS_CHANNELS, release=release, limit=rules.min_tuning_channels,
                              count=comm.nvls.nchannels)
        return True, None

    def graph(self, comm: Communicator) -> ChannelGraph | None:
        return comm.nvls

    def bus_bandwidth(self, collective: str, protocol: str, comm: Communicator) -> BusBandwidth:
        """``nChannels x min(intra, inter)`` of the NVLS graph (src/graph/tuning.cc at the
        profile's tag; v2.28.3+ with the NVLS efficiency and, for NVLSTree, the per-channel cap
        ``perChMaxNVLSTreeBws``)."""
        graph, rules = comm.nvls, comm.profile.require("nvls")
        nnodes, ppn, nch = comm.nnodes, comm.ppn, comm.nvls.nchannels
        tree = self.across_nodes
        if rules.efficiency is not None:     # v2.28.3+
            row = comm.profile.compute_capability_index(comm.compute_capability)
            intra = graph.bw_intra * rules.efficiency[row] * (nch - 1) / nch
            intra *= 2 if collective == "all_reduce" else (ppn - 1) / ppn
            inter = graph.bw_inter * (2 if nnodes <= 2 and tree else 1)
            cap = comm.profile.per_ch_max_nvls_tree_bw(row, nnodes) if tree else None
            name = (f"min(bwIntra x nvlsEfficiency[{row}] x (nCh-1)/nCh x "
                    f"{'2' if collective == 'all_reduce' else '(ppn-1)/ppn'}, bwInter"
                    f"{' x 2' if inter != graph.bw_inter else ''}"
                    f"{f', perChMaxNVLSTreeBws[{row}][{min(nnodes, 3) - 1}]' if cap is not None else ''})")
            if cap is not None:
                inter = min(inter, cap)
        elif not tree and collective == "all_reduce":
            intra, inter, name = graph.bw_intra, graph.bw_inter, "min(bwIntra, bwInter)"
        elif not tree:
            intra, inter = graph.bw_intra * (ppn - 1) / ppn, graph.bw_inter * 0.9
            name = "min(bwIntra x (ppn-1)/ppn, bwInter x 0.9)"
        else:
            intra = graph.bw_intra
            inter = graph.bw_inter if nnodes <= 2 else graph.bw_inter / 2
            name = "min(bwIntra, bwInter)" if nnodes <= 2 else "min(bwIntra, bwInter / 2)"
        bw = min(intra, inter)
        return BusBandwidth(collective, self.name, protocol, nch, bw, name, nch * bw, (), nch * bw)

    def latency(self, collective: str, protocol: str, comm: Communicator) -> Latency:
        """v2.19+: ``base + intraLat (+ interLat across nodes)``, NVLSTree ``base + intraLat + 2
        log2i(nNodes) interLat``; v2.17-v2.18: ``base + (nNodes > 1 ? hwLat[NET] : 0)``, NVLSTree
        ``base + 2 (nNodes - 1) hwLat[NET]``."""
        profile, nnodes = comm.profile, comm.nnodes
        x = latency_inputs(self.table, collective, protocol, comm, comm.nvls)
        tree = self.across_nodes
        if profile.behaviour.nvls_latency is NvlsLatency.V2_18:
            count = 2 * (nnodes - 1) if tree else (1 if nnodes > 1 else 0)
            terms = (LatencyTerm(f"{'2 x (nNodes - 1) x ' if tree else ''}hwLat[NET][{self.table}][{protocol}]",
                                 count, profile.hw_lat("NET", self.table, protocol)),)
        elif tree:
            terms = (LatencyTerm(f"hwLat[{x.intra_hw}][{self.table}][{protocol}]", 1, x.intra),
                     LatencyTerm(f"2 x log2i(nNodes) x {x.inter_name}", 2 * log2i(nnodes), x.inter))
        else:
            terms = (LatencyTerm(f"hwLat[{x.intra_hw}][{self.table}][{protocol}]", 1, x.intra),
                     LatencyTerm(f"{x.inter_name} (across nodes)", 1 if nnodes > 1 else 0, x.inter))
        value = x.base + sum(term.value for term in terms)
        return Latency(collective, self.name, protocol, x.base, terms, value, x.intra_hw, 0.0)

    def bus_to_alg_ratio(self, collective: str, nranks: int, profile: NcclProfile, nnodes: int = 1) -> float:
        """AllGather/ReduceScatter: 1 (the bus bandwidth divides the total bytes); AllReduce:
        the release's :class:`~models.engine.nccl.releases.NvlsRatio`."""
        if collective in ("all_gather", "reduce_scatter"):
            return 1.0
        # A release without NVLS never enables the cell; its ratio is then moot (5/6).
        rule = profile.behaviour.nvls_ratio or NvlsRatio.FIVE_SIXTHS
        return rule.ratio(self.across_nodes, nnodes, nranks / nsteps(collective, nranks))

    def search(self, graphs: Any) -> Any:
        """The NVLS graph."""
        return graphs.nvls

    def blocks(self, graph_channels: int, profile: NcclProfile, compute_capability: int, nnodes: int) -> int:
        """``comm->nvlsChannels``, decorrelated from the NVLS graph's heads: the release's
        :attr:`NvlsRules.nchannels <models.engine.nccl.profiles.NvlsRules.nchannels>` (sm90; sm100
        on one NCCL node; sm100 across nodes)."""
        sm90, sm100_one_node, sm100_nodes = profile.require("nvls").nchannels
        channels = sm90 if compute_capability < 100 else sm100_one_node if nnodes <= 1 else sm100_nodes
        return cta_capped(channels, profile, compute_capability)

    def charge(self, links: LinkCharges) -> None:
        """Each NVLS channel reserves ``bwIntra`` on every GPU's links to the NVSwitches, twice on
        its head's (src/graph/search.cc), spread over a GPU's switch links by their bandwidth."""
        if links.nvls is not None:
            links.switch_channels(links.nvls)


#: NCCL's NVLS.
NVLS = Nvls()
