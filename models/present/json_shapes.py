"""The JSON shape of every command's ``--json``: plain data for :func:`json.dumps`.

The display edge, like :mod:`models.present.text`: values arrive in SI (bytes, seconds, B/s)
and leave in the units the familiar tools print, named by the key's suffix (``_gbps``: GB/s =
1e9 B/s; ``_us``: microseconds; ``_s``: seconds; ``_bytes``: bytes). docs/json.md documents every
shape and ``tests/test_readme.py`` checks them against the real output. For
the numbers in SI, tidy and flat, every result has ``to_records()`` instead
(:mod:`models.engine.results`).
"""

from __future__ import annotations

import math

import numpy as np

from topo.summary import summarize
from topo.units import to_GBps, to_us

from .reasons_text import nvls_bound_text
from .text import caveat_texts

__all__ = ["systems_json", "collective_json", "pairs_json", "subsets_json", "compare_json",
           "gpus_ranking_json", "p2p_json", "cut_json", "tree_json", "packing_json", "bound_json",
           "check_json", "sweep_json", "export_json", "import_json",
           "report_json", "calibration_json", "simulation_json", "plan_json", "search_json",
           "plan_calibration_json", "calibration_file_json", "task_graph_json", "schedule_check_json", "schedule_evaluation_json"]


def systems_json(summaries) -> dict:
    """``dgxtopo systems --json``: ``{"systems": [...]}``, see :meth:`topo.Summary.to_dict`."""
    return {"systems": [s.to_dict() for s in summaries]}


def collective_json(G, e, *, explain: bool = False) -> dict:
    """``dgxtopo collective --json``: ``{"system", "collective", "gpus", "rows"}``, and
    ``"explanation"`` (the text of :func:`models.present.explain.explain_estimate`) with ``--explain``."""
    rows = [{"size_bytes": int(size), "time_us": float(to_us(t)), "algbw_gbps": float(to_GBps(a)),
             "busbw_gbps": float(to_GBps(b)), "algorithm": str(al), "protocol": str(pr),
             "nchannels": int(nc)}
            for size, t, a, b, al, pr, nc in zip(np.atleast_1d(e.nbytes), np.atleast_1d(e.time), np.atleast_1d(e.algbw),
                                                  np.atleast_1d(e.busbw), np.atleast_1d(e.algorithm), np.atleast_1d(e.protocol),
                                                  np.atleast_1d(e.nchannels))]
    data = {"system": G.graph["system"], "collective": e.collective, "gpus": list(e.gpus), "rows": rows}
    if explain:
        from .explain import explain_estimate  # the explain records' imports: only when asked for

        data["explanation"] = explain_estimate(e)
    return data


def _matrix_json(matrix) -> list:
    return [[None if math.isnan(v) else float(to_GBps(v)) for v in row] for row in matrix]


def pairs_json(G, collective: str, nbytes: int, matrix, bounds=None) -> dict:
    """``dgxtopo pairs --json``: ``{"system", "collective", "size_bytes", "gpus", "busbw_gbps"}``,
    and ``"bound_busbw_gbps"`` (the optimal-schedule bound of each pair) with ``--bound``."""
    data = {"system": G.graph["system"], "collective": collective, "size_bytes": int(nbytes),
            "gpus": list(range(len(matrix))), "busbw_gbps": _matrix_json(matrix)}
    if bounds is not None:
        data["bound_busbw_gbps"] = _matrix_json(bounds)
    return data


def subsets_json(G, collective: str, k: int, nbytes: int, ranking, shown, bounds=None) -> dict:
    """``dgxtopo subsets --json``: ``{"system", "collective", "k", "size_bytes", "count",
    "subsets"}``, ``count`` being every set and ``subsets`` the ones shown, best first; with
    ``bounds`` (GPU ids -> bound busbw [B/s]) each set also has ``"bound_busbw_gbps"`` and
    ``"ratio"`` (NCCL's busbw over the bound)."""
    rows = []
    for r in shown:
        row = {"gpus": list(r.gpus), "busbw_gbps": float(to_GBps(r.busbw)),
               "algbw_gbps": float(to_GBps(r.algbw)), "time_us": float(to_us(r.time)),
               "algorithm": r.algorithm, "protocol": r.protocol, "nchannels": int(r.nchannels)}
        if bounds is not None:
            b = bounds[tuple(r.gpus)]
            row["bound_busbw_gbps"] = float(to_GBps(b))
            row["ratio"] = float(r.busbw / b) if b > 0 else None
        rows.append(row)
    return {"system": G.graph["system"], "collective": collective, "k": int(k), "size_bytes": int(nbytes),
            "count": len(ranking), "subsets": rows}


def compare_json(collective: str, ngpus: int, names, estimates) -> dict:
    """``dgxtopo compare --json``: ``{"collective", "ngpus", "systems", "rows": [{"size_bytes",
    "results": [{"system", "time_us", "busbw_gbps", "algorithm", "protocol"}]}]}``."""
    sizes = np.atleast_1d(estimates[0].nbytes)
    return {"collective": collective, "ngpus": int(ngpus), "systems": list(names),
            "rows": [{"size_bytes": int(size),
                      "results": [{"system": name, "time_us": float(to_us(np.atleast_1d(e.time)[i])),
                                   "busbw_gbps": float(to_GBps(np.atleast_1d(e.busbw)[i])),
                                   "algorithm": str(np.atleast_1d(e.algorithm)[i]),
                                   "protocol": str(np.atleast_1d(e.protocol)[i])}
                                  for name, e in zip(names, estimates)]}
                     for i, size in enumerate(sizes)]}


def gpus_ranking_json(workload: str, dtype: str, ranks) -> dict:
    """``dgxtopo gpus --json``: ``{"workload", "dtype", "ranking": [{"generation",
    "time_per_sample_s", "compute_s", "memory_s", "communication_s", "binding", "fits"}]}``,
    fastest first; a generation without the dtype has ``time_per_sample_s`` null."""
    return {"workload": workload, "dtype": dtype,
            "ranking": [{"generation": r.generation,
                         "time_per_sample_s": r.time_per_sample if math.isfinite(r.time_per_sample) else None,
                         "compute_s": r.compute, "memory_s": r.memory_bound,
                         "communication_s": r.communication, "binding": r.binding, "fits": r.fits}
                        for r in ranks]}


# --------------------------------------------------------------------------------- plan
def plan_calibration_json(c) -> dict:
    """The ``"calibration"`` of ``dgxtopo plan --calibrate --json`` (a
    :class:`models.studies.planner.Calibration`): ``{"measured", "measured_step_s",
    "predicted_step_s", "compute_scale", "default", "fitted", "layout"}``."""
    return {"measured": c.measured, "measured_step_s": c.measured_step,
            "predicted_step_s": c.predicted_step, "compute_scale": c.scale,
            "default": dict(c.default), "fitted": dict(c.fitted), "layout": c.layout}


def plan_json(p) -> dict:
    """``dgxtopo plan --json`` of a :class:`models.studies.planner.Plan`: what it ran
    (``workload``, ``fabric``, ``nccl`` (the release), ``generation``, ``dtype``, ``software``,
    ``compute``, ``layout``),
    ``fits`` and ``reason``, the step (``step_time_s``, ``timing``, ``timing_note``,
    ``analytical_step_time_s``, ``simulated_step_time_s``; null where they do not apply),
    throughput (``samples_per_s``, ``tokens_per_s``, ``model_tflops_per_gpu``,
    ``hardware_tflops_per_gpu``, ``mfu``, ``hfu``), ``memory_per_gpu_bytes`` and ``memory``,
    ``components`` (``time_s``, ``exposed_s``, ``detail`` each), ``exposed_comm_s``, ``dispatch``
    (:func:`_dispatch_json`), ``groups``,
    ``warnings`` and ``calibration`` (:func:`plan_calibration_json`, or null). ``compute``, each
    ``detail``, ``reason``, ``timing_note`` and ``warnings`` are the words of the plan's numbers
    (:func:`models.present.plan_text.compute_note`, :func:`~models.present.plan_text.component_note`,
    :func:`~models.present.plan_text.fit_note`, :func:`~models.present.plan_text.timing_note`,
    :func:`~models.present.plan_text.warning_notes`)."""
    # the planner's words: only a plan's JSON imports them
    from ..studies.planner.cp_exchange import CpExchange
    from ..studies.recomputation import Recompute
    from .plan_text import component_note, compute_note, fit_note, timing_note, warning_notes

    def plain(value):  # a strategy object by its name
        return value.name if isinstance(value, (CpExchange, Recompute)) else value

    return {
        "workload": p.workload, "fabric": p.fabric, "nccl": p.nccl, "generation": p.generation,
        "dtype": p.dtype, "software": p.software, "compute": compute_note(p.compute),
        "layout": {**{k: plain(getattr(p.layout, k)) for k in type(p.layout).__slots__},
                   # a hierarchical exchange's (a2a, p2p) sizes, which its name alone does not give
                   "cp_comm_sizes": list(getattr(p.layout.cp_comm, "sizes", None) or ()) or None},
        "fits": p.fits, "reason": fit_note(p),
        "step_time_s": p.step_time if p.fits else None,
        "timing": p.timing, "timing_note": timing_note(p),
        "analytical_step_time_s": p.analytical_step_time if p.fits else None,
        "simulated_step_time_s": p.step_time if p.simulated else None,
        "samples_per_s": p.samples_per_s, "tokens_per_s": p.tokens_per_s,
        "model_tflops_per_gpu": p.model_tflops_per_gpu,
        "hardware_tflops_per_gpu": p.hardware_tflops_per_gpu, "mfu": p.mfu, "hfu": p.hfu,
        "memory_per_gpu_bytes": p.memory.total,
        "memory": {"parameters": p.memory.parameters, "gradients": p.memory.gradients,
                   "optimizer": p.memory.optimizer, "activations": p.memory.activations,
                   "capacity": p.memory.capacity},
        "components": {c.name: {"time_s": c.time, "exposed_s": c.exposed, "detail": component_note(c)}
                       for c in p.components},
        "exposed_comm_s": sum(c.exposed for c in p.components if c.name.endswith("_comm")),
        "dispatch": _dispatch_json(p),
        "groups": {k: [list(g) for g in v] for k, v in p.groups.items()},
        "warnings": list(warning_notes(p)),
        "calibration": plan_calibration_json(p.calibration) if p.calibration is not None else None,
    }


def _dispatch_json(p) -> dict | None:
    """How a plan's expert layers send their tokens: the dispatcher's name and, per byte of a
    rank's buffer, the bytes one GPU sends over the network and over NVLink (null without
    expert parallelism)."""
    d = next((c.detail for c in p.components if c.name == "ep_comm"), None)
    if d is None or d.degree * d.tensor_degree < 2:
        return None
    return {"dispatcher": d.dispatcher.name, "network_fraction": d.network_fraction,
            "nvlink_fraction": d.nvlink_fraction}


def search_json(search, top: int | None = None) -> dict:
    """``dgxtopo plan --search --json`` of a :class:`models.studies.planner.Search`: ``{"best",
    "layouts", "skipped"}``, each plan as :func:`plan_json`, ``layouts`` the first ``top`` (every
    layout without it), best first; ``skipped`` the refused layouts in words
    (:func:`models.present.plan_text.skipped_notes`)."""
    from .plan_text import skipped_notes

    shown = search.plans if top is None else search.plans[:top]
    return {"best": plan_json(search.best), "layouts": [plan_json(p) for p in shown],
            "skipped": list(skipped_notes(search))}


# ---------------------------------------------------------------------------------- p2p
def p2p_json(report) -> dict:
    """``dgxtopo p2p --json``: ``{"system", "gpus", "mode", "unidirectional_gbps",
    "bidirectional_gbps", "latency_us", "path_type"}``, GB/s and µs rounded to 4 decimals, NaN
    (a diagonal without ``memory_bandwidth``) as null; the same keys with P2P enabled or disabled.

    Examples
    --------
    >>> from topo import dgx2
    >>> from models.predict.p2p import p2p_report
    >>> p2p_json(p2p_report(dgx2(), "0,8"))["bidirectional_gbps"]
    [[784.89, 291.1765], [291.1765, 784.89]]
    """
    def table(matrix, convert):
        return [[None if math.isnan(x) else round(float(convert(x)), 4) for x in row]
                for row in matrix]
    return {
        "system": report.system,
        "gpus": list(report.gpus),
        "mode": report.mode,
        "unidirectional_gbps": table(report.unidirectional, to_GBps),
        "bidirectional_gbps": table(report.bidirectional, to_GBps),
        "latency_us": table(report.latency, to_us),
        "path_type": [list(map(str, row)) for row in report.path_type],
    }


# -------------------------------------------------------------------------------- bound
def cut_json(cut) -> dict:
    """A bound's binding cut: ``{"kind", "gpus", "other_gpus", "links", "capacity_gbps", "shards"}``."""
    return {"kind": cut.kind, "gpus": list(cut.gpus), "other_gpus": list(cut.other),
            "links": [[str(u), str(v)] for u, v in cut.links],
            "capacity_gbps": to_GBps(cut.capacity),
            "shards": None if math.isnan(cut.shards) else cut.shards}


def tree_json(tree) -> dict:
    """One tree of a packing: ``{"root", "rate_gbps", "arcs": [{"from", "to", "path"}]}``."""
    return {"root": tree.root, "rate_gbps": to_GBps(tree.rate),
            "arcs": [{"from": a, "to": b, "path": [str(n) for n in path]} for a, b, path in tree.arcs]}


def packing_json(packing) -> dict:
    """A tree packing: ``{"collective", "gpus", "relay", "rate_gbps", "max_utilisation", "trees",
    "loads": [{"link", "load_gbps", "capacity_gbps"}]}``."""
    return {"collective": packing.collective, "gpus": list(packing.gpus), "relay": packing.relay,
            "rate_gbps": to_GBps(packing.rate), "max_utilisation": packing.max_utilisation,
            "trees": [tree_json(t) for t in packing.trees],
            "loads": [{"link": [str(u), str(v)], "load_gbps": to_GBps(load),
                       "capacity_gbps": to_GBps(cap)} for (u, v), load, cap in packing.loads]}


def bound_json(b) -> dict:
    """``dgxtopo bound --json``: the bound, NCCL's busbw beside it, the cut and the trees
    (GB/s, microseconds)."""
    def gbps(value):
        return None if value is None else to_GBps(value)
    return {
        "collective": b.collective, "system": b.system, "gpus": list(b.gpus),
        "root": b.root, "size_bytes": b.nbytes, "relay": b.relay,
        "edge_kinds": None if b.edge_kinds is None else list(b.edge_kinds),
        "bound_busbw_gbps": gbps(b.bound_busbw), "bound_algbw_gbps": gbps(b.bound_algbw),
        "time_us": None if math.isinf(b.time) else to_us(b.time),
        "upper_busbw_gbps": gbps(b.upper_busbw), "achievable": b.achievable,
        "nccl_busbw_gbps": gbps(b.nccl_busbw),
        "nccl_bandwidth_busbw_gbps": gbps(b.nccl_bandwidth_busbw),
        "nccl_time_us": None if b.nccl_time is None else to_us(b.nccl_time),
        "nccl_algorithm": b.nccl_algorithm, "ratio": b.ratio,
        "cut": cut_json(b.cut), "formulation": b.formulation, "nvls": nvls_bound_text(b.nvls_why),
        "rates_gbps": {name: to_GBps(rate) for name, rate in b.rates},
        "trees": [packing_json(p) for p in b.packings],
    }


# -------------------------------------------------------------------------------- check
def check_json(check) -> dict:
    """``dgxtopo check --json``: ``{"rows": [{"size_bytes", "measured_time_us",
    "predicted_time_us", "measured_busbw_gbps", "predicted_busbw_gbps", "time_error",
    "busbw_error"}], "median_abs_time_error", "max_abs_time_error"}``, and ``"notes"`` (what was
    assumed) when there are any; a run that does not show its ``-g`` adds ``"measurement_modes":
    {"better_gpus_per_thread", "below_bytes", "rows", "median_abs_time_error": {"1", "N"}}``
    (both readings compared: :attr:`models.studies.calibration.CaveatCode.MODE_FIT`)."""
    from ..studies.calibration import CaveatCode  # imported by the check that made ``check``

    modes = [c for c in check.caveats if c.code is CaveatCode.MODE_FIT]
    return {
        "rows": [{"size_bytes": r.size, "measured_time_us": to_us(r.measured_time),
                  "predicted_time_us": to_us(r.predicted_time),
                  "measured_busbw_gbps": to_GBps(r.measured_busbw),
                  "predicted_busbw_gbps": to_GBps(r.predicted_busbw),
                  "time_error": r.time_error, "busbw_error": r.busbw_error} for r in check.rows],
        "median_abs_time_error": check.median_abs_time_error,
        "max_abs_time_error": check.max_abs_time_error,
        **({"notes": list(caveat_texts(check.caveats))} if check.caveats else {}),
        **({"measurement_modes": _modes_json(modes[0])} if modes else {}),
    }


def _modes_json(c) -> dict:
    return {"better_gpus_per_thread": c.gpus_per_thread, "below_bytes": c.below, "rows": c.rows,
            "median_abs_time_error": {"1": c.median_error_g1, str(c.count): c.median_error_gn}}


# ------------------------------------------------------------------------------- whatif
def sweep_json(sweep, top: int | None = None) -> dict:
    """``dgxtopo whatif --json`` of a :class:`models.studies.sweep.Sweep`: ``{"baseline":
    {"busbw_gbps", "time_us"}, "count", "rows": [{"failed", "busbw_gbps", "time_us", "loss"}, ...]}``,
    ``count`` every failure case ranked, ``rows`` cut to the ``top`` worst; an infinite time (the
    failure disconnects the job) is null."""
    def time_us(t):
        return None if math.isinf(t) else float(to_us(t))
    rows = [{"failed": r.label, "busbw_gbps": float(to_GBps(r.busbw)), "time_us": time_us(r.time),
             "loss": r.loss} for r in sweep.rows]
    return {"baseline": {"busbw_gbps": float(to_GBps(sweep.baseline_busbw)), "time_us": time_us(sweep.baseline_time)},
            "count": len(rows), "rows": rows[:top]}


# ------------------------------------------------------------------ files written
def _file(path, nbytes) -> dict:
    return {"path": None if path is None else str(path), "file_bytes": None if nbytes is None else int(nbytes)}


def export_json(G, path, file_format: str, nbytes: int) -> dict:
    """``dgxtopo export --json``: ``{"path", "file_bytes", "format", "fabric"}``, ``fabric`` the
    exported fabric's summary as ``dgxtopo systems --json`` gives each system."""
    return {**_file(path, nbytes), "format": file_format, "fabric": summarize(G).to_dict()}


def import_json(G, *, source: str, what: str, nvswitch_origin: str, pcie_origin: str, path,
                nbytes) -> dict:
    """``dgxtopo import --json``: ``{"source", "format", "path", "file_bytes", "nvswitches_from",
    "pcie_switches_from", "fabric"}``; ``path`` and ``file_bytes`` are null when nothing was
    written, ``fabric`` is the imported fabric's summary (as ``dgxtopo systems --json``)."""
    return {"source": source, "format": what, **_file(path, nbytes), "nvswitches_from": nvswitch_origin,
            "pcie_switches_from": pcie_origin, "fabric": summarize(G).to_dict()}


def report_json(path, nbytes: int, systems) -> dict:
    """``dgxtopo report --json``: ``{"path", "file_bytes", "systems"}``, the display names of the
    systems compared."""
    return {**_file(path, nbytes), "systems": list(systems)}


def calibration_file_json(calibration) -> dict:
    """The file ``dgxtopo calibrate --out`` writes (``json.dumps(..., indent=2)``) for a
    :class:`models.studies.calibration.Calibration`: ``{"schema", "version", "system", "units",
    "parameters", "fitted", "residuals", "sources", "method", "notes"}``, read back by
    :meth:`models.studies.calibration.Calibration.from_json`."""
    from ..studies.calibration import SCHEMA, SCHEMA_VERSION

    model = calibration.model
    return {
        "schema": SCHEMA, "version": SCHEMA_VERSION, "system": calibration.system,
        "units": "SI: seconds for launch_per_gpu and floor, efficiencies dimensionless",
        "parameters": {"launch_per_gpu": model.launch_per_gpu, "floor": model.floor,
                       "transfer_efficiency": model.transfer_efficiency,
                       **{f"efficiency:{k}": v for k, v in model.efficiency_overrides}},
        "fitted": [{"name": n, "value": v, "lower": lo, "upper": hi} for n, v, lo, hi in calibration.fitted],
        "residuals": {"before": calibration.before, "after": calibration.after},
        "sources": list(calibration.sources), "method": calibration.method,
        "notes": list(caveat_texts(calibration.caveats)),
    }


def calibration_json(path, nbytes: int, calibration: dict) -> dict:
    """``dgxtopo calibrate --json``: ``{"path", "file_bytes", "calibration"}``, ``calibration``
    the file's content (its ``parameters``, ``fitted`` constants and ``residuals``)."""
    return {**_file(path, nbytes), "calibration": calibration}


def simulation_json(result, *, top_links: int = 10) -> dict:
    """``dgxtopo simulate --json``: ``step_time_s``, ``exposed_comm_s``, ``exposed_s`` and
    ``critical_s`` per kind, ``critical_path``, ``events``, the busiest ``links`` (``capacity_gbps``,
    mean and peak share) and every task (``id``, ``op``, ``kind``, ``gpus``, ``start_s``, ``end_s``,
    ``data_start_s``, ``alone_s``, ``bytes``, ``algorithm``, ``protocol``, ``stream``, ``critical``,
    ``copies``).

    Parameters
    ----------
    result : models.predict.simulate.SimulationResult
    top_links : int

    Examples
    --------
    >>> import topo
    >>> from models.predict.simulate import simulate, task_graph
    >>> r = simulate(topo.build("dgxh100"), task_graph({"tasks": [
    ...     {"id": "ar", "op": "all_reduce", "gpus": [0, 1], "bytes": 2**20}]}))
    >>> data = simulation_json(r)
    >>> data["tasks"][0]["id"], data["tasks"][0]["gpus"], data["step_time_s"] == data["tasks"][0]["end_s"]
    ('ar', [0, 1], True)
    """
    return {"fabric": result.fabric, "name": result.name, "step_time_s": result.step_time,
            "exposed_comm_s": result.exposed_comm, "exposed_s": dict(result.exposed),
            "critical_s": result.critical_by_kind(), "critical_path": list(result.critical_path),
            "events": result.events,
            "links": [{"edge": [str(u) for u in link.edge], "capacity_gbps": float(to_GBps(link.capacity)),
                       "mean_utilisation": link.mean,
                       "peak_utilisation": None if math.isnan(link.peak) else link.peak}
                      for link in result.links[:top_links]],
            "tasks": [{"id": t.id, "op": t.op, "kind": t.kind, "gpus": list(t.gpus), "start_s": t.start,
                       "end_s": t.end, "data_start_s": t.data_start, "alone_s": t.alone, "bytes": t.nbytes,
                       "algorithm": t.algorithm, "protocol": t.protocol, "stream": t.stream,
                       "critical": t.critical, "copies": t.copies} for t in result.tasks]}


def task_graph_json(graph) -> dict:
    """A :class:`models.predict.simulate.TaskGraph` in the JSON form
    :func:`models.predict.simulate.task_graph` (and ``dgxtopo simulate --graph``) reads:
    ``{"name", "tasks": [{"id", "op", ...}]}`` (``name`` only when the graph has one; each task
    with the keys its op takes and the optional ones it sets).

    Examples
    --------
    >>> from models.predict.simulate import task_graph
    >>> g = task_graph({"tasks": [{"id": "s", "op": "send", "src": 0, "dst": 1, "bytes": 8}]})
    >>> task_graph_json(g)
    {'tasks': [{'id': 's', 'op': 'send', 'src': 0, 'dst': 1, 'bytes': 8}]}
    """
    out = []
    for t in graph.tasks:
        d = {"id": t.id, "op": t.op}
        if t.op == "send":
            d.update(src=t.gpus[0], dst=t.gpus[1], bytes=t.nbytes)
        elif t.op == "compute":
            d.update(gpus=list(t.gpus), seconds=t.seconds)
        else:
            d.update(gpus=list(t.gpus), bytes=t.nbytes)
        if t.root is not None:
            d["root"] = t.root
        if t.after:
            d["after"] = list(t.after)
        if t.kind:
            d["kind"] = t.kind
        if t.stream:
            d["stream"] = t.stream
        if t.images:
            d["images"] = [list(i) for i in t.images]
        out.append(d)
    return {"name": graph.name, "tasks": out} if graph.name else {"tasks": out}


def schedule_check_json(schedule, result, *, source: str) -> dict:
    """``dgxtopo schedule check --json``: the schedule that holds, as the summary gives it."""
    return {"source": source, **result.to_records()[0], "coll": schedule.coll, "inplace": schedule.inplace,
            "min_bytes": schedule.min_bytes, "max_bytes": schedule.max_bytes, "nchannels": schedule.nchannels,
            "dialect": schedule.dialect.name, "verdict": "ok"}


def schedule_evaluation_json(evaluation, *, source: str) -> dict:
    """``dgxtopo schedule evaluate --json``: the figures each step was priced with, and one row per size."""
    return {"source": source, "pricing": evaluation.pricing.to_records()[0], "rows": evaluation.to_records()}
