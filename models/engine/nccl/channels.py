"""The channel graphs of a communicator for its NCCL release, and its tuning inputs.

One entry point, :func:`channel_graphs`, picks how the release builds channels
(:class:`models.engine.nccl.releases.RingBuilder`): NCCL 2.0-2.4 build rings from NVLink
counts (:mod:`models.engine.nccl.legacy_rings`, no tree graph), v2.5+ run the topology search
(:mod:`models.engine.nccl.search`) and, where NCCL enables NVLink SHARP, the NVLS search
(:mod:`models.engine.nccl.nvls`). It returns the graphs and the :class:`Communicator` bound to the
fabric's profile, so the tuning model cannot be run under another release.

Multi-node NVLink (MNNVL, NVIDIA/nccl v2.20.3+ src/init.cc, src/graph/topo.cc): GPUs of
different hosts joined by one NVSwitch domain (a GB200 NVL72's 18 trays) form a *clique*, and
NCCL fuses the topology of the clique into one system with one NVSwitch node: the clique is
one NCCL node. :func:`nccl_view` gives the search that view: a copy of the graph in which every
node of the clique's hosts carries the clique's first host, so the unchanged channel search sees
one node (with all the clique's NICs, as NCCL's fused XML has them). v2.21+ do this for every
clique of more than one host; v2.20 only when one clique holds every rank; earlier releases
have no MNNVL (each tray is a node and needs a network).

NCCL's fused system has a single NVS node: every NVLink of a GPU to any NVSwitch chip goes to
``nodes[NVS].nodes[0]`` (NVIDIA/nccl v2.27.7-1 src/graph/topo.cc ``ncclTopoConnectNodes``), so a
GPU has one link to it, the sum of its NVLinks (on an NVL72 18 x 40.1 = 721.8 GB/s). The view
does the same where it changes nothing but the cost: the chips a clique's GPUs reach become one
switch node when every GPU has the same links to every chip and the chips link only to those
GPUs (a single-level switch plane, as the rack's 18 chips are). A route over 18 parallel planes
then becomes one two-edge route, which is what makes the 72-GPU search cheap. The loads of the
channels are split back over the chips in proportion to their links, so results name the
fabric's own edges. A fabric that breaks the symmetry (a failed chip or link) keeps its chips.

Examples
--------
>>> import topo
>>> from models.engine.nccl.system import NcclSystem
>>> g = channel_graphs(NcclSystem(topo.dgx1(), "2.3.7"), [f"gpu{i}" for i in range(5)])
>>> g.ring.nchannels, g.tree, g.communicator.profile.version
(1, None, '2.3.7')
>>> h = channel_graphs(NcclSystem(topo.build("dgxh100")), [f"gpu{i}" for i in range(8)])
>>> h.nvls.nchannels, h.nvls.bw_intra / 1e9, h.nvls_why
(8, 40.0, None)
>>> channel_graphs(NcclSystem(topo.build("dgxh100"), "2.16"), [f"gpu{i}" for i in range(8)]).nvls_why
Why(NO_NVLS, release='2.16.5')
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


from ..results import tidy_records
from .nvls import NvlsGraph, nvlink_cliques, nvls_search, nvls_support
from .reasons import Cause, Why
from .releases import Mnnvl, NvlsAlgorithms, RingBuilder
from .search import ChannelSearch, LinkLoad, SearchStep, search_channels_in
from .system import NcclSystem, cpu_vendor
from .tuning import ChannelGraph, Communicator

__all__ = ["ChannelGraphs", "channel_graphs", "nccl_view"]

@dataclass(frozen=True, slots=True)
class ChannelGraphs:
    """What a release builds for a communicator.

    Attributes
    ----------
    ring : ChannelSearch
        The ring channels (the search's result, or the pre-2.5 rings in its form).
    tree : ChannelSearch or None
        The single-node tree graph; None before v2.5 (no tree search) and across nodes (the
        tree is taken as the ring's channels, as :mod:`models.predict.collectives` did).
    communicator : Communicator
        The tuning model's inputs, bound to the fabric's profile (with the NVLS graph).
    nvls : NvlsGraph or None
        The NVLS graph when NCCL sets ``nvlsSupport``.
    nvls_why : Why or None
        Why there is no NVLS graph (None when there is one); its words:
        :func:`models.present.reasons_text.reason_text`.
    mnnvl : bool
        GPUs of several hosts were fused into one NCCL node (a multi-node NVLink clique).
    fabric : NcclSystem
        The view the searches ran on (the fused copy under MNNVL, else the given fabric).
    """

    ring: ChannelSearch
    tree: ChannelSearch | None
    communicator: Communicator
    nvls: NvlsGraph | None = None
    nvls_why: Why | None = None
    mnnvl: bool = False
    fabric: NcclSystem | None = None

    def to_records(self) -> list:
        """One row per graph the tuning model reads (``graph``: ring, tree, and nvls when there
        is one; the tree taken as the ring's channels where it was not searched, ``searched``
        False): its pattern, channels, bandwidths and path types, with the communicator's ranks,
        nodes, compute capability, release, MNNVL and why there is no NVLS graph (``nvls_cause``,
        the :class:`Cause`'s value; None when there is one). The channels themselves:
        :meth:`ChannelSearch.to_records`, :meth:`NvlsGraph.to_records`."""
        comm = self.communicator
        graphs = [("ring", comm.ring, True), ("tree", comm.tree, self.tree is not None)]
        if comm.nvls is not None:
            graphs.append(("nvls", comm.nvls, True))
        return tidy_records({
            "graph": [name for name, _, _ in graphs], "searched": [s for _, _, s in graphs],
            "pattern": [g.pattern for _, g, _ in graphs], "nchannels": [g.nchannels for _, g, _ in graphs],
            "bw_intra_Bps": [g.bw_intra for _, g, _ in graphs], "bw_inter_Bps": [g.bw_inter for _, g, _ in graphs],
            "type_intra": [g.type_intra for _, g, _ in graphs], "type_inter": [g.type_inter for _, g, _ in graphs],
            "nranks": comm.nranks, "nnodes": comm.nnodes, "compute_capability": comm.compute_capability,
            "release": comm.profile.version, "mnnvl": self.mnnvl,
            "nvls_cause": None if self.nvls_why is None else self.nvls_why.cause.value})


def nccl_view(fabric: NcclSystem, nodes) -> tuple:
    """NCCL's node partition of GPUs ``nodes``: the fabric the search runs on, and MNNVL.

    Returns
    -------
    (NcclSystem, bool)
        ``fabric`` itself when no multi-node NVLink clique applies; otherwise a view of a copy
        of its graph (the communicator's hosts and the nodes of no host) in which the hosts of
        each clique are one host, and True.
    """
    G, profile = fabric.G, fabric.profile
    nodes = list(nodes)
    if profile.behaviour.mnnvl is Mnnvl.NONE or not _nvlink_leaves_host(fabric, nodes):
        return fabric, False
    cliques = _cliques(fabric, nodes)
    hosts_of = [sorted({G.nodes[n]["host"] for n in clique}) for clique in cliques]
    fused = [hosts for hosts in hosts_of if len(hosts) > 1]
    if not fused:
        return fabric, False
    all_hosts = {G.nodes[n]["host"] for n in nodes}
    if profile.behaviour.mnnvl is Mnnvl.ALL_RANKS and not (len(hosts_of) == 1 and set(hosts_of[0]) == all_hosts):
        return fabric, False
    key = tuple(tuple(h) for h in fused), tuple(sorted(all_hosts))
    views = fabric.views  # one MNNVL view per communicator's hosts: each fused copy is built once per fabric
    if key not in views:
        host_map = {h: hosts[0] for hosts in fused for h in hosts}
        # The communicator's hosts and every node of no host (the racks' switch chips, the
        # network): NCCL's view of a communicator holds its ranks' nodes alone, and a copy of
        # the rest of a cluster of racks (40 ms for 4 racks) would be most of the cost.
        H = G.subgraph([n for n, h in G.nodes(data="host") if h in all_hosts or not isinstance(h, int) or h < 0]).copy()
        for _, data in H.nodes(data=True):
            if data.get("host") in host_map:
                data["host"] = host_map[data["host"]]
        split = {}
        for clique in cliques:
            if any(G.nodes[n]["host"] in host_map for n in clique):
                split.update(_merge_switches(H, clique))
        views[key] = NcclSystem(H, profile, validate=False, searches=fabric.searches,
                                hosts_alike=fabric.hosts_alike)
        views[key].split.update(split)
    return views[key], True


def _cliques(fabric: NcclSystem, nodes) -> list:
    """:func:`models.engine.nccl.nvls.nvlink_cliques` of ``nodes``, from every GPU's NVLink domain
    found once per fabric (:attr:`NcclSystem.clique_of`): a rack's domain is walked once, not
    once per communicator."""
    clique_of = fabric.clique_of
    if not clique_of:
        G = fabric.G
        gpus = [n for n, kind in G.nodes(data="kind") if kind == "gpu"]
        clique_of.update((g, i) for i, clique in enumerate(nvlink_cliques(G, gpus)) for g in clique)
    groups: dict = {}
    for n in nodes:
        groups.setdefault(clique_of[n], []).append(n)
    return list(groups.values())


def _merge_switches(H, clique) -> dict:
    """Merge the NVSwitch chips that ``clique``'s GPUs reach into one node of ``H``, in place,
    where that is exact (module docstring); return {merged node: ((chip, share), ...)}.

    Exact when every chip links only to GPUs, both ways, all chips to the same GPUs (the
    domain, which may hold GPUs outside the communicator: routes never cross them), every
    GPU of the domain with the same links to each chip, and the chips of one model.
    """
    chips = sorted({v for g in clique for v, d in H.adj[g].items()
                    if d["kind"] == "nvlink" and H.nodes[v]["kind"] == "nvswitch"},
                   key=lambda c: (H.nodes[c].get("index", 0), str(c)))
    if len(chips) < 2:
        return {}
    first = chips[0]
    domain = list(H.adj[first])
    members = set(domain)
    model = H.nodes[first].get("model")
    for c in chips:
        if set(H.adj[c]) != members or set(H.pred[c]) != members or H.nodes[c].get("model") != model:
            return {}
    if any(H.nodes[g]["kind"] != "gpu" for g in domain):
        return {}
    row = [H.adj[domain[0]][c] for c in chips]
    want = [(d["kind"], d["link"], d["links"], d["bandwidth"], d["latency"]) for d in row]
    if len({(w[0], w[1], w[4]) for w in want}) != 1 or want[0][0] != "nvlink":
        return {}
    for g in domain:
        for c, w in zip(chips, want):
            for d in (H.adj[g][c], H.adj[c][g]):
                if (d["kind"], d["link"], d["links"], d["bandwidth"], d["latency"]) != w:
                    return {}
    total = sum(w[3] for w in want)
    shares = tuple((c, w[3] / total) for c, w in zip(chips, want))
    data = dict(H.nodes[first])
    data["ports"] = sum(H.nodes[c].get("ports", 0) for c in chips)
    edge = dict(row[0])
    edge["links"] = sum(w[2] for w in want)
    edge["bandwidth"] = total
    merged = f"nccl.nvs.{first}"
    H.remove_nodes_from(chips)
    H.add_node(merged, **data)
    for g in domain:
        H.add_edge(g, merged, **edge)
        H.add_edge(merged, g, **edge)
    return {merged: shares}


def _split_loads(search, split):
    """``search`` with the loads on merged switch nodes spread back over the chips."""
    if search is None or not split:
        return search
    loads = []
    for load in search.loads:
        u, v = load.edge
        shares = split.get(v) or split.get(u)
        if shares is None:
            loads.append(load)
            continue
        for chip, share in shares:
            edge = (u, chip) if v in split else (chip, v)
            loads.append(LinkLoad(edge, load.reserved * share, load.capacity * share))
    return dataclasses.replace(search, loads=tuple(loads))


def _nvlink_leaves_host(fabric, nodes) -> bool:
    """Whether an NVLink leaves a GPU or NVSwitch of the hosts of ``nodes`` for a GPU or NVSwitch of
    another host: without one, no NVLink clique of ``nodes`` spans hosts (a path from one host to
    another crosses such a link), which spares the clique search over a large cluster
    (:meth:`NcclSystem.nvlink_leaves`: the fabric scans its edges once)."""
    G = fabric.G
    return fabric.nvlink_leaves({G.nodes[n]["host"] for n in nodes})


def _network_nics(fabric, host) -> tuple:
    """NCCL's NET nodes of ``host`` (:meth:`NcclSystem.network_nics`: listed once per fabric)."""
    return fabric.network_nics(host)


def _nvls(fabric, nodes, nnodes, mnnvl) -> tuple:
    """The NVLS graph of the communicator (the worst NCCL node) and None, or None and why not."""
    G = fabric.G
    hosts: dict = {}
    for n in nodes:
        hosts.setdefault(G.nodes[n]["host"], []).append(n)
    graphs = []
    for host, members in hosts.items():
        supported, why = nvls_support(fabric, members, nnodes=nnodes,
                                      clique=len(members) if mnnvl else None)
        if not supported:
            return None, why
        nets = _network_nics(fabric, host) if nnodes > 1 else ()
        if nnodes > 1 and not nets:
            return None, Why(Cause.NVLS_NO_NIC, names=(str(host),))
        graph = nvls_search(fabric, members, nets)
        if graph.nchannels == 0:
            return None, Why(Cause.NVLS_NO_CHANNEL)
        graphs.append(graph)
    # NCCL reduces nChannels and the bandwidths to the minimum over the ranks (src/init.cc).
    return min(graphs, key=lambda g: (g.nchannels, g.bw_intra, g.bw_inter)), None


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
    profile = fabric.profile
    nodes = list(nodes)
    view, mnnvl = nccl_view(fabric, nodes)
    G = view.G
    ccs = [G.nodes[n]["compute_capability"] for n in nodes]
    legacy = profile.behaviour.ring_builder is RingBuilder.NVLINK_COUNTS
    if legacy:
        from .legacy_rings import legacy_rings  # releases before v2.5 only: imported for them

        built = legacy_rings(view, nodes)
        ring, tree, ring_graph = built.search, None, built.graph()
    else:
        ring = search_channels_in(view, nodes, pattern="ring")
        tree = None if ring.nnodes > 1 else search_channels_in(
            view, nodes, pattern="balanced_tree", min_channels=ring.nchannels,
            max_channels=ring.nchannels)
        ring_graph = ring.graph()
    tree_graph = tree.graph() if tree is not None else ChannelGraph(
        ring_graph.nchannels, ring_graph.bw_intra, ring_graph.type_intra,
        type_inter=ring_graph.type_inter, pattern="balanced_tree",
        same_channels=ring_graph.same_channels, nthreads=ring_graph.nthreads)
    if legacy or profile.behaviour.nvls is NvlsAlgorithms.NONE:
        nvls, why = None, Why(Cause.NO_NVLS, release=profile.version)
    else:
        nvls, why = _nvls(view, nodes, ring.nnodes, mnnvl)
    split = view.split
    ring, tree = _split_loads(ring, split), _split_loads(tree, split)
    if mnnvl:
        hosts = tuple(sorted({fabric.G.nodes[n]["host"] for n in nodes}))
        # NCCL fuses a clique's hosts into one node (src/graph/topo.cc); tuning counts it as one.
        note = SearchStep("mnnvl", count=ring.nnodes, names=hosts, release=profile.version)
        ring = dataclasses.replace(ring, trace=(note, *ring.trace))
    comm = Communicator(len(nodes), ring_graph, tree_graph, min(ccs), nnodes=ring.nnodes,
                        compute_capability_max=max(ccs), profile=profile, cpu_vendor=cpu_vendor(fabric.G, nodes[0]),
                        nvls=None if nvls is None else nvls.graph(),
                        nvls_why=Why(Cause.NVLS_SUPPORTED) if why is None else why)
    return ChannelGraphs(ring, tree, comm, nvls, why, mnnvl, view)
