"""The known system of a GPU model: what an import cannot read, taken from the DGX built on it.

``nvidia-smi topo -m`` names every device pair's class but not the NVSwitch wiring, the CPU
model and the links between NUMA nodes, which NICs have a network port, the PCIe link of each
device, nor the PCIe class of a GPU pair that NVLink hides. The built-in system whose GPUs are
the imported model knows all of that: :func:`reference_system` finds it in the registry
(:data:`topo.registry.SYSTEMS` and its variants, built on demand), so a system or GPU model
added there is found without further code. The importer (:func:`topo.io.smi_text.from_nvidia_smi`) takes
from it only what the text leaves open and what agrees with the text, and says so.

Examples
--------
>>> ref = reference_system("H100-SXM5-80GB")
>>> ref.name, ref.exact, wiring(ref.graph, ref.gpu(0, 0))
('dgxh100', True, (('nvswitch0', 5), ('nvswitch1', 4), ('nvswitch2', 4), ('nvswitch3', 5)))
>>> reference_system("A100-SXM4-80GB").name in ("dgxa100", "dgxa100-80g")
True
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from ..nvidia_smi import connection_matrix
from ..pcie import pcie_class, pcie_path
from ..registry import SYSTEMS, VARIANTS, build
from ..schema import gpus, nodes_of_kind
from ..specs import GPUS
from .common import TopologyImportError

__all__ = ["ReferenceSystem", "reference_system", "wiring", "upstream_link"]


@dataclass(frozen=True, slots=True)
class ReferenceSystem:
    """A built-in system an import takes facts from.

    Attributes
    ----------
    name : str
        Its key in :data:`topo.registry.SYSTEMS` or :data:`topo.registry.VARIANTS`.
    exact : bool
        Its GPUs are the imported model; False when only the NVLink generation and port count
        agree (the same baseboard family, e.g. an A100 80 GB on the DGX A100's board).
    graph : networkx.DiGraph
        The system, freshly built (every host).
    """

    name: str
    exact: bool
    graph: nx.DiGraph

    def gpu(self, host: int, index: int):
        """The reference's GPU node of ``host`` with CUDA number ``index``, or None."""
        for node in gpus(self.graph):
            data = self.graph.nodes[node]
            if data["host"] == host and data["index"] == index:
                return node
        return None

    def hosts(self) -> list:
        """Hosts of the reference that have GPUs, in order."""
        return sorted({self.graph.nodes[g]["host"] for g in gpus(self.graph)})

    def matrix(self, host: int = 0):
        """The reference's :func:`topo.connection_matrix` of ``host``."""
        return connection_matrix(self.graph, host=host)

    def hidden_class(self, host: int, a: int, b: int):
        """The PCIe class between GPUs ``a`` and ``b`` of ``host`` that nvidia-smi hides behind
        ``NV#``, or None when the reference has no such pair or no PCIe path between them."""
        u, v = self.gpu(host, a), self.gpu(host, b)
        if u is None or v is None:
            return None
        path = pcie_path(self.graph, u, v)
        return None if path is None else pcie_class(self.graph, path)

    def nic(self, host: int, name: str):
        """The reference's NIC of ``host`` that nvidia-smi names ``name``, or None."""
        for node in nodes_of_kind(self.graph, "nic"):
            data = self.graph.nodes[node]
            if data["host"] == host and data["name"] == name:
                return node
        return None

    def cpus(self, host: int = 0) -> list:
        """CPU (NUMA) nodes of ``host`` in index order."""
        return [n for n in nodes_of_kind(self.graph, "cpu") if self.graph.nodes[n]["host"] == host]


def reference_system(gpu: str, like: str | None = "auto") -> ReferenceSystem | None:
    """The built-in system to take what an import cannot read from.

    Parameters
    ----------
    gpu : str
        A key of :data:`topo.specs.GPUS` (the imported GPU model).
    like : str or None
        ``"auto"``: the first registered system or variant whose GPUs are all that model, else
        the first whose GPUs have its NVLink generation and port count; a key of
        :data:`topo.registry.SYSTEMS` or :data:`topo.registry.VARIANTS`: that system; None: none.

    Returns
    -------
    ReferenceSystem or None

    Raises
    ------
    TopologyImportError
        For ``like`` that is not ``"auto"``, None or a registered system, or a system whose
        GPUs are of another NVLink generation than ``gpu``.
    """
    if like is None:
        return None
    spec = GPUS[gpu]
    names = (*SYSTEMS, *VARIANTS)
    if like != "auto":
        if not isinstance(like, str) or like not in names:
            raise TopologyImportError(f"like={like!r}: expected 'auto', None or a built-in system, one "
                                      f"of {', '.join(names)}")
        G = build(like)
        models = {G.nodes[g]["model"] for g in gpus(G)}
        others = {key for key, s in GPUS.items() if s.model in models}
        if any(GPUS[key].nvlink != spec.nvlink for key in others):
            raise TopologyImportError(f"like={like!r}: its GPUs ({', '.join(sorted(models))}) are not of "
                                      f"the NVLink generation of a {spec.model} ({spec.nvlink})")
        return ReferenceSystem(like, models == {spec.model}, G)
    family = None
    for name in names:
        G = build(name)
        models = {G.nodes[g]["model"] for g in gpus(G)}
        if models == {spec.model}:
            return ReferenceSystem(name, True, G)
        keys = [key for key, s in GPUS.items() if s.model in models]
        if family is None and keys and all(
                (GPUS[k].nvlink, GPUS[k].nvlink_ports) == (spec.nvlink, spec.nvlink_ports) for k in keys):
            family = ReferenceSystem(name, False, G)
    return family


def wiring(G, gpu) -> tuple:
    """``((switch, links), ...)``: the NVLink bundles from ``gpu`` to NVSwitches, in edge order."""
    kind = G.nodes
    return tuple((v, d["links"]) for v, d in G.adj[gpu].items()
                 if d["kind"] == "nvlink" and kind[v]["kind"] == "nvswitch")


def upstream_link(G, device):
    """The link technology of ``device``'s own edge into the PCIe tree (toward its CPU), or None."""
    for v, d in G.adj[device].items():
        if d["kind"] == "pcie" and G.nodes[v]["kind"] in ("pcie_switch", "cpu"):
            return d["link"]
    return None
