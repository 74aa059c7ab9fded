"""NCCL's view of a fabric and its choices, per NCCL version.

The layers, in the order data flows (each imports only the ones before it):

``releases``
    What each release does differently, typed: one Enum per behaviour, one table of releases.
``profiles``
    Every NCCL constant, one frozen profile per release (which carries its behaviour row).
``system``
    NCCL's view of one fabric (:class:`NcclSystem`): which hops its channels take and what each
    link is charged, derived from the graph's own edge attributes through a profile.
``reasons``
    Why NCCL disables an algorithm, a protocol or NVLS, as codes and numbers (the words:
    :mod:`models.present.reasons_text`).
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

import sys
from types import MappingProxyType

from topo.faces import Face, lazy_face

# What a user calls, and the module that defines it (imported on first use: importing one module of
# this package does not import its siblings).
_FACE = MappingProxyType({
    "nccl_profile": "models.engine.nccl.profiles",
    "NcclProfile": "models.engine.nccl.profiles",
    "PROFILES": "models.engine.nccl.profiles",
    "DEFAULT_VERSION": "models.engine.nccl.profiles",
    "parse_nccl_version": "models.engine.nccl.profiles",
    "versions_table": "models.engine.nccl.profiles",
    "UnknownNcclVersionError": "models.engine.nccl.profiles",
    "MissingConstantError": "models.engine.nccl.profiles",
    "NcclSystem": "models.engine.nccl.system",
    "nccl_capacity": "models.engine.nccl.system",
    "tune": "models.engine.nccl.tuning",
    "tuning_table": "models.engine.nccl.tuning",
    "select_algorithm": "models.engine.nccl.tuning",
    "algo_time": "models.engine.nccl.tuning",
    "Tuning": "models.engine.nccl.tuning",
    "Selection": "models.engine.nccl.tuning",
    "Communicator": "models.engine.nccl.tuning",
    "ChannelGraph": "models.engine.nccl.tuning",
    "search_channels": "models.engine.nccl.search",
    "ChannelSearch": "models.engine.nccl.search",
    "ChannelSearchError": "models.engine.nccl.search",
    "channel_graphs": "models.engine.nccl.channels",
    "ChannelGraphs": "models.engine.nccl.channels",
    "nccl_view": "models.engine.nccl.channels",
    "legacy_rings": "models.engine.nccl.legacy_rings",
    "nvls_search": "models.engine.nccl.nvls",
    "nvls_support": "models.engine.nccl.nvls",
    "double_binary_tree": "models.engine.nccl.trees",
    "ALGORITHMS": "models.engine.nccl.profiles",
    "PROTOCOLS": "models.engine.nccl.profiles",
    "NCCL_COLLECTIVES": "models.engine.nccl.tuning",
})

#: Names this face listed in 0.2 and 0.3.0 that it no longer does -> where each is now.
MOVED_NAMES = MappingProxyType({
    "AlgoTime": "models.engine.nccl.tuning.AlgoTime",
    "BinaryTree": "models.engine.nccl.trees.BinaryTree",
    "Chain": "models.engine.nccl.trees.Chain",
    "ChannelDuplication": "models.engine.nccl.search.ChannelDuplication",
    "DoubleBinaryTree": "models.engine.nccl.trees.DoubleBinaryTree",
    "DupRule": "models.engine.nccl.profiles.DupRule",
    "HARDWARE": "models.engine.nccl.profiles.HARDWARE",
    "INTEL_P2P_OVERHEAD": "models.engine.nccl.system.INTEL_P2P_OVERHEAD",
    "LegacyRingConstants": "models.engine.nccl.profiles.LegacyRings",
    "LegacyRings": "models.engine.nccl.legacy_rings.LegacyRings",
    "LegacyRingsError": "models.engine.nccl.legacy_rings.LegacyRingsError",
    "LinkLoad": "models.engine.nccl.search.LinkLoad",
    "NcclRelease": "models.engine.nccl.profiles.NcclRelease",
    "NcclSystemError": "models.engine.nccl.system.NcclSystemError",
    "NetRoute": "models.engine.nccl.system.NetRoute",
    "NoAlgorithmError": "models.engine.nccl.tuning.NoAlgorithmError",
    "NvlsError": "models.engine.nccl.nvls.NvlsError",
    "NvlsGraph": "models.engine.nccl.nvls.NvlsGraph",
    "NvlsRules": "models.engine.nccl.profiles.NvlsRules",
    "PATH_TYPES": "models.engine.nccl.profiles.PATH_TYPES",
    "PatRules": "models.engine.nccl.profiles.PatRules",
    "RankTree": "models.engine.nccl.trees.RankTree",
    "TreeError": "models.engine.nccl.trees.TreeError",
    "TuningError": "models.engine.nccl.tuning.TuningError",
    "UnknownAlgorithmError": "models.engine.nccl.tuning.UnknownAlgorithmError",
    "UnknownProtocolError": "models.engine.nccl.tuning.UnknownProtocolError",
    "UnsupportedCollectiveError": "models.engine.nccl.tuning.UnsupportedCollectiveError",
    "binary_tree": "models.engine.nccl.trees.binary_tree",
    "comm_channels": "models.engine.nccl.tuning.comm_channels",
    "dup_channels": "models.engine.nccl.search.dup_channels",
    "format_versions_table": "models.present.versions_text.format_versions_table",
    "intra_chain": "models.engine.nccl.trees.intra_chain",
    "nccl_tree_depth": "models.engine.nccl.trees.nccl_tree_depth",
    "nvlink_cliques": "models.engine.nccl.nvls.nvlink_cliques",
    "nvlink_rings": "models.engine.nccl.legacy_rings.nvlink_rings",
    "nvls_choice": "models.engine.nccl.tuning.nvls_choice",
    "rank_tree": "models.engine.nccl.trees.rank_tree",
    "search_channels_in": "models.engine.nccl.search.search_channels_in",
    "sharp_switch": "models.engine.nccl.nvls.sharp_switch",
})

__all__ = list(_FACE)

__getattr__, __dir__ = lazy_face(__name__, _FACE, MOVED_NAMES)
# legacy_rings is the function and its module: importing models/engine/nccl/legacy_rings.py (as
# channels does) leaves the face's name the function.
sys.modules[__name__].__class__ = Face
