"""What-if fabrics: scale, remove or add links, remove nodes.

Every function returns a **new** validated fabric and leaves its input untouched; the graph
is the single source of truth, so a model run on the result sees the change everywhere (an
edge's ``bandwidth`` is authoritative, see :mod:`topo.schema`).

* :func:`scale_links` scales the bandwidth of the edge between two nodes;
* :func:`scale_kind` scales every edge of an edge kind or a link technology;
* :func:`remove_links` takes physical links out of an edge (its bandwidth shrinks in
  proportion; the edge goes with its last link);
* :func:`add_links` adds physical links of a technology of :data:`topo.specs.LINKS`;
* :func:`remove_nodes` takes parts out (with their edges).

A fabric that a change leaves invalid (a GPU cut off, a bandwidth beyond the physical range)
is refused with the :class:`~topo.errors.TopologyError` of :func:`topo.validate`.

Examples
--------
>>> from topo import dgx1v
>>> G = dgx1v()
>>> H = remove_links(G, "gpu0", "gpu3")
>>> H.edges["gpu0", "gpu3"]["links"], H.edges["gpu0", "gpu3"]["bandwidth"] / 1e9, G.edges["gpu0", "gpu3"]["links"]
(1, 25.0, 2)
>>> scale_kind(G, 0.5, kind="nvlink").edges["gpu0", "gpu4"]["bandwidth"] / 1e9
25.0
>>> add_links(H, "gpu0", "gpu3", "nvlink2").edges["gpu0", "gpu3"] == G.edges["gpu0", "gpu3"]
True
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Iterable

import networkx as nx

from .errors import TransformError
from .schema import EDGE_KINDS, validate
from .specs import LINKS

__all__ = ["scale_links", "scale_kind", "remove_links", "add_links", "remove_nodes"]


def _fabric(G) -> nx.DiGraph:
    """A validated copy of ``G`` to change (the input is never touched)."""
    validate(G)
    return G.copy()


def _factor(factor) -> float:
    if isinstance(factor, bool) or not isinstance(factor, numbers.Real):
        raise TransformError(f"a scale factor must be a positive finite number, received {factor!r}")
    value = float(factor)
    if not math.isfinite(value) or value <= 0:
        raise TransformError(f"a scale factor must be a positive finite number, received {factor!r}")
    return value


def _count(count) -> int:
    try:
        value = operator.index(count) if not isinstance(count, bool) else None
    except TypeError:
        value = None
    if value is None or value < 1:
        raise TransformError(f"a link count must be a whole number >= 1, received {count!r}")
    return value


def _check_node(G, node) -> None:
    try:
        present = node in G
    except TypeError:  # unhashable
        present = False
    if not present:
        raise TransformError(f"{node!r} is not a node of {G.graph.get('name', 'the fabric')}: "
                             f"expected a node id such as {next(iter(G), None)!r}")


def _directions(G, u, v, both_directions: bool) -> tuple:
    _check_node(G, u)
    _check_node(G, v)
    if not G.has_edge(u, v):
        raise TransformError(f"no edge ({u!r}, {v!r}) in {G.graph.get('name', 'the fabric')}: "
                             f"expected two directly linked nodes")
    return ((u, v), (v, u)) if both_directions else ((u, v),)


def scale_links(G: nx.DiGraph, u: str, v: str, factor: float, *, both_directions: bool = True) -> nx.DiGraph:
    """Scale the bandwidth of the edge ``u`` -> ``v`` (and back) by ``factor``.

    ``links`` is unchanged: the same physical links run slower (``factor`` < 1) or faster.

    Parameters
    ----------
    G : networkx.DiGraph
        A valid fabric (not modified).
    u, v : node ids
        Two directly linked nodes.
    factor : float
        Positive finite multiplier.
    both_directions : bool
        Scale ``v`` -> ``u`` too (default); False scales one direction only.

    Returns
    -------
    networkx.DiGraph
        A new validated fabric.

    Raises
    ------
    TransformError
        For an unknown node, nodes without an edge, or a factor that is not a positive
        finite number.
    TopologyError
        If the result is not a valid fabric (a bandwidth beyond the physical range).
    """
    factor = _factor(factor)
    H = _fabric(G)
    for a, b in _directions(H, u, v, both_directions):
        H.edges[a, b]["bandwidth"] *= factor
    validate(H)
    return H


def scale_kind(G: nx.DiGraph, factor: float, *, kind: str | None = None, link: str | None = None) -> nx.DiGraph:
    """Scale the bandwidth of every edge of an edge ``kind`` and/or a ``link`` technology.

    Parameters
    ----------
    G : networkx.DiGraph
        A valid fabric (not modified).
    factor : float
        Positive finite multiplier.
    kind : str, optional
        One of :data:`topo.schema.EDGE_KINDS` (``"nvlink"``, ``"pcie"``, ...).
    link : str, optional
        A key of :data:`topo.specs.LINKS` (``"nvlink2"``, ``"ib_edr"``, ...). With ``kind``,
        an edge must match both.

    Returns
    -------
    networkx.DiGraph
        A new validated fabric.

    Raises
    ------
    TransformError
        For neither ``kind`` nor ``link``, an unknown one, no matching edge in ``G``, or a
        bad factor.
    TopologyError
        If the result is not a valid fabric.
    """
    factor = _factor(factor)
    if kind is None and link is None:
        raise TransformError("scale_kind needs kind= (an edge kind) or link= (a link technology)")
    if kind is not None and kind not in EDGE_KINDS:
        raise TransformError(f"unknown edge kind {kind!r}: expected one of {', '.join(EDGE_KINDS)}")
    if link is not None and link not in LINKS:
        raise TransformError(f"unknown link technology {link!r}: expected one of {', '.join(LINKS)}")
    H = _fabric(G)
    matched = 0
    for _, _, data in H.edges(data=True):
        if (kind is None or data["kind"] == kind) and (link is None or data["link"] == link):
            data["bandwidth"] *= factor
            matched += 1
    if not matched:
        wanted = " and ".join(f"{name} {value!r}" for name, value in (("kind", kind), ("link", link))
                              if value is not None)
        raise TransformError(f"no edge of {wanted} in {G.graph.get('name', 'the fabric')}: "
                             f"expected at least one edge to scale")
    validate(H)
    return H


def remove_links(G: nx.DiGraph, u: str, v: str, count: int = 1, *, both_directions: bool = True) -> nx.DiGraph:
    """Take ``count`` physical links out of the edge ``u`` -> ``v`` (and back).

    ``links`` drops by ``count`` and ``bandwidth`` in proportion (an edge at the catalogue's
    line rate stays exactly at it); the edge is removed with its last link, in which case
    ``both_directions`` must be True (a link is not one-way).

    Parameters
    ----------
    G : networkx.DiGraph
        A valid fabric (not modified).
    u, v : node ids
    count : int
        Links to remove, 1 to the edge's ``links``.
    both_directions : bool

    Returns
    -------
    networkx.DiGraph
        A new validated fabric.

    Raises
    ------
    TransformError
        For an unknown node or edge, a count that is not 1 to the edge's links, or the
        last link removed from one direction only.
    TopologyError
        If the result is not a valid fabric (e.g. a GPU cut off).
    """
    count = _count(count)
    H = _fabric(G)
    for a, b in _directions(H, u, v, both_directions):
        data = H.edges[a, b]
        links = data["links"]
        if count > links:
            raise TransformError(f"edge ({a!r}, {b!r}) has {links} links: cannot remove {count}")
        if count == links:
            if not both_directions:
                raise TransformError(
                    f"removing all {links} links of ({a!r}, {b!r}) in one direction leaves a one-way "
                    f"edge: expected both_directions=True")
            H.remove_edge(a, b)
            continue
        rate = LINKS[data["link"]].bandwidth
        if data["bandwidth"] == links * rate:
            data["bandwidth"] = (links - count) * rate
        else:
            data["bandwidth"] = data["bandwidth"] * (links - count) / links
        data["links"] = links - count
    validate(H)
    return H


def add_links(G: nx.DiGraph, u: str, v: str, link: str, count: int = 1, **attributes: object) -> nx.DiGraph:
    """Add ``count`` physical links of technology ``link`` between ``u`` and ``v``, both ways.

    An existing edge must be of the same technology and gains the links at the catalogue's
    line rate (an edge at that rate stays exactly at it); otherwise a new edge pair gets the
    catalogue's kind, bandwidth and latency, and ``attributes`` (e.g. ``host_bridge``).

    Parameters
    ----------
    G : networkx.DiGraph
        A valid fabric (not modified).
    u, v : node ids
        Two different nodes of ``G``.
    link : str
        A key of :data:`topo.specs.LINKS`.
    count : int
        Links to add, at least 1.
    **attributes
        Extra attributes of a new edge.

    Returns
    -------
    networkx.DiGraph
        A new validated fabric.

    Raises
    ------
    TransformError
        For an unknown node or link technology, ``u == v``, a bad count, an existing edge
        of another technology, or an attribute the technology sets (kind, link, links,
        bandwidth, latency).
    TopologyError
        If the result is not a valid fabric.
    """
    count = _count(count)
    if link not in LINKS:
        raise TransformError(f"unknown link technology {link!r}: expected one of {', '.join(LINKS)}")
    taken = sorted(set(attributes) & {"kind", "link", "links", "bandwidth", "latency"})
    if taken:
        raise TransformError(f"add_links sets {', '.join(taken)} from the link technology {link!r}: expected "
                             f"only extra attributes (e.g. host_bridge), received {', '.join(taken)}")
    H = _fabric(G)
    _check_node(H, u)
    _check_node(H, v)
    if u == v:
        raise TransformError(f"a link from {u!r} to itself: expected two different nodes")
    spec = LINKS[link]
    for a, b in ((u, v), (v, u)):
        if H.has_edge(a, b):
            data = H.edges[a, b]
            if data["link"] != link:
                raise TransformError(f"edge ({a!r}, {b!r}) is {data['link']}: cannot add {link} "
                                     f"links to it")
            if data["bandwidth"] == data["links"] * spec.bandwidth:
                data["bandwidth"] = (data["links"] + count) * spec.bandwidth
            else:
                data["bandwidth"] += count * spec.bandwidth
            data["links"] += count
        else:
            H.add_edge(a, b, kind=spec.kind, link=link, links=count,
                       bandwidth=count * spec.bandwidth, latency=spec.latency, **attributes)
    validate(H)
    return H


def remove_nodes(G: nx.DiGraph, nodes: str | Iterable[str]) -> nx.DiGraph:
    """Take ``nodes`` (one node id, or an iterable of them) and their edges out of ``G``.

    Parameters
    ----------
    G : networkx.DiGraph
        A valid fabric (not modified).
    nodes : node id or iterable of node ids

    Returns
    -------
    networkx.DiGraph
        A new validated fabric.

    Raises
    ------
    TransformError
        For an unknown node or an empty selection.
    TopologyError
        If the result is not a valid fabric (no GPU left, a GPU cut off, ...).
    """
    if isinstance(nodes, str) or not isinstance(nodes, Iterable):
        nodes = [nodes]
    nodes = list(nodes)
    if not nodes:
        raise TransformError("remove_nodes needs at least one node")
    H = _fabric(G)
    for node in nodes:
        _check_node(H, node)
    H.remove_nodes_from(nodes)
    validate(H)
    return H
