"""NCCL's tuning and search constants as data: one frozen profile per NCCL version.

Every number NCCL's performance model uses lives here, in one :class:`NcclProfile` per NCCL
release, so that no other module carries an NCCL literal. The tuning model
(:mod:`models.nccl.tuning`) and the channel search read a profile; :func:`nccl_profile` looks one
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
``"2.27.7"`` (default)
    NCCL v2.27.7-1, the reference version of nccl-model.md: the last release before the
    DEV/MLOPart rework. Complete for the ring and tree algorithms.
``"2.12.12"``
    NCCL v2.12.12-1 (2022), the DGX-1/DGX-2 (Pascal/Volta) and DGX A100 era. Its constants
    come from the version tags nccl-model.md gives inline. nccl-model.md states that
    "differences from the reference version are tagged inline", so a table it gives without
    a version tag is read as unchanged in v2.12; such readings are listed in
    :attr:`NcclProfile.notes`. What nccl-model.md does not give for v2.12 is left ``None``
    (see :attr:`NcclProfile.missing`); using it raises :class:`MissingConstantError` rather
    than inventing a value.

Index orders follow NCCL (nccl-model.md section 0): algorithms Tree=0, Ring=1
(:data:`ALGORITHMS`); protocols LL=0, LL128=1, Simple=2 (:data:`PROTOCOLS`); hardware
NVLINK=0, PCI=1, NET=2 (:data:`HARDWARE`). Rows of the bandwidth-cap tables are indexed by
the compute-capability index (Volta 0, Ampere 1, Hopper 2, Blackwell 3, see
:meth:`NcclProfile.compute_capability_index`) or, for multi-node ``llMaxBws``, by CPU vendor;
columns by node count (1 node, 2 nodes, 4+ nodes).

Only the Tree and Ring algorithms are modelled. CollNet, NVLS, NVLSTree and PAT constants
are deliberately absent (they need hardware this library does not model: SHARP, NVLink
SHARP on NVSwitch 3, one rank per node).

References
----------
.. [1] nccl-model.md (dgx-topo shared reference), sections 0, 1.4, 3.3, 3.7, 5.1-5.7, read
   from NVIDIA/nccl tags v2.12.12-1 and v2.27.7-1: src/graph/tuning.cc, src/graph/search.cc,
   src/graph/topo.h, src/include/device.h (NCCL_STEPS), src/init.cc.

Examples
--------
>>> from models.nccl import nccl_profile
>>> from topo.units import GB, us
>>> p = nccl_profile()
>>> p.version
'2.27.7'
>>> p.ll_max_bw(2, 1) / GB          # llMaxBws[Hopper][1 node]
141.0
>>> round(p.hw_lat("NVLINK", "ring", "LL") / us, 3)
0.6
>>> nccl_profile("2.12.12").missing
('max_channels', 'dup_channels', 'tree_pattern_factor')
"""

from __future__ import annotations

from dataclasses import dataclass

from topo.errors import DgxTopoError
from topo.specs import LINKS
from topo.units import GB, us

__all__ = [
    "ALGORITHMS", "PROTOCOLS", "HARDWARE", "PATH_TYPES", "DEFAULT_VERSION",
    "DupRule", "NcclProfile", "PROFILES", "nccl_profile",
    "UnknownNcclVersionError", "MissingConstantError",
]

#: Algorithms modelled, in NCCL's index order (Tree=0, Ring=1; nccl-model.md section 0).
ALGORITHMS = ("tree", "ring")
#: Protocols in NCCL's index order (LL=0, LL128=1, Simple=2; nccl-model.md section 0).
PROTOCOLS = ("LL", "LL128", "Simple")
#: Hardware classes of the latency table (NCCL_HW_NVLINK=0, PCI=1, NET=2; tuning.cc).
HARDWARE = ("NVLINK", "PCI", "NET")
#: Path types in increasing order of distance, reference version (src/include/graph.h
#: v2.27.7; nccl-model.md 1.3). Older versions lack some (see ``NcclProfile.path_types``).
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
    """``ncclTopoDupChannels`` thresholds (search.cc; nccl-model.md 3.7, v2.18+).

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


@dataclass(frozen=True, slots=True)
class NcclProfile:
    """NCCL's model constants for one release, in SI units.

    Table fields are nested tuples in NCCL's index order (module docstring); use the
    lookup methods (:meth:`base_lat`, :meth:`hw_lat`, :meth:`ll_max_bw`, ...) rather than
    raw indices. A field that is ``None`` is a constant nccl-model.md does not give for
    this version; the lookups raise :class:`MissingConstantError` for it.

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
    inter_latency_rule : str
        ``"ppn"``: ``(ppn == 1 ? hwLat[NET][Tree] : hwLat[NET][a]) + latencyInter (x2 for
        Simple)``; ``"graph-or-net"``: ``latencyInter if latencyInter else hwLat[NET][a]``.
    ll128_max_type_intra, ll128_max_type_inter : str
        LL128 needs the graph's typeIntra / typeInter at most these.
    ll128_max_type_inter_sm90 : str or None
        Relaxed typeInter limit for sm90+ (``NCCL_LL128_C2C`` default on).
    ll128_compute_capabilities : tuple of int or None
        If set, LL128 needs every GPU at one of these exact compute capabilities.
    ll128_min_compute_capability : int
        LL128 is off below this.
    ll128_cuda_11_8_rule : bool
        LL128 off for sm90 + CUDA 11.8 + Ring AllReduce on 2 ranks.
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
    inter_latency_rule: str
    ll128_max_type_intra: str
    ll128_max_type_inter: str
    ll128_max_type_inter_sm90: str | None
    ll128_compute_capabilities: tuple | None
    ll128_min_compute_capability: int
    ll128_cuda_11_8_rule: bool
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

    # ------------------------------------------------------------------ lookups
    @property
    def missing(self) -> tuple:
        """Names of the constants this profile lacks (``None`` fields), in field order."""
        return tuple(name for name in _OPTIONAL if getattr(self, name) is None)

    def require(self, name: str):
        """The value of constant ``name``.

        Raises
        ------
        MissingConstantError
            If this profile lacks it.
        """
        value = getattr(self, name)
        if value is None:
            raise MissingConstantError(
                f"NCCL profile {self.version} lacks {name!r}: nccl-model.md does not give it for "
                f"{self.tag}; expected a profile that has it, one of "
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
        (Volta) (tuning.cc ``compCapIndex``; nccl-model.md 5.1).

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
                f"only (nccl-model.md 5.3); received compute capability {compute_capability}; "
                f"expected a profile such as {DEFAULT_VERSION}")
        return index

    def base_lat(self, algorithm: str, protocol: str) -> float:
        """``baseLat[algorithm][protocol]``. [s]"""
        return self.base_latency[ALGORITHMS.index(algorithm)][PROTOCOLS.index(protocol)]

    def hw_lat(self, hardware: str, algorithm: str, protocol: str) -> float:
        """``hwLat[hardware][algorithm][protocol]``. [s]"""
        return self.hw_latency[HARDWARE.index(hardware)][ALGORITHMS.index(algorithm)][
            PROTOCOLS.index(protocol)]

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

    def speed_array(self, compute_capability: int, *, inter: bool) -> tuple:
        """Per-channel speeds the search tries, high to low, for a minimum compute capability.

        ``inter`` selects the arrays used when the system has NET nodes (search.cc;
        nccl-model.md 3.3: ccMin >= 100 -> sm100, >= 90 -> sm90, otherwise generic; a
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
        >>> from models.nccl import nccl_profile
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
        >>> from models.nccl import nccl_profile
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


# Constants a profile may lack (``None`` = not given by nccl-model.md for that version). Other
# ``None`` fields (sm90/sm100 speed arrays, ll128_max_type_inter_sm90) mean "absent in that
# release" and have a defined fallback.
_OPTIONAL = ("max_channels", "dup_channels", "tree_pattern_factor", "tree_correction_factor",
             "ring_plateau_factor")

# ============================================================================================
# Tables in NCCL's units (GB/s, µs), as NCCL writes them. Converted to SI in _build() only.
# ============================================================================================

# --- v2.27.7-1 (reference) ------------------------------------------------------------------
# src/graph/tuning.cc v2.27.7 baseLat[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], Tree and Ring
# rows (nccl-model.md 5.2, column v2.23-HEAD). [µs]
_V2_27_BASE_LAT = (
    (6.8, 14.0, 8.4),   # Tree: LL, LL128, Simple
    (6.6, 14.0, 8.4),   # Ring
)
# src/graph/tuning.cc v2.27.7 hwLat[NCCL_NUM_HW][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS],
# Tree and Ring columns (nccl-model.md 5.2, reference version). [µs]
_V2_27_HW_LAT = (
    ((0.6, 1.25, 4.0), (0.6, 1.9, 3.4)),    # NVLINK: Tree, Ring
    ((1.0, 1.9, 4.0), (1.0, 2.5, 5.7)),     # PCI
    ((5.0, 8.5, 14.0), (2.7, 4.0, 14.0)),   # NET
)
# src/graph/tuning.cc v2.27.7 llMaxBws / perChMax*Bws [compCapIndex][index2] (nccl-model.md
# 5.3; Hopper llMaxBws row v2.21+, Blackwell rows v2.25-v2.27). [GB/s]
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
# log2i(nBytes >> 6) (nccl-model.md 5.7; HEAD adds a 24th entry).
_V2_27_TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0,
     1.0, 1.0),                                                                     # LL
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9,
     1.0, 1.0),                                                                     # LL128
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9,
     .9),                                                                           # Simple
)
# src/graph/search.cc v2.27.7 speedArrayIntra/Inter, sm90SpeedArrayIntra (v2.21+)/Inter
# (v2.19+), sm100SpeedArrayIntra/Inter (v2.27-v2.28) (nccl-model.md 3.3). [GB/s]
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
# SM70 20.0, SM60 18.0, otherwise SM80 (nccl-model.md 1.4). Thresholds are tested in order;
# (87, SM80) makes cc 87-89 take the SM80 value and cc 86 alone take SM86. [GB/s]
_V2_27_NVLINK_BW = ((100, 40.1), (90, 20.6), (87, 20.0), (86, 12.0), (80, 20.0), (70, 20.0),
                    (60, 18.0))

# src/graph/topo.cc ncclTopoAddPci: bw = width * speed / 80 with kvDictPciGen speeds 60, 120,
# 240 for 8, 16, 32 GT/s; x16 links give 12, 24, 48 GB/s (v2.27.7-1). [GB/s]
_V2_27_PCI_BW = (("pcie3_x16", 12.0), ("pcie4_x16", 24.0), ("pcie5_x16", 48.0))

# --- v2.12.12-1 -----------------------------------------------------------------------------
# baseLat, nccl-model.md 5.2 column v2.7-v2.17. [µs]
_V2_12_BASE_LAT = (
    (4.4, 4.4, 0.0),    # Tree
    (3.6, 10.0, 8.4),   # Ring
)
# hwLat, nccl-model.md 5.2 "Older hwLat values" rows v2.7 (PCI) and v2.8-v2.17 (NVLINK, NET),
# with the v2.12.x-v2.13.x exception NET Ring Simple = 28. [µs]
_V2_12_HW_LAT = (
    ((0.52, 1.25, 28.0), (0.47, 1.9, 3.4)),   # NVLINK: Tree, Ring
    ((1.0, 1.9, 28.0), (1.0, 2.5, 5.7)),      # PCI
    ((5.0, 8.5, 28.0), (2.7, 4.0, 28.0)),     # NET
)
# v2.12 "used one ll128MaxBwPerCh = 20.0, and llMaxBws/perChMaxTreeBws with only Volta/Ampere
# rows" (nccl-model.md 5.3); the Volta/Ampere rows are untagged there, read as unchanged.
_V2_12_LL_MAX_BWS = _V2_27_LL_MAX_BWS[:2]
_V2_12_LL128_MAX_BW_PER_CH = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0))
_V2_12_PER_CH_MAX_TREE_BWS = _V2_27_PER_CH_MAX_TREE_BWS[:2]
# search.cc speed arrays v2.12-v2.17 (nccl-model.md 3.3). [GB/s]
_V2_12_SPEED_INTRA = (44.0, 30.0, 22.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0)
_V2_12_SPEED_INTER = (48.0, 30.0, 24.0, 22.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0,
                      3.0, 2.4, 1.2, 0.24, 0.12)
# topo.h v2.10-v2.17: SM60 18, SM70 22, SM80 22, SM86 12, SM90 = SM80 (nccl-model.md 1.4). [GB/s]
_V2_12_NVLINK_BW = ((87, 22.0), (86, 12.0), (80, 22.0), (70, 22.0), (60, 18.0))

_SOURCES_V2_27 = (
    "baseLat, hwLat, llMaxBws, perChMax*Bws, treeCorrectionFactor, protocol factors, ring "
    "plateau, LL128 rules: NVIDIA/nccl v2.27.7-1 src/graph/tuning.cc (nccl-model.md 5.1-5.7)",
    "getNetOverhead: src/graph/tuning.cc v2.18+ (nccl-model.md 5.2)",
    "speed arrays, ncclTopoDupChannels: src/graph/search.cc (nccl-model.md 3.3, 3.7)",
    "MAXCHANNELS 64, NCCL_STEPS 8: src/include/device.h (nccl-model.md 0, 5.7)",
    "NVLink/PCI/QPI/LOC bandwidths: src/graph/topo.h (nccl-model.md 1.4)",
)
_SOURCES_V2_12 = (
    "baseLat, hwLat, Ring LL/LL128 factors, latency rules: NVIDIA/nccl v2.12.12-1 "
    "src/graph/tuning.cc as nccl-model.md 5.2-5.6 tags them",
    "speed arrays: src/graph/search.cc v2.12-v2.17 (nccl-model.md 3.3)",
    "NVLink/QPI bandwidths: src/graph/topo.h v2.10-v2.17 (nccl-model.md 1.4)",
)
_NOTES_V2_12 = (
    "llMaxBws and perChMaxTreeBws Volta/Ampere rows, treeCorrectionFactor, the ring plateau "
    "rule, the Tree ratio and LL/LL128 factors, NCCL_STEPS and the Broadcast/Reduce latency "
    "rule are "
    "untagged in nccl-model.md (which tags differences inline) and are read as unchanged.",
    "No bandwidth-cap rows for compute capability >= 90: v2.12 had Volta and Ampere rows only.",
    "No net overhead (getNetOverhead is v2.18+): stored as zero, which is the same as absent.",
    "No sm90/sm100 speed arrays (they appear in v2.18 / v2.25): the generic arrays apply.",
    "Missing: MAXCHANNELS (nccl-model.md gives 16 for v2.4, 32 for v2.18, nothing for v2.12); "
    "the DupChannels rule (given for v2.18+ only); the Tree-pattern 0.85 factor (given for "
    "v2.18+ only).",
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


_V2_27_7 = _build(
    version="2.27.7", tag="v2.27.7-1",
    path_types=PATH_TYPES,
    max_channels=64,                      # MAXCHANNELS, v2.27 (nccl-model.md 0)
    nccl_steps=8,                         # NCCL_STEPS (nccl-model.md 5.7)
    base_latency=_V2_27_BASE_LAT,
    hw_latency=_V2_27_HW_LAT,
    ll_max_bws=_V2_27_LL_MAX_BWS,
    per_ch_max_ring_ll128_bws=_V2_27_PER_CH_MAX_RING_LL128_BWS,
    per_ch_max_tree_ll128_bws=_V2_27_PER_CH_MAX_TREE_LL128_BWS,
    per_ch_max_tree_bws=_V2_27_PER_CH_MAX_TREE_BWS,
    ring_ll_factor=0.5,                   # Ring LL x0.5, v2.21+ (nccl-model.md 5.4)
    ring_ll_factor_single_node_copy=0.5,
    ring_ll128_factor=0.92,               # Ring LL128 x0.92 (5.4); ppn<2 rule removed by v2.23
    ring_ll128_factor_ppn1=0.92,
    tree_factor=0.92,                     # Tree AllReduce x0.92 (5.4)
    tree_ll_divisor=3.8,                  # Tree LL /3.8 (5.4)
    tree_ll128_factor_single_node=7 / 9,  # Tree LL128 (5.4)
    tree_ll128_factor_multi_node=120 / 128,
    tree_pattern_factor=0.85,             # maxTreePattern == TREE (5.4)
    tree_alg_ratio=0.5,                   # bus -> alg ratio "Tree, CollNet*, others" (5.4)
    tree_correction_factor=_V2_27_TREE_CORRECTION,
    ring_plateau_factor=(1.9, 1.4),       # minCompCap < 80 / >= 80 (5.7)
    ring_plateau_min_bytes=64,            # nBytes/(comm->nChannels*nRanks) >= 64 (5.7)
    net_overhead=(1.0, 2.0, 1.0),         # getNetOverhead: Intel, AMD, other [µs] (5.2)
    net_overhead_simple_factor=3,         # getNetOverhead() * (Simple ? 3 : 1) (5.5)
    ring_ll_multi_node_intra_factor=1.0,  # the x1.8 is v2.7-v2.17 only (5.5)
    allreduce_inter_steps_offset=1,       # 2*(nNodes-1) (5.5)
    inter_latency_rule="ppn",
    ll128_max_type_intra="NVB",           # 5.6
    ll128_max_type_inter="PXB",
    ll128_max_type_inter_sm90="PXN",      # NCCL_LL128_C2C default 1 and sm >= 90
    ll128_compute_capabilities=None,      # minCompCap == maxCompCap, any value >= 70
    ll128_min_compute_capability=70,
    ll128_cuda_11_8_rule=True,
    speed_intra=_V2_18_SPEED_INTRA,
    speed_inter=_V2_18_SPEED_INTER,
    speed_sm90_intra=_V2_21_SM90_SPEED_INTRA,
    speed_sm90_inter=_V2_19_SM90_SPEED_INTER,
    speed_sm100_intra=_V2_27_SM100_SPEED_INTRA,
    speed_sm100_inter=_V2_27_SM100_SPEED_INTER,
    dup_channels=(25.0, 80, 50.0, 4),     # ncclTopoDupChannels (3.7) [GB/s, cc, GB/s, channels]
    nvlink_bandwidths=_V2_27_NVLINK_BW,
    nvlink_bandwidth_default=20.0,        # "otherwise SM80" (1.4)
    loc_bandwidth=5000.0, pci_bandwidth=12.0,  # LOC_BW, PCI_BW (1.4)
    bdw_qpi_bandwidth=6.0, skl_qpi_bandwidth=10.0,
    pci_bandwidths=_V2_27_PCI_BW,
    sources=_SOURCES_V2_27,
    notes=("Complete for Tree and Ring; CollNet, NVLS, NVLSTree and PAT are not modelled.",),
)

_V2_12_12 = _build(
    version="2.12.12", tag="v2.12.12-1",
    path_types=("LOC", "NVL", "NVB", "PIX", "PXB", "PXN", "PHB", "SYS", "DIS"),  # 1.3, v2.12-v2.17
    max_channels=None,
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
    ring_ll_multi_node_intra_factor=1.8,  # v2.7-v2.17 (5.5)
    allreduce_inter_steps_offset=0,       # v2.12-v2.22: nNodes>1 ? 2*nNodes : 0 (5.5)
    inter_latency_rule="graph-or-net",    # v2.12: latencyInter ? latencyInter : hwLat[NET][a][p]
    ll128_max_type_intra="NVL",           # v2.12 (5.6)
    ll128_max_type_inter="PXB",
    ll128_max_type_inter_sm90=None,
    ll128_compute_capabilities=(70, 80),  # "all GPUs are sm70 or all sm80"
    ll128_min_compute_capability=70,
    ll128_cuda_11_8_rule=False,
    speed_intra=_V2_12_SPEED_INTRA,
    speed_inter=_V2_12_SPEED_INTER,
    speed_sm90_intra=None, speed_sm90_inter=None,
    speed_sm100_intra=None, speed_sm100_inter=None,
    dup_channels=None,
    nvlink_bandwidths=_V2_12_NVLINK_BW,
    nvlink_bandwidth_default=22.0,        # SM80 value of v2.10-v2.17
    loc_bandwidth=5000.0, pci_bandwidth=12.0,
    bdw_qpi_bandwidth=6.0, skl_qpi_bandwidth=9.0,  # SKL_QPI_BW 9 in v2.7-v2.17 (1.4)
    # No SRP/ERP figures before v2.26 (Skylake's applies); AMD got LOC_BW before v2.19.
    srp_qpi_bandwidth=9e9, erp_qpi_bandwidth=9e9, amd_bandwidth=5000e9,
    pci_bandwidths=_V2_27_PCI_BW,  # kvDictPciGen: 8 and 16 GT/s as in v2.27 [U] for 32 GT/s
    sources=_SOURCES_V2_12,
    notes=_NOTES_V2_12,
)

#: Every profile by version string.
PROFILES: dict[str, NcclProfile] = {p.version: p for p in (_V2_27_7, _V2_12_12)}


def nccl_profile(version: str | NcclProfile | None = None) -> NcclProfile:
    """The constants of one NCCL release.

    Parameters
    ----------
    version : str or NcclProfile, optional
        ``"2.27.7"``; a tag form such as ``"v2.27.7-1"`` is accepted. ``None`` gives
        :data:`DEFAULT_VERSION`; a profile is returned as is.

    Returns
    -------
    NcclProfile

    Raises
    ------
    UnknownNcclVersionError
        For a version without a profile; the message lists the valid ones.

    Examples
    --------
    >>> nccl_profile("v2.12.12-1").version
    '2.12.12'
    >>> nccl_profile("2.19")
    Traceback (most recent call last):
    ...
    models.nccl.profiles.UnknownNcclVersionError: no NCCL profile for version '2.19': expected one of ['2.27.7', '2.12.12']
    """
    if version is None:
        return PROFILES[DEFAULT_VERSION]
    if isinstance(version, NcclProfile):
        return version
    key = str(version).strip()
    key = key[1:] if key[:1] in "vV" else key
    key = key.split("-")[0]
    try:
        return PROFILES[key]
    except KeyError:
        raise UnknownNcclVersionError(f"no NCCL profile for version {version!r}: expected one of "
                                      f"{list(PROFILES)}") from None
