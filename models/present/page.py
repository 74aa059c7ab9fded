"""One self-contained HTML page: the report and every ``--out`` page are built here.

A page is one file that opens without a network: plotly.js is embedded once in the head, every
figure is a ``<figure>`` with a stable id (the same input gives the same file), one stylesheet
serves every page, and figures drawn before the layout settled are resized once it has.

- :func:`html_page` wraps a body (a list of HTML fragments) into the document;
- :class:`FigureDivs` turns plotly figures into the page's figure elements;
- :func:`figures_page` is the page of ``bound``, ``whatif`` and ``plan --out``: a title, a few
  blocks of text and the figures;
- :func:`escape` is the one HTML escape of every page.

Importing this module imports plotly.

Examples
--------
>>> text = html_page("A & B", ["<p>hello</p>"])
>>> text.startswith("<!DOCTYPE html>") and "<title>A &amp; B</title>" in text and "<p>hello</p>" in text
True
"""

from __future__ import annotations

import html
from types import MappingProxyType

import plotly.io as pio
from plotly.offline import get_plotlyjs

__all__ = ["html_page", "figures_page", "FigureDivs", "escape", "PLOTLY_CONFIG", "STYLE"]

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
        self.count += 1
        body = pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=f"fig-{slug}",
                           config=dict(PLOTLY_CONFIG), default_width="100%", validate=False)
        cap = f"<figcaption>{caption}</figcaption>" if caption else ""
        return f"<figure class='plot' data-figure='{escape(slug)}'>{body}{cap}</figure>"

    @staticmethod
    def missing(what: str, reason: str) -> str:
        """The note in place of a figure the models cannot draw, saying why."""
        return (f"<figure class='plot missing'><p><b>{escape(what)}</b>: not available; "
                f"{escape(reason)}</p></figure>")


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
