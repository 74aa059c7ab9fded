"""A training step on a fabric: layouts, placement, memory, and where the time goes.

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
  the fraction ``overlap`` of it; the last bucket is always exposed. ZeRO 1/2 (Rajbhandari et
  al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models") replace the
  all_reduce by a reduce_scatter (overlapped) and an all_gather of the updated parameters
  (exposed); ZeRO 3 / FSDP all_gather the parameters for every forward and backward of every
  micro-batch, overlapped with that pass up to ``overlap``;
* the optimizer step: a memory-bound pass over the local optimizer state (mixed-precision
  Adam reads and writes fp32 master weights, two moments, the gradient and the 16-bit weights,
  28 bytes per parameter [U]).

That is the analytical *first pass*. The best :data:`DEFAULT_SIMULATED` layouts it finds are
then simulated (``simulate``): the step's task graph (:func:`models.studies.stepgraph.step_graph`:
Megatron's 1F1B schedule, the per-layer collectives, the sends, the gradient buckets launched as
the backward produces them) runs on the fabric (:func:`models.predict.simulate.simulate`), so
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
:meth:`models.engine.symmetry.FabricSymmetry.nccl`: identical hosts, and the symmetry of what NCCL's
paths use), one channel search per shape: each is run
on a grid of sizes and a size in between takes the best of the (latency, bandwidth) pairs NCCL
selected on the grid, which is NCCL's own selection whenever each candidate that wins somewhere
wins at a grid point.

Throughput is reported in both FLOP conventions: *model* FLOPs (no recomputation; MFU) and
*hardware* FLOPs (with what recomputation runs again; Megatron's published TFLOP/s and HFU),
:meth:`models.studies.workload.Transformer.training_flops_per_token`.

Memory per GPU (heaviest stage): weights, gradients and optimizer state (mixed-precision Adam:
2 + 2 + 12 = 16 bytes per parameter; fp32 and tf32: 4 + 4 + 8) sharded by ZeRO stage,
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
>>> p = plan("megatron-8.3b", topo.dgx2(), tp=8, pp=1, dp=2, zero=0, recompute="full", dtype="fp16")
>>> p.fits, p.layout.tp, len(p.groups["tp"])
(True, 8, 2)
>>> p.hardware_tflops_per_gpu > p.model_tflops_per_gpu  # recomputation runs a forward again
True
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import inspect
import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

import topo
from topo.errors import DgxTopoError, LimitError, SizeError
from topo.select import GpuIds
from topo.units import GiB, parse_nbytes

from ..engine.results import tidy_records
from ..engine.fabric import PreparedFabric, prepare
from ..engine.nccl.profiles import NcclProfile
from ..engine.nccltests import busbw_factor
from ..engine.symmetry import GpuSymmetry
from ..predict.collectives import Estimator
from ..predict.decompose import Decomposer
from ..predict.simulate import simulate as simulate_graph
from .stepgraph import step_graph, step_graph_size
from .compute import GENERATIONS, ComputeFacts, ComputeModel, Gpu, compute_model, generation, gpu_of
from .workload import CNN, DEFAULT_BUCKET, OPTIMIZER_PASS_BYTES, activation_bytes_per_element, dtype_bytes, \
    TpConstraint, software as as_software, tp_limit, workload as as_workload, Workload

__all__ = ["PlanError", "Layout", "Memory", "Component", "ComputeDetail", "TensorParallelDetail", "PipelineDetail",
           "BubbleDetail", "DataParallelDetail", "OptimizerDetail", "Plan", "Search", "GpuRank", "Calibration",
           "PlanWarning", "TimingWhy", "TimingCode", "SkipCode", "SkippedLayout", "NoLayoutError",
           "DoesNotFitError", "UnknownOptionError", "plan", "search", "calibrate_plan", "memory", "step_components",
           "gpus_ranking",
           "parse_measured", "ORDERS", "RECOMPUTE", "DEFAULT_BUCKET", "DEFAULT_OVERLAP", "OPTIMIZER_PASS_BYTES",
           "MEASURED_GRAMMAR", "DEFAULT_SIMULATED", "PLAN_MAX_EVENTS"]

#: Nesting orders of the data- and pipeline-parallel groups over the tensor-parallel groups.
ORDERS = ("tp-dp-pp", "tp-pp-dp")
#: Recomputation modes (Korthikanti et al. 2022).
RECOMPUTE = ("none", "selective", "full")
#: Fraction of a backward (forward for ZeRO 3 gathers) that can hide data-parallel
#: communication: all of it by default (frameworks launch each bucket as soon as it is ready);
#: the last bucket is exposed regardless.
DEFAULT_OVERLAP = 1.0
#: How many of the best layouts of the analytical first pass :func:`search` simulates (a
#: simulation costs thousands of analytical estimates; the first pass's order is close).
DEFAULT_SIMULATED = 8
#: The planner's default budget of simulated events (three per task), over every candidate
#: simulated: about ten seconds of simulation on one core (examples/simulate_benchmark.py's
#: rate); a larger step keeps its analytical estimate, saying so.
PLAN_MAX_EVENTS = 300_000
#: The grammar of a measured step (:func:`parse_measured`).
MEASURED_GRAMMAR = ("a time per iteration (1.25s, 850ms) or TFLOP/s per GPU (150tflops: model "
                    "FLOPs, as MFU counts them; 150tflops:hardware: with recomputation, as Megatron "
                    "publishes them)")

# Sizes on which each group shape is estimated once (1 KiB to 64 GiB, x4 apart): a tuple, since a
# module-level array could be written to (an array is made where it is used).
_GRID = tuple(2.0 ** k for k in range(10, 37, 2))
# Above this many partitions of a host's GPUs, candidate partitions replace exhaustive search.
_MAX_PARTITIONS = 10000
# The size whose all_reduce ranks the GPU sets of a job smaller than a host: large enough to
# be bandwidth-bound, so the best-connected GPUs win. [bytes]
_PLACEMENT_BYTES = float(GiB)


class PlanError(DgxTopoError):
    """A planning request that cannot be met (degrees, batch, GPUs, options)."""


class UnknownOptionError(PlanError, TypeError):
    """A keyword :func:`plan`, :func:`search` or :func:`calibrate_plan` does not take (a
    :class:`PlanError`, and a TypeError as Python's own for an unexpected keyword); the message
    names the function called and the closest option."""


class NoLayoutError(PlanError):
    """No layout of the job can be evaluated: every one was refused (:class:`SkippedLayout`).

    The message names the first refusals as records;
    :func:`models.present.plan_text.plan_error_text` words them (``dgxtopo plan`` prints that).

    Attributes
    ----------
    workload, fabric : str
        The workload's and the fabric's names.
    ngpus : int
        The job's GPUs.
    skipped : tuple of SkippedLayout
        Every refusal, in the search's order (empty: the fixed degrees do not multiply to the GPUs).
    """

    def __init__(self, workload: str, ngpus: int, fabric: str, skipped: tuple):
        super().__init__(f"no layout of {workload} on {ngpus} GPUs of {fabric}: " +
                         ("; ".join(map(repr, skipped[:4])) or "the fixed degrees do not multiply to the GPUs"))
        self.workload, self.ngpus, self.fabric, self.skipped = workload, ngpus, fabric, tuple(skipped)

    def __reduce__(self):  # rebuilt from its numbers (pickled by process pools)
        return (type(self), (self.workload, self.ngpus, self.fabric, self.skipped))


class DoesNotFitError(PlanError):
    """The measured layout of :func:`calibrate_plan` does not fit in memory (it cannot have been
    measured).

    The message gives the bytes it needs and the GPU's; :func:`models.present.plan_text.plan_error_text`
    words the whole :class:`Memory` (``dgxtopo plan --calibrate`` prints that).

    Attributes
    ----------
    plan : Plan
        The layout's plan (``fits`` False).
    """

    def __init__(self, plan: Plan):
        m = plan.memory
        super().__init__(f"the measured layout {plan.layout.label()} does not fit: it needs {m.total:.4g} bytes "
                         f"per GPU, which has {m.capacity:.4g}; expected a layout that runs")
        self.plan = plan

    def __reduce__(self):  # rebuilt from its plan (pickled by process pools)
        return (type(self), (self.plan,))


@dataclass(frozen=True, slots=True)
class Layout:
    """A parallel layout.

    Attributes
    ----------
    tp, pp, dp : int
        Tensor-, pipeline- and data-parallel degrees; ``tp x pp x dp`` GPUs.
    zero : int
        ZeRO stage 0-3 over the data-parallel group.
    micro_batch, global_batch : int
        [samples]
    recompute : str
        One of :data:`RECOMPUTE`.
    sequence_parallel : bool
    order : str
        One of :data:`ORDERS`.
    virtual_stages : int
        Model chunks per GPU of an interleaved 1F1B pipeline (1: plain 1F1B).
    """

    tp: int
    pp: int
    dp: int
    zero: int
    micro_batch: int
    global_batch: int
    recompute: str
    sequence_parallel: bool
    order: str
    virtual_stages: int = 1

    @property
    def ngpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def micro_batches(self) -> int:
        """Micro-batches per step per pipeline, ``global_batch / (dp x micro_batch)``."""
        return self.global_batch // (self.dp * self.micro_batch)

    def label(self) -> str:
        return (f"tp{self.tp} pp{self.pp}{f' v{self.virtual_stages}' if self.virtual_stages > 1 else ''} "
                f"dp{self.dp} zero{self.zero} mb{self.micro_batch} "
                f"rc={self.recompute}{' sp' if self.sequence_parallel else ''} {self.order}")


@dataclass(frozen=True, slots=True)
class Memory:
    """Memory of one GPU of the heaviest stage. [bytes]

    Attributes
    ----------
    parameters, gradients, optimizer, activations : float
    capacity : float
        The GPU's device memory.
    """

    parameters: float
    gradients: float
    optimizer: float
    activations: float
    capacity: float

    @property
    def total(self) -> float:
        return self.parameters + self.gradients + self.optimizer + self.activations

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity

    def to_records(self) -> list:
        """One row: each part, the total and the capacity in bytes, and whether it fits."""
        return tidy_records({
            "parameters_bytes": self.parameters, "gradients_bytes": self.gradients,
            "optimizer_bytes": self.optimizer, "activations_bytes": self.activations,
            "total_bytes": self.total, "capacity_bytes": self.capacity, "fits": self.fits})


class PlanWarning(enum.Enum):
    """What a plan warns of (:attr:`Plan.warning_codes`;
    :func:`models.present.plan_text.warning_note` words each)."""

    #: Tensor-parallel groups span hosts: every layer's activations cross the network twice per
    #: pass (modelled as asked).
    CROSS_HOST_TP = "cross_host_tp"
    #: The calibration's fitted fractions of peak are above 1 (:attr:`Calibration.fitted`): the
    #: measurement implies more than the hardware's peak.
    ABOVE_PEAK = "above_peak"


class TimingCode(enum.Enum):
    """Why a plan's step is analytical, or what shaped a simulated one (:class:`TimingWhy`)."""

    #: Not among the ``count`` best of the analytical first pass (:func:`search`'s ``simulate``).
    NOT_AMONG_BEST = "not_among_best"
    #: ``simulate=0``: analytical only.
    ANALYTICAL_ONLY = "analytical_only"
    #: The simulations before it used up the budget ``max_events``.
    BEYOND_BUDGET = "beyond_budget"
    #: Its own simulation needs ``events``, more than the budget ``max_events`` left.
    NEEDS_EVENTS = "needs_events"
    #: A CNN's step is not simulated (step graphs follow Megatron's transformer schedule).
    CNN = "cnn"
    #: An interleaved 1F1B step is not simulated (step graphs build plain 1F1B).
    INTERLEAVED = "interleaved"
    #: Simulated: the fraction ``overlap`` (between 0 and 1) shaped the first pass only; the
    #: simulation overlaps the gradient buckets as the schedule allows.
    OVERLAP_FIRST_PASS = "overlap_first_pass"


@dataclass(frozen=True, slots=True)
class TimingWhy:
    """How a plan's timing came about, in numbers (:attr:`Plan.timing_why`);
    :func:`models.present.plan_text.timing_note` words it.

    Attributes
    ----------
    code : TimingCode
    count : int or None
        :attr:`TimingCode.NOT_AMONG_BEST`: the layouts simulated (``simulate``).
    events : int or None
        :attr:`TimingCode.NEEDS_EVENTS`: the events its simulation needs.
    max_events : int or None
        :attr:`TimingCode.BEYOND_BUDGET`, :attr:`TimingCode.NEEDS_EVENTS`: the budget.
    overlap : float or None
        :attr:`TimingCode.OVERLAP_FIRST_PASS`: the fraction given.

    Examples
    --------
    >>> TimingWhy(TimingCode.NEEDS_EVENTS, events=1200, max_events=1000).to_records()
    [{'code': 'needs_events', 'count': None, 'events': 1200, 'max_events': 1000, 'overlap': None}]
    """

    code: TimingCode
    count: int | None = None
    events: int | None = None
    max_events: int | None = None
    overlap: float | None = None

    def to_records(self) -> list:
        """One tidy row: the code and its numbers (None where the code has none)."""
        return tidy_records({"code": self.code.value, "count": self.count, "events": self.events,
                             "max_events": self.max_events, "overlap": self.overlap})


class SkipCode(enum.Enum):
    """Why :func:`search` refused a layout before evaluating it (:class:`SkippedLayout`)."""

    #: The workload cannot be split ``tp`` ways (``tp_limit``,
    #: :func:`models.studies.workload.tp_limit`).
    TP_LIMIT = "tp_limit"
    #: A tensor-parallel group takes part of one host of ``count`` GPUs, or whole hosts.
    TP_HOST = "tp_host"
    #: ``tp x pp`` does not divide the job's ``count`` GPUs.
    GPUS = "gpus"
    #: More pipeline stages than the workload's ``count`` layers.
    LAYERS = "layers"
    #: The global batch ``count`` is not a multiple of ``dp x micro_batch``.
    BATCH = "batch"
    #: Interleaving (``virtual_stages`` > 1) needs a pipeline (``pp`` > 1).
    INTERLEAVE_PIPELINE = "interleave_pipeline"
    #: The workload's ``count`` layers do not split into ``pp x virtual_stages`` chunks.
    INTERLEAVE_LAYERS = "interleave_layers"
    #: The ``count`` micro-batches are not a multiple of ``pp``.
    INTERLEAVE_MICRO_BATCHES = "interleave_micro_batches"


@dataclass(frozen=True, slots=True, repr=False)
class SkippedLayout:
    """A layout :func:`search` refused, and why, in numbers (:attr:`Search.skipped_layouts`);
    :func:`models.present.plan_text.skipped_note` words it.

    Attributes
    ----------
    code : SkipCode
    tp : int
    pp, dp : int or None
        The degrees the refusal names (None: not reached).
    virtual_stages : int
    count : int or None
        What the rule met (:class:`SkipCode` says which count: GPUs, layers, global batch,
        micro-batches).
    micro_batch : int or None
        :attr:`SkipCode.BATCH`: the micro-batch.
    tp_limit : TpConstraint or None
        :attr:`SkipCode.TP_LIMIT`: why the workload cannot be split ``tp`` ways.

    Examples
    --------
    >>> SkippedLayout(SkipCode.BATCH, 1, 1, 8, count=12, micro_batch=1)
    SkippedLayout(BATCH, tp=1, pp=1, dp=8, count=12, micro_batch=1)
    >>> SkippedLayout(SkipCode.LAYERS, 1, 16, count=12).to_records()[0]["code"]
    'layers'
    """

    code: SkipCode
    tp: int
    pp: int | None = None
    dp: int | None = None
    virtual_stages: int = 1
    count: int | None = None
    micro_batch: int | None = None
    tp_limit: TpConstraint | None = None

    def __repr__(self) -> str:
        given = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)[1:]
                 if getattr(self, f.name) not in (None, f.default) or f.name == "tp"]
        return f"SkippedLayout({', '.join([self.code.name] + given)})"

    def to_records(self) -> list:
        """One tidy row: the code, the degrees, the count it met (and the tensor-parallel limit)."""
        limit = self.tp_limit
        return tidy_records({"code": self.code.value, "tp": self.tp, "pp": self.pp, "dp": self.dp,
                             "virtual_stages": self.virtual_stages, "count": self.count,
                             "micro_batch": self.micro_batch, "tp_limit": None if limit is None else limit.limit.value,
                             "tp_limit_value": None if limit is None else limit.value})


@dataclass(frozen=True, slots=True)
class ComputeDetail:
    """The numbers of a step's ``compute`` component (:func:`step_components`).

    Attributes
    ----------
    micro_batches : int
        Micro-batches per step per pipeline.
    forward, backward : float
        One micro-batch's forward and backward on the heaviest stage, the backward with what
        recomputation runs again. [s]
    layer_forward : float
        One layer's forward. [s]
    products : float
        The forward of that layer's matrix products and attention kernels (every kernel but the
        memory-bound passes). [s]
    products_ideal : float
        The same at the achievable fraction of the peak, unquantised (no tiles, waves, split-K,
        epilogues or launch floors). [s]
    """

    micro_batches: int
    forward: float
    backward: float
    layer_forward: float
    products: float
    products_ideal: float

    @property
    def products_fraction(self) -> float:
        """The products' share of a layer's forward."""
        return self.products / max(self.layer_forward, 1e-30)

    @property
    def quantisation(self) -> float:
        """What tiles, waves, split-K, epilogues and launch floors add to the products' ideal
        time, as a fraction of it (0 without products)."""
        return self.products / self.products_ideal - 1 if self.products_ideal > 0 else 0.0

    def to_records(self) -> list:
        """One tidy row of the numbers, times in seconds."""
        return tidy_records({"micro_batches": self.micro_batches, "forward_s": self.forward,
                             "backward_s": self.backward, "layer_forward_s": self.layer_forward,
                             "products_s": self.products, "products_ideal_s": self.products_ideal,
                             "products_fraction": self.products_fraction, "quantisation": self.quantisation})


@dataclass(frozen=True, slots=True)
class TensorParallelDetail:
    """The numbers of a step's ``tp_comm`` component: per micro-batch, ``count`` times the
    ``collectives`` of ``nbytes`` on the tensor-parallel groups.

    Attributes
    ----------
    degree : int
        The tensor-parallel degree (1: no tensor parallelism, nothing sent).
    collectives : tuple of str
        ``("all_reduce",)``, or ``("reduce_scatter", "all_gather")`` with sequence parallelism.
    count : int
        How many times per micro-batch: 4 per layer (6 with full recomputation), and 2 for the
        embedding.
    nbytes : float
        The activations of one micro-batch, each collective's buffer. [bytes]
    """

    degree: int
    collectives: tuple
    count: int
    nbytes: float

    def to_records(self) -> list:
        """One tidy row (``collectives`` joined by ``+``)."""
        return tidy_records({"degree": self.degree, "collectives": "+".join(self.collectives),
                             "count": self.count, "nbytes": self.nbytes})


@dataclass(frozen=True, slots=True)
class PipelineDetail:
    """The numbers of a step's ``pp_comm`` component: ``sends`` sends of ``nbytes`` each way
    between adjacent stages.

    Attributes
    ----------
    stages : int
        The pipeline-parallel degree (1: no pipeline, nothing sent).
    sends : int
        Sends each way, ``v m + p - 1``.
    nbytes : float
        One send's activations. [bytes]
    """

    stages: int
    sends: int
    nbytes: float

    def to_records(self) -> list:
        """One tidy row."""
        return tidy_records({"stages": self.stages, "sends": self.sends, "nbytes": self.nbytes})


@dataclass(frozen=True, slots=True)
class BubbleDetail:
    """The numbers of a step's ``bubble`` component.

    Attributes
    ----------
    stages, virtual_stages, micro_batches : int
        ``p``, ``v`` and ``m`` of the pipeline.
    simulated : bool
        The bubble is what a simulation's critical path holds beyond its other components (the
        pipeline's fill and drain, waits for a stream), not :attr:`fraction` of the ideal step.
    """

    stages: int
    virtual_stages: int
    micro_batches: int
    simulated: bool = False

    @property
    def fraction(self) -> float:
        """The analytical bubble over the ideal step, ``(p - 1) / (v m)``."""
        return (self.stages - 1) / (self.virtual_stages * self.micro_batches)

    def to_records(self) -> list:
        """One tidy row."""
        return tidy_records({"stages": self.stages, "virtual_stages": self.virtual_stages,
                             "micro_batches": self.micro_batches, "fraction": self.fraction,
                             "simulated": self.simulated})


@dataclass(frozen=True, slots=True)
class DataParallelDetail:
    """The numbers of a step's ``dp_comm`` component.

    Attributes
    ----------
    degree : int
        The data-parallel degree (1: no data parallelism, nothing sent).
    zero : int
        The ZeRO stage: 0 all_reduces the gradients; 1 and 2 reduce_scatter them (overlapped)
        and all_gather the parameters (exposed); 3 all_gathers the parameters for every forward
        and backward and reduce_scatters the gradients.
    nbytes : float
        The gradients of one GPU (its parameters over ``tp``, in the activations' dtype). [bytes]
    bucket : float
        Gradient bucket. [bytes]
    overlap : float
        Fraction of the backward (forward for ZeRO 3's gathers) that hides the communication in
        the analytical first pass.
    simulated : bool
        The overlap is the simulated schedule's, not ``overlap``.
    """

    degree: int
    zero: int
    nbytes: float
    bucket: float
    overlap: float
    simulated: bool = False

    def to_records(self) -> list:
        """One tidy row."""
        return tidy_records({"degree": self.degree, "zero": self.zero, "nbytes": self.nbytes,
                             "bucket_bytes": self.bucket, "overlap": self.overlap, "simulated": self.simulated})


@dataclass(frozen=True, slots=True)
class OptimizerDetail:
    """The numbers of a step's ``optimizer`` component.

    Attributes
    ----------
    parameters : float
        The parameters one GPU's optimizer updates (its stage's, over ``tp``, over ``dp`` with
        ZeRO), each :data:`OPTIMIZER_PASS_BYTES` of memory traffic.
    """

    parameters: float

    def to_records(self) -> list:
        """One tidy row."""
        return tidy_records({"parameters": self.parameters})


@dataclass(frozen=True, slots=True)
class Component:
    """One part of a step.

    Attributes
    ----------
    name : str
        ``compute``, ``tp_comm``, ``pp_comm``, ``dp_comm``, ``bubble``, ``optimizer``.
    time : float
        Its whole duration. [s]
    exposed : float
        The part on the critical path (what it adds to the step). [s]
    detail : ComputeDetail, TensorParallelDetail, PipelineDetail, BubbleDetail, DataParallelDetail or OptimizerDetail
        The numbers behind it, by ``name`` (None when not given);
        :func:`models.present.plan_text.component_note` words them.
    """

    name: str
    time: float
    exposed: float
    detail: ComponentDetail | None = None


#: The numbers of a component, one type per kind (:attr:`Component.detail`).
ComponentDetail = (ComputeDetail | TensorParallelDetail | PipelineDetail | BubbleDetail | DataParallelDetail
                   | OptimizerDetail)


@dataclass(frozen=True, slots=True)
class Calibration:
    """A compute model fitted to one measured step.

    Attributes
    ----------
    measured : str
        The measurement as given (``"1.25s"``, ``"150tflops"``).
    measured_step : float
        The step time it means on the measured layout. [s]
    predicted_step : float
        The step the model from hardware facts predicts for that layout. [s]
    scale : float
        The fitted multiplier on every kernel's time (> 1: the GPUs compute slower than the
        model from hardware facts).
    default : dict
        The fractions of the model from hardware facts: ``gemm_efficiency``,
        ``memory_efficiency`` and, with flash attention, ``attention_efficiency``.
    fitted : dict
        The same fractions divided by ``scale`` (what the measurement implies).
    layout : str
        The measured layout's label.
    """

    measured: str
    measured_step: float
    predicted_step: float
    scale: float
    default: dict
    fitted: dict
    layout: str


@dataclass(frozen=True, slots=True)
class Plan:
    """One evaluated layout.

    Attributes
    ----------
    workload : str
    fabric : str
    generation : str
        GPU generation of the fabric (or the one forced).
    dtype : str
    layout : Layout
    fits : bool
        Whether its memory fits the GPU (``memory``; :func:`models.present.plan_text.fit_note`
        words why it does not).
    step_time : float
        [s] (``inf`` when it does not fit).
    components : tuple of Component
    memory : Memory
    groups : dict
        ``"tp"``, ``"pp"``, ``"dp"``: tuples of GPU-id tuples.
    model_flops : float
        Model FLOPs of one step (no recomputation). [FLOP]
    peak : float
        The dtype's dense peak of one GPU. [FLOP/s]
    tokens_per_sample : int
    hardware_flops : float
        Hardware FLOPs of one step: model FLOPs plus what recomputation runs again. [FLOP]
    compute : models.studies.compute.ComputeFacts
        The compute model's facts (GPU part, dtype, peak, HBM, software stack, fractions, scale);
        :func:`models.present.plan_text.compute_note` words them in one line.
    software : str
        The software stack's name.
    warning_codes : tuple of PlanWarning
        What the plan warns of; :func:`models.present.plan_text.warning_note` words each.
    calibration : Calibration or None
        The fit the compute model carries, when calibrated.
    timing : str
        How ``step_time`` was found: ``"simulated"`` (the step graph of
        :func:`models.studies.stepgraph.step_graph` run by :func:`models.predict.simulate.simulate`:
        overlap and contention from the schedule and the fabric) or ``"analytical"``
        (:func:`step_components`, the first pass).
    analytical_step_time : float
        The analytical first pass's step (equal to ``step_time`` when analytical). [s]
    timing_why : TimingWhy or None
        Why an analytical plan was not simulated; for a simulated one, that an ``overlap``
        fraction between 0 and 1 shaped only the first pass (None otherwise);
        :func:`models.present.plan_text.timing_note` words it.
    nccl : str
        The NCCL release whose profile timed the collectives (``"2.27.7"``: the prepared
        fabric's, :func:`models.engine.nccl.profiles.nccl_profile`).
    workload_spec : Transformer or CNN or None
        The workload planned (``workload`` is its name, which names a custom spec's family
        only), so that :func:`models.studies.stepgraph.simulate_plan` and ``step_graph`` need
        no ``workload=`` again.
    """

    workload: str
    fabric: str
    generation: str
    dtype: str
    layout: Layout
    fits: bool
    step_time: float
    components: tuple
    memory: Memory
    groups: dict = field(repr=False)
    model_flops: float = 0.0
    peak: float = 0.0
    tokens_per_sample: int = 1
    hardware_flops: float = 0.0
    compute: ComputeFacts | None = None
    software: str = ""
    warning_codes: tuple = ()
    calibration: Calibration | None = field(repr=False, default=None)
    timing: str = "analytical"
    analytical_step_time: float = math.nan
    timing_why: TimingWhy | None = None
    nccl: str = ""
    workload_spec: Workload | None = field(default=None, repr=False, compare=False)

    @property
    def simulated(self) -> bool:
        return self.timing == "simulated"

    @property
    def samples_per_s(self) -> float:
        return self.layout.global_batch / self.step_time if self.fits else 0.0

    @property
    def tokens_per_s(self) -> float:
        """Tokens/s (images/s for a CNN)."""
        return self.samples_per_s * self.tokens_per_sample

    @property
    def model_tflops_per_gpu(self) -> float:
        """Model FLOPs per second per GPU (no recomputation), in TFLOP/s (display unit)."""
        return self.model_flops / self.step_time / self.layout.ngpus / 1e12 if self.fits else 0.0

    @property
    def hardware_tflops_per_gpu(self) -> float:
        """Hardware FLOPs per second per GPU (recomputation included, Megatron's convention),
        in TFLOP/s (display unit)."""
        return self.hardware_flops / self.step_time / self.layout.ngpus / 1e12 if self.fits else 0.0

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation: model FLOPs / (step time x GPUs x dense peak)."""
        return self.model_flops / (self.step_time * self.layout.ngpus * self.peak) if self.fits else 0.0

    @property
    def hfu(self) -> float:
        """Hardware FLOPs utilisation: hardware FLOPs / (step time x GPUs x dense peak)."""
        return self.hardware_flops / (self.step_time * self.layout.ngpus * self.peak) if self.fits else 0.0

    def component(self, name: str) -> Component:
        for c in self.components:
            if c.name == name:
                return c
        raise KeyError(name)

    def binding(self) -> str:
        """The component that adds most to the step."""
        if not self.components:
            return "memory capacity"
        return max(self.components, key=lambda c: c.exposed).name

    def to_records(self) -> list:
        """Tidy rows, one per component of the step (one row with ``component`` None when the
        layout does not fit): the layout, the step's figures and the component's time and
        exposed part (:mod:`models.engine.results`)."""
        components = self.components or (Component(None, None, None),)
        return tidy_records({
            "workload": self.workload, "fabric": self.fabric, "generation": self.generation,
            "dtype": self.dtype, "layout": self.layout.label(), "tp": self.layout.tp, "pp": self.layout.pp,
            "dp": self.layout.dp, "zero": self.layout.zero, "micro_batch": self.layout.micro_batch,
            "global_batch": self.layout.global_batch, "recompute": self.layout.recompute,
            "fits": self.fits, "step_time_s": self.step_time if self.fits else None,
            "samples_per_s": self.samples_per_s, "mfu": self.mfu, "memory_bytes": self.memory.total,
            "component": [c.name for c in components], "time_s": [c.time for c in components],
            "exposed_s": [c.exposed for c in components]})


@dataclass(frozen=True, slots=True)
class Search:
    """Every layout evaluated, fitting ones first by step time, then the OOM ones.

    Attributes
    ----------
    plans : tuple of Plan
    skipped_layouts : tuple of SkippedLayout
        Layouts not evaluated and why (degrees that do not divide, batch not divisible);
        :func:`models.present.plan_text.skipped_note` words each.
    """

    plans: tuple
    skipped_layouts: tuple = ()

    @property
    def best(self) -> Plan:
        return self.plans[0]

    def fitting(self) -> tuple:
        return tuple(p for p in self.plans if p.fits)

    def to_records(self) -> list:
        """Tidy rows of every layout (:meth:`Plan.to_records`), each with its ``rank`` (1 is
        the best)."""
        return [{"rank": i + 1, **row} for i, p in enumerate(self.plans) for row in p.to_records()]


# ------------------------------------------------------------------------------- fabric
class _JobGroups:
    """The job's GPUs on a prepared fabric: GPU-set keys, cached collective times per group shape."""

    def __init__(self, G, gpus=None, profile=None):
        # One prepared fabric for every collective of the plan: NCCL's view (with the release),
        # the per-host channel searches of a cluster and the symmetry are built once.
        self.prepared = prepare(G, nccl=profile)
        G = self.G = self.prepared.G
        nodes = topo.gpus(G)
        chosen = topo.select_gpus(G, gpus) if gpus is not None else list(nodes)
        position = {n: i for i, n in enumerate(nodes)}
        self.ids = sorted(position[n] for n in chosen)
        self.nodes = nodes
        self.host = {i: G.nodes[nodes[i]].get("host", 0) for i in self.ids}
        self.index = {i: G.nodes[nodes[i]].get("index", i) for i in self.ids}
        hosts: dict = {}
        for i in self.ids:
            hosts.setdefault(self.host[i], []).append(i)
        self.hosts = [hosts[h] for h in sorted(hosts)]
        self.name = self.prepared.name
        models_ = {G.nodes[nodes[i]].get("model", "") for i in self.ids}
        self.models = sorted(models_)
        # The key of NCCL's estimates (models.engine.symmetry): on a cluster, identical hosts and
        # each host's own symmetry; on one host, the symmetry of what NCCL's paths use.
        self.symmetry = self.prepared.symmetry.nccl()
        self.nic_bandwidth = self._nic_bandwidth()
        self.estimator = Estimator(self.prepared)
        # A placement asks the same few groups again and again (every partition of a host, every
        # layout): their keys and times are kept for the life of the job's groups, the envelopes
        # (the estimates) by the prepared fabric, for every plan on it.
        self._keys: dict = {}  # GPU ids as asked -> their key
        self._times: dict = {}  # (collective, size, GPU ids as asked) -> time [s]
        self._shape_times: dict = {}  # (collective, size, key) -> time [s]

    def _nic_bandwidth(self) -> dict:
        G = self.G
        out = {}
        if G.graph.get("hosts", 1) <= 1:
            return out
        for h in {self.host[i] for i in self.ids}:
            out[h] = sum(d["bandwidth"] for n in topo.compute_nics(G, h)
                         for _, _, d in G.out_edges(n, data=True) if d["kind"] == "network")
        return out

    def key(self, ids) -> tuple:
        ids = tuple(ids)
        found = self._keys.get(ids)
        if found is None:
            found = self._keys[ids] = self.symmetry.key([self.nodes[i] for i in ids])
        return found

    def prefetch(self, groups) -> None:
        """Key many groups of GPU ids at once (a placement weighs thousands): one vectorised
        pass of the fabric's symmetry where it has one (:meth:`GpuSymmetry.keys
        <models.engine.symmetry.GpuSymmetry.keys>`, the same keys as one by one)."""
        missing = list(dict.fromkeys(g for g in map(tuple, groups) if g not in self._keys))
        if not missing:
            return
        if not isinstance(self.symmetry, GpuSymmetry):
            for g in missing:
                self.key(g)
            return
        position = self.symmetry.position
        by_size: dict = {}
        for g in missing:
            by_size.setdefault(len(g), []).append(g)
        used = set(itertools.chain.from_iterable(missing))
        place = np.zeros(max(used) + 1, dtype=np.intp)  # GPU id -> its position in the symmetry
        for i in used:
            place[i] = position[self.nodes[i]]
        for same in by_size.values():
            rows = np.sort(place[np.array(same, dtype=np.intp)], axis=1)  # each set in rank order
            self._keys.update(zip(same, self.symmetry.keys(rows)))

    def _envelope(self, collective, ids):
        # The estimates depend on the fabric (its release included), the collective and the
        # group's key only: the prepared fabric keeps them for every plan made on it.
        key = ("planner.envelope", collective, self.key(ids))
        cache = self.prepared.memo
        if key not in cache:
            grid = np.array(_GRID)
            e = self.estimator.estimate(collective, grid, gpus=list(ids))
            # What the step sees is what the machine achieves (models.predict.measure): the host's launch
            # overlaps NCCL's latency, and the links move data at their achieved rate.
            m = e.measurement
            latency = np.broadcast_to(np.maximum(np.asarray(e.latency, dtype=float), m.host_time),
                                      grid.shape)
            bandwidth = np.broadcast_to(np.asarray(e.bandwidth, dtype=float) * m.ratio, grid.shape)
            pairs = sorted(set(zip(latency.tolist(), bandwidth.tolist())))
            cache[key] = (np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))
        return cache[key]

    def time(self, collective: str, nbytes: float, ids) -> float:
        """Time of one collective on these GPU ids at this size. [s]"""
        if len(ids) < 2 or nbytes <= 0:
            return 0.0
        asked = (collective, nbytes, tuple(ids))
        found = self._times.get(asked)
        if found is None:
            shape = (collective, nbytes, self.key(ids))
            found = self._shape_times.get(shape)
            if found is None:
                latency, bandwidth = self._envelope(collective, ids)
                found = self._shape_times[shape] = float(np.min(latency + nbytes / bandwidth))
            self._times[asked] = found
        return found

    def dimension_time(self, collective: str, nbytes: float, groups) -> float:
        """The slowest of concurrent groups, with their shared NICs charged. [s]"""
        if not groups or len(groups[0]) < 2 or nbytes <= 0:
            return 0.0
        seen: dict = {}
        for g in groups:
            k = self.key(g)
            if k not in seen:
                seen[k] = self.time(collective, nbytes, g)
        slowest = max(seen.values())
        if not self.nic_bandwidth:
            return slowest
        # Bytes each spanning group sends out of one host (ring: one exit per host).
        n = len(groups[0])
        factor = busbw_factor(collective, n)  # a ring's bytes per host exit: nccl-tests' busbw factor
        load: dict = {}
        for g in groups:
            hosts = {self.host[i] for i in g}
            if len(hosts) > 1:
                for h in hosts:
                    load[h] = load.get(h, 0) + 1
        if not load:
            return slowest
        network = max(count * factor * nbytes / self.nic_bandwidth[h] for h, count in load.items())
        return max(slowest, network)


def _partitions(items, size):
    """Every partition of ``items`` into groups of ``size`` (first item anchors each group)."""
    if not items:
        yield ()
        return
    first, rest = items[0], items[1:]
    for others in itertools.combinations(rest, size - 1):
        group = (first,) + others
        remaining = [x for x in rest if x not in others]
        for tail in _partitions(remaining, size):
            yield (group,) + tail


def _count_partitions(n, size) -> int:
    k = n // size
    return math.factorial(n) // (math.factorial(size) ** k * math.factorial(k))


def _partition_table(prepared: PreparedFabric, n: int, size: int) -> tuple:
    """Every partition of the positions ``range(n)`` into groups of ``size``, in :func:`_partitions`'
    order: ``(groups, rows)``, the distinct groups and, per partition, the indices of its groups
    (an array). The same for every host of ``n`` GPUs: kept by the prepared fabric."""
    key = ("planner.partitions", n, size)
    found = prepared.memo.get(key)
    if found is None:
        index: dict = {}
        rows = [[index.setdefault(g, len(index)) for g in partition]
                for partition in _partitions(list(range(n)), size)]
        found = prepared.memo[key] = (tuple(index), np.array(rows, dtype=np.intp))
    return found


def _tp_partition(fabric: _JobGroups, host_ids, tp, nbytes, collective):
    """The partition of one host's GPUs into TP groups whose slowest group is fastest (then whose
    groups' times sum least; the consecutive partition, then the first in :func:`_partitions`'
    order, on a tie).

    A function of the prepared fabric (the groups' times are its estimates), kept by it for every
    plan made on it."""
    if tp == 1:
        return tuple((i,) for i in host_ids)
    host_ids = tuple(host_ids)
    key = ("planner.tp_partition", collective, nbytes, tp, host_ids)
    memo = fabric.prepared.memo
    if key not in memo:
        memo[key] = _best_partition(fabric, host_ids, tp, nbytes, collective)
    return memo[key]


def _best_partition(fabric: _JobGroups, host_ids, tp, nbytes, collective):
    if _count_partitions(len(host_ids), tp) <= _MAX_PARTITIONS:
        # Every partition at once: each distinct group timed once, the costs as arrays.
        positions, rows = _partition_table(fabric.prepared, len(host_ids), tp)
        groups = list(map(tuple, np.array(host_ids)[np.array(positions, dtype=np.intp)].tolist()))
        fabric.prefetch(groups)
        times = np.array([fabric.time(collective, nbytes, g) for g in groups], dtype=np.float64)[rows]
        slowest = times.max(axis=1)
        total = times[:, 0].copy()
        for column in range(1, times.shape[1]):
            total += times[:, column]  # left to right, as sum() adds them: the same floats
        tie = slowest == slowest.min()
        tie &= total == total[tie].min()
        # The consecutive partition is the first (each group anchored on the first GPU left, the
        # others the first combination): it wins a tie, else the first in order.
        return tuple(groups[j] for j in rows[0 if tie[0] else int(np.argmax(tie))])
    # Greedy: repeatedly take the fastest group among the remaining GPUs.
    consecutive = tuple(tuple(host_ids[k:k + tp]) for k in range(0, len(host_ids), tp))
    remaining, greedy = list(host_ids), []
    while remaining:
        fabric.prefetch(itertools.combinations(remaining, tp))
        best = min(itertools.combinations(remaining, tp),
                   key=lambda g: (fabric.time(collective, nbytes, g), g))
        greedy.append(best)
        remaining = [x for x in remaining if x not in best]
    best, best_cost = None, None
    for partition in (consecutive, tuple(greedy)):
        times = [fabric.time(collective, nbytes, g) for g in partition]
        cost = (max(times), sum(times), partition != consecutive)
        if best_cost is None or cost < best_cost:
            best, best_cost = partition, cost
    return tuple(best)


def _job_gpus(fabric: _JobGroups, host_ids, n: int) -> tuple:
    """The ``n`` GPUs of one host whose all_reduce is fastest (lowest ids on ties)."""
    if n >= len(host_ids):
        return tuple(host_ids)
    if n == 1:
        return (host_ids[0],)
    if math.comb(len(host_ids), n) <= _MAX_PARTITIONS:
        candidates = list(itertools.combinations(host_ids, n))
        fabric.prefetch(candidates)
    else:  # greedy: grow the set by the GPU that keeps its all_reduce fastest
        chosen = [host_ids[0]]
        while len(chosen) < n:
            rest = [i for i in host_ids if i not in chosen]
            chosen.append(min(rest, key=lambda i: (fabric.time("all_reduce", _PLACEMENT_BYTES, chosen + [i]), i)))
        candidates = [tuple(sorted(chosen))]
    return min(candidates, key=lambda g: (fabric.time("all_reduce", _PLACEMENT_BYTES, g), g))


# ------------------------------------------------------------------------------- memory
def _stage_parameters(w, pp: int):
    """(first stage, last stage) parameters of a pipeline of ``pp`` stages."""
    if isinstance(w, CNN):
        return w.parameters, w.parameters
    per_stage = math.ceil(w.layers / pp) * w.layer_parameters
    emb = w.embedding_parameters + w.extra_parameters
    if pp == 1:
        return per_stage + emb + w.head_parameters, per_stage + emb + w.head_parameters
    # Megatron keeps a copy of a tied embedding on the last stage for the output projection.
    last_head = w.head_parameters + (w.vocab * w.hidden if w.tied else 0)
    return per_stage + emb, per_stage + last_head


def memory(workload: str | Workload, layout: Layout, *, dtype: str = "bf16", capacity: float = 80 * GiB,
           flash: bool | None = None) -> Memory:
    """Memory per GPU of the heaviest pipeline stage. [bytes]

    Parameters
    ----------
    workload : str or workload
    layout : Layout
    dtype : str
    capacity : float
        Device memory to compare with. [bytes]
    flash : bool, optional
        Flash attention (no ``s x s`` tensor stored); default: the workload's.

    Examples
    --------
    >>> from models.studies.workload import PRESETS
    >>> w = PRESETS["gpt3-175b"]
    >>> on = Layout(8, 8, 1, 1, 1, 64, "selective", True, "tp-dp-pp")
    >>> off = dataclasses.replace(on, sequence_parallel=False)
    >>> round(memory(w, on).activations / GiB, 1), round(memory(w, off).activations / GiB, 1)
    (9.6, 29.2)
    """
    w = as_workload(workload)
    weight = activation_bytes_per_element(dtype)  # fp8 recipes keep 16-bit weights and gradients
    optimizer = 8 if weight == 4 else 12  # Adam moments (+ fp32 master copy)
    act_elem = weight
    tp, pp, dp, zero = layout.tp, layout.pp, layout.dp, layout.zero
    b, m = layout.micro_batch, layout.micro_batches
    worst = None
    for stage, params in zip(("first", "last"), _stage_parameters(w, pp)):
        local = params / tp
        p_bytes = local * weight / (dp if zero >= 3 else 1)
        g_bytes = local * weight / (dp if zero >= 2 else 1)
        o_bytes = local * optimizer / (dp if zero >= 1 else 1)
        if isinstance(w, CNN):
            act = w.activation_bytes(b, recompute=layout.recompute) * act_elem / 2
        else:
            layers = math.ceil(w.layers / pp)
            in_flight = min(pp, m) if stage == "first" else 1
            if stage == "first" and layout.virtual_stages > 1:
                # Interleaving keeps more micro-batches' chunks in flight (Korthikanti et al. 2022,
                # section 4.2.3).
                in_flight *= 1 + (pp - 1) / (pp * layout.virtual_stages)
            act = w.activation_bytes(b, tp, sequence_parallel=layout.sequence_parallel,
                                     recompute=layout.recompute, flash=flash) * act_elem / 2 * layers * in_flight
            if stage == "last" or pp == 1:
                act += w.logits_bytes(b, tp)  # fp32 logits and their gradient
        mem = Memory(p_bytes, g_bytes, o_bytes, act, float(capacity))
        if worst is None or mem.total > worst.total:
            worst = mem
    return worst


# ------------------------------------------------------------------------------ the step
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


class _Context:
    def __init__(self, w, G, gpus, dtype, efficiency, memory_efficiency, overlap, bucket,
                 gen, capacity, software=None, attention_efficiency=None, compute_scale=1.0, profile=None):
        self.w = w
        self.fabric = _JobGroups(G, gpus, profile)
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
        self.bucket = _size("bucket", bucket)
        self.partitions: dict = {}
        self._kernel_times: dict = {}  # (compute model, ops) -> their times, for every layout of the search
        self._flops: dict = {}  # recompute mode -> training FLOPs per token

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
            self._flops[recompute] = (self.w.training_flops_per_token() if recompute is None
                                      else self.w.training_flops_per_token(recompute))
        return self._flops[recompute]

    @property
    def gen(self) -> Gpu:
        return self.gpu


def _bucketed(comm, collective, nbytes, bucket):
    """(total time, time of the last bucket) of ``nbytes`` sent in buckets. [s]"""
    if nbytes <= 0:
        return 0.0, 0.0
    full = int(nbytes // bucket)
    rest = nbytes - full * bucket
    t_full = comm(collective, bucket) if full else 0.0
    t_rest = comm(collective, rest) if rest > 0 else 0.0
    return full * t_full + t_rest, (t_rest if rest > 0 else t_full)


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
    if layout.recompute == "full":
        bwd += fwd_layers
    elif layout.recompute == "selective":
        core = [t for t in layer_times if t.op.name in ("scores", "softmax", "context", "flash_attention")]
        bwd += nl * _pass(core)[0]
    products = sum(t.forward for t in layer_times if t.op.kind != "memory")
    ideal = sum(t.ideal for t in layer_times if t.op.kind != "memory")
    # ---- tensor parallel, per micro-batch
    tp_bytes = 0.0 if cnn else float(b * w.seq * w.hidden * act)
    per_layer = 6 if layout.recompute == "full" else 4
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
    first, last = _stage_parameters(w, pp)
    local_params = max(first, last) / tp
    grad_bytes = local_params * act
    dp_time = dp_exposed = 0.0
    if dp > 1:
        def dp_comm(collective, nbytes):
            return comm("dp", collective, nbytes)

        window = overlap * bwd
        if layout.zero == 0:
            total, last_b = _bucketed(dp_comm, "all_reduce", grad_bytes, bucket)
            dp_time, dp_exposed = total, max(total - window, last_b)
        elif layout.zero in (1, 2):
            rs, last_b = _bucketed(dp_comm, "reduce_scatter", grad_bytes, bucket)
            ag, _ = _bucketed(dp_comm, "all_gather", grad_bytes, bucket)
            dp_time, dp_exposed = rs + ag, max(rs - window, last_b) + ag
        else:
            ag, _ = _bucketed(dp_comm, "all_gather", grad_bytes, bucket)
            rs, last_b = _bucketed(dp_comm, "reduce_scatter", grad_bytes, bucket)
            fwd_hidden = overlap * fwd
            dp_time = 2 * m * ag + rs
            dp_exposed = m * (max(0.0, ag - fwd_hidden) + max(0.0, ag - window)) + max(rs - window, last_b)
    # ---- optimizer
    opt_params = local_params / (dp if layout.zero >= 1 else 1)
    optimizer = cm.scale * opt_params * OPTIMIZER_PASS_BYTES / (cm.gpu.memory_bandwidth * cm.memory_efficiency)
    compute = m * (fwd + bwd)
    collectives = ("reduce_scatter", "all_gather") if layout.sequence_parallel else ("all_reduce",)
    return (
        Component("compute", compute, compute, ComputeDetail(m, fwd, bwd, lf, products, ideal)),
        Component("tp_comm", m * t_tp, m * t_tp, TensorParallelDetail(tp, collectives, per_layer * nl + 2, tp_bytes)),
        Component("pp_comm", pp_comm, pp_comm, PipelineDetail(pp, sends, tp_bytes / tp)),
        Component("bubble", bubble, bubble, BubbleDetail(pp, v, m)),
        Component("dp_comm", dp_time, dp_exposed, DataParallelDetail(dp, layout.zero, grad_bytes, bucket, overlap)),
        Component("optimizer", optimizer, optimizer, OptimizerDetail(opt_params)),
    )


def _placement(ctx: _Context, layout: Layout, tp_groups=None) -> dict:
    """The GPU groups of each dimension: ``{"tp", "pp", "dp"}`` -> tuples of GPU-id tuples."""
    fabric, w = ctx.fabric, ctx.w
    tp, pp, dp = layout.tp, layout.pp, layout.dp
    per_host = len(fabric.hosts[0])
    tp_bytes = 0.0 if isinstance(w, CNN) else float(
        layout.micro_batch * w.seq * w.hidden * activation_bytes_per_element(ctx.dtype))
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
                chosen = _tp_partition(fabric, host_ids, tp, tp_bytes or 1, "all_reduce")
                where = {i: k for k, i in enumerate(host_ids)}
                ctx.partitions[key] = tuple(tuple(where[i] for i in g) for g in chosen)
            slots.extend(tuple(host_ids[k] for k in g) for g in ctx.partitions[key])
    if layout.order == "tp-dp-pp":
        def slot(p, d): return slots[p * dp + d]
    else:
        def slot(p, d): return slots[d * pp + p]
    dp_groups = tuple(tuple(slot(p, d)[r] for d in range(dp)) for p in range(pp) for r in range(tp))
    pp_chains = tuple(tuple(slot(p, d)[r] for p in range(pp)) for d in range(dp) for r in range(tp))
    return {"tp": tuple(tuple(s) for s in slots), "pp": pp_chains, "dp": dp_groups}


def _evaluate(ctx: _Context, layout: Layout, tp_groups=None, cm=None) -> Plan:
    w, fabric = ctx.w, ctx.fabric
    cm = ctx.cm if cm is None else cm
    groups = _placement(ctx, layout, tp_groups)
    pairs = tuple((c[k], c[k + 1]) for c in groups["pp"] for k in range(layout.pp - 1))
    dims = {"tp": groups["tp"], "dp": groups["dp"], "pp": pairs}

    def comm(dimension, collective, nbytes):
        return fabric.dimension_time(collective, nbytes, dims[dimension])

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


def _not_simulated(w, p: Plan) -> TimingWhy | None:
    """Why a plan's step cannot be simulated (None when it can)."""
    if isinstance(w, CNN):
        return TimingWhy(TimingCode.CNN)
    if p.layout.virtual_stages != 1:
        return TimingWhy(TimingCode.INTERLEAVED)
    return None


def _simulated_components(p: Plan, result) -> tuple:
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
    exposed = {kind: critical.get(kind, 0.0) for kind in ("tp_comm", "pp_comm", "dp_comm", "optimizer")}
    exposed["compute"] = min(critical.get("compute", 0.0), time.get("compute", 0.0))
    exposed["bubble"] = max(0.0, result.step_time - sum(exposed.values()))
    out = []
    for c in p.components:
        # The bubble is the rest of the critical path, and the data-parallel overlap the schedule's.
        detail = dataclasses.replace(c.detail, simulated=True) if c.name in ("bubble", "dp_comm") else c.detail
        t = exposed["bubble"] if c.name == "bubble" else time.get(c.name, 0.0)
        out.append(Component(c.name, t, exposed[c.name], detail))
    return tuple(out)


def _decomposer(prepared: PreparedFabric) -> Decomposer:
    """The decompositions of the plans' simulations on a prepared fabric: one :class:`Decomposer`
    (its estimates and routes) kept by the fabric for every plan simulated on it."""
    found = prepared.memo.get(("planner.decomposer",))
    if found is None:
        found = prepared.memo[("planner.decomposer",)] = Decomposer(prepared)
    return found


def _simulate_plans(w, ctx: _Context, plans, count: int, max_events: int, cm=None) -> list:
    """The plans with the first ``count`` fitting, simulable ones simulated (:class:`Plan`'s
    ``timing``), ranked: the simulated by their simulated step, then the other fitting ones by
    their analytical step, then those that do not fit.

    Sized first: the simulations' events (three per task, :func:`models.studies.stepgraph.step_graph_size`)
    add up until ``max_events``; the candidates beyond it keep their analytical step, with a
    note (a larger step is better estimated than refused: the first pass is a full answer).
    """
    cm = ctx.cm if cm is None else cm
    # overlap 0 (gradients reduced once the backward is done, as Megatron-LM's local DDP did) is
    # the schedule's to honour: one bucket after the backward. Other fractions are the first
    # pass's; the simulation overlaps the buckets as the backward produces them.
    bucket = ctx.bucket if ctx.overlap > 0 else math.inf
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
        # As the simulator sizes a folded graph: every replica it stands for (simulation_size).
        events = 3 * step_graph_size(p, workload=w, bucket=bucket, fold=False)
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
                result = simulate_graph(G, step_graph(p, G, workload=w, bucket=bucket, compute=cm),
                                        decomposer=decomposer, max_events=max_events)
            except LimitError as error:  # the count above is the simulator's; should it differ, keep the first pass
                why[id(p)] = TimingWhy(TimingCode.NEEDS_EVENTS, events=error.size, max_events=max_events)
                continue
            done[id(p)] = dataclasses.replace(p, step_time=result.step_time,
                                              components=_simulated_components(p, result), timing="simulated",
                                              timing_why=fraction)
    out = [done.get(id(p)) or (dataclasses.replace(p, timing_why=why[id(p)]) if id(p) in why else p)
           for p in plans]
    out.sort(key=lambda p: (not p.fits, not p.simulated, p.step_time, p.memory.total, p.layout.label()))
    return out


def _layouts(ctx, n, tp, pp, dp, zero, micro_batch, global_batch, recompute, sequence_parallel,
             virtual_stages, skipped):
    w = ctx.w
    per_host = min(len(h) for h in ctx.fabric.hosts)
    cnn = isinstance(w, CNN)
    tps = [tp] if tp is not None else [d for d in _divisors(per_host)
                                       if tp_limit(w, d) is None and per_host % d == 0]
    if cnn:
        tps = [t for t in tps if t == 1]
    zeros = [zero] if zero is not None else [0, 1, 2, 3]
    recomputes = [recompute] if recompute is not None else ["none", "full"]
    for t in tps:
        limit = tp_limit(w, t)
        if limit is not None:
            skipped.append(SkippedLayout(SkipCode.TP_LIMIT, t, tp_limit=limit))
            continue
        if per_host % t and t % per_host:
            skipped.append(SkippedLayout(SkipCode.TP_HOST, t, count=per_host))
            continue
        pps = [pp] if pp is not None else [d for d in _divisors(n // t) if d <= w.layers and
                                           (not cnn or d == 1)]
        for p in pps:
            if n % (t * p):
                skipped.append(SkippedLayout(SkipCode.GPUS, t, p, count=n))
                continue
            d = n // (t * p)
            if dp is not None and d != dp:
                continue
            if p > w.layers:
                skipped.append(SkippedLayout(SkipCode.LAYERS, t, p, count=w.layers))
                continue
            if global_batch % (d * micro_batch):
                skipped.append(SkippedLayout(SkipCode.BATCH, t, p, d, count=global_batch, micro_batch=micro_batch))
                continue
            v = virtual_stages
            if v > 1:
                m = global_batch // (d * micro_batch)
                why = ((SkipCode.INTERLEAVE_PIPELINE, None) if p == 1 else
                       (SkipCode.INTERLEAVE_LAYERS, w.layers) if w.layers % (p * v) else
                       (SkipCode.INTERLEAVE_MICRO_BATCHES, m) if m % p else None)
                if why is not None:
                    skipped.append(SkippedLayout(why[0], t, p, d, v, count=why[1]))
                    continue
            orders = ORDERS if (p > 1 and d > 1) else ORDERS[:1]
            for z in zeros:
                if d == 1 and z > 0 and zero is None:
                    continue
                for rc in recomputes:
                    sp = (t > 1) if sequence_parallel is None else bool(sequence_parallel and t > 1)
                    for order in orders:
                        yield Layout(t, p, d, z, micro_batch, global_batch, rc, sp, order, v)


def _is_id(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_int(name, value, low=1):
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise PlanError(f"{name} must be a whole number >= {low}, received {value!r}")


def _prepare(workload, G, *, tp, pp, dp, zero, micro_batch, global_batch, dtype, recompute, overlap, bucket,
             efficiency, memory_efficiency, gpus, generation, memory_capacity, tp_groups, software,
             attention_efficiency, compute_scale, virtual_stages, sequence_parallel,
             profile=None, simulate=DEFAULT_SIMULATED, max_events=PLAN_MAX_EVENTS):
    """The context of a search and the job's GPU count and global batch."""
    w = as_workload(workload)
    for name, value in (("tp", tp), ("pp", pp), ("dp", dp), ("micro_batch", micro_batch),
                        ("global_batch", global_batch), ("virtual_stages", virtual_stages)):
        _check_int(name, value)
    _check_int("simulate", simulate, low=0)
    _check_int("max_events", max_events)
    for name, value in (("simulate", simulate), ("max_events", max_events), ("micro_batch", micro_batch),
                        ("virtual_stages", virtual_stages)):
        if value is None:  # these have a value, never "searched" or "the default"
            raise PlanError(f"{name} must be a whole number, received None")
    if sequence_parallel is not None and not isinstance(sequence_parallel, (bool, np.bool_)):
        raise PlanError(f"sequence_parallel must be True, False or None (on whenever tp > 1), received "
                        f"{type(sequence_parallel).__name__}")
    if zero is not None and (not _is_id(zero) or zero not in (0, 1, 2, 3)):
        raise PlanError(f"zero must be a ZeRO stage 0, 1, 2 or 3, received {zero!r}")
    if recompute is not None and (not isinstance(recompute, str) or recompute not in RECOMPUTE):
        raise PlanError(f"recompute must be one of {', '.join(RECOMPUTE)}, received {recompute!r}")
    if software is not None:
        as_software(software)
    ctx = _Context(w, G, gpus, dtype, efficiency, memory_efficiency, overlap, bucket, generation,
                   memory_capacity, software, attention_efficiency, compute_scale, profile)
    available = len(ctx.fabric.ids)
    if len({len(h) for h in ctx.fabric.hosts}) > 1:
        raise PlanError("expected the same number of GPUs on every host of the job")
    per_host = len(ctx.fabric.hosts[0])
    forced_one = isinstance(w, CNN)  # a CNN is data parallel only: tp = pp = 1
    if tp is not None and pp is not None and dp is not None:
        n = tp * pp * dp
    elif forced_one and dp is not None:
        n = dp
    else:
        n = available
    if n > available:
        raise PlanError(f"the layout needs {n} GPUs, the fabric offers {available}")
    if n < available:
        if n <= per_host:
            keep = _job_gpus(ctx.fabric, ctx.fabric.hosts[0], n)
        elif n % per_host == 0:
            keep = [i for host in ctx.fabric.hosts[:n // per_host] for i in host]
        else:
            raise PlanError(f"a job of {n} GPUs spans hosts of {per_host} GPUs: expected at most "
                            f"{per_host} GPUs (one host) or a multiple of {per_host} (whole hosts)")
        ctx.fabric = _JobGroups(ctx.fabric.prepared, list(keep))
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
        groups = [g for g in groups if isinstance(g, (list, tuple)) and all(_is_id(i) for i in g)]
        flat = [int(i) for g in groups for i in g]
        if len(groups) != len(tp_groups if isinstance(tp_groups, (list, tuple)) else [None]) \
                or sorted(flat) != sorted(ctx.fabric.ids) or any(len(g) != tp for g in groups):
            raise PlanError(f"tp_groups must partition GPUs {ctx.fabric.ids} into groups of {tp}, "
                            f"received {tp_groups!r}")
    return w, ctx, n, global_batch


def search(workload: str | Workload, G: nx.DiGraph | PreparedFabric, *, tp: int | None = None, pp: int | None = None,
           dp: int | None = None, zero: int | None = None, micro_batch: int = 1, global_batch: int | None = None,
           dtype: str | None = None, recompute: str | None = None, sequence_parallel: bool | None = None,
           overlap: float = DEFAULT_OVERLAP, bucket: float = DEFAULT_BUCKET, efficiency: float | None = None,
           memory_efficiency: float | None = None, gpus: GpuIds = None, generation: str | None = None,
           memory_capacity: float | None = None, tp_groups: Sequence[Sequence[int]] | None = None,
           software: str | None = None, attention_efficiency: float | None = None, compute_scale: float = 1.0,
           virtual_stages: int = 1, profile: str | NcclProfile | None = None,
           simulate: int = DEFAULT_SIMULATED, max_events: int = PLAN_MAX_EVENTS) -> Search:
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
    recompute : str, optional
        One of :data:`RECOMPUTE` (``none`` and ``full`` searched when omitted).
    sequence_parallel : bool, optional
        Default: on whenever ``tp > 1``.
    overlap : float
        Fraction of a backward (forward) that can hide data-parallel communication, in [0, 1],
        in the analytical first pass. A simulated step overlaps the gradient buckets as its
        schedule allows, except with ``overlap=0``: every gradient is then reduced after the
        backward (one bucket), as Megatron-LM's early local DDP did.
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
        then simulated (:func:`models.studies.stepgraph.step_graph`, run by
        :func:`models.predict.simulate.simulate`), and ranked by their simulated step ahead of
        the others (default :data:`DEFAULT_SIMULATED`; 0: analytical only). CNNs and interleaved
        schedules stay analytical. Each plan says which (``timing``).
    max_events : int
        The simulations' budget, sized before any (:func:`models.studies.stepgraph.step_graph_size`):
        their events (three per task) add up to at most this (default :data:`PLAN_MAX_EVENTS`);
        the candidates beyond it keep their analytical step, with a note naming ``max_events``.

    Raises
    ------
    PlanError, models.studies.workload.WorkloadError, models.studies.compute.UnsupportedDtypeError,
    topo.GpuSelectionError, models.engine.nccl.UnknownNcclVersionError
        :class:`NoLayoutError` (a PlanError) when every layout is refused (``skipped``).
    """
    options = {k: v for k, v in locals().items() if k not in ("workload", "G")}
    return _ranked(*_prepare(workload, G, **options), options)


def _ranked(w, ctx: _Context, n: int, global_batch: int, options: dict) -> Search:
    """Every layout of the prepared job, fitting ones first by step time."""
    skipped: list = []
    layouts = _layouts(ctx, n, options["tp"], options["pp"], options["dp"], options["zero"],
                       options["micro_batch"], global_batch, options["recompute"],
                       options["sequence_parallel"], options["virtual_stages"], skipped)
    plans = [_evaluate(ctx, layout, options["tp_groups"]) for layout in layouts]
    if not plans:
        raise NoLayoutError(w.name, n, ctx.fabric.name, tuple(skipped))
    plans.sort(key=lambda p: (not p.fits, p.step_time, p.memory.total, p.layout.label()))
    plans = _simulate_plans(w, ctx, plans, options["simulate"], options["max_events"])
    return Search(tuple(plans), tuple(skipped))


def plan(workload: str | Workload, G: nx.DiGraph | PreparedFabric, **options: Any) -> Plan:
    """The best layout of a workload on a fabric (see :func:`search` for the options).

    Degrees given are fixed; the others are searched, and the fastest layout that fits is
    returned (the one that misses memory least when none fits: ``fits`` False, with the
    numbers in ``memory``).
    """
    _check_options("plan", options)
    return _best(search(workload, G, **options))


def _search_options() -> dict:
    """:func:`search`'s options and their defaults."""
    return {name: p.default for name, p in inspect.signature(search).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


def _check_options(caller: str, options: dict) -> None:
    """Refuse a keyword ``caller`` does not take, naming ``caller`` and the closest option."""
    known = _search_options()
    unknown = sorted(set(options) - set(known))
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), known, n=1)
        raise UnknownOptionError(f"{caller}() got an unknown option {unknown[0]!r}"
                                 f"{f' (did you mean {close[0]!r}?)' if close else ''}: expected one of "
                                 f"{', '.join(known)}")


def _best(result: Search) -> Plan:
    if result.best.fits:
        return result.best
    return min(result.plans, key=lambda p: p.memory.total / p.memory.capacity)


# --------------------------------------------------------------------------- calibration
_MEASURED = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)\s*(s|ms|tflops(?::model|:hardware)?)\s*",
                       re.IGNORECASE)


def parse_measured(text: str) -> tuple:
    """A measured step: ``(kind, value)`` with kind ``"time"`` [s], ``"model_tflops"`` or
    ``"hardware_tflops"`` [TFLOP/s per GPU].

    Raises
    ------
    PlanError
        For text that is not :data:`MEASURED_GRAMMAR`, or a value that is not positive and finite.

    Examples
    --------
    >>> parse_measured("850ms"), parse_measured("150tflops:hardware")
    (('time', 0.85), ('hardware_tflops', 150.0))
    """
    found = _MEASURED.fullmatch(text) if isinstance(text, str) and len(text) <= 40 else None
    if found is None:
        raise PlanError(f"expected a measured step, {MEASURED_GRAMMAR}; received {str(text)[:40]!r}")
    value, unit = float(found.group(1)), found.group(2).lower()
    if not 0 < value < math.inf:
        raise PlanError(f"a measured step must be positive and finite, received {text!r}")
    if unit == "s":
        return "time", value
    if unit == "ms":
        return "time", value / 1e3
    return ("hardware_tflops" if unit.endswith(":hardware") else "model_tflops"), value


def _fit_simulated(w, ctx: _Context, layout: Layout, options: dict, target: float, scale: float) -> float:
    """The compute scale whose simulated step of ``layout`` is ``target`` [s], by secant steps
    from the analytical fit ``scale`` (the simulated step grows with the scale)."""
    def error(k):
        cm = dataclasses.replace(ctx.cm, scale=k)
        p = _evaluate(ctx, layout, options["tp_groups"], cm)
        return _simulate_plans(w, ctx, [p], 1, options["max_events"], cm)[0].step_time / target - 1

    k0, e0 = scale, error(scale)
    k1 = k0 / (1 + e0)  # the step proportional to the scale: a first guess
    for _ in range(8):
        if abs(e0) < 1e-6:
            break
        e1 = error(k1)
        if e1 == e0 or abs(e1) < 1e-6:
            k0, e0 = k1, e1
            break
        k0, k1, e0 = k1, max(k1 - e1 * (k1 - k0) / (e1 - e0), k1 / 16), e1
    return k0


def calibrate_plan(workload: str | Workload, G: nx.DiGraph | PreparedFabric, measured: str, **options: Any) -> Plan:
    """Fit the compute model to one measured step and return the calibrated plan.

    The layout measured is :func:`plan`'s with the same options (fix ``tp``, ``pp``, ``dp`` and
    the rest as they were run). The step fitted is the plan's own: simulated when the plan is
    (the analytical fit first, then secant steps on the simulated step). One number fits one
    constant: a multiplier ``scale`` on every
    kernel's time (products, attention, memory-bound passes, the optimizer), so the predicted
    step equals the measured one; communication is not scaled. The fitted plan's
    ``calibration`` shows the fractions of peak the measurement implies beside the defaults;
    pass ``compute_scale=scale`` to :func:`plan` or :func:`search` to predict other layouts
    and scales with it.

    Parameters
    ----------
    workload, G
        As for :func:`search`.
    measured : str
        :data:`MEASURED_GRAMMAR`: ``"1.25s"``, ``"850ms"``, ``"150tflops"`` (model FLOPs per
        GPU), ``"150tflops:hardware"`` (with recomputation).
    **options
        As for :func:`search` (``compute_scale`` excepted).

    Raises
    ------
    PlanError
        For a malformed measurement, a layout that does not fit (:class:`DoesNotFitError`: it
        cannot have been measured), or a measurement shorter than the communication the model
        predicts alone.
    """
    if "compute_scale" in options:
        raise PlanError("calibrate_plan fits compute_scale: expected no compute_scale option")
    kind, value = parse_measured(measured)
    _check_options("calibrate_plan", options)
    options = {**_search_options(), **options}
    w, ctx, n, global_batch = _prepare(workload, G, **options)
    base = _best(_ranked(w, ctx, n, global_batch, options))
    if not base.fits:
        raise DoesNotFitError(base)
    if kind == "time":
        target = value
    else:
        flops = base.model_flops if kind == "model_tflops" else base.hardware_flops
        target = flops / (value * 1e12 * base.layout.ngpus)

    def step(scale):
        return _evaluate(ctx, base.layout, options["tp_groups"],
                         dataclasses.replace(ctx.cm, scale=scale)).step_time

    low, high = 1e-4, 1e4
    if step(low) > target:
        floor = sum(c.exposed for c in base.components if c.name.endswith("_comm"))
        raise PlanError(f"the measured step ({target:.4g} s) is shorter than the communication the model "
                        f"predicts alone ({floor:.4g} s exposed): expected the layout, batch and system "
                        "that were measured")
    if step(high) < target:
        raise PlanError(f"the measured step ({target:.4g} s) is more than {high:g} times the predicted compute: "
                        "expected the layout, batch and system that were measured")
    for _ in range(48):  # bisection in log space (1e8 to 1 + 1e-13): the step grows with the scale
        mid = math.sqrt(low * high)
        if step(mid) < target:
            low = mid
        else:
            high = mid
    scale = math.sqrt(low * high)
    cm = ctx.cm
    if base.simulated:
        scale = _fit_simulated(w, ctx, base.layout, options, target, scale)
    default = {"gemm_efficiency": cm.gemm_efficiency, "memory_efficiency": cm.memory_efficiency}
    if cm.stack.flash_attention:
        default["attention_efficiency"] = cm.attention_efficiency
    fitted = {k: v / scale for k, v in default.items()}
    fit = Calibration(str(measured), target, base.step_time, scale, default, fitted, base.layout.label())
    fitted_cm = dataclasses.replace(cm, scale=scale)
    calibrated = _evaluate(ctx, base.layout, options["tp_groups"], fitted_cm)
    if base.simulated:
        calibrated = _simulate_plans(w, ctx, [calibrated], 1, options["max_events"], fitted_cm)[0]
    warnings = calibrated.warning_codes + ((PlanWarning.ABOVE_PEAK,) if max(fitted.values()) > 1 else ())
    return dataclasses.replace(calibrated, calibration=fit, warning_codes=warnings)


# --------------------------------------------------------------------------- GPU choice
@dataclass(frozen=True, slots=True)
class GpuRank:
    """One GPU generation for a workload.

    Attributes
    ----------
    generation : str
    time_per_sample : float
        Step time of one micro-batch on one GPU (the compute model of
        :mod:`models.studies.compute`) plus the exposed 8-GPU data-parallel all_reduce at the
        generation's NVLink bandwidth, per sample. [s]
    compute, memory_bound, communication : float
        The three parts of that time: tensor-core or FP32 work, memory-bound kernels (and
        launches), exposed communication. [s]
    binding : str
        ``"compute"``, ``"memory bandwidth"``, ``"communication"`` or ``"unsupported dtype"``.
    fits : bool
        Whether weights, gradients and optimizer state, sharded over 8 GPUs (ZeRO 3), and the
        micro-batch's activations fit the GPU.
    """

    generation: str
    time_per_sample: float
    compute: float
    memory_bound: float
    communication: float
    binding: str
    fits: bool

    def to_records(self) -> list:
        """One tidy row (``time_per_sample_s`` None for a generation without the dtype)."""
        return tidy_records({"generation": self.generation,
                             "time_per_sample_s": self.time_per_sample if math.isfinite(self.time_per_sample) else None,
                             "compute_s": self.compute, "memory_s": self.memory_bound,
                             "communication_s": self.communication, "binding": self.binding, "fits": self.fits})


def gpus_ranking(workload: str | Workload, *, dtype: str = "fp16", micro_batch: int = 1, ngpus: int = 8,
                 efficiency: float | None = None, memory_efficiency: float | None = None,
                 overlap: float = DEFAULT_OVERLAP) -> tuple:
    """Rank GPU generations for a workload, saying which resource binds.

    Each generation runs one micro-batch per GPU, data parallel over ``ngpus`` GPUs of one
    board: forward + backward on its compute model, then the gradient all_reduce at ``2 (n-1)/n``
    times the gradient bytes over the part's NVLink (:attr:`topo.specs.GpuSpec.nvlink_bandwidth`),
    overlapped with the backward up to ``overlap`` (a board-level scalar model: no fabric of every
    generation is available).

    Returns
    -------
    tuple of GpuRank
        Fastest first; generations without the dtype last.
    """
    w = as_workload(workload)
    _check_int("micro_batch", micro_batch)
    _check_int("ngpus", ngpus)
    elem = dtype_bytes(dtype)
    act = activation_bytes_per_element(dtype)
    ranks = []
    for gen in GENERATIONS.values():
        if not gen.supports(dtype):
            ranks.append(GpuRank(gen.name, math.inf, 0.0, 0.0, 0.0, "unsupported dtype", False))
            continue
        cm = compute_model(gen, dtype, workload=w, efficiency=efficiency, memory_efficiency=memory_efficiency)
        times = {"compute": 0.0, "memory": 0.0}
        layers = 1 if isinstance(w, CNN) else w.layers
        for ops, count in ((w.layer_ops(micro_batch, 1, elem, stack=cm.stack, act=act), layers),
                           (w.head_ops(micro_batch, 1, elem, act=act), 1)):
            for t in cm.times(ops):
                times["memory" if t.op.kind == "memory" else "compute"] += count * (t.forward + t.backward)
        grad = w.parameters * act
        comm = busbw_factor("all_reduce", ngpus) * grad / gen.nvlink_bandwidth if ngpus > 1 else 0.0
        backward = (times["compute"] + times["memory"]) * 2 / 3
        exposed = max(0.0, comm - overlap * backward)
        total = times["compute"] + times["memory"] + exposed
        parts = {"compute": times["compute"], "memory bandwidth": times["memory"], "communication": exposed}
        layout = Layout(1, 1, ngpus, 3, micro_batch, ngpus * micro_batch, "none", False, "tp-dp-pp")
        fits = memory(w, layout, dtype=dtype, capacity=gen.memory, flash=cm.stack.flash_attention).fits
        ranks.append(GpuRank(gen.name, total / micro_batch, times["compute"], times["memory"], exposed,
                             max(parts, key=parts.get), fits))
    ranks.sort(key=lambda r: (not r.fits, r.time_per_sample))
    return tuple(ranks)
