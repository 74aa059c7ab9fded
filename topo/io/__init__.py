"""Fabrics in and out: import real machines, export graphs. One module per format.

:mod:`topo.io.smi_text`
    :func:`from_nvidia_smi` reads the text ``nvidia-smi topo -m`` prints on any machine.
:mod:`topo.io.nccl_xml`
    :func:`from_nccl_xml` reads the topology NCCL dumps (``NCCL_TOPO_DUMP_FILE``);
    :func:`to_nccl_xml` writes one host of a fabric so.
:mod:`topo.io.fabric_file`
    :func:`to_json` / :func:`from_json` and :func:`to_graphml` / :func:`from_graphml`: a
    fabric written and read back with the same nodes, edges and attributes in the same order.
:mod:`topo.io.known`
    What a printout cannot say, from the built-in system of its GPU model (NVSwitch wiring,
    CPU nodes, NIC ports, PCIe links, the hosts of an NVLink domain).
:mod:`topo.io.common`
    What they share: :class:`TopologyImportError`, :func:`gpu_model`, the default links by
    GPU generation, safe XML parsing.

Every importer returns a validated fabric (schema in :mod:`topo.schema`) and raises
:class:`TopologyImportError` naming the line, element or field for input it does not
understand or that contradicts itself.

Examples
--------
>>> import topo
>>> text = topo.format_connection_matrix(topo.connection_matrix(topo.dgx1v()))
>>> G = from_nvidia_smi(text, gpu="Tesla V100-SXM2-16GB")
>>> from_json(to_json(G)).edges["gpu0", "gpu3"] == G.edges["gpu0", "gpu3"]
True
"""

from types import MappingProxyType
from typing import TYPE_CHECKING

from topo.faces import lazy_face

# What a user calls, and the module that defines it (imported on first use: reading one format
# does not import the others).
_FACE = MappingProxyType({
    "TopologyImportError": "topo.io.common",
    "gpu_model": "topo.io.common",
    "from_nvidia_smi": "topo.io.smi_text",
    "from_nccl_xml": "topo.io.nccl_xml",
    "to_nccl_xml": "topo.io.nccl_xml",
    "to_json": "topo.io.fabric_file",
    "from_json": "topo.io.fabric_file",
    "to_graphml": "topo.io.fabric_file",
    "from_graphml": "topo.io.fabric_file",
    "JSON_FORMAT": "topo.io.fabric_file",
    "JSON_VERSION": "topo.io.fabric_file",
    "DEFAULT_PCIE": "topo.io.common",
    "DEFAULT_NIC_LINK": "topo.io.common",
    "NVLINK_BY_SM": "topo.io.nccl_xml",
})

__all__ = list(_FACE)

if TYPE_CHECKING:  # what a type checker sees of the face: each name as its module annotates it
    from .common import DEFAULT_NIC_LINK, DEFAULT_PCIE, TopologyImportError, gpu_model
    from .fabric_file import JSON_FORMAT, JSON_VERSION, from_graphml, from_json, to_graphml, to_json
    from .nccl_xml import NVLINK_BY_SM, from_nccl_xml, to_nccl_xml
    from .smi_text import from_nvidia_smi

__getattr__, __dir__ = lazy_face(__name__, _FACE)
