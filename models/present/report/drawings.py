"""Each system's drawings in the report: its fabric and the channels of an 8-GPU all_reduce on
it, written as the page holds them.

They are the report's costliest figures (a GB200 NVL72 draws 1,530 links twice, routed around its
nodes) and, for the built-in systems, the same for every user: the shipped analysis holds them
(section ``"drawing"``, keyed by the fabric, its NCCL release and the report's colour range), and
the page draws only a system that is not shipped (:mod:`models.present.report.html`).

Importing this module imports plotly's package (colour scales), not its figure classes.

Examples
--------
>>> import topo
>>> drawn = system_drawings(topo.dgx1v(), None, (15.75e9, 50e9), "DGX-1V", "dgx1v")
>>> sorted(drawn), drawn["channels"], '<div id="fig-dgx1v-fabric"' in drawn["fabric"]
(['channels', 'fabric'], None, True)
"""

from __future__ import annotations

from topo.layout import fabric_layout
from topo.plot import fabric_figure_dict

from ..page import figure_html
from ..plot import channels_figure_dict

__all__ = ["system_drawings", "slug"]


def slug(text: str) -> str:
    """``text`` as a page id: lower case, every character that is not a letter or digit a dash.

    >>> slug("DGX H100"), slug("all_reduce")
    ('dgx-h100', 'all-reduce')
    """
    return "".join(c if c.isalnum() else "-" for c in str(text).lower()).strip("-")


def system_drawings(G, e8, colour_range, name: str, system: str) -> dict:
    """One system's fabric figure and channel figure as the page writes them
    (:func:`models.present.page.figure_html`, div ids ``fig-<system>-fabric`` and
    ``fig-<system>-channels``), on one layout.

    Parameters
    ----------
    G : networkx.DiGraph
    e8 : CollectiveEstimate or None
        The all_reduce of GPUs 0-7 whose channels are drawn; None draws none.
    colour_range : tuple of float
        ``(low, high)`` bandwidth of the fabric figure's colour scale, the report's. [B/s]
    name : str
        The system's display name (the titles).
    system : str
        The system's name (the ids, through :func:`slug`).

    Returns
    -------
    dict
        ``{"fabric": str, "channels": str or None}``: each figure's ``<div>``.
    """
    pos = fabric_layout(G)  # one layout for both drawings of the system
    at = slug(system)
    fabric = fabric_figure_dict(G, pos=pos, color_range=colour_range,
                                title=f"{name}: fabric (links by bandwidth per direction)")
    channels = None if e8 is None else figure_html(channels_figure_dict(G, e8, pos=pos), f"fig-{at}-channels")
    return {"fabric": figure_html(fabric, f"fig-{at}-fabric"), "channels": channels}
