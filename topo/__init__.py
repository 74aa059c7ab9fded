"""dgx-topo fabrics: NVIDIA DGX interconnects as validated networkx graphs.

The flat public namespace of the fabric layer. It never imports :mod:`models` nor plotly.
"""

from .version import __version__
from .errors import (CountError, DgxTopoError, LimitError, SizeError, SystemSpecError, TopologyError,
                     TransformError, UnknownPartError, UnknownSystemError)
from .schema import ATTRIBUTES, EDGE_KINDS, NODE_KINDS, gpus, nodes_of_kind, schema_markdown, validate
from .specs import CPUS, GPUS, LINKS, NVSWITCHES, CpuSpec, GpuSpec, LinkSpec, SwitchSpec
from .dgx import dgx1, dgx1v, dgx2
from .cluster import MAX_HOSTS, NETWORKS, compute_nics, join_hosts
from .registry import SYSTEMS, VARIANTS, SystemSpec, build, cluster, parse_system_spec
from .layout import LayoutError, fabric_layout, layout_style
from .nvidia_smi import ConnectionMatrix, connection_matrix, format_connection_matrix
from .capacity import Bisection, bisection, bisection_bandwidth, injection_bandwidth
from .summary import FabricSummary, summarize
from .select import GpuSelectionError, parse_gpu_ids, parse_gpu_list, select_gpus
from .units import MAX_NBYTES, parse_count, parse_nbytes
from .pcie import connection_class, pcie_class, pcie_path
from .transform import add_links, remove_links, remove_nodes, scale_kind, scale_links
from .symmetry import gpu_automorphisms, interchangeable_gpus
from .io import (TopologyImportError, from_graphml, from_json, from_nccl_xml, from_nvidia_smi,
                 gpu_model, to_graphml, to_json, to_nccl_xml)

__all__ = [
    "__version__",
    "DgxTopoError", "TopologyError", "UnknownSystemError", "SystemSpecError", "SizeError",
    "CountError", "LimitError", "TransformError", "UnknownPartError",
    "ATTRIBUTES", "EDGE_KINDS", "NODE_KINDS", "gpus", "nodes_of_kind", "schema_markdown", "validate",
    "CPUS", "GPUS", "LINKS", "NVSWITCHES", "CpuSpec", "GpuSpec", "LinkSpec", "SwitchSpec",
    "dgx1", "dgx1v", "dgx2",
    "MAX_HOSTS", "NETWORKS", "compute_nics", "join_hosts",
    "SYSTEMS", "VARIANTS", "SystemSpec", "build", "cluster", "parse_system_spec",
    "LayoutError", "fabric_layout", "layout_style",
    "ConnectionMatrix", "connection_matrix", "format_connection_matrix",
    "Bisection", "bisection", "bisection_bandwidth", "injection_bandwidth",
    "FabricSummary", "summarize",
    "GpuSelectionError", "parse_gpu_ids", "parse_gpu_list", "select_gpus",
    "MAX_NBYTES", "parse_count", "parse_nbytes",
    "connection_class", "pcie_class", "pcie_path",
    "add_links", "remove_links", "remove_nodes", "scale_kind", "scale_links",
    "gpu_automorphisms", "interchangeable_gpus",
    "TopologyImportError", "gpu_model", "from_nvidia_smi", "from_nccl_xml", "to_nccl_xml",
    "to_json", "from_json", "to_graphml", "from_graphml",
]
