"""The step and memory of a layout with context or expert parallelism, or an uneven pipeline split
(:func:`parallel_components`, :func:`parallel_memory`): the analytical first pass of
:func:`models.studies.planner.step.step_components` stage by stage, for dense and
mixture-of-experts transformers.

Per micro-batch on each stage (the heaviest, compute and exposed communication, sets the step):

* compute: every layer's kernels (:meth:`models.studies.moe.MoeTransformer.layer_ops`: attention,
  router, permutation, the grouped GEMMs of the ``experts / ep`` local experts, shared experts;
  a dense transformer's :meth:`~models.studies.workload.Transformer.layer_ops`) on ``seq / cp``
  tokens, the attention core over the whole sequence's keys (load-balanced chunks: each rank does
  ``1 / cp`` of the causal work); the embedding on the first stage, the head, its loss and the MTP
  modules on the last;
* ``tp_comm``: as the dense planner, on ``seq / cp`` tokens: 4 collectives per dense layer (6
  with full recomputation), 2 per MoE layer's attention (4 with shared experts) and 2 for the
  embedding or head the stage holds;
* ``cp_comm`` (:mod:`~models.studies.planner.cp_exchange`): ``p2p``: per attention layer ``cp - 1``
  ring steps each way, a K/V block forward and K/V with their gradients backward, each hidden
  behind ``1 / cp`` of the attention kernel; exposed what exceeds it. ``a2a``: 4 all-to-alls
  forward and 4 backward, exposed; ``a2a+p2p``: those all-to-alls over the inner groups of ``a``
  and the ring over the outer groups of ``p``;
* ``ep_comm``: per MoE layer, dispatch (the dispatch dtype) and combine (16-bit) all-to-alls
  forward, their two gradients (16-bit) backward, again forward with full recomputation; with
  ``etp > 1`` an all_gather and a reduce_scatter of the routed tokens over the expert
  tensor-parallel group each way. Exposed: all of it (``none``), or what the GPU idles while a
  forward block runs beside the paired stage's backward block (``batch``: the same stage;
  ``dualpipe``: stage ``pp - 1 - s``), the two walked phase by phase as the step graph runs them,
  one kernel and one all-to-all at a time (:mod:`~models.studies.planner.pair_overlap`), plus all
  of it for the blocks a schedule runs alone (:mod:`~models.studies.planner.ep_overlap`);
* ``pp_comm`` and ``bubble``: 1F1B (interleaved) as the step graph runs it: a rank waits for its
  sends (a forward's and a backward's from a middle rank, one from an end, each chunk's), the
  busiest rank's for all ``m`` micro-batches and the others' for the pipeline's fill and drain;
  the bubble is ``(p - 1) / v`` slots of the other ranks' (their mean micro-batch with its
  all-to-alls exposed: the fill's forward and the drain's backward run alone), the textbook
  ``(m - 1) max t + sum t`` of a pipeline of unequal stages, 1F1B's ``(p - 1) / v`` slots when
  they are equal; batch overlap's warm-up and cool-down blocks (``2 (pp - 1 - s) + 1`` each)
  run alone; DualPipe hides the sends and leaves the report's bubble (DeepSeek-V3 Technical
  Report, arXiv 2412.19437, table 2: ``(PP/2 - 1)(F&B + B - 3W)`` against 1F1B's
  ``(PP - 1)(F + B)``), ``F&B`` the slot, ``W`` the backward's weight gradients (:func:`~models.studies.planner.dualpipe.weight_gradients`)
  and ``B`` the rest of it;
* ``dp_comm``: the dense gradients over the ``dp x cp`` GPUs holding the same weights, the
  experts' over the ``edp`` GPUs holding the same experts (:func:`~models.studies.planner.step.data_parallel_time`);
  with DualPipe, both stages of the busiest rank over both copies' groups (``"dp_copies"``,
  ``"edp_copies"``: twice the GPUs), as the step graph reduces them;
* ``optimizer``: the local parameters' Adam pass (DualPipe: both stages', sharded over both copies
  with ZeRO).

Memory per GPU: the stage's weights, gradients and optimizer state (bytes per parameter:
:func:`~models.studies.planner.gpu_memory.state_bytes`; experts over ``etp x ep``,
ZeRO sharding the dense part over ``dp x cp`` and the experts over ``edp``; ZeRO 3 also holds two
whole layers gathered; DualPipe keeps two copies of the weights, of their gradients and optimizer
state, ZeRO sharding them over both copies' GPUs), activations of the micro-batches in flight
(``pp - stage`` in 1F1B, one more with DualPipe, ``2 (pp - stage)`` with batch overlap's longer
warm-up) for ``seq / cp`` tokens (a low-precision cache's tensors at
:func:`~models.studies.planner.gpu_memory.cached_bytes`: fp8 in DeepSeek-V3's 1 x 128 tiles with
their fp32 scales) and fp32 logits on the last stage.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from types import MappingProxyType

from ..moe import stage_parameters as moe_stage_parameters
from ..workload import activation_bytes_per_element, dtype_bytes, matmul_op, memory_op, with_seq_length
from .gpu_memory import cached_bytes, held_parameters, optimizer_pass_bytes, state_bytes
from .dispatcher import FLAT_DISPATCH, Dispatcher
from .dualpipe import weight_gradients
from .ep_overlap import NO_OVERLAP, EpOverlap
from .pair_overlap import ATTENTION_OPS, block_segments, layer_pass
from .parallel import PipelineSplit, dispatch_bytes
from ..recomputation import NO_RECOMPUTE, SELECTIVE, Recompute, as_recompute
from .records import (BubbleDetail, Component, ComputeDetail, ContextParallelDetail, DataParallelDetail,
                      ExpertParallelDetail, Layout, Memory, OptimizerDetail, PipelineDetail, TensorParallelDetail)
from .step import data_parallel_time

# The planner's evaluation calls these; a user calls :func:`models.studies.planner.plan`.
__all__: tuple[str, ...] = ()

#: A :class:`_Stage` field a rank running several stages averages over them (its times); the others
#: (counts, the stage's index, its heaviest layer) are the heaviest stage's.
_MEAN = MappingProxyType({"averaged": True})


@dataclasses.dataclass(frozen=True, slots=True)
class _Stage:
    """One stage's micro-batch: its times [s] and counts."""

    slot: float = dataclasses.field(metadata=_MEAN)  # forward, backward and exposed communication
    stage: int
    forward: float = dataclasses.field(metadata=_MEAN)
    backward: float = dataclasses.field(metadata=_MEAN)
    tp: float = dataclasses.field(metadata=_MEAN)
    tp_count: int
    cp: float = dataclasses.field(metadata=_MEAN)
    cp_exposed: float = dataclasses.field(metadata=_MEAN)
    ep: float = dataclasses.field(metadata=_MEAN)
    ep_exposed: float = dataclasses.field(metadata=_MEAN)
    moe_layers: int
    attention_layers: int
    layer_forward: float  # the heaviest layer's forward, its products' time and their ideal
    products: float
    ideal: float
    weight_gradients: float = dataclasses.field(metadata=_MEAN)


def _rank_stage(stages: list) -> _Stage:
    """What a rank running ``stages`` (each for an equal share of the micro-batches) spends on a
    micro-batch: their averaged fields' mean, the heaviest's others."""
    heavy = max(stages, key=lambda f: f.slot)
    return dataclasses.replace(heavy, **{f.name: sum(getattr(x, f.name) for x in stages) / len(stages)
                                         for f in dataclasses.fields(_Stage) if f.metadata.get("averaged")})


def is_moe(w) -> bool:
    return getattr(w, "kind", None) == "moe"


def _sliding(w, i: int) -> bool:
    """Layer ``i`` of a MoE model uses the sliding window (every other layer from the first,
    gpt-oss's alternation, until ``sliding_layers`` are placed)."""
    if not is_moe(w) or not w.sliding_layers:
        return False
    every = max(1, w.layers // w.sliding_layers)
    return i % every == 0 and i // every < w.sliding_layers


def layer_kind(w, i: int) -> tuple:
    """(dense FFN, sliding window) of layer ``i``."""
    return (not is_moe(w) or i < w.dense_layers, _sliding(w, i))


def _tokens(w, cp: int) -> int:
    return w.seq // cp


def layer_ops(w, kind: tuple, layout: Layout, cm, act: int, balance: float) -> tuple:
    """The forward kernels of one layer on one GPU: ``seq / cp`` tokens, the attention core over
    the whole sequence's keys (each rank's share of the causal work)."""
    cp, b, tp = layout.cp, layout.micro_batch, layout.tp
    local = w if cp == 1 else with_seq_length(w, _tokens(w, cp))
    elem = dtype_bytes(cm.dtype)
    dense, sliding = kind
    if is_moe(w):
        ops = local.layer_ops(b, dense=dense, sliding=sliding, tp=tp, ep=layout.ep, etp=layout.etp,
                              elem=elem, act=act, balance=balance)
        window = w.sliding_window if sliding else w.seq
    else:
        ops = local.layer_ops(b, tp, elem, sequence_parallel=layout.sequence_parallel, stack=cm.stack, act=act)
        window = w.seq
    if cp == 1:
        return tuple(ops)
    # The local queries attend min(s, window) keys, not the min(s / cp, window) of the local sequence.
    factor = min(w.seq, window) / min(_tokens(w, cp), window)
    return tuple(dataclasses.replace(op, flops=op.flops * factor) if op.name == "flash_attention" else op
                 for op in ops)


def head_ops(w, layout: Layout, cm, act: int) -> tuple:
    """(first stage's, last stage's) kernels outside the layers: the embedding; the final norm,
    the logits and the loss (and the MTP modules' projections, layers and heads)."""
    b, tp, cp = layout.micro_batch, layout.tp, layout.cp
    elem = dtype_bytes(cm.dtype)
    if not is_moe(w):
        local = w if cp == 1 else with_seq_length(w, _tokens(w, cp))
        head = local.head_ops(b, tp, elem, act=act)
        return tuple(head[:1]), tuple(head[1:])
    m, h, v = b * _tokens(w, cp), w.hidden, w.vocab
    first = (memory_op("embedding", float(act) * 2 * m * h, 1),)
    last = (memory_op("final_norm", float(act) * 2 * m * h, 1),
            matmul_op("logits", m, -(-v // tp), h, act, quantised=False),
            memory_op("loss", 4.0 * 2 * m * v / tp, 1))
    return first, last


def _pass(times) -> tuple:
    return sum(t.forward for t in times), sum(t.backward for t in times)


def stage_parameters(w, held, s: int, pp: int) -> tuple:
    """(dense, expert) parameters of stage ``s`` holding layers ``held``."""
    first, last = s == 0, s == pp - 1
    if is_moe(w):
        dense_layers = sum(1 for i in held if i < w.dense_layers)
        return moe_stage_parameters(w, dense_layers, len(held) - dense_layers, first=first, last=last)
    return held_parameters(w, len(held), first=first, last=last), 0


def moe_flops_per_token(w, recompute: str | Recompute = "none") -> float:
    """A MoE model's training FLOPs per token: model FLOPs (:meth:`MoeTransformer.training_flops_per_token
    <models.studies.moe.MoeTransformer.training_flops_per_token>`), plus what recomputation runs
    again (:mod:`~models.studies.recomputation`, a strategy or its name): a forward of the layers
    (the output head apart) with full recomputation, of the attention cores with selective, of the
    products of the modules recomputed otherwise (``deepseek``: MLA's up-projections; the norms and
    activations it recomputes are memory passes, no FLOPs)."""
    flops = w.training_flops_per_token()
    rc = as_recompute(recompute)
    if rc is None or rc == NO_RECOMPUTE:
        return flops
    if rc.whole_layer:
        return flops + w.forward_flops_per_token() - 2.0 * w.vocab * w.hidden * (1 + w.mtp_layers)
    if rc.modules == SELECTIVE.modules:
        return flops + w.layers * w.attention_flops_per_token()
    for kind, n in Counter(layer_kind(w, i) for i in range(w.layers)).items():
        ops = w.layer_ops(1, dense=kind[0], sliding=kind[1])
        flops += n * sum(op.flops for op in ops if op.kind != "memory" and rc.recomputes(op.name)) / w.seq
    return flops


def _moe_activation_bytes(w, layout: Layout, kind: tuple, act: int, balance: float,
                          quantised: float | None = None) -> float:
    """One MoE-model layer's stored activations for one micro-batch on one GPU [U: the tensors
    Korthikanti et al. 2022 count for a dense layer, carried over], per token: the two norms'
    inputs and one more hidden-wide tensor (over ``tp`` with sequence parallelism), the
    attention's input (a norm's output); MLA's latents (``q_lora + kv_lora + rope``), Q, K and V
    and the context (over ``tp``; GQA: Q, K, V, context); a dense FFN's input (a norm's output)
    and three inner tensors (the SwiGLU's two inputs and its output); for a MoE layer the routed
    copies (``top_k`` per token, times ``balance``) with their three expert-wide tensors, the
    shared experts' three, the fp32 router logits and the FFN's input (a norm's output). [bytes]

    The layout's recomputation (:mod:`~models.studies.recomputation`) drops what it
    recomputes: ``full`` keeps the layer's input only; ``layernorm`` the norms' outputs,
    ``mla_up_proj`` Q, K and V, ``moe_act`` the experts' SwiGLU outputs; a low-precision cache
    keeps the linear layers' inputs and the MoE SwiGLU's inputs at ``quantised`` bytes each."""
    t = float(layout.micro_batch) * _tokens(w, layout.cp)
    tp, h = layout.tp, w.hidden
    sp = tp if layout.sequence_parallel else 1
    rc = layout.recompute
    if rc.whole_layer:
        return act * t * h / sp
    lin = quantised if (rc.low_precision_cache and quantised) else act  # a linear layer's stored input
    norm_out = 0.0 if rc.drops("layernorm") else lin
    moe_act = 0.0 if rc.drops("moe_act") else lin
    a = w.attention
    dense, _ = kind
    if hasattr(a, "kv_heads"):
        qkv = (a.heads * a.head_dim + 2 * max(a.kv_heads // tp, 1) * a.head_dim * tp) / tp
        latents, context = 0.0, a.heads * a.head_dim / tp
    else:
        qkv = 0.0 if rc.drops("mla_up_proj") else a.heads * (2 * a.qk_dim + a.v_dim) / tp
        latents, context = a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim, a.heads * a.v_dim / tp
    out = t * (act * 3 * h / sp + norm_out * h / sp + act * qkv + lin * (latents + context))
    if dense:
        return out + t * (norm_out * h + act * 2 * w.dense_ffn / tp + lin * w.dense_ffn / tp)
    copies = t / sp * w.top_k * balance * layout.etp
    out += copies * (lin * h + (2 * lin + moe_act) * w.expert_ffn / layout.etp) + 4.0 * t * w.experts
    if w.shared_experts:
        out += t * (2 * lin + moe_act) * w.shared_experts * w.shared_ffn / tp
    return out + norm_out * t * h


def _logits_bytes(w, layout: Layout) -> float:
    if is_moe(w):
        return 4.0 * 2 * layout.micro_batch * _tokens(w, layout.cp) * w.vocab / layout.tp * (1 + w.mtp_layers)
    return w.logits_bytes(layout.micro_batch, layout.tp) / layout.cp


def _largest_layer(w, layout: Layout) -> float:
    """The local parameters of the largest layer, gathered whole by ZeRO 3 (dense part over
    ``tp``, experts over ``etp x ep``)."""
    if not is_moe(w):
        return w.layer_parameters / layout.tp
    dense, experts = moe_stage_parameters(w, 0, 1, first=False, last=False)
    return max(dense / layout.tp + experts / (layout.etp * layout.ep),
               moe_stage_parameters(w, 1, 0, first=False, last=False)[0] / layout.tp if w.dense_layers else 0.0)


def parallel_memory(w, layout: Layout, split: PipelineSplit, *, dtype: str, capacity: float, flash: bool,
                    ep_overlap: EpOverlap = NO_OVERLAP, balance: float = 1.0) -> Memory:
    """Memory per GPU of the heaviest stage (module docstring). [bytes]"""
    weight, grad, optimizer = state_bytes(dtype)  # the weights as the activations, 16- or 32-bit
    tp, pp, zero, m = layout.tp, layout.pp, layout.zero, layout.micro_batches
    # A rank holds its stages' parameters (EpOverlap.rank_stages: DualPipe's rank r holds stages r
    # and pp - 1 - r, each once), their gradients and optimizer state; ZeRO shards them over all
    # the GPUs holding the same weights (both copies' data-parallel groups).
    copies = ep_overlap.parameter_copies
    dense_shard, expert_shard = copies * layout.dp * layout.cp, copies * layout.edp
    quantised = cached_bytes(dtype)  # what a low-precision cache keeps per element, scales included
    local = [stage_parameters(w, held, s, pp) for s, held in enumerate(split.stages)]
    ranks = ep_overlap.rank_stages(pp)  # pipeline rank s holds these stages' weights (1F1B: stage s)
    worst = None
    for s, held in enumerate(split.stages):
        d = sum(local[k][0] for k in ranks[s]) / tp
        e = sum(local[k][1] for k in ranks[s]) / (layout.etp * layout.ep)

        def sharded(stage_from):
            return (d / (dense_shard if zero >= stage_from else 1)
                    + e / (expert_shard if zero >= stage_from else 1))
        params, grads, opt = weight * sharded(3), grad * sharded(2), optimizer * sharded(1)
        if zero >= 3 and held:  # the gathered layer in use and the next one prefetched (FSDP's units) [U]
            params += 2 * weight * _largest_layer(w, layout)
        in_flight = float(ep_overlap.in_flight(pp, s, m))  # 1F1B: pp - s; paired: its longer warm-up
        if s == 0 and layout.virtual_stages > 1:
            in_flight *= 1 + (pp - 1) / (pp * layout.virtual_stages)
        kinds = Counter(layer_kind(w, i) for i in held)
        if is_moe(w):
            per_mb = sum(n * _moe_activation_bytes(w, layout, k, weight, balance, quantised) for k, n in kinds.items())
            if s == pp - 1:
                per_mb += w.mtp_layers * _moe_activation_bytes(w, layout, (False, False), weight, balance, quantised)
        else:
            per_mb = len(held) * w.activation_bytes(layout.micro_batch, tp, sequence_parallel=layout.sequence_parallel,
                                                    recompute=layout.recompute, flash=flash) * weight / 2 / layout.cp
        act = per_mb * in_flight + (_logits_bytes(w, layout) if s == pp - 1 else 0.0)
        mem = Memory(params, grads, opt, act, float(capacity))
        if worst is None or mem.total > worst.total:
            worst = mem
    assert worst is not None
    return worst


def _no_exchange(att_f: float, att_b: float, full: bool) -> tuple:
    """No context parallelism: nothing exchanged."""
    return 0.0, 0.0


def parallel_components(w, layout: Layout, split: PipelineSplit, cm, comm, alltoall, *, overlap: float,
                        bucket: float, times, ep_overlap: EpOverlap = NO_OVERLAP, balance: float = 1.0,
                        dispatch_elem: float | None = None, network_fraction: float = 0.0,
                        layer_times=None, dispatcher: Dispatcher = FLAT_DISPATCH, nvlink_fraction: float = 0.0,
                        dispatch_legs: tuple = ()) -> tuple:
    """The components of one step (module docstring).

    ``comm(dimension, collective, nbytes)`` times a collective on the layout's ``"tp"``,
    ``"cp_ring"`` (ring neighbours), ``"etp"``, ``"pp"``, ``"dp"`` (the dense gradients' ``dp x
    cp`` groups) or ``"edp"`` groups, ``"dp_copies"`` and ``"edp_copies"`` (those groups joined
    with the other copies' of the same stage, when ``ep_overlap`` holds several); ``alltoall(dimension, nbytes)`` an all-to-all of ``nbytes``
    per rank on the ``"ep"`` or ``"cp"`` groups (``"ep"``: as ``dispatcher`` sends it). [s]
    ``network_fraction``, ``nvlink_fraction``: of a dispatch buffer, the bytes one GPU sends
    over the network and over NVLink, and ``dispatch_legs`` the step graph's all-to-alls of one
    dispatch (:meth:`Dispatcher.legs <models.studies.planner.dispatcher.Dispatcher.legs>`), shown in the detail. ``layer_times(kind)``,
    when given, is ``times(layer_ops(w, kind, layout, cm, act, balance))`` kept by the caller.
    """
    act = activation_bytes_per_element(cm.dtype)
    dispatch_elem = act if dispatch_elem is None else dispatch_elem
    tp, pp, cp, v = layout.tp, layout.pp, layout.cp, layout.virtual_stages
    b, m = layout.micro_batch, layout.micro_batches
    rc = layout.recompute
    full = rc.whole_layer
    sp = layout.sequence_parallel and tp > 1
    first_ops, last_ops = head_ops(w, layout, cm, act)
    ff, fb = _pass(times(first_ops))
    hf, hb = _pass(times(last_ops))
    hw = sum(weight_gradients(cm, times(last_ops)))  # the head's weight gradient (DualPipe's W)
    tokens = b * _tokens(w, cp)
    tp_bytes = float(tokens * w.hidden * act)
    one_tp = 0.0
    if tp > 1:
        one_tp = (comm("tp", "reduce_scatter", tp_bytes) + comm("tp", "all_gather", tp_bytes) if sp
                  else comm("tp", "all_reduce", tp_bytes))
    # Expert parallelism, one MoE layer's all-to-alls of one micro-batch.
    moe = is_moe(w)
    disp = comb = 0.0
    t_ep_layer = t_d = t_c = 0.0
    if moe:
        routed = tokens / (tp if sp else 1)
        disp = dispatch_bytes(routed, w.top_k, w.hidden, dispatch_elem, balance)
        comb = dispatch_bytes(routed, w.top_k, w.hidden, act, balance)
        t_d, t_c = alltoall("ep", disp), alltoall("ep", comb)
        fwd_ep = t_d + t_c
        if layout.etp > 1:
            fwd_ep += comm("etp", "all_gather", comb * layout.etp) + comm("etp", "reduce_scatter", comb * layout.etp)
        bwd_ep = 2 * t_c + (fwd_ep - t_d - t_c)
        t_ep_layer = fwd_ep + bwd_ep + (fwd_ep if full else 0.0)
    # Context parallelism, one attention layer's exchange of one micro-batch: (time, exposed) given
    # the attention kernel's forward and backward.
    exchange = layout.cp_comm
    cp_bytes = exchange.buffers(w, b, cp, tp, act) if cp > 1 else ()
    cp_layer = exchange.layer_timer(cp_bytes, cp, comm, alltoall) if cp > 1 else _no_exchange

    etp_pair = ((comm("etp", "all_gather", comb * layout.etp), comm("etp", "reduce_scatter", comb * layout.etp))
                if moe and layout.etp > 1 else None)
    walk = moe and ep_overlap.two_streams  # the blocks' all-to-alls walked beside the paired blocks' (pair_overlap)
    blocks = []  # per stage, its (forward, backward) blocks as segments (pair_overlap), when walked
    per_stage = []
    for s, held in enumerate(split.stages):
        kinds = Counter(layer_kind(w, i) for i in held)
        mtp = w.mtp_layers if moe and s == pp - 1 else 0
        if mtp:
            kinds[(False, False)] += mtp
        fwd_layers = bwd_layers = recomputed = 0.0
        passes = {}  # layer kind -> (forward, backward) by part, recomputation in the backward
        cp_time = cp_exposed = 0.0
        tp_count = 0
        products = ideal = layer_forward = 0.0
        wgrad = hw * (1 + mtp) if s == pp - 1 else 0.0  # the weight gradients of a micro-batch's backward
        for kind, n in kinds.items():
            timed = (layer_times(kind) if layer_times is not None
                     else times(layer_ops(w, kind, layout, cm, act, balance)))
            lf, lb = _pass(timed)
            wgrad += n * sum(weight_gradients(cm, timed))
            fwd_layers += n * lf
            bwd_layers += n * lb
            att = [t for t in timed if t.op.name in ATTENTION_OPS]
            again = layer_pass(timed, False) if full else layer_pass(
                [t for t in timed if rc.recomputes(t.op.name)], False)
            passes[kind] = (layer_pass(timed, False), layer_pass(timed, True) + again)
            if not full:  # the kernels the recomputation runs again (full: the whole forward, below)
                recomputed += n * again.total
            af, ab = _pass(att)
            ct, ce = cp_layer(af, ab, full)
            cp_time += n * ct
            cp_exposed += n * ce
            dense = kind[0]
            per = 4 if (dense or (moe and w.shared_experts)) else 2
            tp_count += n * (per + rc.repeated(per // 2))  # the forward's again before the backward
            if lf > layer_forward:
                layer_forward = lf
                products = sum(t.forward for t in timed if t.op.kind != "memory")
                ideal = sum(t.ideal for t in timed if t.op.kind != "memory")
        fwd = fwd_layers + (ff if s == 0 else 0.0) + (hf * (1 + mtp) if s == pp - 1 else 0.0)
        bwd = bwd_layers + (fb if s == 0 else 0.0) + (hb * (1 + mtp) if s == pp - 1 else 0.0)
        if mtp:  # the MTP modules' 2h -> h projections
            proj = times((matmul_op("mtp_projection", tokens, w.hidden, 2 * w.hidden, dtype_bytes(cm.dtype)),))
            pf, pb = _pass(proj)
            fwd, bwd = fwd + mtp * pf, bwd + mtp * pb
            wgrad += mtp * sum(weight_gradients(cm, proj))
        if full:
            bwd += fwd_layers
        bwd += recomputed
        tp_count += 2 if (s == 0 or s == pp - 1) else 0
        t_tp = tp_count * one_tp
        n_moe = sum(n for kind, n in kinds.items() if not kind[0]) if moe else 0
        ep_time = n_moe * t_ep_layer
        if walk:
            order = [layer_kind(w, i) for i in held] + [(False, False)] * mtp
            attention_exposed = cp_exposed / max(1, sum(kinds.values())) / 2  # [U] half in each pass
            common = dict(etp=etp_pair or (), one_tp=one_tp, shared=bool(moe and w.shared_experts),
                          head_collectives=(int(s == 0), int(s == pp - 1)), attention_exposed=attention_exposed)
            ends_f = (ff if s == 0 else 0.0, fwd - fwd_layers - (ff if s == 0 else 0.0))
            ends_b = (fb if s == 0 else 0.0, bwd - bwd_layers - recomputed - (fb if s == 0 else 0.0)
                      - (fwd_layers if full else 0.0))
            blocks.append((
                block_segments([(k[0], passes[k][0]) for k in order], forward=True, ep=((t_d, t_c),),
                               first=ends_f[0], last=ends_f[1], **common),
                block_segments([(k[0], passes[k][1]) for k in order], forward=False,
                               ep=(((t_d, t_c),) if full else ()) + ((t_c, t_c),), recount=1 + full,
                               first=ends_b[0], last=ends_b[1], **common)))
        per_stage.append(_Stage(0.0, s, fwd, bwd, t_tp, tp_count, cp_time, cp_exposed, ep_time, 0.0, n_moe,
                                sum(kinds.values()), layer_forward, products, ideal, wgrad))
    for k, x in enumerate(per_stage):
        # the blocks of a warm-up and cool-down run alone (all exposed), the others beside the
        # paired stage's, walked as the step graph runs them
        alone = ep_overlap.alone(pp, m, k)
        paired = ep_overlap.exposed_pair(blocks[k][0], blocks[ep_overlap.paired_stage(pp, k)][1]) if walk \
            else ep_overlap.exposed_ep(x.ep, x.forward + x.backward)
        ep_exposed = (1 - alone) * paired + alone * x.ep
        per_stage[k] = dataclasses.replace(x, slot=x.forward + x.backward + x.tp + x.cp_exposed + ep_exposed,
                                           ep_exposed=ep_exposed)
    # Each rank's micro-batch: the stages it runs, each for an equal share of the micro-batches
    # (1F1B: its own; DualPipe: stages r and pp - 1 - r), their times averaged, the heavier
    # stage's counts; and the pipeline sends it waits for (1F1B: a rank's program waits for its
    # p2p exchanges, Megatron-LM's send_forward_recv_backward and send_backward_recv_forward
    # [U: recalled]: a forward and a backward send a micro-batch from a middle rank, one from
    # an end, each of its v chunks but the model's first and last).
    t_pp_one = comm("pp", "sendrecv", tp_bytes / tp) if pp > 1 else 0.0
    ranks = []
    for r, ran in enumerate(ep_overlap.rank_stages(pp)):
        waits = ep_overlap.exposed_pp((2 * v - (r == 0) - (r == pp - 1)) * t_pp_one) if pp > 1 else 0.0
        ranks.append((_rank_stage([per_stage[s] for s in ran]), ran, waits))
    # The busiest (slowest) rank sets the steady state, m of its micro-batches; the pipeline fills
    # and drains through the others, each for one micro-batch over its v chunks: the flow shop's
    # (m - 1) max t + sum t (equal stages: 1F1B's (p - 1) / v slots of bubble), the micro-batch
    # of a warm-up's first forward and a cool-down's last backward, which run alone (their
    # all-to-alls exposed whatever the overlap)
    b = max(range(len(ranks)), key=lambda r: ranks[r][0].slot + ranks[r][2])
    best, busiest, waits = ranks[b]
    others = [x.slot - x.ep_exposed + x.ep for k, (x, _, _) in enumerate(ranks) if k != b]
    fill = sum(others) / len(others) if others else best.slot
    slot, fwd, bwd, t_tp, tp_count = best.slot, best.forward, best.backward, best.tp, best.tp_count
    cp_time, cp_exposed, ep_time, ep_exposed = best.cp, best.cp_exposed, best.ep, best.ep_exposed
    n_moe, n_attention, wgrad = best.moe_layers, best.attention_layers, best.weight_gradients
    layer_forward, products, ideal = best.layer_forward, best.products, best.ideal
    # ---- pipeline: every send's time; exposed, the busiest rank's waits and one micro-batch's
    # of each other rank (the fill and drain)
    sends = v * m + pp - 1
    pp_comm = 2 * sends * t_pp_one
    pp_exposed = m * waits + sum(x[2] for k, x in enumerate(ranks) if k != b) / v
    bubble = ep_overlap.bubble(pp, v, slot=ep_overlap.fill_slot(slot, fill), backward_input=bwd - wgrad,
                               weight=wgrad)
    # ---- data parallel: the dense gradients over dp x cp, the experts' over edp; with several
    # copies of each stage (DualPipe), the busiest rank's stages over all their copies' GPUs
    copies = ep_overlap.parameter_copies
    named = ("dp", "edp") if copies == 1 else ("dp_copies", "edp_copies")
    d_local = e_local = 0.0
    for h in busiest:
        dense, experts = stage_parameters(w, split.stages[h], h, pp)
        d_local, e_local = d_local + dense / tp, e_local + experts / (layout.etp * layout.ep)
    dense_group, expert_group = copies * layout.dp * cp, copies * layout.edp
    weight_elem, grad_elem, _ = state_bytes(cm.dtype)  # the gradients at their own bytes (fp32 for bf16)
    streams, reduced = [], 0.0  # reduced: the parameters whose gradients travel (a group of one sends none)
    if dense_group > 1:
        streams.append((lambda c, n: comm(named[0], c, n), d_local * grad_elem, d_local * weight_elem))
        reduced += d_local
    if e_local and expert_group > 1:
        streams.append((lambda c, n: comm(named[1], c, n), e_local * grad_elem, e_local * weight_elem))
        reduced += e_local
    dp_time, dp_exposed = data_parallel_time(streams, layout.zero, overlap, fwd, bwd, m, bucket) if streams \
        else (0.0, 0.0)
    # ---- optimizer
    opt_params = (d_local / (dense_group if layout.zero >= 1 else 1)
                  + e_local / (expert_group if layout.zero >= 1 else 1))
    pass_bytes = optimizer_pass_bytes(cm.dtype)
    optimizer = cm.scale * opt_params * pass_bytes / (cm.gpu.memory_bandwidth * cm.memory_efficiency)
    compute = m * (fwd + bwd)
    collectives = ("reduce_scatter", "all_gather") if sp else ("all_reduce",)
    return (
        Component("compute", compute, compute, ComputeDetail(m, fwd, bwd, layer_forward, products, ideal)),
        Component("tp_comm", m * t_tp, m * t_tp, TensorParallelDetail(tp, collectives, tp_count, tp_bytes)),
        Component("cp_comm", m * cp_time, m * cp_exposed,
                  ContextParallelDetail(cp, exchange, n_attention, sum(cp_bytes))),
        Component("ep_comm", m * ep_time, m * ep_exposed,
                  ExpertParallelDetail(layout.ep, layout.etp, n_moe, disp, comb, network_fraction, balance, ep_overlap,
                                       dispatcher, nvlink_fraction, dispatch_legs)),
        Component("pp_comm", pp_comm, pp_exposed, PipelineDetail(pp, sends, tp_bytes / tp)),
        Component("bubble", bubble, bubble, BubbleDetail(pp, v, m, overlap=ep_overlap,
                                                         slot=ep_overlap.fill_slot(slot, fill),
                                                         backward_input=bwd - wgrad, weight=wgrad, busiest=slot)),
        Component("dp_comm", dp_time, dp_exposed,
                  DataParallelDetail(dense_group, layout.zero, reduced * grad_elem, bucket, overlap,
                                     reduced * weight_elem)),
        Component("optimizer", optimizer, optimizer, OptimizerDetail(opt_params, pass_bytes)),
    )
