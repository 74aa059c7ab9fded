"""How an expert-parallel layer dispatches its tokens (and combines the results), as strategy
objects (:data:`DISPATCHERS`): the bytes one GPU sends over NVLink and the network, the time of
one dispatch in the analytical first pass, and the all-to-alls the step graph runs for it
(:mod:`models.present.plan_text` words each by its name).

* :data:`FLAT_DISPATCH` (``flat``): Megatron-Core's ``alltoall`` dispatcher
  (``MoEAlltoAllTokenDispatcher``): every routed copy of a token sent by one NCCL all-to-all over
  the expert-parallel group, priced as the planner prices every all-to-all
  (:func:`models.studies.planner.dispatch.alltoall_time`); the step graph runs that all-to-all.
* :data:`HIERARCHICAL_DISPATCH` (``hierarchical``): DeepSeek-V3's dispatch (DeepSeek-V3
  Technical Report, arXiv 2412.19437, section 3.2.2 [U]; DeepEP's normal kernels): a token
  crosses the network once per other node holding one of its experts, to the GPU of the same
  local index there, which forwards it over NVLink to the GPUs of that node holding one; its
  experts on its own node are reached over NVLink directly. With group-limited routing (the
  workload's ``routing_groups`` and ``group_limit``: DeepSeek-V3's 8 groups, 4 per token) a
  token reaches fewer nodes. The bytes are the closed forms of :mod:`models.predict.dispatch`
  (:func:`~models.predict.dispatch.routed_reach`, :func:`~models.predict.dispatch.hierarchical_bytes`).
  Its two legs run side by side (pipelined): an all-to-all over each rail (the group's GPUs of
  one local index, one per node) and one over each node's GPUs of the group, each sized so that
  its GPUs send the leg's bytes to the others (:meth:`Dispatcher.legs`). The step graph runs
  those all-to-alls; the first pass prices the same ones on the same groups
  (:meth:`Dispatcher.timer`: each by :func:`models.studies.planner.dispatch.alltoall_time`, the
  slower leg's time, the legs on disjoint links), so both passes price one dispatch alike.

The default is what each workload's published software runs (:func:`default_dispatcher`): a
workload trained with group-limited routing dispatches hierarchically (node-limited routing
exists to bound that dispatch's network traffic, the report's section 2.1.2 [U]: DeepSeek-V3),
every other one by Megatron-Core's ``alltoall`` (Mixtral, Qwen3, gpt-oss and Kimi K2 as Megatron
runs them; their own frameworks are not published [U]). ``plan(..., dispatcher="hierarchical")``
and ``plan --dispatcher`` choose one by name; one of your own: subclass :class:`Dispatcher`
(a frozen dataclass with a default ``name``).

Routing is taken as uniform [U] (a balanced router). Where the routing groups do not fall on
whole nodes and GPUs of the expert-parallel group (neither divides the other), the token is
taken to reach every group [U]; a group of GPUs spread unevenly over nodes is taken as its
GPUs over its nodes, rounded down [U].

Examples
--------
>>> site = DispatchSite(2, 8, 7 / 256, 128 / 256)
>>> FLAT_DISPATCH.split(None, site, 256.0)  # 7 of 16 peers over NVLink, 8 over the network
(7.0, 128.0)
>>> dispatcher_named("hierarchical") is HIERARCHICAL_DISPATCH, dispatcher_named("deepep")
(True, None)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...predict.dispatch import DispatchError, hierarchical_bytes, routed_reach

__all__ = ["Dispatcher", "FlatDispatch", "HierarchicalDispatch", "DispatchSite", "FLAT_DISPATCH",
           "HIERARCHICAL_DISPATCH", "DISPATCHERS", "DISPATCHER", "dispatcher_named", "default_dispatcher"]


@dataclass(frozen=True, slots=True)
class DispatchSite:
    """An expert-parallel group as placed on the fabric (every group of a layout alike).

    Attributes
    ----------
    nnodes, local : int
        NVLink domains the group spans and its GPUs in each.
    nvlink_share, network_share : float
        Of a flat all-to-all's per-rank buffer, the shares sent over NVLink and the network
        (:func:`models.studies.planner.parallel.alltoall_split`).
    """

    nnodes: int
    local: int
    nvlink_share: float
    network_share: float


@dataclass(frozen=True)
class Dispatcher:
    """One way a MoE layer's tokens reach their experts (module docstring): the interface, and
    the flat all-to-all's behaviour (:class:`FlatDispatch` names it).

    Attributes
    ----------
    name : str
        What ``--dispatcher`` and records call it.
    """

    name: str = "flat"

    def __str__(self) -> str:
        return self.name

    def split(self, w, site: DispatchSite, nbytes: float) -> tuple:
        """``(nvlink, network)`` bytes one GPU sends for a dispatch of ``nbytes`` per rank (the
        flat all-to-all's buffer: routed copies x hidden x dtype). [bytes]"""
        return nbytes * site.nvlink_share, nbytes * site.network_share

    def timer(self, w, site: DispatchSite, alltoall: Callable[[str, float], float]) -> Callable[[float], float]:
        """The time of one dispatch of ``nbytes`` per rank, as the step graph runs it: its
        :meth:`legs` side by side, each an all-to-all over its groups (``alltoall(name, nbytes)``
        prices concurrent all-to-alls over the layout's groups of that name), the slowest leg's
        time (legs on disjoint links: the rails' NICs and the nodes' NVLink). [s]"""
        legs = self.legs(w, site)

        def time(nbytes: float) -> float:
            return max((alltoall(name, nbytes * scale) for name, scale in legs), default=0.0)
        return time

    def leg_groups(self, group: tuple, domain_of) -> dict:
        """The groups the step graph's all-to-alls run over besides the expert-parallel
        groups, of one expert-parallel group (``domain_of``: GPU -> its NVLink domain)."""
        return {}

    def legs(self, w, site: DispatchSite) -> tuple:
        """The step graph's all-to-alls of one dispatch, side by side: ``(groups' name, per-rank
        buffer per byte of the flat buffer)`` each (the flat all-to-all: ``("ep", 1.0)``)."""
        return (("ep", 1.0),)


@dataclass(frozen=True)
class FlatDispatch(Dispatcher):
    """Megatron-Core's ``alltoall`` dispatcher: :class:`Dispatcher`'s behaviour."""


@dataclass(frozen=True)
class HierarchicalDispatch(Dispatcher):
    """DeepSeek-V3's node-limited hierarchical dispatch (module docstring)."""

    name: str = "hierarchical"

    def reach(self, w, site: DispatchSite) -> tuple:
        """Expected distinct nodes and GPUs of the group one token reaches
        (:func:`~models.predict.dispatch.routed_reach` of the workload's routing groups)."""
        limited = w.group_limit < w.routing_groups
        try:
            return routed_reach(w.experts, w.top_k, site.nnodes, site.local, w.routing_groups if limited else None,
                                w.group_limit if limited else None)
        except DispatchError:  # groups not on whole nodes and GPUs: every group reached [U]
            return routed_reach(w.experts, w.top_k, site.nnodes, site.local)

    def split(self, w, site: DispatchSite, nbytes: float) -> tuple:
        """Each token once per other node it reaches over the network, once per GPU it reaches
        over NVLink (:func:`~models.predict.dispatch.hierarchical_bytes` of the ``nbytes / top_k``
        bytes of the rank's token vectors). [bytes]"""
        nodes, gpus = self.reach(w, site)
        return hierarchical_bytes(nbytes / w.top_k, nodes, gpus, site.nnodes, site.local)

    def leg_groups(self, group: tuple, domain_of) -> dict:
        """``ep_rail``: the group's GPUs of each local index, one per node; ``ep_node``: its GPUs
        of each node (only those of two GPUs or more)."""
        nodes: dict = {}
        for g in group:
            nodes.setdefault(domain_of(g), []).append(g)
        doms = list(nodes.values())
        local = min(len(d) for d in doms)
        rails = tuple(tuple(d[i] for d in doms) for i in range(local))
        out = {}
        if len(doms) > 1:
            out["ep_rail"] = rails
        if local > 1:
            out["ep_node"] = tuple(tuple(d) for d in doms)
        return out

    def legs(self, w, site: DispatchSite) -> tuple:
        """The network leg as an all-to-all over the rails (each GPU's ``nnodes - 1`` peers get
        its network bytes), the NVLink leg as one over the nodes (its ``local - 1`` peers its
        NVLink bytes); a buffer counts the rank's own share, as nccl-tests' size does."""
        nvlink, network = self.split(w, site, 1.0)
        out = []
        if site.nnodes > 1:
            out.append(("ep_rail", network * site.nnodes / (site.nnodes - 1)))
        if site.local > 1:
            out.append(("ep_node", nvlink * site.local / (site.local - 1)))
        return tuple(out)


#: Megatron-Core's ``alltoall`` dispatcher (``flat``).
FLAT_DISPATCH = FlatDispatch()
#: DeepSeek-V3's hierarchical dispatch (``hierarchical``).
HIERARCHICAL_DISPATCH = HierarchicalDispatch()
#: The dispatchers ``--dispatcher`` chooses among.
DISPATCHERS = (FLAT_DISPATCH, HIERARCHICAL_DISPATCH)
#: Their names.
DISPATCHER = tuple(x.name for x in DISPATCHERS)


def dispatcher_named(name: str, dispatchers=DISPATCHERS) -> Dispatcher | None:
    """The dispatcher of ``dispatchers`` called ``name``, or None."""
    return next((x for x in dispatchers if x.name == name), None)


def default_dispatcher(w) -> Dispatcher:
    """What the workload's published software runs (module docstring): hierarchical for
    group-limited routing, else flat.

    >>> from models.studies.moe import MOE_PRESETS
    >>> default_dispatcher(MOE_PRESETS["deepseek-v3"]).name, default_dispatcher(MOE_PRESETS["kimi-k2"]).name
    ('hierarchical', 'flat')
    """
    limited = getattr(w, "group_limit", 1) < getattr(w, "routing_groups", 1)
    return HIERARCHICAL_DISPATCH if limited else FLAT_DISPATCH
