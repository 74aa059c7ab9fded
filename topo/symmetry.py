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

import networkx as nx
from networkx.algorithms.isomorphism import DiGraphMatcher

from .schema import gpus

__all__ = ["interchangeable_gpus", "gpu_automorphisms", "AUTOMORPHISM_STEPS"]

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


def _neighbourhood(G, x, kinds) -> tuple:
    """What a GPU links to outside the GPUs, as a hashable bucket key: two interchangeable GPUs
    have the same (their links to other GPUs are compared pairwise)."""
    out = sorted((str(w), _edge(d)) for w, d in G.adj[x].items()
                 if G.nodes[w]["kind"] != "gpu" and (kinds is None or d["kind"] in kinds))
    into = sorted((str(w), _edge(d)) for w, d in G.pred[x].items()
                  if G.nodes[w]["kind"] != "gpu" and (kinds is None or d["kind"] in kinds))
    return _node(G.nodes[x]), tuple(out), tuple(into)


def interchangeable_gpus(G, *, edge_kinds=None) -> list:
    """Classes of interchangeable GPUs, in GPU order.

    GPUs are first bucketed by what they link to outside the GPUs (linear in the edges), then
    compared pairwise within a bucket only, so a fabric without interchangeable GPUs (a PCIe
    server, every GPU under its own switch) costs no pairwise work.

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
    buckets: dict = {}
    for g in gpus(G):
        bucket = buckets.setdefault(_neighbourhood(G, g, kinds), [])
        for members in bucket:
            if all(_swappable(G, g, m, kinds) for m in members):
                members.append(g)
                break
        else:
            members = [g]
            bucket.append(members)
            classes.append(members)
    return classes


#: Default work limit of :func:`gpu_automorphisms`: candidate node pairs VF2 may try.
AUTOMORPHISM_STEPS = 200_000


class _Budget:
    """Counts VF2's candidate pairs and stops the search beyond ``steps`` (deterministically:
    a count, not a clock)."""

    __slots__ = ("left",)

    def __init__(self, steps):
        self.left = steps


class _OutOfSteps(Exception):
    pass


def _colours(G) -> dict:
    """Colour refinement (1-WL) of the attributed fabric: node -> stable colour, a small int.

    Colours are ranks of sorted signatures, so they do not depend on ``PYTHONHASHSEED`` or on
    the order of the graph's nodes. Automorphisms map nodes onto nodes of the same colour.
    """
    def rank(labels):
        table = {label: i for i, label in enumerate(sorted(set(labels.values()), key=repr))}
        return {n: table[label] for n, label in labels.items()}

    colour = rank({n: _node(d) for n, d in G.nodes(data=True)})
    edge = {(u, v): repr(_edge(d)) for u, v, d in G.edges(data=True)}
    classes = len(set(colour.values()))
    for _ in range(len(colour)):
        colour = rank({n: (colour[n],
                           tuple(sorted((edge[n, w], colour[w]) for w in G.adj[n])),
                           tuple(sorted((edge[w, n], colour[w]) for w in G.pred[n])))
                       for n in G})
        refined = len(set(colour.values()))
        if refined == classes:
            break
        classes = refined
    return colour


def gpu_automorphisms(G, *, limit: int = 1024, steps: int = AUTOMORPHISM_STEPS) -> list:
    """Automorphisms of the whole fabric, as maps of GPU nodes, identity first.

    Only worth computing where no two GPUs are interchangeable (otherwise the group is huge
    and :func:`interchangeable_gpus` describes it better): then the list holds the identity
    alone. Bounded and deterministic: colour refinement (:func:`_colours`) first, and where it
    leaves every GPU alone in its colour no GPU moves (no search at all); otherwise VF2 matches
    nodes of equal colour, in a fixed order, and stops after ``limit`` distinct maps or
    ``steps`` candidate pairs, whichever comes first. Every map returned is an automorphism, so
    a result that stopped early only shares fewer GPU sets (it is never wrong), and the same
    fabric gives the same maps whatever ``PYTHONHASHSEED``.

    Parameters
    ----------
    G : networkx.DiGraph
    limit : int
        Distinct GPU maps kept.
    steps : int
        Candidate node pairs VF2 may try (:data:`AUTOMORPHISM_STEPS`).

    Returns
    -------
    list of dict
        GPU node -> GPU node.
    """
    gpu_nodes = gpus(G)
    identity = {g: g for g in gpu_nodes}
    if any(len(c) > 1 for c in interchangeable_gpus(G)):
        return [identity]
    colour = _colours(G)
    gpu_colours = [colour[g] for g in gpu_nodes]
    if len(set(gpu_colours)) == len(gpu_colours):
        return [identity]
    # A bare copy in a fixed node order (colour, then name), labelled by colour: VF2's order of
    # candidates follows it, so the maps found do not depend on how the graph was built.
    order = sorted(G, key=lambda n: (colour[n], str(n)))
    L = nx.DiGraph()
    L.add_nodes_from((n, {"c": colour[n]}) for n in order)
    L.add_edges_from((u, v, {"e": _edge(G.adj[u][v])}) for u in order
                     for v in sorted(G.adj[u], key=lambda w: (colour[w], str(w))))
    budget = _Budget(steps)

    def same_node(a, b):
        budget.left -= 1
        if budget.left < 0:
            raise _OutOfSteps
        return a["c"] == b["c"]

    matcher = DiGraphMatcher(L, L, node_match=same_node, edge_match=lambda a, b: a["e"] == b["e"])
    found = [identity]
    seen = {tuple(gpu_nodes)}
    try:
        for mapping in matcher.isomorphisms_iter():
            image = tuple(mapping[g] for g in gpu_nodes)
            if image not in seen:
                seen.add(image)
                found.append(dict(zip(gpu_nodes, image)))
                if len(found) >= limit:
                    break
    except _OutOfSteps:
        pass
    return found
