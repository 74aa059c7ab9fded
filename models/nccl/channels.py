"""The channel graphs of a communicator for its NCCL release, and its tuning inputs.

One entry point, :func:`channel_graphs`, picks how the release builds channels
(:attr:`models.nccl.profiles.NcclProfile.ring_builder`): NCCL 2.0-2.4 build rings from NVLink
counts (:mod:`models.nccl.legacy_rings`, no tree graph), v2.5+ run the topology search
(:mod:`models.nccl.search`). It returns both graphs and the :class:`Communicator` bound to
the fabric's profile, so the tuning model cannot be run under another release.

Examples
--------
>>> import topo
>>> from models.nccl.system import NcclSystem
>>> g = channel_graphs(NcclSystem(topo.dgx1(), "2.3.7"), [f"gpu{i}" for i in range(5)])
>>> g.ring.nchannels, g.tree, g.communicator.profile.version
(1, None, '2.3.7')
"""

from __future__ import annotations

from dataclasses import dataclass

from .legacy_rings import legacy_rings
from .search import ChannelSearch, search_channels_in
from .system import NcclSystem
from .tuning import ChannelGraph, Communicator

__all__ = ["ChannelGraphs", "channel_graphs"]


@dataclass(frozen=True, slots=True)
class ChannelGraphs:
    """What a release builds for a communicator.

    Attributes
    ----------
    ring : ChannelSearch
        The ring channels (the search's result, or the pre-2.5 rings in its form).
    tree : ChannelSearch or None
        The single-node tree graph; None before v2.5 (no tree search) and across nodes (the
        tree is taken as the ring's channels, as :mod:`models.collectives` did).
    communicator : Communicator
        The tuning model's inputs, bound to the fabric's profile.
    """

    ring: ChannelSearch
    tree: ChannelSearch | None
    communicator: Communicator


def channel_graphs(fabric: NcclSystem, nodes) -> ChannelGraphs:
    """Channel graphs and communicator of GPUs ``nodes`` (index order) under ``fabric.profile``.

    Parameters
    ----------
    fabric : NcclSystem
        The fabric and the NCCL release (``fabric.profile``).
    nodes : sequence of node ids
        Two or more GPUs in rank order (index order, hosts first).

    Returns
    -------
    ChannelGraphs
    """
    G, profile = fabric.G, fabric.profile
    nodes = list(nodes)
    ccs = [G.nodes[n]["compute_capability"] for n in nodes]
    if profile.ring_builder == "p2p_rings":
        built = legacy_rings(fabric, nodes)
        ring, tree, ring_graph = built.search, None, built.graph()
    else:
        ring = search_channels_in(fabric, nodes, pattern="ring")
        tree = None if ring.nnodes > 1 else search_channels_in(
            fabric, nodes, pattern="balanced_tree", min_channels=ring.nchannels,
            max_channels=ring.nchannels)
        ring_graph = ring.graph()
    tree_graph = tree.graph() if tree is not None else ChannelGraph(
        ring_graph.nchannels, ring_graph.bw_intra, ring_graph.type_intra,
        type_inter=ring_graph.type_inter, pattern="balanced_tree",
        same_channels=ring_graph.same_channels, nthreads=ring_graph.nthreads)
    comm = Communicator(len(nodes), ring_graph, tree_graph, min(ccs), nnodes=ring.nnodes,
                        compute_capability_max=max(ccs), profile=profile)
    return ChannelGraphs(ring, tree, comm)
