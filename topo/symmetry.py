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

from collections.abc import Iterable

import networkx as nx
from networkx.algorithms.isomorphism import DiGraphMatcher

from .schema import gpus

__all__ = ["interchangeable_gpus", "interchangeable_nodes", "gpu_automorphisms", "colour_refinement",
           "AUTOMORPHISM_STEPS"]

# What a swap must preserve: node attributes (not the index, which is only a name) and edges.
# Socket and baseboard are labels of where a part sits; the edges already say it.
_NODE_KEYS = ("kind", "model", "compute_capability", "memory_bandwidth")
_EDGE_KEYS = ("kind", "links", "bandwidth", "latency", "link", "host_bridge")


def _edge(data) -> tuple:
    return tuple(data.get(k) for k in _EDGE_KEYS)


def _node(data) -> tuple:
    return tuple(data.get(k) for k in _NODE_KEYS)


def _links(G, x, kinds) -> tuple:
    """``x``'s edges (out, in) of ``kinds``, by neighbour."""
    out = {w: _edge(d) for w, d in G.adj[x].items() if kinds is None or d["kind"] in kinds}
    into = {w: _edge(d) for w, d in G.pred[x].items() if kinds is None or d["kind"] in kinds}
    return out, into


def _swappable(G, u, v, kinds, links) -> bool:
    """Whether the transposition of ``u`` and ``v`` is an automorphism (over edges of ``kinds``):
    the same links to every other node, and the links between them the same both ways.
    ``links(x)`` is :func:`_links` of ``x`` (computed once per node by the caller)."""
    (u_out, u_in), (v_out, v_in) = links(u), links(v)
    for a, b in ((u_out, v_out), (u_in, v_in)):
        # The same links to every node but u and v (the dicts without those two keys are equal).
        if len(a) - (u in a) - (v in a) != len(b) - (u in b) - (v in b):
            return False
        if any(w not in (u, v) and b.get(w) != e for w, e in a.items()):
            return False
    uv, vu = u_out.get(v), v_out.get(u)
    return (uv is None) == (vu is None) and uv == vu


def _bucket(G, x, kinds, label) -> tuple:
    """What a node links to outside its own label, as a hashable key: two interchangeable nodes
    have the same (their links to nodes of their label are compared pairwise)."""
    own = label(x)
    out = sorted((str(w), _edge(d)) for w, d in G.adj[x].items()
                 if label(w) != own and (kinds is None or d["kind"] in kinds))
    into = sorted((str(w), _edge(d)) for w, d in G.pred[x].items()
                  if label(w) != own and (kinds is None or d["kind"] in kinds))
    return repr(own), tuple(out), tuple(into)


def interchangeable_nodes(G, nodes, *, label=None, edge_kinds=None) -> list:
    """Classes of interchangeable nodes among ``nodes``, in their order.

    Two nodes are interchangeable (*twins*) when swapping them maps the fabric onto itself: the
    same label and the same links (kind, count, bandwidth, technology) to every other node, and
    the links between them the same both ways. Every permutation within a class is then an
    automorphism. Nodes are first bucketed by what they link to outside their label (linear in
    the edges), then compared pairwise within a bucket only.

    Parameters
    ----------
    G : networkx.DiGraph
    nodes : iterable of node ids
    label : callable, optional
        ``label(node)``: what a swap must keep (default: the node's kind, model, compute
        capability and memory bandwidth; not its index, which is only a name).
    edge_kinds : iterable of str, optional
        Only edges of these kinds count.

    Returns
    -------
    list of list
    """
    kinds = None if edge_kinds is None else set(edge_kinds)
    label = label or (lambda n: _node(G.nodes[n]))
    classes: list = []
    buckets: dict = {}
    profiles: dict = {}

    def links(x):
        if x not in profiles:
            profiles[x] = _links(G, x, kinds)
        return profiles[x]
    for g in nodes:
        bucket = buckets.setdefault(_bucket(G, g, kinds, label), [])
        for members in bucket:
            if all(_swappable(G, g, m, kinds, links) for m in members):
                members.append(g)
                break
        else:
            members = [g]
            bucket.append(members)
            classes.append(members)
    return classes


def interchangeable_gpus(G: nx.DiGraph, *, edge_kinds: Iterable[str] | None = None) -> list:
    """Classes of interchangeable GPUs, in GPU order (:func:`interchangeable_nodes` of the GPUs).

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
    return interchangeable_nodes(G, gpus(G), edge_kinds=edge_kinds)


#: Default work limit of :func:`gpu_automorphisms`: candidate node pairs VF2 may try.
AUTOMORPHISM_STEPS = 20_000


class _Budget:
    """Counts VF2's candidate pairs and stops the search beyond ``steps`` (deterministically:
    a count, not a clock)."""

    __slots__ = ("left",)

    def __init__(self, steps):
        self.left = steps


class _OutOfSteps(Exception):
    pass


def colour_refinement(G, node_label=None, edge_label=None) -> dict:
    """Colour refinement (1-WL) of an attributed graph: node -> stable colour, a small int.

    Colours are ranks of sorted signatures, so they depend neither on ``PYTHONHASHSEED`` nor on
    the order of the graph's nodes: the sorted colours of two isomorphic graphs are equal (a
    certificate), and an isomorphism maps nodes onto nodes of the same colour.

    Parameters
    ----------
    G : networkx.DiGraph
    node_label, edge_label : callable, optional
        ``node_label(node, data)`` and ``edge_label(u, v, data)``: what an isomorphism must keep
        (default: the attributes a swap of GPUs must keep).

    Returns
    -------
    dict
    """
    node_label = node_label or (lambda n, d: _node(d))
    edge_label = edge_label or (lambda u, v, d: _edge(d))

    def rank(labels):
        table = {label: i for i, label in enumerate(sorted(set(labels.values()), key=repr))}
        return {n: table[label] for n, label in labels.items()}

    colour = rank({n: repr(node_label(n, d)) for n, d in G.nodes(data=True)})
    edge = {(u, v): repr(edge_label(u, v, d)) for u, v, d in G.edges(data=True)}
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


def _quotient(G) -> nx.DiGraph:
    """``G`` with each class of interchangeable non-GPU nodes (:func:`interchangeable_nodes`: the
    parallel NVSwitch planes of a DGX H100 import, 18 of them) made one node that carries its
    size. An automorphism of the quotient lifts to one of ``G`` (a class goes onto a class of the
    same size, and every permutation within a class is an automorphism), and the quotient has
    none of the class's k! permutations that move no GPU."""
    others = [n for n, kind in G.nodes(data="kind") if kind != "gpu"]
    first = {}
    size = {}
    for members in interchangeable_nodes(G, others):
        for n in members:
            first[n] = members[0]
        size[members[0]] = len(members)
    Q = nx.DiGraph()
    for n, data in G.nodes(data=True):
        if first.get(n, n) == n:
            Q.add_node(n, **data, twins=size.get(n, 1))
    for u, v, data in G.edges(data=True):
        Q.add_edge(first.get(u, u), first.get(v, v), **data)
    return Q


def gpu_automorphisms(G: nx.DiGraph, *, limit: int = 1024, steps: int = AUTOMORPHISM_STEPS) -> list:
    """Automorphisms of the whole fabric, as maps of GPU nodes, identity first.

    Only worth computing where no two GPUs are interchangeable (otherwise the group is huge
    and :func:`interchangeable_gpus` describes it better): then the list holds the identity
    alone. Bounded and deterministic: interchangeable parts that are not GPUs are one node
    (:func:`_quotient`), colour refinement (:func:`colour_refinement`) follows, and where it
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
    G = _quotient(G)
    colour = colour_refinement(G, node_label=lambda n, d: (_node(d), d["twins"]))
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
