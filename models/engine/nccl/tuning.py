"""NCCL's tuning model: bus bandwidth, latency, time, and the choice of algorithm and protocol.

This reimplements, from NVIDIA/nccl v2.27.7-1 (and the tags of older profiles), what ``ncclTopoTuneModel`` and
``ncclTopoGetAlgoTime`` (src/graph/tuning.cc) and ``topoGetAlgoInfo`` (src/enqueue.cc)
compute, for the Ring, Tree, NVLS, NVLSTree and PAT algorithms and the LL, LL128 and Simple protocols. It does
not look at a fabric: the channel search produces, per algorithm, a :class:`ChannelGraph`
(NCCL's ``ncclTopoGraph`` result: channel count, per-channel bandwidth, path types), the
caller bundles the two graphs with the rank counts into a :class:`Communicator`, and the
functions here do the rest.

Pipeline, one cell of NCCL's table per (algorithm, protocol):

1. :func:`applicability`: is the combination enabled at all (Broadcast/Reduce/AllGather/
   ReduceScatter run Ring only; LL128 has enabling rules)?
2. :func:`bus_bandwidth`: ``nChannels x bw`` then the protocol factors and caps, each step
   recorded.
3. :func:`bus_to_alg_ratio`: bus -> algorithm bandwidth (Ring ``nRanks/nsteps``, Tree 0.5).
4. :func:`latency`: base latency + hardware latency x steps, each term recorded.
5. :func:`tune` bundles 1-4 (what NCCL prints with ``NCCL_DEBUG_SUBSYS=TUNING``);
   :func:`tuning_table` does every cell.
6. :func:`algo_time`: ``time = lat + nBytes / bw`` per size, with the tree correction factor
   and the ring plateau rule; :func:`select_algorithm` takes the lowest time, ties to the lower
   (algorithm, protocol) index, as NCCL does.

Units are SI throughout: bytes, seconds, B/s. Sizes ``nbytes`` are NCCL's ``nBytes``: the
total buffer for all_gather / reduce_scatter, the same ``S`` nccl-tests reports
(:mod:`models.engine.nccltests`). Time functions are numpy-vectorised over ``nbytes``.

NVLS and NVLSTree read the communicator's NVLS graph (:mod:`models.engine.nccl.nvls`), PAT the tree
graph; :func:`nvls_choice` says why NVLS was or was not chosen. Not modelled: CollNet (NCCL
enables it only with a SHARP-enabled network plugin, so it would not pick it here); NCCL_ALGO /
NCCL_PROTO environment lists (use ``algorithm=`` / ``protocol=`` of
:func:`select_algorithm`); tuner plugins; fp8; the channel/thread reduction after the choice
(it does not change the predicted time); user-forced channel counts. A single rank never reaches NCCL's tuning model
(NCCL runs a local copy), so :class:`Communicator` needs ``nranks >= 2``.

References
----------
.. [1] NVIDIA/nccl v2.27.7-1 src/graph/tuning.cc, src/enqueue.cc, src/graph/search.cc,
   src/graph/connect.cc, src/transport/nvls.cc; older releases at the tag of their profile.

Examples
--------
A worked example derived by hand from the v2.27.7-1 tables: 8 H100 on one NVSwitch node, ring and tree graphs
of 12 channels x 30 GB/s, AllReduce of 1 MiB.

>>> from models.engine.nccl.tuning import ChannelGraph, Communicator, select_algorithm
>>> from topo.units import GB, MiB, to_us
>>> g = ChannelGraph(nchannels=12, bw_intra=30 * GB, type_intra="NVL")
>>> comm = Communicator(nranks=8, ring=g, tree=g, compute_capability=90)
>>> s = select_algorithm("all_reduce", 1 * MiB, comm)
>>> s.algorithm, s.protocol, round(to_us(s.time), 1)
('ring', 'LL', 28.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from topo.errors import DgxTopoError
from topo.units import parse_nbytes

from ..nccltests import algbw as nccl_tests_algbw, algbw_to_busbw, collective as _collective_spec
from ..results import tidy_records
from .profiles import (ALGORITHMS, PATH_TYPES, PROTOCOLS, MissingConstantError, NcclProfile,
                       nccl_profile)
from .releases import (AlgorithmSelection, InterLatency, LlCap, Ll128Cap, Ll128Rule, NvlsAlgorithms,
                       NvlsLatency, NvlsRatio, RingLatency, TreeCap, TreeRule)
from .reasons import Cause, NvlsChoice, Why

__all__ = [
    "NCCL_COLLECTIVES", "PATTERNS", "CPU_VENDORS",
    "TuningError", "UnsupportedCollectiveError", "UnknownAlgorithmError",
    "UnknownProtocolError", "NoAlgorithmError",
    "ChannelGraph", "Communicator", "BandwidthStep", "BusBandwidth", "LatencyTerm", "Latency",
    "Tuning", "AlgoTime", "Selection",
    "nsteps", "bus_to_alg_ratio", "applicability", "bus_bandwidth", "latency", "tune",
    "tuning_table", "algo_time", "select_algorithm", "comm_channels", "ll_threshold",
    "tree_threshold", "nvls_choice",
]

#: Collectives NCCL's tuning model covers, in NCCL's function order (src/include/device.h).
NCCL_COLLECTIVES = ("broadcast", "reduce", "all_gather", "reduce_scatter", "all_reduce")
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
    """An algorithm name other than those of :data:`models.engine.nccl.profiles.ALGORITHMS`."""


class UnknownProtocolError(TuningError):
    """A protocol name other than ``"LL"``, ``"LL128"``, ``"Simple"``."""


class NoAlgorithmError(TuningError):
    """No enabled (algorithm, protocol) matches the request."""


# ---------------------------------------------------------------------------------- checks
def _check_collective(name) -> str:
    _collective_spec(name)  # UnknownCollectiveError for names nccl-tests does not know either
    if name not in NCCL_COLLECTIVES:
        raise UnsupportedCollectiveError(
            f"{name} has no NCCL tuning model (NCCL runs it as grouped send/recv, see the P2P "
            f"model): expected one of {list(NCCL_COLLECTIVES)}")
    return name


def _check_algorithm(name) -> str:
    key = name.lower() if isinstance(name, str) else None
    if key not in ALGORITHMS:
        raise UnknownAlgorithmError(f"unknown algorithm {name!r}: expected one of "
                                    f"{list(ALGORITHMS)}")
    return key


_PROTOCOL_KEYS = MappingProxyType({p.lower(): p for p in PROTOCOLS})


def _check_protocol(name) -> str:
    key = _PROTOCOL_KEYS.get(name.lower()) if isinstance(name, str) else None
    if key is None:
        raise UnknownProtocolError(f"unknown protocol {name!r}: expected one of {list(PROTOCOLS)}")
    return key


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _positive_bandwidth(name, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value <= 0:
        raise TuningError(f"{name} must be a finite bandwidth > 0 [B/s], received {value!r}")
    return float(value)


def _bound(comm, profile) -> NcclProfile:
    """The communicator's profile, which carries the release; ``profile`` (accepted for 0.2
    callers, never passed inside this package) must be the same release."""
    if not isinstance(comm, Communicator):
        raise TuningError(f"comm must be a Communicator, received {type(comm).__name__}")
    if profile is not None and nccl_profile(profile) is not comm.profile:
        given = nccl_profile(profile)
        raise TuningError(f"the communicator runs NCCL {comm.profile.version}, received profile "
                          f"{given.version}: expected no profile, or build the Communicator with "
                          f"profile={given.version!r}")
    return comm.profile


# ---------------------------------------------------------------------------------- inputs
@dataclass(frozen=True, slots=True)
class ChannelGraph:
    """What NCCL's channel search found for one algorithm (an ``ncclTopoGraph``).

    The channel search fills one for the ring graph and one for the tree graph, with the
    values NCCL's ``ncclTopoCompute`` ends with *after* :func:`dup_channels` (the values NCCL
    logs as ``Pattern %d, crossNic %d, nChannels %d, bw %f/%f, type %s/%s, sameChannels %d``).

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
        if self.nthreads is not None and (not _is_int(self.nthreads) or self.nthreads < 1):
            raise TuningError(f"nthreads must be an integer >= 1 or None, received {self.nthreads!r}")
        if not _is_int(self.nchannels) or self.nchannels < 1:
            raise TuningError(f"nchannels must be an integer >= 1, received {self.nchannels!r}")
        _positive_bandwidth("bw_intra", self.bw_intra)
        if self.bw_inter is None:
            object.__setattr__(self, "bw_inter", float(self.bw_intra))
        _positive_bandwidth("bw_inter", self.bw_inter)
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
        if not _is_int(self.nranks) or self.nranks < 2:
            raise TuningError(
                f"nranks must be an integer >= 2, received {self.nranks!r} (NCCL bypasses its "
                f"tuning model for a single rank and runs a local copy)")
        if not _is_int(self.nnodes) or not 1 <= self.nnodes <= self.nranks:
            raise TuningError(f"nnodes must be an integer from 1 to nranks ({self.nranks}), "
                              f"received {self.nnodes!r}")
        for name in ("ring", "tree"):
            if not isinstance(getattr(self, name), ChannelGraph):
                raise TuningError(f"{name} must be a ChannelGraph, received "
                                  f"{type(getattr(self, name)).__name__}")
        if not _is_int(self.compute_capability) or self.compute_capability < 0:
            raise TuningError(f"compute_capability must be an integer such as 70 or 90, received "
                              f"{self.compute_capability!r}")
        if self.compute_capability_max is not None and (
                not _is_int(self.compute_capability_max)
                or self.compute_capability_max < self.compute_capability):
            raise TuningError(f"compute_capability_max must be an integer >= compute_capability "
                              f"({self.compute_capability}), received "
                              f"{self.compute_capability_max!r}")
        if self.cpu_vendor not in CPU_VENDORS:
            raise TuningError(f"unknown cpu_vendor {self.cpu_vendor!r}: expected one of "
                              f"{list(CPU_VENDORS)}")
        if self.nchannels is not None and (not _is_int(self.nchannels) or self.nchannels < 1):
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

    def graph(self, algorithm: str) -> ChannelGraph:
        """The channel graph an algorithm's model reads: Tree and PAT the tree graph, NVLS and
        NVLSTree the NVLS graph (None without one), Ring the ring graph (src/init.cc)."""
        algorithm = _check_algorithm(algorithm)
        if algorithm in ("tree", "pat"):
            return self.tree
        if algorithm in ("nvls", "nvls_tree"):
            return self.nvls
        return self.ring


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


@dataclass(frozen=True, slots=True)
class Tuning:
    """One cell of NCCL's tuning table (``NCCL_DEBUG_SUBSYS=TUNING`` prints latency/bandwidth).

    Attributes
    ----------
    collective, algorithm, protocol : str
    enabled : bool
        False when NCCL disables the combination (then ``bandwidth`` is 0, as in NCCL).
    why : Why or None
        Why it is disabled (None when enabled); its words:
        :func:`models.present.reasons_text.reason_text`.
    bus : BusBandwidth or None
        The bus bandwidth and its working (None when disabled).
    ratio : float
        Bus -> algorithm bandwidth ratio (:func:`bus_to_alg_ratio`).
    bandwidth : float
        ``bus.value x ratio``: the algorithm bandwidth NCCL stores in
        ``comm->bandwidths``. [B/s]
    latency : Latency or None
        The latency and its working (None when disabled).
    """

    collective: str
    algorithm: str
    protocol: str
    enabled: bool
    why: Why | None
    bus: BusBandwidth | None
    ratio: float
    bandwidth: float
    latency: Latency | None

    def to_records(self) -> list:
        """One row: the cell, whether it is enabled (and why not: ``reason``, the
        :class:`Cause`'s value, None when enabled; :meth:`Why.to_records` has its values), its bus
        bandwidth, ratio, algorithm bandwidth and latency (None where disabled)."""
        return tidy_records({
            "collective": self.collective, "algorithm": self.algorithm, "protocol": self.protocol,
            "enabled": self.enabled, "reason": None if self.why is None else self.why.cause.value,
            "busbw_Bps": None if self.bus is None else self.bus.value, "ratio": self.ratio,
            "bandwidth_Bps": self.bandwidth, "latency_s": None if self.latency is None else self.latency.value})


@dataclass(frozen=True, slots=True)
class AlgoTime:
    """NCCL's predicted time of one table cell for given sizes (``ncclTopoGetAlgoTime``).

    Fields that depend on the size are numpy arrays when ``nbytes`` is an array, floats
    otherwise.

    Attributes
    ----------
    tuning : Tuning
    nbytes : float or numpy.ndarray
        [bytes]
    tree_correction : float or numpy.ndarray
        ``treeCorrectionFactor[protocol][log2(nBytes/64)]`` for Tree AllReduce, else 1. [-]
    plateau : float or numpy.ndarray
        Ring plateau latency factor (multi-node Ring Simple AllReduce), else 1. [-]
    bandwidth : float or numpy.ndarray
        ``tuning.bandwidth x tree_correction``. [B/s]
    latency : float or numpy.ndarray
        ``tuning.latency.value x plateau``. [s]
    time : float or numpy.ndarray
        ``latency + nbytes / bandwidth``. [s]
    """

    tuning: Tuning
    nbytes: object
    tree_correction: object
    plateau: object
    bandwidth: object
    latency: object
    time: object

    def to_records(self) -> list:
        """One row per size: the cell, ``nbytes``, the tree correction and plateau factors, and
        the bandwidth, latency and time they give."""
        t = self.tuning
        return tidy_records({
            "collective": t.collective, "algorithm": t.algorithm, "protocol": t.protocol,
            "nbytes": self.nbytes, "tree_correction": self.tree_correction, "plateau": self.plateau,
            "bandwidth_Bps": self.bandwidth, "latency_s": self.latency, "time_s": self.time})


@dataclass(frozen=True, slots=True)
class Selection:
    """NCCL's choice of (algorithm, protocol) per size, and the predicted performance.

    Size-dependent fields are numpy arrays when ``nbytes`` is an array, scalars otherwise.

    Attributes
    ----------
    collective : str
    nranks : int
    nbytes : float or numpy.ndarray
        [bytes]
    algorithm, protocol : str or numpy.ndarray of str
        The winner per size.
    time : float or numpy.ndarray
        Predicted time of one operation. [s]
    bandwidth : float or numpy.ndarray
        The winner's NCCL algorithm bandwidth after the tree correction. [B/s]
    latency : float or numpy.ndarray
        The winner's latency after the plateau rule. [s]
    bus_bandwidth : float or numpy.ndarray
        The winner's NCCL bus bandwidth (:attr:`BusBandwidth.value`). [B/s]
    candidates : tuple of AlgoTime
        Every enabled candidate considered, in NCCL's index order.
    """

    collective: str
    nranks: int
    nbytes: object
    algorithm: object
    protocol: object
    time: object
    bandwidth: object
    latency: object
    bus_bandwidth: object
    candidates: tuple = field(repr=False)

    def to_records(self) -> list:
        """One row per size: the winner (``algorithm``, ``protocol``) and its time, bandwidth,
        latency and bus bandwidth (the candidates: each one's :meth:`AlgoTime.to_records`)."""
        return tidy_records({
            "collective": self.collective, "nranks": self.nranks, "nbytes": self.nbytes,
            "algorithm": self.algorithm, "protocol": self.protocol, "time_s": self.time,
            "bandwidth_Bps": self.bandwidth, "latency_s": self.latency, "busbw_Bps": self.bus_bandwidth})

    @property
    def algbw(self) -> float | np.ndarray:
        """nccl-tests' algbw of the predicted time, ``nbytes / time`` (:func:`models.engine.nccltests.algbw`). [B/s]"""
        return nccl_tests_algbw(self.nbytes, self.time)

    @property
    def busbw(self) -> float | np.ndarray:
        """nccl-tests' busbw of the predicted time (:func:`models.engine.nccltests.busbw`). [B/s]"""
        return algbw_to_busbw(self.collective, self.algbw, self.nranks)


# ------------------------------------------------------------------------------- the model
def nsteps(collective: str, nranks: int) -> int:
    """Ring steps of a collective: AllReduce ``2(n-1)``, AllGather/ReduceScatter ``n-1``,
    Broadcast/Reduce ``n`` (src/graph/tuning.cc).

    Examples
    --------
    >>> nsteps("all_reduce", 8), nsteps("all_gather", 8), nsteps("broadcast", 8)
    (14, 7, 8)
    """
    _check_collective(collective)
    if collective == "all_reduce":
        return 2 * (nranks - 1)
    if collective in ("all_gather", "reduce_scatter"):
        return nranks - 1
    return nranks


def bus_to_alg_ratio(collective: str, algorithm: str, nranks: int, profile: str | NcclProfile | None = None, *,
                     nnodes: int = 1) -> float:
    """Bus -> algorithm bandwidth ratio NCCL applies before storing a bandwidth.

    Ring: ``nRanks / nsteps``; Tree: the profile's ``tree_alg_ratio``, 0.5 (src/graph/
    tuning.cc). NVLS/NVLSTree AllReduce: 5/6 (v2.19-v2.27), v2.18 NVLSTree ``0.70 nNodes /
    (2 (nNodes - 1))``, ``nRanks / nsteps`` from v2.28. AllGather/ReduceScatter on a non-ring
    algorithm (NVLS, PAT): no conversion (1), the bus bandwidth divides the total bytes.

    Examples
    --------
    >>> bus_to_alg_ratio("all_reduce", "ring", 8)
    0.5714285714285714
    >>> bus_to_alg_ratio("all_reduce", "tree", 8)
    0.5
    """
    algorithm = _check_algorithm(algorithm)
    if algorithm == "ring":
        return nranks / nsteps(collective, nranks)
    _check_collective(collective)
    profile = nccl_profile(profile)
    if algorithm in ("nvls", "nvls_tree", "pat") and collective in ("all_gather", "reduce_scatter"):
        return 1.0
    if algorithm in ("nvls", "nvls_tree"):
        # A release without NVLS never enables the cell; its ratio is then moot (5/6).
        rule = profile.behaviour.nvls_ratio or NvlsRatio.FIVE_SIXTHS
        return rule.ratio(algorithm, nnodes, nranks / nsteps(collective, nranks))
    return profile.tree_alg_ratio


def _path_above(profile: NcclProfile, path_type: str, limit: str) -> bool:
    return profile.path_rank(path_type) > profile.path_rank(limit)


def applicability(collective: str, algorithm: str, protocol: str, comm: Communicator,
                  profile: str | NcclProfile | None = None) -> tuple:
    """Whether NCCL enables (algorithm, protocol) for a collective on this communicator.

    Rules (src/graph/tuning.cc, src/enqueue.cc): Broadcast, Reduce, AllGather and
    ReduceScatter run Ring only (PAT/NVLS/CollNet are not modelled); LL128 needs, for the
    reference version, typeInter <= PXB (<= PXN on sm90+), typeIntra <= NVB, one compute
    capability >= 70 across GPUs, and not (sm90 + CUDA 11.8 + Ring AllReduce on 2 ranks);
    v2.12 needs typeInter <= PXB, typeIntra <= NVL and all GPUs sm70 or all sm80. Before
    v2.5.6 there is no LL128, before v2.4 no tree, and v2.4 runs trees only across nodes.

    Parameters
    ----------
    collective, algorithm, protocol : str
    comm : Communicator
    profile : str or NcclProfile, optional
        NCCL version (default :data:`models.engine.nccl.DEFAULT_VERSION`).

    Returns
    -------
    (bool, Why or None)
        Enabled, and why not (None when enabled; :func:`models.present.reasons_text.reason_text`
        words it).

    Examples
    --------
    >>> from models.engine.nccl.tuning import ChannelGraph, Communicator, applicability
    >>> g = ChannelGraph(12, 30e9, "PHB", pattern="balanced_tree")
    >>> applicability("all_reduce", "ring", "LL128", Communicator(8, g, g, 70))
    (False, Why(LL128_TYPE_INTRA, algorithm='ring', path_limit='NVB', path_type='PHB'))
    """
    collective = _check_collective(collective)
    algorithm = _check_algorithm(algorithm)
    protocol = _check_protocol(protocol)
    profile = _bound(comm, profile)
    if algorithm in ("nvls", "nvls_tree", "pat"):
        return _nvls_pat_applicability(collective, algorithm, protocol, comm, profile)
    behaviour = profile.behaviour
    release = profile.version
    if algorithm == "tree" and behaviour.tree is TreeRule.NONE:
        return False, Why(Cause.NO_TREES, release=release)
    if algorithm == "tree" and behaviour.tree is TreeRule.ACROSS_NODES and comm.nnodes < 2:
        return False, Why(Cause.TREES_ACROSS_NODES, release=release)
    if algorithm == "tree" and collective != "all_reduce":
        return False, Why(Cause.RING_ONLY, collective=collective)
    if protocol != "LL128":
        return True, None
    if behaviour.ll128 is Ll128Rule.NONE:
        return False, Why(Cause.NO_LL128, release=release)
    graph = comm.graph(algorithm)
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
    if _path_above(profile, graph.type_intra, profile.ll128_max_type_intra):
        return False, Why(Cause.LL128_TYPE_INTRA, algorithm=algorithm,
                          path_limit=profile.ll128_max_type_intra, path_type=graph.type_intra)
    inter_limit = profile.ll128_max_type_inter
    if profile.ll128_max_type_inter_sm90 is not None and cc_min >= 90:
        inter_limit = profile.ll128_max_type_inter_sm90
    if _path_above(profile, graph.type_inter, inter_limit):
        return False, Why(Cause.LL128_TYPE_INTER, algorithm=algorithm, path_limit=inter_limit,
                          path_type=graph.type_inter)
    if behaviour.ll128 is Ll128Rule.ONE_COMPUTE_CAPABILITY and comm.cuda_11_8 and cc_min >= 90 and algorithm == "ring" \
            and collective == "all_reduce" and comm.nranks == 2:
        return False, Why(Cause.LL128_CUDA_11_8)
    return True, None


_ROW_NAMES = ("Volta", "Ampere", "Hopper", "Blackwell")


def _nvls_pat_applicability(collective, algorithm, protocol, comm, profile) -> tuple:
    """NVLS, NVLSTree and PAT enabling (src/graph/tuning.cc, src/enqueue.cc at the profile's tag):
    ``(enabled, Why or None)``."""
    release = profile.version
    if algorithm == "pat":
        rules = profile.pat
        if rules is None:
            return False, Why(Cause.NO_PAT, release=release)
        if collective not in ("all_gather", "reduce_scatter"):
            return False, Why(Cause.PAT_COLLECTIVE, collective=collective)
        if protocol != "Simple":
            return False, Why(Cause.PAT_PROTOCOL)
        if comm.nnodes != comm.nranks:
            return False, Why(Cause.PAT_RANKS_PER_NODE, count=comm.ppn)
        if comm.compute_capability < rules.min_compute_capability:
            return False, Why(Cause.PAT_COMPUTE_CAPABILITY, compute_capability=comm.compute_capability,
                              limit=rules.min_compute_capability)
        return True, None
    rules = profile.nvls
    present = profile.behaviour.nvls
    if present is NvlsAlgorithms.NONE:
        return False, Why(Cause.NO_NVLS_ALGORITHM, release=release, algorithm=algorithm)
    if algorithm == "nvls_tree" and present is not NvlsAlgorithms.NVLS_AND_TREE:
        return False, Why(Cause.NO_NVLS_TREE, release=release)
    if comm.nvls is None:
        return False, Why(Cause.NO_NVLS_SUPPORT, support=comm.nvls_why)
    if protocol != "Simple":
        return False, Why(Cause.NVLS_PROTOCOL, algorithm=algorithm)
    if algorithm == "nvls_tree" and collective != "all_reduce":
        return False, Why(Cause.NVLS_TREE_COLLECTIVE, collective=collective)
    if collective not in rules.collectives:
        return False, Why(Cause.NVLS_COLLECTIVE, release=release, collective=collective,
                          allowed=tuple(rules.collectives))
    if algorithm == "nvls" and comm.nnodes > 1:
        return False, Why(Cause.NVLS_ACROSS_NODES)
    if algorithm == "nvls_tree" and comm.nnodes == 1:
        return False, Why(Cause.NVLS_TREE_SINGLE_NODE)
    if collective != "all_reduce" and comm.ppn > rules.max_arity:
        return False, Why(Cause.NVLS_ARITY, collective=collective, limit=rules.max_arity, count=comm.ppn)
    if comm.nvls.nchannels < rules.min_tuning_channels:
        return False, Why(Cause.NVLS_CHANNELS, release=release, limit=rules.min_tuning_channels,
                          count=comm.nvls.nchannels)
    return True, None


def _nvls_pat_bus(collective, algorithm, protocol, comm, profile) -> BusBandwidth:
    """NVLS / NVLSTree / PAT bus bandwidth (src/graph/tuning.cc at the profile's tag)."""
    nnodes, ppn = comm.nnodes, comm.ppn
    if algorithm == "pat":
        graph = comm.tree
        use_intra = nnodes <= 2
        bw = graph.bw_intra if use_intra else graph.bw_inter
        raw = graph.nchannels * bw
        factor = profile.require("pat").factor
        step = BandwidthStep("PAT", factor, None, "", raw, raw * factor, False)
        return BusBandwidth(collective, algorithm, protocol, graph.nchannels, bw,
                            "bwIntra" if use_intra else "bwInter", raw, (step,), raw * factor)
    graph = comm.nvls
    rules = profile.require("nvls")
    nch = graph.nchannels
    if rules.efficiency is not None:     # v2.28.3+
        row = profile.compute_capability_index(comm.compute_capability)
        intra = graph.bw_intra * rules.efficiency[row] * (nch - 1) / nch
        intra *= 2 if collective == "all_reduce" else (ppn - 1) / ppn
        inter = graph.bw_inter * (2 if nnodes <= 2 and algorithm == "nvls_tree" else 1)
        name = (f"min(bwIntra x nvlsEfficiency[{row}] x (nCh-1)/nCh x "
                f"{'2' if collective == 'all_reduce' else '(ppn-1)/ppn'}, bwInter"
                f"{' x 2' if inter != graph.bw_inter else ''})")
    elif algorithm == "nvls" and collective == "all_reduce":
        intra, inter, name = graph.bw_intra, graph.bw_inter, "min(bwIntra, bwInter)"
    elif algorithm == "nvls":
        intra, inter = graph.bw_intra * (ppn - 1) / ppn, graph.bw_inter * 0.9
        name = "min(bwIntra x (ppn-1)/ppn, bwInter x 0.9)"
    else:
        intra = graph.bw_intra
        inter = graph.bw_inter if nnodes <= 2 else graph.bw_inter / 2
        name = "min(bwIntra, bwInter)" if nnodes <= 2 else "min(bwIntra, bwInter / 2)"
    bw = min(intra, inter)
    return BusBandwidth(collective, algorithm, protocol, nch, bw, name, nch * bw, (), nch * bw)


def bus_bandwidth(collective: str, algorithm: str, protocol: str, comm: Communicator,
                  profile: str | NcclProfile | None = None) -> BusBandwidth:
    """NCCL's bus bandwidth for one (collective, algorithm, protocol), step by step.

    ``busBw = nChannels x bw`` (bw = bwIntra on <= 2 nodes, else bwInter), then, in NCCL's
    order (src/graph/tuning.cc v2.27.7-1):

    - Ring LL: ``min(busBw x 0.5, llMaxBw)``;
    - Ring LL128: ``min(busBw x 0.92, nChannels x perChMaxRingLL128Bw)``;
    - Tree (AllReduce): ``min(busBw x 0.92, nChannels x perChMaxTreeBw)``, then
      LL: ``min(busBw / 3.8, llMaxBw)``; LL128: ``min(busBw x (7/9 on one node, else
      120/128), nChannels x perChMaxTreeLL128Bw)``; then x0.85 if the tree graph's pattern
      is ``tree``.

    It does not check :func:`applicability`; :func:`tune` does.

    Parameters
    ----------
    collective, algorithm, protocol : str
    comm : Communicator
    profile : str or NcclProfile, optional

    Returns
    -------
    BusBandwidth

    Raises
    ------
    MissingConstantError
        When the profile lacks a table this needs (e.g. v2.12 and compute capability 90).
    TuningError
        Tree for a collective other than all_reduce.

    Examples
    --------
    >>> from models.engine.nccl.tuning import ChannelGraph, Communicator, bus_bandwidth
    >>> g = ChannelGraph(12, 30e9, "NVL")
    >>> b = bus_bandwidth("all_reduce", "ring", "LL", Communicator(8, g, g, 90))
    >>> b.raw / 1e9, b.value / 1e9, b.bound_by
    (360.0, 141.0, 'llMaxBws[2][0]')
    """
    collective = _check_collective(collective)
    algorithm = _check_algorithm(algorithm)
    protocol = _check_protocol(protocol)
    profile = _bound(comm, profile)
    if algorithm in ("nvls", "nvls_tree", "pat"):
        if comm.graph(algorithm) is None:
            raise TuningError(f"{algorithm} needs the communicator's NVLS graph: {comm.nvls_why!r}",
                              whys=(comm.nvls_why,))
        return _nvls_pat_bus(collective, algorithm, protocol, comm, profile)
    graph = comm.graph(algorithm)
    nnodes = comm.nnodes
    use_intra = nnodes <= 2
    bw = graph.bw_intra if use_intra else graph.bw_inter
    nch = graph.nchannels
    raw = nch * bw
    col = min(nnodes, 3) - 1

    def cc_row():
        """compCapIndex, looked up only when a table needs it (an old profile may lack it)."""
        return profile.compute_capability_index(comm.compute_capability)

    def ll_row():
        """index1 of llMaxBws: compCapIndex on one node, else the CPU vendor row."""
        return cc_row() if nnodes == 1 else (1 if comm.cpu_vendor == "amd" else 0)

    steps = []
    value = raw

    def step(name, factor, cap=None, cap_name=""):
        nonlocal value
        scaled = value * factor
        after = scaled if cap is None else min(scaled, cap)
        if cap is None:
            cap_name = ""
        steps.append(BandwidthStep(name, factor, cap, cap_name, value, after,
                                   cap is not None and cap < scaled))
        value = after

    def ll_cap():
        """llMaxBws (v2.8+) or no cap (v2.5, v2.7)."""
        if profile.behaviour.ll_cap is LlCap.NONE:
            return None, ""
        row = ll_row()
        return profile.ll_max_bw(row, nnodes), f"llMaxBws[{row}][{col}]"

    def ll128_cap(table_name, lookup):
        """The LL128 cap: per row and channel (v2.8+), or per collective (v2.5 totals, v2.7
        per channel)."""
        rule = profile.behaviour.ll128_cap
        if rule is not Ll128Cap.PER_CHANNEL_PER_ROW:
            value = profile.ll128_per_collective[NCCL_COLLECTIVES.index(collective)]
            if rule is Ll128Cap.TOTAL_PER_COLLECTIVE:
                return value, f"ll128MaxBw[{collective}]"
            return nch * value, f"nChannels x ll128MaxBwPerCh[{collective}]"
        row = cc_row()
        return nch * lookup(row, nnodes), f"nChannels x {table_name}[{row}][{col}]"

    if algorithm == "ring":
        if protocol == "LL":
            reducing = nnodes > 1 or collective in ("all_reduce", "reduce")
            factor = profile.ring_ll_factor if reducing else profile.ring_ll_factor_single_node_copy
            step("Ring LL", factor, *ll_cap())
        elif protocol == "LL128":
            factor = profile.ring_ll128_factor_ppn1 if comm.ppn < 2 else profile.ring_ll128_factor
            step("Ring LL128", factor, *ll128_cap("perChMaxRingLL128Bws",
                                                  profile.per_ch_max_ring_ll128_bw))
    else:
        if collective != "all_reduce":
            raise TuningError(f"NCCL runs {collective} with Ring only: expected algorithm 'ring'")
        tree_cap = profile.behaviour.tree_cap
        if tree_cap is not TreeCap.PER_CHANNEL:
            # v2.5: min(busBw x .9, nNodes > 1 ? 70 : 90); v2.7: maxTreeBw, 110 on <= 2 nodes
            # and 80 above (130 / 105 for LL128 on sm80).
            sm80_ll128 = protocol == "LL128" and comm.compute_capability >= 80
            cap = profile.tree_total_caps[int(sm80_ll128)][tree_cap.multi_node_column(nnodes)]
            step("Tree AllReduce", profile.tree_factor, cap, "maxTreeBw")
        else:
            row = cc_row()
            step("Tree AllReduce", profile.tree_factor, nch * profile.per_ch_max_tree_bw(row, nnodes),
                 f"nChannels x perChMaxTreeBws[{row}][{col}]")
        if protocol == "LL":
            step("Tree LL", 1.0 / profile.tree_ll_divisor, *ll_cap())
        elif protocol == "LL128":
            factor = profile.tree_ll128_factor_single_node if nnodes == 1 \
                else profile.tree_ll128_factor_multi_node
            step("Tree LL128", factor, *ll128_cap("perChMaxTreeLL128Bws",
                                                  profile.per_ch_max_tree_ll128_bw))
        if graph.pattern == "tree":
            step("Tree pattern TREE", profile.require("tree_pattern_factor"))
    if profile.sm80_bus_cap is not None and comm.compute_capability >= 80:
        step("sm80 bus cap", 1.0, profile.sm80_bus_cap, "235 GB/s (sm80)")
    return BusBandwidth(collective, algorithm, protocol, nch, bw,
                        "bwIntra" if use_intra else "bwInter", raw, tuple(steps), value)


def _log2i(n: int) -> int:
    """floor(log2(n)) for n >= 1, -1 for 0 (NCCL's log2i)."""
    return int(n).bit_length() - 1


def latency(collective: str, algorithm: str, protocol: str, comm: Communicator,
            profile: str | NcclProfile | None = None) -> Latency:
    """NCCL's latency for one (collective, algorithm, protocol), term by term.

    v2.27.7-1 (src/graph/tuning.cc), with ``intraLat = hwLat[intraHw][a][p]`` and
    ``interLat = (ppn == 1 ? hwLat[NET][Tree][p] : hwLat[NET][a][p]) + latencyInter (x2
    for Simple)``:

    - Ring Broadcast/Reduce: ``base + hwLat[hw][Ring][p]`` if the channels are the same,
      else ``base + nsteps x (Simple ? hwLat[hw][Tree][Simple] : hwLat[hw][Ring][p])``,
      where hw is NET on several nodes;
    - Ring, other collectives: ``base + (nsteps - nInterSteps) x max(intraLat,
      netOverhead) + nInterSteps x interLat``;
    - Tree AllReduce: ``base + 2 x ((ppn - 1) x intraLat + log2i(nNodes) x interLat)``.

    Parameters
    ----------
    collective, algorithm, protocol : str
    comm : Communicator
    profile : str or NcclProfile, optional

    Returns
    -------
    Latency

    Examples
    --------
    >>> from models.engine.nccl.tuning import ChannelGraph, Communicator, latency
    >>> g = ChannelGraph(12, 30e9, "NVL")
    >>> lat = latency("all_reduce", "ring", "Simple", Communicator(8, g, g, 90))
    >>> round(lat.base * 1e6, 3), [(t.count, round(t.per_step * 1e6, 3)) for t in lat.terms]
    (8.4, [(14, 3.4), (0, 14.0)])
    >>> round(lat.value * 1e6, 3)
    56.0
    """
    collective = _check_collective(collective)
    algorithm = _check_algorithm(algorithm)
    protocol = _check_protocol(protocol)
    profile = _bound(comm, profile)
    graph = comm.graph(algorithm)
    if graph is None:
        raise TuningError(f"{algorithm} needs the communicator's NVLS graph: {comm.nvls_why!r}",
                          whys=(comm.nvls_why,))
    nnodes, ppn = comm.nnodes, comm.ppn
    intra_hw = graph.hardware
    hw = intra_hw if nnodes == 1 else "NET"
    base = profile.base_lat(algorithm, protocol)
    intra = profile.hw_lat(intra_hw, algorithm, protocol)
    behaviour = profile.behaviour
    if behaviour.inter_latency is InterLatency.PPN:
        net_algorithm = "tree" if ppn == 1 else algorithm
        inter = profile.hw_lat("NET", net_algorithm, protocol) + graph.latency_inter \
            + (graph.latency_inter if protocol == "Simple" else 0.0)
        inter_name = f"hwLat[NET][{net_algorithm}][{protocol}] + latencyInter"
    else:
        inter = graph.latency_inter if graph.latency_inter else \
            profile.hw_lat("NET", algorithm, protocol)
        inter_name = "latencyInter" if graph.latency_inter else \
            f"hwLat[NET][{algorithm}][{protocol}]"
    steps_total = nsteps(collective, comm.nranks)
    overhead = 0.0
    if algorithm == "pat":
        # 8 + log2i(nNodes) x interLat / 3.5 + nRanks x 2.8 µs (v2.23-v2.27 tuning.cc).
        rules = profile.require("pat")
        terms = (LatencyTerm(f"log2i(nNodes) x {inter_name} / {rules.inter_divisor:g}",
                             _log2i(nnodes), inter / rules.inter_divisor),
                 LatencyTerm("nRanks x PAT per-rank latency", comm.nranks, rules.per_rank_latency))
    elif algorithm in ("nvls", "nvls_tree") and behaviour.nvls_latency is NvlsLatency.V2_18:
        count = (1 if nnodes > 1 else 0) if algorithm == "nvls" else 2 * (nnodes - 1)
        terms = (LatencyTerm(f"{'' if algorithm == 'nvls' else '2 x (nNodes - 1) x '}"
                             f"hwLat[NET][{algorithm}][{protocol}]", count,
                             profile.hw_lat("NET", algorithm, protocol)),)
    elif algorithm == "nvls":
        terms = (LatencyTerm(f"hwLat[{intra_hw}][nvls][{protocol}]", 1, intra),
                 LatencyTerm(f"{inter_name} (across nodes)", 1 if nnodes > 1 else 0, inter))
    elif algorithm == "nvls_tree":
        terms = (LatencyTerm(f"hwLat[{intra_hw}][nvls_tree][{protocol}]", 1, intra),
                 LatencyTerm(f"2 x log2i(nNodes) x {inter_name}", 2 * _log2i(nnodes), inter))
    elif algorithm == "ring" and behaviour.ring_latency is RingLatency.NSTEPS_HW:
        # v2.5: lat += nsteps x hwLat[hw][Ring][p], hw = NET on several nodes (v2.5.7-1 tuning.cc).
        terms = (LatencyTerm(f"nsteps x hwLat[{hw}][ring][{protocol}]", steps_total,
                             profile.hw_lat(hw, "ring", protocol)),)
    elif algorithm == "ring" and collective in ("broadcast", "reduce"):
        if graph.same_channels:
            terms = (LatencyTerm(f"one step x hwLat[{hw}][ring][{protocol}] (same channels)", 1,
                                 profile.hw_lat(hw, "ring", protocol)),)
        else:
            per_algorithm = "tree" if protocol == "Simple" else "ring"
            terms = (LatencyTerm(f"nsteps x hwLat[{hw}][{per_algorithm}][{protocol}]", steps_total,
                                 profile.hw_lat(hw, per_algorithm, protocol)),)
    elif algorithm == "ring":
        if nnodes > 1:
            vendor = {"intel": 0, "amd": 1}.get(comm.cpu_vendor, 2)
            overhead = profile.net_overhead[vendor] * (
                profile.net_overhead_simple_factor if protocol == "Simple" else 1)
            if protocol == "LL":
                intra *= profile.ring_ll_multi_node_intra_factor
        intra_step = max(intra, overhead)
        if nnodes == 1:
            inter_steps = 0
        elif collective == "all_reduce":
            inter_steps = 2 * (nnodes - profile.allreduce_inter_steps_offset)
        else:
            inter_steps = nnodes - 1
        terms = (LatencyTerm(f"intra-node steps x max(hwLat[{intra_hw}][ring][{protocol}], net "
                             f"overhead)", steps_total - inter_steps, intra_step),
                 LatencyTerm(f"inter-node steps x {inter_name}", inter_steps, inter))
    else:
        terms = (LatencyTerm(f"2 x (ppn - 1) x hwLat[{intra_hw}][tree][{protocol}]", 2 * (ppn - 1),
                             intra),
                 LatencyTerm(f"2 x log2i(nNodes) x {inter_name}", 2 * _log2i(nnodes), inter))
    value = base + sum(term.value for term in terms)
    return Latency(collective, algorithm, protocol, base, terms, value, intra_hw, overhead)


def tune(collective: str, algorithm: str, protocol: str, comm: Communicator,
         profile: str | NcclProfile | None = None) -> Tuning:
    """One cell of NCCL's tuning table: enabled?, bus bandwidth, algorithm bandwidth, latency.

    Parameters
    ----------
    collective, algorithm, protocol : str
    comm : Communicator
    profile : str or NcclProfile, optional

    Returns
    -------
    Tuning

    Examples
    --------
    >>> from models.engine.nccl.tuning import ChannelGraph, Communicator, tune
    >>> g = ChannelGraph(12, 30e9, "NVL", pattern="balanced_tree")
    >>> t = tune("all_reduce", "tree", "LL128", Communicator(8, g, g, 90))
    >>> round(t.bus.value / 1e9, 1), round(t.bandwidth / 1e9, 1), round(t.latency.value * 1e6, 1)
    (257.6, 128.8, 31.5)
    >>> tune("broadcast", "tree", "Simple", Communicator(8, g, g, 90)).why
    Why(RING_ONLY, collective='broadcast')
    """
    collective = _check_collective(collective)
    algorithm = _check_algorithm(algorithm)
    protocol = _check_protocol(protocol)
    profile = _bound(comm, profile)
    enabled, why = applicability(collective, algorithm, protocol, comm)
    ratio = bus_to_alg_ratio(collective, algorithm, comm.nranks, profile, nnodes=comm.nnodes)
    if not enabled:
        return Tuning(collective, algorithm, protocol, False, why, None, ratio, 0.0, None)
    bus = bus_bandwidth(collective, algorithm, protocol, comm)
    lat = latency(collective, algorithm, protocol, comm)
    if bus.value <= 0:
        return Tuning(collective, algorithm, protocol, False, Why(Cause.ZERO_BANDWIDTH), bus, ratio,
                      0.0, lat)
    return Tuning(collective, algorithm, protocol, True, None, bus, ratio, bus.value * ratio, lat)


def tuning_table(collective: str, comm: Communicator, profile: str | NcclProfile | None = None) -> tuple:
    """Every (algorithm, protocol) cell for a collective, in NCCL's index order.

    Order: (tree, LL), (tree, LL128), (tree, Simple), (ring, LL), (ring, LL128),
    (ring, Simple): Tree=0 before Ring=1, protocols LL=0, LL128=1, Simple=2.

    Returns
    -------
    tuple of Tuning
    """
    _bound(comm, profile)
    return tuple(tune(collective, a, p, comm) for a in ALGORITHMS for p in PROTOCOLS)


def _sizes(nbytes) -> np.ndarray:
    """Sizes as integer bytes through the one size parser (:func:`topo.parse_nbytes`, which
    raises :class:`topo.SizeError`): an int64 array, 0-d for one size."""
    return np.asarray(parse_nbytes(nbytes))


def _out(array, scalar: bool):
    """A Python float for scalar input, the array otherwise."""
    return float(np.asarray(array)) if scalar else array


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
        if not _is_int(value) or value < 1:
            raise TuningError(f"{name} must be an integer >= 1, received {value!r}")
    return min(profile.require("max_channels"), 2 * min(ring_nchannels, tree_nchannels))


def algo_time(tuning: Tuning, nbytes: npt.ArrayLike, comm: Communicator,
              profile: str | NcclProfile | None = None) -> AlgoTime:
    """NCCL's predicted time of one table cell for sizes ``nbytes`` (``ncclTopoGetAlgoTime``).

    ``time = lat + nBytes / bw`` with (src/graph/tuning.cc, src/enqueue.cc):

    - Tree AllReduce: ``bw x treeCorrectionFactor[p][log2i(nBytes >> 6)]`` for
      0 <= log2i < 23 (no correction below 64 B or from 512 MiB on);
    - Ring Simple AllReduce on several nodes: ``lat x (1.9 if minCompCap < 80 else 1.4)``
      when ``nBytes / (comm->nChannels x nRanks) >= 64`` ("plateau effect of ring").

    Parameters
    ----------
    tuning : Tuning
        An enabled cell from :func:`tune`.
    nbytes : float or array_like
        NCCL's nBytes (:mod:`models.engine.nccltests` ``S``). [bytes]
    comm : Communicator
        The communicator ``tuning`` was computed for.
    profile : str or NcclProfile, optional

    Returns
    -------
    AlgoTime

    Raises
    ------
    NoAlgorithmError
        For a disabled cell.

    Examples
    --------
    >>> from models.engine.nccl.tuning import ChannelGraph, Communicator, tune, algo_time
    >>> g = ChannelGraph(12, 30e9, "NVL", pattern="balanced_tree")
    >>> comm = Communicator(8, g, g, 90)
    >>> t = algo_time(tune("all_reduce", "tree", "LL128", comm), [2**20, 2**24], comm)
    >>> t.tree_correction
    array([0.6, 0.9])
    """
    profile = _bound(comm, profile)
    if not tuning.enabled:
        raise NoAlgorithmError(f"{tuning.algorithm}/{tuning.protocol} is disabled for "
                               f"{tuning.collective}: {tuning.why!r}", whys=(tuning.why,))
    return _algo_time(tuning, _sizes(nbytes), comm, profile)


def _algo_time(tuning, size, comm, profile) -> AlgoTime:
    """:func:`algo_time` of an enabled cell for sizes already read (an int64 array from
    :func:`_sizes`): the sizes are parsed once, where a caller hands them to this module."""
    scalar = size.ndim == 0
    correction = np.ones(size.shape)
    if tuning.algorithm == "tree" and tuning.collective == "all_reduce":
        table = np.asarray(profile.require("tree_correction_factor")[
            PROTOCOLS.index(tuning.protocol)])
        chunks = np.floor(size / 64.0)               # nBytes >> 6
        log_size = np.where(chunks >= 1, np.frexp(np.maximum(chunks, 1.0))[1] - 1, -1)
        inside = (log_size >= 0) & (log_size < len(table))
        correction = np.where(inside, table[np.clip(log_size, 0, len(table) - 1)], 1.0)
    plateau = np.ones(size.shape)
    if tuning.algorithm == "ring" and tuning.protocol == "Simple" and comm.nnodes > 1 \
            and tuning.collective == "all_reduce":
        channels = comm.nchannels if comm.nchannels is not None else \
            comm_channels(comm.ring.nchannels, comm.tree.nchannels, profile)
        below80, from80 = profile.require("ring_plateau_factor")
        factor = below80 if comm.compute_capability < 80 else from80
        plateau = np.where(np.floor(size / (channels * comm.nranks))
                           >= profile.ring_plateau_min_bytes, factor, 1.0)
    bandwidth = tuning.bandwidth * correction
    lat = tuning.latency.value * plateau
    with np.errstate(over="ignore"):  # a link slowed past any figure: inf loses the selection
        time = lat + size / bandwidth
    return AlgoTime(tuning, _out(size, scalar), _out(correction, scalar), _out(plateau, scalar),
                    _out(bandwidth, scalar), _out(lat, scalar), _out(time, scalar))


def ll_threshold(comm: Communicator) -> float:
    """NCCL 2.0-2.4: the largest size run with LL (``ncclGetCollResource``, common_coll.h).

    ``nRanks x nRings x min(ll_max_threads, nThreads) x threadThreshold``, with
    ``threadThreshold`` 64 on compute capability 7+ and 32 below (v2.3.7; 32 for all in
    v2.3.5), x2 across nodes (NVIDIA/nccl v2.3.7-1 src/include/common_coll.h,
    ``ncclThreadThreshold``). [bytes]

    Examples
    --------
    >>> from models.engine.nccl.tuning import ChannelGraph, Communicator, ll_threshold
    >>> g = ChannelGraph(12, 4.5e9, "NVL", nthreads=128)
    >>> ll_threshold(Communicator(4, g, g, 60, profile="2.3.7"))    # 4 x 12 x 128 x 32
    196608
    """
    legacy = comm.profile.legacy
    if legacy is None:
        raise TuningError(f"NCCL {comm.profile.version} chooses protocols with its tuning model: "
                          f"expected a profile before 2.5 for a size threshold")
    threads = comm.ring.nthreads if comm.ring.nthreads is not None else legacy.default_threads
    volta, pascal = legacy.thread_threshold
    threshold = (volta if comm.compute_capability >= 70 else pascal) * (
        legacy.multi_node_threshold_factor if comm.nnodes > 1 else 1)
    return comm.nranks * comm.ring.nchannels * min(legacy.ll_max_threads, threads) * threshold


def tree_threshold(comm: Communicator) -> float:
    """NCCL 2.4: AllReduce runs the tree below this size (``ncclTreeThreshold``, src/init.cc).

    0 on one node. Otherwise, with ``ringbw = 5000 x nChannels`` MB/s on NVLink (5000
    without), ``treebw = ringbw x 3/4`` (x2 on 2 nodes) on NVLink or ``x 2/3``, ``ringlat =
    6 (nRanks - 1)`` µs and ``treelat = 15 log2(nNodes) + 4 (nRanks/nNodes - 1)`` µs:
    ``ringbw x treebw / (ringbw - treebw) x (ringlat - treelat)`` (NVIDIA/nccl v2.4.8-1).
    [U] When ``treebw >= ringbw`` the formula has no crossing: the tree is taken at every
    size if its latency is lower, else never. [bytes]
    """
    if comm.nnodes < 2:
        return 0.0
    nvlink = comm.ring.type_intra == "NVL"
    ringbw = 5000.0 * comm.ring.nchannels if nvlink else 5000.0           # [MB/s]
    treebw = ringbw * 3 / 4 * (2 if comm.nnodes == 2 else 1) if nvlink else ringbw * 2 / 3
    ringlat = 6.0 * (comm.nranks - 1)                                      # [µs]
    treelat = 15.0 * _log2i(comm.nnodes) + 4.0 * (comm.nranks // comm.nnodes - 1)
    if treebw >= ringbw:
        return math.inf if treelat < ringlat else 0.0
    return max(0.0, ringbw * treebw / (ringbw - treebw) * (ringlat - treelat))   # MB/s x µs = B


def _legacy_choice(collective, sizes, comm, candidates) -> np.ndarray:
    """Index into ``candidates`` of what NCCL 2.0-2.4 runs per size (threshold rules)."""
    keys = [(c.tuning.algorithm, c.tuning.protocol) for c in candidates]
    ll_max = ll_threshold(comm)
    tree_max = tree_threshold(comm) if collective == "all_reduce" \
        and comm.profile.behaviour.tree is TreeRule.ACROSS_NODES else 0.0
    choice = np.empty(len(sizes), dtype=int)
    for i, nbytes in enumerate(sizes):
        wanted = ("tree" if nbytes < tree_max else "ring", "LL" if nbytes <= ll_max else "Simple")
        order = [k for k, key in enumerate(keys) if key == wanted] \
            + [k for k, key in enumerate(keys) if key[0] == wanted[0]] \
            + [k for k, key in enumerate(keys) if key[1] == wanted[1]] + list(range(len(keys)))
        choice[i] = order[0]       # a forced algorithm/protocol leaves what is enabled
    return choice


def select_algorithm(collective: str, nbytes: npt.ArrayLike, comm: Communicator, *, algorithm: str | None = None,
                     protocol: str | None = None, profile: str | NcclProfile | None = None) -> Selection:
    """The (algorithm, protocol) NCCL picks per size, and its predicted time.

    Every enabled cell of :func:`tuning_table` (restricted to ``algorithm`` / ``protocol``
    when given) is timed with :func:`algo_time`; the lowest time wins, ties going to the
    lower index (Tree before Ring, LL before LL128 before Simple), as in NCCL's
    ``topoGetAlgoInfo`` (src/enqueue.cc). NCCL 2.0-2.4 had no such model: they choose by
    size thresholds (:func:`ll_threshold`, :func:`tree_threshold`), and the cell they choose is timed.

    Parameters
    ----------
    collective : str
        One of :data:`NCCL_COLLECTIVES`.
    nbytes : float or array_like
        NCCL's nBytes (= nccl-tests' size ``S``). [bytes]
    comm : Communicator
    algorithm : str, optional
        Force ``"ring"`` or ``"tree"``.
    protocol : str, optional
        Force ``"LL"``, ``"LL128"`` or ``"Simple"``.
    profile : str or NcclProfile, optional
        NCCL version (default :data:`models.engine.nccl.DEFAULT_VERSION`).

    Returns
    -------
    Selection

    Raises
    ------
    NoAlgorithmError
        When nothing enabled matches (e.g. ``algorithm="tree"`` for broadcast); the message
        gives NCCL's reasons.
    UnsupportedCollectiveError, UnknownCollectiveError, UnknownAlgorithmError, UnknownProtocolError

    Examples
    --------
    >>> from models.engine.nccl.tuning import ChannelGraph, Communicator, select_algorithm
    >>> g = ChannelGraph(12, 30e9, "NVL", pattern="balanced_tree")
    >>> s = select_algorithm("all_reduce", [8, 2**20, 2**30], Communicator(8, g, g, 90))
    >>> s.algorithm.tolist(), s.protocol.tolist()
    (['ring', 'ring', 'ring'], ['LL', 'LL', 'Simple'])
    >>> select_algorithm("broadcast", 8, Communicator(8, g, g, 90), algorithm="tree")
    Traceback (most recent call last):
    ...
    models.engine.nccl.tuning.NoAlgorithmError: no enabled algorithm/protocol for broadcast matching algorithm='tree', protocol=None: tree/LL: Why(RING_ONLY, collective='broadcast'); tree/LL128: Why(RING_ONLY, collective='broadcast'); tree/Simple: Why(RING_ONLY, collective='broadcast')
    """
    collective = _check_collective(collective)
    forced_algorithm = None if algorithm is None else _check_algorithm(algorithm)
    forced_protocol = None if protocol is None else _check_protocol(protocol)
    profile = _bound(comm, profile)
    size = _sizes(nbytes)
    scalar = size.ndim == 0
    cells = [tune(collective, a, p, comm) for a in ALGORITHMS for p in PROTOCOLS
             if forced_algorithm in (None, a) and forced_protocol in (None, p)]
    enabled = [t for t in cells if t.enabled]
    if not enabled:
        reasons = "; ".join(f"{t.algorithm}/{t.protocol}: {t.why!r}" for t in cells)
        raise NoAlgorithmError(f"no enabled algorithm/protocol for {collective} matching "
                               f"algorithm={forced_algorithm!r}, protocol={forced_protocol!r}: "
                               f"{reasons}", whys=tuple(t.why for t in cells))
    candidates = tuple(_algo_time(t, size, comm, profile) for t in enabled)
    times = np.stack([np.atleast_1d(c.time) for c in candidates])
    if profile.behaviour.selection is AlgorithmSelection.SIZE_THRESHOLDS:
        best = _legacy_choice(collective, np.atleast_1d(size), comm, candidates)
    else:
        best = np.argmin(times, axis=0)    # first minimum: ties go to the lower NCCL index
    pick = best.reshape(size.shape)

    def take(values):
        stacked = np.stack([np.broadcast_to(np.atleast_1d(v), np.atleast_1d(size).shape)
                            for v in values])
        return np.take_along_axis(stacked, best[None, :], axis=0)[0].reshape(size.shape)

    algorithms = np.array([c.tuning.algorithm for c in candidates])[pick]
    protocols = np.array([c.tuning.protocol for c in candidates])[pick]
    time = take([c.time for c in candidates])
    bandwidth = take([c.bandwidth for c in candidates])
    lat = take([c.latency for c in candidates])
    bus = take([c.tuning.bus.value for c in candidates])
    if scalar:
        return Selection(collective, comm.nranks, float(size), str(algorithms), str(protocols),
                         float(time), float(bandwidth), float(lat), float(bus), candidates)
    return Selection(collective, comm.nranks, size, algorithms, protocols, time, bandwidth, lat,
                     bus, candidates)


def nvls_choice(collective: str, nbytes: npt.ArrayLike, comm: Communicator, *,
                profile: str | NcclProfile | None = None) -> NvlsChoice:
    """Whether NCCL runs NVLS (or NVLSTree) for a collective of ``nbytes``, and why.

    For an array of sizes the largest is explained. The answer holds the first reason NCCL
    has not to (:attr:`NvlsChoice.why`: no NVLS in the release, no NVLS support on the fabric
    (:attr:`Communicator.nvls_why`), the algorithm disabled for this collective or node count)
    or, when it is enabled, its graph, bus bandwidth, latency and time against the winner's
    (:func:`select_algorithm`). :func:`models.present.reasons_text.nvls_choice_text` words it.

    Returns
    -------
    NvlsChoice

    Examples
    --------
    >>> from models.engine.nccl.tuning import ChannelGraph, Communicator, nvls_choice
    >>> g = ChannelGraph(12, 30e9, "NVL", pattern="balanced_tree")
    >>> nvls = ChannelGraph(8, 40e9, "NVL", bw_inter=60e9, pattern="nvls", same_channels=False)
    >>> c = nvls_choice("all_reduce", 2**30, Communicator(8, g, g, 90, nvls=nvls))
    >>> c.algorithm, c.chosen, c.nchannels, round(c.busbw / 1e9, 1), c.winner_algorithm
    ('nvls', True, 8, 320.0, 'nvls')
    >>> nvls_choice("all_reduce", 2**30, Communicator(8, g, g, 90)).why
    Why(NO_NVLS_SUPPORT, support=Why(NO_NVLS_GRAPH))
    """
    collective = _check_collective(collective)
    _bound(comm, profile)
    size = int(np.max(_sizes(nbytes)))
    algorithm = "nvls" if comm.nnodes == 1 else "nvls_tree"
    enabled, why = applicability(collective, algorithm, "Simple", comm)
    if not enabled:
        return NvlsChoice(collective, algorithm, size, why=why)
    cell = algo_time(tune(collective, algorithm, "Simple", comm), size, comm)
    try:
        selection = select_algorithm(collective, size, comm)
    except MissingConstantError as error:
        return NvlsChoice(collective, algorithm, size, error=str(error))
    return NvlsChoice(collective, algorithm, size, chosen=selection.algorithm == algorithm,
                      nchannels=comm.nvls.nchannels, bw_intra=comm.nvls.bw_intra,
                      bw_inter=comm.nvls.bw_inter, busbw=cell.tuning.bus.value,
                      latency=float(cell.latency), time=float(cell.time),
                      winner_algorithm=str(selection.algorithm), winner_protocol=str(selection.protocol),
                      winner_time=float(selection.time))
