"""A training step on a fabric: layouts, placement, memory, and where the time goes.

One module per topic: :mod:`~models.studies.planner.records` (the records and errors),
:mod:`~models.studies.planner.gpu_memory` (memory per GPU), :mod:`~models.studies.planner.step`
(the step's components), :mod:`~models.studies.planner.placement` (the job's GPUs and groups),
:mod:`~models.studies.planner.layouts` (the layout search), :mod:`~models.studies.planner.calibrate`
(a measured step), :mod:`~models.studies.planner.ranking` (GPU generations), and for context and
expert parallelism, uneven pipeline splits and mixture-of-experts workloads
:mod:`~models.studies.planner.parallel` (splits, ring and dispatch bytes),
:mod:`~models.studies.planner.parallel_step` (their step and memory) and
:mod:`~models.studies.planner.dispatch` (every all-to-all priced in one function). The face below lists
what a user calls, each imported from its module on first use (:mod:`topo.faces`).

:func:`plan` answers "how long does one training step of this workload take on these GPUs, with
which (tensor, pipeline, data) parallel layout and which GPUs in each group?"; :func:`search`
ranks every layout; :func:`calibrate_plan` fits the compute model to one step the user measured;
:func:`gpus_ranking` answers "which GPU generation suits this workload?".

The step (one global batch; Narayanan et al. 2021, "Efficient Large-Scale Language Model
Training on GPU Clusters Using Megatron-LM", sections 2-3) on the heaviest pipeline stage is
:func:`step_components`, a function of the workload, the layout, the compute model
(:mod:`models.studies.compute`) and the communication estimates:

* compute: ``m`` micro-batches (``m = global_batch / (dp x micro_batch)``), each a forward and
  a backward of the stage's layers, every kernel timed by the compute model (products
  quantised into tiles and waves, the backward as the two transposed products, memory-bound
  passes by their bytes), plus one forward more with full recomputation (the attention core
  with selective recomputation);
* tensor parallel: per layer and micro-batch 2 all_reduces of ``b s h`` activations in the
  forward and 2 in the backward (2 more with recomputation) (Shoeybi et al. 2019, "Megatron-LM",
  section 3); with sequence parallelism each becomes a reduce_scatter and an all_gather of the
  same buffer (Korthikanti et al. 2022, section 4.2.2). On the critical path (not overlapped);
* pipeline: 1F1B; per micro-batch one send of the activations and one of their gradients
  between adjacent stages (``b s h / t`` bytes with Megatron's scatter/gather, Narayanan et al.
  2021, section 4.1), ``m + p - 1`` times, on the critical path; the bubble is ``p - 1``
  micro-batch slots, ``(p - 1) / m`` of the ideal step. With ``v`` virtual stages per GPU
  (interleaved 1F1B, Narayanan et al. 2021, section 2.2.2) the bubble shrinks to ``(p - 1) /
  (v m)`` and the sends grow to ``v m + p - 1`` each way;
* data parallel: after the last micro-batch, gradients all_reduced in buckets (``bucket``,
  25 MiB as PyTorch DDP's ``bucket_cap_mb``), overlapped with that micro-batch's backward up to
  the fraction ``overlap`` of it; the last bucket is always exposed. With ``overlap`` 0 they
  (and ZeRO's parameter all_gathers) go as one buffer after the backward, in both passes, as
  Megatron-LM's DDP without ``overlap_grad_reduce`` sends them
  (:func:`~models.studies.planner.step.gradient_bucket`). ZeRO 1/2 (Rajbhandari et
  al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models") replace the
  all_reduce by a reduce_scatter (overlapped) and an all_gather of the updated parameters
  (exposed); ZeRO 3 / FSDP all_gather the parameters for every forward and backward of every
  micro-batch, overlapped with that pass up to ``overlap``. The gradients travel at their
  own bytes (fp32 for bf16 and the low-precision dtypes, as Megatron-LM reduces them; 16-bit
  for fp16) and the parameters at theirs (16-bit; fp32 for fp32 and tf32): the table of the
  memory below, :func:`~models.studies.planner.gpu_memory.state_bytes`;
* the optimizer step: a memory-bound pass over the local optimizer state (mixed-precision
  Adam reads the gradient, reads and writes the fp32 master weights and two moments and writes
  the 16-bit weights: :func:`~models.studies.planner.gpu_memory.optimizer_pass_bytes`, 30 bytes
  per parameter in bf16, from the table of the memory below).

That is the analytical *first pass*. The best :data:`DEFAULT_SIMULATED` layouts it finds are
then simulated (``simulate``): the step's task graph (:func:`models.studies.stepgraph.step_graph`:
Megatron's 1F1B schedule, the per-layer collectives, the sends, the gradient buckets launched as
the backward produces them; with expert or context parallelism, a MoE workload or an uneven split,
:mod:`models.studies.planner.parallel_graph`'s, with the dispatch and combine all-to-alls and the
K/V ring sends) runs on the fabric (:func:`models.predict.simulate.simulate`), so
overlap and contention, including concurrent groups sharing links, come from the schedule and
the fabric rather than fractions; they are ranked by their simulated step, and each plan says
how it was timed (``timing``). The simulations are sized first and share a budget of events
(``max_events``, :data:`PLAN_MAX_EVENTS`); a step beyond it, a CNN or an interleaved schedule
keeps its analytical step, with a note.

Every collective is a :func:`models.estimate` on the actual GPU group of the actual fabric, so
placement matters. Groups of one dimension run concurrently; the model also charges their
shared network ports (the traffic of every concurrent group crossing a host's NICs over the
host's NIC bandwidth), but not their sharing of links inside a host [U]. Estimates are cached
per group shape (GPU sets equal under the fabric's key of NCCL estimates,
:meth:`models.engine.symmetry.FabricSymmetry.nccl` with ``units``: identical hosts, the leaves of
a fat tree swapped whole with their hosts, and the symmetry of what NCCL's paths use), one
channel search per shape: each is run
on a grid of sizes and a size in between takes the best of the (latency, bandwidth) pairs NCCL
selected on the grid, which is NCCL's own selection whenever each candidate that wins somewhere
wins at a grid point.

Throughput is reported in both FLOP conventions: *model* FLOPs (no recomputation; MFU) and
*hardware* FLOPs (with what recomputation runs again; Megatron's published TFLOP/s and HFU),
:meth:`models.studies.workload.Transformer.training_flops_per_token`.

Memory per GPU (heaviest stage): weights, gradients and optimizer state (mixed-precision Adam
as Megatron-LM keeps it, :func:`~models.studies.planner.gpu_memory.state_bytes`: bf16 and the
low-precision dtypes 2 + 4 + 12 = 18 bytes per parameter, the gradients in fp32; fp16 2 + 2 + 16;
fp32 and tf32 4 + 4 + 8) sharded by ZeRO stage,
activations of the micro-batches in flight (1F1B keeps ``p`` on the first stage, times ``1 +
(p - 1) / (p v)`` when interleaved, Korthikanti et al. 2022, section 4.2.3; per layer
:meth:`models.studies.workload.Transformer.activation_bytes`) and the fp32 logits of the last
stage. A layout that does not fit is a result with the numbers (``fits`` False), not an error.

Placement: a job of fewer GPUs than the fabric takes, inside one host, the GPUs whose
all_reduce is fastest (on a DGX-1V, 4 GPUs of one cube face), or whole hosts. Tensor-parallel
groups stay inside a host (Megatron practice) and, within a host, take the partition of its
GPUs whose slowest group's all_reduce is fastest (on a DGX-1 a group of 4 inside a cube face,
not across the sockets); a tensor-parallel degree given larger than a host spans whole hosts
(modelled, with a warning). The groups then form data- and pipeline-parallel groups in either
nesting order (``tp-dp-pp``, Megatron's, or ``tp-pp-dp``), and the faster one is kept.

Examples
--------
>>> import topo
>>> from models.studies.planner import plan
>>> p = plan("megatron-8.3b", topo.dgx2(), tp=8, pp=1, dp=2, zero=0, recompute="full", dtype="fp16")
>>> p.fits, p.layout.tp, len(p.groups["tp"])
(True, 8, 2)
>>> p.hardware_tflops_per_gpu > p.model_tflops_per_gpu  # recomputation runs a forward again
True
"""

from types import MappingProxyType
from typing import TYPE_CHECKING

from topo.faces import lazy_face

# What a user calls, and the module that defines it.
_FACE = MappingProxyType({
    **dict.fromkeys(("PlanError", "UnknownOptionError", "NoLayoutError", "DoesNotFitError", "Layout", "Memory",
                     "PlanWarning", "TimingCode", "TimingWhy", "SkipCode", "SkippedLayout", "ComputeDetail",
                     "TensorParallelDetail", "PipelineDetail", "BubbleDetail", "DataParallelDetail",
                     "OptimizerDetail", "Component", "ComponentDetail", "Calibration", "Plan", "Search",
                     "ORDERS", "RECOMPUTE", "CP_COMM", "ContextParallelDetail", "ExpertParallelDetail"),
                    "models.studies.planner.records"),
    **dict.fromkeys(("stage_split", "PipelineSplit", "SplitError", "EP_OVERLAP"), "models.studies.planner.parallel"),
    "memory": "models.studies.planner.gpu_memory",
    "step_components": "models.studies.planner.step",
    "DEFAULT_OVERLAP": "models.studies.planner.step",
    "search": "models.studies.planner.layouts",
    "plan": "models.studies.planner.layouts",
    "DEFAULT_SIMULATED": "models.studies.planner.layouts",
    "PLAN_MAX_EVENTS": "models.studies.planner.layouts",
    "calibrate_plan": "models.studies.planner.calibrate",
    "parse_measured": "models.studies.planner.calibrate",
    "MEASURED_GRAMMAR": "models.studies.planner.calibrate",
    "GpuRank": "models.studies.planner.ranking",
    "gpus_ranking": "models.studies.planner.ranking",
    "DEFAULT_BUCKET": "models.studies.workload",
    "optimizer_pass_bytes": "models.studies.planner.gpu_memory",
})

__all__ = list(_FACE)

if TYPE_CHECKING:  # what a type checker sees of the face: each name as its module annotates it
    from ..workload import DEFAULT_BUCKET
    from .calibrate import MEASURED_GRAMMAR, calibrate_plan, parse_measured
    from .gpu_memory import memory, optimizer_pass_bytes
    from .layouts import DEFAULT_SIMULATED, PLAN_MAX_EVENTS, plan, search
    from .parallel import EP_OVERLAP, PipelineSplit, SplitError, stage_split
    from .ranking import GpuRank, gpus_ranking
    from .records import (CP_COMM, ORDERS, RECOMPUTE, BubbleDetail, Calibration, Component, ComponentDetail,
                          ComputeDetail, ContextParallelDetail, DataParallelDetail, ExpertParallelDetail, DoesNotFitError, Layout, Memory, NoLayoutError, OptimizerDetail,
                          PipelineDetail, Plan, PlanError, PlanWarning, Search, SkipCode, SkippedLayout,
                          TensorParallelDetail, TimingCode, TimingWhy, UnknownOptionError)
    from .step import DEFAULT_OVERLAP, step_components

__getattr__, __dir__ = lazy_face(__name__, _FACE)
