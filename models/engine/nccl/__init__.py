"""NCCL's view of a fabric and its choices, per NCCL version.

The layers, in the order data flows (each imports only the ones before it):

``releases``
    What each release does differently, typed: one Enum per behaviour, one table of releases.
``profiles``
    Every NCCL constant, one frozen profile per release (which carries its behaviour row).
``system``
    NCCL's view of one fabric (:class:`NcclSystem`): which hops its channels take and what each
    link is charged, derived from the graph's own edge attributes through a profile.
``tuning``
    NCCL's tuning model: latency and bandwidth per (algorithm, protocol), and the selection.
``search``
    NCCL's channel search (rings and trees) on an :class:`NcclSystem`, with channel duplication.
``trees``
    NCCL's tree shapes (chains, the double binary tree).
``legacy_rings``
    NCCL 2.0-2.4's ring construction from NVLink counts (before the topology search).
``nvls``
    NVLink SHARP: NCCL's NVLS enabling and NVLS search graph.
``channels``
    :func:`channel_graphs`: the channel graphs and communicator a release builds (with NVLS and
    multi-node NVLink cliques).
"""

from .profiles import (ALGORITHMS, DEFAULT_VERSION, HARDWARE, PATH_TYPES, PROFILES, PROTOCOLS, DupRule,
                       NvlsRules, PatRules,
                       LegacyRings as LegacyRingConstants, MissingConstantError, NcclProfile, NcclRelease,
                       UnknownNcclVersionError, format_versions_table, nccl_profile, parse_nccl_version,
                       versions_table)
from .system import INTEL_P2P_OVERHEAD, NcclSystem, NcclSystemError, NetRoute, nccl_capacity
from .tuning import (NCCL_COLLECTIVES, AlgoTime, ChannelGraph, Communicator, NoAlgorithmError, Selection,
                     Tuning, TuningError, UnknownAlgorithmError, UnknownProtocolError,
                     UnsupportedCollectiveError, algo_time, comm_channels, nvls_choice,
                     select_algorithm, tune, tuning_table)
from .search import (ChannelDuplication, ChannelSearch, ChannelSearchError, LinkLoad, dup_channels,
                     search_channels, search_channels_in)
from .legacy_rings import LegacyRings, LegacyRingsError, legacy_rings, nvlink_rings
from .nvls import NvlsError, NvlsGraph, nvlink_cliques, nvls_search, nvls_support, sharp_switch
from .channels import ChannelGraphs, channel_graphs, nccl_view
from .trees import (BinaryTree, Chain, DoubleBinaryTree, RankTree, TreeError, binary_tree,
                    double_binary_tree, intra_chain, nccl_tree_depth, rank_tree)

__all__ = [
    "ALGORITHMS", "DEFAULT_VERSION", "HARDWARE", "PATH_TYPES", "PROFILES", "PROTOCOLS", "DupRule",
    "MissingConstantError", "NcclProfile", "UnknownNcclVersionError", "nccl_profile",
    "LegacyRingConstants", "NcclRelease", "format_versions_table", "parse_nccl_version",
    "versions_table", "LegacyRings", "LegacyRingsError", "legacy_rings", "nvlink_rings",
    "ChannelGraphs", "channel_graphs", "nccl_view",
    "NvlsError", "NvlsGraph", "nvlink_cliques", "nvls_search", "nvls_support", "sharp_switch",
    "nvls_choice", "NvlsRules", "PatRules",
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
