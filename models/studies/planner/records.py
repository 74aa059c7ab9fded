"""The planner's records: layouts, memory, the parts of a step, plans, searches, and its errors.

Frozen numbers shared by every topic of :mod:`models.studies.planner` (memory, the step, the
layout search, calibration); :mod:`models.present.plan_text` words them.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass, field

from topo.errors import DgxTopoError

from ...engine.results import tidy_records
from ..compute import ComputeFacts
from ..workload import TpConstraint, Workload
from .cp_exchange import CP_COMM, RING, CpExchange, cp_exchange_named  # CP_COMM: the exchanges' names
from .dispatcher import FLAT_DISPATCH, Dispatcher
from .ep_overlap import NO_OVERLAP, EpOverlap
from ..recomputation import RECOMPUTES, Recompute, as_recompute

__all__ = ["PlanError", "Layout", "Memory", "Component", "ComponentDetail", "ComputeDetail", "TensorParallelDetail",
           "ContextParallelDetail", "ExpertParallelDetail", "CP_COMM",
           "PipelineDetail", "BubbleDetail", "DataParallelDetail", "OptimizerDetail", "Plan", "Search",
           "Calibration", "PlanWarning", "TimingWhy", "TimingCode", "SkipCode", "SkippedLayout", "NoLayoutError",
           "DoesNotFitError", "UnknownOptionError", "ORDERS", "RECOMPUTE"]

#: Nesting orders of the data- and pipeline-parallel groups over the tensor-parallel groups.
ORDERS = ("tp-dp-pp", "tp-pp-dp")
#: Recomputation modes by name (:mod:`models.studies.recomputation`: Korthikanti et al.
#: 2022's none, selective and full; DeepSeek-V3's norms, MLA up-projections and MoE activations).
RECOMPUTE = tuple(r.name for r in RECOMPUTES)


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
    recompute : Recompute
        What runs again before each backward: a strategy object of
        :mod:`models.studies.recomputation` (a name of :data:`RECOMPUTE` given is read as its object).
    sequence_parallel : bool
    order : str
        One of :data:`ORDERS`.
    virtual_stages : int
        Model chunks per GPU of an interleaved 1F1B pipeline (1: plain 1F1B).
    cp : int
        Context-parallel degree: each sequence split over ``cp`` GPUs (``tp x cp x pp x dp`` GPUs).
    ep, etp : int
        Expert- and expert-tensor-parallel degrees of a mixture-of-experts workload: the expert
        layers fold the ``tp x cp x dp`` GPUs of a stage as ``etp x ep x edp`` (Megatron-Core's
        "MoE parallel folding"); 1 and 1 for a dense workload.
    cp_comm : CpExchange
        How context parallelism exchanges K/V (meaningful when ``cp > 1``): an object of
        :mod:`models.studies.planner.cp_exchange` (a name of :data:`CP_COMM` given is read as its object).
    first_stage_layers, last_stage_layers : int
        Transformer layers of the first and last pipeline stages (0: the even split), the rest
        spread evenly over the others (Megatron's ``--decoder-first/last-pipeline-num-layers``).
    embedding_in_split, loss_in_split : bool
        The embedding (first stage) and the output layer with its loss (last stage) count as one
        layer each when the layers are split (Megatron's ``--account-for-embedding/loss-in-pipeline-split``).
    """

    tp: int
    pp: int
    dp: int
    zero: int
    micro_batch: int
    global_batch: int
    recompute: Recompute
    sequence_parallel: bool
    order: str
    virtual_stages: int = 1
    cp: int = 1
    ep: int = 1
    etp: int = 1
    cp_comm: CpExchange = RING
    first_stage_layers: int = 0
    last_stage_layers: int = 0
    embedding_in_split: bool = False
    loss_in_split: bool = False

    def __post_init__(self):
        recompute = as_recompute(self.recompute)  # a name, read once as its object
        if recompute is None:
            raise PlanError(f"recompute must be one of {', '.join(RECOMPUTE)} or a Recompute, received "
                            f"{type(self.recompute).__name__} {self.recompute!r}")
        object.__setattr__(self, "recompute", recompute)
        if isinstance(self.cp_comm, str):  # a name, read once as its object
            found = cp_exchange_named(self.cp_comm)
            if found is None:
                raise PlanError(f"cp_comm must be one of {', '.join(CP_COMM)}, received {self.cp_comm!r}")
            object.__setattr__(self, "cp_comm", found)
        elif not isinstance(self.cp_comm, CpExchange):
            raise PlanError(f"cp_comm must be one of {', '.join(CP_COMM)} or a CpExchange, received "
                            f"{type(self.cp_comm).__name__} {self.cp_comm!r}")
        if self.cp > 1:
            wrong = self.cp_comm.check(self.cp)
            if wrong is not None:
                raise PlanError(wrong)

    @property
    def ngpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    @property
    def edp(self) -> int:
        """The expert layers' data-parallel degree, ``tp cp dp / (etp ep)``."""
        return self.tp * self.cp * self.dp // (self.etp * self.ep)

    @property
    def extended(self) -> bool:
        """Uses what the first planner did not model: context or expert parallelism, or a pipeline
        split other than the even one (:mod:`models.studies.planner.parallel_step` times it)."""
        return (self.cp > 1 or self.ep > 1 or self.etp > 1 or bool(self.first_stage_layers)
                or bool(self.last_stage_layers) or self.embedding_in_split or self.loss_in_split)

    @property
    def micro_batches(self) -> int:
        """Micro-batches per step per pipeline, ``global_batch / (dp x micro_batch)``."""
        return self.global_batch // (self.dp * self.micro_batch)

    def label(self) -> str:
        mark = self.cp_comm.label or ("" if self.cp_comm.name == RING.name else self.cp_comm.name)
        cp = f"cp{self.cp}{mark} " if self.cp > 1 else ""
        ep = f" ep{self.ep}" + (f" etp{self.etp}" if self.etp != 1 else "") if self.ep > 1 or self.etp > 1 else ""
        split = ""
        if self.first_stage_layers or self.last_stage_layers:
            split = f" split{self.first_stage_layers or '-'}/{self.last_stage_layers or '-'}"
        if self.embedding_in_split or self.loss_in_split:
            split += "+" + "".join(k for k, on in (("E", self.embedding_in_split), ("L", self.loss_in_split)) if on)
        return (f"tp{self.tp} {cp}pp{self.pp}{f' v{self.virtual_stages}' if self.virtual_stages > 1 else ''}{split} "
                f"dp{self.dp}{ep} zero{self.zero} mb{self.micro_batch} "
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
    #: An expert overlap whose schedule step graphs do not build (``EpOverlap.simulated`` False: one of
    #: your own; the built-in ones, DualPipe included, are built by :mod:`models.studies.planner.parallel_graph`).
    DUALPIPE = "dualpipe"
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
    #: Expert parallelism on a dense workload (it has no experts).
    EP_DENSE = "ep_dense"
    #: ``ep`` does not divide the ``count`` routed experts.
    EP_EXPERTS = "ep_experts"
    #: ``etp x ep`` does not divide the stage's ``count`` = ``tp x cp x dp`` GPUs (the folding).
    EP_FOLD = "ep_fold"
    #: Expert with tensor parallelism needs sequence parallelism (Megatron-LM's arguments check).
    EP_SEQUENCE_PARALLEL = "ep_sequence_parallel"
    #: ``etp`` does not divide the expert FFN width ``count``.
    ETP_FFN = "etp_ffn"
    #: The sequence of ``count`` tokens does not split into ``2 x cp`` load-balanced chunks.
    CP_SEQUENCE = "cp_sequence"
    #: Context parallelism needs flash attention (Transformer Engine's fused attention).
    CP_FLASH = "cp_flash"
    #: All-to-all context parallelism needs the ``count`` heads per tensor-parallel rank divisible by ``cp``.
    CP_HEADS = "cp_heads"
    #: Hierarchical context parallelism (``a2a+p2p``) needs sizes ``a x p = cp``, both >= 2, and
    #: the ``count`` heads per tensor-parallel rank divisible by ``a``
    #: (:class:`models.studies.planner.cp_exchange.HierarchicalExchange`).
    CP_HIERARCHY = "cp_hierarchy"
    #: The pipeline split of the ``count`` layers leaves a stage (or a virtual chunk) empty or
    #: uneven where it must divide (``split`` of the :class:`SkippedLayout` holds what was asked).
    SPLIT = "split"
    #: DualPipe needs an even ``pp``, an even number of micro-batches (``count``) of at least ``2 pp``
    #: and no interleaving (:func:`models.studies.planner.dualpipe.dualpipe_refusal`).
    DUALPIPE = "dualpipe"


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
    cp, ep, etp : int
        The context-, expert- and expert-tensor-parallel degrees refused (1: none).
    split : tuple
        :attr:`SkipCode.SPLIT`: the split asked, ``(first_stage_layers, last_stage_layers,
        embedding_in_split, loss_in_split)`` (:func:`models.studies.planner.parallel.stage_split`
        of ``count`` layers over ``pp x virtual_stages`` says what it breaks).

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
    cp: int = 1
    ep: int = 1
    etp: int = 1
    split: tuple = ()

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
                             "tp_limit_value": None if limit is None else limit.value, "cp": self.cp,
                             "ep": self.ep, "etp": self.etp,
                             **dict(zip(("first_stage_layers", "last_stage_layers", "embedding_in_split",
                                         "loss_in_split"), self.split or (0, 0, False, False)))})


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
class ContextParallelDetail:
    """The numbers of a step's ``cp_comm`` component: per micro-batch, the K/V exchange of each
    attention layer of the stage over the context-parallel groups.

    Attributes
    ----------
    degree : int
        The context-parallel degree.
    comm : CpExchange
        The exchange (:mod:`models.studies.planner.cp_exchange`): ``p2p`` (ring: ``degree - 1``
        sends per pass, each of one K/V block, overlapped with the attention of the block in hand)
        or ``a2a`` (4 all-to-alls per pass, not overlapped); records give its name.
    layers : int
        Attention layers of the stage.
    nbytes : float
        ``p2p``: one ring step's K/V block, sent by every GPU to the next (the backward sends the
        block and its gradient, twice this); ``a2a``: the per-rank buffers of the four all-to-alls of
        one forward pass summed (Q, K, V in, the output back), what a rank sends in that pass
        (:func:`models.studies.planner.cp_exchange.cp_a2a_bytes` gives the four); ``a2a+p2p``: the
        ring's block and the four all-to-all buffers summed. [bytes]
    """

    degree: int
    comm: CpExchange
    layers: int
    nbytes: float

    def to_records(self) -> list:
        """One tidy row (the exchange's label too: a hierarchical one's sizes, ``a2p4``)."""
        return tidy_records({"degree": self.degree, "comm": self.comm.name, "label": self.comm.label,
                             "layers": self.layers, "nbytes": self.nbytes})


@dataclass(frozen=True, slots=True)
class ExpertParallelDetail:
    """The numbers of a step's ``ep_comm`` component: per micro-batch and MoE layer of the
    stage, the dispatch and combine all-to-alls over the expert-parallel groups (and their
    gradients in the backward).

    Attributes
    ----------
    degree, tensor_degree : int
        ``ep`` and ``etp``.
    layers : int
        MoE layers of the stage (the MTP modules' included).
    dispatch_bytes, combine_bytes : float
        Per-rank buffers of one dispatch and one combine (nccl-tests alltoall size: routed token
        copies x hidden x dtype bytes, times the load-balance factor). [bytes]
    network_fraction : float
        Of a rank's buffer, the share sent to GPUs outside its NVLink domain.
    balance : float
        The busiest rank's tokens over the balanced share (1: force-balanced).
    overlap : EpOverlap
        How the all-to-alls overlap compute (:mod:`models.studies.planner.ep_overlap`): ``none``,
        ``batch`` (Megatron's batch-level overlap) or ``dualpipe``; records give its name.
    dispatcher : Dispatcher
        How the tokens are sent (:mod:`models.studies.planner.dispatcher`): ``flat`` or
        ``hierarchical``; records give its name.
    nvlink_fraction : float
        Of a rank's buffer, the bytes one GPU sends over NVLink per byte (the hierarchical
        dispatch's forwarding included; ``network_fraction`` likewise over the network).
    legs : tuple
        The step graph's all-to-alls of one dispatch, side by side: ``(groups' name, per-rank
        buffer per byte of the buffer)`` each (:meth:`Dispatcher.legs
        <models.studies.planner.dispatcher.Dispatcher.legs>`).
    """

    degree: int
    tensor_degree: int
    layers: int
    dispatch_bytes: float
    combine_bytes: float
    network_fraction: float
    balance: float
    overlap: EpOverlap
    dispatcher: Dispatcher = FLAT_DISPATCH
    nvlink_fraction: float = 0.0
    legs: tuple = ()

    def to_records(self) -> list:
        """One tidy row."""
        return tidy_records({"degree": self.degree, "tensor_degree": self.tensor_degree, "layers": self.layers,
                             "dispatch_bytes": self.dispatch_bytes, "combine_bytes": self.combine_bytes,
                             "network_fraction": self.network_fraction, "balance": self.balance,
                             "overlap": self.overlap.name, "dispatcher": self.dispatcher.name,
                             "nvlink_fraction": self.nvlink_fraction})


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
    overlap : EpOverlap
        The expert overlap whose schedule sets the bubble
        (:meth:`~models.studies.planner.ep_overlap.EpOverlap.bubble`): 1F1B's unless DualPipe.
    slot, backward_input, weight : float
        One micro-batch's forward and backward with their exposed communication (DualPipe's
        ``F&B``; 1F1B's: the mean of the ranks' but the busiest, which the pipeline fills and
        drains through, :meth:`~models.studies.planner.ep_overlap.EpOverlap.fill_slot`), the
        backward's input gradients (``B``) and weight gradients (``W``). [s]
    busiest : float
        The busiest rank's micro-batch (0: not given; the bubble then in slots of it). [s]
    """

    stages: int
    virtual_stages: int
    micro_batches: int
    simulated: bool = False
    overlap: EpOverlap = NO_OVERLAP
    slot: float = 0.0
    backward_input: float = 0.0
    weight: float = 0.0
    busiest: float = 0.0

    @property
    def fraction(self) -> float:
        """The analytical bubble over the ideal step: 1F1B's ``(p - 1) / (v m)`` (times the other
        ranks' slot over the busiest's), or the overlap's own
        (:meth:`~models.studies.planner.ep_overlap.EpOverlap.bubble_fraction`)."""
        return self.overlap.bubble_fraction(self.stages, self.virtual_stages, self.micro_batches, slot=self.slot,
                                            backward_input=self.backward_input, weight=self.weight,
                                            busiest=self.busiest)

    def to_records(self) -> list:
        """One tidy row (with the overlap's terms of its bubble, DualPipe's ``formula``,
        ``pair_s``, ``backward_input_s`` and ``weight_s``)."""
        terms = self.overlap.bubble_terms(slot=self.slot, backward_input=self.backward_input, weight=self.weight)
        return tidy_records({"stages": self.stages, "virtual_stages": self.virtual_stages,
                             "micro_batches": self.micro_batches, "fraction": self.fraction,
                             "simulated": self.simulated, **terms})


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
        The gradients one GPU reduces (its parameters over ``tp``, the experts' over ``etp x
        ep``), at the gradients' bytes per parameter
        (:func:`~models.studies.planner.gpu_memory.state_bytes`: 4 for bf16, whose gradients
        Megatron-LM accumulates and reduces in fp32; 2 for fp16). [bytes]
    bucket : float
        Gradient bucket. [bytes]
    overlap : float
        Fraction of the backward (forward for ZeRO 3's gathers) that hides the communication in
        the analytical first pass.
    parameter_bytes : float
        The same parameters at the weights' bytes per parameter: what one all_gather of them
        moves (ZeRO 1/2 once after the step, ZeRO 3 before every forward and backward). [bytes]
    simulated : bool
        The overlap is the simulated schedule's, not ``overlap``.
    """

    degree: int
    zero: int
    nbytes: float
    bucket: float
    overlap: float
    parameter_bytes: float
    simulated: bool = False

    def to_records(self) -> list:
        """One tidy row."""
        return tidy_records({"degree": self.degree, "zero": self.zero, "nbytes": self.nbytes,
                             "parameter_bytes": self.parameter_bytes, "bucket_bytes": self.bucket,
                             "overlap": self.overlap, "simulated": self.simulated})


@dataclass(frozen=True, slots=True)
class OptimizerDetail:
    """The numbers of a step's ``optimizer`` component.

    Attributes
    ----------
    parameters : float
        The parameters one GPU's optimizer updates (its stage's, over ``tp``, over ``dp`` with
        ZeRO).
    pass_bytes : float
        The memory traffic of each
        (:func:`~models.studies.planner.gpu_memory.optimizer_pass_bytes`). [bytes]
    """

    parameters: float
    pass_bytes: float

    def to_records(self) -> list:
        """One tidy row."""
        return tidy_records({"parameters": self.parameters, "pass_bytes": self.pass_bytes})


@dataclass(frozen=True, slots=True)
class Component:
    """One part of a step.

    Attributes
    ----------
    name : str
        ``compute``, ``tp_comm``, ``cp_comm``, ``ep_comm`` (those two in a layout with context or
        expert parallelism), ``pp_comm``, ``dp_comm``, ``bubble``, ``optimizer``.
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
ComponentDetail = (ComputeDetail | TensorParallelDetail | ContextParallelDetail | ExpertParallelDetail
                   | PipelineDetail | BubbleDetail | DataParallelDetail | OptimizerDetail)


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

    @property
    def ep_overlap(self) -> EpOverlap | None:
        """The expert overlap its step runs (:mod:`~models.studies.planner.ep_overlap`): the one
        a search of several chose; None without an ``ep_comm`` component (a dense workload)."""
        return next((c.detail.overlap for c in self.components if c.name == "ep_comm"), None)

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
            "global_batch": self.layout.global_batch, "recompute": self.layout.recompute.name,
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

