"""One self-contained HTML page: the report and every ``--out`` page are built here.

A page is one file that opens without a network: plotly.js is embedded once in the head, every
figure is a ``<figure>`` with a stable id (the same input gives the same file), one stylesheet
serves every page, and figures drawn before the layout settled are resized once it has.

- :func:`html_page` wraps a body (a list of HTML fragments) into the document;
- :class:`FigureDivs` turns plotly figures into the page's figure elements;
- :func:`figures_page` is the page of ``bound``, ``whatif`` and ``plan --out``: a title, a few
  blocks of text and the figures;
- :func:`escape` is the one HTML escape of every page.

Importing this module imports plotly's package and reads plotly.js, but not plotly's figure classes or
their validators: a figure given as a plain dict is written here, as plotly's ``to_html`` would write it
(:func:`figure_html`), and only a ``plotly.graph_objects.Figure`` goes through plotly.

Examples
--------
>>> text = html_page("A & B", ["<p>hello</p>"])
>>> text.startswith("<!DOCTYPE html>") and "<title>A &amp; B</title>" in text and "<p>hello</p>" in text
True
"""

from __future__ import annotations

import base64
import html
import json
import math
from types import MappingProxyType

import numpy as np
from plotly.offline import get_plotlyjs

__all__ = ["html_page", "figures_page", "FigureDivs", "figure_html", "escape", "PLOTLY_CONFIG", "STYLE"]

#: plotly's configuration of every figure of every page.
PLOTLY_CONFIG = MappingProxyType({"displaylogo": False, "responsive": True})

# Figures drawn before the page's grid settled get their size again once it has.
_RESIZE = ("window.addEventListener('load', function () { document.querySelectorAll('.js-plotly-plot')"
           ".forEach(function (div) { Plotly.Plots.resize(div); }); });")

#: The stylesheet of every page.
STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0 auto;
       max-width: 1500px; padding: 0 24px 48px; color: #222; line-height: 1.45; }
h1 { margin-top: 24px; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 36px; }
.scroll { overflow-x: auto; }
table.summary { border-collapse: collapse; font-size: 14px; }
table.summary th, table.summary td { border: 1px solid #ddd; padding: 4px 8px; text-align: right; }
table.summary th { background: #f4f6f8; vertical-align: bottom; max-width: 140px; }
table.summary td:first-child { text-align: left; }
table.systems td:nth-child(3), table.generations td:nth-child(2), table.generations td:nth-child(3),
table.bounds td:nth-child(2), table.worst td:nth-child(2), table.worst td:nth-child(7),
table.worst td:nth-child(8), table.training td:nth-child(2), table.training td:nth-child(9),
table.training td:nth-child(10), table.gpus td:nth-child(7), table.collectives td:nth-child(2),
table.collectives td:nth-child(8), table.collectives td:nth-child(9) { text-align: left; }
table.worst td:nth-child(8) { min-width: 420px; }
.nowrap { white-space: nowrap; }
.muted { color: #666; font-size: 90%; }
.grid { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 12px; }
@media (max-width: 1000px) { .grid { grid-template-columns: minmax(0, 1fr); } }
figure.plot { margin: 12px 0; min-width: 0; }
figure.missing { border: 1px dashed #bbb; padding: 12px; color: #555; }
figcaption { color: #555; font-size: 90%; }
table.errors td.err.ok { background: #e3f4e1; } table.errors td.err.fair { background: #fdf1d6; }
table.errors td.err.poor { background: #f9dcdc; } table.errors td.na { color: #999; }
table.bysize { font-size: 12px; } table.bysize td, table.bysize th { padding: 2px 6px; }
nav a { margin-right: 14px; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; }
"""


def escape(value) -> str:
    """``value`` as HTML text (quotes escaped too, so it also fits an attribute)."""
    return html.escape(str(value), quote=True)


class FigureDivs:
    """Figure elements with stable ids, counted (a page says how many it drew).

    Examples
    --------
    >>> FigureDivs.missing("P2P matrix", "no GPU has memory_bandwidth")
    "<figure class='plot missing'><p><b>P2P matrix</b>: not available; no GPU has memory_bandwidth</p></figure>"
    """

    def __init__(self):
        self.count = 0

    def div(self, fig, slug: str, caption: str = "") -> str:
        """A plotly figure, or its plain dict (written as given, unchecked), as ``<figure>`` with
        the div id ``fig-<slug>`` and an optional caption (HTML). plotly.js is not included:
        :func:`html_page` embeds it once."""
        if isinstance(fig, dict):
            body = figure_html(fig, f"fig-{slug}")
        else:
            import plotly.io as pio  # a checked figure: plotly writes it (its classes are loaded already)

            body = pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=f"fig-{slug}",
                               config=dict(PLOTLY_CONFIG), default_width="100%", validate=False)
        return self.written(body, slug, caption)

    def written(self, body: str, slug: str, caption: str = "") -> str:
        """A figure already written (:func:`figure_html` with the div id ``fig-<slug>``) as
        :meth:`div` writes it."""
        self.count += 1
        cap = f"<figcaption>{caption}</figcaption>" if caption else ""
        return f"<figure class='plot' data-figure='{escape(slug)}'>{body}{cap}</figure>"

    @staticmethod
    def missing(what: str, reason: str) -> str:
        """The note in place of a figure the models cannot draw, saying why."""
        return (f"<figure class='plot missing'><p><b>{escape(what)}</b>: not available; "
                f"{escape(reason)}</p></figure>")


# What plotly's JSON writer does, for the same text without loading its figure classes (plotly 5.23
# to 7: plotly/io/_json.py to_json_plotly, _plotly_utils/utils.py convert_to_base64 and
# to_typed_array_spec, plotly/io/_html.py to_html): numpy arrays become typed arrays (base64 of
# their bytes, 64-bit integers narrowed to the smallest type that holds them), NaN and infinities
# null, and "<", ">", "/" escaped so that no text closes the script.
_TYPED = MappingProxyType({"int8": "i1", "uint8": "u1", "int16": "i2", "uint16": "u2", "int32": "i4",
                           "uint32": "u4", "float32": "f4", "float64": "f8"})
_NOT_TYPED = frozenset({"geojson", "layer", "layers", "range"})  # keys plotly leaves as lists
_SCALARS = frozenset({float, int, str, bool, type(None), np.float64, np.int64, np.str_})
_SCRIPT_SAFE = (("<", "\\u003c"), (">", "\\u003e"), ("/", "\\u002f"))


def _typed_array(v: np.ndarray):
    if v.size == 0:
        return v
    for wide, narrow in (("int64", ("int8", "int16", "int32")), ("uint64", ("uint8", "uint16", "uint32"))):
        if v.dtype == wide:
            lo, hi = v.min(), v.max()
            fit = next((t for t in narrow if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max), None)
            if fit is None:
                return v
            v = v.astype(fit)
    short = _TYPED.get(str(v.dtype))
    if short is None:
        return v
    spec = {"dtype": short, "bdata": base64.b64encode(v).decode("ascii")}
    if v.ndim > 1:
        spec["shape"] = str(v.shape)[1:-1]
    return spec


def _plain(obj):
    """``obj`` with every numpy array under a dict key made a typed array, as plotly's figures
    write them (a copy: the figure given is left as it is)."""
    if isinstance(obj, dict):
        return {k: (v if k in _NOT_TYPED else _typed_array(v) if isinstance(v, np.ndarray) else _plain(v))
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        if _SCALARS.issuperset(map(type, obj)):  # most lists: numbers and text, nothing to convert
            return obj
        return [_plain(v) for v in obj]
    return obj


def _json_default(obj):
    if isinstance(obj, (np.ndarray, np.generic)):
        return obj.tolist()
    raise TypeError(f"expected plain data in a figure, received {type(obj).__name__}")


def _strict(value):
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strict(v) for v in value]
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _figure_json(obj) -> str:
    text = json.dumps(obj, separators=(",", ":"), default=_json_default)
    if "NaN" in text or "Infinity" in text:  # maybe in a string only: plotly decodes and re-encodes too
        text = json.dumps(_strict(json.loads(text)), separators=(",", ":"))
    for unsafe, safe in _SCRIPT_SAFE:
        text = text.replace(unsafe, safe)
    return text


def _css_size(value) -> str:
    try:
        float(value)
    except (ValueError, TypeError):
        return value
    return f"{value}px"


def figure_html(figure: dict, div_id: str) -> str:
    """A figure given as a plain dict (``data``, ``layout``), written as the ``<div>`` plotly's
    ``to_html(full_html=False, include_plotlyjs=False, validate=False)`` writes with the page's
    :data:`PLOTLY_CONFIG`, character for character, without loading plotly's figure classes.

    The dict is not checked: the figure functions' tests check every dict they build against
    plotly's figure classes.

    Examples
    --------
    >>> text = figure_html({"data": [{"type": "bar", "y": np.array([1, 2])}], "layout": {"height": 300}}, "fig-a")
    >>> '"y":{"dtype":"i1","bdata":"AQI="}' in text and 'style="height:300px; width:100%;"' in text
    True
    """
    data, layout = _plain(figure.get("data", [])), _plain(figure.get("layout", {}))
    template = layout.get("template", {}).get("layout", {})
    width = _css_size(layout.get("width", template.get("width", "100%")))
    height = _css_size(layout.get("height", template.get("height", "100%")))
    config = json.dumps(dict(PLOTLY_CONFIG))
    gap = " " * 4  # plotly's template's indentation, kept in its output
    script = (f'{gap * 4}if (document.getElementById("{div_id}")) {{{gap * 5}Plotly.newPlot({gap * 6}"{div_id}",'
              f'{gap * 6}{_figure_json(data)},{gap * 6}{_figure_json(layout)},{gap * 6}{config}{gap * 5}){gap * 4}}}')
    return (f'<div style="height:{height}; width:{width};">{gap * 7}<div id="{div_id}" class="plotly-graph-div" '
            f'style="height:100%; width:100%;"></div>{gap * 3}<script>{gap * 4}window.PLOTLYENV=window.PLOTLYENV || '
            f'{{}};{gap * 4}{script};{gap * 3}</script>{gap * 2}</div>')


def html_page(title: str, body) -> str:
    """A complete HTML document around ``body`` (HTML fragments), plotly.js inline (no external
    resource)."""
    return "\n".join([
        "<!DOCTYPE html>", "<html lang='en'>", "<head>", "<meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{escape(title)}</title>", f"<style>{STYLE}</style>",
        "<script type='text/javascript'>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>",
        f"<script type='text/javascript'>{get_plotlyjs()}</script>", "</head>", "<body>",
        *body, f"<script type='text/javascript'>{_RESIZE}</script>", "</body>", "</html>", ""])


def figures_page(title: str, figures, texts=()) -> str:
    """The page of ``bound``, ``whatif`` and ``plan --out``: the title, each text as a
    preformatted block (what the command prints), then the figures (ids ``fig-figure-1``, ...).

    Parameters
    ----------
    title : str
    figures : iterable of plotly.graph_objects.Figure
    texts : iterable of str
    """
    divs = FigureDivs()
    return html_page(title, [f"<h1>{escape(title)}</h1>", *(f"<pre>{escape(text)}</pre>" for text in texts),
                             *(divs.div(fig, f"figure-{i + 1}") for i, fig in enumerate(figures))])
