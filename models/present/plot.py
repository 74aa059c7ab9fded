"""Plotly figures of the models: P2P matrices, collective curves, pair matrices, channel loads,
subset rankings, measured against predicted (:func:`check_figure`, :func:`p2p_check_figure`) and
generations side by side (:func:`generations_figure`).

This module imports plotly; ``import models`` does not load it. Every function takes results
the models computed (:class:`models.predict.p2p.P2PReport`, :class:`models.CollectiveEstimate`, the
matrix of :func:`models.pairwise`, :class:`models.engine.nccl.search.ChannelSearch`, the list of
:func:`models.subsets`), returns a ``plotly.graph_objects.Figure`` and never shows it. They
share the keywords ``title``, ``width`` and ``height`` (pixels); numbers arrive in SI and are
shown in GB/s and µs, every axis, colour bar and hover text saying which. The report's figures
also have a ``*_dict`` form, the same figure as plotly's plain dict, unchecked (the function
builds its figure from it): the report writes those (:func:`models.present.page.figure_html`)
without loading plotly's figure classes.

Examples
--------
>>> import topo, models
>>> G = topo.dgx1v()
>>> fig = p2p_figure(models.p2p_report(G))
>>> fig.data[0].type, fig.layout.coloraxis.colorbar.title.text
('heatmap', 'GB/s')
>>> e = models.estimate(G, "all_reduce", 2 ** np.arange(10, 31, 4))
>>> [t.name for t in busbw_figure({"DGX-1V": e}).data]
['DGX-1V']
"""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np
import plotly.colors as pcolors
import plotly.graph_objects as go

import topo
from topo.errors import DgxTopoError
from topo.plot import fabric_figure_dict
from topo.plot_style import COLORWAY, axis_title, build_figure, log_axis, style_figure, style_layout
from topo.units import to_GBps, to_us

from ..engine.nccl.search import ChannelSearch
from .format import format_bytes, format_percent
from ..predict.collectives import CollectiveEstimate

__all__ = ["p2p_figure", "latency_figure", "busbw_figure", "pairs_figure", "channels_figure", "channels_figure_dict",
           "subsets_figure", "check_figure", "p2p_check_figure", "generations_figure", "p2p_figure_dict",
           "latency_figure_dict", "busbw_figure_dict", "pairs_figure_dict", "p2p_check_figure_dict",
           "generations_figure_dict", "check_figure_dict", "schedule_figure_dict",
           "format_bytes", "curve_styles", "Y_QUANTITIES", "DASHES", "SYMBOLS"]

#: What :func:`busbw_figure` can plot: attribute of the estimate, axis label, conversion.
Y_QUANTITIES = MappingProxyType({
    "busbw": (axis_title("busbw", "GB/s"), to_GBps),
    "algbw": (axis_title("algbw", "GB/s"), to_GBps),
    "time": (axis_title("time", "µs"), to_us),
})
_BANDWIDTH_SCALE = "Blues"
_LATENCY_SCALE = "Oranges"
#: Line dashes given in turn to curves that coincide (the first of a group is solid).
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
#: Marker symbols given in turn to the curves of one figure (distinct up to 7 curves; 7 against
#: 6 dashes, so that within a group of coinciding curves no (dash, symbol) pair repeats).
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star", "cross")
# Curves closer than this (relative, at every point) are drawn as one line would be: they
# coincide on screen. A DGX-1V's 8-GPU all_reduce and a DGX-2's GPUs 0-7 are equal; DGX H100
# and H200 share one fabric.
_COINCIDE = 0.01


def _layout(fig, title, width, height, default_height):
    return style_figure(fig, title=title, width=width, height=height, default_height=default_height)


def _matrix_dict(matrix, labels, text, hover, *, colorscale, colorbar, x_title, y_title, title,
                   width, height, zmin=None):
    n = len(labels)
    finite = [v for row in matrix for v in row if math.isfinite(v)]
    cmax = max(finite) if finite else 1.0
    limits = {} if zmin is None else dict(cmin=zmin, cmax=cmax if cmax > zmin else zmin + 1.0)
    heatmap = dict(type="heatmap", z=[[None if not math.isfinite(v) else v for v in row] for row in matrix],
                   x=list(labels), y=list(labels), text=text, texttemplate="%{text}", hovertext=hover,
                   hovertemplate="%{hovertext}<extra></extra>", coloraxis="coloraxis", xgap=1, ygap=1)
    size = max(340, min(900, 110 + 44 * n))
    layout = style_layout(title=title, width=width, height=height, default_height=size)
    # The title at the top, clear of the x axis and its title, which stand above the matrix.
    layout.setdefault("title", {}).update(y=1.0, yanchor="top", pad=dict(t=12))
    layout.update(
        # A named scale as plotly's checks would write it (plotly.js knows other scales by these names):
        # what plotly.colors.get_colorscale gives, without the validators it loads to look the name up.
        coloraxis=dict(colorscale=pcolors.make_colorscale(list(getattr(pcolors.sequential, colorscale)))
                       if isinstance(colorscale, str) else colorscale,
                       colorbar=dict(title=dict(text=colorbar)), **limits),
        xaxis=dict(title=dict(text=x_title), type="category", side="top", showgrid=False),
        yaxis=dict(title=dict(text=y_title), type="category", autorange="reversed", showgrid=False),
        margin=dict(t=110))
    # One figure as plain dicts (plotly checks each property as it is set: the tests check it once).
    return dict(data=[heatmap], layout=layout)


def _ids(report) -> list:
    return [str(g) for g in report.gpus]


def p2p_figure(report, *, bidirectional: bool = False, diagonal: bool = False,
               title: str | None = None, width: int | None = None,
               height: int | None = None) -> go.Figure:
    """Heatmap of predicted P2P bandwidth, GB/s in every cell, NCCL's path class on hover.

    Parameters
    ----------
    report : P2PReport
        From :func:`models.p2p_report`.
    bidirectional : bool
        Both directions at once (p2pBandwidthLatencyTest's bidirectional matrix).
    diagonal : bool
        Colour the device-local copies too; by default they are written but left blank so
        that they do not squash the colour scale.
    title : str, optional
    width, height : int, optional
        [px]

    Returns
    -------
    plotly.graph_objects.Figure
    """
    return build_figure(**p2p_figure_dict(report, bidirectional=bidirectional, diagonal=diagonal, title=title,
                                          width=width, height=height))


def p2p_figure_dict(report, *, bidirectional: bool = False, diagonal: bool = False,
                    title: str | None = None, width: int | None = None,
                    height: int | None = None) -> dict:
    """:func:`p2p_figure` as plotly's plain figure dict, unchecked, for a page that writes its
    figures' JSON itself (:func:`models.present.page.figure_html`). The arguments, the drawing and the
    errors are :func:`p2p_figure`'s.

    Returns
    -------
    dict
        ``{"data": [trace dicts], "layout": {...}}``.
    """
    matrix = np.array(report.bidirectional if bidirectional else report.unidirectional, dtype=float)
    gbps = to_GBps(matrix)
    shown = gbps.copy()
    if not diagonal:
        np.fill_diagonal(shown, np.nan)
    ids = _ids(report)
    direction = "both directions" if bidirectional else "per direction"
    text, hover = [], []
    for i, a in enumerate(ids):
        text.append([("local" if i == j and len(ids) > 10 else
                      ("local<br>" if i == j else "") + ("n/a" if math.isnan(v) else f"{v:.1f}"))
                     for j, v in enumerate(gbps[i])])
        hover.append([f"GPU {a} → GPU {b}<br>{'n/a' if math.isnan(v) else f'{v:.2f}'} GB/s ({direction})"
                      f"<br>path class: {report.path_type[i][j]}"
                      + ("<br>device-local copy (HBM read + write)" if i == j else "")
                      for j, (b, v) in enumerate(zip(ids, gbps[i]))])
    kind = "P2P copy" if report.mode == "route" else "NVLink max-flow"
    return _matrix_dict(
        shown, ids, text, hover, colorscale=_BANDWIDTH_SCALE, colorbar="GB/s", zmin=0,
        x_title="destination GPU", y_title="source GPU",
        title=title if title is not None else
        f"{report.name}: predicted {'bidirectional' if bidirectional else 'unidirectional'} {kind} bandwidth (GB/s)",
        width=width, height=height)


def latency_figure(report, *, title: str | None = None, width: int | None = None,
                   height: int | None = None) -> go.Figure:
    """Heatmap of predicted P2P write latency, µs in every cell, path class on hover.

    Parameters
    ----------
    report : P2PReport
    title : str, optional
    width, height : int, optional
        [px]

    Returns
    -------
    plotly.graph_objects.Figure
    """
    return build_figure(**latency_figure_dict(report, title=title, width=width, height=height))


def latency_figure_dict(report, *, title: str | None = None, width: int | None = None,
                        height: int | None = None) -> dict:
    """:func:`latency_figure` as plotly's plain figure dict, unchecked, for a page that writes its
    figures' JSON itself (:func:`models.present.page.figure_html`). The arguments, the drawing and the
    errors are :func:`latency_figure`'s.

    Returns
    -------
    dict
        ``{"data": [trace dicts], "layout": {...}}``.
    """
    us = to_us(np.array(report.latency, dtype=float))
    ids = _ids(report)
    text = [[f"{v:.1f}" for v in row] for row in us]
    hover = [[f"GPU {a} → GPU {b}<br>{v:.2f} µs<br>path class: {report.path_type[i][j]}"
              for j, (b, v) in enumerate(zip(ids, us[i]))] for i, a in enumerate(ids)]
    return _matrix_dict(
        us, ids, text, hover, colorscale=_LATENCY_SCALE, colorbar="µs", zmin=0,
        x_title="destination GPU", y_title="source GPU",
        title=title if title is not None else f"{report.name}: predicted P2P write latency (µs)",
        width=width, height=height)


def pairs_figure(matrix, *, gpus=None, collective: str | None = None, nbytes=None,
                 title: str | None = None, width: int | None = None,
                 height: int | None = None) -> go.Figure:
    """Heatmap of the busbw of every 2-GPU communicator (:func:`models.pairwise`).

    Parameters
    ----------
    matrix : numpy.ndarray
        ``[i, j]`` busbw of GPUs i and j, NaN on the diagonal. [B/s]
    gpus : sequence, optional
        Row and column labels (default 0, 1, ...).
    collective : str, optional
        For the title and hover text.
    nbytes : int, optional
        The size the matrix was computed at, for the title and hover text. [bytes]
    title : str, optional
    width, height : int, optional
        [px]

    Returns
    -------
    plotly.graph_objects.Figure
    """
    return build_figure(**pairs_figure_dict(matrix, gpus=gpus, collective=collective, nbytes=nbytes, title=title,
                                            width=width, height=height))


def pairs_figure_dict(matrix, *, gpus=None, collective: str | None = None, nbytes=None,
                      title: str | None = None, width: int | None = None,
                      height: int | None = None) -> dict:
    """:func:`pairs_figure` as plotly's plain figure dict, unchecked, for a page that writes its
    figures' JSON itself (:func:`models.present.page.figure_html`). The arguments, the drawing and the
    errors are :func:`pairs_figure`'s.

    Returns
    -------
    dict
        ``{"data": [trace dicts], "layout": {...}}``.
    """
    gbps = to_GBps(np.asarray(matrix, dtype=float))
    ids = [str(g) for g in (range(len(gbps)) if gpus is None else gpus)]
    what = f"{collective} busbw" if collective else "busbw"
    at = f" at {format_bytes(nbytes)}" if nbytes is not None else ""
    text = [["" if math.isnan(v) else f"{v:.1f}" for v in row] for row in gbps]
    hover = [[f"GPUs {a} and {b}<br>{what}{at}: " + ("-" if math.isnan(v) else f"{v:.2f} GB/s")
              for b, v in zip(ids, gbps[i])] for i, a in enumerate(ids)]
    return _matrix_dict(
        gbps, ids, text, hover, colorscale=_BANDWIDTH_SCALE, colorbar="busbw<br>(GB/s)", zmin=0,
        x_title="GPU", y_title="GPU",
        title=title if title is not None else f"2-GPU {what}{at} (GB/s)",
        width=width, height=height)


def _size_axis(fig, sizes, **where) -> None:
    """A log message-size axis with ticks at powers of 4 (narrow ranges) or of 32 (wide): both
    include 1 KiB, 1 MiB and 1 GiB."""
    fig.update_xaxes(**_size_axis_properties(sizes), **where)


def _size_axis_properties(sizes) -> dict:
    """The properties :func:`_size_axis` sets."""
    sizes = [float(s) for s in sizes if s > 0] or [1.0]
    lo, hi = min(sizes), max(sizes)
    ticks = [2.0 ** k for k in range(0, 50, 2 if hi / max(lo, 1) < 2 ** 24 else 5)
             if max(lo, 1) / 1.01 <= 2.0 ** k <= hi * 1.01]
    return dict(type="log", tickvals=ticks, ticktext=[format_bytes(t) for t in ticks])


def curve_styles(curves, *, rtol: float = _COINCIDE) -> list:
    """Line and marker styles that keep coinciding curves visible.

    Every curve gets its own marker symbol (:data:`SYMBOLS` in turn). Curves that coincide
    (same x, y within ``rtol`` at every point) form a group: its first curve is drawn solid
    and thickest, the next ones over it dashed (:data:`DASHES` in turn) and thinner, so that
    each colour shows.

    Parameters
    ----------
    curves : sequence of (x, y)
        The plotted points of each curve, in drawing order.
    rtol : float
        Relative distance under which two curves coincide.

    Returns
    -------
    list of dict
        Per curve: ``dash``, ``width`` [px], ``symbol``, ``size`` [px] (marker) and
        ``same_as`` (index of the group's first curve, or None).

    Examples
    --------
    >>> x = [1, 2, 3]
    >>> [(s["dash"], s["symbol"], s["same_as"]) for s in curve_styles([(x, [1, 2, 3]), (x, [2, 3, 4]), (x, [1, 2, 3])])]
    [('solid', 'circle', None), ('solid', 'square', None), ('dash', 'diamond', 0)]
    """
    points = [(np.asarray(x, dtype=float), np.asarray(y, dtype=float)) for x, y in curves]
    leader, rank = [], []
    for i, (x, y) in enumerate(points):
        first = next((j for j in range(i) if leader[j] == j and points[j][0].shape == x.shape
                      and np.array_equal(points[j][0], x)
                      and np.allclose(points[j][1], y, rtol=rtol, atol=0, equal_nan=True)), None)
        leader.append(i if first is None else first)
        rank.append(sum(1 for j in range(i) if leader[j] == leader[i]))
    sizes = {g: leader.count(g) for g in set(leader)}
    styles = []
    for i, (g, k) in enumerate(zip(leader, rank)):
        later = sizes[g] - 1 - k  # curves of the group drawn over this one
        styles.append({"dash": DASHES[k % len(DASHES)], "width": 2.0 + 2.0 * later,
                       "symbol": SYMBOLS[i % len(SYMBOLS)], "size": 6 + 3 * later,
                       "same_as": None if g == i else g})
    return styles


def _curves(estimates) -> list:
    if isinstance(estimates, CollectiveEstimate):
        estimates = [estimates]
    items = list(estimates.items()) if isinstance(estimates, dict) else list(estimates)
    curves = []
    for item in items:
        label, e = item if isinstance(item, tuple) else (None, item)
        if not isinstance(e, CollectiveEstimate):
            raise DgxTopoError(f"expected CollectiveEstimate results (from models.estimate), "
                               f"received {type(e).__name__}")
        if label is None:
            label = f"{e.collective} GPUs {','.join(map(str, e.gpus))}"
        curves.append((str(label), e))
    if not curves:
        raise DgxTopoError("expected at least one estimate to plot, received none")
    return curves


def busbw_figure(estimates, *, y: str = "busbw", title: str | None = None,
                 width: int | None = None, height: int | None = None) -> go.Figure:
    """busbw (or algbw, or time) against message size, one curve per estimate, as nccl-tests
    results are usually plotted (log size axis).

    Parameters
    ----------
    estimates : dict or sequence
        ``{label: CollectiveEstimate}``, a sequence of ``(label, estimate)`` or of estimates
        (labelled by collective and GPUs). Estimates computed over arrays of sizes give
        curves; systems, GPU sets, forced algorithms and protocols can be mixed.
    y : {"busbw", "algbw", "time"}
        The quantity on the y axis (GB/s, or µs on a log axis for time).
    title : str, optional
    width, height : int, optional
        [px]

    Returns
    -------
    plotly.graph_objects.Figure

    Raises
    ------
    topo.DgxTopoError
        For an unknown ``y`` or something that is not an estimate.
    """
    return build_figure(**busbw_figure_dict(estimates, y=y, title=title, width=width, height=height))


def busbw_figure_dict(estimates, *, y: str = "busbw", title: str | None = None,
                      width: int | None = None, height: int | None = None) -> dict:
    """:func:`busbw_figure` as plotly's plain figure dict, unchecked, for a page that writes its
    figures' JSON itself (:func:`models.present.page.figure_html`). The arguments, the drawing and the
    errors are :func:`busbw_figure`'s.

    Returns
    -------
    dict
        ``{"data": [trace dicts], "layout": {...}}``.
    """
    if y not in Y_QUANTITIES:
        raise DgxTopoError(f"unknown quantity {y!r}: expected one of {', '.join(Y_QUANTITIES)}")
    y_title, convert = Y_QUANTITIES[y]
    curves = _curves(estimates)
    data, all_sizes = [], []  # drawn as plain dicts, checked once (topo.plot_style.build_figure says why)
    points = [(np.atleast_1d(e.nbytes).astype(float), convert(np.atleast_1d(getattr(e, y)).astype(float)))
              for _, e in curves]
    for (label, e), (sizes, values), style in zip(curves, points, curve_styles(points)):
        times = to_us(np.atleast_1d(e.time).astype(float))
        busbw = to_GBps(np.atleast_1d(e.busbw).astype(float))
        algorithm = np.broadcast_to(np.atleast_1d(e.algorithm), sizes.shape)
        protocol = np.broadcast_to(np.atleast_1d(e.protocol), sizes.shape)
        channels = np.broadcast_to(np.atleast_1d(e.nchannels), sizes.shape)
        all_sizes.extend(sizes)
        same = ("" if style["same_as"] is None else
                f"<br>(coincides with {curves[style['same_as']][0]})")
        hover = [f"<b>{label}</b><br>{e.collective}, {e.nranks} GPUs<br>size {format_bytes(s)} "
                 f"({int(s)} B)<br>busbw {b:.2f} GB/s<br>time {t:.2f} µs<br>{a}/{p}, {c} channels{same}"
                 for s, b, t, a, p, c in zip(sizes, busbw, times, algorithm, protocol, channels)]
        data.append(dict(type="scatter", x=sizes, y=values, mode="lines+markers", name=label, hovertext=hover,
                         hovertemplate="%{hovertext}<extra></extra>",
                         line=dict(dash=style["dash"], width=style["width"]),
                         marker=dict(symbol=style["symbol"], size=style["size"])))
    collectives = sorted({e.collective for _, e in curves})
    layout = style_layout(title=title if title is not None else
                          f"predicted {'/'.join(collectives)} {y_title} vs message size",
                          width=width, height=height, default_height=460)
    layout["xaxis"] = dict(**_size_axis_properties(all_sizes), title=dict(text=axis_title("message size", "bytes")))
    if y == "time":  # decades, written like the tables: no crowded minor labels
        layout["yaxis"] = dict(title=dict(text=y_title), **log_axis(v for _, values in points for v in values))
    else:
        layout["yaxis"] = dict(title=dict(text=y_title), type="linear", rangemode="tozero")
    layout.update(hovermode="closest", legend=dict(title=dict(text="")))
    return dict(data=data, layout=layout)


def schedule_figure_dict(evaluation, bounds=(), *, title: str | None = None, width: int | None = None,
                         height: int | None = None) -> dict:
    """busbw against message size of a timed schedule (:class:`models.schedules.ScheduleEvaluation`)
    beside NCCL's own choice and flat bounds, as plotly's plain figure dict (unchecked, for a page
    that writes its figures' JSON itself, :func:`models.present.page.figure_html`).

    Parameters
    ----------
    evaluation : ScheduleEvaluation
    bounds : sequence of (str, float)
        Label and busbw of each bound drawn as a flat dotted line. [B/s]
    title : str, optional
    width, height : int, optional
        [px]

    Returns
    -------
    dict
        ``{"data": [trace dicts], "layout": {...}}``.

    Examples
    --------
    >>> import topo
    >>> from models.schedules import evaluate_schedule, packing_schedule
    >>> G = topo.dgx1v()
    >>> e = evaluate_schedule(G, packing_schedule(G, "all_gather", [0, 1, 4, 5]), [2**20, 2**30], [0, 1, 4, 5])
    >>> [t["name"] for t in schedule_figure_dict(e, [("bound", 90e9)])["data"]]
    ['NCCL', 'packing_all_gather_4x128', 'bound']
    """
    points = evaluation.points
    sizes = np.array([p.nbytes for p in points], dtype=float)
    curves = []
    if all(p.nccl_busbw is not None for p in points):
        curves.append(("NCCL", np.array([p.nccl_busbw for p in points], dtype=float),
                       [f"NCCL {p.nccl_algorithm}, {p.nccl_channels} channels" for p in points]))
    curves.append((evaluation.name, np.array([p.busbw for p in points], dtype=float),
                   [f"{evaluation.protocol}, {p.loops} loops of {format_bytes(p.chunk_bytes)} chunks" for p in points]))
    curves += [(str(label), np.full(sizes.shape, float(value)), ["no latency term"] * len(points))
               for label, value in bounds]
    styles = curve_styles([(sizes, to_GBps(y)) for _, y, _ in curves])
    data = []
    for i, ((label, y, notes), style) in enumerate(zip(curves, styles)):
        flat = i >= len(curves) - len(bounds)
        hover = [f"<b>{label}</b><br>{evaluation.collective}, {len(evaluation.gpus)} GPUs<br>size {format_bytes(s)} "
                 f"({int(s)} B)<br>busbw {b:.2f} GB/s<br>{n}" for s, b, n in zip(sizes, to_GBps(y), notes)]
        data.append(dict(type="scatter", x=sizes, y=to_GBps(y), name=label, hovertext=hover,
                         mode="lines" if flat else "lines+markers", hovertemplate="%{hovertext}<extra></extra>",
                         line=dict(dash="dot" if flat else style["dash"], width=style["width"]),
                         marker=dict(symbol=style["symbol"], size=style["size"])))
    layout = style_layout(title=title if title is not None else
                          f"{evaluation.system} GPUs {topo.select.format_gpu_ids(evaluation.gpus)}: "
                          f"{evaluation.collective} busbw vs message size",
                          width=width, height=height, default_height=460)
    layout["xaxis"] = dict(**_size_axis_properties(sizes), title=dict(text=axis_title("message size", "bytes")))
    layout["yaxis"] = dict(title=dict(text=axis_title("busbw", "GB/s")), type="linear", rangemode="tozero")
    layout.update(hovermode="closest", legend=dict(title=dict(text="")))
    return dict(data=data, layout=layout)


def _search(result, pattern):
    if isinstance(result, ChannelSearch):
        return result, None
    if not isinstance(result, CollectiveEstimate):
        raise DgxTopoError(f"expected a CollectiveEstimate or ChannelSearch, received {type(result).__name__}")
    if pattern is None:
        # NVLS channels reduce in the switch (no GPU order to draw) and PAT runs on the tree
        # graph: draw the ring graph NCCL also built, or the tree's (the algorithm's pattern).
        ran = result.algorithm_at()
        pattern = str(np.atleast_1d(result.algorithm)[-1]) if ran is None else ran.pattern
    search = {"ring": result.ring, "tree": result.tree}.get(pattern)
    if search is None:
        raise DgxTopoError(f"{result.collective} on GPUs {','.join(map(str, result.gpus))} has no "
                           f"{pattern!r} channels to draw (model: {result.model}): expected an estimate "
                           f"of a collective NCCL runs on channels, on 2 or more GPUs, and pattern "
                           f"'ring' or 'tree'")
    return search, result


def channels_figure(G, result, *, pattern: str | None = None, host_layer: bool | None = None,
                    pos=None, title: str | None = None, width: int | None = None,
                    height: int | None = None) -> go.Figure:
    """The channels of a collective on the fabric: each link coloured by the share of its
    NCCL capacity the channels reserve (:attr:`models.engine.nccl.search.ChannelSearch.loads`).

    Parameters
    ----------
    G : networkx.DiGraph
        The fabric the result was computed on.
    result : CollectiveEstimate or ChannelSearch
    pattern : {"ring", "tree"}, optional
        For an estimate: which search to draw (default: the algorithm that runs at the
        largest size).
    host_layer : bool, optional
        Draw the PCIe/CPU/NIC layer; default: only if the channels cross it.
    pos : dict, optional
        Node positions (default :func:`topo.layout.fabric_layout`).
    title : str, optional
    width, height : int, optional
        [px]

    Returns
    -------
    plotly.graph_objects.Figure

    Raises
    ------
    topo.DgxTopoError
        For an estimate without channels (one GPU, alltoall, sendrecv).
    """
    figure = channels_figure_dict(G, result, pattern=pattern, host_layer=host_layer, pos=pos, title=title,
                                  width=width, height=height)
    return build_figure(figure["data"], figure["layout"])


def channels_figure_dict(G, result, *, pattern: str | None = None, host_layer: bool | None = None,
                         pos=None, title: str | None = None, width: int | None = None,
                         height: int | None = None) -> dict:
    """:func:`channels_figure` as plotly's plain figure dict, unchecked, for a page that writes
    its figures' JSON itself (see :func:`topo.plot.fabric_figure_dict`). The arguments, the
    drawing and the errors are :func:`channels_figure`'s.

    Returns
    -------
    dict
        ``{"data": [trace dicts], "layout": {...}}``.
    """
    search, estimate = _search(result, pattern)
    values = {tuple(load.edge): 100.0 * load.utilisation for load in search.loads}
    text = {tuple(load.edge): f"{load.edge[0]} → {load.edge[1]}: channels reserve "
                              f"{to_GBps(load.reserved):.2f} of {to_GBps(load.capacity):.2f} GB/s "
                              f"(NCCL's capacity)" for load in search.loads}
    if host_layer is None:
        host_layer = any(G.nodes[n]["kind"] not in ("gpu", "nvswitch") for edge in values for n in edge)
    ids = {n: i for i, n in enumerate(topo.gpus(G))}
    orders = [" ".join(str(ids[g]) for g in channel) for channel in search.channels]
    shown = orders[:8] + ([f"... {len(orders) - 8} more"] if len(orders) > 8 else [])
    name = G.graph.get("name", "fabric")
    what = f"{estimate.collective} " if estimate is not None else ""
    heading = (title if title is not None else
               f"{name}: {what}{search.pattern} channels, {search.nchannels} x "
               f"{to_GBps(search.bw_intra):.1f} GB/s, link load")
    figure = fabric_figure_dict(G, pos=pos, host_layer=host_layer, edge_values=values,
                                value_label="load (% of<br>NCCL capacity)", value_range=(0.0, 100.0),
                                missing_label="links no channel crosses",
                                edge_text=text, highlight=search.gpus, title=heading, width=width,
                                height=height)
    layout = figure["layout"]
    layout["title"] = {**layout.get("title", {}),
                       "subtitle": dict(text="channels (GPU order): " + " | ".join(shown))}
    layout["margin"] = {**layout.get("margin", {}), "t": 80}
    return figure


def subsets_figure(results, *, top: int | None = 20, collective: str | None = None, nbytes=None,
                   title: str | None = None, width: int | None = None,
                   height: int | None = None) -> go.Figure:
    """Bar chart of GPU sets ranked by busbw (:func:`models.subsets`), best at the top.

    Parameters
    ----------
    results : sequence of SubsetResult
        Best first, as :func:`models.subsets` returns them.
    top : int, optional
        Show only the best ``top`` sets (all if None).
    collective : str, optional
        For the title.
    nbytes : int, optional
        The size of the ranking, for the title. [bytes]
    title : str, optional
    width, height : int, optional
        [px]

    Returns
    -------
    plotly.graph_objects.Figure
    """
    results = list(results)
    if not results:
        raise DgxTopoError("expected at least one GPU set to rank, received none")
    shown = results if top is None else results[:top]
    labels = [",".join(map(str, r.gpus)) for r in shown]
    busbw = [to_GBps(r.busbw) for r in shown]
    hover = [f"<b>GPUs {label}</b> (rank {i + 1} of {len(results)})<br>busbw {to_GBps(r.busbw):.2f} GB/s"
             f"<br>algbw {to_GBps(r.algbw):.2f} GB/s<br>time {to_us(r.time):.2f} µs<br>"
             f"{r.algorithm}/{r.protocol}, {r.nchannels} channels"
             for i, (label, r) in enumerate(zip(labels, shown))]
    fig = go.Figure(go.Bar(
        x=busbw, y=labels, orientation="h", name="busbw", text=[f"{b:.1f}" for b in busbw],
        textposition="auto", hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
        marker=dict(color=busbw, colorscale=_BANDWIDTH_SCALE, cmin=0,
                    colorbar=dict(title=dict(text="busbw<br>(GB/s)")))))
    fig.update_xaxes(title_text=axis_title("busbw", "GB/s"), rangemode="tozero")
    fig.update_yaxes(title_text="GPUs", type="category", autorange="reversed")
    k = len(shown[0].gpus)
    what = f"{collective} " if collective else ""
    at = f" at {format_bytes(nbytes)}" if nbytes is not None else ""
    heading = title if title is not None else (
        f"best {len(shown)} of {len(results)} sets of {k} GPUs by predicted {what}busbw{at}")
    return _layout(fig, heading, width, height, max(300, 90 + 22 * len(shown)))


# ------------------------------------------------------------------ measured vs predicted
_MEASURED, _PREDICTED = "#1f77b4", "#d62728"
_TIME_ERROR, _BUSBW_ERROR = "#2ca02c", "#9467bd"


def _signed(value) -> str:
    return format_percent(value, signed=True, space=True)


def check_figure(check, *, title: str | None = None, width: int | None = None,
                 height: int | None = None) -> go.Figure:
    """Measured against predicted for one nccl-tests run (:func:`models.studies.calibration.check`):
    busbw, time and the error at every size, log size axis.

    Three panels share the size axis: busbw (GB/s), time (µs, log) and the signed error
    ``predicted / measured - 1`` of both (%). Measured is drawn solid with circles, predicted
    dashed with diamonds; hovering a point gives the whole row.

    Parameters
    ----------
    check : models.studies.calibration.Check
    title : str, optional
    width, height : int, optional
        [px]

    Returns
    -------
    plotly.graph_objects.Figure

    Raises
    ------
    topo.DgxTopoError
        For something that is not a Check, or a Check without rows.
    """
    return build_figure(**check_figure_dict(check, title=title, width=width, height=height))


def check_figure_dict(check, *, title: str | None = None, width: int | None = None,
                      height: int | None = None) -> dict:
    """:func:`check_figure` as plotly's plain figure dict, unchecked, for a page that writes its
    figures' JSON itself (:func:`models.present.page.figure_html`). The arguments, the drawing and the
    errors are :func:`check_figure`'s.

    Returns
    -------
    dict
        ``{"data": [trace dicts], "layout": {...}}``.
    """
    from ..studies.calibration import Check

    if not isinstance(check, Check):
        raise DgxTopoError(f"expected a Check (from models.studies.calibration.check), received "
                           f"{type(check).__name__}")
    if not check.rows:
        raise DgxTopoError("expected a Check with at least one row, received none")
    rows = check.rows
    sizes = np.array([r.size for r in rows], dtype=float)
    mt, pt = to_us(np.array([r.measured_time for r in rows])), to_us(np.array([r.predicted_time for r in rows]))
    mb, pb = to_GBps(np.array([r.measured_busbw for r in rows])), to_GBps(np.array([r.predicted_busbw for r in rows]))
    te = np.array([r.time_error for r in rows], dtype=float)
    be = np.array([math.nan if r.busbw_error is None else r.busbw_error for r in rows], dtype=float)
    hover = [f"<b>{format_bytes(s)}</b> ({int(s)} B)<br>measured: time {a:.2f} µs, busbw {b:.2f} GB/s"
             f"<br>predicted: time {c:.2f} µs, busbw {d:.2f} GB/s<br>error: time {_signed(e)}, "
             f"busbw {_signed(f)}" for s, a, c, b, d, e, f in zip(sizes, mt, pt, mb, pb, te, be)]
    common = dict(type="scatter", hovertext=hover, hovertemplate="%{hovertext}<extra></extra>", mode="lines+markers")
    data = []
    for row, (measured_y, predicted_y) in ((1, (mb, pb)), (2, (mt, pt))):
        axes = _CHECK_PANELS[row]
        data.append(dict(x=sizes, y=measured_y, name="measured", legendgroup="measured",
                         showlegend=row == 1, line=dict(color=_MEASURED, width=2.5),
                         marker=dict(symbol="circle", size=7), **common, **axes))
        data.append(dict(x=sizes, y=predicted_y, name="predicted", legendgroup="predicted",
                         showlegend=row == 1, line=dict(color=_PREDICTED, width=2, dash="dash"),
                         marker=dict(symbol="diamond", size=6), **common, **axes))
    data.append(dict(x=sizes, y=100 * te, name="time error", line=dict(color=_TIME_ERROR, width=1.5),
                     marker=dict(symbol="square", size=6), **common, **_CHECK_PANELS[3]))
    data.append(dict(x=sizes, y=100 * be, name="busbw error", connectgaps=False,
                     line=dict(color=_BUSBW_ERROR, width=1.5, dash="dot"),
                     marker=dict(symbol="triangle-up", size=6), **common, **_CHECK_PANELS[3]))
    heading = title if title is not None else (
        f"{check.collective} on {check.system}, {len(check.gpus)} GPUs (-g {check.gpus_per_thread}): "
        f"measured vs predicted")
    layout = {**_check_axes(), **style_layout(title=heading, width=width, height=height, default_height=720)}
    size_axis = _size_axis_properties(sizes)
    for x in ("xaxis", "xaxis2", "xaxis3"):
        layout[x].update(size_axis)
    layout["xaxis3"]["title"] = dict(text=axis_title("message size", "bytes"))
    layout["yaxis"].update(title=dict(text=axis_title("busbw", "GB/s")), rangemode="tozero")
    layout["yaxis2"].update(title=dict(text=axis_title("time", "µs")), **log_axis([*mt, *pt]))
    layout["yaxis3"].update(title=dict(text=axis_title("error", "%") + "<br>predicted / measured - 1"),
                            zeroline=True, zerolinecolor="#888888", zerolinewidth=1)
    # The legend sits in the busbw panel's upper left, empty for nccl-tests' rising curves.
    layout.update(hovermode="closest", legend=dict(x=0.01, y=0.99, xanchor="left", yanchor="top",
                                                   bgcolor="rgba(255,255,255,0.85)"), margin=dict(t=90))
    layout["title"]["subtitle"] = dict(text=(
        f"GPUs {','.join(map(str, check.gpus))}. |time error| median {format_percent(check.median_abs_time_error)}, "
        f"max {format_percent(check.max_abs_time_error)}; |busbw error| median "
        f"{format_percent(check.median_abs_busbw_error)}, max {format_percent(check.max_abs_busbw_error)}"))
    return dict(data=data, layout=layout)


# The three panels of check_figure, one above the other on one size axis: what plotly's
# make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06, row_heights=[0.38,
# 0.34, 0.28]) writes (tests/models/present/test_plot.py checks it), without its cost per figure.
_CHECK_PANELS = MappingProxyType({1: MappingProxyType(dict(xaxis="x", yaxis="y")),
                                  2: MappingProxyType(dict(xaxis="x2", yaxis="y2")),
                                  3: MappingProxyType(dict(xaxis="x3", yaxis="y3"))})
_CHECK_SPACING, _CHECK_HEIGHTS = 0.06, (0.38, 0.34, 0.28)


def _check_axes() -> dict:
    """The layout's axes of :data:`_CHECK_PANELS`, top panel first, with the domains plotly
    computes (each row's share of the height left between the gaps, rows stacked from the
    bottom, an end just past 1 written 1), operation for operation."""
    rows = len(_CHECK_HEIGHTS)
    room = 1.0 - _CHECK_SPACING * (rows - 1)
    total = float(sum(_CHECK_HEIGHTS))
    heights = list(reversed([room * (h / total) for h in _CHECK_HEIGHTS]))  # from the bottom
    layout = {}
    for row in range(1, rows + 1):
        k = rows - row  # from the bottom
        start = sum(heights[:k]) + k * _CHECK_SPACING
        end = start + heights[k]
        suffix = "" if row == 1 else str(row)
        x = dict(anchor=f"y{suffix}", domain=[0.0, 1.0])
        if row < rows:
            x.update(matches=f"x{rows}", showticklabels=False)
        layout[f"xaxis{suffix}"] = x
        layout[f"yaxis{suffix}"] = dict(anchor=f"x{suffix}", domain=[min(start, 1.0), min(end, 1.0)])
    return layout


_P2P_QUANTITIES = MappingProxyType({"bandwidth": ("GB/s", to_GBps), "latency": ("µs", to_us)})
_SERIES_COLORS = tuple(c for c in COLORWAY if c != _PREDICTED)


def p2p_check_figure(destinations, series, *, quantity: str = "bandwidth", source=0,
                     title: str | None = None, width: int | None = None,
                     height: int | None = None) -> go.Figure:
    """Measured against predicted P2P figures of one source GPU (a p2pBandwidthLatencyTest
    row), as grouped bars: measured solid, predicted hatched, the error on hover.

    Parameters
    ----------
    destinations : sequence
        Destination GPU labels.
    series : sequence of (str, array_like, array_like)
        ``(label, measured, predicted)`` per quantity shown (e.g. P2P enabled and disabled),
        one value per destination, SI units ([B/s] or [s]).
    quantity : {"bandwidth", "latency"}
    source : int or str
        The source GPU, for the hover text.
    title : str, optional
    width, height : int, optional
        [px]

    Returns
    -------
    plotly.graph_objects.Figure

    Raises
    ------
    topo.DgxTopoError
        For an unknown quantity, no series, or a series of another length than destinations.
    """
    return build_figure(**p2p_check_figure_dict(destinations, series, quantity=quantity, source=source, title=title,
                                                width=width, height=height))


def p2p_check_figure_dict(destinations, series, *, quantity: str = "bandwidth", source=0,
                          title: str | None = None, width: int | None = None,
                          height: int | None = None) -> dict:
    """:func:`p2p_check_figure` as plotly's plain figure dict, unchecked, for a page that writes its
    figures' JSON itself (:func:`models.present.page.figure_html`). The arguments, the drawing and the
    errors are :func:`p2p_check_figure`'s.

    Returns
    -------
    dict
        ``{"data": [trace dicts], "layout": {...}}``.
    """
    if quantity not in _P2P_QUANTITIES:
        raise DgxTopoError(f"unknown quantity {quantity!r}: expected one of {', '.join(_P2P_QUANTITIES)}")
    unit, convert = _P2P_QUANTITIES[quantity]
    labels = [str(d) for d in destinations]
    series = list(series)
    if not series:
        raise DgxTopoError("expected at least one (label, measured, predicted) series, received none")
    data, values = [], []
    for k, (name, measured_values, predicted_values) in enumerate(series):
        m = convert(np.asarray(measured_values, dtype=float))
        p = convert(np.asarray(predicted_values, dtype=float))
        if m.shape != (len(labels),) or p.shape != (len(labels),):
            raise DgxTopoError(f"series {name!r}: expected {len(labels)} measured and {len(labels)} "
                               f"predicted values, received {m.size} and {p.size}")
        hover = [f"GPU {source} → GPU {d}, {name}<br>measured {a:.2f} {unit}<br>predicted {b:.2f} {unit}"
                 f"<br>error {_signed(b / a - 1 if a else math.nan)}" for d, a, b in zip(labels, m, p)]
        color = _SERIES_COLORS[k % len(_SERIES_COLORS)]
        common = dict(type="bar", x=labels, hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
                      legendgroup=name, legendgrouptitle=dict(text=name))
        data.append(dict(y=m, name="measured", marker=dict(color=color), **common))
        data.append(dict(y=p, name="predicted", marker=dict(color="white", line=dict(color=color, width=1.5),
                                                            pattern=dict(shape="/", fgcolor=color)), **common))
        values += [v for v in (*m, *p) if v > 0]
    # Bandwidths span a device-local copy (~800 GB/s) and staged ones (~10 GB/s): log them.
    spread = bool(values) and max(values) / min(values) > 20
    layout = style_layout(title=title if title is not None else
                          f"P2P {quantity} from GPU {source}: measured vs predicted ({unit})",
                          width=width, height=height, default_height=420)
    layout.update(xaxis=dict(title=dict(text=f"destination GPU (source GPU {source})"), type="category"),
                  yaxis=dict(title=dict(text=axis_title(quantity, unit)),
                             **(log_axis(values) if spread else dict(rangemode="tozero"))),
                  barmode="group", hovermode="closest")
    return dict(data=data, layout=layout)


def generations_figure(names, nvlink_per_gpu, bisection, *, title: str | None = None,
                       width: int | None = None, height: int | None = None) -> go.Figure:
    """NVLink bandwidth per GPU and NVLink bisection of several systems, side by side (bars,
    GB/s per direction written on each).

    Parameters
    ----------
    names : sequence of str
    nvlink_per_gpu, bisection : sequence of float
        Per system, per direction. [B/s]
    title : str, optional
    width, height : int, optional
        [px]

    Returns
    -------
    plotly.graph_objects.Figure

    Raises
    ------
    topo.DgxTopoError
        For no system, or lists of different lengths.
    """
    return build_figure(**generations_figure_dict(names, nvlink_per_gpu, bisection, title=title, width=width,
                                                  height=height))


def generations_figure_dict(names, nvlink_per_gpu, bisection, *, title: str | None = None,
                            width: int | None = None, height: int | None = None) -> dict:
    """:func:`generations_figure` as plotly's plain figure dict, unchecked, for a page that writes its
    figures' JSON itself (:func:`models.present.page.figure_html`). The arguments, the drawing and the
    errors are :func:`generations_figure`'s.

    Returns
    -------
    dict
        ``{"data": [trace dicts], "layout": {...}}``.
    """
    names = [str(n) for n in names]
    per_gpu, bisect = to_GBps(np.asarray(nvlink_per_gpu, dtype=float)), to_GBps(np.asarray(bisection, dtype=float))
    if not names or per_gpu.shape != (len(names),) or bisect.shape != (len(names),):
        raise DgxTopoError(f"expected one NVLink and one bisection figure per system, received "
                           f"{len(names)} names, {per_gpu.size} and {bisect.size} figures")
    layout = style_layout(title=title if title is not None else "NVLink by generation", width=width,
                          height=height, default_height=440)
    layout.update(_generations_axes(), margin=dict(t=100))
    data = []
    for col, (values, what, color) in enumerate(((per_gpu, "NVLink per GPU", "#1f77b4"),
                                                 (bisect, "NVLink bisection", "#ff7f0e")), start=1):
        axes = "" if col == 1 else str(col)
        data.append(dict(type="bar", x=names, y=values, name=what, marker=dict(color=color), showlegend=False,
                         text=[f"{v:.0f}" for v in values], textposition="outside", cliponaxis=False,
                         hovertext=[f"<b>{n}</b><br>{what}: {v:.1f} GB/s per direction"
                                    for n, v in zip(names, values)],
                         hovertemplate="%{hovertext}<extra></extra>", xaxis=f"x{axes}", yaxis=f"y{axes}"))
        # The panel's title says what.
        layout[f"yaxis{axes}"].update(title=dict(text="GB/s"), rangemode="tozero")
    return dict(data=data, layout=layout)


# The two panels of generations_figure side by side, titled: what plotly's make_subplots(rows=1,
# cols=2, horizontal_spacing=0.12, subplot_titles=...) writes (tests/models/present/test_plot.py
# checks it), without its cost.
_GENERATIONS_SPACING = 0.12
_GENERATIONS_TITLES = ("NVLink per GPU (GB/s per direction)", "NVLink bisection of the system (GB/s per direction)")


def _generations_axes() -> dict:
    """The layout's axes and panel titles of :func:`generations_figure`: each column's share of the
    width left between the gaps, as plotly computes it, operation for operation; the titles
    centred above their panels, lifted clear of the bars' labels."""
    cols = len(_GENERATIONS_TITLES)
    width = (1.0 - _GENERATIONS_SPACING * (cols - 1)) / cols
    layout, titles = {}, []
    for c, text in enumerate(_GENERATIONS_TITLES):
        start = sum([width] * c) + c * _GENERATIONS_SPACING
        domain = [start, start + width]
        suffix = "" if c == 0 else str(c + 1)
        layout[f"xaxis{suffix}"] = dict(anchor=f"y{suffix}", domain=domain, type="category")
        layout[f"yaxis{suffix}"] = dict(anchor=f"x{suffix}", domain=[0.0, 1.0])
        titles.append(dict(font=dict(size=16), showarrow=False, text=text, x=sum(domain) / 2.0, xanchor="center",
                           xref="paper", y=1.0, yanchor="bottom", yref="paper", yshift=10))
    layout["annotations"] = titles
    return layout


