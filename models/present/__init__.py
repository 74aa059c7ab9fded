"""Presentation, the only place with words: text tables, explanations, figures, pages and the CLI.

Its face lists what a user calls, each imported from its module on first use (:mod:`topo.faces`):
importing ``models.present`` imports none of its modules (nor plotly, until a figure is asked
for). ``explain`` and ``report`` are its submodules (:mod:`models.present.explain`,
:mod:`models.present.report`).
"""

from types import MappingProxyType
from typing import TYPE_CHECKING

from topo.faces import lazy_face

# What a user calls, and the module that defines it.
_FACE = MappingProxyType({
    "main": "models.present.cli.core",
    "format_bytes": "models.present.format",
    "format_gbps": "models.present.format",
    "format_us": "models.present.format",
    "format_percent": "models.present.format",
    "systems_table": "models.present.text",
    "collective_table": "models.present.text",
    "pairs_table": "models.present.text",
    "subsets_table": "models.present.text",
    "format_p2p_report": "models.present.text",
    "simulation_table": "models.present.text",
    "format_plan": "models.present.plan_text",
    "format_search": "models.present.plan_text",
    "format_sweep": "models.present.sweep_text",
    "explain_estimate": "models.present.explain",
    "explain_bound": "models.present.explain",
    "p2p_figure": "models.present.plot",
    "busbw_figure": "models.present.plot",
    "pairs_figure": "models.present.plot",
    "channels_figure": "models.present.plot",
    "subsets_figure": "models.present.plot",
    "sweep_figure": "models.present.whatif_plot",
    "step_time_figure": "models.present.plan_plot",
    "gantt_figure": "models.present.simulate_plot",
    "link_heatmap_figure": "models.present.simulate_plot",
    "html_page": "models.present.page",
    "write_report": "models.present.report.write",
    "report_html": "models.present.report.html",
})

__all__ = list(_FACE)

if TYPE_CHECKING:  # what a type checker sees of the face: each name as its module annotates it
    from .cli.core import main
    from .explain import explain_bound, explain_estimate
    from .format import format_bytes, format_gbps, format_percent, format_us
    from .page import html_page
    from .plan_plot import step_time_figure
    from .plan_text import format_plan, format_search
    from .plot import busbw_figure, channels_figure, p2p_figure, pairs_figure, subsets_figure
    from .report.html import report_html
    from .report.write import write_report
    from .simulate_plot import gantt_figure, link_heatmap_figure
    from .sweep_text import format_sweep
    from .text import (collective_table, format_p2p_report, pairs_table, simulation_table, subsets_table,
                       systems_table)
    from .whatif_plot import sweep_figure

__getattr__, __dir__ = lazy_face(__name__, _FACE)
