"""The expert-parallel dispatch and combine (and context parallelism's all-to-alls) priced on the
job's GPU groups as placed on the fabric (:func:`alltoall_time`).

One function prices every all-to-all of a plan, through the public collective estimate
(:func:`models.estimate`, nccl-tests' alltoall: ``nbytes`` is the per-rank buffer), so that a
better all-to-all model (a per-peer schedule, a hierarchical NVLink-forwarding dispatch) flows
into the planner by changing this function alone; and where an expert-parallel group sits on the
fabric, for the dispatchers (:func:`dispatch_site`, :mod:`models.studies.planner.dispatcher`).
"""

from __future__ import annotations

from ...predict.collectives import estimate
from .dispatcher import DispatchSite
from .parallel import alltoall_split
from .placement import JobGroups

# Nothing here is called by a user: the planner's evaluation prices its all-to-alls with it.
__all__: tuple[str, ...] = ()


def domain_of(fabric: JobGroups):
    """GPU id -> its NVLink domain: the fabric's ``nvlink_domain`` attribute (an NVL72 rack), else its host."""
    G, nodes = fabric.G, fabric.nodes

    def domain(i):
        found = G.nodes[nodes[i]].get("nvlink_domain")
        return ("host", fabric.host[i]) if found is None else ("domain", found)
    return domain


def _one(fabric: JobGroups, nbytes: float, ids: tuple) -> float:
    """One all-to-all of ``nbytes`` per rank on these GPUs, alone on the fabric. [s]"""
    key = ("planner.alltoall", float(nbytes), fabric.key(ids))
    memo = fabric.prepared.memo
    if key not in memo:
        memo[key] = float(estimate(fabric.prepared, "alltoall", [int(nbytes)], list(ids)).time[0])
    return memo[key]


def alltoall_time(fabric: JobGroups, nbytes: float, groups) -> float:
    """Concurrent all-to-alls of ``nbytes`` per rank, one per group: the slowest group, and no
    faster than the network can carry what every group sends out of each NVLink domain (the
    hosts' NIC bandwidth, :class:`JobGroups`). [s]"""
    if not groups or len(groups[0]) < 2 or nbytes <= 0:
        return 0.0
    firsts, shares = _spread(fabric, groups)
    slowest = max(_one(fabric, nbytes, g) for g in firsts)
    if not fabric.nic_bandwidth or not shares:
        return slowest
    load: dict = {}
    for h, each in shares.items():
        total = 0.0
        for network in each:
            total = total + network * nbytes
        load[h] = total
    return max(slowest, max(b / fabric.nic_bandwidth[h] for h, b in load.items()))


def _spread(fabric: JobGroups, groups) -> tuple:
    """``(firsts, shares)`` of concurrent all-to-all ``groups``: the first group of each key
    (:meth:`JobGroups.spread`), and host -> the network share of each group rank on it, in
    ``groups``' order (:func:`alltoall_split`; only groups that leave their NVLink domain).
    Kept by the prepared fabric per ``groups`` (and by the job's groups per the tuple asked,
    :meth:`JobGroups.held`)."""
    return fabric.held("alltoall spread", groups, lambda: _spread_of(fabric, groups))


def _spread_of(fabric: JobGroups, groups) -> tuple:
    groups = tuple(map(tuple, groups))
    key = ("planner.alltoall_spread", groups)
    memo = fabric.prepared.memo
    found = memo.get(key)
    if found is None:
        shares: dict = {}
        if fabric.nic_bandwidth:
            domain = domain_of(fabric)
            for g in groups:
                network = alltoall_split(g, domain)[2]
                if network <= 0:
                    continue
                for i in g:
                    shares.setdefault(fabric.host[i], []).append(network)
        found = memo[key] = (fabric.spread(groups)[0], {h: tuple(v) for h, v in shares.items()})
    return found


def dispatch_site(fabric: JobGroups, group) -> DispatchSite:
    """An expert-parallel group on the fabric (:class:`DispatchSite`): its NVLink domains and GPUs
    in each (the group's GPUs over its domains, rounded down, when uneven [U]), the flat
    all-to-all's NVLink and network shares. Kept by the prepared fabric per group shape and job.
    The legs' rates are not here: each leg is timed as the all-to-all it runs on its own groups."""
    group = tuple(group)
    key = ("planner.dispatch_site", fabric.key(group), tuple(len(h) for h in fabric.hosts))
    memo = fabric.prepared.memo
    found = memo.get(key)
    if found is None:
        domain = domain_of(fabric)
        doms: dict = {}
        for k, i in enumerate(group):
            doms.setdefault(domain(i), []).append(k)
        parts = list(doms.values())
        nnodes, local = len(parts), max(1, len(group) // len(parts))
        _, nvlink_share, network_share = alltoall_split(group, domain)
        found = memo[key] = DispatchSite(nnodes, local, nvlink_share, network_share)
    return found
