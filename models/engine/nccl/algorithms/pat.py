"""NCCL's PAT (parallel aggregated trees): AllGather and ReduceScatter with one GPU per node, Simple
only, on the tree graph (NVIDIA/nccl v2.23-v2.27 src/graph/tuning.cc ``ncclPatEnable``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...nccltests import busbw_factor
from ..communicator import (BandwidthStep, BusBandwidth, ChannelGraph, Communicator, Latency, LatencyTerm, log2i)
from ..profiles import NcclProfile
from ..reasons import Cause, Why
from .base import Algorithm, LinkCharges, latency_inputs

__all__ = ["Pat", "PAT"]


@dataclass(frozen=True)
class Pat(Algorithm):
    """NCCL_ALGO_PAT (index 6)."""

    name: str = "pat"
    index: int = 6
    #: The column of the profile's latency tables it reads (NCCL's; a subclass keeps it).
    table: ClassVar[str] = "pat"
    nccl_name: str = "PAT"
    pattern: str = "tree"
    collectives: frozenset = frozenset({"all_gather", "reduce_scatter"})

    def applies(self, collective: str, protocol: str, comm: Communicator) -> tuple:
        profile = comm.profile
        rules = profile.pat
        if rules is None:
            return False, Why(Cause.NO_PAT, release=profile.version)
        if collective not in self.collectives:
            return False, Why(Cause.PAT_COLLECTIVE, collective=collective)
        if protocol != "Simple":
            return False, Why(Cause.PAT_PROTOCOL)
        if comm.nnodes != comm.nranks:
            return False, Why(Cause.PAT_RANKS_PER_NODE, count=comm.ppn)
        if comm.compute_capability < rules.min_compute_capability:
            return False, Why(Cause.PAT_COMPUTE_CAPABILITY, compute_capability=comm.compute_capability,
                              limit=rules.min_compute_capability)
        return True, None

    def graph(self, comm: Communicator) -> ChannelGraph | None:
        return comm.tree

    def bus_bandwidth(self, collective: str, protocol: str, comm: Communicator) -> BusBandwidth:
        """``nChannels x bw x`` the profile's PAT factor."""
        graph = comm.tree
        use_intra = comm.nnodes <= 2
        bw = graph.bw_intra if use_intra else graph.bw_inter
        raw = graph.nchannels * bw
        factor = comm.profile.require("pat").factor
        step = BandwidthStep("PAT", factor, None, "", raw, raw * factor, False)
        return BusBandwidth(collective, self.name, protocol, graph.nchannels, bw,
                            "bwIntra" if use_intra else "bwInter", raw, (step,), raw * factor)

    def latency(self, collective: str, protocol: str, comm: Communicator) -> Latency:
        """``base + log2i(nNodes) x interLat / 3.5 + nRanks x 2.8`` µs (v2.23-v2.27 tuning.cc)."""
        x = latency_inputs(self.table, collective, protocol, comm, comm.tree)
        rules = comm.profile.require("pat")
        terms = (LatencyTerm(f"log2i(nNodes) x {x.inter_name} / {rules.inter_divisor:g}",
                             log2i(comm.nnodes), x.inter / rules.inter_divisor),
                 LatencyTerm("nRanks x PAT per-rank latency", comm.nranks, rules.per_rank_latency))
        value = x.base + sum(term.value for term in terms)
        return Latency(collective, self.name, protocol, x.base, terms, value, x.intra_hw, 0.0)

    def bus_to_alg_ratio(self, collective: str, nranks: int, profile: NcclProfile, nnodes: int = 1) -> float:
        """AllGather/ReduceScatter: 1 (the bus bandwidth divides the total bytes); else the
        tree's ratio."""
        if collective in ("all_gather", "reduce_scatter"):
            return 1.0
        return profile.tree_alg_ratio


    def charge(self, links: LinkCharges) -> None:
        """One GPU per node: each NIC sends and receives ``(n - 1) / n`` of the buffer, as on a
        ring (PAT's peers are not the ring's neighbours: the spines' share is approximate [U])."""
        search = self.searched(links)
        if search is None:
            return
        rate = links.channels(search)
        if links.nnodes > 1 and search.nets:
            links.network_ring(search.nets, rate * busbw_factor(links.collective, links.nranks))


#: NCCL's PAT.
PAT = Pat()
