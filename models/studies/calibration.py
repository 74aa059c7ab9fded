"""Calibrate the measurement model to a user's own runs, and show the error.

:func:`calibrate` fits a small named set of :class:`models.predict.measure.MeasurementModel` constants
(``launch_per_gpu``; ``floor`` when the runs use several ``-g``; one transfer efficiency per
link class that binds a bandwidth-bound row) with bounds, by least squares on the relative
time error ``predicted / measured - 1`` (soft-L1, so that rows off for another reason, such as
a protocol another NCCL version would not choose, do not drag the constants). scipy's ``least_squares`` is used when installed (the
``fit`` extra); otherwise a bounded Levenberg-Marquardt in numpy gives the same minimum on these
few parameters. :func:`check` puts measured and predicted side by side.

What a calibration or a check assumed, held or left out is a :class:`Caveat` (a
:class:`CaveatCode` and its numbers), worded by :func:`models.present.text.caveat_text`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import MappingProxyType

import networkx as nx
import numpy as np

from topo.errors import DgxTopoError
from topo.select import GpuIds
from topo.units import is_int, to_us, us

from ..engine.fabric import PreparedFabric, prepare
from ..engine.nccl.profiles import NcclProfile
from ..predict.collectives import Estimator, measurement_model
from .benchmarks import NcclTestsRun, P2PBenchmark
from ..engine.results import tidy_records
from ..predict.measure import DEFAULT, CalibrationLike, MeasurementModel, Measured, measured

__all__ = ["CalibrationError", "Calibration", "CheckRow", "Check", "Caveat", "CaveatCode", "calibrate", "check",
           "parameter_range", "SCHEMA", "SCHEMA_VERSION"]

SCHEMA = "dgx-topo calibration"
SCHEMA_VERSION = 1

# Bounds of the fitted constants [SI]: a launch above 50 us per GPU or a floor above 1 ms is
# not a launch; an efficiency above 1 would move more than the wire's payload rate.
_BOUNDS = MappingProxyType({"launch_per_gpu": (0.0, 50 * us), "floor": (0.0, 1000 * us), "efficiency": (0.05, 1.0)})
# Scale of the soft-L1 loss: relative errors above ~5 % count linearly.
_ROBUST = 0.05
# Rows below this size [bytes] tell -g 1 from -g N: below 1 MiB the two readings of a run differ
# 2-3x (under -g N one thread launches the collective on each of the N GPUs in turn:
# models.predict.measure), above it the bandwidth term dominates.
_SMALL = 2**20
# A row is bandwidth-bound when the bandwidth term is at least this share of its predicted time.
_BANDWIDTH_BOUND = 0.5
# A row is launch-bound when the host term is the startup term and at least this share of it.
_LAUNCH_BOUND = 0.8


class CalibrationError(DgxTopoError):
    """Runs that cannot be calibrated or checked as asked, or a malformed calibration file."""


class CaveatCode(enum.Enum):
    """What a :class:`Calibration` or a :class:`Check` assumed, held or left out, and the values of
    :class:`Caveat` each sets."""

    #: ``count``: p2pBandwidthLatencyTest outputs among the runs, not fitted (the P2P copy model
    #: is calibrated separately).
    P2P_NOT_FITTED = "p2p_not_fitted"
    #: Every run uses one ``-g``: ``floor`` is held, as it cannot be told from ``launch_per_gpu``.
    FLOOR_HELD = "floor_held"
    #: ``run`` does not show its rank count (``ranks_source``: what its parser says of it):
    #: every GPU of ``system`` (``count`` of them) was assumed.
    GPUS_ASSUMED = "gpus_assumed"
    #: ``run`` shows its rank count (``count``; ``ranks_source``: how) but not the GPUs of its
    #: ranks (no complete device lines, no ``CUDA_VISIBLE_DEVICES``): rank r was assumed on GPU r
    #: of ``system``.
    GPUS_IN_RANK_ORDER = "gpus_in_rank_order"
    #: ``run`` does not show its ``-g`` (no ``# nThread .. nGpus ..`` header, no ``-g`` on a
    #: command line) and none was given: one GPU per thread (``-g 1``) was assumed.
    GPUS_PER_THREAD_ASSUMED = "gpus_per_thread_assumed"
    #: ``run`` does not name its program (no ``*_perf`` line): its collective, ``collective``,
    #: was read from its columns (a root, a reduction, the size per rank).
    COLLECTIVE_FROM_COLUMNS = "collective_from_columns"
    #: The calibration applied was fitted on ``calibration_system``, the check runs on ``system``.
    CALIBRATION_OF_ANOTHER_SYSTEM = "calibration_of_another_system"
    #: ``run`` does not show its ``-g`` and none was given (so :attr:`GPUS_PER_THREAD_ASSUMED`
    #: too): its rows compared under both readings, ``-g 1`` (one GPU per process, as MPI runs
    #: it) and ``-g count`` (one thread driving every rank): ``median_error_g1`` and
    #: ``median_error_gn`` are the median |time error| of each over ``rows`` rows, those below
    #: ``below`` bytes (1 MiB, where the readings differ 2-3x), or every row (``below`` None)
    #: if the run has none there; ``gpus_per_thread`` is the reading with the lower one. The
    #: check itself keeps ``-g 1``.
    MODE_FIT = "mode_fit"
    #: ``text``: a note as a calibration file has it (:meth:`Calibration.from_json`).
    READ = "read"


@dataclass(frozen=True, slots=True)
class Caveat:
    """One thing a calibration or a check assumed, held or left out: a :class:`CaveatCode` and
    its values (None or ``""`` where the code has none);
    :func:`models.present.text.caveat_text` words it.

    Attributes
    ----------
    code : CaveatCode
    count : int or None
        The p2pBandwidthLatencyTest outputs not fitted, the GPUs assumed, or the run's ranks
        (:attr:`CaveatCode.MODE_FIT`).
    run : str or None
        The run's name (None for a run without one).
    ranks_source : str
        What the run's parser says of its rank count (:attr:`NcclTestsRun.ranks_source
        <models.studies.benchmarks.NcclTestsRun>`).
    system : str or None
        The system's name (None for a fabric without one).
    text : str
        :attr:`CaveatCode.READ`: the words read from a calibration file.
    collective : str or None
        The collective read from the run's columns.
    calibration_system : str or None
        The system a calibration applied to another one was fitted on.
    gpus_per_thread : int or None
        :attr:`CaveatCode.MODE_FIT`: the ``-g`` that fits the run better.
    median_error_g1, median_error_gn : float or None
        :attr:`CaveatCode.MODE_FIT`: the median |time error| under ``-g 1`` and ``-g count``.
    below : int or None
        :attr:`CaveatCode.MODE_FIT`: the rows compared are those below this size [bytes]
        (None: every row).
    rows : int or None
        :attr:`CaveatCode.MODE_FIT`: how many rows were compared.

    Examples
    --------
    >>> Caveat(CaveatCode.P2P_NOT_FITTED, count=2).to_records()[0]["count"]
    2
    """

    code: CaveatCode
    count: int | None = None
    run: str | None = None
    ranks_source: str = ""
    system: str | None = None
    text: str = ""
    collective: str | None = None
    calibration_system: str | None = None
    gpus_per_thread: int | None = None
    median_error_g1: float | None = None
    median_error_gn: float | None = None
    below: int | None = None
    rows: int | None = None

    def to_records(self) -> list:
        """One row: the code's value and the values it sets."""
        return tidy_records({"code": self.code.value, "count": self.count, "run": self.run,
                             "ranks_source": self.ranks_source, "system": self.system, "text": self.text,
                             "collective": self.collective, "calibration_system": self.calibration_system,
                             "gpus_per_thread": self.gpus_per_thread, "median_error_g1": self.median_error_g1,
                             "median_error_gn": self.median_error_gn, "below": self.below, "rows": self.rows})


@dataclass(frozen=True, slots=True)
class _Prepared:
    run: NcclTestsRun
    estimate: object
    measured_time: np.ndarray
    measured_busbw: np.ndarray
    sizes: np.ndarray
    gpus_per_thread: int
    caveats: tuple = ()


def _gpus(run: NcclTestsRun, G, gpus) -> tuple:
    """The run's GPU ids in rank order, and a :class:`Caveat` when they were assumed."""
    n = run.nranks
    label = run.name or "the run"
    if gpus is not None:
        import topo

        chosen = topo.select_gpus(G, gpus)
        # The ranks the text shows (nThread x nGpus of a run built by hand counts one process).
        shown = n if (run.complete_devices or run.ranks is not None) else None
        if shown is not None and len(chosen) != shown:
            raise CalibrationError(f"gpus= names {len(chosen)} GPU{'s' if len(chosen) != 1 else ''}, "
                                   f"{label} has {shown} ranks: expected one GPU per rank, in rank order")
        return gpus, None
    if run.gpu_ids is not None:  # dgxtopo collective's own output names its GPUs
        return run.gpu_ids, None
    if n is None:
        import topo

        return None, Caveat(CaveatCode.GPUS_ASSUMED, count=len(topo.gpus(G)), run=run.name,
                            ranks_source=run.ranks_source or "", system=G.graph.get("name"))
    visible = run.cuda_visible_devices
    single = len(run.hosts) <= 1
    if single and visible and run.complete_devices and len(visible) >= n:
        return [visible[d.device] for d in run.devices if d.device < len(visible)], None
    if single and run.complete_devices:
        return sorted(d.device for d in run.devices), None
    if not run.devices and visible and len(visible) >= n and run.ranks_source.startswith("nThread"):
        return list(visible[:n]), None  # one process: rank r drives visible device r
    if not run.devices and visible and len(visible) >= n and run.nthreads and run.gpus_per_thread \
            and run.nthreads * run.gpus_per_thread == n:
        return list(visible[:n]), None
    return list(range(n)), Caveat(CaveatCode.GPUS_IN_RANK_ORDER, count=n, run=run.name,
                                  ranks_source=run.ranks_source or "", system=G.graph.get("name"))


def _prepare(run, estimator, gpus, gpus_per_thread, inplace) -> _Prepared:
    """The run's rows and the estimate of them on ``estimator`` (which carries the release)."""
    if not isinstance(run, NcclTestsRun):
        raise CalibrationError(f"expected an nccl-tests run, received {type(run).__name__}")
    if run.collective is None:
        program = (f"it names {run.program}, which dgx-topo does not model" if run.program
                   else "the columns do not tell (a size counting every rank's part without a "
                        "reduction is all_gather or alltoall alike)")
        raise CalibrationError(f"{run.name or 'the run'} does not name a collective dgx-topo models: "
                               f"{program}: expected a *_perf line or collective= (on the command "
                               f"line --collective)")
    if not isinstance(inplace, (bool, np.bool_)):
        raise CalibrationError(f"inplace must be True or False, received {type(inplace).__name__}")
    sizes = run.column("size")
    t = run.column("inplace_time" if inplace else "time")
    b = run.column("inplace_busbw" if inplace else "busbw")
    keep = (sizes > 0) & np.isfinite(t) & (t > 0)
    if not keep.any():
        raise CalibrationError(f"{run.name or 'the run'} has no row with a size and a time")
    label = run.name or "the run"
    caveats = []
    if run.collective_source == "columns":
        caveats.append(Caveat(CaveatCode.COLLECTIVE_FROM_COLUMNS, run=run.name, collective=run.collective))
    ids, caveat = _gpus(run, estimator.fabric.G, gpus)
    caveats += [caveat] if caveat else []
    e = estimator.estimate(run.collective, sizes[keep].astype(np.int64), ids)
    if gpus_per_thread is not None:
        g = gpus_per_thread
    elif run.gpus_per_thread is not None:
        g = run.gpus_per_thread
        if not 1 <= g <= e.nranks:  # the command line refuses -g 0 and -g beyond the ranks alike
            raise CalibrationError(f"{label} says nGpus {g}: expected nGpus from 1 to {e.nranks} (its "
                                   f"ranks; nccl-tests -g), or gpus_per_thread= naming the value it ran with")
    else:
        g = 1
        caveats.append(Caveat(CaveatCode.GPUS_PER_THREAD_ASSUMED, run=run.name))
    if not is_int(g) or not 1 <= g <= e.nranks:
        raise CalibrationError(f"gpus_per_thread must be an integer from 1 to {e.nranks} (the ranks "
                               f"of {label}), received {g!r}")
    return _Prepared(run, e, t[keep], b[keep], sizes[keep], int(g), tuple(caveats))


def _residuals(prepared, fabric, model) -> np.ndarray:
    return np.concatenate([np.atleast_1d(measured(p.estimate, fabric, gpus_per_thread=p.gpus_per_thread,
                                                  model=model).time) / p.measured_time - 1
                           for p in prepared])


def _stats(r) -> dict:
    a = np.abs(r)
    return {"median_abs_time_error": float(np.median(a)), "max_abs_time_error": float(np.max(a)),
            "rows": int(a.size)}


def _lm(fun, x0, lower, upper, iterations=200):
    """Bounded Levenberg-Marquardt (numpy fallback): numeric Jacobian, steps clipped to bounds."""
    x = np.clip(np.asarray(x0, float), lower, upper)
    r = fun(x)
    cost, lam = float(r @ r), 1e-3
    for _ in range(iterations):
        J = np.empty((r.size, x.size))
        for k in range(x.size):
            h = 1e-6 * max(abs(x[k]), 1e-3)
            step = x.copy()
            step[k] = x[k] + h if x[k] + h <= upper[k] else x[k] - h
            J[:, k] = (fun(step) - r) / (step[k] - x[k])
        A, g = J.T @ J, J.T @ r
        improved = False
        for _ in range(20):
            try:
                dx = -np.linalg.solve(A + lam * np.diag(np.diag(A) + 1e-12), g)
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            trial = np.clip(x + dx, lower, upper)
            rt = fun(trial)
            ct = float(rt @ rt)
            if ct < cost:
                improved = abs(cost - ct) > 1e-15 * max(cost, 1e-30)
                x, r, cost, lam = trial, rt, ct, max(lam / 10, 1e-12)
                break
            lam *= 10
        if not improved:
            break
    return x


@dataclass(frozen=True, slots=True)
class Calibration:
    """A fitted measurement model and how well it fits.

    Attributes
    ----------
    model : MeasurementModel
    fitted : tuple of (str, float, float, float)
        ``(name, value, lower, upper)`` per fitted constant, SI units.
    before, after : dict
        Residual statistics with the default and the fitted constants.
    residuals_before, residuals_after : numpy.ndarray
        ``predicted / measured - 1`` per row used.
    system : str
    sources : tuple of str
    method : str
    caveats : tuple of Caveat
        What the fit assumed, held or left out (read from a file: its notes,
        :attr:`CaveatCode.READ`); :func:`models.present.text.caveat_texts` words them.
    """

    model: MeasurementModel
    fitted: tuple
    before: dict
    after: dict
    residuals_before: object
    residuals_after: object
    system: str = ""
    sources: tuple = ()
    method: str = ""
    caveats: tuple = ()

    def to_records(self) -> list:
        """Tidy rows, one per fitted constant: its value and bounds (SI) and the median and max
        |time error| before and after the fit."""
        return tidy_records({
            "system": self.system, "name": [n for n, _, _, _ in self.fitted],
            "value": [v for _, v, _, _ in self.fitted], "lower": [lo for _, _, lo, _ in self.fitted],
            "upper": [hi for _, _, _, hi in self.fitted], "rows": self.after.get("rows"),
            "median_abs_time_error_before": self.before.get("median_abs_time_error"),
            "max_abs_time_error_before": self.before.get("max_abs_time_error"),
            "median_abs_time_error_after": self.after.get("median_abs_time_error"),
            "max_abs_time_error_after": self.after.get("max_abs_time_error"), "method": self.method})

    @classmethod
    def from_json(cls, text: str, *, source: str = "calibration file") -> "Calibration":
        """Read the form :func:`models.present.json_shapes.calibration_file_json` writes (the
        file of ``dgxtopo calibrate --out``), every value checked against its range.

        Parameters
        ----------
        text : str
        source : str
            Where the text came from (a file name), for messages.

        Raises
        ------
        CalibrationError
            For text that is not JSON (or nests deeper than topo.inputs.MAX_JSON_DEPTH),
            another schema or version, an unknown parameter, or a value out of its range
            (:func:`parameter_range`), naming the field.

        Examples
        --------
        >>> Calibration.from_json('{"schema": "dgx-topo calibration", "version": 1, '
        ...                       '"parameters": {"efficiency:nvlink2": 0}}')
        Traceback (most recent call last):
        ...
        models.studies.calibration.CalibrationError: calibration file: "parameters": efficiency:nvlink2 = 0: expected a number from 0.05 to 1 (the share of the link's payload rate a transfer achieves; 'dgxtopo calibrate' fits within these bounds)
        """
        from topo.inputs import InputFileError, parse_json

        try:
            data = parse_json(text, source=source)
        except InputFileError as error:
            raise CalibrationError(f"{error}: expected a calibration JSON file") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise CalibrationError(f"{source}: expected a JSON object with \"schema\": \"{SCHEMA}\"")
        if data.get("version") != SCHEMA_VERSION:
            raise CalibrationError(f"{source}: expected calibration schema version {SCHEMA_VERSION}, "
                                   f"received {data.get('version')!r}")
        params = data.get("parameters")
        if not isinstance(params, dict):
            raise CalibrationError(f"{source}: expected \"parameters\": an object of named numbers")
        for name, value in params.items():
            _check_parameter(name, value, f"{source}: \"parameters\": ")
        fitted = _fitted(data.get("fitted", []), source)
        system = data.get("system", "")
        sources = data.get("sources", [])
        notes = data.get("notes", [])
        method = data.get("method", "")
        residuals = data.get("residuals", {})
        for key, value, kind in (("system", system, str), ("method", method, str),
                                 ("sources", sources, list), ("notes", notes, list),
                                 ("residuals", residuals, dict)):
            if not isinstance(value, kind) or (kind is list and not all(isinstance(v, str) for v in value)):
                shape = {str: "a string", list: "a list of strings", dict: "an object"}[kind]
                raise CalibrationError(f"{source}: expected \"{key}\": {shape}, received "
                                       f"{type(value).__name__}")
        model = DEFAULT.with_values(**params)
        model = _with_provenance(model, [f[0] for f in fitted], f"calibration on {system or '?'} "
                                 f"({', '.join(sources)})")
        return cls(model, fitted, residuals.get("before", {}), residuals.get("after", {}),
                   np.array([]), np.array([]), system, tuple(sources), method,
                   tuple(Caveat(CaveatCode.READ, text=note) for note in notes))


def parameter_range(name: str) -> tuple:
    """The accepted range ``(lower, upper)`` of a calibration parameter, SI units: the bounds
    :func:`calibrate` fits within (a launch above 50 us per GPU or a floor above 1 ms is not a
    launch; an efficiency is a share of the link's payload rate, at most 1).

    >>> parameter_range("floor")
    (0.0, 0.001)

    Raises
    ------
    CalibrationError
        For a name that is not a parameter of the measurement model.
    """
    if name in ("launch_per_gpu", "floor"):
        return _BOUNDS[name]
    if name == "transfer_efficiency":
        return _BOUNDS["efficiency"]
    if isinstance(name, str) and name.startswith("efficiency:"):
        from ..predict.measure import LINK_CLASSES

        if name.split(":", 1)[1] in LINK_CLASSES:
            return _BOUNDS["efficiency"]
        raise CalibrationError(f"unknown parameter {name!r}: expected efficiency:LINK with LINK one of "
                               f"{', '.join(LINK_CLASSES)}")
    raise CalibrationError(f"unknown parameter {name!r}: expected launch_per_gpu, floor, "
                           f"transfer_efficiency or efficiency:LINK")


def _check_parameter(name, value, where: str = "") -> float:
    """``value`` of parameter ``name`` checked against :func:`parameter_range`."""
    try:
        lower, upper = parameter_range(name)
    except CalibrationError as error:
        raise CalibrationError(f"{where}{error}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not lower <= value <= upper:
        if name in ("launch_per_gpu", "floor"):
            meaning = (f"from 0 to {upper:g} seconds ({to_us(upper):g} us; 'dgxtopo calibrate' fits "
                       f"within these bounds)")
        else:
            meaning = (f"from {lower:g} to {upper:g} (the share of the link's payload rate a transfer "
                       f"achieves; 'dgxtopo calibrate' fits within these bounds)")
        shown = value if isinstance(value, (int, float, str)) and len(repr(value)) < 40 else type(value).__name__
        raise CalibrationError(f"{where}{name} = {shown}: expected a number {meaning}")
    return float(value)


def _fitted(entries, source: str) -> tuple:
    """The ``"fitted"`` list: ``(name, value, lower, upper)`` per fitted constant, checked."""
    if not isinstance(entries, list):
        raise CalibrationError(f"{source}: expected \"fitted\": a list, received {type(entries).__name__}")
    fitted = []
    for k, entry in enumerate(entries):
        where = f"{source}: \"fitted\"[{k}]: "
        if not isinstance(entry, dict) or not {"name", "value", "lower", "upper"} <= set(entry):
            raise CalibrationError(f"{where}expected an object with name, value, lower, upper")
        name = entry["name"]
        values = [_check_parameter(name, entry[key], where) for key in ("value", "lower", "upper")]
        fitted.append((str(name), *values))
    return tuple(fitted)


def _with_provenance(model, names, source):
    from dataclasses import replace

    return replace(model, provenance=tuple((n, source) for n in names))


def calibrate(runs: Iterable[NcclTestsRun | P2PBenchmark], G: nx.DiGraph | PreparedFabric, *, gpus: GpuIds = None,
              gpus_per_thread: int | None = None, profile: str | NcclProfile | None = None, inplace: bool = False,
              model: MeasurementModel = DEFAULT, use_scipy: bool | None = None) -> Calibration:
    """Fit the measurement model's constants to nccl-tests runs on one system.

    Parameters
    ----------
    runs : iterable of NcclTestsRun (P2PBenchmark entries are noted, not fitted)
    G : networkx.DiGraph
        The system the runs were made on.
    gpus : list of int or str, optional
        GPU ids of the ranks (default: from the runs' CUDA_VISIBLE_DEVICES and device lines).
    gpus_per_thread : int, optional
        nccl-tests ``-g`` (default: the runs' ``nGpus``).
    profile : str, optional
        NCCL version profile.
    inplace : bool
        Fit the in-place columns instead of the out-of-place ones.
    model : MeasurementModel
        Starting point, and the constants not fitted.
    use_scipy : bool, optional
        Force (True) or forbid (False) scipy; default: use it when installed.

    Returns
    -------
    Calibration

    Raises
    ------
    CalibrationError
        For no usable run, or scipy forced but missing.
    """
    runs = list(runs)
    caveats = []
    p2p = [r for r in runs if isinstance(r, P2PBenchmark)]
    if p2p:
        caveats.append(Caveat(CaveatCode.P2P_NOT_FITTED, count=len(p2p)))
    estimator = Estimator(prepare(G, nccl=profile))  # one NCCL view and its searches for every run
    fabric = estimator.fabric.nccl
    prepared = [_prepare(r, estimator, gpus, gpus_per_thread, inplace) for r in runs
                if not isinstance(r, P2PBenchmark)]
    if not prepared:
        raise CalibrationError("expected at least one nccl-tests run to calibrate on")
    caveats += [c for p in prepared for c in p.caveats]
    names = []
    launch_rows = bandwidth_rows = 0
    classes = set()
    for p in prepared:
        m = measured(p.estimate, fabric, gpus_per_thread=p.gpus_per_thread, model=model)
        time = np.atleast_1d(m.time)
        bw_share = (time - np.atleast_1d(m.startup)) / time
        hosts = np.broadcast_to(np.atleast_1d(m.hosts), time.shape)
        host_share = np.where(hosts >= np.atleast_1d(m.nccl_latency), hosts / time, 0)
        launch_rows += int(np.sum(host_share >= _LAUNCH_BOUND))
        bound = (bw_share >= _BANDWIDTH_BOUND) & (np.broadcast_to(np.atleast_1d(m.links), time.shape) != "")
        bandwidth_rows += int(np.sum(bound))
        classes.update(str(c) for c in np.broadcast_to(np.atleast_1d(m.links), time.shape)[bound])  # each row's own
    if launch_rows:
        names.append("launch_per_gpu")
        if len({p.gpus_per_thread for p in prepared}) > 1:
            names.append("floor")
        else:
            caveats.append(Caveat(CaveatCode.FLOOR_HELD))
    names += [f"efficiency:{c}" for c in sorted(classes)]
    if not names:
        raise CalibrationError("no row is launch-bound or bandwidth-bound: nothing to fit")

    def value(name):
        return model.efficiency(name.split(":", 1)[1]) if name.startswith("efficiency:") \
            else getattr(model, name)

    scale = np.array([us if n in ("launch_per_gpu", "floor") else 1.0 for n in names])
    lower = np.array([_BOUNDS["efficiency" if n.startswith("efficiency:") else n][0] for n in names]) / scale
    upper = np.array([_BOUNDS["efficiency" if n.startswith("efficiency:") else n][1] for n in names]) / scale
    x0 = np.clip(np.array([value(n) for n in names]) / scale, lower, upper)

    def trial(x):
        return model.with_values(**dict(zip(names, x * scale)))

    def fun(x):
        # soft-L1 residuals: rows off for a reason outside these constants (a protocol another
        # NCCL version would not choose) weigh like |r|, not r^2, so they do not drag the fit.
        r = _residuals(prepared, fabric, trial(x))
        return np.sign(r) * np.sqrt(2 * _ROBUST**2 * (np.sqrt(1 + (r / _ROBUST) ** 2) - 1))

    if use_scipy is None or use_scipy:
        try:
            from scipy.optimize import least_squares
        except ImportError:
            if use_scipy:
                raise CalibrationError("scipy is not installed: pip install 'dgx-topo[fit]', or "
                                       "use_scipy=False for the numpy fit") from None
            least_squares = None
    else:
        least_squares = None
    if least_squares is not None:
        x = least_squares(fun, x0, bounds=(lower, upper), x_scale="jac").x
        method = "scipy.optimize.least_squares"
    else:
        x = _lm(fun, x0, lower, upper)
        method = "numpy bounded Levenberg-Marquardt"
    fitted_model = trial(x)
    system = G.graph.get("system", G.graph.get("name", ""))
    sources = tuple(p.run.name or p.run.collective for p in prepared)
    fitted_model = _with_provenance(fitted_model, names, f"calibration on {system} "
                                    f"({', '.join(sources)})")
    before, after = _residuals(prepared, fabric, model), _residuals(prepared, fabric, fitted_model)
    fitted = tuple((n, float(v * s), float(lo * s), float(hi * s))
                   for n, v, s, lo, hi in zip(names, x, scale, lower, upper))
    return Calibration(fitted_model, fitted, _stats(before), _stats(after), before, after, system,
                       sources, method, tuple(caveats))


@dataclass(frozen=True, slots=True)
class CheckRow:
    """One size: measured vs predicted (SI units; errors are predicted / measured - 1)."""

    size: int
    measured_time: float
    predicted_time: float
    measured_busbw: float
    predicted_busbw: float
    time_error: float
    busbw_error: float | None


@dataclass(frozen=True, slots=True)
class Check:
    """Measured vs predicted for one run.

    Attributes
    ----------
    collective : str
    rows : tuple of CheckRow
    median_abs_time_error, max_abs_time_error : float
    median_abs_busbw_error, max_abs_busbw_error : float
        Over the rows whose measured busbw is not 0 (printed as 0.00 at the smallest sizes).
    measured : models.predict.measure.Measured or None
        The measurement model's terms at every size (:func:`models.present.explain.explain`
        writes out the largest).
    caveats : tuple of Caveat
        What was assumed (a collective read from the columns, the GPUs of a run that does not
        show them, a ``-g`` it does not show) and a calibration of another system;
        :func:`models.present.text.caveat_texts` words them.
    """

    collective: str
    system: str
    gpus: tuple
    gpus_per_thread: int
    rows: tuple
    median_abs_time_error: float
    max_abs_time_error: float
    median_abs_busbw_error: float
    max_abs_busbw_error: float
    measured: Measured | None = field(default=None, repr=False, compare=False)
    caveats: tuple = ()

    def to_records(self) -> list:
        """Tidy rows, one per size: measured and predicted time and busbw, and the errors
        (``predicted / measured - 1``; ``busbw_error`` None where the measured busbw is 0)."""
        rows = self.rows
        return tidy_records({
            "collective": self.collective, "system": self.system, "nbytes": [r.size for r in rows],
            "measured_time_s": [r.measured_time for r in rows], "predicted_time_s": [r.predicted_time for r in rows],
            "measured_busbw_Bps": [r.measured_busbw for r in rows],
            "predicted_busbw_Bps": [r.predicted_busbw for r in rows],
            "time_error": [r.time_error for r in rows], "busbw_error": [r.busbw_error for r in rows]})


def _mode_fit(p: _Prepared, estimator, model, time_g1) -> Caveat:
    """:attr:`CaveatCode.MODE_FIT` of a run whose ``-g`` is unknown: ``time_g1`` is its
    prediction under ``-g 1``; the other reading drives every rank from one thread."""
    n = int(p.estimate.nranks)
    time_gn = np.atleast_1d(measured(p.estimate, estimator.fabric.nccl, gpus_per_thread=n, model=model).time)
    small = p.sizes < _SMALL
    keep = small if small.any() else np.ones_like(small)
    e1, en = (float(np.median(np.abs(t[keep] / p.measured_time[keep] - 1))) for t in (time_g1, time_gn))
    return Caveat(CaveatCode.MODE_FIT, count=n, run=p.run.name, gpus_per_thread=n if en < e1 else 1,
                  median_error_g1=e1, median_error_gn=en, below=_SMALL if small.any() else None,
                  rows=int(keep.sum()))


def check(run: NcclTestsRun, G: nx.DiGraph | PreparedFabric, *, gpus: GpuIds = None, gpus_per_thread: int | None = None,
          profile: str | NcclProfile | None = None, calibration: CalibrationLike = None, inplace: bool = False) -> Check:
    """Measured vs predicted, size by size, for one nccl-tests run.

    Parameters
    ----------
    run : NcclTestsRun
    G : networkx.DiGraph
    gpus, gpus_per_thread, profile, inplace
        As for :func:`calibrate`.
    calibration : Calibration or MeasurementModel, optional
        Constants to use instead of the defaults.

    Returns
    -------
    Check

    Raises
    ------
    CalibrationError
        For a run without usable rows, a bad ``-g``, or a run whose ``nGpus`` is not 1 to its
        ranks (``-g 0``, as the command line refuses it) and no ``gpus_per_thread``.

    What the run does not show is assumed and said in ``caveats`` (:class:`CaveatCode`).
    """
    model = measurement_model(calibration)  # a typed error for anything but a fit or a model
    estimator = Estimator(prepare(G, nccl=profile))
    p = _prepare(run, estimator, gpus, gpus_per_thread, inplace)
    system = estimator.fabric.G.graph.get("system", "")
    caveats = p.caveats
    if isinstance(calibration, Calibration) and calibration.system and system and calibration.system != system:
        caveats += (Caveat(CaveatCode.CALIBRATION_OF_ANOTHER_SYSTEM, system=system,
                           calibration_system=calibration.system),)
    m = measured(p.estimate, estimator.fabric.nccl, gpus_per_thread=p.gpus_per_thread, model=model)
    time, busbw = np.atleast_1d(m.time), np.atleast_1d(m.busbw)
    if any(c.code is CaveatCode.GPUS_PER_THREAD_ASSUMED for c in caveats) and p.estimate.nranks > 1:
        caveats += (_mode_fit(p, estimator, model, time),)
    rows = []
    for size, mt, pt, mb, pb in zip(p.sizes, p.measured_time, time, p.measured_busbw, busbw):
        berr = float(pb / mb - 1) if np.isfinite(mb) and mb > 0 else None
        rows.append(CheckRow(int(size), float(mt), float(pt), float(mb), float(pb),
                             float(pt / mt - 1), berr))
    terr = np.abs([r.time_error for r in rows])
    berrs = np.abs([r.busbw_error for r in rows if r.busbw_error is not None])
    return Check(run.collective, system, tuple(m.gpus), p.gpus_per_thread,
                 tuple(rows), float(np.median(terr)), float(np.max(terr)),
                 float(np.median(berrs)) if berrs.size else math.nan,
                 float(np.max(berrs)) if berrs.size else math.nan, m, caveats)

