"""Fabric files: write a fabric as JSON or GraphML and read it back.

:func:`to_json` / :func:`from_json` (networkx node-link data in an envelope with a format
version) and :func:`to_graphml` / :func:`from_graphml`. A round trip gives the same nodes,
edges and attributes in the same order, so every model predicts the same figures. Reading
validates the fabric (:func:`topo.validate`) and raises
:class:`~topo.io.common.TopologyImportError` naming what is wrong.

Examples
--------
>>> import topo
>>> G = topo.dgx1v()
>>> from_json(to_json(G)).edges["gpu0", "gpu3"] == G.edges["gpu0", "gpu3"]
True
"""

from __future__ import annotations

import heapq
import json

import networkx as nx
from networkx.readwrite.graphml import GraphMLWriter

from ..errors import TopologyError
from ..schema import validate
from ..inputs import InputFileError, parse_json
from .common import TopologyImportError, parse_xml

__all__ = ["to_json", "from_json", "to_graphml", "from_graphml", "JSON_FORMAT", "JSON_VERSION"]

#: Format name and version of :func:`to_json`'s envelope; :func:`from_json` rejects others.
JSON_FORMAT = "dgx-topo fabric"
JSON_VERSION = 1


_SCALARS = (str, int, float, bool)


def _show(text) -> str:
    """``repr(text)``, cut to a readable length and safe to print."""
    shown = repr(text)
    return shown if len(shown) <= 60 else f"{shown[:40]}... ({len(shown)} characters)"


def _check_exportable(G):
    validate(G)
    for n, data in G.nodes(data=True):
        if not isinstance(n, str):
            raise TopologyError(f"node {n!r}: export needs string node ids, received {type(n).__name__}")
        for key, value in data.items():
            if not isinstance(value, _SCALARS):
                raise TopologyError(f"node {n!r}: attribute {key!r} is {type(value).__name__}, "
                                    f"export takes str, int, float or bool")
    for u, v, data in G.edges(data=True):
        for key, value in data.items():
            if not isinstance(value, _SCALARS):
                raise TopologyError(f"edge ({u!r}, {v!r}): attribute {key!r} is {type(value).__name__}, "
                                    f"export takes str, int, float or bool")
    for key, value in G.graph.items():
        if not isinstance(value, _SCALARS):
            raise TopologyError(f"graph attribute {key!r} is {type(value).__name__}, export takes "
                                f"str, int, float or bool")


def _edge_order(G) -> list:
    """The edges in an order that rebuilds both ``G.succ`` and ``G.pred`` as they are.

    Models iterate successors and predecessors, and a channel search visits them in order, so a
    faithful copy keeps both orders. The order ``G.edges`` lists keeps only the successors';
    the edges are sorted topologically under "before in its source's successors" and "before
    in its target's predecessors", which the graph's own insertion order satisfies.
    """
    edges = list(G.edges())
    position = {e: k for k, e in enumerate(edges)}
    after: dict[int, list] = {k: [] for k in range(len(edges))}
    blocked = [0] * len(edges)
    for v in G:
        chain = [position[u, v] for u in G.pred[v]]
        for a, b in zip(chain, chain[1:]):
            after[a].append(b)
            blocked[b] += 1
    for u in G:
        chain = [position[u, v] for v in G.succ[u]]
        for a, b in zip(chain, chain[1:]):
            after[a].append(b)
            blocked[b] += 1
    ready = [k for k in range(len(edges)) if not blocked[k]]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(edges[k])
        for b in after[k]:
            blocked[b] -= 1
            if not blocked[b]:
                heapq.heappush(ready, b)
    return order


class _OrderedGraphMLWriter(GraphMLWriter):
    """networkx's GraphML writer, edges in :func:`_edge_order`."""

    def add_edges(self, G, graph_element):
        for u, v in _edge_order(G):
            data = G.edges[u, v]
            edge_element = self.myElement("edge", source=str(u), target=str(v))
            default = G.graph.get("edge_default", {})
            self.add_attributes("edge", edge_element, data, default)
            graph_element.append(edge_element)


def to_json(G) -> str:
    """A fabric as JSON: networkx node-link data in an envelope with a format version.

    ``{"format": "dgx-topo fabric", "version": 1, "graph": <node-link data, edges under
    "edges">}``. Nodes and edges keep their order, so :func:`from_json` rebuilds the same
    adjacency and every model the same figures.

    Parameters
    ----------
    G : networkx.DiGraph
        A valid fabric with string node ids and scalar attributes.

    Returns
    -------
    str

    Raises
    ------
    TopologyError
        For an invalid fabric or attributes JSON cannot carry.
    """
    _check_exportable(G)
    data = nx.node_link_data(G, edges="edges")
    index = {(item["source"], item["target"]): item for item in data["edges"]}
    data["edges"] = [index[e] for e in _edge_order(G)]
    try:
        return json.dumps({"format": JSON_FORMAT, "version": JSON_VERSION, "graph": data},
                          allow_nan=False, indent=1)
    except ValueError as error:
        raise TopologyError(f"fabric cannot be written as JSON: {error}") from None


def from_json(text) -> nx.DiGraph:
    """Read a fabric written by :func:`to_json`.

    Parameters
    ----------
    text : str or bytes

    Returns
    -------
    networkx.DiGraph
        The validated fabric.

    Raises
    ------
    TopologyImportError
        For text that is not JSON, another format or version, or a graph that is not a
        valid fabric.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as error:
            raise TopologyImportError(f"fabric JSON: not UTF-8 text ({error.reason} at byte {error.start})") from None
    try:  # bounded nesting, no NaN/Infinity, line-numbered errors: the one JSON reader (topo.inputs)
        data = parse_json(text, source="fabric JSON")
    except InputFileError as error:
        raise TopologyImportError(str(error)) from None
    if not isinstance(data, dict) or data.get("format") != JSON_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise TopologyImportError(f"fabric JSON: expected an object with format {JSON_FORMAT!r}, "
                                  f"received {found!r}")
    if data.get("version") != JSON_VERSION or isinstance(data.get("version"), bool):
        raise TopologyImportError(f"fabric JSON: version {data.get('version')!r} is not supported, "
                                  f"expected {JSON_VERSION}")
    body = data.get("graph")
    if not isinstance(body, dict) or body.get("directed") is not True or body.get("multigraph") is not False:
        raise TopologyImportError("fabric JSON: 'graph' must be networkx node-link data of a directed, "
                                  "non-multi graph")
    nodes, edges = body.get("nodes"), body.get("edges")
    if not isinstance(nodes, list) or not isinstance(edges, list) or not isinstance(body.get("graph", {}), dict):
        raise TopologyImportError("fabric JSON: 'graph' needs lists 'nodes' and 'edges'")
    for k, item in enumerate(nodes):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise TopologyImportError(f"fabric JSON: nodes[{k}] must be an object with a string 'id'")
    ids: dict = {}
    for k, item in enumerate(nodes):
        if item["id"] in ids:
            raise TopologyImportError(f"fabric JSON: nodes[{k}] has id {_show(item['id'])}, as nodes[{ids[item['id']]}] "
                                      f"has: expected every node id once")
        ids[item["id"]] = k
    pairs: dict = {}
    for k, item in enumerate(edges):
        if (not isinstance(item, dict) or not isinstance(item.get("source"), str)
                or not isinstance(item.get("target"), str) or item["source"] not in ids or item["target"] not in ids):
            raise TopologyImportError(f"fabric JSON: edges[{k}] must be an object whose 'source' and "
                                      f"'target' are node ids")
        pair = (item["source"], item["target"])
        if pair in pairs:
            raise TopologyImportError(f"fabric JSON: edges[{k}] joins {_show(pair[0])} to {_show(pair[1])}, as "
                                      f"edges[{pairs[pair]}] does: expected one edge per direction")
        pairs[pair] = k
    for where, items in (("nodes", nodes), ("edges", edges), ("graph", [body.get("graph", {})])):
        for k, item in enumerate(items):
            for key, value in item.items():
                if not isinstance(value, _SCALARS):
                    raise TopologyImportError(f"fabric JSON: {where}[{k}] attribute {key!r} is "
                                              f"{type(value).__name__}, expected str, int, float or bool")
    G = nx.node_link_graph(body, directed=True, multigraph=False, edges="edges")
    try:
        validate(G)
    except TopologyError as error:
        raise TopologyImportError(f"fabric JSON: {error}") from error
    return G


_GRAPHML_VERSION_KEY = "dgx_topo_format_version"


def to_graphml(G) -> str:
    """A fabric as GraphML (networkx's writer; attribute types declared per key).

    The graph attribute ``dgx_topo_format_version`` carries :data:`JSON_VERSION`.

    Parameters
    ----------
    G : networkx.DiGraph
        A valid fabric with string node ids and scalar attributes.

    Returns
    -------
    str

    Raises
    ------
    TopologyError
        For an invalid fabric, attributes GraphML cannot carry, or an attribute holding
        values of different types on different nodes or edges (GraphML types a key once).
    """
    _check_exportable(G)
    for scope, items in (("node", G.nodes(data=True)), ("edge", (d for _, _, d in G.edges(data=True)))):
        types: dict[str, type] = {}
        for data in (items if scope == "edge" else (d for _, d in items)):
            for key, value in data.items():
                if types.setdefault(key, type(value)) is not type(value):
                    raise TopologyError(f"{scope} attribute {key!r} holds both {types[key].__name__} and "
                                        f"{type(value).__name__} values: GraphML types a key once")
    H = nx.DiGraph()  # G.copy() would keep the successors' order only
    H.graph.update(G.graph)
    H.add_nodes_from(G.nodes(data=True))
    H.add_edges_from((u, v, G.edges[u, v]) for u, v in _edge_order(G))
    H.graph[_GRAPHML_VERSION_KEY] = JSON_VERSION
    writer = _OrderedGraphMLWriter(named_key_ids=True)
    writer.add_graph_element(H)
    return str(writer)


def from_graphml(text) -> nx.DiGraph:
    """Read a fabric written by :func:`to_graphml`, with int, float and str types restored.

    The text is first checked with defusedxml (no DTD, no entities), then read by networkx.

    Parameters
    ----------
    text : str or bytes

    Returns
    -------
    networkx.DiGraph

    Raises
    ------
    TopologyImportError
        For text that is not GraphML of a directed graph, another format version, or a graph
        that is not a valid fabric.
    """
    root = parse_xml(text, "GraphML")
    try:
        parsed = nx.parse_graphml(text, node_type=str)
    except (nx.NetworkXError, ValueError, TypeError, KeyError, AttributeError, IndexError) as error:
        raise TopologyImportError(f"GraphML: {error}") from None
    except Exception as error:  # xml.etree ParseError and friends, already screened above
        raise TopologyImportError(f"GraphML: {type(error).__name__}: {error}") from None
    if not isinstance(parsed, nx.DiGraph) or parsed.is_multigraph():
        raise TopologyImportError("GraphML: expected a directed graph without parallel edges "
                                  "(edgedefault=\"directed\")")
    # networkx's reader goes through a MultiDiGraph and loses the predecessors' order: add the
    # edges again in the file's order (see _edge_order).
    seen: set = set()
    for element in root.iter("{http://graphml.graphdrawing.org/xmlns}node"):
        if element.get("id") in seen:
            raise TopologyImportError(f"GraphML: <node id={_show(element.get('id'))}> appears twice: expected "
                                      f"every node id once")
        seen.add(element.get("id"))
    G = nx.DiGraph()
    G.graph.update(parsed.graph)
    G.add_nodes_from(parsed.nodes(data=True))
    for element in root.iter("{http://graphml.graphdrawing.org/xmlns}edge"):
        u, v = element.get("source"), element.get("target")
        if not G.has_edge(u, v) and parsed.has_edge(u, v):
            G.add_edge(u, v, **parsed.edges[u, v])
    if G.number_of_edges() != parsed.number_of_edges():
        raise TopologyImportError("GraphML: expected the edges as <edge> elements of one <graph>")
    version = G.graph.pop(_GRAPHML_VERSION_KEY, None)
    for key in ("node_default", "edge_default"):  # added by networkx's reader
        if G.graph.get(key) == {}:
            del G.graph[key]
    if version != JSON_VERSION:
        raise TopologyImportError(f"GraphML: graph attribute {_GRAPHML_VERSION_KEY}={version!r}, "
                                  f"expected {JSON_VERSION}")
    try:
        validate(G)
    except TopologyError as error:
        raise TopologyImportError(f"GraphML: {error}") from error
    return G


