"""dgx-topo fabrics: NVIDIA DGX interconnects as validated networkx graphs.

The flat public namespace of the fabric layer. It never imports :mod:`models` nor plotly.
"""

from .errors import DgxTopoError, TopologyError, UnknownSystemError
from .schema import ATTRIBUTES, EDGE_KINDS, NODE_KINDS, gpus, nodes_of_kind, schema_markdown, validate
from .specs import CPUS, GPUS, LINKS, NVSWITCHES, CpuSpec, GpuSpec, LinkSpec, SwitchSpec
from .dgx import SYSTEMS, build, dgx1, dgx1v, dgx2
from .cluster import NETWORKS, cluster, compute_nics
from .layout import LayoutError, fabric_layout, layout_style
from .nvidia_smi import ConnectionMatrix, connection_matrix, format_connection_matrix
from .capacity import Bisection, bisection, bisection_bandwidth, injection_bandwidth
from .summary import FabricSummary, summarize
from .select import GpuSelectionError, parse_gpu_list, select_gpus
from .symmetry import gpu_automorphisms, interchangeable_gpus
from .io import (TopologyImportError, from_graphml, from_json, from_nccl_xml, from_nvidia_smi,
                 gpu_model, to_graphml, to_json)

__all__ = [
    "DgxTopoError", "TopologyError", "UnknownSystemError",
    "ATTRIBUTES", "EDGE_KINDS", "NODE_KINDS", "gpus", "nodes_of_kind", "schema_markdown", "validate",
    "CPUS", "GPUS", "LINKS", "NVSWITCHES", "CpuSpec", "GpuSpec", "LinkSpec", "SwitchSpec",
    "SYSTEMS", "build", "dgx1", "dgx1v", "dgx2",
    "NETWORKS", "cluster", "compute_nics",
    "LayoutError", "fabric_layout", "layout_style",
    "ConnectionMatrix", "connection_matrix", "format_connection_matrix",
    "Bisection", "bisection", "bisection_bandwidth", "injection_bandwidth",
    "FabricSummary", "summarize",
    "GpuSelectionError", "parse_gpu_list", "select_gpus",
    "gpu_automorphisms", "interchangeable_gpus",
    "TopologyImportError", "gpu_model", "from_nvidia_smi", "from_nccl_xml",
    "to_json", "from_json", "to_graphml", "from_graphml",
]
