"""A planner layout as a task graph: one training step, task by task, for the simulator.

:func:`step_graph` turns a :class:`models.studies.planner.Plan` (its layout, its placed groups,
its workload and data type) into a :class:`models.predict.simulate.TaskGraph`, and
:func:`simulate_plan` simulates it: overlap and contention then come from the schedule and the
fabric, not from fractions. The schedule is Megatron-LM's (Narayanan et al. 2021, "Efficient
Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", sections 2-4):

* every pipeline stage runs 1F1B: ``min(p - s - 1, m)`` warm-up forwards, then one forward
  and one backward in turn, then the cool-down backwards, in that program order on its GPUs;
* a layer's forward is the attention half, a tensor-parallel all_reduce of ``b s h``
  activations, the MLP half, another all_reduce (Shoeybi et al. 2019, section 3); with
  sequence parallelism each all_reduce is a reduce_scatter then an all_gather of the same
  buffer (Korthikanti et al. 2022, section 4.2.2). The backward is twice the forward's compute
  with the same two collectives (plus a recomputed forward with ``recompute="full"``). The
  compute of a tensor-parallel group is one task on all its GPUs (they run the same kernels);
* between stages, each tensor-parallel rank sends its ``b s h / t`` share of the activations
  forward and of their gradients backward (Megatron's scatter/gather, section 4.1);
* data parallel: gradients are reduced in buckets of ``bucket`` bytes (PyTorch DDP's
  ``bucket_cap_mb``, 25 MiB) as the last micro-batch's backward produces them, layer by layer
  from the last (DDP and Megatron accumulate over the other micro-batches without
  communicating), at the gradients' bytes per parameter and the parameters' gathered at theirs
  (:func:`models.studies.planner.gpu_memory.state_bytes`: fp32 gradients and bf16 parameters for
  bf16); ZeRO 1/2 reduce_scatter them and all_gather the updated parameters after the
  optimizer; ZeRO 3 also all_gathers each layer's parameters before its forward and backward of
  every micro-batch, prefetched one layer ahead: a layer's gather is issued when the layer before
  it starts (Rajbhandari et al. 2020; the depth of DeepSpeed's stage-3 prefetch is a bucket of
  parameters, taken here as one layer [U]);
* the optimizer: a memory-bound pass over the local optimizer state
  (:func:`models.studies.planner.gpu_memory.optimizer_pass_bytes` per parameter).

The core every step graph shares (this module's dense step and
:mod:`models.studies.planner.parallel_graph`'s steps with context or expert parallelism, a
mixture-of-experts workload or an uneven split, of which a dense step is the ``cp = ep = 1`` case)
is here: the one input check (:func:`checked_workload`), the sink that builds or counts the tasks
(:class:`TaskSink`), the replicas' groups (:func:`replica_slot`), 1F1B's program order
(:func:`one_f_one_b`), a layer half's tensor-parallel collectives (:func:`tp_collectives`) and the
pipeline sends (:func:`pipeline_sends`). The dense step keeps its own layer halves (its forward
split evenly [U]) so that its simulated times stay what they were.

Kernel times come from the roofline of :mod:`models.studies.compute` (seconds reach the
simulator; FLOPs are converted here, the floor that knows the GPUs). The attention and MLP
halves of a layer split its forward evenly [U].

Examples
--------
>>> import topo
>>> from models.studies.planner import plan
>>> G = topo.build("dgxh100")
>>> p = plan("llama3-8b", G, tp=8, pp=1, dp=1, zero=0, global_batch=2)
>>> g = step_graph(p, G)
>>> len(g.tasks), g.tasks[0].kind, g.tasks[1].op     # sequence parallel: reduce_scatter + all_gather
(769, 'compute', 'reduce_scatter')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import networkx as nx

import topo
from topo.errors import DgxTopoError, LimitError
from topo.units import parse_count

from ..predict.decompose import host_kinds
from ..predict.simulate import EVENTS_PER_TASK, MAX_EVENTS, SimulationResult, simulate
from ..predict.taskgraph import MAX_BYTES, Task, TaskGraph
from .compute import ComputeModel, compute_model, gpu_of
from .moe import is_moe_spec, moe_workload
from .workload import CNN, DEFAULT_BUCKET, activation_bytes_per_element, dtype_bytes, optimizer_pass_bytes, state_bytes, \
    workload as as_workload, Workload

__all__ = ["StepGraphError", "PlanDoesNotFitError", "step_graph", "step_graph_size", "check_step_events", "folds",
           "simulate_plan", "compute_time", "simulate_many"]


class StepGraphError(DgxTopoError):
    """A plan that cannot become a step graph (a layout that does not fit, a CNN, bad options)."""


class PlanDoesNotFitError(StepGraphError):
    """A plan that does not fit in memory has no step to build. The message gives the bytes it needs
    and the GPU's;
    :func:`models.present.plan_text.plan_error_text` words it (``dgxtopo simulate`` prints that).

    Attributes
    ----------
    plan : models.studies.planner.Plan
    """

    def __init__(self, plan: Any):
        super().__init__(f"the plan does not fit: it needs {plan.memory.total:.4g} bytes per GPU, which has "
                         f"{plan.memory.capacity:.4g}; expected a layout that fits in memory")
        self.plan = plan

    def __reduce__(self):  # rebuilt from its plan (pickled by process pools)
        return (type(self), (self.plan,))


def compute_time(G: nx.DiGraph, *, efficiency: float | None = None) -> Callable[[float, str, Sequence[int]], float]:
    """``compute_time(flops, dtype, gpus) -> seconds`` for task graphs that give FLOPs.

    Each GPU's part (by model, :func:`models.studies.compute.gpu_of`) at the dtype's dense peak
    times the achievable fraction of a full wave of matrix multiplies (``efficiency``; default the
    compute model's per generation and dtype, :data:`models.studies.compute.GEMM_EFFICIENCY`);
    the slowest GPU of the task decides.

    Examples
    --------
    >>> import topo
    >>> f = compute_time(topo.build("dgxh100"), efficiency=0.75)
    >>> round(f(989.5e12 * 0.75, "bf16", (0,)), 6)
    1.0
    """
    nodes = topo.gpus(G)

    def seconds(flops: float, dtype: str, gpus) -> float:
        slowest = 0.0
        for g in gpus:
            cm = compute_model(gpu_of(G.nodes[nodes[g]].get("model", "")), dtype, efficiency=efficiency)
            slowest = max(slowest, flops / (cm.peak * cm.gemm_efficiency))
        return slowest

    return seconds


class TaskSink:
    """Where a step graph's schedule puts its tasks (this module's and
    :mod:`models.studies.planner.parallel_graph`'s): a list of them (``build``), or their count
    only, each folded image counted with ``images`` (the unfolded graph's size, as
    :func:`models.predict.simulate.simulation_size` sizes it), not without.

    ``image_maps``: per folded replica, GPU id of replica 0 -> its GPU id; a task added with
    ``fold`` carries the images of its GPUs under them, one added with ``images`` those given.
    """

    def __init__(self, image_maps=(), build: bool = True, images: bool = True):
        self.image_maps = image_maps
        self.build = build
        self.images = images
        self.tasks: list = []
        self.count = 0
        self._images: dict = {}  # GPU ids of replica 0 -> their images (a step repeats a few groups)

    def add(self, id_, op, gpus, *, nbytes=0, seconds=0.0, after=(), kind="", fold=False, images=()) -> str:
        gpus = tuple(gpus)
        if fold:
            found = self._images.get(gpus)
            if found is None:
                found = self._images[gpus] = tuple(tuple(m[g] for g in gpus) for m in self.image_maps)
            images = found
        self.count += 1 + (len(images) if self.images else 0)
        if self.build:
            self.tasks.append(Task(id_, op, gpus, int(nbytes), float(seconds), flat_ids(after), kind,
                                   images=tuple(images)))
        return id_


class GraphBuilder(TaskSink):
    """The sink that builds the tasks (:func:`step_graph`,
    :func:`models.studies.planner.parallel_graph.parallel_step_graph`)."""

    def __init__(self, image_maps=()):
        super().__init__(image_maps, build=True)


def flat_ids(after) -> tuple:
    """Task ids from ids and tuples of ids (a step that ends in several tasks), empty ones and
    repeats dropped."""
    out: list = []
    for a in after:
        if isinstance(a, tuple):
            out.extend(x for x in a if x)
        elif a:
            out.append(a)
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True, slots=True)
class _Times:
    """The kernel times a step's tasks take (:func:`step_graph`; zero when only counted). [s]"""

    layer_forward: float = 0.0
    layer_backward: float = 0.0
    head_forward: float = 0.0
    head_backward: float = 0.0
    recompute_layer: float = 0.0
    scale: float = 0.0  # the compute model's calibrated scale
    optimizer_bandwidth: float = 1.0  # the HBM bandwidth the optimizer's pass achieves [B/s]


def check_graph_input(plan: Any, bucket) -> None:
    """Refuse a plan that does not fit, interleaved stages or a bucket below one byte: what no step
    graph builds (this module's and :mod:`models.studies.planner.parallel_graph`'s)."""
    if not plan.fits:
        raise PlanDoesNotFitError(plan)
    if isinstance(bucket, bool) or not isinstance(bucket, (int, float)) or not bucket >= 1:
        raise StepGraphError(f"bucket must be a size >= 1 byte, received {bucket!r}")
    if plan.layout.virtual_stages != 1:
        raise StepGraphError(f"the plan interleaves {plan.layout.virtual_stages} virtual stages: step graphs follow "
                             "plain 1F1B (expected virtual_stages 1)")


def plan_compute(plan: Any, G: nx.DiGraph, w, *, efficiency: float | None = None,
                 attention_efficiency: float | None = None, memory_efficiency: float | None = None) -> ComputeModel:
    """The compute model that times a plan's kernels: its GPU part (the slowest HBM of its GPUs,
    as the planner takes it), dtype, software stack and calibrated scale."""
    nodes = topo.gpus(G)
    gen = min((gpu_of(G.nodes[nodes[g]].get("model", "")) for group in plan.groups["tp"] for g in group),
              key=lambda part: (part.memory_bandwidth, part.memory))
    scale = plan.calibration.scale if plan.calibration is not None else 1.0
    return compute_model(gen, plan.dtype, stack=plan.software or None, workload=w, efficiency=efficiency,
                         attention_efficiency=attention_efficiency, memory_efficiency=memory_efficiency, scale=scale)


def step_workload(plan: Any, workload=None) -> Any:
    """The workload of a plan's step: ``workload``, else the plan's own (``workload_spec``, else
    its name), a name read as its preset or spec (a mixture-of-experts one included)."""
    spec = workload if workload is not None else getattr(plan, "workload_spec", None) or plan.workload
    if isinstance(spec, str):
        return moe_workload(spec) if is_moe_spec(spec) else as_workload(spec)
    return spec


def is_extended_step(plan: Any, w) -> bool:
    """A step with expert or context parallelism, an uneven split or a MoE workload: the one
    :func:`models.studies.planner.parallel_graph.parallel_step_graph` builds; a dense step is its
    ``cp = ep = 1`` case that :func:`step_graph` builds."""
    return bool(plan.layout.extended) or getattr(w, "kind", None) == "moe"


def checked_workload(plan: Any, workload, bucket, *, dense: bool = False) -> Any:
    """The plan's workload (:func:`step_workload`), when its step can be a step graph: the one
    input check of every step graph (:func:`check_graph_input`, then a transformer; ``dense``:
    also a dense step, :func:`is_extended_step`).

    Raises
    ------
    StepGraphError
        Naming what was expected: a plan that fits, a bucket of at least one byte, plain 1F1B, a
        dense layout (``dense``), a transformer.
    """
    check_graph_input(plan, bucket)
    w = step_workload(plan, workload)
    if dense and is_extended_step(plan, w):
        raise StepGraphError(f"{plan.layout.label()} of {plan.workload} has expert or context parallelism, a "
                             "mixture-of-experts workload or an uneven split: expected a dense layout (its step "
                             "graph is models.studies.planner.parallel_graph.plan_step_graph's)")
    if isinstance(w, CNN):
        raise StepGraphError(f"{w.name} is a CNN: expected a transformer (step graphs follow Megatron's schedule)")
    return w


def replica_slot(plan: Any) -> Callable[[int, int], tuple]:
    """``slot(p, j)``: the tensor-parallel group of stage ``p`` of replica ``j`` (of the ``dp x cp``
    GPUs' groups holding the same weights; ``dp`` of a dense layout)."""
    slots, lay = plan.groups["tp"], plan.layout
    width = lay.dp * lay.cp
    if lay.order == "tp-dp-pp":
        return lambda p, j: slots[p * width + j]
    return lambda p, j: slots[j * lay.pp + p]


def tp_collectives(out: TaskSink, prefix: str, group, after, count: int, *, nbytes: float, sequence_parallel: bool,
                   fold: bool) -> str:
    """``count`` tensor-parallel collectives of a layer half over ``group``, one after the other
    after ``after``: an all_reduce of ``nbytes`` each, or with sequence parallelism a
    reduce_scatter then an all_gather; the last id (``after`` without tensor parallelism)."""
    last = after
    if len(group) == 1:
        return last
    for c in range(count):
        if sequence_parallel:
            last = out.add(f"{prefix}.rs{c}", "reduce_scatter", group, nbytes=nbytes, after=(last,), kind="tp_comm",
                           fold=fold)
            last = out.add(f"{prefix}.ag{c}", "all_gather", group, nbytes=nbytes, after=(last,), kind="tp_comm",
                           fold=fold)
        else:
            last = out.add(f"{prefix}.ar{c}", "all_reduce", group, nbytes=nbytes, after=(last,), kind="tp_comm",
                           fold=fold)
    return last


def pipeline_sends(out: TaskSink, base: str, group, to, nbytes: float, after, *, fold: bool) -> None:
    """Each tensor-parallel rank of ``group`` sends its ``nbytes`` to the same rank of ``to`` (the
    next or previous stage), after ``after``: ids ``{base}.send{r}``."""
    for r in range(len(group)):
        out.add(f"{base}.send{r}", "send", [group[r], to[r]], nbytes=nbytes, after=(after,), kind="pp_comm",
                fold=fold)


def step_graph(plan: Any, G: nx.DiGraph, *, workload: str | Workload | None = None, bucket: float = DEFAULT_BUCKET,
               efficiency: float | None = None, attention_efficiency: float | None = None,
               memory_efficiency: float | None = None, fold: bool = True, compute: ComputeModel | None = None,
               max_events: int | None = None) -> TaskGraph:
    """The task graph of one training step of a plan (module docstring).

    Parameters
    ----------
    plan : Plan
        From :func:`models.studies.planner.plan` on ``G`` (its groups are GPU ids of ``G``).
    G : networkx.DiGraph
    workload : optional
        The workload, when the plan does not carry it (a :class:`models.studies.planner.Plan`
        of ``plan``/``search`` does, in ``workload_spec``; ``plan.workload`` is only its name).
    bucket : float
        Data-parallel gradient bucket. [bytes]
    efficiency, attention_efficiency, memory_efficiency : float, optional
        The compute model's achievable fractions (:func:`models.studies.compute.compute_model`;
        defaults per GPU generation and dtype). The kernels are timed by the same compute model
        as the plan's (its GPU part, dtype, software stack and calibrated scale).
    compute : models.studies.compute.ComputeModel, optional
        Time the kernels by this compute model instead (the planner passes its own, with its
        forced generation, fractions and scale); the fractions above are then ignored.
    fold : bool
        Build replica 0's tasks only, each carrying the other data-parallel replicas' copies as
        *images* (:class:`models.predict.taskgraph.Task`): their links are charged, and they run in
        lockstep with replica 0. Exact when the replicas' GPUs are images of each other under a
        symmetry of the fabric (identical hosts; a network that treats their hosts alike), which
        is the case of the built-in clusters up to the network's placement of hosts on leaves [U].
        Replicas on hosts that are not copies of replica 0's (a what-if that changed one host,
        :func:`models.predict.decompose.host_kinds`) are built unfolded; inside one host, the
        replicas are taken as images of each other [U]. ``False`` builds every replica (the
        simulation then costs ``dp`` times more).
    max_events : int, optional
        Refuse a graph whose simulation would take more than this many events (three per task
        built, :func:`models.predict.simulate.simulation_size`), counted in closed
        form from the plan before anything is built (:func:`step_graph_size`). None: no limit.

    Returns
    -------
    TaskGraph

    Raises
    ------
    StepGraphError
        For a plan that does not fit, a CNN workload, or a bucket below one byte.
    topo.LimitError
        Beyond ``max_events`` (keyword ``max_events``), before the graph is built.
    """
    w = checked_workload(plan, workload, bucket, dense=True)
    lay = plan.layout
    tp, pp, dp, b = lay.tp, lay.pp, lay.dp, lay.micro_batch
    maps = []
    if fold:
        maps = _replica_maps(plan)
        fold = hosts_alike(G, maps)
        maps = maps if fold else []
    if max_events is not None:  # sized as it will be built: folded only where the hosts allow it
        check_step_events(plan, max_events, workload=w, bucket=bucket, fold=fold)
    cm = compute if compute is not None else plan_compute(plan, G, w, efficiency=efficiency,
                                                          attention_efficiency=attention_efficiency,
                                                          memory_efficiency=memory_efficiency)
    elem = dtype_bytes(plan.dtype)
    act_elem = activation_bytes_per_element(plan.dtype)

    layer_times = cm.times(w.layer_ops(b, tp, elem, sequence_parallel=lay.sequence_parallel, stack=cm.stack,
                                       act=act_elem))
    head_times = cm.times(w.head_ops(b, tp, elem, act=act_elem)[1:])  # the head and loss of the last stage
    # what the layout's recomputation runs again before a layer's backward (full: its whole forward)
    recompute_layer = float(sum(t.forward for t in layer_times if lay.recompute.recomputes(t.op.name)))
    times = _Times(sum(t.forward for t in layer_times), sum(t.backward for t in layer_times),
                   sum(t.forward for t in head_times), sum(t.backward for t in head_times), recompute_layer,
                   cm.scale, cm.gpu.memory_bandwidth * cm.memory_efficiency)
    out = GraphBuilder(maps)
    _schedule(out, plan, w, bucket=bucket, fold=fold, times=times)
    return TaskGraph(tuple(out.tasks), f"{plan.workload} {lay.label()}")


def _replica_maps(plan: Any) -> list:
    """GPU maps from data-parallel replica 0 to each other replica (the images of a folded graph)."""
    lay = plan.layout
    slot = replica_slot(plan)
    return [{g: h for p in range(lay.pp) for g, h in zip(slot(p, 0), slot(p, d))} for d in range(1, lay.dp)]


def folds(plan: Any, G: nx.DiGraph) -> bool:
    """Whether :func:`step_graph` folds a dense plan's replicas on ``G`` (their hosts are copies of
    each other), so that a budget sizes the graph as it will be built."""
    return hosts_alike(G, _replica_maps(plan))


def _schedule(out, plan: Any, w: Workload, *, bucket: float, fold: bool, times: _Times,
              shape_only: bool = False) -> None:
    """Add the tasks of one training step of ``plan`` to ``out`` (the module docstring's
    schedule): the one description of a step graph's shape, which :func:`step_graph` builds
    (``out`` a :class:`GraphBuilder`) and :func:`step_graph_size` counts (a :class:`TaskCounter`).

    ``fold``: replica 0's tasks only, carrying the other replicas as images. ``shape_only``
    (counting): what has the shape of something walked is counted, not walked again: every
    micro-batch's forward (backward) block on a stage has the tasks of the first forward (the
    last backward, whose layer ends the gradient buckets wait for), and the replicas after the
    second have the second's (only replica 0 differs: it issues ZeRO 3's gathers for all).
    """
    lay = plan.layout
    tp, pp, dp, m, b = lay.tp, lay.pp, lay.dp, lay.micro_batches, lay.micro_batch
    act_elem = activation_bytes_per_element(plan.dtype)
    weight_elem, grad_elem, _ = state_bytes(plan.dtype)  # the gradients at their own bytes (fp32 for bf16)
    tp_bytes = b * w.seq * w.hidden * act_elem
    base, more = divmod(w.layers, pp)
    layers = [base + (s < more) for s in range(pp)]  # the first stages take the remainder
    slot = replica_slot(plan)
    layer_grad = w.layer_parameters / tp * grad_elem
    replicas = range(1) if fold else range(dp)
    walked = replicas[:2] if shape_only else replicas
    last_grads = {(d, p): [] for d in replicas for p in range(pp)}  # the last backward's layer ends
    stage_end: dict = {}
    dp_group = {(p, r): tuple(slot(p, d)[r] for d in range(dp)) for p in range(pp) for r in range(tp)}
    gathered = w.layer_parameters / tp * weight_elem  # ZeRO 3: a layer's parameters, gathered

    def tp_comm(prefix, group, after, count) -> str:
        return tp_collectives(out, prefix, group, after, count, nbytes=tp_bytes,
                              sequence_parallel=lay.sequence_parallel, fold=fold)

    def zero3_gather(prefix, p, after) -> list:
        return [out.add(f"{prefix}.zg{r}", "all_gather", dp_group[p, r],
                        nbytes=gathered, after=(after,), kind="dp_comm") for r in range(tp)]

    for d in walked:
        start = out.count
        for p in range(pp):
            group = slot(p, d)
            nl = layers[p]
            last_stage = p == pp - 1
            if shape_only:  # the blocks whose tasks every other block of the stage repeats
                order = [("F", 0), ("B", m - 1)]
            else:
                order = one_f_one_b(pp, p, m)
            prev = ""
            block = {}  # shape only: the tasks of the first forward's block and of the last backward's
            for what, i in order:
                block_start = out.count
                base = f"d{d}.p{p}.{what}{i}"
                after_in = []
                if what == "F" and p > 0:
                    after_in = [f"d{d}.p{p - 1}.F{i}.send{r}" for r in range(tp)]
                if what == "B" and not last_stage:
                    after_in = [f"d{d}.p{p + 1}.B{i}.send{r}" for r in range(tp)]
                last = prev
                gate = tuple(after_in)
                layer_ids = range(nl) if what == "F" else reversed(range(nl))
                ahead = last  # ZeRO 3 issues a layer's gather when the layer before it starts
                for li in layer_ids:
                    lid = f"{base}.l{li}"
                    zg = []  # ZeRO 3: the layer's parameters, gathered over the data-parallel group
                    if lay.zero == 3 and dp > 1 and d == 0:
                        zg = zero3_gather(lid, p, ahead)
                        ahead = last
                    elif lay.zero == 3 and dp > 1:
                        zg = [f"d0.p{p}.{what}{i}.l{li}.zg{r}" for r in range(tp)]
                    work = times.layer_forward if what == "F" else times.layer_backward + times.recompute_layer
                    if what == "B" and last_stage and li == nl - 1:
                        work += times.head_backward
                    half = work / 2
                    c0 = out.add(f"{lid}.c0", "compute", group, seconds=half, after=(last, *gate, *zg),
                                 kind="compute", fold=fold)
                    gate = ()
                    a0 = tp_comm(f"{lid}.h0", group, c0, 1 + (lay.recompute.repeated(1) if what == "B" else 0))
                    extra = times.head_forward if (what == "F" and last_stage and li == nl - 1) else 0.0
                    c1 = out.add(f"{lid}.c1", "compute", group, seconds=half + extra, after=(a0,), kind="compute",
                                 fold=fold)
                    last = tp_comm(f"{lid}.h1", group, c1, 1 + (lay.recompute.repeated(1) if what == "B" else 0))
                    if what == "B" and i == m - 1 and dp > 1:
                        last_grads[(d, p)].append((li, last))
                if what == "F" and not last_stage:
                    pipeline_sends(out, base, group, slot(p + 1, d), tp_bytes / tp, last, fold=fold)
                if what == "B" and p > 0:
                    pipeline_sends(out, base, group, slot(p - 1, d), tp_bytes / tp, last, fold=fold)
                prev = last
                block[what] = out.count - block_start
            if shape_only:  # every micro-batch's forward and backward block has the same tasks
                out.count += (m - 1) * sum(block.values())
            stage_end[(d, p)] = prev
    if len(walked) < len(replicas):  # shape only: the other replicas are copies of the last walked
        out.count += (out.count - start) * (len(replicas) - len(walked))
        for d in replicas[len(walked):]:
            for p in range(pp):
                last_grads[(d, p)], stage_end[(d, p)] = last_grads[(walked[-1], p)], stage_end[(walked[-1], p)]
    # data-parallel gradient buckets (one collective per tensor-parallel rank's data-parallel group)
    finals = []
    for p in range(pp):
        nl = layers[p]
        extra = 0.0  # embedding / head parameters of the first / last stage join the last bucket
        if p == 0:
            extra += w.embedding_parameters + getattr(w, "extra_parameters", 0)
        if p == pp - 1:
            extra += w.head_parameters + (w.vocab * w.hidden if w.tied and pp > 1 else 0)
        extra_bytes = extra / tp * grad_elem
        local = (nl * w.layer_parameters + extra) / tp
        opt_seconds = (times.scale * local / (dp if lay.zero >= 1 else 1) * optimizer_pass_bytes(plan.dtype)
                       / times.optimizer_bandwidth)
        if dp == 1:
            finals.append(out.add(f"d0.p{p}.opt", "compute", slot(p, 0), seconds=opt_seconds,
                                  after=(stage_end[(0, p)],), kind="optimizer"))
            continue
        collective = "all_reduce" if lay.zero == 0 else "reduce_scatter"
        # layer order of the last backward: the last layer first; the buckets fill in that order
        ready = last_grads[(0, p)]
        buckets, filled, members = [], 0.0, []
        for li, done_id in ready:
            filled += layer_grad
            members.append(li)
            if filled >= bucket:
                buckets.append((filled, members[-1]))
                filled, members = 0.0, []
        filled += extra_bytes
        if filled > 0:
            buckets.append((filled, None))
        done_of = {li: k for k, (li, _) in enumerate(ready)}
        prev_bucket = {}
        for k, (nbytes, li) in enumerate(buckets):
            waits = [last_grads[(d, p)][done_of[li]][1] if li is not None else stage_end[(d, p)]
                     for d in replicas]
            for r in range(tp):
                group = dp_group[p, r]
                prev_bucket[r] = out.add(f"p{p}.bucket{k}.r{r}", collective, group, nbytes=nbytes,
                                         after=(*waits, prev_bucket.get(r, "")), kind="dp_comm")
        for d in replicas:
            opt = out.add(f"d{d}.p{p}.opt", "compute", slot(p, d), seconds=opt_seconds,
                          after=(stage_end[(d, p)], *prev_bucket.values()), kind="optimizer", fold=fold)
            finals.append(opt)
        if lay.zero in (1, 2):
            for r in range(tp):
                group = dp_group[p, r]
                finals.append(out.add(f"p{p}.params.r{r}", "all_gather", group, nbytes=local * weight_elem,
                                      after=tuple(f"d{d}.p{p}.opt" for d in replicas), kind="dp_comm"))


def one_f_one_b(pp: int, p: int, m: int) -> list:
    """Stage ``p``'s blocks in 1F1B's program order: ``min(pp - p - 1, m)`` warm-up forwards, then
    a forward and a backward in turn, then the cool-down backwards; ``("F" or "B", micro-batch)``."""
    return [block for unit in one_f_one_b_units(min(pp - p - 1, m), m, paired=False) for block in unit]


def one_f_one_b_units(warmup: int, micro_batches: int, *, paired: bool) -> tuple:
    """A stage's 1F1B program as units of ``("F" or "B", micro-batch)`` blocks: ``warmup``
    forwards, then forward ``i + warmup`` and backward ``i`` (one unit of both when
    ``paired``, else one each, the forward first), then the last ``warmup`` backwards.

    >>> one_f_one_b_units(1, 3, paired=False)
    ((('F', 0),), (('F', 1),), (('B', 0),), (('F', 2),), (('B', 1),), (('B', 2),))
    >>> one_f_one_b_units(1, 3, paired=True)
    ((('F', 0),), (('F', 1), ('B', 0)), (('F', 2), ('B', 1)), (('B', 2),))
    """
    units: list = [(("F", i),) for i in range(warmup)]
    for i in range(micro_batches - warmup):
        pair = (("F", i + warmup), ("B", i))
        units += [pair] if paired else [pair[:1], pair[1:]]
    return tuple(units + [(("B", i),) for i in range(micro_batches - warmup, micro_batches)])


def hosts_alike(G, maps) -> bool:
    """Every GPU of replica 0 and its image in another replica on hosts that are copies."""
    kinds = host_kinds(G)
    if not kinds:
        return True
    nodes = topo.gpus(G)

    def kind(g):
        return kinds.get(str(nodes[g]).split(".", 1)[0])

    return all(kind(g) == kind(h) for m in maps for g, h in m.items())


def step_graph_size(plan: Any, *, workload: str | Workload | None = None, bucket: float = DEFAULT_BUCKET,
                    fold: bool = True) -> int:
    """Tasks :func:`step_graph` builds for a plan, counted without building them (to size a
    simulation first: :func:`models.predict.simulate.simulation_size` is three events per task).

    The count walks the same schedule the graph is built from (:func:`_schedule`), skipping only
    what repeats a shape already walked (the other micro-batches of a stage, the replicas after
    the second), so it cannot drift from the graph and costs a few layers per stage. With
    ``fold`` it counts a folded graph, as :func:`step_graph` builds on a fabric whose replicas'
    hosts are copies of each other. 0 for a plan that is no step graph (one that does not fit, a
    CNN, interleaved stages, a bucket below one byte).

    Examples
    --------
    >>> import topo
    >>> from models.studies.planner import plan
    >>> G = topo.build("dgxh100")
    >>> p = plan("llama3-8b", G, tp=8, pp=1, dp=1, zero=0, global_batch=2, simulate=0)
    >>> step_graph_size(p) == len(step_graph(p, G))
    True
    """
    try:
        w = checked_workload(plan, workload, bucket, dense=True)
    except StepGraphError:
        return 0
    out = TaskSink(build=False, images=False)
    _schedule(out, plan, w, bucket=bucket, fold=fold, times=_Times(), shape_only=True)
    return out.count


def check_step_events(plan: Any, max_events: int, *, workload: str | Workload | None = None,
                      bucket: float = DEFAULT_BUCKET, fold: bool = True) -> int:
    """The events a simulation of a plan's step takes (three per task built, as
    :func:`models.predict.simulate.simulation_size` sizes the graph: a folded image adds none),
    counted without building it (:func:`step_graph_size`, folded unless ``fold`` is False, as
    :func:`step_graph` builds it on hosts that are not copies of each other); refused beyond
    ``max_events``.

    Raises
    ------
    topo.LimitError
        Beyond ``max_events`` (keyword ``max_events``): it names the tasks, the events and the limit.

    Examples
    --------
    >>> import topo
    >>> from models.studies.planner import plan
    >>> p = plan("llama3-8b", topo.build("dgxh100"), tp=8, pp=1, dp=1, zero=0, global_batch=100_000, simulate=0)
    >>> check_step_events(p, 1_000_000)
    Traceback (most recent call last):
    ...
    topo.errors.LimitError: a simulation of the step's 38,400,001 tasks (115,200,003 events, three per task, counted before building it): 115200003 is more than max_events=1000000
    """
    max_events = parse_count(max_events, name="max_events", maximum=MAX_BYTES)
    return step_events(step_graph_size(plan, workload=workload, bucket=bucket, fold=fold), max_events)


def step_events(tasks: int, max_events: int) -> int:
    """The events of a step graph of ``tasks`` tasks (three each), refused beyond
    ``max_events`` (:class:`topo.LimitError`, keyword ``max_events``)."""
    events = EVENTS_PER_TASK * tasks
    if events > max_events:
        raise LimitError(f"a simulation of the step's {tasks:,} tasks ({events:,} events, three per task, "
                         f"counted before building it)", keyword="max_events", size=events, limit=max_events)
    return events


def simulate_plan(plan: Any, G: nx.DiGraph, *, bucket: float = DEFAULT_BUCKET, workload: str | Workload | None = None,
                  **options: Any) -> SimulationResult:
    """Simulate one step of a plan (:func:`step_graph`, then :func:`models.predict.simulate.simulate`).

    Examples
    --------
    >>> import topo
    >>> from models.studies.planner import plan
    >>> G = topo.build("dgxh100")
    >>> p = plan("llama3-8b", G, tp=8, pp=1, dp=1, zero=0, global_batch=1, simulate=0)
    >>> r = simulate_plan(p, G)     # one micro-batch: nothing to overlap, the analytical sum
    >>> round(r.step_time * 1e3, 1), round(p.step_time * 1e3, 1), sorted(r.critical_by_kind())
    (162.3, 163.2, ['compute', 'optimizer', 'tp_comm'])
    """
    # The budget is counted on the plan before the graph is built (the simulator counts it again).
    budget = options.get("max_events", MAX_EVENTS)
    return simulate(G, step_graph(plan, G, bucket=bucket, workload=workload, max_events=budget), **options)


def _simulate_one(item):
    """One simulation of :func:`simulate_many` (module level: executors pickle it)."""
    G, graph, options = item
    return simulate(G, graph, **options)


def simulate_many(items: Iterable[tuple[nx.DiGraph, TaskGraph]], *, executor: Executor | None = None,
                  **options: Any) -> list:
    """Simulate many ``(G, TaskGraph)`` pairs (layouts, what-ifs), on an executor or in-process.

    Parameters
    ----------
    items : iterable of (networkx.DiGraph, TaskGraph)
    executor : concurrent.futures.Executor, optional
        Where to run them (a process pool, a Dask client's ``get_executor()``); None: here, one
        after the other. Every simulation is deterministic, so the results are identical.
    **options
        For :func:`models.predict.simulate.simulate` (not ``progress`` or ``decomposer``).

    Returns
    -------
    list of SimulationResult
        In the order of ``items``.

    Examples
    --------
    >>> import topo
    >>> from models.predict.simulate import task_graph
    >>> g = task_graph({"tasks": [{"id": "ar", "op": "all_reduce", "gpus": [0, 1, 2, 3], "bytes": 2**26}]})
    >>> [round(r.step_time * 1e3, 3) for r in simulate_many([(topo.build("dgxh100"), g), (topo.build("dgxa100"), g)])]
    [0.32, 0.453]
    """
    work = [(G, graph, options) for G, graph in items]
    if executor is None:
        return [_simulate_one(item) for item in work]
    return list(executor.map(_simulate_one, work))
