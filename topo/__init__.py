"""dgx-topo fabrics: NVIDIA DGX interconnects as validated networkx graphs.

The flat public namespace of the fabric layer. It never imports :mod:`models` nor plotly.
"""

import sys
from types import MappingProxyType
from typing import TYPE_CHECKING

from .faces import Face, lazy_face
from .version import __version__

# Where each public name lives; the module is imported when one of its names is first asked for
# (topo.faces), so that ``import topo`` (and the command line's start-up) imports no networkx or
# numpy before a name is used.
_MODULES = MappingProxyType({
    "topo.version": ("__version__",),
    "topo.errors": ("CountError", "DgxTopoError", "LimitError", "SizeError", "SystemSpecError",
                    "TopologyError", "TransformError", "UnknownPartError", "UnknownSystemError"),
    "topo.schema": ("ATTRIBUTES", "EDGE_KINDS", "NODE_KINDS", "gpus", "nodes_of_kind", "schema_markdown",
                    "validate"),
    "topo.specs": ("CPUS", "GPUS", "LINKS", "NVSWITCHES", "CpuSpec", "GpuSpec", "LinkSpec", "SwitchSpec"),
    "topo.dgx": ("dgx1", "dgx1v", "dgx2"),
    "topo.cluster": ("MAX_HOSTS", "NETWORKS", "compute_nics", "join_hosts"),
    "topo.registry": ("SYSTEMS", "VARIANTS", "SystemSpec", "build", "cluster", "parse_system_spec"),
    "topo.layout": ("LayoutError", "fabric_layout", "layout_style"),
    "topo.nvidia_smi": ("ConnectionMatrix", "connection_matrix", "format_connection_matrix"),
    "topo.capacity": ("Bisection", "bisection", "bisection_bandwidth", "injection_bandwidth"),
    "topo.summary": ("FabricSummary", "summarize"),
    "topo.select": ("GpuSelectionError", "parse_gpu_ids", "parse_gpu_list", "select_gpus"),
    "topo.units": ("MAX_NBYTES", "parse_count", "parse_nbytes"),
    "topo.pcie": ("connection_class", "pcie_class", "pcie_path"),
    "topo.transform": ("add_links", "remove_links", "remove_nodes", "scale_kind", "scale_links"),
    "topo.symmetry": ("gpu_automorphisms", "interchangeable_gpus"),
    "topo.io": ("TopologyImportError", "from_graphml", "from_json", "from_nccl_xml", "from_nvidia_smi",
                "gpu_model", "to_graphml", "to_json", "to_nccl_xml"),
})
_FACE = MappingProxyType({name: module for module, names in _MODULES.items() for name in names})


__all__ = list(_FACE)

if TYPE_CHECKING:  # what a type checker sees of the face: each name as its module annotates it
    from .errors import (CountError, DgxTopoError, LimitError, SizeError, SystemSpecError,
        TopologyError, TransformError, UnknownPartError, UnknownSystemError)
    from .schema import (ATTRIBUTES, EDGE_KINDS, NODE_KINDS, gpus, nodes_of_kind, schema_markdown,
        validate)
    from .specs import (CPUS, GPUS, LINKS, NVSWITCHES, CpuSpec, GpuSpec, LinkSpec, SwitchSpec)
    from .dgx import (dgx1, dgx1v, dgx2)
    from .cluster import (MAX_HOSTS, NETWORKS, compute_nics, join_hosts)
    from .registry import (SYSTEMS, VARIANTS, SystemSpec, build, cluster, parse_system_spec)
    from .layout import (LayoutError, fabric_layout, layout_style)
    from .nvidia_smi import (ConnectionMatrix, connection_matrix, format_connection_matrix)
    from .capacity import (Bisection, bisection, bisection_bandwidth, injection_bandwidth)
    from .summary import (FabricSummary, summarize)
    from .select import (GpuSelectionError, parse_gpu_ids, parse_gpu_list, select_gpus)
    from .units import (MAX_NBYTES, parse_count, parse_nbytes)
    from .pcie import (connection_class, pcie_class, pcie_path)
    from .transform import (add_links, remove_links, remove_nodes, scale_kind, scale_links)
    from .symmetry import (gpu_automorphisms, interchangeable_gpus)
    from .io import (TopologyImportError, from_graphml, from_json, from_nccl_xml, from_nvidia_smi,
        gpu_model, to_graphml, to_json, to_nccl_xml)

__getattr__, __dir__ = lazy_face(__name__, _FACE)
sys.modules[__name__].__class__ = Face  # topo.cluster stays the function when topo/cluster.py is imported
