"""Writing the report, the compare figure and the check page to disk, through :mod:`models.present.output`.

The output path is checked before any model work (a bad ``--out`` fails at once), and the
page is written atomically into a regular file only: see :mod:`models.present.output` for the rules
(devices, FIFOs, sockets and directories are refused; symlinks are written through).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..output import check_output_path, write_text_atomic
from ...studies.survey import report_fabrics
from .analysis import analyse_report
from .html import check_html, compare_html, render_report

__all__ = ["ReportFile", "write_report", "write_compare_figure", "write_check_html"]


@dataclass(frozen=True, slots=True)
class ReportFile:
    """What :func:`write_report` wrote.

    Attributes
    ----------
    path : pathlib.Path
        The file written (symlinks resolved).
    nbytes : int
        File size. [bytes]
    systems : tuple of str
        Display names of the systems compared.
    """

    path: Path
    nbytes: int
    systems: tuple


def write_report(path="report.html", names=None, *, progress=None) -> ReportFile:
    """Write the report for some systems to one self-contained HTML file, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (replaced if it is a regular file).
    names : sequence of str, optional
        System names for :func:`topo.build`; default every built-in system.
    progress : callable, optional
        ``progress(done, total)``, see :func:`models.present.report.analysis.analyse_report`.

    Returns
    -------
    ReportFile

    Raises
    ------
    models.present.output.OutputPathError
        For a path that cannot be written (checked before any work).
    topo.UnknownSystemError
        For an unknown system name.
    """
    check_output_path(path)
    fabrics = report_fabrics(names)
    text = render_report(analyse_report(fabrics, progress=progress))
    target = write_text_atomic(path, text)
    return ReportFile(target, target.stat().st_size, tuple(G.graph.get("name", "fabric") for G in fabrics))


def write_compare_figure(estimates, names, path) -> ReportFile:
    """Write the curves of ``dgxtopo compare --out``: busbw and time by size of the same
    collective on several systems, one self-contained HTML file, atomically.

    Parameters
    ----------
    estimates : sequence of CollectiveEstimate
        One per system, over the same sizes.
    names : sequence of str
        The systems' names, in the same order (curve labels).
    path : str or os.PathLike
        The file to write (replaced if it is a regular file).

    Returns
    -------
    ReportFile

    Raises
    ------
    models.present.output.OutputPathError
        For a path that cannot be written.
    topo.DgxTopoError
        If ``estimates`` and ``names`` differ in length.
    """
    check_output_path(path)
    names = [str(n) for n in names]
    target = write_text_atomic(path, compare_html(estimates, names))
    return ReportFile(target, target.stat().st_size, tuple(names))


def write_check_html(path, check, *, source: str = "") -> ReportFile:
    """Write the page of ``dgxtopo check ... --out FILE.html``: measured vs predicted busbw,
    time and error by size, one self-contained HTML file, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (replaced if it is a regular file).
    check : models.studies.calibration.Check
        From :func:`models.studies.calibration.check`.
    source : str, optional
        Where the measurement came from (a file name), for the page's heading.

    Returns
    -------
    ReportFile
        ``systems`` holds the checked system's name.

    Raises
    ------
    models.present.output.OutputPathError
        For a path that cannot be written (checked before the page is drawn).
    topo.DgxTopoError
        For something that is not a Check, or a Check without rows.
    """
    check_output_path(path)
    target = write_text_atomic(path, check_html(check, source=source))
    return ReportFile(target, target.stat().st_size, (getattr(check, "system", ""),))
