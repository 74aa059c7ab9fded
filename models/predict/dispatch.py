"""MoE token dispatch (and combine) on a fabric: NCCL's flat all-to-all against the hierarchical
dispatch of DeepEP-style frameworks.

An expert-parallel layer sends each token's hidden vector to the GPUs holding the experts its
router chose (dispatch) and brings the results back (combine: the same bytes the other way).
Two schedules, each with its working (:class:`DispatchPath`):

``flat``
    Megatron-Core's ``alltoall`` dispatcher: one copy of the token per chosen expert, sent by one
    NCCL all-to-all(v) over the whole expert-parallel group (NVIDIA/Megatron-LM
    ``MoEAlltoAllTokenDispatcher`` [U]: it permutes the tokens by expert, so two experts on one
    GPU receive two copies). Timed by NCCL's per-peer schedule as an alltoall of the expected
    (even) bytes per pair (:func:`models.predict.collectives.estimate`).
``hierarchical``
    DeepSeek-V3's dispatch (DeepSeek-V3 Technical Report, arXiv 2412.19437, section 3.2.2 [U]):
    a token crosses the network once per *node* holding one of its experts, to the GPU of the same
    local index there (one rail), which forwards it over NVLink once per *GPU* of that node holding
    one (deduplicated); a token's experts on its own node are reached over NVLink directly. The
    two legs are pipelined, so the time is the larger of the network leg (each GPU's bytes at its
    NIC's rate) and the NVLink leg (at the GPU's NVLink rate), plus one network and one NVLink
    hop of NCCL's latency and NCCL's base latency [U].

Routing is taken as uniform [U] (a balanced router): each token picks ``node_limit`` nodes
(node-limited routing; every node when None) uniformly, then ``top_k`` distinct experts
uniformly among those nodes' experts; experts are spread evenly, ``experts / GPUs`` per GPU. The
expected number of distinct nodes and GPUs a token reaches follow in closed form
(:func:`reach`). Rates are NCCL's capacities of the graph's edges (its view of the links), as
the schedule's NCCL time is; neither side adds the measurement model's host term.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import networkx as nx

import topo
from topo.select import GpuIds
from topo.units import is_int

from ..engine.fabric import PreparedFabric, prepare
from ..engine.results import gpu_set, tidy_records
from .alltoall import P2pError, nvlink_groups
from .collectives import CollectiveEstimate, estimate

__all__ = ["DispatchError", "DispatchPath", "DispatchEstimate", "moe_dispatch", "reach", "routed_reach",
           "hierarchical_bytes", "hierarchical_latency", "hierarchical_path", "leg_rates"]


class DispatchError(P2pError):
    """A dispatch that cannot be timed: top-k above the experts, experts that do not divide over
    the GPUs, a node limit beyond the nodes..."""


@dataclass(frozen=True, slots=True)
class DispatchPath:
    """One schedule of a dispatch and its working (per GPU, expected under uniform routing).

    Attributes
    ----------
    name : str
        ``"flat"`` or ``"hierarchical"``.
    nvlink_bytes, network_bytes : float
        Bytes one GPU sends over NVLink (to GPUs of its node) and over the network. [bytes]
    nvlink_rate, network_rate : float
        NCCL's rate of one GPU's NVLink and network leg. [B/s]
    nvlink_time, network_time : float
        Each leg's bytes at its rate (for ``flat``, the schedule's link and channel terms). [s]
    latency : float
        [s]
    time : float
        NCCL's time of the dispatch. [s]
    bottleneck : str
        ``"network"``, ``"nvlink"`` or ``"channels"`` (flat: NCCL's p2p channels bind).
    """

    name: str
    nvlink_bytes: float
    network_bytes: float
    nvlink_rate: float
    network_rate: float
    nvlink_time: float
    network_time: float
    latency: float
    time: float
    bottleneck: str

    def to_records(self) -> list:
        """One tidy row of the path's working."""
        return tidy_records({"schedule": self.name, "nvlink_bytes": self.nvlink_bytes,
                             "network_bytes": self.network_bytes, "nvlink_Bps": self.nvlink_rate,
                             "network_Bps": self.network_rate, "nvlink_time_s": self.nvlink_time,
                             "network_time_s": self.network_time, "latency_s": self.latency,
                             "time_s": self.time, "bottleneck": self.bottleneck})


@dataclass(frozen=True, slots=True)
class DispatchEstimate:
    """A MoE dispatch on a fabric, flat and hierarchical.

    Attributes
    ----------
    gpus : tuple of int
    tokens, hidden, top_k, experts, dtype_bytes : int
        Tokens per GPU, hidden size, experts per token, routed experts, bytes per value.
    node_limit : int
        Nodes a token may reach (node-limited routing; the nodes when not limited).
    nnodes, local_ranks : int
        NCCL nodes of the group and GPUs per node.
    nodes_per_token, gpus_per_token : float
        Expected distinct nodes and GPUs one token reaches (:func:`reach`).
    flat, hierarchical : DispatchPath
    flat_estimate : CollectiveEstimate
        The flat dispatch as NCCL's alltoall, as nccl-tests would time it (``time``).
    """

    gpus: tuple
    tokens: int
    hidden: int
    top_k: int
    experts: int
    dtype_bytes: int
    node_limit: int
    nnodes: int
    local_ranks: int
    nodes_per_token: float
    gpus_per_token: float
    flat: DispatchPath
    hierarchical: DispatchPath
    flat_estimate: CollectiveEstimate

    @property
    def token_bytes(self) -> int:
        """One token's hidden vector. [bytes]"""
        return self.hidden * self.dtype_bytes

    @property
    def time(self) -> float:
        """The faster schedule's time (:attr:`best`). [s]"""
        return self.best.time

    @property
    def best(self) -> DispatchPath:
        """The faster schedule (``flat`` on a tie)."""
        return self.hierarchical if self.hierarchical.time < self.flat.time else self.flat

    @property
    def faster(self) -> str:
        """The faster schedule's name (``"flat"`` on a tie)."""
        return "hierarchical" if self.hierarchical.time < self.flat.time else "flat"

    def to_records(self) -> list:
        """Two tidy rows, flat then hierarchical, each with the dispatch's inputs."""
        common = {"gpus": gpu_set(self.gpus), "tokens": self.tokens, "hidden": self.hidden, "top_k": self.top_k,
                  "experts": self.experts, "dtype_bytes": self.dtype_bytes, "node_limit": self.node_limit,
                  "nodes_per_token": self.nodes_per_token, "gpus_per_token": self.gpus_per_token}
        return [{**common, **row} for path in (self.flat, self.hierarchical) for row in path.to_records()]


def _hit(pool: int, held: int, k: int) -> float:
    """Probability that ``k`` distinct experts drawn from ``pool`` include one of ``held``."""
    return 1.0 - comb(pool - held, k) / comb(pool, k)


def _units_hit(experts: int, top_k: int, units: int, groups: int, limit: int) -> float:
    """Expected units (nodes or GPUs, ``experts / units`` consecutive experts each) one token
    reaches when it picks ``limit`` of ``groups`` groups (``experts / groups`` consecutive
    experts each) uniformly, then ``top_k`` distinct experts uniformly among theirs."""
    pool = limit * (experts // groups)
    held = experts // units
    if units % groups == 0:  # a group spans units / groups units: a unit is hit if its group is picked
        return units * limit / groups * _hit(pool, held, top_k)
    per = groups // units  # a unit holds `per` groups, i of them picked (hypergeometric)
    picked = sum(comb(per, i) * comb(groups - per, limit - i) * _hit(pool, i * (experts // groups), top_k)
                 for i in range(1, min(per, limit) + 1))
    return units * picked / comb(groups, limit)


def routed_reach(experts: int, top_k: int, nnodes: int, local_ranks: int, groups: int | None = None,
                 group_limit: int | None = None) -> tuple:
    """Expected distinct nodes and GPUs a token reaches under uniform group-limited routing.

    The ``experts`` sit in order on the ``nnodes x local_ranks`` GPUs (node-major) and fall in
    ``groups`` groups of consecutive experts (DeepSeek-V3's ``n_group``; the nodes when None); a
    token picks ``group_limit`` groups (``topk_group``; every group when None) uniformly, then
    ``top_k`` distinct experts uniformly among theirs. Node-limited routing is groups = nodes
    (:func:`reach`). A node (or GPU) holding part of a group is reached when its group is picked
    and one of its experts drawn; one holding ``q`` whole groups when one of the picked groups it
    holds (a hypergeometric count) has one drawn.

    Raises
    ------
    DispatchError
        Groups that neither divide nor are divided by the nodes (and the GPUs), a group limit
        outside 1 to the groups, experts that do not divide over the groups and GPUs, or
        ``top_k`` above the experts of ``group_limit`` groups.

    >>> [round(x, 4) for x in routed_reach(256, 8, 8, 8, 8, 4)]  # DeepSeek-V3 on EP 64 over 8 nodes
    [3.629, 7.3594]
    """
    g = nnodes if groups is None else groups
    m = g if group_limit is None else group_limit
    gpus = nnodes * local_ranks
    if g < 1 or not 1 <= m <= g:
        raise DispatchError(f"routing: expected a group limit from 1 to the {g} groups, received {m}")
    if experts % g or experts % gpus:
        raise DispatchError(f"routing: expected {experts} experts to divide over the {g} groups and the {gpus} "
                            f"GPUs, received {experts % g or experts % gpus} left over")
    for units, what in ((nnodes, "nodes"), (gpus, "GPUs")):
        if units % g and g % units:
            raise DispatchError(f"routing: expected the {g} expert groups to divide or be divided by the "
                                f"{units} {what}, received neither")
    if top_k > m * (experts // g):
        raise DispatchError(f"routing: expected top_k at most the {m * (experts // g)} experts of {m} group(s), "
                            f"received {top_k}")
    return _units_hit(experts, top_k, nnodes, g, m), _units_hit(experts, top_k, gpus, g, m)


def reach(experts: int, top_k: int, nnodes: int, local_ranks: int, node_limit: int | None = None) -> tuple:
    """Expected distinct nodes and GPUs a token reaches under uniform node-limited routing
    (:func:`routed_reach` with one group per node).

    ``M = node_limit`` nodes of ``H``, then ``k`` experts of their ``M E / H``: a node is reached
    with ``M (1 - C(ME/H - E/H, k) / C(ME/H, k))`` expected nodes in all, a GPU likewise with its
    ``E / (H L)`` experts.

    >>> [round(x, 4) for x in reach(16, 2, 2, 8)]   # 2 nodes of 8 GPUs, one expert each, top-2
    [1.5333, 2.0]
    """
    return routed_reach(experts, top_k, nnodes, local_ranks, nnodes, node_limit)


def hierarchical_bytes(routed: float, nodes_hit: float, gpus_hit: float, nnodes: int, local_ranks: int) -> tuple:
    """``(nvlink, network)`` bytes one GPU sends in a hierarchical dispatch of ``routed`` bytes of
    token vectors (tokens x hidden x dtype, each token once): each token once over the network to
    every other node it reaches, there forwarded over NVLink to the other GPUs it reaches on that
    node, and sent over NVLink to the GPUs it reaches on its own node (expected values: ``nodes_hit``
    and ``gpus_hit`` of :func:`routed_reach`, every GPU alike). [bytes]

    >>> hierarchical_bytes(100.0, 2.0, 4.0, 2, 2)  # 2 nodes of 2, every GPU reached
    (200.0, 100.0)
    """
    network = routed * nodes_hit * (nnodes - 1) / nnodes
    per_node = gpus_hit / nodes_hit if nodes_hit else 0.0  # GPUs reached on a node reached
    forwarded = network * per_node * (local_ranks - 1) / local_ranks
    own = routed * gpus_hit * (local_ranks - 1) / (nnodes * local_ranks)
    return forwarded + own, network


def hierarchical_latency(profile, nnodes: int) -> float:
    """NCCL's base latency and one NVLink hop (one network hop more across nodes) of the
    profile's ring / Simple tables [U: DeepEP's kernels are not NCCL's]. [s]"""
    return profile.base_lat("ring", "Simple") + profile.hw_lat("NVLINK", "ring", "Simple") + \
        (profile.hw_lat("NET", "ring", "Simple") if nnodes > 1 else 0.0)


def hierarchical_path(nvlink_bytes: float, network_bytes: float, nvlink_rate: float, network_rate: float,
                      latency: float) -> DispatchPath:
    """The hierarchical schedule of these bytes per GPU: both legs pipelined, the slower sets the time."""
    nvl_time = nvlink_bytes / nvlink_rate if nvlink_rate else 0.0
    net_time = network_bytes / network_rate if network_rate else 0.0
    return DispatchPath("hierarchical", nvlink_bytes, network_bytes, nvlink_rate, network_rate, nvl_time, net_time,
                        latency, latency + max(nvl_time, net_time), "network" if net_time > nvl_time else "nvlink")


def _whole(name, value, least=1) -> int:
    if isinstance(value, bool) or not is_int(value) or value < least:
        raise DispatchError(f"moe_dispatch: expected {name} a whole number >= {least}, received {value!r}")
    return int(value)


def moe_dispatch(G: nx.DiGraph | PreparedFabric, tokens: int, hidden: int, top_k: int, experts: int,
                 gpus: GpuIds = None, *, dtype_bytes: int = 2, node_limit: int | None = None,
                 profile=None) -> DispatchEstimate:
    """Time one MoE dispatch (or combine, the same bytes back) on a fabric, flat and hierarchical.

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    tokens : int
        Tokens per GPU of the expert-parallel group.
    hidden : int
        Hidden size (values per token).
    top_k : int
        Experts per token.
    experts : int
        Routed experts, spread evenly over the GPUs (a whole number per GPU).
    gpus : GPU ids, optional
        The expert-parallel group (every GPU by default); NCCL nodes are its hosts (an NVLink
        domain of several hosts is one node).
    dtype_bytes : int
        Bytes per value (2 for bf16, 1 for fp8).
    node_limit : int, optional
        Nodes a token may reach (DeepSeek-V3: 4); every node by default.
    profile : str or NcclProfile, optional

    Returns
    -------
    DispatchEstimate

    Raises
    ------
    DispatchError
        For counts that are not whole and positive, ``top_k`` above ``experts``, experts that do
        not divide over the GPUs, a node limit outside 1 to the nodes, or ``top_k`` above the
        experts of ``node_limit`` nodes.

    Examples
    --------
    >>> import topo
    >>> d = moe_dispatch(topo.build("2xdgxh100"), 4096, 7168, 8, 64, dtype_bytes=1)
    >>> d.nnodes, d.local_ranks, d.faster, d.hierarchical.bottleneck
    (2, 8, 'hierarchical', 'network')
    """
    tokens, hidden = _whole("tokens", tokens), _whole("hidden", hidden)
    top_k, experts = _whole("top_k", top_k), _whole("experts", experts)
    dtype_bytes = _whole("dtype_bytes", dtype_bytes)
    if top_k > experts:
        raise DispatchError(f"moe_dispatch: expected top_k at most the {experts} experts, received {top_k}")
    fabric = prepare(G, nccl=profile)
    nodes = topo.select_gpus(fabric.G, gpus)
    ids = tuple(fabric.ids[n] for n in nodes)
    n = len(nodes)
    if n < 2:
        raise DispatchError(f"moe_dispatch: expected at least 2 GPUs, received {list(ids)}")
    if experts % n:
        raise DispatchError(f"moe_dispatch: expected experts a multiple of the {n} GPUs (a whole number of "
                            f"experts per GPU), received {experts}")
    system = fabric.nccl
    groups = list(nvlink_groups(system, nodes).values())
    nnodes = len(groups)
    local = len(groups[0])
    if any(len(g) != local for g in groups):
        raise DispatchError(f"moe_dispatch: expected the same GPUs on every node, received "
                            f"{[len(g) for g in groups]}")
    limit = nnodes if node_limit is None else _whole("node_limit", node_limit)
    if limit > nnodes:
        raise DispatchError(f"moe_dispatch: expected node_limit from 1 to the {nnodes} nodes, received {limit}")
    if top_k > limit * experts // nnodes:
        raise DispatchError(f"moe_dispatch: expected top_k at most the {limit * experts // nnodes} experts of "
                            f"{limit} node(s), received {top_k}")
    token = hidden * dtype_bytes
    nodes_hit, gpus_hit = reach(experts, top_k, nnodes, local, limit)

    # flat: one copy per (token, expert), spread evenly over the group's GPUs: NCCL's alltoall of
    # n x that per rank (the copy to itself included, as nccl-tests' size)
    per_pair = tokens * top_k * token // n
    flat_e = estimate(fabric, "alltoall", per_pair * n, list(ids))
    s = flat_e.schedule
    nvl_rate, net_rate = leg_rates(system, nodes, groups)
    flat_nvl, flat_net = float(per_pair * (local - 1)), float(per_pair * local * (nnodes - 1))
    flat = DispatchPath("flat", flat_nvl, flat_net, nvl_rate, net_rate, flat_nvl / nvl_rate if nvl_rate else 0.0,
                        flat_net / net_rate if net_rate else 0.0, s.latency + s.fill, s.time,
                        "channels" if s.binding == "channels" else "network" if nnodes > 1 else "nvlink")

    # hierarchical: once per remote node by RDMA, then once per GPU over NVLink
    nvl_bytes, net_bytes = hierarchical_bytes(tokens * token, nodes_hit, gpus_hit, nnodes, local)
    hier = hierarchical_path(nvl_bytes, net_bytes, nvl_rate, net_rate, hierarchical_latency(system.profile, nnodes))
    return DispatchEstimate(ids, tokens, hidden, top_k, experts, dtype_bytes, limit, nnodes, local, nodes_hit,
                            gpus_hit, flat, hier, flat_e)


def leg_rates(system, nodes, groups) -> tuple:
    """NCCL's rate of one GPU's NVLink (all its NVLink edges out) and of its RDMA leg to the GPU
    of the same local index on the next node (the route's narrowest edge at NCCL's capacity)."""
    G = system.G
    first = nodes[groups[0][0]]
    nvl = sum(system.capacity(first, v) for v in G.adj[first] if G.adj[first][v]["kind"] == "nvlink")
    if len(groups) < 2:
        return float(nvl), 0.0
    route = system.router.route(first, nodes[groups[1][0]])
    net = min(system.capacity(u, v) / share for (u, v), share in zip(route.edges, route.shares) if share > 0)
    return float(nvl), float(net)
