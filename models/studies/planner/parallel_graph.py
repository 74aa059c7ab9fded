"""The task graph of a step with expert or context parallelism, a mixture-of-experts workload or
an uneven pipeline split (:func:`parallel_step_graph`), and the step graph of any plan
(:func:`plan_step_graph`, :func:`plan_step_graph_size`, :func:`check_plan_events`).

The schedule is :mod:`models.studies.stepgraph`'s (Megatron-LM's plain 1F1B, tensor-parallel
collectives per layer half, pipeline sends per tensor-parallel rank, data-parallel gradient
buckets as the last micro-batch's backward produces them, the optimizer's pass), with what the
analytical first pass (:mod:`models.studies.planner.parallel_step`) prices in closed form as
tasks sharing the fabric's links:

* the stages hold the layers of the plan's split (:func:`models.studies.planner.parallel.stage_split`:
  ``--first-stage-layers``, ``--last-stage-layers``, the embedding and loss accounted in the
  split), the last stage also the MTP modules as MoE layers; each layer's kernels are the first
  pass's (:func:`~models.studies.planner.parallel_step.layer_ops`, ``seq / cp`` tokens), timed by
  the plan's compute model; the embedding joins the first layer's work, the head and loss the
  last layer's, each with one tensor-parallel collective per pass as the first pass counts;
* a layer is its attention half (the projections and norms, then the attention core), a
  tensor-parallel collective, its FFN half and another collective (a MoE layer without shared
  experts has none after its FFN half, as the first pass counts). A MoE layer's FFN half is the
  router and permutation, the **dispatch** all-to-all over the expert-parallel group (the
  dispatch dtype's buffer, :func:`~models.studies.planner.parallel.dispatch_bytes`), with
  ``etp > 1`` an all_gather over the expert tensor-parallel group, the local experts' grouped
  GEMMs, a reduce_scatter, the **combine** all-to-all (16-bit), then the shared experts. The
  backward runs the same tasks with the backward's kernels, both all-to-alls at the combine's
  16 bits (the gradients), preceded by the forward's pair again with full recomputation;
  the backward's tasks keep the forward's order (the totals are the same) [U];
* the all-to-alls are :func:`models.predict.simulate.simulate` ``alltoall`` tasks: the per-peer
  flows of :func:`models.estimate`'s all-to-all on the links it charges them (NVLink inside the
  domain, then the network), sharing them with every other task;
* each stage runs its overlap's program (:meth:`~models.studies.planner.ep_overlap.EpOverlap.program`),
  unit by unit: a unit starts when the one before it has ended, its pipeline sends included (a
  Megatron-LM stage waits for its p2p exchanges [U]), and when its blocks' inputs have arrived.
  ``none``: 1F1B, a block a unit, the all-to-alls on the critical path; ``--ep-overlap batch``:
  ``2 (pp - 1 - s) + 1`` warm-up forwards, then a forward and another micro-batch's backward as
  one unit of two streams of work, so one micro-batch's all-to-alls run while the other's
  kernels use the GPU (a GPU still runs one kernel at a time), then the cool-down backwards;
* ``--ep-overlap dualpipe``: DeepSeek-V3's DualPipe instead of 1F1B
  (:mod:`~models.studies.planner.dualpipe`: each rank's program). Rank ``r`` runs stage ``r`` for
  the micro-batches fed at rank 0 and stage ``pp - 1 - r`` for those fed at rank ``pp - 1``
  (blocks ``p{r}.F{direction}.{micro-batch}``, ``B...``), each block sending to the next rank of
  its direction as it ends; an overlapped pair's forward and backward run as two streams of work;
  a backward whose weight gradient is deferred runs without it (each product's weight-gradient
  GEMM, :func:`~models.studies.planner.dualpipe.weight_gradients`) and a ``W`` task runs it later,
  in the program's place. Every stage's parameters are held by ranks ``r`` and ``pp - 1 - r``:
  their gradients are reduced over both ranks' data-parallel groups (twice the GPUs, both
  stages' bytes), after both copies' last backward (or ``W``), and each rank's optimizer updates
  both stages (sharded over both copies with ZeRO);
* context parallelism ``p2p``: the attention core of each layer runs in ``cp`` chunks; ring step
  ``k`` (every rank sends the K/V block of ``seq / cp`` tokens to the next rank of its ring,
  :func:`~models.studies.planner.cp_exchange.cp_ring_bytes`; K/V and their gradients backward, plus
  the forward's block again with full recomputation) runs beside chunk ``k``, and chunk ``k + 1``
  waits for it. ``a2a``: the attention core waits for the 4 all-to-alls
  (:func:`~models.studies.planner.cp_exchange.cp_a2a_bytes`) over the context-parallel group;
* data parallelism: the dense gradients over the ``dp x cp`` GPUs holding the same weights (the
  plan's ``dp`` groups), the experts' over the ``edp`` groups, each in buckets of ``bucket``
  bytes of gradients at their own bytes per parameter and the parameters gathered at theirs
  (:func:`~models.studies.planner.gpu_memory.state_bytes`, as the first pass); ZeRO 3 gathers
  both before each layer's forward and backward (one layer ahead).

Replicas run in lockstep (:func:`models.studies.stepgraph.step_graph`'s ``fold``): replica 0 of
every stage is built, the other ``dp x cp - 1`` replicas as images of its tasks; the all-to-alls,
ring sends and expert collectives that span replicas are built once for the groups holding
replica 0's GPUs, the other groups as their images. The replicas are taken as images of each
other even on hosts that differ [U].

Examples
--------
>>> import topo
>>> from models.studies.planner import plan
>>> G = topo.build("2xdgxh100")
>>> p = plan("mixtral-8x7b", G, tp=2, pp=1, ep=8, zero=1, global_batch=8, simulate=0)
>>> g = plan_step_graph(p, G)
>>> sorted({t.kind for t in g.tasks})
['compute', 'dp_comm', 'ep_comm', 'optimizer', 'tp_comm']
>>> plan_step_graph_size(p, fold=False) == sum(t.copies for t in g.tasks)
True
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Any

import networkx as nx

from topo.units import parse_count

from ...predict.simulate import MAX_EVENTS, SimulationResult, simulate
from ...predict.taskgraph import MAX_BYTES, TaskGraph
from ..compute import ComputeModel
from ..stepgraph import GraphBuilder, StepGraphError, TaskSink, check_step_events, checked_workload, flat_ids, folds, \
    is_extended_step, pipeline_sends, plan_compute, replica_slot, step_events, step_graph, \
    step_graph_size, step_workload, tp_collectives
from ..workload import DEFAULT_BUCKET, activation_bytes_per_element, dtype_bytes, \
    matmul_op, Workload
from .dualpipe import dualpipe_blocks, dualpipe_refusal, stage_of, weight_gradients
from .ep_overlap import EP_OVERLAPS, NO_OVERLAP, EpOverlap
from .gpu_memory import optimizer_pass_bytes, state_bytes
from .pair_overlap import LayerPass, by_part, layer_pass
from .parallel import stage_split
from .parallel_step import head_ops, is_moe, layer_kind, layer_ops, stage_parameters

__all__ = ["parallel_step_graph", "plan_step_graph", "plan_step_graph_size", "check_plan_events",
           "simulate_planned"]

#: One layer kind's kernel times in one pass, by part (the first pass's: :mod:`~models.studies.planner.pair_overlap`).
_Pass = LayerPass


def is_parallel_plan(plan: Any, w=None) -> bool:
    """A plan whose step :func:`parallel_step_graph` builds (expert or context parallelism, an
    uneven split, a MoE workload) rather than :func:`models.studies.stepgraph.step_graph`."""
    return is_extended_step(plan, w if w is not None else getattr(plan, "workload_spec", None))


@dataclass(frozen=True, slots=True)
class _Work:
    """The kernel times of a step (zero when only counted). [s]"""

    forward: dict  # layer kind -> _Pass
    backward: dict  # layer kind -> _Pass (recomputation included)
    first: tuple = (0.0, 0.0)  # the embedding (forward, backward)
    last: tuple = (0.0, 0.0)  # the head, loss and MTP projections (forward, backward)
    optimizer: tuple = ()  # per stage, the optimizer's pass
    weight: dict | None = None  # layer kind -> _Pass: the weight gradients' part of the backward
    last_weight: float = 0.0  # the head's weight gradient (the last stage)


def _checked(plan: Any, workload, bucket) -> Any:
    """The step graphs' one input check (:func:`models.studies.stepgraph.checked_workload`), and
    an expert overlap whose schedule is built."""
    w = checked_workload(plan, workload, bucket)
    overlap = _ep_overlap(plan)
    if not overlap.simulated:
        built = " or ".join(o.name for o in EP_OVERLAPS if o.simulated)
        raise StepGraphError(f"the plan overlaps its all-to-alls {type(overlap).__name__}'s way, which step graphs "
                             f"do not build (expected ep_overlap {built})")
    lay = plan.layout
    why = dualpipe_refusal(lay.pp, lay.micro_batches, lay.virtual_stages) if overlap.bidirectional else None
    if why is not None:
        raise StepGraphError(f"DualPipe's program cannot run {lay.label()}: {why}")
    return w


def _detail(plan: Any, name: str):
    for c in plan.components:
        if c.name == name:
            return c.detail
    return None


def _ep_overlap(plan: Any) -> EpOverlap:
    d = _detail(plan, "ep_comm")
    return d.overlap if d is not None else NO_OVERLAP


def _split(plan: Any, w) -> tuple:
    """Per stage, the layer kinds in model order (the MTP modules last on the last stage)."""
    lay = plan.layout
    split = stage_split(w.layers, lay.pp, 1, first=lay.first_stage_layers, last=lay.last_stage_layers,
                        embedding_in_split=lay.embedding_in_split, loss_in_split=lay.loss_in_split)
    out = []
    for s, held in enumerate(split.stages):
        kinds = [layer_kind(w, i) for i in held]
        if is_moe(w) and s == lay.pp - 1:
            kinds += [(False, False)] * w.mtp_layers
        out.append((held, tuple(kinds)))
    return tuple(out)


def _parts(timed, backward: bool) -> _Pass:
    return layer_pass(timed, backward)


def _weight_parts(cm: ComputeModel, timed) -> _Pass:
    """The weight gradients' part of a backward, by part (:func:`~models.studies.planner.dualpipe.weight_gradients`)."""
    return by_part((t.op.name, w) for t, w in zip(timed, weight_gradients(cm, timed)))


def _minus(a: _Pass, b: _Pass) -> _Pass:
    return a - b


def _work(plan: Any, w, cm: ComputeModel, stages) -> _Work:
    lay = plan.layout
    act = activation_bytes_per_element(cm.dtype)
    balance = _detail(plan, "ep_comm").balance if _detail(plan, "ep_comm") is not None else 1.0
    forward, backward, weight = {}, {}, {}
    recompute = lay.recompute
    for kind in {k for _, kinds in stages for k in kinds}:
        timed = cm.times(layer_ops(w, kind, lay, cm, act, balance))
        f, b = _parts(timed, False), _parts(timed, True)
        weight[kind] = _weight_parts(cm, timed)
        if recompute.whole_layer:  # the layer's forward again before its backward
            b = _Pass(*(x + y for x, y in zip((b.pre, b.attention, b.route, b.experts, b.rest),
                                              (f.pre, f.attention, f.route, f.experts, f.rest))))
        else:  # the kernels the recomputation runs again (selective: the attention core)
            again = _parts([t for t in timed if recompute.recomputes(t.op.name)], False)
            b = _Pass(*(x + y for x, y in zip((b.pre, b.attention, b.route, b.experts, b.rest),
                                              (again.pre, again.attention, again.route, again.experts, again.rest))))
        forward[kind], backward[kind] = f, b
    first_ops, last_ops = head_ops(w, lay, cm, act)
    ff = sum(t.forward for t in cm.times(first_ops))
    fb = sum(t.backward for t in cm.times(first_ops))
    timed_last = cm.times(last_ops)
    mtp = w.mtp_layers if is_moe(w) else 0
    hf = sum(t.forward for t in timed_last) * (1 + mtp)
    hb = sum(t.backward for t in timed_last) * (1 + mtp)
    hw = sum(astuple(_weight_parts(cm, timed_last))) * (1 + mtp)
    if mtp:  # the MTP modules' 2h -> h projections
        tokens = lay.micro_batch * (w.seq // lay.cp)
        proj = cm.times((matmul_op("mtp_projection", tokens, w.hidden, 2 * w.hidden, dtype_bytes(cm.dtype)),))
        hf += mtp * sum(t.forward for t in proj)
        hb += mtp * sum(t.backward for t in proj)
        hw += mtp * sum(astuple(_weight_parts(cm, proj)))
    optimizer = []
    for s, (held, _) in enumerate(stages):
        dense, experts = stage_parameters(w, held, s, lay.pp)
        local = (dense / lay.tp / (lay.dp * lay.cp if lay.zero >= 1 else 1)
                 + experts / (lay.etp * lay.ep) / (lay.edp if lay.zero >= 1 else 1))
        optimizer.append(cm.scale * local * optimizer_pass_bytes(cm.dtype)
                         / (cm.gpu.memory_bandwidth * cm.memory_efficiency))
    return _Work(forward, backward, (ff, fb), (hf, hb), tuple(optimizer), weight, hw)


def _spanning(groups, stage_gpus, replica0) -> tuple:
    """The groups of one stage that hold a GPU of replica 0, each with its images: the stage's
    other groups, dealt out in turn (the replicas run in lockstep)."""
    mine = [tuple(g) for g in groups if g[0] in stage_gpus and set(g) & replica0]
    others = [tuple(g) for g in groups if g[0] in stage_gpus and not set(g) & replica0]
    return tuple((g, tuple(others[k::len(mine)])) for k, g in enumerate(mine)) if mine else ()


@dataclass(frozen=True, slots=True)
class _AttentionTasks:
    """The tasks a context-parallel exchange builds one layer's attention core from
    (:class:`~models.studies.planner.cp_exchange.AttentionTasks`), on the layer's group."""

    out: TaskSink
    lid: str  # the layer's task id prefix
    group: tuple  # its tensor-parallel group (replica 0's)
    ring_sends: list  # replica 0's ring sends and their images
    cp_groups: tuple  # the context-parallel groups holding replica 0's GPUs, with their images
    collective: Any  # (prefix, op, spanning groups, nbytes, after, kind) -> the last id

    def compute(self, suffix: str, seconds: float, after: tuple) -> str:
        return self.out.add(f"{self.lid}.{suffix}", "compute", self.group, seconds=seconds, after=after,
                            kind="compute", fold=True)

    def ring_send(self, suffix: str, nbytes: float, after: tuple) -> tuple:
        return tuple(self.out.add(f"{self.lid}.{suffix}.{r}", "send", pair, nbytes=nbytes, after=after,
                                  kind="cp_comm", images=images) for r, (pair, images) in enumerate(self.ring_sends))

    def alltoall(self, prefix: str, nbytes: float, after) -> str:
        return self.collective(f"{self.lid}.{prefix}", "alltoall", self.cp_groups, nbytes, after, "cp_comm")


def _schedule(out: TaskSink, plan: Any, w, stages, work: _Work | None, *, bucket: float, shape_only: bool) -> None:
    """Add one step's tasks to ``out`` (the module docstring's schedule), replica 0 of every stage
    with its images. ``shape_only``: the forward (backward) blocks after the first (last) of a
    stage are counted as copies of it."""
    lay = plan.layout
    tp, pp, m, width = lay.tp, lay.pp, lay.micro_batches, lay.dp * lay.cp
    act = activation_bytes_per_element(plan.dtype)
    weight_elem, grad_elem, _ = state_bytes(plan.dtype)  # the gradients at their own bytes (fp32 for bf16)
    slot = replica_slot(plan)
    tokens = lay.micro_batch * (w.seq // lay.cp)
    tp_bytes = float(tokens * w.hidden * act)
    sp = lay.sequence_parallel and tp > 1
    full = lay.recompute.whole_layer
    ep_detail = _detail(plan, "ep_comm")
    disp = ep_detail.dispatch_bytes if ep_detail is not None else 0.0
    comb = ep_detail.combine_bytes if ep_detail is not None else 0.0
    strategy = _ep_overlap(plan)
    bidirectional = strategy.bidirectional
    cp, exchange = lay.cp, lay.cp_comm
    cp_bytes = exchange.buffers(w, lay.micro_batch, cp, tp, act) if cp > 1 else ()
    zero_pass = _Pass()
    groups = plan.groups
    stage_sets = [frozenset(g for j in range(width) for g in slot(p, j)) for p in range(pp)]
    replica0 = [frozenset(slot(p, 0)) for p in range(pp)]

    def span(name, p):
        return _spanning(groups.get(name, ()), stage_sets[p], replica0[p])

    # the dispatcher's all-to-alls of one dispatch, side by side (flat: one over the ep groups)
    legs = (ep_detail.legs if ep_detail is not None else ()) or (("ep", 1.0),)
    ep_groups = [{name: span(name, p) for name, _ in legs} if lay.ep > 1 else {} for p in range(pp)]
    etp_groups = [span("etp", p) if lay.etp > 1 else () for p in range(pp)]
    # the exchange's all-to-all groups and rings of each context-parallel group (the ring: the group)
    cp_all = groups.get("cp", ()) if cp > 1 else ()
    a2a_all = tuple(x for g in cp_all for x in exchange.alltoall_groups(g))
    rings_all = tuple(r for g in cp_all for r in exchange.ring_groups(g))
    cp_groups = [_spanning(a2a_all, stage_sets[p], replica0[p]) if cp > 1 else () for p in range(pp)]
    # Ring sends of replica 0 (its rank 0 of each ring) to the next rank, the others' sends as images.
    ring_sends = []
    for p in range(pp):
        sends = []
        rings = [r for r in rings_all if r[0] in stage_sets[p] and len(r) > 1]
        mine = [(r[0], r[1]) for r in rings if r[0] in replica0[p]]
        if mine:
            others = [(r[k], r[(k + 1) % len(r)]) for r in rings for k in range(len(r))
                      if (r[k], r[(k + 1) % len(r)]) not in mine]
            sends = [(pair, tuple(others[k::len(mine)])) for k, pair in enumerate(mine)]
        ring_sends.append(sends)
    # the gradients' groups (dp x cp) of replica 0's GPUs, the experts' (edp) of the stage
    dp_groups = [[tuple(g) for g in groups["dp"] if set(g) & replica0[p]] for p in range(pp)]
    edp_groups = [[tuple(g) for g in groups.get("edp", ()) if g[0] in stage_sets[p]] if is_moe(w) else []
                  for p in range(pp)]
    if bidirectional:  # ranks p and pp - 1 - p hold the same two stages: their gradients are summed over both
        dp_groups, edp_groups = _paired_groups(slot, pp, width, dp_groups, edp_groups)
    if width == 1 and not bidirectional:
        dp_groups = [[] for _ in range(pp)]
    if not any(len(g) > 1 for gs in edp_groups for g in gs):
        edp_groups = [[] for _ in range(pp)]
    layer_params = {}  # layer kind -> (dense, expert) parameters of one layer on one GPU
    for kind in {k for _, kinds in stages for k in kinds}:
        d, e = stage_parameters(w, (0,) if kind[0] else (w.dense_layers,), 1, 3) if is_moe(w) else \
            (w.layer_parameters, 0.0)
        layer_params[kind] = (d / tp, e / (lay.etp * lay.ep))

    def tp_comm(prefix, group, after, count) -> str:
        return tp_collectives(out, prefix, group, after, count, nbytes=tp_bytes, sequence_parallel=sp, fold=True)

    def collective(prefix, op, spanning, nbytes, after, kind) -> str:
        """One collective per group holding replica 0's GPUs (the others as images); the last id."""
        ids = tuple(out.add(f"{prefix}{k}", op, g, nbytes=nbytes, after=(after,), kind=kind, images=images)
                    for k, (g, images) in enumerate(spanning))
        return ids or after

    def ep_alltoall(prefix, p, nbytes, after):
        """One dispatch (or combine) of ``nbytes`` per rank on stage ``p``: the dispatcher's legs
        after ``after``, side by side; what the next task waits for."""
        if not ep_groups[p]:
            return after
        return flat_ids(tuple(collective(prefix if name == "ep" else f"{prefix}{name}.", "alltoall", ep_groups[p][name],
                                         nbytes * scale, after, "ep_comm") for name, scale in legs))

    def zero3_gather(prefix, p, kind, after) -> list:
        d_params, e_params = layer_params[kind]
        ids = [out.add(f"{prefix}.zg{k}", "all_gather", g, nbytes=d_params * weight_elem, after=(after,),
                       kind="dp_comm") for k, g in enumerate(dp_groups[p])]
        if e_params:
            ids += [out.add(f"{prefix}.ze{k}", "all_gather", g, nbytes=e_params * weight_elem, after=(after,),
                            kind="dp_comm") for k, g in enumerate(edp_groups[p])]
        return ids

    def block(p, s, fwd, base, prev, gate, *, deferred=False, grads=None):
        """One forward or backward of stage ``s``'s layers on rank ``p``'s GPUs after ``prev`` and
        ``gate``; ``deferred``: a backward without its weight gradients; ``grads``: a list the
        layers' ends are added to (the last backward). The last id."""
        group = slot(p, 0)
        held, kinds = stages[s]
        nl = len(kinds)
        last_stage, first_stage = s == pp - 1, s == 0
        last = prev
        ahead = last
        indices = range(nl) if fwd else reversed(range(nl))
        for li in indices:
            kind = kinds[li]
            lid = f"{base}.l{li}"
            times = (work.forward if fwd else work.backward).get(kind, zero_pass) if work else zero_pass
            if deferred and work:
                times = _minus(times, work.weight[kind])
            zg = []
            if lay.zero == 3 and (width > 1 or bidirectional):
                zg = zero3_gather(lid, p, kind, ahead)
                ahead = last
            extra = 0.0
            if first_stage and li == 0 and work:
                extra += work.first[0 if fwd else 1]
            if last_stage and li == nl - 1 and work:
                extra += work.last[0 if fwd else 1] - (work.last_weight if deferred else 0.0)
            # the attention half
            recount = 1 + (not fwd and full)
            head_tp = (first_stage and li == 0) + (last_stage and li == nl - 1)
            if cp > 1:  # the exchange builds the attention core
                last = out.add(f"{lid}.c0", "compute", group, seconds=times.pre + extra,
                               after=(last, *gate, *zg), kind="compute", fold=True)
                tasks = _AttentionTasks(out, lid, group, ring_sends[p], cp_groups[p], collective)
                last = exchange.attention_tasks(tasks, cp_bytes, times.attention, cp, last, forward=fwd,
                                                full=full)
            else:
                last = out.add(f"{lid}.c0", "compute", group, seconds=times.pre + times.attention + extra,
                               after=(last, *gate, *zg), kind="compute", fold=True)
            gate, zg = [], []
            last = tp_comm(f"{lid}.h0", group, last, recount)
            dense = kind[0]
            if dense:
                last = out.add(f"{lid}.c1", "compute", group, seconds=times.route + times.experts + times.rest,
                               after=(last,), kind="compute", fold=True)
            else:
                last = out.add(f"{lid}.route", "compute", group, seconds=times.route, after=(last,),
                               kind="compute", fold=True)
                pairs = [(disp, comb)] if fwd else ([(disp, comb)] if full else []) + [(comb, comb)]
                for x, (d_bytes, c_bytes) in enumerate(pairs):
                    last = ep_alltoall(f"{lid}.dispatch{x}.", p, d_bytes, last)
                    if lay.etp > 1:
                        last = collective(f"{lid}.etpag{x}.", "all_gather", etp_groups[p], c_bytes * lay.etp,
                                          last, "ep_comm")
                    if x == len(pairs) - 1:
                        last = out.add(f"{lid}.experts", "compute", group, seconds=times.experts,
                                       after=(last,), kind="compute", fold=True)
                    if lay.etp > 1:
                        last = collective(f"{lid}.etprs{x}.", "reduce_scatter", etp_groups[p],
                                          c_bytes * lay.etp, last, "ep_comm")
                    last = ep_alltoall(f"{lid}.combine{x}.", p, c_bytes, last)
                if times.rest or w.shared_experts:
                    last = out.add(f"{lid}.c1", "compute", group, seconds=times.rest, after=(last,),
                                   kind="compute", fold=True)
            ffn_tp = recount if (dense or (is_moe(w) and w.shared_experts)) else 0
            last = tp_comm(f"{lid}.h1", group, last, ffn_tp + head_tp)
            if grads is not None:
                grads.append((kind, last))
        return last

    last_grads: dict = {}  # (stage, rank) -> the last backward's layer ends, in its order
    stage_end = {}
    if bidirectional:
        stage_end = _bidirectional(out, plan, stages, work, block, last_grads, tp_bytes / tp, shape_only)
    for p in range(pp if not bidirectional else 0):
        group = slot(p, 0)
        last_stage = p == pp - 1
        if shape_only:  # every forward (backward) block of a stage has the first (last) one's tasks
            units = ((("F", 0),), (("B", m - 1),))
        else:
            units = strategy.program(pp, p, m)
        done: tuple = ()  # the ends of the unit before (its blocks and their sends)
        blocks = {}
        for unit in units:
            # a unit starts when the one before it has ended, its sends included (Megatron-LM's
            # p2p exchanges wait for their sends and receives [U]), and when every block of it has
            # received its input (a pair's forward and backward start together)
            gate = []
            for what, i in unit:
                if what == "F" and p > 0:
                    gate += [f"p{p - 1}.F{i}.send{r}" for r in range(tp)]
                if what == "B" and not last_stage:
                    gate += [f"p{p + 1}.B{i}.send{r}" for r in range(tp)]
            ends = []
            for what, i in unit:
                block_start = out.count
                base = f"p{p}.{what}{i}"
                fwd = what == "F"
                last = block(p, p, fwd, base, done, gate,
                             grads=last_grads.setdefault((p, p), []) if not fwd and i == m - 1 else None)
                ends.append(last)
                to = (p + 1 if fwd else p - 1)
                if 0 <= to < pp:
                    pipeline_sends(out, base, group, slot(to, 0), tp_bytes / tp, last, fold=True)
                    ends += [f"{base}.send{r}" for r in range(tp)]
                blocks[what] = out.count - block_start
            done = flat_ids(tuple(ends))
        if shape_only:
            out.count += (m - 1) * sum(blocks.values())
        stage_end[p] = done
    # data-parallel gradient buckets: the dense part over dp x cp, the experts over edp; with
    # DualPipe, both copies of a stage's (ranks p and pp - 1 - p) over both ranks' groups
    collective_op = "all_reduce" if lay.zero == 0 else "reduce_scatter"
    units = [((p, pp - 1 - p), (p, pp - 1 - p)) for p in range(pp // 2)] if bidirectional else \
        [((p,), (p,)) for p in range(pp)]
    for ranks, held_stages in units:
        p = ranks[0]
        ready_parts = []  # per stage: (layer kind, the ids its gradient waits for), in the backward's order
        dense_total = expert_total = 0.0
        for s in held_stages:
            lists = [last_grads.get((s, r), []) for r in ranks]
            ready_parts.append([(kind, flat_ids(tuple(other[k][1] for other in lists)))
                                for k, (kind, _) in enumerate(lists[0])])
            d_total, e_total = stage_parameters(w, stages[s][0], s, pp)
            dense_total += d_total
            expert_total += e_total
        end = flat_ids(tuple(stage_end[r] for r in ranks))
        streams = []
        for name, groups_p, index, total, share in (
                ("d", dp_groups[p], 0, dense_total, tp),
                ("e", edp_groups[p], 1, expert_total, lay.etp * lay.ep)):
            if not groups_p or not total:
                continue
            extra = (total / share - sum(layer_params[kind][index] for part in ready_parts for kind, _ in part)) \
                * grad_elem
            buckets, filled = [], 0.0
            for part in ready_parts:
                for kind, done in part:
                    filled += layer_params[kind][index] * grad_elem
                    if filled >= bucket:
                        buckets.append((filled, done))
                        filled = 0.0
                if bidirectional and filled > 0 and part is not ready_parts[-1]:  # a bucket holds one stage's
                    buckets.append((filled, part[-1][1]))
                    filled = 0.0
            filled += max(0.0, extra)
            if filled > 0:
                buckets.append((filled, end))
            streams.append((name, groups_p, buckets))
        prev: dict = {}
        for name, groups_p, buckets in streams:
            for k, (nbytes, done) in enumerate(buckets):
                for r, g in enumerate(groups_p):
                    prev[name, r] = out.add(f"p{p}.{name}bucket{k}.r{r}", collective_op, g, nbytes=nbytes,
                                            after=(done, prev.get((name, r), "")), kind="dp_comm")
        done_all = list(prev.values())
        opts = []
        for rank in ranks:
            seconds = 0.0
            if work:  # both copies' optimizer state, sharded over both copies' GPUs with ZeRO
                seconds = sum(work.optimizer[s] for s in held_stages) / (len(ranks) if lay.zero >= 1 else 1)
            opts.append(out.add(f"p{rank}.opt", "compute", slot(rank, 0), seconds=seconds,
                                after=(stage_end[rank], *done_all), kind="optimizer", fold=True))
        if lay.zero in (1, 2):
            for name, groups_p, buckets in streams:
                total = sum(nb for nb, _ in buckets) / grad_elem * weight_elem  # the same parameters
                for r, g in enumerate(groups_p):
                    out.add(f"p{p}.{name}params.r{r}", "all_gather", g, nbytes=total, after=tuple(opts),
                            kind="dp_comm")


def _paired_groups(slot, pp, width, dp_groups, edp_groups) -> tuple:
    """DualPipe's gradient groups: rank ``p``'s groups joined with their images on rank ``pp - 1
    - p`` (the GPUs at the same place of the other rank, which hold the same two stages)."""
    dp_out, edp_out = [], []
    for p in range(pp):
        q = pp - 1 - p
        mirror = {g: h for j in range(width) for g, h in zip(slot(p, j), slot(q, j))}
        own = [next((g for g in dp_groups[p] if x in g), (x,)) for x in slot(p, 0)]
        dp_out.append([tuple(g) + tuple(mirror[x] for x in g) for g in own])
        experts = edp_groups[p] or [(x,) for j in range(width) for x in slot(p, j)]
        edp_out.append([tuple(g) + tuple(mirror[x] for x in g) for g in experts])
    return dp_out, edp_out


def _bidirectional(out: TaskSink, plan: Any, stages, work: _Work | None, block, last_grads: dict, send_bytes: float,
                   shape_only: bool) -> dict:
    """DualPipe's blocks (:mod:`~models.studies.planner.dualpipe`): every rank's program, its
    pairs as two streams of work, each block's sends to the next rank of its direction as it
    ends, a deferred weight gradient as one task after its backward. ``shape_only``: a block
    of a (rank, kind, direction) walked before is counted as its copy. The ids that end each
    rank's program."""
    lay = plan.layout
    pp, m, tp = lay.pp, lay.micro_batches, lay.tp
    slot = replica_slot(plan)
    last = m // 2 - 1  # the last micro-batch of a direction
    counted: dict = {}

    def run(r, op, after, source):
        s = stage_of(pp, r, op.direction)
        base = f"p{r}.{op.kind}{op.direction}.{op.micro_batch}"
        flow = 1 if op.direction == 0 else -1
        key = (r, op.kind, op.direction)
        if shape_only and key in counted and op.micro_batch != last:
            out.count += counted[key]
            return (base,)
        start = out.count
        if op.kind == "W":
            _, kinds = stages[s]
            seconds = 0.0
            if work:
                seconds = sum(sum(astuple(work.weight[k])) for k in kinds) + (work.last_weight if s == pp - 1 else 0.0)
            done = out.add(base, "compute", slot(r, 0), seconds=seconds, after=after, kind="compute", fold=True)
            if op.micro_batch == last:
                last_grads[(s, r)] = [(k, done) for k in reversed(kinds)]
            counted[key] = out.count - start
            return (done,)
        gate = () if source is None else tuple(
            f"p{source[0]}.{source[1].kind}{source[1].direction}.{source[1].micro_batch}.send{k}" for k in range(tp))
        fwd = op.kind == "F"
        grads = last_grads.setdefault((s, r), []) if not fwd and op.micro_batch == last and not op.deferred else None
        end = block(r, s, fwd, base, after, gate, deferred=op.deferred, grads=grads)
        to = r + flow if fwd else r - flow
        if 0 <= to < pp:
            pipeline_sends(out, base, slot(r, 0), slot(to, 0), send_bytes, end, fold=True)
        counted[key] = out.count - start
        return flat_ids((end,))

    return dualpipe_blocks(pp, m, run)


def _maps(plan: Any) -> list:
    slot, lay = replica_slot(plan), plan.layout
    return [{g: h for p in range(lay.pp) for g, h in zip(slot(p, 0), slot(p, j))}
            for j in range(1, lay.dp * lay.cp)]


def parallel_step_graph(plan: Any, G: nx.DiGraph, *, workload: str | Workload | None = None,
                        bucket: float = DEFAULT_BUCKET, compute: ComputeModel | None = None,
                        max_events: int | None = None) -> TaskGraph:
    """The task graph of one step of a plan with expert or context parallelism, a MoE workload or
    an uneven split (module docstring), folded (replica 0 and its images).

    Parameters
    ----------
    plan : Plan
        From :func:`models.studies.planner.plan` on ``G``.
    G : networkx.DiGraph
    workload : optional
        The workload, when the plan does not carry it (``plan.workload_spec``).
    bucket : float
        Data-parallel gradient bucket. [bytes]
    compute : models.studies.compute.ComputeModel, optional
        Time the kernels by this compute model (the planner passes its own); default the plan's
        GPU part, dtype, software stack and calibrated scale.
    max_events : int, optional
        Refuse a graph whose simulation would take more than this many events, counted before
        anything is built (:func:`check_plan_events`). None: no limit.

    Raises
    ------
    StepGraphError
        A plan that does not fit, a CNN, interleaved stages, a bucket below one byte, an expert
        overlap whose schedule is not built, DualPipe on a pipeline its program cannot run.
    topo.LimitError
        Beyond ``max_events`` (keyword ``max_events``), before the graph is built.
    """
    w = _checked(plan, workload, bucket)
    if max_events is not None:
        check_plan_events(plan, max_events, workload=w, bucket=bucket)
    lay = plan.layout
    cm = compute if compute is not None else plan_compute(plan, G, w)
    stages = _split(plan, w)
    out = GraphBuilder(_maps(plan))
    _schedule(out, plan, w, stages, _work(plan, w, cm, stages), bucket=bucket, shape_only=False)
    return TaskGraph(tuple(out.tasks), f"{plan.workload} {lay.label()}")


def _size(plan: Any, w, bucket: float) -> int:
    out = TaskSink(_maps(plan), build=False)
    _schedule(out, plan, w, _split(plan, w), None, bucket=bucket, shape_only=True)
    return out.count


def plan_step_graph(plan: Any, G: nx.DiGraph, **options: Any) -> TaskGraph:
    """The task graph of any plan's step: :func:`parallel_step_graph` for expert or context
    parallelism, a MoE workload or an uneven split, else :func:`models.studies.stepgraph.step_graph`
    (``options`` are theirs; ``fold`` is the dense graph's only)."""
    if is_parallel_plan(plan, step_workload(plan, options.get("workload"))):
        options.pop("fold", None)
        for dense_only in ("efficiency", "attention_efficiency", "memory_efficiency"):
            options.pop(dense_only, None)
        return parallel_step_graph(plan, G, **options)
    return step_graph(plan, G, **options)


def plan_step_graph_size(plan: Any, *, workload: str | Workload | None = None, bucket: float = DEFAULT_BUCKET,
                         fold: bool = True, G: nx.DiGraph | None = None) -> int:
    """Tasks the step graph of a plan has (:func:`plan_step_graph`), counted without building it;
    ``fold=False``: every folded image counted (the events :func:`models.predict.simulate.simulation_size`
    sizes, over three). With the fabric ``G``, a dense plan is counted as :func:`plan_step_graph`
    builds it there: unfolded where its replicas' hosts are not copies (:func:`~models.studies.stepgraph.folds`).
    0 for a plan that is no step graph."""
    try:
        w = step_workload(plan, workload)
        if not is_parallel_plan(plan, w):
            fold = fold and (G is None or folds(plan, G))
            return step_graph_size(plan, workload=workload, bucket=bucket, fold=fold)
        w = _checked(plan, workload, bucket)
    except StepGraphError:
        return 0
    if not fold:
        return _size(plan, w, bucket)
    out = TaskSink(build=False, images=False)
    _schedule(out, plan, w, _split(plan, w), None, bucket=bucket, shape_only=True)
    return out.count


def check_plan_events(plan: Any, max_events: int, *, workload: str | Workload | None = None,
                      bucket: float = DEFAULT_BUCKET) -> int:
    """The events a simulation of a plan's step takes (three per task built, a folded image adds
    none: :func:`models.predict.simulate.simulation_size`), counted without building it
    (:func:`plan_step_graph_size`, folded); refused beyond ``max_events``
    (:func:`models.studies.stepgraph.check_step_events` for a dense plan).

    Raises
    ------
    topo.LimitError
        Beyond ``max_events`` (keyword ``max_events``): it names the tasks, the events and the limit.
    """
    w = step_workload(plan, workload)
    if not is_parallel_plan(plan, w):
        return check_step_events(plan, max_events, workload=workload, bucket=bucket)
    max_events = parse_count(max_events, name="max_events", maximum=MAX_BYTES)
    return step_events(plan_step_graph_size(plan, workload=w, bucket=bucket), max_events)


def simulate_planned(plan: Any, G: nx.DiGraph, *, bucket: float = DEFAULT_BUCKET,
                     workload: str | Workload | None = None, **options: Any) -> SimulationResult:
    """Simulate one step of any plan (:func:`plan_step_graph`, then :func:`models.predict.simulate.simulate`)."""
    budget = options.get("max_events", MAX_EVENTS)
    return simulate(G, plan_step_graph(plan, G, bucket=bucket, workload=workload, max_events=budget), **options)
