"""The offline HTML report that compares fabrics: what ``dgxtopo report`` writes.

Three steps, one module each: :mod:`~models.present.report.analysis` computes every number the page
shows (data, no plotly), :mod:`~models.present.report.html` renders the page (plotly), and
:mod:`~models.present.report.write` writes it through :mod:`models.present.output` (atomic, regular files
only). Importing this package imports plotly.
"""

from ..output import OutputPathError, check_output_path
from .analysis import (CURVE_SIZES, GENERATION_GPUS, MAX_MATRIX_GPUS, MEASURED_DATA, REPORT_COLLECTIVE,
                       REPORT_SIZE, SEED_COMPARISON, CollectiveCheck, Generation, MeasurementComparison,
                       P2PRowCheck, ReportAnalysis, SeedComparison, SystemAnalysis, SystemRow,
                       analyse_report, generations, measured_data, measurement_comparison,
                       report_fabrics, summary_rows, SetBound, SystemBounds, TrainingStep, WorstSet,
                       set_classes, system_bounds, training_step, worst_sets)
from .html import check_html, compare_html, render_report, report_html
from .write import ReportFile, write_check_html, write_compare_figure, write_report

__all__ = ["CURVE_SIZES", "GENERATION_GPUS", "MAX_MATRIX_GPUS", "MEASURED_DATA", "REPORT_COLLECTIVE",
           "REPORT_SIZE", "SEED_COMPARISON", "CollectiveCheck", "Generation", "MeasurementComparison",
           "P2PRowCheck", "ReportAnalysis", "SeedComparison", "SystemAnalysis", "SystemRow",
           "analyse_report", "generations", "measured_data", "measurement_comparison",
           "report_fabrics", "summary_rows", "SetBound", "SystemBounds", "TrainingStep", "WorstSet",
           "set_classes", "system_bounds", "training_step", "worst_sets", "check_html", "compare_html", "render_report",
           "report_html", "ReportFile", "write_check_html", "write_compare_figure", "write_report",
           "OutputPathError", "check_output_path"]
