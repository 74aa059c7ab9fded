"""NCCL's tuning model: bus bandwidth, latency, time, and the choice of algorithm and protocol.

This reimplements, from NVIDIA/nccl v2.27.7-1 (and the tags of older profiles), what ``ncclTopoTuneModel`` and
``ncclTopoGetAlgoTime`` (src/graph/tuning.cc) and ``topoGetAlgoInfo`` (src/enqueue.cc)
compute, for the Ring, Tree, NVLS, NVLSTree and PAT algorithms and the LL, LL128 and Simple protocols. It does
not look at a fabric: the channel search produces, per algorithm, a :class:`ChannelGraph`
(NCCL's ``ncclTopoGraph`` result: channel count, per-channel bandwidth, path types), the
caller bundles the two graphs with the rank counts into a :class:`Communicator`
(:mod:`models.engine.nccl.communicator`), and the functions here do the rest. Each algorithm's
rules live in its object (:mod:`models.engine.nccl.algorithms`, one module per algorithm); the
functions here take an algorithm's object or its name, check the inputs, delegate to it, and
choose among the algorithms they are given (``algorithms=``, NCCL's by default).

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
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from topo.units import parse_nbytes

from ..nccltests import NCCL_COLLECTIVES, algbw as nccl_tests_algbw, algbw_to_busbw
from ..results import tidy_records
from .algorithms.base import Algorithm
from .algorithms.catalog import ALGORITHMS, algorithm_set, resolve
from .algorithms.nvls import NVLS
from .algorithms.nvls_tree import NVLS_TREE
from .algorithms.ring import RING
from .algorithms.tree import TREE
from .communicator import (CPU_VENDORS, PATTERNS, BandwidthStep, BusBandwidth, ChannelGraph, Communicator,
                           Latency, LatencyTerm, TuningError, UnknownAlgorithmError, UnknownProtocolError,
                           UnsupportedCollectiveError, check_collective as _check_collective,
                           check_protocol as _check_protocol, comm_channels, log2i, nsteps)
from .profiles import PROTOCOLS, MissingConstantError, NcclProfile, nccl_profile
from .releases import AlgorithmSelection, TreeRule
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


class NoAlgorithmError(TuningError):
    """No enabled (algorithm, protocol) matches the request."""


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


def bus_to_alg_ratio(collective: str, algorithm: str | Algorithm, nranks: int, profile: str | NcclProfile | None = None, *,
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
    algorithm = resolve(algorithm)
    collective = _check_collective(collective, (algorithm,))
    return algorithm.bus_to_alg_ratio(collective, nranks, nccl_profile(profile), nnodes)


def applicability(collective: str, algorithm: str | Algorithm, protocol: str, comm: Communicator,
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
    algorithm = resolve(algorithm)
    collective = _check_collective(collective, (algorithm,))
    protocol = _check_protocol(protocol)
    _bound(comm, profile)
    return algorithm.applies(collective, protocol, comm)



def bus_bandwidth(collective: str, algorithm: str | Algorithm, protocol: str, comm: Communicator,
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
    algorithm = resolve(algorithm)
    collective = _check_collective(collective, (algorithm,))
    protocol = _check_protocol(protocol)
    _bound(comm, profile)
    _graph(algorithm, comm)
    return algorithm.bus_bandwidth(collective, protocol, comm)


def _graph(algorithm, comm) -> ChannelGraph:
    """The algorithm's channel graph; TuningError when the communicator has none (no NVLS)."""
    graph = algorithm.graph(comm)
    if graph is None:
        raise TuningError(f"{algorithm.name} needs the communicator's NVLS graph: {comm.nvls_why!r}",
                          whys=(comm.nvls_why,))
    return graph


def latency(collective: str, algorithm: str | Algorithm, protocol: str, comm: Communicator,
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
    algorithm = resolve(algorithm)
    collective = _check_collective(collective, (algorithm,))
    protocol = _check_protocol(protocol)
    _bound(comm, profile)
    _graph(algorithm, comm)
    return algorithm.latency(collective, protocol, comm)


def tune(collective: str, algorithm: str | Algorithm, protocol: str, comm: Communicator,
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
    algorithm = resolve(algorithm)
    collective = _check_collective(collective, (algorithm,))
    protocol = _check_protocol(protocol)
    _bound(comm, profile)
    return _tune(collective, algorithm, protocol, comm)


def _tune(collective, algorithm, protocol, comm) -> Tuning:
    """:func:`tune` of an algorithm object, the inputs checked."""
    enabled, why = algorithm.applies(collective, protocol, comm)
    if collective in NCCL_COLLECTIVES or collective in algorithm.collectives:
        ratio = algorithm.bus_to_alg_ratio(collective, comm.nranks, comm.profile, comm.nnodes)
    else:  # a collective another algorithm of the set runs (alltoall): none for this one
        ratio = 0.0
    if not enabled:
        return Tuning(collective, algorithm.name, protocol, False, why, None, ratio, 0.0, None)
    _graph(algorithm, comm)
    bus = algorithm.bus_bandwidth(collective, protocol, comm)
    lat = algorithm.latency(collective, protocol, comm)
    if bus.value <= 0:
        return Tuning(collective, algorithm.name, protocol, False, Why(Cause.ZERO_BANDWIDTH), bus, ratio,
                      0.0, lat)
    return Tuning(collective, algorithm.name, protocol, True, None, bus, ratio, bus.value * ratio, lat)


def tuning_table(collective: str, comm: Communicator, profile: str | NcclProfile | None = None, *,
                 algorithms: Sequence[Algorithm] | None = None) -> tuple:
    """Every (algorithm, protocol) cell for a collective, in NCCL's index order.

    Order: (tree, LL), (tree, LL128), (tree, Simple), (ring, LL), (ring, LL128),
    (ring, Simple), then NVLS, NVLSTree and PAT: NCCL's algorithm index (Tree=0 before Ring=1),
    protocols LL=0, LL128=1, Simple=2. ``algorithms``: the algorithms tabulated (NCCL's by default).

    Returns
    -------
    tuple of Tuning
    """
    _bound(comm, profile)
    pool = algorithm_set(algorithms)
    collective = _check_collective(collective, pool)
    return tuple(tune(collective, a, p, comm) for a in pool for p in PROTOCOLS)


def _sizes(nbytes) -> np.ndarray:
    """Sizes as integer bytes through the one size parser (:func:`topo.parse_nbytes`, which
    raises :class:`topo.SizeError`): an int64 array, 0-d for one size."""
    return np.asarray(parse_nbytes(nbytes))


def _out(array, scalar: bool):
    """A Python float for scalar input, the array otherwise."""
    return float(np.asarray(array)) if scalar else array


def algo_time(tuning: Tuning, nbytes: npt.ArrayLike, comm: Communicator,
              profile: str | NcclProfile | None = None, *,
              algorithms: Sequence[Algorithm] | None = None) -> AlgoTime:
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
    algorithms : sequence of Algorithm, optional
        The set whose algorithm ``tuning.algorithm`` names (NCCL's by default; a user's own
        algorithm is found in the set it was tuned with).

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
    return _algo_time(tuning, resolve(tuning.algorithm, algorithm_set(algorithms)), _sizes(nbytes), comm)


def _algo_time(tuning, algorithm, size, comm) -> AlgoTime:
    """:func:`algo_time` of an enabled cell of ``algorithm`` for sizes already read (an int64
    array from :func:`_sizes`): the sizes are parsed once, where a caller hands them to this module."""
    scalar = size.ndim == 0
    correction, plateau = algorithm.time_factors(tuning.collective, tuning.protocol, size, comm)
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
    treelat = 15.0 * log2i(comm.nnodes) + 4.0 * (comm.nranks // comm.nnodes - 1)
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
        wanted = (TREE.name if nbytes < tree_max else RING.name, "LL" if nbytes <= ll_max else "Simple")
        order = [k for k, key in enumerate(keys) if key == wanted] \
            + [k for k, key in enumerate(keys) if key[0] == wanted[0]] \
            + [k for k, key in enumerate(keys) if key[1] == wanted[1]] + list(range(len(keys)))
        choice[i] = order[0]       # a forced algorithm/protocol leaves what is enabled
    return choice


def select_algorithm(collective: str, nbytes: npt.ArrayLike, comm: Communicator, *,
                     algorithm: str | Algorithm | None = None, protocol: str | None = None,
                     profile: str | NcclProfile | None = None,
                     algorithms: Sequence[Algorithm] | None = None) -> Selection:
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
    algorithm : str or Algorithm, optional
        Force one of ``algorithms`` (an object, or its name).
    protocol : str, optional
        Force ``"LL"``, ``"LL128"`` or ``"Simple"``.
    profile : str or NcclProfile, optional
        NCCL version (default :data:`models.engine.nccl.DEFAULT_VERSION`).
    algorithms : sequence of Algorithm, optional
        The algorithms that compete (:mod:`models.engine.nccl.algorithms`; default NCCL's,
        :data:`~models.engine.nccl.algorithms.ALGORITHMS`): a user's own competes with NCCL's.

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
    pool = algorithm_set(algorithms)
    collective = _check_collective(collective, pool)
    forced_algorithm = None if algorithm is None else resolve(algorithm, pool)
    forced_protocol = None if protocol is None else _check_protocol(protocol)
    profile = _bound(comm, profile)
    size = _sizes(nbytes)
    scalar = size.ndim == 0
    chosen = pool if forced_algorithm is None else (forced_algorithm,)
    cells = [(a, _tune(collective, a, p, comm)) for a in chosen for p in PROTOCOLS
             if forced_protocol in (None, p)]
    enabled = [(a, t) for a, t in cells if t.enabled]
    if not enabled:
        shown = chosen[0].name if len(chosen) == 1 else None if chosen is ALGORITHMS else [a.name for a in chosen]
        reasons = "; ".join(f"{t.algorithm}/{t.protocol}: {t.why!r}" for _, t in cells)
        raise NoAlgorithmError(f"no enabled algorithm/protocol for {collective} matching "
                               f"algorithm={shown!r}, protocol={forced_protocol!r}: "
                               f"{reasons}", whys=tuple(t.why for _, t in cells))
    candidates = tuple(_algo_time(t, a, size, comm) for a, t in enabled)
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
                profile: str | NcclProfile | None = None,
                algorithms: Sequence[Algorithm] | None = None) -> NvlsChoice:
    """Whether NCCL runs NVLS (or NVLSTree) for a collective of ``nbytes``, and why.

    For an array of sizes the largest is explained. The answer holds the first reason NCCL
    has not to (:attr:`NvlsChoice.why`: no NVLS in the release, no NVLS support on the fabric
    (:attr:`Communicator.nvls_why`), the algorithm disabled for this collective or node count)
    or, when it is enabled, its graph, bus bandwidth, latency and time against the winner's
    (:func:`select_algorithm` among ``algorithms``, NCCL's by default).
    :func:`models.present.reasons_text.nvls_choice_text` words it.

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
    algorithm = NVLS if comm.nnodes == 1 else NVLS_TREE
    name = algorithm.name
    enabled, why = algorithm.applies(collective, "Simple", comm)
    if not enabled:
        return NvlsChoice(collective, name, size, why=why)
    cell = _algo_time(_tune(collective, algorithm, "Simple", comm), algorithm, _sizes(size), comm)
    try:
        selection = select_algorithm(collective, size, comm, algorithms=algorithms)
    except MissingConstantError as error:
        return NvlsChoice(collective, name, size, error=str(error))
    return NvlsChoice(collective, name, size, chosen=selection.algorithm == name,
                      nchannels=comm.nvls.nchannels, bw_intra=comm.nvls.bw_intra,
                      bw_inter=comm.nvls.bw_inter, busbw=cell.tuning.bus.value,
                      latency=float(cell.latency), time=float(cell.time),
                      winner_algorithm=str(selection.algorithm), winner_protocol=str(selection.protocol),
                      winner_time=float(selection.time))
