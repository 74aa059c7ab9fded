"""NCCL's tuning and search constants as data: one frozen profile per NCCL version.

Every number NCCL's performance model uses lives here, in one :class:`NcclProfile` per NCCL
release, so that no other module carries an NCCL literal. The tuning model
(:mod:`models.engine.nccl.tuning`) and the channel search read a profile; :func:`nccl_profile` looks one
up by version.

Units
-----
The tables below are written exactly as NCCL writes them (bandwidths in GB/s = 1e9 B/s,
latencies in µs), so that each can be compared line by line with its source. They are
converted to SI in exactly one place, :func:`_build` (through :func:`_GBps` and
:func:`_us`), when the profiles are created. **Every field of a profile is SI**: bandwidths
in [B/s], latencies in [s].

Profiles
--------
One profile governs each range of releases; :func:`nccl_profile` / :func:`parse_nccl_version`
map any release 2.0.0-2.32.x to it, and :func:`versions_table` lists them
(:func:`models.present.versions_text.format_versions_table` writes this table's first columns):

==============  ========  ==========  ==========================================================
releases        profile   constants   behaviour (source)
==============  ========  ==========  ==========================================================
2.0.0-2.3.6     2.3.5     v2.3.5-5    rings from NVLink counts, no relay, single fallback ring
                                      with SHM hops, no tree, no LL128, LL below a size
                                      threshold (threadThreshold 32) (src/transport/p2p.cu,
                                      src/misc/rings.cu, src/include/common_coll.h). [U] 2.0-2.2
                                      have no tag in NVIDIA/nccl
2.3.7-2.3.x     2.3.7     v2.3.7-1    as 2.3.5, threadThreshold 64 on Volta (common_coll.h)
2.4.0-2.4.x     2.4.8     v2.4.8-1    same rings (MAXCHANNELS 16); double binary trees across
                                      >= 2 nodes below ncclTreeThreshold (src/init.cc)
2.5.0-2.6.x     2.5.7     v2.5.7-1    topology search, tuning model, LL128 on Volta+NVLink
                                      (src/graph/tuning.cc, src/enqueue.cc); no NVB, no PXN
2.7.0-2.7.x     2.7.8     v2.7.8-1    hwLat v2.7, ll128MaxBwPerCh[coll], maxTreeBw, 235 GB/s
                                      sm80 cap (src/graph/tuning.cc)
2.8.0-2.9.x     2.8.4     v2.8.4-1    NVB relays through one GPU (src/graph/paths.cc), llMaxBws
2.10.0-2.11.x   2.11.4    v2.11.4-1   NVLink 22 GB/s (src/graph/topo.h), v2.12 tables, no PXN
2.12.0-2.13.x   2.12.12   v2.12.12-1  PXN (src/graph/paths.cc); hwLat[NET][Ring][Simple] 28
2.14.0-2.16.x   2.16.5    v2.16.5-1   v2.12 tables with hwLat[NET][Ring][Simple] 9.6
2.17.0-2.17.x   2.17.1    v2.17.1-1   as 2.16, and the first NVLS (src/transport/nvls.cc)
2.18.0-2.18.x   2.18.6    v2.18.6-1   MAXCHANNELS 32, NVLink 20, DupChannels, net overhead,
                                      NVLSTree
2.19.0-2.19.x   2.19.4    v2.19.4-1   hwLat Tree Simple 28; NVLS AllGather/ReduceScatter
2.20.0-2.22.x   2.21.5    v2.21.5-1   Ring LL x0.5, Hopper llMaxBws 141 (v2.21), MNNVL,
                                      NCCL_MAX_NVLS_ARITY 32
2.23.0-2.23.x   2.23.4    v2.23.4-1   baseLat Tree Simple 8.4, no LL128 ppn rule, PAT x0.85
2.24.0-2.24.x   2.24.3    v2.24.3-1   as 2.23, PAT x0.75; no Blackwell
2.25.0-2.25.x   2.25.1    v2.25.1-1   Blackwell (caps 2x Hopper, sm100 search arrays, NVLink
                                      40.0), MAXCHANNELS 64, 32 NVLS channels on sm100
2.26.0-2.26.x   2.26.2    v2.26.2-1   PAT steps in parallel (same tuning time), PAT off below
                                      sm60, path type C2C
2.27.0-2.27.x   2.27.7    v2.27.7-1   the reference version (default), MAXCHANNELS 64,
                                      symmetric kernels (registered windows, not timed)
2.28.0-2.28.6   2.28.3    v2.28.3-1   Blackwell 16 CTAs, tree caps, perChMaxNVLSTreeBws,
                                      nvlsEfficiency, copy-engine collectives (not timed)
2.28.7-2.28.x   2.28.9    v2.28.9-1   as 2.28.3, NVLS on 2 GPUs
2.29.0-2.29.x   2.29.2    v2.29.2-1   Blackwell Ring LL128 34.5, NVLSTree NET latency 20.9,
                                      24 treeCorrectionFactor columns, sm100 speed 45
2.30.0-2.30.x   2.30.7    v2.30.7-1   Blackwell Ring LL128 40, NVLSTree N4 80, sm100 Inter 86/80
2.31.0-2.32.x   2.31.0    2.31.0a7-1  [U] the dev pre-release: 2.30's constants, tuning split
                                      per algorithm; 2.32 nothing found, taken as 2.31
==============  ========  ==========  ==========================================================

What a release does differently in code (ring construction, tree rule, selection, latency and
cap formulas, LL128, NVB, PXN, MNNVL and NVLS rules) is not here but in
:mod:`models.engine.nccl.releases`, one typed row per profile, which the profile carries as
:attr:`NcclProfile.behaviour`; the behaviour words of
:func:`models.present.versions_text.format_versions_table` are written from it.

Every constant of a profile cites its NCCL file and tag next to its table below; what a tag
column of the reference does not give is marked [U] in the profile's :attr:`NcclProfile.notes`
with the fallback used. NCCL before 2.5 has no tuning model: its profiles time the rings it
builds with v2.5's tables [U] and choose the protocol by NCCL's own thresholds.

Index orders follow NCCL (src/include/device.h, NVIDIA/nccl v2.27.7-1): algorithms Tree=0, Ring=1
(:data:`TABLE_ALGORITHMS`; the algorithm objects: :data:`models.engine.nccl.algorithms.ALGORITHMS`); protocols LL=0, LL128=1, Simple=2 (:data:`PROTOCOLS`); hardware
NVLINK=0, PCI=1, NET=2 (:data:`HARDWARE`). Rows of the bandwidth-cap tables are indexed by
the compute-capability index (Volta 0, Ampere 1, Hopper 2, Blackwell 3, see
:meth:`NcclProfile.compute_capability_index`) or, for multi-node ``llMaxBws``, by CPU vendor;
columns by node count (1 node, 2 nodes, 4+ nodes).

Tree, Ring, NVLS, NVLSTree (:class:`NvlsRules`, v2.17+) and PAT (:class:`PatRules`, v2.23+)
are modelled. CollNet is not: NCCL enables CollNetDirect/CollNetChain only with a CollNet
(SHARP-enabled network) plugin, which none of these fabrics has, so NCCL would not pick them.

Why one module
--------------
Over 1,200 lines, and kept whole: it is one table. Each release's profile is written as the
differences from the one above it (:func:`_derive`), in NCCL's own units next to the file and tag
each number comes from, and everything is converted to SI in one place (:func:`_build`); the
class, the per-release tables and the lookup by version change together whenever a release is
added. Split by release, reading what 2.18 changes would mean reading three files, and the rule
that no module but this one carries an NCCL literal would hold across a package instead of a
file. What a release does differently in code already lives apart
(:mod:`models.engine.nccl.releases`).

References
----------
.. [1] NVIDIA/nccl, at the tag each profile names (:attr:`NcclProfile.tag`, e.g. v2.12.12-1,
   v2.27.7-1): src/graph/tuning.cc, src/graph/search.cc, src/graph/topo.h,
   src/include/device.h (NCCL_STEPS, MAXCHANNELS), src/init.cc, src/transport/nvls.cc.

Examples
--------
>>> from models.engine.nccl import nccl_profile
>>> from topo.units import GB, us
>>> p = nccl_profile()
>>> p.version
'2.27.7'
>>> p.ll_max_bw(2, 1) / GB          # llMaxBws[Hopper][1 node]
141.0
>>> round(p.hw_lat("NVLINK", "ring", "LL") / us, 3)
0.6
>>> nccl_profile("2.12.12").missing
('tree_pattern_factor',)
>>> nccl_profile("2.3.7").behaviour.ring_builder.label, nccl_profile("v2.8.4-1").behaviour.nvb.label
('rings from NVLink counts', 'NVB relay')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from topo.errors import DgxTopoError
from topo.specs import LINKS
from topo.units import GB, us

from .releases import BEHAVIOURS, ReleaseBehaviour

__all__ = [
    "PROTOCOLS", "HARDWARE", "PATH_TYPES", "DEFAULT_VERSION",
    "DupRule", "NvlsRules", "PatRules", "NcclProfile", "PROFILES", "nccl_profile",
    "TABLE_ALGORITHMS", "NVLS_ALGORITHMS", "NVLS_EFFICIENCY_V2_28", "ANY_PATCH",
    "UnknownNcclVersionError", "MissingConstantError",
]

#: The algorithms of the ``base_latency`` / ``hw_latency`` tables (NVLS, NVLSTree and PAT
#: latencies are in :class:`NvlsRules` and :class:`PatRules`).
TABLE_ALGORITHMS = ("tree", "ring")
#: The algorithms of :class:`NvlsRules`' latency columns (NVLS, NVLSTree).
NVLS_ALGORITHMS = ("nvls", "nvls_tree")
#: Protocols in NCCL's index order (LL=0, LL128=1, Simple=2; NVIDIA/nccl v2.27.7-1 src/include/device.h).
PROTOCOLS = ("LL", "LL128", "Simple")
#: Hardware classes of the latency table (NCCL_HW_NVLINK=0, PCI=1, NET=2; tuning.cc).
HARDWARE = ("NVLINK", "PCI", "NET")
#: Path types in increasing order of distance, reference version (src/include/graph.h
#: NVIDIA/nccl v2.27.7-1). Older versions lack some (see ``NcclProfile.path_types``).
PATH_TYPES = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS")
#: The profile :func:`nccl_profile` returns when no version is given.
DEFAULT_VERSION = "2.27.7"


class UnknownNcclVersionError(DgxTopoError):
    """An NCCL version that has no profile."""


class MissingConstantError(DgxTopoError):
    """A computation needs a constant that the chosen NCCL profile does not have."""


def _GBps(value: float) -> float:
    """NCCL bandwidth [GB/s] -> [B/s]. One of the two unit conversions of this module."""
    return value * GB


def _us(value: float) -> float:
    """NCCL latency [µs] -> [s]. One of the two unit conversions of this module."""
    return value * us


def _table(rows, convert):
    """Nested tuples with every number converted (tables are immutable tuples)."""
    if isinstance(rows, (tuple, list)):
        return tuple(_table(row, convert) for row in rows)
    return convert(rows)


@dataclass(frozen=True, slots=True)
class DupRule:
    """``ncclTopoDupChannels`` thresholds (NVIDIA/nccl v2.18.6-1 src/graph/search.cc, unchanged to v2.27.7-1).

    Channels are **not** duplicated when the per-channel bandwidth is below ``min_bw``, or
    when the minimum compute capability is above ``cc_above`` and the bandwidth is below
    ``cc_bw_below`` and there are more than ``cc_nchannels_above`` channels.

    Attributes
    ----------
    min_bw : float
        Below this per-channel ``bwIntra`` nothing is duplicated (25 GB/s). [B/s]
    cc_above : int
        Compute capability strictly above which the second test applies (80).
    cc_bw_below : float
        Per-channel bandwidth of the second test (50 GB/s). [B/s]
    cc_nchannels_above : int
        Channel count of the second test (4).
    """

    min_bw: float
    cc_above: int
    cc_bw_below: float
    cc_nchannels_above: int


#: A ``last`` patch number meaning "every patch release of this minor release".
ANY_PATCH = 999

#: ``nvlsEfficiency`` per compute-capability row (Volta, Ampere, Hopper, Blackwell), from
#: NVIDIA/nccl v2.28.3-1 src/graph/tuning.cc (absent before v2.28.3, where the v2.27 NVLS
#: formulas apply); :attr:`NvlsRules.efficiency` of the 2.28.3 and later profiles takes it.
NVLS_EFFICIENCY_V2_28 = (0.0, 0.0, 0.85, 0.74)


@dataclass(frozen=True, slots=True)
class NvlsRules:
    """NVLink SHARP (NVLS, NVLSTree) in one release: enabling, search and model constants.

    Which NVLS algorithms exist and the forms of their rules (MNNVL, ratio, latency) are
    behaviours (:class:`models.engine.nccl.releases.ReleaseBehaviour`); these are the numbers.

    NVIDIA/nccl src/transport/nvls.cc (``ncclNvlsInit``), src/graph/search.cc (the NVLS
    search), src/graph/tuning.cc, src/enqueue.cc and src/include/device.h at the profile's tag.

    Attributes
    ----------
    min_gpus : int
        NVLS is off with fewer GPUs in NCCL's node (v2.17: ``localRanks <= 1``; v2.18-v2.28.3:
        GPU count ``<= 2``, so 3; v2.28.7+: ``< 2``, so 2).
    max_arity : int
        ``NCCL_MAX_NVLS_ARITY``: 8 up to v2.20, 32 from v2.21. The NVLS search has
        ``min(arity, nGPUs)`` heads; AllGather/ReduceScatter need ``localRanks <= arity``.
    collectives : tuple of str
        Collectives NVLS runs: AllReduce (v2.17+), AllGather and ReduceScatter (v2.19+).
    base_latency : tuple of float
        ``baseLat[NVLS][Simple]``, ``baseLat[NVLSTree][Simple]``. [s]
    hw_latency : tuple of tuple of float
        ``hwLat[NVLINK, PCI, NET][NVLS, NVLSTree][Simple]``. [s]
    nchannels : tuple of int
        Execution channels ``comm->nvlsChannels``: (sm90, sm100 on one node or an MNNVL
        clique of all ranks, sm100 across nodes). They run the kernels; the model uses the
        search's heads.
    efficiency : tuple of float or None
        ``nvlsEfficiency`` per compute-capability row (v2.28.3+); ``None``: the v2.27 formulas.
    min_tuning_channels : int
        NVLS/NVLSTree need at least this many search channels in the model (1; 2 from v2.28).
    """

    min_gpus: int
    max_arity: int
    collectives: tuple
    base_latency: tuple
    hw_latency: tuple
    nchannels: tuple = (16, 16, 16)
    efficiency: tuple | None = None
    min_tuning_channels: int = 1


@dataclass(frozen=True, slots=True)
class PatRules:
    """PAT (v2.23+): AllGather/ReduceScatter with one rank per node (``ncclPatEnable``).

    NVIDIA/nccl v2.23.4-1 / v2.24.3-1 / v2.27.7-1 src/graph/tuning.cc.

    Attributes
    ----------
    factor : float
        ``busBw = treeGraph.nChannels x bw x factor``: 0.85 in v2.23, 0.75 from v2.24.3.
    base_latency : float
        The 8 µs written in the v2.23-v2.27 code (``baseLat[PAT]`` from v2.28). [s]
    per_rank_latency : float
        ``nRanks x 2.8`` µs. [s]
    inter_divisor : float
        ``log2i(nNodes) x interLat / 3.5``.
    min_compute_capability : int
        v2.26+: PAT is off below compute capability 60 (CUDA atomics); 0 before.
    """

    factor: float
    base_latency: float
    per_rank_latency: float
    inter_divisor: float = 3.5
    min_compute_capability: int = 0


@dataclass(frozen=True, slots=True)
class LegacyRings:
    """Ring construction and protocol choice of NCCL 2.0-2.4 (before the topology search): the
    numbers (the Pascal thread halving and the x2 node rings are behaviours,
    :class:`models.engine.nccl.releases.LegacyThreads` and ``LegacyNodeRings``).

    NVIDIA/nccl v2.3.7-1 / v2.4.8-1 src/init.cu, src/misc/rings.cu, src/transport/p2p.cu,
    src/include/nvlink.h, src/include/rings.h, src/include/common_coll.h.

    Attributes
    ----------
    max_rings : int
        ``MAXRINGS`` / ``MAXCHANNELS``: the ring count requested and the cap of every copy (16).
    default_threads : int
        ``getDefaultThreads`` (256; Kepler 128 is not modelled).
    ll_max_threads : int
        ``NCCL_LL_MAX_NTHREADS`` (256).
    ll_min_threads : int
        ``NCCL_LL_MIN_NTHREADS`` (64).
    thread_threshold : tuple of int
        ``ncclThreadThreshold`` per rank and thread, ``(compute capability 7+, 6 and
        below)``: (64, 32) in v2.3.7, (32, 32) in v2.3.5. [bytes]
    multi_node_threshold_factor : int
        The thread threshold is multiplied by this across nodes (2).
    connect_nvlink, connect_nvswitch : int
        ``CONNECT_NVLINK`` 0x10 per NVLink, ``CONNECT_NVSWITCH`` 0x100 per NVSwitch link.
    max_nvlinks : tuple of int
        NVLinks probed, ``(compute capability major > 6, otherwise)``: (6, 4).
    oversubscribe_max_ranks : int
        The NVLink search is rerun with capacities x2 for at most this many ranks (4).
    """

    max_rings: int
    default_threads: int
    ll_max_threads: int
    ll_min_threads: int
    thread_threshold: tuple
    multi_node_threshold_factor: int
    connect_nvlink: int = 0x10
    connect_nvswitch: int = 0x100
    max_nvlinks: tuple = (6, 4)
    oversubscribe_max_ranks: int = 4


@dataclass(frozen=True, slots=True)
class NcclProfile:
    """NCCL's model constants for one release, in SI units.

    Table fields are nested tuples in NCCL's index order (module docstring); use the
    lookup methods (:meth:`base_lat`, :meth:`hw_lat`, :meth:`ll_max_bw`, ...) rather than
    raw indices. A field that is ``None`` is a constant this library has no reading of for
    this release's tag; the lookups raise :class:`MissingConstantError` for it.

    Attributes
    ----------
    version : str
        ``"2.27.7"``.
    tag : str
        The NVIDIA/nccl git tag the constants come from.
    path_types : tuple of str
        Path type names of this version, closest first.
    max_channels : int or None
        ``MAXCHANNELS`` (src/include/device.h).
    nccl_steps : int
        ``NCCL_STEPS``, slots per connection buffer.
    base_latency : tuple
        ``baseLat[algorithm][protocol]``. [s]
    hw_latency : tuple
        ``hwLat[hardware][algorithm][protocol]``. [s]
    ll_max_bws : tuple
        ``llMaxBws[row][nodes column]``, a total (not per-channel) cap. [B/s]
    per_ch_max_ring_ll128_bws, per_ch_max_tree_ll128_bws, per_ch_max_tree_bws : tuple
        Per-channel caps ``[row][nodes column]``, multiplied by the graph's nChannels. [B/s]
    ring_ll_factor : float
        Ring LL bus-bandwidth factor (multi-node, or AllReduce/Reduce on one node).
    ring_ll_factor_single_node_copy : float
        Ring LL factor for Broadcast/AllGather/ReduceScatter on one node.
    ring_ll128_factor, ring_ll128_factor_ppn1 : float
        Ring LL128 factor; the second applies with fewer than 2 ranks per node.
    tree_factor : float
        Tree AllReduce factor applied with the ``perChMaxTreeBws`` cap.
    tree_ll_divisor : float
        Tree LL divides the bus bandwidth by this.
    tree_ll128_factor_single_node, tree_ll128_factor_multi_node : float
        Tree LL128 factor on one node / several nodes.
    tree_pattern_factor : float or None
        Applied to Tree when the tree graph's pattern is ``TREE`` (not balanced).
    tree_alg_ratio : float
        Bus -> algorithm bandwidth ratio of Tree (Ring uses ``nRanks / nsteps``).
    tree_correction_factor : tuple or None
        ``treeCorrectionFactor[protocol][log2(nBytes/64)]``.
    ring_plateau_factor : tuple of float or None
        Ring Simple multi-node AllReduce latency factor, ``(minCompCap < 80, >= 80)``.
    ring_plateau_min_bytes : int
        The plateau factor applies once ``nBytes / (comm->nChannels x nRanks)`` reaches
        this. [bytes]
    net_overhead : tuple of float
        ``getNetOverhead()`` for ``(intel, amd, other)`` CPUs; zero where the version has
        none (the term enters as ``max(intraLat, overhead)``, so zero means absent). [s]
    net_overhead_simple_factor : float
        The net overhead is multiplied by this for the Simple protocol.
    ring_ll_multi_node_intra_factor : float
        Ring LL intra-node latency multiplier when nNodes > 1 (1.8 before v2.18).
    allreduce_inter_steps_offset : int
        Ring AllReduce inter-node steps are ``2 * (nNodes - offset)``.
    ll128_max_type_intra, ll128_max_type_inter : str
        LL128 needs the graph's typeIntra / typeInter at most these.
    ll128_max_type_inter_sm90 : str or None
        Relaxed typeInter limit for sm90+ (``NCCL_LL128_C2C`` default on).
    ll128_compute_capabilities : tuple of int or None
        If set, LL128 needs every GPU at one of these exact compute capabilities.
    ll128_min_compute_capability : int
        LL128 is off below this.
    speed_intra, speed_inter : tuple of float
        Generic per-channel speed arrays of the search, high to low. [B/s]
    speed_sm90_intra, speed_sm90_inter, speed_sm100_intra, speed_sm100_inter : tuple or None
        Speed arrays for ccMin >= 90 / >= 100; ``None`` where the version has none (the
        generic arrays are then used). [B/s]
    dup_channels : DupRule or None
        ``ncclTopoDupChannels`` thresholds.
    nvlink_bandwidths : tuple of (int, float)
        ``ncclTopoNVLinkBw``: ``(minimum compute capability, per-link bandwidth)``, first
        match wins; see :meth:`nvlink_bandwidth`. [B/s]
    nvlink_bandwidth_default : float
        Per-link NVLink bandwidth below every threshold. [B/s]
    loc_bandwidth, pci_bandwidth, bdw_qpi_bandwidth, skl_qpi_bandwidth : float
        ``LOC_BW``, ``PCI_BW`` (Gen3 x16), ``BDW_QPI_BW``, ``SKL_QPI_BW``. [B/s]
    sources : tuple of str
        Where each group of constants comes from.
    notes : tuple of str
        Readings and gaps of this profile, in words.
    pci_bandwidths : tuple of (str, float)
        NCCL's figure per PCIe technology (``width x speed / 80``). [B/s]
    first, last : tuple of int
        The releases this profile governs, ``(major, minor, patch)``, inclusive; a ``last``
        patch of 999 means every patch of that minor release.
    ll128_per_collective : tuple of float or None
        The per-collective LL128 caps (``Ll128Cap`` of the behaviour table): v2.5 ``ll128MaxBw[coll]`` (totals) or v2.7 ``ll128MaxBwPerCh[coll]`` (per channel),
        in NCCL's function order (Broadcast, Reduce, AllGather, ReduceScatter, AllReduce);
        ``None`` when the per-row tables apply (v2.8+). [B/s]
    tree_total_caps : tuple or None
        v2.5/v2.7 total Tree caps ``((one or two nodes, more), (same for LL128 on sm80))``;
        v2.5 uses ``(one node, several)``. ``None`` when ``perChMaxTreeBws`` applies. [B/s]
    sm80_bus_cap : float or None
        v2.7: every bus bandwidth of an sm80 communicator is capped at 235 GB/s. [B/s]
    legacy : LegacyRings or None
        The ring construction and protocol thresholds of NCCL 2.0-2.4.
    nvls : NvlsRules or None
        NVLS / NVLSTree (v2.17+); ``None`` when the release has no NVLS.
    pat : PatRules or None
        PAT (v2.23+); ``None`` when the release has none.
    per_ch_max_nvls_tree_bws : tuple or None
        ``perChMaxNVLSTreeBws[row][nodes column]`` (v2.28+), a per-channel cap on NVLSTree's
        bandwidth; ``None`` before. [B/s]
    blackwell_max_ctas : int or None
        Blackwell's default maximum CTAs (channels a kernel runs) per GPU: 32 in v2.25-v2.27, 16
        from v2.28 (release notes of v2.28.3-1: "SM overhead decreased by 50%"); ``None`` for a
        release without Blackwell support.
    behaviour : models.engine.nccl.releases.ReleaseBehaviour
        The release's behaviours, its row of :data:`models.engine.nccl.releases.BEHAVIOURS`
        (ring construction, tree rule, selection, latency and cap formulas, LL128, NVB, PXN,
        MNNVL and NVLS rules).
    """

    version: str
    tag: str
    path_types: tuple
    max_channels: int | None
    nccl_steps: int
    base_latency: tuple
    hw_latency: tuple
    ll_max_bws: tuple
    per_ch_max_ring_ll128_bws: tuple
    per_ch_max_tree_ll128_bws: tuple
    per_ch_max_tree_bws: tuple
    ring_ll_factor: float
    ring_ll_factor_single_node_copy: float
    ring_ll128_factor: float
    ring_ll128_factor_ppn1: float
    tree_factor: float
    tree_ll_divisor: float
    tree_ll128_factor_single_node: float
    tree_ll128_factor_multi_node: float
    tree_pattern_factor: float | None
    tree_alg_ratio: float
    tree_correction_factor: tuple | None
    ring_plateau_factor: tuple | None
    ring_plateau_min_bytes: int
    net_overhead: tuple
    net_overhead_simple_factor: float
    ring_ll_multi_node_intra_factor: float
    allreduce_inter_steps_offset: int
    ll128_max_type_intra: str
    ll128_max_type_inter: str
    ll128_max_type_inter_sm90: str | None
    ll128_compute_capabilities: tuple | None
    ll128_min_compute_capability: int
    speed_intra: tuple
    speed_inter: tuple
    speed_sm90_intra: tuple | None
    speed_sm90_inter: tuple | None
    speed_sm100_intra: tuple | None
    speed_sm100_inter: tuple | None
    dup_channels: DupRule | None
    nvlink_bandwidths: tuple
    nvlink_bandwidth_default: float
    loc_bandwidth: float
    pci_bandwidth: float
    bdw_qpi_bandwidth: float
    skl_qpi_bandwidth: float
    sources: tuple
    notes: tuple
    pci_bandwidths: tuple = ()
    # Inter-CPU figures of later CPUs (ncclTopoGetInterCpuBw, NVIDIA/nccl v2.27.7-1
    # src/graph/topo.h): SRP_QPI_BW (v2.26+), ERP_QPI_BW (v2.26+), AMD_BW (v2.19+), ARM_BW. [B/s]
    srp_qpi_bandwidth: float = 22e9
    erp_qpi_bandwidth: float = 40e9
    amd_bandwidth: float = 16e9
    arm_bandwidth: float = 6e9
    first: tuple = (2, 27, 0)
    last: tuple = (2, 27, ANY_PATCH)
    ll128_per_collective: tuple | None = None
    tree_total_caps: tuple | None = None
    sm80_bus_cap: float | None = None
    legacy: LegacyRings | None = None
    nvls: NvlsRules | None = None
    pat: PatRules | None = None
    per_ch_max_nvls_tree_bws: tuple | None = None
    blackwell_max_ctas: int | None = None
    behaviour: ReleaseBehaviour | None = None

    # ------------------------------------------------------------------ lookups
    @property
    def missing(self) -> tuple:
        """Names of the constants this profile lacks (``None`` fields), in field order."""
        return tuple(name for name in _OPTIONAL if getattr(self, name) is None)

    def require(self, name: str) -> Any:
        """The value of constant ``name``.

        Raises
        ------
        MissingConstantError
            If this profile lacks it.
        """
        value = getattr(self, name)
        if value is None:
            raise MissingConstantError(
                f"NCCL profile {self.version} lacks {name!r}: its value in NVIDIA/nccl {self.tag} "
                f"({_CONSTANT_FILES.get(name, 'src/graph/tuning.cc')}) is not modelled; expected a "
                f"profile that has it, one of "
                f"{[v for v, p in PROFILES.items() if getattr(p, name) is not None]}")
        return value

    def path_rank(self, path_type: str) -> int:
        """Position of a path type in this version's order (lower is closer).

        Raises
        ------
        DgxTopoError
            For a name this version does not know.
        """
        try:
            return self.path_types.index(path_type)
        except ValueError:
            raise DgxTopoError(f"unknown path type {path_type!r} for NCCL {self.version}: expected "
                               f"one of {list(self.path_types)}") from None

    def compute_capability_index(self, compute_capability: int) -> int:
        """Row of the bandwidth-cap tables for a minimum compute capability.

        ``>= 100`` -> 3 (Blackwell), ``>= 90`` -> 2 (Hopper), ``>= 80`` -> 1 (Ampere), else 0
        (Volta) (``compCapIndex``, NVIDIA/nccl v2.27.7-1 src/graph/tuning.cc).

        Raises
        ------
        MissingConstantError
            If this profile has no row for it (v2.12 has Volta and Ampere rows only).
        """
        index = 3 if compute_capability >= 100 else 2 if compute_capability >= 90 else \
            1 if compute_capability >= 80 else 0
        if index >= len(self.ll_max_bws):
            raise MissingConstantError(
                f"NCCL profile {self.version} has bandwidth-cap rows for compute capability < 90 "
                f"only (its llMaxBws rows, NVIDIA/nccl {self.tag} src/graph/tuning.cc); received compute "
                f"capability {compute_capability}; "
                f"expected a profile such as {DEFAULT_VERSION}"
                + (" (Blackwell from 2.25)" if index == 3 else ""))
        return index

    def base_lat(self, algorithm: str, protocol: str) -> float:
        """``baseLat[algorithm][protocol]``. [s]

        NVLS and NVLSTree run Simple only (0 for LL/LL128); PAT's base is its
        :attr:`PatRules.base_latency` for Simple.

        Raises
        ------
        MissingConstantError
            For NVLS/NVLSTree/PAT in a release without them.
        """
        if algorithm in TABLE_ALGORITHMS:
            return self.base_latency[TABLE_ALGORITHMS.index(algorithm)][PROTOCOLS.index(protocol)]
        if algorithm == "pat":
            return self.require("pat").base_latency if protocol == "Simple" else 0.0
        rules = self.require("nvls")
        return rules.base_latency[NVLS_ALGORITHMS.index(algorithm)] if protocol == "Simple" \
            else 0.0

    def hw_lat(self, hardware: str, algorithm: str, protocol: str) -> float:
        """``hwLat[hardware][algorithm][protocol]``. [s]

        PAT's per-step latency is the Tree column's (its model reads ``hwLat[NET][TREE]``).
        """
        if algorithm == "pat":
            algorithm = "tree"
        if algorithm in TABLE_ALGORITHMS:
            return self.hw_latency[HARDWARE.index(hardware)][TABLE_ALGORITHMS.index(algorithm)][
                PROTOCOLS.index(protocol)]
        rules = self.require("nvls")
        return rules.hw_latency[HARDWARE.index(hardware)][NVLS_ALGORITHMS.index(algorithm)] \
            if protocol == "Simple" else 0.0

    def net_overhead_of(self, cpu_vendor: str, protocol: str) -> float:
        """``getNetOverhead() x (Simple ? 3 : 1)`` (src/graph/tuning.cc, v2.18+): what NCCL's tuner
        charges a network operation for its proxy thread, by the host's CPU vendor (``"intel"``,
        ``"amd"``, anything else the third column); 0 in releases without it. [s]

        >>> from models.engine.nccl.profiles import nccl_profile
        >>> round(nccl_profile("2.27.7").net_overhead_of("amd", "Simple") * 1e6, 3)
        6.0
        """
        vendor = {"intel": 0, "amd": 1}.get(cpu_vendor, 2)
        return self.net_overhead[vendor] * (self.net_overhead_simple_factor if protocol == "Simple" else 1)

    def ll_max_bw(self, row: int, nnodes: int) -> float:
        """``llMaxBws[row][index2]``, index2 = nnodes - 1 capped at 2. [B/s]"""
        return self.ll_max_bws[row][min(nnodes, 3) - 1]

    def per_ch_max_ring_ll128_bw(self, row: int, nnodes: int) -> float:
        """``perChMaxRingLL128Bws[row][index2]``. [B/s]"""
        return self.per_ch_max_ring_ll128_bws[row][min(nnodes, 3) - 1]

    def per_ch_max_tree_ll128_bw(self, row: int, nnodes: int) -> float:
        """``perChMaxTreeLL128Bws[row][index2]``. [B/s]"""
        return self.per_ch_max_tree_ll128_bws[row][min(nnodes, 3) - 1]

    def per_ch_max_tree_bw(self, row: int, nnodes: int) -> float:
        """``perChMaxTreeBws[row][index2]``. [B/s]"""
        return self.per_ch_max_tree_bws[row][min(nnodes, 3) - 1]

    def per_ch_max_nvls_tree_bw(self, row: int, nnodes: int) -> float | None:
        """``perChMaxNVLSTreeBws[row][index2]`` (v2.28+), or None before. [B/s]"""
        if self.per_ch_max_nvls_tree_bws is None:
            return None
        return self.per_ch_max_nvls_tree_bws[row][min(nnodes, 3) - 1]

    def max_ctas(self, compute_capability: int) -> int | None:
        """The most channels (CTAs) a kernel runs per GPU by default, or None for no limit below
        ``MAXCHANNELS``: :attr:`blackwell_max_ctas` on Blackwell (compute capability >= 100).

        >>> nccl_profile("2.27.7").max_ctas(100), nccl_profile("2.28.3").max_ctas(100)
        (32, 16)
        """
        return self.blackwell_max_ctas if compute_capability >= 100 else None

    def speed_array(self, compute_capability: int, *, inter: bool) -> tuple:
        """Per-channel speeds the search tries, high to low, for a minimum compute capability.

        ``inter`` selects the arrays used when the system has NET nodes (search.cc;
        NVIDIA/nccl v2.27.7-1 src/graph/search.cc: ccMin >= 100 -> sm100, >= 90 -> sm90, otherwise generic; a
        version without the sm90/sm100 arrays uses the generic ones). [B/s]
        """
        if compute_capability >= 100 and self.speed_sm100_intra is not None:
            return self.speed_sm100_inter if inter else self.speed_sm100_intra
        if compute_capability >= 90 and self.speed_sm90_intra is not None:
            return self.speed_sm90_inter if inter else self.speed_sm90_intra
        return self.speed_inter if inter else self.speed_intra

    def nvlink_bandwidth(self, compute_capability: int) -> float:
        """NCCL's bandwidth of one NVLink per direction for a GPU (``ncclTopoNVLinkBw``). [B/s]

        Examples
        --------
        >>> from models.engine.nccl import nccl_profile
        >>> [nccl_profile(v).nvlink_bandwidth(70) / 1e9 for v in ("2.27.7", "2.12.12")]
        [20.0, 22.0]
        """
        for threshold, bandwidth in self.nvlink_bandwidths:
            if compute_capability >= threshold:
                return bandwidth
        return self.nvlink_bandwidth_default

    def link_bandwidth(self, link: str) -> float:
        """NCCL's bandwidth of one PCIe link or NIC port of a technology, per direction. [B/s]

        PCIe: ``width x speed / 80`` (``ncclTopoAddPci``), from :attr:`pci_bandwidths`. A NIC
        port: ``speed / 8000`` GB/s for a speed in Mb/s (``ncclTopoAddNet``), which is the
        port's nominal bit rate / 8, the catalogue's line rate of the technology.

        Parameters
        ----------
        link : str
            A key of ``topo.specs.LINKS`` of kind ``pcie`` or ``network``.

        Raises
        ------
        MissingConstantError
            For a technology this profile has no figure for.

        Examples
        --------
        >>> from models.engine.nccl import nccl_profile
        >>> p = nccl_profile()
        >>> p.link_bandwidth("pcie3_x16") / 1e9, p.link_bandwidth("ib_edr") / 1e9
        (12.0, 12.5)
        """
        for name, bandwidth in self.pci_bandwidths:
            if name == link:
                return bandwidth
        spec = LINKS.get(link)
        if spec is not None and (spec.kind == "network" or link == "nvlink_c2c"):
            # NET: speed / 8000; C2C (v2.26+): NVML's per-link bandwidth x count / 1000, taken
            # as the line rate [U].
            return spec.bandwidth
        raise MissingConstantError(f"NCCL profile {self.version} has no bandwidth for link technology "
                                   f"{link!r}: expected one of {[n for n, _ in self.pci_bandwidths]} "
                                   f"or a network link")

    def inter_cpu_bandwidth(self, link: str) -> float:
        """NCCL's bandwidth of a whole socket-to-socket connection (``ncclTopoGetInterCpuBw``). [B/s]

        Raises
        ------
        MissingConstantError
            For an inter-socket technology this profile has no figure for.
        """
        figures = {"qpi_bdw": self.bdw_qpi_bandwidth, "upi_skl": self.skl_qpi_bandwidth,
                   "upi_spr": self.srp_qpi_bandwidth, "upi_emr": self.erp_qpi_bandwidth,
                   "xgmi": self.amd_bandwidth, "infinity_fabric": self.amd_bandwidth,
                   "grace_grace": self.arm_bandwidth}
        if link not in figures:
            raise MissingConstantError(f"NCCL profile {self.version} has no inter-socket bandwidth for "
                                       f"{link!r}: expected one of {list(figures)}")
        return figures[link]


# Constants a profile may lack (``None`` = no reading of that release's tag). Other
# ``None`` fields (sm90/sm100 speed arrays, ll128_max_type_inter_sm90) mean "absent in that
# release" and have a defined fallback.
#: A DupChannels compute-capability clause that never applies (releases before the sm90 clause).
_NO_CC_CLAUSE = 10**6

_OPTIONAL = ("max_channels", "dup_channels", "tree_pattern_factor", "tree_correction_factor",
             "ring_plateau_factor")
# The NVIDIA/nccl file that holds each optional constant (named in MissingConstantError).
_CONSTANT_FILES = MappingProxyType({"max_channels": "src/include/device.h MAXCHANNELS",
                   "dup_channels": "src/graph/search.cc ncclTopoDupChannels",
                   "tree_pattern_factor": "src/graph/tuning.cc",
                   "tree_correction_factor": "src/graph/tuning.cc treeCorrectionFactor",
                   "ring_plateau_factor": "src/graph/tuning.cc ncclTopoGetAlgoTime",
                   "nvls": "src/transport/nvls.cc, src/graph/tuning.cc NVLS",
                   "pat": "src/graph/tuning.cc ncclPatEnable"})

# ============================================================================================
# Tables in NCCL's units (GB/s, µs), as NCCL writes them. Converted to SI in _build() only.
# ============================================================================================

# --- v2.27.7-1 (reference) ------------------------------------------------------------------
# src/graph/tuning.cc v2.27.7 baseLat[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], Tree and Ring
# rows (the same from v2.23.4-1 to v2.27.7-1). [µs]
_V2_27_BASE_LAT = (
    (6.8, 14.0, 8.4),   # Tree: LL, LL128, Simple
    (6.6, 14.0, 8.4),   # Ring
)
# src/graph/tuning.cc v2.27.7 hwLat[NCCL_NUM_HW][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS],
# Tree and Ring columns. [µs]
_V2_27_HW_LAT = (
    ((0.6, 1.25, 4.0), (0.6, 1.9, 3.4)),    # NVLINK: Tree, Ring
    ((1.0, 1.9, 4.0), (1.0, 2.5, 5.7)),     # PCI
    ((5.0, 8.5, 14.0), (2.7, 4.0, 14.0)),   # NET
)
# src/graph/tuning.cc v2.27.7 llMaxBws / perChMax*Bws [compCapIndex][index2] (Hopper
# llMaxBws row from v2.21.5-1, Blackwell rows v2.25-v2.27). [GB/s]
_V2_27_LL_MAX_BWS = (
    (39.0, 39.0, 20.4),    # Volta-N1 / Intel-N2 / Intel-N4
    (87.7, 22.5, 19.0),    # Ampere-N1 / AMD-N2 / AMD-N4
    (141.0, 45.0, 35.0),   # Hopper-N1/2/4
    (282.0, 90.0, 70.0),   # Blackwell-N1/2/4
)
_V2_27_PER_CH_MAX_RING_LL128_BWS = (
    (20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7), (73.4, 73.4, 73.4))
_V2_27_PER_CH_MAX_TREE_LL128_BWS = (
    (20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0), (73.4, 73.4, 58.0))
_V2_27_PER_CH_MAX_TREE_BWS = (
    (26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (77.4, 82.8, 72.0))
# src/graph/tuning.cc v2.27.7 treeCorrectionFactor[NCCL_NUM_PROTOCOLS][23], index
# log2i(nBytes >> 6) (src/graph/tuning.cc v2.27.7-1; later releases add a 24th entry).
_V2_27_TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0,
     1.0, 1.0),                                                                     # LL
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9,
     1.0, 1.0),                                                                     # LL128
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9,
     .9),                                                                           # Simple
)
# src/graph/search.cc v2.27.7 speedArrayIntra/Inter, sm90SpeedArrayIntra (v2.21+)/Inter
# (v2.19+), sm100SpeedArrayIntra/Inter (v2.27-v2.28) (NVIDIA/nccl v2.27.7-1). [GB/s]
_V2_18_SPEED_INTRA = (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0)
_V2_18_SPEED_INTER = (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0,
                      4.0, 3.0, 2.4, 1.2, 0.24, 0.12)
_V2_21_SM90_SPEED_INTRA = (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0)
_V2_19_SM90_SPEED_INTER = (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                           3.0, 2.4, 1.2, 0.24, 0.12)
_V2_27_SM100_SPEED_INTRA = (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0)
_V2_27_SM100_SPEED_INTER = (96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0,
                            12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12)
# src/graph/topo.h v2.27.7 ncclTopoNVLinkBw: SM100 40.1, SM90 20.6, SM86 12.0, SM80 20.0,
# SM70 20.0, SM60 18.0, otherwise SM80 (NVIDIA/nccl v2.27.7-1). Thresholds are tested in order;
# (87, SM80) makes cc 87-89 take the SM80 value and cc 86 alone take SM86. [GB/s]
_V2_27_NVLINK_BW = ((100, 40.1), (90, 20.6), (87, 20.0), (86, 12.0), (80, 20.0), (70, 20.0),
                    (60, 18.0))

# src/graph/topo.cc ncclTopoAddPci: bw = width * speed / 80 with kvDictPciGen speeds 60, 120,
# 240, 480 for 8, 16, 32, 64 GT/s; x16 links give 12, 24, 48, 96 GB/s (v2.27.7-1; [U] the
# first release that knows "64.0 GT/s PCIe": taken as known wherever this table is used). [GB/s]
_V2_27_PCI_BW = (("pcie3_x16", 12.0), ("pcie4_x16", 24.0), ("pcie5_x16", 48.0), ("pcie6_x16", 96.0))

# --- v2.12.12-1 -----------------------------------------------------------------------------
# baseLat, NVIDIA/nccl v2.12.12-1 src/graph/tuning.cc (the same from v2.7 to v2.17). [µs]
_V2_12_BASE_LAT = (
    (4.4, 4.4, 0.0),    # Tree
    (3.6, 10.0, 8.4),   # Ring
)
# hwLat, NVIDIA/nccl v2.12.12-1 src/graph/tuning.cc (PCI row as v2.7.8-1, NVLINK and NET rows
# as v2.8-v2.17), with the v2.12.x-v2.13.x NET Ring Simple = 28. [µs]
_V2_12_HW_LAT = (
    ((0.52, 1.25, 28.0), (0.47, 1.9, 3.4)),   # NVLINK: Tree, Ring
    ((1.0, 1.9, 28.0), (1.0, 2.5, 5.7)),      # PCI
    ((5.0, 8.5, 28.0), (2.7, 4.0, 28.0)),     # NET
)
# NVIDIA/nccl v2.12.12-1 src/graph/tuning.cc: one ll128MaxBwPerCh = 20.0, and llMaxBws /
# perChMaxTreeBws with Volta/Ampere rows only; [U] their values read as v2.27.7-1's.
_V2_12_LL_MAX_BWS = _V2_27_LL_MAX_BWS[:2]
_V2_12_LL128_MAX_BW_PER_CH = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0))
_V2_12_PER_CH_MAX_TREE_BWS = _V2_27_PER_CH_MAX_TREE_BWS[:2]
# src/graph/search.cc speed arrays, NVIDIA/nccl v2.12.12-1 (the same to v2.17.1-1). [GB/s]
_V2_12_SPEED_INTRA = (44.0, 30.0, 22.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0)
_V2_12_SPEED_INTER = (48.0, 30.0, 24.0, 22.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0,
                      3.0, 2.4, 1.2, 0.24, 0.12)
# src/graph/topo.h NVIDIA/nccl v2.12.12-1 (v2.10-v2.17): SM60 18, SM70 22, SM80 22, SM86 12, SM90 = SM80. [GB/s]
_V2_12_NVLINK_BW = ((87, 22.0), (86, 12.0), (80, 22.0), (70, 22.0), (60, 18.0))

_SOURCES_V2_27 = (
    "baseLat, hwLat, llMaxBws, perChMax*Bws, treeCorrectionFactor, protocol factors, ring "
    "plateau, LL128 rules: NVIDIA/nccl v2.27.7-1 src/graph/tuning.cc, src/enqueue.cc",
    "getNetOverhead: NVIDIA/nccl v2.27.7-1 src/graph/tuning.cc (v2.18+)",
    "speed arrays, ncclTopoDupChannels: NVIDIA/nccl v2.27.7-1 src/graph/search.cc",
    "MAXCHANNELS 64, NCCL_STEPS 8: NVIDIA/nccl v2.27.7-1 src/include/device.h",
    "NVLink/PCI/QPI/LOC bandwidths: NVIDIA/nccl v2.27.7-1 src/graph/topo.h",
)
_SOURCES_V2_12 = (
    "baseLat, hwLat, Ring LL/LL128 factors, latency rules: NVIDIA/nccl v2.12.12-1 "
    "src/graph/tuning.cc",
    "speed arrays: NVIDIA/nccl v2.12.12-1 src/graph/search.cc",
    "NVLink/QPI bandwidths: NVIDIA/nccl v2.12.12-1 src/graph/topo.h",
)
_NOTES_V2_12 = (
    "llMaxBws and perChMaxTreeBws Volta/Ampere rows, treeCorrectionFactor, the ring plateau "
    "rule, the Tree ratio and LL/LL128 factors, NCCL_STEPS and the Broadcast/Reduce latency "
    "rule are "
    "[U] not read at tag v2.12.12-1: taken as unchanged from v2.27.7-1.",
    "No bandwidth-cap rows for compute capability >= 90: v2.12 had Volta and Ampere rows only.",
    "No net overhead (getNetOverhead is v2.18+): stored as zero, which is the same as absent.",
    "No sm90/sm100 speed arrays (they appear in v2.18 / v2.25): the generic arrays apply.",
    "[U] MAXCHANNELS 32: NVIDIA/nccl gives 16 in v2.4.8-1 and 32 in v2.18.6-1 "
    "(src/include/devcomm.h); 32 is taken for v2.5-v2.17. It only bounds the ring search at "
    "MAXCHANNELS/2 = 16 channels, which no DGX-1/DGX-2 communicator reaches.",
    "[U] DupChannels: the v2.18 rule without its sm90 clause (bwIntra >= 25 GB/s -> x2 "
    "channels at half the bandwidth); the clause targets Hopper, which v2.12 predates.",
    "Missing: the Tree-pattern 0.85 factor (given for v2.18+ only); it applies only to a tree "
    "graph of pattern TREE, which the single-node search never produces.",
    "Within 2.10-2.17 only v2.12-v2.13 use hwLat[NET][Ring][Simple] 28; 2.10-2.11 and "
    "2.14-2.17 have their own profiles for it.",
)


def _build(**fields) -> NcclProfile:
    """Create a profile from tables in NCCL units: the one place they become SI."""
    bandwidth_tables = ("ll_max_bws", "per_ch_max_ring_ll128_bws", "per_ch_max_tree_ll128_bws",
                        "per_ch_max_tree_bws", "speed_intra", "speed_inter", "speed_sm90_intra",
                        "speed_sm90_inter", "speed_sm100_intra", "speed_sm100_inter",
                        "nvlink_bandwidth_default", "loc_bandwidth", "pci_bandwidth",
                        "bdw_qpi_bandwidth", "skl_qpi_bandwidth")
    latency_tables = ("base_latency", "hw_latency", "net_overhead")
    fields["pci_bandwidths"] = tuple((link, _GBps(bw)) for link, bw in fields["pci_bandwidths"])
    for name in bandwidth_tables:
        if fields[name] is not None:
            fields[name] = _table(fields[name], _GBps)
    for name in latency_tables:
        fields[name] = _table(fields[name], _us)
    fields["nvlink_bandwidths"] = tuple((cc, _GBps(bw)) for cc, bw in fields["nvlink_bandwidths"])
    rule = fields["dup_channels"]
    if rule is not None:
        fields["dup_channels"] = DupRule(_GBps(rule[0]), rule[1], _GBps(rule[2]), rule[3])
    return NcclProfile(**fields)


def _derive(base: NcclProfile, **changes) -> NcclProfile:
    """A profile that differs from ``base`` in ``changes``, given in NCCL units (GB/s, µs).

    Tables are converted to SI here exactly as :func:`_build` does; every other field is taken
    as given.
    """
    bandwidth = {"ll_max_bws", "per_ch_max_ring_ll128_bws", "per_ch_max_tree_ll128_bws",
                 "per_ch_max_tree_bws", "speed_intra", "speed_inter", "speed_sm90_intra",
                 "speed_sm90_inter", "speed_sm100_intra", "speed_sm100_inter",
                 "nvlink_bandwidth_default", "bdw_qpi_bandwidth", "skl_qpi_bandwidth",
                 "ll128_per_collective", "tree_total_caps", "sm80_bus_cap", "per_ch_max_nvls_tree_bws"}
    latency = {"base_latency", "hw_latency", "net_overhead"}
    for name, value in list(changes.items()):
        if value is None:
            continue
        if name in bandwidth:
            changes[name] = _table(value, _GBps)
        elif name in latency:
            changes[name] = _table(value, _us)
        elif name == "nvlink_bandwidths":
            changes[name] = tuple((cc, _GBps(bw)) for cc, bw in value)
        elif name == "dup_channels":
            changes[name] = DupRule(_GBps(value[0]), value[1], _GBps(value[2]), value[3])
    return replace(base, **changes)


# --- NVLS / NVLSTree / PAT rules per release --------------------------------------------------
# hwLat NVLS/NVLSTree Simple, NVIDIA/nccl v2.27.7-1 src/graph/tuning.cc: NVLINK 25/25, PCI 0/0,
# NET 18/14. [U] releases v2.17-v2.26 are taken to have the same values (their rows were not
# read). [µs]
_NVLS_HW_LAT = ((_us(25.0), _us(25.0)), (0.0, 0.0), (_us(18.0), _us(14.0)))
# v2.27.7-1: NVLS off with <= 2 GPUs (src/transport/nvls.cc), arity 32 (src/include/device.h),
# AllReduce/AllGather/ReduceScatter (src/graph/tuning.cc), baseLat 0, bus->alg 5/6, MNNVL the
# GPU-count rule (v2.25+), nvlsChannels sm90 16, sm100 24 single node / 32 multi-node.
_NVLS_V2_27 = NvlsRules(min_gpus=3, max_arity=32,
                        collectives=("all_reduce", "all_gather", "reduce_scatter"),
                        base_latency=(0.0, 0.0), hw_latency=_NVLS_HW_LAT, nchannels=(16, 24, 32))
# v2.25.x-v2.26.x: the same, nvlsChannels sm100 32 (NVLS_NCHANNELS_SM100).
# v2.21.x-v2.24.x: MNNVL needs a clique of more than 2 GPUs; nvlsChannels 16.
_NVLS_V2_21 = replace(_NVLS_V2_27, nchannels=(16, 16, 16))
# v2.19.x: NCCL_MAX_NVLS_ARITY 8 (up to v2.20) and no MNNVL (it arrives in v2.20.3).
_NVLS_V2_19 = replace(_NVLS_V2_21, max_arity=8)
# v2.18.x: NVLSTree appears; baseLat 23 for both; AllReduce only; bus->alg NVLS 5/6, NVLSTree
# 0.70 nNodes / (2 (nNodes - 1)); the v2.18 latency formulas (src/graph/tuning.cc v2.18.6-1).
_NVLS_V2_18 = replace(_NVLS_V2_19, collectives=("all_reduce",), base_latency=(_us(23.0), _us(23.0)))
# v2.17.x: NVLS only (no NVLSTree), off when localRanks <= 1 or nNodes > 1, baseLat 40
# (src/transport/nvls.cc, src/graph/tuning.cc v2.17.1-1). [U] ratio 5/6 and the v2.18 latency
# formula.
_NVLS_V2_17 = replace(_NVLS_V2_18, min_gpus=2, base_latency=(_us(40.0), 0.0))
# PAT: busBw x 0.85 (v2.23.4-1), x 0.75 (v2.24.3-1+); 8 + log2i(nNodes) interLat / 3.5 +
# nRanks x 2.8 µs; v2.26+ off below compute capability 60 (src/graph/tuning.cc).
_PAT_V2_23 = PatRules(factor=0.85, base_latency=_us(8.0), per_rank_latency=_us(2.8))
_PAT_V2_24 = replace(_PAT_V2_23, factor=0.75)
_PAT_V2_26 = replace(_PAT_V2_24, min_compute_capability=60)

_V2_27_7 = _build(
    version="2.27.7", tag="v2.27.7-1",
    path_types=PATH_TYPES,
    max_channels=64,                      # MAXCHANNELS, src/include/device.h v2.27.7-1
    nccl_steps=8,                         # NCCL_STEPS, src/include/device.h
    base_latency=_V2_27_BASE_LAT,
    hw_latency=_V2_27_HW_LAT,
    ll_max_bws=_V2_27_LL_MAX_BWS,
    per_ch_max_ring_ll128_bws=_V2_27_PER_CH_MAX_RING_LL128_BWS,
    per_ch_max_tree_ll128_bws=_V2_27_PER_CH_MAX_TREE_LL128_BWS,
    per_ch_max_tree_bws=_V2_27_PER_CH_MAX_TREE_BWS,
    ring_ll_factor=0.5,                   # Ring LL x0.5, v2.21+ (src/graph/tuning.cc)
    ring_ll_factor_single_node_copy=0.5,
    ring_ll128_factor=0.92,               # Ring LL128 x0.92 (tuning.cc); ppn<2 rule removed by v2.23
    ring_ll128_factor_ppn1=0.92,
    tree_factor=0.92,                     # Tree AllReduce x0.92 (tuning.cc)
    tree_ll_divisor=3.8,                  # Tree LL /3.8 (tuning.cc)
    tree_ll128_factor_single_node=7 / 9,  # Tree LL128 (tuning.cc)
    tree_ll128_factor_multi_node=120 / 128,
    tree_pattern_factor=0.85,             # maxTreePattern == TREE (tuning.cc)
    tree_alg_ratio=0.5,                   # bus -> alg ratio "Tree, CollNet*, others" (tuning.cc)
    tree_correction_factor=_V2_27_TREE_CORRECTION,
    ring_plateau_factor=(1.9, 1.4),       # minCompCap < 80 / >= 80 (enqueue.cc)
    ring_plateau_min_bytes=64,            # nBytes/(comm->nChannels*nRanks) >= 64 (enqueue.cc)
    net_overhead=(1.0, 2.0, 1.0),         # getNetOverhead: Intel, AMD, other [µs] (tuning.cc)
    net_overhead_simple_factor=3,         # getNetOverhead() * (Simple ? 3 : 1) (tuning.cc)
    ring_ll_multi_node_intra_factor=1.0,  # the x1.8 is v2.7-v2.17 only (tuning.cc)
    allreduce_inter_steps_offset=1,       # 2*(nNodes-1) (tuning.cc)
    ll128_max_type_intra="NVB",           # tuning.cc
    ll128_max_type_inter="PXB",
    ll128_max_type_inter_sm90="PXN",      # NCCL_LL128_C2C default 1 and sm >= 90
    ll128_compute_capabilities=None,      # minCompCap == maxCompCap, any value >= 70
    ll128_min_compute_capability=70,
    speed_intra=_V2_18_SPEED_INTRA,
    speed_inter=_V2_18_SPEED_INTER,
    speed_sm90_intra=_V2_21_SM90_SPEED_INTRA,
    speed_sm90_inter=_V2_19_SM90_SPEED_INTER,
    speed_sm100_intra=_V2_27_SM100_SPEED_INTRA,
    speed_sm100_inter=_V2_27_SM100_SPEED_INTER,
    dup_channels=(25.0, 80, 50.0, 4),     # ncclTopoDupChannels (search.cc) [GB/s, cc, GB/s, channels]
    nvlink_bandwidths=_V2_27_NVLINK_BW,
    nvlink_bandwidth_default=20.0,        # "otherwise SM80" (topo.h)
    loc_bandwidth=5000.0, pci_bandwidth=12.0,  # LOC_BW, PCI_BW (topo.h)
    bdw_qpi_bandwidth=6.0, skl_qpi_bandwidth=10.0,
    pci_bandwidths=_V2_27_PCI_BW,
    sources=_SOURCES_V2_27,
    notes=("Tree, Ring, NVLS, NVLSTree and PAT. CollNet is not modelled: NCCL enables it only "
           "with a CollNet (SHARP) network plugin, which none of these fabrics has.",
           "[U] the NVLS search with NET nodes (NVLSTree, one head per NIC) is this library's "
           "reading of src/graph/search.cc, not checked against NCCL_DEBUG_SUBSYS=GRAPH logs."),
    first=(2, 27, 0), last=(2, 27, ANY_PATCH),
    nvls=_NVLS_V2_27, pat=_PAT_V2_26,
    blackwell_max_ctas=32,                # cut to 16 in v2.28 (release commit f1308997, v2.28.3-1)
)

_V2_12_12 = _build(
    version="2.12.12", tag="v2.12.12-1",
    path_types=("LOC", "NVL", "NVB", "PIX", "PXB", "PXN", "PHB", "SYS", "DIS"),  # topo.h v2.12-v2.17
    max_channels=32,                      # [U] see _NOTES_V2_12
    nccl_steps=8,
    base_latency=_V2_12_BASE_LAT,
    hw_latency=_V2_12_HW_LAT,
    ll_max_bws=_V2_12_LL_MAX_BWS,
    per_ch_max_ring_ll128_bws=_V2_12_LL128_MAX_BW_PER_CH,
    per_ch_max_tree_ll128_bws=_V2_12_LL128_MAX_BW_PER_CH,
    per_ch_max_tree_bws=_V2_12_PER_CH_MAX_TREE_BWS,
    ring_ll_factor=1 / 4,                 # v2.8-v2.20: nNodes>1 || AllReduce || Reduce ? 1/4 : 1/3
    ring_ll_factor_single_node_copy=1 / 3,
    ring_ll128_factor=0.92,
    ring_ll128_factor_ppn1=0.7,           # v2.7-v2.21: 0.7 when ppn < 2
    tree_factor=0.92,                     # x0.9 was v2.7 only
    tree_ll_divisor=3.8,
    tree_ll128_factor_single_node=7 / 9,
    tree_ll128_factor_multi_node=120 / 128,
    tree_pattern_factor=None,
    tree_alg_ratio=0.5,
    tree_correction_factor=_V2_27_TREE_CORRECTION,
    ring_plateau_factor=(1.9, 1.4),
    ring_plateau_min_bytes=64,
    net_overhead=(0.0, 0.0, 0.0),
    net_overhead_simple_factor=3,
    ring_ll_multi_node_intra_factor=1.8,  # v2.7-v2.17 (tuning.cc)
    allreduce_inter_steps_offset=0,       # v2.12-v2.22: nNodes>1 ? 2*nNodes : 0 (tuning.cc)
    ll128_max_type_intra="NVL",           # v2.12 (tuning.cc)
    ll128_max_type_inter="PXB",
    ll128_max_type_inter_sm90=None,
    ll128_compute_capabilities=(70, 80),  # "all GPUs are sm70 or all sm80"
    ll128_min_compute_capability=70,
    speed_intra=_V2_12_SPEED_INTRA,
    speed_inter=_V2_12_SPEED_INTER,
    speed_sm90_intra=None, speed_sm90_inter=None,
    speed_sm100_intra=None, speed_sm100_inter=None,
    dup_channels=(25.0, _NO_CC_CLAUSE, 50.0, 4),  # [U] see _NOTES_V2_12
    nvlink_bandwidths=_V2_12_NVLINK_BW,
    nvlink_bandwidth_default=22.0,        # SM80 value of v2.10-v2.17
    loc_bandwidth=5000.0, pci_bandwidth=12.0,
    bdw_qpi_bandwidth=6.0, skl_qpi_bandwidth=9.0,  # SKL_QPI_BW 9 in v2.7-v2.17 (topo.h)
    pci_bandwidths=_V2_27_PCI_BW,  # kvDictPciGen: 8 and 16 GT/s as in v2.27 [U] for 32 GT/s
    sources=_SOURCES_V2_12,
    notes=_NOTES_V2_12,
    first=(2, 12, 0), last=(2, 13, ANY_PATCH),
)


# --- v2.23.4-1: 2.23.x ------------------------------------------------------------------------
# Differences from v2.27.7, each from the per-tag tables NCCL's sources give: MAXCHANNELS 32 (64
# from v2.25; 32 is given for v2.18); no Blackwell rows (sm100 arrives in v2.25.1, profile
# 2.25.1); path types v2.18-v2.25 (src/graph/
# topo.h: no C2C, P2C). [U] hwLat/baseLat/LL128 rules read as the reference's (the tables tag
# v2.23-HEAD for baseLat and give no older hwLat row after v2.22).
_V2_23_4 = _derive(
    _V2_27_7, version="2.23.4", tag="v2.23.4-1", first=(2, 23, 0), last=(2, 26, ANY_PATCH),
    path_types=("LOC", "NVL", "NVB", "PIX", "PXB", "PXN", "PHB", "SYS", "NET", "DIS"),
    max_channels=32,
    ll_max_bws=_V2_27_LL_MAX_BWS[:3],
    per_ch_max_ring_ll128_bws=_V2_27_PER_CH_MAX_RING_LL128_BWS[:3],
    per_ch_max_tree_ll128_bws=_V2_27_PER_CH_MAX_TREE_LL128_BWS[:3],
    per_ch_max_tree_bws=_V2_27_PER_CH_MAX_TREE_BWS[:3],
    speed_sm100_intra=None, speed_sm100_inter=None,
    nvlink_bandwidths=((90, 20.6), (87, 20.0), (86, 12.0), (80, 20.0), (70, 20.0), (60, 18.0)),
    sources=("NVIDIA/nccl v2.23.4-1 src/graph/tuning.cc, search.cc, topo.h",),
    notes=("[U] MAXCHANNELS 32 (given for v2.18; 64 from v2.25).",
           "No Blackwell: sm100 arrives in v2.25.1 (profile 2.25.1).",
           "PAT busBw x0.85 (v2.23.4-1); x0.75 from v2.24.3 (profile 2.24.3)."),
    nvls=_NVLS_V2_21, pat=_PAT_V2_23, blackwell_max_ctas=None,
)
_V2_23_4 = replace(_V2_23_4, last=(2, 23, ANY_PATCH))

# --- v2.24.3-1: 2.24.x: as v2.23.4 with PAT x0.75 ---------------------------------------------
_V2_24_3 = _derive(
    _V2_23_4, version="2.24.3", tag="v2.24.3-1", first=(2, 24, 0), last=(2, 24, ANY_PATCH),
    pat=_PAT_V2_24,
    sources=("NVIDIA/nccl v2.24.3-1 src/graph/tuning.cc, search.cc, topo.h",),
    notes=("[U] MAXCHANNELS 32 (given for v2.18; 64 from v2.25).",
           "No Blackwell: sm100 arrives in v2.25.1 (release commit 80f6bda4), so a Blackwell GPU "
           "has no row in the bandwidth-cap tables.",
           "PAT busBw x0.75 (v2.24.3-1)."),
)

# --- v2.25.1-1: 2.25.x (Blackwell support) ----------------------------------------------------
# Release commit 80f6bda4 (v2.25.1-1): sm100; MAXCHANNELS 64 (src/include/device.h); tuning.cc
# BLACKWELL_COMPCAP_IDX 3 with rows exactly 2x Hopper (llMaxBws 282/90/70, perChMaxRingLL128Bws
# 73.4 x3, perChMaxTreeLL128Bws 73.4/73.4/58.0, perChMaxTreeBws 77.4/82.8/72.0: the v2.27 rows);
# baseLat and hwLat unchanged from v2.24; search.cc sm100SpeedArrayIntra 90 ... 19 and Inter = sm90
# Inter; topo.h SM100 NVLink 40.0 (40.1 from v2.27.5); NVLS_NCHANNELS_SM100 32 (src/transport/
# nvls.cc); NVLS on MNNVL by the GPU-count rule (v2.25+); path types as v2.18-v2.25 (topo.h).
_V2_25_SM100_SPEED_INTRA = (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0)
_V2_25_1 = _derive(
    _V2_24_3, version="2.25.1", tag="v2.25.1-1", first=(2, 25, 0), last=(2, 25, ANY_PATCH),
    max_channels=64,
    ll_max_bws=_V2_27_LL_MAX_BWS,
    per_ch_max_ring_ll128_bws=_V2_27_PER_CH_MAX_RING_LL128_BWS,
    per_ch_max_tree_ll128_bws=_V2_27_PER_CH_MAX_TREE_LL128_BWS,
    per_ch_max_tree_bws=_V2_27_PER_CH_MAX_TREE_BWS,
    speed_sm100_intra=_V2_25_SM100_SPEED_INTRA,
    speed_sm100_inter=_V2_19_SM90_SPEED_INTER,
    nvlink_bandwidths=((100, 40.0), (90, 20.6), (87, 20.0), (86, 12.0), (80, 20.0), (70, 20.0), (60, 18.0)),
    nvls=replace(_NVLS_V2_27, nchannels=(16, 32, 32)),
    blackwell_max_ctas=32,
    sources=("NVIDIA/nccl v2.25.1-1 (release commit 80f6bda4) src/graph/tuning.cc, search.cc, topo.h, "
             "src/include/device.h (MAXCHANNELS 64), src/transport/nvls.cc (NVLS_NCHANNELS_SM100 32)",),
    notes=("PAT busBw x0.75 (as v2.24.3).",
           "Blackwell (sm100) from this release: cap rows 2x Hopper's, sm100 speed arrays, 40.0 GB/s "
           "per NVLink, 32 NVLS execution channels."),
)

# --- v2.26.2-1: 2.26.x ------------------------------------------------------------------------
# Release commit f44ac759 (v2.26.2-1): PAT off below compute capability 60 (tuning.cc, the only
# constant-area change); PAT steps in parallel (collectives.h: NCCL_PAT_NWORKERS 512,
# NCCL_SHMEM_PAT_STEPS 32; the tuning.cc PAT latency unchanged); the Tree x0.85 tests
# maxTreePattern; path type C2C (topo.h v2.26); SRP/ERP QPI figures (_with_inter_cpu).
_V2_26_2 = _derive(
    _V2_25_1, version="2.26.2", tag="v2.26.2-1", first=(2, 26, 0), last=(2, 26, ANY_PATCH),
    path_types=("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "PHB", "SYS", "NET", "DIS"),
    pat=_PAT_V2_26,
    sources=("NVIDIA/nccl v2.26.2-1 (release commit f44ac759) src/graph/tuning.cc, search.cc, topo.h, "
             "src/include/collectives.h",),
    notes=("PAT: up to 16 steps in parallel (release notes); NCCL's tuning model times it as before "
           "(its nRanks x 2.8 us term was not changed), and so does this one.",
           "LL operations counted 4x in channel scheduling when mixed with Simple: not modelled (one "
           "collective at a time is timed)."),
)

# --- v2.28.3-1: 2.28.0-2.28.6 -----------------------------------------------------------------
# Release commit f1308997 (v2.28.3-1) and tuning.cc v2.28.3 (ncclTunerConstantsDefaults):
# Blackwell perChMaxTreeLL128Bws 55.6/31.67/20.0 and perChMaxTreeBws 70.0/42.8/24.0 (were 2x
# Hopper); new perChMaxNVLSTreeBws (Volta/Ampere rows copy perChMaxTreeBws; Hopper 0/57.7/45.5;
# Blackwell 0/96.0/43.1); nvlsEfficiency and the NVLS bandwidth formula; NVLS/NVLSTree need >= 2
# NVLS graph channels; PAT's own latency column (baseLat 8, hwLat Simple 4.0 NVLink, 4.0 PCI, 14
# NET: the values the Tree column gave it, so its time is unchanged); Blackwell's CTAs cut from 32
# to 16. Search arrays as v2.27-v2.28 (search.cc). GB/s.
_V2_28_PER_CH_MAX_NVLS_TREE_BWS = (_V2_27_PER_CH_MAX_TREE_BWS[0], _V2_27_PER_CH_MAX_TREE_BWS[1],
                                   (0.0, 57.7, 45.5), (0.0, 96.0, 43.1))
_V2_28_BLACKWELL_TREE_LL128 = _V2_27_PER_CH_MAX_TREE_LL128_BWS[:3] + ((55.6, 31.67, 20.0),)
_V2_28_BLACKWELL_TREE = _V2_27_PER_CH_MAX_TREE_BWS[:3] + ((70.0, 42.8, 24.0),)
_NVLS_V2_28 = replace(_NVLS_V2_27, efficiency=NVLS_EFFICIENCY_V2_28, min_tuning_channels=2)
_V2_28_NOTES = (
    "Blackwell runs at most 16 channels (CTAs) per kernel (32 before; NCCL_MIN_CTAS=32 "
    "NCCL_MAX_CTAS=32 restore them): this caps the channels a Blackwell kernel holds, not the "
    "tuning model's bandwidth, which reads the search's channels.",
    "Symmetric-memory kernels (v2.27) and copy-engine collectives (v2.28) need buffers the user "
    "registers as symmetric windows: not timed here (the estimates assume unregistered buffers, as "
    "nccl-tests runs by default).",
    "[U] NVLSTree's treeCorrectionFactor on sm100 x86 (given for HEAD) is not applied.",
)
_V2_28_3 = _derive(
    _V2_27_7, version="2.28.3", tag="v2.28.3-1", first=(2, 28, 0), last=(2, 28, 6),
    per_ch_max_tree_ll128_bws=_V2_28_BLACKWELL_TREE_LL128,
    per_ch_max_tree_bws=_V2_28_BLACKWELL_TREE,
    per_ch_max_nvls_tree_bws=_V2_28_PER_CH_MAX_NVLS_TREE_BWS,
    nvls=_NVLS_V2_28,
    blackwell_max_ctas=16,
    sources=("NVIDIA/nccl v2.28.3-1 (release commit f1308997) src/graph/tuning.cc "
             "(ncclTunerConstantsDefaults), src/graph/connect.cc, src/transport/nvls.cc",) + _SOURCES_V2_27[1:],
    notes=_V2_28_NOTES + (
        "[U] the reference's tuning table lists Blackwell v2.28 caps perChMaxRingLL128Bws 73.4/34.6/73.4 "
        "and perChMaxNVLSTreeBws N4 43.8 for an unnamed 2.28 tag; v2.28.3's 73.4 x3 and 43.1 "
        "(its release diff) are used.",),
)
# --- v2.28.9-1: 2.28.7-2.28.x: as v2.28.3, and NVLS on 2 GPUs (src/transport/nvls.cc: off when the
# GPU count is < 2 from v2.28.7).
_V2_28_9 = _derive(
    _V2_28_3, version="2.28.9", tag="v2.28.9-1", first=(2, 28, 7), last=(2, 28, ANY_PATCH),
    nvls=replace(_NVLS_V2_28, min_gpus=2),
    sources=("NVIDIA/nccl v2.28.9-1 src/transport/nvls.cc (2-GPU NVLS from v2.28.7); the rest as "
             "v2.28.3-1",) + _V2_28_3.sources,
    notes=_V2_28_3.notes + ("[U] tuning constants as v2.28.3's (no 2.28.3 -> 2.28.9 diff was read).",),
)

# --- v2.29.2-1: 2.29.x ------------------------------------------------------------------------
# Release commit ebd1e929 and tuning.cc v2.28.3 -> v2.29.2: hwLat[NET][NVLSTree] Simple 14 -> 20.9;
# Blackwell perChMaxRingLL128Bws 73.4 -> 34.5/34.6/34.5; perChMaxNVLSTreeBws Blackwell N4 43.1 ->
# 43.8; treeCorrectionFactor 24 size columns (the 24th as HEAD's: LL 1.0, LL128 1.0, Simple .9,
# [U]); search.cc v2.29 sm100 Intra gains 45, sm100 Inter 96, 80, 48, ... (the tail as v2.27's [U]).
_V2_29_TREE_CORRECTION = (_V2_27_TREE_CORRECTION[0] + (1.0,), _V2_27_TREE_CORRECTION[1] + (1.0,),
                          _V2_27_TREE_CORRECTION[2] + (.9,))
_V2_29_NVLS_HW_LAT = ((_us(25.0), _us(25.0)), (0.0, 0.0), (_us(18.0), _us(20.9)))
_V2_29_SM100_SPEED_INTRA = (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0)
_V2_29_2 = _derive(
    _V2_28_9, version="2.29.2", tag="v2.29.2-1", first=(2, 29, 0), last=(2, 29, ANY_PATCH),
    per_ch_max_ring_ll128_bws=_V2_27_PER_CH_MAX_RING_LL128_BWS[:3] + ((34.5, 34.6, 34.5),),
    per_ch_max_nvls_tree_bws=_V2_28_PER_CH_MAX_NVLS_TREE_BWS[:3] + ((0.0, 96.0, 43.8),),
    nvls=replace(_V2_28_9.nvls, hw_latency=_V2_29_NVLS_HW_LAT),
    tree_correction_factor=_V2_29_TREE_CORRECTION,
    speed_sm100_intra=_V2_29_SM100_SPEED_INTRA,
    speed_sm100_inter=(96.0, 80.0) + _V2_27_SM100_SPEED_INTER[1:],
    sources=("NVIDIA/nccl v2.29.2-1 (release commit ebd1e929) src/graph/tuning.cc, search.cc, "
             "src/enqueue.cc (NCCL_SYM_CE_THRESHOLD), src/ce_coll.cc",) + _V2_28_3.sources,
    notes=_V2_28_NOTES + (
        "[U] the 24th treeCorrectionFactor column (256-512 MiB) is HEAD's (LL 1.0, LL128 1.0, Simple .9).",
        "[U] the sm100 Inter speed array after 96, 80, 48 is taken as v2.27's.",
        "Tuning of 256M-512M AllReduce on Blackwell and channels per net peer for alltoall/send/recv "
        "(release notes): no constant given, not modelled.",),
)

# --- v2.30.7-1: 2.30.x ------------------------------------------------------------------------
# tuning.cc v2.29.2 -> v2.30.3: Blackwell perChMaxRingLL128Bws 40.0 x3, perChMaxNVLSTreeBws N4 80.0,
# other constants unchanged; search.cc v2.30.7 sm100SpeedArrayInter 96, 86, 80, 48, 45.1, ...
_V2_30_7 = _derive(
    _V2_29_2, version="2.30.7", tag="v2.30.7-1", first=(2, 30, 0), last=(2, 30, ANY_PATCH),
    per_ch_max_ring_ll128_bws=_V2_27_PER_CH_MAX_RING_LL128_BWS[:3] + ((40.0, 40.0, 40.0),),
    per_ch_max_nvls_tree_bws=_V2_28_PER_CH_MAX_NVLS_TREE_BWS[:3] + ((0.0, 96.0, 80.0),),
    speed_sm100_inter=(96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0,
                       12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
    sources=("NVIDIA/nccl v2.30.3-1 src/graph/tuning.cc (merge 6da42208), v2.30.7-1 src/graph/search.cc "
             "(merge 73cf1122)",) + _V2_28_3.sources,
    notes=_V2_28_NOTES + _V2_29_2.notes[len(_V2_28_NOTES):-1] + (
        "[U] 2.30's release notes were not read: its changes come from code diffs.",
        "[U] Blackwell multi-node NVLSTree channel tuning (ncclNvlsTreeSm100Tuning: 24 or 32 execution "
        "channels and chunk sizes by NIC bandwidth) is not modelled: NVLSTree keeps 32 execution "
        "channels across nodes."),
)

# --- 2.31.0a7-1 (pre-release on dev): 2.31.0-2.32.x --------------------------------------------
# src/graph/tuning.cc moves to src/tuning/ (one model per algorithm) with default constants
# identical to v2.30.3 (baseLat, hwLat, every per-channel cap, treeCorrectionFactor). No 2.31 tag
# and nothing for 2.32 was found in NVIDIA/nccl: both take these constants [U].
_V2_31_0 = _derive(
    _V2_30_7, version="2.31.0", tag="2.31.0a7-1", first=(2, 31, 0), last=(2, 32, ANY_PATCH),
    sources=("NVIDIA/nccl 2.31.0a7-1 (dev branch, commit db761c88) src/tuning/cost_model.cc, ring.cc, "
             "tree.cc, nvls.cc, pat.cc, sym_model.cc",) + _V2_30_7.sources,
    notes=("[U] 2.31 is the 2.31.0a7-1 pre-release on the dev branch (no release tag): its constants "
           "are v2.30.3's and may change.",
           "[U] 2.32: nothing was found for it in NVIDIA/nccl; 2.32.x is taken to be 2.31.0a7's.",)
          + _V2_30_7.notes,
)

# --- v2.21.5-1: 2.20.0-2.22.x ---------------------------------------------------------------
# baseLat v2.19-v2.22 (Tree Simple 0); hwLat v2.18-v2.22 row (Tree Simple 28 on NVLINK/PCI/NET);
# Ring LL128 0.7 when ppn < 2 (v2.7-v2.21); AllReduce nInterSteps nNodes>1 ? 2*nNodes : 0
# (v2.12-v2.22); llMaxBws Hopper 141/45/35 and sm90SpeedArrayIntra from v2.21.
_V2_21_5 = _derive(
    _V2_23_4, version="2.21.5", tag="v2.21.5-1", first=(2, 20, 0), last=(2, 22, ANY_PATCH),
    base_latency=((6.8, 14.0, 0.0), (6.6, 14.0, 8.4)),
    hw_latency=(((0.6, 1.25, 28.0), (0.6, 1.9, 3.4)),
                ((1.0, 1.9, 28.0), (1.0, 2.5, 5.7)),
                ((5.0, 8.5, 28.0), (2.7, 4.0, 14.0))),
    ring_ll128_factor_ppn1=0.7,
    allreduce_inter_steps_offset=0,
    pat=None,
    sources=("NVIDIA/nccl v2.21.5-1 src/graph/tuning.cc, search.cc, topo.h, src/transport/nvls.cc",),
    notes=("[U] MAXCHANNELS 32 (given for v2.18).",
           "[U] v2.20 differs for NVLS: NCCL_MAX_NVLS_ARITY 8, no NVLS on MNNVL, and MNNVL only "
           "when one clique holds every rank; v2.20 takes v2.21's rules.",
           "v2.20 differs for Hopper only (Ring LL x1/4 or 1/3, llMaxBws Hopper 87.7/22.5/19.0, "
           "the v2.19 sm90 intra array): not modelled, v2.20 takes v2.21's values [U]."),
)

# --- v2.19.4-1: 2.19.x ----------------------------------------------------------------------
# Ring LL x1/4 (x1/3 single-node Bcast/AG/RS), v2.8-v2.20; llMaxBws Hopper 87.7/22.5/19.0
# (v2.18-v2.20); sm90 intra array v2.19-v2.20; SM90 NVLink 20.0 (v2.18-v2.19).
_V2_19_4 = _derive(
    _V2_21_5, version="2.19.4", tag="v2.19.4-1", first=(2, 19, 0), last=(2, 19, ANY_PATCH),
    ring_ll_factor=1 / 4, ring_ll_factor_single_node_copy=1 / 3,
    ll_max_bws=((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (87.7, 22.5, 19.0)),
    speed_sm90_intra=(60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0),
    nvlink_bandwidths=((90, 20.0), (87, 20.0), (86, 12.0), (80, 20.0), (70, 20.0), (60, 18.0)),
    nvls=_NVLS_V2_19,
    sources=("NVIDIA/nccl v2.19.4-1 src/graph/tuning.cc, search.cc, topo.h",),
    notes=("[U] MAXCHANNELS 32 (given for v2.18).",),
)

# --- v2.18.6-1: 2.18.x ----------------------------------------------------------------------
# hwLat v2.18: Tree Simple NVLINK 4, PCI 6, NET 14; sm90 speed arrays of v2.18.
_V2_18_6 = _derive(
    _V2_19_4, version="2.18.6", tag="v2.18.6-1", first=(2, 18, 0), last=(2, 18, ANY_PATCH),
    hw_latency=(((0.6, 1.25, 4.0), (0.6, 1.9, 3.4)),
                ((1.0, 1.9, 6.0), (1.0, 2.5, 5.7)),
                ((5.0, 8.5, 14.0), (2.7, 4.0, 14.0))),
    speed_sm90_intra=(60.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0),
    speed_sm90_inter=(48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0,
                      2.4, 1.2, 0.24, 0.12),
    nvls=_NVLS_V2_18,
    sources=("NVIDIA/nccl v2.18.6-1 src/graph/tuning.cc, search.cc, topo.h, "
             "src/include/device.h (MAXCHANNELS 32)",),
    notes=(),
)

# --- v2.14-v2.17 (v2.17.1-1) and v2.10-v2.11 (v2.11.4-1): the v2.12 tables except ------------
# hwLat[NET][Ring][Simple] = 9.6 (28 only in v2.12-v2.13), and for v2.10-
# v2.11 AllReduce nInterSteps = 2*(nNodes-1) (v2.7-v2.11), src/graph/tuning.cc.
_V2_NET_RING_SIMPLE_9_6 = (((0.52, 1.25, 28.0), (0.47, 1.9, 3.4)),
                           ((1.0, 1.9, 28.0), (1.0, 2.5, 5.7)),
                           ((5.0, 8.5, 28.0), (2.7, 4.0, 9.6)))
_V2_16_5 = _derive(
    _V2_12_12, version="2.16.5", tag="v2.16.5-1", first=(2, 14, 0), last=(2, 16, ANY_PATCH),
    hw_latency=_V2_NET_RING_SIMPLE_9_6,
    notes=_NOTES_V2_12[:-1] + ("The v2.12 tables with hwLat[NET][Ring][Simple] 9.6 "
                               "(v2.14-v2.17); no NVLS (it arrives in v2.17.1).",),
)
# v2.17.x: v2.16's tables and the first NVLS (src/transport/nvls.cc v2.17.1-1).
_V2_17_1 = _derive(
    _V2_16_5, version="2.17.1", tag="v2.17.1-1", first=(2, 17, 0), last=(2, 17, ANY_PATCH),
    nvls=_NVLS_V2_17,
    notes=_NOTES_V2_12[:-1] + ("The v2.12 tables with hwLat[NET][Ring][Simple] 9.6 "
                               "(v2.14-v2.17).",
                               "[U] NVLS of v2.17: ratio 5/6, hwLat as v2.27's, the v2.18 "
                               "latency formula; the search on the generic speed arrays."),
)
_V2_11_4 = _derive(
    _V2_16_5, version="2.11.4", tag="v2.11.4-1", first=(2, 10, 0), last=(2, 11, ANY_PATCH),
    path_types=("LOC", "NVL", "NVB", "PIX", "PXB", "PHB", "SYS"),   # topo.h v2.8-v2.11 (no PXN)
    allreduce_inter_steps_offset=1,
    notes=_NOTES_V2_12[:-1] + ("The v2.12 tables with hwLat[NET][Ring][Simple] 9.6 and "
                               "AllReduce nInterSteps 2*(nNodes-1) (v2.7-v2.11); no PXN.",),
)

# --- v2.8-v2.9 (v2.8.4-1) -------------------------------------------------------------------
# topo.h v2.7-v2.9: SM60 18, SM70 21, SM80 21 (v2.9), SM86 12 (v2.9); QPI 6, SKL 9; search.cc
# v2.9 single speed array; NVB paths from v2.8 (topo.h).
_V2_9_SPEED = (42.0, 30.0, 24.0, 21.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4,
               1.2, 0.24, 0.12)
_V2_8_4 = _derive(
    _V2_11_4, version="2.8.4", tag="v2.8.4-1", first=(2, 8, 0), last=(2, 9, ANY_PATCH),
    speed_intra=_V2_9_SPEED, speed_inter=_V2_9_SPEED,
    nvlink_bandwidths=((87, 21.0), (86, 12.0), (80, 21.0), (70, 21.0), (60, 18.0)),
    nvlink_bandwidth_default=21.0,
    sources=("NVIDIA/nccl v2.8.4-1 and v2.9.9-1 src/graph/tuning.cc, src/graph/search.cc, "
             "src/graph/topo.h",),
    notes=("[U] MAXCHANNELS 32, DupChannels and llMaxBws/perChMax rows as v2.12 (untagged).",
           "[U] the speed array is v2.9's (v2.8 lies between v2.7's and v2.9's).",
           "[U] LL128 enabling as v2.12 (all sm70 or all sm80, typeIntra <= NVL).",
           "NCCL charges PHB PCIe links x12/9 before v2.9 (6/5 from v2.9): not modelled here."),
)

# --- v2.7.8-1: 2.7.x ------------------------------------------------------------------------
# hwLat v2.7 row; no NVB path type (topo.h); Ring LL without cap (x1/4, x1/3 single-node copies);
# ll128MaxBwPerCh[coll]; Tree x0.9 with maxTreeBw; sm80 busBw <= 235 (tuning.cc); speed array.
_V2_7_8 = _derive(
    _V2_8_4, version="2.7.8", tag="v2.7.8-1", first=(2, 7, 0), last=(2, 7, ANY_PATCH),
    path_types=("LOC", "NVL", "PIX", "PXB", "PHB", "SYS", "NET"),
    hw_latency=(((0.52, 1.2, 28.0), (0.47, 1.9, 3.4)),
                ((1.0, 1.9, 28.0), (1.0, 2.5, 5.7)),
                ((5.0, 8.5, 50.0), (2.7, 4.0, 9.6))),
    ll128_per_collective=(18.8, 12.0, 18.3, 15.2, 16.7),
    tree_factor=0.9,
    tree_total_caps=((110.0, 80.0), (130.0, 105.0)),
    sm80_bus_cap=235.0,
    speed_intra=(42.0, 24.0, 21.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4,
                 1.2, 0.24, 0.12),
    speed_inter=(42.0, 24.0, 21.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4,
                 1.2, 0.24, 0.12),
    nvlink_bandwidths=((70, 21.0), (60, 18.0)),
    sources=("NVIDIA/nccl v2.7.8-1 src/graph/tuning.cc, search.cc, topo.h",),
    notes=("[U] MAXCHANNELS 32 and DupChannels as v2.12.",
           "[U] Tree LL128 is capped at nChannels x ll128MaxBwPerCh[AllReduce].",
           "[U] LL128 enabling as v2.12 (all sm70 or all sm80, typeIntra <= NVL)."),
)

# --- v2.5.7-1: 2.5.x-2.6.x (the first topology search and tuning model) -----------------------
# baseLat v2.5-v2.6; hwLat v2.5; Ring/Tree LL x1/4 and x1/3 without cap; ll128MaxBw[coll]
# totals with x120/128; Tree min(busBw x .9, nNodes > 1 ? 70 : 90); v2.5 treeCorrectionFactor
# Simple row; QPI 8, SKL 12; LL128 on Volta + NVLink only; ring latency nsteps x hwLat.
_V2_5_TREE_CORRECTION = (
    _V2_27_TREE_CORRECTION[0], _V2_27_TREE_CORRECTION[1],
    (.9,) * 7 + (.8, .7, .6, .6) + (.5,) * 6 + (.6, .6, .7, .8, .9),
)
_V2_5_7 = _derive(
    _V2_7_8, version="2.5.7", tag="v2.5.7-1", first=(2, 5, 0), last=(2, 6, ANY_PATCH),
    base_latency=((4.4, 4.4, 0.0), (3.6, 3.6, 8.4)),
    hw_latency=(((0.5, 1.9, 28.0), (0.4, 2.5, 5.7)),
                ((1.0, 1.9, 28.0), (1.0, 2.5, 5.7)),
                ((5.0, 7.5, 50.0), (0.9, 2.5, 6.6))),
    ring_ll_factor_single_node_copy=1 / 4,
    ring_ll128_factor=120 / 128, ring_ll128_factor_ppn1=120 / 128,
    ll128_per_collective=(113.0, 72.0, 110.0, 91.0, 100.0),
    tree_ll_divisor=3.0,
    tree_total_caps=((90.0, 70.0), (90.0, 70.0)),
    sm80_bus_cap=None,
    tree_correction_factor=_V2_5_TREE_CORRECTION,
    ll128_compute_capabilities=(70,),
    bdw_qpi_bandwidth=8.0, skl_qpi_bandwidth=12.0,
    sources=("NVIDIA/nccl v2.5.7-1 src/graph/tuning.cc, src/enqueue.cc (treeCorrectionFactor), "
             "topo.h",),
    notes=("[U] the search constants of v2.5 are not in the reference: the v2.7 speed array, "
           "path types and v2.12 DupChannels are used; MAXCHANNELS 32.",
           "[U] treeCorrectionFactor LL and LL128 rows: v2.5 had different values that the "
           "reference does not list; the v2.7+ rows are used (the Simple row is v2.5's).",
           "[U] the Tree LL128 factor (7/9, 120/128) and the ring plateau rule are untagged and "
           "read as unchanged; Tree LL128 is capped at ll128MaxBw[AllReduce].",
           "LL128 needs every GPU at sm70 and typeIntra NVL (v2.5: Volta + NVLink only)."),
)

# --- v2.4.8-1 and v2.3.x: the ring construction before the topology search ------------------
# src/init.cu, src/misc/rings.cu, src/transport/p2p.cu. These
# releases have no tuning model: the time of a ring is computed with the v2.5 tables [U] (the
# first model NCCL wrote), the protocol is chosen as NCCL did, by size threshold.
_LEGACY_NOTES = (
    "No tuning model in NCCL before v2.5: latencies and protocol factors are v2.5's [U], "
    "applied to the rings this release builds; LL vs Simple is NCCL's own size threshold.",
    "[U] NVLink/PCIe figures are v2.5's (18 GB/s per P100 NVLink, 21 per V100 NVLink): NCCL "
    "2.3/2.4 count links and have no bandwidth figures.",
)
_V2_4_8 = _derive(
    _V2_5_7, version="2.4.8", tag="v2.4.8-1", first=(2, 4, 0), last=(2, 4, ANY_PATCH),
    max_channels=16,                      # MAXCHANNELS 16 (src/include/devcomm.h v2.4.8-1)
    legacy=LegacyRings(max_rings=16, default_threads=256, ll_max_threads=256, ll_min_threads=64,
                       thread_threshold=(64, 32), multi_node_threshold_factor=2),
    sources=("NVIDIA/nccl v2.4.8-1 src/init.cc (ncclTreeThreshold), src/misc/rings.cc, "
             "src/transport/p2p.cc",),
    notes=_LEGACY_NOTES + ("Trees only across >= 2 nodes, below ncclTreeThreshold.",
                           "[U] thread threshold as v2.3.7 (64 Volta+, 32 Pascal)."),
)
_V2_3_7 = _derive(
    _V2_4_8, version="2.3.7", tag="v2.3.7-1", first=(2, 3, 7), last=(2, 3, ANY_PATCH),
    legacy=LegacyRings(max_rings=16, default_threads=256, ll_max_threads=256, ll_min_threads=64,
                       thread_threshold=(64, 32), multi_node_threshold_factor=2),
    sources=("NVIDIA/nccl v2.3.7-1 src/init.cu, src/misc/rings.cu, src/transport/p2p.cu, "
             "src/include/nvlink.h, src/include/common_coll.h",),
    notes=_LEGACY_NOTES + ("No trees, no LL128, no GPU relay.",),
)
_V2_3_5 = _derive(
    _V2_3_7, version="2.3.5", tag="v2.3.5-5", first=(2, 0, 0), last=(2, 3, 6),
    legacy=replace(_V2_3_7.legacy, thread_threshold=(32, 32)),
    sources=("NVIDIA/nccl v2.3.5-5 src/include/common_coll.h (threadThreshold 32) and the "
             "v2.3.7-1 ring code, unchanged between the two tags",),
    notes=_LEGACY_NOTES + (
        "[U] 2.0-2.2 have no tags in NVIDIA/nccl (v2.3.5-5 is the oldest 2.x tag): they are "
        "taken to build rings as v2.3.5.",),
)

#: Every profile by version string, oldest first.
def _with_inter_cpu(profile: NcclProfile) -> NcclProfile:
    """The inter-CPU figures of ncclTopoGetInterCpuBw as the release had them (NVIDIA/nccl
    src/graph/topo.h): SRP_QPI_BW 22 and ERP_QPI_BW 40 from v2.26 (Skylake's figure before),
    AMD_BW 16 from v2.19 (LOC_BW before), ARM_BW 6."""
    newer_intel = profile.first >= (2, 26, 0)
    return replace(profile,
                   srp_qpi_bandwidth=22e9 if newer_intel else profile.skl_qpi_bandwidth,
                   erp_qpi_bandwidth=40e9 if newer_intel else profile.skl_qpi_bandwidth,
                   amd_bandwidth=16e9 if profile.first >= (2, 19, 0) else profile.loc_bandwidth,
                   arm_bandwidth=6e9)


PROFILES: Mapping[str, NcclProfile] = MappingProxyType({
    p.version: replace(_with_inter_cpu(p), behaviour=BEHAVIOURS[p.version]) for p in (
    _V2_3_5, _V2_3_7, _V2_4_8, _V2_5_7, _V2_7_8, _V2_8_4, _V2_11_4, _V2_12_12, _V2_16_5,
    _V2_17_1, _V2_18_6, _V2_19_4, _V2_21_5, _V2_23_4, _V2_24_3, _V2_25_1, _V2_26_2, _V2_27_7,
    _V2_28_3, _V2_28_9, _V2_29_2, _V2_30_7, _V2_31_0)})

_OLDEST, _NEWEST = _V2_3_5, _V2_31_0
_VERSION_GRAMMAR = re.compile(r"[vV]?([0-9]{1,3})\.([0-9]{1,3})(?:\.([0-9]{1,3}))?(?:-([0-9]{1,3}))?")


@dataclass(frozen=True, slots=True)
class NcclRelease:
    """A parsed NCCL release number.

    Attributes
    ----------
    major, minor : int
    patch : int or None
        ``None`` for a minor release given alone (``"2.12"``): the newest patch of it.
    text : str
        What was parsed.
    """

    major: int
    minor: int
    patch: int | None
    text: str

    @property
    def key(self) -> tuple:
        """``(major, minor, patch)`` with a missing patch as the newest (for ordering)."""
        return (self.major, self.minor, ANY_PATCH if self.patch is None else self.patch)

    @property
    def profile(self) -> NcclProfile:
        """The profile that governs this release."""
        for profile in PROFILES.values():
            if profile.first <= self.key <= profile.last:
                return profile
        raise UnknownNcclVersionError(_range_message(self.text))  # unreachable after parsing


def _release_text(release: tuple) -> str:
    return ".".join(str(part) for part in release[:2]) + (
        ".x" if release[2] == ANY_PATCH else f".{release[2]}")


def _range_message(received) -> str:
    return (f"no NCCL profile for version {received!r}: expected a release from "
            f"{_release_text(_OLDEST.first)} to {_release_text(_NEWEST.last)} written MAJOR.MINOR"
            f"[.PATCH][-BUILD], such as '2.12', '2.12.12' or 'v2.12.12-1'")


def parse_nccl_version(text) -> NcclRelease:
    """Parse an NCCL release number strictly.

    Grammar: an optional ``v``, ``MAJOR.MINOR``, an optional ``.PATCH`` and an optional
    ``-BUILD`` (the git tag suffix), digits only, surrounding blanks ignored: ``"2.12"``,
    ``"2.12.12"``, ``"v2.12.12-1"``. A minor release alone means its newest patch. The release
    must lie in the range the profiles cover (2.0.0 to the newest profile's minor release).

    Raises
    ------
    UnknownNcclVersionError
        For anything else, naming what was received and the accepted range and grammar.

    Examples
    --------
    >>> parse_nccl_version("v2.12.12-1").profile.version
    '2.12.12'
    >>> parse_nccl_version("2.8.4").profile.version, parse_nccl_version("2.3").profile.version
    ('2.8.4', '2.3.7')
    """
    if not isinstance(text, str):
        raise UnknownNcclVersionError(_range_message(text))
    match = _VERSION_GRAMMAR.fullmatch(text.strip())
    if match is None:
        raise UnknownNcclVersionError(_range_message(text))
    major, minor = int(match[1]), int(match[2])
    patch = None if match[3] is None else int(match[3])
    release = NcclRelease(major, minor, patch, text)
    low = (major, minor, 0 if patch is None else patch)
    if not (_OLDEST.first <= low and release.key <= _NEWEST.last):
        raise UnknownNcclVersionError(_range_message(text))
    return release


def nccl_profile(version: str | NcclProfile | None = None) -> NcclProfile:
    """The profile that governs an NCCL release.

    Parameters
    ----------
    version : str or NcclProfile, optional
        A release in :func:`parse_nccl_version`'s grammar (``"2.12.12"``, ``"v2.8.4-1"``,
        ``"2.19"``). ``None`` gives :data:`DEFAULT_VERSION`; a profile is returned as is.

    Returns
    -------
    NcclProfile

    Raises
    ------
    UnknownNcclVersionError
        For a malformed version or one outside the profiles' range.

    Examples
    --------
    >>> nccl_profile("v2.12.12-1").version, nccl_profile("2.15.5").version
    ('2.12.12', '2.16.5')
    >>> nccl_profile("2.33")
    Traceback (most recent call last):
    ...
    models.engine.nccl.profiles.UnknownNcclVersionError: no NCCL profile for version '2.33': expected a release from 2.0.0 to 2.32.x written MAJOR.MINOR[.PATCH][-BUILD], such as '2.12', '2.12.12' or 'v2.12.12-1'
    """
    if version is None:
        return PROFILES[DEFAULT_VERSION]
    if isinstance(version, NcclProfile):
        return version
    return parse_nccl_version(version).profile


def versions_table() -> tuple:
    """Releases, the profile governing each and its behaviour, oldest first, as numbers and enums
    (:func:`models.present.versions_text.versions_rows` words them).

    Returns
    -------
    tuple of tuple
        ``((first, last), version, tag, behaviour)`` per profile: the releases it governs as
        ``(major, minor, patch)`` tuples (a last patch :data:`ANY_PATCH`: every patch release), the
        profile's version, the NCCL tag of its constants and its
        :class:`~models.engine.nccl.releases.ReleaseBehaviour`.

    Examples
    --------
    >>> releases, version, tag, behaviour = versions_table()[0]
    >>> releases, version, tag, behaviour.tree.label
    (((2, 0, 0), (2, 3, 6)), '2.3.5', 'v2.3.5-5', 'no trees')
    """
    return tuple(((p.first, p.last), p.version, p.tag, p.behaviour) for p in PROFILES.values())
