"""Figures of training-step plans: step-time breakdown per layout, memory per GPU.

This module imports plotly; ``models``'s namespace does not import it, so
``import models`` stays free of plotly.

Examples
--------
>>> import topo
>>> from models.studies.planner import search
>>> s = search("megatron-8.3b", topo.dgx2(), tp=8, zero=0, recompute="full", dtype="fp16")
>>> step_time_figure(s).data[0].name
'compute'
>>> step_time_figure(s).layout.yaxis.title.text
'exposed time per step (s)'
"""

from __future__ import annotations

import plotly.graph_objects as go

from topo.plot_style import axis_title, build_figure, style_layout, time_unit
from topo.units import GB

__all__ = ["step_time_figure", "memory_figure", "step_time_figure_dict", "memory_figure_dict"]

_COMPONENTS = ("compute", "tp_comm", "pp_comm", "bubble", "dp_comm", "optimizer")
# Layout labels are long ("tp4 pp1 dp4 zero3 mb1 rc=none sp tp-dp-pp"): room for them slanted.
_LABEL_MARGIN = 150


def _plans(result, top):
    plans = getattr(result, "plans", None)
    plans = list(plans) if plans is not None else list(result if isinstance(result, (list, tuple)) else [result])
    return plans[:top]


def _exposed(p, name: str) -> float:
    """A component's exposed time, 0 where the plan has none (a layout without context or expert parallelism). [s]"""
    return next((c.exposed for c in p.components if c.name == name), 0.0)


def step_time_figure(result, *, top: int = 12) -> go.Figure:
    """Stacked bars: the exposed time of each step component, per layout (fitting ones), in the
    unit the longest step reads best in (s, ms or µs, as the tables write it).

    Parameters
    ----------
    result : Search, Plan or sequence of Plan
    top : int
        Layouts shown, best first.
    """
    return build_figure(**step_time_figure_dict(result, top=top))


def step_time_figure_dict(result, *, top: int = 12) -> dict:
    """:func:`step_time_figure` as plotly's plain figure dict, unchecked, for a page that writes its
    figures' JSON itself (:func:`models.present.page.figure_html`): ``{"data": [...], "layout": {...}}``."""
    plans = [p for p in _plans(result, top) if p.fits]
    labels = [p.layout.label() for p in plans]
    unit, factor = time_unit(max((p.step_time for p in plans), default=0.0))
    # Context and expert parallelism's components where a plan has them.
    names = _COMPONENTS + tuple(n for n in ("cp_comm", "ep_comm")
                                if any(c.name == n for p in plans for c in p.components))
    data = [dict(type="bar", name=name, x=labels, y=[_exposed(p, name) * factor for p in plans],
                 hovertemplate="%{x}<br>" + name + ": %{y:.2f} " + unit + "<extra></extra>") for name in names]
    title = f"{plans[0].workload} on {plans[0].fabric}: step time per layout" if plans else "no layout fits"
    layout = style_layout(title=title, default_height=480, margin=dict(b=_LABEL_MARGIN))
    layout.update(barmode="stack", yaxis=dict(title=dict(text=axis_title("exposed time per step", unit))),
                  xaxis=dict(title=dict(text="layout"), tickangle=30), legend=dict(title=dict(text="component")))
    return dict(data=data, layout=layout)


def memory_figure(result, *, top: int = 12) -> go.Figure:
    """Stacked bars: memory per GPU by kind, per layout, with the GPU's capacity as a line. [GB]"""
    return build_figure(**memory_figure_dict(result, top=top))


def memory_figure_dict(result, *, top: int = 12) -> dict:
    """:func:`memory_figure` as plotly's plain figure dict, unchecked (see :func:`step_time_figure_dict`)."""
    plans = _plans(result, top)
    labels = [p.layout.label() + ("" if p.fits else " (OOM)") for p in plans]
    data = [dict(type="bar", name=name, x=labels, y=[getattr(p.memory, name) / GB for p in plans],
                 hovertemplate="%{x}<br>" + name + ": %{y:.1f} GB<extra></extra>")
            for name in ("parameters", "gradients", "optimizer", "activations")]
    if plans:
        data.append(dict(type="scatter", name="capacity", x=labels, y=[p.memory.capacity / GB for p in plans],
                         mode="lines", line={"dash": "dash", "color": "black"}))
    layout = style_layout(title="memory per GPU", default_height=480, margin=dict(b=_LABEL_MARGIN))
    layout.update(barmode="stack", yaxis=dict(title=dict(text=axis_title("memory per GPU", "GB"))),
                  xaxis=dict(title=dict(text="layout"), tickangle=30))
    return dict(data=data, layout=layout)
