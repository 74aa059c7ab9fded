"""nccl-tests' bandwidth definitions: size convention, algbw and busbw per collective.

nccl-tests reports, for a buffer size ``S`` [bytes] and an average time ``t`` [s]:

- ``algbw = S / t``;
- ``busbw = algbw x factor(n)``, the factor making busbw comparable to the hardware
  bottleneck bandwidth whatever the rank count ``n``.

=============== ====================================== ============= ======================
collective      S (bytes)                              busbw factor  nccl-tests source
=============== ====================================== ============= ======================
all_reduce      count x typesize                       2(n-1)/n      src/all_reduce.cu
all_gather      sendcount x typesize x n (total)       (n-1)/n       src/all_gather.cu
reduce_scatter  recvcount x typesize x n (total)       (n-1)/n       src/reduce_scatter.cu
broadcast       count x typesize                       1             src/broadcast.cu
reduce          count x typesize                       1             src/reduce.cu
alltoall        count x n x typesize (count per peer)  (n-1)/n       src/alltoall.cu
sendrecv        count x typesize                       1             src/sendrecv.cu
=============== ====================================== ============= ======================

``S`` is the size nccl-tests prints, ``max(sendBytes, recvBytes)`` of one rank: the whole
buffer for all_gather / reduce_scatter and the per-rank buffer for alltoall. It is also
NCCL's ``nBytes`` for the five NCCL collectives (NVIDIA/nccl-tests src/*.cu), so the tuning
model's time is directly comparable.

These functions are the one definition of algbw and busbw in dgx-topo: every result's ``algbw``
and ``busbw`` (estimates, NCCL's tuning cells, measurements, bounds) is computed by them.

All functions are numpy-vectorised over ``nbytes``, ``time`` and ``nranks``: scalars in give
floats out, arrays broadcast.

References
----------
.. [1] NVIDIA/nccl-tests doc/PERFORMANCE.md and src/*.cu at NCCL_TESTS_VERSION 2.19.6.

Examples
--------
>>> from models.engine.nccltests import busbw_factor, algbw, busbw
>>> busbw_factor("all_reduce", 8)
1.75
>>> algbw(1e9, 0.01) / 1e9                      # 1 GB in 10 ms [GB/s]
100.0
>>> busbw("all_reduce", 1e9, 0.01, 8) / 1e9
175.0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from topo.errors import DgxTopoError, SizeError
from topo.units import Sizes, is_int, parse_nbytes

__all__ = [
    "COLLECTIVES", "NCCL_COLLECTIVES", "Collective", "UnknownCollectiveError",
    "collective", "busbw_factor", "algbw", "busbw", "algbw_to_busbw", "busbw_to_algbw",
    "nbytes_from_count", "count_from_nbytes",
]


class UnknownCollectiveError(DgxTopoError):
    """A collective name that is not one of :data:`COLLECTIVES`."""


@dataclass(frozen=True, slots=True)
class Collective:
    """One collective as nccl-tests defines its size and bus bandwidth.

    Attributes
    ----------
    name : str
        ``"all_reduce"``, ...
    count_name : str
        The count argument the NCCL API takes (``"count"``, ``"sendcount"``, ...).
    peers_in_size : bool
        True when ``S`` is ``count x typesize x n`` (the count is per rank / per peer),
        False when ``S`` is ``count x typesize``.
    factor : str
        The busbw factor as nccl-tests writes it: ``"2(n-1)/n"``, ``"(n-1)/n"`` or ``"1"``.
    source : str
        The nccl-tests file that defines it.
    function : int or None
        NCCL's function index (``ncclFunc_t``, src/include/device.h: Broadcast 0, Reduce 1,
        AllGather 2, ReduceScatter 3, AllReduce 4) when NCCL's tuning model covers the collective
        and pipelines it on channels; None for those NCCL runs as grouped send/recv (alltoall,
        sendrecv). Which algorithms serve it: those of
        :data:`models.engine.nccl.algorithms.ALGORITHMS` whose ``collectives`` name it
        (:func:`models.engine.nccl.algorithms.serving`; an algorithm lists its collectives, so
        adding one touches no table).
    pipeline : str or None
        The pattern of its channel pipeline (:mod:`models.engine.nccl.pipelining`): ``"chain"``
        (broadcast, reduce: a rank forwards what it received) or ``"ring"``; None without one.
    bound : str
        The bound :func:`models.studies.bounds.bound` computes: ``"rooted"`` (max-flow from or to
        the root), ``"cut"`` (every GPU's share across every cut) or ``"flow"`` (a concurrent
        multicommodity flow).
    """

    name: str
    count_name: str
    peers_in_size: bool
    factor: str
    source: str
    function: int | None = None
    pipeline: str | None = None
    bound: str = "cut"

    @property
    def tuned(self) -> bool:
        """NCCL's tuning model covers it (it has an NCCL function index)."""
        return self.function is not None


#: The collectives, in the order NVIDIA/nccl-tests doc/PERFORMANCE.md lists them.
COLLECTIVES: Mapping[str, Collective] = MappingProxyType({c.name: c for c in (
    Collective("all_reduce", "count", False, "2(n-1)/n", "nccl-tests src/all_reduce.cu", 4, "ring", "cut"),
    Collective("all_gather", "sendcount", True, "(n-1)/n", "nccl-tests src/all_gather.cu", 2, "ring", "cut"),
    Collective("reduce_scatter", "recvcount", True, "(n-1)/n", "nccl-tests src/reduce_scatter.cu", 3, "ring",
               "cut"),
    Collective("broadcast", "count", False, "1", "nccl-tests src/broadcast.cu", 0, "chain", "rooted"),
    Collective("reduce", "count", False, "1", "nccl-tests src/reduce.cu", 1, "chain", "rooted"),
    Collective("alltoall", "count (per peer)", True, "(n-1)/n", "nccl-tests src/alltoall.cu", bound="flow"),
    Collective("sendrecv", "count", False, "1", "nccl-tests src/sendrecv.cu", bound="flow"),
)})
#: The collectives NCCL's tuning model covers, in NCCL's function order (``ncclFunc_t``).
NCCL_COLLECTIVES = tuple(c.name for c in sorted((c for c in COLLECTIVES.values() if c.tuned),
                                                 key=lambda c: c.function or 0))  # (tuned: never None)


def collective(name: str) -> Collective:
    """The :class:`Collective` called ``name``.

    Raises
    ------
    UnknownCollectiveError
        For any other name; the message lists the valid ones.

    Examples
    --------
    >>> collective("allreduce")
    Traceback (most recent call last):
    ...
    models.engine.nccltests.UnknownCollectiveError: unknown collective 'allreduce': expected one of ['all_reduce', 'all_gather', 'reduce_scatter', 'broadcast', 'reduce', 'alltoall', 'sendrecv']
    """
    try:
        return COLLECTIVES[name]
    except (KeyError, TypeError):
        raise UnknownCollectiveError(f"unknown collective {name!r}: expected one of "
                                     f"{list(COLLECTIVES)}") from None


def _whole_numbers(values, what: str, minimum: int):
    """Whole numbers >= ``minimum`` as an int64 array (0-d for one), from integers or integral
    floats; anything else (bools, strings, fractions, NaN) raises naming ``what``."""
    array = np.asarray(values)
    if array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
        if not (np.issubdtype(array.dtype, np.floating) and np.all(np.isfinite(array))
                and np.all(array == np.floor(array))):
            raise DgxTopoError(f"{what} must be {'a positive' if minimum else 'a non-negative'} "
                               f"integer, received {values!r}")
        array = array.astype(np.int64)
    if np.any(array < minimum):
        raise DgxTopoError(f"{what} must be {'a positive' if minimum else 'a non-negative'} "
                           f"integer, received {values!r}")
    return array


def _nranks(nranks):
    """Rank counts as an int array, checked to be integers >= 1."""
    return _whole_numbers(nranks, "nranks", 1)


def _scalar(value):
    """A 0-d array as a Python float, anything else unchanged."""
    return float(value) if np.ndim(value) == 0 else value


def busbw_factor(name: str, nranks: npt.ArrayLike) -> float | np.ndarray:
    """nccl-tests' busbw / algbw ratio for a collective on ``nranks`` ranks.

    Parameters
    ----------
    name : str
        A collective of :data:`COLLECTIVES`.
    nranks : int or array_like of int
        Ranks in the communicator (>= 1).

    Returns
    -------
    float or numpy.ndarray
        ``2(n-1)/n`` (all_reduce), ``(n-1)/n`` (all_gather, reduce_scatter, alltoall) or 1
        (broadcast, reduce, sendrecv). [-]

    Raises
    ------
    UnknownCollectiveError
        For an unknown collective.
    DgxTopoError
        For ``nranks`` that is not a positive integer.

    Examples
    --------
    >>> busbw_factor("all_gather", [2, 4, 8])
    array([0.5  , 0.75 , 0.875])
    >>> busbw_factor("broadcast", 8)
    1.0
    """
    spec = collective(name)
    n = _nranks(nranks).astype(float)
    if spec.factor == "2(n-1)/n":
        factor = 2.0 * (n - 1.0) / n
    elif spec.factor == "(n-1)/n":
        factor = (n - 1.0) / n
    else:
        factor = np.ones_like(n)
    return _scalar(factor)


def _check_sizes(nbytes):
    array = np.asarray(nbytes, dtype=float)
    if np.any(~np.isfinite(array)) or np.any(array < 0):
        raise SizeError(f"nbytes must be finite and >= 0 [bytes], received {nbytes!r}")
    return array


def algbw(nbytes: npt.ArrayLike, time: npt.ArrayLike) -> float | np.ndarray:
    """nccl-tests' algorithm bandwidth ``S / t``.

    Parameters
    ----------
    nbytes : float or array_like
        Size ``S`` as nccl-tests prints it (module docstring). [bytes]
    time : float or array_like
        Time of one operation (> 0). [s]

    Returns
    -------
    float or numpy.ndarray
        Algorithm bandwidth. [B/s]

    Raises
    ------
    DgxTopoError
        For negative sizes or non-positive times.
    """
    size = _check_sizes(nbytes)
    seconds = np.asarray(time, dtype=float)
    if np.any(~(seconds > 0)):
        raise DgxTopoError(f"time must be > 0 [s], received {time!r}")
    return _scalar(size / seconds)


def busbw(name: str, nbytes: npt.ArrayLike, time: npt.ArrayLike, nranks: npt.ArrayLike) -> float | np.ndarray:
    """nccl-tests' bus bandwidth ``S / t x factor(n)``.

    Parameters
    ----------
    name : str
        A collective of :data:`COLLECTIVES`.
    nbytes : float or array_like
        Size ``S``. [bytes]
    time : float or array_like
        Time of one operation. [s]
    nranks : int or array_like of int
        Ranks in the communicator.

    Returns
    -------
    float or numpy.ndarray
        Bus bandwidth. [B/s]

    Examples
    --------
    >>> import numpy as np
    >>> busbw("reduce_scatter", np.array([4e6, 8e6]), 1e-3, 4) / 1e9
    array([3., 6.])
    """
    return algbw_to_busbw(name, algbw(nbytes, time), nranks)


def algbw_to_busbw(name: str, bandwidth: npt.ArrayLike, nranks: npt.ArrayLike) -> float | np.ndarray:
    """The bus bandwidth of an algorithm bandwidth: ``algbw x factor(n)`` (inverse of
    :func:`busbw_to_algbw`).

    Parameters
    ----------
    name : str
        A collective of :data:`COLLECTIVES`.
    bandwidth : float or array_like
        Algorithm bandwidth, ``S / t``. [B/s]
    nranks : int or array_like of int

    Returns
    -------
    float or numpy.ndarray
        Bus bandwidth. [B/s]

    Examples
    --------
    >>> algbw_to_busbw("all_reduce", 100e9, 8) / 1e9
    175.0
    """
    return _scalar(np.asarray(bandwidth, dtype=float) * busbw_factor(name, nranks))


def busbw_to_algbw(name: str, bandwidth: npt.ArrayLike, nranks: npt.ArrayLike) -> float | np.ndarray:
    """The algorithm bandwidth that corresponds to a bus bandwidth (inverse of the factor).

    Parameters
    ----------
    name : str
        A collective of :data:`COLLECTIVES`.
    bandwidth : float or array_like
        Bus bandwidth. [B/s]
    nranks : int or array_like of int
        Ranks (>= 2 for the collectives whose factor is 0 at one rank).

    Returns
    -------
    float or numpy.ndarray
        Algorithm bandwidth. [B/s]

    Raises
    ------
    DgxTopoError
        When the factor is zero (one rank of all_reduce, all_gather, reduce_scatter,
        alltoall): any algbw then gives busbw 0.

    Examples
    --------
    >>> busbw_to_algbw("all_reduce", 175e9, 8) / 1e9
    100.0
    """
    factor = np.asarray(busbw_factor(name, nranks))
    if np.any(factor == 0):
        raise DgxTopoError(f"busbw factor of {name} is 0 for one rank: expected nranks >= 2, "
                           f"received {nranks!r}")
    return _scalar(np.asarray(bandwidth, dtype=float) / factor)


def nbytes_from_count(name: str, count: npt.ArrayLike, nranks: npt.ArrayLike, typesize: int = 4) -> int | np.ndarray:
    """Size ``S`` nccl-tests reports for an NCCL call with ``count`` elements.

    Parameters
    ----------
    name : str
        A collective of :data:`COLLECTIVES`.
    count : int or array_like of int
        The count argument of the NCCL call (:attr:`Collective.count_name`: per-rank
        ``sendcount`` for all_gather, ``recvcount`` for reduce_scatter, per-peer count for
        alltoall).
    nranks : int or array_like of int
    typesize : int
        Bytes per element (4 for float32, nccl-tests' default).

    Returns
    -------
    int or numpy.ndarray of int64
        ``S``. [bytes]

    Examples
    --------
    >>> nbytes_from_count("all_gather", 1024, 8)
    32768
    >>> nbytes_from_count("all_reduce", 1024, 8)
    4096
    """
    spec = collective(name)
    n = _nranks(nranks)
    elements = _whole_numbers(count, "count", 0)
    if not is_int(typesize) or typesize < 1:
        raise DgxTopoError(f"typesize must be a positive integer [bytes], received {typesize!r}")
    size = elements * typesize * (n if spec.peers_in_size else 1)
    return int(size) if size.ndim == 0 else size


def count_from_nbytes(name: str, nbytes: Sizes, nranks: npt.ArrayLike, typesize: int = 4) -> tuple:
    """The NCCL count argument nccl-tests uses for a requested size, and the size it reports.

    nccl-tests divides the requested size into whole elements, and for all_gather,
    reduce_scatter and alltoall into whole elements per rank, so the size it reports is
    rounded down to a multiple of ``typesize`` (x ``nranks``).

    Parameters
    ----------
    name : str
        A collective of :data:`COLLECTIVES`.
    nbytes : int, str or array_like
        Requested size (the ``-b``/``-e`` value), anything :func:`topo.parse_nbytes` reads. [bytes]
    nranks : int or array_like of int
    typesize : int
        Bytes per element.

    Returns
    -------
    count : int or numpy.ndarray
        The count argument of the NCCL call.
    size : int or numpy.ndarray of int64
        The size ``S`` nccl-tests then reports. [bytes]

    Raises
    ------
    topo.SizeError
        For a size :func:`topo.parse_nbytes` refuses.

    Examples
    --------
    >>> count_from_nbytes("all_gather", 1000, 8)
    (31, 992)
    >>> count_from_nbytes("all_reduce", 1000, 8)
    (250, 1000)
    """
    spec = collective(name)
    n = _nranks(nranks)
    size = np.asarray(parse_nbytes(nbytes))
    if not is_int(typesize) or typesize < 1:
        raise DgxTopoError(f"typesize must be a positive integer [bytes], received {typesize!r}")
    count = size // typesize // n if spec.peers_in_size else size // typesize
    counted = count if count.ndim else int(count)
    return counted, nbytes_from_count(name, count, n, typesize)
