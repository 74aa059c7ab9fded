"""Words of the training-step studies: a plan, a layout search, a calibration, the GPU
ranking, a workload and the GPU generations (:mod:`models.studies.planner`,
:mod:`models.studies.workload`, :mod:`models.studies.compute`). Their JSON:
:func:`models.present.json_shapes.plan_json` and :func:`~models.present.json_shapes.search_json`.

Examples
--------
>>> import topo
>>> from models.studies.planner import plan
>>> p = plan("megatron-8.3b", topo.dgx2(), tp=8, pp=1, dp=2, zero=0, recompute="full", dtype="fp16",
...          simulate=0)
>>> print(format_plan(p).splitlines()[0])
megatron-8.3b on DGX-2 (V100, fp16, NCCL 2.27.7): tp8 pp1 dp2 zero0 mb1 rc=full sp tp-dp-pp
>>> format_workload("bert-large")
'bert-large: transformer layers=24 hidden=1024 heads=16 seq=512 vocab=30522 ffn=4096 encoder mlm head on 80 masked tokens; 0.336 B parameters'
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from types import MappingProxyType

from topo.units import GB, MiB, to_us

from ..studies.compute import GENERATIONS, TF, ComputeFacts, ComputeModel
from ..studies.planner.cp_exchange import AllToAllExchange, HierarchicalExchange, RingExchange
from ..studies.planner.ep_overlap import BatchOverlap, DualPipe, EpOverlap
from ..studies.planner.dispatcher import FlatDispatch
from ..studies.planner.parallel import SplitError, stage_split
from ..studies.planner.step import gradient_bucket
from ..studies.planner.ranking import GpuRank
from ..studies.planner.records import (BubbleDetail, Calibration, Component, ComputeDetail, ContextParallelDetail,
                                       DataParallelDetail, DoesNotFitError, ExpertParallelDetail, Memory, NoLayoutError, OptimizerDetail, PipelineDetail, Plan,
                                       PlanWarning, Search, SkipCode, SkippedLayout, TensorParallelDetail, TimingCode,
                                       TimingWhy)
from ..studies.stepgraph import PlanDoesNotFitError
from ..studies.workload import CNN, DTYPES, TpConstraint, TpLimit, Workload, workload as as_workload
from .reasons_text import error_text

__all__ = ["format_plan", "format_search", "format_calibration", "format_gpus_ranking", "format_workload",
           "format_generations", "compute_note", "component_note", "memory_note", "fit_note", "warning_note",
           "warning_notes", "timing_note", "tp_limit_note", "skipped_note", "skipped_notes",
           "plan_error_text", "group_text", "WARNING_TEXT", "CROSS_HOST_TP_WARNING"]

#: The warning of a plan whose tensor-parallel groups span hosts (:attr:`PlanWarning.CROSS_HOST_TP
#: <models.studies.planner.PlanWarning.CROSS_HOST_TP>`).
CROSS_HOST_TP_WARNING = ("tensor parallelism across hosts: every layer's activations cross the network "
                         "twice per pass, which is rarely wise (modelled as asked)")
#: Each :class:`~models.studies.planner.PlanWarning` in words: what ``plan`` prints after
#: "warning:" and ``plan --json`` gives in ``warnings``.
WARNING_TEXT = MappingProxyType({
    PlanWarning.CROSS_HOST_TP: CROSS_HOST_TP_WARNING,
    PlanWarning.ABOVE_PEAK: ("the measurement implies more than the hardware's peak (fitted fractions above 1): "
                             "check the measured layout, batch and dtype")})


def memory_note(m: Memory) -> str:
    """The memory of a GPU in one line: what ``plan`` prints as its memory per GPU and, for a
    layout that does not fit, inside :func:`fit_note`. [GB]

    Examples
    --------
    >>> memory_note(Memory(2e9, 2e9, 12e9, 4e9, 80e9))
    '20.0 GB of 80.0 GB (weights 2.0, gradients 2.0, optimizer 12.0, activations 4.0)'
    """
    return (f"{m.total / GB:.1f} GB of {m.capacity / GB:.1f} GB (weights "
            f"{m.parameters / GB:.1f}, gradients {m.gradients / GB:.1f}, optimizer "
            f"{m.optimizer / GB:.1f}, activations {m.activations / GB:.1f})")


def fit_note(p: Plan) -> str:
    """Why a plan does not fit ('' when it does): what ``plan`` prints after "does not fit:" and
    ``plan --json`` gives as ``reason``.

    Examples
    --------
    >>> import topo
    >>> from models.studies.planner import plan
    >>> fit_note(plan("gpt3-175b", topo.dgx1v(), tp=8, pp=1, dp=1, simulate=0))
    'out of memory: needs 437.2 GB of 17.2 GB (weights 43.7, gradients 43.7, optimizer 349.2, activations 0.7) per GPU'
    """
    return "" if p.fits else f"out of memory: needs {memory_note(p.memory)} per GPU"


def warning_note(code: PlanWarning) -> str:
    """A plan's warning in words (:data:`WARNING_TEXT`)."""
    return WARNING_TEXT[code]


def warning_notes(p: Plan) -> tuple:
    """A plan's warnings in words, in order."""
    return tuple(warning_note(code) for code in p.warning_codes)


def timing_note(why: Plan | TimingWhy | None) -> str:
    """How a plan's timing came about, in words ('' for None): why an analytical plan was not
    simulated, or what shaped a simulated one (a plan's :attr:`~models.studies.planner.Plan.timing_why`);
    what ``plan`` prints beside its timing and ``plan --json`` gives as ``timing_note``.

    Examples
    --------
    >>> timing_note(TimingWhy(TimingCode.NEEDS_EVENTS, events=1200, max_events=1000))
    'its simulation needs 1200 events, beyond the budget max_events=1000'
    >>> timing_note(TimingWhy(TimingCode.OVERLAP_FIRST_PASS, overlap=0.5))
    'overlap=0.5 shapes the first pass only: the simulation overlaps the gradient buckets as the schedule allows'
    """
    if isinstance(why, Plan):
        why = why.timing_why
    if why is None:
        return ""
    words = {
        TimingCode.NOT_AMONG_BEST: lambda: f"not among the {why.count} best of the analytical first pass",
        TimingCode.ANALYTICAL_ONLY: lambda: "analytical only (simulate=0)",
        TimingCode.BEYOND_BUDGET: lambda: f"beyond the simulations' budget max_events={why.max_events}",
        TimingCode.NEEDS_EVENTS: lambda: (f"its simulation needs {why.events} events, beyond the budget "
                                          f"max_events={why.max_events}"),
        TimingCode.CNN: lambda: "a CNN's step is not simulated: step graphs follow Megatron's transformer schedule",
        TimingCode.INTERLEAVED: lambda: "interleaved 1F1B is not simulated: step graphs build plain 1F1B",
        TimingCode.DUALPIPE: lambda: ("its expert overlap's schedule is not one step graphs build (a strategy whose "
                                      "simulated is False); analytical"),
        TimingCode.OVERLAP_FIRST_PASS: lambda: (f"overlap={why.overlap:g} shapes the first pass only: the "
                                                "simulation overlaps the gradient buckets as the schedule allows")}
    return words[why.code]()


def tp_limit_note(c: TpConstraint) -> str:
    """Why tensor parallelism cannot split a workload, in words
    (:func:`models.studies.workload.tp_limit`).

    Examples
    --------
    >>> tp_limit_note(TpConstraint(TpLimit.HEADS, 2, 25))
    'tensor parallel 2 does not divide heads (25)'
    """
    if c.limit is TpLimit.CNN:
        return "a CNN is data parallel only here (tensor parallel 1)"
    if c.limit is TpLimit.KV_HEADS:
        return f"tensor parallel {c.tp} neither divides nor is a multiple of kv_heads ({c.value})"
    return f"tensor parallel {c.tp} does not divide {c.limit.value} ({c.value})"


def _skipped_label(s: SkippedLayout) -> str:
    """The degrees a refusal names: ``tp2``, ``tp2 pp3``, ``pp16``, ``tp1 pp1 dp8``, ``tp1 pp4 v2 dp2``
    (with ``cp``, ``ep`` and ``etp`` where they are not 1)."""
    cp = f" cp{s.cp}" if s.cp > 1 else ""
    if s.code in (SkipCode.TP_LIMIT, SkipCode.TP_HOST):
        return f"tp{s.tp}"
    if s.code is SkipCode.GPUS:
        return f"tp{s.tp}{cp}" + (f" pp{s.pp}" if s.pp is not None else "")
    if s.code is SkipCode.LAYERS:
        return f"pp{s.pp}"
    if s.code is SkipCode.BATCH:
        return f"tp{s.tp}{cp} pp{s.pp} dp{s.dp}"
    ep = (f" ep{s.ep}" if s.ep > 1 else "") + (f" etp{s.etp}" if s.etp > 1 else "")
    v = f" v{s.virtual_stages}" if s.virtual_stages > 1 or s.code.name.startswith("INTERLEAVE") else ""
    return f"tp{s.tp}{cp} pp{s.pp}{v} dp{s.dp}{ep}"


def _split_note(s: SkippedLayout) -> str:
    """What the split a refusal asked for breaks, in :func:`~models.studies.planner.parallel.stage_split`'s words."""
    first, last, embedding, loss = s.split or (0, 0, False, False)
    try:
        stage_split(s.count or 0, s.pp or 1, s.virtual_stages, first=first, last=last, embedding_in_split=embedding,
                    loss_in_split=loss)
    except SplitError as error:
        return str(error)
    return f"the split of {s.count} layers over pp {s.pp} x v {s.virtual_stages} is refused"


def skipped_note(s: SkippedLayout) -> str:
    """A layout :func:`~models.studies.planner.search` refused, and why, in words: what
    ``plan --search --json`` lists in ``skipped``.

    Examples
    --------
    >>> skipped_note(SkippedLayout(SkipCode.BATCH, 1, 1, 8, count=12, micro_batch=1))
    'tp1 pp1 dp8: global batch 12 is not a multiple of dp x micro-batch = 8'
    >>> skipped_note(SkippedLayout(SkipCode.INTERLEAVE_LAYERS, 1, 4, 2, 2, count=44))
    'tp1 pp4 v2 dp2: 44 layers do not split into pp x v = 8 chunks'
    """
    c = s.count
    words = {
        SkipCode.TP_LIMIT: lambda: tp_limit_note(s.tp_limit),
        SkipCode.TP_HOST: lambda: f"a tensor-parallel group takes part of one host of {c} GPUs or whole hosts",
        SkipCode.GPUS: lambda: f"does not divide {c} GPUs",
        SkipCode.LAYERS: lambda: f"more stages than {c} layers",
        SkipCode.BATCH: lambda: (f"global batch {c} is not a multiple of dp x micro-batch = "
                                 f"{s.dp * s.micro_batch}"),
        SkipCode.INTERLEAVE_PIPELINE: lambda: "interleaving needs a pipeline (pp > 1)",
        SkipCode.INTERLEAVE_LAYERS: lambda: (f"{c} layers do not split into pp x v = {s.pp * s.virtual_stages} "
                                             "chunks"),
        SkipCode.INTERLEAVE_MICRO_BATCHES: lambda: f"{c} micro-batches are not a multiple of pp = {s.pp}",
        SkipCode.EP_DENSE: lambda: "expert parallelism needs a mixture-of-experts workload: expected ep 1 and etp 1",
        SkipCode.EP_EXPERTS: lambda: f"ep {s.ep} does not divide the {c} routed experts",
        SkipCode.EP_FOLD: lambda: (f"etp x ep = {s.etp * s.ep} does not divide tp x cp x dp = {c}: expected the expert "
                                   "layers to fold the stage's GPUs"),
        SkipCode.EP_SEQUENCE_PARALLEL: lambda: ("expert with tensor parallelism needs sequence parallelism "
                                                "(Megatron refuses it off): expected --sequence-parallel on"),
        SkipCode.ETP_FFN: lambda: f"etp {s.etp} does not divide the expert FFN width {c}",
        SkipCode.CP_SEQUENCE: lambda: f"the sequence of {c} tokens does not split into 2 x cp = {2 * s.cp} chunks",
        SkipCode.CP_FLASH: lambda: "context parallelism needs flash attention: expected the flash software stack",
        SkipCode.CP_HEADS: lambda: f"all-to-all context parallelism needs the {c} heads per rank (query or key/value, the fewer) "
                                          f"divisible by cp {s.cp}",
        SkipCode.CP_HIERARCHY: lambda: (f"a2a+p2p context parallelism needs sizes a x p = cp {s.cp}, both >= 2, and "
                                        f"the {c} heads per rank (query or key/value, the fewer) divisible by a"),
        SkipCode.SPLIT: lambda: _split_note(s),
        SkipCode.DUALPIPE: lambda: (f"DualPipe needs an even pp, an even number of micro-batches of at least 2 x pp "
                                    f"and no interleaving (received pp {s.pp}, {c} micro-batches"
                                    f"{f', v {s.virtual_stages}' if s.virtual_stages > 1 else ''})")}
    return f"{_skipped_label(s)}: {words[s.code]()}"


def skipped_notes(search: Search) -> tuple:
    """Every refusal of a search in words, in order."""
    return tuple(skipped_note(s) for s in search.skipped_layouts)


def plan_error_text(error: Exception) -> str:
    """An error in words: a planner error that carries numbers (:class:`~models.studies.planner.NoLayoutError`,
    :class:`~models.studies.planner.DoesNotFitError`,
    :class:`~models.studies.stepgraph.PlanDoesNotFitError`) worded from them, as ``dgxtopo plan``
    and ``dgxtopo simulate`` print it; any other error as
    :func:`models.present.reasons_text.error_text` words it (its message, NCCL's reasons in words).

    Examples
    --------
    >>> from models.studies.workload import TpConstraint, TpLimit
    >>> error = NoLayoutError("gpt3-5b", 8, "DGX A100", (SkippedLayout(SkipCode.TP_LIMIT, 3,
    ...                       tp_limit=TpConstraint(TpLimit.HEADS, 3, 32)),))
    >>> plan_error_text(error)
    'no layout of gpt3-5b on 8 GPUs of DGX A100: tp3: tensor parallel 3 does not divide heads (32)'
    """
    if isinstance(error, DoesNotFitError):
        return (f"the measured layout {error.plan.layout.label()} does not fit ({fit_note(error.plan)}): expected a "
                "layout that runs")
    if isinstance(error, PlanDoesNotFitError):
        return f"the plan does not fit ({fit_note(error.plan)}): expected a layout that fits in memory"
    if not isinstance(error, NoLayoutError):
        return error_text(error)
    return (f"no layout of {error.workload} on {error.ngpus} GPUs of {error.fabric}: " +
            ("; ".join(skipped_note(s) for s in error.skipped[:4]) or "the fixed degrees do not multiply to the GPUs"))


def compute_note(compute: ComputeFacts | ComputeModel | None) -> str:
    """A compute model in one line (the GPU, dtype, stack and the fractions in use): what a plan's
    ``compute`` (:attr:`models.studies.planner.Plan.compute`) says ('' for None).

    Examples
    --------
    >>> from models.studies.compute import compute_model
    >>> compute_note(compute_model("H100", "bf16"))
    'H100 bf16 (H100, 989.5 TFLOP/s dense, 3,350 GB/s HBM), fused kernels: GEMM 76% of peak, HBM 84%'
    >>> compute_note(compute_model("A100", "bf16", stack="flash", scale=1.5).facts)
    'A100 bf16 (A100, 312.0 TFLOP/s dense, 2,039 GB/s HBM), flash kernels: GEMM 82% of peak, flash attention 57%, HBM 79%, calibrated time x1.500'
    """
    if compute is None:
        return ""
    f = compute.facts if isinstance(compute, ComputeModel) else compute
    attention = f", flash attention {f.attention_efficiency:.0%}" if f.flash_attention else ""
    scale = f", calibrated time x{f.scale:.3f}" if f.scale != 1 else ""
    return (f"{f.gpu} {f.dtype} ({f.generation}, {f.peak / TF:,.1f} TFLOP/s dense, "
            f"{f.memory_bandwidth / GB:,.0f} GB/s HBM), {f.stack} kernels: GEMM "
            f"{f.gemm_efficiency:.0%} of peak{attention}, HBM {f.memory_efficiency:.0%}{scale}")


def _compute_detail(d: ComputeDetail) -> str:
    # What tiles, waves, split-K, epilogues and launch floors add, shown from 0.05 % on.
    quantised = (f"; tiles, waves and launches +{d.quantisation:.0%}"
                 if d.products_ideal > 0 and d.products > d.products_ideal * 1.0005 else "")
    return (f"{d.micro_batches} micro-batches x (forward {to_us(d.forward) / 1e3:.2f} + backward "
            f"{to_us(d.backward) / 1e3:.2f} ms); products {d.products_fraction:.0%} of a layer's forward{quantised}")


def _tensor_parallel_detail(d: TensorParallelDetail) -> str:
    if d.degree == 1:
        return "no tensor parallelism"
    return f"{d.count} x {'+'.join(d.collectives)} of {d.nbytes / MiB:.1f} MiB per micro-batch"


def _pipeline_detail(d: PipelineDetail) -> str:
    return f"2 x {d.sends} sends of {d.nbytes / MiB:.1f} MiB" if d.stages > 1 else "no pipeline"


def _dualpipe_bubble(d: BubbleDetail) -> str:
    """DualPipe's bubble, the report's formula with its numbers (capped at ``PP/2 - 1`` slots)."""
    pairs = max(0, d.stages // 2 - 1)
    formula = (f"(PP/2-1)(F&B+B-3W) = {pairs} x ({to_us(d.slot) / 1e3:.2f} + {to_us(d.backward_input) / 1e3:.2f} "
               f"- 3 x {to_us(d.weight) / 1e3:.2f} ms)")
    capped = d.slot + d.backward_input - 3 * d.weight > d.slot
    return f"{formula}{f', capped at {pairs} slots' if capped else ''} = {d.fraction:.2%} of the ideal step"


#: The words of the built-in overlaps' own bubbles, by the overlap's class (else 1F1B's): a
#: subclass of your own keeps 1F1B's words, as its bubble may be its own.
_BUBBLE_WORDS = MappingProxyType({DualPipe: _dualpipe_bubble})


def _bubble_detail(d: BubbleDetail) -> str:
    if d.simulated:
        return "the rest of the critical path: the pipeline's fill and drain, waits for a stream"
    own = _BUBBLE_WORDS.get(type(d.overlap))
    if own is not None:
        return own(d)
    v, m = d.virtual_stages, d.micro_batches
    if d.slot > 0 and d.busiest > 0 and abs(d.slot / d.busiest - 1) >= 0.01:  # stages unequal by 1 % or more
        return f"{(d.stages - 1) / v:g} x the other stages' {to_us(d.slot) / 1e3:.2f} ms"  # (p - 1) / v slots
    return f"(p-1)/{'(v m)' if v > 1 else 'm'} = {d.stages - 1}/{v * m if v > 1 else m} of the ideal step"


def _data_parallel_detail(d: DataParallelDetail) -> str:
    if d.degree == 1:
        return "no data parallelism"
    grads, params = f"{d.nbytes / GB:.2f} GB gradients", f"{d.parameter_bytes / GB:.2f} GB parameters"
    if d.zero == 0:
        bucket = gradient_bucket(d.bucket, d.overlap)
        what = (f"all_reduce of {grads} in one buffer after the backward" if math.isinf(bucket)
                else f"all_reduce of {grads} in {bucket / MiB:.0f} MiB buckets")
    elif d.zero in (1, 2):
        what = f"reduce_scatter of {grads} (overlapped) + all_gather of {params} (exposed)"
    else:
        what = f"all_gather of {params} per forward and backward + reduce_scatter of {grads}"
    overlap = ("overlapped with the backward as the schedule allows" if d.simulated
               else f"overlap {d.overlap:.0%} of the backward")
    return f"{what}; {overlap}"


#: The words of the built-in context-parallel exchanges (:mod:`models.studies.planner.cp_exchange`),
#: by class, of the detail's ``layers``, ``steps`` (``cp - 1``) and ``mib``; another shows by its name.
_CP_EXCHANGE_WORDS = MappingProxyType({
    RingExchange: ("{layers} layers x ring of {steps} K/V steps of {mib:.1f} MiB each way per micro-batch, hidden behind "
            "the attention where it is faster"),
    AllToAllExchange: "{layers} layers x 2 x 4 all-to-alls ({mib:.1f} MiB per rank in all) per micro-batch",
    HierarchicalExchange: ("{layers} layers x (2 x 4 all-to-alls in groups of {a} + ring of {steps} K/V steps each way across "
                "{p} groups; {mib:.1f} MiB per rank in all) per micro-batch, the ring hidden behind the attention "
                "where it is faster")})


def _context_parallel_detail(d: ContextParallelDetail) -> str:
    if d.degree == 1:
        return "no context parallelism"
    words = _CP_EXCHANGE_WORDS.get(type(d.comm), "{layers} layers x {name} K/V exchange of {mib:.1f} MiB per "
                                                "micro-batch")
    a, p = getattr(d.comm, "sizes", None) or (1, d.degree)  # a hierarchical exchange's (a2a, p2p) sizes
    return words.format(layers=d.layers, steps=p - 1, mib=d.nbytes / MiB, name=d.comm.name, a=a, p=p)


#: The words of the built-in expert overlaps (:mod:`models.studies.planner.ep_overlap`), by
#: class (each behaves as its class does, whatever its name); a subclass of your own shows by its name.
_EP_OVERLAP_WORDS = MappingProxyType({EpOverlap: "not overlapped", BatchOverlap: "batch-level overlap",
                                      DualPipe: "DualPipe overlap"})


def _expert_parallel_detail(d: ExpertParallelDetail) -> str:
    if d.layers == 0:
        return "no experts (a dense model)"
    if d.degree == 1 and d.tensor_degree == 1:
        return f"{d.layers} MoE layers, experts local (no expert parallelism)"
    overlap = _EP_OVERLAP_WORDS.get(type(d.overlap), f"{d.overlap.name} overlap")
    balance = f", balance x{d.balance:g}" if d.balance != 1 else ""
    if type(d.dispatcher) is FlatDispatch:  # every copy by NCCL's all-to-all: its shares are the placement's
        split = f"{d.network_fraction:.0%} off the NVLink domain"
    else:  # hierarchical, or one of your own (a subclass too): its own name and byte split
        split = f"{d.dispatcher.name}: {d.network_fraction:.0%} network, {d.nvlink_fraction:.0%} NVLink"
    return (f"{d.layers} MoE layers x dispatch {d.dispatch_bytes / MiB:.1f} + combine {d.combine_bytes / MiB:.1f} "
            f"MiB per rank over ep{d.degree} ({split}){balance}; {overlap}")


def _optimizer_detail(d: OptimizerDetail) -> str:
    return f"Adam pass: {d.parameters / 1e9:.2f} B local parameters x {d.pass_bytes:g} B"


def component_note(c: Component) -> str:
    """What a step's component is, in one line, from its numbers (:attr:`Component.detail
    <models.studies.planner.Component.detail>`): what :func:`format_plan` prints beside its time
    and ``plan --json`` gives as its ``detail`` ('' without numbers; a text detail as it is).

    Examples
    --------
    >>> from models.studies.planner import BubbleDetail, DataParallelDetail
    >>> component_note(Component("bubble", 0.1, 0.1, BubbleDetail(4, 2, 8)))
    '(p-1)/(v m) = 3/16 of the ideal step'
    >>> component_note(Component("dp_comm", 0.1, 0.05, DataParallelDetail(2, 0, 1.23e9, 25 * MiB, 0.5, 0.615e9)))
    'all_reduce of 1.23 GB gradients in 25 MiB buckets; overlap 50% of the backward'
    """
    d = c.detail
    if d is None or isinstance(d, str):
        return d or ""
    words = {ComputeDetail: _compute_detail, TensorParallelDetail: _tensor_parallel_detail,
             ContextParallelDetail: _context_parallel_detail, ExpertParallelDetail: _expert_parallel_detail,
             PipelineDetail: _pipeline_detail, BubbleDetail: _bubble_detail,
             DataParallelDetail: _data_parallel_detail, OptimizerDetail: _optimizer_detail}
    return words[type(d)](d)


def format_calibration(c: Calibration) -> str:
    """The fit in a few lines: measured vs predicted, the scale, fitted vs default fractions."""
    names = {"gemm_efficiency": "GEMM efficiency", "attention_efficiency": "flash-attention efficiency",
             "memory_efficiency": "HBM efficiency"}
    rows = [f"  calibrated on {c.measured} ({c.measured_step:.4g} s per step of {c.layout}); the model "
            f"from hardware facts predicted {c.predicted_step:.4g} s",
            f"  fitted compute time scale {c.scale:.3f} (carry it to other layouts and scales with "
            f"--compute-scale {c.scale:.4g})"]
    for key, label in names.items():
        if key in c.default:
            rows.append(f"  {label:27} default {c.default[key]:.3f} -> fitted {c.fitted[key]:.3f}")
    return "\n".join(rows)


def format_plan(p: Plan, verbose: bool = False) -> str:
    """A plan as text: layout, throughput in both FLOP conventions, components, memory (and the
    compute model and groups when verbose)."""
    release = f", NCCL {p.nccl}" if p.nccl else ""
    lines = [f"{p.workload} on {p.fabric} ({p.generation}, {p.dtype}{release}): {p.layout.label()}"]
    lines += [f"  warning: {warning_note(w)}" for w in p.warning_codes]
    if not p.fits:
        lines.append(f"  does not fit: {fit_note(p)}")
        return "\n".join(lines)
    lines.append(f"  step {p.step_time * 1e3:.1f} ms; {p.samples_per_s:.2f} samples/s, "
                 f"{p.tokens_per_s:,.0f} tokens/s; binding: {p.binding()}")
    note = timing_note(p)
    if p.simulated:
        lines.append(f"  timing: simulated (the analytical first pass: {p.analytical_step_time * 1e3:.1f} ms"
                     f"{f'; {note}' if note else ''})")
    else:
        lines.append(f"  timing: analytical{f' ({note})' if note else ''}")
    lines.append(f"  per GPU: {p.model_tflops_per_gpu:.1f} TFLOP/s of model FLOPs (MFU {p.mfu:.1%}), "
                 f"{p.hardware_tflops_per_gpu:.1f} of hardware FLOPs with recomputation (HFU {p.hfu:.1%})")
    for c in p.components:
        lines.append(f"  {c.name:10} {c.time * 1e3:10.2f} ms (exposed {c.exposed * 1e3:9.2f} ms)  "
                     f"{component_note(c)}")
    lines.append(f"  memory per GPU: {memory_note(p.memory)}")
    if verbose:
        lines.append(f"  compute model: {compute_note(p.compute)}")
        if p.calibration is not None:
            lines.append(format_calibration(p.calibration))
        copied = "dp_copies" in p.groups  # each stage held on several ranks (DualPipe): reduced over all
        for dim in ("tp", "cp", "ep", "pp", "dp", "edp"):
            key = f"{dim}_copies" if copied and dim in ("dp", "edp") else dim
            if key not in p.groups or (dim == "edp" and not copied) or (dim in ("cp", "ep")
                                                                         and len(p.groups[dim][0]) < 2):
                continue
            shown = p.groups[key][:4]
            more = len(p.groups[key]) - len(shown)
            lines.append(f"  {dim} groups{' (every copy of a stage)' if key != dim else ''}: "
                         + " ".join(group_text(g) for g in shown) + (f" ... +{more}" if more > 0 else ""))
    return "\n".join(lines)


def group_text(group: Iterable[int]) -> str:
    """A group of GPUs as the plan prints it: every member up to eight, a longer evenly spaced one
    by its ends (a run of consecutive GPUs as ``a-b``, as ``--gpus`` reads it).

    >>> group_text((0, 1, 2)), group_text(range(32)), group_text(range(0, 2048, 128))
    ('(0,1,2)', '(0-31)', '(0,128,...,1920)')
    """
    g = list(group)
    steps = {b - a for a, b in zip(g, g[1:])}
    if len(g) <= 8 or len(steps) != 1:
        return "(" + ",".join(map(str, g)) + ")"
    return f"({g[0]}-{g[-1]})" if steps == {1} else f"({g[0]},{g[1]},...,{g[-1]})"


def _overlap_of(p: Plan) -> str:
    return p.ep_overlap.name if p.ep_overlap is not None else ""


def format_search(s: Search, top: int = 10) -> str:
    """The ranking as a table; a search of several expert overlaps names each row's after its layout."""
    several = len({_overlap_of(p) for p in s.plans}) > 1
    labels = [p.layout.label() + (f" {_overlap_of(p)}" if several else "") for p in s.plans[:top]]
    width = max([44] + [len(label) for label in labels])
    lines = [f"{'layout':{width}} {'step ms':>9} {'timing':10} {'samples/s':>10} {'MFU':>6} {'HFU':>6} {'mem GB':>7}"
             f"  binding"]
    for p, label in zip(s.plans[:top], labels):
        step = f"{p.step_time * 1e3:9.1f}" if p.fits else f"{'OOM':>9}"
        timing = p.timing if p.fits else "-"
        lines.append(f"{label:{width}} {step} {timing:10} {p.samples_per_s:10.2f} {p.mfu:6.1%} {p.hfu:6.1%} "
                     f"{p.memory.total / GB:7.1f}  {p.binding() if p.fits else 'memory capacity'}")
    simulated = sum(p.simulated for p in s.plans)
    lines.append(f"(simulated: the {simulated} best of the analytical first pass, ranked first by their simulated "
                 "step)" if simulated else "(every step analytical)")
    return "\n".join(lines)


def format_gpus_ranking(ranks: Iterable[GpuRank]) -> str:
    lines = [f"{'GPU':6} {'ms/sample':>10} {'compute':>9} {'memory':>9} {'comm':>9}  fits  binding"]
    for r in ranks:
        t = f"{r.time_per_sample * 1e3:10.3f}" if math.isfinite(r.time_per_sample) else f"{'-':>10}"
        lines.append(f"{r.generation:6} {t} {r.compute * 1e3:9.3f} {r.memory_bound * 1e3:9.3f} "
                     f"{r.communication * 1e3:9.3f}  {'yes' if r.fits else 'no ':4}  {r.binding}")
    return "\n".join(lines)

def format_workload(w: str | Workload) -> str:
    """A workload (or its name, :func:`models.studies.workload.workload`) in one line: a
    transformer's shapes, a CNN's layers and input, and the parameter count."""
    w = as_workload(w)
    if isinstance(w, CNN):
        return (f"{w.name}: CNN of {len(w.conv_layers)} weight layers, {w.image}x{w.image} "
                f"input; {w.parameters / 1e6:.2f} M parameters, {w.forward_macs / 1e9:.2f} GMAC "
                "per image forward")
    extra = [f"ffn={w.ffn}"]
    if w.kv_heads != w.heads:
        extra.append(f"kv_heads={w.kv_heads}")
    if w.gated:
        extra.append("gated")
    if w.flash_attention:
        extra.append("flash attention")
    if not w.causal:
        extra.append("encoder")
    if w.head != "lm":
        extra.append(f"{w.head} head" + (f" on {w.predictions} masked tokens" if w.head == "mlm" else ""))
    return (f"{w.name}: transformer layers={w.layers} hidden={w.hidden} heads={w.heads} "
            f"seq={w.seq} vocab={w.vocab} {' '.join(extra)}; {w.parameters / 1e9:.3f} B parameters")


def format_generations() -> str:
    """The table of generations: peaks per dtype, HBM, memory."""
    dtypes = list(DTYPES)
    lines = ["generation " + " ".join(f"{d + ' TF':>9}" for d in dtypes) + "   HBM GB/s  memory GB"]
    for g in GENERATIONS.values():
        peaks = " ".join(f"{g.peak[d] / TF:9.1f}" if d in g.peak else f"{'-':>9}" for d in dtypes)
        lines.append(f"{g.name:10} {peaks}   {g.memory_bandwidth / GB:8.0f}  {g.memory / GB:9.1f}")
    return "\n".join(lines)
