"""What the command line prints as text: the table of every command.

The display edge: values arrive in SI (bytes, seconds, B/s) and leave in the units the familiar
tools print (GB/s = 1e9 B/s, microseconds), through :mod:`models.present.format`. Every
function returns the text without a trailing newline. The JSON shapes are in
:mod:`models.present.json_shapes`, the ``--explain`` working in :mod:`models.present.explain`.

Examples
--------
>>> print(format_table(["system", "GPUs"], [["dgx1", "8"], ["dgx2", "16"]], align="<>"))
system  GPUs
dgx1       8
dgx2      16
>>> format_gpu_ids(range(256)), format_gpu_ids([0, 1, 2, 3, 5, 8, 9])
('0-255', '0-3,5,8,9')
"""

from __future__ import annotations

import math
import textwrap
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from topo.select import format_gpu_ids
from topo.units import to_GBps, to_us

from .format import format_bytes, format_gbps, format_percent

if TYPE_CHECKING:  # the calibration module (and what it imports) only when a caveat is worded
    from ..studies.calibration import Caveat

__all__ = ["format_table", "format_gpu_ids", "package_version",
           "systems_table", "collective_table", "pairs_table", "subsets_table", "compare_table",
           "import_summary", "measurement_note", "format_p2p_report", "check_table",
           "calibration_table", "caveat_text", "caveat_texts", "simulation_table",
           "NCCL_TESTS_ROOT", "NCCL_TESTS_REDOP"]

# nccl-tests' root column: the root rank for rooted collectives, -1 otherwise.
NCCL_TESTS_ROOT = MappingProxyType({"broadcast": 0, "reduce": 0})
# nccl-tests' redop column: sum for the reductions (the CLI models float32 sum), none otherwise.
NCCL_TESTS_REDOP = MappingProxyType({"all_reduce": "sum", "reduce_scatter": "sum", "reduce": "sum"})


def package_version() -> str:
    """The dgx-topo version (:data:`topo.version.__version__`, what pyproject.toml installs)."""
    from topo.version import __version__
    return __version__


def format_table(headers, rows, *, align: str | None = None, gap: int = 2) -> str:
    """Columns as wide as their widest cell, separated by ``gap`` spaces.

    Parameters
    ----------
    headers : sequence of str
    rows : sequence of sequence of str
    align : str, optional
        One character per column, ``"<"`` (left) or ``">"`` (right); default all left.
    gap : int
        Spaces between columns.

    Returns
    -------
    str
        The table, without trailing spaces.
    """
    align = align or "<" * len(headers)
    table = [list(map(str, headers))] + [list(map(str, r)) for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(headers))]
    lines = []
    for row in table:
        cells = [c.ljust(w) if a == "<" else c.rjust(w) for c, w, a in zip(row, widths, align)]
        lines.append((" " * gap).join(cells).rstrip())
    return "\n".join(lines)


def _each(value) -> np.ndarray:
    """A per-size field as a 1-d array, whether the estimate holds a scalar or an array."""
    return np.atleast_1d(np.asarray(value))


# ------------------------------------------------------------------------------ systems
def systems_table(summaries) -> str:
    """``dgxtopo systems``: one row per system, GB/s per direction."""
    headers = ["system", "name", "GPUs", "GPU model", "NVLink links", "NVSwitches", "NICs",
               "NVLink/GPU (GB/s)", "bisection (GB/s)"]
    rows = [[s.system, s.name, s.gpus, ", ".join(s.gpu_models), s.nvlink_links, s.nvswitches,
             s.nics, format_gbps(s.injection, 1), format_gbps(s.bisection, 1)] for s in summaries]
    return (format_table(headers, rows, align="<<><>>>>>")
            + "\n\nBandwidths are line rates per direction; bisection counts NVLink only.")


# --------------------------------------------------------------------------- collective
def measurement_note(gpus_per_thread: int = 1, calibration: str | None = None) -> str:
    """How the measured time was predicted, for a table's header: nccl-tests' ``-g`` when one
    thread drives several GPUs, and which measurement constants (:mod:`models.predict.measure`).

    >>> measurement_note(), measurement_note(12, "cal.json")
    ('measurement constants: default (DGX-2 fit)', '-g 12; measurement constants: cal.json')
    """
    g = f"-g {int(gpus_per_thread)}; " if gpus_per_thread and int(gpus_per_thread) > 1 else ""
    return g + "measurement constants: " + (calibration if calibration else "default (DGX-2 fit)")


def _time_us(seconds) -> str:
    """A time in microseconds with two decimals; beyond 10^10 us (a link slowed a billionfold) in
    powers of ten, so that a column never holds a 300-digit number."""
    value = to_us(seconds)
    return f"{value:.2f}" if abs(value) < 1e10 else f"{value:.3e}"


def collective_table(G, e, counts, *, explain: bool = False, measurement: str = "") -> str:
    """``dgxtopo collective``: nccl-tests' columns (float32, sum) plus NCCL's choice.

    ``counts`` are nccl-tests' element counts of the sizes in ``e.nbytes``; ``measurement``
    (:func:`measurement_note`) closes the header line.
    """
    coll = e.collective
    lines = [f"# dgxtopo: predicted nccl-tests {coll} on {G.graph['name']} GPUs "
             f"{format_gpu_ids(e.gpus)} ({e.nranks} ranks); {e.model}"
             + (f"; {measurement}" if measurement else ""),
             f"# {'size':>10}  {'count':>12}  {'type':>6}  {'redop':>6}  {'root':>5}  {'time':>9}  "
             f"{'algbw':>7}  {'busbw':>7}  {'algo':>5}  {'proto':>6}  {'nch':>3}",
             f"# {'(B)':>10}  {'(elements)':>12}  {'':>6}  {'':>6}  {'':>5}  {'(us)':>9}  "
             f"{'(GB/s)':>7}  {'(GB/s)':>7}"]
    root = NCCL_TESTS_ROOT.get(coll, -1)
    redop = NCCL_TESTS_REDOP.get(coll, "none")
    busbw = _each(e.busbw)
    for size, count, t, a, b, al, pr, nc in zip(_each(e.nbytes), _each(counts), _each(e.time),
                                                  _each(e.algbw), busbw, _each(e.algorithm),
                                                  _each(e.protocol), _each(e.nchannels)):
        lines.append(f"  {int(size):>10}  {int(count):>12}  {'float':>6}  {redop:>6}  {root:>5}  "
                     f"{_time_us(t):>9}  {to_GBps(a):>7.2f}  {to_GBps(b):>7.2f}  {al:>5}  {pr:>6}  "
                     f"{int(nc):>3}")
    lines.append(f"# Avg bus bandwidth    : {to_GBps(float(np.mean(busbw))):.4g}")
    if explain:
        from .explain import explain_estimate  # the explain records' imports: only when asked for
        lines += ["", explain_estimate(e)]
    return "\n".join(lines)


# -------------------------------------------------------------------------------- pairs
def _matrix_table(matrix) -> str:
    n = len(matrix)
    headers = ["GPU"] + [str(j) for j in range(n)]
    rows = [[str(i)] + ["-" if math.isnan(v) else format_gbps(v) for v in row] for i, row in enumerate(matrix)]
    return format_table(headers, rows, align=">" * (n + 1))


def pairs_table(G, collective: str, nbytes: int, matrix, bounds=None) -> str:
    """``dgxtopo pairs``: the busbw matrix of every 2-GPU communicator (``-`` on the diagonal),
    and with ``bounds`` the bound matrix and NCCL's share of it."""
    text = (f"Predicted {collective} busbw (GB/s) of every GPU pair on {G.graph['name']} at {nbytes} B\n"
            + _matrix_table(matrix))
    if bounds is None:
        return text
    share = np.asarray(matrix) / np.where(np.asarray(bounds) > 0, bounds, np.nan)
    lo, hi = np.nanmin(share), np.nanmax(share)
    return (text + "\n\nBound (GB/s): the most any schedule could reach on each pair (bandwidth only)\n"
            + _matrix_table(bounds)
            + f"\n\nNCCL gets {format_percent(lo, 0)} to {format_percent(hi, 0)} of the busbw this fabric "
              f"allows a pair")


# ------------------------------------------------------------------------------ subsets
def subsets_table(G, collective: str, k: int, nbytes: int, ranking, shown, bounds=None) -> str:
    """``dgxtopo subsets``: the sets shown, ranked by busbw; with ``bounds`` (GPU ids -> bound
    busbw [B/s]) two more columns, the bound and NCCL's share of it."""
    top = "" if len(shown) == len(ranking) else f" (top {len(shown)})"
    headers = ["rank", "GPUs", "busbw (GB/s)", "algbw (GB/s)", "time (us)", "algo", "proto", "nch"]
    align = "><>>><<>"
    if bounds is not None:
        headers += ["bound (GB/s)", "NCCL/bound"]
        align += ">>"
    rows = []
    for i, r in enumerate(shown):
        row = [i + 1, format_gpu_ids(r.gpus), format_gbps(r.busbw), format_gbps(r.algbw), f"{to_us(r.time):.2f}",
               r.algorithm, r.protocol, r.nchannels]
        if bounds is not None:
            b = bounds[tuple(r.gpus)]
            row += [format_gbps(b), format_percent(r.busbw / b, 0) if b > 0 else "-"]
        rows.append(row)
    text = (f"{len(ranking)} sets of {k} GPUs on {G.graph['name']}, ranked by predicted "
            f"{collective} busbw at {nbytes} B{top}\n" + format_table(headers, rows, align=align))
    if bounds is not None:
        text += ("\nbound: the most busbw any schedule could reach on the set (bandwidth only, "
                 "dgxtopo bound); NCCL/bound: NCCL gets that share of what the fabric allows")
    return text


# ------------------------------------------------------------------------------ compare
def compare_table(collective: str, ngpus: int, names, estimates) -> str:
    """``dgxtopo compare``: time, busbw and NCCL's choice per size and system, and the faster."""
    title = f"Predicted {collective} on {ngpus} GPUs: " + " vs ".join(
        f"{name} ({e.model})" for name, e in zip(names, estimates))
    headers = ["size (B)"]
    for name in names:
        headers += [f"{name} time (us)", f"{name} busbw (GB/s)", "algo/proto"]
    headers.append("faster")
    rows = []
    for i, size in enumerate(_each(estimates[0].nbytes)):
        row, times = [str(int(size))], []
        for e in estimates:
            t = float(_each(e.time)[i])
            times.append(t)
            row += [f"{to_us(t):.2f}", format_gbps(_each(e.busbw)[i]),
                    f"{_each(e.algorithm)[i]}/{_each(e.protocol)[i]}"]
        order = np.argsort(times)
        ratio = times[order[1]] / times[order[0]] if len(times) > 1 else 1.0
        row.append(f"{names[order[0]]} x{ratio:.2f}")
        rows.append(row)
    return title + "\n" + format_table(headers, rows, align=">" + ">><" * len(names) + "<")


# ------------------------------------------------------------------------------- import
def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else plural or word + 's'}"


def import_summary(G, *, source: str, what: str, nvswitch_origin: str, pcie_origin: str,
                   out: str | None) -> str:
    """``dgxtopo import``: one paragraph on what was imported, wrapped at 79 columns.

    Parameters
    ----------
    G : networkx.DiGraph
        The imported fabric.
    source : str
        The file read.
    what : str
        Its format as people name it (``"nvidia-smi topo -m"``, ``"an NCCL topology XML"``).
    nvswitch_origin, pcie_origin : str
        How the NVSwitches and PCIe switches came about (``"inferred from the NV# counts"``).
    out : str or None
        The file written, or None when nothing was written.
    """
    nodes = dict(G.nodes(data=True))
    gpus = sorted((n for n, d in nodes.items() if d["kind"] == "gpu"),
                  key=lambda n: (nodes[n].get("host", 0), nodes[n].get("index", 0)))
    models = sorted({str(nodes[n].get("model", "?")) for n in gpus})
    bundles = [(u, v, d) for u, v, d in G.edges(data=True) if d["kind"] == "nvlink" and str(u) < str(v)]
    gpu_gpu = [d for u, v, d in bundles if nodes[u]["kind"] == "gpu" and nodes[v]["kind"] == "gpu"]
    switches = [n for n, d in nodes.items() if d["kind"] == "nvswitch"]
    links = sum(d.get("links", 1) for *_, d in bundles)
    by_count: dict[int, int] = {}
    for d in gpu_gpu:
        by_count[d.get("links", 1)] = by_count.get(d.get("links", 1), 0) + 1
    mix = ", ".join(f"{c} x NV{k}" for k, c in sorted(by_count.items(), reverse=True))
    hosts = sorted({nodes[n].get("host", 0) for n in gpus})
    nics = [n for n, d in nodes.items() if d["kind"] == "nic" and d.get("host", 0) == hosts[0]]
    ports = sorted({str(nodes[n]["port_link"]) for n in nics if nodes[n].get("port_link")})
    sockets = sum(1 for d in nodes.values() if d["kind"] == "cpu")
    pcie = sum(1 for d in nodes.values() if d["kind"] == "pcie_switch")
    nvlink = f"{_plural(len(bundles), 'NVLink bundle')} ({_plural(links, 'link')}"
    nvlink += f"; GPU pairs {mix})" if mix else ")"
    if switches:
        nvswitches = f"{_plural(len(switches), 'NVSwitch', 'NVSwitches')} ({nvswitch_origin})"
    else:
        nvswitches = f"no NVSwitch ({nvswitch_origin})"
    nic_text = _plural(len(nics), "NIC") + (" per host" if len(hosts) > 1 else "")
    if nics:
        nic_text += (f" ({', '.join(str(nodes[n].get('name', n)) for n in nics)}"
                     + (f"; ports {', '.join(ports)})" if ports else "; no network port)"))
    first = [n for n in gpus if nodes[n].get("host", 0) == hosts[0]]
    ids = format_gpu_ids(nodes[n].get("index", 0) for n in first)
    text = (f"Imported {source} ({what}) as {G.graph.get('name', '?')}: "
            f"{_plural(len(gpus), 'GPU')} {', '.join(models)} "
            + (f"(GPU ids {ids}); " if len(hosts) == 1 else f"({len(hosts)} hosts of GPU ids {ids}); ")
            + f"{nvlink}; {nvswitches}; "
            f"{_plural(pcie, 'PCIe switch', 'PCIe switches')} ({pcie_origin}); "
            f"{_plural(sockets, 'CPU socket')}; {nic_text}. "
            + (f"{G.graph['inferred']}. " if G.graph.get("inferred") else "")
            + (f"Wrote {out}." if out is not None else "Nothing written (pass --out FILE to write the fabric)."))
    return textwrap.fill(text, 79, break_on_hyphens=False, break_long_words=False)


# -------------------------------------------------------------------------------- gpus


# ---------------------------------------------------------------------------------- p2p
def _layout(title: str, corner: str, ids, matrix, cell) -> list:
    """One matrix as p2pBandwidthLatencyTest prints it: ``%6d`` labels, ``%6.02f`` cells."""
    lines = [title, f"{corner:>6} " + "".join(f"{i:6d} " for i in ids).rstrip()]
    for i, row in zip(ids, matrix.tolist()):  # Python floats and strings: faster to format
        lines.append((f"{i:6d} " + "".join(f"{cell(x):>6} " for x in row)).rstrip())
    return lines


def format_p2p_report(report, *, bidirectional: bool = False, latency: bool = False) -> str:
    """``dgxtopo p2p``: a :class:`models.predict.p2p.P2PReport` laid out as
    p2pBandwidthLatencyTest prints its matrices (GB/s, µs).

    Parameters
    ----------
    report : models.predict.p2p.P2PReport
    bidirectional : bool
        Print the bidirectional bandwidth matrix instead of the unidirectional one.
    latency : bool
        Also print the latency matrix.

    Returns
    -------
    str

    Examples
    --------
    >>> from topo import dgx1v
    >>> from models.predict.p2p import p2p_report
    >>> print(format_p2p_report(p2p_report(dgx1v(), "0,3,5"), bidirectional=True))
    Path Type (NCCL) Matrix
       D\\D      0      3      5
         0    LOC    NVL    SYS
         3    NVL    LOC    SYS
         5    SYS    SYS    LOC
    <BLANKLINE>
    Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)
       D\\D      0      3      5
         0 784.89  97.06  14.42
         3  97.06 784.89  14.42
         5  14.42  14.42 784.89
    <BLANKLINE>
    Predicted for DGX-1V (mode route, P2P enabled): NVLink from its signalling rate and packet
    format, staged copies and HBM fitted to a DGX-1V p2pBandwidthLatencyTest row. PHB and SYS
    pairs (every pair with P2P disabled) are staged through host memory.
    Diagonal: device-local copy (HBM, read and write counted).
    """
    def number(convert):
        return lambda x: "n/a" if math.isnan(x) else f"{convert(x):6.02f}"

    direction = "Bidirectional" if bidirectional else "Unidirectional"
    access = "P2P=Enabled" if report.p2p else "P2P=Disabled"
    kind = access if report.mode == "route" else "NVLink Max-Flow"
    lines = _layout("Path Type (NCCL) Matrix", "D\\D", report.gpus, report.path_type, str)
    lines.append("")
    lines += _layout(f"{direction} {kind} Bandwidth Matrix (GB/s)", "D\\D", report.gpus,
                     report.bidirectional if bidirectional else report.unidirectional,
                     number(to_GBps))
    if latency:
        lines.append("")
        title = ("P2P=Enabled Latency (P2P Writes) Matrix (us)" if report.p2p
                 else "P2P=Disabled Latency Matrix (us)")
        lines += _layout(title, "GPU", report.gpus, report.latency, number(to_us))
    lines += ["", f"Predicted for {report.name} (mode {report.mode}, P2P "
              f"{'enabled' if report.p2p else 'disabled'}): NVLink from its signalling rate "
              f"and packet", "format, staged copies and HBM fitted to a DGX-1V "
              "p2pBandwidthLatencyTest row. PHB and SYS",
              "pairs (every pair with P2P disabled) are staged through host memory.",
              "Diagonal: device-local copy (HBM, read and write counted)."]
    return "\n".join(lines)


# ------------------------------------------------------------------ calibrate and check
def _gpus_assumed(c: Caveat) -> str:
    why = c.ranks_source.removeprefix("unknown: ") if c.ranks_source else "no device lines"
    return (f"{c.run or 'the run'} does not show its rank count (no complete device lines; {why}): "
            f"assumed every GPU of {'the system' if c.system is None else c.system} ({c.count}); "
            f"expected gpus= naming them if the run used fewer")


def _gpus_in_rank_order(c: Caveat) -> str:
    last = c.count - 1
    return (f"{c.run or 'the run'} shows {c.count} ranks ({c.ranks_source}) but not their GPUs (no complete "
            f"device lines, no CUDA_VISIBLE_DEVICES): assumed rank r on GPU r of "
            f"{'the system' if c.system is None else c.system} (GPUs 0{'' if last == 0 else f'-{last}'}); "
            f"expected gpus= naming them if the run used others")


def _mode_fit(c: Caveat) -> str:
    better, worse = (c.count, 1) if c.gpus_per_thread == c.count else (1, c.count)
    e_better, e_worse = ((c.median_error_gn, c.median_error_g1) if better == c.count
                         else (c.median_error_g1, c.median_error_gn))
    where = (f"its {c.rows} rows below {format_bytes(c.below)}" if c.below is not None
             else f"its {c.rows} rows (none below 1 MiB)")
    return (f"{c.run or 'the run'} read both ways: -g {better} fits {where} better than -g {worse} "
            f"(median |time error| {format_percent(e_better)} vs {format_percent(e_worse)}); "
            f"-g {c.count} is one thread driving all {c.count} GPUs, -g 1 one process per GPU (MPI); "
            f"this check keeps -g 1 unless -g is given")


def _caveat_sentences() -> MappingProxyType:
    """One sentence per caveat of a calibration or a check, by its code (built when a caveat is
    worded: the calibration module's imports are not paid by commands that word none)."""
    from ..studies.calibration import CaveatCode

    return MappingProxyType({
        CaveatCode.P2P_NOT_FITTED:
            lambda c: (f"{c.count} p2pBandwidthLatencyTest output(s) read but not fitted: the P2P copy "
                       f"model is calibrated separately"),
        CaveatCode.FLOOR_HELD:
            lambda c: "floor held (all runs use one -g: floor and launch_per_gpu are not separable)",
        CaveatCode.GPUS_ASSUMED: _gpus_assumed,
        CaveatCode.GPUS_IN_RANK_ORDER: _gpus_in_rank_order,
        CaveatCode.GPUS_PER_THREAD_ASSUMED:
            lambda c: (f"{c.run or 'the run'} does not show its -g (no '# nThread .. nGpus ..' header, no -g on "
                       f"its command line): assumed -g 1, one GPU per thread; expected gpus_per_thread= (-g) if "
                       f"a thread drove several"),
        CaveatCode.COLLECTIVE_FROM_COLUMNS:
            lambda c: (f"{c.run or 'the run'} does not name its program (no *_perf line): {c.collective} read "
                       f"from its columns (a root, a reduction, the size per rank); expected collective= "
                       f"(--collective) if it is another"),
        CaveatCode.CALIBRATION_OF_ANOTHER_SYSTEM:
            lambda c: (f"the calibration was fitted on {c.calibration_system}, the check runs on {c.system}: "
                       f"its constants are those of {c.calibration_system}'s runs"),
        CaveatCode.MODE_FIT: _mode_fit,
        CaveatCode.READ: lambda c: c.text,
    })


def caveat_text(caveat: Caveat) -> str:
    """One sentence of what a calibration or a check assumed, held or left out
    (:class:`models.studies.calibration.Caveat`): ``calibrate`` and ``check`` print it after
    "note:", and the calibration file and ``--json`` hold it in ``"notes"``.

    Examples
    --------
    >>> from models.studies.calibration import Caveat, CaveatCode
    >>> caveat_text(Caveat(CaveatCode.P2P_NOT_FITTED, count=1))
    '1 p2pBandwidthLatencyTest output(s) read but not fitted: the P2P copy model is calibrated separately'
    """
    return _caveat_sentences()[caveat.code](caveat)


def caveat_texts(caveats) -> tuple:
    """:func:`caveat_text` of each caveat, in order (the ``notes`` of a calibration or check)."""
    sentences = _caveat_sentences()
    return tuple(sentences[c.code](c) for c in caveats)


def calibration_table(calibration) -> str:
    """``dgxtopo calibrate``: the fitted values and the residuals before and after."""
    c = calibration
    lines = [f"Calibration of the measurement model on {c.system} ({c.method}), "
             f"{c.after['rows']} rows of {', '.join(c.sources) or 'the runs'}:"]
    for name, value, lo, hi in c.fitted:
        shown = (f"{to_us(value):.3f} us (bounds {to_us(lo):g}-{to_us(hi):g} us)" if name in
                 ("launch_per_gpu", "floor") else f"{value:.4f} (bounds {lo:g}-{hi:g})")
        lines.append(f"  {name} = {shown}")
    lines.append(f"  |time error| before: median {format_percent(c.before['median_abs_time_error'])}, "
                 f"max {format_percent(c.before['max_abs_time_error'])}")
    lines.append(f"  |time error| after:  median {format_percent(c.after['median_abs_time_error'])}, "
                 f"max {format_percent(c.after['max_abs_time_error'])}")
    lines += [f"  note: {n}" for n in caveat_texts(c.caveats)]
    return "\n".join(lines)


def check_table(check) -> str:
    """``dgxtopo check``: measured vs predicted per size and the closing error line."""
    lines = [f"# {check.collective} on {check.system} GPUs {','.join(map(str, check.gpus))} "
             f"(-g {check.gpus_per_thread}): measured vs predicted",
             f"# {'size (B)':>12}  {'time meas':>10}  {'time pred':>10}  {'err':>7}  "
             f"{'busbw meas':>10}  {'busbw pred':>10}  {'err':>7}",
             f"# {'':>12}  {'(us)':>10}  {'(us)':>10}  {'':>7}  {'(GB/s)':>10}  {'(GB/s)':>10}"]
    for r in check.rows:
        berr = format_percent(r.busbw_error, signed=True)
        lines.append(f"  {r.size:>12}  {to_us(r.measured_time):>10.2f}  {to_us(r.predicted_time):>10.2f}  "
                     f"{format_percent(r.time_error, signed=True):>7}  {to_GBps(r.measured_busbw):>10.2f}  "
                     f"{to_GBps(r.predicted_busbw):>10.2f}  {berr:>7}")
    busbw = (f"median {format_percent(check.median_abs_busbw_error)}, max "
             f"{format_percent(check.max_abs_busbw_error)}"
             if math.isfinite(check.median_abs_busbw_error) else "- (no row with a measured busbw)")
    lines.append(f"# |time error|: median {format_percent(check.median_abs_time_error)}, max "
                 f"{format_percent(check.max_abs_time_error)}; |busbw error|: {busbw}")
    lines += [f"# note: {n}" for n in caveat_texts(check.caveats)]
    return "\n".join(lines)


def simulation_table(result, *, top_links: int = 3) -> str:
    """A simulated step (``dgxtopo simulate``): its time, where it goes by kind, the busiest links.

    Parameters
    ----------
    result : models.predict.simulate.SimulationResult
    top_links : int
        Links listed, busiest (mean share) first.

    Examples
    --------
    >>> import topo
    >>> from models.predict.simulate import simulate, task_graph
    >>> r = simulate(topo.build("dgxh100"), task_graph({"tasks": [
    ...     {"id": "ar", "op": "all_reduce", "gpus": [0, 1, 2, 3], "bytes": 2**26, "kind": "dp_comm"},
    ...     {"id": "mm", "op": "compute", "gpu": 0, "seconds": 1e-3, "after": ["ar"]}]}))
    >>> print(simulation_table(r, top_links=1))
    task graph on DGX H100: step 1.320 ms (2 tasks, 3 event times)
      kind            busy [ms]   on critical path [ms]
      compute             1.000        1.000
      dp_comm             0.320        0.320
      exposed communication: 0.320 ms of the step
      busiest links (mean / peak share of capacity):
        gpu0->nvswitch0 (125 GB/s): 21.4% / 97.1%
    """
    lines = [f"{result.name or 'task graph'} on {result.fabric}: step {result.step_time * 1e3:.3f} ms "
             f"({len(result.tasks)} tasks, {result.events} event times)"]
    critical = result.critical_by_kind()
    busy = result.busy_by_kind()
    lines.append("  kind            busy [ms]   on critical path [ms]")
    for kind in sorted(busy, key=lambda k: -critical.get(k, 0.0)):
        lines.append(f"  {kind:14} {busy[kind] * 1e3:10.3f}   {critical.get(kind, 0.0) * 1e3:10.3f}")
    lines.append(f"  exposed communication: {result.exposed_comm * 1e3:.3f} ms of the step")
    if result.links:
        lines.append("  busiest links (mean / peak share of capacity):")
        for link in result.links[:top_links]:
            u, v = link.edge
            lines.append(f"    {u}->{v} ({format_gbps(link.capacity, 0)} GB/s): {format_percent(link.mean)} / "
                         f"{format_percent(link.peak)}")
    return "\n".join(lines)
