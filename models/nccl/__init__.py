"""NCCL's view of a fabric and its choices, per NCCL version.

The layers, in the order data flows (each imports only the ones before it):

``profiles``
    Every NCCL constant, one frozen profile per release.
``system``
    NCCL's view of one fabric (:class:`NcclSystem`): which hops its channels take and what each
    link is charged, derived from the graph's own edge attributes through a profile.
``tuning``
    NCCL's tuning model: latency and bandwidth per (algorithm, protocol), and the selection.
``search``
    NCCL's channel search (rings and trees) on an :class:`NcclSystem`, with channel duplication.
``trees``
    NCCL's tree shapes (chains, the double binary tree).
"""

from .profiles import (ALGORITHMS, DEFAULT_VERSION, HARDWARE, PATH_TYPES, PROFILES, PROTOCOLS, DupRule,
                       MissingConstantError, NcclProfile, UnknownNcclVersionError, nccl_profile)
from .system import INTEL_P2P_OVERHEAD, NcclSystem, NcclSystemError, NetRoute, nccl_capacity
from .tuning import (NCCL_COLLECTIVES, AlgoTime, ChannelGraph, Communicator, NoAlgorithmError, Selection,
                     Tuning, TuningError, UnknownAlgorithmError, UnknownProtocolError,
                     UnsupportedCollectiveError, algo_time, comm_channels, select_algorithm, tune,
                     tuning_table)
from .search import (ChannelDuplication, ChannelSearch, ChannelSearchError, LinkLoad, dup_channels,
                     search_channels, search_channels_in)
from .trees import (BinaryTree, Chain, DoubleBinaryTree, RankTree, TreeError, binary_tree,
                    double_binary_tree, intra_chain, nccl_tree_depth, rank_tree)

__all__ = [
    "ALGORITHMS", "DEFAULT_VERSION", "HARDWARE", "PATH_TYPES", "PROFILES", "PROTOCOLS", "DupRule",
    "MissingConstantError", "NcclProfile", "UnknownNcclVersionError", "nccl_profile",
    "INTEL_P2P_OVERHEAD", "NcclSystem", "NcclSystemError", "NetRoute", "nccl_capacity",
    "NCCL_COLLECTIVES", "AlgoTime", "ChannelGraph", "Communicator", "NoAlgorithmError", "Selection",
    "Tuning", "TuningError", "UnknownAlgorithmError", "UnknownProtocolError",
    "UnsupportedCollectiveError", "algo_time", "comm_channels", "select_algorithm", "tune",
    "tuning_table",
    "ChannelDuplication", "ChannelSearch", "ChannelSearchError", "LinkLoad", "dup_channels",
    "search_channels", "search_channels_in",
    "BinaryTree", "Chain", "DoubleBinaryTree", "RankTree", "TreeError", "binary_tree",
    "double_binary_tree", "intra_chain", "nccl_tree_depth", "rank_tree",
]
