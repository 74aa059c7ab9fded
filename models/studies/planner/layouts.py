"""The layout search: every (tensor, pipeline, data) parallel layout of a job evaluated, the best
simulated, ranked (:func:`search`, :func:`plan`).

A layout is placed (:mod:`models.studies.planner.placement`), its memory checked
(:mod:`models.studies.planner.gpu_memory`) and its step timed by the analytical first pass
(:func:`models.studies.planner.step.step_components`); the :data:`DEFAULT_SIMULATED` best are
then simulated within a budget of :data:`PLAN_MAX_EVENTS` events (:mod:`models.studies.planner`'s
docstring).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import networkx as nx
import numpy as np

from topo.errors import LimitError, SizeError
from topo.select import GpuIds
from topo.units import is_int, parse_nbytes

from ...engine.fabric import PreparedFabric
from ...engine.nccl.profiles import NcclProfile
from ...predict.decompose import Decomposer
from ...predict.simulate import EVENTS_PER_TASK, simulate as simulate_graph
from ..compute import ComputeModel, Gpu, compute_model, generation, gpu_of
from ..moe import is_moe_spec, moe_workload
from ..workload import CNN, DEFAULT_BUCKET, QUANTISED_BYTES, Workload, activation_bytes_per_element, dtype_bytes, \
    is_low_precision, software as as_software, tp_limit, with_seq_length, workload as as_workload
from .dispatch import alltoall_time, dispatch_site, domain_of
from .dispatcher import DISPATCHER, Dispatcher, default_dispatcher, dispatcher_named
from .gpu_memory import memory
from .parallel_graph import plan_step_graph, plan_step_graph_size
from .cp_exchange import CP_COMM, RING, CpExchange, cp_exchange_named
from .ep_overlap import EP_OVERLAP, NO_OVERLAP, EpOverlap, ep_overlap_named
from .parallel import SplitError, stage_split
from .parallel_step import is_moe, layer_ops, moe_flops_per_token, parallel_components, parallel_memory
from .placement import JobGroups, job_gpus, tp_partition
from ..recomputation import NO_RECOMPUTE, RECOMPUTES, SEARCHED, Recompute, as_recompute
from .records import (ORDERS, RECOMPUTE, Layout, NoLayoutError, Plan, PlanError, PlanWarning, Search,
                      SkipCode, SkippedLayout, TimingCode, TimingWhy, UnknownOptionError)
from .step import DEFAULT_OVERLAP, gradient_bucket, simulated_components, step_components

__all__ = ["search", "plan", "plan_order", "DEFAULT_SIMULATED", "PLAN_MAX_EVENTS"]

#: How many of the best layouts of the analytical first pass :func:`search` simulates (a
#: simulation costs thousands of analytical estimates; the first pass's order is close).
DEFAULT_SIMULATED = 8
#: The planner's default budget of simulated events (three per task built, a folded replica adds
#: none: :func:`models.predict.simulate.simulation_size`), over every candidate simulated: about
#: three seconds of simulation on one core, so that ``plan`` stays interactive (and the test
#: suite's plans with it); a larger step keeps its analytical estimate, saying so and naming
#: ``max_events``. deepseek-v3 tp1 pp8 ep8 zero2 on 32xdgxh100 is 409,576 tasks standing for
#: 8.3 M, 1.23 M events, simulated in 14 CPU s with ``max_events=1_500_000``.
PLAN_MAX_EVENTS = 300_000


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def _fraction(name, value, *, low=0.0, closed=True):
    ok = (not isinstance(value, bool) and isinstance(value, (int, float))
          and (low <= value if closed else low < value) and value <= 1)
    if not ok:
        raise PlanError(f"{name} must be a fraction in {'[' if closed else '('}{low:g}, 1], received {value!r}")
    return float(value)


def _size(name, value) -> float:
    """A size option of the plan in bytes (``bucket``, ``memory_capacity``), read as the command
    line reads every size (:func:`topo.units.parse_nbytes`: a whole number of bytes, or digits
    with K, M, G, T), and at least 1 byte."""
    try:
        number = None if isinstance(value, (list, tuple, np.ndarray)) else parse_nbytes(value)
    except SizeError as error:
        raise PlanError(f"{name}: {error}") from None
    if number is None or number < 1:
        raise PlanError(f"{name} must be a size >= 1 byte, received {value!r}")
    return float(number)


class Context:
    def __init__(self, w, G, gpus, dtype, efficiency, memory_efficiency, overlap, bucket,
                 gen, capacity, software=None, attention_efficiency=None, compute_scale=1.0, profile=None,
                 ep_overlap=NO_OVERLAP, expert_balance=1.0, dispatch_dtype=None, cp_comm=RING, dispatcher=None):
        self.w = w
        # how the expert layers dispatch their tokens (None: the workload's published software's)
        self.dispatcher = default_dispatcher(w) if dispatcher is None else dispatcher
        # the expert overlaps searched (the first where only one applies: a dense workload)
        self.ep_overlaps = tuple(ep_overlap) if isinstance(ep_overlap, tuple) else (ep_overlap,)
        self.ep_overlap = self.ep_overlaps[0]
        self.cp_comm = cp_comm
        self.expert_balance = expert_balance
        self.fabric = JobGroups(G, gpus, profile)
        if gen is None:
            parts = {gpu_of(m) for m in self.fabric.models}
            gens = {p.generation for p in parts}
            if len(gens) != 1:
                raise PlanError(f"expected GPUs of one generation, received {sorted(gens)}")
            # The slowest HBM of the job's parts (an A100 40 GB beside an 80 GB runs at 1,555).
            self.gpu = min(parts, key=lambda p: (p.memory_bandwidth, p.memory))
        else:
            self.gpu = generation(gen)
        if dtype is None:
            dtype = "bf16" if self.gpu.supports("bf16") else "fp16"
        dtype_bytes(dtype)
        self.dtype = dtype
        self.cm = compute_model(self.gpu, dtype, stack=software, workload=w, efficiency=efficiency,
                                attention_efficiency=attention_efficiency,
                                memory_efficiency=memory_efficiency, scale=compute_scale)
        if capacity is None:
            capacity = min(gpu_of(m).memory for m in self.fabric.models) if gen is None else self.gpu.memory
            self.capacity = float(capacity)
        else:
            self.capacity = _size("memory_capacity", capacity)
        self.overlap = _fraction("overlap", overlap)
        # The dispatch's bytes per element: the low-precision dtype's quantised copy (DeepSeek-V3
        # dispatches in FP8, arXiv 2412.19437 section 3.3), else the activations' 16 bits.
        act = activation_bytes_per_element(dtype)
        chosen = dispatch_dtype if dispatch_dtype is not None else (dtype if is_low_precision(dtype) else None)
        if chosen is None:
            self.dispatch_elem = float(act)
        else:
            dtype_bytes(chosen)
            self.dispatch_elem = QUANTISED_BYTES.get(str(chosen).lower(), float(activation_bytes_per_element(chosen)))
        self.bucket = _size("bucket", bucket)
        self.partitions: dict = {}
        self.placements: dict = {}  # the groups of every layout with the same degrees and order (_placement)
        self._kernel_times: dict = {}  # (compute model, ops) -> their times, for every layout of the search
        self._layer_times: dict = {}  # (compute model, layer kind, the layout's degrees) -> the layer's kernel times
        self._flops: dict = {}  # recompute strategy -> training FLOPs per token

    def with_overlap(self, overlap: EpOverlap) -> Context:
        """This search's context with another expert overlap: a shallow copy (:func:`copy.copy`),
        its fabric, compute model and caches shared with this one."""
        each = copy.copy(self)
        each.ep_overlap = overlap
        return each

    def kernel_times(self, cm: ComputeModel) -> Callable[[tuple], tuple]:
        """``cm.times``, kept for the search: equal ops on one compute model take equal times."""
        memo = self._kernel_times

        def times(ops: tuple) -> tuple:
            key = (cm, ops)
            found = memo.get(key)
            if found is None:
                found = memo[key] = cm.times(ops)
            return found
        return times

    def flops_per_token(self, recompute=None) -> float:
        """The workload's training FLOPs per token (:meth:`Transformer.training_flops_per_token
        <models.studies.workload.Transformer.training_flops_per_token>`), kept for the search."""
        if recompute not in self._flops:
            if is_moe(self.w):
                self._flops[recompute] = moe_flops_per_token(self.w, recompute or NO_RECOMPUTE)
            else:
                self._flops[recompute] = (self.w.training_flops_per_token() if recompute is None
                                          else self.w.training_flops_per_token(recompute))
        return self._flops[recompute]

    def layer_times(self, cm: ComputeModel, layout: Layout) -> Callable[[tuple], tuple]:
        """The kernel times of one layer of a kind on ``layout``
        (:func:`~models.studies.planner.parallel_step.layer_ops`), kept for the search: layouts
        that differ only in what does not shape a layer's kernels (recomputation, ZeRO, the
        pipeline, the order) share them."""
        memo, times, w = self._layer_times, self.kernel_times(cm), self.w
        shape = (cm, layout.cp, layout.micro_batch, layout.tp, layout.ep, layout.etp, layout.sequence_parallel,
                 self.expert_balance)
        act = activation_bytes_per_element(cm.dtype)

        def timed(kind: tuple) -> tuple:
            key = (kind, shape)
            found = memo.get(key)
            if found is None:
                found = memo[key] = times(layer_ops(w, kind, layout, cm, act, self.expert_balance))
            return found
        return timed

    @property
    def gen(self) -> Gpu:
        return self.gpu


def _placement(ctx: Context, layout: Layout, tp_groups=None) -> dict:
    """The GPU groups of each dimension: ``{"tp", "pp", "dp"}`` -> tuples of GPU-id tuples.
    The same for every layout with the same degrees, order and TP bytes: kept by the context
    (the same tuples, so that the fabric's memos of concurrent groups find them at once)."""
    w = ctx.w
    tp_bytes = 0.0 if isinstance(w, CNN) else float(
        layout.micro_batch * w.seq * w.hidden * activation_bytes_per_element(ctx.dtype))
    if tp_groups is not None:
        return _place(ctx, layout, tp_bytes, tp_groups)
    key = (layout.tp, layout.pp, layout.dp, layout.cp, layout.ep, layout.etp, layout.order, layout.extended, tp_bytes)
    found = ctx.placements.get(key)
    if found is None:
        found = ctx.placements[key] = _place(ctx, layout, tp_bytes, None)
    return dict(found)


def _place(ctx: Context, layout: Layout, tp_bytes: float, tp_groups) -> dict:
    fabric = ctx.fabric
    tp, pp, dp = layout.tp, layout.pp, layout.dp
    per_host = len(fabric.hosts[0])
    if tp_groups is not None:
        slots = [tuple(g) for g in tp_groups]
    elif tp > per_host:
        ids = [i for host in fabric.hosts for i in host]  # whole hosts, host-major
        slots = [tuple(ids[k:k + tp]) for k in range(0, len(ids), tp)]
    else:
        slots = []
        for host_ids in fabric.hosts:
            # Hosts are identical: one partition, by position in the host, serves them all.
            key = (tp, tp_bytes, tuple(fabric.index[i] for i in host_ids))
            if key not in ctx.partitions:
                chosen = tp_partition(fabric, host_ids, tp, tp_bytes or 1, "all_reduce")
                where = {i: k for k, i in enumerate(host_ids)}
                ctx.partitions[key] = tuple(tuple(where[i] for i in g) for g in chosen)
            slots.extend(tuple(host_ids[k] for k in g) for g in ctx.partitions[key])
    # The stage's tp x cp x dp GPUs in Megatron's rank order (tp fastest, then cp, then dp): the
    # slots j = d cp + c of each stage, in either nesting with the pipeline.
    cp = layout.cp
    width = cp * dp
    if layout.order == "tp-dp-pp":
        def slot(p, j): return slots[p * width + j]
    else:
        def slot(p, j): return slots[j * pp + p]
    dp_groups = tuple(tuple(slot(p, d * cp + c)[r] for d in range(dp)) for p in range(pp) for c in range(cp)
                      for r in range(tp))
    pp_chains = tuple(tuple(slot(p, j)[r] for p in range(pp)) for j in range(width) for r in range(tp))
    groups = {"tp": tuple(tuple(s) for s in slots), "pp": pp_chains, "dp": dp_groups}
    if not layout.extended:
        return groups
    groups["cp"] = tuple(tuple(slot(p, d * cp + c)[r] for c in range(cp)) for p in range(pp) for d in range(dp)
                         for r in range(tp))
    # The dense gradients are reduced over dp x cp (the GPUs holding the same weights).
    groups["dp"] = tuple(tuple(slot(p, j)[r] for j in range(width)) for p in range(pp) for r in range(tp))
    # The expert layers fold the stage's GPUs as etp x ep x edp, etp fastest (Megatron-Core).
    etp, ep, edp = layout.etp, layout.ep, layout.edp
    stage = [[slot(p, j)[r] for j in range(width) for r in range(tp)] for p in range(pp)]
    groups["etp"] = tuple(tuple(g[(x * ep + e) * etp + r] for r in range(etp)) for g in stage for x in range(edp)
                          for e in range(ep))
    groups["ep"] = tuple(tuple(g[(x * ep + e) * etp + r] for e in range(ep)) for g in stage for x in range(edp)
                         for r in range(etp))
    groups["edp"] = tuple(tuple(g[(x * ep + e) * etp + r] for x in range(edp)) for g in stage for e in range(ep)
                          for r in range(etp))
    return groups


def evaluate(ctx: Context, layout: Layout, tp_groups=None, cm=None) -> Plan:
    w, fabric = ctx.w, ctx.fabric
    cm = ctx.cm if cm is None else cm
    groups = _placement(ctx, layout, tp_groups)
    pairs = tuple((c[k], c[k + 1]) for c in groups["pp"] for k in range(layout.pp - 1))
    dims = {"tp": groups["tp"], "dp": groups["dp"], "pp": pairs}

    def comm(dimension, collective, nbytes):
        return fabric.dimension_time(collective, nbytes, dims[dimension])

    if layout.extended or is_moe(w):
        if is_moe(w) and layout.ep > 1:  # the groups the dispatcher's step-graph all-to-alls run over
            legs: dict = {}
            for g in groups["ep"]:
                for name, found in ctx.dispatcher.leg_groups(g, domain_of(fabric)).items():
                    legs[name] = legs.get(name, ()) + found
            groups = {**groups, **legs}
        if ctx.ep_overlap.parameter_copies > 1:  # the groups the step reduces each stage's gradients over
            stages = ctx.ep_overlap.rank_stages(layout.pp)
            groups = {**groups, "dp_copies": _with_copies(groups["dp"], groups["pp"], stages),
                      "edp_copies": _with_copies(groups.get("edp", ()), groups["pp"], stages)}
        mem, components = _evaluate_parallel(ctx, layout, cm, groups, comm)
    else:
        mem = memory(w, layout, dtype=ctx.dtype, capacity=ctx.capacity, flash=cm.stack.flash_attention)
        components = step_components(w, layout, cm, comm, overlap=ctx.overlap, bucket=ctx.bucket,
                                     times=ctx.kernel_times(cm))
    step = sum(c.exposed for c in components)
    tokens = layout.global_batch * (1 if isinstance(w, CNN) else w.seq)
    model_flops = ctx.flops_per_token() * tokens
    hardware_flops = ctx.flops_per_token(layout.recompute) * tokens
    warnings = (PlanWarning.CROSS_HOST_TP,) if any(len({fabric.host[i] for i in g}) > 1 for g in groups["tp"]) \
        else ()
    return Plan(w.name, fabric.name, ctx.gpu.generation, ctx.dtype, layout, mem.fits,
                step if mem.fits else math.inf, components, mem, groups, model_flops,
                cm.peak, w.tokens_per_sample, hardware_flops, cm.facts, cm.stack.name, warnings,
                analytical_step_time=step if mem.fits else math.inf, nccl=fabric.prepared.profile.version,
                workload_spec=w)


def _with_copies(groups, chains, rank_stages) -> tuple:
    """``groups`` (of GPUs of one stage each) joined with the GPUs at the same place of the
    other ranks that hold the same stage (``rank_stages``: the stages each pipeline rank runs,
    :meth:`~models.studies.planner.ep_overlap.EpOverlap.rank_stages`), each joined group once:
    the GPUs holding the same weights when every stage has several copies (DualPipe)."""
    rank = {g: p for chain in chains for p, g in enumerate(chain)}
    at = {(chain[0], p): g for chain in chains for p, g in enumerate(chain)}  # (chain, rank) -> GPU
    head = {g: chain[0] for chain in chains for g in chain}
    out, seen = [], set()
    for g in groups:
        stage = rank[g[0]]
        holders = [stage] + [r for r, held in enumerate(rank_stages) if stage in held and r != stage]
        joined = tuple(at[head[x], r] for r in holders for x in g)
        if frozenset(joined) not in seen:
            seen.add(frozenset(joined))
            out.append(joined)
    return tuple(out)


def _evaluate_parallel(ctx: Context, layout: Layout, cm, groups, comm) -> tuple:
    """Memory and components of a layout with context or expert parallelism, an uneven split or
    a MoE workload (:mod:`models.studies.planner.parallel_step`)."""
    w, fabric = ctx.w, ctx.fabric
    split = stage_split(w.layers, layout.pp, layout.virtual_stages, first=layout.first_stage_layers,
                        last=layout.last_stage_layers, embedding_in_split=layout.embedding_in_split,
                        loss_in_split=layout.loss_in_split)
    # the exchange's rings and all-to-all groups of each context-parallel group (the ring: the group)
    exchange = layout.cp_comm if layout.cp > 1 else None
    rings = tuple(r for g in groups.get("cp", ()) for r in exchange.ring_groups(g)) if exchange else ()
    ring = tuple((g[k], g[(k + 1) % len(g)]) for g in rings for k in range(len(g)) if len(g) > 1)
    extra = {"cp_ring": ring, "etp": groups.get("etp", ()), "edp": groups.get("edp", ())}
    a2a = {"cp": tuple(x for g in groups.get("cp", ()) for x in exchange.alltoall_groups(g))} if exchange else {}
    for copies in ("dp_copies", "edp_copies"):  # several copies of each stage (evaluate)
        if copies in groups:
            extra[copies] = groups[copies]

    def comm_all(dimension, collective, nbytes):
        if dimension in extra:
            return fabric.dimension_time(collective, nbytes, extra[dimension])
        return comm(dimension, collective, nbytes)

    ep_groups = groups.get("ep", ())
    dispatcher = ctx.dispatcher
    site = dispatch_site(fabric, ep_groups[0]) if is_moe(w) and ep_groups and len(ep_groups[0]) > 1 else None
    ep_time = (dispatcher.timer(w, site, lambda name, nbytes: alltoall_time(fabric, nbytes, groups.get(name, ())))
               if site is not None else None)

    def alltoall(dimension, nbytes):
        if dimension == "ep" and ep_time is not None:
            return ep_time(nbytes)
        return alltoall_time(fabric, nbytes, a2a.get(dimension) or groups.get(dimension, ()))

    nvlink, network = dispatcher.split(w, site, 1.0) if site is not None else (0.0, 0.0)
    mem = parallel_memory(w, layout, split, dtype=ctx.dtype, capacity=ctx.capacity, flash=cm.stack.flash_attention,
                          ep_overlap=ctx.ep_overlap, balance=ctx.expert_balance)
    components = parallel_components(w, layout, split, cm, comm_all, alltoall, overlap=ctx.overlap,
                                     bucket=ctx.bucket, times=ctx.kernel_times(cm), ep_overlap=ctx.ep_overlap,
                                     balance=ctx.expert_balance, dispatch_elem=ctx.dispatch_elem,
                                     network_fraction=network, layer_times=ctx.layer_times(cm, layout),
                                     dispatcher=dispatcher, nvlink_fraction=nvlink,
                                     dispatch_legs=dispatcher.legs(w, site) if site is not None else ())
    return mem, components


def _not_simulated(w, p: Plan) -> TimingWhy | None:
    """Why a plan's step cannot be simulated (None when it can): step graphs follow Megatron's
    transformer schedule in plain 1F1B (:func:`~models.studies.planner.parallel_graph.plan_step_graph`)."""
    if isinstance(w, CNN):
        return TimingWhy(TimingCode.CNN)
    if p.layout.virtual_stages != 1:
        return TimingWhy(TimingCode.INTERLEAVED)
    if any(c.name == "ep_comm" and not c.detail.overlap.simulated for c in p.components):
        return TimingWhy(TimingCode.DUALPIPE)
    return None


def _decomposer(prepared: PreparedFabric) -> Decomposer:
    """The decompositions of the plans' simulations on a prepared fabric: one :class:`Decomposer`
    (its estimates and routes) kept by the fabric for every plan simulated on it."""
    found = prepared.memo.get(("planner.decomposer",))
    if found is None:
        found = prepared.memo[("planner.decomposer",)] = Decomposer(prepared)
    return found


def simulate_plans(w, ctx: Context, plans, count: int, max_events: int, cm=None) -> list:
    """The plans with the first ``count`` fitting, simulable ones simulated (:class:`Plan`'s
    ``timing``), ranked: the simulated by their simulated step, then the other fitting ones by
    their analytical step, then those that do not fit.

    Sized first: the simulations' events (three per task built, :func:`~models.studies.planner.parallel_graph.plan_step_graph_size`)
    add up until ``max_events``; the candidates beyond it keep their analytical step, with a
    note (a larger step is better estimated than refused: the first pass is a full answer).
    """
    cm = ctx.cm if cm is None else cm
    # overlap 0 (gradients reduced once the backward is done, as Megatron-LM's local DDP did) is
    # the schedule's to honour: one buffer after the backward, as the first pass prices it
    # (gradient_bucket). Other fractions are the first pass's; the simulation overlaps the
    # buckets as the backward produces them.
    bucket = gradient_bucket(ctx.bucket, ctx.overlap)
    fraction = TimingWhy(TimingCode.OVERLAP_FIRST_PASS, overlap=ctx.overlap) if 0 < ctx.overlap < 1 else None
    why = {}
    chosen = []
    budget = max_events
    for p in plans:
        if not p.fits:
            continue
        reason = _not_simulated(w, p)
        if reason or len(chosen) == count:
            why[id(p)] = reason or (TimingWhy(TimingCode.NOT_AMONG_BEST, count=count) if count else
                                    TimingWhy(TimingCode.ANALYTICAL_ONLY))
            continue
        if budget < 0 and chosen:  # past the budget: its size changes nothing (nor the note)
            why[id(p)] = TimingWhy(TimingCode.BEYOND_BUDGET, max_events=max_events)
            continue
        # As the simulator sizes a graph: three events per task built (simulation_size).
        events = EVENTS_PER_TASK * plan_step_graph_size(p, workload=w, bucket=bucket, G=ctx.fabric.prepared.G)
        if events > budget:
            why[id(p)] = (TimingWhy(TimingCode.NEEDS_EVENTS, events=events, max_events=max_events)
                          if not chosen else TimingWhy(TimingCode.BEYOND_BUDGET, max_events=max_events))
            budget = -1  # the ranking's order is kept: no later candidate jumps the queue
            continue
        budget -= events
        chosen.append(p)
    done = {}
    if chosen:
        decomposer = _decomposer(ctx.fabric.prepared)
        G = decomposer.G
        for p in chosen:
            try:
                result = simulate_graph(G, plan_step_graph(p, G, workload=w, bucket=bucket, compute=cm),
                                        decomposer=decomposer, max_events=max_events)
            except LimitError as error:  # the count above is the simulator's; should it differ, keep the first pass
                why[id(p)] = TimingWhy(TimingCode.NEEDS_EVENTS, events=error.size, max_events=max_events)
                continue
            done[id(p)] = dataclasses.replace(p, step_time=result.step_time,
                                              components=simulated_components(p, result), timing="simulated",
                                              timing_why=fraction)
    out = [done.get(id(p)) or (dataclasses.replace(p, timing_why=why[id(p)]) if id(p) in why else p)
           for p in plans]
    out.sort(key=lambda p: (not p.fits, not p.simulated, p.step_time, p.memory.total, p.layout.label()))
    return out


#: Context parallelism is searched (when ``cp`` is not given) from this sequence length on
#: [tokens]: below it, every rank already holds a whole sequence's activations comfortably and
#: splitting it only adds the K/V exchange (Megatron-Core's guidance: CP for long context) [U].
CP_SEARCH_FROM = 16384


def _cps(ctx, cp, per_host) -> list:
    """The context-parallel degrees searched: ``cp`` when given, else 1, and from
    :data:`CP_SEARCH_FROM` tokens on the divisors of a host's GPUs."""
    if cp is not None:
        return [cp]
    if ctx.cp_comm.degree is not None:  # a sized hierarchical exchange names its degree
        return [ctx.cp_comm.degree]
    if isinstance(ctx.w, CNN) or ctx.w.seq < CP_SEARCH_FROM:
        return [1]
    return [d for d in _divisors(per_host)]


def _refusal(w, t, c, p, d, e, et, cp_comm, sequence_parallel, stack_flash, split, v, m, ep_overlap):
    """Why Megatron refuses this layout (a :class:`SkippedLayout`), or None."""
    moe = is_moe(w)

    def skip(code, count=None, asked=()):
        return SkippedLayout(code, t, p, d, v, count=count, cp=c, ep=e, etp=et, split=asked)
    if c > 1:
        if not stack_flash:
            return skip(SkipCode.CP_FLASH)
        if w.seq % (2 * c):
            return skip(SkipCode.CP_SEQUENCE, w.seq)
        # The all-to-all splits the key/value heads as well as the queries' (Transformer Engine's
        # a2a exchange reshapes K and V by head [U: recalled]): the fewer per rank binds; K/V
        # heads fewer than t are replicated, one a rank.
        a = w.attention if moe else None
        q_heads = a.heads if moe else w.heads
        kv_heads = getattr(a, "kv_heads", q_heads) if moe else w.kv_heads
        heads = min(q_heads // t, max(kv_heads // t, 1))
        if cp_comm.refuses(heads, c):
            return skip(SkipCode(cp_comm.refusal), heads)
    if not moe and (e > 1 or et > 1):
        return skip(SkipCode.EP_DENSE)
    if moe:
        if w.experts % e:
            return skip(SkipCode.EP_EXPERTS, w.experts)
        if (t * c * d) % (et * e):
            return skip(SkipCode.EP_FOLD, t * c * d)
        if w.expert_ffn % et:
            return skip(SkipCode.ETP_FFN, w.expert_ffn)
        if e > 1 and t > 1 and not sequence_parallel:
            return skip(SkipCode.EP_SEQUENCE_PARALLEL)
    if ep_overlap.refuses(p, m, v):
        return skip(SkipCode.DUALPIPE, m)
    try:
        stage_split(w.layers, p, v, **split)
    except SplitError:
        return skip(SkipCode.SPLIT, w.layers, (split.get("first", 0), split.get("last", 0),
                                                bool(split.get("embedding_in_split")), bool(split.get("loss_in_split"))))
    return None


def _layouts(ctx, n, tp, pp, dp, zero, micro_batch, global_batch, recompute, sequence_parallel,
             virtual_stages, skipped, cp=1, ep=1, etp=None, cp_comm=RING, split=None):
    w = ctx.w
    split = dict(split or {})
    moe = is_moe(w)
    per_host = min(len(h) for h in ctx.fabric.hosts)
    cnn = isinstance(w, CNN)
    tps = [tp] if tp is not None else [d for d in _divisors(per_host)
                                       if tp_limit(w, d) is None and per_host % d == 0]
    if cnn:
        tps = [t for t in tps if t == 1]
    zeros = [zero] if zero is not None else [0, 1, 2, 3]
    # Searched when not given: none and full, and DeepSeek-V3's partial recomputation for a MoE workload.
    recomputes = ([as_recompute(recompute)] if recompute is not None
                  else [r for r in SEARCHED if moe or not r.moe_only])
    flash = ctx.cm.stack.flash_attention
    given_split = any(split.values())
    for t in tps:
        limit = tp_limit(w, t)
        if limit is not None:
            skipped.append(SkippedLayout(SkipCode.TP_LIMIT, t, tp_limit=limit))
            continue
        if per_host % t and t % per_host:
            skipped.append(SkippedLayout(SkipCode.TP_HOST, t, count=per_host))
            continue
        for c in _cps(ctx, cp, per_host):
            if n % (t * c):
                skipped.append(SkippedLayout(SkipCode.GPUS, t, count=n, cp=c))
                continue
            pps = [pp] if pp is not None else [d for d in _divisors(n // (t * c)) if d <= w.layers and
                                               (not cnn or d == 1)]
            for p in pps:
                if n % (t * c * p):
                    skipped.append(SkippedLayout(SkipCode.GPUS, t, p, count=n, cp=c))
                    continue
                d = n // (t * c * p)
                if dp is not None and d != dp:
                    continue
                if p > w.layers:
                    skipped.append(SkippedLayout(SkipCode.LAYERS, t, p, count=w.layers, cp=c))
                    continue
                if global_batch % (d * micro_batch):
                    skipped.append(SkippedLayout(SkipCode.BATCH, t, p, d, count=global_batch, micro_batch=micro_batch,
                                                 cp=c))
                    continue
                v = virtual_stages
                m = global_batch // (d * micro_batch)
                layout_split = split
                if v > 1:
                    # Layers that do not split into pp x v chunks split with the embedding and the
                    # loss counted as layers, when that divides (Llama 3.1 405B's 126 + 2 over 64).
                    if (not given_split and w.layers % (p * v) and p > 1
                            and (w.layers + 2) % (p * v) == 0):
                        layout_split = dict(split, embedding_in_split=True, loss_in_split=True)
                    why = ((SkipCode.INTERLEAVE_PIPELINE, None) if p == 1 else
                           (SkipCode.INTERLEAVE_LAYERS, w.layers)
                           if w.layers % (p * v) and layout_split is split and not given_split else
                           (SkipCode.INTERLEAVE_MICRO_BATCHES, m) if m % p else None)
                    if why is not None:
                        skipped.append(SkippedLayout(why[0], t, p, d, v, count=why[1], cp=c))
                        continue
                if moe:
                    group = t * c * d
                    ets = [etp] if etp is not None else sorted({1, t})
                    eps = [ep] if ep is not None else [e for e in _divisors(w.experts) if group % e == 0]
                else:
                    ets, eps = [1 if etp is None else etp], [1 if ep is None else ep]
                orders = ORDERS if (p > 1 and d * c > 1) else ORDERS[:1]
                # the exchanges of this degree (a hierarchical one unsized: each of its sizes)
                for x, et, e in ((x, et, e) for x in (cp_comm.for_degree(c) if c > 1 else (cp_comm,))
                                 for et in ets for e in eps):
                    for z in zeros:
                        if d * c == 1 and z > 0 and zero is None:
                            continue
                        for rc in recomputes:
                            sp = (t > 1) if sequence_parallel is None else bool(sequence_parallel and t > 1)
                            why_not = _refusal(w, t, c, p, d, e, et, x, sp, flash, layout_split, v, m,
                                               ctx.ep_overlap)
                            if why_not is not None:
                                if why_not not in skipped:
                                    skipped.append(why_not)
                                continue
                            for order in orders:
                                yield Layout(t, p, d, z, micro_batch, global_batch, rc, sp, order, v, c, e, et,
                                             x, layout_split.get("first", 0), layout_split.get("last", 0),
                                             bool(layout_split.get("embedding_in_split")),
                                             bool(layout_split.get("loss_in_split")))


def _strategy(name, value, kind, named, names):
    """A strategy object: ``value`` itself, or the registered one of that name (read once, here)."""
    found = value if isinstance(value, kind) else named(value) if isinstance(value, str) else None
    if found is None:
        raise PlanError(f"{name} must be one of {', '.join(names)}, received {value!r}")
    return found


def _overlaps(value):
    """One expert overlap (a name or the object), or a tuple of them for a list or tuple: the
    search covers each (:func:`search`)."""
    if isinstance(value, (list, tuple)):
        found = tuple(_strategy("ep_overlap", v, EpOverlap, ep_overlap_named, EP_OVERLAP) for v in value)
        names = [o.name for o in found]
        if not found or len(set(names)) != len(names):
            raise PlanError(f"ep_overlap must be one overlap or a list of distinct ones, received {list(value)!r}")
        return found
    return _strategy("ep_overlap", value, EpOverlap, ep_overlap_named, EP_OVERLAP)


def check_int(name, value, low=1):
    if value is None:
        return
    if not is_int(value) or value < low:
        raise PlanError(f"{name} must be a whole number >= {low}, received {value!r}")


def prepare_job(workload, G, *, tp, pp, dp, zero, micro_batch, global_batch, dtype, recompute, overlap, bucket,
             efficiency, memory_efficiency, gpus, generation, memory_capacity, tp_groups, software,
             attention_efficiency, compute_scale, virtual_stages, sequence_parallel,
             profile=None, simulate=DEFAULT_SIMULATED, max_events=PLAN_MAX_EVENTS, seq_length=None,
             cp=None, ep=None, etp=None, cp_comm=RING, first_stage_layers=0, last_stage_layers=0,
             embedding_in_split=False, loss_in_split=False, ep_overlap=NO_OVERLAP, expert_balance=1.0,
             dispatch_dtype=None, dispatcher=None):
    """The context of a search and the job's GPU count and global batch."""
    w = moe_workload(workload) if is_moe_spec(workload) else as_workload(workload)
    if seq_length is not None:
        w = with_seq_length(w, seq_length)
    for name, value in (("tp", tp), ("pp", pp), ("dp", dp), ("micro_batch", micro_batch),
                        ("global_batch", global_batch), ("virtual_stages", virtual_stages), ("cp", cp),
                        ("ep", ep), ("etp", etp)):
        check_int(name, value)
    for name, value in (("first_stage_layers", first_stage_layers), ("last_stage_layers", last_stage_layers)):
        check_int(name, value, low=0)
        if value is None:
            raise PlanError(f"{name} must be a whole number >= 0, received None")
    for name, value in (("embedding_in_split", embedding_in_split), ("loss_in_split", loss_in_split)):
        if not isinstance(value, (bool, np.bool_)):
            raise PlanError(f"{name} must be True or False, received {value!r}")
    cp_comm = _strategy("cp_comm", cp_comm, CpExchange, cp_exchange_named, CP_COMM)
    for each in (cp_comm.for_degree(cp) if cp is not None else (cp_comm,)):
        wrong = each.check(cp)
        if wrong is not None:
            raise PlanError(wrong)
    ep_overlap = _overlaps(ep_overlap)
    if dispatcher is not None:
        dispatcher = _strategy("dispatcher", dispatcher, Dispatcher, dispatcher_named, DISPATCHER)
    if (isinstance(expert_balance, bool) or not isinstance(expert_balance, (int, float))
            or not 1 <= expert_balance <= 1000):
        raise PlanError(f"expert_balance must be a number from 1 (force-balanced) to 1000, received {expert_balance!r}")
    if not is_moe(w):  # what only expert layers read: refused, not ignored, for a dense workload
        given = [name for name, value, unset in (("dispatcher", dispatcher, None), ("dispatch_dtype", dispatch_dtype, None),
                                                 ("expert_balance", expert_balance, 1.0)) if value != unset]
        if given:
            raise PlanError(f"{given[0]} sets how expert layers send their tokens: expected a mixture-of-experts "
                            f"workload, received {w.name} (dense)")

    check_int("simulate", simulate, low=0)
    check_int("max_events", max_events)
    for name, value in (("simulate", simulate), ("max_events", max_events), ("micro_batch", micro_batch),
                        ("virtual_stages", virtual_stages)):
        if value is None:  # these have a value, never "searched" or "the default"
            raise PlanError(f"{name} must be a whole number, received None")
    if sequence_parallel is not None and not isinstance(sequence_parallel, (bool, np.bool_)):
        raise PlanError(f"sequence_parallel must be True, False or None (on whenever tp > 1), received "
                        f"{type(sequence_parallel).__name__}")
    if zero is not None and (not is_int(zero) or zero not in (0, 1, 2, 3)):
        raise PlanError(f"zero must be a ZeRO stage 0, 1, 2 or 3, received {zero!r}")
    rc = as_recompute(recompute)  # a name read once as its object (one of your own as it is)
    if recompute is not None and rc is None:
        raise PlanError(f"recompute must be one of {', '.join(RECOMPUTE)} or a Recompute, received {recompute!r}")
    if rc is not None and rc.moe_only and not is_moe(w):
        raise PlanError(f"recompute {rc.name!r} recomputes the norms, MLA up-projections and expert activations of a "
                        f"mixture-of-experts model: expected a MoE workload, received {w.name} (dense); for a dense "
                        f"one: {', '.join(r.name for r in RECOMPUTES if not r.moe_only)}")
    if software is not None:
        as_software(software)
    ctx = Context(w, G, gpus, dtype, efficiency, memory_efficiency, overlap, bucket, generation,
                   memory_capacity, software, attention_efficiency, compute_scale, profile, ep_overlap,
                   float(expert_balance), dispatch_dtype, cp_comm, dispatcher)
    available = len(ctx.fabric.ids)
    if len({len(h) for h in ctx.fabric.hosts}) > 1:
        raise PlanError("expected the same number of GPUs on every host of the job")
    per_host = len(ctx.fabric.hosts[0])
    forced_one = isinstance(w, CNN)  # a CNN is data parallel only: tp = pp = 1
    if tp is not None and pp is not None and dp is not None:
        n = tp * pp * dp * (cp or cp_comm.degree or 1)
    elif forced_one and dp is not None:
        n = dp
    else:
        n = available
    if n > available:
        raise PlanError(f"the layout needs {n} GPUs, the fabric offers {available}")
    if n < available:
        if n <= per_host:
            keep = job_gpus(ctx.fabric, ctx.fabric.hosts[0], n)
        elif n % per_host == 0:
            keep = [i for host in ctx.fabric.hosts[:n // per_host] for i in host]
        else:
            raise PlanError(f"a job of {n} GPUs spans hosts of {per_host} GPUs: expected at most "
                            f"{per_host} GPUs (one host) or a multiple of {per_host} (whole hosts)")
        ctx.fabric = JobGroups(ctx.fabric.prepared, list(keep))
    if tp is not None and tp > len(ctx.fabric.hosts[0]) and tp_groups is None:
        host = len(ctx.fabric.hosts[0])
        if tp % host or n % tp:
            raise PlanError(f"tensor parallel {tp} spans hosts of {host} GPUs: expected a multiple of "
                            f"{host} that divides the job's {n} GPUs")
    if global_batch is None:
        global_batch = w.global_batch or 8 * n
    if tp_groups is not None:
        if tp is None:
            raise PlanError("tp_groups needs tp")
        groups = tp_groups if isinstance(tp_groups, (list, tuple)) else ()
        groups = [g for g in groups if isinstance(g, (list, tuple)) and all(is_int(i) for i in g)]
        flat = [int(i) for g in groups for i in g]
        if len(groups) != len(tp_groups if isinstance(tp_groups, (list, tuple)) else [None]) \
                or sorted(flat) != sorted(ctx.fabric.ids) or any(len(g) != tp for g in groups):
            raise PlanError(f"tp_groups must partition GPUs {ctx.fabric.ids} into groups of {tp}, "
                            f"received {tp_groups!r}")
    return w, ctx, n, global_batch


def search(workload: str | Workload, G: nx.DiGraph | PreparedFabric, *, tp: int | None = None, pp: int | None = None,
           dp: int | None = None, zero: int | None = None, micro_batch: int = 1, global_batch: int | None = None,
           dtype: str | None = None, recompute: str | Recompute | None = None, sequence_parallel: bool | None = None,
           overlap: float = DEFAULT_OVERLAP, bucket: float = DEFAULT_BUCKET, efficiency: float | None = None,
           memory_efficiency: float | None = None, gpus: GpuIds = None, generation: str | None = None,
           memory_capacity: float | None = None, tp_groups: Sequence[Sequence[int]] | None = None,
           software: str | None = None, attention_efficiency: float | None = None, compute_scale: float = 1.0,
           virtual_stages: int = 1, profile: str | NcclProfile | None = None,
           simulate: int = DEFAULT_SIMULATED, max_events: int = PLAN_MAX_EVENTS,
           seq_length: int | None = None, cp: int | None = None, ep: int | None = None, etp: int | None = None,
           cp_comm: str | CpExchange = "p2p", first_stage_layers: int = 0, last_stage_layers: int = 0,
           embedding_in_split: bool = False, loss_in_split: bool = False,
           ep_overlap: str | EpOverlap | Sequence[str | EpOverlap] = "none",
           expert_balance: float = 1.0, dispatch_dtype: str | None = None,
           dispatcher: str | Dispatcher | None = None) -> Search:
    """Evaluate every layout of the job's GPUs and rank them (fitting first, by step time).

    Parameters
    ----------
    workload : str or workload
        A preset name, a spec text (:func:`models.studies.workload.parse_workload`) or a workload.
    G : networkx.DiGraph
        The fabric.
    tp, pp, dp : int, optional
        Fix a degree; the others are searched. ``tp x pp x dp`` GPUs are used when all three
        are given (a CNN: ``dp``), else all of ``gpus``; a job smaller than the fabric takes
        the best-connected GPUs of one host, or whole hosts. A ``tp`` larger than a host spans
        whole hosts (with a warning).
    zero : int, optional
        ZeRO stage 0-3 (all searched when omitted).
    micro_batch : int
    global_batch : int, optional
        [samples] (the workload's published batch by default).
    dtype : str, optional
        ``bf16`` where the GPU has it, else ``fp16``; ``tf32`` runs fp32 training on TF32
        tensor cores (Ampere and later).
    recompute : str or Recompute, optional
        One of :data:`RECOMPUTE` or the strategy object (:mod:`models.studies.recomputation`, one
        of your own included; ``none`` and ``full`` searched when omitted, and ``deepseek`` for a
        mixture-of-experts workload; ``deepseek`` is refused for a dense one).
    sequence_parallel : bool, optional
        Default: on whenever ``tp > 1``.
    overlap : float
        Fraction of a backward (forward) that can hide data-parallel communication, in [0, 1],
        in the analytical first pass. A simulated step overlaps the gradient buckets as its
        schedule allows, except with ``overlap=0``: every gradient is then reduced after the
        backward (one buffer, in the first pass too: :func:`~models.studies.planner.step.gradient_bucket`),
        as Megatron-LM's DDP without ``overlap_grad_reduce`` does.
    bucket : float
        Gradient bucket [bytes]: a whole number of bytes, or digits with K, M, G, T (``"25M"``).
    efficiency, attention_efficiency, memory_efficiency : float, optional
        Achievable fractions of the GEMM, flash-attention and HBM peaks (defaults per generation
        and dtype, :mod:`models.studies.compute`).
    gpus : GPU ids, optional
        The GPUs the job may use (all by default).
    generation : str, optional
        Force a GPU generation (what-if), instead of the fabric's.
    memory_capacity : float, optional
        Device memory per GPU (what-if) [bytes], instead of the fabric GPUs': a whole number of
        bytes of at least 1, or digits with K, M, G, T (``"80G"``).
    tp_groups : sequence of GPU-id tuples, optional
        Force the tensor-parallel groups (all of them, host-major order).
    software : str, optional
        ``eager``, ``fused`` or ``flash`` (:data:`models.studies.workload.SOFTWARE`); default
        ``flash`` for a workload trained with flash attention on Ampere or newer, else ``fused``.
    compute_scale : float
        Multiplier on every kernel's time (a :func:`calibrate_plan` result's ``scale``).
    virtual_stages : int
        Model chunks per GPU (interleaved 1F1B); needs ``pp > 1``, layers divisible by ``pp x
        v`` and micro-batches by ``pp``.
    profile : str or NcclProfile, optional
        The NCCL release whose collectives the plan times (``"2.12"``; default: the reference
        version, :data:`models.engine.nccl.DEFAULT_VERSION`).
    simulate : int
        How many of the best layouts of the analytical first pass (:func:`step_components`) are
        then simulated (:func:`models.studies.planner.parallel_graph.plan_step_graph`, run by
        :func:`models.predict.simulate.simulate`), and ranked by their simulated step ahead of
        the others (default :data:`DEFAULT_SIMULATED`; 0: analytical only). CNNs, interleaved
        and DualPipe schedules stay analytical. Each plan says which (``timing``).
    max_events : int
        The simulations' budget, sized before any (:func:`~models.studies.planner.parallel_graph.plan_step_graph_size`):
        their events (three per task) add up to at most this (default :data:`PLAN_MAX_EVENTS`);
        the candidates beyond it keep their analytical step, with a note naming ``max_events``.
    seq_length : int, optional
        Train the workload at this sequence length instead of its own
        (:func:`models.studies.workload.with_seq_length`; the plans' ``workload_spec`` carries it).
    cp : int, optional
        Context-parallel degree (``tp x cp x pp x dp`` GPUs). Searched over the divisors of a
        host's GPUs from :data:`CP_SEARCH_FROM` tokens on, else 1.
    ep, etp : int, optional
        Expert- and expert-tensor-parallel degrees of a mixture-of-experts workload (a MoE preset
        such as ``deepseek-v3`` or a ``moe:`` spec, :mod:`models.studies.moe`): the expert layers
        fold each stage's ``tp x cp x dp`` GPUs as ``etp x ep x edp``. ``ep`` is searched over the
        divisors of the experts that divide the stage's GPUs, ``etp`` over 1 and ``tp``.
    cp_comm : str or CpExchange
        How context parallelism exchanges K/V: ``p2p`` (ring attention, default) or ``a2a``, a
        name or the object (:mod:`models.studies.planner.cp_exchange`, one of your own included).
    first_stage_layers, last_stage_layers : int
        Layers of the first / last pipeline stage (0: the even split); the rest split evenly.
    embedding_in_split, loss_in_split : bool
        Count the embedding / the output layer and loss as one layer each in the split
        (:func:`models.studies.planner.parallel.stage_split`). An interleaved layout whose layers
        do not split into ``pp x v`` chunks uses both when that divides.
    ep_overlap : str, EpOverlap or a list of them
        How expert-parallel all-to-alls overlap compute: ``none`` (default), ``batch`` or
        ``dualpipe``, a name or the object (:mod:`models.studies.planner.ep_overlap`); a list
        or tuple of them (``EP_OVERLAPS``: all): a mixture-of-experts workload's layouts are
        searched with each, every plan carrying its own (``ExpertParallelDetail.overlap``).
    expert_balance : float
        The busiest rank's routed tokens over the balanced share, >= 1 (1: force-balanced, as
        published benchmarks run).
    dispatch_dtype : str, optional
        The dispatch all-to-all's dtype (default: the training dtype's quantised copy for fp8,
        mxfp8 and nvfp4, else 16-bit); the combine is 16-bit.
    dispatcher : str or Dispatcher, optional
        How the expert layers dispatch and combine their tokens: ``flat`` (Megatron-Core's
        all-to-all) or ``hierarchical`` (DeepSeek-V3's, node-limited), a name or the object
        (:mod:`models.studies.planner.dispatcher`); default: what the workload's published
        software runs (hierarchical for group-limited routing, DeepSeek-V3; else flat).

    Raises
    ------
    PlanError, models.studies.workload.WorkloadError, models.studies.compute.UnsupportedDtypeError,
    topo.GpuSelectionError, models.engine.nccl.UnknownNcclVersionError
        :class:`NoLayoutError` (a PlanError) when every layout is refused (``skipped``).
    """
    options = {k: v for k, v in locals().items() if k not in ("workload", "G")}
    return ranked(*prepare_job(workload, G, **options), options)


def plan_order(p: Plan) -> tuple:
    """The planner's ranking of plans as a sort key: fitting first, then by step time, memory
    per GPU and the layout's label."""
    return (not p.fits, p.step_time, p.memory.total, p.layout.label())


def ranked(w, ctx: Context, n: int, global_batch: int, options: dict) -> Search:
    """Every layout of the prepared job, fitting ones first by step time."""
    skipped: list = []
    split = {"first": options.get("first_stage_layers", 0), "last": options.get("last_stage_layers", 0),
             "embedding_in_split": options.get("embedding_in_split", False),
             "loss_in_split": options.get("loss_in_split", False)}
    plans = []
    # every expert overlap asked for, of a mixture-of-experts workload (a dense one has no all-to-alls)
    for overlap in ctx.ep_overlaps if is_moe(w) else ctx.ep_overlaps[:1]:
        each = ctx if overlap is ctx.ep_overlap else ctx.with_overlap(overlap)
        found: list = []
        layouts = _layouts(each, n, options["tp"], options["pp"], options["dp"], options["zero"],
                           options["micro_batch"], global_batch, options["recompute"],
                           options["sequence_parallel"], options["virtual_stages"], found,
                           options.get("cp"), options.get("ep"), options.get("etp"), ctx.cp_comm, split)
        plans += [evaluate(each, layout, options["tp_groups"]) for layout in layouts]
        skipped += [s for s in found if s not in skipped]
    if not plans:
        raise NoLayoutError(w.name, n, ctx.fabric.name, tuple(skipped))
    plans.sort(key=plan_order)
    plans = simulate_plans(w, ctx, plans, options["simulate"], options["max_events"])
    return Search(tuple(plans), tuple(skipped))


def plan(workload: str | Workload, G: nx.DiGraph | PreparedFabric, **options: Any) -> Plan:
    """The best layout of a workload on a fabric (see :func:`search` for the options).

    Degrees given are fixed; the others are searched, and the fastest layout that fits is
    returned (the one that misses memory least when none fits: ``fits`` False, with the
    numbers in ``memory``).
    """
    check_options("plan", options)
    return best(search(workload, G, **options))


def search_options() -> dict:
    """:func:`search`'s options and their defaults."""
    return {name: p.default for name, p in inspect.signature(search).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


def check_options(caller: str, options: dict) -> None:
    """Refuse a keyword ``caller`` does not take, naming ``caller`` and the closest option."""
    known = search_options()
    unknown = sorted(set(options) - set(known))
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), known, n=1)
        raise UnknownOptionError(f"{caller}() got an unknown option {unknown[0]!r}"
                                 f"{f' (did you mean {close[0]!r}?)' if close else ''}: expected one of "
                                 f"{', '.join(known)}")


def best(result: Search) -> Plan:
    if result.best.fits:
        return result.best
    return min(result.plans, key=lambda p: p.memory.total / p.memory.capacity)

