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

from topo.version import __version__

from . import compat as _compat

_compat.install()

from .engine.routes import P2P_LEVEL, PathType, Route, RouteError, Router, line_rate, route, route_bandwidth
from .predict.p2p import (EFFICIENCIES, HOST_CEILINGS, MODES, OVERHEADS, Calibrated, P2PError, P2PReport,
                  P2PResult, StagedCopy, achieved_capacity, p2p_latency_matrix,
                  p2p_matrix, p2p_path, p2p_report, path_type_matrix, staged_copy)
from .predict.maxflow import MaxFlowError, maxflow_matrix
from .engine.nccl.profiles import MissingConstantError, NcclProfile, PROFILES, UnknownNcclVersionError, nccl_profile
from .engine.nccltests import (COLLECTIVES, UnknownCollectiveError, algbw, busbw_factor, busbw_to_algbw,
                        count_from_nbytes, nbytes_from_count)
from .engine.nccl.tuning import (NCCL_COLLECTIVES, AlgoTime, ChannelGraph, Communicator, NoAlgorithmError,
                          Selection, Tuning, TuningError, UnknownAlgorithmError, UnknownProtocolError,
                          UnsupportedCollectiveError, algo_time, comm_channels, select_algorithm, tune,
                          tuning_table)
from .engine.nccl.trees import (BinaryTree, Chain, DoubleBinaryTree, RankTree, TreeError, binary_tree,
                         double_binary_tree, intra_chain, nccl_tree_depth, rank_tree)
from .engine.nccl.search import (ChannelDuplication, ChannelSearch, ChannelSearchError, LinkLoad, dup_channels,
                          search_channels)
from .engine.nccl.system import NcclSystem, nccl_capacity
from .predict.collectives import (COLLECTIVE_NAMES, CollectiveEstimate, EstimatePoint, Estimator, SizeError, SubsetResult, estimate,
                          pairwise, subsets)
from .predict.network import NetworkLoad, network_load
from .predict.measure import DEFAULT as DEFAULT_MEASUREMENT, MeasurementError, MeasurementModel, Measured, measured
from .studies.benchmarks import (BenchmarkParseError, NcclTestsRun, P2PBenchmark, read_benchmark,
                         read_nccl_tests, read_p2p_benchmark)
from .studies.calibration import Calibration, CalibrationError, Check, calibrate, check
from .studies.whatif import (FAIL_EACH, FAILURE_GRAMMAR, FabricDisconnectedError, Failure, FailureSpecError,
                             WhatIf, WhatIfError, apply_failures, parse_degrade, parse_failure, parse_failures)
from .studies.sweep import MAX_CASES, ExecutorSpecError, Sweep, SweepRow, SweepSizeError, sweep
from .engine.fabric import FrozenFabricError, PreparedFabric, prepare
from .studies.bounds import (Bound, BoundError, BoundTooLargeError, Cut, SubsetBound, bound, pairwise_bounds,
                     subset_bounds)
from .studies.workload import (DTYPES, PRESETS, WORKLOAD_GRAMMAR, UnknownDtypeError, UnknownWorkloadError,
                       WorkloadError, parse_workload, workload)
from .studies.compute import GENERATIONS, UnknownGenerationError, UnsupportedDtypeError, generation_of
from .studies.planner import Plan, PlanError, Search, calibrate_plan, gpus_ranking, plan, search
from .predict.simulate import SimulationResult, TaskGraph, TaskGraphError, read_task_graph, simulate, task_graph
from .studies.stepgraph import StepGraphError, simulate_many, simulate_plan, step_graph

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


def __getattr__(name: str):
    """0.2's face names that moved (:mod:`models.compat`), with a DeprecationWarning."""
    return _compat.moved_name(name)
