"""One look for every figure of dgx-topo: the plotly template, the unit notation of axes, log
ticks that do not crowd, and label colours picked by contrast.

Every figure function (:mod:`topo.plot` and the plot modules of :mod:`models.present`) ends
with :func:`style_figure`, so that all figures share a white background, one font, one
colour cycle, one hover label and one margin. Axis titles are written ``"quantity (unit)"``
(:func:`axis_title`): ``"busbw (GB/s)"``, ``"time (ms)"``, ``"memory per GPU (GB)"``; a time
axis picks its unit from the magnitude it shows (:func:`time_unit`) so that it reads like the
tables (25.66 s, not 25k ms). Log axes get explicit ticks (:func:`log_ticks`): decades, plus
2 and 5 only where the axis spans few decades.

Like :mod:`topo.plot`, this module imports plotly; ``import topo`` does not load it.

Examples
--------
>>> import plotly.graph_objects as go
>>> fig = style_figure(go.Figure(), title="busbw", default_height=400)
>>> fig.layout.template.layout.plot_bgcolor, fig.layout.height
('white', 400)
>>> axis_title("busbw", "GB/s"), time_unit(25.66), time_unit(0.004)
('busbw (GB/s)', ('s', 1.0), ('ms', 1000.0))
>>> log_ticks(8.0, 6000.0)
[1.0, 10.0, 100.0, 1000.0, 10000.0]
>>> text_colour("#76b900"), text_colour("#08306b")
('#1a1a1a', 'white')
"""

from __future__ import annotations

import math
from types import MappingProxyType

import plotly.graph_objects as go

__all__ = ["FONT_FAMILY", "COLORWAY", "GRID_COLOR", "DARK_TEXT", "LIGHT_TEXT", "template", "style_figure",
           "style_layout", "build_figure", "draft", "finish", "axis_title", "time_unit", "log_ticks", "log_axis", "text_colour",
           "blend"]

#: The page's font stack (the report's CSS uses the same), so figures and text match.
FONT_FAMILY = '-apple-system, "Segoe UI", Helvetica, Arial, sans-serif'
#: Colours given in turn to the traces of a figure (d3's category10: distinct, print-safe).
COLORWAY = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
            "#bcbd22", "#17becf")
GRID_COLOR = "#eeeeee"
#: Text colours :func:`text_colour` chooses between.
DARK_TEXT, LIGHT_TEXT = "#1a1a1a", "white"
_TEXT_COLOR = "#222222"
_MARGIN = MappingProxyType(dict(l=60, r=20, t=60, b=50))


def _template_layout() -> dict:
    def axis():
        return dict(gridcolor=GRID_COLOR, linecolor="#888888", zeroline=False, ticks="outside",
                    tickcolor="#888888", automargin=True, title=dict(standoff=8))
    return dict(
        font=dict(family=FONT_FAMILY, size=13, color=_TEXT_COLOR),
        title=dict(font=dict(size=16), x=0.0, xanchor="left", xref="paper"),
        paper_bgcolor="white", plot_bgcolor="white", colorway=list(COLORWAY),
        hoverlabel=dict(bgcolor="white", bordercolor="#888888", font=dict(family=FONT_FAMILY, size=12,
                                                                           color=_TEXT_COLOR), align="left"),
        legend=dict(bgcolor="rgba(255,255,255,0.85)", font=dict(size=12)),
        xaxis=axis(), yaxis=axis(), margin=dict(_MARGIN), hovermode="closest")


def template() -> go.layout.Template:
    """The plotly template every figure uses (a new object each call: figures own theirs).

    Returns
    -------
    plotly.graph_objects.layout.Template
    """
    return go.layout.Template(layout=_template_layout())


def style_layout(*, title: str | None = None, width: int | None = None, height: int | None = None,
                 default_height: int | None = None, margin: dict | None = None) -> dict:
    """What :func:`style_figure` sets, as a plain layout dict (for :func:`build_figure`).

    >>> sorted(style_layout(title="busbw", default_height=400))
    ['height', 'template', 'title']
    """
    layout: dict = {"template": {"layout": _template_layout()}}
    height = height if height is not None else default_height
    layout.update((k, v) for k, v in (("width", width), ("height", height)) if v is not None)
    if title is not None:
        layout["title"] = dict(text=title)
    if margin:
        layout["margin"] = dict(margin)
    return layout


def style_figure(fig: go.Figure, *, title: str | None = None, width: int | None = None,
                 height: int | None = None, default_height: int | None = None, margin: dict | None = None) -> go.Figure:
    """Give a figure the shared template, a title and a size; returns the same figure.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
    title : str, optional
        Left unchanged when None.
    width, height : int, optional
        [px]; ``height`` None takes ``default_height``; a size left None is left as it is.
    default_height : int, optional
        [px]
    margin : dict, optional
        Margins that differ from the template's (``l``, ``r``, ``t``, ``b``).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    fig.layout.template = {"layout": _template_layout()}  # assigned: replaces plotly's default
    sizes = dict(width=width, height=height if height is not None else default_height)
    fig.update_layout({k: v for k, v in sizes.items() if v is not None})
    if title is not None:
        fig.update_layout(title=dict(text=title))
    if margin:
        fig.update_layout(margin=margin)
    return fig


def build_figure(data, layout: dict) -> go.Figure:
    """One figure from plain dicts (traces with their ``type``, and the layout), built in one step.

    plotly checks every property against its schema as it is set, and re-checks every trace,
    shape and annotation a figure already holds each time one is added: a fabric drawing of a
    few thousand links spent most of its time there. The figures of dgx-topo are drawn as plain
    dicts, or on a :func:`draft` figure, unchecked, and the tests check every figure of the
    report once (``test_every_figure_passes_plotlys_checks``); the figure returned checks what is
    changed on it afterwards, as any other.

    Parameters
    ----------
    data : iterable of dict
        Traces, each with its ``type`` (``"scatter"``, ``"heatmap"``, ...).
    layout : dict

    Returns
    -------
    plotly.graph_objects.Figure

    Examples
    --------
    >>> fig = build_figure([dict(type="scatter", x=[1, 2], y=[3, 4], name="a")], dict(height=300))
    >>> fig.data[0].name, fig.layout.height
    ('a', 300)
    >>> try:
    ...     fig.update_layout(heigth=200)
    ... except ValueError:
    ...     print("refused")
    refused
    """
    return finish(go.Figure(dict(data=list(data), layout=layout), _validate=False))


def draft(fig: go.Figure | None = None) -> go.Figure:
    """A figure (a new one, or ``fig``, e.g. from ``make_subplots``) on which properties are set
    unchecked until :func:`finish` (see :func:`build_figure`); add traces to it as dicts.

    >>> fig = draft()
    >>> fig.add_trace(dict(type="bar", x=["a"], y=[1])).update_layout(barmode="stack") is fig
    True
    >>> finish(fig).data[0].type
    'bar'
    """
    fig = go.Figure(_validate=False) if fig is None else fig
    for obj in (fig, fig.layout, *fig.data):
        obj._validate = False  # plotly's own flag, per object
    return fig


def finish(fig: go.Figure) -> go.Figure:
    """``fig`` checking what is set on it again (the end of :func:`draft`); returns it."""
    for obj in (fig, fig.layout, *fig.data):
        obj._validate = True
    return fig


def axis_title(quantity: str, unit: str | None = None) -> str:
    """An axis title in the one notation of every figure: ``"quantity (unit)"``.

    >>> axis_title("message size", "bytes"), axis_title("GPUs in the set")
    ('message size (bytes)', 'GPUs in the set')
    """
    return f"{quantity} ({unit})" if unit else quantity


def time_unit(seconds) -> tuple:
    """The unit a time of this magnitude reads best in, and its factor from seconds.

    Parameters
    ----------
    seconds : float
        The largest time shown. [s]

    Returns
    -------
    tuple of (str, float)
        ``("s", 1)``, ``("ms", 1e3)`` or ``("µs", 1e6)``.
    """
    seconds = abs(float(seconds)) if math.isfinite(float(seconds)) else 0.0
    if seconds >= 1.0:
        return "s", 1.0
    if seconds >= 1e-3:
        return "ms", 1e3
    return "µs", 1e6


def log_ticks(lo: float, hi: float, mantissas=None) -> list:
    """Round ticks of a log axis between two positive values.

    Parameters
    ----------
    lo, hi : float
        The range shown (any order; non-positive values are ignored).
    mantissas : sequence of int, optional
        Multiples of each decade to tick; default ``(1, 2, 5)`` over at most two decades and
        ``(1,)`` (decades alone) over more, so that labels never crowd.

    Returns
    -------
    list of float
        Ascending, from the decade at or below ``lo`` to the one at or above ``hi`` (plotly
        shows those inside the axis range, which pads the data).

    >>> log_ticks(15, 800), log_ticks(15, 2e5)
    ([10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0], [10.0, 100.0, 1000.0, 10000.0, 100000.0, 1000000.0])
    """
    lo, hi = sorted((float(lo), float(hi)))
    if not (hi > 0 and math.isfinite(hi)):
        return []
    lo = lo if lo > 0 else hi / 10
    if mantissas is None:
        mantissas = (1, 2, 5) if math.log10(hi / lo) <= 2.0 else (1,)
    first, last = math.floor(math.log10(lo) + 1e-9), math.ceil(math.log10(hi) - 1e-9)
    return [float(m * 10.0 ** e) for e in range(first, last + 1) for m in mantissas
            if m * 10.0 ** e <= 10.0 ** last * (1 + 1e-9)]


def _tick_text(value: float) -> str:
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def log_axis(values) -> dict:
    """Axis properties of a log axis over ``values``: :func:`log_ticks` written like the tables
    (``1,000`` not ``1k``).

    Parameters
    ----------
    values : iterable of float

    Returns
    -------
    dict
        ``type``, ``tickvals``, ``ticktext`` (for ``fig.update_xaxes``/``update_yaxes``).

    >>> log_axis([12.0, 180000.0])["ticktext"]
    ['10', '100', '1,000', '10,000', '100,000', '1,000,000']
    """
    finite = [float(v) for v in values if v is not None and math.isfinite(float(v)) and float(v) > 0]
    ticks = log_ticks(min(finite), max(finite)) if finite else []
    return dict(type="log", tickvals=ticks, ticktext=[_tick_text(t) for t in ticks])


def _channel(c: float) -> float:
    c /= 255.0
    return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4


def _rgb(colour: str) -> tuple:
    colour = colour.strip()
    if colour.startswith("#"):
        digits = colour[1:]
        if len(digits) == 3:
            digits = "".join(d * 2 for d in digits)
        return tuple(int(digits[i:i + 2], 16) for i in (0, 2, 4))
    if colour.startswith("rgb"):
        return tuple(float(p) for p in colour[colour.index("(") + 1:colour.index(")")].split(",")[:3])
    if colour == "white":
        return (255, 255, 255)
    raise ValueError(f"expected a colour as #rrggbb or rgb(r, g, b), received {colour!r}")


def blend(colour: str, opacity: float, background: str = "white") -> str:
    """The colour a marker of ``colour`` at ``opacity`` shows over ``background`` (``#rrggbb``).

    >>> blend("#76b900", 0.3)
    '#d6eab2'
    """
    top, bottom = _rgb(colour), _rgb(background)
    mixed = (round(opacity * a + (1 - opacity) * b) for a, b in zip(top, bottom))
    return "#" + "".join(f"{int(c):02x}" for c in mixed)


def _luminance(colour: str) -> float:
    r, g, b = (_channel(c) for c in _rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def text_colour(background: str) -> str:
    """Dark or white text, whichever contrasts more with ``background`` (WCAG 2 contrast
    ratio: W3C, "Web Content Accessibility Guidelines 2.1", relative luminance).

    Parameters
    ----------
    background : str
        ``#rrggbb``, ``#rgb`` or ``rgb(r, g, b)``.

    Returns
    -------
    str
        :data:`DARK_TEXT` or :data:`LIGHT_TEXT`.
    """
    lum = _luminance(background)
    dark, light = _luminance(DARK_TEXT), 1.0
    return DARK_TEXT if (lum + 0.05) / (dark + 0.05) >= (light + 0.05) / (lum + 0.05) else LIGHT_TEXT
