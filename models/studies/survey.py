"""A survey of fabrics: what ``dgxtopo report`` predicts, compares and ranks, as numbers.

Each function answers one section of the report (:mod:`models.present.report.analysis` words the
answers, draws and ships them):

- :func:`system_results`: what one system delivers (the 8- and 16-GPU all_reduce at
  :data:`REPORT_SIZE`, the 2-GPU matrix and its best and worst pairs, the P2P report, the curves
  over :data:`CURVE_SIZES`);
- :func:`generation_curves`: the 8-GPU all_reduce as NCCL chooses, forced to ring and to NVLS;
- :func:`seed_results`: one DGX-2 against two DGX-1V (:data:`SEED_COMPARISON`);
- :func:`collective_checks`, :func:`p2p_row_comparison`, :func:`fitted_constants`: the model
  against the measured runs shipped with this package (:data:`MEASURED_DATA`: nccl-tests on 12
  GPUs of a DGX-2 through :func:`models.studies.calibration.check`, and a DGX-1V's
  p2pBandwidthLatencyTest row);
- :func:`set_bounds`: NCCL's estimate beside the optimal schedule's bound on every class of
  equivalent GPU sets (:func:`set_classes`), and :func:`applicable_bound`;
- :func:`training_results`: a planner workload's layouts (:func:`merged_search`) and the GPU
  generations ranked for it;
- :func:`simulated_step_results`: one planned training step and its simulation.

A model that does not cover a case raises a :class:`topo.DgxTopoError`; where a section goes on
without that result, the function gives an *attempt*, ``(result, None)`` or ``(None, error)``
with the error itself, for the caller to word.

Examples
--------
>>> import topo
>>> from models.engine.fabric import prepare
>>> r = system_results(prepare(topo.dgx1v()))
>>> r.summary.gpus, round(float(r.e8[0].busbw) / 1e9, 1), r.e16
(8, 121.9, None)
>>> best, worst = r.extremes
>>> best[0], worst[0]
((0, 3), (0, 5))
"""

from __future__ import annotations

import json
import math
from importlib import resources
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

import topo
from topo.errors import DgxTopoError
from topo.units import GB, GiB, us

from ..engine.fabric import prepare
from ..engine.nccl.algorithms.nvls import NVLS
from ..engine.nccl.algorithms.ring import RING
from ..engine.nccl.nvls import nvlink_cliques
from ..engine.symmetry import MAX_SET_CLASSES
from ..predict.collectives import estimate, pairwise
from ..predict.measure import DEFAULT
from ..predict.p2p import EFFICIENCIES, OVERHEADS, p2p_report
from .benchmarks import read_nccl_tests
from .bounds import bound
from .calibration import check
from .planner.layouts import search
from .planner.ranking import gpus_ranking
from .planner.records import Search

__all__ = ["SystemResults", "report_fabrics", "system_results", "extreme_pairs", "seed_results",
           "generation_curves", "nvlink_kinds", "single_host", "one_domain", "eight_in_one_domain",
           "measured_data", "measured_text", "collective_checks", "p2p_row_comparison", "fitted_constants",
           "bound_edge_kinds", "set_classes", "set_bounds", "applicable_bound", "merged_search",
           "training_results", "generation_name", "simulated_step_results",
           "REPORT_SIZE", "CURVE_SIZES", "MAX_MATRIX_GPUS", "REPORT_COLLECTIVE", "SEED_COMPARISON",
           "GENERATION_GPUS", "MEASURED_DATA", "P2P_SERIES", "BOUND_SIZE", "BOUND_RELAY", "BOUND_WORST",
           "TRAINING_WORKLOAD", "TRAINING_SYSTEMS", "TRAINING_TP", "SIMULATED_WORKLOAD",
           "SCHEDULE_SYSTEM", "SCHEDULE_GPUS", "SCHEDULE_COLLECTIVE", "SCHEDULE_SIZES"]

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
#: GPUs of the generations' all_reduce curves (GPUs 0-7: every DGX since the DGX-1 has 8).
GENERATION_GPUS = 8
#: The measured runs the report checks the model against (package data of this package, copies
#: of the project's tests/data files, each naming its source inside): nccl-tests on 12 GPUs
#: of a DGX-2 and a DGX-1V's p2pBandwidthLatencyTest row of GPU0.
MEASURED_DATA = MappingProxyType({"dgx2": "dgx2_12gpu_nccl_tests.json", "dgx1v": "dgx1v_p2p_gpu0_row.json"})
#: The series of the DGX-1V's p2pBandwidthLatencyTest row, in :func:`p2p_row_comparison`'s order:
#: (code, quantity, the data file's key, its unit).
P2P_SERIES = (("bidirectional_enabled", "bandwidth", "bidirectional_p2p_enabled_gbps", GB),
              ("bidirectional_disabled", "bandwidth", "bidirectional_p2p_disabled_gbps", GB),
              ("write_latency_enabled", "latency", "latency_p2p_enabled_writes_us", us),
              ("latency_disabled", "latency", "latency_p2p_disabled_us", us))
#: Size of the bound section's NCCL estimates: nccl-tests' largest, ``-e 8G``, where the
#: bandwidth term dominates (the bounds have no latency term). [bytes]
BOUND_SIZE = int(CURVE_SIZES[-1])
#: Relays of the bounds: NCCL's own (switches, CPUs, NICs forward; GPUs outside the set do not).
BOUND_RELAY = "switches"
#: Worst GPU sets (symmetry classes) shown per system.
BOUND_WORST = 3
#: The training section's workload and the systems it compares (the seed comparison's).
TRAINING_WORKLOAD = "megatron-8.3b"
TRAINING_SYSTEMS = SEED_COMPARISON
#: Tensor-parallel degrees the section searches: a DGX-1V cube face and a whole host (Megatron-LM
#: trained 8.3B with 8-way tensor parallelism: Shoeybi et al. 2019, "Megatron-LM", section 5).
#: :func:`models.search` without ``tp`` searches every degree.
TRAINING_TP = (4, 8)
#: The worked step of the simulation section: this workload on 8 GPUs, tensor parallel over a
#: host's GPUs (at most 8; the rest data parallel), one micro-batch per replica, full recomputation.
SIMULATED_WORKLOAD = "llama3-8b"
#: The schedule section's GPU set: four GPUs of a DGX-1V (two of its cube's faces' corners) where
#: NCCL's rings leave a third of the NVLinks idle and the bound beats NCCL by half again; the tree
#: packing written as an MSCCL schedule (:mod:`models.schedules`) is timed beside both.
SCHEDULE_SYSTEM = "dgx1v"
SCHEDULE_GPUS = (0, 1, 4, 5)
#: The collective the packing is written for (:data:`models.schedules.export.PACKING_COLLECTIVES`).
SCHEDULE_COLLECTIVE = "all_gather"
#: The section's sizes: nccl-tests' ``-b 64K -e 1G -f 4``. [bytes]
SCHEDULE_SIZES = tuple(int(2**k) for k in range(16, 31, 2))


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


def _attempt(function, *args, **kwargs) -> tuple:
    """(result, None), or (None, error) for a model that does not cover the case."""
    try:
        return function(*args, **kwargs), None
    except DgxTopoError as error:
        return None, error


def extreme_pairs(matrix) -> tuple:
    """((best pair, busbw, count), (worst pair, busbw, count)) of a 2-GPU busbw matrix: the first
    pair with the highest / lowest finite busbw and how many pairs share it (relative 1e-9)."""
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


class SystemResults(NamedTuple):
    """What one system delivers (:func:`system_results`): each model result an attempt
    ``(result, error)``, or None where the system cannot have it.

    Attributes
    ----------
    summary : topo.FabricSummary
    e8, e16 : attempt of CollectiveEstimate or None
        all_reduce of GPUs 0-7 / 0-15 at :data:`REPORT_SIZE` (None: fewer GPUs).
    pairs : attempt of numpy.ndarray or None
        2-GPU all_reduce busbw matrix at :data:`REPORT_SIZE` [B/s] (None: fewer than 2 GPUs, or
        more than :data:`MAX_MATRIX_GPUS`).
    extremes : tuple
        :func:`extreme_pairs` of the matrix (no pair when there is none).
    p2p : attempt of P2PReport or None
        None: more than :data:`MAX_MATRIX_GPUS` GPUs.
    curve : attempt of CollectiveEstimate
        all_reduce of all GPUs over :data:`CURVE_SIZES`.
    curve8 : attempt of CollectiveEstimate or None
        all_reduce of GPUs 0-7 over :data:`CURVE_SIZES`, for a system of more than 8 GPUs whose
        curve was estimated.
    """

    summary: object
    e8: tuple | None
    e16: tuple | None
    pairs: tuple | None
    extremes: tuple
    p2p: tuple | None
    curve: tuple
    curve8: tuple | None


def system_results(fabric) -> SystemResults:
    """What one system delivers, every model sharing one prepared fabric (its NCCL view,
    searches and symmetry); see :class:`SystemResults`."""
    G, f = fabric.G, fabric
    s = topo.summarize(G)
    n = s.gpus
    e8 = _attempt(estimate, f, REPORT_COLLECTIVE, REPORT_SIZE, list(range(8))) if n >= 8 else None
    e16 = _attempt(estimate, f, REPORT_COLLECTIVE, REPORT_SIZE, list(range(16))) if n >= 16 else None
    pairs = p2p = None
    extremes = ((None, None, 0), (None, None, 0))
    if n <= MAX_MATRIX_GPUS:
        if n >= 2:
            pairs = _attempt(pairwise, f, REPORT_COLLECTIVE, REPORT_SIZE)
            if pairs[1] is None:
                extremes = extreme_pairs(pairs[0])
        p2p = _attempt(p2p_report, f)
    curve = _attempt(estimate, f, REPORT_COLLECTIVE, CURVE_SIZES)
    curve8 = None
    if curve[0] is not None and n > 8:
        curve8 = _attempt(estimate, f, REPORT_COLLECTIVE, CURVE_SIZES, list(range(8)))
    return SystemResults(s, e8, e16, pairs, extremes, p2p, curve, curve8)


def seed_results(fabric_of) -> tuple:
    """The all_reduce of every GPU over :data:`CURVE_SIZES` of each system of
    :data:`SEED_COMPARISON` (``fabric_of(name)``: its prepared fabric), one attempt each."""
    return tuple(_attempt(estimate, fabric_of(name), REPORT_COLLECTIVE, CURVE_SIZES) for name in SEED_COMPARISON)


def generation_curves(fabric, *, auto: bool) -> tuple:
    """(as NCCL chooses, forced to ring, forced to NVLS): attempts of the all_reduce of GPUs 0-7
    over :data:`CURVE_SIZES` (the first None unless ``auto``). NVLS (NVLink SHARP) where the NCCL
    model has it; a model without it, or a fabric NCCL would not run it on, is an error."""
    gpus = list(range(GENERATION_GPUS))
    chosen = _attempt(estimate, fabric, REPORT_COLLECTIVE, CURVE_SIZES, gpus) if auto else None
    ring = _attempt(estimate, fabric, REPORT_COLLECTIVE, CURVE_SIZES, gpus, algorithms=(RING,))
    nvls = _attempt(estimate, fabric, REPORT_COLLECTIVE, CURVE_SIZES, gpus, algorithms=(NVLS,))
    return chosen, ring, nvls


def nvlink_kinds(G, gpus) -> str:
    """The NVLink technologies of the GPUs' links (``"nvlink4"``; several joined by ``/``; ``"none"``)."""
    links = sorted({d["link"] for g in gpus for _, _, d in G.out_edges(g, data=True)
                    if d.get("kind") == "nvlink"})
    return "/".join(links) or "none"


def single_host(G) -> bool:
    """Whether every GPU of the fabric is on one host."""
    return len({G.nodes[g].get("host", 0) for g in topo.gpus(G)}) == 1


def one_domain(G) -> bool:
    """One host, or one NVLink domain over several (a GB200 NVL72 rack: GPUs 0-7 are two of its
    trays, one NCCL node, as 8 GPUs of a DGX are); a cluster has several domains."""
    return single_host(G) or len(nvlink_cliques(G, topo.gpus(G))) == 1


def eight_in_one_domain(G) -> bool:
    """A system of the generations section: :data:`GENERATION_GPUS` GPUs or more, in one domain."""
    return len(topo.gpus(G)) >= GENERATION_GPUS and one_domain(G)


def measured_data(system: str) -> dict:
    """The measured data file of a system (:data:`MEASURED_DATA`), as the JSON it holds.

    Raises
    ------
    topo.DgxTopoError
        For a system without measured data.
    """
    return json.loads(measured_text(system))  # measured_text refuses a system without data


def measured_text(system: str) -> str:
    """The text of a system's measured data file (see :func:`measured_data`)."""
    if system not in MEASURED_DATA:
        raise DgxTopoError(f"no measured data for {system!r}: expected one of {', '.join(MEASURED_DATA)}")
    return resources.files(__package__).joinpath("data", MEASURED_DATA[system]).read_text(encoding="utf-8")


def collective_checks(G, profile) -> tuple:
    """Every DGX-2 nccl-tests run of :data:`MEASURED_DATA` checked against the model
    (:func:`models.studies.calibration.check`), out-of-place then in-place: ``(collective,
    inplace, check, error)`` each, ``check`` None where ``error`` (the model's) says why."""
    data = measured_data("dgx2")
    out = []
    for collective, run in data["collectives"].items():
        parsed = read_nccl_tests(run["raw"], name=f"{collective} (DGX-2, -g 12)")
        for inplace in (False, True):
            result, error = _attempt(check, parsed, G, inplace=inplace, profile=profile)
            out.append((collective, inplace, result, error))
    return tuple(out)


def p2p_row_comparison(G) -> tuple:
    """The DGX-1V's measured p2pBandwidthLatencyTest row against the P2P model on ``G``:
    ``(series, row)``, one ``(code, quantity, destinations, measured, predicted)`` per
    :data:`P2P_SERIES` (per destination GPU, entry 0 the device-local copy; [B/s] or [s]) and
    the data file's row."""
    row = measured_data("dgx1v")
    source = int(row.get("row_of_gpu", 0))
    reports = {"enabled": p2p_report(G), "disabled": p2p_report(G, p2p="disabled")}
    n = len(row["bidirectional_p2p_enabled_gbps"])
    destinations = tuple(range(n))
    out = []
    for code, quantity, key, unit in P2P_SERIES:
        report = reports["disabled" if code.endswith("_disabled") else "enabled"]
        matrix = report.bidirectional if quantity == "bandwidth" else report.latency
        out.append((code, quantity, destinations, tuple(float(v) * unit for v in row[key]),
                    tuple(float(v) for v in np.asarray(matrix, dtype=float)[source][:n])))
    return tuple(out), row


def fitted_constants() -> tuple:
    """The constants fitted to the measured runs: ``(measurement, p2p)``, the measurement model's
    parameters (:data:`models.predict.measure.DEFAULT`) and ``(table, key, constant)`` of the P2P
    model's (``"EFFICIENCIES"``, ``"OVERHEADS"``) with a ``fitted_to``."""
    measurement = tuple(p for p in DEFAULT.parameters() if p.fitted_to)
    p2p = tuple((table, key, c) for table, constants_table in (("EFFICIENCIES", EFFICIENCIES),
                                                               ("OVERHEADS", OVERHEADS))
                for key, c in constants_table.items() if c.fitted_to)
    return measurement, p2p


def bound_edge_kinds(G) -> tuple | None:
    """The links the report's bound uses on a fabric: NVLink alone on NVSwitch systems (NVLink
    joins every GPU pair there, and NCCL uses nothing else), every link on the others (NCCL falls
    back to PCIe between GPUs without NVLink, so the bound must count it)."""
    return ("nvlink",) if topo.nodes_of_kind(G, "nvswitch") else None


def set_classes(G, edge_kinds=None, *, max_classes: int | None = MAX_SET_CLASSES) -> dict:
    """Every GPU set of 2 or more GPUs, grouped by the symmetries its bound and NCCL's estimate
    share (:meth:`models.engine.symmetry.FabricSymmetry.both`; the bound over ``edge_kinds``).

    The classes are counted before they are listed, and listed without listing the sets (65 519
    sets of a DGX-2 are a few dozen classes).

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    edge_kinds : iterable of str, optional
    max_classes : int, optional
        Refuse (:class:`models.engine.symmetry.SymmetryLimitError`) more classes than this.

    Returns
    -------
    dict
        Representative (GPU ids, the first of its class in ``itertools.combinations`` order)
        -> number of sets in the class, by set size.
    """
    fabric = prepare(G)
    symmetry = fabric.symmetry.both(edge_kinds)
    return symmetry.set_classes(range(2, len(fabric.ids) + 1), max_classes=max_classes)


def set_bounds(fabric, edge_kinds=None) -> tuple:
    """NCCL against the optimal all_reduce on every class of :func:`set_classes`: ``(gpus, count,
    bound, estimate)`` per class, the bound (:func:`models.bound`, relays :data:`BOUND_RELAY`, links
    ``edge_kinds``) and NCCL's estimate at :data:`BOUND_SIZE`.

    Raises
    ------
    topo.DgxTopoError
        Where a model does not cover the fabric.
    """
    out = []
    for gpus, count in set_classes(fabric, edge_kinds).items():
        b = bound(fabric, REPORT_COLLECTIVE, BOUND_SIZE, list(gpus), relay=BOUND_RELAY, edge_kinds=edge_kinds,
                  nccl=False)
        e = estimate(fabric, REPORT_COLLECTIVE, BOUND_SIZE, list(gpus))
        out.append((gpus, count, b, e))
    return tuple(out)


def applicable_bound(b, e) -> float:
    """The bound that applies to what NCCL runs: GPUs reduce (reduce_scatter + all_gather,
    :attr:`models.studies.bounds.Bound.bound_busbw`), or, where NCCL runs NVLS (reduction in the
    switches), the cut bound on any schedule (:attr:`~models.studies.bounds.Bound.upper_busbw`). [B/s]"""
    ran = e.algorithm_at()
    return b.upper_busbw if ran is not None and ran.multimem else b.bound_busbw


def merged_search(workload, G, tps) -> Search:
    """Every layout of ``workload`` on ``G`` with tensor parallelism in ``tps``, ranked as
    :func:`models.search` ranks them (the analytical first pass: no simulation)."""
    plans, skipped = [], []
    for tp in tps:
        s = search(workload, G, tp=tp, simulate=0)  # the analytical ranking (simulated: the next section)
        plans += s.plans
        skipped += s.skipped_layouts
    plans.sort(key=lambda p: (not p.fits, p.step_time, p.memory.total, p.layout.label()))
    return Search(tuple(plans), tuple(skipped))


def training_results(workload, names, tps, dtype, fabrics) -> tuple:
    """``(searches, ranking)``: an attempt of :func:`merged_search` per system of ``names``
    (``fabrics[name]``, its prepared fabric, which keeps the search for every section asking it)
    and the GPU generations ranked for the workload (:func:`models.gpus_ranking` in ``dtype``)."""
    searches = []
    for name in names:
        fabric = fabrics[name]
        key = ("training_step", workload, tps)  # the fabric's memo: shared by a report's sections
        if key not in fabric.memo:
            fabric.memo[key] = _attempt(merged_search, workload, fabric, tps)
        searches.append(fabric.memo[key])
    return tuple(searches), gpus_ranking(workload, dtype=dtype)


def generation_name(G) -> str:
    """The GPU generation of a fabric's first GPU (its system's name for a GPU the compute
    model does not know)."""
    from .compute import generation_of

    try:
        return generation_of(G.nodes[topo.gpus(G)[0]].get("model", "")).name
    except DgxTopoError:
        name = G.graph.get("name", "fabric")
        return G.graph.get("system", name)  # topo.summarize's system


def simulated_step_results(G, fabric) -> tuple:
    """``(plan, result)``: :data:`SIMULATED_WORKLOAD` planned on 8 GPUs of ``G`` (tensor parallel
    over a host's GPUs, at most 8; the rest data parallel; full recomputation; the analytical
    step) and its simulation (:func:`models.studies.stepgraph.simulate_plan`; None when the plan
    does not fit).

    Raises
    ------
    topo.DgxTopoError
        Where a model does not cover the fabric.
    """
    from .planner.layouts import plan
    from .stepgraph import simulate_plan

    nodes = topo.gpus(G)
    host = G.nodes[nodes[0]].get("host")
    tp = min(8, sum(1 for g in nodes if G.nodes[g].get("host") == host))
    p = plan(SIMULATED_WORKLOAD, fabric, tp=tp, pp=1, dp=8 // tp, zero=0, global_batch=8 // tp,
             recompute="full", simulate=0)  # the analytical step, beside its simulation
    return p, (simulate_plan(p, G) if p.fits else None)
