"""Figures of the optimal-schedule bounds: a tree packing on the fabric, NCCL vs bound per set size.

This module imports plotly; ``import models`` does not load it.

Examples
--------
>>> import topo
>>> from models.studies.bounds import bound
>>> G = topo.dgx1v()
>>> b = bound(G, "all_gather", 2**30, [0, 1, 2, 3], trees=True, edge_kinds=["nvlink"], nccl=False)
>>> type(packing_figure(G, b)).__name__
'Figure'
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

import topo
from topo.errors import DgxTopoError
from topo.plot import fabric_figure_dict
from topo.plot_style import axis_title, build_figure, style_figure, style_layout
from topo.units import to_GBps

from ..studies.bounds import Bound, subset_bounds
from ..predict.collectives import subsets
from ..studies.packing import TreePacking
from .format import format_percent
from .plot import curve_styles

__all__ = ["packing_figure", "packing_figure_dict", "bound_vs_nccl_figure", "ratio_by_size_figure", "ratio_by_size_figure_dict", "DODGE"]

#: Largest distance between the dodged lines of :func:`ratio_by_size_figure`. [GPUs]
DODGE = 0.12


def packing_figure(G, packing, *, title: str | None = None, width: int | None = None,
                   height: int | None = None) -> go.Figure:
    """A tree packing drawn on the fabric: each link coloured by the share of its capacity used.

    Parameters
    ----------
    G : networkx.DiGraph
        The fabric the packing was computed on.
    packing : TreePacking or Bound
        A packing, or a bound computed with ``trees=True`` (its last packing is drawn).
    title : str, optional
    width, height : int, optional
        [px]

    Returns
    -------
    plotly.graph_objects.Figure

    Raises
    ------
    topo.DgxTopoError
        For a bound without a packing, or another object.
    """
    return build_figure(**packing_figure_dict(G, packing, title=title, width=width, height=height))


def packing_figure_dict(G, packing, *, title: str | None = None, width: int | None = None,
                        height: int | None = None) -> dict:
    """:func:`packing_figure` as plotly's plain figure dict, unchecked, for a page that writes its
    figures' JSON itself (:func:`models.present.page.figure_html`). The arguments, the drawing and
    the errors are :func:`packing_figure`'s.

    Returns
    -------
    dict
        ``{"data": [trace dicts], "layout": {...}}``.
    """
    if isinstance(packing, Bound):
        if not packing.packings:
            raise DgxTopoError("the bound has no tree packing to draw: expected bound(..., trees=True)")
        packing = packing.packings[-1]
    if not isinstance(packing, TreePacking):
        raise DgxTopoError(f"expected a TreePacking or Bound, received {type(packing).__name__}")
    values = {edge: 100.0 * load / cap for edge, load, cap in packing.loads}
    text = {edge: f"{edge[0]} → {edge[1]}: trees carry {to_GBps(load):.2f} of {to_GBps(cap):.2f} GB/s"
            for edge, load, cap in packing.loads}
    host_layer = any(G.nodes[n]["kind"] not in ("gpu", "nvswitch") for edge in values for n in edge)
    heading = title if title is not None else (
        f"{G.graph.get('name', 'fabric')}: {packing.collective} tree packing, {len(packing.trees)} trees, "
        f"{to_GBps(packing.rate):.2f} GB/s per root")
    order = topo.gpus(G)  # GPU ids index this order
    figure = fabric_figure_dict(G, host_layer=host_layer, edge_values=values,
                                value_label="load (% of<br>capacity)", value_range=(0.0, 100.0),
                                missing_label="links no tree crosses", edge_text=text,
                                highlight=[order[i] for i in packing.gpus], title=heading, width=width,
                                height=height)
    shown = [f"{t.root}: " + " ".join(f"{a}>{b}" for a, b, _ in t.arcs) for t in packing.trees[:6]]
    layout = figure["layout"]
    layout["title"] = {**layout.get("title", {}), "subtitle": dict(
        text="trees (root: arcs): " + " | ".join(shown) + (" ..." if len(packing.trees) > 6 else ""))}
    layout["margin"] = {**layout.get("margin", {}), "t": 80}
    return figure


def bound_vs_nccl_figure(G, collective: str, nbytes=2**33, *, relay: str = "switches", edge_kinds=None,
                         title: str | None = None, width: int | None = None,
                         height: int | None = None) -> go.Figure:
    """NCCL's predicted busbw against the bound, for every GPU set, by set size.

    Each set is a point (x: set size with a small jitter; y: busbw); a line joins the mean
    ratio per size on a second axis.

    Parameters
    ----------
    G : networkx.DiGraph
    collective : str
    nbytes : int
        Size of NCCL's estimate (default 8 GiB: its bandwidth term dominates). [B]
    relay : {"none", "switches", "all"}
    edge_kinds : iterable of str, optional
    title : str, optional
    width, height : int, optional

    Returns
    -------
    plotly.graph_objects.Figure
    """
    bounds = {r.gpus: r.bound_busbw for r in subset_bounds(G, collective, relay=relay, edge_kinds=edge_kinds)}
    sizes = sorted({len(g) for g in bounds})
    fig = go.Figure()
    xs, bound_y, nccl_y, hover, mean_ratio = [], [], [], [], []
    for k in sizes:
        ratios = []
        for r in subsets(G, collective, nbytes, k):
            b = bounds[r.gpus]
            jitter = 0.25 * (hash(r.gpus) % 1000 / 1000 - 0.5)
            xs.append(k + jitter)
            bound_y.append(to_GBps(b))
            nccl_y.append(to_GBps(r.busbw))
            hover.append(f"GPUs {','.join(map(str, r.gpus))}: NCCL {to_GBps(r.busbw):.1f} of "
                         f"{to_GBps(b):.1f} GB/s ({format_percent(r.busbw / b, 0)})" if b > 0 else "bound 0")
            if b > 0:
                ratios.append(r.busbw / b)
        mean_ratio.append(float(np.mean(ratios)) if ratios else float("nan"))
    fig.add_trace(go.Scatter(x=xs, y=bound_y, mode="markers", name="bound (optimal schedule)",
                             marker=dict(symbol="line-ew-open", size=12), text=hover, hoverinfo="text"))
    fig.add_trace(go.Scatter(x=xs, y=nccl_y, mode="markers", name="NCCL (predicted)",
                             marker=dict(size=6, opacity=0.7), text=hover, hoverinfo="text"))
    fig.add_trace(go.Scatter(x=sizes, y=[100 * r for r in mean_ratio], mode="lines+markers",
                             name="mean NCCL / bound (%)", yaxis="y2"))
    fig.update_layout(
        xaxis=dict(title=axis_title("GPUs in the set"), dtick=1),
        yaxis=dict(title=axis_title("busbw", "GB/s"), rangemode="tozero"),
        yaxis2=dict(title=axis_title("NCCL / bound", "%"), overlaying="y", side="right", range=[0, 105],
                    showgrid=False),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0.0))
    return style_figure(fig, title=title if title is not None else
                        f"{G.graph.get('name', 'fabric')}: {collective}, NCCL vs optimal bound per GPU-set size",
                        width=width, height=height, margin=dict(t=90))


def ratio_by_size_figure(series, *, title: str | None = None, width: int | None = None,
                         height: int | None = None) -> go.Figure:
    """NCCL's busbw as a share of the bound by GPU-set size, one line per system, from numbers
    already computed (the report's: :func:`models.present.report.analysis.system_bounds`).

    Each line joins the mean over the sets of a size (each set counted once, symmetric sets
    included); its error bar spans the lowest to the highest set. The lines are dodged: each
    sits a little beside the set size (:data:`DODGE` GPUs apart) so that error bars never
    hide one another; ``customdata[:, 2]`` holds the set sizes themselves. Lines that coincide
    (:func:`models.present.plot.curve_styles`, two systems of one fabric) are drawn dashed with
    another marker and say so on hover.

    Parameters
    ----------
    series : mapping of str to mapping
        Line label -> {set size: (lowest, mean, highest) ratio}.
    title : str, optional
    width, height : int, optional
        [px]

    Returns
    -------
    plotly.graph_objects.Figure

    Raises
    ------
    topo.DgxTopoError
        For a ratio triple that is not ordered lowest <= mean <= highest.

    Examples
    --------
    >>> fig = ratio_by_size_figure({"DGX-1V": {2: (0.4, 0.5, 0.6), 8: (0.74, 0.74, 0.74)}})
    >>> fig.data[0].name, list(fig.data[0].x), [round(y) for y in fig.data[0].y]
    ('DGX-1V', [2.0, 8.0], [50, 74])
    >>> two = ratio_by_size_figure({"A": {2: (0.5, 0.5, 0.5)}, "B": {2: (0.5, 0.5, 0.5)}})
    >>> [list(t.x) for t in two.data], two.data[1].line.dash, "coincides with A" in two.data[1].hovertemplate
    ([[1.94], [2.06]], 'dash', True)
    """
    return build_figure(**ratio_by_size_figure_dict(series, title=title, width=width, height=height))


def ratio_by_size_figure_dict(series, *, title: str | None = None, width: int | None = None,
                              height: int | None = None) -> dict:
    """:func:`ratio_by_size_figure` as plotly's plain figure dict, unchecked, for a page that writes its
    figures' JSON itself (:func:`models.present.page.figure_html`). The arguments, the drawing and the
    errors are :func:`ratio_by_size_figure`'s.

    Returns
    -------
    dict
        ``{"data": [trace dicts], "layout": {...}}``.
    """
    lines = []
    for label, by_size in series.items():
        sizes = sorted(by_size)
        low, mean, high = (np.array([by_size[k][i] for k in sizes], dtype=float) for i in range(3))
        if np.any(low > mean + 1e-12) or np.any(mean > high + 1e-12):
            raise DgxTopoError(f"{label}: expected (lowest, mean, highest) ratios, received "
                               f"{[by_size[k] for k in sizes]!r}")
        lines.append((str(label), np.array(sizes, dtype=float), low, mean, high))
    styles = curve_styles([(sizes, np.concatenate([low, mean, high])) for _, sizes, low, mean, high in lines])
    step = min(DODGE, 0.6 / max(len(lines), 1))
    data = []
    for i, ((label, sizes, low, mean, high), style) in enumerate(zip(lines, styles)):
        offset = (i - (len(lines) - 1) / 2) * step
        same = "" if style["same_as"] is None else f"<br>(coincides with {lines[style['same_as']][0]})"
        trace = dict(
            type="scatter", x=(sizes + offset).tolist(), y=100 * mean, mode="lines+markers", name=label,
            line=dict(dash=style["dash"], width=style["width"]),
            marker=dict(symbol=style["symbol"], size=style["size"]),
            error_y=dict(type="data", symmetric=False, array=100 * (high - mean), arrayminus=100 * (mean - low),
                         thickness=1.2, width=3),
            hovertemplate=(f"{label}<br>%{{customdata[2]}} GPUs: mean %{{y:.0f}}% of the bound"
                           f"<br>sets from %{{customdata[0]:.0f}}% to %{{customdata[1]:.0f}}%{same}<extra></extra>"))
        if len(sizes):
            trace["customdata"] = np.stack([100 * low, 100 * high, sizes], axis=-1)
        data.append(trace)
    layout = style_layout(title=title if title is not None else
                          "NCCL's predicted busbw as a share of the bound, by GPU-set size",
                          width=width, height=height, default_height=460, margin=dict(t=90))
    layout.update(
        xaxis=dict(title=dict(text=axis_title("GPUs in the set")), dtick=1),
        yaxis=dict(title=dict(text=axis_title("NCCL / bound", "%")), range=[0, 105]),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0.0))
    return dict(data=data, layout=layout)


