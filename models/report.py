"""The offline HTML report that compares fabrics: what ``dgxtopo report`` writes.

One self-contained file: plotly.js is embedded (the page opens without a network), then a
summary table of the chosen systems, all_reduce busbw and time against message size for all
of them, and per system its fabric, the channels of an 8-GPU all_reduce on it, its P2P
bandwidth and latency matrices and its 2-GPU all_reduce matrix, followed by a short text on
how the model works and how it was validated.

Any system :func:`topo.build` knows can be given by name; a number a system cannot have
(an 8-GPU column on a 4-GPU system) shows "n/a", and a figure the models cannot produce for
a system (a model that does not cover it yet) is replaced by a one-line note saying why.

Writing is atomic: the page is generated in memory, written to a temporary file in the
target's directory and moved over the target with :func:`os.replace`, so an interrupted run
leaves either the old file or the new one, never a partial one. A bad output path (missing
directory, a directory, not writable) raises :class:`ReportPathError` before any work.

Examples
--------
>>> rows = summary_rows(["dgx1v"])
>>> rows[0].gpus, round(rows[0].busbw_8 / 1e9, 1), rows[0].busbw_16
(8, 119.6, None)
>>> rows[0].best_pair, rows[0].worst_pair
((0, 3), (0, 5))
"""

from __future__ import annotations

import contextlib
import html
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import plotly.io as pio
from plotly.offline import get_plotlyjs

import topo
from topo.errors import DgxTopoError
from topo.plot import fabric_figure
from topo.units import GiB, to_GBps

from .collectives import estimate, pairwise
from .p2p import p2p_report
from .plot import busbw_figure, channels_figure, format_bytes, latency_figure, p2p_figure, pairs_figure

__all__ = ["ReportPathError", "SystemRow", "ReportFile", "summary_rows", "report_html",
           "write_report", "write_compare_figure", "check_output_path", "REPORT_SIZE", "CURVE_SIZES",
           "MAX_MATRIX_GPUS"]

#: The message size of the summary table and the pair matrices: nccl-tests' ``1G``. [bytes]
REPORT_SIZE = GiB
#: The sizes of the curves: nccl-tests' ``-b 8 -e 8G -f 2``. [bytes]
CURVE_SIZES = 2 ** np.arange(3, 34)
#: Systems with more GPUs get no GPU-by-GPU matrices (too slow and too large to draw).
MAX_MATRIX_GPUS = 32
_COLLECTIVE = "all_reduce"
_PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}


class ReportPathError(DgxTopoError):
    """An output path the report cannot be written to."""


@dataclass(frozen=True, slots=True)
class SystemRow:
    """One row of the report's summary table.

    Attributes
    ----------
    system, name : str
        Registry key and display name.
    gpus : int
    gpu_models : tuple of str
    nvlink_links, nvswitches, nics : int
    injection : float
        Smallest NVLink line rate a GPU can send at, per direction. [B/s]
    bisection : float
        NVLink bisection bandwidth, per direction. [B/s]
    busbw_8, busbw_16 : float or None
        Predicted all_reduce busbw of GPUs 0-7 / 0-15 at :data:`REPORT_SIZE`; None when the
        system has fewer GPUs or the model does not cover it (see ``notes``). [B/s]
    best_pair, worst_pair : tuple of int or None
        A GPU pair with the highest / lowest 2-GPU all_reduce busbw at :data:`REPORT_SIZE`.
    best_busbw, worst_busbw : float or None
        Their busbw. [B/s]
    best_count, worst_count : int
        How many pairs share it.
    notes : tuple of str
        Why a number is missing, where the model does not cover the system.
    """

    system: str
    name: str
    gpus: int
    gpu_models: tuple
    nvlink_links: int
    nvswitches: int
    nics: int
    injection: float
    bisection: float
    busbw_8: float | None
    busbw_16: float | None
    best_pair: tuple | None
    best_busbw: float | None
    best_count: int
    worst_pair: tuple | None
    worst_busbw: float | None
    worst_count: int
    notes: tuple


@dataclass(frozen=True, slots=True)
class ReportFile:
    """What :func:`write_report` wrote.

    Attributes
    ----------
    path : pathlib.Path
    nbytes : int
        File size. [bytes]
    systems : tuple of str
        Display names of the systems compared.
    """

    path: Path
    nbytes: int
    systems: tuple


# ----------------------------------------------------------------------------- systems
def _fabrics(names) -> list:
    """Build the systems (all built-in ones by default), once each, in the given order."""
    names = list(topo.SYSTEMS) if names is None else list(names)
    if not names:
        raise DgxTopoError("expected at least one system name, received none")
    fabrics, seen = [], set()
    for name in names:
        G = topo.build(name)
        key = G.graph.get("system", G.graph.get("name", name))
        if key not in seen:
            seen.add(key)
            fabrics.append(G)
    return fabrics


@dataclass(frozen=True, slots=True)
class _Analysis:
    """Everything the report shows of one system (model errors kept as text)."""

    G: object
    row: SystemRow
    e8: object
    e8_error: str | None
    pairs: object
    pairs_error: str | None
    p2p: object
    p2p_error: str | None
    curve: object
    curve_error: str | None


def _try(function, *args, **kwargs):
    """(result, None), or (None, message) for a model that does not cover the case."""
    try:
        return function(*args, **kwargs), None
    except DgxTopoError as error:
        return None, str(error)


def _analyse(G) -> _Analysis:
    s = topo.summarize(G)
    n = s.gpus
    notes = []
    e8 = e8_error = None
    if n >= 8:
        e8, e8_error = _try(estimate, G, _COLLECTIVE, REPORT_SIZE, list(range(8)))
        if e8_error:
            notes.append(f"8 GPUs: {e8_error}")
    e16 = None
    if n >= 16:
        e16, e16_error = _try(estimate, G, _COLLECTIVE, REPORT_SIZE, list(range(16)))
        if e16_error:
            notes.append(f"16 GPUs: {e16_error}")
    pairs = pairs_error = p2p = p2p_error = None
    best = worst = (None, None, 0)
    if n > MAX_MATRIX_GPUS:
        pairs_error = p2p_error = (f"{n} GPUs: the report draws GPU-by-GPU matrices up to "
                                   f"{MAX_MATRIX_GPUS} GPUs (dgxtopo p2p and pairs print any size)")
        notes.append(f"pairs: {pairs_error}")
    else:
        if n >= 2:
            pairs, pairs_error = _try(pairwise, G, _COLLECTIVE, REPORT_SIZE)
            if pairs_error:
                notes.append(f"pairs: {pairs_error}")
            else:
                best, worst = _extreme_pairs(pairs)
        p2p, p2p_error = _try(p2p_report, G)
    curve, curve_error = _try(estimate, G, _COLLECTIVE, CURVE_SIZES)
    row = SystemRow(
        system=s.system, name=s.name, gpus=n, gpu_models=s.gpu_models, nvlink_links=s.nvlink_links,
        nvswitches=s.nvswitches, nics=s.nics, injection=s.injection, bisection=s.bisection,
        busbw_8=None if e8 is None else float(e8.busbw), busbw_16=None if e16 is None else float(e16.busbw),
        best_pair=best[0], best_busbw=best[1], best_count=best[2],
        worst_pair=worst[0], worst_busbw=worst[1], worst_count=worst[2], notes=tuple(notes))
    return _Analysis(G, row, e8, e8_error, pairs, pairs_error, p2p, p2p_error, curve, curve_error)


def _extreme_pairs(matrix):
    upper = [(matrix[i, j], (i, j)) for i in range(len(matrix)) for j in range(i + 1, len(matrix))
             if math.isfinite(matrix[i, j])]
    if not upper:
        return (None, None, 0), (None, None, 0)
    values = np.array([v for v, _ in upper])
    out = []
    for target in (values.max(), values.min()):
        ties = [pair for v, pair in upper if math.isclose(v, target, rel_tol=1e-9)]
        out.append((ties[0], float(target), len(ties)))
    return tuple(out)


def summary_rows(names=None) -> list:
    """The report's summary table as data, one row per system.

    Parameters
    ----------
    names : sequence of str, optional
        System names for :func:`topo.build`; default every built-in system.

    Returns
    -------
    list of SystemRow

    Raises
    ------
    topo.UnknownSystemError
        For a name :func:`topo.build` does not know.
    """
    return [_analyse(G).row for G in _fabrics(names)]


# -------------------------------------------------------------------------------- HTML
def _esc(value) -> str:
    return html.escape(str(value), quote=True)


def _gbps(value) -> str:
    return "n/a" if value is None else f"{to_GBps(value):.1f}"


def _pair(pair, value, count) -> str:
    if pair is None:
        return "n/a"
    more = f" and {count - 1} more" if count > 1 else ""
    return f"{to_GBps(value):.1f}<br><span class='muted'>GPUs {pair[0]},{pair[1]}{more}</span>"


def _table(rows) -> str:
    size = format_bytes(REPORT_SIZE)
    headers = ["system", "GPUs", "GPU model", "NVLink links", "NVSwitches", "NICs",
               "NVLink per GPU (GB/s)", "NVLink bisection (GB/s)",
               f"all_reduce busbw, GPUs 0-7, {size} (GB/s)",
               f"all_reduce busbw, GPUs 0-15, {size} (GB/s)",
               f"best GPU pair: all_reduce busbw at {size} (GB/s)",
               f"worst GPU pair: all_reduce busbw at {size} (GB/s)"]
    lines = ["<div class='scroll'><table class='summary'>", "<thead><tr>" + "".join(f"<th>{_esc(h)}</th>" for h in headers)
             + "</tr></thead>", "<tbody>"]
    for r in rows:
        cells = [f"<b>{_esc(r.name)}</b><br><span class='muted'>{_esc(r.system)}</span>", r.gpus,
                 _esc(", ".join(r.gpu_models)), r.nvlink_links, r.nvswitches, r.nics,
                 _gbps(r.injection), _gbps(r.bisection), _gbps(r.busbw_8), _gbps(r.busbw_16),
                 _pair(r.best_pair, r.best_busbw, r.best_count),
                 _pair(r.worst_pair, r.worst_busbw, r.worst_count)]
        lines.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    lines += ["</tbody>", "</table></div>"]
    notes = [f"{_esc(r.name)}: {_esc(note)}" for r in rows for note in r.notes]
    lines.append("<p class='muted'>Bandwidths are per direction; GB/s is 10<sup>9</sup> B/s and "
                 f"{size} is 2<sup>30</sup> bytes, as nccl-tests counts them. busbw is nccl-tests' bus "
                 "bandwidth, predicted. n/a: the system has fewer GPUs than the column needs"
                 + (", or the model does not cover it:" if notes else ".") + "</p>")
    if notes:
        lines.append("<ul class='muted'>" + "".join(f"<li>{n}</li>" for n in notes) + "</ul>")
    return "\n".join(lines)


class _Figures:
    """Figure divs with stable ids (so the same input gives the same file)."""

    def __init__(self):
        self.count = 0

    def div(self, fig, slug: str, caption: str = "") -> str:
        self.count += 1
        body = pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=f"fig-{slug}",
                           config=_PLOTLY_CONFIG, default_width="100%")
        cap = f"<figcaption>{caption}</figcaption>" if caption else ""
        return f"<figure class='plot' data-figure='{_esc(slug)}'>{body}{cap}</figure>"

    @staticmethod
    def missing(what: str, reason: str) -> str:
        return (f"<figure class='plot missing'><p><b>{_esc(what)}</b>: not available; "
                f"{_esc(reason)}</p></figure>")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in str(text).lower()).strip("-")


def _system_section(a: _Analysis, figures: _Figures, color_range) -> str:
    G, r = a.G, a.row
    slug = _slug(r.system)
    description = G.graph.get("description", "")
    parts = [f"<section id='system-{slug}'>", f"<h2>{_esc(r.name)}</h2>",
             f"<p>{_esc(description) + '. ' if description else ''}Hover over a link's midpoint dot for "
             "its endpoints, link count and bandwidth; click legend entries to hide link classes.</p>"]
    parts.append(figures.div(fabric_figure(G, color_range=color_range,
                                           title=f"{r.name}: fabric (links by bandwidth per direction)"),
                             f"{slug}-fabric",
                             "GPUs (green squares, CUDA index), NVSwitches, PCIe switches, CPUs and NICs; "
                             "dotted: PCIe, dashed: CPU-to-CPU."))
    if a.e8 is not None:
        parts.append(figures.div(channels_figure(G, a.e8), f"{slug}-channels",
                                 f"The channels of an all_reduce of GPUs 0-7 at {format_bytes(REPORT_SIZE)}: "
                                 "each link coloured by the share of NCCL's capacity its channels reserve; "
                                 "red links bind the bandwidth."))
    elif a.e8_error:
        parts.append(figures.missing("channels of an 8-GPU all_reduce", a.e8_error))
    grid = []
    if a.p2p is not None:
        grid.append(figures.div(p2p_figure(a.p2p), f"{slug}-p2p"))
        grid.append(figures.div(latency_figure(a.p2p), f"{slug}-latency"))
    else:
        grid.append(figures.missing("P2P matrices", a.p2p_error))
    if a.pairs is not None:
        grid.append(figures.div(pairs_figure(a.pairs, collective=_COLLECTIVE, nbytes=REPORT_SIZE,
                                             title=f"{r.name}: 2-GPU all_reduce busbw at "
                                                   f"{format_bytes(REPORT_SIZE)} (GB/s)"),
                                f"{slug}-pairs"))
    elif a.pairs_error:
        grid.append(figures.missing("2-GPU all_reduce matrix", a.pairs_error))
    parts.append("<div class='grid'>" + "".join(grid) + "</div>")
    parts.append("</section>")
    return "\n".join(parts)


def _curves_section(analyses, figures: _Figures) -> str:
    curves = {}
    for a in analyses:
        if a.curve is not None:
            curves[f"{a.row.name}, {a.row.gpus} GPUs"] = a.curve
            if a.row.gpus > 8:
                e, error = _try(estimate, a.G, _COLLECTIVE, CURVE_SIZES, list(range(8)))
                if e is not None:
                    curves[f"{a.row.name}, GPUs 0-7"] = e
    missing = [(a.row.name, a.curve_error) for a in analyses if a.curve is None]
    parts = ["<section id='curves'>", "<h2>all_reduce against message size</h2>",
             "<p>Predicted nccl-tests all_reduce (float32, sum) from 8 B to 8 GiB on all GPUs of each "
             "system, as nccl-tests would print it; hover for the algorithm, protocol and channels "
             "NCCL would pick at each size.</p>"]
    if curves:
        parts.append("<div class='grid'>")
        parts.append(figures.div(busbw_figure(curves, y="busbw", title="predicted all_reduce busbw (GB/s)"),
                                 "curves-busbw"))
        parts.append(figures.div(busbw_figure(curves, y="time", title="predicted all_reduce time (µs)"),
                                 "curves-time"))
        parts.append("</div>")
    for name, error in missing:
        parts.append(figures.missing(f"{name} curves", error))
    parts.append("</section>")
    return "\n".join(parts)


#: The field's seed comparison, shown whenever a DGX-1V or DGX-2 is in the report: the same 16
#: GPUs as one DGX-2 (NVSwitch) or as two DGX-1V joined by their four EDR NICs each.
SEED_COMPARISON = ("dgx2", "2xdgx1v")


def _seed_section(figures: _Figures) -> str:
    estimates, errors = [], []
    for name in SEED_COMPARISON:
        e, error = _try(estimate, topo.build(name), _COLLECTIVE, CURVE_SIZES)
        estimates.append(e)
        errors.append(error)
    parts = ["<section id='compare'>", "<h2>One DGX-2 against two DGX-1V</h2>"]
    if any(e is None for e in estimates):
        parts += [figures.missing(f"{n} curves", err) for n, err in zip(SEED_COMPARISON, errors) if err]
        parts.append("</section>")
        return "\n".join(parts)
    one, two = estimates
    ratio = float(np.atleast_1d(one.busbw)[-1] / np.atleast_1d(two.busbw)[-1])
    parts.append(
        f"<p>The same 16 GPUs, as one DGX-2 or as two DGX-1V on an EDR InfiniBand fabric "
        f"(<code>dgxtopo compare dgx2 2xdgx1v</code>). At {_esc(format_bytes(int(CURVE_SIZES[-1])))} the "
        f"DGX-2's all_reduce is {ratio:.2f}x faster: its rings run over the NVSwitches at NCCL's "
        f"{one.ring.nchannels} x {to_GBps(one.ring.bw_intra):.0f} GB/s, while the two DGX-1V's rings cross "
        f"the network at {two.ring.nchannels} x {to_GBps(two.ring.bw_intra):.0f} GB/s per node (each EDR "
        f"NIC's PCIe link). For small messages the network's latency decides instead.</p>")
    curves = {f"{n}, {e.nranks} GPUs": e for n, e in zip(SEED_COMPARISON, estimates)}
    parts += ["<div class='grid'>",
              figures.div(busbw_figure(curves, y="busbw", title="all_reduce busbw (GB/s), 16 GPUs"),
                          "compare-busbw"),
              figures.div(busbw_figure(curves, y="time", title="all_reduce time (µs), 16 GPUs"),
                          "compare-time"),
              "</div>", "</section>"]
    return "\n".join(parts)


_MODEL_TEXT = """
<section id='model'>
<h2>How the model works</h2>
<p><b>Fabrics.</b> Each system is a validated networkx graph of the real hardware: GPUs in CUDA
numbering, NVLink bundles, NVSwitches, PCIe switches, CPU sockets and NICs, with the line rate per
direction and a latency on every link. Every figure of the hardware catalogue cites its source;
uncertain facts are marked as such in the code.</p>
<p><b>P2P.</b> A copy between two GPUs follows the route CUDA takes: a direct NVLink bundle, all
NVSwitch paths in parallel, PCIe peer-to-peer, or staging through host memory across the CPU.
Achieved bandwidth is the line rate times an efficiency per link technology; latency is the hop
latencies plus a fixed software overhead.</p>
<p><b>Collectives.</b> The model follows NCCL's own logic on the graph ({model}): NCCL's channel
search finds rings and trees over the chosen GPUs, each channel reserving its per-channel bandwidth
on every link it crosses (the channel figures above show how much of each link's capacity is
reserved); NCCL's tuning model then gives each algorithm and protocol a latency and a bandwidth,
time = latency + size / bandwidth, and the fastest wins. nccl-tests' definitions turn the time into
algbw and busbw. <code>dgxtopo collective ... --explain</code> prints this working for any case.</p>
</section>
<section id='validation'>
<h2>How it was validated</h2>
<ul>
<li>Published <code>nvidia-smi topo -m</code> outputs of a DGX-1V and a DGX-2 are reproduced cell for
cell; link counts, ports per GPU and the DGX-2 switch wiring are checked against the hardware
documentation.</li>
<li>Bisection bandwidth matches hand figures (DGX-1 80 GB/s, DGX-1V 150 GB/s, DGX-2 1.2 TB/s per
direction) and a brute force over every balanced bipartition.</li>
<li>The P2P efficiencies were fitted once to a published DGX-1V p2pBandwidthLatencyTest row
(bandwidth within 1.5 %, latency within 0.6 µs) and predict the P100 DGX-1 and the DGX-2 without
refitting.</li>
<li>The tuning tables reproduce NCCL's worked H100 example exactly; the channel search gives what
NCCL's search gives by hand (6 rings x 20 GB/s on a DGX-1V, 4 x 18 GB/s on a P100 DGX-1, 6 x 20 GB/s
on any DGX-2 set).</li>
<li>Invariants are tested on random cases: busbw never exceeds a GPU's injection bandwidth, adding
a link never lowers it, GPU order never matters.</li>
</ul>
<p>These are predictions from a model, not measurements: compare with nccl-tests on your machine
before relying on a figure.</p>
</section>
"""

# Figures drawn before the page's grid settled get their size again once it has.
_RESIZE = ("window.addEventListener('load', function () { document.querySelectorAll('.js-plotly-plot')"
           ".forEach(function (div) { Plotly.Plots.resize(div); }); });")

_STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0 auto;
       max-width: 1500px; padding: 0 24px 48px; color: #222; line-height: 1.45; }
h1 { margin-top: 24px; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 36px; }
.scroll { overflow-x: auto; }
table.summary { border-collapse: collapse; font-size: 14px; }
table.summary th, table.summary td { border: 1px solid #ddd; padding: 4px 8px; text-align: right; }
table.summary th { background: #f4f6f8; vertical-align: bottom; max-width: 140px; }
table.summary td:first-child, table.summary td:nth-child(3) { text-align: left; }
.muted { color: #666; font-size: 90%; }
.grid { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 12px; }
@media (max-width: 1000px) { .grid { grid-template-columns: minmax(0, 1fr); } }
figure.plot { margin: 12px 0; min-width: 0; }
figure.missing { border: 1px dashed #bbb; padding: 12px; color: #555; }
figcaption { color: #555; font-size: 90%; }
nav a { margin-right: 14px; }
"""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("dgx-topo")
    except PackageNotFoundError:  # run from a source tree that was not installed
        return "(source tree)"


def report_html(names=None) -> str:
    """The whole report as one HTML document, plotly.js embedded.

    Parameters
    ----------
    names : sequence of str, optional
        System names for :func:`topo.build`; default every built-in system.

    Returns
    -------
    str

    Raises
    ------
    topo.UnknownSystemError
        For a name :func:`topo.build` does not know.
    """
    return _render(_fabrics(names))


def _render(fabrics) -> str:
    analyses = [_analyse(G) for G in fabrics]
    bandwidths = [d["bandwidth"] for G in fabrics for _, _, d in G.edges(data=True)]
    color_range = (min(bandwidths), max(bandwidths))
    figures = _Figures()
    names_text = ", ".join(a.row.name for a in analyses)
    model = next((a.e8.model for a in analyses if a.e8 is not None),
                 next((a.curve.model for a in analyses if a.curve is not None), "NCCL tuning model"))
    nav = " ".join(f"<a href='#system-{_slug(a.row.system)}'>{_esc(a.row.name)}</a>" for a in analyses)
    body = [
        f"<header><h1>dgx-topo: {_esc(names_text)}</h1>",
        "<p>What NVIDIA DGX fabrics deliver to NCCL-style communication, predicted by dgx-topo "
        f"{_esc(_version())} ({_esc(model)}). Every figure is interactive: hover for numbers, drag to "
        "zoom, double-click to reset. The page works offline.</p>",
        f"<nav><a href='#summary'>summary</a> <a href='#curves'>curves</a> "
        + ("<a href='#compare'>DGX-2 vs 2xDGX-1V</a> " if any(a.row.system in ("dgx1v", "dgx2") for a in analyses)
           else "") + f"{nav} "
        "<a href='#model'>model</a> <a href='#validation'>validation</a></nav></header>",
        "<section id='summary'><h2>Summary</h2>", _table([a.row for a in analyses]), "</section>",
        _curves_section(analyses, figures),
    ]
    if any(a.row.system in ("dgx1v", "dgx2") for a in analyses):
        body.append(_seed_section(figures))
    body += [_system_section(a, figures, color_range) for a in analyses]
    body.append(_MODEL_TEXT.format(model=_esc(model)))
    body.append(f"<footer class='muted'>{figures.count} figures. Generated by dgx-topo "
                f"{_esc(_version())}; <code>dgxtopo report</code>.</footer>")
    return _page(f"dgx-topo report: {names_text}", body)


def _page(title: str, body) -> str:
    """A complete HTML document with plotly.js inline (no external resource)."""
    return "\n".join([
        "<!DOCTYPE html>", "<html lang='en'>", "<head>", "<meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{_esc(title)}</title>", f"<style>{_STYLE}</style>",
        "<script type='text/javascript'>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>",
        f"<script type='text/javascript'>{get_plotlyjs()}</script>", "</head>", "<body>",
        *body, f"<script type='text/javascript'>{_RESIZE}</script>", "</body>", "</html>", ""])


# ------------------------------------------------------------------------------ writing
def check_output_path(path) -> Path:
    """Check that a report can be written to ``path``; return it as a Path.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ReportPathError
        If ``path`` is a directory, its directory does not exist or is not a directory, or
        the directory is not writable.

    Examples
    --------
    >>> check_output_path("/nonexistent-dir/report.html")
    Traceback (most recent call last):
    ...
    models.report.ReportPathError: cannot write the report to '/nonexistent-dir/report.html': directory '/nonexistent-dir' does not exist
    """
    if str(path) == "":
        raise ReportPathError("cannot write the report to '': expected a file name such as report.html")
    target = Path(path)
    if target.is_dir():
        raise ReportPathError(f"cannot write the report to {str(path)!r}: it is a directory, "
                              f"expected a file name such as report.html")
    parent = target.parent
    where = f"cannot write the report to {str(path)!r}"
    if not parent.exists():
        raise ReportPathError(f"{where}: directory {str(parent)!r} does not exist")
    if not parent.is_dir():
        raise ReportPathError(f"{where}: {str(parent)!r} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ReportPathError(f"{where}: directory {str(parent)!r} is not writable")
    return target


def _file_mode(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _write_atomic(target: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``target``, then move it over ``target``."""
    where = f"cannot write the report to {str(target)!r}"
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as error:
        raise ReportPathError(f"{where}: {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, _file_mode(target))
        os.replace(temporary, target)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise ReportPathError(f"{where}: {error.strerror or error}") from None
        raise


def write_report(path="report.html", names=None) -> ReportFile:
    """Write the report for some systems to one self-contained HTML file, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (replaced if it exists).
    names : sequence of str, optional
        System names for :func:`topo.build`; default every built-in system.

    Returns
    -------
    ReportFile

    Raises
    ------
    ReportPathError
        For a path that cannot be written (checked before any work).
    topo.UnknownSystemError
        For an unknown system name.
    """
    target = check_output_path(path)
    fabrics = _fabrics(names)
    text = _render(fabrics)
    _write_atomic(target, text)
    return ReportFile(target, target.stat().st_size, tuple(G.graph.get("name", "fabric") for G in fabrics))


def write_compare_figure(estimates, names, path) -> ReportFile:
    """Write the curves of ``dgxtopo compare --out``: busbw and time by size of the same
    collective on several systems, one self-contained HTML file, atomically.

    Parameters
    ----------
    estimates : sequence of CollectiveEstimate
        One per system, over the same sizes.
    names : sequence of str
        The systems' names, in the same order (curve labels).
    path : str or os.PathLike
        The file to write (replaced if it exists).

    Returns
    -------
    ReportFile

    Raises
    ------
    ReportPathError
        For a path that cannot be written.
    topo.DgxTopoError
        If ``estimates`` and ``names`` differ in length.
    """
    target = check_output_path(path)
    estimates, names = list(estimates), [str(n) for n in names]
    if len(estimates) != len(names) or not estimates:
        raise DgxTopoError(f"expected one name per estimate, received {len(names)} names for "
                           f"{len(estimates)} estimates")
    curves = {f"{name}, {e.nranks} GPUs": e for name, e in zip(names, estimates)}
    collective = estimates[0].collective
    figures = _Figures()
    title = f"dgx-topo: {collective} on {' vs '.join(names)}"
    body = [f"<h1>{_esc(title)}</h1>",
            f"<p>Predicted nccl-tests {_esc(collective)} ({_esc(estimates[0].model)}); hover for the "
            "algorithm, protocol and channels at each size.</p>", "<div class='grid'>",
            figures.div(busbw_figure(curves, y="busbw"), "compare-busbw"),
            figures.div(busbw_figure(curves, y="time"), "compare-time"), "</div>"]
    _write_atomic(target, _page(title, body))
    return ReportFile(target, target.stat().st_size, tuple(names))
