"""NCCL's NVLSTree: NVLS inside each node, a tree between the nodes' NVLS heads, AllReduce only
(NVIDIA/nccl v2.18+ src/graph/tuning.cc; the rules it shares with NVLS: :mod:`.nvls`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .base import LinkCharges
from .nvls import Nvls

__all__ = ["NvlsTree", "NVLS_TREE"]


@dataclass(frozen=True)
class NvlsTree(Nvls):
    """NCCL_ALGO_NVLS_TREE (index 5)."""

    name: str = "nvls_tree"
    index: int = 5
    #: The column of the profile's latency tables it reads (NCCL's; a subclass keeps it).
    table: ClassVar[str] = "nvls_tree"
    nccl_name: str = "NVLSTree"
    collectives: frozenset = frozenset({"all_reduce"})
    across_nodes: bool = True

    def network(self, graphs: Any) -> tuple:
        """The tree between the NVLS heads' NICs."""
        return graphs.nvls, "tree"

    def charge(self, links: LinkCharges) -> None:
        """NVLS's switch links inside each node, and the tree between the heads' NICs at the NVLS
        graph's ``bwInter``."""
        graph = links.nvls
        if graph is None:
            return
        scale = links.switch_channels(graph)
        if links.nnodes > 1 and graph.nets:
            links.network_tree(tuple((n, n) for n in graph.nets), graph.bw_inter * scale)


#: NCCL's NVLSTree.
NVLS_TREE = NvlsTree()
