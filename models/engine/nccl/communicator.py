"""The inputs of NCCL's tuning model and the working of one cell, shared by every algorithm.

A :class:`Communicator` bundles what NCCL's ``ncclTopoTuneModel`` reads (ranks, nodes, compute
capabilities, the CPU vendor) with the channel graphs the search found (:class:`ChannelGraph`:
ring, tree, NVLS); an algorithm of :mod:`models.engine.nccl.algorithms` reads them and answers
with a :class:`BusBandwidth` (its steps) and a :class:`Latency` (its terms).
:mod:`models.engine.nccl.tuning` bundles the cells and chooses. Units are SI: bytes, seconds, B/s.

References
----------
.. [1] NVIDIA/nccl v2.27.7-1 src/graph/tuning.cc, src/init.cc, src/graph/connect.cc.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from topo.errors import DgxTopoError
from topo.units import is_int, positive_bandwidth

from ..nccltests import NCCL_COLLECTIVES, collective as _collective_spec
from .profiles import PATH_TYPES, PROTOCOLS, NcclProfile, nccl_profile
from .reasons import Cause, Why

__all__ = [
    "PATTERNS", "CPU_VENDORS", "TuningError", "UnsupportedCollectiveError", "UnknownAlgorithmError",
    "UnknownProtocolError", "ChannelGraph", "Communicator", "BandwidthStep", "BusBandwidth",
    "LatencyTerm", "Latency", "check_collective", "check_protocol", "nsteps", "comm_channels",
    "path_above", "log2i",
]

#: Search patterns of a channel graph (NCCL_TOPO_PATTERN_*, src/graph/search.cc).
PATTERNS = ("ring", "balanced_tree", "tree", "split_tree", "nvls")
#: CPU vendors that change the model (llMaxBws row multi-node, getNetOverhead; src/graph/tuning.cc).
CPU_VENDORS = ("intel", "amd", "other")


class TuningError(DgxTopoError):
    """Bad input to the tuning model.

    Attributes
    ----------
    whys : tuple of Why
        The reasons the message names, each written as its ``repr``
        (:func:`models.present.reasons_text.error_text` words them).
    """

    def __init__(self, *args: object, whys: tuple = ()):
        super().__init__(*args)
        self.whys = tuple(whys)


class UnsupportedCollectiveError(TuningError):
    """A collective nccl-tests knows but NCCL's tuning model does not cover."""


class UnknownAlgorithmError(TuningError):
    """An algorithm name other than those of :data:`models.engine.nccl.algorithms.ALGORITHMS`."""


class UnknownProtocolError(TuningError):
    """A protocol name other than ``"LL"``, ``"LL128"``, ``"Simple"``."""


# ---------------------------------------------------------------------------------- checks
def check_collective(name, algorithms=()) -> str:
    """``name``, a collective NCCL's tuning model covers or one of ``algorithms`` (objects) lists
    (a user's own algorithm may run alltoall or sendrecv; NCCL's run them as send/recv)."""
    _collective_spec(name)  # UnknownCollectiveError for names nccl-tests does not know either
    if name not in NCCL_COLLECTIVES and not any(name in a.collectives for a in algorithms):
        raise UnsupportedCollectiveError(
            f"{name} has no NCCL tuning model (NCCL runs it as grouped send/recv, see the P2P "
            f"model): expected one of {list(NCCL_COLLECTIVES)}")
    return name


_PROTOCOL_KEYS = MappingProxyType({p.lower(): p for p in PROTOCOLS})


def check_protocol(name) -> str:
    key = _PROTOCOL_KEYS.get(name.lower()) if isinstance(name, str) else None
    if key is None:
        raise UnknownProtocolError(f"unknown protocol {name!r}: expected one of {list(PROTOCOLS)}")
    return key


# ---------------------------------------------------------------------------------- inputs
@dataclass(frozen=True, slots=True)
class ChannelGraph:
    """What NCCL's channel search found for one algorithm (an ``ncclTopoGraph``).

    The channel search fills one for the ring graph and one for the tree graph, with the
    values NCCL's ``ncclTopoCompute`` ends with *after*
    :func:`~models.engine.nccl.duplication.dup_channels` (the values NCCL logs as
    ``Pattern %d, crossNic %d, nChannels %d, bw %f/%f, type %s/%s, sameChannels %d``).

    Attributes
    ----------
    nchannels : int
        ``graph.nChannels`` (>= 1), before the x2 of ``ncclTopoPostset``.
    bw_intra : float
        ``graph.bwIntra``, bandwidth each channel reserves on intra-node links. [B/s]
    type_intra : str
        ``graph.typeIntra``, the path type channels needed between GPUs (``"NVL"``,
        ``"NVB"``, ``"PIX"``, ``"PXB"``, ``"PHB"``, ``"SYS"``, ...; ``"LOC"`` for one GPU).
        An enum member whose ``name`` is one of these (``models.engine.routes.PathType.NVL``) is
        stored as its name. ``"NVL"`` selects NCCL's NVLINK latencies, anything else the PCI
        ones (NVB counts as PCI, src/graph/tuning.cc).
    bw_inter : float, optional
        ``graph.bwInter`` [B/s]; defaults to ``bw_intra`` (NCCL sets both to the same speed;
        they differ only after pass 2 of multi-node tree searches).
    type_inter : str
        ``graph.typeInter``: path type to the NIC; ``"PIX"`` when there is no NET, as NCCL
        sets it on one node.
    pattern : str
        ``"ring"``, ``"balanced_tree"`` (NCCL's tree graph), ``"tree"`` or ``"split_tree"``.
    same_channels : bool
        ``graph.sameChannels``: every channel has the same GPU order.
    latency_inter : float
        ``graph.latencyInter``, NET latency from the topology (0 when the XML has none). [s]
    nthreads : int, optional
        Threads per ring of NCCL 2.0-2.4 (``comm->nThreads``: 256, or 128 on Pascal NVLink
        rings in 2.3); only the pre-2.5 LL threshold reads it (None: the profile's default).
    """

    nchannels: int
    bw_intra: float
    type_intra: str
    bw_inter: float | None = None
    type_inter: str = "PIX"
    pattern: str = "ring"
    same_channels: bool = True
    latency_inter: float = 0.0
    nthreads: int | None = None

    def __post_init__(self):
        if self.nthreads is not None and (not is_int(self.nthreads) or self.nthreads < 1):
            raise TuningError(f"nthreads must be an integer >= 1 or None, received {self.nthreads!r}")
        if not is_int(self.nchannels) or self.nchannels < 1:
            raise TuningError(f"nchannels must be an integer >= 1, received {self.nchannels!r}")
        positive_bandwidth("bw_intra", self.bw_intra, TuningError)
        if self.bw_inter is None:
            object.__setattr__(self, "bw_inter", float(self.bw_intra))
        positive_bandwidth("bw_inter", self.bw_inter, TuningError)
        for name in ("type_intra", "type_inter"):
            value = getattr(self, name)
            if not isinstance(value, str) and isinstance(getattr(value, "name", None), str):
                object.__setattr__(self, name, value.name)     # e.g. models.engine.routes.PathType.NVL
            if getattr(self, name) not in PATH_TYPES:
                raise TuningError(f"{name} must be an NCCL path type, expected one of "
                                  f"{list(PATH_TYPES)}, received {getattr(self, name)!r}")
        if self.pattern not in PATTERNS:
            raise TuningError(f"unknown pattern {self.pattern!r}: expected one of {list(PATTERNS)}")
        if not isinstance(self.same_channels, (bool, np.bool_)):
            raise TuningError(f"same_channels must be a bool, received {self.same_channels!r}")
        if isinstance(self.latency_inter, bool) or not isinstance(
                self.latency_inter, (int, float, np.integer, np.floating)) \
                or not math.isfinite(self.latency_inter) or self.latency_inter < 0:
            raise TuningError(f"latency_inter must be a finite time >= 0 [s], received "
                              f"{self.latency_inter!r}")

    @property
    def hardware(self) -> str:
        """``"NVLINK"`` when ``type_intra`` is NVL, else ``"PCI"`` (tuning.cc ``intraHw``)."""
        return "NVLINK" if self.type_intra == "NVL" else "PCI"


@dataclass(frozen=True, slots=True)
class Communicator:
    """The communicator-level inputs of NCCL's tuning model.

    Attributes
    ----------
    nranks : int
        Ranks (GPUs) in the communicator, >= 2.
    ring : ChannelGraph
        The ring graph (search id 0).
    tree : ChannelGraph
        The tree graph (search id 1; NCCL searches it with ``nChannels`` = the ring's).
    compute_capability : int
        Minimum compute capability over the GPUs (70 for V100, 90 for H100).
    nnodes : int
        Nodes (hosts); ``nranks // nnodes`` ranks per node, as NCCL's integer ``ppn``.
    compute_capability_max : int, optional
        Maximum compute capability (LL128 needs min == max); defaults to the minimum.
    cpu_vendor : str
        ``"intel"``, ``"amd"`` or ``"other"``: picks the multi-node ``llMaxBws`` row and
        the net overhead. No effect on one node.
    nchannels : int, optional
        ``comm->nChannels`` (used by the ring plateau rule only); defaults to
        :func:`comm_channels` of the two graphs.
    cuda_11_8 : bool
        Built with CUDA 11.8 (disables LL128 for sm90 Ring AllReduce on 2 ranks).
    profile : str or NcclProfile, optional
        The NCCL release whose model this communicator runs (:func:`nccl_profile`; default
        the reference version). It is stored as an :class:`NcclProfile` and every function
        of this module uses it, so one communicator cannot be tuned under two releases.
    nvls : ChannelGraph, optional
        The NVLS graph (search id 3; its ``nchannels`` are the heads) when NCCL sets
        ``nvlsSupport``; None otherwise (NVLS and NVLSTree are then disabled).
    nvls_why : Why
        Why there is no NVLS graph (the ``support`` of :func:`applicability`'s
        :attr:`Cause.NO_NVLS_SUPPORT`); :attr:`Cause.NVLS_SUPPORTED` from
        :func:`models.engine.nccl.channels.channel_graphs` when there is one.
        Its words: :func:`models.present.reasons_text.reason_text`.
    """

    nranks: int
    ring: ChannelGraph
    tree: ChannelGraph
    compute_capability: int
    nnodes: int = 1
    compute_capability_max: int | None = None
    cpu_vendor: str = "intel"
    nchannels: int | None = None
    cuda_11_8: bool = False
    profile: NcclProfile | str | None = None
    nvls: ChannelGraph | None = None
    nvls_why: Why = Why(Cause.NO_NVLS_GRAPH)

    def __post_init__(self):
        object.__setattr__(self, "profile", nccl_profile(self.profile))
        if self.nvls is not None and not isinstance(self.nvls, ChannelGraph):
            raise TuningError(f"nvls must be a ChannelGraph or None, received {type(self.nvls).__name__}")
        if not isinstance(self.nvls_why, Why):
            raise TuningError(f"nvls_why must be a Why, received {type(self.nvls_why).__name__}")
        if not is_int(self.nranks) or self.nranks < 2:
            raise TuningError(
                f"nranks must be an integer >= 2, received {self.nranks!r} (NCCL bypasses its "
                f"tuning model for a single rank and runs a local copy)")
        if not is_int(self.nnodes) or not 1 <= self.nnodes <= self.nranks:
            raise TuningError(f"nnodes must be an integer from 1 to nranks ({self.nranks}), "
                              f"received {self.nnodes!r}")
        for name in ("ring", "tree"):
            if not isinstance(getattr(self, name), ChannelGraph):
                raise TuningError(f"{name} must be a ChannelGraph, received "
                                  f"{type(getattr(self, name)).__name__}")
        if not is_int(self.compute_capability) or self.compute_capability < 0:
            raise TuningError(f"compute_capability must be an integer such as 70 or 90, received "
                              f"{self.compute_capability!r}")
        if self.compute_capability_max is not None and (
                not is_int(self.compute_capability_max)
                or self.compute_capability_max < self.compute_capability):
            raise TuningError(f"compute_capability_max must be an integer >= compute_capability "
                              f"({self.compute_capability}), received "
                              f"{self.compute_capability_max!r}")
        if self.cpu_vendor not in CPU_VENDORS:
            raise TuningError(f"unknown cpu_vendor {self.cpu_vendor!r}: expected one of "
                              f"{list(CPU_VENDORS)}")
        if self.nchannels is not None and (not is_int(self.nchannels) or self.nchannels < 1):
            raise TuningError(f"nchannels must be an integer >= 1 or None, received "
                              f"{self.nchannels!r}")
        if not isinstance(self.cuda_11_8, (bool, np.bool_)):
            raise TuningError(f"cuda_11_8 must be a bool, received {self.cuda_11_8!r}")

    @property
    def ppn(self) -> int:
        """Ranks per node, ``nranks // nnodes`` (NCCL's integer division)."""
        return self.nranks // self.nnodes

    @property
    def cc_max(self) -> int:
        """Maximum compute capability."""
        return self.compute_capability if self.compute_capability_max is None \
            else self.compute_capability_max


# --------------------------------------------------------------------------------- results
@dataclass(frozen=True, slots=True)
class BandwidthStep:
    """One refinement of the bus bandwidth: ``after = min(before x factor, cap)``.

    Attributes
    ----------
    name : str
        What NCCL applies, e.g. ``"Ring LL"``, ``"Tree AllReduce"``.
    factor : float
        Multiplier. [-]
    cap : float or None
        Cap, or None. [B/s]
    cap_name : str
        The NCCL table entry of the cap (``"llMaxBws[2][0]"``), or ``""``.
    before, after : float
        Bus bandwidth before / after this step. [B/s]
    bound : bool
        True when the cap, not the factor, set ``after``.
    """

    name: str
    factor: float
    cap: float | None
    cap_name: str
    before: float
    after: float
    bound: bool


@dataclass(frozen=True, slots=True)
class BusBandwidth:
    """NCCL's bus bandwidth of one (collective, algorithm, protocol), with its working.

    Attributes
    ----------
    collective, algorithm, protocol : str
    nchannels : int
        The graph's channel count.
    channel_bandwidth : float
        Per-channel bandwidth used (``bwIntra`` on <= 2 nodes, else ``bwInter``). [B/s]
    channel_bandwidth_name : str
        ``"bwIntra"`` or ``"bwInter"``.
    raw : float
        ``nchannels x channel_bandwidth``. [B/s]
    steps : tuple of BandwidthStep
        Refinements in NCCL's order.
    value : float
        Bus bandwidth after every step. [B/s]
    """

    collective: str
    algorithm: str
    protocol: str
    nchannels: int
    channel_bandwidth: float
    channel_bandwidth_name: str
    raw: float
    steps: tuple
    value: float

    @property
    def bound_by(self) -> str | None:
        """The cap that bound last (``"llMaxBws[2][0]"``), or None if no cap bound."""
        bound = [s.cap_name for s in self.steps if s.bound]
        return bound[-1] if bound else None


@dataclass(frozen=True, slots=True)
class LatencyTerm:
    """``count x per_step`` seconds of latency.

    Attributes
    ----------
    name : str
        E.g. ``"intra-node steps x hwLat[NVLINK][ring][LL]"``.
    count : float
        Number of steps. [-]
    per_step : float
        Latency per step. [s]
    """

    name: str
    count: float
    per_step: float

    @property
    def value(self) -> float:
        """``count x per_step``. [s]"""
        return self.count * self.per_step


@dataclass(frozen=True, slots=True)
class Latency:
    """NCCL's latency of one (collective, algorithm, protocol), with its working.

    Attributes
    ----------
    collective, algorithm, protocol : str
    base : float
        ``baseLat[algorithm][protocol]``. [s]
    terms : tuple of LatencyTerm
        Step terms added to ``base``.
    value : float
        ``base + sum of terms``, NCCL's ``comm->latencies`` entry. [s]
    intra_hardware : str
        ``"NVLINK"`` or ``"PCI"``, from the graph's ``typeIntra``.
    net_overhead : float
        ``getNetOverhead()`` x (3 for Simple) used as the floor of the intra-node step
        latency (0 on one node). [s]
    """

    collective: str
    algorithm: str
    protocol: str
    base: float
    terms: tuple
    value: float
    intra_hardware: str
    net_overhead: float


def nsteps(collective: str, nranks: int) -> int:
    """Ring steps of a collective: AllReduce ``2(n-1)``, AllGather/ReduceScatter ``n-1``,
    Broadcast/Reduce ``n`` (src/graph/tuning.cc).

    Examples
    --------
    >>> nsteps("all_reduce", 8), nsteps("all_gather", 8), nsteps("broadcast", 8)
    (14, 7, 8)
    """
    check_collective(collective)
    if collective == "all_reduce":
        return 2 * (nranks - 1)
    if collective in ("all_gather", "reduce_scatter"):
        return nranks - 1
    return nranks


def path_above(profile: NcclProfile, path_type: str, limit: str) -> bool:
    return profile.path_rank(path_type) > profile.path_rank(limit)


def log2i(n: int) -> int:
    """floor(log2(n)) for n >= 1, -1 for 0 (NCCL's log2i)."""
    return int(n).bit_length() - 1


def comm_channels(ring_nchannels: int, tree_nchannels: int, profile: str | NcclProfile | None = None) -> int:
    """``comm->nChannels``: ``min(MAXCHANNELS, 2 x min(ring, tree nChannels))``.

    src/init.cc and src/graph/connect.cc (``ncclTopoPostset`` doubles the channels). The extra
    copies (CollNet x1.5, sm90 multi-node x2, unpack net devices x2) and
    NCCL_MIN/MAX_NCHANNELS are not modelled; pass ``Communicator(nchannels=...)`` to override.

    Raises
    ------
    MissingConstantError
        When the profile lacks ``MAXCHANNELS`` (v2.12).

    Examples
    --------
    >>> comm_channels(12, 12)
    24
    >>> comm_channels(32, 32)
    64
    """
    profile = nccl_profile(profile)
    for name, value in (("ring_nchannels", ring_nchannels), ("tree_nchannels", tree_nchannels)):
        if not is_int(value) or value < 1:
            raise TuningError(f"{name} must be an integer >= 1, received {value!r}")
    return min(profile.require("max_channels"), 2 * min(ring_nchannels, tree_nchannels))
