"""Clusters: n copies of a system joined through their NICs by an InfiniBand network.

:func:`cluster` copies a node fabric ``n`` times (node ids get the prefix ``h<host>.``, the
``host`` attribute the host number) and joins every compute NIC (a NIC with a
``port_link``) to a network:

``fat_tree`` (default)
    A non-blocking two-tier fat tree. Leaf switches take half their ports down to NICs, in
    host order, and the other half up; with NICs for no more than one switch, that switch
    alone is the network.
``rail``
    Rail-optimised: NIC k of every host goes to the leaves of rail k, so GPUs of the same
    local index on different hosts are one leaf apart; leaves join through the core.

The core (spine) tier is one ``network_switch`` node of tier ``core`` that stands for as
many spine switches as the leaves' up-links need: in a non-blocking fat tree every leaf
reaches every other at full up-link bandwidth, which is all a bandwidth model can see, and
the node count stays linear in the cluster size (1,024 DGX-2 hosts: 8,192 NICs, 456 leaves,
one core node). Switch port counts come from :data:`topo.specs.NETWORK_SWITCHES`.

GPU ids are global: ``host x GPUs per host + local index`` (the order of :func:`topo.gpus`).

:func:`join_hosts` builds from a template graph; :func:`topo.cluster` and :func:`topo.build`
(in :mod:`topo.registry`) accept system names and specs such as ``"2xdgx1v"``.

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

import math
import operator

import networkx as nx

from .errors import DgxTopoError, SystemSpecError
from .schema import nodes_of_kind, validate
from .specs import LINKS, NETWORK_SWITCHES

__all__ = ["join_hosts", "NETWORKS", "MAX_HOSTS", "check_hosts", "compute_nics"]

#: Network shapes :func:`join_hosts` builds.
NETWORKS = ("fat_tree", "rail")

#: Default limit on the hosts of a cluster. A 1,024-host DGX-2 cluster is 53,705 nodes and
#: 306,064 edges (about 3 s and 1 GB to build); 4,096 hosts is four times that. Beyond it the
#: graph would not fit in memory of an ordinary machine, so a larger count is refused before
#: anything is built; ``max_hosts=`` (CLI ``--max-gpus``) raises the limit.
MAX_HOSTS = 4096


def compute_nics(G, host: int | None = None) -> list:
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


def _switch(G, node, index, tier, spec, ports) -> None:
    G.add_node(node, kind="network_switch", host=-1, index=index, tier=tier, ports=ports,
               model=spec.model)


def _link(G, u, v, link, links) -> None:
    spec = LINKS[link]
    for a, b in ((u, v), (v, u)):
        G.add_edge(a, b, kind="network", link=link, links=links, bandwidth=links * spec.bandwidth,
                   latency=spec.latency)


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
    try:
        count = operator.index(n) if not isinstance(n, bool) else None
    except TypeError:
        count = None
    if count is None or count < 1:
        raise SystemSpecError(f"{what} needs a whole number of hosts >= 1, received {n!r}")
    if count > max_hosts:
        raise SystemSpecError(
            f"{what} of {count} hosts is beyond the limit of {max_hosts} hosts: expected at most "
            f"{max_hosts} (raise it with max_hosts=, on the command line --max-gpus)")
    return count


def join_hosts(template: nx.DiGraph, n: int, *, network: str = "fat_tree",
               max_hosts: int = MAX_HOSTS) -> nx.DiGraph:
    """Join ``n`` copies of a system's fabric through their compute NICs into one fabric.

    Parameters
    ----------
    template : networkx.DiGraph
        One system's fabric (all nodes on host 0); it is not modified.
    n : int
        Number of hosts, 1 to ``max_hosts``.
    network : str
        ``"fat_tree"`` or ``"rail"`` (see the module docstring).
    max_hosts : int
        Refuse larger clusters before building anything (default :data:`MAX_HOSTS`).

    Returns
    -------
    networkx.DiGraph
        A validated fabric with graph attributes ``name`` (``"2xDGX-1V"``), ``system``
        (``"2xdgx1v"``), ``hosts``, ``gpus_per_host``, ``network``.

    Raises
    ------
    SystemSpecError
        For ``n`` < 1 or above ``max_hosts``.
    DgxTopoError
        For an unknown network, a system without compute NICs or with NICs of different
        port technologies.
    TopologyError
        If ``template`` is not a valid fabric.
    """
    n = check_hosts(n, max_hosts=max_hosts)
    if network not in NETWORKS:
        raise DgxTopoError(f"unknown network {network!r}: expected one of {', '.join(NETWORKS)}")
    validate(template)
    if any(h != 0 for _, h in template.nodes(data="host")):
        raise DgxTopoError("cluster copies a single system: expected a node fabric whose nodes are "
                           "all on host 0, received a fabric with several hosts")
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

    G = nx.DiGraph()
    name = template.graph.get("name", "system")
    system = template.graph.get("system", name.lower())
    G.graph.update(name=f"{n}x{name}", system=f"{n}x{system}" + ("" if network == "fat_tree" else ":rail"),
                   description=f"{n} x {template.graph.get('description', name)}, {network.replace('_', ' ')} "
                               f"{LINKS[link].label} network",
                   hosts=n, gpus_per_host=len(nodes_of_kind(template, "gpu")), network=network)
    nodes = list(template.nodes(data=True))
    edges = list(template.edges(data=True))
    for h in range(n):
        prefix = f"h{h}."
        G.add_nodes_from((prefix + str(v), {**d, "host": h}) for v, d in nodes)
        G.add_edges_from((prefix + str(u), prefix + str(v), dict(d)) for u, v, d in edges)

    down = spec.ports // 2
    per_host = len(nics)
    endpoints = n * per_host
    if network == "fat_tree":
        order = [f"h{h}.{v}" for h in range(n) for v in nics]  # host order fills the leaves
        groups = [order[i:i + down] for i in range(0, endpoints, down)]
        if endpoints <= spec.ports:
            groups = [order]
    else:
        groups = []
        for k, v in enumerate(nics):
            rail = [f"h{h}.{v}" for h in range(n)]
            groups += [rail[i:i + down] for i in range(0, n, down)]
    single = len(groups) == 1
    for i, members in enumerate(groups):
        leaf = f"net.leaf{i}"
        _switch(G, leaf, i, "leaf", spec, spec.ports)
        for nic in members:
            _link(G, nic, leaf, link, 1)
    if not single:
        up = spec.ports - down
        core_ports = len(groups) * up
        _switch(G, "net.core", 0, "core", spec, core_ports)
        G.nodes["net.core"]["model"] = (f"{math.ceil(core_ports / spec.ports)} x {spec.model} "
                                        f"(spine tier, one node)")
        for i, members in enumerate(groups):
            # Non-blocking: as many up-links as NICs below the leaf.
            _link(G, f"net.leaf{i}", "net.core", link, len(members))
    validate(G)
    return G
