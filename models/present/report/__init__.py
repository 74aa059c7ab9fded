"""The offline HTML report that compares fabrics: what ``dgxtopo report`` writes.

Three steps, one module each: :mod:`~models.present.report.analysis` gathers every number the page
shows (computed by :mod:`models.studies.survey`, worded here; data, no plotly), :mod:`~models.present.report.html` renders the page (plotly), and
:mod:`~models.present.report.write` writes it through :mod:`models.present.output` (atomic, regular files
only). Only the page's module imports plotly; the face imports each module on first use. The analysis of
the built-in systems is shipped as data (:mod:`~models.present.report.shipped`), keyed by what
determines it, and read instead of computed when a report asks for the same.
"""

from types import MappingProxyType
from typing import TYPE_CHECKING

from topo.faces import lazy_face

# What a user calls, and the module that defines it (imported on first use).
_FACE = MappingProxyType({
    "analyse_report": "models.present.report.analysis",
    "ReportAnalysis": "models.present.report.analysis",
    "SystemAnalysis": "models.present.report.analysis",
    "report_fabrics": "models.studies.survey",
    "generations": "models.present.report.analysis",
    "Generation": "models.present.report.analysis",
    "measured_data": "models.studies.survey",
    "measurement_comparison": "models.present.report.analysis",
    "MeasurementComparison": "models.present.report.analysis",
    "summary_rows": "models.present.report.analysis",
    "system_bounds": "models.present.report.analysis",
    "training_step": "models.present.report.analysis",
    "worst_sets": "models.present.report.analysis",
    "set_classes": "models.studies.survey",
    "render_report": "models.present.report.html",
    "report_html": "models.present.report.html",
    "check_html": "models.present.report.html",
    "compare_html": "models.present.report.html",
    "write_report": "models.present.report.write",
    "write_check_html": "models.present.report.write",
    "write_compare_figure": "models.present.report.write",
    "ReportFile": "models.present.report.write",
    "REPORT_COLLECTIVE": "models.studies.survey",
    "REPORT_SIZE": "models.studies.survey",
    "MEASURED_DATA": "models.studies.survey",
    "OutputPathError": "models.present.output",
})

__all__ = list(_FACE)

if TYPE_CHECKING:  # what a type checker sees of the face: each name as its module annotates it
    from .analysis import (Generation, MeasurementComparison, ReportAnalysis, SystemAnalysis, analyse_report,
                           generations, measurement_comparison, summary_rows, system_bounds, training_step,
                           worst_sets)
    from .html import check_html, compare_html, render_report, report_html
    from .write import ReportFile, write_check_html, write_compare_figure, write_report
    from ..output import OutputPathError
    from ...studies.survey import (MEASURED_DATA, REPORT_COLLECTIVE, REPORT_SIZE, measured_data, report_fabrics,
                                   set_classes)

__getattr__, __dir__ = lazy_face(__name__, _FACE)
