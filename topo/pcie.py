"""PCIe paths between devices and their class, as ``nvidia-smi topo -m`` names it.

The PCIe route between two devices (GPUs, NICs) runs over ``pcie`` and ``cpu-to-cpu`` edges
through PCIe switches and CPUs only (a device never relays PCIe traffic). Its class:

======  =====================================================================================
PIX     through at most one PCIe switch
PXB     through several PCIe switches, not through a host bridge
PHB     through a PCIe host bridge (the CPU's root complex): both root ports on one bridge
NODE    through two host bridges of one CPU socket (NUMA node)
SYS     across the socket-to-socket link (QPI / UPI)
======  =====================================================================================

The ``host_bridge`` attribute of the PCIe edges at a CPU separates PHB from NODE (absent on
both: one bridge, PHB). NCCL's path types (``src/graph/topo.h`` of NVIDIA/nccl v2.27.7-1)
have no NODE: NCCL calls both PHB, so a router computing NCCL types maps NODE to PHB.

:func:`connection_class` classifies one pair the way :func:`topo.connection_matrix` fills a
cell (NVLink first), without building the matrix.

Examples
--------
>>> from topo import dgx1v, dgx2
>>> G = dgx1v()
>>> pcie_path(G, "gpu0", "mlx5_1")
('gpu0', 'pcie0', 'cpu0', 'pcie1', 'mlx5_1')
>>> pcie_class(G, pcie_path(G, "gpu0", "mlx5_1")), connection_class(G, "gpu0", "gpu5")
('PHB', 'SYS')
>>> connection_class(dgx2(), "gpu0", "gpu9"), connection_class(dgx2(), "gpu0", "mlx5_2")
('NV6', 'NODE')
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx

from .errors import TopologyError

__all__ = ["PCIE_CLASSES", "pcie_paths", "pcie_path", "pcie_class", "nvswitch_domain",
           "connection_class"]

#: The PCIe classes, nearest first.
PCIE_CLASSES = ("PIX", "PXB", "PHB", "NODE", "SYS")

_PCIE_EDGES = ("pcie", "cpu-to-cpu")
_RELAYS = ("pcie_switch", "cpu")


def _node(G, node, role: str):
    if node not in G:
        raise TopologyError(f"{role} {node!r} is not a node of {G.graph.get('name', 'the fabric')}: "
                            f"expected a GPU or NIC node such as 'gpu0'")
    return _own(G)[0][node]


def _own(G) -> tuple:
    """networkx's own dicts of ``G``: node -> attributes, node -> successor -> edge attributes.
    The functions below read them rather than networkx's views: nvidia-smi's matrix classifies
    every device pair, and a view costs several Python calls per lookup."""
    return G._node, G._adj


def pcie_paths(G, src) -> dict:
    """Shortest PCIe paths from ``src`` to every node it reaches over PCIe.

    Breadth first over ``pcie`` and ``cpu-to-cpu`` edges, entering other nodes but passing
    only through PCIe switches and CPUs.

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric.
    src : node id

    Returns
    -------
    dict
        Node -> path (tuple of nodes from ``src`` to it), ``src`` included as ``(src,)``.

    Raises
    ------
    TopologyError
        If ``src`` is not a node of ``G``.
    """
    _node(G, src, "device")
    nodes, succ = _own(G)
    paths: dict = {src: (src,)}  # in the order breadth first reaches the nodes
    frontier = [src]
    while frontier:
        following = []
        for x in frontier:
            if x != src and nodes[x].get("kind") not in _RELAYS:
                continue
            here = paths[x]
            for y, data in succ[x].items():
                if y not in paths and data.get("kind") in _PCIE_EDGES:
                    paths[y] = here + (y,)
                    following.append(y)
        frontier = following
    return paths


def pcie_path(G: nx.DiGraph, a: str, b: str) -> tuple | None:
    """The shortest PCIe path from ``a`` to ``b`` (see :func:`pcie_paths`), None if there is none.

    Parameters
    ----------
    G : networkx.DiGraph
    a, b : node ids

    Returns
    -------
    tuple or None
        Nodes from ``a`` to ``b``.

    Raises
    ------
    TopologyError
        If ``a`` or ``b`` is not a node of ``G``.
    """
    _node(G, b, "device")
    return pcie_paths(G, a).get(b)


def pcie_class(G: nx.DiGraph, path: Sequence[str]) -> str:
    """nvidia-smi's class of a PCIe path: ``"PIX"``, ``"PXB"``, ``"PHB"``, ``"NODE"`` or ``"SYS"``.

    Parameters
    ----------
    G : networkx.DiGraph
    path : sequence of node ids
        A path over PCIe and socket-to-socket edges (as :func:`pcie_path` returns), at least
        two nodes.

    Returns
    -------
    str
        One of :data:`PCIE_CLASSES` (see the module docstring).

    Raises
    ------
    TopologyError
        For a path of fewer than two nodes or with a missing edge.
    """
    path = tuple(path)
    if len(path) < 2:
        raise TopologyError(f"a PCIe path needs two nodes or more, received {path!r}")
    nodes, succ = _own(G)
    edges = []
    for u, v in zip(path, path[1:]):
        data = succ[u].get(v) if u in succ else None
        if data is None:
            raise TopologyError(f"PCIe path {path!r} has no edge ({u!r}, {v!r}): expected a path "
                                f"of the fabric such as pcie_path returns")
        edges.append(data)
    if any(data["kind"] == "cpu-to-cpu" for data in edges):
        return "SYS"
    kinds = [nodes[n]["kind"] for n in path[1:-1]]
    if "cpu" in kinds:
        i = kinds.index("cpu") + 1  # position of the CPU in path
        bridges = {edges[i - 1].get("host_bridge"), edges[i].get("host_bridge")}
        return "PHB" if len(bridges) == 1 else "NODE"
    return "PIX" if kinds.count("pcie_switch") <= 1 else "PXB"


def nvswitch_domain(G) -> dict:
    """Number of the NVSwitch fabric each node on one belongs to.

    Two GPUs share a domain when NVLink edges that touch an NVSwitch join them (through
    switches, or GPUs on several switches).

    Parameters
    ----------
    G : networkx.DiGraph

    Returns
    -------
    dict
        Node -> domain number, for every node with an NVLink edge to or from an NVSwitch.
    """
    kind = {n: data.get("kind") for n, data in _own(G)[0].items()}
    domain: dict = {}
    number = 0
    for start in G:
        if start in domain or not _switch_edges(G, kind, start):
            continue
        domain[start] = number
        stack = [start]
        while stack:
            x = stack.pop()
            for y in _switch_edges(G, kind, x):
                if y not in domain:
                    domain[y] = number
                    stack.append(y)
        number += 1
    return domain


def _switch_edges(G, kind: dict, node) -> list:
    """Neighbours of ``node`` over NVLink edges that touch an NVSwitch."""
    return [y for y, data in _own(G)[1][node].items()
            if data.get("kind") == "nvlink" and "nvswitch" in (kind[node], kind[y])]


def _switch_links(G, gpu) -> int:
    nodes, succ = _own(G)
    return sum(d["links"] for v, d in succ[gpu].items()
               if d["kind"] == "nvlink" and nodes[v]["kind"] == "nvswitch")


def _same_switch_domain(G, a, b) -> bool:
    kind = {n: data.get("kind") for n, data in _own(G)[0].items()}
    seen = {a}
    stack = [a]
    while stack:
        x = stack.pop()
        for y in _switch_edges(G, kind, x):
            if y == b:
                return True
            if y not in seen:
                seen.add(y)
                stack.append(y)
    return False


def connection_class(G: nx.DiGraph, a: str, b: str, *, domain: dict | None = None, paths: dict | None = None,
                     switch_links: dict | None = None) -> str:
    """nvidia-smi's class of the connection between devices ``a`` and ``b``.

    ``"X"`` for a device with itself; ``"NV#"`` for two GPUs joined by a bonded set of #
    NVLinks (a direct edge, or an NVSwitch fabric both are on: the smaller of their link
    counts into the switches); otherwise the :func:`pcie_class` of their PCIe path.

    Parameters
    ----------
    G : networkx.DiGraph
        A valid fabric (:func:`topo.validate`; not re-validated here).
    a, b : node ids
        GPUs or NICs.
    domain : dict, optional
        :func:`nvswitch_domain` of ``G``, when classifying many pairs.
    paths : dict, optional
        :func:`pcie_paths` of ``G`` from ``a``, when classifying many pairs from ``a``.
    switch_links : dict, optional
        A dict the caller keeps while classifying many pairs of ``G`` (empty at first): GPU ->
        its NVLinks into NVSwitches, filled here as GPUs come up.

    Returns
    -------
    str

    Raises
    ------
    TopologyError
        If ``a`` or ``b`` is not a node of ``G``, or they have neither NVLink nor a PCIe
        route between them.
    """
    data_a, data_b = _node(G, a, "device"), _node(G, b, "device")
    if a == b:
        return "X"
    if data_a["kind"] == data_b["kind"] == "gpu":
        direct = _own(G)[1][a].get(b)
        if direct is not None and direct["kind"] == "nvlink":
            return f"NV{direct['links']}"
        if domain is None:
            shared = _same_switch_domain(G, a, b)
        else:
            shared = domain.get(a) is not None and domain.get(a) == domain.get(b)
        if shared:
            if switch_links is None:
                switch_links = {}
            for gpu in (a, b):
                if gpu not in switch_links:
                    switch_links[gpu] = _switch_links(G, gpu)
            return f"NV{min(switch_links[a], switch_links[b])}"
    path = (paths if paths is not None else pcie_paths(G, a)).get(b)
    if path is None:
        raise TopologyError(f"{a!r} and {b!r} have neither NVLink nor a PCIe route: expected every "
                            f"device of host {data_a.get('host')} under a CPU")
    return pcie_class(G, path)
