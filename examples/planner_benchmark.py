"""How long the planner's analytical search takes: deepseek-v3 on clusters of DGX H100 and GB200 NVL72.

Run: python examples/planner_benchmark.py [--quick] [--simulate] [--systems 32xdgxh100,128xdgxh100,4xgb200nvl72]

Times, in CPU seconds of this process (``time.process_time``: on a busy machine the wall clock
also counts other programs), :func:`models.studies.planner.search` of deepseek-v3 with
``simulate=0`` (the analytical first pass alone, every layout ranked) on each system, from the
built graph: ``prepare`` (the fabric prepared once), ``search`` (every layout evaluated), and
how many layouts and distinct collective estimates it took (the prepared fabric's memo of group
envelopes and all-to-alls, :mod:`models.studies.planner.placement`). ``--quick`` runs
32xdgxh100 alone. ``--simulate`` also times the simulation of the best layout
(:func:`models.studies.planner.parallel_graph.simulate_planned`, within the planner's default
budget :data:`models.studies.planner.PLAN_MAX_EVENTS` or the three events a task the layout
needs above it: ``simulate s``, its step and its tasks).
Issue 40's targets: 1,024 H100 (128xdgxh100) searched in under 30 s and its best layout simulated
in under 60 s, on two cores.
"""

from __future__ import annotations

import argparse
import time

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)
import topo
from models import PreparedFabric
from models.studies.planner import PLAN_MAX_EVENTS, search
from models.studies.planner.parallel_graph import plan_step_graph_size, simulate_planned

SYSTEMS = ("32xdgxh100", "4xgb200nvl72", "128xdgxh100")


def one_search(system: str, simulate: bool = False) -> dict:
    G = topo.build(system)
    start = time.process_time()
    fabric = PreparedFabric(G)
    prepared = time.process_time() - start
    gpus = min(len(topo.gpus(G)), 1024)
    result = search("deepseek-v3", fabric, gpus=list(range(gpus)) if gpus < len(topo.gpus(G)) else None,
                    simulate=0)
    searched = time.process_time() - start - prepared
    kinds: dict = {}
    for key in fabric.memo:
        if isinstance(key, tuple) and key and key[0] in ("planner.envelope", "planner.alltoall"):
            kinds[key[0]] = kinds.get(key[0], 0) + 1
    best = result.best
    out = {"system": system, "gpus": gpus, "prepare": prepared, "search": searched, "layouts": len(result.plans),
           "envelopes": kinds.get("planner.envelope", 0), "alltoalls": kinds.get("planner.alltoall", 0),
           "best": best.layout.label(), "step_s": best.step_time}
    if simulate:
        out["tasks"] = plan_step_graph_size(best)
        start = time.process_time()  # within the default budget, or the budget the layout needs (3 events a task)
        budget = max(PLAN_MAX_EVENTS, 3 * out["tasks"])
        out["simulated_s"] = simulate_planned(best, fabric.G, max_events=budget).step_time
        out["simulate"] = time.process_time() - start
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="32xdgxh100 alone")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated systems")
    parser.add_argument("--simulate", action="store_true", help="also simulate the best layout")
    args = parser.parse_args(argv)
    systems = ("32xdgxh100",) if args.quick else tuple(s for s in args.systems.split(",") if s)
    print(f"{'system':>14} {'GPUs':>5} {'prepare s':>9} {'search s':>9} {'layouts':>7} {'envelopes':>9} "
          f"{'all-to-alls':>11}  best (step s)")
    for system in systems:
        r = one_search(system, args.simulate)
        print(f"{r['system']:>14} {r['gpus']:>5} {r['prepare']:>9.2f} {r['search']:>9.2f} {r['layouts']:>7} "
              f"{r['envelopes']:>9} {r['alltoalls']:>11}  {r['best']} ({r['step_s']:.3f})", flush=True)
        if args.simulate:
            print(f"{'':>14} simulate s {r['simulate']:.2f}: {r['tasks']:,} tasks, simulated step "
                  f"{r['simulated_s']:.3f} s", flush=True)


if __name__ == "__main__":
    main()
