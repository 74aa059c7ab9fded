"""NCCL's set of algorithms (:data:`ALGORITHMS`) and how a name or a caller's set is read."""

from __future__ import annotations

from collections.abc import Iterable

from ..communicator import UnknownAlgorithmError
from .base import Algorithm
from .nvls import NVLS
from .nvls_tree import NVLS_TREE
from .pat import PAT
from .ring import RING
from .tree import TREE

__all__ = ["ALGORITHMS", "algorithm_named", "resolve", "algorithm_set", "serving"]

#: NCCL's algorithms, in NCCL's index order (src/include/device.h: Tree 0, Ring 1, CollNetDirect
#: 2 and CollNetChain 3 (not modelled: NCCL enables them only with a SHARP network plugin),
#: NVLS 4, NVLSTree 5, PAT 6).
ALGORITHMS = (TREE, RING, NVLS, NVLS_TREE, PAT)

_REQUIRED = ("name", "index", "applies", "graph", "bus_bandwidth", "latency", "bus_to_alg_ratio",
             "time_factors", "search", "searched", "network", "nchannels", "blocks", "charge")


def algorithm_named(name: str, algorithms: Iterable = ALGORITHMS) -> Algorithm | None:
    """The algorithm of ``algorithms`` called ``name``, or None (``"p2p"``, ``"copy"``...).

    >>> algorithm_named("ring") is RING, algorithm_named("p2p")
    (True, None)
    """
    return next((a for a in algorithms if a.name == name), None)


def resolve(algorithm, algorithms: Iterable = ALGORITHMS) -> Algorithm:
    """An algorithm object: ``algorithm`` itself, or the one of ``algorithms`` of that name (any
    case).

    Raises
    ------
    UnknownAlgorithmError
        For a name none of them has, or an object that is not an algorithm.

    Examples
    --------
    >>> resolve("NVLS") is NVLS
    True
    >>> resolve("collnet", [TREE, RING])
    Traceback (most recent call last):
    ...
    models.engine.nccl.communicator.UnknownAlgorithmError: unknown algorithm 'collnet': expected one of ['tree', 'ring']
    """
    algorithms = tuple(algorithms)
    if isinstance(algorithm, str):
        found = algorithm_named(algorithm.lower(), algorithms)
        if found is not None:
            return found
    elif all(hasattr(algorithm, attribute) for attribute in _REQUIRED):
        return algorithm
    raise UnknownAlgorithmError(f"unknown algorithm {algorithm!r}: expected one of "
                                f"{[a.name for a in algorithms]}")


def algorithm_set(algorithms) -> tuple:
    """``algorithms`` checked: a non-empty sequence of algorithm objects with distinct names,
    ordered by NCCL's index (a tie of time goes to the first). None gives :data:`ALGORITHMS`.

    Raises
    ------
    UnknownAlgorithmError
        For a name, an object without the interface of :class:`Algorithm`, an empty sequence or
        two algorithms of one name.

    Examples
    --------
    >>> [a.name for a in algorithm_set([RING, TREE])]
    ['tree', 'ring']
    """
    if algorithms is None:
        return ALGORITHMS
    if isinstance(algorithms, str) or not isinstance(algorithms, Iterable):
        raise UnknownAlgorithmError(f"algorithms must be a sequence of algorithm objects (such as "
                                    f"models.engine.nccl.ALGORITHMS), received {algorithms!r}")
    found = tuple(algorithms)
    for a in found:
        if isinstance(a, str) or not all(hasattr(a, attribute) for attribute in _REQUIRED):
            raise UnknownAlgorithmError(f"algorithms must be algorithm objects (such as "
                                        f"models.engine.nccl.algorithms.RING), received {a!r}")
    names = [a.name for a in found]
    if not found or len(set(names)) != len(names):
        raise UnknownAlgorithmError(f"algorithms must be one or more algorithms of distinct names, "
                                    f"received {names}")
    if found == ALGORITHMS:
        return ALGORITHMS
    return tuple(sorted(found, key=lambda a: a.index))


def serving(collective: str, algorithms: Iterable = ALGORITHMS) -> tuple:
    """The algorithms of ``algorithms`` that can run ``collective`` at all (their ``collectives``
    list it; :meth:`Algorithm.applies` says whether one does on a communicator): with the
    :data:`models.engine.nccltests.COLLECTIVES` table, which algorithms serve a collective.

    >>> [a.name for a in serving("reduce_scatter")]
    ['ring', 'nvls', 'pat']
    >>> serving("alltoall")
    ()
    """
    return tuple(a for a in algorithms if collective in a.collectives)
