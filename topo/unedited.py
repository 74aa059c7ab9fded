"""Graphs known to be unedited since they were built valid: their validation carried, soundly.

:func:`topo.build` joins a cluster from copies of a validated system and a network of catalogue
parts (:func:`topo.cluster.join_hosts`): it is valid by construction, and validating it again
(:func:`topo.validate`) costs about as much as copying it. Whoever models it must validate it
all the same, since a user may edit the graph first, and networkx keeps no record of edits.

This module keeps that record for the graphs built here. Every dict of such a graph (its graph
attributes, node and edge attributes, and both adjacencies, outer and inner) is an instance of a
dict subclass made for that graph alone, whose every mutating method (``d[k] = v``, ``del``,
``update``, ``|=``, ``pop``, ``popitem``, ``setdefault``, ``clear``) marks the graph edited
before it acts. Every edit networkx makes (adding or removing nodes and edges, ``G.nodes[n][k] =
v``, :func:`networkx.set_edge_attributes`, ...) goes through one of them. :func:`unedited` is
then True only while no such method ran and the graph still holds the dicts it was built with
(rebinding ``G.graph`` or building a view over the dicts gives another graph).

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
>>> unedited(G), unedited(G.copy())
(True, False)
>>> G.edges["h0.gpu0", "h0.gpu3"]["bandwidth"] = 1.0
>>> unedited(G)
False
"""

from __future__ import annotations

import operator
from itertools import chain
from typing import Any, ClassVar, TypeVar

import networkx as nx

__all__ = ["watched_dict_class", "seal", "unedited"]


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

    def copy(self) -> dict:
        return dict(self)

    def __reduce__(self):
        return (dict, (dict(self),))


def watched_dict_class() -> type[_Watched]:
    """A new dict subclass for the dicts of one graph being built (all of them: see
    :func:`seal`). Build with it as with ``dict`` (``cls(d)``, ``cls(d, key=value)``)."""
    return type("WatchedDict", (_Watched,), {"__slots__": (), "record": _Record()})


def seal(G: nx.DiGraph, cls: type[_Watched]) -> None:
    """Start the record of ``G``, built valid with every dict an instance of ``cls``: from now
    on :func:`unedited` tells whether it was edited. Writes while building are forgotten.

    Raises
    ------
    ValueError
        If a dict of ``G`` is not a ``cls``: a graph partly watched would pass unedited after
        an edit of the rest.
    """
    dicts = _dicts(G)
    graph, node, adj, pred = dicts
    inner = (*adj.values(), *pred.values())
    every = chain(dicts, node.values(), inner, chain.from_iterable(map(dict.values, inner)))
    if set(map(type, every)) != {cls}:
        raise ValueError("seal: every dict of the graph must be of the graph's watched class")
    cls.record.dicts = dicts
    cls.record.edited = False


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
