"""Check an MSCCL schedule as msccl-tools' oracle does, before anything runs it.

:func:`check_schedule` returns a :class:`ScheduleCheck` for a schedule that holds, or raises
:class:`ScheduleCheckError` naming the GPU, threadblock and step that break it (``rule`` says
which check). In order:

1. **limits** of the runtime (:class:`~models.schedules.msccl.RuntimeLimits`, the dialect's by
   default): threadblocks per GPU, steps per threadblock, channels, send and receive
   threadblocks per channel, ``cnt``; peers and channels in range; one threadblock per
   (channel, peer, direction), since each is one NCCL connection [U: inferred from [MR]'s
   per-channel peer table]; send-type steps only on a tb with a send peer (receive-type with
   a receive peer); offsets inside the buffers.
2. **dependencies**: each ``depid``/``deps`` names a step of the same GPU that exists, comes
   before its step where it is on the same threadblock, and signals (``hasdep=1``: a step
   that does not signal is never seen complete).
3. **matching**: per channel and ordered GPU pair, the sends of one side and the receives of
   the other agree in number and, in order, in ``cnt`` (the connection is a FIFO).
4. **deadlock**: program order, dependencies and send-before-receive form no cycle.
5. **races**: on each GPU, any two steps that write the same chunk, or one writes and one
   reads it, are ordered (by the happens-before of 4, vector clocks over threadblocks).
6. **postcondition**: the data movement simulated symbolically, each chunk a set of
   (source rank, input chunk) contributions, a reduction their union (a contribution reduced in
   twice is an error: the sum would count it twice); each output chunk must hold what the
   collective says it must (all_gather, reduce_scatter, all_reduce, all_to_all; the others
   name no root in the XML, so their postcondition is not checked).

The work is the steps times the threadblocks (a vector clock per threadblock, as wide as the
threadblocks with steps; only those of steps still awaited are kept besides); an 8-GPU schedule of
10,000 steps checks in about 0.1 s (examples/schedule_check_benchmark.py).

Not modelled: connections buffer a bounded number of sends (NCCL_STEPS slots), so a schedule
that needs more in flight can still deadlock at run time; and one loop iteration is checked (the
runtime repeats the schedule for each ``nchunksperloop`` chunks of a larger message).
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass

import numpy as np

from topo.errors import LimitError

from ..engine.results import tidy_records
from .msccl import RuntimeLimits, Schedule, ScheduleError

__all__ = ["ScheduleCheckError", "ScheduleCheck", "CHECKED_COLLECTIVES", "check_schedule", "match_transfers"]

#: The collectives whose postcondition is checked.
CHECKED_COLLECTIVES = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all")
#: A chunk no rank's input put there (output before it is written, scratch).
_UNSET = (-1, -1)


class ScheduleCheckError(ScheduleError):
    """A schedule that breaks a rule; ``rule`` is one of ``limits``, ``dependency``, ``matching``,
    ``deadlock``, ``race``, ``postcondition``; ``gpu``, ``tb``, ``step`` say where."""

    def __init__(self, message: str, *, rule: str, gpu: int | None = None, tb: int | None = None,
                 step: int | None = None):
        where = ", ".join(f"{k} {v}" for k, v in (("gpu", gpu), ("tb", tb), ("step", step)) if v is not None)
        super().__init__(f"MSCCL schedule, {where}: {message}" if where else f"MSCCL schedule: {message}",
                         gpu=gpu, tb=tb, step=step)
        self.rule = rule

    def __reduce__(self):
        return (_rebuild, (type(self), self.args[0], self.rule, self.gpu, self.tb, self.step))


def _rebuild(cls, message, rule, gpu, tb, step):
    error = cls.__new__(cls)
    ScheduleError.__init__(error, message, gpu=gpu, tb=tb, step=step)
    error.rule = rule
    return error


@dataclass(frozen=True, slots=True)
class ScheduleCheck:
    """What a schedule that holds is.

    Attributes
    ----------
    name, collective, protocol : str
    ngpus, chunks : int
        Ranks, and chunks per loop (``nchunksperloop``).
    threadblocks, steps : int
        Over all GPUs.
    threadblocks_per_gpu, steps_per_threadblock : int
        The most on one GPU, and on one threadblock (beside the runtime's limits).
    channels : int
        Distinct channels the threadblocks use.
    transfers : int
        Matched send/receive pairs.
    depth : int
        Steps on the longest chain of the happens-before (a lower bound on sequential steps).
    postcondition : bool
        Whether the postcondition was checked (False for collectives not in
        :data:`CHECKED_COLLECTIVES`).
    limits : str
        The runtime whose limits were applied.
    """

    name: str
    collective: str
    protocol: str
    ngpus: int
    chunks: int
    threadblocks: int
    steps: int
    threadblocks_per_gpu: int
    steps_per_threadblock: int
    channels: int
    transfers: int
    depth: int
    postcondition: bool
    limits: str

    def to_records(self) -> list:
        """One tidy row: every attribute."""
        return tidy_records({name: getattr(self, name) for name in self.__slots__})


def _err(rule, message, gpu=None, tb=None, step=None):
    return ScheduleCheckError(message, rule=rule, gpu=gpu, tb=tb, step=step)


# --- buffers ----------------------------------------------------------------------------------

class _Layout:
    """Where each rank's input chunks sit and what its output chunks must hold (the collective)."""

    def __init__(self, schedule: Schedule):
        n, total = schedule.ngpus, schedule.nchunksperloop
        self.collective, self.inplace, self.n = schedule.collective, schedule.inplace, n
        if self.collective in ("all_gather", "reduce_scatter", "all_to_all") and total % n:
            raise _err("limits", f"nchunksperloop={total} is not a multiple of ngpus={n}, as "
                                 f"{self.collective} needs")
        self.k = total // n  # chunks per rank's block
        self.total = total
        self.inputs = self.k if self.collective == "all_gather" else total
        self.outputs = self.k if self.collective == "reduce_scatter" else total

    def canonical(self, rank: int, buf: str, off: int) -> tuple:
        """The slot a (buffer, offset) names, in-place aliases resolved."""
        if not self.inplace or buf == "s":
            return buf, off
        if self.collective == "all_gather":
            return ("o", rank * self.k + off) if buf == "i" else ("o", off)
        if self.collective == "reduce_scatter":
            return ("i", rank * self.k + off) if buf == "o" else ("i", off)
        return "i", off

    def view(self, gpu, buf: str) -> int:
        """Chunks the buffer name reaches on this GPU (in place: through its alias)."""
        declared = gpu.chunks(buf)
        if not self.inplace or buf == "s":
            return declared
        if self.collective == "all_gather":
            return self.k if buf == "i" else max(declared, self.total)
        if self.collective == "reduce_scatter":
            return self.k if buf == "o" else max(declared, self.total)
        return max(gpu.i_chunks, gpu.o_chunks)

    def initial(self, rank: int, slot: tuple) -> frozenset:
        buf, off = slot
        if self.inplace:
            if self.collective == "all_gather":
                hit = buf == "o" and rank * self.k <= off < (rank + 1) * self.k
                return frozenset({(rank, off - rank * self.k)}) if hit else frozenset({_UNSET})
            hit = buf == "i" and off < self.inputs
        else:
            hit = buf == "i" and off < self.inputs
        return frozenset({(rank, off)}) if hit else frozenset({_UNSET})

    def expected(self, rank: int):
        """(slot, contributions) of every output chunk of this rank."""
        n, k, out = self.n, self.k, ("i" if self.inplace and self.collective != "all_gather" else "o")
        if self.collective == "all_gather":
            for x in range(self.total):
                yield ("o", x), frozenset({(x // k, x % k)})
        elif self.collective == "reduce_scatter":
            for c in range(k):
                slot = ("i", rank * k + c) if self.inplace else ("o", c)
                yield slot, frozenset((j, rank * k + c) for j in range(n))
        elif self.collective == "all_reduce":
            for c in range(self.total):
                yield (out, c), frozenset((j, c) for j in range(n))
        else:  # all_to_all
            for x in range(self.total):
                yield (out, x), frozenset({(x // k, rank * k + x % k)})


# --- 1. limits --------------------------------------------------------------------------------

def _check_limits(schedule: Schedule, limits: RuntimeLimits, layout) -> None:
    if schedule.nchannels > limits.max_channels:
        raise _err("limits", f"nchannels={schedule.nchannels}, more than the {limits.max_channels} channels of "
                             f"{limits.name}")
    # [MR] topo.cc: a buffer's chunks times its multiplier (ngpus for all_gather's input and
    # reduce_scatter's output, else 1) is nchunksperloop, where the buffer has chunks at all.
    m_in = schedule.ngpus if schedule.collective == "all_gather" else 1
    m_out = schedule.ngpus if schedule.collective == "reduce_scatter" else 1
    rule = schedule.collective in CHECKED_COLLECTIVES + ("reduce", "broadcast")
    for gpu in schedule.gpus:
        g = gpu.id
        for buf, chunks, m in () if not rule else (("i", gpu.i_chunks, m_in), ("o", gpu.o_chunks, m_out)):
            if chunks and chunks * m != schedule.nchunksperloop:
                raise _err("limits", f"{buf}_chunks={chunks}, expected {schedule.nchunksperloop // m} "
                                     f"(nchunksperloop={schedule.nchunksperloop}" + (" / ngpus" if m > 1 else "")
                                     + f" for {schedule.collective}) or 0", g)
        if len(gpu.threadblocks) > limits.max_threadblocks:
            raise _err("limits", f"{len(gpu.threadblocks)} threadblocks, more than {limits.max_threadblocks} "
                                 f"(MSCCL_MAX_NUM_THREAD_BLOCKS of {limits.name})",
                       g, gpu.threadblocks[limits.max_threadblocks].id)
        connections, per_channel = {}, defaultdict(int)
        for tb in gpu.threadblocks:
            if len(tb.steps) > limits.max_steps:
                raise _err("limits", f"{len(tb.steps)} steps, more than {limits.max_steps} (MSCCL_MAX_NUM_STEPS "
                                     f"of {limits.name})", g, tb.id, limits.max_steps)
            if tb.chan >= schedule.nchannels:
                raise _err("limits", f"chan={tb.chan}, expected below nchannels={schedule.nchannels}", g, tb.id)
            for direction, peer in (("send", tb.send), ("recv", tb.recv)):
                if peer == -1:
                    continue
                if peer == g or peer >= schedule.ngpus:
                    raise _err("limits", f"{direction}={peer}, expected -1 or another rank below "
                                         f"ngpus={schedule.ngpus}", g, tb.id)
                key = (direction, tb.chan, peer)
                if key in connections:
                    raise _err("limits", f"{direction}={peer} on channel {tb.chan}, as tb {connections[key]}: one "
                                         f"connection per channel, peer and direction", g, tb.id)
                connections[key] = tb.id
                per_channel[direction, tb.chan] += 1
                if per_channel[direction, tb.chan] > limits.max_threadblocks_per_channel:
                    raise _err("limits", f"more than {limits.max_threadblocks_per_channel} {direction} threadblocks "
                                         f"on channel {tb.chan} (MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL)", g, tb.id)
            for step in tb.steps:
                _check_step(schedule, limits, layout, gpu, tb, step)


def _check_step(schedule, limits, layout, gpu, tb, step) -> None:
    g, op = gpu.id, step.instruction
    where = (g, tb.id, step.s)
    if step.cnt >= limits.max_count:
        raise _err("limits", f"cnt={step.cnt}, expected below {limits.max_count} (MSCCL_MAX_COUNT)", *where)
    if op.sends and tb.send < 0:
        raise _err("limits", f"{op.name} on a threadblock with send=-1", *where)
    if op.receives and tb.recv < 0:
        raise _err("limits", f"{op.name} on a threadblock with recv=-1", *where)
    for used, buf, off in ((op.reads_src, step.srcbuf, step.srcoff), (op.writes_dst, step.dstbuf, step.dstoff)):
        size = layout.view(gpu, buf)
        if used and (off < 0 or off + step.cnt > size):
            raise _err("limits", f"{op.name} of {step.cnt} chunks at {buf}[{off}], outside the {size} chunks of "
                                 f"the {buf} buffer", *where)


# --- 2. dependencies --------------------------------------------------------------------------

def _check_dependencies(schedule: Schedule) -> None:
    for gpu in schedule.gpus:
        for tb in gpu.threadblocks:
            for step in tb.steps:
                if step.depid < 0:
                    continue
                where = (gpu.id, tb.id, step.s)
                if step.depid >= len(gpu.threadblocks):
                    raise _err("dependency", f"depends on tb {step.depid}, which gpu {gpu.id} does not have "
                                             f"({len(gpu.threadblocks)} threadblocks)", *where)
                other = gpu.threadblocks[step.depid]
                if step.deps >= len(other.steps):
                    raise _err("dependency", f"depends on step {step.deps} of tb {step.depid}, which has "
                                             f"{len(other.steps)} steps", *where)
                if other is tb and step.deps >= step.s:
                    raise _err("dependency", f"depends on step {step.deps} of its own threadblock, which comes "
                                             f"after it", *where)
                if other is not tb and not other.steps[step.deps].hasdep:
                    raise _err("dependency", f"depends on step {step.deps} of tb {step.depid}, whose hasdep=0: "
                                             f"it never signals", *where)


# --- 3. matching ------------------------------------------------------------------------------

def match_transfers(schedule: Schedule) -> dict:
    """Each receive's send: ``{(gpu, tb, step) of a receive: (gpu, tb, step) of its send}``, per
    channel and ordered GPU pair in FIFO order (rule 3 of the module's docstring).

    Raises
    ------
    ScheduleCheckError
        (rule ``matching``) For sends and receives that disagree in number or ``cnt``.
    """
    sends, recvs = defaultdict(list), defaultdict(list)
    for gpu in schedule.gpus:
        for tb in gpu.threadblocks:
            for step in tb.steps:
                if step.instruction.sends:
                    sends[gpu.id, tb.send, tb.chan].append((gpu.id, tb.id, step.s, step.cnt))
                if step.instruction.receives:
                    recvs[tb.recv, gpu.id, tb.chan].append((gpu.id, tb.id, step.s, step.cnt))
    matched = {}
    for key in sorted(set(sends) | set(recvs)):
        src, dst, chan = key
        out, into = sends.get(key, []), recvs.get(key, [])
        for a, b in zip(out, into):
            if a[3] != b[3]:
                raise _err("matching", f"receives {b[3]} chunks from gpu {src} on channel {chan}, but the matching "
                                       f"send (gpu {a[0]}, tb {a[1]}, step {a[2]}) sends {a[3]}", *b[:3])
            matched[b[:3]] = a[:3]
        if len(out) > len(into):
            a = out[len(into)]
            raise _err("matching", f"sends to gpu {dst} on channel {chan} ({len(out)} sends), but gpu {dst} "
                                   f"receives only {len(into)} from gpu {src} there", *a[:3])
        if len(into) > len(out):
            b = into[len(out)]
            raise _err("matching", f"receives from gpu {src} on channel {chan} ({len(into)} receives), but gpu "
                                   f"{src} sends only {len(out)} to gpu {dst} there", *b[:3])
    return matched


# --- 4-6. order, races, data ------------------------------------------------------------------

def _reads_writes(layout, rank, step):
    op, reads, writes = step.instruction, [], []
    if op.reads_src:
        reads = [layout.canonical(rank, step.srcbuf, step.srcoff + i) for i in range(step.cnt)]
    if op.writes_dst:
        writes = [layout.canonical(rank, step.dstbuf, step.dstoff + i) for i in range(step.cnt)]
        if op.code in ("re", "ra"):
            reads = reads + writes
    return reads, writes


def _union(parts, where):
    total = set()
    for part in parts:
        twice = total & part
        if twice - {_UNSET}:
            rank, chunk = min(twice - {_UNSET})
            raise _err("postcondition", f"reduces the contribution of rank {rank}'s chunk {chunk} twice", *where)
        total |= part
    return frozenset(total)


def _simulate(schedule: Schedule, layout, matched: dict, check_data: bool, dtype):
    """Run the steps in a topological order of the happens-before; returns (transfers, depth)."""
    ids = {}  # (gpu, tb) -> column of the vector clock (threadblocks without steps need none)
    for gpu in schedule.gpus:
        for tb in gpu.threadblocks:
            if tb.steps:
                ids[gpu.id, tb.id] = len(ids)
    width = len(ids)
    # Predecessors beyond program order: dependency and matching send.
    extra, waiters = defaultdict(list), defaultdict(int)
    for gpu in schedule.gpus:
        for tb in gpu.threadblocks:
            for step in tb.steps:
                key = (gpu.id, tb.id, step.s)
                if step.depid >= 0 and step.depid != tb.id:
                    extra[key].append((gpu.id, step.depid, step.deps))
                if key in matched:
                    extra[key].append(matched[key])
    for preds in extra.values():
        for p in preds:
            waiters[p] += 1
    successors = defaultdict(list)
    for key, preds in extra.items():
        for p in preds:
            successors[p].append(key)
    pending = {key: len(preds) for key, preds in extra.items()}
    tbs = {(g.id, tb.id): tb for g in schedule.gpus for tb in g.threadblocks if tb.steps}
    done = {key: 0 for key in tbs}  # steps completed per threadblock
    clock = {key: np.zeros(width, dtype=dtype) for key in tbs}
    depth_of = {key: 0 for key in tbs}
    saved, saved_depth = {}, {}
    ready = deque(key for key, tb in tbs.items() if tb.steps and not pending.get((*key, 0)))
    last_write, reads_since = {}, defaultdict(list)
    values, fifo = {}, defaultdict(deque)
    executed = depth = 0
    while ready:
        g, t = ready.popleft()
        tb = tbs[g, t]
        s = done[g, t]
        step = tb.steps[s]
        key = (g, t, s)
        vc, d = clock[g, t], depth_of[g, t]
        for p in extra.get(key, ()):
            vc = np.maximum(vc, saved[p])
            d = max(d, saved_depth[p])
            waiters[p] -= 1
            if not waiters[p]:
                del saved[p], saved_depth[p]
        column = ids[g, t]
        vc[column] = s + 1
        d += 1
        depth = max(depth, d)
        clock[g, t], depth_of[g, t] = vc, d
        if waiters.get(key):
            saved[key], saved_depth[key] = vc.copy(), d
        where = (g, t, s)
        reads, writes = _reads_writes(layout, g, step)
        for slot in reads:
            w = last_write.get((g, slot))
            if w is not None and _unordered(w, vc, ids):
                raise _race(w, where, slot, "reads")
            reads_since[g, slot].append(where)
        for slot in writes:
            w = last_write.get((g, slot))
            if w is not None and _unordered(w, vc, ids):
                raise _race(w, where, slot, "writes")
            for r in reads_since.pop((g, slot), ()):
                if r[:2] != (g, t) and vc[ids[r[:2]]] < r[2] + 1:
                    raise _race(r, where, slot, "writes", other="reads")
            last_write[g, slot] = where
        if check_data:
            _execute(schedule, layout, g, tb, step, values, fifo, where)
        executed += 1
        done[g, t] = s + 1
        if s + 1 < len(tb.steps) and not pending.get((g, t, s + 1)):
            ready.append((g, t))
        for succ in successors.get(key, ()):
            pending[succ] -= 1
            if not pending[succ] and done[succ[:2]] == succ[2]:
                ready.append(succ[:2])
    total = schedule.nsteps
    if executed < total:
        g, t = next((k for k, tb in tbs.items() if done[k] < len(tb.steps)))
        s = done[g, t]
        waits = [f"gpu {p[0]} tb {p[1]} step {p[2]}" for p in extra.get((g, t, s), ()) if done[p[:2]] <= p[2]]
        raise _err("deadlock", f"waits for {' and '.join(waits) or 'a step'}, which never completes: the "
                               f"dependencies and receives form a cycle ({total - executed} of {total} steps "
                               f"cannot run)", g, t, s)
    if check_data:
        _postcondition(schedule, layout, values, last_write)
    return len(matched), depth


def _unordered(write, vc, ids) -> bool:
    """Whether step ``write`` (gpu, tb, step) does not happen before the step whose clock is ``vc``."""
    return vc[ids[write[:2]]] < write[2] + 1


def _race(first, where, slot, what, other="writes"):
    buf, off = slot
    return _err("race", f"{what} {buf}[{off}], which gpu {first[0]} tb {first[1]} step {first[2]} {other} "
                        f"with no order between them", *where)


def _execute(schedule, layout, g, tb, step, values, fifo, where) -> None:
    op = step.instruction

    def get(slot):
        value = values.get((g, slot))
        return layout.initial(g, slot) if value is None else value

    src: list = ([get(layout.canonical(g, step.srcbuf, step.srcoff + i)) for i in range(step.cnt)]
                 if op.reads_src else [])
    message: list = fifo[tb.recv, g, tb.chan].popleft() if op.receives else []
    result: list
    if op.receives and op.reduces:
        result = [_union((m, v), where) for m, v in zip(message, src)]
    elif op.receives:
        result = message
    elif op.code in ("re", "ra"):
        dst: list = [get(layout.canonical(g, step.dstbuf, step.dstoff + i)) for i in range(step.cnt)]
        result = [_union((a, b), where) for a, b in zip(dst, src)]
    else:
        result = src
    if op.writes_dst:
        for i, value in enumerate(result):
            values[g, layout.canonical(g, step.dstbuf, step.dstoff + i)] = value
    if op.sends:
        fifo[g, tb.send, tb.chan].append(result)


def _describe(contributions) -> str:
    items = sorted(contributions)
    text = ", ".join("unset" if c == _UNSET else f"{c[0]}:{c[1]}" for c in items[:4])
    return "{" + text + (f", ... {len(items)} in all" if len(items) > 4 else "") + "}"


def _postcondition(schedule, layout, values, last_write) -> None:
    for gpu in schedule.gpus:
        for slot, want in layout.expected(gpu.id):
            have = values.get((gpu.id, slot))
            if have is None:
                have = layout.initial(gpu.id, slot)
            if have != want:
                writer = last_write.get((gpu.id, slot))
                buf, off = slot
                said = (f"last written by tb {writer[1]} step {writer[2]}" if writer else "never written")
                missing = want - have
                detail = (f"lacks {_describe(missing)}" if missing else f"holds extra {_describe(have - want)}")
                raise _err("postcondition", f"{schedule.collective} output chunk {buf}[{off}] holds "
                                            f"{_describe(have)}, expected {_describe(want)}: {detail} ({said})",
                           gpu.id, writer[1] if writer else None, writer[2] if writer else None)


def check_schedule(schedule: Schedule, *, limits: RuntimeLimits | None = None,
                   max_slots: int = 1 << 24, max_threadblocks: int = 4096) -> ScheduleCheck:
    """Check a schedule; see the module's docstring for what is checked, in which order.

    Parameters
    ----------
    schedule : Schedule
    limits : RuntimeLimits, optional
        The runtime's limits (default: the schedule's dialect's).
    max_slots : int
        The most output chunks (ranks x ``nchunksperloop``) whose contents are checked; a
        larger schedule raises :class:`~topo.errors.LimitError` naming ``max_slots``.
    max_threadblocks : int
        The most threadblocks with steps, over all GPUs: the happens-before keeps a vector clock
        as wide as they are for each (4096: 18 GPUs of the runtime's 216 threadblocks, or 128 of
        32; 32 MiB of clocks at most). More raise :class:`~topo.errors.LimitError` naming it.

    Returns
    -------
    ScheduleCheck

    Raises
    ------
    ScheduleCheckError
        Naming the rule, the GPU, threadblock and step that break it.
    topo.errors.LimitError
    """
    if not isinstance(schedule, Schedule):
        raise ScheduleError(f"expected a Schedule (models.schedules.read_msccl), received {type(schedule).__name__}")
    limits = schedule.dialect.limits if limits is None else limits
    slots = schedule.ngpus * schedule.nchunksperloop
    if slots > max_slots:
        raise LimitError(f"a schedule of {slots} output chunks", keyword="max_slots", size=slots, limit=max_slots)
    active = sum(1 for g in schedule.gpus for tb in g.threadblocks if tb.steps)
    if active > max_threadblocks:
        raise LimitError(f"a schedule of {active} threadblocks with steps", keyword="max_threadblocks",
                         size=active, limit=max_threadblocks)
    layout = _Layout(schedule)
    _check_limits(schedule, limits, layout)
    _check_dependencies(schedule)
    matched = match_transfers(schedule)
    checked = schedule.collective in CHECKED_COLLECTIVES
    # A clock entry counts the steps of one threadblock: 16 bits hold the runtime's 256.
    dtype = np.int16 if limits.max_steps < 2**15 else np.int32
    transfers, depth = _simulate(schedule, layout, matched, checked, dtype)
    channels = len({tb.chan for gpu in schedule.gpus for tb in gpu.threadblocks})
    return ScheduleCheck(name=schedule.name, collective=schedule.collective, protocol=schedule.protocol,
                         ngpus=schedule.ngpus, chunks=schedule.nchunksperloop, threadblocks=schedule.nthreadblocks,
                         steps=schedule.nsteps,
                         threadblocks_per_gpu=max((len(g.threadblocks) for g in schedule.gpus), default=0),
                         steps_per_threadblock=max((len(tb.steps) for g in schedule.gpus for tb in g.threadblocks),
                                                   default=0),
                         channels=channels, transfers=transfers, depth=depth,
                         postcondition=checked, limits=limits.name)
