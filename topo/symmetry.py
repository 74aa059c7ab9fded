"""Symmetries of a fabric's GPUs, so that models can compute one case per equivalence class.

Two GPUs are *interchangeable* when swapping them maps the fabric onto itself: they have the
same attributes and the same links (kind, count, bandwidth, technology) to every other node.
Any permutation within a class of interchangeable GPUs is then an automorphism, so a result
that depends only on the fabric's structure is the same for every GPU set with the same
number of members in each class. On the NVLink fabric of a DGX-2 the 8 GPUs of a baseboard
form one class (with the PCIe tree too, only the two GPUs under one PCIe switch do); no two
GPUs of a DGX-1 are interchangeable, but the hybrid cube-mesh has a few automorphisms that
move GPUs (:func:`gpu_automorphisms`).

Examples
--------
>>> from topo import dgx1v, dgx2
>>> [len(c) for c in interchangeable_gpus(dgx2(), edge_kinds=["nvlink"])]
[8, 8]
>>> len(interchangeable_gpus(dgx2()))
8
>>> len(interchangeable_gpus(dgx1v())), len(gpu_automorphisms(dgx1v()))
(8, 4)
"""

from __future__ import annotations

from networkx.algorithms.isomorphism import DiGraphMatcher

from .schema import gpus

__all__ = ["interchangeable_gpus", "gpu_automorphisms"]

# What a swap must preserve: node attributes (not the index, which is only a name) and edges.
# Socket and baseboard are labels of where a part sits; the edges already say it.
_NODE_KEYS = ("kind", "model", "compute_capability", "memory_bandwidth")
_EDGE_KEYS = ("kind", "links", "bandwidth", "latency", "link", "host_bridge")


def _edge(data) -> tuple:
    return tuple(data.get(k) for k in _EDGE_KEYS)


def _node(data) -> tuple:
    return tuple(data.get(k) for k in _NODE_KEYS)


def _swappable(G, u, v, edge_kinds) -> bool:
    if _node(G.nodes[u]) != _node(G.nodes[v]):
        return False

    def profile(x):
        out = {w: _edge(d) for w, d in G.adj[x].items()
               if w not in (u, v) and (edge_kinds is None or d["kind"] in edge_kinds)}
        into = {w: _edge(d) for w, d in G.pred[x].items()
                if w not in (u, v) and (edge_kinds is None or d["kind"] in edge_kinds)}
        return out, into

    return profile(u) == profile(v)


def interchangeable_gpus(G, *, edge_kinds=None) -> list:
    """Classes of interchangeable GPUs, in GPU order.

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric.
    edge_kinds : iterable of str, optional
        Only edges of these kinds count (for a figure that ignores the others, such as an
        NVLink-only bisection); all edges by default.

    Returns
    -------
    list of list
        GPU nodes; every GPU is in exactly one class.
    """
    kinds = None if edge_kinds is None else set(edge_kinds)
    classes: list = []
    for g in gpus(G):
        for members in classes:
            if all(_swappable(G, g, m, kinds) for m in members):
                members.append(g)
                break
        else:
            classes.append([g])
    return classes


def gpu_automorphisms(G, *, limit: int = 1024) -> list:
    """Automorphisms of the whole fabric, as maps of GPU nodes, identity first.

    Only worth computing where no two GPUs are interchangeable (otherwise the group is huge
    and :func:`interchangeable_gpus` describes it better): then the list holds the identity
    alone. Enumeration stops after ``limit`` maps.

    Parameters
    ----------
    G : networkx.DiGraph
    limit : int

    Returns
    -------
    list of dict
        GPU node -> GPU node.
    """
    gpu_nodes = gpus(G)
    identity = {g: g for g in gpu_nodes}
    if any(len(c) > 1 for c in interchangeable_gpus(G)):
        return [identity]
    matcher = DiGraphMatcher(G, G, node_match=lambda a, b: _node(a) == _node(b),
                             edge_match=lambda a, b: _edge(a) == _edge(b))
    found = [identity]
    for mapping in matcher.isomorphisms_iter():
        image = {g: mapping[g] for g in gpu_nodes}
        if image != identity:
            found.append(image)
        if len(found) >= limit:
            break
    return found
