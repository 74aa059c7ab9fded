"""The engine: NCCL's view of a fabric, the one prepared fabric, routes, symmetry and nccl-tests'
conventions (the floor every other wing of :mod:`models` stands on).

Its face lists what a user calls, each imported from its module on first use (:mod:`topo.faces`):
importing ``models.engine`` imports none of its modules.
"""

from types import MappingProxyType
from typing import TYPE_CHECKING

from topo.faces import lazy_face

# What a user calls, and the module that defines it.
_FACE = MappingProxyType({
    "prepare": "models.engine.fabric",
    "PreparedFabric": "models.engine.fabric",
    "FrozenFabricError": "models.engine.fabric",
    "nccl_profile": "models.engine.nccl.profiles",
    "NcclProfile": "models.engine.nccl.profiles",
    "parse_nccl_version": "models.engine.nccl.profiles",
    "versions_table": "models.engine.nccl.profiles",
    "NcclSystem": "models.engine.nccl.system",
    "search_channels": "models.engine.nccl.search",
    "ChannelSearch": "models.engine.nccl.search",
    "channel_graphs": "models.engine.nccl.channels",
    "tune": "models.engine.nccl.tuning",
    "tuning_table": "models.engine.nccl.tuning",
    "select_algorithm": "models.engine.nccl.tuning",
    "route": "models.engine.routes",
    "Route": "models.engine.routes",
    "Router": "models.engine.routes",
    "PathType": "models.engine.routes",
    "GpuSymmetry": "models.engine.symmetry",
    "FabricSymmetry": "models.engine.symmetry",
    "busbw_factor": "models.engine.nccltests",
    "algbw": "models.engine.nccltests",
    "algbw_to_busbw": "models.engine.nccltests",
    "busbw_to_algbw": "models.engine.nccltests",
    "nbytes_from_count": "models.engine.nccltests",
    "count_from_nbytes": "models.engine.nccltests",
})

__all__ = list(_FACE)

if TYPE_CHECKING:  # what a type checker sees of the face: each name as its module annotates it
    from .fabric import FrozenFabricError, PreparedFabric, prepare
    from .nccl.channels import channel_graphs
    from .nccl.profiles import NcclProfile, nccl_profile, parse_nccl_version, versions_table
    from .nccl.search import ChannelSearch, search_channels
    from .nccl.system import NcclSystem
    from .nccl.tuning import select_algorithm, tune, tuning_table
    from .nccltests import (algbw, algbw_to_busbw, busbw_factor, busbw_to_algbw, count_from_nbytes,
                            nbytes_from_count)
    from .routes import PathType, Route, Router, route
    from .symmetry import FabricSymmetry, GpuSymmetry

__getattr__, __dir__ = lazy_face(__name__, _FACE)
