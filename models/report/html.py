"""The offline HTML report that compares fabrics: the page ``dgxtopo report`` writes.

One self-contained file: plotly.js is embedded (the page opens without a network), then a
summary table of the chosen systems, all_reduce busbw and time against message size for all
of them, and per system its fabric, the channels of an 8-GPU all_reduce on it, its P2P
bandwidth and latency matrices and its 2-GPU all_reduce matrix, followed by a short text on
how the model works and how it was validated.

This module only renders: the numbers come from :mod:`models.report.analysis` (a figure the
models cannot produce for a system is replaced by a one-line note saying why), and the file
is written by :mod:`models.report.write`.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.io as pio
from plotly.offline import get_plotlyjs

from topo.errors import DgxTopoError
from topo.plot import fabric_figure
from topo.units import to_GBps

from ..plot import busbw_figure, channels_figure, format_bytes, latency_figure, p2p_figure, pairs_figure
from .analysis import REPORT_COLLECTIVE, REPORT_SIZE, CURVE_SIZES, ReportAnalysis, analyse_report, report_fabrics

__all__ = ["report_html", "render_report", "compare_html"]

_COLLECTIVE = REPORT_COLLECTIVE
_PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}


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


def _system_section(a, figures: _Figures, color_range) -> str:
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
            if a.curve8 is not None:
                curves[f"{a.row.name}, GPUs 0-7"] = a.curve8
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


def _seed_section(seed, figures: _Figures) -> str:
    parts = ["<section id='compare'>", "<h2>One DGX-2 against two DGX-1V</h2>"]
    if any(e is None for e in seed.estimates):
        parts += [figures.missing(f"{n} curves", err) for n, err in zip(seed.names, seed.errors) if err]
        parts.append("</section>")
        return "\n".join(parts)
    estimates = seed.estimates
    one, two = estimates
    ratio = float(np.atleast_1d(one.busbw)[-1] / np.atleast_1d(two.busbw)[-1])
    parts.append(
        f"<p>The same 16 GPUs, as one DGX-2 or as two DGX-1V on an EDR InfiniBand fabric "
        f"(<code>dgxtopo compare dgx2 2xdgx1v</code>). At {_esc(format_bytes(int(CURVE_SIZES[-1])))} the "
        f"DGX-2's all_reduce is {ratio:.2f}x faster: its rings run over the NVSwitches at NCCL's "
        f"{one.ring.nchannels} x {to_GBps(one.ring.bw_intra):.0f} GB/s, while the two DGX-1V's rings cross "
        f"the network at {two.ring.nchannels} x {to_GBps(two.ring.bw_intra):.0f} GB/s per node (each EDR "
        f"NIC's PCIe link). For small messages the network's latency decides instead.</p>")
    curves = {f"{n}, {e.nranks} GPUs": e for n, e in zip(seed.names, estimates)}
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
    return render_report(analyse_report(report_fabrics(names)))


def render_report(analysis: ReportAnalysis) -> str:
    """The report page of an :func:`~models.report.analysis.analyse_report` result."""
    analyses = analysis.systems
    bandwidths = [d["bandwidth"] for a in analyses for _, _, d in a.G.edges(data=True)]
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
        + ("<a href='#compare'>DGX-2 vs 2xDGX-1V</a> " if analysis.seed is not None else "")
        + f"{nav} <a href='#model'>model</a> <a href='#validation'>validation</a></nav></header>",
        "<section id='summary'><h2>Summary</h2>", _table([a.row for a in analyses]), "</section>",
        _curves_section(analyses, figures),
    ]
    if analysis.seed is not None:
        body.append(_seed_section(analysis.seed, figures))
    body += [_system_section(a, figures, color_range) for a in analyses]
    body.append(_MODEL_TEXT.format(model=_esc(model)))
    body.append(f"<footer class='muted'>{figures.count} figures. Generated by dgx-topo "
                f"{_esc(_version())}; <code>dgxtopo report</code>.</footer>")
    return _page(f"dgx-topo report: {names_text}", body)


def compare_html(estimates, names) -> str:
    """The page of ``dgxtopo compare --out``: busbw and time by size of the same collective
    on several systems.

    Parameters
    ----------
    estimates : sequence of CollectiveEstimate
        One per system, over the same sizes.
    names : sequence of str
        The systems' names, in the same order (curve labels).

    Returns
    -------
    str

    Raises
    ------
    topo.DgxTopoError
        If ``estimates`` and ``names`` differ in length or are empty.
    """
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
    return _page(title, body)


def _page(title: str, body) -> str:
    """A complete HTML document with plotly.js inline (no external resource)."""
    return "\n".join([
        "<!DOCTYPE html>", "<html lang='en'>", "<head>", "<meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{_esc(title)}</title>", f"<style>{_STYLE}</style>",
        "<script type='text/javascript'>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>",
        f"<script type='text/javascript'>{get_plotlyjs()}</script>", "</head>", "<body>",
        *body, f"<script type='text/javascript'>{_RESIZE}</script>", "</body>", "</html>", ""])
