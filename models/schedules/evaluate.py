"""Time an MSCCL schedule on a fabric, beside NCCL's own choice and the bound.

:func:`evaluate_schedule` turns a :class:`~models.schedules.msccl.Schedule`'s steps into tasks of
the simulator (:func:`models.predict.simulate.simulate`, which shares links max-min fairly between
the flows moving at once) and returns a :class:`ScheduleEvaluation`: per size, the schedule's time,
algbw and busbw as nccl-tests defines them, NCCL's own estimate (:func:`models.estimate`) and the
bound (:func:`models.studies.bounds.bound`). Every figure is the collective model's, read from the
engine, none restated here (:class:`SchedulePricing` shows them):

- **Ranks and chunks.** Rank ``i`` runs on the ``i``-th GPU of the selection (default: the first
  ``ngpus`` GPUs of the fabric). A chunk is the buffer over the algorithm's chunks, nccl-tests'
  size ``S / nchunksperloop`` (issue 41; [MR] runs larger messages as loops of the schedule,
  whose overlap is not modelled [U]).
- **A step that sends** (``s``, ``rcs``, ``rrs``, ``rrcs``) is a transfer of ``cnt`` chunks from
  its GPU to its threadblock's send peer, over NCCL's point-to-point path between the two
  (:meth:`Estimator.flow_load <models.predict.collectives.Estimator.flow_load>`). Alone it moves at
  one NCCL channel's rate for the schedule's protocol: Ring's bus bandwidth for that protocol
  (:func:`models.engine.nccl.tuning.bus_bandwidth`'s steps: LL's factor and ``llMaxBw``, LL128's
  factor and per-channel cap) over the ring graph's channels, at most what the path's links
  hold. It fills each link by that rate times the protocol's wire bytes per payload byte
  (:data:`models.predict.decompose.STEP_PARAMETERS`) over NCCL's capacity of the link, as the
  simulator's decomposition of a collective does; its data then takes what the links achieve over
  NCCL's figure (:mod:`models.predict.measure`'s ratio of NCCL's ring on the same GPUs). Its
  start-up is Ring's hardware latency per step for the protocol (the intra-node term of
  :func:`models.engine.nccl.tuning.latency`), counted from when its data is there, beside the
  sends before it on its connection, which pipeline (:func:`schedule_tasks`).
- **A step that only receives** (``r``, ``rrc``) ends when its transfer has arrived; ``rrc``'s
  reduction runs as the data arrives, as NCCL's kernels reduce while receiving [U].
- **Local steps** ``cpy``, ``re`` and ``ra`` move their chunks through the GPU's memory at the
  device-local copy rate of :func:`models.predict.p2p.p2p_path` (read and write bytes counted: a
  copy touches each byte twice, a reduction three times); ``nop`` takes no time.
- **Order.** A threadblock runs its steps in order; a step waits for its dependency
  (``depid``/``deps``) and for the send it receives (:func:`~models.schedules.check.match_transfers`).
  The schedule takes Ring's base latency for the protocol plus the simulated makespan.

Not modelled: the runtime's slicing of a step into the connection's slots (a relayed chunk is
received whole before it is forwarded; store and forward at chunk granularity), the slots'
bound on sends in flight (NCCL_STEPS), the threadblocks' SMs.

Examples
--------
>>> import topo
>>> from models.schedules.ring import ring_all_gather
>>> r = evaluate_schedule(topo.build("dgxa100"), ring_all_gather(8, chunks=12, channels=12, inplace=True), "1G")
>>> p = r.points[0]
>>> round(p.busbw / 1e9, 1), round(p.nccl_busbw / 1e9, 1), p.nccl_algorithm
(235.4, 235.4, 'ring/Simple')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

import topo
from topo.units import parse_nbytes

from ..engine.fabric import PreparedFabric, prepare
from ..engine.nccltests import COLLECTIVES, algbw_to_busbw, count_from_nbytes
from ..engine.results import gpu_set, tidy_records
from ..predict.decompose import STEP_PARAMETERS, CollectiveSteps, Decomposer
from .check import match_transfers
from .msccl import Schedule, ScheduleError

__all__ = ["ScheduleEvaluationError", "SchedulePricing", "SchedulePoint", "ScheduleEvaluation",
           "evaluate_schedule", "schedule_pricing", "schedule_tasks", "schedule_loops", "schedule_events", "nccl_name",
           "achieved_graph", "SCHEDULE_MAX_EVENTS"]

#: The collectives NCCL's Ring runs (its per-protocol figures price every schedule; a schedule of
#: another collective is priced as all_gather's copy, which moves data without reducing).
_RING_PRICED = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
#: Bytes of the GPU's memory each payload byte of a local step touches (read and write counted).
_LOCAL_TOUCHES = MappingProxyType({"cpy": 2, "re": 3, "ra": 3, "nop": 0})
#: The simulator events timing schedules takes at most by default: :func:`evaluate_schedule`'s
#: over all its sizes, and :func:`models.schedules.export.sized_chunks`' over the schedules it
#: times (``max_events``; the command line's ``--max-events``; :func:`schedule_events` counts them
#: before any is simulated). A limit on the work, not a fit: it takes every collective of the
#: packing at any one size up to 1 GiB on a DGX-1V (the most, Simple's all_reduce on all eight GPUs
#: at 1 GiB: 687,456 events for the choice of its chunks, about two minutes of one core) and refuses
#: a DGX-2's 16 GPUs at 1 GiB (the choice for all_reduce: 2,026,080 events on links shared by
#: hundreds of flows, which took about five minutes).
SCHEDULE_MAX_EVENTS = 1_000_000


class ScheduleEvaluationError(ScheduleError):
    """A schedule that cannot be timed on this fabric: more ranks than the GPUs chosen, a protocol
    NCCL does not enable there, sizes that are not sizes."""


def nccl_name(collective: str) -> str | None:
    """nccl-tests' name of a schedule's collective (``all_to_all`` is ``alltoall``); None for one
    nccl-tests does not run (``custom``, ``gather``...).

    >>> nccl_name("all_to_all"), nccl_name("all_gather"), nccl_name("custom")
    ('alltoall', 'all_gather', None)
    """
    name = {"all_to_all": "alltoall"}.get(collective, collective)
    return name if name in COLLECTIVES else None


@dataclass(frozen=True, slots=True)
class SchedulePricing:
    """What one step costs on this fabric, each figure read from the engine.

    Attributes
    ----------
    protocol : str
    priced_as : str
        The collective whose Ring tuning gives the figures.
    channel_rate : float
        One channel's rate alone, NCCL's figure: Ring's bus bandwidth for the protocol over the
        ring graph's channels. [B/s]
    ring_channels : int
        Channels of NCCL's ring graph on these GPUs.
    bus_bound_by : str
        What bounds Ring's bus bandwidth for the protocol (the tuning step's name).
    wire : float
        Bytes on the wire per payload byte of the protocol.
    step_latency : float
        Ring's hardware latency per step for the protocol. [s]
    base_latency : float
        Ring's base latency for the protocol, paid once. [s]
    achieved_ratio : float
        What the links achieve over NCCL's figure (the binding link class of NCCL's ring).
    link : str
        That link class.
    local_rate : float
        The device-local copy rate (read and write bytes counted) of the first GPU. [B/s]
    chunk_limit : int
        The largest chunk of one loop: the bytes NCCL forwards as one slice for the protocol
        (:func:`models.engine.nccl.pipelining.pipelining`'s ``slice_bytes``; [MR]'s kernel sizes
        a chunk by the protocol's bytes per step [U]). [B]
    """

    protocol: str
    priced_as: str
    channel_rate: float
    ring_channels: int
    bus_bound_by: str
    wire: float
    step_latency: float
    base_latency: float
    achieved_ratio: float
    link: str
    local_rate: float
    chunk_limit: int

    def to_records(self) -> list:
        """One tidy row: every attribute."""
        return tidy_records({name: getattr(self, name) for name in self.__slots__})


@dataclass(frozen=True, slots=True)
class SchedulePoint:
    """The schedule at one size, beside NCCL and the bound.

    Attributes
    ----------
    nbytes, count : int
        nccl-tests' size [B] and its float32 elements.
    loops : int
        Loops of the schedule the runtime runs: the buffer over ``nchunksperloop`` chunks of at
        most :attr:`SchedulePricing.chunk_limit`.
    chunk_bytes : float
        One chunk: ``nbytes / (nchunksperloop x loops)``. [B]
    time, algbw, busbw : float
        The schedule's. [s, B/s]
    critical_steps : int
        Steps on the simulated critical path.
    nccl_time, nccl_busbw : float or None
        NCCL's own choice at this size (None for a collective nccl-tests does not run).
    nccl_algorithm : str or None
        ``algorithm/protocol`` NCCL runs.
    nccl_channels : int or None
    bound_busbw : float or None
        The bound (bandwidth only) at the fabric's line rates. [B/s]
    """

    nbytes: int
    count: int
    loops: int
    chunk_bytes: float
    time: float
    algbw: float
    busbw: float
    critical_steps: int
    nccl_time: float | None
    nccl_busbw: float | None
    nccl_algorithm: str | None
    nccl_channels: int | None
    bound_busbw: float | None

    def to_records(self) -> list:
        """One tidy row: every attribute."""
        return tidy_records({name: getattr(self, name) for name in self.__slots__})


@dataclass(frozen=True, slots=True)
class ScheduleEvaluation:
    """A schedule timed on a fabric at each size.

    Attributes
    ----------
    name, collective, protocol : str
        The schedule's.
    system : str
        The fabric's name.
    gpus : tuple of int
        The GPU of each rank.
    steps, threadblocks, nchannels : int
        The schedule's.
    pricing : SchedulePricing
    points : tuple of SchedulePoint
        By size, in the order asked.
    """

    name: str
    collective: str
    protocol: str
    system: str
    gpus: tuple
    steps: int
    threadblocks: int
    nchannels: int
    pricing: SchedulePricing
    points: tuple

    def to_records(self) -> list:
        """Tidy rows, one per size: the schedule's name and collective, the GPUs, the size, the
        schedule's time, algbw and busbw, NCCL's beside it and the bound."""
        p = self.points
        return tidy_records({
            "schedule": self.name, "collective": self.collective, "protocol": self.protocol,
            "system": self.system, "gpus": gpu_set(self.gpus), "ngpus": len(self.gpus),
            "nbytes": [x.nbytes for x in p], "count": [x.count for x in p], "loops": [x.loops for x in p],
            "chunk_bytes": [x.chunk_bytes for x in p], "time_s": [x.time for x in p],
            "algbw_Bps": [x.algbw for x in p], "busbw_Bps": [x.busbw for x in p],
            "critical_steps": [x.critical_steps for x in p], "nccl_time_s": [x.nccl_time for x in p],
            "nccl_busbw_Bps": [x.nccl_busbw for x in p], "nccl_algorithm": [x.nccl_algorithm for x in p],
            "nccl_channels": [x.nccl_channels for x in p], "bound_busbw_Bps": [x.bound_busbw for x in p]}) if p else []


# ----------------------------------------------------------------------------- the pricing
def _ranks(fabric: PreparedFabric, schedule: Schedule, gpus) -> tuple:
    """The fabric GPU id of each rank; refuses a schedule for more GPUs than chosen."""
    G = fabric.G
    ids = {g: i for i, g in enumerate(topo.gpus(G))}
    name = G.graph.get("name", "the fabric")
    if gpus is None:
        if schedule.ngpus > len(ids):
            raise ScheduleEvaluationError(f"schedule {schedule.name!r} is for {schedule.ngpus} GPUs, but {name} has "
                                          f"{len(ids)}")
        return tuple(range(schedule.ngpus))
    chosen = tuple(sorted(ids[g] for g in topo.select_gpus(G, gpus)))
    if len(chosen) != schedule.ngpus:
        raise ScheduleEvaluationError(f"schedule {schedule.name!r} is for {schedule.ngpus} GPUs, but the selection "
                                      f"{topo.select.format_gpu_ids(chosen)} of {name} has {len(chosen)}: expected "
                                      f"one GPU per rank")
    return chosen


def schedule_pricing(fabric: PreparedFabric, protocol: str, collective: str, gpus) -> tuple:
    """The :class:`SchedulePricing` of a protocol on GPU ids ``gpus`` of a prepared fabric, and the
    estimate it read (NCCL's ring on those GPUs).

    Raises
    ------
    ScheduleEvaluationError
        For a protocol NCCL does not enable for Ring on these GPUs (its reason named).
    """
    from ..predict.collectives import estimate
    from ..predict.p2p import p2p_path
    from ..engine.nccl.algorithms.ring import RING
    from ..engine.nccl.pipelining import pipelining

    priced_as = collective if collective in _RING_PRICED else "all_gather"
    e = estimate(fabric, priced_as, 2**20, list(gpus), algorithm=RING)
    tuning = next((c.tuning for c in e.selection.candidates
                   if c.tuning.algorithm == RING.name and c.tuning.protocol == protocol), None)
    if tuning is None or not tuning.enabled or tuning.bus is None or tuning.latency is None:
        why = f" ({tuning.why.cause.value})" if tuning is not None and tuning.why is not None else ""
        raise ScheduleEvaluationError(f"NCCL {fabric.profile.version} does not enable Ring {protocol} for {priced_as} "
                                      f"on GPUs {topo.select.format_gpu_ids(gpus)} of {fabric.G.graph.get('name')}"
                                      f"{why}: the schedule's protocol cannot be priced there")
    nchannels = int(e.ring.nchannels)
    latency = tuning.latency
    measurement = e.measurement
    local = p2p_path(fabric, gpus[0], gpus[0]).bandwidth
    pricing = SchedulePricing(protocol=protocol, priced_as=priced_as, channel_rate=float(tuning.bus.value) / nchannels,
                              ring_channels=nchannels, bus_bound_by=str(tuning.bus.bound_by),
                              wire=STEP_PARAMETERS.wire_factor(protocol),
                              step_latency=float(latency.terms[0].per_step) if latency.terms else 0.0,
                              base_latency=float(latency.base),
                              achieved_ratio=float(measurement.ratio) if measurement is not None else 1.0,
                              link=str(measurement.link) if measurement is not None else "",
                              local_rate=float(local),
                              chunk_limit=int(pipelining(fabric.nccl.profile, priced_as, protocol).slice_bytes))
    return pricing, e


class _StepDecomposer(Decomposer):
    """The simulator's decomposition of a schedule's transfers: one channel's rate for the
    protocol on NCCL's path between the two GPUs (the module's docstring)."""

    def __init__(self, fabric: PreparedFabric, pricing: SchedulePricing):
        super().__init__(fabric)
        self.pricing = pricing
        self._paths: dict = {}
        self._steps: dict = {}

    def prepare(self, operations) -> None:
        """Nothing to prepare: a transfer is priced from its path alone (:meth:`send`)."""

    def _path(self, src: int, dst: int) -> tuple:
        found = self._paths.get((src, dst))
        if found is None:
            p = self.pricing
            load = self.estimator.flow_load("send", [src, dst])
            capacity = self.system.capacity
            edges = tuple(edge for edge, share in load.items() if share > 0 and capacity(*edge) > 0)
            weight = np.array([load[e] * p.wire / capacity(*e) for e in edges])  # usage per B/s
            rate = p.channel_rate if not edges else min(p.channel_rate, 1.0 / float(weight.max()))
            found = self._paths[src, dst] = (edges, weight * rate, rate)
        return found

    def send(self, src: int, dst: int, nbytes) -> CollectiveSteps:
        key = (src, dst, nbytes)
        found = self._steps.get(key)
        if found is None:
            edges, usage, rate = self._path(src, dst)
            p = self.pricing
            found = self._steps[key] = CollectiveSteps(
                "send", (src, dst), int(nbytes), "msccl", p.protocol, 1, 0.0,
                int(nbytes) / (rate * p.achieved_ratio), edges, usage)
        return found


def _feeds(before, step) -> bool:
    """Whether a threadblock's step ``before`` makes the data its next step ``step`` sends: it
    writes the chunks sent from (a copy, a reduction or a receive into them: same buffer, ranges
    meeting)."""
    return (before.instruction.writes_dst and before.dstbuf == step.srcbuf
            and before.dstoff < step.srcoff + step.cnt and step.srcoff < before.dstoff + before.cnt)


def schedule_tasks(schedule: Schedule, chunk_bytes: float, ranks, pricing: SchedulePricing, iterations: int = 1):
    """The simulator's :class:`~models.predict.taskgraph.TaskGraph` of a schedule run for
    ``iterations`` loops of chunks of ``chunk_bytes``: one task per step and loop (``"i.g.t.s"``),
    on a stream of its threadblock (``"g.t"``), each threadblock running its steps loop after loop.
    The first loop's sends wait Ring's latency per step after their data is there (a task
    ``"lat.g.t.s"`` on a stream of its own, after the send's dependencies, and after the
    threadblock's own step that last made the data sent, if any: a copy or reduction, or a
    receive into the chunks sent, however many steps before it): a send whose data was there while the steps before it on its
    connection ran has paid it meanwhile, as the connection's slots pipeline successive transfers
    (NCCL_STEPS in flight). Later loops' start-ups overlap the data in flight, as NCCL's latency is
    paid once per pass."""
    from ..predict.taskgraph import Task, TaskGraph

    matched = match_transfers(schedule)
    tasks = []
    latency = pricing.step_latency
    for it in range(iterations):
        for gpu in schedule.gpus:
            g = gpu.id
            here = ranks[g]
            for tb in gpu.threadblocks:
                stream = f"{g}.{tb.id}"
                last = len(tb.steps) - 1
                written: dict = {}  # the first loop: (buffer, chunk) -> the last step writing it
                for step in tb.steps:
                    after = []
                    if step.s:
                        after.append(f"{it}.{stream}.{step.s - 1}")
                    elif it:
                        after.append(f"{it - 1}.{stream}.{last}")
                    if step.depid >= 0 and step.depid != tb.id:
                        after.append(f"{it}.{g}.{step.depid}.{step.deps}")
                    sender = matched.get((g, tb.id, step.s))
                    if sender is not None:
                        after.append("%d.%d.%d.%d" % ((it,) + sender))
                    op = step.instruction
                    nbytes = int(round(step.cnt * chunk_bytes))
                    name = f"{it}.{stream}.{step.s}"
                    if op.sends:
                        if not it and latency > 0:  # from its data, beside the sends before it
                            wait = f"lat.{stream}.{step.s}"
                            piped = step.s and not _feeds(tb.steps[step.s - 1], step)
                            data = tuple(a for a in after if not (piped and a == f"{it}.{stream}.{step.s - 1}"))
                            maker = max((written.get((step.srcbuf, c), -1)
                                         for c in range(step.srcoff, step.srcoff + step.cnt)), default=-1)
                            if piped and maker >= 0:  # an earlier step of its own made the data sent
                                data += (f"{it}.{stream}.{maker}",)
                            tasks.append(Task(wait, "compute", (here,), 0, latency, data, stream=wait))
                            after.append(wait)
                        tasks.append(Task(name, "send", (here, ranks[tb.send]), nbytes, after=tuple(after),
                                          stream=stream))
                    else:
                        touches = 0 if op.receives else _LOCAL_TOUCHES.get(step.type, 0)
                        seconds = touches * nbytes / pricing.local_rate if touches else 0.0
                        tasks.append(Task(name, "compute", (here,), 0, seconds, tuple(after), stream=stream))
                    if not it and op.writes_dst:
                        written.update(((step.dstbuf, c), step.s) for c in range(step.dstoff, step.dstoff + step.cnt))
    return TaskGraph(tuple(tasks), schedule.name)


def achieved_graph(fabric: PreparedFabric, ratio: float):
    """A copy of the fabric whose every edge's ``bandwidth`` is what the evaluator lets flows
    move over it: NCCL's capacity of the edge times ``ratio`` (a schedule's
    :attr:`SchedulePricing.achieved_ratio`). Bounds and packings on it are on the capacities the
    evaluator times with."""
    H = fabric.G.copy()
    capacity = fabric.nccl.capacity
    for u, v, d in H.edges(data=True):
        d["bandwidth"] = capacity(u, v) * ratio
    return H


# ----------------------------------------------------------------------------- evaluating
def _sizes(nbytes, collective, nranks) -> tuple:
    sizes = np.atleast_1d(parse_nbytes(nbytes)).astype(np.int64)
    name = nccl_name(collective)
    if name is None:
        return sizes, sizes
    counts, rounded = (np.atleast_1d(x) for x in count_from_nbytes(name, sizes, nranks))
    return counts, rounded


def schedule_loops(schedule: Schedule, nbytes: int, pricing: SchedulePricing) -> int:
    """Loops of the schedule the runtime runs for a buffer of ``nbytes`` (nccl-tests' size, as
    rounded): ``nchunksperloop`` chunks of at most :attr:`SchedulePricing.chunk_limit` a loop."""
    return max(1, -(-int(nbytes) // (schedule.nchunksperloop * pricing.chunk_limit)))


def schedule_events(schedule: Schedule, nbytes: int, pricing: SchedulePricing, max_loops: int = 64) -> int:
    """The simulator events of timing the schedule at ``nbytes`` (nccl-tests' size, as rounded),
    counted before its task graph is built: :func:`~models.predict.simulate.simulation_size` of
    :func:`schedule_tasks` for the loops simulated (at most ``max_loops``), three events per task.
    What :func:`evaluate_schedule`'s work follows, and what a caller that times many schedules
    sizes its work by."""
    from ..predict.simulate import EVENTS_PER_TASK

    loops = min(schedule_loops(schedule, nbytes, pricing), max_loops)
    waits = sum(1 for gpu in schedule.gpus for tb in gpu.threadblocks for step in tb.steps
                if step.instruction.sends) if pricing.step_latency > 0 else 0
    return EVENTS_PER_TASK * (schedule.nsteps * loops + waits)


def _timed(schedule, size, ranks, pricing, decomposer, max_loops, progress=None) -> tuple:
    """(loops, time, steps on the critical path) of the schedule at one size."""
    from ..predict.simulate import simulate

    loops = schedule_loops(schedule, size, pricing)
    chunk = size / (schedule.nchunksperloop * loops)

    result = simulate(decomposer.G, schedule_tasks(schedule, chunk, ranks, pricing, min(loops, max_loops)),
                      sm_share=False, decomposer=decomposer, max_events=max(6 * schedule.nsteps * max_loops, 1),
                      progress=progress)
    makespan = result.step_time
    critical = sum(1 for task in result.critical_path if not task.startswith("lat."))
    if loops > max_loops:  # each later loop takes the mean period of the simulated second half
        # a loop ends with its last task: the mean end of its tasks would let threadblocks that
        # run ahead of the busiest links shorten the period (few chunks over many loops then
        # "beat" the bound)
        ends: dict = {}
        for t in result.tasks:
            loop = t.id.split(".", 1)[0]
            if loop != "lat":
                ends[int(loop)] = max(ends.get(int(loop), 0.0), t.end)
        last, middle = (ends[i] for i in (max_loops - 1, max_loops // 2 - 1))
        makespan += (loops - max_loops) * (last - middle) / (max_loops - max_loops // 2)
    return loops, pricing.base_latency + makespan, critical


def _offset(progress, before: int, total: int):
    """``progress`` of one simulation's tasks among ``total``, ``before`` of them done already."""
    return lambda done, _: progress(before + done, total)


def evaluate_schedule(G, schedule: Schedule, nbytes, gpus=None, *, profile=None, nccl: bool = True,
                      bound: bool = True, max_loops: int = 64, max_events: int = SCHEDULE_MAX_EVENTS,
                      progress=None) -> ScheduleEvaluation:
    """Time a schedule on a fabric at each size, beside NCCL's choice and the bound.

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    schedule : Schedule
        Read by :func:`~models.schedules.msccl.read_msccl`; it should hold
        (:func:`~models.schedules.check.check_schedule`): its matching is read here.
    nbytes : int, str or sequence
        nccl-tests' sizes (rounded as nccl-tests rounds them to float32 elements per rank).
    gpus : str or iterable of int, optional
        The GPU of each rank, in rank order of their ids (default: the fabric's first ``ngpus``).
    profile : str or NcclProfile, optional
        NCCL release of the pricing and of NCCL's estimate.
    nccl, bound : bool
        Also give NCCL's estimate and the bound at each size.
    max_loops : int
        The most loops of the schedule simulated (even, >= 2): beyond, each later loop takes the
        mean period of the second half of those simulated (between the ends of whole loops, each
        ending with its last task).
    max_events : int
        The most simulator events the timings of all sizes may take (default
        :data:`SCHEDULE_MAX_EVENTS`; :func:`schedule_events` counts each size's before any is
        simulated): beyond, :class:`topo.LimitError` before any timing.
    progress : callable, optional
        ``progress(done, total)`` as the simulator's tasks end, counted over every size (each
        size's tasks: :func:`schedule_events` over three).

    Returns
    -------
    ScheduleEvaluation

    Raises
    ------
    ScheduleEvaluationError
        For a schedule of more (or, with ``gpus``, other) GPUs than chosen, or a protocol NCCL
        does not enable for Ring there.
    models.schedules.ScheduleCheckError
        For sends and receives that do not match.
    topo.LimitError
        For sizes whose timings need more than ``max_events`` simulator events (keyword
        ``max_events``), before any is timed.
    topo.SizeError, topo.GpuSelectionError, topo.CountError
        The last for a ``max_events`` that is not a whole number >= 1.
    """
    from topo.errors import LimitError
    from topo.units import parse_count

    from ..predict.collectives import estimate
    from ..predict.simulate import EVENTS_PER_TASK

    if isinstance(max_loops, bool) or not isinstance(max_loops, int) or max_loops < 2 or max_loops % 2:
        raise ScheduleEvaluationError(f"expected max_loops an even whole number >= 2, received {max_loops!r}")
    if not isinstance(schedule, Schedule):
        raise ScheduleEvaluationError(f"expected a Schedule (models.schedules.read_msccl), received "
                                      f"{type(schedule).__name__}")
    max_events = parse_count(max_events, name="max_events")
    if progress is not None and not callable(progress):
        raise ScheduleEvaluationError(f"expected progress a callable progress(done, total) or None, received "
                                      f"{type(progress).__name__}")
    fabric = prepare(G, nccl=profile)
    ranks = _ranks(fabric, schedule, gpus)
    counts, sizes = _sizes(nbytes, schedule.collective, len(ranks))
    pricing, _ = schedule_pricing(fabric, schedule.protocol, schedule.collective, ranks)
    events = [schedule_events(schedule, size, pricing, max_loops) for size in sizes.tolist()]
    if sum(events) > max_events:  # sized before any work
        raise LimitError(f"timing schedule {schedule.name!r} ({schedule.nsteps} steps) at {len(events)} size"
                         f"{'s' if len(events) != 1 else ''} up to {int(sizes.max())} B: {sum(events)} simulator "
                         f"events", keyword="max_events", size=sum(events), limit=max_events)
    decomposer = _StepDecomposer(fabric, pricing)
    name = nccl_name(schedule.collective)
    e = estimate(fabric, name, sizes, list(ranks)) if nccl and name is not None and len(ranks) > 1 else None
    limit = None
    if bound and name is not None and len(ranks) > 1:
        from ..studies.bounds import bound as bound_of

        limit = float(bound_of(fabric, name, int(sizes.max()), list(ranks), nccl=False).bound_busbw)
    points = []
    tasks = [count // EVENTS_PER_TASK for count in events]
    for i, (count, size) in enumerate(zip(counts.tolist(), sizes.tolist())):
        step = None if progress is None else _offset(progress, sum(tasks[:i]), sum(tasks))
        loops, time, critical = _timed(schedule, size, ranks, pricing, decomposer, max_loops, step)
        algbw = size / time if time > 0 else math.inf
        busbw = float(algbw_to_busbw(name, algbw, len(ranks))) if name is not None else algbw
        point = e.point(i) if e is not None else None
        points.append(SchedulePoint(
            nbytes=int(size), count=int(count), loops=loops, chunk_bytes=size / (schedule.nchunksperloop * loops),
            time=time, algbw=algbw, busbw=busbw, critical_steps=critical,
            nccl_time=None if point is None else float(point.time),
            nccl_busbw=None if point is None else float(point.busbw),
            nccl_algorithm=None if point is None else f"{point.algorithm}/{point.protocol}",
            nccl_channels=None if point is None else int(point.nchannels), bound_busbw=limit))
    return ScheduleEvaluation(schedule.name, schedule.collective, schedule.protocol,
                              fabric.G.graph.get("name", "fabric"), ranks, schedule.nsteps,
                              schedule.nthreadblocks, schedule.nchannels, pricing, tuple(points))
