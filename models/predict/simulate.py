"""Many collectives, sends and compute kernels at once on a fabric: an event-driven, flow-level timeline.

:func:`simulate` runs a :class:`TaskGraph` (:mod:`models.predict.taskgraph`, which this module
re-exports: the graph's types, its JSON form and its limits) on a fabric. A task is a compute kernel on one GPU
(or the same kernel on every GPU of a group: a tensor-parallel layer), one of the seven
collectives on a GPU group, or a point-to-point send; tasks wait for the tasks they come
``after`` and for their *stream*:

* a GPU runs one compute kernel at a time (its compute stream);
* each communicator runs its operations one at a time on its own stream, as NCCL does
  (operations of one communicator are serialised; different communicators run concurrently);
* a task may name a stream instead (``stream``), shared by every task naming it.

When a stream is free it starts the first of its waiting tasks (in the graph's order) whose
dependencies are done and whose other streams are free.

Communication is decomposed the way NCCL runs it (:mod:`models.predict.decompose`): a start-up
(host launch and NCCL's latency term, the chunked steps' pipeline fill), then a data phase
that fills the links of its channels. Links are shared by max-min fairness, recomputed at every
event (:func:`models.predict.flows.max_min_share`). Every link's share comes from the graph's
capacities through the channel search and the estimate, so a what-if graph changes the
simulation as it changes every other prediction. Alone on an idle fabric a collective takes
exactly :func:`models.predict.collectives.estimate`'s time.

NCCL's kernels hold SMs: one CUDA block per execution channel (NVIDIA/nccl v2.27.7-1
src/enqueue.cc), twice the ring or tree graph's channels, or NCCL's NVLS channel count
(:meth:`models.predict.decompose.StepParameters.blocks`), so while a collective runs on a GPU,
a compute kernel there gets the rest of the SMs (``sm_share=True``, the default): its speed is
``1 - blocks / SMs`` (the part's SMs, :func:`sm_counts`; linear in the SMs left [U]).

Events that fall at the same time are processed together, so identical data-parallel replicas
or pipeline stages cost one rate computation per event time, not one per replica.

Examples
--------
>>> import topo
>>> G = topo.build("dgxh100")
>>> graph = task_graph({"tasks": [
...     {"id": "ar", "op": "all_reduce", "gpus": list(range(8)), "bytes": 2**28},
...     {"id": "mm", "op": "compute", "gpu": 0, "seconds": 2e-3}]})
>>> r = simulate(G, graph, sm_share=False)        # the all_reduce hides behind the compute
>>> round(r.step_time / 1e-3, 3), r.critical_path, round(r.task("ar").end / 1e-3, 3)
(2.0, ('mm',), 1.074)
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

import topo
from topo.errors import DgxTopoError
from topo.units import parse_count

from .collectives import LimitError, Progress
from ..engine.results import tidy_records
from ..engine.results import gpu_set
from .decompose import Decomposer
from ..engine.nccl.algorithms.base import Algorithm
from ..engine.nccl.algorithms.catalog import algorithm_set
from .flows import max_min_share
from .measure import CalibrationLike
from .taskgraph import (COLLECTIVE_OPS, MAX_BYTES, MAX_TASKS, Task, TaskGraph, TaskGraphError, read_task_graph,
                        task_graph)
from ..engine.nccl.profiles import NcclProfile

__all__ = ["Task", "TaskGraph", "TaskGraphError", "TaskTiming", "LinkUse", "SimulationResult",
           "task_graph", "read_task_graph", "simulate", "simulation_size", "sm_counts", "COLLECTIVE_OPS",
           "MAX_TASKS", "MAX_BYTES", "MAX_EVENTS", "EVENTS_PER_TASK", "LimitError"]

#: Events a task costs the simulator: its start, its data, its end (:func:`simulation_size`).
EVENTS_PER_TASK = 3
#: Default limit on a simulation's size (:func:`simulation_size`: three events per task, start, data,
#: end; a folded image adds none); one to two minutes of work on one core at the rate of the benchmark
#: (examples/simulate_benchmark.py: 43,156 tasks, a size of 129,468, in under 4 s).
MAX_EVENTS = 3_000_000


# ------------------------------------------------------------------------------ results
@dataclass(frozen=True, slots=True)
class TaskTiming:
    """When one task ran.

    Attributes
    ----------
    id, op, kind : str
    gpus : tuple of int
    start, end : float
        [s] from the start of the step.
    data_start : float
        When its data began to flow (communication; ``start`` for compute). [s]
    alone : float
        Its duration alone on an idle fabric and GPU. [s]
    nbytes : int
    algorithm, protocol : str
        What NCCL runs ('' for compute).
    stream : str
        The stream it ran on (display name).
    critical : bool
        On the critical path.
    copies : int
        The task and its folded images (each ran from ``start`` to ``end``).
    """

    id: str
    op: str
    kind: str
    gpus: tuple
    start: float
    end: float
    data_start: float
    alone: float
    nbytes: int
    algorithm: str
    protocol: str
    stream: str
    critical: bool
    copies: int = 1

    @property
    def duration(self) -> float:
        return self.end - self.start

    @property
    def is_compute(self) -> bool:
        return self.op == "compute"


@dataclass(frozen=True, slots=True)
class LinkUse:
    """One link over the step.

    Attributes
    ----------
    edge : tuple
        ``(u, v)``.
    capacity : float
        The graph's bandwidth of the edge, per direction. [B/s]
    mean : float
        Mean fraction of its capacity filled over the step.
    peak : float
        Highest fraction filled at any time (the busiest links only; NaN for the others,
        :meth:`SimulationResult.link_series` gives any link's).
    """

    edge: tuple
    capacity: float
    mean: float
    peak: float = math.nan


@dataclass(frozen=True, slots=True)
class SimulationResult:
    """A simulated step.

    Attributes
    ----------
    fabric : str
    name : str
        The task graph's name.
    step_time : float
        When the last task ends. [s]
    tasks : tuple of TaskTiming
        In the graph's order.
    critical_path : tuple of str
        Task ids from the first to the last, each starting when the previous one ends (or
        when its stream frees).
    exposed : tuple of (str, float)
        Per kind of communication, its time on the critical path. [s]
    links : tuple of LinkUse
        Every link that carried data, busiest (mean) first.
    link_order : tuple of tuple
        The edges as the flows' link indices number them.
    events : int
        Event times processed.
    intervals : tuple of numpy.ndarray
        The timeline between events, flattened: ``(starts, ends, interval, flow class, factor)``
        (per moving flow of each interval, its speed factor); :meth:`link_series` reads it.
    class_links, class_usage, flow_class : tuple
        Per distinct decomposition (flow class) its link indices and usage; per task its class
        (-1 for compute).
    """

    fabric: str
    name: str
    step_time: float
    tasks: tuple
    critical_path: tuple
    exposed: tuple
    links: tuple = field(repr=False)
    link_order: tuple = field(repr=False)
    events: int = 0
    intervals: tuple = field(default=(), repr=False)
    class_links: tuple = field(default=(), repr=False)
    class_usage: tuple = field(default=(), repr=False)
    flow_class: tuple = field(default=(), repr=False)

    def link_series(self, edges: Sequence[tuple[str, str]] | None = None, *, top: int = 8) -> tuple:
        """Utilisation of links over time, piecewise constant between events.

        Parameters
        ----------
        edges : sequence of (u, v), optional
            The links (default: the ``top`` busiest by mean).
        top : int

        Returns
        -------
        (edges, starts, ends, shares)
            ``shares[j, i]``: the fraction of link ``j``'s capacity filled from ``starts[i]``
            to ``ends[i]`` [s].

        Examples
        --------
        >>> import topo
        >>> r = simulate(topo.build("dgxh100"), task_graph({"tasks": [
        ...     {"id": "ar", "op": "all_reduce", "gpus": [0, 1, 2, 3], "bytes": 2**26}]}))
        >>> edges, starts, ends, shares = r.link_series(top=2)
        >>> edges, shares.round(3).tolist()        # one interval: the data phase
        ((('gpu0', 'nvswitch0'), ('gpu0', 'nvswitch3')), [[0.971], [0.971]])
        """
        position = {edge: i for i, edge in enumerate(self.link_order)}
        if edges is None:
            edges = [link.edge for link in self.links[:top]]
        chosen = [position[tuple(e)] for e in edges if tuple(e) in position]
        starts, ends = (self.intervals[0], self.intervals[1]) if self.intervals else (np.zeros(0), np.zeros(0))
        shares = _series(self.intervals, chosen, self.class_links, self.class_usage)[1]
        return tuple(self.link_order[i] for i in chosen), starts, ends, shares

    @property
    def exposed_comm(self) -> float:
        """Communication on the critical path, every kind. [s]"""
        return sum(t for _, t in self.exposed)

    def task(self, task_id: str) -> TaskTiming:
        """The timing of one task, by id.

        Raises
        ------
        KeyError
            For an id the graph does not have.
        """
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise KeyError(task_id)

    def to_records(self) -> list:
        """Tidy rows, one per task (:mod:`models.engine.results` names the columns): ``id``,
        ``op``, ``kind``, ``gpus`` (a tuple of GPU ids), ``start_s``, ``end_s``, ``data_start_s``,
        ``alone_s``, ``nbytes``, ``algorithm``, ``protocol``, ``stream``, ``critical``, ``copies``.

        Examples
        --------
        >>> import topo
        >>> r = simulate(topo.build("dgxh100"), task_graph({"tasks": [
        ...     {"id": "ar", "op": "all_reduce", "gpus": [0, 1, 2, 3], "bytes": 2**20}]}))
        >>> row = r.to_records()[0]
        >>> row["id"], row["gpus"], row["nbytes"], row["start_s"], row["critical"]
        ('ar', (0, 1, 2, 3), 1048576, 0.0, True)
        """
        t = self.tasks
        return tidy_records({"id": [x.id for x in t], "op": [x.op for x in t], "kind": [x.kind for x in t],
                             "gpus": [gpu_set(x.gpus) for x in t],
                             "start_s": [x.start for x in t], "end_s": [x.end for x in t],
                             "data_start_s": [x.data_start for x in t], "alone_s": [x.alone for x in t],
                             "nbytes": [x.nbytes for x in t], "algorithm": [x.algorithm for x in t],
                             "protocol": [x.protocol for x in t], "stream": [x.stream for x in t],
                             "critical": [x.critical for x in t], "copies": [x.copies for x in t]}) if t else []

    def link_records(self) -> list:
        """Tidy rows of :attr:`links`, one per link that carried data, busiest (mean) first:
        ``u``, ``v``, ``capacity_Bps`` (per direction [B/s]), ``mean`` and ``peak`` (fractions
        of the capacity; ``peak`` NaN beyond the busiest links). :meth:`to_records` gives the
        tasks; a link's ``mean`` times the step time is the time it would be full.

        Examples
        --------
        >>> import topo
        >>> r = simulate(topo.build("dgxh100"), task_graph({"tasks": [
        ...     {"id": "ar", "op": "all_reduce", "gpus": [0, 1, 2, 3], "bytes": 2**26}]}))
        >>> row = r.link_records()[0]
        >>> row["u"], row["v"], round(row["capacity_Bps"] / 1e9), round(row["peak"], 3)
        ('gpu0', 'nvswitch0', 125, 0.971)
        """
        links = self.links
        return tidy_records({"u": [str(x.edge[0]) for x in links], "v": [str(x.edge[1]) for x in links],
                             "capacity_Bps": [float(x.capacity) for x in links],
                             "mean": [float(x.mean) for x in links],
                             "peak": [float(x.peak) for x in links]}) if links else []

    def busy_by_kind(self) -> dict:
        """Per kind, the summed duration of its tasks (folded images included). [s]"""
        out: dict = {}
        for t in self.tasks:
            out[t.kind] = out.get(t.kind, 0.0) + t.duration * t.copies
        return out

    def critical_by_kind(self) -> dict:
        """Per kind (compute included), its time on the critical path. [s]"""
        index = {t.id: t for t in self.tasks}  # once: the path may hold most of the tasks
        out: dict = {}
        for task_id in self.critical_path:
            t = index[task_id]
            out[t.kind] = out.get(t.kind, 0.0) + t.duration
        return out


# ---------------------------------------------------------------------------- simulating
_PEAK_LINKS = 16  # links whose peak share a result computes (the busiest by mean)
_VECTOR_FROM = 48  # with more tasks running, an event's arithmetic runs in numpy


def _flatten(timeline) -> tuple:
    """``(starts, ends, interval, flow class, factor)`` arrays of a run's timeline."""
    if not timeline:
        empty = np.zeros(0)
        return empty, empty, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), empty
    starts = np.array([t0 for t0, _, _, _ in timeline])
    ends = np.array([t1 for _, t1, _, _ in timeline])
    interval = np.repeat(np.arange(len(timeline)), [len(m) for _, _, m, _ in timeline])
    classes = np.fromiter((c for _, _, movers, _ in timeline for c in movers), dtype=np.int64,
                          count=interval.size)
    factors = np.fromiter((f for _, _, _, rates in timeline for f in rates), dtype=np.float64, count=interval.size)
    return starts, ends, interval, classes, factors


def _series(flat, chosen, class_links, class_usage) -> tuple:
    """Shares of links ``chosen`` (indices) per interval of a flattened timeline."""
    starts, _, interval, classes, factors = flat
    shares = np.zeros((len(chosen), starts.size))
    if not chosen or not starts.size:
        return chosen, shares
    where = {link: j for j, link in enumerate(chosen)}
    for c, links in enumerate(class_links):
        hits = [(where[int(link)], u) for link, u in zip(links, class_usage[c]) if int(link) in where]
        if not hits:
            continue
        mask = classes == c
        if not mask.any():
            continue
        for j, u in hits:
            np.add.at(shares[j], interval[mask], u * factors[mask])
    return chosen, shares

def sm_counts(G: nx.DiGraph) -> list:
    """Streaming multiprocessors of each GPU of ``G``, in GPU-id order: the catalogue part of
    its ``model`` (:attr:`topo.specs.GpuSpec.sm_count`, with its sources), else the first part of
    its compute capability [U], else 0 (its compute is then not slowed by NCCL's blocks).

    Examples
    --------
    >>> import topo
    >>> sm_counts(topo.build("dgxh100"))[:2], sm_counts(topo.build("dgx1v"))[0]
    ([132, 132], 80)
    """
    by_model: dict = {}
    by_cc: dict = {}
    for spec in topo.GPUS.values():
        by_model[spec.model] = spec.sm_count
        by_cc.setdefault(spec.compute_capability, spec.sm_count)
    return [by_model.get(G.nodes[g].get("model"), by_cc.get(G.nodes[g].get("compute_capability"), 0))
            for g in topo.gpus(G)]


def simulation_size(graph: TaskGraph) -> int:
    """The size of a simulation of ``graph``: three events (start, data, end) per task it runs.

    What the simulator's work follows: the event loop runs the tasks built, each once; a folded
    image of a task (a replica run in lockstep) is decomposed once per distinct (operation, GPUs,
    size) and its links are charged within its task's events, so it adds no event. A folded
    graph is sized as what is built, not as the graph it stands for (a DeepSeek-class step of
    8 M images is some 10^5 tasks).

    Examples
    --------
    >>> simulation_size(task_graph({"tasks": [
    ...     {"id": "a", "op": "all_reduce", "gpus": [0, 1], "bytes": 8, "images": [[2, 3], [4, 5]]}]}))
    3
    """
    return EVENTS_PER_TASK * len(graph.tasks)


def _stream_keys(t: Task) -> tuple:
    if t.stream:
        return (("named", t.stream),)
    if t.op == "compute":
        return tuple(("compute", g) for g in t.gpus)
    return (("comm", tuple(sorted(t.gpus))),)


def _stream_name(key) -> str:
    kind, what = key
    if kind == "named":
        return what
    if kind == "compute":
        return "compute"
    return "comm " + topo.select.format_gpu_ids(what)


def simulate(G: nx.DiGraph, graph: TaskGraph, *, profile: str | NcclProfile | None = None,
             calibration: CalibrationLike = None, sm_share: bool = True,
             max_events: int = MAX_EVENTS, progress: Progress | None = None,
             decomposer: Decomposer | None = None,
             algorithms: Sequence[Algorithm] | None = None) -> SimulationResult:
    """Simulate a task graph on a fabric.

    Parameters
    ----------
    G : networkx.DiGraph
        The fabric (a what-if graph simulates the what-if).
    graph : TaskGraph
        From :func:`task_graph` or :func:`models.studies.stepgraph.step_graph`.
    profile, calibration : optional
        As for :func:`models.predict.collectives.estimate`.
    sm_share : bool
        Slow compute by the SMs NCCL's kernels hold on the same GPU (module docstring).
    max_events : int
        Refuse (:class:`LimitError`, keyword ``max_events``) before any work when the graph may
        need more events (:func:`simulation_size`).
    progress : callable, optional
        ``progress(done, total)`` as tasks end.
    decomposer : Decomposer, optional
        A prepared fabric to reuse (its ``G`` must be ``G``, its algorithms ``algorithms``).
    algorithms : sequence of Algorithm, optional
        The algorithms every collective task chooses among (as for
        :func:`models.predict.collectives.estimate`; default NCCL's).

    Returns
    -------
    SimulationResult

    Raises
    ------
    LimitError
        Beyond ``max_events``.
    topo.errors.CountError, DgxTopoError
        For a ``max_events`` that is not a whole number >= 1, an ``sm_share`` that is not a
        bool, a ``progress`` that is not callable, a ``decomposer`` that is not a Decomposer of
        ``G``.
    TaskGraphError
        For a ``graph`` that is not a :class:`TaskGraph` (its JSON form is read by
        :func:`task_graph`), or GPU ids the fabric does not have.
    """
    max_events = parse_count(max_events, name="max_events", maximum=MAX_BYTES)  # a whole number >= 1: CountError
    if not isinstance(sm_share, (bool, np.bool_)):
        raise DgxTopoError(f"sm_share must be True or False, received {type(sm_share).__name__}")
    if progress is not None and not callable(progress):
        raise DgxTopoError(f"progress must be a callable progress(done, total) or None, received "
                           f"{type(progress).__name__}")
    if decomposer is not None and not isinstance(decomposer, Decomposer):
        raise DgxTopoError(f"decomposer must be a models.predict.decompose.Decomposer or None, received "
                           f"{type(decomposer).__name__}")
    if not isinstance(graph, TaskGraph):
        shown = type(graph).__name__ + (f" {graph!r:.60}" if isinstance(graph, (dict, list, str)) else "")
        raise TaskGraphError(f"expected a TaskGraph (task_graph(data) reads its JSON form, a dict with a "
                             f"\"tasks\" list), received {shown}")
    size = simulation_size(graph)
    if size > max_events:
        raise LimitError(f"a simulation of {len(graph.tasks)} tasks ({size} events)", keyword="max_events",
                         size=size, limit=max_events)
    ngpus = len(topo.gpus(G))
    used = set(itertools.chain.from_iterable(t.gpus for t in graph.tasks))
    images = {id(t.images): t.images for t in graph.tasks if t.images}  # a tuple shared by tasks: once
    used.update(itertools.chain.from_iterable(itertools.chain.from_iterable(images.values())))
    if used and (min(used) < 0 or max(used) >= ngpus):
        for t in graph.tasks:  # name the first task at fault
            bad = [g for g in itertools.chain(t.gpus, *t.images) if not 0 <= g < ngpus]
            if bad:
                raise TaskGraphError(f"GPU {bad[0]} is not on {G.graph.get('name', 'the fabric')} "
                                     f"({ngpus} GPUs)", task=t.id, field="gpus")
    if decomposer is None:
        decomposer = Decomposer(G, profile=profile, calibration=calibration, algorithms=algorithms)
    elif decomposer.G is not G:
        raise DgxTopoError("simulate(G, decomposer=...): expected a Decomposer of the same graph G")
    elif algorithms is not None and decomposer.algorithms != algorithm_set(algorithms):
        raise DgxTopoError("simulate(G, decomposer=..., algorithms=...): expected a Decomposer of the same "
                           "algorithms, or no algorithms")
    return _Run(G, graph, decomposer, sm_share, progress).run()


class _Run:
    """One simulation: the state belongs to this object and dies with it."""

    def __init__(self, G, graph, decomposer, sm_share, progress):
        self.G, self.graph, self.progress = G, graph, progress
        tasks = graph.tasks
        n = len(tasks)
        self.n = n
        index = self.index = {t.id: k for k, t in enumerate(tasks)}
        users = self.users = [[] for _ in range(n)]
        deps = self.deps = [[index[a] for a in t.after] for t in tasks]
        for k, before in enumerate(deps):
            for j in before:
                users[j].append(k)
        self.waiting = [len(before) for before in deps]
        # Per task: the start-up and the data (or compute) phase, the links of the data phase.
        startup = [0.0] * n
        work = [0.0] * n
        ctas = [0.0] * n
        self.algorithm = [""] * n
        self.protocol = [""] * n
        self.is_compute = [t.op == "compute" for t in tasks]
        self.link_of: dict = {}
        # Each distinct task once, with its images (a folded step repeats its tasks' images
        # across micro-batches: the same tuple, walked once).
        distinct = {(t.op, t.gpus, t.nbytes, id(t.images)): t for t in tasks if t.op != "compute"}
        decomposer.prepare((t.op, gpus, t.nbytes) for t in distinct.values() for gpus in (t.gpus,) + t.images)
        arrays: dict = {}  # one link array per distinct decomposition
        self.flow_class = flow_class = [-1] * n
        self.class_links: list = []
        self.class_usage: list = []
        self.class_peak: list = []
        asked: dict = {}
        by_task: dict = {}  # (op, gpus, nbytes, the images' tuple) -> (steps, flow class)
        for k, t in enumerate(tasks):
            if t.op == "compute":
                work[k] = t.seconds
                continue
            found = by_task.get((t.op, t.gpus, t.nbytes, id(t.images)))
            if found is None:
                steps = asked.get((t.op, t.gpus, t.nbytes))
                if steps is None:
                    steps = asked[t.op, t.gpus, t.nbytes] = decomposer.send(*t.gpus, t.nbytes) if t.op == "send" \
                        else decomposer.collective(t.op, t.nbytes, t.gpus)
                image_steps = [asked.get((t.op, i, t.nbytes)) for i in t.images]
                for j, i in enumerate(t.images):
                    if image_steps[j] is None:
                        image_steps[j] = asked[t.op, i, t.nbytes] = decomposer.send(*i, t.nbytes) if t.op == "send" \
                            else decomposer.collective(t.op, t.nbytes, i)
                signature = (id(steps),) + tuple(id(i) for i in image_steps)
                c = arrays.get(signature)
                if c is None:
                    link_of = self.link_of
                    merged: dict = {}
                    for part in [steps] + image_steps:
                        for edge, u in zip(part.edges, part.usage.tolist()):
                            j = link_of.setdefault(edge, len(link_of))
                            merged[j] = merged.get(j, 0.0) + u
                    c = arrays[signature] = len(self.class_links)
                    self.class_links.append(np.fromiter(merged, dtype=np.int64, count=len(merged)))
                    self.class_usage.append(np.fromiter(merged.values(), dtype=np.float64, count=len(merged)))
                    # Each image is one of several identical flows: it fills its own busiest link alone.
                    self.class_peak.append(float(steps.usage.max()) if len(steps.usage) else 0.0)
                found = by_task[t.op, t.gpus, t.nbytes, id(t.images)] = (steps, c)
            steps, flow_class[k] = found
            startup[k], work[k] = steps.startup, steps.transfer
            self.algorithm[k], self.protocol[k] = steps.algorithm, steps.protocol
            ctas[k] = float(steps.blocks)
        self.startup, self.work = np.array(startup, dtype=np.float64), np.array(work, dtype=np.float64)
        self.ctas = ctas
        self.edges = list(self.link_of)
        keys: dict = {}  # tasks on the same streams share their keys
        self.streams = []
        for t in tasks:
            on = (t.stream, t.op == "compute", t.gpus)
            found = keys.get(on)
            if found is None:
                found = keys[on] = _stream_keys(t)
            self.streams.append(found)
        # SMs per GPU (the last entry pads groups of compute tasks: always free).
        self.sms = np.array(sm_counts(G) + [0.0])
        self.sm_share = sm_share

    def run(self) -> SimulationResult:
        tasks, n = self.graph.tasks, self.n
        streams, users, waiting, deps = self.streams, self.users, list(self.waiting), self.deps
        is_compute = self.is_compute
        work, startup = self.work.tolist(), self.startup.tolist()
        ctas = self.ctas
        gpus_of = [t.gpus for t in tasks]
        flow_class = self.flow_class
        start = [math.nan] * n
        data_start = [math.nan] * n
        end = [math.nan] * n
        remaining = [0.0] * n
        phase = [0] * n  # 0 start-up, 1 data / compute
        moving = [False] * n  # a communication task in its data phase
        cause = [-1] * n  # the task whose end let this one start
        busy: dict = {}  # stream -> running task
        last_on: dict = {}  # stream -> last task that ran on it
        queues: dict = {}  # stream -> heap of waiting ready task indices
        running: list = []
        shares: dict = {}  # max-min factors by the sorted classes of the moving flows
        done = 0
        t_now = 0.0
        timeline = []
        events = 0
        cta_load = [0.0] * len(self.sms)  # NCCL blocks running per GPU
        per_block = [1.0 / s if s > 0 else 0.0 for s in self.sms.tolist()]
        sm_share = self.sm_share
        kernel_rate: dict = {}  # a compute kernel's speed by its GPUs, while their NCCL blocks hold
        kernels_on = [set() for _ in range(len(self.sms))]  # GPU -> GPU groups of kernels on it

        def enqueue(k):
            for stream in streams[k]:
                heapq.heappush(queues.setdefault(stream, []), k)

        def begin(k):
            start[k] = t_now
            # the binding predecessor: the latest-ending dependency or stream predecessor
            best, best_end = -1, -math.inf
            for j in deps[k]:
                if end[j] > best_end:
                    best, best_end = j, end[j]
            for stream in streams[k]:
                j = last_on.get(stream, -1)
                if j >= 0 and end[j] > best_end:
                    best, best_end = j, end[j]
            cause[k] = best
            if is_compute[k]:
                phase[k], remaining[k] = 1, work[k]
                data_start[k] = t_now
            else:
                phase[k], remaining[k] = 0, startup[k]
                if ctas[k]:
                    for g in gpus_of[k]:
                        cta_load[g] += ctas[k]
                        for group in kernels_on[g]:
                            kernel_rate.pop(group, None)
            running.append(k)

        def try_start(candidates) -> None:
            # the earliest task in graph order goes first (popped from the end), whatever order
            # a set of freed streams iterates in: a tie between two tasks for one stream must not
            # depend on the process's string hashing. A stream with no task waiting, or a busy
            # one, stays so while tasks start here: it is left out.
            pending = [s for s in candidates if queues.get(s) and s not in busy]
            if len(pending) > 1:
                pending.sort(key=lambda s: queues[s][0], reverse=True)
            while pending:
                stream = pending.pop()
                q = queues.get(stream)
                if not q or stream in busy:
                    continue
                k = q[0]
                if any(other in busy for other in streams[k]):
                    continue
                for other in streams[k]:
                    oq = queues[other]
                    if oq[0] == k:
                        heapq.heappop(oq)
                    else:  # started ahead of a task of this stream that waits for another stream
                        oq.remove(k)
                        heapq.heapify(oq)
                    busy[other] = k
                begin(k)

        def kernel_speed(group) -> float:
            """A compute kernel's speed on GPUs ``group`` beside the NCCL blocks running there."""
            r = kernel_rate.get(group)
            if r is None:
                r = kernel_rate[group] = max(min(1.0 - cta_load[g] * per_block[g] for g in group), 0.05)
                for g in group:
                    kernels_on[g].add(group)
            return r

        def factors_of(movers) -> dict:
            key = tuple(sorted([flow_class[k] for k in movers]))
            found = shares.get(key)
            if found is None:
                found = shares[key] = self._share(key)
            return found

        def scalar_step():
            """Advance to the next event, task by task (few tasks running)."""
            movers = [k for k in running if moving[k]]
            factors = factors_of(movers) if movers else None
            rates = []  # per running task: a moving flow's share, a kernel's speed, else 1
            dt = math.inf
            for k in running:
                if moving[k]:
                    r = factors[flow_class[k]]
                elif sm_share and is_compute[k]:
                    r = kernel_rate.get(gpus_of[k])
                    if r is None:
                        r = kernel_speed(gpus_of[k])
                else:
                    r = 1.0
                rates.append(r)
                left = remaining[k] / r
                if left < dt:
                    dt = left
            limit = dt * (1 + 1e-9) + 1e-15
            finished = []
            for k, r in zip(running, rates):
                if remaining[k] <= r * limit:
                    finished.append(k)
                else:
                    remaining[k] -= r * dt
            return dt, finished, movers, [factors[flow_class[k]] for k in movers] if movers else []

        def vector_step():
            """:func:`scalar_step` with numpy over the running tasks (many tasks running)."""
            compute = np.array([is_compute[k] for k in running])
            moving = np.array([phase[k] == 1 for k in running]) & ~compute
            rate = np.ones(len(running))
            movers = [k for k, m in zip(running, moving.tolist()) if m]
            mover_rates = []
            if movers:
                factors = factors_of(movers)
                mover_rates = [factors[flow_class[k]] for k in movers]
                rate[moving] = mover_rates
            if sm_share and compute.any():
                rate[compute] = [kernel_speed(gpus_of[k]) for k, c in zip(running, compute.tolist()) if c]
            left = np.array([remaining[k] for k in running])
            times = left / rate
            dt = float(times.min())
            done_now = left <= rate * (dt * (1 + 1e-9) + 1e-15)
            after = (left - rate * dt).tolist()
            finished = []
            for k, f, value in zip(running, done_now.tolist(), after):
                if f:
                    finished.append(k)
                else:
                    remaining[k] = value
            return dt, finished, movers, mover_rates

        for k in range(n):
            if waiting[k] == 0:
                enqueue(k)
        try_start(list(queues))
        while running:
            events += 1
            if len(running) > _VECTOR_FROM:
                dt, finished, movers, mover_rates = vector_step()
            else:
                dt, finished, movers, mover_rates = scalar_step()
            if movers and dt > 0:
                timeline.append((t_now, t_now + dt, [flow_class[k] for k in movers], mover_rates))
            t_now += dt
            freed = set()
            for k in finished:
                if phase[k] == 0 and work[k] > 0:
                    phase[k], remaining[k] = 1, work[k]
                    moving[k] = True  # phase 0 is a communication's start-up
                    data_start[k] = t_now
                    continue
                if phase[k] == 0:
                    data_start[k] = t_now
                remaining[k] = 0.0
                end[k] = t_now
                running.remove(k)
                done += 1
                if not is_compute[k] and ctas[k]:
                    for g in gpus_of[k]:
                        cta_load[g] -= ctas[k]
                        for group in kernels_on[g]:
                            kernel_rate.pop(group, None)
                for stream in streams[k]:
                    del busy[stream]
                    last_on[stream] = k
                    freed.add(stream)
                for u in users[k]:
                    waiting[u] -= 1
                    if waiting[u] == 0:
                        enqueue(u)
                        freed.update(streams[u])
            if self.progress is not None and finished:
                self.progress(done, n)
            try_start(freed)
        if done != n:  # cannot happen for an acyclic graph; kept as a guard
            stuck = next(t.id for k, t in enumerate(tasks) if math.isnan(end[k]))
            raise TaskGraphError("never started (its streams or dependencies never freed)", task=stuck)
        return self._result(np.array(start), np.array(data_start), np.array(end), cause, timeline, events)

    def _share(self, key) -> dict:
        """Max-min factors of moving flows of classes ``key`` (sorted; repeats are separate flows)."""
        parts = [self.class_links[c] for c in key]
        links = np.concatenate(parts)
        usage = np.concatenate([self.class_usage[c] for c in key])
        flow_ids = np.repeat(np.arange(len(key)), [len(p) for p in parts])
        factors = max_min_share(len(key), flow_ids, links, usage, check=False,
                                peaks=[self.class_peak[c] for c in key])
        # Flows of one class are symmetric: they get one factor.
        return {c: float(f) for c, f in zip(key, factors)}

    def _result(self, start, data_start, end, cause, timeline, events) -> SimulationResult:
        tasks = self.graph.tasks
        step = float(np.max(end)) if self.n else 0.0
        critical = []
        if self.n:
            k = int(np.argmax(end))
            while k >= 0:
                critical.append(k)
                k = cause[k]
        critical.reverse()
        on_path = set(critical)
        exposed: dict = {}
        for k in critical:
            t = tasks[k]
            if t.op != "compute":
                exposed[t.label] = exposed.get(t.label, 0.0) + float(end[k] - start[k])
        names: dict = {}
        for key in self.streams:
            if key[0] not in names:
                names[key[0]] = _stream_name(key[0])
        alone = (self.startup + self.work).tolist()
        start, end, data_start = start.tolist(), end.tolist(), data_start.tolist()
        # Field by field, then one constructor call per task (a step has thousands of tasks).
        timings = tuple(map(TaskTiming, [t.id for t in tasks], [t.op for t in tasks], [t.label for t in tasks],
                            [t.gpus for t in tasks], start, end, data_start, alone, [t.nbytes for t in tasks],
                            self.algorithm, self.protocol, [names[key[0]] for key in self.streams],
                            [k in on_path for k in range(self.n)], [t.copies for t in tasks]))
        # Mean share of each link: over its data phase a flow moves its alone work whatever its
        # speed, so link l carries usage x alone-time of every flow on it, in all.
        n_links = len(self.edges)
        total = np.zeros(n_links)
        carried = np.zeros(len(self.class_links))
        work = self.work.tolist()
        np.add.at(carried, [c for c in self.flow_class if c >= 0],
                  [work[k] for k, c in enumerate(self.flow_class) if c >= 0])
        for c, links in enumerate(self.class_links):
            np.add.at(total, links, self.class_usage[c] * carried[c])
        order = [int(i) for i in np.argsort(-total, kind="stable") if total[i] > 0]
        flat = _flatten(timeline)
        peaks = _series(flat, order[:_PEAK_LINKS], self.class_links, self.class_usage)[1]
        links = []
        for j, i in enumerate(order):
            u, v = self.edges[i]
            peak = float(peaks[j].max()) if j < _PEAK_LINKS and peaks.size else math.nan
            links.append(LinkUse(self.edges[i], float(self.G.adj[u][v].get("bandwidth", 0.0)),
                                 float(total[i] / step) if step > 0 else 0.0, peak))
        links = tuple(links)
        return SimulationResult(self.G.graph.get("name", "fabric"), self.graph.name, step, timings,
                                tuple(tasks[k].id for k in critical), tuple(sorted(exposed.items())), links,
                                tuple(self.edges), events, flat, tuple(self.class_links), tuple(self.class_usage),
                                tuple(self.flow_class))
