"""A simulated step and a decomposed collective in words and JSON.

The numbers come from :mod:`models.predict.simulate` (:class:`~models.predict.simulate.SimulationResult`)
and :mod:`models.predict.decompose` (:class:`~models.predict.decompose.CollectiveSteps`); this module
only writes them: :func:`simulation_table` (what ``dgxtopo simulate`` prints), :func:`simulation_json`
(its ``--json``) and :func:`steps_text` (a collective's phases).

Examples
--------
>>> import topo
>>> from models.predict.simulate import simulate, task_graph
>>> r = simulate(topo.build("dgxh100"), task_graph({"tasks": [
...     {"id": "ar", "op": "all_reduce", "gpus": [0, 1, 2, 3], "bytes": 2**26, "kind": "dp_comm"},
...     {"id": "mm", "op": "compute", "gpu": 0, "seconds": 1e-3, "after": ["ar"]}]}))
>>> print(simulation_table(r, top_links=1))
task graph on DGX H100: step 1.320 ms (2 tasks, 3 event times)
  kind            busy [ms]   on critical path [ms]
  compute             1.000        1.000
  dp_comm             0.320        0.320
  exposed communication: 0.320 ms of the step
  busiest links (mean / peak share of capacity):
    gpu0->nvswitch0 (125 GB/s): 21.4% / 97.1%
>>> sorted(simulation_json(r))[:4]
['critical_path', 'critical_s', 'events', 'exposed_comm_s']
"""

from __future__ import annotations

import math

from topo.select import format_gpu_ids
from topo.units import to_GBps, to_us

__all__ = ["simulation_table", "simulation_json", "steps_text"]


def simulation_json(result, *, top_links: int = 10) -> dict:
    """A simulated step, JSON-ready: ``step_time_s``, ``exposed_comm_s``, ``exposed_s`` per kind,
    ``critical_s`` per kind, ``critical_path``, ``events``, ``links`` (the busiest ``top_links``)
    and ``tasks`` (:meth:`~models.predict.simulate.SimulationResult.to_records`).

    Parameters
    ----------
    result : models.predict.simulate.SimulationResult
    top_links : int
    """
    return {"fabric": result.fabric, "name": result.name, "step_time_s": result.step_time,
            "exposed_comm_s": result.exposed_comm, "exposed_s": dict(result.exposed),
            "critical_s": result.critical_by_kind(), "critical_path": list(result.critical_path),
            "events": result.events,
            "links": [{"edge": [str(u) for u in link.edge], "capacity_Bps": link.capacity,
                       "mean_utilisation": link.mean,
                       "peak_utilisation": None if math.isnan(link.peak) else link.peak}
                      for link in result.links[:top_links]],
            "tasks": result.to_records()}


def simulation_table(result, *, top_links: int = 3) -> str:
    """A simulated step in words: its time, where it goes by kind, the busiest links.

    Parameters
    ----------
    result : models.predict.simulate.SimulationResult
    top_links : int
    """
    lines = [f"{result.name or 'task graph'} on {result.fabric}: step {result.step_time * 1e3:.3f} ms "
             f"({len(result.tasks)} tasks, {result.events} event times)"]
    critical = result.critical_by_kind()
    busy = result.busy_by_kind()
    lines.append("  kind            busy [ms]   on critical path [ms]")
    for kind in sorted(busy, key=lambda k: -critical.get(k, 0.0)):
        lines.append(f"  {kind:14} {busy[kind] * 1e3:10.3f}   {critical.get(kind, 0.0) * 1e3:10.3f}")
    lines.append(f"  exposed communication: {result.exposed_comm * 1e3:.3f} ms of the step")
    if result.links:
        lines.append("  busiest links (mean / peak share of capacity):")
        for link in result.links[:top_links]:
            u, v = link.edge
            peak = "-" if math.isnan(link.peak) else f"{link.peak:.1%}"
            lines.append(f"    {u}->{v} ({to_GBps(link.capacity):.0f} GB/s): {link.mean:.1%} / {peak}")
    return "\n".join(lines)


def steps_text(steps) -> str:
    """One decomposed operation in words: what NCCL runs, its start-up (with NCCL's latency
    terms) and its data phase, and the link it fills most.

    Parameters
    ----------
    steps : models.predict.decompose.CollectiveSteps

    Examples
    --------
    >>> import topo
    >>> from models.predict.decompose import Decomposer
    >>> print(steps_text(Decomposer(topo.build("dgxh100")).collective("all_gather", 2**30, range(8))))
    all_gather of 1073741824 B on GPUs 0-7: ring/Simple, 12 channels
      start-up 32.20 us (NCCL latency: base 8.40 us; 7 x 3.40 us)
      data 2718.47 us alone, on 64 links
      busiest link gpu0->nvswitch0: 97.1% of its capacity alone
    """
    latency = ""
    if steps.latency is not None:
        terms = [f"base {to_us(steps.latency.base):.2f} us"] + [
            f"{term.count:g} x {to_us(term.per_step):.2f} us" for term in steps.latency.terms if term.count]
        latency = f" (NCCL latency: {'; '.join(terms)})"
    lines = [f"{steps.op} of {steps.nbytes} B on GPUs {format_gpu_ids(steps.gpus)}: "
             f"{steps.algorithm}/{steps.protocol}, {steps.nchannels} channels",
             f"  start-up {to_us(steps.startup):.2f} us{latency}",
             f"  data {to_us(steps.transfer):.2f} us alone, on {len(steps.edges)} links"]
    if len(steps.edges):
        top = max(range(len(steps.edges)), key=lambda i: steps.usage[i])
        u, v = steps.edges[top]
        lines.append(f"  busiest link {u}->{v}: {steps.usage[top]:.1%} of its capacity alone")
    return "\n".join(lines)
