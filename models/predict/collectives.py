"""Collective estimates on a fabric: what nccl-tests would measure, and why.

:func:`estimate` answers "what busbw will all_reduce reach on these GPUs at this size?". For
the collectives NCCL's tuning model covers (all_reduce, all_gather, reduce_scatter, broadcast,
reduce) it runs NCCL's channel search on the fabric (:mod:`models.engine.nccl.search`) for the ring and
the tree graph, feeds both to NCCL's tuning model (:mod:`models.engine.nccl.tuning`) and lets it pick the
fastest (algorithm, protocol) per size, as NCCL does unless the caller forces one. Time, algbw
and busbw then follow nccl-tests' definitions (:mod:`models.engine.nccltests`).

alltoall and sendrecv are not collectives for NCCL's tuning model: NCCL runs them as grouped
point-to-point sends, timed here by their per-peer schedule (:mod:`models.predict.alltoall`: the
rounds on NCCL's p2p channels, the channels' batches, the proxy's work per network op, the host's
per task) over the same NCCL paths as concurrent flows (sendrecv: every rank to the next one;
alltoall: every rank to every other), each link shared in proportion to the flows crossing it,
at NCCL's link figures. That part is this project's model, not NCCL's, and is marked so in every
explanation.

A single GPU runs no collective: NCCL copies the buffer on the device, so the time is a read
and a write of it at the GPU's memory bandwidth, and busbw is 0 as nccl-tests prints it.

:func:`pairwise` and :func:`subsets` evaluate every 2-GPU communicator and every k-GPU set.
They compute one representative per symmetry class (the fabric's key of NCCL estimates,
:meth:`models.engine.symmetry.FabricSymmetry.nccl`) and reuse it for the others, so 65,535 DGX-2
subsets take a few dozen searches.

Every function takes a graph or a :class:`models.engine.fabric.PreparedFabric` first: a prepared
fabric keeps NCCL's view, the searches and the symmetry between calls.

Examples
--------
>>> import topo
>>> e = estimate(topo.dgx1v(), "all_reduce", 256 * 2**20)
>>> p = e.point()          # one size: the arrays are 0-d; point() gives Python scalars
>>> p.algorithm, p.protocol, p.nchannels, round(p.busbw / 1e9, 1)
('ring', 'Simple', 6, 120.6)
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

import networkx as nx
import numpy as np

import topo
from topo.errors import DgxTopoError, LimitError, SizeError
from topo.select import GpuIds, parse_gpu_ids
from topo.units import Sizes

from .measure import CalibrationLike, Measured, measured, measurement_model
from ..engine.nccl.channels import channel_graphs
from ..engine.nccl.nvls import NvlsGraph
from ..engine.nccl.search import ChannelSearch
from ..engine.fabric import PreparedFabric, prepare
from ..engine.nccl.profiles import NcclProfile
from ..engine.nccl.reasons import NvlsChoice
from ..engine.nccl.algorithms.base import Algorithm
from ..engine.nccl.algorithms.catalog import ALGORITHMS, algorithm_named, algorithm_set, resolve, serving
from ..engine.nccl.tuning import Selection, nvls_choice, select_algorithm
from ..engine.nccltests import COLLECTIVES, NCCL_COLLECTIVES, algbw, busbw, collective as _collective
from ..engine.results import tidy_records
from ..engine.results import gpu_set
from ..engine.routes import PathType

if TYPE_CHECKING:  # alltoall and sendrecv only: imported where they run
    from .alltoall import P2pSchedule

__all__ = ["CollectiveEstimate", "EstimatePoint", "Estimator", "SubsetResult", "SubsetRanking", "estimate",
           "pairwise", "subsets", "routed_pairs", "SizeError", "LimitError", "COLLECTIVE_NAMES"]

#: Every collective :func:`estimate` knows, in nccl-tests' order.
COLLECTIVE_NAMES = tuple(COLLECTIVES)

#: A ``progress`` argument, for annotations: called as ``progress(done, total)``.
Progress: TypeAlias = "Callable[[int, int], object]"


@dataclass(frozen=True, slots=True)
class EstimatePoint:
    """A :class:`CollectiveEstimate` at one size, as plain Python scalars.

    Attributes
    ----------
    nbytes : int
        [bytes]
    time, latency : float
        [s]
    bandwidth, algbw, busbw : float
        [B/s]
    algorithm, protocol : str
    nchannels : int
    """

    nbytes: int
    time: float
    algorithm: str
    protocol: str
    nchannels: int
    latency: float
    bandwidth: float
    algbw: float
    busbw: float

    def to_records(self) -> list:
        """One tidy row (the columns of :meth:`CollectiveEstimate.to_records` this point has)."""
        return tidy_records({"nbytes": self.nbytes, "time_s": self.time, "algbw_Bps": self.algbw,
                             "busbw_Bps": self.busbw, "algorithm": self.algorithm,
                             "protocol": self.protocol, "nchannels": self.nchannels,
                             "latency_s": self.latency, "bandwidth_Bps": self.bandwidth})


@dataclass(frozen=True, slots=True)
class CollectiveEstimate:
    """A predicted collective: nccl-tests' numbers and the model's working.

    **Arrays with the shape of the sizes.** Every size-dependent field (``nbytes``, ``time``,
    ``algorithm``, ``protocol``, ``nchannels``, ``latency``, ``bandwidth``, and the ``algbw``
    and ``busbw`` properties) is a numpy array with the shape of the ``nbytes`` given to
    :func:`estimate`: 0-d for one size (it formats, compares and converts with ``float()`` /
    ``str()`` like a scalar), 1-d for a list of sizes. Their dtypes are fixed: float64,
    int64 (``nbytes``, ``nchannels``) and str (``algorithm``, ``protocol``), never ``object``.
    :meth:`point` gives one size as plain Python scalars (the largest, by default).

    Attributes
    ----------
    collective : str
    gpus : tuple of int
        GPU ids of the communicator, ascending (ranks in that order).
    nodes : tuple
        Their graph nodes.
    nbytes : numpy.ndarray of int64
        nccl-tests' size ``S`` (total buffer for all_gather / reduce_scatter, per-rank buffer
        for alltoall). [bytes]
    time : numpy.ndarray of float64
        Predicted time of one operation as nccl-tests measures it: NCCL's estimate with the
        measurement model's terms (:mod:`models.predict.measure`: the host's launch cost for
        ``gpus_per_thread`` GPUs, achieved instead of NCCL's nominal link bandwidth). [s]
    algorithm, protocol : numpy.ndarray of str
        What runs (an algorithm's ``name``, :data:`models.engine.nccl.ALGORITHMS` or the caller's
        own, and ``"LL"``/``"LL128"``/``"Simple"`` for NCCL's collectives; ``"p2p"``/``"Simple"`` for alltoall and sendrecv; ``"copy"``/``"-"``
        on one GPU).
    nchannels : numpy.ndarray of int64
        NCCL's ``nChannels`` of the graph that runs (as NCCL logs it in ``Pattern ...,
        nChannels``); for alltoall and sendrecv its ``p2pnChannels`` (``%d p2p channels``); 0 on
        one GPU.
    latency : numpy.ndarray of float64
        The latency term of the time. [s]
    bandwidth : numpy.ndarray of float64
        The bandwidth the size is divided by (NCCL's algorithm bandwidth). [B/s]
    ring, tree : ChannelSearch or None
        The channel searches behind the estimate.
    bottleneck : tuple
        The edges that bind the bandwidth that runs (for the largest size: a summary, shown).
    selection : Selection or None
        NCCL's full tuning table for these sizes (None outside NCCL's tuning model).
    model : str
        Which model produced NCCL's time (``"NCCL 2.27.7 tuning model"``, ...).
    nccl_time : numpy.ndarray of float64
        NCCL's own estimate (its tuning model), what it chooses by; ``time`` is what a
        benchmark measures. [s]
    measurement : models.predict.measure.Measured
        The measurement terms (:func:`models.present.explain.explain` writes them out).
    nvls : NvlsGraph or None
        NCCL's NVLS graph where it has one.
    nvls_choice : NvlsChoice or None
        Whether NCCL runs NVLS (NVLSTree across nodes) at the largest size and why
        (:func:`models.engine.nccl.tuning.nvls_choice`; None outside NCCL's tuning model); its
        words: :func:`models.present.reasons_text.nvls_choice_text`.
    network : tuple of models.predict.network.NetworkLoad
        Across hosts, what the network gives the channels of each pattern that runs (ring,
        tree); NCCL charges only the NICs, the measured ``time`` charges every network edge.
    schedule : models.predict.alltoall.P2pSchedule or None
        alltoall and sendrecv: NCCL's per-peer schedule at the largest size (rounds, channels per
        peer, chunk, protocol, the binding term); None for the others.
    bottlenecks : tuple of (str, tuple)
        Per algorithm that runs at some size, ``(name, edges)``: the edges that bind it (its
        search's, or across hosts the network's where the network binds it); ``bottleneck`` is
        the largest size's. What each size's measured time reads (:mod:`models.predict.measure`),
        so a size's figure does not depend on the other sizes asked with it.
    schedules : tuple of models.predict.alltoall.P2pSchedule
        alltoall and sendrecv: the schedule of every size (flattened); ``schedule`` is the last.

    Examples
    --------
    >>> import topo
    >>> e = estimate(topo.dgx1v(), "all_reduce", [2**10, 2**30])
    >>> e.busbw.shape, e.algorithm.dtype.kind, e.point().protocol, e.point(0).protocol
    ((2,), 'U', 'Simple', 'LL')
    """

    collective: str
    gpus: tuple
    nodes: tuple
    nbytes: np.ndarray
    time: np.ndarray
    algorithm: np.ndarray
    protocol: np.ndarray
    nchannels: np.ndarray
    latency: np.ndarray
    bandwidth: np.ndarray
    ring: ChannelSearch | None
    tree: ChannelSearch | None
    bottleneck: tuple
    selection: Selection | None = field(repr=False)
    model: str = ""
    nccl_time: np.ndarray | None = field(default=None, repr=False)
    measurement: Measured | None = field(default=None, repr=False)
    nvls: NvlsGraph | None = field(default=None, repr=False)
    nvls_choice: NvlsChoice | None = field(default=None, repr=False)
    network: tuple = field(default=(), repr=False)
    algorithms: tuple = field(default=(), repr=False)
    schedule: P2pSchedule | None = field(default=None, repr=False)
    bottlenecks: tuple = field(default=(), repr=False)
    schedules: tuple = field(default=(), repr=False)

    @property
    def nranks(self) -> int:
        """Number of ranks (GPUs)."""
        return len(self.gpus)

    @property
    def algbw(self) -> np.ndarray:
        """nccl-tests' algorithm bandwidth, ``S / time`` (:func:`models.engine.nccltests.algbw`). [B/s]"""
        return np.asarray(algbw(self.nbytes, self.time))

    @property
    def busbw(self) -> np.ndarray:
        """nccl-tests' bus bandwidth, ``algbw x factor(nranks)`` (:func:`models.engine.nccltests.busbw`);
        0 on one GPU, where nccl-tests prints 0 (no data crosses a link, whatever the
        collective's factor). [B/s]"""
        if self.nranks == 1:
            return np.zeros(np.shape(self.nbytes))
        return np.asarray(busbw(self.collective, self.nbytes, self.time, self.nranks))

    @property
    def nccl_busbw(self) -> np.ndarray:
        """busbw of NCCL's own estimate (``nccl_time``), what NCCL's tuner believes. [B/s]"""
        nccl_time = self.time if self.nccl_time is None else self.nccl_time
        if self.nranks == 1:
            return np.zeros(np.shape(self.nbytes))
        return np.asarray(busbw(self.collective, self.nbytes, nccl_time, self.nranks))

    def algorithm_at(self, index: int = -1) -> Algorithm | None:
        """The algorithm object that runs at one size (``index`` into the sizes; the largest by
        default), of the ones the estimate chose among; None for point-to-point and one-GPU copies."""
        return algorithm_named(str(np.atleast_1d(self.algorithm)[index]), self.algorithms)

    def point(self, index: int = -1) -> EstimatePoint:
        """The estimate at one size (``index`` into the sizes; the largest by default), as scalars."""
        def at(values):
            return np.atleast_1d(values)[index].item()
        return EstimatePoint(int(at(self.nbytes)), at(self.time), at(self.algorithm), at(self.protocol),
                             at(self.nchannels), at(self.latency), at(self.bandwidth), at(self.algbw),
                             at(self.busbw))

    @property
    def channels(self) -> tuple:
        """GPU orders of the channels that run (the largest size's algorithm; an NVLS channel
        is its head GPU)."""
        algorithm = self.algorithm_at()
        if algorithm is None:
            return ()
        search = algorithm.search(self)
        if search is None:
            return ()
        if algorithm.multimem:
            return tuple((head,) for head in search.heads)
        return search.channels

    def to_records(self) -> list:
        """Tidy rows, one per size: the collective, its GPUs, and nccl-tests' numbers with what
        NCCL runs (:mod:`models.engine.results` names the columns).

        Examples
        --------
        >>> import topo
        >>> rows = estimate(topo.dgx1v(), "all_reduce", [2**10, 2**30]).to_records()
        >>> rows[1]["nbytes"], rows[1]["algorithm"], round(rows[1]["busbw_Bps"] / 1e9, 1)
        (1073741824, 'ring', 121.9)
        """
        nccl_time = self.time if self.nccl_time is None else self.nccl_time
        return tidy_records({
            "collective": self.collective, "gpus": gpu_set(self.gpus), "nranks": self.nranks,
            "nbytes": np.atleast_1d(self.nbytes), "time_s": np.atleast_1d(self.time),
            "algbw_Bps": np.atleast_1d(self.algbw), "busbw_Bps": np.atleast_1d(self.busbw),
            "algorithm": np.atleast_1d(self.algorithm), "protocol": np.atleast_1d(self.protocol),
            "nchannels": np.atleast_1d(self.nchannels), "latency_s": np.atleast_1d(self.latency),
            "bandwidth_Bps": np.atleast_1d(self.bandwidth),
            "nccl_time_s": np.broadcast_to(np.atleast_1d(nccl_time), np.shape(np.atleast_1d(self.nbytes))),
            "model": self.model})


@dataclass(frozen=True, slots=True)
class SubsetResult:
    """One GPU set of :func:`subsets`.

    Attributes
    ----------
    gpus : tuple of int
    busbw, algbw : float
        [B/s]
    time : float
        [s]
    algorithm, protocol : str
    nchannels : int
    representative : tuple of int
        The GPU set whose search this result reuses (itself unless a symmetry mapped it).
    """

    gpus: tuple
    busbw: float
    algbw: float
    time: float
    algorithm: str
    protocol: str
    nchannels: int
    representative: tuple

    def to_records(self) -> list:
        """One tidy row: the set, its numbers, and the set whose estimate it reuses."""
        return tidy_records({"gpus": gpu_set(self.gpus), "ngpus": len(self.gpus),
                             "busbw_Bps": self.busbw, "algbw_Bps": self.algbw, "time_s": self.time,
                             "algorithm": self.algorithm, "protocol": self.protocol,
                             "nchannels": self.nchannels,
                             "representative": gpu_set(self.representative)})


class SubsetRanking(list):
    """The list of :class:`SubsetResult` that :func:`subsets` returns, best first, with
    :meth:`to_records` (one row per set, in rank order)."""

    def to_records(self) -> list:
        """Tidy rows, one per set in rank order, each with its ``rank`` (1 is the best)."""
        return [{"rank": i + 1, **row} for i, r in enumerate(self) for row in r.to_records()]


def _sizes(nbytes) -> np.ndarray:
    """Sizes as integer bytes through the one size parser (:func:`topo.parse_nbytes`: ints,
    numpy integers, integral floats, ``"64K"``/``"1G"`` strings, lists and 1-d arrays): an
    int64 array, 0-d for one size."""
    return np.asarray(topo.parse_nbytes(nbytes))


def _shaped(value, shape, dtype) -> np.ndarray:
    """``value`` (a scalar or an array of the sizes' shape) as a fresh array of that shape."""
    return np.array(np.broadcast_to(np.asarray(value, dtype=dtype), shape))


#: Longest time an estimate states: 1e300 s. [s] Beyond it (a link slowed a million-billion-fold
#: past any hardware, e.g. a bandwidth of 1e-300 B/s) the time in microseconds leaves the range of
#: a float and would print as ``inf``; such a link is refused instead.
MAX_TIME = 1e300


def _result(collective, ids, nodes, size, time, algorithm, protocol, nchannels, latency, bandwidth,
            ring, tree, bottleneck, selection, model) -> CollectiveEstimate:
    shape = size.shape
    finite = np.isfinite(time) & (np.asarray(time) <= MAX_TIME)
    if not np.all(finite):
        edges = ", ".join(f"{u}-{v}" for u, v in bottleneck[:2]) if bottleneck else "its links"
        raise DgxTopoError(f"{collective} of {int(np.asarray(size).reshape(-1)[~finite.reshape(-1)][0])} B "
                           f"over {edges} takes more than 10^300 s: expected links fast enough to move it "
                           f"within that (a link slowed to a bandwidth past any hardware's)")
    return CollectiveEstimate(
        collective, ids, tuple(nodes), size, _shaped(time, shape, np.float64),
        _shaped(algorithm, shape, str), _shaped(protocol, shape, str),
        _shaped(nchannels, shape, np.int64), _shaped(latency, shape, np.float64),
        _shaped(bandwidth, shape, np.float64), ring, tree, bottleneck, selection, model)


class _Context:
    """One call's view of a prepared fabric: the fabric (its NCCL view ``fabric`` carries the
    release, resolved from ``profile`` by :func:`models.engine.fabric.prepare` only) and how the
    benchmark is run."""

    def __init__(self, fabric, profile=None, gpus_per_thread=1, calibration=None, algorithms=None):
        self.algorithms = algorithm_set(algorithms)
        self.prepared = prepare(fabric, nccl=profile)
        self.fabric = self.prepared.nccl
        self.G = self.prepared.G
        self.gpus_per_thread = gpus_per_thread
        self.measurement = measurement_model(calibration)
        self.ids = self.prepared.ids
        self.gpu_nodes = list(self.ids)  # topo.gpus order: ids are positions in it
        self.name = self.prepared.name

    def nodes(self, gpus) -> list:
        """:func:`topo.select_gpus` without listing G's GPUs again (a send on a large cluster)."""
        if gpus is None:
            return list(self.gpu_nodes)
        ids = parse_gpu_ids(gpus, limit=len(self.gpu_nodes), where=f" on {self.G.graph.get('name', 'this fabric')}")
        return sorted((self.gpu_nodes[i] for i in ids), key=self.ids.__getitem__)


class Estimator:
    """A fabric prepared once for many estimates: ``Estimator(G).estimate(...)`` is
    :func:`estimate` on a :class:`models.engine.fabric.PreparedFabric` with the benchmark
    settings fixed. Given a graph, it prepares it, which freezes it (edit a copy instead).

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    profile, gpus_per_thread, calibration, algorithms : optional
        As for :func:`estimate`, fixed for every estimate of this object.

    Attributes
    ----------
    fabric : PreparedFabric
        The prepared fabric; its NCCL view ``fabric.nccl`` carries the release.

    Examples
    --------
    >>> import topo
    >>> estimator = Estimator(topo.dgx1v())
    >>> [round(float(estimator.estimate("all_reduce", 2**30, gpus).busbw) / 1e9, 1)
    ...  for gpus in ([0, 3], [0, 1], [0, 5])]
    [40.8, 20.4, 6.0]
    """

    def __init__(self, G: nx.DiGraph | PreparedFabric, *, profile: str | NcclProfile | None = None,
                 gpus_per_thread: int = 1, calibration: CalibrationLike = None,
                 algorithms: Sequence[Algorithm] | None = None):
        fabric = G if isinstance(G, PreparedFabric) else PreparedFabric(G, nccl=profile)
        self._context = _Context(fabric, profile, gpus_per_thread, calibration, algorithms)
        self.fabric = fabric

    def estimate(self, collective: str, nbytes: Sizes, gpus: GpuIds = None, *, algorithm: str | Algorithm | None = None,
                 protocol: str | None = None, max_pairs: int | None = None) -> CollectiveEstimate:
        """:func:`estimate` on the prepared fabric."""
        return _estimate(self._context, collective, nbytes, gpus, algorithm, protocol, max_pairs)

    def flow_load(self, collective: str, gpus: Iterable[int]) -> dict:
        """The point-to-point model's flows of ``sendrecv`` or ``alltoall`` on ``gpus`` (GPU
        ids), or of one send (``"send"``, ``gpus = (src, dst)``), per directed edge: the summed
        shares of the flows that cross it, NCCL's PCIe overhead included. :func:`estimate` moves
        every flow at the rate the busiest edge gives, ``NCCL's capacity / load``.

        Examples
        --------
        >>> import topo
        >>> load = Estimator(topo.build("dgxh100")).flow_load("alltoall", range(8))
        >>> load["gpu0", "nvswitch0"]            # 7 flows out of GPU 0, over 4 switches by bandwidth
        1.9444444444444442
        """
        from .alltoall import flow_load

        ctx = self._context
        if collective == "send":
            src, dst = gpus
            if src == dst:
                raise DgxTopoError(f"a send needs two different GPUs, received {list(gpus)}")
            return flow_load(ctx.fabric, ctx.nodes([src]) + ctx.nodes([dst]), [(0, 1)])[0]
        nodes = ctx.nodes(gpus)
        if collective == "alltoall":
            return _alltoall_load(ctx, nodes)[0]
        if collective == "sendrecv":
            return flow_load(ctx.fabric, nodes, [(i, (i + 1) % len(nodes)) for i in range(len(nodes))])[0]
        raise DgxTopoError(f"no point-to-point flows for {collective!r}: expected 'send', 'sendrecv' or 'alltoall'")


def estimate(G: nx.DiGraph | PreparedFabric, collective: str, nbytes: Sizes, gpus: GpuIds = None, *,
             algorithm: str | Algorithm | None = None, protocol: str | None = None,
             profile: str | NcclProfile | None = None, gpus_per_thread: int = 1, calibration: CalibrationLike = None,
             max_pairs: int | None = None, algorithms: Sequence[Algorithm] | None = None) -> CollectiveEstimate:
    """Predict one collective on a set of GPUs, as nccl-tests would report it.

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
        A fabric.
    collective : str
        One of :data:`COLLECTIVE_NAMES`.
    nbytes : int or array_like of int
        nccl-tests' size: the buffer per rank for all_reduce, broadcast, reduce, sendrecv and
        alltoall, the total buffer for all_gather and reduce_scatter. [bytes]
    gpus : iterable of int or str, optional
        GPU ids (``"0-3"``, ``[0, 3, 5]``); every GPU by default. Order does not matter.
    algorithm : str or Algorithm, optional
        Force one algorithm of ``algorithms`` (its object or its name, as ``--algo`` takes it;
        NCCL collectives only, where the release and the fabric have it): the same as
        ``algorithms=`` that one.
    protocol : str, optional
        Force ``"LL"``, ``"LL128"`` or ``"Simple"`` (NCCL collectives only).
    profile : str or NcclProfile, optional
        NCCL release (``"2.3.7"``, ``"2.12"``; default: the reference version, or the prepared
        fabric's, which another release may not contradict).
    gpus_per_thread : int
        GPUs one host thread launches the collective on, nccl-tests' ``-g`` (1: one process
        per GPU, as training frameworks run).
    calibration : models.studies.calibration.Calibration or MeasurementModel, optional
        Measurement constants fitted to the user's machine (:func:`models.calibrate`);
        default: the constants fitted to the shipped DGX-2 runs.
    max_pairs : int, optional
        alltoall and sendrecv: refuse (:class:`topo.LimitError`) before any routing when the
        estimate would route more GPU pairs than this (:func:`routed_pairs`).
    algorithms : sequence of Algorithm, optional
        The algorithms that compete (:mod:`models.engine.nccl.algorithms`; default NCCL's,
        :data:`models.engine.nccl.ALGORITHMS`): the fastest enabled one runs, a tie going to the
        lower NCCL index, so a user's own algorithm competes with NCCL's. One algorithm forces it.
        NCCL runs alltoall and sendrecv as point-to-point sends (this module's model), unless an
        algorithm of the set lists them in its ``collectives``: the ones that do run it instead.

    Returns
    -------
    CollectiveEstimate
        ``time`` is what nccl-tests would measure, ``nccl_time`` NCCL's own estimate.

    Raises
    ------
    SizeError
        For a negative, fractional or non-numeric size.
    models.engine.nccltests.UnknownCollectiveError, topo.GpuSelectionError, models.engine.nccl.tuning.TuningError
        For an unknown collective, bad GPU ids, or an algorithm/protocol NCCL would not run.
    topo.LimitError
        For more routed pairs than ``max_pairs``.
    """
    ctx = _Context(G, profile, gpus_per_thread, calibration, algorithms)
    return _estimate(ctx, collective, nbytes, gpus, algorithm, protocol, max_pairs)


def routed_pairs(G: nx.DiGraph, collective: str, gpus: GpuIds = None) -> int:
    """GPU pairs :func:`estimate` routes one by one for alltoall and sendrecv (0 for the others).

    sendrecv routes one pair per rank. alltoall routes the pairs inside each host one by one
    and groups the rest per GPU and NIC (:func:`_alltoall_load`): ``sum k(k-1)`` over the
    hosts' ``k`` GPUs of the set, plus one per GPU when the set spans hosts. That, not the
    ``n(n-1)`` flows, is the work.

    Examples
    --------
    >>> import topo
    >>> routed_pairs(topo.build("2xdgx1v"), "alltoall"), routed_pairs(topo.dgx1v(), "sendrecv", "0-3")
    (128, 4)
    """
    name = _collective(collective).name
    selected = topo.select_gpus(G, gpus)
    per_host: dict = {}
    for n in selected:
        per_host[G.nodes[n]["host"]] = per_host.get(G.nodes[n]["host"], 0) + 1
    if name == "sendrecv":
        return len(selected)
    if name != "alltoall":
        return 0
    return sum(k * (k - 1) for k in per_host.values()) + (len(selected) if len(per_host) > 1 else 0)


def _estimate(ctx, collective, nbytes, gpus, algorithm=None, protocol=None, max_pairs=None) -> CollectiveEstimate:
    """NCCL's estimate, then what the benchmark measures (:func:`models.predict.measure.measured`)."""
    if max_pairs is not None:
        pairs = routed_pairs(ctx.G, collective, gpus)
        if pairs > max_pairs:
            nranks = len(topo.select_gpus(ctx.G, gpus))
            raise LimitError(f"{collective} of {nranks} GPUs routes {pairs} GPU pairs", keyword="max_pairs",
                             size=pairs, limit=max_pairs)
    e = _nccl_view_estimate(ctx, collective, nbytes, gpus, algorithm, protocol)
    m = measured(e, ctx.fabric, gpus_per_thread=ctx.gpus_per_thread, model=ctx.measurement)
    shape = e.nbytes.shape
    return dataclasses.replace(e, time=_shaped(m.time, shape, np.float64), nccl_time=e.time,
                               measurement=m)


def _nccl_view_estimate(ctx, collective, nbytes, gpus, algorithm=None, protocol=None) -> CollectiveEstimate:
    spec = _collective(collective)
    if algorithm is None and len(ctx.algorithms) == 1:  # a set of one forces it
        algorithm = ctx.algorithms[0]
    forced = getattr(algorithm, "name", algorithm)
    size = _sizes(nbytes)
    nodes = ctx.nodes(gpus)
    ids = tuple(ctx.ids[n] for n in nodes)
    G = ctx.G
    if len(nodes) == 1:
        if forced is not None or protocol is not None:
            raise DgxTopoError(f"one GPU runs no {collective}: NCCL copies on the device, "
                               f"expected no algorithm or protocol, received {forced!r}/{protocol!r}")
        hbm = G.nodes[nodes[0]].get("memory_bandwidth")
        if hbm is None:
            raise DgxTopoError(f"GPU {nodes[0]!r} has no memory_bandwidth: expected it to time a "
                               f"single-GPU {collective} (a device-local copy)")
        time = 2 * size / hbm  # read and write the buffer once
        return _result(spec.name, ids, nodes, size, time, "copy", "-", 0, 0.0, hbm / 2, None, None, (),
                       None, "device-local copy at the GPU's memory bandwidth")
    if spec.name in NCCL_COLLECTIVES:
        pool = ctx.algorithms if algorithm is None else (resolve(algorithm, ctx.algorithms),)
        return _nccl_estimate(ctx, spec.name, size, nodes, ids, pool, protocol)
    # alltoall, sendrecv: an algorithm of the set that runs it (a user's own; NCCL's run none)
    own = ctx.algorithms if algorithm is None else (algorithm,) if not isinstance(algorithm, str) \
        else tuple(a for a in ctx.algorithms if a.name == algorithm.lower())
    runners = serving(spec.name, own)
    if runners:
        return _nccl_estimate(ctx, spec.name, size, nodes, ids, runners, protocol)
    if forced not in (None, "p2p") or protocol not in (None, "Simple"):
        raise DgxTopoError(f"{collective} runs as point-to-point sends: expected no algorithm or "
                           f"protocol, received {forced!r}/{protocol!r}")
    return _p2p_estimate(ctx, spec.name, size, nodes, ids)


def _nccl_estimate(ctx, collective, size, nodes, ids, pool, protocol):
    """NCCL's estimate with the algorithms ``pool`` competing."""
    graphs = channel_graphs(ctx.fabric, nodes)  # the release's rings, trees and NVLS graph
    comm = graphs.communicator
    selection = select_algorithm(collective, size, comm, protocol=protocol, algorithms=pool)
    names = np.asarray(selection.algorithm, dtype=str)
    # sorted(set()), not np.unique: on strings numpy imports numpy.ma for it (15 ms a process)
    ran = {name: algorithm_named(name, pool) for name in sorted(set(names.ravel().tolist()))}
    per_algorithm = {name: ran[name].nchannels(comm) for name in ran}  # once each, not once a size
    nchannels = np.vectorize(per_algorithm.__getitem__, otypes=[np.int64])(names)
    last = ran[names.reshape(-1)[-1]]
    network = ()
    if graphs.ring.nnodes > 1:  # what the network gives the channels NCCL charged only at the NICs
        from .network import network_load  # across hosts only: imported for them

        loads = []
        for name in sorted(ran):
            charged = ran[name].network(graphs)
            if charged is None:
                continue
            load = network_load(graphs.fabric, charged[0], charged[1], graphs.ring.gpus)
            if load is not None:
                loads.append(dataclasses.replace(load, algorithm=str(name)))
        network = tuple(loads)

    def binds(name):  # its search's edges, or the network's where the network binds it
        binding = [n for n in network if n.factor < 1 and n.algorithm == name]
        return binding[0].edges if binding else ran[name].searched(graphs).bottleneck
    bottlenecks = tuple((name, binds(name)) for name in sorted(ran))
    bottleneck = dict(bottlenecks)[last.name]
    e = _result(collective, ids, nodes, size, selection.time, names, selection.protocol,
                nchannels, selection.latency, selection.bandwidth, graphs.ring, graphs.tree, bottleneck,
                selection, f"NCCL {ctx.fabric.profile.version} tuning model")
    # NVLS's choice among NCCL's algorithms and the caller's own (not only a forced one).
    own = {a.name for a in ctx.algorithms}
    contenders = ALGORITHMS if ctx.algorithms is ALGORITHMS else \
        ctx.algorithms + tuple(a for a in ALGORITHMS if a.name not in own)
    choice = nvls_choice(collective, size, comm, algorithms=contenders) if collective in NCCL_COLLECTIVES else None
    return dataclasses.replace(e, nvls=graphs.nvls, nvls_choice=choice, network=network, algorithms=tuple(pool),
                               bottlenecks=bottlenecks)


def _p2p_estimate(ctx, collective, size, nodes, ids):
    """NCCL's per-peer schedule of alltoall or sendrecv (:mod:`models.predict.alltoall`): the
    rounds' latency and the fill as the latency, the size over the larger of the link and the
    channel terms as the bandwidth."""
    from .alltoall import flow_load, p2p_layout

    n = len(nodes)
    system = ctx.fabric
    if collective == "sendrecv":
        load, _ = flow_load(system, nodes, [(i, (i + 1) % n) for i in range(n)])
        share = 1
    else:  # alltoall: every rank sends S/n to every other rank
        load, _ = _alltoall_load(ctx, nodes)
        share = n
    rate, worst = min((system.capacity(*edge) / f, edge) for edge, f in load.items())
    layout = p2p_layout(system, nodes)
    shape = size.shape
    flat = size.reshape(-1)
    latency = np.empty(flat.shape)
    bandwidth = np.empty(flat.shape)
    protocols = []
    schedules = []
    for index, s in enumerate(flat.tolist()):
        per_pair = s / share  # each flow moves S / share at ``rate``
        if collective == "sendrecv":
            pairs = ((i, (i + 1) % n, int(s)) for i in range(n))
        else:
            pairs = [(0, j, int(per_pair)) for j in range(1, n)] + [(j, 0, int(per_pair)) for j in range(1, n)]
        schedule = layout.schedule(pairs, link_time=per_pair / rate, bottleneck=(worst,),
                                   alike=collective != "sendrecv", self_copy=collective != "sendrecv")
        schedules.append(schedule)
        protocols.append(max((r.protocol for r in schedule.rounds), key=("LL", "Simple").index, default="Simple"))
        latency[index] = schedule.latency + schedule.fill
        # the link-bound bandwidth where nothing moves (size 0), else the size over the larger term
        bandwidth[index] = s / schedule.transfer if s > 0 and schedule.transfer > 0 else rate * share
    profile = system.profile
    e = _result(collective, ids, nodes, size, (latency + size.reshape(-1) / bandwidth).reshape(shape), "p2p",
                np.asarray(protocols, dtype=str).reshape(shape), layout.plan.nchannels, latency.reshape(shape), bandwidth.reshape(shape), None, None,
                (worst,), None,
                f"NCCL {profile.version}'s point-to-point schedule: rounds of peers on its p2p channels, "
                f"over its paths (this project's model; NCCL's tuning model does not cover {collective})")
    return dataclasses.replace(e, schedule=schedules[-1], schedules=tuple(schedules))


def _alltoall_load(ctx, nodes) -> tuple:
    """:func:`models.predict.alltoall.flow_load` of every rank to every other, without routing every pair across hosts.

    A route between hosts is three legs (:class:`models.engine.routes.Router`): the source GPU to the
    NIC it sends through, the network from that NIC to the destination's nearest NIC, that NIC
    to the destination GPU. A GPU sends through its nearest NIC to every NIC that NIC reaches;
    to a network that NIC does not reach (another rail of a rail-only fabric) it sends through
    NCCL's PXN proxy, over NVLink to the GPU beside a NIC of that network. So the first leg
    depends on the source and the destination's network only and carries one flow per
    destination behind that network; the last leg depends on the destination only and carries
    one flow per GPU of the other hosts; the network leg depends on the two NICs only and
    carries (GPUs sending through one) x (GPUs behind the other) flows, summed per pair of
    leaves (:func:`_network_load`). Pairs inside a host, or inside one NVLink domain of several
    hosts (the trays of a GB200 NVL72, whose NICs sit behind Grace), are routed one by one: they
    never leave NVLink (:func:`models.predict.alltoall.nvlink_groups`).
    """
    from .alltoall import flow_load, nvlink_groups

    G = ctx.G
    hosts = nvlink_groups(ctx.fabric, nodes)
    load, worst_type = {}, PathType.LOC
    for ranks in hosts.values():
        load, worst = flow_load(ctx.fabric, nodes, [(i, j) for i in ranks for j in ranks if i != j], load)
        worst_type = max(worst_type, worst)
    if len(hosts) == 1:
        return load, worst_type
    router, kind = ctx.fabric.router, G.nodes
    order = sorted(hosts)
    group = {i: key for key, ranks in hosts.items() for i in ranks}
    # Where every GPU receives: its nearest NIC, and the leg from that NIC to it.
    receive: dict = {}  # rank -> (NIC, edges of the last leg)
    for h, host in enumerate(order):
        probe = nodes[hosts[order[(h + 1) % len(order)]][0]]  # a GPU on another host
        for i in hosts[host]:
            back = router.route(probe, nodes[i]).nodes
            last = max(k for k, v in enumerate(back) if kind[v]["kind"] == "nic")
            receive[i] = (back[last], tuple(zip(back[last:], back[last + 1:])))
    recv: dict = {}  # NIC -> GPUs of the set behind it
    nic_host: dict = {}
    by_network: dict = {}  # network -> {host: [ranks behind its NICs]}
    for i, (nic, _) in receive.items():
        recv[nic] = recv.get(nic, 0) + 1
        host = group[i]
        nic_host[nic] = host
        by_network.setdefault(router.network_component(nic), {}).setdefault(host, []).append(i)
    send: dict = {}  # NIC -> GPUs of the set sending through it (to its network)
    for i, (nic, edges) in receive.items():
        host = group[i]
        remote = len(nodes) - len(hosts[host])
        for u, v in edges:
            load[u, v] = load.get((u, v), 0.0) + remote
        for network, members in by_network.items():
            behind = sum(len(r) for h, r in members.items() if h != host)
            if not behind:
                continue
            probe = nodes[next(r[0] for h, r in members.items() if h != host)]
            path = router.route(nodes[i], probe)
            edges = path.edges
            first = next(k for k, (u, v) in enumerate(edges) if kind[v]["kind"] == "nic")
            for (u, v), share in zip(edges[:first + 1], path.shares[:first + 1]):
                load[u, v] = load.get((u, v), 0.0) + behind * share
            out = edges[first][1]
            send[out] = send.get(out, 0) + 1
            nic_host[out] = host
    _network_load(router, send, recv, nic_host, load)
    return load, PathType.NET


def _network_load(router, send, recv, nic_host, load) -> None:
    """Add the network legs of every pair of GPUs on different hosts to ``load``.

    ``send[a]``: GPUs sending through NIC ``a`` to every GPU on its network; ``recv[b]``: GPUs
    whose nearest NIC is ``b``. A pair's network leg runs from NIC to NIC over every shortest
    path, spread over the spines as the router spreads it (:meth:`Router.network_flow`).
    Grouped by the NICs' edge switches (leaves): from leaf A to leaf B of one network the pairs
    are ``S_A x R_B - sum over hosts h of s_Ah x r_Bh`` (senders through A's NICs times
    receivers behind B's, less the pairs of one host, which stay inside it), so each pair of
    leaves is routed once.
    """
    component = router.network_component
    sent: dict = {}  # (leaf, host) and leaf totals
    got: dict = {}
    direct = []
    for table, totals in ((send, sent), (recv, got)):
        for nic, count in table.items():
            leaf = router.edge_switch(nic)
            if leaf is None:
                if table is send:
                    direct.append(nic)
                continue
            per_host = totals.setdefault(leaf, {})
            per_host[nic_host[nic]] = per_host.get(nic_host[nic], 0) + count
    # NIC port edges: each way, the GPUs on its side times those of other hosts on its network.
    senders: dict = {}
    receivers: dict = {}
    for table, tally in ((send, senders), (recv, receivers)):
        for nic, count in table.items():
            per_host = tally.setdefault(component(nic), {})
            per_host[nic_host[nic]] = per_host.get(nic_host[nic], 0) + count
    for nic, count in send.items():
        leaf = router.edge_switch(nic)
        if leaf is not None:
            peers = receivers.get(component(nic), {})
            remote = sum(peers.values()) - peers.get(nic_host[nic], 0)
            load[nic, leaf] = load.get((nic, leaf), 0.0) + count * remote
    for nic, count in recv.items():
        leaf = router.edge_switch(nic)
        if leaf is not None:
            peers = senders.get(component(nic), {})
            remote = sum(peers.values()) - peers.get(nic_host[nic], 0)
            load[leaf, nic] = load.get((leaf, nic), 0.0) + count * remote
    for a, from_a in sent.items():
        total_a = sum(from_a.values())
        for b, to_b in got.items():
            if a == b:
                continue
            pairs = total_a * sum(to_b.values()) - sum(n * to_b.get(h, 0) for h, n in from_a.items())
            if pairs:
                flow = router.switch_flow(a, b)
                if flow is None:  # different networks (rails of a rail-only fabric): no pairs
                    continue
                for edge, share in flow.items():
                    load[edge] = load.get(edge, 0.0) + pairs * share
    for first in direct:  # NICs cabled to each other: route each pair
        for last in recv:
            if last != first and nic_host[last] != nic_host[first]:
                flow = router.network_flow(first, last)
                if flow is not None:
                    for edge, share in flow.items():
                        load[edge] = load.get(edge, 0.0) + send[first] * recv[last] * share


# ------------------------------------------------------------------------- many GPU sets
def pairwise(G: nx.DiGraph | PreparedFabric, collective: str, nbytes: Sizes, *,
             profile: str | NcclProfile | None = None, gpus_per_thread: int = 1,
             calibration: CalibrationLike = None, max_sets: int | None = None,
             max_searches: int | None = None, progress: Progress | None = None,
             algorithms: Sequence[Algorithm] | None = None) -> np.ndarray:
    """busbw of every 2-GPU communicator.

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    collective : str
    nbytes : int
        nccl-tests' size. [bytes]
    profile : str or NcclProfile, optional
    gpus_per_thread, calibration, max_sets, max_searches, progress, algorithms : optional
        As for :func:`subsets`.

    Returns
    -------
    numpy.ndarray
        ``[i, j]`` = busbw of GPUs i and j, in GPU-id order; the diagonal is NaN. [B/s]

    Examples
    --------
    >>> import topo
    >>> m = pairwise(topo.dgx1v(), "all_reduce", 2**28)
    >>> bool(m[0, 3] > m[0, 1] > m[0, 5])  # two links, one link, none (host path)
    True
    """
    ctx = _Context(G, profile, gpus_per_thread, calibration, algorithms)
    n = len(ctx.ids)
    matrix = np.full((n, n), np.nan)
    for result in _all_sets(ctx, 2, collective, nbytes, max_sets=max_sets, max_searches=max_searches,
                            progress=progress):
        i, j = result.gpus
        matrix[i, j] = matrix[j, i] = result.busbw
    return matrix


def subsets(G: nx.DiGraph | PreparedFabric, collective: str, nbytes: Sizes, k: int, *,
            profile: str | NcclProfile | None = None, gpus_per_thread: int = 1,
            calibration: CalibrationLike = None, max_sets: int | None = None,
            max_searches: int | None = None, progress: Progress | None = None,
            algorithms: Sequence[Algorithm] | None = None) -> list:
    """Every k-GPU set ranked by busbw: "which k GPUs should this job get?".

    The arguments come in the order of :func:`estimate` and :func:`pairwise` (graph,
    collective, size), then what selects the GPUs (here their number ``k``).

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    collective : str
    nbytes : int
        nccl-tests' size. [bytes]
    k : int
        GPUs per set, 1 to the number of GPUs.
    profile : str or NcclProfile, optional
    gpus_per_thread, calibration : optional
        As for :func:`estimate` (nccl-tests' ``-g``; a :func:`models.calibrate` result).
    max_sets : int, optional
        Refuse (:class:`LimitError`) before any work when there are more than this many
        k-GPU sets (C(GPUs, k)).
    max_searches : int, optional
        Refuse (:class:`LimitError`) before any estimate when the sets need more than this
        many estimates (one per symmetry class, each a channel search).
    progress : callable, optional
        Called as ``progress(done, total)`` after each estimate, for a progress bar.
    algorithms : sequence of Algorithm, optional
        The algorithms that compete (as for :func:`estimate`; default NCCL's).

    Returns
    -------
    SubsetRanking
        A list of :class:`SubsetResult`, best first (highest busbw, then shortest time, then
        lowest GPU ids); ``to_records()`` gives its tidy rows.

    Raises
    ------
    topo.DgxTopoError
        For ``k`` out of range or a size array (one size per ranking).
    LimitError
        For work beyond ``max_sets`` or ``max_searches``.

    Examples
    --------
    >>> import topo
    >>> best = subsets(topo.dgx1v(), "all_reduce", 2**30, 4)[0]
    >>> best.gpus, best.nchannels
    ((0, 1, 2, 3), 4)
    """
    if not isinstance(collective, str):
        raise DgxTopoError(f"subsets(G, collective, nbytes, k): expected a collective name second, "
                           f"received {collective!r}")
    ctx = _Context(G, profile, gpus_per_thread, calibration, algorithms)
    results = _all_sets(ctx, k, collective, nbytes, max_sets=max_sets, max_searches=max_searches,
                        progress=progress)
    results.sort(key=lambda r: (-r.busbw, r.time, r.gpus))
    return SubsetRanking(results)


def _all_sets(ctx, k, collective, nbytes, *, max_sets=None, max_searches=None, progress=None) -> list:
    n = len(ctx.ids)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
        raise DgxTopoError(f"k must be a number of GPUs from 1 to {n} on {ctx.name}, received {k!r}")
    if np.ndim(nbytes) != 0:
        raise SizeError(f"rank GPU sets at one size: expected a single size, received {nbytes!r}")
    _collective(collective)
    count = math.comb(n, k)
    if max_sets is not None and count > max_sets:
        raise LimitError(f"{count} sets of {k} GPUs on {ctx.name}", keyword="max_sets", size=count,
                         limit=max_sets)
    symmetry = ctx.prepared.symmetry.nccl(collective, network=collective in NCCL_COLLECTIVES)
    gpu_nodes = topo.gpus(ctx.G)
    combos = list(itertools.combinations(range(n), k))
    if tuple(symmetry.gpus) == tuple(gpu_nodes):  # the sets' positions are the key's
        keys = symmetry.keys(combos)
    else:
        keys = [symmetry.key([gpu_nodes[i] for i in combo]) for combo in combos]
    representatives: dict = {}
    for combo, key in zip(combos, keys):
        representatives.setdefault(key, combo)
    if max_searches is not None and len(representatives) > max_searches:
        raise LimitError(f"{count} sets of {k} GPUs on {ctx.name} need {len(representatives)} estimates",
                         keyword="max_searches", size=len(representatives), limit=max_searches)
    done: dict = {}
    for key, combo in representatives.items():
        done[key] = _estimate(ctx, collective, nbytes, list(combo)).point()
        if progress is not None:
            progress(len(done), len(representatives))
    results = []
    for combo, key in zip(combos, keys):
        point = done[key]
        results.append(SubsetResult(combo, point.busbw, point.algbw, point.time, point.algorithm,
                                    point.protocol, point.nchannels, representatives[key]))
    return results
