"""What the command line prints: the text table and the JSON shape of every command.

The display edge: values arrive in SI (bytes, seconds, B/s) and leave in the units the familiar
tools print (GB/s = 1e9 B/s, microseconds). Every ``*_json`` function returns plain data for
:func:`json.dumps` (the shapes the README documents as stable); every ``*_table`` function
returns the text, without a trailing newline.

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

import numpy as np

from topo.select import format_gpu_ids
from topo.units import to_GBps, to_us

__all__ = ["format_table", "format_gpu_ids", "package_version",
           "systems_table", "systems_json", "collective_table", "collective_json",
           "pairs_table", "pairs_json", "subsets_table", "subsets_json", "compare_table",
           "compare_json", "import_summary", "gpus_ranking_json", "measurement_note",
           "NCCL_TESTS_ROOT", "NCCL_TESTS_REDOP"]

# nccl-tests' root column: the root rank for rooted collectives, -1 otherwise.
NCCL_TESTS_ROOT = {"broadcast": 0, "reduce": 0}
# nccl-tests' redop column: sum for the reductions (the CLI models float32 sum), none otherwise.
NCCL_TESTS_REDOP = {"all_reduce": "sum", "reduce_scatter": "sum", "reduce": "sum"}


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


def _gbps(value, digits: int = 2) -> str:
    return f"{to_GBps(value):.{digits}f}"


def _each(value) -> np.ndarray:
    """A per-size field as a 1-d array, whether the estimate holds a scalar or an array."""
    return np.atleast_1d(np.asarray(value))


# ------------------------------------------------------------------------------ systems
def systems_json(summaries) -> dict:
    """``dgxtopo systems --json``: ``{"systems": [...]}``, see :meth:`topo.Summary.to_dict`."""
    return {"systems": [s.to_dict() for s in summaries]}


def systems_table(summaries) -> str:
    """``dgxtopo systems``: one row per system, GB/s per direction."""
    headers = ["system", "name", "GPUs", "GPU model", "NVLink links", "NVSwitches", "NICs",
               "NVLink/GPU (GB/s)", "bisection (GB/s)"]
    rows = [[s.system, s.name, s.gpus, ", ".join(s.gpu_models), s.nvlink_links, s.nvswitches,
             s.nics, _gbps(s.injection, 1), _gbps(s.bisection, 1)] for s in summaries]
    return (format_table(headers, rows, align="<<><>>>>>")
            + "\n\nBandwidths are line rates per direction; bisection counts NVLink only.")


# --------------------------------------------------------------------------- collective
def collective_json(G, e, *, explain: bool = False) -> dict:
    """``dgxtopo collective --json``: ``{"system", "collective", "gpus", "rows"}``, and
    ``"explanation"`` (the text of :meth:`CollectiveEstimate.explain`) with ``--explain``."""
    rows = [{"size_bytes": int(size), "time_us": float(to_us(t)), "algbw_gbps": float(to_GBps(a)),
             "busbw_gbps": float(to_GBps(b)), "algorithm": str(al), "protocol": str(pr),
             "nchannels": int(nc)}
            for size, t, a, b, al, pr, nc in zip(_each(e.nbytes), _each(e.time), _each(e.algbw),
                                                  _each(e.busbw), _each(e.algorithm), _each(e.protocol),
                                                  _each(e.nchannels))]
    data = {"system": G.graph["system"], "collective": e.collective, "gpus": list(e.gpus), "rows": rows}
    if explain:
        data["explanation"] = e.explain()
    return data


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
        lines += ["", e.explain()]
    return "\n".join(lines)


# -------------------------------------------------------------------------------- pairs
def _matrix_json(matrix) -> list:
    return [[None if math.isnan(v) else float(to_GBps(v)) for v in row] for row in matrix]


def pairs_json(G, collective: str, nbytes: int, matrix, bounds=None) -> dict:
    """``dgxtopo pairs --json``: ``{"system", "collective", "size_bytes", "gpus", "busbw_gbps"}``,
    and ``"bound_busbw_gbps"`` (the optimal-schedule bound of each pair) with ``--bound``."""
    data = {"system": G.graph["system"], "collective": collective, "size_bytes": int(nbytes),
            "gpus": list(range(len(matrix))), "busbw_gbps": _matrix_json(matrix)}
    if bounds is not None:
        data["bound_busbw_gbps"] = _matrix_json(bounds)
    return data


def _matrix_table(matrix) -> str:
    n = len(matrix)
    headers = ["GPU"] + [str(j) for j in range(n)]
    rows = [[str(i)] + ["-" if math.isnan(v) else _gbps(v) for v in row] for i, row in enumerate(matrix)]
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
    return (text + f"\n\nBound (GB/s): the most any schedule could reach on each pair (bandwidth only)\n"
            + _matrix_table(bounds)
            + f"\n\nNCCL gets {lo:.0%} to {hi:.0%} of the busbw this fabric allows a pair")


# ------------------------------------------------------------------------------ subsets
def subsets_json(G, collective: str, k: int, nbytes: int, ranking, shown, bounds=None) -> dict:
    """``dgxtopo subsets --json``: ``{"system", "collective", "k", "size_bytes", "count",
    "subsets"}``, ``count`` being every set and ``subsets`` the ones shown, best first; with
    ``bounds`` (GPU ids -> bound busbw [B/s]) each set also has ``"bound_busbw_gbps"`` and
    ``"ratio"`` (NCCL's busbw over the bound)."""
    rows = []
    for r in shown:
        row = {"gpus": list(r.gpus), "busbw_gbps": float(to_GBps(r.busbw)),
               "algbw_gbps": float(to_GBps(r.algbw)), "time_us": float(to_us(r.time)),
               "algorithm": r.algorithm, "protocol": r.protocol, "nchannels": int(r.nchannels)}
        if bounds is not None:
            b = bounds[tuple(r.gpus)]
            row["bound_busbw_gbps"] = float(to_GBps(b))
            row["ratio"] = float(r.busbw / b) if b > 0 else None
        rows.append(row)
    return {"system": G.graph["system"], "collective": collective, "k": int(k), "size_bytes": int(nbytes),
            "count": len(ranking), "subsets": rows}


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
        row = [i + 1, format_gpu_ids(r.gpus), _gbps(r.busbw), _gbps(r.algbw), f"{to_us(r.time):.2f}",
               r.algorithm, r.protocol, r.nchannels]
        if bounds is not None:
            b = bounds[tuple(r.gpus)]
            row += [_gbps(b), f"{r.busbw / b:.0%}" if b > 0 else "-"]
        rows.append(row)
    text = (f"{len(ranking)} sets of {k} GPUs on {G.graph['name']}, ranked by predicted "
            f"{collective} busbw at {nbytes} B{top}\n" + format_table(headers, rows, align=align))
    if bounds is not None:
        text += ("\nbound: the most busbw any schedule could reach on the set (bandwidth only, "
                 "dgxtopo bound); NCCL/bound: NCCL gets that share of what the fabric allows")
    return text


# ------------------------------------------------------------------------------ compare
def compare_json(collective: str, ngpus: int, names, estimates) -> dict:
    """``dgxtopo compare --json``: ``{"collective", "ngpus", "systems", "rows": [{"size_bytes",
    "results": [{"system", "time_us", "busbw_gbps", "algorithm", "protocol"}]}]}``."""
    sizes = _each(estimates[0].nbytes)
    return {"collective": collective, "ngpus": int(ngpus), "systems": list(names),
            "rows": [{"size_bytes": int(size),
                      "results": [{"system": name, "time_us": float(to_us(_each(e.time)[i])),
                                   "busbw_gbps": float(to_GBps(_each(e.busbw)[i])),
                                   "algorithm": str(_each(e.algorithm)[i]),
                                   "protocol": str(_each(e.protocol)[i])}
                                  for name, e in zip(names, estimates)]}
                     for i, size in enumerate(sizes)]}


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
            row += [f"{to_us(t):.2f}", _gbps(_each(e.busbw)[i]),
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
    nics = [n for n, d in nodes.items() if d["kind"] == "nic"]
    ports = sorted({str(nodes[n]["port_link"]) for n in nics if nodes[n].get("port_link")})
    sockets = sum(1 for d in nodes.values() if d["kind"] == "cpu")
    pcie = sum(1 for d in nodes.values() if d["kind"] == "pcie_switch")
    nvlink = f"{_plural(len(bundles), 'NVLink bundle')} ({_plural(links, 'link')}"
    nvlink += f"; GPU pairs {mix})" if mix else ")"
    if switches:
        nvswitches = f"{_plural(len(switches), 'NVSwitch', 'NVSwitches')} ({nvswitch_origin})"
    else:
        nvswitches = f"no NVSwitch ({nvswitch_origin})"
    nic_text = _plural(len(nics), "NIC")
    if nics:
        nic_text += f" ({', '.join(map(str, nics))}" + (f"; ports {', '.join(ports)})" if ports else "; no network port)")
    text = (f"Imported {source} ({what}) as {G.graph.get('name', '?')}: "
            f"{_plural(len(gpus), 'GPU')} {', '.join(models)} "
            f"(GPU ids {format_gpu_ids(nodes[n].get('index', 0) for n in gpus)}); {nvlink}; {nvswitches}; "
            f"{_plural(pcie, 'PCIe switch', 'PCIe switches')} ({pcie_origin}); "
            f"{_plural(sockets, 'CPU socket')}; {nic_text}. "
            + (f"Wrote {out}." if out is not None else "Nothing written (pass --out FILE to write the fabric)."))
    return textwrap.fill(text, 79, break_on_hyphens=False, break_long_words=False)


# -------------------------------------------------------------------------------- gpus
def gpus_ranking_json(workload: str, dtype: str, ranks) -> dict:
    """``dgxtopo gpus --json``: ``{"workload", "dtype", "ranking": [{"generation",
    "time_per_sample_s", "compute_s", "memory_s", "communication_s", "binding", "fits"}]}``,
    fastest first; a generation without the dtype has ``time_per_sample_s`` null."""
    return {"workload": workload, "dtype": dtype,
            "ranking": [{"generation": r.generation,
                         "time_per_sample_s": r.time_per_sample if math.isfinite(r.time_per_sample) else None,
                         "compute_s": r.compute, "memory_s": r.memory_bound,
                         "communication_s": r.communication, "binding": r.binding, "fits": r.fits}
                        for r in ranks]}
