"""Studies: questions asked of the predictions (bounds, failures, training steps, calibration).

Its face lists what a user calls, each imported from its module on first use (:mod:`topo.faces`):
importing ``models.studies`` imports none of its modules. Two functions have their module's
name, so the face leaves them out: ``models.sweep`` and ``models.workload`` (or
``models.studies.sweep.sweep``, ``models.studies.workload.workload``).
"""

from types import MappingProxyType
from typing import TYPE_CHECKING

from topo.faces import lazy_face

# What a user calls, and the module that defines it.
_FACE = MappingProxyType({
    "bound": "models.studies.bounds",
    "subset_bounds": "models.studies.bounds",
    "pairwise_bounds": "models.studies.bounds",
    "pack_trees": "models.studies.packing",
    "apply_failures": "models.studies.whatif",
    "parse_failures": "models.studies.whatif",
    "plan": "models.studies.planner.layouts",
    "search": "models.studies.planner.layouts",
    "calibrate_plan": "models.studies.planner.calibrate",
    "gpus_ranking": "models.studies.planner.ranking",
    "memory": "models.studies.planner.gpu_memory",
    "step_components": "models.studies.planner.step",
    "parse_workload": "models.studies.workload",
    "moe_workload": "models.studies.moe",
    "model_state": "models.studies.moe",
    "compute_model": "models.studies.compute",
    "generation": "models.studies.compute",
    "step_graph": "models.studies.stepgraph",
    "simulate_plan": "models.studies.stepgraph",
    "simulate_many": "models.studies.stepgraph",
    "calibrate": "models.studies.calibration",
    "check": "models.studies.calibration",
    "read_benchmark": "models.studies.benchmarks",
    "read_nccl_tests": "models.studies.benchmarks",
    "read_p2p_benchmark": "models.studies.benchmarks",
    "capacity_graph": "models.studies.relays",
})

__all__ = list(_FACE)

if TYPE_CHECKING:  # what a type checker sees of the face: each name as its module annotates it
    from .benchmarks import read_benchmark, read_nccl_tests, read_p2p_benchmark
    from .bounds import bound, pairwise_bounds, subset_bounds
    from .calibration import calibrate, check
    from .moe import model_state, moe_workload
    from .compute import compute_model, generation
    from .packing import pack_trees
    from .planner.calibrate import calibrate_plan
    from .planner.gpu_memory import memory
    from .planner.layouts import plan, search
    from .planner.ranking import gpus_ranking
    from .planner.step import step_components
    from .relays import capacity_graph
    from .stepgraph import simulate_many, simulate_plan, step_graph
    from .whatif import apply_failures, parse_failures
    from .workload import parse_workload

__getattr__, __dir__ = lazy_face(__name__, _FACE)
