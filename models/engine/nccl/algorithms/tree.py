"""NCCL's Tree: AllReduce on the double binary tree, every protocol (src/graph/tuning.cc v2.27.7-1).

Examples
--------
>>> from models.engine.nccl.algorithms import TREE
>>> from models.engine.nccl.communicator import ChannelGraph, Communicator
>>> g = ChannelGraph(12, 30e9, "NVL", pattern="balanced_tree")
>>> round(TREE.bus_bandwidth("all_reduce", "LL128", Communicator(8, g, g, 90)).value / 1e9, 1)
257.6
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..communicator import NCCL_COLLECTIVES, BusBandwidth, ChannelGraph, Communicator, Latency, LatencyTerm, TuningError, log2i
from ..profiles import PROTOCOLS, NcclProfile
from ..reasons import Cause, Why
from ..releases import TreeCap, TreeRule
from .base import Algorithm, BusSteps, LinkCharges, latency_inputs, ll128_applies

__all__ = ["Tree", "TREE"]


@dataclass(frozen=True)
class Tree(Algorithm):
    """NCCL_ALGO_TREE (index 0): AllReduce only; v2.4 across nodes only, none before."""

    name: str = "tree"
    index: int = 0
    #: The column of the profile's latency tables it reads (NCCL's; a subclass keeps it).
    table: ClassVar[str] = "tree"
    nccl_name: str = "Tree"
    pattern: str = "tree"
    collectives: frozenset = frozenset({"all_reduce"})
    pipelined: bool = True

    def applies(self, collective: str, protocol: str, comm: Communicator) -> tuple:
        if collective not in NCCL_COLLECTIVES:  # one another algorithm of the set runs
            return super().applies(collective, protocol, comm)
        behaviour, release = comm.profile.behaviour, comm.profile.version
        if behaviour.tree is TreeRule.NONE:
            return False, Why(Cause.NO_TREES, release=release)
        if behaviour.tree is TreeRule.ACROSS_NODES and comm.nnodes < 2:
            return False, Why(Cause.TREES_ACROSS_NODES, release=release)
        if collective not in self.collectives:
            return False, Why(Cause.RING_ONLY, collective=collective)
        if protocol != "LL128":
            return True, None
        return ll128_applies(self.name, collective, comm, comm.tree)

    def graph(self, comm: Communicator) -> ChannelGraph | None:
        return comm.tree

    def bus_bandwidth(self, collective: str, protocol: str, comm: Communicator) -> BusBandwidth:
        """``min(busBw x 0.92, nChannels x perChMaxTreeBw)``, then LL: ``min(busBw / 3.8,
        llMaxBw)``; LL128: ``min(busBw x (7/9 on one node, else 120/128), nChannels x
        perChMaxTreeLL128Bw)``; then x0.85 if the tree graph's pattern is ``tree``."""
        if collective != "all_reduce":
            raise TuningError(f"NCCL runs {collective} with Ring only: expected algorithm 'ring'")
        profile, nnodes = comm.profile, comm.nnodes
        bus = BusSteps(collective, self.name, protocol, comm, comm.tree)
        tree_cap = profile.behaviour.tree_cap
        if tree_cap is not TreeCap.PER_CHANNEL:
            # v2.5: min(busBw x .9, nNodes > 1 ? 70 : 90); v2.7: maxTreeBw, 110 on <= 2 nodes
            # and 80 above (130 / 105 for LL128 on sm80).
            sm80_ll128 = protocol == "LL128" and comm.compute_capability >= 80
            cap = profile.tree_total_caps[int(sm80_ll128)][tree_cap.multi_node_column(nnodes)]
            bus.step("Tree AllReduce", profile.tree_factor, cap, "maxTreeBw")
        else:
            row = bus.cc_row()
            bus.step("Tree AllReduce", profile.tree_factor, bus.nch * profile.per_ch_max_tree_bw(row, nnodes),
                     f"nChannels x perChMaxTreeBws[{row}][{bus.col}]")
        if protocol == "LL":
            bus.step("Tree LL", 1.0 / profile.tree_ll_divisor, *bus.ll_cap())
        elif protocol == "LL128":
            factor = profile.tree_ll128_factor_single_node if nnodes == 1 \
                else profile.tree_ll128_factor_multi_node
            bus.step("Tree LL128", factor, *bus.ll128_cap("perChMaxTreeLL128Bws", profile.per_ch_max_tree_ll128_bw))
        if comm.tree.pattern == "tree":
            bus.step("Tree pattern TREE", profile.require("tree_pattern_factor"))
        return bus.result()

    def latency(self, collective: str, protocol: str, comm: Communicator) -> Latency:
        """``base + 2 x ((ppn - 1) x intraLat + log2i(nNodes) x interLat)``."""
        x = latency_inputs(self.table, collective, protocol, comm, comm.tree)
        terms = (LatencyTerm(f"2 x (ppn - 1) x hwLat[{x.intra_hw}][tree][{protocol}]", 2 * (comm.ppn - 1),
                             x.intra),
                 LatencyTerm(f"2 x log2i(nNodes) x {x.inter_name}", 2 * log2i(comm.nnodes), x.inter))
        value = x.base + sum(term.value for term in terms)
        return Latency(collective, self.name, protocol, x.base, terms, value, x.intra_hw, 0.0)

    def bus_to_alg_ratio(self, collective: str, nranks: int, profile: NcclProfile, nnodes: int = 1) -> float:
        """The profile's ``tree_alg_ratio``, 0.5."""
        return profile.tree_alg_ratio

    def time_factors(self, collective: str, protocol: str, size: np.ndarray, comm: Communicator) -> tuple:
        """AllReduce: ``bw x treeCorrectionFactor[p][log2i(nBytes >> 6)]`` for 0 <= log2i < 23 (no
        correction below 64 B or from 512 MiB on)."""
        correction = np.ones(size.shape)
        if collective == "all_reduce":
            table = np.asarray(comm.profile.require("tree_correction_factor")[PROTOCOLS.index(protocol)])
            chunks = np.floor(size / 64.0)               # nBytes >> 6
            log_size = np.where(chunks >= 1, np.frexp(np.maximum(chunks, 1.0))[1] - 1, -1)
            inside = (log_size >= 0) & (log_size < len(table))
            correction = np.where(inside, table[np.clip(log_size, 0, len(table) - 1)], 1.0)
        return correction, np.ones(size.shape)


    def network(self, graphs: Any) -> tuple:
        """NCCL's double binary tree between nodes, over the ring search's NICs."""
        return graphs.ring, "tree"

    def charge(self, links: LinkCharges) -> None:
        """The tree's channels inside each node; between nodes every tree edge carries the
        reduction up and the broadcast down, each at the tree's algorithm bandwidth (NCCL's
        busBw x 0.5, :meth:`bus_to_alg_ratio`)."""
        search = self.searched(links)
        if search is None:
            return
        rate = links.channels(search)
        if links.nnodes > 1 and search.nets:
            links.network_tree(search.nets, rate * self.bus_to_alg_ratio(links.collective, links.nranks,
                                                                         links.profile))


#: NCCL's Tree.
TREE = Tree()
