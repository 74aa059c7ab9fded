"""What the report shows, as data: every model result of every system, computed once.

Any system :func:`topo.build` knows can be given by name; a number a system cannot have (an
8-GPU column on a 4-GPU system) is None, and a model that does not cover a case (it raises a
:class:`topo.DgxTopoError`) leaves its result None and its message in the matching
``*_error`` field, so that the page can say why a figure is missing.

Examples
--------
>>> rows = summary_rows(["dgx1v"])
>>> rows[0].gpus, round(rows[0].busbw_8 / 1e9, 1), rows[0].busbw_16
(8, 119.6, None)
>>> rows[0].best_pair, rows[0].worst_pair
((0, 3), (0, 5))
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import topo
from topo.errors import DgxTopoError
from topo.units import GiB

from ..collectives import estimate, pairwise
from ..p2p import p2p_report

__all__ = ["SystemRow", "SystemAnalysis", "SeedComparison", "ReportAnalysis", "summary_rows",
           "analyse_report", "report_fabrics", "REPORT_SIZE", "CURVE_SIZES", "MAX_MATRIX_GPUS",
           "REPORT_COLLECTIVE", "SEED_COMPARISON"]

#: The message size of the summary table and the pair matrices: nccl-tests' ``1G``. [bytes]
REPORT_SIZE = GiB
#: The sizes of the curves: nccl-tests' ``-b 8 -e 8G -f 2``. [bytes]
CURVE_SIZES = 2 ** np.arange(3, 34)
#: Systems with more GPUs get no GPU-by-GPU matrices (too slow and too large to draw).
MAX_MATRIX_GPUS = 32
#: The collective the report predicts.
REPORT_COLLECTIVE = "all_reduce"
#: The field's seed comparison, shown whenever a DGX-1V or DGX-2 is in the report: the same 16
#: GPUs as one DGX-2 (NVSwitch) or as two DGX-1V joined by their four EDR NICs each.
SEED_COMPARISON = ("dgx2", "2xdgx1v")


@dataclass(frozen=True, slots=True)
class SystemRow:
    """One row of the report's summary table.

    Attributes
    ----------
    system, name : str
        Registry key and display name.
    gpus : int
    gpu_models : tuple of str
    nvlink_links, nvswitches, nics : int
    injection : float
        Smallest NVLink line rate a GPU can send at, per direction. [B/s]
    bisection : float
        NVLink bisection bandwidth, per direction. [B/s]
    busbw_8, busbw_16 : float or None
        Predicted all_reduce busbw of GPUs 0-7 / 0-15 at :data:`REPORT_SIZE`; None when the
        system has fewer GPUs or the model does not cover it (see ``notes``). [B/s]
    best_pair, worst_pair : tuple of int or None
        A GPU pair with the highest / lowest 2-GPU all_reduce busbw at :data:`REPORT_SIZE`.
    best_busbw, worst_busbw : float or None
        Their busbw. [B/s]
    best_count, worst_count : int
        How many pairs share it.
    notes : tuple of str
        Why a number is missing, where the model does not cover the system.
    """

    system: str
    name: str
    gpus: int
    gpu_models: tuple
    nvlink_links: int
    nvswitches: int
    nics: int
    injection: float
    bisection: float
    busbw_8: float | None
    busbw_16: float | None
    best_pair: tuple | None
    best_busbw: float | None
    best_count: int
    worst_pair: tuple | None
    worst_busbw: float | None
    worst_count: int
    notes: tuple


@dataclass(frozen=True, slots=True)
class SystemAnalysis:
    """Everything the report shows of one system; a result is None where its ``*_error``
    says why (a model that does not cover the case, or a system too large to draw).

    Attributes
    ----------
    G : networkx.DiGraph
    row : SystemRow
    e8 : CollectiveEstimate or None
        all_reduce of GPUs 0-7 at :data:`REPORT_SIZE` (its channels are drawn).
    pairs : numpy.ndarray or None
        2-GPU all_reduce busbw matrix at :data:`REPORT_SIZE`. [B/s]
    p2p : P2PReport or None
    curve : CollectiveEstimate or None
        all_reduce of all GPUs over :data:`CURVE_SIZES`.
    curve8 : CollectiveEstimate or None
        all_reduce of GPUs 0-7 over :data:`CURVE_SIZES`, for systems of more than 8 GPUs.
    e8_error, pairs_error, p2p_error, curve_error : str or None
    """

    G: object
    row: SystemRow
    e8: object
    e8_error: str | None
    pairs: object
    pairs_error: str | None
    p2p: object
    p2p_error: str | None
    curve: object
    curve_error: str | None
    curve8: object


@dataclass(frozen=True, slots=True)
class SeedComparison:
    """One DGX-2 against two DGX-1V (:data:`SEED_COMPARISON`) over :data:`CURVE_SIZES`.

    Attributes
    ----------
    names : tuple of str
    estimates : tuple of (CollectiveEstimate or None)
    errors : tuple of (str or None)
    """

    names: tuple
    estimates: tuple
    errors: tuple


@dataclass(frozen=True, slots=True)
class ReportAnalysis:
    """The whole report as data.

    Attributes
    ----------
    systems : tuple of SystemAnalysis
        In the order given, duplicates removed.
    seed : SeedComparison or None
        Present when a DGX-1V or a DGX-2 is among the systems.
    """

    systems: tuple
    seed: SeedComparison | None


def report_fabrics(names=None) -> list:
    """Build the systems (all built-in ones by default), once each, in the given order.

    Raises
    ------
    topo.DgxTopoError
        For an empty list or a name :func:`topo.build` does not know.
    """
    names = list(topo.SYSTEMS) if names is None else list(names)
    if not names:
        raise DgxTopoError("expected at least one system name, received none")
    fabrics, seen = [], set()
    for name in names:
        G = topo.build(name)
        key = G.graph.get("system", G.graph.get("name", name))
        if key not in seen:
            seen.add(key)
            fabrics.append(G)
    return fabrics


def _try(function, *args, **kwargs):
    """(result, None), or (None, message) for a model that does not cover the case."""
    try:
        return function(*args, **kwargs), None
    except DgxTopoError as error:
        return None, str(error)


def _extreme_pairs(matrix):
    upper = [(matrix[i, j], (i, j)) for i in range(len(matrix)) for j in range(i + 1, len(matrix))
             if math.isfinite(matrix[i, j])]
    if not upper:
        return (None, None, 0), (None, None, 0)
    values = np.array([v for v, _ in upper])
    out = []
    for target in (values.max(), values.min()):
        ties = [pair for v, pair in upper if math.isclose(v, target, rel_tol=1e-9)]
        out.append((ties[0], float(target), len(ties)))
    return tuple(out)


def _analyse(G) -> SystemAnalysis:
    s = topo.summarize(G)
    n = s.gpus
    notes = []
    e8 = e8_error = None
    if n >= 8:
        e8, e8_error = _try(estimate, G, REPORT_COLLECTIVE, REPORT_SIZE, list(range(8)))
        if e8_error:
            notes.append(f"8 GPUs: {e8_error}")
    e16 = None
    if n >= 16:
        e16, e16_error = _try(estimate, G, REPORT_COLLECTIVE, REPORT_SIZE, list(range(16)))
        if e16_error:
            notes.append(f"16 GPUs: {e16_error}")
    pairs = pairs_error = p2p = p2p_error = None
    best = worst = (None, None, 0)
    if n > MAX_MATRIX_GPUS:
        pairs_error = p2p_error = (f"{n} GPUs: the report draws GPU-by-GPU matrices up to "
                                   f"{MAX_MATRIX_GPUS} GPUs (dgxtopo p2p and pairs print any size)")
        notes.append(f"pairs: {pairs_error}")
    else:
        if n >= 2:
            pairs, pairs_error = _try(pairwise, G, REPORT_COLLECTIVE, REPORT_SIZE)
            if pairs_error:
                notes.append(f"pairs: {pairs_error}")
            else:
                best, worst = _extreme_pairs(pairs)
        p2p, p2p_error = _try(p2p_report, G)
    curve, curve_error = _try(estimate, G, REPORT_COLLECTIVE, CURVE_SIZES)
    curve8 = None
    if curve is not None and n > 8:
        curve8, _ = _try(estimate, G, REPORT_COLLECTIVE, CURVE_SIZES, list(range(8)))
    row = SystemRow(
        system=s.system, name=s.name, gpus=n, gpu_models=s.gpu_models, nvlink_links=s.nvlink_links,
        nvswitches=s.nvswitches, nics=s.nics, injection=s.injection, bisection=s.bisection,
        busbw_8=None if e8 is None else float(e8.busbw), busbw_16=None if e16 is None else float(e16.busbw),
        best_pair=best[0], best_busbw=best[1], best_count=best[2],
        worst_pair=worst[0], worst_busbw=worst[1], worst_count=worst[2], notes=tuple(notes))
    return SystemAnalysis(G, row, e8, e8_error, pairs, pairs_error, p2p, p2p_error, curve,
                          curve_error, curve8)


def _seed_comparison() -> SeedComparison:
    results = [_try(estimate, topo.build(name), REPORT_COLLECTIVE, CURVE_SIZES)
               for name in SEED_COMPARISON]
    return SeedComparison(SEED_COMPARISON, tuple(e for e, _ in results), tuple(err for _, err in results))


def analyse_report(fabrics, *, progress=None) -> ReportAnalysis:
    """Every model result the report shows, for fabrics from :func:`report_fabrics`.

    Parameters
    ----------
    fabrics : sequence of networkx.DiGraph
    progress : callable, optional
        Called as ``progress(done, total)`` after each step (one per system, one for the
        seed comparison), for a progress bar.

    Returns
    -------
    ReportAnalysis
    """
    fabrics = list(fabrics)
    seeded = any(G.graph.get("system") in ("dgx1v", "dgx2") for G in fabrics)
    total = len(fabrics) + int(seeded)
    systems = []
    for G in fabrics:
        systems.append(_analyse(G))
        if progress is not None:
            progress(len(systems), total)
    seed = _seed_comparison() if seeded else None
    if seed is not None and progress is not None:
        progress(total, total)
    return ReportAnalysis(tuple(systems), seed)


def summary_rows(names=None) -> list:
    """The report's summary table as data, one row per system.

    Parameters
    ----------
    names : sequence of str, optional
        System names for :func:`topo.build`; default every built-in system.

    Returns
    -------
    list of SystemRow

    Raises
    ------
    topo.UnknownSystemError
        For a name :func:`topo.build` does not know.
    """
    return [_analyse(G).row for G in report_fabrics(names)]
