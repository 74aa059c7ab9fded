"""Figures of a failure sweep (:func:`models.studies.whatif.sweep`): where failures hurt, and a ranking.

* :func:`sweep_fabric_figure` draws the fabric with every swept component's links coloured by
  the busbw loss its failure causes (:func:`topo.plot.fabric_figure` with ``edge_values``);
* :func:`sweep_figure` is a bar chart of the failures ranked by loss.

This module imports plotly; ``import models`` does not load it.

Examples
--------
>>> import topo
>>> from models.studies.sweep import sweep
>>> G = topo.dgx2()
>>> s = sweep(G, "all_reduce", 2**30, fail_each="nvswitch")
>>> len(sweep_figure(s).data), sweep_fabric_figure(G, s).layout.title.text
(1, 'DGX-2: busbw loss of all_reduce 1 GiB when each NVSwitch fails')
"""

from __future__ import annotations

from types import MappingProxyType

import plotly.graph_objects as go

from topo.errors import DgxTopoError
from topo.plot import fabric_figure
from topo.plot_style import axis_title, style_figure
from topo.units import to_GBps, to_us

from ..studies.sweep import Sweep
from .format import format_bytes, format_percent
from .sweep_text import sweep_row_note

__all__ = ["sweep_fabric_figure", "sweep_figure"]

_WHAT = MappingProxyType({"nvlink": "one link of each NVLink bundle fails", "nvswitch": "each NVSwitch fails",
                          "nic": "each NIC fails", "gpu": "each GPU fails (the job runs on the others)"})


def _check(result) -> None:
    if not isinstance(result, Sweep):
        raise DgxTopoError(f"expected a models.studies.sweep.Sweep, received {type(result).__name__}")
    if not result.rows:
        raise DgxTopoError("expected a sweep with at least one failure case, received none")


def _component_edges(G, failure) -> list:
    if failure.is_node:
        node = failure.nodes[0]
        return list(G.out_edges(node)) + list(G.in_edges(node))
    u, v = failure.nodes
    return [(u, v), (v, u)]


def sweep_fabric_figure(G, result: Sweep, *, host_layer: bool | None = None,
                        title: str | None = None, width: int | None = None,
                        height: int | None = None) -> go.Figure:
    """The fabric, each swept component's links coloured by the busbw loss its failure causes.

    A link bundle carries the loss of its own failure; the links of a failed part (NVSwitch,
    NIC, GPU) carry the part's. With ``pairs=True`` a component carries the worst loss of
    any pair it is in. Links that no swept failure touches are thin and grey.

    Parameters
    ----------
    G : networkx.DiGraph
        The fabric the sweep ran on.
    result : Sweep
    host_layer : bool, optional
        Draw PCIe switches, CPUs and NICs; by default for NIC and GPU sweeps only.
    title : str, optional
    width, height : int, optional
        [px]

    Returns
    -------
    plotly.graph_objects.Figure

    Raises
    ------
    topo.DgxTopoError
        For something that is not a sweep, or a sweep of another fabric (a failed component
        that ``G`` lacks).
    """
    _check(result)
    worst: dict = {}  # component -> (loss, row)
    for row in result.rows:
        for failure in row.failed:
            if any(n not in G for n in failure.nodes):
                raise DgxTopoError(f"the sweep fails {failure}, which is not in "
                                   f"{G.graph.get('name', 'the fabric')}: expected the fabric the "
                                   f"sweep ran on")
            if failure not in worst or row.loss > worst[failure][0]:
                worst[failure] = (row.loss, row)
    values: dict = {}
    text: dict = {}
    for failure, (loss, row) in worst.items():
        line = (f"failing {row.label}: busbw {to_GBps(row.busbw):.1f} GB/s, "
                f"loss {format_percent(loss)}" + (f" ({note})" if (note := sweep_row_note(row)) else ""))
        for edge in _component_edges(G, failure):
            if 100 * loss >= values.get(edge, -1.0):
                values[edge] = 100 * loss
                text[edge] = line
    if host_layer is None:
        host_layer = result.fail_each in ("nic", "gpu")
    top = max(values.values(), default=0.0)
    heading = title if title is not None else (
        f"{result.fabric}: busbw loss of {result.collective} {format_bytes(result.nbytes)} when "
        f"{_WHAT[result.fail_each]}" + (" (worst pair)" if result.pairs else ""))
    return fabric_figure(G, host_layer=host_layer, edge_values=values,
                         value_label="busbw loss (%)", value_range=(0.0, max(top, 1.0)),
                         missing_label="links no swept failure touches", edge_text=text,
                         title=heading, width=width, height=height)


def sweep_figure(result: Sweep, *, top: int | None = 30, title: str | None = None,
                 width: int | None = None, height: int | None = None) -> go.Figure:
    """Bar chart of the failures ranked by the busbw loss they cause, worst at the top.

    Parameters
    ----------
    result : Sweep
    top : int, optional
        Show the ``top`` worst failures (all if None).
    title : str, optional
    width, height : int, optional
        [px]

    Returns
    -------
    plotly.graph_objects.Figure

    Raises
    ------
    topo.DgxTopoError
        For something that is not a sweep, or an empty one.
    """
    _check(result)
    shown = result.rows if top is None else result.rows[:top]
    labels = [r.label for r in shown]
    loss = [100 * r.loss for r in shown]
    hover = []
    for rank, r in enumerate(shown, 1):
        time = "cannot run" if r.time == float("inf") else f"{to_us(r.time):.1f} µs"
        lines = [f"<b>{r.label}</b> (rank {rank} of {len(result.rows)})",
                 f"busbw {to_GBps(r.busbw):.2f} GB/s (baseline {to_GBps(result.baseline_busbw):.2f})",
                 f"time {time}", f"loss {format_percent(r.loss)}"]
        if r.p2p_pair is not None:
            lines.append(f"P2P {'->'.join(map(str, r.p2p_pair))}: {to_GBps(r.p2p):.1f} GB/s "
                         f"(-{100 * r.p2p_loss:.1f}%)")
        note = sweep_row_note(r)
        if note:
            lines.append(note)
        hover.append("<br>".join(lines))
    fig = go.Figure(go.Bar(
        x=loss, y=labels, orientation="h", name="busbw loss", text=[f"{v:.1f}%" for v in loss],
        textposition="auto", hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
        marker=dict(color=loss, colorscale="Reds", cmin=0, cmax=max(max(loss), 1.0),
                    colorbar=dict(title=dict(text="busbw<br>loss (%)")))))
    fig.update_xaxes(title_text=axis_title("busbw loss", "% of the baseline"), rangemode="tozero")
    fig.update_yaxes(title_text="failed", type="category", autorange="reversed")
    heading = title if title is not None else (
        f"{result.fabric}, {result.collective} {format_bytes(result.nbytes)}: the "
        f"{len(shown)} worst of {len(result.rows)} failures (baseline busbw "
        f"{to_GBps(result.baseline_busbw):.1f} GB/s)")
    return style_figure(fig, title=heading, width=width, height=height,
                        default_height=max(300, 90 + 22 * len(shown)), margin=dict(l=10, r=10, t=50, b=10))
