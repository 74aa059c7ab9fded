"""One prepared fabric: the frozen graph, its NCCL release and view, its symmetry, every cache.

Everything :mod:`models` computes about a fabric depends only on the graph and the NCCL release,
and much of it is worth keeping between calls: NCCL's routes and capacities, the channel searches of
GPU sets and host shapes, the MNNVL view of a rack, the network's charge of a channel set, the
symmetry classes of GPU sets. :class:`PreparedFabric` owns all of it as attributes, so the caches
live exactly as long as the caller keeps the object, and no module of :mod:`models` holds state of
its own. It freezes the graph (its structure with :func:`networkx.freeze`, its node, edge and graph
attributes read-only), since an edited graph would silently disagree with what was cached:
an edit raises :class:`FrozenFabricError`, and an edited fabric is a copy (``G.copy()`` or a
:mod:`topo.transform` function, which always copy) prepared anew. Since a frozen graph cannot
change, it keeps its validation: preparing it again (for another NCCL release, or passing
``fabric.G`` where a graph is taken) does not validate it again.

:func:`prepare` is how the public functions take their first argument: a
:class:`PreparedFabric` is used as it is; a plain graph is prepared for that one call, without
freezing the caller's graph.

Examples
--------
>>> import topo
>>> G = topo.dgx1v()
>>> fabric = PreparedFabric(G, nccl="2.18.6")
>>> fabric.profile.version, fabric.nccl.capacity("gpu0", "gpu3") / 1e9
('2.18.6', 40.0)
>>> G.edges["gpu0", "gpu3"]["bandwidth"] = 1.0
Traceback (most recent call last):
...
models.engine.fabric.FrozenFabricError: the graph 'DGX-1V' is prepared (models.PreparedFabric) and read-only: edit a copy (G.copy() or a topo.transform function) and prepare that
>>> H = G.copy()
>>> H.edges["gpu0", "gpu3"]["bandwidth"] = 1.0     # a copy is editable
>>> prepare(H) is not prepare(H), prepare(fabric) is fabric
(True, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import networkx as nx

from topo.collector import collector_paused
from topo.errors import DgxTopoError
from topo.schema import gpus as gpu_nodes
from topo.schema import validated_gpus
from topo.unedited import unedited

from .memo import BoundedMemo
from .symmetry import FabricSymmetry

if TYPE_CHECKING:  # NCCL's model is imported when a fabric first needs it (PreparedFabric.nccl)
    from .nccl.profiles import NcclProfile
    from .nccl.system import NcclSystem

__all__ = ["PreparedFabric", "FrozenFabricError", "prepare", "graph_of", "freeze_graph"]


class FrozenFabricError(DgxTopoError, nx.NetworkXError):
    """A prepared (frozen) graph was edited. Also a :class:`networkx.NetworkXError`, which is
    what :func:`networkx.freeze` raises for a structural edit."""


def _refuse(name):
    raise FrozenFabricError(f"the graph {name!r} is prepared (models.PreparedFabric) and read-only: edit a "
                            f"copy (G.copy() or a topo.transform function) and prepare that")


class _ReadOnlyAttributes(dict):
    """A node, edge or graph attribute dict of a frozen graph: reads as a dict, refuses edits.

    ``copy()`` (which ``G.copy()`` and ``nx.DiGraph(G)`` use) gives a plain, editable dict;
    pickling gives this class back (a pickled prepared graph stays frozen).
    """

    __slots__ = ("_name",)

    def __init__(self, data, name):
        dict.__init__(self, data)
        self._name = name

    def _refuse(self, *args, **kwargs):
        _refuse(self._name)

    __setitem__ = __delitem__ = __ior__ = _refuse
    update = pop = popitem = clear = setdefault = _refuse

    def copy(self) -> dict:
        return dict(self)

    def __copy__(self) -> dict:
        return dict(self)

    def __deepcopy__(self, memo) -> dict:
        import copy
        return copy.deepcopy(dict(self), memo)

    def __reduce__(self):
        return (_ReadOnlyAttributes, (dict(self), self._name))


_STRUCTURE = ("add_node", "add_nodes_from", "remove_node", "remove_nodes_from", "add_edge",
              "add_edges_from", "add_weighted_edges_from", "remove_edge", "remove_edges_from", "clear",
              "clear_edges", "update")


def _refuse_structure(self, *args, **kwargs):
    _refuse(self.graph.get("name", "fabric"))


class _FrozenDiGraph(nx.DiGraph):
    """The class of a frozen fabric: a :class:`networkx.DiGraph` whose structural methods refuse
    (``networkx.is_frozen`` is True), and whose copies (``copy()``, ``copy.deepcopy``,
    ``reverse()``) are plain, editable DiGraphs. Pickled, it stays frozen."""

    frozen = True

    def copy(self, as_view=False):
        if as_view:
            return nx.graphviews.generic_graph_view(self)
        return _plain(self, reverse=False)

    def reverse(self, copy=True):
        return _plain(self, reverse=True) if copy else super().reverse(copy=False)

    def __deepcopy__(self, memo):
        import copy
        return copy.deepcopy(_plain(self, reverse=False), memo)


for _method in _STRUCTURE:
    setattr(_FrozenDiGraph, _method, _refuse_structure)


def _plain(G, *, reverse: bool) -> nx.DiGraph:
    """An editable copy of a frozen graph (reversed: every edge turned round)."""
    H = nx.DiGraph()
    H.graph.update(G.graph)
    H.add_nodes_from((n, dict(d)) for n, d in G._node.items())
    H.add_edges_from(((v, u) if reverse else (u, v)) + (dict(d),)
                     for u, neighbours in G._adj.items() for v, d in neighbours.items())
    return H


def freeze_graph(G: nx.DiGraph) -> None:
    """Make ``G`` read-only in place: its structure (as :func:`networkx.freeze`: a structural edit
    raises :class:`FrozenFabricError`) and its node, edge and graph attribute dicts. Copies of
    ``G`` are editable. Freezing a frozen graph does nothing.

    The cost is one new dict per node and edge (a copy of the graph makes those and its
    adjacency): an edge's dict is shared by ``G._adj`` and ``G._pred``, and both get the
    read-only one. Every one of them is kept, so they are made with Python's cyclic garbage
    collector paused (:mod:`topo.collector`: process-wide while it lasts).

    Raises
    ------
    topo.DgxTopoError
        For a graph that is not exactly a :class:`networkx.DiGraph` (a subclass keeps methods of
        its own, which freezing would replace).
    """
    if isinstance(G, _FrozenDiGraph):
        return
    if type(G) is not nx.DiGraph:
        raise DgxTopoError(f"expected a networkx.DiGraph to prepare, received a {type(G).__name__}: "
                           f"prepare nx.DiGraph(G)")
    name = G.graph.get("name", "fabric")
    nodes = G._node
    # dict's own method: the adjacency of a built graph is a dict subclass (topo.unedited)
    # whose writes record an edit at Python speed; freezing replaces each dict by an equal one.
    put = dict.__setitem__
    with collector_paused():
        for n, data in nodes.items():
            put(nodes, n, _ReadOnlyAttributes(data, name))
        for u, neighbours in G._adj.items():
            for v, data in neighbours.items():
                frozen = _ReadOnlyAttributes(data, name)
                put(neighbours, v, frozen)
                put(G._pred[v], u, frozen)
        G.graph = _ReadOnlyAttributes(G.graph, name)
    G.__class__ = _FrozenDiGraph


# The instance attribute by which a graph that PreparedFabric validated and froze carries its
# validation: the dicts validation read (graph attributes, nodes, successors, predecessors),
# its GPUs in topo.gpus order, and whether it was an unedited build (topo.unedited).
_VALIDATED = "_validated_as"


def _checked_gpus(G: nx.DiGraph) -> tuple:
    """The GPUs of ``G`` in :func:`topo.gpus` order, and whether ``G`` is as a builder made it
    (:mod:`topo.unedited`: a cluster's hosts are then copies), validating ``G``
    (:func:`topo.validate`) unless it is a graph a :class:`PreparedFabric` validated and froze:
    a frozen graph refuses every edit of its structure and attributes, so while the dicts
    validation read are still the graph's own (``G.graph`` is an attribute one may rebind), it
    is as valid (and as built) as it was. A copy (``G.copy()``, ``nx.DiGraph(G)``, a
    :mod:`topo.transform` function) carries none of it and is validated."""
    if isinstance(G, _FrozenDiGraph):
        mark = G.__dict__.get(_VALIDATED)
        if (mark is not None and mark[0] is G.graph and mark[1] is G._node and mark[2] is G._adj
                and mark[3] is G._pred):
            return mark[4], mark[5]
    if unedited(G):  # built valid (a built-in system or topo.build's cluster), not edited since
        return tuple(gpu_nodes(G)), True
    return tuple(validated_gpus(G)), False


class PreparedFabric:
    """A fabric prepared once for everything :mod:`models` computes on it.

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric. Validated here once and frozen in place (module docstring); prepare a copy to
        keep ``G`` editable. A graph an earlier PreparedFabric validated and froze is not
        validated again (it refuses every edit), nor is a built-in system or a cluster
        :func:`topo.build` made and nobody edited since (:mod:`topo.unedited`).
    nccl : str or NcclProfile, optional
        The NCCL release (``"2.18.5"``, ``"2.12"``; default: the reference version). The one
        carrier of the release for everything computed on this fabric.
    searches : models.engine.memo.BoundedMemo, optional
        The memo of channel searches by problem content, shared with other fabrics whose hosts
        are alike (the variants of a what-if sweep); a new one by default.
    freeze : bool
        Freeze ``G`` (default). False only for a graph nobody edits while the object lives (a
        call's own, :func:`prepare`).

    Attributes
    ----------
    G : networkx.DiGraph
        The frozen graph.
    profile : NcclProfile
        The release (a named one is checked here; the default, built on first use).
    nccl : models.engine.nccl.system.NcclSystem
        NCCL's view: routes, capacities, and the caches of the channel searches (its MNNVL views,
        host searches and the search memo) and of the network's charge. Built on first use: what
        reads only the graph (P2P matrices, the graph's symmetry) does not import NCCL's model.
    ids : dict
        GPU node -> GPU id (position in :func:`topo.gpus`).
    name : str
    memo : dict
        Results of the models above the engine that depend only on this fabric (and their own
        arguments, which each caller puts in its key): a bound of a GPU set, an estimate grid of
        the planner, a report section. Keys start with the owner's name.
    """

    def __init__(self, G: nx.DiGraph, *, nccl: str | NcclProfile | None = None, searches: BoundedMemo | None = None,
                 freeze: bool = True):
        if isinstance(G, PreparedFabric):
            raise DgxTopoError("PreparedFabric(G): expected a graph, received a PreparedFabric (use it as "
                               "it is, or models.prepare(fabric))")
        if not isinstance(G, nx.DiGraph):
            raise DgxTopoError(f"expected a fabric (networkx.DiGraph) or a models.PreparedFabric, received "
                               f"{type(G).__name__}")
        # An unedited cluster of topo.build: its hosts are copies (topo.cluster), which the
        # channel search need not compare before sharing a host's search (NcclSystem.host_kind).
        gpus, built = _checked_gpus(G)
        if freeze:
            freeze_graph(G)
            G.__dict__[_VALIDATED] = (G.graph, G._node, G._adj, G._pred, gpus, built)
        self.G = G
        self._profile: NcclProfile | None = None
        if nccl is not None:  # a release named is checked now
            from .nccl.profiles import nccl_profile

            self._profile = nccl_profile(nccl)
        self._nccl: NcclSystem | None = None
        self._searches, self._built = searches, built
        self.ids = {n: i for i, n in enumerate(gpus)}
        self.name = G.graph.get("name", "fabric")
        self.memo: dict = {}
        self._symmetry = None

    @property
    def profile(self) -> NcclProfile:
        """The NCCL release (the reference release unless one was named)."""
        if self._profile is None:
            from .nccl.profiles import nccl_profile

            self._profile = nccl_profile(None)
        return self._profile

    @property
    def nccl(self) -> NcclSystem:
        """NCCL's view of the fabric, built on first use."""
        if self._nccl is None:
            from .nccl.system import NcclSystem

            self._nccl = NcclSystem(self.G, self.profile, validate=False, searches=self._searches,
                                    hosts_alike=self._built)
        return self._nccl

    def _nccl_system(self) -> NcclSystem:
        return self.nccl

    @property
    def symmetry(self) -> FabricSymmetry:
        """The GPU-set symmetry of this fabric (:class:`models.engine.symmetry.FabricSymmetry`),
        built on first use."""
        if self._symmetry is None:
            self._symmetry = FabricSymmetry(self.G, self._nccl_system)
        return self._symmetry

    @property
    def searches(self) -> BoundedMemo:
        """The channel-search memo (shared with the fabrics prepared with the same one)."""
        return self.nccl.searches

    def __repr__(self) -> str:
        return f"PreparedFabric({self.name!r}, nccl={self.profile.version!r})"


def prepare(fabric: nx.DiGraph | PreparedFabric, *, nccl: str | NcclProfile | None = None) -> PreparedFabric:
    """``fabric`` as a :class:`PreparedFabric`: itself if it is one, else the graph prepared for
    one call (validated, not frozen: the caller's graph stays editable).

    Parameters
    ----------
    fabric : networkx.DiGraph or PreparedFabric
    nccl : str or NcclProfile, optional
        The release for a graph. With a prepared fabric it must be None or the fabric's own.

    Raises
    ------
    topo.DgxTopoError
        For anything else than a graph or a prepared fabric, or a prepared fabric with another
        release.
    """
    if isinstance(fabric, PreparedFabric):
        if nccl is None:
            return fabric
        from .nccl.profiles import nccl_profile

        if nccl_profile(nccl) != fabric.profile:
            asked = nccl_profile(nccl).version
            raise DgxTopoError(f"the fabric is prepared for NCCL {fabric.profile.version}, received profile "
                               f"{asked!r}: prepare the graph for that release (models.PreparedFabric(G.copy(), "
                               f"nccl={asked!r})) or omit the profile")
        return fabric
    return PreparedFabric(fabric, nccl=nccl, freeze=False)


def graph_of(fabric: nx.DiGraph | PreparedFabric) -> nx.DiGraph:
    """The graph of ``fabric``: a prepared fabric's own (validated when it was prepared), or a
    graph validated now (unless a prepared fabric validated and froze it: :class:`PreparedFabric`).
    For functions that read the graph but no cache of the fabric.

    Raises
    ------
    topo.DgxTopoError
        For anything else than a graph or a prepared fabric, or an invalid graph.
    """
    if isinstance(fabric, PreparedFabric):
        return fabric.G
    if not isinstance(fabric, nx.DiGraph):
        raise DgxTopoError(f"expected a fabric (networkx.DiGraph) or a models.PreparedFabric, received "
                           f"{type(fabric).__name__}")
    _checked_gpus(fabric)
    return fabric
