"""NCCL's algorithms, one module each, and :data:`ALGORITHMS`, the ones a release chooses among.

Each algorithm is an object (:class:`~.base.Algorithm`, a frozen dataclass) that answers for one
collective, protocol and :class:`~models.engine.nccl.communicator.Communicator`: does it apply
(:meth:`~.base.Algorithm.applies`, with its :class:`~models.engine.nccl.reasons.Why`), on which
channel graph (:meth:`~.base.Algorithm.graph`), at what bus bandwidth and latency
(:meth:`~.base.Algorithm.bus_bandwidth`, :meth:`~.base.Algorithm.latency`, with their working),
with which bus -> algorithm ratio, and which links its data fills for the simulator
(:meth:`~.base.Algorithm.charge`, through the :class:`~.base.LinkCharges` the decomposer gives).
:func:`models.engine.nccl.tuning.select_algorithm` times every enabled (algorithm, protocol) of
the ones it is given (``algorithms=``, :data:`ALGORITHMS` by default) and takes the fastest, ties
going to the lower :attr:`~.base.Algorithm.index`; :func:`models.estimate`, ``pairwise``,
``subsets``, ``sweep`` and ``simulate`` pass ``algorithms=`` down.

Writing one
-----------
Subclass :class:`~.base.Algorithm` (or an algorithm close to yours) as a frozen dataclass whose
``name`` and ``index`` have defaults, override what differs, and make one instance::

    from dataclasses import dataclass
    from models.engine.nccl.algorithms import ALGORITHMS, Ring

    @dataclass(frozen=True)
    class WideRing(Ring):
        name: str = "wide_ring"
        index: int = 100                    # above NCCL's: a tie goes to NCCL's algorithm

        def bus_bandwidth(self, collective, protocol, comm):
            ...                              # a BusBandwidth (BusSteps builds one step by step)

    WIDE_RING = WideRing()
    estimate(G, "all_reduce", 2**30, algorithms=ALGORITHMS + (WIDE_RING,))

Its name shows wherever the winner's does (results, records, ``--explain``). One that lists
``alltoall`` or ``sendrecv`` in its ``collectives`` runs them in place of the point-to-point model
(overriding :meth:`~.base.Algorithm.latency` and :meth:`~.base.Algorithm.bus_to_alg_ratio`, whose
defaults count ring steps). To say which links its data fills in the simulator, override
:meth:`~.base.Algorithm.charge` with the primitives of :class:`~.base.LinkCharges` (the default
runs a ring's channels). Adding one to NCCL's set: one module here, one line in
:data:`~.catalog.ALGORITHMS` (``catalog.py``), its name in this face's mapping (and the
``TYPE_CHECKING`` import beside it, which ``tests/test_faces.py`` holds to the mapping), its tests;
then rewrite the start-up data (``python -m models.present.startup``) for ``--algo`` to list it.
"""

from types import MappingProxyType
from typing import TYPE_CHECKING

from topo.faces import lazy_face

# What a user calls, and the module that defines it (imported on first use).
_FACE = MappingProxyType({
    "ALGORITHMS": "models.engine.nccl.algorithms.catalog",
    "Algorithm": "models.engine.nccl.algorithms.base",
    "LinkCharges": "models.engine.nccl.algorithms.base",
    "BusSteps": "models.engine.nccl.algorithms.base",
    "LatencyInputs": "models.engine.nccl.algorithms.base",
    "latency_inputs": "models.engine.nccl.algorithms.base",
    "ll128_applies": "models.engine.nccl.algorithms.base",
    "Ring": "models.engine.nccl.algorithms.ring",
    "Tree": "models.engine.nccl.algorithms.tree",
    "Nvls": "models.engine.nccl.algorithms.nvls",
    "NvlsTree": "models.engine.nccl.algorithms.nvls_tree",
    "Pat": "models.engine.nccl.algorithms.pat",
    "RING": "models.engine.nccl.algorithms.ring",
    "TREE": "models.engine.nccl.algorithms.tree",
    "NVLS": "models.engine.nccl.algorithms.nvls",
    "NVLS_TREE": "models.engine.nccl.algorithms.nvls_tree",
    "PAT": "models.engine.nccl.algorithms.pat",
    "algorithm_named": "models.engine.nccl.algorithms.catalog",
    "resolve": "models.engine.nccl.algorithms.catalog",
    "algorithm_set": "models.engine.nccl.algorithms.catalog",
    "serving": "models.engine.nccl.algorithms.catalog",
})

__all__ = list(_FACE)

if TYPE_CHECKING:  # what a type checker sees of the face: each name as its module annotates it
    from .base import Algorithm, BusSteps, LatencyInputs, LinkCharges, latency_inputs, ll128_applies
    from .catalog import ALGORITHMS, algorithm_named, algorithm_set, resolve, serving
    from .nvls import NVLS, Nvls
    from .nvls_tree import NVLS_TREE, NvlsTree
    from .pat import PAT, Pat
    from .ring import RING, Ring
    from .tree import TREE, Tree

__getattr__, __dir__ = lazy_face(__name__, _FACE)
