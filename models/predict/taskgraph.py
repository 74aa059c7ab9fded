"""Task graphs: what :func:`models.predict.simulate.simulate` runs, as data a user can write.

A :class:`TaskGraph` is a tuple of :class:`Task` (a compute kernel on one GPU or a group, one of
the seven collectives on a GPU group, or a point-to-point send), each naming the tasks it comes
``after``; :func:`task_graph` builds one from its JSON form (or a dict) and :func:`read_task_graph`
from a file, checking every field, the dependencies and the absence of a cycle, and raising
:class:`TaskGraphError` naming the task and field at fault. :func:`models.studies.stepgraph.step_graph`
writes a training step as one; :mod:`models.predict.simulate` runs it.

Task graphs in JSON (:func:`task_graph`)::

    {"tasks": [
      {"id": "grad", "op": "all_reduce", "gpus": [0, 1, 2, 3, 4, 5, 6, 7], "bytes": 1073741824},
      {"id": "p2p", "op": "send", "src": 0, "dst": 5, "bytes": 65536, "after": ["grad"]},
      {"id": "fwd0", "op": "compute", "gpu": 0, "seconds": 0.001, "after": []}
    ]}

Fields: ``id`` (text, unique), ``op`` (a collective of :data:`COLLECTIVE_OPS`, ``send`` or
``compute``), ``gpus`` (a collective; a compute kernel on several GPUs) or ``gpu`` (a compute
kernel on one), ``src``/``dst`` (a send), ``bytes`` (nccl-tests' size for a collective),
``root`` (broadcast, reduce: one of ``gpus``; NCCL's time does not depend on it), ``seconds``
(compute) or ``flops`` with ``dtype`` (compute, converted by the caller's ``compute_time``),
``after`` (ids), ``kind`` (a label for the breakdown, default the op; e.g. ``tp_comm``),
``stream`` (a stream name) and ``images`` (the same task on other GPU lists, folded: run in
lockstep, their links charged, see :class:`Task`). Limits: :data:`MAX_TASKS` tasks, :data:`MAX_BYTES` per operation,
ids of at most 200 characters.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass

from topo.errors import DgxTopoError, LimitError
from topo.units import MAX_NBYTES, is_int

from ..engine.nccltests import COLLECTIVES
from ..engine.results import gpu_set, gpu_sets, tidy_records

__all__ = ["Task", "TaskGraph", "TaskGraphError", "task_graph", "read_task_graph", "COLLECTIVE_OPS", "MAX_TASKS",
           "MAX_BYTES"]

#: The collectives a task may run (nccl-tests' names and order, as
#: models.predict.collectives.COLLECTIVE_NAMES).
COLLECTIVE_OPS = tuple(COLLECTIVES)
_OPS = COLLECTIVE_OPS + ("send", "compute")
#: Most tasks a graph may hold (a 1,024-GPU step is about 10^5).
MAX_TASKS = 2_000_000
#: Largest operation (bytes of one collective or send): topo's size limit.
MAX_BYTES = MAX_NBYTES
_MAX_ID = 200


class TaskGraphError(DgxTopoError):
    """A task graph that cannot run: a bad field, an unknown dependency, a cycle.

    Attributes
    ----------
    task : str
        The id of the task at fault ('' for the graph as a whole).
    field : str
        The field at fault ('' when none).
    """

    def __init__(self, message: str, *, task: str = "", field: str = ""):
        where = f"task {task!r}" if task else "task graph"
        super().__init__(f"{where}{f', field {field!r}' if field else ''}: {message}")
        self.task, self.field = task, field


@dataclass(frozen=True, slots=True)
class Task:
    """One task of a :class:`TaskGraph`.

    Attributes
    ----------
    id : str
    op : str
        A collective of :data:`COLLECTIVE_OPS`, ``"send"`` or ``"compute"``.
    gpus : tuple of int
        The GPU ids it runs on (a send: source, destination).
    nbytes : int
        Size of a collective (nccl-tests' ``S``) or a send. [bytes]
    seconds : float
        Duration of a compute kernel on an otherwise idle GPU. [s]
    after : tuple of str
        Ids of the tasks it waits for.
    kind : str
        Label for the breakdown (``"tp_comm"``...; default the op).
    stream : str
        A named stream ('' for the default: the GPU's compute stream, or the communicator's).
    root : int or None
        Root GPU of a broadcast or reduce.
    images : tuple of tuple of int
        The same task on other GPUs (a data-parallel replica's), run in lockstep with this one
        (*folded*): their links are charged, their GPUs' streams are not modelled.
    """

    id: str
    op: str
    gpus: tuple
    nbytes: int = 0
    seconds: float = 0.0
    after: tuple = ()
    kind: str = ""
    stream: str = ""
    root: int | None = None
    images: tuple = ()

    @property
    def copies(self) -> int:
        """1 + the folded images."""
        return 1 + len(self.images)

    @property
    def is_compute(self) -> bool:
        return self.op == "compute"

    @property
    def label(self) -> str:
        """The breakdown label: ``kind``, else the op."""
        return self.kind or self.op


@dataclass(frozen=True, slots=True)
class TaskGraph:
    """Tasks in the order their streams prefer them (build with :func:`task_graph`).

    Attributes
    ----------
    tasks : tuple of Task
    name : str
    """

    tasks: tuple
    name: str = ""

    def __len__(self) -> int:
        return len(self.tasks)

    def to_records(self) -> list:
        """Tidy rows, one per task in the graph's order (:mod:`models.engine.results` names the
        columns); an empty graph gives none.

        Columns: ``id``, ``op``, ``kind`` (the breakdown label: the task's kind, else its op, as
        :meth:`SimulationResult.to_records` names it), ``gpus`` (a tuple of GPU ids, in the
        task's order: a send's source first), ``nbytes`` [B] (0 for compute), ``compute_s`` (a compute
        kernel's duration on an idle GPU [s]; 0 for communication), ``after`` (the ids it waits
        for, joined by ``","``), ``stream`` (``""`` for the default stream), ``root`` (None but
        for a broadcast or reduce), ``copies`` (the task and its folded images) and ``images``
        (the images' GPU tuples, a tuple of them).

        Examples
        --------
        >>> g = task_graph({"tasks": [
        ...     {"id": "mm", "op": "compute", "gpu": 0, "seconds": 1e-3},
        ...     {"id": "ar", "op": "all_reduce", "gpus": [0, 1, 2, 3], "bytes": 2**20, "after": ["mm"],
        ...      "images": [[4, 5, 6, 7]]}]})
        >>> [(r["id"], r["gpus"], r["nbytes"], r["compute_s"], r["after"], r["images"]) for r in g.to_records()]
        [('mm', (0,), 0, 0.001, '', ()), ('ar', (0, 1, 2, 3), 1048576, 0.0, 'mm', ((4, 5, 6, 7),))]
        """
        t = self.tasks
        return tidy_records({
            "id": [x.id for x in t], "op": [x.op for x in t], "kind": [x.label for x in t],
            "gpus": [gpu_set(x.gpus) for x in t], "nbytes": [x.nbytes for x in t],
            "compute_s": [float(x.seconds) for x in t], "after": [",".join(x.after) for x in t],
            "stream": [x.stream for x in t], "root": [x.root for x in t], "copies": [x.copies for x in t],
            "images": [gpu_sets(x.images) for x in t]}) if t else []


# ------------------------------------------------------------------------------ reading
_FIELDS = frozenset({"id", "op", "gpus", "gpu", "src", "dst", "bytes", "root", "seconds", "flops", "dtype", "after",
           "kind", "stream", "images"})


def _int(value, task, name, low=0, high=None) -> int:
    if not is_int(value):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise TaskGraphError(f"expected a whole number, received {value!r}", task=task, field=name)
    value = int(value)
    if value < low or (high is not None and value > high):
        bound = f"from {low} to {high}" if high is not None else f">= {low}"
        raise TaskGraphError(f"expected a whole number {bound}, received {value}", task=task, field=name)
    return value


def _text(value, task, name) -> str:
    if not isinstance(value, str) or not value or len(value) > _MAX_ID or any(c in value for c in "\n\r\0"):
        raise TaskGraphError(f"expected text of 1 to {_MAX_ID} characters on one line, received {value!r:.80}",
                             task=task, field=name)
    return value


def _gpu_list(value, task, name, ngpus) -> tuple:
    if not isinstance(value, (list, tuple)) or not value:
        raise TaskGraphError(f"expected a non-empty list of GPU ids, received {value!r:.80}", task=task, field=name)
    if ngpus is not None and len(value) > ngpus:
        raise TaskGraphError(f"expected at most {ngpus} GPUs, received {len(value)}", task=task, field=name)
    gpus = tuple(_int(g, task, name, 0, None if ngpus is None else ngpus - 1) for g in value)
    if len(set(gpus)) != len(gpus):
        raise TaskGraphError(f"expected distinct GPU ids, received {list(gpus)}", task=task, field=name)
    return gpus


def _one_task(raw, k, ngpus, compute_time) -> Task:
    task = _plain_task(raw, k, ngpus, compute_time)
    if "images" not in raw:
        return task
    images = raw["images"]
    if not isinstance(images, (list, tuple)) or len(images) > 100_000:
        raise TaskGraphError("expected a list of GPU lists (at most 100000)", task=task.id, field="images")
    parsed = tuple(_gpu_list(list(i) if isinstance(i, (list, tuple)) else i, task.id, "images", ngpus)
                   for i in images)
    if any(len(i) != len(task.gpus) for i in parsed):
        raise TaskGraphError(f"expected every image to have {len(task.gpus)} GPUs like the task", task=task.id,
                             field="images")
    seen = set(task.gpus)
    for image in parsed:  # an image is the task on other GPUs: a GPU in two copies is a mistake
        if seen.intersection(image):
            raise TaskGraphError(f"expected images on GPUs of their own, received GPU "
                                 f"{min(seen.intersection(image))} in two copies", task=task.id, field="images")
        seen.update(image)
    return Task(task.id, task.op, task.gpus, task.nbytes, task.seconds, task.after, task.kind, task.stream,
                task.root, parsed)


def _plain_task(raw, k, ngpus, compute_time) -> Task:
    if not isinstance(raw, dict):
        raise TaskGraphError(f"expected an object, received {type(raw).__name__}", task=f"#{k}")
    task = raw.get("id")
    task = _text(task, f"#{k}", "id")
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise TaskGraphError(f"unknown field(s) {', '.join(map(repr, unknown))}: expected some of "
                             f"{', '.join(sorted(_FIELDS))}", task=task)
    op = raw.get("op")
    if op not in _OPS:
        raise TaskGraphError(f"expected one of {', '.join(_OPS)}, received {op!r:.80}", task=task, field="op")
    after = raw.get("after", [])
    if not isinstance(after, (list, tuple)):
        raise TaskGraphError(f"expected a list of task ids, received {after!r:.80}", task=task, field="after")
    after = tuple(_text(a, task, "after") for a in after)
    kind = _text(raw["kind"], task, "kind") if "kind" in raw else ""
    stream = _text(raw["stream"], task, "stream") if "stream" in raw else ""

    def forbid(*names):
        for name in names:
            if name in raw:
                raise TaskGraphError(f"does not apply to op {op!r}", task=task, field=name)

    if op == "compute":
        forbid("src", "dst", "bytes", "root")
        if ("gpu" in raw) == ("gpus" in raw):
            raise TaskGraphError("expected exactly one of 'gpu' or 'gpus'", task=task, field="gpu")
        gpus = (_int(raw["gpu"], task, "gpu", 0, None if ngpus is None else ngpus - 1),) if "gpu" in raw \
            else _gpu_list(raw["gpus"], task, "gpus", ngpus)
        if ("seconds" in raw) == ("flops" in raw):
            raise TaskGraphError("expected exactly one of 'seconds' or 'flops' (with 'dtype')", task=task,
                                 field="seconds")
        if "seconds" in raw:
            forbid("dtype")
            seconds = raw["seconds"]
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
                    or not 0 <= seconds <= 1e6:
                raise TaskGraphError(f"expected a duration from 0 to 1e6 s, received {seconds!r:.80}", task=task,
                                     field="seconds")
        else:
            flops = raw["flops"]
            if isinstance(flops, bool) or not isinstance(flops, (int, float)) or not math.isfinite(flops) \
                    or not 0 <= flops <= 1e24:
                raise TaskGraphError(f"expected FLOPs from 0 to 1e24, received {flops!r:.80}", task=task, field="flops")
            dtype = raw.get("dtype")
            if not isinstance(dtype, str):
                raise TaskGraphError(f"expected a dtype with 'flops', received {dtype!r:.80}", task=task, field="dtype")
            if compute_time is None:
                raise TaskGraphError("compute given in flops needs a compute model: pass compute_time="
                                     "models.studies.stepgraph.compute_time(G) (the CLI does), or give 'seconds'",
                                     task=task, field="flops")
            try:
                seconds = float(compute_time(float(flops), dtype, gpus))
            except DgxTopoError as error:
                raise TaskGraphError(str(error), task=task, field="dtype") from None
        return Task(task, op, gpus, 0, float(seconds), after, kind, stream)
    forbid("gpu", "seconds", "flops", "dtype")
    nbytes = _int(raw.get("bytes"), task, "bytes", 0, MAX_BYTES) if "bytes" in raw else None
    if nbytes is None:
        raise TaskGraphError("expected a size in bytes", task=task, field="bytes")
    if op == "send":
        forbid("gpus", "root")
        top = None if ngpus is None else ngpus - 1
        src = _int(raw.get("src"), task, "src", 0, top)
        dst = _int(raw.get("dst"), task, "dst", 0, top)
        if src == dst:
            raise TaskGraphError(f"expected a destination other than the source, received {src} to {dst}",
                                 task=task, field="dst")
        return Task(task, op, (src, dst), nbytes, 0.0, after, kind, stream)
    forbid("src", "dst")
    gpus = _gpu_list(raw.get("gpus"), task, "gpus", ngpus)
    if op in ("broadcast", "reduce") and "root" in raw and "images" in raw:
        raise TaskGraphError("a rooted collective cannot be folded", task=task, field="images")
    root = None
    if op in ("broadcast", "reduce"):
        root = _int(raw.get("root", gpus[0]), task, "root")
        if root not in gpus:
            raise TaskGraphError(f"expected the root among the GPUs {list(gpus)}, received {root}", task=task,
                                 field="root")
    else:
        forbid("root")
    return Task(task, op, gpus, nbytes, 0.0, after, kind, stream, root)


def task_graph(data: dict | str, *, ngpus: int | None = None, compute_time: Callable[..., float] | None = None,
               max_tasks: int = MAX_TASKS) -> TaskGraph:
    """A validated :class:`TaskGraph` from its JSON form (a dict, or JSON text).

    Parameters
    ----------
    data : dict or str
        ``{"tasks": [...], "name": optional}`` (module docstring).
    ngpus : int, optional
        GPUs of the fabric: GPU ids must be below it.
    compute_time : callable, optional
        ``compute_time(flops, dtype, gpus) -> seconds`` for compute tasks given in FLOPs
        (:func:`models.studies.stepgraph.compute_time`).
    max_tasks : int
        Refuse graphs with more tasks (:class:`LimitError`, keyword ``max_tasks``).

    Returns
    -------
    TaskGraph

    Raises
    ------
    TaskGraphError
        Naming the task and field at fault: a missing or malformed field, a duplicate id, an
        unknown dependency, a dependency cycle.
    LimitError
        For more than ``max_tasks`` tasks.

    Examples
    --------
    >>> g = task_graph('{"tasks": [{"id": "a", "op": "compute", "gpu": 0, "seconds": 0.5}]}')
    >>> g.tasks[0].gpus, g.tasks[0].seconds
    ((0,), 0.5)
    >>> task_graph({"tasks": [{"id": "a", "op": "send", "src": 0, "dst": 0, "bytes": 8}]})
    Traceback (most recent call last):
    ...
    models.predict.taskgraph.TaskGraphError: task 'a', field 'dst': expected a destination other than the source, received 0 to 0
    """
    if isinstance(data, (str, bytes)):
        from topo.inputs import parse_json

        text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
        try:
            data = parse_json(text, source="text")
        except DgxTopoError as error:
            raise TaskGraphError(f"expected JSON, received text that does not parse ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list):
        raise TaskGraphError('expected an object with a "tasks" list', field="tasks")
    extra = sorted(set(data) - {"tasks", "name"})
    if extra:
        raise TaskGraphError(f"unknown top-level field(s) {', '.join(map(repr, extra))}: expected 'tasks' and "
                             f"optionally 'name'")
    raw_tasks = data["tasks"]
    if len(raw_tasks) > max_tasks:
        raise LimitError(f"a task graph of {len(raw_tasks)} tasks", keyword="max_tasks", size=len(raw_tasks),
                         limit=max_tasks)
    name = data.get("name", "")
    if not isinstance(name, str) or len(name) > _MAX_ID:
        raise TaskGraphError(f"expected a name of at most {_MAX_ID} characters", field="name")
    tasks = tuple(_one_task(raw, k, ngpus, compute_time) for k, raw in enumerate(raw_tasks))
    return _checked(TaskGraph(tasks, name))


def _checked(graph: TaskGraph) -> TaskGraph:
    """Unique ids, known dependencies, no cycle (Kahn's algorithm)."""
    index: dict = {}
    for k, t in enumerate(graph.tasks):
        if t.id in index:
            raise TaskGraphError("the id is used by an earlier task", task=t.id, field="id")
        index[t.id] = k
    indegree = [0] * len(graph.tasks)
    users: list = [[] for _ in graph.tasks]
    for k, t in enumerate(graph.tasks):
        for a in t.after:
            if a not in index:
                raise TaskGraphError(f"unknown task {a!r}", task=t.id, field="after")
            if a == t.id:
                raise TaskGraphError("a task cannot wait for itself", task=t.id, field="after")
            users[index[a]].append(k)
            indegree[k] += 1
    ready = [k for k, d in enumerate(indegree) if d == 0]
    seen = 0
    while ready:
        k = ready.pop()
        seen += 1
        for u in users[k]:
            indegree[u] -= 1
            if indegree[u] == 0:
                ready.append(u)
    if seen != len(graph.tasks):
        stuck = next(t.id for k, t in enumerate(graph.tasks) if indegree[k] > 0)
        raise TaskGraphError("its dependencies form a cycle", task=stuck, field="after")
    return graph


def read_task_graph(path: str | os.PathLike, *, ngpus: int | None = None,
                    compute_time: Callable[..., float] | None = None, max_tasks: int = MAX_TASKS,
                    limit: int | None = None, option: str = "--max-input") -> TaskGraph:
    """:func:`task_graph` of a JSON file, read through :func:`topo.inputs.read_json` (kind
    ``"task-graph"``: a regular file or ``-`` for standard input, sized before it is read,
    strict UTF-8, bounded nesting).

    Parameters
    ----------
    path : str or os.PathLike
    ngpus, compute_time, max_tasks
        As for :func:`task_graph`.
    limit : int, optional
        The largest file read [bytes] (default: the kind's, :data:`topo.inputs.INPUT_KINDS`).
    option : str
        The option a refusal over the limit names.

    Returns
    -------
    TaskGraph

    Raises
    ------
    topo.inputs.InputFileError
        For a path that is not a regular file (a directory, a FIFO), a file too large,
        unreadable or not JSON.
    TaskGraphError, LimitError
        As :func:`task_graph`.
    """
    from topo.inputs import read_json

    return task_graph(read_json(path, "task-graph", limit=limit, option=option), ngpus=ngpus,
                      compute_time=compute_time, max_tasks=max_tasks)
