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
``communicator``
    The tuning model's inputs (a communicator, its channel graphs) and the working of one cell.
``algorithms``
    One module per NCCL algorithm (ring, tree, nvls, nvls_tree, pat), each an object that says
    where it applies, its bandwidth, latency and links; :data:`ALGORITHMS`, NCCL's set.
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
from typing import TYPE_CHECKING

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
    "Communicator": "models.engine.nccl.communicator",
    "ChannelGraph": "models.engine.nccl.communicator",
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
    "ALGORITHMS": "models.engine.nccl.algorithms.catalog",
    "Algorithm": "models.engine.nccl.algorithms.base",
    "PROTOCOLS": "models.engine.nccl.profiles",
    "NCCL_COLLECTIVES": "models.engine.nccl.tuning",
})

__all__ = list(_FACE)

if TYPE_CHECKING:  # what a type checker sees of the face: each name as its module annotates it
    from .algorithms.base import Algorithm
    from .algorithms.catalog import ALGORITHMS
    from .channels import ChannelGraphs, channel_graphs, nccl_view
    from .communicator import ChannelGraph, Communicator
    from .legacy_rings import legacy_rings
    from .nvls import nvls_search, nvls_support
    from .profiles import (DEFAULT_VERSION, PROFILES, PROTOCOLS, MissingConstantError, NcclProfile,
                           UnknownNcclVersionError, nccl_profile, parse_nccl_version, versions_table)
    from .search import ChannelSearch, ChannelSearchError, search_channels
    from .system import NcclSystem, nccl_capacity
    from .trees import double_binary_tree
    from .tuning import NCCL_COLLECTIVES, Selection, Tuning, algo_time, select_algorithm, tune, tuning_table

__getattr__, __dir__ = lazy_face(__name__, _FACE)
# legacy_rings is the function and its module: importing models/engine/nccl/legacy_rings.py (as
# channels does) leaves the face's name the function.
sys.modules[__name__].__class__ = Face
