"""One-line facts of a fabric: what ``dgxtopo systems`` tabulates.

Examples
--------
>>> from topo import dgx1v
>>> s = summarize(dgx1v())
>>> s.gpus, s.nvlink_links, s.bisection / 1e9
(8, 24, 150.0)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

import networkx as nx

from .capacity import bisection, injection_bandwidth
from .schema import gpus, validate
from .units import to_GBps

__all__ = ["FabricSummary", "summarize"]


@dataclass(frozen=True, slots=True)
class FabricSummary:
    """Counts and figures of merit of a fabric.

    Attributes
    ----------
    name : str
        Display name (graph attribute ``name``).
    system : str
        Registry key (graph attribute ``system``), or the name.
    description : str
    gpus : int
    gpu_models : tuple of str
    nvlink_links : int
        Physical NVLink links (each counted once, not per direction).
    nvswitches, pcie_switches, cpus, nics : int
        Parts of each kind.
    injection : float
        Smallest NVLink line rate one GPU can send at, per direction. [B/s]
    bisection : float
        NVLink bisection bandwidth, per direction (0 with fewer than two GPUs). [B/s]
    """

    name: str
    system: str
    description: str
    gpus: int
    gpu_models: tuple
    nvlink_links: int
    nvswitches: int
    pcie_switches: int
    cpus: int
    nics: int
    injection: float
    bisection: float

    def to_dict(self) -> dict:
        """The JSON form of ``dgxtopo systems --json`` (GB/s at the display edge)."""
        data = asdict(self)
        data["gpu_models"] = list(self.gpu_models)
        data["injection_gbps"] = to_GBps(data.pop("injection"))
        data["bisection_gbps"] = to_GBps(data.pop("bisection"))
        return data


def summarize(G: nx.DiGraph) -> FabricSummary:
    """Count the parts of a fabric and compute its NVLink injection and bisection bandwidth.

    Parameters
    ----------
    G : networkx.DiGraph

    Returns
    -------
    FabricSummary
    """
    validate(G)
    kinds = Counter(k for _, k in G.nodes(data="kind"))
    gpu_nodes = gpus(G)
    models = tuple(sorted({G.nodes[g]["model"] for g in gpu_nodes}))
    nvlink_links = sum(d["links"] for _, _, d in G.edges(data=True) if d["kind"] == "nvlink") // 2
    name = G.graph.get("name", "fabric")
    return FabricSummary(
        name=name, system=G.graph.get("system", name), description=G.graph.get("description", ""),
        gpus=len(gpu_nodes), gpu_models=models, nvlink_links=nvlink_links,
        nvswitches=kinds["nvswitch"], pcie_switches=kinds["pcie_switch"], cpus=kinds["cpu"],
        nics=kinds["nic"], injection=min(injection_bandwidth(G).values()),
        bisection=bisection(G).bandwidth if len(gpu_nodes) > 1 else 0.0)
