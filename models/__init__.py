"""dgx-topo models: what a fabric delivers, and the ``dgxtopo`` command line.

The cost layer imports :mod:`topo`, never the reverse, and does not import plotly.
"""

from .routes import (P2P_LEVEL, PathType, Route, RouteError, Router, line_rate, route,
                    route_bandwidth)
from .p2p import (EFFICIENCIES, MODES, OVERHEADS, Calibrated, P2PError, P2PReport, P2PResult,
                  achieved_capacity, format_p2p_report, maxflow_matrix, p2p_latency_matrix, p2p_matrix, p2p_path,
                  p2p_report, path_type_matrix)
# models.nccltests stays the module: its busbw() function is not re-exported under the same name.
from .nccl.profiles import MissingConstantError, NcclProfile, PROFILES, UnknownNcclVersionError, nccl_profile
from .nccltests import (COLLECTIVES, UnknownCollectiveError, algbw, busbw_factor, busbw_to_algbw,
                    count_from_nbytes, nbytes_from_count)
from .nccl.tuning import (NCCL_COLLECTIVES, AlgoTime, ChannelGraph, Communicator,
                     NoAlgorithmError, Selection, Tuning, TuningError, UnknownAlgorithmError,
                     UnknownProtocolError, UnsupportedCollectiveError, algo_time, comm_channels,
                     select_algorithm, tune, tuning_table)
from .nccl.trees import (BinaryTree, Chain, DoubleBinaryTree, RankTree, TreeError, binary_tree,
                    double_binary_tree, intra_chain, nccl_tree_depth, rank_tree)
from .nccl.search import ChannelSearch, ChannelSearchError, ChannelDuplication, LinkLoad, dup_channels, search_channels
from .nccl.system import NcclSystem, nccl_capacity
from .collectives import (COLLECTIVE_NAMES, CollectiveEstimate, EstimatePoint, SizeError, SubsetResult, estimate,
                          pairwise, subsets)

__all__: list[str] = [
    "P2P_LEVEL", "PathType", "Route", "RouteError", "Router", "line_rate", "route",
    "route_bandwidth",
    "EFFICIENCIES", "MODES", "OVERHEADS", "Calibrated", "P2PError", "P2PReport", "P2PResult",
    "achieved_capacity", "format_p2p_report", "maxflow_matrix", "p2p_latency_matrix", "p2p_matrix", "p2p_path",
    "p2p_report", "path_type_matrix",
    "MissingConstantError", "NcclProfile", "PROFILES", "UnknownNcclVersionError", "nccl_profile",
    "COLLECTIVES", "UnknownCollectiveError", "algbw", "busbw_factor", "busbw_to_algbw",
    "count_from_nbytes", "nbytes_from_count",
    "NCCL_COLLECTIVES", "AlgoTime", "ChannelDuplication", "ChannelGraph", "Communicator",
    "NoAlgorithmError", "Selection", "Tuning", "TuningError", "UnknownAlgorithmError",
    "UnknownProtocolError", "UnsupportedCollectiveError", "algo_time", "comm_channels",
    "dup_channels", "select_algorithm", "tune", "tuning_table",
    "BinaryTree", "Chain", "DoubleBinaryTree", "RankTree", "TreeError", "binary_tree",
    "double_binary_tree", "intra_chain", "nccl_tree_depth", "rank_tree",
    "ChannelSearch", "ChannelSearchError", "LinkLoad", "nccl_capacity", "search_channels", "NcclSystem",
    "COLLECTIVE_NAMES", "CollectiveEstimate", "EstimatePoint", "SizeError", "SubsetResult", "estimate", "pairwise",
    "subsets",
]
