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

Examples
--------
>>> from topo import cluster, dgx1v
>>> G = cluster(dgx1v, 2)
>>> G.graph["name"], G.graph["hosts"], len([n for n, k in G.nodes(data="kind") if k == "gpu"])
('2xDGX-1V', 2, 16)
>>> sorted(G.successors("h1.mlx5_0"))
['h1.pcie0', 'net.leaf0']
"""

from __future__ import annotations

import math
import re

import networkx as nx

from .errors import DgxTopoError, UnknownSystemError
from .schema import nodes_of_kind, validate
from .specs import LINKS, NETWORK_SWITCHES

__all__ = ["cluster", "NETWORKS", "parse_cluster_spec", "compute_nics"]

#: Network shapes :func:`cluster` builds.
NETWORKS = ("fat_tree", "rail")

_SPEC = re.compile(r"^(\d+)x([a-z0-9]+)(?::([a-z_]+))?$")


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


def cluster(node_builder, n: int, *, network: str = "fat_tree") -> nx.DiGraph:
    """Join ``n`` copies of a system through their compute NICs into one fabric.

    Parameters
    ----------
    node_builder : callable or str
        A builder returning one system's fabric (``topo.dgx1v``), or a built-in name.
    n : int
        Number of hosts, at least 1.
    network : str
        ``"fat_tree"`` or ``"rail"`` (see the module docstring).

    Returns
    -------
    networkx.DiGraph
        A validated fabric with graph attributes ``name`` (``"2xDGX-1V"``), ``system``
        (``"2xdgx1v"``), ``hosts``, ``gpus_per_host``, ``network``.

    Raises
    ------
    DgxTopoError
        For ``n`` < 1, an unknown network, a system without compute NICs or with NICs of
        different port technologies, or a network that needs more leaves than one core
        switch tier can join.
    """
    from .dgx import SYSTEMS, build  # the registry lives there; cluster specs come back here

    if isinstance(node_builder, str):
        template = build(node_builder)
    elif callable(node_builder):
        template = node_builder()
    else:
        raise DgxTopoError(f"node_builder must be a builder or a system name such as "
                           f"{', '.join(SYSTEMS)}, received {node_builder!r}")
    validate(template)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise DgxTopoError(f"a cluster needs a whole number of hosts >= 1, received {n!r}")
    if network not in NETWORKS:
        raise DgxTopoError(f"unknown network {network!r}: expected one of {', '.join(NETWORKS)}")
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


def parse_cluster_spec(spec: str):
    """``"2xdgx1v"`` -> ``(2, "dgx1v", "fat_tree")``; ``"16xdgx2:rail"`` -> rail network.

    Returns None when ``spec`` is not of that form.

    >>> parse_cluster_spec("16xdgx2:rail")
    (16, 'dgx2', 'rail')
    """
    match = _SPEC.match(spec.lower().replace("-", "").replace(" ", ""))
    if not match:
        return None
    count, system, network = match.groups()
    network = network or "fat_tree"
    if network == "fattree":
        network = "fat_tree"
    if network not in NETWORKS:
        raise UnknownSystemError(f"unknown network {network!r} in {spec!r}: expected one of "
                                 f"{', '.join(NETWORKS)}")
    return int(count), system, network
