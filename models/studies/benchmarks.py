"""Read what benchmarks printed: nccl-tests and p2pBandwidthLatencyTest outputs.

Both parsers take the text as printed (a log file may also hold NCCL INFO lines, mpirun
prefixes, shell echo) and return frozen dataclasses in SI units (bytes, seconds, B/s).
Anything that looks like a result but does not parse raises :class:`BenchmarkParseError`
naming the line; nothing else escapes.

nccl-tests layouts accepted (NVIDIA/nccl-tests, 2018 to today): rows ``size count type
[redop] [root] time algbw busbw error|#wrong [time algbw busbw error|#wrong]``, with ``N/A``
where a value is not available; the ``# nThread .. nGpus ..`` header; device lines
``#  Rank  0 [Group  0] [Pid 123] on HOST device  0 [0x07] NAME`` (one per rank, several hosts
over MPI); ``# Out of bounds values`` and ``# Avg bus bandwidth`` closing lines; ``Running:``,
``# Collective test starting:`` and ``*_perf`` command lines that name the collective.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from topo.errors import DgxTopoError
from topo.units import GB, us

__all__ = [
    "BenchmarkParseError", "Device", "NcclTestsRow", "NcclTestsRun", "read_nccl_tests",
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

    @property
    def nranks(self) -> int | None:
        """Ranks: the device lines, else threads x GPUs of the one process; None if unknown."""
        if self.devices:
            return len(self.devices)
        if self.nthreads and self.gpus_per_thread:
            return self.nthreads * self.gpus_per_thread
        return None

    @property
    def hosts(self) -> tuple:
        """Host names of the devices, in order of first appearance."""
        return tuple(dict.fromkeys(d.host for d in self.devices))

    def column(self, name: str) -> np.ndarray:
        """One field of every row as an array (``"size"``, ``"time"``, ``"busbw"``...)."""
        return np.array([getattr(r, name) for r in self.rows], dtype=float)


_PREFIX = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")  # mpirun --tag-output
_HEADER = re.compile(r"nThread\s+(\d+)\s+nGpus\s+(\d+)")
_DEVICE = re.compile(r"^#\s*Rank\s+(\d+)(?:\s+Group\s+(\d+))?(?:\s+Pid\s+(\d+))?\s+on\s+(\S+)\s+"
                     r"device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$")
_PROGRAM = re.compile(r"\b(" + "|".join(_COLLECTIVES) + r")_perf\b")
_VISIBLE = re.compile(r"CUDA_VISIBLE_DEVICES=([0-9,]+)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(.*?)\s*$")
_ROW = re.compile(r"^\s*\d+\s+\d+\s+[A-Za-z]")
_NOISE = re.compile(r"NCCL (?:INFO|WARN|TRACE|ABORT)|^\s*$")
_INT = re.compile(r"^-?\d+$")


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


def _row(line: str, lineno: int) -> NcclTestsRow:
    tokens = line.split()
    size, count, dtype, rest = tokens[0], tokens[1], tokens[2], tokens[3:]
    # The result groups (time algbw busbw error) are 4 or 8 values; before them 0-2 of redop
    # (a word) and root (an integer). Each token count has one reading.
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
        elif re.match(r"^[A-Za-z]\w*$", token) and redop is None and root is None:
            redop = token
        else:
            raise BenchmarkParseError(f"expected a reduction operation then a root rank, found "
                                      f"{token!r}", lineno, line)
    numbers = [_number(t, lineno, line) for t in values]
    if any(v < 0 for v in numbers if not math.isnan(v)):
        raise BenchmarkParseError("expected non-negative times and bandwidths", lineno, line)
    if nvalues == 4:
        numbers += [math.nan] * 4
    time, algbw, busbw, error, itime, ialgbw, ibusbw, ierror = numbers
    return NcclTestsRow(int(size), int(count), dtype, redop, root, time * us, algbw * GB, busbw * GB,
                        error, itime * us, ialgbw * GB, ibusbw * GB, ierror)


def _infer_collective(rows, nranks) -> str | None:
    first = next((r for r in rows if r.count > 0), None)
    if first is None or not first.size:
        return None
    width = first.size / first.count  # bytes per element x (ranks for the total-size collectives)
    sized = {"float": 4, "int32": 4, "uint32": 4, "half": 2, "bfloat16": 2, "double": 8,
             "int64": 8, "uint64": 8, "int8": 1, "uint8": 1}.get(first.dtype)
    per_rank = sized is not None and math.isclose(width, sized)
    if first.root is not None and first.root >= 0:
        return "reduce" if first.redop not in (None, "none") else "broadcast"
    if per_rank:
        return "all_reduce" if first.redop not in (None, "none") else None
    if first.redop not in (None, "none"):
        return "reduce_scatter"
    return "all_gather" if nranks else None


def read_nccl_tests(text: str, *, name: str = "", collective: str | None = None) -> NcclTestsRun:
    """Parse one nccl-tests output.

    Parameters
    ----------
    text : str
        The output as printed (one run).
    name : str
        Where it came from, for messages.
    collective : str, optional
        The collective, if the text does not name it.

    Returns
    -------
    NcclTestsRun

    Raises
    ------
    BenchmarkParseError
        For a malformed row or header, no rows at all, or rows not in the form of one run.
    """
    if not isinstance(text, str):
        raise BenchmarkParseError(f"expected text, received {type(text).__name__}")
    rows, devices = [], []
    nthreads = gpus = avg = bounds = visible = None
    program = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = _PREFIX.sub("", raw).rstrip()
        if _NOISE.search(line):
            continue
        if program is None and (match := _PROGRAM.search(line)):
            program = match.group(1)
        if visible is None and (match := _VISIBLE.search(line)):
            visible = tuple(int(v) for v in match.group(1).split(",") if v)
        if line.lstrip().startswith("#"):
            if match := _HEADER.search(line):
                nthreads, gpus = int(match.group(1)), int(match.group(2))
            elif match := _DEVICE.match(line.strip()):
                rank, group, pid, host, device, bus, model = match.groups()
                devices.append(Device(int(rank), host, int(device), model, bus,
                                      None if pid is None else int(pid),
                                      None if group is None else int(group)))
            elif match := _AVG.match(line.strip()):
                avg = _number(match.group(1), lineno, line) * GB
            elif match := _BOUNDS.match(line.strip()):
                bounds = match.group(1)
            continue
        if _ROW.match(line):
            rows.append(_row(line, lineno))
    if not rows:
        raise BenchmarkParseError(f"expected nccl-tests result rows (size count type ... time "
                                  f"algbw busbw), found none{' in ' + name if name else ''}")
    nranks = len(devices) or (nthreads * gpus if nthreads and gpus else None)
    coll = collective or program or _infer_collective(rows, nranks)
    return NcclTestsRun(coll, tuple(rows), tuple(devices), nthreads, gpus, avg, bounds, visible, name)


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


def read_benchmark(text: str, *, name: str = ""):
    """Parse either kind of output, told apart by its content.

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
    return read_nccl_tests(text, name=name)
