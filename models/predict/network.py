"""What the network between hosts gives NCCL's channels: the load of their connections on it.

NCCL's channel search and tuning model stop at the NIC. A channel that leaves a node is
charged its NIC port's figure (``speed / 8000``, NVIDIA/nccl v2.27.7-1 src/graph/topo.cc
``ncclTopoAddNet``) and the network beyond the port is taken as non-blocking, so NCCL's own
estimate is the same on a rail-optimised, a fat-tree or an oversubscribed network. A real
network is not always non-blocking: the leaves of an oversubscribed fat tree have fewer
up-links than NICs, and every connection that crosses a leaf boundary shares them.

This module routes the connections of NCCL's inter-node channels over the fabric's network
edges, as :meth:`models.engine.routes.Router.network_flow` spreads traffic (ECMP over the spines),
and charges each edge:

``ring``
    Ranks are in node order and every node holds the same channels (NVIDIA/nccl v2.27.7-1
    src/graph/connect.cc, ``ncclTopoPostset``): channel ``c`` leaves node ``i`` by its exit
    NIC and enters node ``i + 1`` (node 0 after the last) by its entry NIC, one connection per
    channel and pair of neighbouring nodes.
``tree`` (also the inter-node part of ``nvls_tree``)
    NCCL's double binary tree over the nodes (:func:`models.engine.nccl.trees.double_binary_tree`):
    the first half of the channels run tree 0, the second half tree 1, and every tree edge is
    a connection each way (reduce up, broadcast down), by the channel's NIC at both ends (a
    tree channel returns to the NIC it entered by, src/graph/search.cc).

Every connection of a pattern moves data at the same rate, so an edge that carries ``k``
connections gives each ``capacity / k``, with NCCL's capacity of the edge
(:class:`models.engine.nccl.system.NcclSystem`: the NIC figure per link, scaled by the edge's own
``bandwidth``). NCCL assumed the NIC ports' rate, at most the channel's ``bwIntra``; the
network's rate is the smallest ``capacity / k`` over every network edge, ports included. The
factor ``min(1, network rate / NCCL's rate)`` scales the bandwidth the measurement model
predicts (:func:`models.predict.measure.measured`), and the edge that sets it is the bottleneck
``--explain`` names. A non-blocking network gives exactly 1.

When two NICs have no network path (different rails of a rail-only fabric), NCCL's PXN
sends from the NIC of the sending host that is on the receiver's network, reached over
NVLink (:meth:`models.engine.routes.Router.pxn_proxy`); the connection is charged from that NIC.

Not charged: ``nvls`` (inside one NVLink domain), ``pat`` (one GPU per node; its pairwise
steps are left to the NIC figure) and the point-to-point collectives, whose flows
:mod:`models.predict.collectives` already routes over every network edge.

Examples
--------
>>> import topo
>>> from models.engine.nccl.system import NcclSystem
>>> from models.engine.nccl.channels import channel_graphs
>>> G = topo.build("16xdgx2:fat_tree:oversub=4")
>>> system = NcclSystem(G)
>>> graphs = channel_graphs(system, topo.gpus(G))
>>> load = network_load(graphs.fabric, graphs.ring, "ring")
>>> round(load.factor, 3), load.group, load.nodes, load.load     # 8 channels close the ring over 4 links
(0.521, 'down', ('net.leaf4',), 8.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
from networkx.utils import UnionFind

from topo.errors import DgxTopoError

from ..engine.nccl.nvls import NvlsGraph
from ..engine.nccl.releases import Pxn
from ..engine.nccl.search import ChannelSearch
from ..engine.nccl.system import NcclSystem
from ..engine.nccl.trees import double_binary_tree
from ..engine.results import tidy_records
from ..engine.routes import PathType, RouteError, Router

__all__ = ["NetworkLoad", "network_load", "tree_links", "PATTERNS", "GROUPS"]

#: The patterns whose connections are charged (an algorithm's
#: :meth:`~models.engine.nccl.algorithms.base.Algorithm.network` names the one it runs).
PATTERNS = ("ring", "tree")
#: The kinds of link group :attr:`NetworkLoad.group` names: one link (a NIC's port, or a link
#: between switches of one tier), a switch's links to the tier above, its links from the tier above.
GROUPS = ("link", "up", "down")

@dataclass(frozen=True, slots=True)
class NetworkLoad:
    """The network's share of NCCL's inter-node channels for one pattern.

    Attributes
    ----------
    pattern : str
        ``"ring"`` or ``"tree"``.
    connections : int
        Node-to-node connections of the channels (each one way).
    factor : float
        ``min(1, network_rate / nccl_rate)``: what the network gives of the bandwidth NCCL
        assumed.
    nccl_rate : float
        The per-connection rate NCCL assumed: its NIC ports' share, at most ``bwIntra``. [B/s]
    network_rate : float
        The per-connection rate the most loaded network edge gives. [B/s]
    edges : tuple
        The busiest link group's edges: a NIC port, a switch's links to the tier above, or a
        switch's links from the tier above.
    load : float
        Connections on the group (fractions where the traffic is spread over several spines).
    capacity : float
        NCCL's capacity of the group. [B/s]
    pxn : int
        Connections sent through another NIC of the host over NVLink (PXN), because the
        receiving NIC is on another network (rail-only fabrics).
    group : str
        The busiest group's kind, one of :data:`GROUPS` (``""`` when unset).
    nodes : tuple
        The node(s) that name it: ``(u, v)`` for a ``"link"``, ``(switch,)`` for ``"up"`` and
        ``"down"``. :func:`models.present.explain.network_load_where` words the group.
    algorithm : str
        The NCCL algorithm these connections run (set by :func:`models.estimate`; ``""``
        otherwise).
    aligned : int
        Ring channels that return through the NIC they entered by over PXN (NCCL's crossNic=0
        rings), where the search reported another exit NIC.
    """

    pattern: str
    connections: int
    factor: float
    nccl_rate: float
    network_rate: float
    edges: tuple
    load: float
    capacity: float
    pxn: int = 0
    aligned: int = 0
    group: str = ""
    nodes: tuple = ()
    algorithm: str = ""

    def to_records(self) -> list:
        """One row: the pattern and algorithm, the connections, NCCL's and the network's
        per-connection rates and their ratio, the busiest group's kind and nodes (space-separated: the
        link's two ends, or the switch of an up or down group), load, capacity and first edge."""
        u, v = self.bottleneck if self.edges else ("", "")
        return tidy_records({
            "pattern": self.pattern, "algorithm": self.algorithm, "connections": self.connections,
            "factor": self.factor, "nccl_rate_Bps": self.nccl_rate, "network_rate_Bps": self.network_rate,
            "load": self.load, "capacity_Bps": self.capacity, "pxn": self.pxn, "aligned": self.aligned,
            "group": self.group, "group_nodes": " ".join(map(str, self.nodes)), "bottleneck_u": str(u),
            "bottleneck_v": str(v)})

    @property
    def bottleneck(self) -> tuple:
        """The first edge of the busiest group ``(u, v)``."""
        return self.edges[0]


class _Nics:
    """A host's NIC for each NIC position of the searched host's list (the host whose channels
    the search ran on, :func:`_charge`): the one at the same position when the host has as many
    (hosts are copies), else the one with the same index, else the host's NIC at that position
    modulo its count (a host whose NIC a what-if removed)."""

    def __init__(self, G, nics, first):
        if not nics:
            raise DgxTopoError("a host of the communicator has no NIC on a network: expected a "
                               "cluster fabric (topo.cluster) for GPUs of several hosts")
        if len(nics) == len(first):  # a copy of the first host (or a fused NVLink domain)
            self.nics = list(nics)
            return
        by_index = {G.nodes[n].get("index"): n for n in nics}
        self.nics = [by_index.get(G.nodes[n].get("index"), nics[k % len(nics)])
                     for k, n in enumerate(first)]

    def __getitem__(self, position):
        return self.nics[position]


def _nics_by_host(fabric: NcclSystem) -> dict:
    """Per host, its NICs on a network in index order (the same order on every copy:
    :func:`topo.cluster.network_nics` lists them in (host, index) order)."""
    found: dict = {}
    for n in fabric.network_nics():
        found.setdefault(fabric.G.nodes[n]["host"], []).append(n)
    return found


def network_load(fabric: NcclSystem, search: ChannelSearch | NvlsGraph, pattern: str,
                 gpus: Sequence[str] | None = None) -> NetworkLoad | None:
    """Charge the network edges with the connections of a multi-node channel search.

    Parameters
    ----------
    fabric : models.engine.nccl.system.NcclSystem
        The view the search ran on (``ChannelGraphs.fabric``).
    search : models.engine.nccl.search.ChannelSearch or models.engine.nccl.nvls.NvlsGraph
        NCCL's ring search of a communicator over several nodes (its channels' ``nets``), or
        the NVLS graph across nodes (NVLSTree: one NIC per head, entered and left by it).
    pattern : str
        ``"ring"`` or ``"tree"``.
    gpus : sequence of node ids, optional
        The communicator's GPUs (default: the search's; required for an NVLS graph, whose
        heads are one node's).

    Returns
    -------
    NetworkLoad or None
        None on one node or without NICs in the search.

    Raises
    ------
    DgxTopoError
        For an unknown pattern.
    models.engine.routes.RouteError
        When a connection has no network path, even through PXN.
    """
    if pattern not in PATTERNS:
        raise DgxTopoError(f"network load of pattern {pattern!r}: expected 'ring' or 'tree'")
    if search is None or not search.nets:
        return None
    G = fabric.G
    if hasattr(search, "heads"):  # NVLS graph: NVLSTree's tree runs through each head's NIC
        if gpus is None:
            raise DgxTopoError("network load of an NVLS graph: expected the communicator's gpus")
        nets, rate, exits = tuple((n, n) for n in search.nets), search.bw_inter, ()
        pattern = "tree"
    else:
        nets, rate = search.nets, search.bw_intra
        exits = tuple(c[-1] for c in search.channels)
        gpus = search.gpus if gpus is None else gpus
    gpus = tuple(gpus)
    if len({G.nodes[n]["host"] for pair in nets for n in pair}) != 1:
        raise DgxTopoError("network load: expected the channels' NICs of one node (the first)")
    hosts_of_gpus = sorted({G.nodes[n]["host"] for n in gpus})
    if len(hosts_of_gpus) < 2:
        return None
    key = (pattern, gpus, nets, rate)
    cache = fabric.network_loads  # the view's, by (pattern, GPUs, NICs of the channels); and _TIERS
    if key not in cache:
        cache[key] = _charge(fabric, pattern, nets, rate, exits, hosts_of_gpus)
    return cache[key]


def _charge(fabric, pattern, channel_nets, channel_rate, exits, hosts) -> NetworkLoad:
    G, router = fabric.G, fabric.router
    host_nics = _nics_by_host(fabric)
    # The channels' NICs are those of the host the search ran on: not always the first one (a
    # what-if on a later host makes that host the one searched), so positions are its own.
    first = host_nics[G.nodes[channel_nets[0][0]]["host"]]
    position = {nic: k for k, nic in enumerate(first)}
    nets = [(position[a], position[b]) for a, b in channel_nets]
    nics = {h: _Nics(G, host_nics.get(h, []), first) for h in hosts}
    connections = []  # (sending NIC, receiving NIC)
    aligned = 0
    if pattern == "ring":
        for c, (entry, out) in enumerate(nets):
            if out != entry and _returns_by_pxn(fabric, exits[c], first[entry]):
                out = entry
                aligned += 1
            for i, host in enumerate(hosts):
                following = hosts[(i + 1) % len(hosts)]
                connections.append((nics[host][out], nics[following][nets[c][0]]))
    else:
        for c, rank, parent in tree_links(len(hosts), len(nets)):
            entry = nets[c][0]
            a, b = nics[hosts[rank]][entry], nics[hosts[parent]][entry]
            connections += [(a, b), (b, a)]
    component: dict = {}
    leaf_of: dict = {}

    def attach(nic):
        if nic not in leaf_of:
            leaf_of[nic] = router.edge_switch(nic)
            component[nic] = router.network_component(nic)
        return leaf_of[nic]

    ports: dict = {}  # NIC port edge -> connections
    between: dict = {}  # (leaf, leaf) -> connections
    direct: dict = {}  # network edge -> connections, for NICs not on one leaf each
    pxn = 0
    for a, b in connections:
        attach(a), attach(b)
        if component[a] != component[b]:
            a = _pxn_nic(G, router, host_nics[G.nodes[a]["host"]], b)
            attach(a)
            pxn += 1
        leaf_a, leaf_b = leaf_of[a], leaf_of[b]
        if leaf_a is None or leaf_b is None:
            for edge, share in router.network_flow(a, b).items():
                direct[edge] = direct.get(edge, 0.0) + share
            continue
        ports[a, leaf_a] = ports.get((a, leaf_a), 0) + 1
        ports[leaf_b, b] = ports.get((leaf_b, b), 0) + 1
        if leaf_a != leaf_b:
            between[leaf_a, leaf_b] = between.get((leaf_a, leaf_b), 0) + 1
    # Switch-to-switch links are charged per group: a switch's links to the tier above, and a
    # switch's links from the tier above. The subnet manager spreads destinations over a
    # group's links (fat-tree routing) where the even split of every connection over every
    # shortest path would pile fractions of many connections onto one link of a partly filled
    # leaf; what a group carries is the same either way.
    cache = fabric.network_loads
    if _TIERS not in cache:
        cache[_TIERS] = TierView(G, router)
    view = cache[_TIERS]
    tiers = view.tier
    load: dict = {("edge", e): float(k) for e, k in ports.items()}
    for edge, k in direct.items():
        key = _group(tiers, *edge)
        load[key] = load.get(key, 0.0) + k
    group_of: dict = {}  # switch edge -> its group (the leaf pairs' paths share their edges)
    for (leaf_a, leaf_b), count in view.charge(between, load).items():
        for edge, share in router.switch_flow(leaf_a, leaf_b).items():
            key = group_of.get(edge)
            if key is None:
                key = group_of[edge] = _group(tiers, *edge)
            load[key] = load.get(key, 0.0) + count * share
    rate = {}
    for key, k in load.items():
        if k > 0:
            if key[0] == "edge":  # one edge (a NIC's port): its capacity, as the sum of one gives
                rate[key] = fabric.capacity(*key[1]) / k
            else:
                rate[key] = sum(fabric.capacity(*e) for e in _group_edges(G, tiers, key)) / k
    nic_rate = min((rate[("edge", e)] for e in ports), default=math.inf)
    worst = min(rate, key=lambda key: (rate[key], str(key)))
    edges = _group_edges(G, tiers, worst)
    capacity = sum(fabric.capacity(*e) for e in edges)
    nccl_rate = min(nic_rate, channel_rate)
    factor = min(1.0, rate[worst] / nccl_rate)
    return NetworkLoad(pattern, len(connections), factor, nccl_rate, rate[worst], edges,
                       load[worst], capacity, pxn, aligned, *_group_of(worst))


# The key of the tier structure in the view's network cache (beside the charges).
_TIERS = "tiers"


class TierView:
    """The switch network as tiers, to charge the link groups of many leaf pairs at once.

    ECMP from leaf ``a`` to leaf ``b`` (:meth:`models.engine.routes.Router.switch_flow`) splits
    the traffic at each switch over its next hops on shortest paths, by bandwidth. Where every
    switch-to-switch edge joins adjacent tiers, a path that climbs to tier ``m`` is at least
    ``(m - tier a) + (m - tier b)`` hops long, so when ``a`` and ``b`` are not joined below
    ``h``, the lowest tier where they have a common ancestor, the shortest paths are exactly the
    paths that climb to ``h`` and descend. If moreover every ancestor of ``a`` at tier ``h`` is
    an ancestor of ``b`` and no switch on the way up is a dead end, every up-link on the way is
    on a shortest path: the climb is the same for every such ``b`` (``a``'s *up-cone*: at each
    switch, all its up-links by bandwidth), and the descent is linear in what arrives at tier
    ``h``. The link groups' loads (a switch's up-links carry what passes it going up, its
    down-links from the tier above what arrives at it going down) then add per source leaf and
    tier, and per destination leaf, instead of per leaf pair. Each condition is read from the
    edges for each pair; a pair that misses one is routed as before. The sums are the same
    up to the order of floating-point additions.

    Parameters
    ----------
    G : networkx.DiGraph
        A cluster fabric.
    router : models.engine.routes.Router
        Its router (the node kinds and adjacency it holds).

    Attributes
    ----------
    tier : dict
        Network switch -> its tier (leaf 1, spine 2, core 3, ``tierN`` N; 0 for a name not
        known).
    uniform : bool
        Every switch-to-switch link joins adjacent tiers (and every tier is known): the
        condition for any pair to be charged by the class.

    Examples
    --------
    >>> import topo
    >>> from models.engine.routes import Router
    >>> G = topo.build("16xdgx2:fat_tree:oversub=4")   # five leaves under one spine
    >>> load = {}
    >>> TierView(G, Router(G)).charge({("net.leaf0", "net.leaf1"): 2}, load)
    {}
    >>> load
    {('up', 'net.leaf0'): 2.0, ('down', 'net.leaf1'): 2.0}
    """

    def __init__(self, G: nx.DiGraph, router: Router):
        kind = router.kind
        adj = router.adj  # plain dicts per node
        self.tier = tiers = {n: _tier(G, n) for n, k in kind.items() if k == "network_switch"}
        self.up: dict = {}
        self.uniform = bool(tiers) and all(t > 0 for t in tiers.values())
        for x in tiers:
            ups = []
            for y, d in adj[x].items():
                if d["kind"] != "network" or kind[y] != "network_switch":
                    continue
                step = tiers[y] - tiers[x]
                if step == 1:
                    ups.append((y, d["bandwidth"]))
                elif step != -1:
                    self.uniform = False  # a link within a tier or across two: route per pair
            self.up[x] = ups
        # Per switch, its up-neighbours with the bandwidth of the link down from each.
        self.from_above = {x: [(y, adj[y][x]["bandwidth"]) for y, _ in ups] for x, ups in self.up.items()}
        self._joined: dict = {}  # tier -> switch -> its component within tiers <= that tier
        # What the switches of one tier carry, by token (an index of _held): a layer of a leaf's
        # up-cone, or what arrives one tier below what a token holds on the way down. Equal
        # layers get one token, so leaves whose cones meet the same switches alike (a pod's
        # leaves, every pod at the top) climb and descend once.
        self._held: list = []
        self._tokens: dict = {}  # a layer as its items -> token
        self._ascents: dict = {}  # token -> token of the layer one tier up (None: no up-link)
        self._descents: dict = {}  # (token, switches below) -> token of what arrives there
        self._cones: dict = {}  # leaf -> tokens of its up-cone's layers, from the leaf's tier

    def _token(self, layer: dict) -> int:
        """The token of a layer (one per distinct layer, items in order)."""
        items = tuple(layer.items())
        token = self._tokens.get(items)
        if token is None:
            token = self._tokens[items] = len(self._held)
            self._held.append(layer)
        return token

    def cone(self, leaf) -> list:
        """Tokens of the layers of ``leaf``'s up-cone: at each switch, what passes it going up,
        split over all its up-links by bandwidth (from 1 at the leaf)."""
        found = self._cones.get(leaf)
        if found is None:
            found = [self._token({leaf: 1.0})]
            while True:
                token = self._ascents.get(found[-1], -1)
                if token == -1:
                    following: dict = {}
                    for x, amount in self._held[found[-1]].items():
                        ups = self.up[x]
                        total = sum(b for _, b in ups)
                        for y, b in ups:
                            following[y] = following.get(y, 0.0) + amount * b / total
                    token = self._ascents[found[-1]] = self._token(following) if following else None
                if token is None:
                    break
                found.append(token)
            self._cones[leaf] = found
        return found

    def joined(self, tier) -> dict:
        """Switch -> a representative of its component among the switches of tiers <= ``tier``."""
        found = self._joined.get(tier)
        if found is None:
            members = [x for x, t in self.tier.items() if t <= tier]
            inside = set(members)
            components = UnionFind(members)
            for x in members:
                for y, _ in self.up[x]:
                    if y in inside:
                        components.union(x, y)
            found = self._joined[tier] = {x: components[x] for x in members}
        return found

    def _peak(self, a, b) -> int | None:
        """The tier both paths climb to, or None when a condition of the class fails."""
        tier_a, tier_b = self.tier[a], self.tier[b]
        up_a, up_b = self.cone(a), self.cone(b)
        held = self._held
        for h in range(max(tier_a, tier_b), min(tier_a + len(up_a), tier_b + len(up_b))):
            top_a, top_b = held[up_a[h - tier_a]], held[up_b[h - tier_b]]
            if top_a.keys().isdisjoint(top_b):
                continue
            # Every switch a climbs through below h has an up-link (a cone's layer is a tier).
            if not top_a.keys() <= top_b.keys() or any(not self.up[x] for t in up_a[:h - tier_a]
                                                       for x in held[t]):
                return None
            joined = self.joined(h - 1)
            if a in joined and b in joined and joined[a] == joined[b]:
                return None
            return h
        return None

    def _descend(self, token, below) -> int:
        """The token of what arrives at the switches of the cone layer ``below`` (the
        destination's ancestors one tier down) from what ``token``'s switches hold, each
        switch's traffic split by bandwidth over its links down to them."""
        found = self._descents.get((token, below))
        if found is None:
            holding, targets = self._held[token], self._held[below]
            total: dict = {}
            for w in targets:
                for z, bandwidth in self.from_above[w]:
                    if z in holding:
                        total[z] = total.get(z, 0.0) + bandwidth
            arriving: dict = {}
            for w in targets:
                amount = 0.0
                for z, bandwidth in self.from_above[w]:
                    if z in holding:
                        amount += holding[z] * bandwidth / total[z]
                if amount:
                    arriving[w] = amount
            found = self._descents[token, below] = self._token(arriving)
        return found

    def charge(self, between: dict, load: dict) -> dict:
        """Add the link-group loads of leaf pairs to ``load`` (group -> connections, the keys
        :func:`network_load` charges: ``("up", switch)``, ``("down", switch)``).

        Parameters
        ----------
        between : dict
            ``(leaf a, leaf b)`` -> connections from ``a`` to ``b`` (``a != b``).
        load : dict
            Added to in place.

        Returns
        -------
        dict
            The pairs of ``between`` this class does not cover, to route one by one
            (:meth:`models.engine.routes.Router.switch_flow`).
        """
        if not self.uniform:
            return between
        left: dict = {}
        climbs: dict = {}  # (a, peak) -> connections
        descents: dict = {}  # (b, peak) -> {a: connections}
        for (a, b), count in between.items():
            h = self._peak(a, b)
            if h is None:
                left[a, b] = count
                continue
            climbs[a, h] = climbs.get((a, h), 0) + count
            sources = descents.setdefault((b, h), {})
            sources[a] = sources.get(a, 0) + count
        for (a, h), count in climbs.items():
            for token in self.cone(a)[:h - self.tier[a]]:
                for x, amount in self._held[token].items():
                    key = ("up", x)
                    load[key] = load.get(key, 0.0) + count * amount
        for (b, h), sources in descents.items():
            # Sources whose cones reach the peak alike (a fat tree's leaves) descend together.
            together: dict = {}
            for a, count in sources.items():
                token = self.cone(a)[h - self.tier[a]]
                together[token] = together.get(token, 0) + count
            up_b = self.cone(b)
            for token, count in together.items():
                for t in range(h - 1, self.tier[b] - 1, -1):
                    token = self._descend(token, up_b[t - self.tier[b]])
                    for w, amount in self._held[token].items():
                        key = ("down", w)
                        load[key] = load.get(key, 0.0) + count * amount
        return left


def tree_links(nnodes: int, nchannels: int) -> list:
    """The node-to-node links of NCCL's tree channels: ``(channel, node, parent)`` per tree edge.

    The first half of the channels run tree 0 of the double binary tree over the nodes
    (:func:`models.engine.nccl.trees.double_binary_tree`), the second half tree 1.

    Examples
    --------
    >>> tree_links(2, 2)
    [(0, 1, 0), (1, 0, 1)]
    """
    trees = double_binary_tree(nnodes).trees
    half = (nchannels + 1) // 2
    return [(c, rank, parent) for c in range(nchannels)
            for rank, parent in enumerate(trees[0 if c < half else 1].up) if parent is not None]


def _tier(G, node) -> int:
    """A network switch's level: leaf 1, spine 2, core 3, ``tierN`` N (topo.cluster)."""
    tier = str(G.nodes[node].get("tier", ""))
    return {"leaf": 1, "spine": 2, "core": 3}.get(tier, int(tier[4:]) if tier[4:].isdigit() else 0)


def _group(tiers, u, v) -> tuple:
    """The link group of the network edge ``(u, v)``: ``("up", u)`` for a switch's links to the
    tier above, ``("down", v)`` for a switch's links from the tier above; else the edge itself."""
    tu, tv = tiers.get(u, 0), tiers.get(v, 0)
    if tv > tu > 0:
        return ("up", u)
    if tu > tv > 0:
        return ("down", v)
    return ("edge", (u, v))


def _group_edges(G, tiers, key) -> tuple:
    """Every edge of a link group (all of a switch's up-links, not only the loaded ones)."""
    what, node = key
    # networkx's own adjacency dicts, read only: its views cost a call per item.
    if what == "up":
        return tuple((node, v) for v, d in G._adj[node].items()  # noqa: SLF001
                     if d["kind"] == "network" and tiers.get(v, 0) > tiers[node])
    if what == "down":
        return tuple((u, node) for u, d in G._pred[node].items()  # noqa: SLF001
                     if d["kind"] == "network" and tiers.get(u, 0) > tiers[node])
    return (node,)


def _group_of(key) -> tuple:
    """:attr:`NetworkLoad.group` and :attr:`NetworkLoad.nodes` of a link group's key."""
    what, node = key
    if what in ("up", "down"):
        return what, (node,)
    return "link", tuple(node)


def _returns_by_pxn(fabric, last_gpu, entry_nic) -> bool:
    """NCCL's crossNic=0 pass closes the ring through the NIC it entered by: with PXN (v2.12+)
    the last GPU reaches that NIC over NVLink to the GPU beside it, if that GPU's own path to the
    NIC is no worse than PXB (path type PXN, tried before
    crossNic, NVIDIA/nccl v2.27.7-1 src/graph/search.cc ``ncclTopoCompute`` and
    src/graph/paths.cc). This project's search does not model PXN paths to a NIC and may report
    another exit NIC for the same channels; the network charge follows NCCL."""
    if fabric.profile.behaviour.pxn is Pxn.NONE:
        return False
    router = fabric.router
    host = router.G.nodes[entry_nic]["host"]
    if router.G.nodes[last_gpu]["host"] != host:
        return False
    return any(router.nearest_nic(g) == entry_nic
               and router.pcie_type(router.pcie_path(g, entry_nic)) <= PathType.PXB
               and (g == last_gpu or router.nvlink_reaches(last_gpu, g))
               for g in router.host_gpus(host))


def _pxn_nic(G, router, host_nics, nic):
    """The NIC of a host on ``nic``'s network that PXN sends from: the same index (rail) when
    there is one (:meth:`models.engine.routes.Router.pxn_proxy` picks it the same way)."""
    target = router.network_component(nic)
    on = [n for n in host_nics if router.network_component(n) == target]
    if not on:
        raise RouteError(f"no NIC of host {G.nodes[host_nics[0]]['host']} is on the network of "
                         f"{nic!r}: expected every host on every rail")
    want = G.nodes[nic].get("index")
    return min(on, key=lambda n: G.nodes[n].get("index") != want)
