"""Read what benchmarks printed: nccl-tests and p2pBandwidthLatencyTest outputs.

Both parsers take the text as printed (a log file may also hold NCCL INFO lines, mpirun
prefixes, shell echo) and return frozen dataclasses in SI units (bytes, seconds, B/s).
Anything that looks like a result but does not parse raises :class:`BenchmarkParseError`
naming the line; nothing else escapes.

nccl-tests layouts accepted (NVIDIA/nccl-tests, 2018 to today): rows ``size count type
[redop] [root] time algbw busbw error|#wrong [time algbw busbw error|#wrong]``, with ``N/A``
where a value is not available (``-c 0``) and out-of-place columns only; a column header
(``# size count type redop root time algbw busbw #wrong ...``) which, when present, names the
columns of the rows (so a newer column is skipped by name); the ``# nThread .. nGpus ..``
header, once or once per process; device lines
``#  Rank  0 [Group  0] [Pid 123] on HOST device  0 [0x07] NAME`` (one per rank, several hosts
over MPI, or none at all); ``# Out of bounds values`` and ``# Avg bus bandwidth`` closing lines
(or none, as 2018 releases print); ``Running:``, ``# Collective test starting:`` and ``*_perf``
command lines that name the collective; lines prefixed by ``mpirun --tag-output``
(``[1,0]<stdout>:``) or ``srun --label`` (``0:``); and the table ``dgxtopo collective`` prints
(its ``algo proto nch`` columns, and its header naming the collective, GPUs and ranks).

The rank count comes from, in order: the device lines (all of them), ``dgxtopo collective``'s
header, the rows themselves (size / count for all_gather, reduce_scatter and alltoall, whose
size counts every rank; busbw / algbw for all_reduce, 2(n-1)/n), and ``nThread x nGpus`` when
the text shows a single process. Where busbw equals algbw (broadcast, reduce, sendrecv) and none
of these is there, the rank count is unknown (``NcclTestsRun.nranks`` is None) and must come
from the caller (``--gpus``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from topo.errors import DgxTopoError
from topo.units import GB, MAX_NBYTES, us

from ..engine.nccltests import COLLECTIVES as _MODELLED, busbw_factor
from ..engine.results import tidy_records

__all__ = [
    "BenchmarkParseError", "Device", "NcclTestsRow", "NcclTestsRun", "read_nccl_tests", "MAX_ROWS",
    "P2PDevice", "P2PBenchmark", "read_p2p_benchmark", "read_benchmark",
]

_COLLECTIVES = ("all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter", "alltoall",
                "sendrecv", "gather", "scatter", "hypercube")


class BenchmarkParseError(DgxTopoError):
    """A benchmark output that does not parse; names the line and what was expected."""

    def __init__(self, message: str, line: int | None = None, text: str | None = None):
        where = "" if line is None else f"line {line}: "
        shown = "" if text is None else f" (received {text.strip()[:80]!r})"
        super().__init__(f"{where}{message}{shown}")
        self.line = line


@dataclass(frozen=True, slots=True)
class Device:
    """One ``# Rank`` line of nccl-tests.

    Attributes
    ----------
    rank : int
    host : str
    device : int
        CUDA device index as the process sees it (after CUDA_VISIBLE_DEVICES).
    name : str
    bus_id : str
    pid : int or None
    group : int or None
    """

    rank: int
    host: str
    device: int
    name: str
    bus_id: str
    pid: int | None = None
    group: int | None = None


@dataclass(frozen=True, slots=True)
class NcclTestsRow:
    """One size of an nccl-tests run. NaN where the output had ``N/A`` or no in-place columns.

    Attributes
    ----------
    size : int
        nccl-tests' size. [bytes]
    count : int
        Elements.
    dtype : str
    redop : str or None
    root : int or None
    time, inplace_time : float
        Out-of-place and in-place time of one operation. [s]
    algbw, busbw, inplace_algbw, inplace_busbw : float
        [B/s]
    error, inplace_error : float
        Max error (older nccl-tests) or number of wrong elements (``#wrong``).
    """

    size: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    time: float
    algbw: float
    busbw: float
    error: float
    inplace_time: float = math.nan
    inplace_algbw: float = math.nan
    inplace_busbw: float = math.nan
    inplace_error: float = math.nan


@dataclass(frozen=True, slots=True)
class NcclTestsRun:
    """A parsed nccl-tests output.

    Attributes
    ----------
    collective : str or None
        ``"all_reduce"``..., from the program name, else inferred from the columns.
    rows : tuple of NcclTestsRow
    devices : tuple of Device
    nthreads, gpus_per_thread : int or None
        ``nThread`` and ``nGpus`` (``-t``, ``-g``) of the header.
    avg_busbw : float or None
        The closing ``Avg bus bandwidth``. [B/s]
    out_of_bounds : str or None
    cuda_visible_devices : tuple of int or None
        From a ``CUDA_VISIBLE_DEVICES=`` assignment in the text.
    name : str
        Where the text came from (a file name), for messages.
    """

    collective: str | None
    rows: tuple
    devices: tuple = ()
    nthreads: int | None = None
    gpus_per_thread: int | None = None
    avg_busbw: float | None = None
    out_of_bounds: str | None = None
    cuda_visible_devices: tuple | None = None
    name: str = ""
    #: The program the text names (``gather``, ``all_reduce``...), modelled or not; None if none.
    program: str | None = None
    #: Ranks found without complete device lines, and how (``ranks_source``); see the module.
    ranks: int | None = None
    ranks_source: str = ""
    #: The GPU ids ``dgxtopo collective`` printed in its header (``"0-15"``), if the text is one.
    gpu_ids: str | None = None
    #: How the collective was found: "program" (its ``*_perf`` line or ``dgxtopo collective``'s
    #: header), "columns" (inferred), "caller" (``collective=``, which the columns may confirm) or "".
    collective_source: str = ""

    def to_records(self) -> list:
        """One row per printed size: the run's name, collective and ranks, then the row's size,
        count, type, out-of-place and in-place time, algbw, busbw and error, in SI units."""
        rows = self.rows
        return tidy_records({
            "name": self.name, "collective": self.collective, "nranks": self.nranks,
            "nbytes": [r.size for r in rows], "count": [r.count for r in rows], "dtype": [r.dtype for r in rows],
            "redop": [r.redop for r in rows], "root": [r.root for r in rows], "time_s": [r.time for r in rows],
            "algbw_Bps": [r.algbw for r in rows], "busbw_Bps": [r.busbw for r in rows],
            "error": [r.error for r in rows], "inplace_time_s": [r.inplace_time for r in rows],
            "inplace_algbw_Bps": [r.inplace_algbw for r in rows],
            "inplace_busbw_Bps": [r.inplace_busbw for r in rows], "inplace_error": [r.inplace_error for r in rows]})

    @property
    def complete_devices(self) -> bool:
        """Whether the device lines list ranks 0, 1, ... n-1, each once, and as many as the rows
        show (device lines cut at the end would otherwise look complete)."""
        n = len(self.devices)
        return bool(n) and sorted(d.rank for d in self.devices) == list(range(n)) \
            and self.ranks in (None, n)

    @property
    def nranks(self) -> int | None:
        """Ranks: the device lines (all of them), else what the parser found (``ranks``); for a
        run built by hand without either, threads x GPUs; None if unknown."""
        if self.complete_devices:
            return len(self.devices)
        if self.ranks is not None:
            return self.ranks
        if not self.ranks_source and not self.devices and self.nthreads and self.gpus_per_thread:
            return self.nthreads * self.gpus_per_thread
        return None

    @property
    def hosts(self) -> tuple:
        """Host names of the devices, in order of first appearance."""
        return tuple(dict.fromkeys(d.host for d in self.devices))

    def column(self, name: str) -> np.ndarray:
        """One field of every row as an array (``"size"``, ``"time"``, ``"busbw"``...)."""
        return np.array([getattr(r, name) for r in self.rows], dtype=float)


# mpirun --tag-output ("[1,0]<stdout>:") and srun --label ("0: ") prefixes.
_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\s{0,4}\d{1,6}: )")
_MPI = re.compile(r"\[\d+,\d+\]<std(?:out|err)>:|\b(?:mpirun|mpiexec|srun|jsrun|aprun)\b")
_HEADER = re.compile(r"nThread\s+(\d+)\s+nGpus\s+(\d+)")
_DEVICE = re.compile(r"^#\s*Rank\s+(\d+)(?:\s+Group\s+(\d+))?(?:\s+Pid\s+(\d+))?\s+on\s+(\S+)\s+"
                     r"device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$")
_PROGRAM = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)*)_perf(?:_mpi)?\b")
_DGXTOPO = re.compile(r"^#\s*dgxtopo: predicted nccl-tests (\w+) on .* GPUs (\S+) \((\d+) ranks?\)")
_VISIBLE = re.compile(r"CUDA_VISIBLE_DEVICES=([0-9,]+)")
# The perf program's own -t/--nthreads and -g/--ngpus (nccl-tests src/common.cu options).
_FLAG_THREADS = re.compile(r"(?:^|\s)(?:-t\s*|--nthreads[=\s]\s*)(\d+)")
_FLAG_GPUS = re.compile(r"(?:^|\s)(?:-g\s*|--ngpus[=\s]\s*)(\d+)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(.*?)\s*$")
_COLUMNS = re.compile(r"^#\s*size\s+count\s+type\b(.*)$")
_ROW = re.compile(r"^\s*\d+\s+\d+\s+[A-Za-z]")
_NOISE = re.compile(r"NCCL (?:INFO|WARN|TRACE|ABORT)|^\s*$")
_INT = re.compile(r"^-?\d+$")
_WORD = re.compile(r"^[A-Za-z]\w*$")
# dgxtopo collective's closing columns: algo proto nch.
_PROTOCOLS = ("LL", "LL128", "Simple")
# Bytes per element of nccl-tests' type names (src/common.cu, every release since 2018).
_TYPE_BYTES = MappingProxyType({"int8": 1, "uint8": 1, "char": 1, "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
               "half": 2, "bfloat16": 2, "float16": 2, "int32": 4, "uint32": 4, "int": 4, "float": 4,
               "float32": 4, "int64": 8, "uint64": 8, "double": 8, "float64": 8})
# A row's busbw and algbw are printed with two decimals (GB/s): each is off by up to 0.005.
_PRINTED = 0.0051 * GB
# The largest time [us] or bandwidth [GB/s] a row may print: 10^12 us is 11 days per operation,
# 10^12 GB/s a thousand times any link; beyond, the row is not a measurement.
_LARGEST = 1e12
# The most ranks a rank count is inferred for (a larger figure is refused as not a run).
_MAX_RANKS = 1 << 20
#: The most result rows one run may have before it is refused (``max_rows=``; the command line's
#: ``--max-rows``): a sweep by factor 2 from 1 B to 2^62 B has 63; checking a row costs about 0.3 ms.
MAX_ROWS = 4096
# The value columns of one result group, as the column header names them.
_GROUP = ("time", "algbw", "busbw", "error")


def _number(token: str, lineno: int, line: str) -> float:
    if token.upper() == "N/A":
        return math.nan
    try:
        value = float(token)
    except ValueError:
        raise BenchmarkParseError(f"expected a number or N/A, found {token!r}", lineno, line) from None
    if not math.isfinite(value):
        raise BenchmarkParseError(f"expected a finite number, found {token!r}", lineno, line)
    return value


def _whole(token: str, what: str, lineno: int, line: str) -> int:
    value = int(token)
    if value > MAX_NBYTES:
        raise BenchmarkParseError(f"expected a {what} of at most {MAX_NBYTES} (2^62), found a "
                                  f"{len(token)}-digit number", lineno, line)
    return value


def _header_layout(names) -> tuple | None:
    """The column header's names after ``size count type`` as (redop?, root?, groups, skipped),
    or None when it does not read as nccl-tests' header."""
    names = [n.lower() for n in names]
    prefix = []
    while names and names[0] in ("redop", "root"):
        prefix.append(names.pop(0))
    groups, skipped, k = 0, [], 0
    while k < len(names):
        if names[k] == "time":
            groups += 1
            taken = ["time"]
            k += 1
            while k < len(names) and names[k] in ("algbw", "busbw", "error", "#wrong", "wrong"):
                taken.append(names[k])
                k += 1
            if taken[:3] != ["time", "algbw", "busbw"] or len(taken) != 4:
                return None
        else:
            skipped.append(k + len(prefix))
            k += 1
    if groups not in (1, 2):
        return None
    return tuple(prefix), groups, len(names) + len(prefix), tuple(skipped)


def _row(line: str, lineno: int, header=None) -> NcclTestsRow:
    tokens = line.split()
    size, count, dtype, rest = tokens[0], tokens[1], tokens[2], tokens[3:]
    if header is not None and len(rest) == header[2]:
        prefix_names, groups, _, skipped = header
        kept = [t for k, t in enumerate(rest) if k not in skipped]
        nprefix, nvalues = len(prefix_names), 4 * groups
        prefix, values = kept[:nprefix], kept[nprefix:]
    else:
        if (len(rest) >= 7 and rest[-2] in _PROTOCOLS and _INT.match(rest[-1])
                and _WORD.match(rest[-3])):
            rest = rest[:-3] + ["N/A"]  # dgxtopo collective: algo proto nch instead of the error
        # The result groups (time algbw busbw error) are 4 or 8 values; before them 0-2 of
        # redop (a word) and root (an integer). Each token count has one reading.
        layout = {4: (0, 4), 5: (1, 4), 6: (2, 4), 8: (0, 8), 9: (1, 8), 10: (2, 8)}.get(len(rest))
        if layout is None:
            raise BenchmarkParseError(f"expected 7 to 13 columns (size count type [redop] [root] "
                                      f"time algbw busbw error [in-place x 4]), found {len(tokens)}",
                                      lineno, line)
        nprefix, nvalues = layout
        prefix, values = rest[:nprefix], rest[nprefix:]
    redop = root = None
    for token in prefix:
        if _INT.match(token) and root is None:
            root = int(token)
        elif _WORD.match(token) and redop is None and root is None:
            redop = token
        else:
            raise BenchmarkParseError(f"expected a reduction operation then a root rank, found "
                                      f"{token!r}", lineno, line)
    if root is not None and not -1 <= root < _MAX_RANKS:
        raise BenchmarkParseError(f"expected a root rank from -1 to {_MAX_RANKS - 1}, found {root}",
                                  lineno, line)
    numbers = [_number(t, lineno, line) for t in values]
    if any(v < 0 for v in numbers if not math.isnan(v)):
        raise BenchmarkParseError("expected non-negative times and bandwidths", lineno, line)
    if any(v > _LARGEST for v in numbers[:3] + numbers[4:7]):
        raise BenchmarkParseError(f"expected times and bandwidths below {_LARGEST:g} (us, GB/s): "
                                  f"not what a run measures", lineno, line)
    if nvalues == 4:
        numbers += [math.nan] * 4
    time, algbw, busbw, error, itime, ialgbw, ibusbw, ierror = numbers
    return NcclTestsRow(_whole(size, "size", lineno, line), _whole(count, "count", lineno, line), dtype,
                        redop, root, time * us, algbw * GB, busbw * GB, error, itime * us, ialgbw * GB,
                        ibusbw * GB, ierror)


def _reduces(row) -> bool:
    return row.redop not in (None, "none")


def _peers(rows) -> int | None:
    """``size / (count x bytes per element)``, the same for every row with a count (all_gather,
    reduce_scatter and alltoall print the size of every rank's part); None if no row tells or
    the rows disagree."""
    found = set()
    for r in rows:
        width = _TYPE_BYTES.get(r.dtype.lower())
        if not r.count or width is None:
            continue
        ratio, rest = divmod(r.size, r.count * width)
        found.add(ratio if not rest and ratio >= 1 else None)
    return found.pop() if len(found) == 1 else None


def _infer_collective(rows, peers) -> str | None:
    """The collective the columns imply: a root (>= 0) is broadcast or reduce; a size counting
    every rank's part (``peers`` > 1) is reduce_scatter with a reduction, all_gather or alltoall
    without (not told apart: None); a per-rank size with a reduction and no root is all_reduce."""
    first = next((r for r in rows if r.count > 0), None)
    if first is None or not first.size:
        return None
    if first.root is not None and first.root >= 0:
        return "reduce" if _reduces(first) else "broadcast"
    if peers is not None and peers > 1:
        return "reduce_scatter" if _reduces(first) else None
    if peers == 1 and _reduces(first):
        return "all_reduce"
    return None


def _ratio_ranks(rows, factor) -> int | None:
    """The one rank count n whose busbw factor ``factor(n)`` reproduces every row's printed busbw
    from its algbw (within the two printed decimals); None if no row is large enough to tell."""
    usable = [r for r in rows if math.isfinite(r.algbw) and math.isfinite(r.busbw)]
    best = max((r for r in usable if r.algbw > 0), key=lambda r: r.algbw, default=None)
    if best is None or best.busbw <= 0:
        return None

    def fits(n):
        return all(abs(r.algbw * factor(n) - r.busbw) <= _PRINTED * (1 + factor(n)) for r in usable)

    limit = factor(10**9)  # the factor's supremum (2 or 1)
    ratio = best.busbw / best.algbw
    if ratio >= limit:
        return None
    guess = max(2, round(limit / (limit - ratio)))
    candidates = [n for n in range(max(2, guess - 2), guess + 3) if n <= _MAX_RANKS and fits(n)]
    if len(candidates) != 1 or fits(candidates[0] - 1) or fits(candidates[0] + 1):
        return None  # the printed decimals leave more than one rank count
    return candidates[0]


def _rows_ranks(collective, rows, peers) -> tuple:
    """(rank count, how) from the rows alone; (None, why not) when they cannot tell."""
    spec = _MODELLED.get(collective)
    if spec is None:
        return None, "the collective is not known"
    if spec.peers_in_size and peers is not None:
        return peers, "size / count"
    if spec.factor == "1":
        return None, f"{collective}'s busbw equals its algbw (factor 1), so the rows do not tell"
    n = _ratio_ranks(rows, lambda n: busbw_factor(collective, n))
    if n:
        return n, "busbw / algbw"
    return None, ("no row with a count or a busbw to tell" if spec.peers_in_size
                  else "no row with a busbw large enough to tell")


def read_nccl_tests(text: str, *, name: str = "", collective: str | None = None,
                    max_rows: int = MAX_ROWS) -> NcclTestsRun:
    """Parse one nccl-tests output (any layout of the module's list).

    Parameters
    ----------
    text : str
        The output as printed (one run).
    name : str
        Where it came from, for messages.
    collective : str, optional
        The collective, if the text does not name it. A text that names (or whose columns
        imply) another one is refused: a conflict means the wrong file or the wrong option.
    max_rows : int
        The most result rows accepted (:data:`MAX_ROWS`); the text is refused beyond it.

    Returns
    -------
    NcclTestsRun

    Raises
    ------
    BenchmarkParseError
        For a malformed row or header, no rows at all, rows not in the form of one run, a
        text naming runs of several collectives, or a ``collective`` that conflicts with it.
    """
    if not isinstance(text, str):
        raise BenchmarkParseError(f"expected text, received {type(text).__name__}")
    rows, devices, seen_ranks = [], [], set()
    nthreads = gpus = avg = bounds = visible = header = dgxtopo = command = None
    programs: dict = {}
    several_processes = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if _MPI.search(raw):
            several_processes = True
        line = _PREFIX.sub("", raw).rstrip()
        if _NOISE.search(line):
            continue
        for match in _PROGRAM.finditer(line):
            programs.setdefault(match.group(1), lineno)
        if "_perf" in line:
            tail = line[line.index("_perf"):]
            flags = [(m.group(1) if (m := pattern.search(tail)) else None) for pattern in (_FLAG_THREADS, _FLAG_GPUS)]
            command = (int(flags[0] or 1), int(flags[1] or 1)) if any(flags) else command
        if visible is None and (match := _VISIBLE.search(line)):
            visible = tuple(int(v) for v in match.group(1).split(",") if v)
        if line.lstrip().startswith("#"):
            stripped = line.strip()
            if match := _HEADER.search(line):
                if nthreads is not None and (nthreads, gpus) != (int(match.group(1)), int(match.group(2))):
                    several_processes = True
                nthreads, gpus = int(match.group(1)), int(match.group(2))
            elif match := _DEVICE.match(stripped):
                rank, group, pid, host, device, bus, model = match.groups()
                if int(rank) not in seen_ranks:  # a rank printed by several processes counts once
                    seen_ranks.add(int(rank))
                    devices.append(Device(int(rank), host, int(device), model, bus,
                                          None if pid is None else int(pid),
                                          None if group is None else int(group)))
            elif match := _AVG.match(stripped):
                avg = _number(match.group(1), lineno, line) * GB
            elif match := _BOUNDS.match(stripped):
                bounds = match.group(1)
            elif match := _DGXTOPO.match(stripped):
                dgxtopo = (match.group(1), match.group(2), int(match.group(3)))
            elif match := _COLUMNS.match(stripped):
                header = _header_layout(match.group(1).split())
            continue
        if _ROW.match(line):
            if len(rows) >= max_rows:
                raise BenchmarkParseError(f"{name or 'the text'} has more than {max_rows} result rows, "
                                          f"the limit: raise it with max_rows= (each row is an estimate)",
                                          lineno, line)
            rows.append(_row(line, lineno, header))
    where = f" in {name}" if name else ""
    if not rows:
        raise BenchmarkParseError(f"expected nccl-tests result rows (size count type ... time "
                                  f"algbw busbw), found none{where}")
    if len({d.pid for d in devices if d.pid is not None}) > 1 or len({d.host for d in devices}) > 1:
        several_processes = True
    if nthreads is None and command is not None:  # no header: the command line's -t and -g
        nthreads, gpus = command
    if dgxtopo is not None:
        programs.setdefault(dgxtopo[0], 0)
    named = sorted(programs, key=programs.get)
    if len(named) > 1:
        raise BenchmarkParseError(f"expected the output of one run, found runs of "
                                  f"{', '.join(named)}{where}: give each run its own file")
    program = named[0] if named else None
    peers = _peers(rows)
    if program is not None:
        found, source = (program if program in _MODELLED else None), "program"
    else:
        found, source = _infer_collective(rows, peers), "columns"
    if collective is not None:
        if collective not in _MODELLED:
            raise BenchmarkParseError(f"unknown collective {collective!r}: expected one of "
                                      f"{', '.join(_MODELLED)}")
        label = name or "the text"
        if program is not None and program != collective:
            raise BenchmarkParseError(f"{label} names {program} ({program}_perf), collective= is "
                                      f"{collective}: expected the same (or collective= left out)")
        if found is not None and found != collective:
            raise BenchmarkParseError(f"the columns of {label} are those of {found} (a root, a "
                                      f"reduction and the size per rank tell), collective= is "
                                      f"{collective}: expected the same (or collective= left out)")
        found, source = collective, "program" if program is not None else "caller"
    if dgxtopo is not None:
        ranks, how = dgxtopo[2], "dgxtopo header"
    else:
        ranks, how = _rows_ranks(found, rows, peers) if found else (None, "the collective is not known")
    if ranks is None and nthreads and gpus and not several_processes and not devices:
        ranks, how = nthreads * gpus, "nThread x nGpus of the one process"
        if nthreads * gpus > _MAX_RANKS:
            ranks = None
    return NcclTestsRun(found, tuple(rows), tuple(devices), nthreads, gpus, avg, bounds, visible, name,
                        program=program, ranks=ranks, ranks_source=how if ranks is not None else f"unknown: {how}",
                        gpu_ids=dgxtopo[1] if dgxtopo else None,
                        collective_source=source if found is not None else "")


@dataclass(frozen=True, slots=True)
class P2PDevice:
    """One ``Device: i, NAME, pciBusID: ...`` line of p2pBandwidthLatencyTest."""

    index: int
    name: str
    pci_bus: int | None = None


@dataclass(frozen=True, slots=True)
class P2PBenchmark:
    """A parsed p2pBandwidthLatencyTest output.

    Attributes
    ----------
    devices : tuple of P2PDevice
    connectivity : numpy.ndarray or None
        ``P2P Connectivity Matrix``: True where peer access works.
    bandwidth : dict
        ``(direction, p2p) -> matrix`` with direction ``"unidirectional"`` or
        ``"bidirectional"`` and p2p ``"enabled"``/``"disabled"``; per-direction sums as the
        test prints them. [B/s]
    latency : dict
        ``(p2p, side) -> matrix`` with side ``"gpu"`` or ``"cpu"``. [s]
    name : str
    """

    devices: tuple
    connectivity: object
    bandwidth: dict
    latency: dict
    name: str = ""

    def to_records(self) -> list:
        """Tidy rows, one per setting of peer access and (source, destination) pair, the
        diagonal included, in row-major order (:mod:`models.engine.results` names the columns):
        P2P=Enabled first, then P2P=Disabled, each where the output prints a matrix of it (with
        neither, as for a connectivity matrix alone: one set of rows with ``p2p`` None).

        Columns: ``name``, ``p2p`` (bool: the setting), ``src``, ``dst`` (device indices),
        ``connected`` (the connectivity matrix's entry; None without it),
        ``unidirectional_Bps``, ``bidirectional_Bps`` [B/s], ``latency_s`` (the GPU latency)
        and ``cpu_latency_s`` [s]; NaN where the output has no such matrix. ``p2p``, ``src``,
        ``dst`` and the value columns are named as in
        :meth:`models.predict.p2p.P2PReport.to_records`, so measured and predicted rows merge
        on ``(p2p, src, dst)`` (once the test's device indices are mapped to the fabric's GPU ids,
        where they differ).

        Examples
        --------
        >>> b = read_p2p_benchmark(
        ...     "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)\\n"
        ...     "   D\\\\D     0      1\\n"
        ...     "     0 784.87  48.49\\n"
        ...     "     1  48.49 785.00\\n")
        >>> [(r["p2p"], r["src"], r["dst"], r["bidirectional_Bps"] / 1e9) for r in b.to_records()]
        [(True, 0, 0, 784.87), (True, 0, 1, 48.49), (True, 1, 0, 48.49), (True, 1, 1, 785.0)]
        """
        matrices = list(self.bandwidth.values()) + list(self.latency.values())
        if self.connectivity is not None:
            matrices.append(np.asarray(self.connectivity))
        n = matrices[0].shape[0] if matrices else 0
        printed = {p for _, p in self.bandwidth} | {p for p, _ in self.latency}
        settings: list[str | None] = [p for p in ("enabled", "disabled") if p in printed] or [None]
        pairs = n * n
        missing = [math.nan] * pairs

        def values(table, key):
            return np.ravel(table[key]).tolist() if key in table else missing

        columns: dict = {key: [] for key in ("p2p", "src", "dst", "connected", "unidirectional_Bps",
                                             "bidirectional_Bps", "latency_s", "cpu_latency_s")}
        for p in settings:
            columns["p2p"] += [None if p is None else p == "enabled"] * pairs
            columns["src"] += np.repeat(np.arange(n), n).tolist()
            columns["dst"] += np.tile(np.arange(n), n).tolist()
            columns["connected"] += ([None] * pairs if self.connectivity is None
                                     else np.ravel(self.connectivity).astype(bool).tolist())
            columns["unidirectional_Bps"] += values(self.bandwidth, ("unidirectional", p))
            columns["bidirectional_Bps"] += values(self.bandwidth, ("bidirectional", p))
            columns["latency_s"] += values(self.latency, (p, "gpu"))
            columns["cpu_latency_s"] += values(self.latency, (p, "cpu"))
        return tidy_records({"name": self.name, **columns}) if n else []


_P2P_BW = re.compile(r"^(Unidirectional|Bidirectional)\s+P2P=(Enabled|Disabled)\s+Bandwidth.*Matrix"
                     r"\s*\(GB/s\)", re.IGNORECASE)
_P2P_LAT = re.compile(r"^P2P=(Enabled|Disabled)\s+Latency.*Matrix\s*\(us\)", re.IGNORECASE)
_P2P_CONN = re.compile(r"^P2P Connectivity Matrix", re.IGNORECASE)
_P2P_DEV = re.compile(r"^Device:\s*(\d+),\s*([^,]+?)\s*(?:,\s*pciBusID:\s*([0-9a-fA-F]+))?\s*(?:,|$)")
_P2P_HEAD = re.compile(r"^\s*(D\\D|GPU|CPU)((?:\s+\d+)+)\s*$")


def _matrix(lines, i, title_line):
    """The matrix whose header is the next non-blank line at or after ``i``: (side, matrix, next)."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or not (match := _P2P_HEAD.match(lines[i])):
        raise BenchmarkParseError(f"expected a matrix header (D\\D, GPU or CPU then 0 1 2 ...) "
                                  f"after the title on line {title_line}", i + 1 if i < len(lines) else None,
                                  lines[i] if i < len(lines) else None)
    side = {"D\\D": "gpu"}.get(match.group(1), match.group(1).lower())
    n = len(match.group(2).split())
    if [int(v) for v in match.group(2).split()] != list(range(n)):
        raise BenchmarkParseError("expected device indices 0, 1, 2... in the header", i + 1, lines[i])
    rows = []
    for k in range(n):
        j = i + 1 + k
        if j >= len(lines):
            raise BenchmarkParseError(f"expected {n} rows in the matrix of line {i + 1}, found {k}")
        tokens = lines[j].split()
        if not tokens or tokens[0] != str(k):
            raise BenchmarkParseError(f"expected row {k} of the matrix of line {i + 1}", j + 1, lines[j])
        values = [_number(t, j + 1, lines[j]) for t in tokens[1:]]
        if len(values) != n:
            raise BenchmarkParseError(f"expected {n} values, found {len(values)}", j + 1, lines[j])
        if any(v < 0 for v in values):
            raise BenchmarkParseError("expected non-negative values", j + 1, lines[j])
        rows.append(values)
    return side, np.array(rows, dtype=float).reshape(n, n), i + 1 + n


def read_p2p_benchmark(text: str, *, name: str = "") -> P2PBenchmark:
    """Parse one p2pBandwidthLatencyTest output (CUDA samples; every matrix it prints).

    Parameters
    ----------
    text : str
    name : str
        Where it came from, for messages.

    Returns
    -------
    P2PBenchmark

    Raises
    ------
    BenchmarkParseError
        For a malformed matrix (wrong width, a non-number, rows out of order), matrices of
        different sizes, or no matrix at all.
    """
    if not isinstance(text, str):
        raise BenchmarkParseError(f"expected text, received {type(text).__name__}")
    lines = [_PREFIX.sub("", ln).rstrip() for ln in text.splitlines()]
    devices, bandwidth, latency = [], {}, {}
    connectivity = None
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if match := _P2P_DEV.match(stripped):
            devices.append(P2PDevice(int(match.group(1)), match.group(2),
                                     None if match.group(3) is None else int(match.group(3), 16)))
        elif match := _P2P_BW.match(stripped):
            _, matrix, i = _matrix(lines, i + 1, i + 1)
            bandwidth[(match.group(1).lower(), match.group(2).lower())] = matrix * GB
            continue
        elif match := _P2P_LAT.match(stripped):
            title = i + 1
            side, matrix, i = _matrix(lines, i + 1, title)
            latency[(match.group(1).lower(), side)] = matrix * us
            k = i
            while k < len(lines) and not lines[k].strip():
                k += 1
            if k < len(lines) and (head := _P2P_HEAD.match(lines[k])) and head.group(1) == "CPU":
                side, matrix, i = _matrix(lines, k, title)
                latency[(match.group(1).lower(), side)] = matrix * us
            continue
        elif _P2P_CONN.match(stripped):
            _, matrix, i = _matrix(lines, i + 1, i + 1)
            connectivity = matrix != 0
            continue
        i += 1
    if not bandwidth and not latency and connectivity is None:
        raise BenchmarkParseError(f"expected p2pBandwidthLatencyTest matrices, found none"
                                  f"{' in ' + name if name else ''}")
    shapes = {m.shape for m in list(bandwidth.values()) + list(latency.values())}
    if connectivity is not None:
        shapes.add(connectivity.shape)
    if len(shapes) > 1:
        raise BenchmarkParseError(f"expected matrices of one size, found {sorted(shapes)}")
    for m in list(bandwidth.values()) + list(latency.values()):
        m.setflags(write=False)
    return P2PBenchmark(tuple(devices), connectivity, bandwidth, latency, name)


def read_benchmark(text: str, *, name: str = "", collective: str | None = None,
                   max_rows: int = MAX_ROWS) -> NcclTestsRun | P2PBenchmark:
    """Parse either kind of output, told apart by its content (``collective``: as for
    :func:`read_nccl_tests`).

    Returns
    -------
    NcclTestsRun or P2PBenchmark

    Raises
    ------
    BenchmarkParseError
    """
    if not isinstance(text, str):
        raise BenchmarkParseError(f"expected text, received {type(text).__name__}")
    if "P2P=" in text or "P2P Connectivity Matrix" in text:
        return read_p2p_benchmark(text, name=name)
    return read_nccl_tests(text, name=name, collective=collective, max_rows=max_rows)
