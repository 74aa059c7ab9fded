"""How long the simulator takes: a llama3-70b training step on clusters of DGX H100.

Run: python examples/simulate_benchmark.py [--quick]

Times, in CPU seconds of this process (``time.process_time``: on a busy machine the wall clock
also counts other programs), each stage of simulating one step of llama3-70b (tp 8, pp 4,
full recomputation, 8 micro-batches per pipeline unless said otherwise):

* ``plan``: the planner's layout and placement (:func:`models.studies.planner.plan` with
  ``simulate=0``, its analytical first pass: this benchmark times the simulation itself);
* ``graph``: the step's task graph (:func:`models.studies.stepgraph.step_graph`, data-parallel
  replicas folded);
* ``decompose``: every communication task's NCCL decomposition, one estimate per distinct
  group shape (:class:`models.predict.decompose.Decomposer`);
* ``simulate``: the event loop.

Two sweeps: the GPUs (data-parallel degree 2 to 32, 64 to 1,024 GPUs) at 8 micro-batches,
and the micro-batches (4 to 32) on 64 GPUs. ``--quick`` runs the smallest case of each.
"""

from __future__ import annotations

import argparse
import time

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)
import topo
from models.predict.decompose import Decomposer
from models.predict.simulate import simulate
from models.studies.planner import plan
from models.studies.stepgraph import step_graph


def _timed(function, *args, **kwargs):
    start = time.process_time()
    value = function(*args, **kwargs)
    return value, time.process_time() - start


def one_step(hosts: int, dp: int, micro_batches: int) -> dict:
    G = topo.build(f"{hosts}xdgxh100")
    p, t_plan = _timed(plan, "llama3-70b", G, tp=8, pp=4, dp=dp, zero=0, global_batch=dp * micro_batches,
                       recompute="full", simulate=0)  # the layout (and its analytical step), not a simulation
    graph, t_graph = _timed(step_graph, p, G)
    decomposer, t_decompose = _timed(lambda: _prepared(G, graph))
    result, t_sim = _timed(simulate, G, graph, decomposer=decomposer)
    return {"gpus": 8 * hosts, "micro_batches": micro_batches, "tasks": len(graph), "events": result.events,
            "plan": t_plan, "graph": t_graph, "decompose": t_decompose, "simulate": t_sim,
            "step_ms": result.step_time * 1e3, "plan_ms": p.step_time * 1e3}


def _prepared(G, graph):
    d = Decomposer(G)
    d.prepare((t.op, gpus, t.nbytes) for t in graph.tasks if t.op != "compute" for gpus in (t.gpus,) + t.images)
    return d


def _print(rows) -> None:
    print(f"{'GPUs':>5} {'mb':>3} {'tasks':>7} {'events':>7} {'plan':>6} {'graph':>6} {'decomp':>7} {'sim':>6} "
          f"{'total':>6}   step [ms] (planner's)")
    for r in rows:
        total = r["plan"] + r["graph"] + r["decompose"] + r["simulate"]
        print(f"{r['gpus']:5d} {r['micro_batches']:3d} {r['tasks']:7d} {r['events']:7d} {r['plan']:6.2f} "
              f"{r['graph']:6.2f} {r['decompose']:7.2f} {r['simulate']:6.2f} {total:6.2f}   "
              f"{r['step_ms']:.1f} ({r['plan_ms']:.1f})")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the smallest case of each sweep")
    args = parser.parse_args(argv)
    print("CPU seconds per stage; llama3-70b tp8 pp4 on DGX H100 clusters")
    gpus = [(8, 2)] if args.quick else [(8, 2), (32, 8), (128, 32)]
    _print([one_step(hosts, dp, 8) for hosts, dp in gpus])
    print("micro-batches on 64 GPUs")
    counts = [4] if args.quick else [4, 8, 16, 32]
    _print([one_step(8, 2, m) for m in counts])


if __name__ == "__main__":
    main()
