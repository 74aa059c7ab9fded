"""NCCL's own graphs (its ``NCCL_GRAPH_DUMP_FILE``) beside the model's channel search, channel by channel.

:func:`compare_graph_dump` maps every GPU of a dump (:mod:`models.engine.nccl.graph_dump`) onto
the fabric, runs the model's searches for the same communicator
(:func:`models.engine.nccl.channels.channel_graphs`: the ring, the tree and the NVLS graph of the
release) and pairs them graph by graph: what each graph shares (channels, ``bwIntra`` and
``bwInter``, path types, same channels) and each channel's GPU order, every difference marked.

- **GPUs**: a dump's ``<gpu dev>`` is the CUDA device index on its host (the system id selects
  the host of a multi-node NVLink domain); it is the GPU of that index on the communicator's
  first host (the host of that system id), its GPU id as the fabric numbers it. The
  communicator is ``gpus`` (default: the GPUs the dump names).
- **Ring and tree** channels compare as GPU orders (a ring from its first GPU, as both write it).
- **NVLS**: the model keeps each channel's head GPU; NCCL's search writes the head first in a
  channel's ``intra`` (src/graph/search.cc, ``ncclTopoSearchRecGpu`` at step 0 before
  ``ncclTopoSearchTryNvls``) and the entries after it are not set by the NVLS search [U], so an
  NVLS channel compares by its first GPU only.
- **NICs** (``<net dev>``) are shown, not compared: the dump numbers them as NCCL does, the
  fabric by name.
- Graphs the model does not search (collnet chain and direct) are shown as NCCL's only.

Examples
--------
>>> import topo
>>> from models.engine.nccl.graph_dump import parse_graph_dump
>>> dump = parse_graph_dump('<graphs version="1"><graph id="0" pattern="4" crossnic="0" nchannels="1" '
...     'speedintra="40" speedinter="40" latencyinter="0" typeintra="NVL" typeinter="PIX" '
...     'samechannels="1"><channel><gpu dev="0"/><gpu dev="1"/><gpu dev="2"/><gpu dev="3"/>'
...     '</channel></graph></graphs>')
>>> c = compare_graph_dump(topo.build("dgxh100"), dump)
>>> c.gpus, [(g.name, g.differs) for g in c.graphs][:1]
((0, 1, 2, 3), [('ring', ('nchannels', 'bw_intra', 'bw_inter'))])
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

import topo
from topo.errors import DgxTopoError
from topo.select import GpuIds, format_gpu_ids

from ..engine.fabric import PreparedFabric, prepare
from ..engine.nccl.channels import channel_graphs
from ..engine.nccl.graph_dump import GraphDump
from ..engine.nccl.profiles import NcclProfile
from ..engine.results import gpu_set, tidy_records

__all__ = ["GraphCompareError", "ChannelPair", "GraphPair", "GraphComparison", "compare_graph_dump",
           "COMPARED_FIELDS"]

#: What a graph's two sides are compared on, in order (NCCL's ``ncclTopoGraph`` fields).
COMPARED_FIELDS = ("pattern", "nchannels", "bw_intra", "bw_inter", "type_intra", "type_inter", "same_channels")

# Bandwidths are equal within this relative difference: NCCL writes speedintra with %g-like
# precision (a float such as 20.6), the model computes it in B/s.
_RELATIVE = 1e-6

# The model's names of NCCL's tree pattern (the dump's balanced_tree is the model's tree graph).
_MODELLED = ("ring", "tree", "nvls")


class GraphCompareError(DgxTopoError):
    """A graph dump that does not fit the fabric: a GPU it names that the host has not, or one
    outside the communicator asked for."""


@dataclass(frozen=True, slots=True)
class ChannelPair:
    """One channel of a graph on both sides.

    Attributes
    ----------
    graph : str
        ``ring``, ``tree``, ``nvls``, ...
    channel : int
    nccl, model : tuple of int or None
        The channel's GPU ids in order (NVLS: the head only); None where that side has no such
        channel.
    nccl_nets : tuple of int
        The dump's ``(net in, net out)`` devs, empty on one node.
    same : bool
        Both sides have the channel and it is the same.
    """

    graph: str
    channel: int
    nccl: tuple | None
    model: tuple | None
    nccl_nets: tuple
    same: bool


@dataclass(frozen=True, slots=True)
class GraphPair:
    """One graph on both sides: its shared fields (:data:`COMPARED_FIELDS`), NCCL's and the
    model's (None where that side has no such graph), and which fields differ."""

    name: str
    nccl: dict | None
    model: dict | None
    differs: tuple


@dataclass(frozen=True, slots=True)
class GraphComparison:
    """What :func:`compare_graph_dump` returns.

    Attributes
    ----------
    gpus : tuple of int
        The communicator.
    nccl : str
        The release the model searched as.
    graphs : tuple of GraphPair
    channels : tuple of ChannelPair
    """

    gpus: tuple
    nccl: str
    graphs: tuple
    channels: tuple

    @property
    def same(self) -> bool:
        """Every graph and channel the model searches agrees with NCCL's."""
        return not any(g.differs for g in self.graphs) and all(c.same for c in self.channels)

    def to_records(self) -> list:
        """One row per channel of either side: graph, channel, NCCL's and the model's GPU order
        (space-separated; ``""`` where that side has none), NCCL's NICs and ``same``."""
        rows = []
        for c in self.channels:
            rows += tidy_records({"graph": c.graph, "channel": c.channel,
                                  "nccl": "" if c.nccl is None else " ".join(map(str, c.nccl)),
                                  "model": "" if c.model is None else " ".join(map(str, c.model)),
                                  "nccl_nets": " ".join(map(str, c.nccl_nets)), "same": c.same,
                                  "gpus": gpu_set(self.gpus), "nccl_release": self.nccl})
        return rows


def _dump_ids(G, fabric, dump: GraphDump, first_host) -> dict:
    """``(system id, local id) -> GPU id`` for every GPU the dump names."""
    hosts = sorted({G.nodes[n]["host"] for n in topo.gpus(G)}, key=lambda h: (h != first_host, h))
    by_host: dict = {}
    for n in topo.gpus(G):
        by_host.setdefault(G.nodes[n]["host"], []).append(n)
    ids = {}
    for g in dump.graphs:
        for c, channel in enumerate(g.channels):
            for system, local in channel.gpus:
                if (system, local) in ids:
                    continue
                if system >= len(hosts) or local >= len(by_host[hosts[system]]):
                    where = f"system {system}'s " if system else ""
                    raise GraphCompareError(
                        f"the dump's {g.name} channel {c} names GPU dev {local} of {where}host, which the fabric "
                        f"has not: expected devs below {len(by_host[hosts[min(system, len(hosts) - 1)]])}"
                        + (f" on {len(hosts)} host(s)" if system else ""))
                ids[system, local] = fabric.ids[by_host[hosts[system]][local]]
    return ids


def _fields(graph) -> dict:
    return {"pattern": graph.pattern, "nchannels": graph.nchannels, "bw_intra": float(graph.bw_intra),
            "bw_inter": float(graph.bw_inter), "type_intra": str(graph.type_intra),
            "type_inter": str(graph.type_inter), "same_channels": bool(graph.same_channels)}


def _differs(nccl: dict, model: dict) -> tuple:
    out = []
    for name in COMPARED_FIELDS:
        a, b = nccl[name], model[name]
        if isinstance(a, float):
            if abs(a - b) > _RELATIVE * max(abs(a), abs(b)):
                out.append(name)
        elif a != b:
            out.append(name)
    return tuple(out)


def compare_graph_dump(G: nx.DiGraph | PreparedFabric, dump: GraphDump, gpus: GpuIds = None, *,
                       profile: str | NcclProfile | None = None) -> GraphComparison:
    """NCCL's graphs of ``dump`` beside the model's search on ``G``, graph by graph and channel by
    channel (module docstring).

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    dump : GraphDump
        :func:`models.engine.nccl.graph_dump.parse_graph_dump`'s result.
    gpus : GPU ids, optional
        The communicator (default: the GPUs the dump names).
    profile : str or NcclProfile, optional
        NCCL release the model searches as (default: the reference one).

    Raises
    ------
    GraphCompareError
        A GPU the fabric's host has not, one outside ``gpus``, or a communicator of one GPU.
    """
    fabric = prepare(G, nccl=profile)
    G = fabric.G
    by_id = {i: n for n, i in fabric.ids.items()}
    if gpus is not None:
        nodes = topo.select_gpus(G, gpus)
        first_host = G.nodes[nodes[0]]["host"]
    else:
        first_host = G.nodes[topo.gpus(G)[0]]["host"]
    ids = _dump_ids(G, fabric, dump, first_host)
    if gpus is None:
        nodes = [by_id[i] for i in sorted(set(ids.values()))]
    members = {fabric.ids[n] for n in nodes}
    outside = sorted(set(ids.values()) - members)
    if outside:
        raise GraphCompareError(f"the dump names GPU(s) {', '.join(map(str, outside))} outside the communicator "
                                f"{format_gpu_ids(sorted(members))}: expected --gpus to hold every GPU "
                                f"of the dump")
    if len(nodes) < 2:
        raise GraphCompareError(f"expected a communicator of at least 2 GPUs, received {len(nodes)}")
    graphs = channel_graphs(fabric.nccl, nodes)
    comm = graphs.communicator
    model_graphs = {"ring": comm.ring, "tree": comm.tree, "nvls": comm.nvls}

    def ordered(channel) -> tuple:
        return tuple(fabric.ids[n] for n in channel)

    model_channels = {"ring": [ordered(c) for c in graphs.ring.channels],
                      "tree": [ordered(c) for c in graphs.tree.channels] if graphs.tree is not None else None,
                      "nvls": [(fabric.ids[h],) for h in graphs.nvls.heads] if graphs.nvls is not None else None}
    pairs, channels = [], []
    names = [g.name for g in dump.graphs] + [n for n in _MODELLED if dump.graph(n) is None
                                             and model_graphs[n] is not None]
    for name in names:
        theirs = dump.graph(name)
        ours = model_graphs.get(name)
        nccl_fields = None if theirs is None else {
            "pattern": theirs.pattern, "nchannels": theirs.nchannels, "bw_intra": theirs.bw_intra,
            "bw_inter": theirs.bw_inter, "type_intra": theirs.type_intra, "type_inter": theirs.type_inter,
            "same_channels": theirs.same_channels}
        model_fields = None if ours is None else _fields(ours)
        differs = (_differs(nccl_fields, model_fields) if nccl_fields is not None and model_fields is not None
                   else ("missing",) if name in _MODELLED else ())
        pairs.append(GraphPair(name, nccl_fields, model_fields, differs))
        theirs_channels = [] if theirs is None else [
            (tuple(ids[gpu] for gpu in c.gpus[:1 if name == "nvls" else None]),
             () if c.net_in is None else (c.net_in, c.net_out)) for c in theirs.channels]
        ours_channels = model_channels.get(name) or []
        for k in range(max(len(theirs_channels), len(ours_channels))):
            a = theirs_channels[k][0] if k < len(theirs_channels) else None
            b = ours_channels[k] if k < len(ours_channels) else None
            nets = theirs_channels[k][1] if k < len(theirs_channels) else ()
            channels.append(ChannelPair(name, k, a, b, nets, a is not None and a == b))
    return GraphComparison(tuple(sorted(members)), fabric.profile.version, tuple(pairs), tuple(channels))
