"""Fabric figures of merit: bisection bandwidth and per-GPU injection bandwidth.

Bisection bandwidth is the smallest capacity, per direction, that has to be cut to split
the GPUs into two halves: the minimum over balanced GPU bipartitions (S, T) of the minimum
S-to-T cut, switches free to fall on either side. Each cut is a maximum flow from S to T.

Exact, and fast on symmetric fabrics: GPUs that are *interchangeable* (swapping the two is
an automorphism of the fabric, e.g. the 8 GPUs of a DGX-2 baseboard) give the same cut, so
only the number of GPUs taken from each class of interchangeable GPUs matters, and a side
and its complement cut the same. DGX-1 has no interchangeable GPUs and needs C(8,4)/2 = 35
flows; DGX-2 has two classes of 8 (its baseboards) and needs 5 (0 to 4 GPUs of board 0 on
one side). In general the work is the number of count vectors over the classes, which is polynomial
in the class sizes for a fixed number of classes and up to C(n, n/2) for a fabric without
symmetry; ``max_cases`` bounds it.

Examples
--------
>>> from topo import dgx1v, dgx2
>>> bisection_bandwidth(dgx1v()) / 1e9
150.0
>>> bisection_bandwidth(dgx2()) / 1e12
1.2
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx

from .errors import DgxTopoError, TopologyError
from .schema import EDGE_KINDS, gpus, validate
from .symmetry import interchangeable_gpus

__all__ = ["Bisection", "bisection", "bisection_bandwidth", "injection_bandwidth"]

_SOURCE, _SINK = ("_bisection_source",), ("_bisection_sink",)


@dataclass(frozen=True, slots=True)
class Bisection:
    """The binding balanced cut of a fabric.

    Attributes
    ----------
    bandwidth : float
        Capacity of the minimum balanced cut, per direction. [B/s]
    side : tuple
        The GPUs of one half of a bipartition that attains it (the rest are the other half).
    edge_kinds : tuple of str
        The edge kinds whose capacity counted.
    cases : int
        Bipartitions evaluated after symmetry reduction.
    """

    bandwidth: float
    side: tuple
    edge_kinds: tuple
    cases: int


def _check_kinds(edge_kinds) -> tuple:
    edge_kinds = tuple(edge_kinds)
    unknown = [k for k in edge_kinds if k not in EDGE_KINDS]
    if unknown or not edge_kinds:
        raise DgxTopoError(f"edge_kinds must be a non-empty subset of {', '.join(EDGE_KINDS)}, "
                           f"received {edge_kinds!r}")
    return edge_kinds


def _free_split(H, gpu_nodes):
    """GPUs of whole connected components that add up to half the GPUs, if there are such.

    Clusters joined only by the network have a zero NVLink bisection: a host is a side.
    """
    chosen = set(gpu_nodes)
    sizes = []
    for component in nx.weakly_connected_components(H):
        members = tuple(g for g in gpu_nodes if g in component)
        if members:
            sizes.append(members)
    if len(sizes) < 2:
        return None
    half = len(chosen) // 2
    reachable = {0: ()}  # subset sum over components: GPU count -> components' GPUs
    for members in sizes:
        for total, side in list(reachable.items()):
            reachable.setdefault(total + len(members), side + members)
    return reachable.get(half)


def bisection(G: nx.DiGraph, *, edge_kinds: Iterable[str] = ("nvlink",), max_cases: int = 100_000) -> Bisection:
    """Minimum balanced-bipartition cut of the fabric's GPUs, per direction.

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric with at least two GPUs.
    edge_kinds : iterable of str
        Edge kinds whose capacity counts. The default, NVLink only, is the figure NVIDIA
        quotes (DGX-2: 2.4 TB/s both ways = 1.2 TB/s per direction); add ``"pcie"`` and
        ``"cpu-to-cpu"`` to count the host paths too.
    max_cases : int
        Refuse fabrics that would need more bipartitions than this after symmetry reduction.

    Returns
    -------
    Bisection

    Raises
    ------
    TopologyError
        For an invalid fabric or one with fewer than two GPUs.
    DgxTopoError
        For unknown edge kinds or more than ``max_cases`` bipartitions.
    """
    validate(G)
    edge_kinds = _check_kinds(edge_kinds)
    gpu_nodes = gpus(G)
    if len(gpu_nodes) < 2:
        raise TopologyError(f"a bisection needs at least 2 GPUs, received {len(gpu_nodes)}")
    H = nx.DiGraph()
    H.add_nodes_from(G)
    H.add_edges_from((u, v, {"bandwidth": d["bandwidth"]}) for u, v, d in G.edges(data=True)
                     if d["kind"] in edge_kinds)
    split = _free_split(H, gpu_nodes)
    if split is not None:  # whole components make up half the GPUs: nothing needs cutting
        return Bisection(0.0, split, edge_kinds, 0)
    classes = interchangeable_gpus(G, edge_kinds=edge_kinds)
    half = len(gpu_nodes) // 2
    # Cut capacities are the same both ways on a fabric whose links are symmetric, so a side
    # and its complement give the same value: of each such pair keep one (for even counts).
    even = len(gpu_nodes) % 2 == 0
    counts = [c for c in itertools.product(*(range(len(m) + 1) for m in classes))
              if sum(c) == half and not (even and c > tuple(len(m) - x for m, x in zip(classes, c)))]
    if len(counts) > max_cases:
        raise DgxTopoError(f"bisection of {len(gpu_nodes)} GPUs in {len(classes)} symmetry classes "
                           f"needs {len(counts)} max-flows, more than max_cases={max_cases}")
    best = (math.inf, ())
    for count in counts:
        side = tuple(g for members, c in zip(classes, count) for g in members[:c])
        chosen = set(side)
        # Edges without a capacity attribute are infinite for networkx's max-flow.
        H.add_edges_from((_SOURCE, g) for g in side)
        H.add_edges_from((g, _SINK) for g in gpu_nodes if g not in chosen)
        value = nx.maximum_flow_value(H, _SOURCE, _SINK, capacity="bandwidth")
        H.remove_nodes_from((_SOURCE, _SINK))
        if value < best[0]:
            best = (value, side)
    return Bisection(float(best[0]), best[1], edge_kinds, len(counts))


def bisection_bandwidth(G: nx.DiGraph, *, edge_kinds: Iterable[str] = ("nvlink",)) -> float:
    """Bisection bandwidth per direction [B/s]; see :func:`bisection`."""
    return bisection(G, edge_kinds=edge_kinds).bandwidth


def injection_bandwidth(G: nx.DiGraph, *, edge_kinds: Iterable[str] = ("nvlink",)) -> dict:
    """Line rate each GPU can send into the fabric at once, per direction.

    Parameters
    ----------
    G : networkx.DiGraph
    edge_kinds : iterable of str
        Edge kinds that count (default NVLink only).

    Returns
    -------
    dict
        GPU node -> sum of the bandwidth of its outgoing edges of those kinds. [B/s]

    Examples
    --------
    >>> from topo import dgx1
    >>> injection_bandwidth(dgx1())["gpu0"] / 1e9
    80.0
    """
    validate(G)
    edge_kinds = _check_kinds(edge_kinds)
    return {g: float(sum(d["bandwidth"] for _, _, d in G.out_edges(g, data=True)
                         if d["kind"] in edge_kinds))
            for g in gpus(G)}
