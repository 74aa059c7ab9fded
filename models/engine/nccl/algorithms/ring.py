"""NCCL's Ring: every collective, every protocol, on the ring graph (src/graph/tuning.cc v2.27.7-1).

Examples
--------
>>> from models.engine.nccl.algorithms import RING
>>> from models.engine.nccl.communicator import ChannelGraph, Communicator
>>> g = ChannelGraph(12, 30e9, "NVL")
>>> b = RING.bus_bandwidth("all_reduce", "LL", Communicator(8, g, g, 90))
>>> RING.name, b.raw / 1e9, b.value / 1e9, b.bound_by
('ring', 360.0, 141.0, 'llMaxBws[2][0]')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..communicator import BusBandwidth, Communicator, Latency, LatencyTerm, comm_channels
from ..reasons import Cause, Why
from ..releases import Ll128Rule, RingLatency
from .base import Algorithm, BusSteps, cta_capped, latency_inputs, ll128_applies

__all__ = ["Ring", "RING"]


@dataclass(frozen=True)
class Ring(Algorithm):
    """NCCL_ALGO_RING (index 1)."""

    name: str = "ring"
    index: int = 1
    #: The column of the profile's latency tables it reads (NCCL's; a subclass keeps it).
    table: ClassVar[str] = "ring"
    nccl_name: str = "Ring"
    pipelined: bool = True

    def applies(self, collective: str, protocol: str, comm: Communicator) -> tuple:
        """Every collective; LL128 by its rules (:func:`ll128_applies`), and not on 2 ranks of sm90
        AllReduce built with CUDA 11.8."""
        if collective not in self.collectives:  # a variant that lists fewer
            return super().applies(collective, protocol, comm)
        if protocol != "LL128":
            return True, None
        enabled, why = ll128_applies(self.name, collective, comm, comm.ring)
        if enabled and comm.profile.behaviour.ll128 is Ll128Rule.ONE_COMPUTE_CAPABILITY and comm.cuda_11_8 \
                and comm.compute_capability >= 90 and collective == "all_reduce" and comm.nranks == 2:
            return False, Why(Cause.LL128_CUDA_11_8)
        return enabled, why

    def bus_bandwidth(self, collective: str, protocol: str, comm: Communicator) -> BusBandwidth:
        """``nChannels x bw``, then Ring LL: ``min(busBw x 0.5, llMaxBw)``; Ring LL128:
        ``min(busBw x 0.92, nChannels x perChMaxRingLL128Bw)``."""
        bus = BusSteps(collective, self.name, protocol, comm, comm.ring)
        profile = comm.profile
        if protocol == "LL":
            reducing = comm.nnodes > 1 or collective in ("all_reduce", "reduce")
            factor = profile.ring_ll_factor if reducing else profile.ring_ll_factor_single_node_copy
            bus.step("Ring LL", factor, *bus.ll_cap())
        elif protocol == "LL128":
            factor = profile.ring_ll128_factor_ppn1 if comm.ppn < 2 else profile.ring_ll128_factor
            bus.step("Ring LL128", factor, *bus.ll128_cap("perChMaxRingLL128Bws", profile.per_ch_max_ring_ll128_bw))
        return bus.result()

    def latency(self, collective: str, protocol: str, comm: Communicator) -> Latency:
        """Broadcast/Reduce: ``base + hwLat[hw][Ring][p]`` if the channels are the same, else
        ``base + nsteps x (Simple ? hwLat[hw][Tree][Simple] : hwLat[hw][Ring][p])``; the others:
        ``base + (nsteps - nInterSteps) x max(intraLat, netOverhead) + nInterSteps x interLat``;
        v2.5: ``base + nsteps x hwLat[hw][Ring][p]``."""
        profile = comm.profile
        x = latency_inputs(self.table, collective, protocol, comm, comm.ring)
        nnodes, hw, intra, overhead = comm.nnodes, x.hw, x.intra, 0.0
        if profile.behaviour.ring_latency is RingLatency.NSTEPS_HW:
            # v2.5: lat += nsteps x hwLat[hw][Ring][p], hw = NET on several nodes (v2.5.7-1 tuning.cc).
            terms = (LatencyTerm(f"nsteps x hwLat[{hw}][ring][{protocol}]", x.steps,
                                 profile.hw_lat(hw, "ring", protocol)),)
        elif collective in ("broadcast", "reduce"):
            if x.graph.same_channels:
                terms = (LatencyTerm(f"one step x hwLat[{hw}][ring][{protocol}] (same channels)", 1,
                                     profile.hw_lat(hw, "ring", protocol)),)
            else:
                per_algorithm = "tree" if protocol == "Simple" else "ring"
                terms = (LatencyTerm(f"nsteps x hwLat[{hw}][{per_algorithm}][{protocol}]", x.steps,
                                     profile.hw_lat(hw, per_algorithm, protocol)),)
        else:
            if nnodes > 1:
                overhead = profile.net_overhead_of(comm.cpu_vendor, protocol)
                if protocol == "LL":
                    intra *= profile.ring_ll_multi_node_intra_factor
            intra_step = max(intra, overhead)
            if nnodes == 1:
                inter_steps = 0
            elif collective == "all_reduce":
                inter_steps = 2 * (nnodes - profile.allreduce_inter_steps_offset)
            else:
                inter_steps = nnodes - 1
            terms = (LatencyTerm(f"intra-node steps x max(hwLat[{x.intra_hw}][ring][{protocol}], net "
                                 f"overhead)", x.steps - inter_steps, intra_step),
                     LatencyTerm(f"inter-node steps x {x.inter_name}", inter_steps, x.inter))
        value = x.base + sum(term.value for term in terms)
        return Latency(collective, self.name, protocol, x.base, terms, value, x.intra_hw, overhead)

    def time_factors(self, collective: str, protocol: str, size: np.ndarray, comm: Communicator) -> tuple:
        """The plateau of Ring Simple AllReduce on several nodes: latency x (1.9 if minCompCap < 80
        else 1.4) when ``nBytes / (comm->nChannels x nRanks) >= 64`` (src/enqueue.cc; ``comm->nChannels``
        within the release's CTAs, 16 on Blackwell from v2.28)."""
        plateau = np.ones(size.shape)
        if protocol == "Simple" and comm.nnodes > 1 and collective == "all_reduce":
            profile = comm.profile
            channels = comm.nchannels if comm.nchannels is not None else cta_capped(
                comm_channels(comm.ring.nchannels, comm.tree.nchannels, profile), profile, comm.compute_capability)
            below80, from80 = profile.require("ring_plateau_factor")
            factor = below80 if comm.compute_capability < 80 else from80
            plateau = np.where(np.floor(size / (channels * comm.nranks))
                               >= profile.ring_plateau_min_bytes, factor, 1.0)
        return np.ones(size.shape), plateau

    def network(self, graphs: Any) -> tuple:
        """One ring per channel between nodes."""
        return graphs.ring, "ring"


#: NCCL's Ring.
RING = Ring()
