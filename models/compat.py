"""Import paths of dgx-topo 0.2, kept working for a while.

In 0.3 ``models`` was re-cut into four wings (:mod:`models.engine`, :mod:`models.predict`,
:mod:`models.studies`, :mod:`models.present`). A 0.2 import path still works and warns once
with a :class:`DeprecationWarning` that names the new place:

- a module (``import models.collectives``, ``from models.nccl.search import ...``) resolves to
  the same module object under its new name (:data:`MOVED_MODULES`);
- a name of 0.2's ``models`` face that the 0.3 face no longer lists (``models.Router``) is
  looked up in its new module by ``models.__getattr__`` (:data:`MOVED_NAMES`,
  :func:`topo.faces.lazy_face`).

:class:`MovedModuleFinder` is the import hook; ``models/__init__.py`` installs it once.

Examples
--------
>>> new_module_name("models.nccl.search"), new_module_name("models.engine.routes")
('models.engine.nccl.search', None)
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import MappingProxyType

__all__ = ["MOVED_MODULES", "MOVED_NAMES", "MovedModuleFinder", "new_module_name"]

#: 0.2 module -> 0.3 module (a package maps its submodules too: models.nccl.search ->
#: models.engine.nccl.search).
MOVED_MODULES = MappingProxyType({
    "models.routes": "models.engine.routes",
    "models.nccl": "models.engine.nccl",
    "models.nccltests": "models.engine.nccltests",
    "models.measure": "models.predict.measure",
    "models.network": "models.predict.network",
    "models.collectives": "models.predict.collectives",
    "models.p2p": "models.predict.p2p",
    "models.maxflow": "models.predict.maxflow",
    "models.relays": "models.studies.relays",
    "models.bounds": "models.studies.bounds",
    "models.packing": "models.studies.packing",
    "models.whatif": "models.studies.whatif",
    "models.planner": "models.studies.planner",
    "models.workload": "models.studies.workload",
    "models.compute": "models.studies.compute",
    "models.calibration": "models.studies.calibration",
    "models.benchmarks": "models.studies.benchmarks",
    "models.text": "models.present.text",
    "models.output": "models.present.output",
    "models.progress": "models.present.progress",
    "models.plot": "models.present.plot",
    "models.bounds_plot": "models.present.bounds_plot",
    "models.whatif_plot": "models.present.whatif_plot",
    "models.plan_plot": "models.present.plan_plot",
    "models.report": "models.present.report",
    "models.cli": "models.present.cli",
})

#: Names of 0.2's ``models`` face (and of 0.3's first, larger face) that the face no longer
#: lists -> where each is now, as ``module.name``. The face keeps what a user calls
#: (``models.__all__``, about 30 names); the rest are imported from their modules.
MOVED_NAMES = MappingProxyType({
    "format_p2p_report": "models.present.text.format_p2p_report",  # words live in models.present
    "FrozenFabricError": "models.engine.fabric.FrozenFabricError",
    "MissingConstantError": "models.engine.nccl.profiles.MissingConstantError",
    "NcclProfile": "models.engine.nccl.profiles.NcclProfile",
    "PROFILES": "models.engine.nccl.profiles.PROFILES",
    "UnknownNcclVersionError": "models.engine.nccl.profiles.UnknownNcclVersionError",
    "ChannelDuplication": "models.engine.nccl.search.ChannelDuplication",
    "ChannelSearch": "models.engine.nccl.search.ChannelSearch",
    "ChannelSearchError": "models.engine.nccl.search.ChannelSearchError",
    "LinkLoad": "models.engine.nccl.search.LinkLoad",
    "dup_channels": "models.engine.nccl.search.dup_channels",
    "nccl_capacity": "models.engine.nccl.system.nccl_capacity",
    "BinaryTree": "models.engine.nccl.trees.BinaryTree",
    "Chain": "models.engine.nccl.trees.Chain",
    "DoubleBinaryTree": "models.engine.nccl.trees.DoubleBinaryTree",
    "RankTree": "models.engine.nccl.trees.RankTree",
    "TreeError": "models.engine.nccl.trees.TreeError",
    "binary_tree": "models.engine.nccl.trees.binary_tree",
    "double_binary_tree": "models.engine.nccl.trees.double_binary_tree",
    "intra_chain": "models.engine.nccl.trees.intra_chain",
    "nccl_tree_depth": "models.engine.nccl.trees.nccl_tree_depth",
    "rank_tree": "models.engine.nccl.trees.rank_tree",
    "AlgoTime": "models.engine.nccl.tuning.AlgoTime",
    "ChannelGraph": "models.engine.nccl.tuning.ChannelGraph",
    "Communicator": "models.engine.nccl.tuning.Communicator",
    "NCCL_COLLECTIVES": "models.engine.nccl.tuning.NCCL_COLLECTIVES",
    "NoAlgorithmError": "models.engine.nccl.tuning.NoAlgorithmError",
    "Selection": "models.engine.nccl.tuning.Selection",
    "Tuning": "models.engine.nccl.tuning.Tuning",
    "TuningError": "models.engine.nccl.tuning.TuningError",
    "UnknownAlgorithmError": "models.engine.nccl.tuning.UnknownAlgorithmError",
    "UnknownProtocolError": "models.engine.nccl.tuning.UnknownProtocolError",
    "UnsupportedCollectiveError": "models.engine.nccl.tuning.UnsupportedCollectiveError",
    "algo_time": "models.engine.nccl.tuning.algo_time",
    "comm_channels": "models.engine.nccl.tuning.comm_channels",
    "select_algorithm": "models.engine.nccl.tuning.select_algorithm",
    "tuning_table": "models.engine.nccl.tuning.tuning_table",
    "COLLECTIVES": "models.engine.nccltests.COLLECTIVES",
    "UnknownCollectiveError": "models.engine.nccltests.UnknownCollectiveError",
    "algbw": "models.engine.nccltests.algbw",
    "busbw_factor": "models.engine.nccltests.busbw_factor",
    "busbw_to_algbw": "models.engine.nccltests.busbw_to_algbw",
    "count_from_nbytes": "models.engine.nccltests.count_from_nbytes",
    "nbytes_from_count": "models.engine.nccltests.nbytes_from_count",
    "P2P_LEVEL": "models.engine.routes.P2P_LEVEL",
    "PathType": "models.engine.routes.PathType",
    "Route": "models.engine.routes.Route",
    "RouteError": "models.engine.routes.RouteError",
    "Router": "models.engine.routes.Router",
    "line_rate": "models.engine.routes.line_rate",
    "route": "models.engine.routes.route",
    "route_bandwidth": "models.engine.routes.route_bandwidth",
    "COLLECTIVE_NAMES": "models.predict.collectives.COLLECTIVE_NAMES",
    "EstimatePoint": "models.predict.collectives.EstimatePoint",
    "Estimator": "models.predict.collectives.Estimator",
    "SizeError": "models.predict.collectives.SizeError",
    "SubsetResult": "models.predict.collectives.SubsetResult",
    "MaxFlowError": "models.predict.maxflow.MaxFlowError",
    "DEFAULT_MEASUREMENT": "models.predict.measure.DEFAULT",
    "Measured": "models.predict.measure.Measured",
    "MeasurementError": "models.predict.measure.MeasurementError",
    "MeasurementModel": "models.predict.measure.MeasurementModel",
    "NetworkLoad": "models.predict.network.NetworkLoad",
    "network_load": "models.predict.network.network_load",
    "Calibrated": "models.predict.p2p.Calibrated",
    "EFFICIENCIES": "models.predict.p2p.EFFICIENCIES",
    "HOST_CEILINGS": "models.predict.p2p.HOST_CEILINGS",
    "MODES": "models.predict.p2p.MODES",
    "OVERHEADS": "models.predict.p2p.OVERHEADS",
    "P2PError": "models.predict.p2p.P2PError",
    "P2PReport": "models.predict.p2p.P2PReport",
    "P2PResult": "models.predict.p2p.P2PResult",
    "StagedCopy": "models.predict.p2p.StagedCopy",
    "achieved_capacity": "models.predict.p2p.achieved_capacity",
    "path_type_matrix": "models.predict.p2p.path_type_matrix",
    "staged_copy": "models.predict.p2p.staged_copy",
    "SimulationResult": "models.predict.simulate.SimulationResult",
    "TaskGraph": "models.predict.simulate.TaskGraph",
    "TaskGraphError": "models.predict.simulate.TaskGraphError",
    "read_task_graph": "models.predict.simulate.read_task_graph",
    "BenchmarkParseError": "models.studies.benchmarks.BenchmarkParseError",
    "NcclTestsRun": "models.studies.benchmarks.NcclTestsRun",
    "P2PBenchmark": "models.studies.benchmarks.P2PBenchmark",
    "read_nccl_tests": "models.studies.benchmarks.read_nccl_tests",
    "read_p2p_benchmark": "models.studies.benchmarks.read_p2p_benchmark",
    "Bound": "models.studies.bounds.Bound",
    "BoundError": "models.studies.bounds.BoundError",
    "BoundTooLargeError": "models.studies.bounds.BoundTooLargeError",
    "Cut": "models.studies.bounds.Cut",
    "SubsetBound": "models.studies.bounds.SubsetBound",
    "pairwise_bounds": "models.studies.bounds.pairwise_bounds",
    "Calibration": "models.studies.calibration.Calibration",
    "CalibrationError": "models.studies.calibration.CalibrationError",
    "Check": "models.studies.calibration.Check",
    "GENERATIONS": "models.studies.compute.GENERATIONS",
    "UnknownGenerationError": "models.studies.compute.UnknownGenerationError",
    "UnsupportedDtypeError": "models.studies.compute.UnsupportedDtypeError",
    "generation_of": "models.studies.compute.generation_of",
    "Plan": "models.studies.planner.Plan",
    "PlanError": "models.studies.planner.PlanError",
    "Search": "models.studies.planner.Search",
    "calibrate_plan": "models.studies.planner.calibrate_plan",
    "StepGraphError": "models.studies.stepgraph.StepGraphError",
    "simulate_many": "models.studies.stepgraph.simulate_many",
    "step_graph": "models.studies.stepgraph.step_graph",
    "ExecutorSpecError": "models.studies.sweep.ExecutorSpecError",
    "MAX_CASES": "models.studies.sweep.MAX_CASES",
    "Sweep": "models.studies.sweep.Sweep",
    "SweepRow": "models.studies.sweep.SweepRow",
    "SweepSizeError": "models.studies.sweep.SweepSizeError",
    "FAILURE_GRAMMAR": "models.studies.whatif.FAILURE_GRAMMAR",
    "FAIL_EACH": "models.studies.whatif.FAIL_EACH",
    "FabricDisconnectedError": "models.studies.whatif.FabricDisconnectedError",
    "Failure": "models.studies.whatif.Failure",
    "FailureSpecError": "models.studies.whatif.FailureSpecError",
    "WhatIf": "models.studies.whatif.WhatIf",
    "WhatIfError": "models.studies.whatif.WhatIfError",
    "parse_degrade": "models.studies.whatif.parse_degrade",
    "parse_failure": "models.studies.whatif.parse_failure",
    "parse_failures": "models.studies.whatif.parse_failures",
    "DTYPES": "models.studies.workload.DTYPES",
    "PRESETS": "models.studies.workload.PRESETS",
    "UnknownDtypeError": "models.studies.workload.UnknownDtypeError",
    "UnknownWorkloadError": "models.studies.workload.UnknownWorkloadError",
    "WORKLOAD_GRAMMAR": "models.studies.workload.WORKLOAD_GRAMMAR",
    "WorkloadError": "models.studies.workload.WorkloadError",
    "parse_workload": "models.studies.workload.parse_workload",
})


def new_module_name(old: str) -> str | None:
    """The 0.3 name of a 0.2 module (``None`` if ``old`` did not move)."""
    for prefix, new in MOVED_MODULES.items():
        if old == prefix or old.startswith(prefix + "."):
            return new + old[len(prefix):]
    return None


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new} in dgx-topo 0.3: import it from there", DeprecationWarning,
                  stacklevel=3)


class _AliasLoader(importlib.abc.Loader):
    """Loads a 0.2 module name as the already imported 0.3 module (the same object)."""

    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        return importlib.import_module(self.new)

    def exec_module(self, module) -> None:
        """Nothing to run: the 0.3 module ran when it was imported."""


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds a 0.2 module name of :data:`MOVED_MODULES` and loads the 0.3 module in its place."""

    def find_spec(self, fullname, path=None, target=None):
        new = new_module_name(fullname)
        if new is None:
            return None
        _warn(fullname, new)
        spec = importlib.util.find_spec(new)
        alias = importlib.util.spec_from_loader(fullname, _AliasLoader(new),
                                                is_package=spec is not None and spec.submodule_search_locations is not None)
        return alias


def install() -> None:
    """Put :class:`MovedModuleFinder` on ``sys.meta_path`` unless it is there already."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        # First: the path finder would otherwise load a 0.2 package's submodules a second time
        # (models.nccl.search from the 0.3 package's directory, as a distinct module object).
        sys.meta_path.insert(0, MovedModuleFinder())
