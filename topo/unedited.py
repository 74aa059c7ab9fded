"""Graphs known to be unedited since they were built valid: their validation carried, soundly.

The builders of the built-in systems (:mod:`topo.dgx`, :mod:`topo.dgx_nvswitch`, the variants
of :mod:`topo.registry`) and :func:`topo.build`'s clusters (:func:`topo.cluster.join_hosts`,
copies of a valid system joined by a network of catalogue parts) make graphs valid by
construction: every one of them is validated by the tests (``tests/topo/test_builders.py``,
``tests/topo/test_cluster.py``), and validating it again at run time (:func:`topo.validate`)
costs about as much as building it. Whoever models a graph must validate it all the same,
since a user may edit it first, and networkx keeps no record of edits.

This module keeps that record for the graphs built here. Every dict of such a graph (its graph
attributes, node and edge attributes, and both adjacencies, outer and inner) is an instance of a
dict subclass made for that graph alone (:func:`watched_graph`), whose every mutating method
(``d[k] = v``, ``del``, ``update``, ``|=``, ``pop``, ``popitem``, ``setdefault``, ``clear``)
marks the graph edited before it acts. Every edit networkx makes (adding or removing nodes and
edges, ``G.nodes[n][k] = v``, :func:`networkx.set_edge_attributes`, ...) goes through one of
them. :func:`unedited` is then True only while no such method ran since the builder sealed the
graph (:func:`seal`) and the graph still holds the dicts it was built with (rebinding ``G.graph``
or building a view over the dicts gives another graph). :func:`topo.validate` passes such a
graph without checking it again, and so does every function that validates its input.

Copies are plain: ``dict.copy`` of an instance, ``G.copy()``, ``nx.DiGraph(G)``, pickling and
``copy.deepcopy`` give plain dicts (and a graph that is validated like any other). Reads cost
what they cost on a dict. What is not covered: calling ``dict``'s own methods on an instance
(``dict.__setitem__(d, k, v)``, ``d.__init__(...)``), which bypasses any subclass and is not how
graphs are edited, and rebinding networkx's private attributes of the graph other than those
checked (``G._node``, ``G._adj``, ``G._pred``, ``G.graph``).

Examples
--------
>>> import topo
>>> G = topo.build("2xdgx1v")
>>> unedited(G), unedited(G.copy()), unedited(topo.dgx2())
(True, False, True)
>>> G.edges["h0.gpu0", "h0.gpu3"]["bandwidth"] = 1.0
>>> unedited(G)
False
"""

from __future__ import annotations

import operator
from itertools import chain
from typing import Any, ClassVar, TypeVar

import networkx as nx

__all__ = ["watched_dict_class", "watched_graph", "seal", "sealed", "unedited"]


class _Record:
    """Whether a graph was edited, and the dicts it was sealed with."""

    __slots__ = ("edited", "dicts")

    def __init__(self):
        self.edited = False
        self.dicts = ()


_W = TypeVar("_W", bound="_Watched")


class _Watched(dict):
    """A dict of one watched graph (the subclass :func:`watched_dict_class` makes for it)."""

    __slots__ = ()
    record: ClassVar[_Record]  # each graph's own subclass has its own

    def __setitem__(self, key, value):
        type(self).record.edited = True
        dict.__setitem__(self, key, value)

    def __delitem__(self, key):
        type(self).record.edited = True
        dict.__delitem__(self, key)

    def __or__(self, other: Any) -> dict:  # a new plain dict, as dict's own gives
        return dict.__or__(self, other)

    def __ior__(self: _W, other: Any) -> _W:
        type(self).record.edited = True
        return dict.__ior__(self, other)

    def update(self, *args, **kwargs):
        type(self).record.edited = True
        dict.update(self, *args, **kwargs)

    def pop(self, *args):
        type(self).record.edited = True
        return dict.pop(self, *args)

    def popitem(self):
        type(self).record.edited = True
        return dict.popitem(self)

    def setdefault(self, key, default=None):
        type(self).record.edited = True
        return dict.setdefault(self, key, default)

    def clear(self):
        type(self).record.edited = True
        dict.clear(self)

    # dict's own: a plain dict (as for any subclass), at C speed; networkx copies every
    # node's and edge's attributes with it (G.copy()).
    copy = dict.copy

    def __reduce__(self):
        return (dict, (dict(self),))


def watched_dict_class() -> type[_Watched]:
    """A new dict subclass for the dicts of one graph being built (all of them: see
    :func:`seal`). Build with it as with ``dict`` (``cls(d)``, ``cls(d, key=value)``)."""
    return type("WatchedDict", (_Watched,), {"__slots__": (), "record": _Record()})


def watched_graph(**attributes) -> nx.DiGraph:
    """An empty DiGraph to build a valid fabric in (graph attributes ``attributes``), whose every
    dict, and every one networkx makes for it until :func:`seal`, is an instance of a new
    :func:`watched_dict_class`. Build with networkx and :mod:`topo.parts` as in any graph (the
    record starts when it is sealed), then :func:`seal` it.

    Examples
    --------
    >>> G = watched_graph(name="two GPUs")
    >>> G.add_edge("a", "b")
    >>> seal(G)
    >>> unedited(G), type(G.copy()._adj) is dict
    (True, True)
    """
    cls = watched_dict_class()
    G = nx.DiGraph.__new__(nx.DiGraph)
    for factory in _FACTORIES:
        setattr(G, factory, cls)
    nx.DiGraph.__init__(G, **attributes)
    return G


# The factories of the dicts networkx makes for a graph (networkx.DiGraph's class attributes),
# which watched_graph sets on the graph being built and seal takes back.
_FACTORIES = ("graph_attr_dict_factory", "node_dict_factory", "node_attr_dict_factory",
              "adjlist_outer_dict_factory", "adjlist_inner_dict_factory", "edge_attr_dict_factory")


def seal(G: nx.DiGraph, cls: type[_Watched] | None = None) -> None:
    """Start the record of ``G``, built valid with every dict an instance of ``cls`` (default: the
    class of its graph attributes, as :func:`watched_graph` made them): from now on
    :func:`unedited` tells whether it was edited. Writes while building are forgotten; a graph
    sealed again (a builder that edits the graph of another) starts a new record. The dict
    factories :func:`watched_graph` set on ``G`` go: networkx makes plain dicts for it from now on.

    Raises
    ------
    ValueError
        If a dict of ``G`` is not a ``cls``: a graph partly watched would pass unedited after
        an edit of the rest.
    """
    dicts = _dicts(G)
    graph, node, adj, pred = dicts
    if cls is None:
        cls = type(graph)
    inner = (*adj.values(), *pred.values())
    every = chain(dicts, node.values(), inner, chain.from_iterable(map(dict.values, inner)))
    if not issubclass(cls, _Watched) or set(map(type, every)) != {cls}:
        raise ValueError("seal: every dict of the graph must be of the graph's watched class")
    own = vars(G)
    for factory in _FACTORIES:
        own.pop(factory, None)
    cls.record.dicts = dicts
    cls.record.edited = False


def sealed(G: nx.DiGraph) -> nx.DiGraph:
    """A sealed copy of ``G``, a plain DiGraph just built valid: the same graph attributes, nodes
    and edges in the same orders (successors and predecessors alike), every dict a watched one.

    A builder builds in a plain graph, where networkx writes at C speed, and returns this copy:
    building in a :func:`watched_graph` costs a Python call per write, more than copying once.

    Examples
    --------
    >>> G = nx.DiGraph(name="two GPUs")
    >>> G.add_edge("a", "b", kind="nvlink")
    >>> H = sealed(G)
    >>> unedited(H), unedited(G), H.edges["a", "b"], H.graph["name"]
    (True, False, {'kind': 'nvlink'}, 'two GPUs')
    """
    H = watched_graph()
    cls = type(vars(H)["graph"])
    put = dict.__setitem__  # H's dicts are watched: dict's own method writes without a record
    graph, node, succ, pred = _dicts(H)
    graph_attributes, nodes, successors, predecessors = _dicts(G)
    dict.update(graph, graph_attributes)
    for n, data in nodes.items():
        put(node, n, cls(data))
    for u, neighbours in successors.items():
        put(succ, u, cls({v: cls(data) for v, data in neighbours.items()}))
    for v, neighbours in predecessors.items():  # the same edge dicts, in G's order of predecessors
        put(pred, v, cls({u: succ[u][v] for u in neighbours}))
    seal(H, cls)
    return H


def _dicts(G: nx.DiGraph) -> tuple:
    """The dicts networkx keeps a DiGraph in: graph attributes, nodes, successors, predecessors."""
    own = vars(G)
    return own["graph"], own["_node"], own["_adj"], own["_pred"]


def unedited(G: Any) -> bool:
    """Whether ``G`` is a graph :func:`seal` sealed, unedited since (module docstring)."""
    if not isinstance(G, nx.DiGraph) or not isinstance(vars(G).get("_adj"), _Watched):
        return False
    record = type(vars(G)["_adj"]).record
    return not record.edited and len(record.dicts) == 4 and all(map(operator.is_, _dicts(G), record.dicts))
