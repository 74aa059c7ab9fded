"""MSCCL XML schedules (MSCCL-IR, the algorithm files the MSCCL runtimes load), read as data.

:func:`read_msccl` reads a file and :func:`parse_msccl` its text into a frozen
:class:`Schedule` (GPUs, their threadblocks, their steps), as the runtimes read it; the checker
is :mod:`models.schedules.check`. A schedule is not a fabric: nothing here touches a graph.

Sources (the format and every constant below):

- [MR] microsoft/msccl, commit b23e9cd5 (2023-09-20): the parser in ``src/graph/topo.cc``
  (``mscclGetAlgoFromXMLAndSetAlgo``), the limits in ``src/include/msccl.h``.
- [MX] Azure/msccl-executor-nccl, ``src/misc/msccl/msccl_parser.cc`` at commit 3b40a2a8 (the
  newer executor on NCCL 2.18-era code).
- [MT] microsoft/msccl-tools, commit 030a750f: ``msccl/language/ir.py`` (``ir_to_xml``, which
  writes the "old format" both runtimes read: ``<step s=...>`` with every attribute, -1 unused).

Input rules, as every reader of the project: the file is a regular file (or ``-``), sized before
it is read against :data:`MSCCL_INPUT` (16 MiB; ``limit=`` / the CLI's ``--max-input`` raise it),
parsed by defusedxml with DTDs and entities refused, and every error is one line naming what was
expected and what was received, and where (GPU, threadblock, step).

Examples
--------
>>> s = parse_msccl('<algo name="x" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" '
...     'coll="allgather" inplace="0"><gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0"/>'
...     '<gpu id="1" i_chunks="1" o_chunks="2" s_chunks="0"/></algo>')
>>> s.collective, s.ngpus, s.dialect.name
('all_gather', 2, 'msccl')
>>> parse_msccl('<algo/>')
Traceback (most recent call last):
...
models.schedules.msccl.ScheduleFormatError: MSCCL schedule XML, <algo>: missing attribute 'name'
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from types import MappingProxyType

from topo.errors import DgxTopoError
from topo.inputs import InputKind, read_input
from topo.units import MiB

__all__ = ["ScheduleError", "ScheduleFormatError", "Instruction", "INSTRUCTIONS", "BUFFERS", "RuntimeLimits",
           "Dialect", "MSCCL", "EXECUTOR", "DIALECTS", "Step", "Threadblock", "Gpu", "Schedule",
           "MSCCL_INPUT", "read_msccl", "parse_msccl", "to_msccl_xml"]

#: The input kind of :func:`topo.inputs.read_input`: the largest real schedule of the runtime's
#: repository is ~320 KB (ndv4 ap2ll.xml, 2672 steps); 16 MiB holds ~100,000 steps, and the
#: runtime's own limits (216 threadblocks of 256 steps per GPU, [MR] msccl.h) put a real one far
#: below. ``limit=`` (the CLI's ``--max-input``) raises it.
MSCCL_INPUT = InputKind("msccl", "MSCCL schedule XML", 16 * MiB)

#: Buffer codes of ``srcbuf``/``dstbuf`` ([MR], [MT] ``Buffer``): the user's input and output
#: and the runtime's scratch buffer.
BUFFERS = MappingProxyType({"i": "input", "o": "output", "s": "scratch"})

# Integers larger than this are refused at reading (the runtimes read them as C int).
_INT_MAX = 2**31 - 1
# A whole number as the runtimes' atoi reads one (ASCII digits; longer ones are refused unread).
_INTEGER = re.compile(r"-?[0-9]{1,12}")


class ScheduleError(DgxTopoError):
    """A schedule that cannot be read or does not hold; names where (GPU, threadblock, step).

    Attributes
    ----------
    gpu, tb, step : int or None
        Where the fault is, as far as it is one place.
    """

    def __init__(self, message: str, *, gpu: int | None = None, tb: int | None = None, step: int | None = None):
        super().__init__(message)
        self.gpu, self.tb, self.step = gpu, tb, step

    def __reduce__(self):
        return (_rebuild, (type(self), str(self), self.gpu, self.tb, self.step))


def _rebuild(cls, message, gpu, tb, step):
    return cls(message, gpu=gpu, tb=tb, step=step)


class ScheduleFormatError(ScheduleError):
    """MSCCL XML the runtimes would not read: malformed, an unknown element value, a bad number."""


@dataclass(frozen=True, slots=True)
class Instruction:
    """What one step type does ([MT] ``Instruction``; [MR]/[MX] parsers).

    Attributes
    ----------
    code, name : str
    receives, sends : bool
        Whether it takes a message from the tb's ``recv`` peer / gives one to its ``send`` peer.
    reads_src, writes_dst, reduces : bool
        Whether it reads the source chunks, writes the destination chunks, and whether what it
        writes (or sends) is a reduction of the received data with the source (``re``: of the
        destination with the source).
    """

    code: str
    name: str
    receives: bool = False
    sends: bool = False
    reads_src: bool = False
    writes_dst: bool = False
    reduces: bool = False


#: Every step type the runtimes read (schedules.md 1.7). ``ra`` (residual add, [MR] only) is taken
#: as a local reduction like ``re`` [U: its semantics are not documented]; ``st`` is [MT]'s internal
#: start marker, never written for a runtime, so it is refused.
INSTRUCTIONS = MappingProxyType({i.code: i for i in (
    Instruction("s", "send", sends=True, reads_src=True),
    Instruction("r", "recv", receives=True, writes_dst=True),
    Instruction("rcs", "recv-copy-send", receives=True, sends=True, writes_dst=True),
    Instruction("rrs", "recv-reduce-send", receives=True, sends=True, reads_src=True, reduces=True),
    Instruction("rrc", "recv-reduce-copy", receives=True, reads_src=True, writes_dst=True, reduces=True),
    Instruction("rrcs", "recv-reduce-copy-send", receives=True, sends=True, reads_src=True, writes_dst=True,
                reduces=True),
    Instruction("cpy", "copy", reads_src=True, writes_dst=True),
    Instruction("re", "reduce", reads_src=True, writes_dst=True, reduces=True),
    Instruction("ra", "residual add", reads_src=True, writes_dst=True, reduces=True),
    Instruction("nop", "no-op"),
)})


@dataclass(frozen=True, slots=True)
class RuntimeLimits:
    """What a runtime accepts of a schedule (the checker enforces them).

    Attributes
    ----------
    name : str
    max_steps : int
        Steps per threadblock (``MSCCL_MAX_NUM_STEPS``).
    max_threadblocks : int
        Threadblocks per GPU (``MSCCL_MAX_NUM_THREAD_BLOCKS``).
    max_threadblocks_per_channel : int
        Send threadblocks, and receive threadblocks, per channel of a GPU
        (``MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL``).
    max_channels : int
        Channels (NCCL's ``MAXCHANNELS`` of the NCCL the runtime is built on).
    max_count : int
        ``cnt`` of a step is below this (``MSCCL_MAX_COUNT``).
    """

    name: str
    max_steps: int
    max_threadblocks: int
    max_threadblocks_per_channel: int
    max_channels: int
    max_count: int


#: [MR] src/include/msccl.h: MSCCL_MAX_NUM_STEPS 256, MSCCL_MAX_NUM_THREAD_BLOCKS 216,
#: MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL 32, MSCCL_MAX_COUNT 72. MAXCHANNELS 32: NCCL 2.12's
#: src/include/devcomm.h, which [MR] is built on [U: the base version is read from the fork's
#: history, not from a header of the commit].
MSCCL_LIMITS = RuntimeLimits("microsoft/msccl", max_steps=256, max_threadblocks=216,
                             max_threadblocks_per_channel=32, max_channels=32, max_count=72)
#: [MX] keeps [MR]'s constants [U: src/include/msccl/msccl_struct.h not re-read for this
#: commit]; MAXCHANNELS 32 of NCCL 2.18 (src/include/device.h) [U].
EXECUTOR_LIMITS = RuntimeLimits("msccl-executor-nccl", max_steps=256, max_threadblocks=216,
                                max_threadblocks_per_channel=32, max_channels=32, max_count=72)


@dataclass(frozen=True, slots=True)
class Dialect:
    """One runtime's reading of MSCCL XML: what it requires and accepts.

    Attributes
    ----------
    name : str
    collectives : Mapping
        ``coll`` values it accepts -> the collective's name in dgx-topo (``all_gather``...).
    required : tuple of str
        ``<algo>`` attributes it requires.
    instructions : frozenset of str
        Step types it accepts.
    limits : RuntimeLimits
    """

    name: str
    collectives: MappingProxyType
    required: tuple
    instructions: frozenset
    limits: RuntimeLimits


_BASE_REQUIRED = ("name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace")
#: [MR] (microsoft/msccl, the older runtime; MSCCL++'s predecessor format): minBytes/maxBytes
#: optional (0 and 2**27), no ``outofplace``; accepts ``ra``.
MSCCL = Dialect("msccl", MappingProxyType({"allreduce": "all_reduce", "allgather": "all_gather", "reduce": "reduce",
                          "broadcast": "broadcast", "alltoall": "all_to_all", "reduce_scatter": "reduce_scatter",
                          "custom": "custom"}),
                _BASE_REQUIRED, frozenset(INSTRUCTIONS), MSCCL_LIMITS)
#: [MX] (msccl-executor-nccl): ``outofplace``, ``minBytes``, ``maxBytes`` required; ``reducescatter``
#: without the underscore; no ``ra``.
EXECUTOR = Dialect("executor", MappingProxyType({"reduce": "reduce", "broadcast": "broadcast",
                                                 "allreduce": "all_reduce",
                                "reducescatter": "reduce_scatter", "allgather": "all_gather", "send": "send",
                                "recv": "recv", "gather": "gather", "scatter": "scatter", "alltoall": "all_to_all",
                                "alltoallv": "all_to_allv"}),
                   _BASE_REQUIRED + ("outofplace", "minBytes", "maxBytes"),
                   frozenset(INSTRUCTIONS) - {"ra"}, EXECUTOR_LIMITS)
DIALECTS = MappingProxyType({d.name: d for d in (MSCCL, EXECUTOR)})

_PROTOCOLS = ("Simple", "LL128", "LL")


@dataclass(frozen=True, slots=True)
class Step:
    """One instruction of a threadblock. Offsets and counts are in chunks; -1: unused.

    ``depid``/``deps``: the threadblock (same GPU) and its step this one waits for (-1: none);
    ``hasdep``: whether some step waits for this one (so it signals its completion).
    """

    s: int
    type: str
    srcbuf: str
    srcoff: int
    dstbuf: str
    dstoff: int
    cnt: int
    depid: int = -1
    deps: int = -1
    hasdep: bool = False

    @property
    def instruction(self) -> Instruction:
        return INSTRUCTIONS[self.type]


@dataclass(frozen=True, slots=True)
class Threadblock:
    """One thread block of a GPU: its peers (-1: none), its NCCL channel and its steps in order."""

    id: int
    send: int
    recv: int
    chan: int
    steps: tuple


@dataclass(frozen=True, slots=True)
class Gpu:
    """One rank: the chunk counts of its input, output and scratch buffers, and its threadblocks."""

    id: int
    i_chunks: int
    o_chunks: int
    s_chunks: int
    threadblocks: tuple

    def chunks(self, buf: str) -> int:
        return {"i": self.i_chunks, "o": self.o_chunks, "s": self.s_chunks}[buf]


@dataclass(frozen=True, slots=True)
class Schedule:
    """One MSCCL algorithm.

    Attributes
    ----------
    name, protocol : str
        ``protocol``: ``Simple``, ``LL128`` or ``LL``.
    collective : str
        dgx-topo's name (``all_gather``, ``reduce_scatter``, ``all_reduce``, ``all_to_all``,
        ``broadcast``...); ``coll`` is the file's own value.
    coll : str
    nchannels, nchunksperloop, ngpus : int
    inplace : bool
    outofplace : bool or None
        None where the dialect has no such attribute.
    min_bytes, max_bytes : int
        The message window the runtime picks it in [bytes].
    nthreads : int or None
    gpus : tuple of Gpu
        By rank.
    dialect : Dialect
    """

    name: str
    protocol: str
    collective: str
    coll: str
    nchannels: int
    nchunksperloop: int
    ngpus: int
    inplace: bool
    outofplace: bool | None
    min_bytes: int
    max_bytes: int
    nthreads: int | None
    gpus: tuple
    dialect: Dialect

    @property
    def nsteps(self) -> int:
        return sum(len(tb.steps) for gpu in self.gpus for tb in gpu.threadblocks)

    @property
    def nthreadblocks(self) -> int:
        return sum(len(gpu.threadblocks) for gpu in self.gpus)

    def to_records(self) -> list:
        """One tidy row per step: its GPU, threadblock (peers, channel) and every attribute."""
        from ..engine.results import tidy_records

        rows = [(g, tb, st) for g in self.gpus for tb in g.threadblocks for st in tb.steps]
        columns = {"gpu": [g.id for g, _, _ in rows], "tb": [tb.id for _, tb, _ in rows],
                   "send": [tb.send for _, tb, _ in rows], "recv": [tb.recv for _, tb, _ in rows],
                   "chan": [tb.chan for _, tb, _ in rows]}
        for name in Step.__slots__:
            columns[name] = [getattr(st, name) for _, _, st in rows]
        return tidy_records(columns)


def _where(gpu=None, tb=None, step=None) -> str:
    parts = [f"gpu {gpu}" if gpu is not None else None, f"tb {tb}" if tb is not None else None,
             f"step {step}" if step is not None else None]
    return ", ".join(p for p in parts if p) or "<algo>"


def _fail(message: str, gpu=None, tb=None, step=None) -> ScheduleFormatError:
    return ScheduleFormatError(f"MSCCL schedule XML, {_where(gpu, tb, step)}: {message}", gpu=gpu, tb=tb, step=step)


def _int(element, name, at, *, minimum=0, required=True, default=None):
    value = element.get(name)
    if value is None:
        if required:
            raise _fail(f"missing attribute {name!r}", *at)
        return default
    text = value.strip()
    if not _INTEGER.fullmatch(text):
        raise _fail(f"{name}={value!r}, expected a whole number", *at)
    number = int(text)
    if not minimum <= number <= _INT_MAX:
        raise _fail(f"{name}={value!r}, expected a whole number from {minimum} to {_INT_MAX}", *at)
    return number


def _flag(element, name, at, *, required=True):
    value = element.get(name)
    if value is None and not required:
        return None
    number = _int(element, name, at)
    if number not in (0, 1):
        raise _fail(f"{name}={value!r}, expected 0 or 1", *at)
    return bool(number)


def _choice(element, name, at, choices, *, required=True, default=None):
    value = element.get(name)
    if value is None:
        if required:
            raise _fail(f"missing attribute {name!r}", *at)
        return default
    if value not in choices:
        raise _fail(f"{name}={value!r}, expected one of {', '.join(choices)}", *at)
    return value


def _detect(root) -> Dialect:
    """[MX] requires ``outofplace``; [MR] has no such attribute."""
    return EXECUTOR if root.get("outofplace") is not None else MSCCL


def _children(element, tag):
    return [child for child in element if isinstance(child.tag, str) and child.tag == tag]


def _step(element, at, dialect) -> Step:
    s = at[2]
    kind = element.get("type")
    if kind not in dialect.instructions:
        raise _fail(f"type={kind!r}, expected one of {', '.join(sorted(dialect.instructions))} "
                    f"({dialect.name} dialect)", *at)
    buffers = tuple(BUFFERS)
    srcbuf = _choice(element, "srcbuf", at, buffers, required=False, default="i")
    dstbuf = _choice(element, "dstbuf", at, buffers, required=False, default="o")
    depid = _int(element, "depid", at, minimum=-1, required=False, default=-1)
    deps = _int(element, "deps", at, minimum=-1, required=False, default=-1)
    if (depid < 0) != (deps < 0):
        raise _fail(f"depid={depid} and deps={deps}, expected both -1 or both >= 0", *at)
    return Step(s=s, type=kind, srcbuf=srcbuf, srcoff=_int(element, "srcoff", at, minimum=-1),
                dstbuf=dstbuf, dstoff=_int(element, "dstoff", at, minimum=-1), cnt=_int(element, "cnt", at),
                depid=depid, deps=deps, hasdep=bool(_flag(element, "hasdep", at, required=False)))


def _threadblock(element, gpu, index, dialect) -> Threadblock:
    at = (gpu, index, None)
    tb = _int(element, "id", at)
    if tb != index:
        raise _fail(f"id={element.get('id')!r}, expected {index}: threadblock ids run 0, 1, ... in order "
                    f"without gaps", *at)
    steps = []
    for s, child in enumerate(_children(element, "step")):
        number = _int(child, "s", (gpu, tb, s))
        if number != s:
            raise _fail(f"s={child.get('s')!r}, expected {s}: steps run 0, 1, ... in order", gpu, tb, s)
        steps.append(_step(child, (gpu, tb, s), dialect))
    return Threadblock(id=tb, send=_int(element, "send", at, minimum=-1), recv=_int(element, "recv", at, minimum=-1),
                       chan=_int(element, "chan", at), steps=tuple(steps))


def _gpu(element, index, dialect) -> Gpu:
    at = (index, None, None)
    rank = _int(element, "id", at)
    if rank != index:
        raise _fail(f"id={element.get('id')!r}, expected {index}: one <gpu> per rank, in rank order", *at)
    tbs = tuple(_threadblock(child, rank, i, dialect) for i, child in enumerate(_children(element, "tb")))
    return Gpu(id=rank, i_chunks=_int(element, "i_chunks", at), o_chunks=_int(element, "o_chunks", at),
               s_chunks=_int(element, "s_chunks", at), threadblocks=tbs)


def parse_msccl(text: str | bytes, *, dialect: Dialect | None = None) -> Schedule:
    """A schedule from the text of an MSCCL XML file.

    Parameters
    ----------
    text : str or bytes
    dialect : Dialect, optional
        :data:`MSCCL` or :data:`EXECUTOR`; default: :data:`EXECUTOR` where ``<algo>`` has
        ``outofplace`` (which it requires), else :data:`MSCCL`.

    Raises
    ------
    ScheduleFormatError
        For text that is not well-formed XML, has a DTD or entities, or is not a schedule the
        dialect reads (an element, attribute or number out of place), naming where.
    """
    from topo.io.common import TopologyImportError, parse_xml

    try:
        root = parse_xml(text, what="MSCCL schedule XML")
    except TopologyImportError as error:
        raise ScheduleFormatError(str(error)) from None
    if root.tag == "msccl-algo" or _children(root, "op") or any(_children(t, "op") for t in root.iter("tb")):
        raise _fail("MSCCL-IR's new format (<op>) is not what the runtimes read: expected <step> elements "
                    "(msccl-tools ir_to_xml(old_format=True))")
    if root.tag != "algo":
        raise _fail(f"root element <{root.tag}>, expected <algo>")
    if dialect is None:
        dialect = _detect(root)
    at = (None, None, None)
    for name in dialect.required:
        if root.get(name) is None:
            raise _fail(f"missing attribute {name!r}" + (f" (required by the {dialect.name} dialect)"
                                                        if name not in _BASE_REQUIRED else ""))
    coll = _choice(root, "coll", at, tuple(dialect.collectives))
    ngpus = _int(root, "ngpus", at, minimum=1)
    elements = _children(root, "gpu")
    if len(elements) != ngpus:
        raise _fail(f"ngpus={ngpus} but {len(elements)} <gpu> elements, expected one per rank")
    name = root.get("name")
    if len(name) > 63:  # [MR] copies it into char name[64]
        raise _fail(f"name of {len(name)} characters, expected at most 63")
    min_bytes = _int(root, "minBytes", at, required=False, default=0)
    max_bytes = _int(root, "maxBytes", at, required=False, default=2**27)  # [MR] defaults
    nthreads = _int(root, "nthreads", at, required=False, minimum=32)
    if nthreads is not None and nthreads % 32:
        raise _fail(f"nthreads={nthreads}, expected a multiple of 32 (a warp)")
    return Schedule(name=name, protocol=_choice(root, "proto", at, _PROTOCOLS), collective=dialect.collectives[coll],
                    coll=coll, nchannels=_int(root, "nchannels", at, minimum=1),
                    nchunksperloop=_int(root, "nchunksperloop", at, minimum=1), ngpus=ngpus,
                    inplace=_flag(root, "inplace", at), outofplace=_flag(root, "outofplace", at, required=False),
                    min_bytes=min_bytes, max_bytes=max_bytes, nthreads=nthreads,
                    gpus=tuple(_gpu(e, i, dialect) for i, e in enumerate(elements)), dialect=dialect)


def read_msccl(path: str | os.PathLike, *, dialect: Dialect | None = None, limit: int | None = None) -> Schedule:
    """A schedule from an MSCCL XML file (``-``: standard input).

    Parameters
    ----------
    path : str or os.PathLike
    dialect : Dialect, optional
        See :func:`parse_msccl`.
    limit : int, optional
        The largest file read [bytes] (default :data:`MSCCL_INPUT`'s 16 MiB).

    Raises
    ------
    topo.inputs.InputFileError
        For a path that is not a readable regular file, or a file over the limit.
    ScheduleFormatError
        See :func:`parse_msccl`.
    """
    return parse_msccl(read_input(path, MSCCL_INPUT, limit=limit), dialect=dialect)


def to_msccl_xml(schedule: Schedule) -> str:
    """The schedule as MSCCL XML, in [MT]'s old format (what :func:`parse_msccl` reads back)."""
    algo = (f'<algo name="{_escape(schedule.name)}" proto="{schedule.protocol}" nchannels="{schedule.nchannels}" '
            f'nchunksperloop="{schedule.nchunksperloop}" ngpus="{schedule.ngpus}" coll="{schedule.coll}" '
            f'inplace="{int(schedule.inplace)}"')
    if schedule.outofplace is not None:
        algo += f' outofplace="{int(schedule.outofplace)}"'
    if schedule.dialect is EXECUTOR or (schedule.min_bytes, schedule.max_bytes) != (0, 2**27):
        algo += f' minBytes="{schedule.min_bytes}" maxBytes="{schedule.max_bytes}"'
    if schedule.nthreads is not None:
        algo += f' nthreads="{schedule.nthreads}"'
    lines = [algo + ">"]
    for gpu in schedule.gpus:
        lines.append(f'  <gpu id="{gpu.id}" i_chunks="{gpu.i_chunks}" o_chunks="{gpu.o_chunks}" '
                     f's_chunks="{gpu.s_chunks}">')
        for tb in gpu.threadblocks:
            lines.append(f'    <tb id="{tb.id}" send="{tb.send}" recv="{tb.recv}" chan="{tb.chan}">')
            lines.extend(f'      <step s="{st.s}" type="{st.type}" srcbuf="{st.srcbuf}" srcoff="{st.srcoff}" '
                         f'dstbuf="{st.dstbuf}" dstoff="{st.dstoff}" cnt="{st.cnt}" depid="{st.depid}" '
                         f'deps="{st.deps}" hasdep="{int(st.hasdep)}"/>' for st in tb.steps)
            lines.append("    </tb>")
        lines.append("  </gpu>")
    lines.append("</algo>")
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
