"""What each NCCL release does differently, typed: one Enum per behaviour, one table.

A behaviour is a rule that is code in NCCL, not a number: how rings are built, whether trees exist
and when they run, how the algorithm is chosen, which latency and cap formulas apply, when LL128,
NVB, PXN, MNNVL and NVLS are on. Each is an :class:`~enum.Enum` below whose members name the forms
the rule took across releases; :data:`BEHAVIOURS` chooses one member per (profile, behaviour) in
one table, whose rows are the profiles of :mod:`models.engine.nccl.profiles` and whose columns are
:data:`COLUMNS`. The numbers each rule reads (thresholds, caps, latencies) stay in the profile;
the profile carries its row as :attr:`NcclProfile.behaviour
<models.engine.nccl.profiles.NcclProfile.behaviour>`, so code decides by identity
(``profile.behaviour.tree is TreeRule.NONE``), never by comparing strings.

Where each cell comes from: the column names the NVIDIA/nccl file(s) that hold the rule
(:attr:`Column.source`), the row names the tag that was read (:attr:`ReleaseBehaviour.tag`, the
tag of the profile's constants); together they are the citation of the cell. A row's
:attr:`ReleaseBehaviour.uncertain` lists the cells that were not read at that tag.

The table (``-`` where the release lacks the feature;
:func:`models.present.versions_text.format_behaviour_table` writes it, and a test checks that this
copy is the same):

.. behaviour-table

======= ========== ============= ============== ================= ========= =========== =========== ============
profile tag        rings         legacy_threads legacy_node_rings tree      choice      ring_lat    inter_lat
======= ========== ============= ============== ================= ========= =========== =========== ============
2.3.5   v2.3.5-5   nvlink_counts pascal_half    as_found          none      thresholds  nsteps_hw   graph_or_net
2.3.7   v2.3.7-1   nvlink_counts pascal_half    as_found          none      thresholds  nsteps_hw   graph_or_net
2.4.8   v2.4.8-1   nvlink_counts default        nvlink_x2         threshold thresholds  nsteps_hw   graph_or_net
2.5.7   v2.5.7-1   search        -              -                 model     lowest_time nsteps_hw   graph_or_net
2.7.8   v2.7.8-1   search        -              -                 model     lowest_time intra_inter graph_or_net
2.8.4   v2.8.4-1   search        -              -                 model     lowest_time intra_inter graph_or_net
2.11.4  v2.11.4-1  search        -              -                 model     lowest_time intra_inter graph_or_net
2.12.12 v2.12.12-1 search        -              -                 model     lowest_time intra_inter graph_or_net
2.16.5  v2.16.5-1  search        -              -                 model     lowest_time intra_inter graph_or_net
2.17.1  v2.17.1-1  search        -              -                 model     lowest_time intra_inter graph_or_net
2.18.6  v2.18.6-1  search        -              -                 model     lowest_time intra_inter ppn
2.19.4  v2.19.4-1  search        -              -                 model     lowest_time intra_inter ppn
2.21.5  v2.21.5-1  search        -              -                 model     lowest_time intra_inter ppn
2.23.4  v2.23.4-1  search        -              -                 model     lowest_time intra_inter ppn
2.24.3  v2.24.3-1  search        -              -                 model     lowest_time intra_inter ppn
2.25.1  v2.25.1-1  search        -              -                 model     lowest_time intra_inter ppn
2.26.2  v2.26.2-1  search        -              -                 model     lowest_time intra_inter ppn
2.27.7  v2.27.7-1  search        -              -                 model     lowest_time intra_inter ppn
2.28.3  v2.28.3-1  search        -              -                 model     lowest_time intra_inter ppn
2.28.9  v2.28.9-1  search        -              -                 model     lowest_time intra_inter ppn
2.29.2  v2.29.2-1  search        -              -                 model     lowest_time intra_inter ppn
2.30.7  v2.30.7-1  search        -              -                 model     lowest_time intra_inter ppn
2.31.0  2.31.0a7-1 search        -              -                 model     lowest_time intra_inter ppn
======= ========== ============= ============== ================= ========= =========== =========== ============

======= =========== ========== =========== ========= ======= =========== ====== ============= ========== ========== ========
profile tree_cap    ll_cap     ll128_cap   ll128     nvb     pxn         mnnvl  nvls          nvls_mnnvl nvls_ratio nvls_lat
======= =========== ========== =========== ========= ======= =========== ====== ============= ========== ========== ========
2.3.5   total_v2.5  none       total       none      none    none        none   none          -          -          -
2.3.7   total_v2.5  none       total       none      none    none        none   none          -          -          -
2.4.8   total_v2.5  none       total       none      none    none        none   none          -          -          -
2.5.7   total_v2.5  none       total       listed_cc none    none        none   none          -          -          -
2.7.8   total_v2.7  none       per_channel listed_cc none    none        none   none          -          -          -
2.8.4   per_channel ll_max_bws per_row     listed_cc one_gpu none        none   none          -          -          -
2.11.4  per_channel ll_max_bws per_row     listed_cc one_gpu none        none   none          -          -          -
2.12.12 per_channel ll_max_bws per_row     listed_cc one_gpu nvlink_peer none   none          -          -          -
2.16.5  per_channel ll_max_bws per_row     listed_cc one_gpu nvlink_peer none   none          -          -          -
2.17.1  per_channel ll_max_bws per_row     listed_cc one_gpu nvlink_peer none   nvls          none       v2.18      v2.18
2.18.6  per_channel ll_max_bws per_row     one_cc    one_gpu nvlink_peer none   nvls_and_tree none       v2.18      v2.18
2.19.4  per_channel ll_max_bws per_row     one_cc    one_gpu nvlink_peer none   nvls_and_tree none       5/6        v2.19
2.21.5  per_channel ll_max_bws per_row     one_cc    one_gpu nvlink_peer clique nvls_and_tree clique     5/6        v2.19
2.23.4  per_channel ll_max_bws per_row     one_cc    one_gpu nvlink_peer clique nvls_and_tree clique     5/6        v2.19
2.24.3  per_channel ll_max_bws per_row     one_cc    one_gpu nvlink_peer clique nvls_and_tree clique     5/6        v2.19
2.25.1  per_channel ll_max_bws per_row     one_cc    one_gpu nvlink_peer clique nvls_and_tree gpus       5/6        v2.19
2.26.2  per_channel ll_max_bws per_row     one_cc    one_gpu nvlink_peer clique nvls_and_tree gpus       5/6        v2.19
2.27.7  per_channel ll_max_bws per_row     one_cc    one_gpu nvlink_peer clique nvls_and_tree gpus       5/6        v2.19
2.28.3  per_channel ll_max_bws per_row     one_cc    one_gpu nvlink_peer clique nvls_and_tree gpus       nsteps     v2.19
2.28.9  per_channel ll_max_bws per_row     one_cc    one_gpu nvlink_peer clique nvls_and_tree gpus       nsteps     v2.19
2.29.2  per_channel ll_max_bws per_row     one_cc    one_gpu nvlink_peer clique nvls_and_tree gpus       nsteps     v2.19
2.30.7  per_channel ll_max_bws per_row     one_cc    one_gpu nvlink_peer clique nvls_and_tree gpus       nsteps     v2.19
2.31.0  per_channel ll_max_bws per_row     one_cc    one_gpu nvlink_peer clique nvls_and_tree gpus       nsteps     v2.19
======= =========== ========== =========== ========= ======= =========== ====== ============= ========== ========== ========

======= =========== ========== =========== =========== =============
profile pat_steps   cta_policy symmetric   copy_engine tuning_code
======= =========== ========== =========== =========== =============
2.3.5   none        none       none        none        none
2.3.7   none        none       none        none        none
2.4.8   none        none       none        none        none
2.5.7   none        none       none        none        tuning_cc
2.7.8   none        none       none        none        tuning_cc
2.8.4   none        none       none        none        tuning_cc
2.11.4  none        none       none        none        tuning_cc
2.12.12 none        none       none        none        tuning_cc
2.16.5  none        none       none        none        tuning_cc
2.17.1  none        none       none        none        tuning_cc
2.18.6  none        none       none        none        tuning_cc
2.19.4  none        none       none        none        tuning_cc
2.21.5  none        none       none        none        tuning_cc
2.23.4  serial      none       none        none        tuning_cc
2.24.3  serial      none       none        none        tuning_cc
2.25.1  serial      none       none        none        tuning_cc
2.26.2  parallel_16 none       none        none        tuning_cc
2.27.7  parallel_16 efficiency windows     none        tuning_cc
2.28.3  parallel_16 zero       device_api  zero_cta    constants
2.28.9  parallel_16 zero       device_api  zero_cta    constants
2.29.2  parallel_16 zero       nvlink_only ag_8mib     constants
2.30.7  parallel_16 names      nvlink_only ag_8mib     constants
2.31.0  parallel_16 names      nvlink_only ag_8mib     per_algorithm
======= =========== ========== =========== =========== =============

.. end-behaviour-table

Examples
--------
>>> from models.engine.nccl.releases import BEHAVIOURS, TreeRule, RingBuilder
>>> BEHAVIOURS["2.4.8"].tree is TreeRule.ACROSS_NODES, BEHAVIOURS["2.4.8"].tree.label
(True, 'trees across nodes (threshold)')
>>> BEHAVIOURS["2.27.7"].ring_builder is RingBuilder.TOPOLOGY_SEARCH
True
>>> BEHAVIOURS["2.7.8"].cell("tree_cap")
'total_v2.7: maxTreeBw by nNodes > 2 (NVIDIA/nccl v2.7.8-1 src/graph/tuning.cc)'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType


__all__ = [
    "Behaviour", "RingBuilder", "TreeRule", "AlgorithmSelection", "RingLatency", "InterLatency",
    "TreeCap", "LlCap", "Ll128Cap", "Ll128Rule", "NvbRelay", "Pxn", "Mnnvl", "NvlsAlgorithms",
    "NvlsMnnvl", "NvlsRatio", "NvlsLatency", "LegacyThreads", "LegacyNodeRings", "PatSteps",
    "CtaPolicy", "SymmetricKernels", "CopyEngine", "TuningCode",
    "Column", "COLUMNS", "ReleaseBehaviour", "BEHAVIOURS", "behaviour_table",
]


class Behaviour(Enum):
    """A behaviour of NCCL that changed between releases: members are its forms.

    Each member has a short ``value`` (the code in :data:`BEHAVIOURS`' printed table) and a
    ``label`` in words (what :func:`models.present.versions_text.versions_rows` and explanations
    print; :func:`models.engine.nccl.versions_table` gives the members themselves).
    """

    def __new__(cls, code: str, label: str):
        member = object.__new__(cls)
        member._value_ = code
        member.label = label
        return member


class RingBuilder(Behaviour):
    """How the release builds its rings (src/init.cc, src/graph/search.cc)."""

    #: NCCL 2.0-2.4: rings from NVLink counts, SHM hops, one fallback ring
    #: (:mod:`models.engine.nccl.legacy_rings`).
    NVLINK_COUNTS = ("nvlink_counts", "rings from NVLink counts")
    #: v2.5+: the topology search (:mod:`models.engine.nccl.search`).
    TOPOLOGY_SEARCH = ("search", "topology search")


class LegacyThreads(Behaviour):
    """Threads per ring of NCCL 2.0-2.4 (src/init.cu ``getDefaultThreads`` and its callers)."""

    #: v2.0-v2.3 (removed in v2.4.2): Pascal with NVLink rings halves ``nThreads`` to 128.
    HALF_ON_PASCAL_NVLINK = ("pascal_half", "Pascal NVLink rings at half the threads")
    #: v2.4: every ring at the default thread count.
    DEFAULT = ("default", "default threads")


class LegacyNodeRings(Behaviour):
    """Rings of a GPU with NVLink across nodes in NCCL 2.0-2.4 (src/init.cc, netGetRings)."""

    #: v2.0-v2.3: one ring per NIC, as found.
    AS_FOUND = ("as_found", "one ring per NIC")
    #: v2.4: the NVLink rings are copied x2.
    NVLINK_DOUBLED = ("nvlink_x2", "NVLink rings across nodes x2")


class TreeRule(Behaviour):
    """Whether trees exist and when they run."""

    NONE = ("none", "no trees")
    #: v2.4: double binary trees across >= 2 nodes, below ``ncclTreeThreshold``.
    ACROSS_NODES = ("threshold", "trees across nodes (threshold)")
    #: v2.5+: the tuning model times the tree like every other algorithm.
    TUNED = ("model", "trees")


class AlgorithmSelection(Behaviour):
    """How the algorithm and protocol are chosen per size."""

    #: NCCL 2.0-2.4: LL below a size threshold, Simple above; the tree below its threshold.
    SIZE_THRESHOLDS = ("thresholds", "LL/Simple by size threshold")
    #: v2.5+: the lowest modelled time, ties to the lower (algorithm, protocol) index.
    LOWEST_TIME = ("lowest_time", "tuning model")


class RingLatency(Behaviour):
    """The Ring latency formula of the tuning model."""

    #: v2.5: ``nsteps x hwLat[hw][Ring][p]``, hw = NET on several nodes.
    NSTEPS_HW = ("nsteps_hw", "nsteps x hwLat")
    #: v2.7+: intra-node steps x max(intraLat, netOverhead) + inter-node steps x interLat.
    INTRA_INTER = ("intra_inter", "intra- and inter-node steps")


class InterLatency(Behaviour):
    """The inter-node latency of one step (``interLat``)."""

    #: v2.5-v2.17: ``latencyInter`` when the topology gives one, else ``hwLat[NET][a][p]``.
    GRAPH_OR_NET = ("graph_or_net", "latencyInter or hwLat[NET]")
    #: v2.18+: ``(ppn == 1 ? hwLat[NET][Tree] : hwLat[NET][a]) + latencyInter (x2 Simple)``.
    PPN = ("ppn", "hwLat[NET] by ppn + latencyInter")


class TreeCap(Behaviour):
    """The cap on the Tree AllReduce bus bandwidth."""

    #: v2.5: a total cap, ``nNodes > 1 ? 70 : 90`` GB/s.
    TOTAL_V2_5 = ("total_v2.5", "maxTreeBw by nNodes > 1")
    #: v2.7: ``maxTreeBw``, 110 GB/s on <= 2 nodes, 80 above (130 / 105 for sm80 LL128).
    TOTAL_V2_7 = ("total_v2.7", "maxTreeBw by nNodes > 2")
    #: v2.8+: ``nChannels x perChMaxTreeBws[row][nodes]``.
    PER_CHANNEL = ("per_channel", "nChannels x perChMaxTreeBws")

    def multi_node_column(self, nnodes: int) -> int:
        """Column of the profile's ``tree_total_caps`` (0 or 1) for ``nnodes`` (total caps only).

        >>> TreeCap.TOTAL_V2_5.multi_node_column(2), TreeCap.TOTAL_V2_7.multi_node_column(2)
        (1, 0)
        """
        return int(nnodes > 1) if self is TreeCap.TOTAL_V2_5 else int(nnodes > 2)


class LlCap(Behaviour):
    """The cap on Ring and Tree LL bandwidth."""

    NONE = ("none", "no LL cap")
    #: v2.8+: ``llMaxBws[row][nodes]``.
    LL_MAX_BWS = ("ll_max_bws", "llMaxBws")


class Ll128Cap(Behaviour):
    """The cap on LL128 bandwidth."""

    #: v2.5: ``ll128MaxBw[coll]``, a total per collective.
    TOTAL_PER_COLLECTIVE = ("total", "ll128MaxBw[coll]")
    #: v2.7: ``nChannels x ll128MaxBwPerCh[coll]``.
    PER_CHANNEL_PER_COLLECTIVE = ("per_channel", "nChannels x ll128MaxBwPerCh[coll]")
    #: v2.8+: ``nChannels x perChMax{Ring,Tree}LL128Bws[row][nodes]``.
    PER_CHANNEL_PER_ROW = ("per_row", "nChannels x perChMaxLL128Bws[row]")


class Ll128Rule(Behaviour):
    """When LL128 is enabled."""

    #: Before v2.5.6: no LL128 protocol.
    NONE = ("none", "no LL128")
    #: v2.5-v2.17: every GPU at one of the profile's ``ll128_compute_capabilities``.
    LISTED_COMPUTE_CAPABILITIES = ("listed_cc", "LL128")
    #: v2.18+: one compute capability >= the minimum across GPUs; off for sm90 Ring AllReduce
    #: on 2 ranks built with CUDA 11.8.
    ONE_COMPUTE_CAPABILITY = ("one_cc", "LL128")


class NvbRelay(Behaviour):
    """Whether NCCL routes GPU to GPU through one intermediate GPU over NVLink (path NVB)."""

    NONE = ("none", "no GPU relay")
    #: v2.8+ (src/graph/paths.cc).
    ONE_GPU = ("one_gpu", "NVB relay")


class Pxn(Behaviour):
    """Whether NCCL reaches a NIC through an NVLink peer GPU (path PXN)."""

    NONE = ("none", "no PXN")
    #: v2.12+ (src/graph/paths.cc).
    NVLINK_PEER = ("nvlink_peer", "PXN")


class Mnnvl(Behaviour):
    """Multi-node NVLink: when the GPUs of several hosts are one NCCL node."""

    NONE = ("none", "no MNNVL")
    #: v2.20: only when one clique holds every rank.
    ALL_RANKS = ("all_ranks", "MNNVL when one clique holds every rank")
    #: v2.21+: every clique of more than one host is one NCCL node.
    CLIQUE = ("clique", "MNNVL cliques")


class NvlsAlgorithms(Behaviour):
    """Which NVLink SHARP algorithms exist."""

    NONE = ("none", "no NVLS")
    #: v2.17: NVLS on one node.
    NVLS = ("nvls", "NVLS")
    #: v2.18+: NVLS and NVLSTree.
    NVLS_AND_TREE = ("nvls_and_tree", "NVLS and NVLSTree")


class NvlsMnnvl(Behaviour):
    """NVLS on a multi-node NVLink clique (src/transport/nvls.cc)."""

    #: No MNNVL in the release (NVLS never meets a clique).
    NONE = ("none", "no MNNVL")
    #: v2.20: "NVLS is not supported on MNNVL yet".
    OFF = ("off", "no NVLS on MNNVL")
    #: v2.21-v2.24: off when the clique has <= 2 GPUs.
    CLIQUE = ("clique", "NVLS on cliques of more than 2 GPUs")
    #: v2.25+: the GPU-count rule alone.
    GPUS = ("gpus", "NVLS by GPU count")


class NvlsRatio(Behaviour):
    """The bus -> algorithm bandwidth ratio of NVLS/NVLSTree AllReduce."""

    #: v2.19-v2.27: 5/6.
    FIVE_SIXTHS = ("5/6", "5/6")
    #: v2.18: NVLS 5/6, NVLSTree ``0.70 nNodes / (2 (nNodes - 1))``.
    V2_18 = ("v2.18", "5/6, NVLSTree 0.70 nNodes / (2 (nNodes - 1))")
    #: v2.28+: ``nRanks / nsteps`` (given for HEAD; taken from v2.28.3 [U]).
    NSTEPS = ("nsteps", "nRanks / nsteps")

    def ratio(self, across_nodes: bool, nnodes: int, ring_ratio: float) -> float:
        """The ratio of NVLSTree (``across_nodes``) or NVLS on ``nnodes`` nodes.

        >>> NvlsRatio.V2_18.ratio(True, 2, 0.5), NvlsRatio.FIVE_SIXTHS.ratio(False, 1, 0.5)
        (0.7, 0.8333333333333334)
        """
        if self is NvlsRatio.NSTEPS:
            return ring_ratio
        if self is NvlsRatio.V2_18 and across_nodes and nnodes > 1:
            return 0.70 * nnodes / (2 * (nnodes - 1))
        return 5 / 6


class NvlsLatency(Behaviour):
    """The NVLS/NVLSTree latency formula."""

    #: v2.17-v2.18: ``baseLat + (nNodes > 1 ? hwLat[NET] : 0)``, NVLSTree ``+ 2 (nNodes - 1) hwLat[NET]``.
    V2_18 = ("v2.18", "base + hwLat[NET] terms")
    #: v2.19+: ``+ intraLat (+ interLat)``, NVLSTree ``+ intraLat + 2 log2i(nNodes) interLat``.
    V2_19 = ("v2.19", "base + intraLat + interLat terms")


class PatSteps(Behaviour):
    """How PAT runs its steps (src/device/prims_simple.h, src/include/collectives.h). NCCL's tuning
    model times PAT alike in both (the ``nRanks x 2.8`` µs term of src/graph/tuning.cc was not
    changed, NVIDIA/nccl v2.26.2-1), so the time model does too."""

    NONE = ("none", "no PAT")
    #: v2.23-v2.25: one PAT step at a time.
    SERIAL = ("serial", "PAT steps one at a time")
    #: v2.26+: step computation and execution on different warps, up to 16 steps in parallel
    #: (``NCCL_PAT_NWORKERS`` 512, ``NCCL_SHMEM_PAT_STEPS`` 32).
    PARALLEL = ("parallel_16", "up to 16 PAT steps in parallel")


class CtaPolicy(Behaviour):
    """``NCCL_CTA_POLICY`` / ``ncclConfig_t.CTAPolicy`` (src/nccl.h.in, src/init.cc)."""

    NONE = ("none", "no CTA policy")
    #: v2.27: ``DEFAULT`` 0x00, ``EFFICIENCY`` 0x01.
    DEFAULT_EFFICIENCY = ("efficiency", "CTA policy DEFAULT or EFFICIENCY")
    #: v2.28+: ``ZERO`` 0x02 added (copy-engine collectives); Blackwell's CTAs cut from 32 to 16.
    ZERO = ("zero", "CTA policy ZERO")
    #: v2.30+: the policies also by name.
    NAMES = ("names", "CTA policy ZERO, by name")


class SymmetricKernels(Behaviour):
    """Symmetric-memory kernels on buffers the user registers as windows
    (``ncclCommWindowRegister(..., NCCL_WIN_COLL_SYMMETRIC)``; src/symmetric.cc, src/enqueue.cc).
    They need the user's registration, so the model leaves them out of the time (they run only
    on registered buffers, which nccl-tests and the estimates here do not assume)."""

    NONE = ("none", "no symmetric kernels")
    #: v2.27: one node (P2P and NVLS), one collective per group, fp32/fp16/bf16/fp8 sum.
    WINDOWS = ("windows", "symmetric kernels on registered windows (not timed)")
    #: v2.28: re-implemented over the device API, may be aggregated in groups.
    DEVICE_API = ("device_api", "symmetric kernels on registered windows, device API (not timed)")
    #: v2.29+: the built-in kernels only on fully NVLink-connected systems.
    NVLINK_ONLY = ("nvlink_only", "symmetric kernels on registered windows, NVLink-only systems (not timed)")


class CopyEngine(Behaviour):
    """Collectives done by the copy engines inside one (MN)NVLink domain, no SM (src/ce_coll.cc,
    src/enqueue.cc): need symmetric windows, so the model leaves them out of the time."""

    NONE = ("none", "no copy-engine collectives")
    #: v2.28: AllGather, AlltoAll, Gather, Scatter with ``CTAPolicy`` ZERO, one NCCL node, both
    #: buffers in symmetric windows, CUDA driver >= 12.5.
    ZERO_CTA = ("zero_cta", "copy-engine collectives with CTA policy ZERO (not timed)")
    #: v2.29+: also a symmetric AllGather above ``NCCL_SYM_CE_THRESHOLD`` (8 MiB) on Blackwell
    #: with every GPU on NVLink, whatever the policy.
    LARGE_ALLGATHER = ("ag_8mib", "copy-engine collectives, and symmetric AllGather above 8 MiB on Blackwell "
                       "(not timed)")


class TuningCode(Behaviour):
    """Where NCCL's tuning model lives."""

    NONE = ("none", "no tuning model")
    #: v2.5-v2.27: ``ncclTopoTuneModel`` in src/graph/tuning.cc with its tables as arrays.
    TUNING_CC = ("tuning_cc", "src/graph/tuning.cc")
    #: v2.28-v2.30: the tables become ``ncclTunerConstantsDefaults``, exposed to tuner plugins (v5).
    TUNER_CONSTANTS = ("constants", "ncclTunerConstants (tuner plugin v5)")
    #: 2.31 (pre-release): src/tuning/, one model per algorithm (``ncclTuningModelEntry_t``).
    PER_ALGORITHM = ("per_algorithm", "src/tuning/, one model per algorithm")


@dataclass(frozen=True, slots=True)
class Column:
    """One behaviour column of :data:`BEHAVIOURS`.

    Attributes
    ----------
    name : str
        The :class:`ReleaseBehaviour` field.
    kind : type
        The :class:`Behaviour` enum of its cells.
    source : str
        The NVIDIA/nccl file(s) that hold the rule (the row's tag completes the citation).
    """

    name: str
    kind: type
    source: str


#: The behaviour columns, in table order, with the NCCL files that hold each rule.
COLUMNS = (
    Column("ring_builder", RingBuilder, "src/init.cc, src/graph/search.cc (v2.5+); src/init.cu, "
           "src/misc/rings.cu, src/transport/p2p.cu (before v2.5)"),
    Column("legacy_threads", LegacyThreads, "src/init.cu, src/init.cc (getDefaultThreads)"),
    Column("legacy_node_rings", LegacyNodeRings, "src/init.cc, src/transport/net.cc (netGetRings)"),
    Column("tree", TreeRule, "src/init.cc (ncclTreeThreshold, v2.4), src/graph/tuning.cc"),
    Column("selection", AlgorithmSelection, "src/enqueue.cc (topoGetAlgoInfo; "
           "ncclGetCollResource in src/include/common_coll.h before v2.5)"),
    Column("ring_latency", RingLatency, "src/graph/tuning.cc"),
    Column("inter_latency", InterLatency, "src/graph/tuning.cc"),
    Column("tree_cap", TreeCap, "src/graph/tuning.cc"),
    Column("ll_cap", LlCap, "src/graph/tuning.cc"),
    Column("ll128_cap", Ll128Cap, "src/graph/tuning.cc"),
    Column("ll128", Ll128Rule, "src/graph/tuning.cc"),
    Column("nvb", NvbRelay, "src/graph/paths.cc, src/graph/topo.h"),
    Column("pxn", Pxn, "src/graph/paths.cc, src/graph/topo.h"),
    Column("mnnvl", Mnnvl, "src/init.cc, src/graph/topo.cc"),
    Column("nvls", NvlsAlgorithms, "src/transport/nvls.cc, src/graph/tuning.cc"),
    Column("nvls_mnnvl", NvlsMnnvl, "src/transport/nvls.cc"),
    Column("nvls_ratio", NvlsRatio, "src/graph/tuning.cc"),
    Column("nvls_latency", NvlsLatency, "src/graph/tuning.cc"),
    Column("pat_steps", PatSteps, "src/include/collectives.h, src/device/ (PAT)"),
    Column("cta_policy", CtaPolicy, "src/nccl.h.in, src/init.cc, src/graph/connect.cc"),
    Column("symmetric", SymmetricKernels, "src/symmetric.cc, src/enqueue.cc"),
    Column("copy_engine", CopyEngine, "src/ce_coll.cc, src/enqueue.cc"),
    Column("tuning_code", TuningCode, "src/graph/tuning.cc; src/tuning/ (2.31)"),
)


@dataclass(frozen=True, slots=True)
class ReleaseBehaviour:
    """One row of :data:`BEHAVIOURS`: the form of every behaviour in one profile's releases.

    The NVLS cells are ``None`` in a release without NVLS (``nvls`` is then
    :attr:`NvlsAlgorithms.NONE`), the legacy cells in a release with the topology search.

    Attributes
    ----------
    profile : str
        The profile's version (:attr:`NcclProfile.version`).
    tag : str
        The NVIDIA/nccl tag read for the row (the profile's :attr:`NcclProfile.tag`).
    ring_builder, legacy_threads, legacy_node_rings, tree, selection, ring_latency, inter_latency, tree_cap, ll_cap, ll128_cap, \
ll128, nvb, pxn, mnnvl, nvls, nvls_mnnvl, nvls_ratio, nvls_latency, pat_steps, cta_policy, symmetric, \
copy_engine, tuning_code : Behaviour
        One member of each column's enum (:data:`COLUMNS`).
    uncertain : tuple of str
        Cells not read at ``tag`` (the rule of a neighbouring tag is taken) [U].
    """

    profile: str
    tag: str
    ring_builder: RingBuilder
    legacy_threads: LegacyThreads | None
    legacy_node_rings: LegacyNodeRings | None
    tree: TreeRule
    selection: AlgorithmSelection
    ring_latency: RingLatency
    inter_latency: InterLatency
    tree_cap: TreeCap
    ll_cap: LlCap
    ll128_cap: Ll128Cap
    ll128: Ll128Rule
    nvb: NvbRelay
    pxn: Pxn
    mnnvl: Mnnvl
    nvls: NvlsAlgorithms
    nvls_mnnvl: NvlsMnnvl | None
    nvls_ratio: NvlsRatio | None
    nvls_latency: NvlsLatency | None
    pat_steps: PatSteps = PatSteps.NONE
    cta_policy: CtaPolicy = CtaPolicy.NONE
    symmetric: SymmetricKernels = SymmetricKernels.NONE
    copy_engine: CopyEngine = CopyEngine.NONE
    tuning_code: TuningCode = TuningCode.TUNING_CC
    uncertain: tuple = ()

    def cell(self, column: str) -> str:
        """One cell with its citation: ``"code: label (NVIDIA/nccl TAG FILE)"``.

        Raises
        ------
        KeyError
            For a name that is not a column.
        """
        spec = {c.name: c for c in COLUMNS}[column]
        value = getattr(self, column)
        text = "-" if value is None else f"{value.value}: {value.label}"
        return f"{text} (NVIDIA/nccl {self.tag} {spec.source})"


def _row(profile, tag, *cells, uncertain=(), **newer) -> ReleaseBehaviour:
    return ReleaseBehaviour(profile, tag, *cells, uncertain=uncertain, **newer)


_R, _T, _S = RingBuilder, TreeRule, AlgorithmSelection
_LT, _LN = LegacyThreads, LegacyNodeRings
_RL, _IL, _TC, _LC, _L8C, _L8 = RingLatency, InterLatency, TreeCap, LlCap, Ll128Cap, Ll128Rule
_NV, _PX, _MN, _NA, _NM, _NR, _NL = NvbRelay, Pxn, Mnnvl, NvlsAlgorithms, NvlsMnnvl, NvlsRatio, NvlsLatency
_LEGACY_U = ("ring_latency", "inter_latency", "tree_cap", "ll_cap", "ll128_cap")

# The cells v2.25-2.31 share up to the NVLS rules: the topology search and tuning model, PXN,
# MNNVL cliques, NVLS and NVLSTree.
_SEARCH_ROW = (_R.TOPOLOGY_SEARCH, None, None, _T.TUNED, _S.LOWEST_TIME, _RL.INTRA_INTER, _IL.PPN,
               _TC.PER_CHANNEL, _LC.LL_MAX_BWS, _L8C.PER_CHANNEL_PER_ROW, _L8.ONE_COMPUTE_CAPABILITY,
               _NV.ONE_GPU, _PX.NVLINK_PEER, _MN.CLIQUE, _NA.NVLS_AND_TREE)
# v2.28's new cells (release commit f1308997, NVIDIA/nccl v2.28.3-1).
_V2_28_CELLS = MappingProxyType(dict(pat_steps=PatSteps.PARALLEL, cta_policy=CtaPolicy.ZERO,
                                     symmetric=SymmetricKernels.DEVICE_API, copy_engine=CopyEngine.ZERO_CTA,
                                     tuning_code=TuningCode.TUNER_CONSTANTS))
_V2_28_U = (
    "cta_policy: the release notes cut Blackwell's CTAs from 32 to 16; that the mechanism is the "
    "removed copy of ring channels up to nvlsChannels (src/graph/connect.cc) is inferred, and the "
    "profile caps every Blackwell kernel's channels at 16",
    "nvls_ratio: nRanks / nsteps is given for HEAD and 5/6 for v2.19-v2.27; it is taken to come "
    "with v2.28.3's nvlsEfficiency",
)
_V2_29_U = (
    "p2p_channels_per_net_peer: v2.29's release notes give alltoall/send/recv \"better default channels per "
    "net peer\" (NCCL_NCHANNELS_PER_NET_PEER) but no value, nor does the appendix; the default before it, 2 "
    "(models.engine.nccl.p2p_plan.NCHANNELS_PER_NET_PEER), is kept",
)
_V2_30_U = (
    "nvls: the Blackwell multi-node NVLSTree channel and chunk tuning of v2.30.3 "
    "(ncclNvlsTreeSm100Tuning) is not modelled (it sets execution channels and chunk sizes, "
    "not the tuning model's time); NVLS off when ranks share a GPU (v2.30.7) concerns no fabric here",
    "release notes of 2.30 not read: the cells come from code diffs",
)
_V2_31_U = (
    "every cell: 2.31 is the 2.31.0a7-1 pre-release on NVIDIA/nccl's dev branch (no release tag) "
    "and may change",
    "2.32: nothing was found for it in NVIDIA/nccl; 2.32.x takes this row",
)

#: THE table: one row per profile (oldest first), one cell per behaviour column (:data:`COLUMNS`).
#: Rows before v2.5 time their rings with v2.5's formulas (NCCL had no tuning model then) [U].
BEHAVIOURS: Mapping[str, ReleaseBehaviour] = MappingProxyType({row.profile: row for row in (
    #    profile    tag           ring     tree       selection          ring lat        inter lat
    #    tree cap         ll cap         ll128 cap                   ll128          nvb         pxn
    #    mnnvl      nvls                  nvls mnnvl  nvls ratio  nvls latency
    _row("2.3.5", "v2.3.5-5", _R.NVLINK_COUNTS, _LT.HALF_ON_PASCAL_NVLINK, _LN.AS_FOUND, _T.NONE, _S.SIZE_THRESHOLDS, _RL.NSTEPS_HW,
         _IL.GRAPH_OR_NET, _TC.TOTAL_V2_5, _LC.NONE, _L8C.TOTAL_PER_COLLECTIVE, _L8.NONE, _NV.NONE,
         _PX.NONE, _MN.NONE, _NA.NONE, None, None, None,
         tuning_code=TuningCode.NONE, uncertain=_LEGACY_U + ("ring_builder: 2.0-2.2 have no tag; v2.3.5's rings are taken",)),
    _row("2.3.7", "v2.3.7-1", _R.NVLINK_COUNTS, _LT.HALF_ON_PASCAL_NVLINK, _LN.AS_FOUND, _T.NONE, _S.SIZE_THRESHOLDS, _RL.NSTEPS_HW,
         _IL.GRAPH_OR_NET, _TC.TOTAL_V2_5, _LC.NONE, _L8C.TOTAL_PER_COLLECTIVE, _L8.NONE, _NV.NONE,
         _PX.NONE, _MN.NONE, _NA.NONE, None, None, None, tuning_code=TuningCode.NONE, uncertain=_LEGACY_U),
    _row("2.4.8", "v2.4.8-1", _R.NVLINK_COUNTS, _LT.DEFAULT, _LN.NVLINK_DOUBLED, _T.ACROSS_NODES, _S.SIZE_THRESHOLDS, _RL.NSTEPS_HW,
         _IL.GRAPH_OR_NET, _TC.TOTAL_V2_5, _LC.NONE, _L8C.TOTAL_PER_COLLECTIVE, _L8.NONE, _NV.NONE,
         _PX.NONE, _MN.NONE, _NA.NONE, None, None, None, tuning_code=TuningCode.NONE, uncertain=_LEGACY_U),
    _row("2.5.7", "v2.5.7-1", _R.TOPOLOGY_SEARCH, None, None, _T.TUNED, _S.LOWEST_TIME, _RL.NSTEPS_HW,
         _IL.GRAPH_OR_NET, _TC.TOTAL_V2_5, _LC.NONE, _L8C.TOTAL_PER_COLLECTIVE,
         _L8.LISTED_COMPUTE_CAPABILITIES, _NV.NONE, _PX.NONE, _MN.NONE, _NA.NONE, None, None, None,
         uncertain=("inter_latency",)),
    _row("2.7.8", "v2.7.8-1", _R.TOPOLOGY_SEARCH, None, None, _T.TUNED, _S.LOWEST_TIME, _RL.INTRA_INTER,
         _IL.GRAPH_OR_NET, _TC.TOTAL_V2_7, _LC.NONE, _L8C.PER_CHANNEL_PER_COLLECTIVE,
         _L8.LISTED_COMPUTE_CAPABILITIES, _NV.NONE, _PX.NONE, _MN.NONE, _NA.NONE, None, None, None,
         uncertain=("inter_latency", "ll128")),
    _row("2.8.4", "v2.8.4-1", _R.TOPOLOGY_SEARCH, None, None, _T.TUNED, _S.LOWEST_TIME, _RL.INTRA_INTER,
         _IL.GRAPH_OR_NET, _TC.PER_CHANNEL, _LC.LL_MAX_BWS, _L8C.PER_CHANNEL_PER_ROW,
         _L8.LISTED_COMPUTE_CAPABILITIES, _NV.ONE_GPU, _PX.NONE, _MN.NONE, _NA.NONE, None, None, None,
         uncertain=("inter_latency", "ll128")),
    _row("2.11.4", "v2.11.4-1", _R.TOPOLOGY_SEARCH, None, None, _T.TUNED, _S.LOWEST_TIME, _RL.INTRA_INTER,
         _IL.GRAPH_OR_NET, _TC.PER_CHANNEL, _LC.LL_MAX_BWS, _L8C.PER_CHANNEL_PER_ROW,
         _L8.LISTED_COMPUTE_CAPABILITIES, _NV.ONE_GPU, _PX.NONE, _MN.NONE, _NA.NONE, None, None, None),
    _row("2.12.12", "v2.12.12-1", _R.TOPOLOGY_SEARCH, None, None, _T.TUNED, _S.LOWEST_TIME, _RL.INTRA_INTER,
         _IL.GRAPH_OR_NET, _TC.PER_CHANNEL, _LC.LL_MAX_BWS, _L8C.PER_CHANNEL_PER_ROW,
         _L8.LISTED_COMPUTE_CAPABILITIES, _NV.ONE_GPU, _PX.NVLINK_PEER, _MN.NONE, _NA.NONE,
         None, None, None),
    _row("2.16.5", "v2.16.5-1", _R.TOPOLOGY_SEARCH, None, None, _T.TUNED, _S.LOWEST_TIME, _RL.INTRA_INTER,
         _IL.GRAPH_OR_NET, _TC.PER_CHANNEL, _LC.LL_MAX_BWS, _L8C.PER_CHANNEL_PER_ROW,
         _L8.LISTED_COMPUTE_CAPABILITIES, _NV.ONE_GPU, _PX.NVLINK_PEER, _MN.NONE, _NA.NONE,
         None, None, None),
    _row("2.17.1", "v2.17.1-1", _R.TOPOLOGY_SEARCH, None, None, _T.TUNED, _S.LOWEST_TIME, _RL.INTRA_INTER,
         _IL.GRAPH_OR_NET, _TC.PER_CHANNEL, _LC.LL_MAX_BWS, _L8C.PER_CHANNEL_PER_ROW,
         _L8.LISTED_COMPUTE_CAPABILITIES, _NV.ONE_GPU, _PX.NVLINK_PEER, _MN.NONE, _NA.NVLS,
         _NM.NONE, _NR.V2_18, _NL.V2_18, uncertain=("nvls_ratio", "nvls_latency")),
    _row("2.18.6", "v2.18.6-1", _R.TOPOLOGY_SEARCH, None, None, _T.TUNED, _S.LOWEST_TIME, _RL.INTRA_INTER,
         _IL.PPN, _TC.PER_CHANNEL, _LC.LL_MAX_BWS, _L8C.PER_CHANNEL_PER_ROW,
         _L8.ONE_COMPUTE_CAPABILITY, _NV.ONE_GPU, _PX.NVLINK_PEER, _MN.NONE, _NA.NVLS_AND_TREE,
         _NM.NONE, _NR.V2_18, _NL.V2_18),
    _row("2.19.4", "v2.19.4-1", _R.TOPOLOGY_SEARCH, None, None, _T.TUNED, _S.LOWEST_TIME, _RL.INTRA_INTER,
         _IL.PPN, _TC.PER_CHANNEL, _LC.LL_MAX_BWS, _L8C.PER_CHANNEL_PER_ROW,
         _L8.ONE_COMPUTE_CAPABILITY, _NV.ONE_GPU, _PX.NVLINK_PEER, _MN.NONE, _NA.NVLS_AND_TREE,
         _NM.NONE, _NR.FIVE_SIXTHS, _NL.V2_19),
    _row("2.21.5", "v2.21.5-1", _R.TOPOLOGY_SEARCH, None, None, _T.TUNED, _S.LOWEST_TIME, _RL.INTRA_INTER,
         _IL.PPN, _TC.PER_CHANNEL, _LC.LL_MAX_BWS, _L8C.PER_CHANNEL_PER_ROW,
         _L8.ONE_COMPUTE_CAPABILITY, _NV.ONE_GPU, _PX.NVLINK_PEER, _MN.CLIQUE, _NA.NVLS_AND_TREE,
         _NM.CLIQUE, _NR.FIVE_SIXTHS, _NL.V2_19,
         uncertain=("mnnvl: v2.20 fuses a clique only when it holds every rank (Mnnvl.ALL_RANKS) "
                    "and runs no NVLS on it (NvlsMnnvl.OFF); the profile takes v2.21's rules",)),
    _row("2.23.4", "v2.23.4-1", _R.TOPOLOGY_SEARCH, None, None, _T.TUNED, _S.LOWEST_TIME, _RL.INTRA_INTER,
         _IL.PPN, _TC.PER_CHANNEL, _LC.LL_MAX_BWS, _L8C.PER_CHANNEL_PER_ROW,
         _L8.ONE_COMPUTE_CAPABILITY, _NV.ONE_GPU, _PX.NVLINK_PEER, _MN.CLIQUE, _NA.NVLS_AND_TREE,
         _NM.CLIQUE, _NR.FIVE_SIXTHS, _NL.V2_19, pat_steps=PatSteps.SERIAL),
    _row("2.24.3", "v2.24.3-1", _R.TOPOLOGY_SEARCH, None, None, _T.TUNED, _S.LOWEST_TIME, _RL.INTRA_INTER,
         _IL.PPN, _TC.PER_CHANNEL, _LC.LL_MAX_BWS, _L8C.PER_CHANNEL_PER_ROW,
         _L8.ONE_COMPUTE_CAPABILITY, _NV.ONE_GPU, _PX.NVLINK_PEER, _MN.CLIQUE, _NA.NVLS_AND_TREE,
         _NM.CLIQUE, _NR.FIVE_SIXTHS, _NL.V2_19, pat_steps=PatSteps.SERIAL),
    # v2.25+ (NVIDIA/nccl release commits 80f6bda4 v2.25.1-1, f44ac759 v2.26.2-1, 72d24320 v2.27.3-1,
    # f1308997 v2.28.3-1, ebd1e929 v2.29.2-1; v2.30 and 2.31 from code diffs).
    _row("2.25.1", "v2.25.1-1", *_SEARCH_ROW, _NM.GPUS, _NR.FIVE_SIXTHS, _NL.V2_19,
         pat_steps=PatSteps.SERIAL),
    _row("2.26.2", "v2.26.2-1", *_SEARCH_ROW, _NM.GPUS, _NR.FIVE_SIXTHS, _NL.V2_19,
         pat_steps=PatSteps.PARALLEL),
    _row("2.27.7", "v2.27.7-1", *_SEARCH_ROW, _NM.GPUS, _NR.FIVE_SIXTHS, _NL.V2_19,
         pat_steps=PatSteps.PARALLEL, cta_policy=CtaPolicy.DEFAULT_EFFICIENCY, symmetric=SymmetricKernels.WINDOWS),
    _row("2.28.3", "v2.28.3-1", *_SEARCH_ROW, _NM.GPUS, _NR.NSTEPS, _NL.V2_19, **_V2_28_CELLS,
         uncertain=_V2_28_U),
    _row("2.28.9", "v2.28.9-1", *_SEARCH_ROW, _NM.GPUS, _NR.NSTEPS, _NL.V2_19, **_V2_28_CELLS,
         uncertain=_V2_28_U),
    _row("2.29.2", "v2.29.2-1", *_SEARCH_ROW, _NM.GPUS, _NR.NSTEPS, _NL.V2_19,
         **dict(_V2_28_CELLS, symmetric=SymmetricKernels.NVLINK_ONLY, copy_engine=CopyEngine.LARGE_ALLGATHER),
         uncertain=_V2_28_U + _V2_29_U),
    _row("2.30.7", "v2.30.7-1", *_SEARCH_ROW, _NM.GPUS, _NR.NSTEPS, _NL.V2_19,
         **dict(_V2_28_CELLS, symmetric=SymmetricKernels.NVLINK_ONLY, copy_engine=CopyEngine.LARGE_ALLGATHER,
                cta_policy=CtaPolicy.NAMES), uncertain=_V2_28_U + _V2_29_U + _V2_30_U),
    _row("2.31.0", "2.31.0a7-1", *_SEARCH_ROW, _NM.GPUS, _NR.NSTEPS, _NL.V2_19,
         **dict(_V2_28_CELLS, symmetric=SymmetricKernels.NVLINK_ONLY, copy_engine=CopyEngine.LARGE_ALLGATHER,
                cta_policy=CtaPolicy.NAMES, tuning_code=TuningCode.PER_ALGORITHM),
         uncertain=_V2_31_U + _V2_28_U + _V2_29_U + _V2_30_U),
)})


def behaviour_table() -> tuple:
    """:data:`BEHAVIOURS` as rows of codes: a header, then one row per profile (``"-"`` for none).

    Examples
    --------
    >>> behaviour_table()[0][:4]
    ('profile', 'tag', 'ring_builder', 'legacy_threads')
    >>> behaviour_table()[1][:4]
    ('2.3.5', 'v2.3.5-5', 'nvlink_counts', 'pascal_half')
    """
    header = ("profile", "tag") + tuple(c.name for c in COLUMNS)
    rows = tuple((b.profile, b.tag) + tuple("-" if getattr(b, c.name) is None
                                            else getattr(b, c.name).value for c in COLUMNS)
                 for b in BEHAVIOURS.values())
    return (header,) + rows
