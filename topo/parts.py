"""Building blocks for fabric builders: add parts and links with the schema's attributes.

Builders call these instead of ``G.add_node`` / ``G.add_edge`` so that every node and edge
gets its attributes from the catalogue in :mod:`topo.specs`, both directions of a link at
once, and parallel links merge into one edge per direction.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import TopologyError, UnknownPartError
from .specs import CPUS, GPUS, LINKS

__all__ = ["add_link", "add_gpu", "gpu_attributes", "add_cpu", "add_nic", "add_pcie_switch", "add_nvswitch"]


def add_link(G, u, v, link: str, links: int = 1, **attributes) -> None:
    """Add ``links`` physical links of technology ``link`` between ``u`` and ``v``, both ways.

    An existing edge of the same technology gains the links (and their bandwidth), which is
    how parallel physical links become one edge per direction.

    Parameters
    ----------
    G : networkx.DiGraph
    u, v : node ids
    link : str
        Key into :data:`topo.specs.LINKS`.
    links : int
        Number of physical links.
    **attributes
        Extra edge attributes (e.g. ``host_bridge``), set on both directions.

    Raises
    ------
    UnknownPartError
        For an unknown link technology.
    TopologyError
        For a second technology on the same node pair, a link from a node to itself, or a
        link count that is not a whole number >= 1.
    """
    spec = _lookup(LINKS, link, "link technology")
    if u == v:
        raise TopologyError(f"a link from {u!r} to itself: expected two different nodes")
    if isinstance(links, bool) or not isinstance(links, int) or links < 1:
        raise TopologyError(f"links must be a whole number >= 1, received {links!r}")
    # networkx's own adjacency (successor -> edge attributes), read directly: builders call this
    # hundreds of thousands of times in a test run, and its views cost several calls per lookup.
    succ = G._adj
    forward = succ[u].get(v) if u in succ else None
    backward = succ[v].get(u) if v in succ else None
    new = dict(kind=spec.kind, link=link, links=links, bandwidth=links * spec.bandwidth,
               latency=spec.latency, **attributes)
    if forward is None and backward is None:  # a new link: both directions in one call
        G.add_edges_from(((u, v), (v, u)), **new)
        return
    for a, b, data in ((u, v, forward), (v, u, backward)):
        if data is None:
            G.add_edge(a, b, **new)
            continue
        if data["link"] != link:
            raise TopologyError(
                f"edge ({a!r}, {b!r}) is {data['link']}, cannot add {link} links to it")
        data["links"] += links
        data["bandwidth"] = data["links"] * spec.bandwidth


def _lookup(table: Mapping, key, what: str):
    """``table[key]``, or an :class:`UnknownPartError` listing the known keys."""
    try:
        return table[key]
    except (KeyError, TypeError):
        raise UnknownPartError(f"unknown {what} {key!r}: expected one of {', '.join(table)}") from None


def add_gpu(G, node, gpu: str, *, index: int, socket: int, host: int = 0, **attributes) -> None:
    """Add a GPU of model ``gpu`` (key into :data:`topo.specs.GPUS`).

    Raises
    ------
    UnknownPartError
        For a model that is not in :data:`topo.specs.GPUS`; the message lists the known ones.
    """
    G.add_node(node, kind="gpu", host=host, index=index, socket=socket, **gpu_attributes(gpu),
               **attributes)


def gpu_attributes(gpu: str) -> dict:
    """The node attributes a GPU of model ``gpu`` (key into :data:`topo.specs.GPUS`) carries.

    Raises
    ------
    UnknownPartError
    """
    spec = _lookup(GPUS, gpu, "GPU model")
    return {"model": spec.model, "compute_capability": spec.compute_capability,
            "memory_bandwidth": spec.memory_bandwidth}


def add_cpu(G, node, cpu: str, *, index: int, host: int = 0) -> None:
    """Add CPU socket ``index`` of model ``cpu`` (key into :data:`topo.specs.CPUS`)."""
    spec = _lookup(CPUS, cpu, "CPU model")
    G.add_node(node, kind="cpu", host=host, index=index, model=spec.model, cores=spec.cores,
               threads_per_core=spec.threads_per_core)


def add_nic(G, node, *, index: int, socket: int, model: str, port: str | None,
            host: int = 0) -> None:
    """Add a NIC named like its node; ``port`` is the link key of its network port, or None."""
    attributes = ({} if port is None else
                  {"port_bandwidth": _lookup(LINKS, port, "NIC port link").bandwidth, "port_link": port})
    G.add_node(node, kind="nic", host=host, index=index, socket=socket, name=str(node),
               model=model, **attributes)


def add_pcie_switch(G, node, *, index: int, socket: int, model: str, host: int = 0) -> None:
    """Add a PCIe switch."""
    G.add_node(node, kind="pcie_switch", host=host, index=index, socket=socket, model=model)


def add_nvswitch(G, node, *, index: int, ports: int, baseboard: int, model: str,
                 host: int = 0) -> None:
    """Add an NVSwitch chip with ``ports`` NVLink ports."""
    G.add_node(node, kind="nvswitch", host=host, index=index, ports=ports, baseboard=baseboard,
               model=model)
