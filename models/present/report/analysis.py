"""What the report shows, as data: the survey's numbers (:mod:`models.studies.survey`) of every
system, worded, and shipped once computed.

Any system :func:`topo.build` knows can be given by name; a number a system cannot have (an
8-GPU column on a 4-GPU system) is None, and a model that does not cover a case (it raises a
:class:`topo.DgxTopoError`) leaves its result None and its message in the matching
``*_error`` field, so that the page can say why a figure is missing.

Examples
--------
>>> rows = summary_rows(["dgx1v"])
>>> rows[0].gpus, round(rows[0].busbw_8 / 1e9, 1), rows[0].busbw_16
(8, 121.9, None)
>>> rows[0].best_pair, rows[0].worst_pair
((0, 3), (0, 5))

Two sections compare systems and measurements: :func:`generations` (NVLink per GPU, bisection
and 8-GPU all_reduce curves of every single-host system of 8 GPUs or more, NVLS beside ring
where the model has it) and :func:`measurement_comparison` (the model against the measured
runs shipped in ``models/studies/data``: nccl-tests on 12 GPUs of a DGX-2 through
:func:`models.studies.calibration.check`, and a DGX-1V's p2pBandwidthLatencyTest row).

Two more answer issues 14 and 15: :func:`system_bounds` (NCCL's predicted busbw against the
optimal schedule's bound, :func:`models.bound`, on every GPU set, one computation per class of
:func:`models.studies.survey.set_classes`, the worst sets explained) and :func:`training_step` (a
planner workload's layouts on the seed comparison's systems, :func:`models.search`, and
:func:`models.gpus_ranking`).

The model work (what each section predicts, compares and ranks) is the survey's
(:mod:`models.studies.survey`); this module holds what the page shows of it, in words where the
page says why (the ``*_error`` fields, ``notes``, the worst sets' explanations).

Every section of a built-in system (at NCCL's reference release, with the default options) is
computed once and shipped (:data:`SHIPPED_ANALYSIS`, :mod:`models.present.report.shipped`): a
report reads it when the fabric, release and options are the ones shipped, and computes the rest.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

import topo
from topo.errors import DgxTopoError
from topo.units import to_GBps

from ...engine.fabric import prepare
from ...engine.nccltests import algbw_to_busbw
from ...studies import survey
from ...studies.survey import (BOUND_WORST, CURVE_SIZES, GENERATION_GPUS, MAX_MATRIX_GPUS, MEASURED_DATA,
                               REPORT_COLLECTIVE, REPORT_SIZE, SCHEDULE_COLLECTIVE, SCHEDULE_GPUS, SCHEDULE_SIZES,
                               SCHEDULE_SYSTEM, SEED_COMPARISON, SIMULATED_WORKLOAD, TRAINING_SYSTEMS,
                               TRAINING_TP, TRAINING_WORKLOAD, applicable_bound, bound_edge_kinds,
                               eight_in_one_domain, generation_name, measured_text, report_fabrics, single_host)
from ..explain import describe_cut, explain_bound, explain_estimate
from ..plan_text import fit_note, plan_error_text
from . import shipped

__all__ = ["SystemRow", "SystemAnalysis", "SeedComparison", "ReportAnalysis", "Generation",
           "CollectiveCheck", "P2PRowCheck", "MeasurementComparison", "summary_rows",
           "analyse_report", "generations", "measurement_comparison", "SetBound", "WorstSet",
           "SystemBounds", "TrainingStep", "system_bounds", "P2P_LABELS",
           "SHIPPED_ANALYSIS", "shipped_analysis_text", "write_shipped_analysis", "shipped_plan",
           "computed_records", "worst_sets", "training_step", "SimulatedStep", "simulated_steps",
           "colour_range", "ScheduleSection", "schedule_section"]


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
        Predicted all_reduce busbw of GPUs 0-7 / 0-15 at :data:`~models.studies.survey.REPORT_SIZE`; None when the
        system has fewer GPUs or the model does not cover it (see ``notes``). [B/s]
    best_pair, worst_pair : tuple of int or None
        A GPU pair with the highest / lowest 2-GPU all_reduce busbw at :data:`~models.studies.survey.REPORT_SIZE`.
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
        all_reduce of GPUs 0-7 at :data:`~models.studies.survey.REPORT_SIZE` (its channels are drawn).
    pairs : numpy.ndarray or None
        2-GPU all_reduce busbw matrix at :data:`~models.studies.survey.REPORT_SIZE`. [B/s]
    p2p : P2PReport or None
    curve : CollectiveEstimate or None
        all_reduce of all GPUs over :data:`~models.studies.survey.CURVE_SIZES`.
    curve8 : CollectiveEstimate or None
        all_reduce of GPUs 0-7 over :data:`~models.studies.survey.CURVE_SIZES`, for systems of more than 8 GPUs.
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
    """One DGX-2 against two DGX-1V (:data:`~models.studies.survey.SEED_COMPARISON`) over
    :data:`~models.studies.survey.CURVE_SIZES`.

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
class Generation:
    """One system in the generations section: NVLink and 8-GPU all_reduce.

    Attributes
    ----------
    system, name, gpu_model : str
    nvlink : str
        The NVLink technologies of its GPUs' links (``"nvlink4"``; several joined by ``/``).
    nvlink_per_gpu : float
        Smallest NVLink line rate a GPU can send at, per direction. [B/s]
    bisection : float
        NVLink bisection bandwidth of the whole system, per direction. [B/s]
    auto, ring, nvls : CollectiveEstimate or None
        all_reduce of GPUs 0-7 over :data:`~models.studies.survey.CURVE_SIZES`: as NCCL chooses, forced to ring,
        forced to NVLS (NVLink SHARP); None where the ``*_error`` says why.
    auto_error, ring_error, nvls_error : str or None
    """

    system: str
    name: str
    gpu_model: str
    nvlink: str
    nvlink_per_gpu: float
    bisection: float
    auto: object
    auto_error: str | None
    ring: object
    ring_error: str | None
    nvls: object
    nvls_error: str | None

    def busbw(self, which: str = "auto", nbytes: int = REPORT_SIZE) -> float | None:
        """busbw of one curve (``"auto"``, ``"ring"``, ``"nvls"``) at a size of
        :data:`~models.studies.survey.CURVE_SIZES`, None where the curve is missing. [B/s]

        Raises
        ------
        topo.DgxTopoError
            For another curve name or a size not in :data:`~models.studies.survey.CURVE_SIZES`.
        """
        if which not in ("auto", "ring", "nvls"):
            raise DgxTopoError(f"unknown curve {which!r}: expected 'auto', 'ring' or 'nvls'")
        e = getattr(self, which)
        index = np.flatnonzero(CURVE_SIZES == nbytes)
        if not index.size:
            raise DgxTopoError(f"no curve point at {nbytes!r} bytes: expected a power of two from "
                               f"{int(CURVE_SIZES[0])} to {int(CURVE_SIZES[-1])}")
        return None if e is None else float(np.atleast_1d(e.busbw)[int(index[0])])


@dataclass(frozen=True, slots=True)
class CollectiveCheck:
    """One measured nccl-tests run against the model.

    Attributes
    ----------
    collective : str
    placement : {"out-of-place", "in-place"}
        Which columns of the run were compared.
    check : models.studies.calibration.Check or None
    error : str or None
        Why ``check`` is missing.
    fitted : str
        The rows of this run the measurement model's constants were fitted to ("" if none).
    suspect : str
        What the data's own notes say is suspect in this run ("" if nothing).
    """

    collective: str
    placement: str
    check: object
    error: str | None
    fitted: str
    suspect: str


@dataclass(frozen=True, slots=True)
class P2PRowCheck:
    """One quantity of a p2pBandwidthLatencyTest row against the P2P model.

    Attributes
    ----------
    label : str
    quantity : {"bandwidth", "latency"}
    destinations : tuple of int
    measured, predicted : tuple of float
        Per destination GPU (entry 0: the device-local copy). [B/s] or [s]
    """

    label: str
    quantity: str
    destinations: tuple
    measured: tuple
    predicted: tuple

    @property
    def errors(self) -> np.ndarray:
        """predicted / measured - 1 per destination."""
        return np.array(self.predicted) / np.array(self.measured) - 1


@dataclass(frozen=True, slots=True)
class MeasurementComparison:
    """The model against measured runs (:data:`~models.studies.survey.MEASURED_DATA`).

    Attributes
    ----------
    collectives : tuple of CollectiveCheck
        The DGX-2 nccl-tests runs (empty when no DGX-2 is in the report).
    runs : dict
        What the DGX-2 data file says of the runs (machine, program, source, notes...).
    constants : tuple of models.predict.measure.Parameter
        The measurement model's constants fitted to these runs.
    p2p : tuple of P2PRowCheck
        The DGX-1V row (empty when no DGX-1V is in the report, or see ``p2p_error``).
    p2p_source : dict
        What the DGX-1V data file says of the row.
    p2p_constants : tuple of (str, Calibrated)
        The P2P model's constants fitted to the row.
    p2p_error : str or None
    """

    collectives: tuple
    runs: dict
    constants: tuple
    p2p: tuple
    p2p_source: dict
    p2p_constants: tuple
    p2p_error: str | None


@dataclass(frozen=True, slots=True)
class ReportAnalysis:
    """The whole report as data.

    Attributes
    ----------
    systems : tuple of SystemAnalysis
        In the order given, duplicates removed.
    seed : SeedComparison or None
        Present when a DGX-1V or a DGX-2 is among the systems.
    generations : tuple of Generation
        Every single-host system of 8 GPUs or more, in order; empty with fewer than two.
    measurement : MeasurementComparison or None
        Present when a DGX-2 or a DGX-1V (the measured systems) is among the systems.
    bounds : tuple of SystemBounds
        NCCL against the optimum, one per single-host system, in order.
    training : TrainingStep or None
        Present with the seed comparison (a DGX-1V or a DGX-2 among the systems).
    simulated : tuple of SimulatedStep
        One simulated training step per system of the generations section.
    schedule : ScheduleSection or None
        Present when a :data:`~models.studies.survey.SCHEDULE_SYSTEM` is among the systems.
    drawings : tuple of (dict or None)
        Per system, its fabric and channel figures as the page writes them
        (:func:`models.present.report.drawings.system_drawings`) when the shipped analysis holds
        them (a built-in system in a report of every built-in system), else None: the page draws
        them. Empty: every system drawn by the page.
    """

    systems: tuple
    seed: SeedComparison | None
    generations: tuple = ()
    measurement: MeasurementComparison | None = None
    bounds: tuple = ()
    training: object = None
    simulated: tuple = ()
    drawings: tuple = ()
    schedule: object = None


def _worded(attempt) -> tuple:
    """A survey's attempt (:mod:`models.studies.survey`) with its error in words: (result, None),
    (None, message), or (None, None) for no attempt."""
    if attempt is None:
        return None, None
    result, error = attempt
    return result, None if error is None else plan_error_text(error)


def _analyse(fabric, records=None) -> SystemAnalysis:
    """One system's sections, every model sharing one prepared fabric (its NCCL view, searches
    and symmetry); shipped for the built-in systems (:data:`SHIPPED_ANALYSIS`)."""
    key = shipped.fingerprint("system", _content(fabric))
    found = shipped.shipped_record(key, records)
    if found is not None:
        return dataclasses.replace(found, G=fabric.G)
    return _analysed(fabric)


def _analysed(fabric) -> SystemAnalysis:
    G = fabric.G
    r = survey.system_results(fabric)
    s = r.summary
    n = s.gpus
    notes = []
    e8, e8_error = _worded(r.e8)
    if e8_error:
        notes.append(f"8 GPUs: {e8_error}")
    e16, e16_error = _worded(r.e16)
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
            pairs, pairs_error = _worded(r.pairs)
            if pairs_error:
                notes.append(f"pairs: {pairs_error}")
            else:
                best, worst = r.extremes
        p2p, p2p_error = _worded(r.p2p)
    curve, curve_error = _worded(r.curve)
    curve8, _ = _worded(r.curve8)
    row = SystemRow(
        system=s.system, name=s.name, gpus=n, gpu_models=s.gpu_models, nvlink_links=s.nvlink_links,
        nvswitches=s.nvswitches, nics=s.nics, injection=s.injection, bisection=s.bisection,
        busbw_8=None if e8 is None else float(e8.busbw), busbw_16=None if e16 is None else float(e16.busbw),
        best_pair=best[0], best_busbw=best[1], best_count=best[2],
        worst_pair=worst[0], worst_busbw=worst[1], worst_count=worst[2], notes=tuple(notes))
    return SystemAnalysis(G, row, e8, e8_error, pairs, pairs_error, p2p, p2p_error, curve,
                          curve_error, curve8)


def _seed_comparison(fabric_of, records=None) -> SeedComparison:
    key = shipped.fingerprint("seed", *(_content(fabric_of(name)) for name in SEED_COMPARISON))
    found = shipped.shipped_record(key, records)
    return _seed_compared(fabric_of) if found is None else found


def _seed_compared(fabric_of) -> SeedComparison:
    results = [_worded(attempt) for attempt in survey.seed_results(fabric_of)]
    return SeedComparison(SEED_COMPARISON, tuple(e for e, _ in results), tuple(err for _, err in results))


def _generation(a: SystemAnalysis, fabric, records=None) -> Generation:
    key = shipped.fingerprint("generation", _content(fabric))
    found = shipped.shipped_record(key, records)
    return _generation_of(a, fabric) if found is None else found


def _generation_of(a: SystemAnalysis, fabric) -> Generation:
    G, r = a.G, a.row
    auto, auto_error = (a.curve, a.curve_error) if r.gpus == GENERATION_GPUS else (a.curve8, None)
    chosen, ring, nvls = survey.generation_curves(fabric, auto=auto is None and auto_error is None)
    if chosen is not None:
        auto, auto_error = _worded(chosen)
    ring, ring_error = _worded(ring)
    # NVLS (NVLink SHARP) where the NCCL model has it; a model without it, or a fabric NCCL
    # would not run it on, raises, and the page says why.
    nvls, nvls_error = _worded(nvls)
    return Generation(r.system, r.name, ", ".join(r.gpu_models),
                      survey.nvlink_kinds(G, topo.gpus(G)[:GENERATION_GPUS]),
                      r.injection, r.bisection, auto, auto_error, ring, ring_error, nvls, nvls_error)


def generations(analyses, fabrics=None, *, records=None) -> tuple:
    """The generations section as data: every system of :data:`~models.studies.survey.GENERATION_GPUS` GPUs or more on
    one host or in one NVLink domain (GB200 NVL72), in order (none when fewer than two qualify).

    Parameters
    ----------
    analyses : sequence of SystemAnalysis
    fabrics : sequence of PreparedFabric, optional
        The prepared fabric of each analysis, in the same order (the one :func:`analyse_report`
        analysed it on, whose channel searches are then reused); default each graph prepared anew.
    records : dict, optional
        The shipped file (:func:`models.present.report.shipped.shipped_records`), read by the caller
        once for several sections; default: read it here.

    Returns
    -------
    tuple of Generation
    """
    fabrics = [prepare(a.G) for a in analyses] if fabrics is None else list(fabrics)
    chosen = [(a, f) for a, f in zip(analyses, fabrics) if eight_in_one_domain(a.G)]
    if len(chosen) < 2:
        return ()
    records = shipped.shipped_records() if records is None else records
    return tuple(_generation(a, f, records) for a, f in chosen)


# The rows of each DGX-2 run the measurement model's constants were fitted to (see
# models.predict.measure: launch_per_gpu on 8 B - 64 KiB of all five, both placements;
# transfer_efficiency on out-of-place >= 64 MiB of all_reduce, broadcast and reduce).
_LAUNCH_ROWS = "8 B - 64 KiB (launch_per_gpu)"
_BANDWIDTH_ROWS = ">= 64 MiB (transfer_efficiency)"
_BANDWIDTH_FITTED = ("all_reduce", "broadcast", "reduce")


def _suspect(collective: str, notes: str) -> str:
    """The data's own note on a collective's rows: the clauses of its notes naming it."""
    clauses = [t.strip().rstrip(".;") for t in re.split(r"(?<=[.;])\s+", notes)]
    hits = [t for t in clauses if re.search(rf"\b{collective}\b", t)]
    return "; ".join(hits)


def _collective_checks(G, profile) -> tuple:
    notes = survey.measured_data("dgx2").get("notes", "")
    out = []
    for collective, inplace, result, error in survey.collective_checks(G, profile):
        fitted = [_LAUNCH_ROWS] + ([_BANDWIDTH_ROWS] if collective in _BANDWIDTH_FITTED and not inplace else [])
        out.append(CollectiveCheck(collective, "in-place" if inplace else "out-of-place", result,
                                   None if error is None else plan_error_text(error), "; ".join(fitted),
                                   _suspect(collective, notes)))
    return tuple(out)


#: The words of each series of the DGX-1V's p2pBandwidthLatencyTest row (:data:`models.studies.survey.P2P_SERIES`).
P2P_LABELS = MappingProxyType({"bidirectional_enabled": "bidirectional, P2P enabled",
                               "bidirectional_disabled": "bidirectional, P2P disabled",
                               "write_latency_enabled": "write latency, P2P enabled",
                               "latency_disabled": "latency, P2P disabled"})


def _p2p_checks(G) -> tuple:
    series, row = survey.p2p_row_comparison(G)
    return tuple(P2PRowCheck(P2P_LABELS[code], quantity, destinations, measured, predicted)
                 for code, quantity, destinations, measured, predicted in series), row


def measurement_comparison(systems=("dgx2", "dgx1v"), *, profile=None, fabrics=None,
                           records=None) -> MeasurementComparison:
    """The model against the measured data of the given systems (:data:`~models.studies.survey.MEASURED_DATA`).

    Parameters
    ----------
    systems : iterable of str
        Which measured systems to compare: ``"dgx2"`` (nccl-tests runs, checked with the
        default measurement model and ``-g 12`` as they were run) and/or ``"dgx1v"``
        (p2pBandwidthLatencyTest row).
    profile : str, optional
        NCCL version profile of the collective predictions (default: the reference).
    fabrics : dict, optional
        System name -> :class:`models.engine.fabric.PreparedFabric` of that release to use
        instead of building the system (its channel searches are reused).

    records : dict, optional
        The shipped file (see :func:`generations`).

    Returns
    -------
    MeasurementComparison
    """
    systems = set(systems)
    fabrics = dict(fabrics or {})
    for name in sorted(systems & set(MEASURED_DATA)):
        if name not in fabrics:
            fabrics[name] = prepare(topo.build(name), nccl=profile if name == "dgx2" else None)
    found = shipped.shipped_record(_measurement_key(systems, profile, fabrics), records)
    return _measurement_compared(systems, profile, fabrics) if found is None else found


def _measurement_key(systems, profile, fabrics) -> str:
    """What the comparison reads: the systems asked for, the profile, each measured system's
    fabric (and release) and data file."""
    parts = [sorted(systems), profile] + [f"{_content(prepare(fabrics[name]))}\n{measured_text(name)}"
                                          for name in sorted(set(systems) & set(MEASURED_DATA))]
    return shipped.fingerprint("measurement", *parts)


def _measurement_compared(systems, profile, fabrics) -> MeasurementComparison:
    collectives, runs, constants = (), {}, ()
    if "dgx2" in systems:
        collectives = _collective_checks(fabrics["dgx2"], profile)
        runs = {k: v for k, v in survey.measured_data("dgx2").items() if k != "collectives"}
        constants = survey.fitted_constants()[0]
    p2p, p2p_source, p2p_constants, p2p_error = (), {}, (), None
    if "dgx1v" in systems:
        try:
            p2p, row = _p2p_checks(fabrics["dgx1v"])
            p2p_source = {k: v for k, v in row.items() if not isinstance(v, list)}
        except DgxTopoError as error:
            p2p_error = str(error)
        p2p_constants = tuple((f"{table}[{key!r}]", c) for table, key, c in survey.fitted_constants()[1])
    return MeasurementComparison(collectives, runs, constants, p2p, p2p_source, p2p_constants, p2p_error)


def analyse_report(fabrics, *, progress=None) -> ReportAnalysis:
    """Every model result the report shows, for fabrics from :func:`~models.studies.survey.report_fabrics`.

    Parameters
    ----------
    fabrics : sequence of networkx.DiGraph
    progress : callable, optional
        Called as ``progress(done, total)`` after each step (one per system, one each for
        the seed comparison, the generations and the measurements when present), for a
        progress bar; NCCL against the optimum and the training step (with the seed
        comparison) are one step each.

    Returns
    -------
    ReportAnalysis
    """
    fabrics = list(fabrics)
    present = {G.graph.get("system") for G in fabrics}
    seeded = bool(present & {"dgx1v", "dgx2"})
    measured = present & set(MEASURED_DATA)
    total = len(fabrics) + 2 + 2 * int(seeded) + int(bool(measured))
    done = 0

    def step():
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    # One prepared fabric per system, shared by every section (not frozen: the caller's graphs),
    # so that no channel search is run twice; a system a section needs that is not among them
    # (the seed comparison's 2xdgx1v) is built once and shared too.
    prepared = [prepare(G) for G in fabrics]
    by_name = {f.G.graph.get("system"): f for f in prepared}

    def fabric_of(name):
        if name not in by_name:
            by_name[name] = prepare(topo.build(name))
        return by_name[name]

    records = shipped.shipped_records()  # read once for every section
    systems = []
    for fabric in prepared:
        systems.append(_analyse(fabric, records))
        step()
    gens = generations(systems, prepared, records=records)
    step()
    seed = _seed_comparison(fabric_of, records) if seeded else None
    if seeded:
        step()
    measurement = measurement_comparison(measured, fabrics=by_name, records=records) if measured else None
    if measured:
        step()
    bounds = tuple(system_bounds(f, records=records) for f in prepared if single_host(f.G))
    step()
    training = (training_step(fabrics={name: fabric_of(name) for name in TRAINING_SYSTEMS}, records=records)
                if seeded else None)
    if seeded:
        step()
    simulated = simulated_steps(systems, prepared, records=records) if gens else ()
    colours = colour_range([f.G for f in prepared])
    drawings = tuple(shipped.shipped_record(_drawing_key(f, colours), records) for f in prepared)
    schedule = schedule_section(by_name[SCHEDULE_SYSTEM], records=records) if SCHEDULE_SYSTEM in present else None
    return ReportAnalysis(tuple(systems), seed, gens, measurement, bounds, training, simulated, drawings, schedule)


def colour_range(graphs) -> tuple:
    """The bandwidth range of the report's fabric figures' colour scale: the slowest and the
    fastest link of all its systems, so that one colour is one bandwidth on every drawing. [B/s]

    >>> [b / 1e9 for b in colour_range([topo.dgx1(), topo.dgx2()])]  # PCIe 3.0 x16, the DGX-2's trunks
    [15.753846153846155, 200.0]
    """
    bandwidths = [d["bandwidth"] for G in graphs for _, _, d in G.edges(data=True)]
    return (min(bandwidths), max(bandwidths))


def _drawing_key(fabric, colours) -> str:
    """The key of one system's shipped drawings: its fabric and release, and the colour range."""
    return shipped.fingerprint("drawing", _content(fabric), repr(tuple(float(c) for c in colours)))


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
    return [_analyse(prepare(G)).row for G in report_fabrics(names)]


# A ratio of NCCL's bandwidth term to the bound above this counts as "the links bind".
_LINKS_BIND = 0.98


@dataclass(frozen=True, slots=True)
class SetBound:
    """NCCL against the bound on one class of equivalent GPU sets.

    Attributes
    ----------
    gpus : tuple of int
        The class's representative (the first set in ``itertools.combinations`` order).
    count : int
        Sets in the class (the fabric's symmetries map them onto each other).
    bound_busbw : float
        The bound that applies to what NCCL runs: GPUs reduce (reduce_scatter + all_gather,
        :attr:`models.studies.bounds.Bound.bound_busbw`), or, where NCCL runs NVLS (reduction in the
        switches), the cut bound on any schedule (:attr:`~models.studies.bounds.Bound.upper_busbw`). [B/s]
    nccl_busbw : float
        NCCL's predicted busbw at :data:`~models.studies.survey.BOUND_SIZE` (:func:`models.estimate`). [B/s]
    algorithm : str
        What NCCL runs (``"ring/Simple"``).
    """

    gpus: tuple
    count: int
    bound_busbw: float
    nccl_busbw: float
    algorithm: str

    @property
    def ratio(self) -> float:
        """``nccl_busbw / bound_busbw`` (NaN for a zero bound)."""
        return self.nccl_busbw / self.bound_busbw if self.bound_busbw > 0 else math.nan


@dataclass(frozen=True, slots=True)
class WorstSet:
    """One of the worst sets of a system, with the explanation of its gap.

    Attributes
    ----------
    system, name : str
    set : SetBound
    cut : str
        The binding cut of the bound (:meth:`models.studies.bounds.Cut.describe`).
    binds : str
        ``"links"`` (NCCL's bandwidth term reaches the bound: what is left is achieved
        bandwidth and latency) or ``"NCCL's channels"`` (its rings or trees carry less than
        the links allow).
    explanation : str
        One or two sentences: what binds NCCL and what the optimal schedule uses.
    working : str
        The whole working (:func:`models.present.explain.explain_bound`).
    """

    system: str
    name: str
    set: SetBound
    cut: str
    binds: str
    explanation: str
    working: str


@dataclass(frozen=True, slots=True)
class SystemBounds:
    """NCCL against the bound on every GPU set of one system, one computation per class.

    Attributes
    ----------
    system, name : str
    edge_kinds : tuple of str or None
        The links the bound may use: NVLink alone on NVSwitch systems (NVLink joins every GPU
        pair there, and NCCL uses nothing else), every link on the others (NCCL falls back to
        PCIe between GPUs without NVLink, so the bound must count it).
    sets : tuple of SetBound
        Every class, by set size then GPUs.
    worst : tuple of WorstSet
        The :data:`~models.studies.survey.BOUND_WORST` lowest ratios, lowest first.
    error : str or None
        Why the section has no numbers for this system.
    """

    system: str
    name: str
    edge_kinds: tuple | None
    sets: tuple
    worst: tuple
    error: str | None = None

    def by_size(self) -> dict:
        """Set size -> (lowest, count-weighted mean, highest) ratio over its sets."""
        out = {}
        for k in sorted({len(s.gpus) for s in self.sets}):
            chosen = [s for s in self.sets if len(s.gpus) == k and math.isfinite(s.ratio)]
            if chosen:
                ratios = np.array([s.ratio for s in chosen])
                weights = np.array([s.count for s in chosen], dtype=float)
                out[k] = (float(ratios.min()), float(np.average(ratios, weights=weights)), float(ratios.max()))
        return out

    @property
    def nsets(self) -> int:
        return sum(s.count for s in self.sets)


def _gap(G, b, e, against: float) -> tuple[str, str]:
    """(what binds, the explanation) of one set's gap, from NCCL's estimate ``e`` and the bound ``b``."""
    p = e.point()
    ran = e.algorithm_at()
    nominal = algbw_to_busbw(REPORT_COLLECTIVE, float(p.bandwidth), e.nranks)
    size = f"{to_GBps(against):.1f}"
    if ran is not None and ran.multimem:
        optimum = (f"with reductions in the switches the cut bound is {size} GB/s (every GPU must "
                   f"receive the whole buffer over its own links)")
    else:
        optimum = f"the optimal schedule (trees packed into the binding cut) reaches {size} GB/s"
    if nominal >= _LINKS_BIND * against:
        return "links", (f"NCCL's {p.algorithm} with {p.nchannels} channels fills the binding cut "
                         f"({to_GBps(nominal):.1f} GB/s in its own figures); {optimum}: the gap is what the "
                         f"links achieve against NCCL's figures, and latency.")
    search = None if ran is None or ran.multimem else ran.search(e)
    loads = {load.edge: load for load in (search.loads if search is not None else ())}
    where = ""
    if e.bottleneck:
        u, v = e.bottleneck[0]
        line = G.edges[u, v]["bandwidth"] if G.has_edge(u, v) else math.nan
        load = loads.get((u, v))
        counted = (f", which NCCL counts at {to_GBps(load.capacity):.1f} GB/s of its "
                   f"{to_GBps(line):.1f} GB/s line rate" if load is not None and math.isfinite(line) else "")
        more = f" and {len(e.bottleneck) - 1} more" if len(e.bottleneck) > 1 else ""
        where = f"; they are bound by {u}->{v}{more}{counted}"
    per = f" x {to_GBps(search.bw_intra):.1f} GB/s" if search is not None else ""
    return "NCCL's channels", (f"NCCL's {p.algorithm}: {p.nchannels} channel(s){per} give "
                               f"{to_GBps(nominal):.1f} GB/s busbw in its own figures{where}; "
                               f"{optimum} over {describe_cut(b.cut)}.")


def system_bounds(G, *, worst: int = BOUND_WORST, profile=None, records=None) -> SystemBounds:
    """NCCL against the optimal all_reduce on every GPU set of a fabric (one single host).

    One bound (:func:`models.bound`, relays :data:`~models.studies.survey.BOUND_RELAY`, links
    :func:`~models.studies.survey.bound_edge_kinds`) and one NCCL estimate at
    :data:`~models.studies.survey.BOUND_SIZE` per class of :func:`~models.studies.survey.set_classes`;
    shipped for the built-in systems (:data:`SHIPPED_ANALYSIS`).

    Parameters
    ----------
    G : networkx.DiGraph
    worst : int
        How many of the lowest-ratio classes to explain.
    profile : str, optional
        NCCL version profile.
    records : dict, optional
        The shipped file (see :func:`generations`).

    Returns
    -------
    SystemBounds
        With ``error`` set (and no sets) where a model does not cover the fabric.
    """
    fabric = prepare(G, nccl=profile)
    key = ("system_bounds", worst)  # memoised on the fabric, which the report shares per system
    if key not in fabric.memo:
        found = shipped.shipped_record(shipped.fingerprint("bounds", _content(fabric), worst), records)
        fabric.memo[key] = _system_bounds(fabric, worst) if found is None else found
    return fabric.memo[key]


#: The analysis of the built-in systems under NCCL's reference release, computed once and shipped
#: (:mod:`models.present.report.shipped`): NCCL's channel searches and estimates of every system,
#: the bounds of every GPU set (most of a DGX-1's searches run out of NCCL's search budget), the
#: measurements, the planner's layouts and the simulated steps are most of the report's time and
#: the same for every user. Each section is keyed by what determines it (the fabric's whole graph,
#: the release, the section's parameters), so that any other fabric, release or option is computed;
#: ``tests/models/present/test_shipped_analysis.py`` checks the file. After a change to a model it
#: reads, rewrite it from the repository root:
#: ``python -c "from models.present.report.analysis import write_shipped_analysis as w; w()"``.
SHIPPED_ANALYSIS = shipped.SHIPPED_FILE


def _content(fabric) -> str:
    """What every section computed on one fabric reads, as text for a fingerprint: the whole graph
    (every attribute of the graph, its nodes and its edges, in their order; Python's ``repr`` of
    the plain values a fabric holds, exact for floats, ten times cheaper than :func:`topo.to_json`)
    and the NCCL release. Memoised on the fabric (a report's sections share it)."""
    key = ("shipped_content",)
    if key not in fabric.memo:
        G = fabric.G
        graph = (dict(G.graph), [(n, dict(d)) for n, d in G.nodes(data=True)],
                 [(u, v, dict(d)) for u, v, d in G.edges(data=True)])
        fabric.memo[key] = f"{graph!r}\n{fabric.profile.version}"
    return fabric.memo[key]


def shipped_plan() -> list:
    """What the shipped file holds for the built-in systems, before it is computed: the sections
    :func:`analyse_report` shows for them (each built-in system a fabric of its own, NCCL's
    reference release, the default options), the bounds with :data:`~models.studies.survey.BOUND_WORST`.

    Returns
    -------
    list of (str, str, str, callable)
        (section, label, fingerprint, computes the value) per record; the keys cost the fabrics'
        builds only.
    """
    plan = []
    fabrics = [prepare(G) for G in report_fabrics()]
    by_name = {f.G.graph["system"]: f for f in fabrics}

    def fabric_of(name):
        if name not in by_name:
            by_name[name] = prepare(topo.build(name))
        return by_name[name]

    def analysed(f):  # every section of a system starts from its analysis (memoised on its fabric)
        if ("shipped_analysis",) not in f.memo:
            f.memo[("shipped_analysis",)] = _analysed(f)
        return f.memo[("shipped_analysis",)]

    def drawn(f, colours):
        from .drawings import system_drawings  # the page's drawings (plotly's package, on demand)

        row = analysed(f).row
        return system_drawings(f.G, analysed(f).e8, colours, row.name, row.system)

    simulated = set()
    colours = colour_range([f.G for f in fabrics])
    for f in fabrics:
        name = f.G.graph["system"]
        plan.append(("system", name, shipped.fingerprint("system", _content(f)),
                     lambda f=f: dataclasses.replace(analysed(f), G=None)))
        plan.append(("drawing", name, _drawing_key(f, colours), lambda f=f: drawn(f, colours)))
        if eight_in_one_domain(f.G):
            key, gen_key = _simulated_key(f)
            plan += [("generation", name, shipped.fingerprint("generation", _content(f)),
                      lambda f=f: _generation_of(analysed(f), f)),
                     ("simulated-generation", name, gen_key, lambda f=f: generation_name(f.G))]
            # The steps the report shows: the first system of each GPU generation (the others are
            # computed when a report shows them).
            generation = generation_name(f.G)
            if generation not in simulated:
                simulated.add(generation)
                plan.append(("simulated", name, key, lambda f=f: _simulated_step(analysed(f), f)))
        if single_host(f.G):
            plan.append(("bounds", name, shipped.fingerprint("bounds", _content(f), BOUND_WORST),
                         lambda f=f: _system_bounds(f, BOUND_WORST)))
    plan.append(("seed", "+".join(SEED_COMPARISON),
                 shipped.fingerprint("seed", *(_content(fabric_of(n)) for n in SEED_COMPARISON)),
                 lambda: _seed_compared(fabric_of)))
    if SCHEDULE_SYSTEM in by_name:
        f = by_name[SCHEDULE_SYSTEM]
        plan.append(("schedule", SCHEDULE_SYSTEM, _schedule_key(f), lambda f=f: _schedule_compared(f)))
    measured = set(MEASURED_DATA)
    plan.append(("measurement", "+".join(sorted(measured)), _measurement_key(measured, None, by_name),
                 lambda: _measurement_compared(measured, None, by_name)))
    names = tuple(TRAINING_SYSTEMS)
    training = {n: fabric_of(n) for n in names}
    plan.append(("training", "+".join(names), _training_key(TRAINING_WORKLOAD, names, TRAINING_TP, "fp16", training),
                 lambda: _training_planned(TRAINING_WORKLOAD, names, TRAINING_TP, "fp16", training)))
    return plan


def computed_records(plan=None) -> dict:
    """Every record of :func:`shipped_plan` (or of ``plan``, one it returned), computed: fingerprint
    -> (section, label, value), for :func:`models.present.report.shipped.shipped_text`."""
    return {key: (section, label, compute())
            for section, label, key, compute in (shipped_plan() if plan is None else plan)}


def shipped_analysis_text(plan=None) -> str:
    """The shipped file's text (before compression), computed: :func:`computed_records` (of
    ``plan``, one :func:`shipped_plan` returned, whose fabrics may already hold what some records
    computed)."""
    return shipped.shipped_text(computed_records(plan))


def write_shipped_analysis() -> None:
    """Rewrite the shipped analysis (:data:`SHIPPED_ANALYSIS`) from :func:`shipped_analysis_text`."""
    path = shipped.write_shipped(shipped_analysis_text())
    print(f"wrote {path}")


def _system_bounds(fabric, worst) -> SystemBounds:
    G = fabric.G
    # The names only (topo.summarize's), not its bisection: _analyse summarised this fabric.
    name = G.graph.get("name", "fabric")
    system = G.graph.get("system", name)
    kinds = bound_edge_kinds(G)
    try:
        sets, work = [], {}
        for gpus, count, b, e in survey.set_bounds(fabric, kinds):
            p = e.point()
            sets.append(SetBound(gpus, count, float(applicable_bound(b, e)), float(p.busbw),
                                 f"{p.algorithm}/{p.protocol}"))
            work[gpus] = (b, e)
        ordered = sorted((x for x in sets if math.isfinite(x.ratio)), key=lambda x: (x.ratio, x.gpus))
        explained = []
        for x in ordered[:worst]:
            b, e = work[x.gpus]
            binds, text = _gap(G, b, e, x.bound_busbw)
            working = explain_bound(b) + "\nNCCL's working:\n  " + explain_estimate(e).replace("\n", "\n  ")
            explained.append(WorstSet(system, name, x, describe_cut(b.cut), binds, text, working))
    except DgxTopoError as error:
        return SystemBounds(system, name, kinds, (), (), str(error))
    return SystemBounds(system, name, kinds, tuple(sets), tuple(explained))


def worst_sets(bounds) -> tuple:
    """The worst sets of every system in one list, lowest ratio first (then system order)."""
    rows = [(w.set.ratio, i, j, w) for i, sb in enumerate(bounds) for j, w in enumerate(sb.worst)]
    return tuple(w for *_, w in sorted(rows, key=lambda r: r[:3]))


@dataclass(frozen=True, slots=True)
class TrainingStep:
    """The training-step section as data.

    Attributes
    ----------
    workload : str
    names : tuple of str
        Registry names of the systems (:data:`~models.studies.survey.TRAINING_SYSTEMS`).
    searches : tuple of (models.studies.planner.Search or None)
        Every layout with tensor parallelism in :data:`~models.studies.survey.TRAINING_TP`, best first.
    errors : tuple of (str or None)
    ranking : tuple of models.studies.planner.GpuRank
        GPU generations for the workload (:func:`models.gpus_ranking`).
    ranking_dtype : str
    """

    workload: str
    names: tuple
    searches: tuple
    errors: tuple
    ranking: tuple
    ranking_dtype: str


def _training_key(workload, names, tps, dtype, fabrics) -> str:
    return shipped.fingerprint("training", workload, names, tps, dtype, *(_content(fabrics[n]) for n in names))


def _training_step(workload, names, tps, dtype, fabrics, records=None) -> TrainingStep:
    fabrics = {name: fabrics.get(name) or prepare(topo.build(name)) for name in names}
    found = shipped.shipped_record(_training_key(workload, names, tps, dtype, fabrics), records)
    return _training_planned(workload, names, tps, dtype, fabrics) if found is None else found


def _training_planned(workload, names, tps, dtype, fabrics) -> TrainingStep:
    attempts, ranking = survey.training_results(workload, tuple(names), tps, dtype, fabrics)
    worded = [_worded(attempt) for attempt in attempts]
    return TrainingStep(str(workload), tuple(names), tuple(s for s, _ in worded), tuple(e for _, e in worded),
                        ranking, dtype)


def training_step(workload: str = TRAINING_WORKLOAD, names=TRAINING_SYSTEMS, *, tps=TRAINING_TP,
                  dtype: str = "fp16", fabrics=None, records=None) -> TrainingStep:
    """Layouts of a workload on some systems, and the GPU generations ranked for it.

    Parameters
    ----------
    workload : str
        A planner workload (:mod:`models.studies.workload`).
    names : sequence of str
        Systems for :func:`topo.build`.
    tps : sequence of int
        Tensor-parallel degrees searched.
    dtype : str
        dtype of the generations' ranking.

    fabrics : dict, optional
        System name -> :class:`models.engine.fabric.PreparedFabric` to use (and memoise the
        searches on) instead of building the system.
    records : dict, optional
        The shipped file (see :func:`generations`).
    """
    return _training_step(workload, tuple(names), tuple(tps), dtype, fabrics or {}, records)


@dataclass(frozen=True, slots=True)
class SimulatedStep:
    """One worked step of the simulation section.

    Attributes
    ----------
    system, name : str
    result : models.predict.simulate.SimulationResult or None
        None where ``error`` says why.
    planned : float
        The planner's analytical estimate of the same step (its first pass). [s]
    error : str or None
    """

    system: str
    name: str
    result: object
    planned: float
    error: str | None = None


def simulated_steps(analyses, fabrics=None, *, records=None) -> tuple:
    """One simulated step of :data:`~models.studies.survey.SIMULATED_WORKLOAD` on 8 GPUs per GPU generation: the first
    system of each generation among those of the generations section (:func:`generations`), in order.

    Parameters
    ----------
    analyses : sequence of SystemAnalysis
    fabrics : sequence of PreparedFabric, optional
        The prepared fabric of each analysis, in the same order (see :func:`generations`).
    records : dict, optional
        The shipped file (see :func:`generations`).

    Returns
    -------
    tuple of SimulatedStep
    """
    out = []
    seen = set()
    fabrics = [prepare(a.G) for a in analyses] if fabrics is None else list(fabrics)
    records = shipped.shipped_records() if records is None else records
    for a, fabric in zip(analyses, fabrics):
        if not eight_in_one_domain(a.G):
            continue
        key, gen_key = _simulated_key(fabric)
        gen = shipped.shipped_record(gen_key, records)
        found = shipped.shipped_record(key, records) if gen is not None else None
        if gen is None:
            gen = generation_name(a.G)
        if gen in seen:
            continue
        seen.add(gen)
        out.append(_simulated_step(a, fabric) if found is None else found)
    return tuple(out)


def _simulated_key(fabric) -> tuple:
    """The fingerprints of a fabric's simulated step and of its GPU generation's name."""
    return (shipped.fingerprint("simulated", SIMULATED_WORKLOAD, _content(fabric)),
            shipped.fingerprint("simulated-generation", _content(fabric)))


def _simulated_step(a, fabric) -> SimulatedStep:
    try:
        p, result = survey.simulated_step_results(a.G, fabric)
        if not p.fits:
            return SimulatedStep(a.row.system, a.row.name, None, math.inf, fit_note(p))
        return SimulatedStep(a.row.system, a.row.name, result, p.step_time)
    except DgxTopoError as error:
        return SimulatedStep(a.row.system, a.row.name, None, math.inf, plan_error_text(error))


@dataclass(frozen=True, slots=True)
class ScheduleSection:
    """The schedule section: the tree packing written as an MSCCL schedule on
    :data:`~models.studies.survey.SCHEDULE_GPUS` of a system, beside NCCL and the bounds.

    Attributes
    ----------
    system, name : str
    comparison : models.schedules.PackingComparison or None
        None where ``error`` says why.
    error : str or None
    """

    system: str
    name: str
    comparison: object
    error: str | None = None


def _schedule_key(fabric) -> str:
    return shipped.fingerprint("schedule", _content(fabric), SCHEDULE_COLLECTIVE, SCHEDULE_GPUS, SCHEDULE_SIZES)


def schedule_section(fabric, *, records=None) -> ScheduleSection:
    """The schedule section of a prepared fabric (:func:`models.schedules.packing_comparison` of
    :data:`~models.studies.survey.SCHEDULE_COLLECTIVE` on :data:`~models.studies.survey.SCHEDULE_GPUS`
    at :data:`~models.studies.survey.SCHEDULE_SIZES`), read from the shipped file when it holds it.

    Parameters
    ----------
    fabric : PreparedFabric
    records : dict, optional
        The shipped file (see :func:`generations`).
    """
    found = shipped.shipped_record(_schedule_key(fabric), records)
    return _schedule_compared(fabric) if found is None else found


def _schedule_compared(fabric) -> ScheduleSection:
    from ...schedules.compare import packing_comparison

    G = fabric.G
    name = G.graph.get("name", "fabric")
    try:
        return ScheduleSection(G.graph.get("system", name), name,
                               packing_comparison(fabric, SCHEDULE_COLLECTIVE, list(SCHEDULE_GPUS), SCHEDULE_SIZES))
    except DgxTopoError as error:
        return ScheduleSection(G.graph.get("system", name), name, None, str(error))
