"""dgx-topo models: what a fabric delivers, and the ``dgxtopo`` command line.

The cost layer imports :mod:`topo`, never the reverse, and does not import plotly. Its modules,
in the order data flows:

- :mod:`models.engine.routes` (how a copy travels), :mod:`models.predict.p2p` (the P2P model),
  :mod:`models.predict.maxflow`;
- :mod:`models.engine.nccl` (NCCL's view of the graph and its choices, per version: ``profiles``,
  ``system``, ``tuning``, ``search``, ``trees``, ``legacy_rings``, ``channels``),
  :mod:`models.engine.nccltests` (nccl-tests' size and bandwidth conventions);
- :mod:`models.predict.collectives` (``estimate``, ``pairwise``, ``subsets``), :mod:`models.predict.network`
  (what the network between hosts gives NCCL's channels), :mod:`models.predict.measure`
  (what the machine measures), :mod:`models.studies.benchmarks` (reading real outputs),
  :mod:`models.studies.calibration` (fit and check against them);
- :mod:`models.studies.whatif` (failures and sweeps), :mod:`models.studies.bounds` (optimal schedules),
  :mod:`models.studies.workload`, :mod:`models.studies.compute`, :mod:`models.studies.planner` (training steps);
- :mod:`models.predict.simulate` (many tasks at once as a timeline: :mod:`models.predict.decompose`,
  :mod:`models.predict.flows`), :mod:`models.studies.stepgraph` (a planner layout as a task graph);
- presentation, the only place with words: :mod:`models.present.format` (numbers as people read
  them), :mod:`models.present.text` (tables), :mod:`models.present.json_shapes` (``--json``),
  :mod:`models.present.explain` (``--explain``), :mod:`models.present.page` (one HTML page),
  :mod:`models.present.output`, :mod:`models.present.plot` and the other ``*_plot`` modules,
  :mod:`models.present.report`, :mod:`models.present.cli`. Results are numbers and offer
  ``to_records()`` (:mod:`models.engine.results`).

``models.engine.nccltests`` stays a module: its ``busbw()`` function is not re-exported under the same
name.
"""

from types import MappingProxyType

from topo.lazy import lazy_face
from topo.version import __version__

from . import compat as _compat

_compat.install()

#: Where each public name lives (``module`` or ``module:name`` where the face renames it); the
#: module is imported when the name is first read (:func:`topo.lazy.lazy_face`), so that
#: ``import models`` imports no networkx, numpy or model before a name is used.
_MODULES = MappingProxyType({
    "models.engine.routes": ("P2P_LEVEL", "PathType", "Route", "RouteError", "Router", "line_rate", "route",
                             "route_bandwidth"),
    "models.predict.p2p": ("EFFICIENCIES", "HOST_CEILINGS", "MODES", "OVERHEADS", "Calibrated", "P2PError",
                           "P2PReport", "P2PResult", "StagedCopy", "achieved_capacity", "p2p_latency_matrix",
                           "p2p_matrix", "p2p_path", "p2p_report", "path_type_matrix", "staged_copy"),
    "models.predict.maxflow": ("MaxFlowError", "maxflow_matrix"),
    "models.engine.nccl.profiles": ("MissingConstantError", "NcclProfile", "PROFILES",
                                    "UnknownNcclVersionError", "nccl_profile"),
    "models.engine.nccltests": ("COLLECTIVES", "UnknownCollectiveError", "algbw", "busbw_factor",
                                "busbw_to_algbw", "count_from_nbytes", "nbytes_from_count"),
    "models.engine.nccl.tuning": ("NCCL_COLLECTIVES", "AlgoTime", "ChannelGraph", "Communicator",
                                  "NoAlgorithmError", "Selection", "Tuning", "TuningError",
                                  "UnknownAlgorithmError", "UnknownProtocolError",
                                  "UnsupportedCollectiveError", "algo_time", "comm_channels",
                                  "select_algorithm", "tune", "tuning_table"),
    "models.engine.nccl.trees": ("BinaryTree", "Chain", "DoubleBinaryTree", "RankTree", "TreeError",
                                 "binary_tree", "double_binary_tree", "intra_chain", "nccl_tree_depth",
                                 "rank_tree"),
    "models.engine.nccl.search": ("ChannelDuplication", "ChannelSearch", "ChannelSearchError", "LinkLoad",
                                  "dup_channels", "search_channels"),
    "models.engine.nccl.system": ("NcclSystem", "nccl_capacity"),
    "models.predict.collectives": ("COLLECTIVE_NAMES", "CollectiveEstimate", "EstimatePoint", "Estimator",
                                   "SizeError", "SubsetResult", "estimate", "pairwise", "subsets"),
    "models.predict.network": ("NetworkLoad", "network_load"),
    "models.predict.measure:DEFAULT": ("DEFAULT_MEASUREMENT",),
    "models.predict.measure": ("MeasurementError", "MeasurementModel", "Measured", "measured"),
    "models.studies.benchmarks": ("BenchmarkParseError", "NcclTestsRun", "P2PBenchmark", "read_benchmark",
                                  "read_nccl_tests", "read_p2p_benchmark"),
    "models.studies.calibration": ("Calibration", "CalibrationError", "Check", "calibrate", "check"),
    "models.studies.whatif": ("FAIL_EACH", "FAILURE_GRAMMAR", "FabricDisconnectedError", "Failure",
                              "FailureSpecError", "WhatIf", "WhatIfError", "apply_failures", "parse_degrade",
                              "parse_failure", "parse_failures"),
    "models.studies.sweep": ("MAX_CASES", "ExecutorSpecError", "Sweep", "SweepRow", "SweepSizeError",
                             "sweep"),
    "models.engine.fabric": ("FrozenFabricError", "PreparedFabric", "prepare"),
    "models.studies.bounds": ("Bound", "BoundError", "BoundTooLargeError", "Cut", "SubsetBound", "bound",
                              "pairwise_bounds", "subset_bounds"),
    "models.studies.workload": ("DTYPES", "PRESETS", "WORKLOAD_GRAMMAR", "UnknownDtypeError",
                                "UnknownWorkloadError", "WorkloadError", "parse_workload", "workload"),
    "models.studies.compute": ("GENERATIONS", "UnknownGenerationError", "UnsupportedDtypeError",
                               "generation_of"),
    "models.studies.planner": ("Plan", "PlanError", "Search", "calibrate_plan", "gpus_ranking", "plan",
                               "search"),
    "models.predict.simulate": ("SimulationResult", "TaskGraph", "TaskGraphError", "read_task_graph",
                                "simulate", "task_graph"),
    "models.studies.stepgraph": ("StepGraphError", "simulate_many", "simulate_plan", "step_graph"),
})
_WHERE = MappingProxyType({name: module for module, names in _MODULES.items() for name in names})


__all__: list[str] = [
    "__version__",
    "P2P_LEVEL", "PathType", "Route", "RouteError", "Router", "line_rate", "route", "route_bandwidth",
    "EFFICIENCIES", "HOST_CEILINGS", "MODES", "OVERHEADS", "Calibrated", "P2PError", "P2PReport",
    "P2PResult", "StagedCopy", "achieved_capacity", "p2p_latency_matrix",
    "p2p_matrix", "p2p_path", "p2p_report", "path_type_matrix", "staged_copy",
    "MaxFlowError", "maxflow_matrix",
    "MissingConstantError", "NcclProfile", "PROFILES", "UnknownNcclVersionError", "nccl_profile",
    "COLLECTIVES", "UnknownCollectiveError", "algbw", "busbw_factor", "busbw_to_algbw",
    "count_from_nbytes", "nbytes_from_count",
    "NCCL_COLLECTIVES", "AlgoTime", "ChannelGraph", "Communicator", "NoAlgorithmError", "Selection",
    "Tuning", "TuningError", "UnknownAlgorithmError", "UnknownProtocolError",
    "UnsupportedCollectiveError", "algo_time", "comm_channels", "select_algorithm", "tune",
    "tuning_table",
    "BinaryTree", "Chain", "DoubleBinaryTree", "RankTree", "TreeError", "binary_tree",
    "double_binary_tree", "intra_chain", "nccl_tree_depth", "rank_tree",
    "ChannelDuplication", "ChannelSearch", "ChannelSearchError", "LinkLoad", "dup_channels",
    "search_channels", "NcclSystem", "nccl_capacity",
    "COLLECTIVE_NAMES", "CollectiveEstimate", "EstimatePoint", "Estimator", "SizeError", "SubsetResult", "estimate", "pairwise",
    "subsets",
    "NetworkLoad", "network_load",
    "DEFAULT_MEASUREMENT", "MeasurementError", "MeasurementModel", "Measured", "measured",
    "BenchmarkParseError", "NcclTestsRun", "P2PBenchmark", "read_benchmark", "read_nccl_tests",
    "read_p2p_benchmark", "Calibration", "CalibrationError", "Check", "calibrate", "check",
    "FAIL_EACH", "FAILURE_GRAMMAR", "MAX_CASES", "ExecutorSpecError", "FabricDisconnectedError",
    "Failure", "FailureSpecError", "Sweep", "SweepRow", "SweepSizeError", "WhatIf", "WhatIfError",
    "apply_failures", "parse_degrade", "parse_failure", "parse_failures", "sweep",
    "PreparedFabric", "FrozenFabricError", "prepare",
    "Bound", "BoundError", "BoundTooLargeError", "Cut", "SubsetBound", "bound", "pairwise_bounds",
    "subset_bounds",
    "DTYPES", "PRESETS", "WORKLOAD_GRAMMAR", "UnknownDtypeError", "UnknownWorkloadError",
    "WorkloadError", "parse_workload", "workload",
    "GENERATIONS", "UnknownGenerationError", "UnsupportedDtypeError", "generation_of",
    "Plan", "PlanError", "Search", "calibrate_plan", "gpus_ranking", "plan", "search",
    "SimulationResult", "TaskGraph", "TaskGraphError", "read_task_graph", "simulate", "task_graph",
    "StepGraphError", "simulate_many", "simulate_plan", "step_graph",
]


# 0.2's face names that moved (models.compat) are found with a DeprecationWarning.
__getattr__, __dir__ = lazy_face(__name__, _WHERE, missing=_compat.moved_name)
