"""One training step's components on the heaviest stage: the analytical first pass
(:func:`step_components`, the model of :mod:`models.studies.planner`'s docstring) and the same
components read from a simulated step (:func:`simulated_components`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

from ..compute import ComputeModel
from ..workload import CNN, DEFAULT_BUCKET, Workload, activation_bytes_per_element, dtype_bytes
from .gpu_memory import optimizer_pass_bytes, stage_parameters, state_bytes
from .records import (BubbleDetail, Component, ComputeDetail, DataParallelDetail, Layout, OptimizerDetail,
                      PipelineDetail, Plan, TensorParallelDetail)

__all__ = ["step_components", "DEFAULT_OVERLAP", "data_parallel_time", "gradient_bucket"]

#: Fraction of a backward (forward for ZeRO 3 gathers) that can hide data-parallel
#: communication: all of it by default (frameworks launch each bucket as soon as it is ready);
#: the last bucket is exposed regardless.
DEFAULT_OVERLAP = 1.0


def gradient_bucket(bucket: float, overlap: float) -> float:
    """The buffer the data-parallel collectives are sent in, for both passes (the first pass's
    :func:`data_parallel_time` and the simulated step graph): ``bucket`` when the communication
    overlaps the backward, one buffer (``math.inf``) at ``overlap`` 0, where the gradients are
    reduced once the backward is done, as Megatron-LM's local DDP without ``overlap_grad_reduce``
    does (megatron/core/distributed/distributed_data_parallel.py: no bucket size when not
    overlapping [U]). The default ``bucket`` is PyTorch DDP's 25 MiB
    (:data:`~models.studies.workload.DEFAULT_BUCKET`), not Megatron-Core's
    ``max(40,000,000, 1,000,000 x dp)`` elements [U]: it is the option's, stated as such. [bytes]

    >>> gradient_bucket(25 * 2**20, 0.5), gradient_bucket(25 * 2**20, 0)
    (26214400, inf)
    """
    return bucket if overlap > 0 else math.inf


def _bucketed(comm, collective, nbytes, bucket):
    """(total time, time of the last bucket) of ``nbytes`` sent in buckets. [s]"""
    if nbytes <= 0:
        return 0.0, 0.0
    if nbytes <= bucket:  # one buffer (an infinite bucket among them)
        t = comm(collective, nbytes)
        return t, t
    full = int(nbytes // bucket)
    rest = nbytes - full * bucket
    t_full = comm(collective, bucket) if full else 0.0
    t_rest = comm(collective, rest) if rest > 0 else 0.0
    return full * t_full + t_rest, (t_rest if rest > 0 else t_full)


def data_parallel_time(streams: Sequence, zero: int, overlap: float, fwd: float, bwd: float, m: int, bucket: float) -> tuple:
    """(time, exposed) of the data-parallel communication of one step (module docstring of
    :mod:`models.studies.planner`): ``streams`` are ``(comm, gradient bytes, parameter bytes)``,
    each ``comm(collective, nbytes)`` timing one collective on its groups (the dense gradients
    over the data-parallel groups, the experts' over the expert data-parallel ones), sent one
    after the other in buckets (the gradients' reductions and ZeRO 1/2's parameter all_gathers
    in buffers of :func:`gradient_bucket` bytes, one buffer at ``overlap`` 0; ZeRO 3's gathers
    before each pass in ``bucket`` bytes whatever the overlap, as the step graph gathers them
    layer by layer) and hidden behind the same backward (forward for ZeRO 3's gathers). [s]"""
    reduced = gradient_bucket(bucket, overlap)
    gathered = bucket if zero == 3 else reduced

    def total(collective, gather=False):
        times = [_bucketed(c, collective, params if gather else grads, gathered if gather else reduced)
                 for c, grads, params in streams]
        return sum(t for t, _ in times), max((last for _, last in times), default=0.0)

    window = overlap * bwd
    if zero == 0:
        ar, last_b = total("all_reduce")
        return ar, max(ar - window, last_b)
    rs, last_b = total("reduce_scatter")
    ag, _ = total("all_gather", gather=True)
    if zero in (1, 2):
        return rs + ag, max(rs - window, last_b) + ag
    fwd_hidden = overlap * fwd
    return 2 * m * ag + rs, m * (max(0.0, ag - fwd_hidden) + max(0.0, ag - window)) + max(rs - window, last_b)


def _pass(times) -> tuple:
    """(forward, backward) of timed ops. [s]"""
    return sum(t.forward for t in times), sum(t.backward for t in times)


def step_components(w: Workload, layout: Layout, cm: ComputeModel, comm: Callable[[str, str, float], float], *,
                    overlap: float = DEFAULT_OVERLAP, bucket: float = DEFAULT_BUCKET,
                    times: Callable[[tuple], tuple] | None = None) -> tuple:
    """The components of one step on the heaviest stage (module docstring).

    A pure function of the workload, the layout, the compute model and the communication:
    the fast first pass of a step, and what a simulator of the same step refines.

    Parameters
    ----------
    w : workload
    layout : Layout
    cm : models.studies.compute.ComputeModel
    comm : callable
        ``comm(dimension, collective, nbytes)``: the time of one collective of ``nbytes`` on the
        layout's ``"tp"``, ``"pp"`` or ``"dp"`` groups, all at once. [s]
    overlap : float
    bucket : float
        [bytes]
    times : callable, optional
        ``times(ops)``: ``cm.times(ops)`` (the default), or a memo of it (the planner keeps one
        per search: its layouts ask for the same few kernels again and again).

    Returns
    -------
    tuple of Component
        ``compute``, ``tp_comm``, ``pp_comm``, ``bubble``, ``dp_comm``, ``optimizer``.
    """
    times = cm.times if times is None else times
    elem, act = dtype_bytes(cm.dtype), activation_bytes_per_element(cm.dtype)
    tp, pp, dp, v = layout.tp, layout.pp, layout.dp, layout.virtual_stages
    b, m = layout.micro_batch, layout.micro_batches
    cnn = isinstance(w, CNN)
    if cnn:
        layer_ops, nl = w.layer_ops(b, 1, elem, act=act), 1
        first_ops, last_ops = (), ()
    else:
        layer_ops = w.layer_ops(b, tp, elem, sequence_parallel=layout.sequence_parallel, stack=cm.stack,
                                act=act)
        head = w.head_ops(b, tp, elem, act=act)
        first_ops, last_ops = head[:1], head[1:]
        nl = math.ceil(w.layers / pp)
    layer_times = times(tuple(layer_ops))
    lf, lb = _pass(layer_times)
    ff, fb = _pass(times(tuple(first_ops)))
    hf, hb = _pass(times(tuple(last_ops)))
    # The heaviest stage: the first holds the embedding, the last the head (one stage holds both).
    ef, eb = (ff + hf, fb + hb) if pp == 1 else max((ff, fb), (hf, hb), key=sum)
    fwd_layers = nl * lf
    fwd = fwd_layers + ef
    bwd = nl * lb + eb
    # what the layout's recomputation runs again before each layer's backward (full: its whole forward)
    rc = layout.recompute
    bwd += nl * _pass([t for t in layer_times if rc.recomputes(t.op.name)])[0]
    products = sum(t.forward for t in layer_times if t.op.kind != "memory")
    ideal = sum(t.ideal for t in layer_times if t.op.kind != "memory")
    # ---- tensor parallel, per micro-batch
    tp_bytes = 0.0 if cnn else float(b * w.seq * w.hidden * act)
    per_layer = 4 + rc.repeated(2)  # 2 forward, 2 backward, the forward's again before the backward
    t_tp = 0.0
    if tp > 1:
        if layout.sequence_parallel:
            one = comm("tp", "reduce_scatter", tp_bytes) + comm("tp", "all_gather", tp_bytes)
        else:
            one = comm("tp", "all_reduce", tp_bytes)
        t_tp = (per_layer * nl + 2) * one  # + embedding forward and its gradient
    # ---- pipeline
    sends = v * m + pp - 1
    t_pp_one = comm("pp", "sendrecv", tp_bytes / tp) if pp > 1 else 0.0
    pp_comm = 2 * sends * t_pp_one
    slot_time = fwd + bwd + t_tp
    bubble = (pp - 1) / v * slot_time
    # ---- data parallel
    first, last = stage_parameters(w, pp)
    local_params = max(first, last) / tp
    weight_elem, grad_elem, _ = state_bytes(cm.dtype)  # the gradients at their own bytes (fp32 for bf16)
    grad_bytes, param_bytes = local_params * grad_elem, local_params * weight_elem
    dp_time = dp_exposed = 0.0
    if dp > 1:
        def dp_comm(collective, nbytes):
            return comm("dp", collective, nbytes)

        dp_time, dp_exposed = data_parallel_time(((dp_comm, grad_bytes, param_bytes),), layout.zero, overlap, fwd,
                                                 bwd, m, bucket)
    # ---- optimizer
    opt_params = local_params / (dp if layout.zero >= 1 else 1)
    pass_bytes = optimizer_pass_bytes(cm.dtype)
    optimizer = cm.scale * opt_params * pass_bytes / (cm.gpu.memory_bandwidth * cm.memory_efficiency)
    compute = m * (fwd + bwd)
    collectives = ("reduce_scatter", "all_gather") if layout.sequence_parallel else ("all_reduce",)
    return (
        Component("compute", compute, compute, ComputeDetail(m, fwd, bwd, lf, products, ideal)),
        Component("tp_comm", m * t_tp, m * t_tp, TensorParallelDetail(tp, collectives, per_layer * nl + 2, tp_bytes)),
        Component("pp_comm", pp_comm, pp_comm, PipelineDetail(pp, sends, tp_bytes / tp)),
        Component("bubble", bubble, bubble, BubbleDetail(pp, v, m)),
        Component("dp_comm", dp_time, dp_exposed,
                  DataParallelDetail(dp, layout.zero, grad_bytes, bucket, overlap, param_bytes)),
        Component("optimizer", optimizer, optimizer, OptimizerDetail(opt_params, pass_bytes)),
    )


def simulated_components(p: Plan, result) -> tuple:
    """The components of a simulated step (:class:`Component`; ``exposed`` sums to the step).

    ``time``: the most one GPU spends in the kind (its tasks' durations, a send counting on both
    ends). ``exposed``: the kind's time on the simulation's critical path; compute is charged at
    most its busiest GPU's time, and the rest of the path (the pipeline's fill and drain, waits
    for a stream) is the ``bubble``.
    """
    busy: dict = {}
    for t in result.tasks:
        per_gpu = busy.setdefault(t.kind, {})
        for g in t.gpus:
            per_gpu[g] = per_gpu.get(g, 0.0) + t.duration
    time = {kind: max(per_gpu.values()) for kind, per_gpu in busy.items()}
    critical = result.critical_by_kind()
    exposed = {kind: critical.get(kind, 0.0) for kind in ("tp_comm", "cp_comm", "ep_comm", "pp_comm", "dp_comm",
                                                          "optimizer")}
    exposed["compute"] = min(critical.get("compute", 0.0), time.get("compute", 0.0))
    exposed["bubble"] = max(0.0, result.step_time - sum(exposed.values()))
    out = []
    for c in p.components:
        # The bubble is the rest of the critical path, and the data-parallel overlap the schedule's.
        detail = dataclasses.replace(c.detail, simulated=True) if c.name in ("bubble", "dp_comm") else c.detail
        t = exposed["bubble"] if c.name == "bubble" else time.get(c.name, 0.0)
        out.append(Component(c.name, t, exposed[c.name], detail))
    return tuple(out)
