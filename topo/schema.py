"""The fabric schema: one table of node and edge attributes, and the validation that reads it.

A fabric is an ``nx.DiGraph`` with one edge per direction. Parallel physical links between
the same two nodes are merged into one edge per direction whose ``links`` counts them and
whose ``bandwidth`` is their sum. Node ids are short readable strings (``"gpu0"``,
``"nvswitch3"``, ``"mlx5_0"``); code never parses them, it reads ``kind``, ``index`` and
``host``.

:data:`ATTRIBUTES` is the single description of the schema: :func:`validate` checks graphs
against it and :func:`schema_markdown` renders it for the README, so the two cannot drift.

Examples
--------
>>> import networkx as nx
>>> from topo.schema import validate
>>> G = nx.DiGraph()
>>> G.add_node("gpu0", kind="gpu", host=0, index=0, socket=0, model="X", compute_capability=70)
>>> validate(G)
>>> G.add_node("gpu1", kind="gpu", host=0, index=0, socket=0, model="X", compute_capability=70)
>>> validate(G)
Traceback (most recent call last):
...
topo.errors.TopologyError: GPUs 'gpu0' and 'gpu1' on host 0 share index 0: expected a distinct index (CUDA device number) per GPU of a host
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx

from .errors import TopologyError

__all__ = [
    "Attribute", "ATTRIBUTES", "NODE_KINDS", "EDGE_KINDS",
    "validate", "schema_markdown", "gpus", "nodes_of_kind",
]

#: Node kinds a fabric may hold.
NODE_KINDS = ("gpu", "nvswitch", "pcie_switch", "cpu", "nic", "network_switch")
#: Edge kinds a fabric may hold.
EDGE_KINDS = ("nvlink", "pcie", "cpu-to-cpu", "network")

_ALL = "all"


@dataclass(frozen=True, slots=True)
class Attribute:
    """One row of the schema table.

    Attributes
    ----------
    where : str
        ``"node"`` or ``"edge"``.
    applies_to : str
        ``"all"`` or a comma-separated list of the kinds that carry it.
    name : str
    type : type
        ``int``, ``float`` or ``str`` (an ``int`` is accepted where ``float`` is asked).
    unit : str
        ``"-"`` for dimensionless values.
    required : bool
    meaning : str
    """

    where: str
    applies_to: str
    name: str
    type: type
    unit: str
    required: bool
    meaning: str

    def applies(self, kind: str) -> bool:
        return self.applies_to == _ALL or kind in self.applies_to.split(",")


#: The schema. Validation and documentation both read this table.
ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("node", _ALL, "kind", str, "-", True, "one of " + ", ".join(NODE_KINDS)),
    Attribute("node", _ALL, "host", int, "-", True,
              "host (system) number, 0 in a single system; -1 for the network between hosts"),
    Attribute("node", "gpu", "index", int, "-", True,
              "CUDA / nvidia-smi device number, unique per host"),
    Attribute("node", "nvswitch,pcie_switch,cpu,nic,network_switch", "index", int, "-", True,
              "number of the part among its kind on its host (for a CPU: its socket)"),
    Attribute("node", "gpu,pcie_switch,nic", "socket", int, "-", True,
              "CPU socket / NUMA node the part hangs off"),
    Attribute("node", "gpu", "model", str, "-", True, "GPU model as nvidia-smi names it"),
    Attribute("node", "gpu", "compute_capability", int, "-", True,
              "SM version (60 Pascal, 70 Volta), selects NCCL's per-link figures"),
    Attribute("node", "gpu", "memory_bandwidth", float, "B/s", False,
              "device memory bandwidth, the ceiling of a device-local copy"),
    Attribute("node", "gpu,nvswitch", "baseboard", int, "-", False,
              "GPU baseboard the part sits on (DGX-2 has two)"),
    Attribute("node", "nvswitch,network_switch", "ports", int, "-", True,
              "ports of the switch (NVLink ports of an NVSwitch chip)"),
    Attribute("node", "network_switch", "tier", str, "-", True,
              "place in the network: leaf (NICs attach) or core (joins the leaves)"),
    Attribute("node", "cpu,pcie_switch,nvswitch,nic,network_switch", "model", str, "-", False,
              "part model"),
    Attribute("node", "cpu", "cores", int, "-", True, "physical cores of the socket"),
    Attribute("node", "cpu", "threads_per_core", int, "-", True,
              "hardware threads per core; with cores, gives nvidia-smi's CPU affinity"),
    Attribute("node", "nic", "name", str, "-", True, "device name as nvidia-smi shows it (mlx5_0)"),
    Attribute("node", "nic", "port_bandwidth", float, "B/s", False,
              "line rate of the NIC's network port, per direction (absent: not a compute NIC)"),
    Attribute("node", "nic", "port_link", str, "-", False,
              "key in topo.specs.LINKS of the NIC's network port (ib_edr, ...)"),
    Attribute("edge", _ALL, "kind", str, "-", True, "one of " + ", ".join(EDGE_KINDS)),
    Attribute("edge", _ALL, "links", int, "-", True,
              "physical links merged into this edge (at least 1)"),
    Attribute("edge", _ALL, "bandwidth", float, "B/s", True,
              "line rate in this direction, summed over links (> 0)"),
    Attribute("edge", _ALL, "latency", float, "s", True, "one-way latency of the hop (>= 0)"),
    Attribute("edge", _ALL, "link", str, "-", False,
              "key of the link technology in topo.specs.LINKS (nvlink2, pcie3_x16, ...)"),
    Attribute("edge", "pcie", "host_bridge", int, "-", False,
              "on a PCIe edge at a CPU: the CPU's PCIe host bridge of that root port "
              "(two root ports on different bridges make nvidia-smi's NODE, on one bridge PHB)"),
)

# Attributes whose value must be the same on both directions of a link.
_SYMMETRIC_EDGE_ATTRIBUTES = ("kind", "links", "bandwidth", "latency", "link")


def _type_ok(value, expected: type) -> bool:
    if isinstance(value, bool):
        return False
    if expected is float:
        return isinstance(value, (int, float))
    return isinstance(value, expected)


# The rows that apply to each (scope, kind), read once from ATTRIBUTES: validation runs over
# every node and edge of fabrics with hundreds of thousands of them.
_APPLICABLE = {
    (scope, kind): tuple(a for a in ATTRIBUTES if a.where == scope and a.name != "kind" and a.applies(kind))
    for scope, kinds in (("node", NODE_KINDS), ("edge", EDGE_KINDS)) for kind in kinds
}


def _label(scope: str, item) -> str:
    return f"node {item!r}" if scope == "node" else f"edge ({item[0]!r}, {item[1]!r})"


def _check_attributes(item, kind: str, data: dict, scope: str) -> None:
    """Check the attributes of one node or edge (``item``: node id, or ``(u, v)``)."""
    for attribute in _APPLICABLE[scope, kind]:
        if attribute.name not in data:
            if attribute.required:
                raise TopologyError(
                    f"{_label(scope, item)}: a {kind} {scope} needs attribute {attribute.name!r} "
                    f"({attribute.meaning}), received attributes {sorted(data)}")
            continue
        value = data[attribute.name]
        if not _type_ok(value, attribute.type):
            raise TopologyError(
                f"{_label(scope, item)}: attribute {attribute.name!r} must be {attribute.type.__name__} "
                f"({attribute.meaning}), received {value!r}")
        if attribute.type is float and not math.isfinite(value):
            raise TopologyError(
                f"{_label(scope, item)}: attribute {attribute.name!r} must be finite, received {value!r}")


def validate(G) -> None:
    """Check that ``G`` is a well-formed fabric; raise :class:`TopologyError` if not.

    Checks, in order: ``G`` is an ``nx.DiGraph`` (not a multigraph); every node has a known
    ``kind`` and the attributes :data:`ATTRIBUTES` requires for it, with the right types;
    every edge has a known ``kind``, ``links >= 1``, ``bandwidth > 0`` and ``latency >= 0``;
    every edge has its reverse, with the same kind, links, bandwidth, latency and link
    technology; every GPU has an index that no other GPU of its host has; there is at least
    one GPU and every GPU reaches every other GPU.

    Parameters
    ----------
    G : networkx.DiGraph
        The fabric.

    Raises
    ------
    TopologyError
        With a message naming the node or edge, what was expected and what was received.
    """
    if not isinstance(G, nx.DiGraph) or G.is_multigraph():
        raise TopologyError(
            f"a fabric must be a networkx.DiGraph with one edge per direction, "
            f"received {type(G).__name__}")
    for node, data in G.nodes(data=True):
        kind = data.get("kind")
        if kind not in NODE_KINDS:
            raise TopologyError(
                f"node {node!r}: unknown kind {kind!r}, expected one of {', '.join(NODE_KINDS)}")
        _check_attributes(node, kind, data, "node")
    for u, v, data in G.edges(data=True):
        kind = data.get("kind")
        where = f"edge ({u!r}, {v!r})"
        if kind not in EDGE_KINDS:
            raise TopologyError(
                f"{where}: unknown kind {kind!r}, expected one of {', '.join(EDGE_KINDS)}")
        _check_attributes((u, v), kind, data, "edge")
        if data["links"] < 1:
            raise TopologyError(f"{where}: links must be at least 1, received {data['links']}")
        if data["bandwidth"] <= 0:
            raise TopologyError(
                f"{where}: bandwidth must be positive (B/s per direction), received {data['bandwidth']!r}")
        if data["latency"] < 0:
            raise TopologyError(f"{where}: latency must be >= 0 s, received {data['latency']!r}")
        if not G.has_edge(v, u):
            raise TopologyError(
                f"{where} has no reverse edge ({v!r}, {u!r}): expected one edge per direction")
        back = G.edges[v, u]
        for name in _SYMMETRIC_EDGE_ATTRIBUTES:
            if data.get(name) != back.get(name):
                raise TopologyError(
                    f"{where}: {name} differs between directions ({data.get(name)!r} vs "
                    f"{back.get(name)!r} on ({v!r}, {u!r})): expected a link to be the same both ways")
    gpu_nodes = gpus(G)
    if not gpu_nodes:
        raise TopologyError(f"a fabric needs at least one GPU, received {G.number_of_nodes()} nodes and none of kind 'gpu'")
    owner: dict[tuple[int, int], object] = {}
    for node in gpu_nodes:
        key = (G.nodes[node]["host"], G.nodes[node]["index"])
        if key in owner:
            raise TopologyError(
                f"GPUs {owner[key]!r} and {node!r} on host {key[0]} share index {key[1]}: "
                f"expected a distinct index (CUDA device number) per GPU of a host")
        owner[key] = node
    reached = nx.descendants(G, gpu_nodes[0]) | {gpu_nodes[0]}
    for node in gpu_nodes:
        if node not in reached:
            raise TopologyError(
                f"GPU {node!r} cannot be reached from GPU {gpu_nodes[0]!r}: expected every GPU "
                f"to reach every other GPU over the fabric (disconnected fabric)")


def nodes_of_kind(G, kind: str) -> list:
    """Nodes of one kind, ordered by (host, index).

    Parameters
    ----------
    G : networkx.DiGraph
    kind : str
        One of :data:`NODE_KINDS`.

    Returns
    -------
    list
        Node ids.
    """
    found = [n for n, k in G.nodes(data="kind") if k == kind]
    return sorted(found, key=lambda n: (G.nodes[n].get("host", 0), G.nodes[n].get("index", 0), str(n)))


def gpus(G) -> list:
    """GPU nodes ordered by (host, index), the order every matrix of dgx-topo uses.

    >>> from topo import dgx1v
    >>> gpus(dgx1v())[:3]
    ['gpu0', 'gpu1', 'gpu2']
    """
    return nodes_of_kind(G, "gpu")


def schema_markdown() -> str:
    """The schema table as Markdown (the README embeds exactly this text).

    Returns
    -------
    str
    """
    lines = ["| where | applies to | attribute | type | unit | required | meaning |",
             "|---|---|---|---|---|---|---|"]
    for a in ATTRIBUTES:
        lines.append(f"| {a.where} | {a.applies_to} | `{a.name}` | {a.type.__name__} | {a.unit} | "
                     f"{'yes' if a.required else 'no'} | {a.meaning} |")
    return "\n".join(lines)
