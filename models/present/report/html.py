"""The offline HTML report that compares fabrics: the page ``dgxtopo report`` writes.

One self-contained file: plotly.js is embedded (the page opens without a network), then a
summary table of the chosen systems, all_reduce busbw and time against message size for all
of them, the generations side by side (NVLink per GPU, bisection, 8-GPU all_reduce, NVLS
beside ring), the model against measured runs with its errors per collective and per size,
NCCL against the optimal schedule on every GPU set (by set size, and the worst sets with the
explanation of each gap), the packing of trees that reaches the bound written as an MSCCL schedule
and timed beside NCCL and the bounds (DGX-1V GPUs 0,1,4,5, the trees drawn), a training step (Megatron 8.3B layouts on a DGX-2 and on two DGX-1V,
and the GPU generations ranked for it), DeepSeek-V3 on 256 GPUs of GB200 NVL72, DGX B200 and DGX H100
(the best of a bounded set of layouts on each, where its step goes, memory per GPU), one simulated training step per GPU generation (a
timeline: where the step's time goes), and per system its fabric, the channels of an 8-GPU all_reduce on it, its P2P bandwidth and
latency matrices and its 2-GPU all_reduce matrix, followed by a short text on how the model
works and how it was validated.

This module only renders: the numbers come from :mod:`models.present.report.analysis` (a figure the
models cannot produce for a system is replaced by a one-line note saying why), and the file
is written by :mod:`models.present.report.write`.
"""

from __future__ import annotations

import math
import re

import numpy as np

from topo.errors import DgxTopoError
from topo.select import format_gpu_ids
from topo.units import to_GBps, to_us
from topo.version import __version__

from ..explain import describe_parameter, explain_check
from ..format import format_bytes, format_gbps, format_percent
from ..page import FigureDivs, escape, html_page
from ..plot import (busbw_figure_dict, check_figure_dict, curve_styles,
                    generations_figure_dict, latency_figure_dict, p2p_check_figure_dict, p2p_figure_dict,
                    pairs_figure_dict, schedule_figure_dict)
from ..bounds_plot import packing_figure_dict, ratio_by_size_figure_dict
from ..plan_plot import memory_figure_dict, step_time_figure_dict
from ..simulate_plot import gantt_figure_dict
from .drawings import slug, system_drawings
from ...studies.moe_systems import MOE_EP, MOE_PP, MOE_RECOMPUTE, MOE_ZERO
from ...studies.survey import (BOUND_RELAY, BOUND_SIZE, CURVE_SIZES, GENERATION_GPUS, REPORT_COLLECTIVE,
                               REPORT_SIZE, SIMULATED_WORKLOAD, TRAINING_TP, report_fabrics)
from .analysis import ReportAnalysis, analyse_report, colour_range, worst_sets

__all__ = ["report_html", "render_report", "compare_html", "check_html"]

_COLLECTIVE = REPORT_COLLECTIVE


# -------------------------------------------------------------------------------- HTML


def _gbps(value) -> str:
    return format_gbps(value, 1, missing="n/a")


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
    lines = ["<div class='scroll'><table class='summary systems'>", "<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in headers)
             + "</tr></thead>", "<tbody>"]
    for r in rows:
        cells = [f"<b>{escape(r.name)}</b><br><span class='muted'>{escape(r.system)}</span>", r.gpus,
                 escape(", ".join(r.gpu_models)), r.nvlink_links, r.nvswitches, r.nics,
                 _gbps(r.injection), _gbps(r.bisection), _gbps(r.busbw_8), _gbps(r.busbw_16),
                 _pair(r.best_pair, r.best_busbw, r.best_count),
                 _pair(r.worst_pair, r.worst_busbw, r.worst_count)]
        lines.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    lines += ["</tbody>", "</table></div>"]
    notes = [f"{escape(r.name)}: {escape(note)}" for r in rows for note in r.notes]
    lines.append("<p class='muted'>Bandwidths are per direction; GB/s is 10<sup>9</sup> B/s and "
                 f"{size} is 2<sup>30</sup> bytes, as nccl-tests counts them. busbw is nccl-tests' bus "
                 "bandwidth, predicted. n/a: the system has fewer GPUs than the column needs"
                 + (", or the model does not cover it:" if notes else ".") + "</p>")
    if notes:
        lines.append("<ul class='muted'>" + "".join(f"<li>{n}</li>" for n in notes) + "</ul>")
    return "\n".join(lines)




def _system_section(a, figures: FigureDivs, color_range, drawn=None) -> str:
    G, r = a.G, a.row
    at = slug(r.system)
    description = G.graph.get("description", "")
    parts = [f"<section id='system-{at}'>", f"<h2>{escape(r.name)}</h2>",
             f"<p>{escape(description) + '. ' if description else ''}Hover over a link's midpoint dot for "
             "its endpoints, link count and bandwidth; click legend entries to hide link classes.</p>"]
    if drawn is None:  # not shipped (models.present.report.drawings)
        drawn = system_drawings(G, a.e8, color_range, r.name, r.system)
    parts.append(figures.written(drawn["fabric"], f"{at}-fabric",
                                 "GPUs (green squares, CUDA index), NVSwitches, PCIe switches, CPUs and NICs; "
                                 "dotted: PCIe, dashed: CPU-to-CPU."))
    if a.e8 is not None:
        parts.append(figures.written(drawn["channels"], f"{at}-channels",
                                     f"The channels of an all_reduce of GPUs 0-7 at {format_bytes(REPORT_SIZE)}: "
                                     "each link coloured by the share of NCCL's capacity its channels reserve; "
                                     "red links bind the bandwidth."))
    elif a.e8_error:
        parts.append(figures.missing("channels of an 8-GPU all_reduce", a.e8_error))
    grid = []
    if a.p2p is not None:
        grid.append(figures.div(p2p_figure_dict(a.p2p), f"{at}-p2p"))
        grid.append(figures.div(latency_figure_dict(a.p2p), f"{at}-latency"))
    else:
        grid.append(figures.missing("P2P matrices", a.p2p_error))
    if a.pairs is not None:
        grid.append(figures.div(pairs_figure_dict(a.pairs, collective=_COLLECTIVE, nbytes=REPORT_SIZE,
                                             title=f"{r.name}: 2-GPU all_reduce busbw at "
                                                   f"{format_bytes(REPORT_SIZE)} (GB/s)"),
                                f"{at}-pairs"))
    elif a.pairs_error:
        grid.append(figures.missing("2-GPU all_reduce matrix", a.pairs_error))
    parts.append("<div class='grid'>" + "".join(grid) + "</div>")
    parts.append("</section>")
    return "\n".join(parts)


def _curves_section(analyses, figures: FigureDivs) -> str:
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
        parts.append(figures.div(busbw_figure_dict(curves, y="busbw", title="predicted all_reduce busbw (GB/s)"),
                                 "curves-busbw"))
        parts.append(figures.div(busbw_figure_dict(curves, y="time", title="predicted all_reduce time (µs)"),
                                 "curves-time"))
        parts.append("</div>")
    for name, error in missing:
        parts.append(figures.missing(f"{name} curves", error))
    parts.append("</section>")
    return "\n".join(parts)


def _seed_section(seed, figures: FigureDivs) -> str:
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
        f"(<code>dgxtopo compare --system dgx2 2xdgx1v</code>). At {escape(format_bytes(int(CURVE_SIZES[-1])))} the "
        f"DGX-2's all_reduce is {ratio:.2f}x faster: its rings run over the NVSwitches at NCCL's "
        f"{one.ring.nchannels} x {to_GBps(one.ring.bw_intra):.0f} GB/s, while the two DGX-1V's rings cross "
        f"the network at {two.ring.nchannels} x {to_GBps(two.ring.bw_intra):.0f} GB/s per node (each EDR "
        f"NIC's PCIe link): {_nominal_ratio(one, two):.2f}x in NCCL's own figures. What the links "
        f"achieve {'widens' if ratio > _nominal_ratio(one, two) else 'narrows'} it: {_achieved(one)} "
        f"against {_achieved(two)}. For small messages the "
        f"network's latency decides instead.</p>")
    curves = {f"{n}, {e.nranks} GPUs": e for n, e in zip(seed.names, estimates)}
    parts += ["<div class='grid'>",
              figures.div(busbw_figure_dict(curves, y="busbw", title="all_reduce busbw (GB/s), 16 GPUs"),
                          "compare-busbw"),
              figures.div(busbw_figure_dict(curves, y="time", title="all_reduce time (µs), 16 GPUs"),
                          "compare-time"),
              "</div>", "</section>"]
    return "\n".join(parts)


def _nominal_ratio(one, two) -> float:
    return float(np.atleast_1d(one.nccl_busbw)[-1] / np.atleast_1d(two.nccl_busbw)[-1])


def _achieved(e) -> str:
    m = e.measurement
    if m is None or not m.link:
        return "NCCL's figures"
    return f"{m.link} at {m.ratio:.2f}x NCCL's figure"


def _coinciding(curves) -> list:
    """Sentences naming the curves of a figure that coincide (drawn dashed over each other)."""
    labels = list(curves)
    points = [(np.atleast_1d(e.nbytes), np.atleast_1d(e.busbw)) for e in curves.values()]
    return [f"{labels[i]} coincides with {labels[style['same_as']]}"
            for i, style in enumerate(curve_styles(points)) if style["same_as"] is not None]


def _algo_at(e, nbytes=REPORT_SIZE) -> str:
    index = int(np.flatnonzero(np.atleast_1d(e.nbytes) == nbytes)[0])
    return f"{np.atleast_1d(e.algorithm)[index]}/{np.atleast_1d(e.protocol)[index]}"


def _generations_section(gens, figures: FigureDivs) -> str:
    size = format_bytes(REPORT_SIZE)
    k = GENERATION_GPUS
    parts = ["<section id='generations'>", "<h2>Generations</h2>",
             f"<p>Every DGX generation in this report side by side: the NVLink bandwidth one GPU can "
             f"send, the NVLink bisection of the whole system, and the predicted nccl-tests all_reduce "
             f"of GPUs 0-{k - 1} (float32, sum) as NCCL chooses it, forced to ring, and forced to NVLS "
             f"(NVLink SHARP: the reduction done in the NVSwitches) where the model has it.</p>"]
    headers = ["system", "GPU", "NVLink", "NVLink per GPU (GB/s)", "NVLink bisection (GB/s)",
               f"all_reduce busbw, {k} GPUs, {size}: NCCL's choice (GB/s)", "ring (GB/s)", "NVLS (GB/s)"]
    lines = ["<div class='scroll'><table class='summary generations'>",
             "<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in headers) + "</tr></thead>", "<tbody>"]
    for g in gens:
        auto = (f"{_gbps(g.busbw('auto'))}<br><span class='muted'>{escape(_algo_at(g.auto))}</span>"
                if g.auto is not None else "n/a")
        cells = [f"<b>{escape(g.name)}</b><br><span class='muted'>{escape(g.system)}</span>", escape(g.gpu_model),
                 escape(g.nvlink), _gbps(g.nvlink_per_gpu), _gbps(g.bisection), auto,
                 _gbps(g.busbw("ring")), _gbps(g.busbw("nvls"))]
        lines.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    lines += ["</tbody>", "</table></div>"]
    notes = [f"{g.name}: {what}: {err}" for g in gens
             for what, err in (("NCCL's choice", g.auto_error), ("ring", g.ring_error)) if err]
    nvls_errors = {}
    for g in gens:
        if g.nvls_error:
            nvls_errors.setdefault(g.nvls_error, []).append(g.name)
    notes += [f"NVLS n/a on {', '.join(names)}: {err}" for err, names in nvls_errors.items()]
    lines.append(f"<p class='muted'>Per direction; GB/s is 10<sup>9</sup> B/s, {size} is 2<sup>30</sup> "
                 "bytes. NVLink per GPU is the smallest NVLink line rate a GPU can send at; bisection "
                 "is over the worst balanced cut of the system's GPUs."
                 + (" n/a: the model gives no figure:" if notes else "") + "</p>")
    if notes:
        lines.append("<ul class='muted'>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
    parts.append("\n".join(lines))
    parts.append(figures.div(generations_figure_dict([g.name for g in gens], [g.nvlink_per_gpu for g in gens],
                                                [g.bisection for g in gens],
                                                title="NVLink per GPU and NVLink bisection by generation"),
                             "generations-nvlink"))
    auto = {f"{g.name}, GPUs 0-{k - 1}": g.auto for g in gens if g.auto is not None}
    same = _coinciding(auto)
    if auto:
        caption = ("Curves that coincide are drawn over each other, dashed, thinner and with other "
                   "markers, so that each stays visible" + (f": {escape('; '.join(same))}." if same else "."))
        parts += ["<div class='grid'>",
                  figures.div(busbw_figure_dict(auto, y="busbw", title=f"predicted all_reduce busbw, {k} GPUs, "
                                                                  "NCCL's choice (GB/s)"),
                              "generations-busbw", caption),
                  figures.div(busbw_figure_dict(auto, y="time", title=f"predicted all_reduce time, {k} GPUs, "
                                                                 "NCCL's choice (µs)"),
                              "generations-time"), "</div>"]
    versus = {}
    for g in gens:
        if g.ring is not None:
            versus[f"{g.name}, ring"] = g.ring
        if g.nvls is not None:
            versus[f"{g.name}, NVLS"] = g.nvls
    if versus:
        with_nvls = [g.name for g in gens if g.nvls is not None]
        why = ("" if with_nvls else " NVLS is not shown: the model gives no NVLS estimate on any of "
               "these systems (see the notes under the table).")
        title = ("predicted all_reduce busbw, NVLS vs ring (GB/s)" if with_nvls
                 else "predicted all_reduce busbw, ring (GB/s); no NVLS in the model")
        parts.append(figures.div(busbw_figure_dict(versus, y="busbw", title=title), "generations-nvls",
                                 f"all_reduce of GPUs 0-{k - 1} forced to ring"
                                 + (f" and to NVLS on {escape(', '.join(with_nvls))}." if with_nvls else ".")
                                 + escape(why)))
    parts.append("</section>")
    return "\n".join(parts)


def _abs_pct(value) -> str:
    return format_percent(value, space=True)


def _error_cell(value, row=None) -> str:
    """A signed error, its cell coloured by size (under 5 %, under 20 %, above); a check row's
    exact size on hover."""
    tip = "" if row is None else f" title='{row.size} B'"
    if value is None or not np.isfinite(value):
        return f"<td class='na'{tip}>-</td>"
    grade = "ok" if abs(value) < 0.05 else "fair" if abs(value) < 0.2 else "poor"
    return f"<td class='err {grade}'{tip}>{format_percent(value, signed=True, space=True)}</td>"


def _nominal(size: int) -> int:
    """The power of two an nccl-tests size was asked as (it rounds down to whole elements
    per rank: 1008 B of 12 ranks for 1 KiB)."""
    return 1 << max(0, math.ceil(math.log2(size))) if size > 0 else 0


def _measured_collectives(m, figures: FigureDivs) -> list:
    runs = m.runs
    checks = [c for c in m.collectives]
    parts = ["<h3>nccl-tests on 12 GPUs of a DGX-2</h3>",
             f"<p><b>Data</b>: {escape(runs.get('machine', ''))}; {escape(runs.get('program', ''))}; "
             f"CUDA devices {escape(','.join(map(str, runs.get('cuda_visible_devices', []))))}; NCCL: "
             f"{escape(runs.get('nccl_version', 'not stated'))}. Source: {escape(runs.get('source', ''))}.</p>",
             "<p><b>Predicted</b>: NCCL's tuning model for what NCCL chooses, then the measurement model "
             "(<code>models.measured</code>, <code>-g 12</code> as the runs were made) for what nccl-tests "
             "measures; <code>dgxtopo check FILE --system dgx2 -g 12</code> prints the same rows. "
             "Errors are predicted / measured - 1.</p>"]
    if m.constants:
        parts.append("<p><b>Fitted to these runs</b> (so the rows below that were used in the fit are not "
                     "an independent test):</p><ul>"
                     + "".join(f"<li><code>{escape(describe_parameter(c))}</code></li>" for c in m.constants) + "</ul>")
    parts.append("<p>Everything else (the sizes in between, where NCCL switches protocol and algorithm; "
                 "all_gather and reduce_scatter above 64 KiB) is predicted, not fitted.</p>")
    headers = ["collective", "columns", "rows", "median |time error|", "max |time error|",
               "median |busbw error|", "max |busbw error|", "rows used in the fit", "suspect in the data"]
    lines = ["<div class='scroll'><table class='summary errors collectives'>",
             "<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in headers) + "</tr></thead>", "<tbody>"]
    for c in checks:
        if c.check is None:
            lines.append(f"<tr><td>{escape(c.collective)}</td><td>{escape(c.placement)}</td>"
                         f"<td colspan='7'>not available: {escape(c.error)}</td></tr>")
            continue
        k = c.check
        cells = [escape(c.collective), escape(c.placement), len(k.rows), _abs_pct(k.median_abs_time_error),
                 _abs_pct(k.max_abs_time_error), _abs_pct(k.median_abs_busbw_error),
                 _abs_pct(k.max_abs_busbw_error), escape(c.fitted), escape(c.suspect) or "-"]
        lines.append("<tr>" + "".join(f"<td>{v}</td>" for v in cells) + "</tr>")
    lines += ["</tbody>", "</table></div>"]
    parts.append("\n".join(lines))
    # The error at every size, every collective side by side (out-of-place columns).
    shown = [c for c in checks if c.check is not None and c.placement == "out-of-place"]
    if shown:
        by_size = [{_nominal(r.size): r for r in c.check.rows} for c in shown]
        sizes = sorted({size for table in by_size for size in table})
        head = ("<thead><tr><th rowspan='2'>size</th>"
                + "".join(f"<th colspan='2'>{escape(c.collective)}</th>" for c in shown)
                + "</tr><tr>" + "<th>time</th><th>busbw</th>" * len(shown) + "</tr></thead>")
        rows = []
        for size in sizes:
            cells = []
            for table in by_size:
                r = table.get(size)
                cells.append(_error_cell(None if r is None else r.time_error, r)
                             + _error_cell(None if r is None else r.busbw_error, r))
            rows.append(f"<tr><td>{escape(format_bytes(size))}</td>{''.join(cells)}</tr>")
        parts += ["<p>The error at every size (out-of-place columns; green under 5 %, amber under 20 %, "
                  "red above; busbw error is - where nccl-tests printed 0.00). all_gather and "
                  "reduce_scatter sizes are the total over the 12 ranks, which nccl-tests rounds down "
                  "to whole elements per rank (1008 B for 1 KiB): they are listed at the size asked for; "
                  "hover a cell for the exact size.</p>",
                  "<div class='scroll'><table class='summary errors bysize'>" + head + "<tbody>"
                  + "".join(rows) + "</tbody></table></div>"]
        parts.append("<div class='grid'>")
        for c in shown:
            parts.append(figures.div(check_figure_dict(c.check), f"measured-{slug(c.collective)}",
                                     f"{escape(c.collective)} (out-of-place): measured (solid, circles) and "
                                     "predicted (dashed, diamonds) busbw and time, and the error at each size."
                                     + (f" Suspect in the data: {escape(c.suspect)}." if c.suspect else "")))
        parts.append("</div>")
    return parts


def _measured_p2p(m, figures: FigureDivs) -> list:
    src = m.p2p_source
    parts = ["<h3>p2pBandwidthLatencyTest on a DGX-1V (row of GPU 0)</h3>"]
    if m.p2p_error:
        return parts + [figures.missing("P2P comparison", m.p2p_error)]
    source = src.get("row_of_gpu", 0)
    parts.append(f"<p><b>Data</b>: {escape(src.get('machine', ''))}; {escape(src.get('program', ''))}. "
                 f"Source: {escape(src.get('source', ''))}. {escape(src.get('notes', ''))}</p>")
    if m.p2p_constants:
        parts.append("<p><b>Fitted to this row</b> (the P2P model's fitted constants; every other "
                     "system is predicted with them):</p><ul>" + "".join(
                         f"<li><code>{escape(name)} = {c.value:.4g}</code>: {escape(c.fitted_to)}</li>"
                         for name, c in m.p2p_constants) + "</ul>")
    destinations = m.p2p[0].destinations
    head = ("<thead><tr><th rowspan='2'>destination GPU</th>"
            + "".join(f"<th colspan='3'>{escape(r.label)} ({'GB/s' if r.quantity == 'bandwidth' else 'µs'})</th>"
                      for r in m.p2p)
            + "</tr><tr>" + "<th>measured</th><th>predicted</th><th>error</th>" * len(m.p2p) + "</tr></thead>")
    rows = []
    for j, d in enumerate(destinations):
        cells = []
        for r in m.p2p:
            convert = to_GBps if r.quantity == "bandwidth" else to_us
            cells.append(f"<td>{convert(r.measured[j]):.2f}</td><td>{convert(r.predicted[j]):.2f}</td>"
                         + _error_cell(r.errors[j]))
        label = f"{d} (local copy)" if d == source else str(d)
        rows.append(f"<tr><td>{escape(label)}</td>{''.join(cells)}</tr>")
    stats = "; ".join(f"{escape(r.label)}: median |error| {_abs_pct(float(np.median(np.abs(r.errors))))}, "
                      f"max {_abs_pct(float(np.max(np.abs(r.errors))))}" for r in m.p2p)
    parts += ["<div class='scroll'><table class='summary errors'>" + head + "<tbody>" + "".join(rows)
              + "</tbody></table></div>", f"<p class='muted'>{stats}.</p>", "<div class='grid'>"]
    for quantity in ("bandwidth", "latency"):
        series = [(r.label, r.measured, r.predicted) for r in m.p2p if r.quantity == quantity]
        if series:
            parts.append(figures.div(p2p_check_figure_dict(destinations, series, quantity=quantity, source=source,
                                                      title=f"DGX-1V, GPU {source}'s row: P2P {quantity}, "
                                                            "measured vs predicted"),
                                     f"measured-p2p-{quantity}"))
    parts.append("</div>")
    return parts


def _measurement_section(m, figures: FigureDivs) -> str:
    parts = ["<section id='measured'>", "<h2>Model vs measurement</h2>",
             "<p>The model against published measurements of real machines, with every error shown. "
             "Constants fitted to a data set are listed with it: rows used in a fit test the fit, not "
             "the model.</p>"]
    if m.collectives:
        parts += _measured_collectives(m, figures)
    if m.p2p or m.p2p_error:
        parts += _measured_p2p(m, figures)
    parts.append("</section>")
    return "\n".join(parts)


def _share(value) -> str:
    """A share (NCCL over the bound, MFU) in whole percent: ``87%``."""
    return format_percent(value, 0, missing="n/a")


def _arrows(text: str) -> str:
    """Escaped prose with every ``a->b`` kept on one line (a line break inside an arrow reads as
    two words)."""
    return re.sub(r"(\S*-&gt;\S*)", r"<span class='nowrap'>\1</span>", text)


def _bounds_section(bounds, figures: FigureDivs, absent=()) -> str:
    size = format_bytes(BOUND_SIZE)
    parts = ["<section id='bounds'>", "<h2>NCCL against the optimum</h2>",
             f"<p>For every set of 2 or more GPUs of each system: NCCL's predicted all_reduce busbw at {size} "
             "against the best busbw any schedule could reach on the same GPUs (<code>models.bound</code>): "
             "reduce_scatter + all_gather over the binding cut of the fabric (ForestColl's cut bound, reached "
             "by packing spanning trees), or, where NCCL reduces in the switches (NVLS), the cut bound on "
             f"any schedule. Relays: {escape(BOUND_RELAY)} (NVSwitches, PCIe switches and CPUs forward; GPUs "
             "outside the set do not, as in NCCL). The bound has no latency term; it counts NVLink alone on "
             "NVSwitch systems (NCCL uses nothing else there) and every link, PCIe included, on the others "
             "(NCCL falls back to PCIe between GPUs without NVLink). Sets that the fabric's symmetries map onto "
             "each other are computed once.</p>"]
    shown = [b for b in bounds if b.sets]
    head = ["system", "links of the bound", "GPU sets", "computed (classes)", "all GPUs: bound (GB/s)",
            "all GPUs: NCCL (GB/s)", "all GPUs: NCCL / bound", "mean NCCL / bound", "worst NCCL / bound"]
    lines = ["<div class='scroll'><table class='summary bounds'>",
             "<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr></thead>", "<tbody>"]
    for b in shown:
        full = max(b.sets, key=lambda x: len(x.gpus))
        weights = np.array([x.count for x in b.sets if math.isfinite(x.ratio)], dtype=float)
        ratios = np.array([x.ratio for x in b.sets if math.isfinite(x.ratio)])
        mean = float(np.average(ratios, weights=weights)) if ratios.size else None
        worst = min(b.sets, key=lambda x: (x.ratio if math.isfinite(x.ratio) else math.inf, x.gpus))
        cells = [f"<b>{escape(b.name)}</b><br><span class='muted'>{escape(b.system)}</span>",
                 escape("NVLink" if b.edge_kinds == ("nvlink",) else "all (NVLink, PCIe, CPU)"), b.nsets, len(b.sets),
                 _gbps(full.bound_busbw), f"{_gbps(full.nccl_busbw)}<br><span class='muted'>{escape(full.algorithm)}</span>",
                 _share(full.ratio), _share(mean),
                 f"{_share(worst.ratio)}<br><span class='muted'>GPUs {escape(format_gpu_ids(worst.gpus))}</span>"]
        lines.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    lines += ["</tbody>", "</table></div>"]
    parts.append("\n".join(lines))
    for b in bounds:
        if b.error:
            parts.append(figures.missing(f"{b.name}: NCCL against the optimum", b.error))
    if absent:
        parts.append(f"<p class='muted absent'>Not in this section: {escape(', '.join(absent))}. Its GPUs span "
                     "several hosts (the compute trays of a rack), and its GPU sets are too many to bound each "
                     "class of them here; <code>dgxtopo bound --system NAME --gpus IDS</code> bounds any one set.</p>")
    if shown:
        ratio = ratio_by_size_figure_dict({b.name: b.by_size() for b in shown})
        same = [f"{t['name']} coincides with {t['hovertemplate'].split('(coincides with ')[1].split(')')[0]}"
                for t in ratio["data"] if "(coincides with " in t["hovertemplate"]]
        parts.append(figures.div(ratio, "bounds-ratio",
                                 "Mean over the sets of each size (every set counted, symmetric ones "
                                 "included); bars span the worst to the best set. The lines stand a little "
                                 "apart at each size so that no bar hides another"
                                 + (f"; lines that coincide are dashed, with other markers: {escape('; '.join(same))}."
                                    if same else ".")))
    worst = worst_sets(bounds)
    if worst:
        head = ["system", "GPUs", "sets like it", "bound (GB/s)", "NCCL (GB/s)", "NCCL / bound", "what binds",
                "why"]
        rows = []
        for w in worst:
            x = w.set
            rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in [
                escape(w.name), escape(format_gpu_ids(x.gpus)), x.count, _gbps(x.bound_busbw),
                f"{_gbps(x.nccl_busbw)}<br><span class='muted'>{escape(x.algorithm)}</span>", _share(x.ratio),
                escape(w.binds),
                f"{_arrows(escape(w.explanation))}<details><summary>working</summary><pre>{escape(w.working)}</pre></details>"])
                + "</tr>")
        parts += [f"<h3>The worst sets</h3><p>The {len(worst)} lowest ratios (up to "
                  f"{max(len(b.worst) for b in bounds)} per system), lowest first. <i>links</i>: NCCL's "
                  "bandwidth term reaches the bound, what is left is what the links achieve and latency; "
                  "<i>NCCL's channels</i>: its rings (or NVLS channels) carry less than the links allow. "
                  "<code>dgxtopo bound all_reduce --gpus IDS --explain</code> prints the same working.</p>",
                  "<div class='scroll'><table class='summary worst'>",
                  "<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr></thead><tbody>",
                  *rows, "</tbody></table></div>"]
    parts.append("</section>")
    return "\n".join(parts)


def _schedule_section(s, G, figures: FigureDivs) -> str:
    """The tree packing written as an MSCCL schedule on one GPU set, beside NCCL and the bounds;
    ``G`` is the system's fabric (the trees are drawn on it)."""
    parts = ["<section id='schedule'>", "<h2>The packing as a schedule</h2>"]
    c = s.comparison
    if c is None:
        parts += [figures.missing(f"{s.name}: the packing's schedule", s.error), "</section>"]
        return "\n".join(parts)
    e = c.evaluation
    gpus = format_gpu_ids(c.gpus)
    line_rate = e.points[-1].bound_busbw
    parts.append(
        f"<p>The spanning trees that reach the bound on the NVLinks (<code>models.studies.packing</code>) are a "
        f"schedule a machine can run: <code>dgxtopo schedule export {escape(c.collective)} --system "
        f"{escape(s.system)} --gpus {escape(','.join(map(str, c.gpus)))} --size 1G --out packing.xml</code> writes them as "
        f"MSCCL XML for one message size, in the protocol and chunks per GPU that time fastest there (a small "
        f"message in few chunks of LL, as each step waits Ring's latency first, least for LL; 1 GiB: {c.steps} steps, "
        f"{c.threadblocks} threadblocks, {c.nchannels} channels, {escape(e.protocol)}), "
        f"which the MSCCL runtime runs and <code>dgxtopo schedule evaluate</code> times: each step a flow of the "
        f"simulator, links shared max-min, priced as NCCL's ring is. On GPUs {escape(gpus)} of the "
        f"{escape(s.name)} NCCL's rings leave NVLinks idle; the packing's trees use them. Two bounds, neither "
        f"with a latency term: every link at its line rate, PCIe included (<code>dgxtopo bound</code>, "
        f"{_gbps(line_rate)} GB/s), and the NVLinks alone at what NCCL's kernels achieve over them "
        f"(x{e.pricing.achieved_ratio:.4f} of NCCL's figure of each link), the rate the evaluator lets the "
        f"trees move and so the most they can reach ({_gbps(c.achieved_bound)} GB/s).</p>")
    head = ["size", "NCCL (GB/s)", "packing's schedule (GB/s)", "schedule / NCCL",
            "schedule / its bound", "protocol", "chunks per GPU", "loops"]
    rows = []
    protocols = c.protocols or (e.protocol,) * len(e.points)
    for p, k, protocol in zip(e.points, c.chunks or ("",) * len(e.points), protocols):
        cells = [escape(format_bytes(p.nbytes)),
                 f"{_gbps(p.nccl_busbw)}<br><span class='muted'>{escape(p.nccl_algorithm or '')}</span>",
                 _gbps(p.busbw), f"{p.busbw / p.nccl_busbw:.2f}x" if p.nccl_busbw else "n/a",
                 _share(p.busbw / c.achieved_bound), escape(protocol), k, p.loops]
        rows.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    parts += ["<div class='scroll'><table class='summary schedule'>",
              "<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr></thead><tbody>",
              *rows, "</tbody></table></div>"]
    bounds = [("bound, line rates", line_rate), ("bound, NVLink at NCCL's achieved rate", c.achieved_bound)]
    parts.append(figures.div(schedule_figure_dict(e, bounds, title=f"{s.name} GPUs {gpus}: {c.collective}, "
                                                                   "NCCL vs the packing's schedule vs the bound"),
                             "schedule-busbw",
                             "Each size runs the schedule written for it (its protocol and chunks per GPU in the "
                             "table). "
                             "Small sizes pay each step's latency along the trees' depth; from a few MiB the "
                             "trees pipeline, loop after loop, and approach their bound."))
    parts.append(figures.div(packing_figure_dict(G, c.packing, title=f"{s.name} GPUs {gpus}: the packing's "
                                                                 f"{len(c.packing.trees)} trees"),
                             "schedule-trees",
                             "Each link coloured by the share of its capacity (at NCCL's achieved rate) the "
                             "trees load; the trees' arcs, root first, above the drawing."))
    parts.append("</section>")
    return "\n".join(parts)


#: The MoE section's step components, in the table's order, with their headings.
_MOE_COMPONENTS = (("compute", "compute"), ("ep_comm", "EP all-to-all"), ("tp_comm", "TP"), ("cp_comm", "CP"),
                   ("pp_comm", "PP sends"), ("dp_comm", "DP"), ("bubble", "bubble"), ("optimizer", "optimizer"))


def _moe_section(m, figures: FigureDivs) -> str:
    """The best of a bounded set of layouts of DeepSeek-V3 on 256 GPUs of each system, where each
    step's time goes and its memory per GPU."""
    spec = next((r.search.best.workload_spec for r in m.systems if r.search is not None), None)
    size = (f" ({spec.parameters / 1e9:.0f} B parameters, {spec.active_parameters / 1e9:.0f} B active per token)"
            if spec is not None and hasattr(spec, "active_parameters") else "")
    parts = ["<section id='moe'>", f"<h2>DeepSeek-V3 on {m.ngpus} GPUs: GB200 NVL72 vs DGX B200 vs DGX H100</h2>",
             f"<p>{escape(m.workload)}{size} on {m.ngpus} GPUs of each system: "
             f"the best of {m.candidates} layouts per system, <b>not a full search</b>: no tensor or context "
             f"parallelism (as DeepSeek-V3 was trained), pipeline {_or(MOE_PP)}, expert parallel "
             f"{_or(MOE_EP)} where it divides the data-parallel degree, ZeRO {_or(MOE_ZERO)}, recomputation "
             f"{_or(MOE_RECOMPUTE)} (<code>models.studies.moe_systems</code>). Each is the planner's analytical "
             "step (<code>models.search(..., simulate=0)</code>), ranked as the planner ranks: fitting first, "
             "then by step time. The columns after MFU are what each part of the step adds to it (its exposed "
             "time); they add up to the step. <code>dgxtopo plan deepseek-v3 --system 32xdgxh100 --search</code> "
             "searches every degree.</p>"]
    head = (["system", "best layout", "step (s)", "tokens/s", "MFU", "memory per GPU (GB)"]
            + [f"{title} (s)" for _, title in _MOE_COMPONENTS] + ["fitting candidates"])
    rows, best = [], []
    for r in m.systems:
        s = r.search
        if s is None or not s.fitting():
            rows.append(f"<tr><td>{escape(r.system)}</td><td colspan='{len(head) - 1}'>n/a: "
                        f"{escape(r.error or 'no candidate fits')}</td></tr>")
            continue
        p = s.best
        best.append((r.system, p))
        times = {c.name: c.exposed for c in p.components}
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in [
            f"<b>{escape(p.fabric)}</b><br><span class='muted'>{escape(r.system)}</span>",
            escape(p.layout.label()), f"{p.step_time:.1f}", f"{p.tokens_per_s:,.0f}", _share(p.mfu),
            f"{p.memory.total / 1e9:.1f} of {p.memory.capacity / 1e9:.0f}",
            *(f"{times.get(name, 0.0):.2f}" for name, _ in _MOE_COMPONENTS),
            f"{len(s.fitting())} of {len(s.plans)}"]) + "</tr>")
    parts.append("<div class='scroll'><table class='summary moe'><thead><tr>"
                 + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr></thead><tbody>" + "".join(rows)
                 + "</tbody></table></div>")
    for r in m.systems:
        if r.search is None:
            parts.append(figures.missing(f"{r.system}: {m.workload}'s layouts", r.error or ""))
    if best:
        plans = [p for _, p in best]
        labels = [f"{p.fabric}<br>{p.layout.label()}" for p in plans]
        grid = []
        for make, name, title in ((step_time_figure_dict, "moe-step", "exposed step time of the best layout"),
                                  (memory_figure_dict, "moe-memory", "memory per GPU of the best layout")):
            fig = make(plans, top=len(plans))
            for trace in fig["data"]:
                trace["x"] = labels
            fig["layout"]["title"]["text"] = f"{m.workload} on {m.ngpus} GPUs: {title}"
            fig["layout"]["xaxis"]["title"]["text"] = "system and layout"
            grid.append(figures.div(fig, name))
        parts.append("<div class='grid'>" + "".join(grid) + "</div>")
    parts.append("</section>")
    return "\n".join(parts)


def _or(values) -> str:
    return escape(", ".join(map(str, values[:-1])) + " or " + str(values[-1]))


def _training_section(t, figures: FigureDivs) -> str:
    parts = ["<section id='training'>", "<h2>Training step</h2>",
             f"<p>{escape(t.workload)} on {escape(' and '.join(t.names))}, the same 16 GPUs: every layout with "
             f"tensor parallelism {escape(' or '.join(map(str, TRAINING_TP)))} (pipeline and data parallel "
             "degrees, ZeRO stage and recomputation searched; <code>models.search</code>), each collective "
             "estimated on the GPU groups the planner chose on the fabric. <code>models.search("
             f"&quot;{escape(t.workload)}&quot;, G)</code> searches every degree.</p>"]
    head = ["system", "best layout", "step (s)", "samples/s", "tokens/s", "model TFLOP/s per GPU", "MFU",
            "memory per GPU (GB)", "binding", "tensor-parallel groups"]
    rows = []
    for name, s, error in zip(t.names, t.searches, t.errors):
        if s is None or not s.fitting():
            rows.append(f"<tr><td>{escape(name)}</td><td colspan='{len(head) - 1}'>n/a: "
                        f"{escape(error or 'no layout fits')}</td></tr>")
            continue
        p = s.best
        groups = " ".join("(" + ",".join(map(str, g)) + ")" for g in p.groups["tp"][:4])
        more = len(p.groups["tp"]) - 4
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in [
            f"<b>{escape(p.fabric)}</b><br><span class='muted'>{escape(name)}</span>", escape(p.layout.label()),
            f"{p.step_time:.2f}", f"{p.samples_per_s:.2f}", f"{p.tokens_per_s:,.0f}", f"{p.model_tflops_per_gpu:.1f}",
            _share(p.mfu), f"{p.memory.total / 1e9:.1f}", escape(p.binding()),
            escape(groups + (f" +{more}" if more > 0 else ""))]) + "</tr>")
    parts.append("<div class='scroll'><table class='summary training'><thead><tr>"
                 + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr></thead><tbody>" + "".join(rows)
                 + "</tbody></table></div>")
    grid = []
    for name, s, error in zip(t.names, t.searches, t.errors):
        at = slug(name)
        if s is None:
            grid.append(figures.missing(f"{name} layouts", error))
            continue
        step = step_time_figure_dict(s, top=10)
        step["layout"]["title"]["text"] = f"{s.best.fabric}: exposed step time per layout (best 10 that fit)"
        grid.append(figures.div(step, f"training-{at}-step"))
        mem = memory_figure_dict(s, top=10)
        mem["layout"]["title"]["text"] = f"{s.best.fabric}: memory per GPU per layout"
        grid.append(figures.div(mem, f"training-{at}-memory"))
    parts.append("<div class='grid'>" + "".join(grid) + "</div>")
    head = ["GPU", "time per sample (ms)", "compute (ms)", "memory-bound (ms)", "exposed communication (ms)",
            "fits (8 GPUs, ZeRO 3)", "binding"]
    rows = []
    for r in t.ranking:
        finite = math.isfinite(r.time_per_sample)
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in [
            escape(r.generation), f"{r.time_per_sample * 1e3:.1f}" if finite else "n/a",
            f"{r.compute * 1e3:.1f}", f"{r.memory_bound * 1e3:.1f}", f"{r.communication * 1e3:.1f}",
            "yes" if r.fits else "no", escape(r.binding)]) + "</tr>")
    parts += [f"<h3>Which GPU generation</h3><p>{escape(t.workload)} ({escape(t.ranking_dtype)}) on each generation: "
              "one micro-batch per GPU on the roofline, data parallel over 8 GPUs of one board at the "
              "generation's NVLink bandwidth (<code>models.gpus_ranking</code>); "
              "fastest first.</p>",
              "<div class='scroll'><table class='summary gpus'><thead><tr>"
              + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr></thead><tbody>" + "".join(rows)
              + "</tbody></table></div>", "</section>"]
    return "\n".join(parts)


def _simulation_section(steps, figures: FigureDivs) -> str:
    parts = ["<section id='simulated'>", "<h2>A simulated step</h2>",
             f"<p>One training step of {escape(SIMULATED_WORKLOAD)} on GPUs 0-7 (tensor parallel over a host's "
             "GPUs, data parallel across hosts, one micro-batch, full recomputation) run as a timeline on each generation: every layer's compute and collectives, NCCL's "
             "kernels holding SMs, links shared by max-min fairness "
             "(<code>dgxtopo simulate</code>, <code>models.studies.stepgraph.simulate_plan</code>). The critical "
             "path is where the step's time goes.</p>"]
    head = ["system", "step (ms)", "planner's analytical estimate (ms)", "compute on the critical path (ms)",
            "exposed communication (ms)", "busiest link (mean share of capacity)"]
    rows = []
    for s in steps:
        if s.result is None:
            rows.append(f"<tr><td>{escape(s.name)}</td><td colspan='{len(head) - 1}'>n/a: {escape(s.error)}</td></tr>")
            continue
        r = s.result
        link = r.links[0] if r.links else None
        busiest = f"{escape(link.edge[0])}&rarr;{escape(link.edge[1])} ({link.mean:.0%})" if link else "none"
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in [
            f"<b>{escape(s.name)}</b>", f"{r.step_time * 1e3:.1f}", f"{s.planned * 1e3:.1f}",
            f"{r.critical_by_kind().get('compute', 0.0) * 1e3:.1f}", f"{r.exposed_comm * 1e3:.1f}", busiest]) + "</tr>")
    parts.append("<div class='scroll'><table class='summary simulated'><thead><tr>"
                 + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr></thead><tbody>" + "".join(rows)
                 + "</tbody></table></div>")
    shown = next((s for s in steps if s.result is not None), None)
    if shown is not None:
        fig = gantt_figure_dict(shown.result, max_rows=8)
        parts.append(figures.div(fig, f"simulated-{slug(shown.system)}",
                                 f"{shown.name}: the step's tasks on their streams"))
    parts.append("</section>")
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
<li>Measured against predicted, with the errors per collective and per size: see
<a href='#measured'>model vs measurement</a> (when a DGX-2 or a DGX-1V is in the report), or run
<code>dgxtopo check</code> on your own nccl-tests output.</li>
</ul>
<p>These are predictions from a model, not measurements: compare with nccl-tests on your machine
before relying on a figure.</p>
</section>
"""



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
    """The report page of an :func:`~models.present.report.analysis.analyse_report` result."""
    analyses = analysis.systems
    color_range = colour_range([a.G for a in analyses])
    figures = FigureDivs()
    names_text = ", ".join(a.row.name for a in analyses)
    model = next((a.e8.model for a in analyses if a.e8 is not None),
                 next((a.curve.model for a in analyses if a.curve is not None), "NCCL tuning model"))
    nav = " ".join(f"<a href='#system-{slug(a.row.system)}'>{escape(a.row.name)}</a>" for a in analyses)
    body = [
        f"<header><h1>dgx-topo: {escape(names_text)}</h1>",
        "<p>What NVIDIA DGX fabrics deliver to NCCL-style communication, predicted by dgx-topo "
        f"{escape(__version__)} ({escape(model)}). Every figure is interactive: hover for numbers, drag to "
        "zoom, double-click to reset. The page works offline.</p>",
        "<nav><a href='#summary'>summary</a> <a href='#curves'>curves</a> "
        + ("<a href='#generations'>generations</a> " if analysis.generations else "")
        + ("<a href='#compare'>DGX-2 vs 2xDGX-1V</a> " if analysis.seed is not None else "")
        + ("<a href='#measured'>model vs measurement</a> " if analysis.measurement is not None else "")
        + ("<a href='#bounds'>NCCL vs optimum</a> " if analysis.bounds else "")
        + ("<a href='#schedule'>the packing as a schedule</a> " if analysis.schedule is not None else "")
        + ("<a href='#training'>training step</a> " if analysis.training is not None else "")
        + ("<a href='#moe'>DeepSeek-V3 on 256 GPUs</a> " if analysis.moe is not None else "")
        + ("<a href='#simulated'>simulated step</a> " if analysis.simulated else "")
        + f"{nav} <a href='#model'>model</a> <a href='#validation'>validation</a></nav></header>",
        "<section id='summary'><h2>Summary</h2>", _table([a.row for a in analyses]), "</section>",
        _curves_section(analyses, figures),
    ]
    if analysis.generations:
        body.append(_generations_section(analysis.generations, figures))
    if analysis.seed is not None:
        body.append(_seed_section(analysis.seed, figures))
    if analysis.measurement is not None:
        body.append(_measurement_section(analysis.measurement, figures))
    if analysis.bounds:
        bounded = {b.system for b in analysis.bounds}
        body.append(_bounds_section(analysis.bounds, figures,
                                    [a.row.name for a in analyses if a.row.system not in bounded]))
    if analysis.schedule is not None:
        G = next(a.G for a in analyses if a.row.system == analysis.schedule.system)
        body.append(_schedule_section(analysis.schedule, G, figures))
    if analysis.training is not None:
        body.append(_training_section(analysis.training, figures))
    if analysis.moe is not None:
        body.append(_moe_section(analysis.moe, figures))
    if analysis.simulated:
        body.append(_simulation_section(analysis.simulated, figures))
    drawings = analysis.drawings or (None,) * len(analyses)
    body += [_system_section(a, figures, color_range, drawn) for a, drawn in zip(analyses, drawings)]
    body.append(_MODEL_TEXT.format(model=escape(model)))
    body.append(f"<footer class='muted'>{figures.count} figures. Generated by dgx-topo "
                f"{escape(__version__)}; <code>dgxtopo report</code>.</footer>")
    return html_page(f"dgx-topo report: {names_text}", body)


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
    figures = FigureDivs()
    title = f"dgx-topo: {collective} on {' vs '.join(names)}"
    body = [f"<h1>{escape(title)}</h1>",
            f"<p>Predicted nccl-tests {escape(collective)} ({escape(estimates[0].model)}); hover for the "
            "algorithm, protocol and channels at each size.</p>", "<div class='grid'>",
            figures.div(busbw_figure_dict(curves, y="busbw"), "compare-busbw"),
            figures.div(busbw_figure_dict(curves, y="time"), "compare-time"), "</div>"]
    return html_page(title, body)


def check_html(check, *, source: str = "") -> str:
    """The page of ``dgxtopo check ... --out FILE.html``: measured vs predicted busbw, time and
    error by size (:func:`models.present.plot.check_figure`) and the table of every row.

    Parameters
    ----------
    check : models.studies.calibration.Check
    source : str, optional
        Where the measurement came from (a file name), for the heading.

    Returns
    -------
    str

    Raises
    ------
    topo.DgxTopoError
        For something that is not a Check, or a Check without rows.
    """
    figures = FigureDivs()
    figure = figures.div(check_figure_dict(check), "check")
    what = f" ({source})" if source else ""
    title = f"dgx-topo check: {check.collective} on {check.system}{what}"
    head = ("<thead><tr><th>size (B)</th><th>measured time (µs)</th><th>predicted time (µs)</th>"
            "<th>time error</th><th>measured busbw (GB/s)</th><th>predicted busbw (GB/s)</th>"
            "<th>busbw error</th></tr></thead>")
    rows = "".join(f"<tr><td>{r.size}</td><td>{to_us(r.measured_time):.2f}</td><td>{to_us(r.predicted_time):.2f}</td>"
                   f"{_error_cell(r.time_error)}<td>{to_GBps(r.measured_busbw):.2f}</td>"
                   f"<td>{to_GBps(r.predicted_busbw):.2f}</td>{_error_cell(r.busbw_error)}</tr>"
                   for r in check.rows)
    body = [f"<h1>{escape(title)}</h1>",
            f"<p>Measured{escape(what)} against predicted (NCCL's tuning model, then the measurement model "
            f"with <code>-g {check.gpus_per_thread}</code>) on GPUs {escape(','.join(map(str, check.gpus)))}. "
            f"Errors are predicted / measured - 1: |time error| median {_abs_pct(check.median_abs_time_error)}, "
            f"max {_abs_pct(check.max_abs_time_error)}; |busbw error| median {_abs_pct(check.median_abs_busbw_error)}, "
            f"max {_abs_pct(check.max_abs_busbw_error)}.</p>",
            figure,
            "<div class='scroll'><table class='summary errors'>" + head + "<tbody>" + rows + "</tbody></table></div>"]
    working = explain_check(check)
    if working:
        body.append(f"<h2>The model's working at the largest size</h2><pre>{escape(working)}</pre>")
    return html_page(title, body)


