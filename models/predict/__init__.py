"""Predictions: what a machine measures, from P2P copies to collectives and many tasks at once.

Its face lists what a user calls, each imported from its module on first use (:mod:`topo.faces`):
importing ``models.predict`` imports none of its modules. The simulator's function has its
module's name, so the face leaves it out (``models.simulate``, or
``models.predict.simulate.simulate``).
"""

from types import MappingProxyType
from typing import TYPE_CHECKING

from topo.faces import lazy_face

# What a user calls, and the module that defines it.
_FACE = MappingProxyType({
    "estimate": "models.predict.collectives",
    "pairwise": "models.predict.collectives",
    "subsets": "models.predict.collectives",
    "Estimator": "models.predict.collectives",
    "CollectiveEstimate": "models.predict.collectives",
    "SubsetResult": "models.predict.collectives",
    "alltoallv": "models.predict.alltoall",
    "gather": "models.predict.alltoall",
    "scatter": "models.predict.alltoall",
    "moe_dispatch": "models.predict.dispatch",
    "p2p_matrix": "models.predict.p2p",
    "p2p_latency_matrix": "models.predict.p2p",
    "p2p_path": "models.predict.p2p",
    "p2p_report": "models.predict.p2p",
    "path_type_matrix": "models.predict.p2p",
    "maxflow_matrix": "models.predict.maxflow",
    "measured": "models.predict.measure",
    "pipeline_fill": "models.predict.measure",
    "network_load": "models.predict.network",
    "nic_path": "models.predict.nicpath",
    "max_min_share": "models.predict.flows",
    "task_graph": "models.predict.taskgraph",
    "read_task_graph": "models.predict.taskgraph",
    "TaskGraph": "models.predict.taskgraph",
    "SimulationResult": "models.predict.simulate",
    "simulation_size": "models.predict.simulate",
})

__all__ = list(_FACE)

if TYPE_CHECKING:  # what a type checker sees of the face: each name as its module annotates it
    from .alltoall import alltoallv, gather, scatter
    from .collectives import CollectiveEstimate, Estimator, SubsetResult, estimate, pairwise, subsets
    from .dispatch import moe_dispatch
    from .flows import max_min_share
    from .maxflow import maxflow_matrix
    from .measure import measured, pipeline_fill
    from .network import network_load
    from .nicpath import nic_path
    from .p2p import p2p_latency_matrix, p2p_matrix, p2p_path, p2p_report, path_type_matrix
    from .simulate import SimulationResult, simulation_size
    from .taskgraph import TaskGraph, read_task_graph, task_graph

__getattr__, __dir__ = lazy_face(__name__, _FACE)
