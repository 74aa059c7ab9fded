"""Clusters: n copies of a system joined through their NICs by an InfiniBand network.

:func:`join_hosts` copies a system's fabric ``n`` times and joins every compute NIC (a NIC
with a ``port_link``) to a network of real switches (port counts from
:data:`topo.specs.NETWORK_SWITCHES`, the generation the NICs' ports are):

``fat_tree`` (default)
    A folded-Clos fat tree. Leaf switches take the NICs in host order, ``down`` of them each,
    and give ``up`` ports to the tier above; with NICs for no more than one switch, that
    switch alone is the network.
``rail``
    Rail-optimised, as in the DGX SuperPOD reference architectures [S48] [S49]: the k-th
    compute NIC of every host is on rail k; a leaf holds rail k's NICs of ``down``
    consecutive hosts (a scalable unit, 32 hosts on 64-port NDR switches), so GPUs of the same
    local index on different hosts are one leaf apart; the leaves of all rails join through
    the spines. Cross-rail traffic crosses a spine (or NCCL moves it over NVLink first, PXN).
``rail_only``
    As ``rail`` with no spine between rails: rail k is a network of its own (one leaf, or a
    fat tree of rail k's NICs when they exceed one switch), so traffic between NICs of
    different rails has no network path and must cross NVLink inside a host first (NCCL's
    PXN).

``oversub=K`` makes every leaf's up-links K times thinner than its down-links: a leaf has
``up = ports // (K + 1)`` up-ports and ``down = K x up`` down-ports, and a leaf that holds
``m`` NICs has ``ceil(m / K)`` up-links (K = 1, the default: non-blocking, as many up-links
as NICs). Above the leaves the tree is non-blocking.

The tiers above the leaves are real switches of the same radix ``P``: with at most ``P``
leaves, one tier of spines (``tier`` ``"spine"``) joins them, as few as keep every spine
within its ports, each leaf's up-links spread evenly over them (32 NDR leaves of 32 up-links:
16 spines, 2 links per leaf and spine, the DGX H100 SuperPOD of 4 scalable units [S49]).
With more leaves, blocks of ``P/2`` leaves get ``up`` spines each (one link per leaf and
spine, ``P/2`` down and ``P/2`` up), and spine j of every block joins the core switches of
plane j (``tier`` ``"core"``), recursively (``tier4``, ...) while a plane has more than ``P``
members. 1,024 DGX-2 hosts (8,192 EDR NICs, 36-port switches): 456 leaves, 468 spines,
324 core switches. Every network edge carries its real bandwidth (``links`` x line rate),
so a thin up-link is visible to any model that charges network edges.

A template may hold several hosts (the 18 compute trays of a GB200 NVL72 rack, with the
rack's NVSwitch chips on host -1): copy ``r`` renumbers host ``t`` to ``r x H + t`` (H hosts
per copy) and prefixes node ids with ``r<r>.``; a one-host template's copies are prefixed
``h<h>.``. Every GPU and NVSwitch of copy ``r`` gets ``nvlink_domain`` = r: GPUs that share it
reach each other over NVLink (possibly across hosts), others only over the network.

GPU ids are global: ``host x GPUs per host + local index`` (the order of :func:`topo.gpus`).

:func:`topo.cluster` and :func:`topo.build` (in :mod:`topo.registry`) accept system names and
specs such as ``"2xdgx1v"``, ``"4xdgxh100:rail"`` or ``"16xdgx2:fat_tree:oversub=4"``.

Examples
--------
>>> from topo import dgx1v
>>> G = join_hosts(dgx1v(), 2)
>>> G.graph["name"], G.graph["hosts"], len([n for n, k in G.nodes(data="kind") if k == "gpu"])
('2xDGX-1V', 2, 16)
>>> sorted(G.successors("h1.mlx5_0"))
['h1.pcie0', 'net.leaf0']
"""

from __future__ import annotations

import operator

import networkx as nx

from .collector import collector_paused
from .unedited import seal, watched_graph
from .errors import DgxTopoError, SystemSpecError
from .schema import check_names, nodes_of_kind, validate
from .specs import LINKS, NETWORK_SWITCHES

__all__ = ["join_hosts", "NETWORKS", "TIERS", "MAX_HOSTS", "MAX_OVERSUB", "check_hosts",
           "check_oversub", "compute_nics", "network_nics", "network_switches", "network_cut", "network_bisection"]

#: Network shapes :func:`join_hosts` builds.
NETWORKS = ("fat_tree", "rail", "rail_only")

#: Names of the switch tiers from the NICs up (``tier`` of a ``network_switch``); a fourth
#: and higher tier is ``tier4``, ``tier5``, ...
TIERS = ("leaf", "spine", "core")

#: Default limit on the hosts of a cluster. A 1,024-host DGX-2 cluster is about 55,000 nodes
#: and 340,000 edges (seconds and about 1 GB to build); 4,096 hosts is four times that. Beyond
#: it the graph would not fit in memory of an ordinary machine, so a larger count is refused
#: before anything is built; ``max_hosts=`` (CLI ``--max-gpus``) raises the limit.
MAX_HOSTS = 4096

#: Largest oversubscription ratio accepted by the spec grammar; a switch's radix bounds it
#: further (a leaf needs one up-port: K <= ports - 1).
MAX_OVERSUB = 64


def compute_nics(G: nx.DiGraph, host: int | None = None) -> list:
    """The NICs of ``host`` (all hosts if None) that have a network port (``port_link``).

    Parameters
    ----------
    G : networkx.DiGraph
    host : int, optional

    Returns
    -------
    list
        NIC nodes in (host, index) order.
    """
    return [n for n in nodes_of_kind(G, "nic") if "port_link" in G.nodes[n]
            and (host is None or G.nodes[n]["host"] == host)]


def network_nics(G, host: int | None = None) -> list:
    """The compute NICs of ``host`` (all hosts if None) cabled to a network: NCCL's NET nodes.

    A template host has compute NICs (:func:`compute_nics`) with no network edge yet; in a
    cluster they are joined.

    Returns
    -------
    list
        NIC nodes in (host, index) order.
    """
    adj = G._adj  # noqa: SLF001 - read only: networkx's own adjacency dicts, no view per node
    kind = operator.itemgetter("kind")
    return [n for n in compute_nics(G, host) if "network" in map(kind, adj[n].values())]


def network_switches(G, tier: str | None = None) -> list:
    """The ``network_switch`` nodes of ``G`` (of one ``tier`` if given), in index order.

    Parameters
    ----------
    G : networkx.DiGraph
    tier : str, optional
        ``"leaf"``, ``"spine"``, ``"core"``, ...

    Returns
    -------
    list
    """
    return [n for n in nodes_of_kind(G, "network_switch") if tier is None or G.nodes[n]["tier"] == tier]


def check_hosts(n, *, max_hosts: int = MAX_HOSTS, what: str = "a cluster") -> int:
    """``n`` as a host count: a whole number from 1 to ``max_hosts``.

    Parameters
    ----------
    n : int
        Number of hosts (a Python or numpy integer; not a bool or a float).
    max_hosts : int
        The largest count accepted (default :data:`MAX_HOSTS`).
    what : str
        What is being sized, for the message.

    Returns
    -------
    int

    Raises
    ------
    SystemSpecError
        For a count that is not a whole number >= 1, or above ``max_hosts`` (the message
        names ``max_hosts=`` and the CLI's ``--max-gpus``, which raise the limit).
    """
    if isinstance(max_hosts, bool) or not isinstance(max_hosts, int) or max_hosts < 1:
        raise SystemSpecError(f"max_hosts must be a whole number >= 1, received {max_hosts!r}")
    count = _whole(n)
    if count is None or count < 1:
        raise SystemSpecError(f"{what} needs a whole number of hosts >= 1, received {n!r}")
    if count > max_hosts:
        raise SystemSpecError(
            f"{what} of {count} hosts is beyond the limit of {max_hosts} hosts: expected at most "
            f"{max_hosts} (raise it with max_hosts=, on the command line --max-gpus)")
    return count


def _whole(n):
    """``n`` as an int if it is a Python or numpy integer (not a bool), else None."""
    if isinstance(n, bool):
        return None
    try:
        return operator.index(n)
    except TypeError:
        return None


def check_oversub(k) -> int:
    """``k`` as an oversubscription ratio: a whole number from 1 to :data:`MAX_OVERSUB`.

    Raises
    ------
    SystemSpecError
        For anything else.
    """
    value = _whole(k)
    if value is None or not 1 <= value <= MAX_OVERSUB:
        raise SystemSpecError(f"oversub must be a whole number from 1 (non-blocking) to {MAX_OVERSUB}, "
                              f"received {k!r}")
    return value


def network_cut(G, hosts) -> float:
    """Capacity of the network from the compute NICs of ``hosts`` to those of the other hosts.

    The maximum flow, per direction, over ``network`` edges only (their ``bandwidth``), from
    the compute NICs of the given hosts to the compute NICs of every other host: what the
    network can carry across that split of the hosts, NVLink and PCIe paths aside.

    Parameters
    ----------
    G : networkx.DiGraph
        A cluster (:func:`join_hosts`).
    hosts : iterable of int
        Host numbers of one side; the other side is every other host with a compute NIC.

    Returns
    -------
    float
        [B/s]; 0 when a side has no compute NIC.

    Raises
    ------
    DgxTopoError
        For a host number that no compute NIC of ``G`` is on.
    """
    nics = compute_nics(G)
    host_of = {v: G.nodes[v]["host"] for v in nics}
    side = set(hosts)
    unknown = side - set(host_of.values())
    if unknown:
        raise DgxTopoError(f"network_cut: hosts {sorted(unknown)[:5]} have no compute NIC in "
                           f"{G.graph.get('name', 'the fabric')}: expected hosts of the cluster")
    H = nx.DiGraph()
    H.add_edges_from((u, v, {"capacity": d["bandwidth"]}) for u, v, d in G.edges(data=True)
                     if d["kind"] == "network")
    source, sink = ("_cut_source",), ("_cut_sink",)
    H.add_edges_from((source, v) for v in nics if host_of[v] in side)
    H.add_edges_from((v, sink) for v in nics if host_of[v] not in side)
    if source not in H or sink not in H:
        return 0.0
    return float(nx.maximum_flow_value(H, source, sink))


def network_bisection(G) -> float:
    """:func:`network_cut` between the first half of the hosts and the rest. [B/s]

    The hosts fill the leaves in host order, so on a fat tree this split puts whole leaves
    on each side and meets every leaf's up-link limit: it is the binding balanced split.
    """
    return network_cut(G, range(G.graph.get("hosts", 1) // 2))


def _check_network(network) -> str:
    if network not in NETWORKS:
        raise DgxTopoError(f"unknown network {network!r}: expected one of {', '.join(NETWORKS)}")
    return network


def _template_hosts(template) -> int:
    """Hosts of a template: 0..H-1 (host -1 for parts between them); refuses a cluster."""
    if any(k == "network_switch" for _, k in template.nodes(data="kind")):
        raise DgxTopoError("cluster copies a single system (one host, or the hosts of one NVLink "
                           "domain such as a GB200 NVL72 rack): expected a fabric without network "
                           "switches, received a cluster")
    hosts = {h for _, h in template.nodes(data="host")} - {-1}
    if hosts != set(range(len(hosts))) or not hosts:
        raise DgxTopoError(f"cluster copies a system whose hosts are numbered 0 to H-1 (and -1 for "
                           f"parts between them), received hosts {sorted(hosts)}")
    return len(hosts)


class _Network:
    """Adds the switches and links of one cluster's network to ``G``."""

    def __init__(self, G, link: str, ports: int, model: str):
        self.G, self.link, self.ports, self.model = G, link, ports, model
        spec = LINKS[link]
        self.bandwidth, self.latency = spec.bandwidth, spec.latency
        self.count: dict = {}

    def switch(self, level: int, **attributes) -> str:
        tier = TIERS[level - 1] if level <= len(TIERS) else f"tier{level}"
        index = self.count.get(tier, 0)
        self.count[tier] = index + 1
        node = f"net.{tier}{index}"
        self.G.add_node(node, kind="network_switch", host=-1, index=index, tier=tier,
                        ports=self.ports, model=self.model, **attributes)
        return node

    def connect(self, u, v, links: int) -> None:
        bandwidth = links * self.bandwidth
        for a, b in ((u, v), (v, u)):
            self.G.add_edge(a, b, kind="network", link=self.link, links=links, bandwidth=bandwidth,
                            latency=self.latency)

    def leaves(self, groups, oversub: int, rails=None, **attributes) -> None:
        """A leaf per group of NICs (on rail ``rails[i]`` if given); with several leaves, the
        tiers above them (``attributes`` on every switch)."""
        leaves, ups = [], []
        for i, members in enumerate(groups):
            leaf = self.switch(1, **attributes, **({} if rails is None else {"rail": rails[i]}))
            for nic in members:
                self.connect(nic, leaf, 1)
            leaves.append(leaf)
            ups.append(-(-len(members) // oversub))
        if len(leaves) > 1:
            self.join(leaves, ups, 2, attributes)

    def join(self, members, ups, level: int, attributes) -> None:
        """Join switches ``members`` (``ups[i]`` up-links each) through switches of ``level``."""
        P = self.ports
        if len(members) <= P:
            # One tier joins them all: the fewest switches that keep each within its ports,
            # a divisor of the up-link count so full members spread evenly.
            most = max(ups)
            count = next(s for s in range(1, most + 1)
                         if most % s == 0 and sum(-(-u // s) for u in ups) <= P)
            tops = [self.switch(level, **attributes) for _ in range(count)]
            for member, up in zip(members, ups):
                for s, top in enumerate(tops):
                    links = up // count + (s < up % count)
                    if links:
                        self.connect(member, top, links)
            return
        # Blocks of P/2 members, each with one switch per up-link of its members (P/2 down,
        # as many up); switch j of every block is on plane j, joined recursively above.
        half = P // 2
        planes: list = []
        for b in range(0, len(members), half):
            block, block_ups = members[b:b + half], ups[b:b + half]
            for j in range(max(block_ups)):
                below = [m for m, u in zip(block, block_ups) if u > j]
                switch = self.switch(level, **attributes)
                for m in below:
                    self.connect(m, switch, 1)
                if j == len(planes):
                    planes.append(([], []))
                planes[j][0].append(switch)
                planes[j][1].append(len(below))
        for plane, plane_ups in planes:
            self.join(plane, plane_ups, level + 1, attributes)


def _copy_hosts(G, template, n: int, per_copy: int) -> None:
    """Copies 0..n-1 of ``template`` into ``G``, an empty graph (ids prefixed, hosts renumbered).

    The copies are written into ``G``'s adjacency in bulk, as ``nx.DiGraph(G)`` copies a graph
    (the node and edge dicts networkx keeps, an edge's dict shared by its successor and
    predecessor entries): ``add_edges_from`` would check every edge for a node to create and
    merge attributes into, which a fresh copy of a valid template never needs, and cost twice
    as much on a 1,024-host cluster. Every dict is a ``G.node_dict_factory`` (the graph's
    watched dicts, :mod:`topo.unedited`), written with ``dict``'s own methods: the record of
    edits starts when the graph is sealed.
    """
    if len(G):
        raise ValueError("_copy_hosts fills an empty graph")
    make, put = G.node_dict_factory, dict.__setitem__
    nodes = [(str(v), d, d["kind"] in ("gpu", "nvswitch")) for v, d in template.nodes(data=True)]
    out = [(str(u), [(str(v), d) for v, d in neighbours.items()]) for u, neighbours in template.adj.items()]
    letter = "h" if per_copy == 1 else "r"
    node_store, succ, pred = G._node, G._adj, G._pred
    for r in range(n):
        prefix = f"{letter}{r}."
        base = r * per_copy
        name = {v: prefix + v for v, _, _ in nodes}
        preds = {}
        for v, d, domain in nodes:
            host = d["host"] if d["host"] < 0 else base + d["host"]
            put(node_store, name[v], make(d, host=host, nvlink_domain=r) if domain else make(d, host=host))
            preds[name[v]] = {}
        # A fresh dict per edge (a copy of the template's), shared by both directions' entries
        # as networkx does: the copies share no attribute dict with the template or each other.
        for u, neighbours in out:
            pu = name[u]
            inner = {name[v]: make(d) for v, d in neighbours}
            put(succ, pu, make(inner))
            for pv, data in inner.items():
                preds[pv][pu] = data
        for v, inner in preds.items():
            put(pred, v, make(inner))


def join_hosts(template: nx.DiGraph, n: int, *, network: str = "fat_tree", oversub: int = 1,
               max_hosts: int = MAX_HOSTS) -> nx.DiGraph:
    """Join ``n`` copies of a system's fabric through their compute NICs into one fabric.

    Parameters
    ----------
    template : networkx.DiGraph
        One system's fabric: one host (host 0), or several hosts 0..H-1 of one NVLink domain
        with the parts between them on host -1 (a GB200 NVL72 rack). It is not modified.
    n : int
        Number of copies, 1 to ``max_hosts`` (for a multi-host template, ``n x H`` hosts
        must be within ``max_hosts`` too).
    network : str
        ``"fat_tree"``, ``"rail"`` or ``"rail_only"`` (see the module docstring).
    oversub : int
        Leaf down-link to up-link capacity ratio K, 1 (non-blocking) to :data:`MAX_OVERSUB`
        and below the switch's port count.
    max_hosts : int
        Refuse larger clusters before building anything (default :data:`MAX_HOSTS`).

    Returns
    -------
    networkx.DiGraph
        A valid fabric (:func:`topo.validate` passes) with graph attributes ``name`` (``"2xDGX-1V"``), ``system``
        (``"2xdgx1v"``, the canonical spec), ``hosts``, ``gpus_per_host``, ``network``,
        ``oversub``, ``nvlink_domains`` (copies), ``hosts_per_domain``.

    Raises
    ------
    SystemSpecError
        For ``n`` < 1 or above ``max_hosts``, or a bad ``oversub``.
    DgxTopoError
        For an unknown network, a template that is a cluster, a system without compute NICs
        or with NICs of different port technologies, an ``oversub`` the switch cannot give.
    TopologyError
        If ``template`` is not a valid fabric.
    """
    n = check_hosts(n, max_hosts=max_hosts)
    _check_network(network)
    oversub = check_oversub(oversub)
    validate(template)
    per_copy = _template_hosts(template)
    check_hosts(n * per_copy, max_hosts=max_hosts)
    nics = compute_nics(template)
    if not nics:
        raise DgxTopoError(f"{template.graph.get('name', 'the system')} has no NIC with a network port "
                           f"(port_link): expected at least one compute NIC to join hosts")
    links = {template.nodes[v]["port_link"] for v in nics}
    if len(links) > 1:
        raise DgxTopoError(f"compute NICs with different port technologies {sorted(links)}: expected one")
    link = links.pop()
    if link not in NETWORK_SWITCHES:
        raise DgxTopoError(f"no network switch for NIC ports {link!r}: expected one of "
                           f"{', '.join(NETWORK_SWITCHES)}")
    spec = NETWORK_SWITCHES[link]
    up = spec.ports // (oversub + 1)
    if up < 1:
        raise DgxTopoError(f"oversub={oversub} leaves no up-port on a {spec.ports}-port {spec.model}: "
                           f"expected oversub <= {spec.ports - 1}")
    down = oversub * up

    # Every dict made below is kept: a collection while the hosts and the network are filled in
    # would traverse them all and free nothing (topo.collector).
    with collector_paused():
        G = watched_graph()
        name = template.graph.get("name", "system")
        system = template.graph.get("system", name.lower())
        spec_text = f"{n}x{system}" + ("" if network == "fat_tree" else f":{network}") + \
            ("" if oversub == 1 else f":oversub={oversub}")
        ratio = "" if oversub == 1 else f", {oversub}:1 oversubscribed"
        G.graph.update(name=f"{n}x{name}", system=spec_text,
                       description=f"{n} x {template.graph.get('description', name)}, "
                                   f"{network.replace('_', ' ')} {LINKS[link].label} network{ratio}",
                       hosts=n * per_copy, gpus_per_host=len(nodes_of_kind(template, "gpu")) // per_copy,
                       network=network, oversub=oversub, nvlink_domains=n, hosts_per_domain=per_copy)
        _copy_hosts(G, template, n, per_copy)

        # Rails: the k-th compute NIC of a host (in NIC index order) is on rail k.
        letter = "h" if per_copy == 1 else "r"
        rails: dict = {}
        for v in nics:
            rails.setdefault(template.nodes[v]["host"], []).append(v)
        rail_count = max(len(v) for v in rails.values())
        hosts = [[f"{letter}{r}.{v}" for v in rails.get(t, ())] for r in range(n) for t in range(per_copy)]
        net = _Network(G, link, spec.ports, spec.model)
        if network == "fat_tree":
            order = [nic for host in hosts for nic in host]
            size = len(order) if len(order) <= spec.ports else down
            net.leaves([order[i:i + size] for i in range(0, len(order), size)], oversub)
        elif network == "rail":
            groups, rail_of = [], []
            # A scalable unit of `down` hosts has one leaf per rail, in rail order (so leaf k of a
            # one-unit cluster is rail k).
            for start in range(0, len(hosts), down):
                for k in range(rail_count):
                    members = [host[k] for host in hosts[start:start + down] if k < len(host)]
                    if members:
                        groups.append(members)
                        rail_of.append(k)
            net.leaves(groups, oversub, rails=rail_of)
        else:
            for k in range(rail_count):
                members = [host[k] for host in hosts if k < len(host)]
                size = len(members) if len(members) <= spec.ports else down
                net.leaves([members[i:i + size] for i in range(0, len(members), size)], oversub, rail=k)
    # Valid by construction, so not validated again (on 1,024 hosts that would cost more than
    # copying the hosts): every host is a renumbered copy of the validated template, each
    # under its own prefix, and the network is switches and edges of the catalogue, both
    # directions alike, joining every compute NIC. Only the names can break a rule the
    # template met: a prefix or a count makes them longer. tests/topo/test_cluster.py
    # validates every shape built here. Sealed (topo.unedited), the graph carries that: a
    # model preparing it validates it only if it was edited since.
    check_names(G)
    seal(G)
    return G

