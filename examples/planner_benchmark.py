"""How long the planner's analytical search takes: deepseek-v3 on clusters of DGX H100 and GB200 NVL72.

Run: python examples/planner_benchmark.py [--quick] [--systems 32xdgxh100,128xdgxh100,4xgb200nvl72]

Times, in CPU seconds of this process (``time.process_time``: on a busy machine the wall clock
also counts other programs), :func:`models.studies.planner.search` of deepseek-v3 with
``simulate=0`` (the analytical first pass alone, every layout ranked) on each system, from the
built graph: ``prepare`` (the fabric prepared once), ``search`` (every layout evaluated), and
how many layouts and distinct collective estimates it took (the prepared fabric's memo of group
envelopes and all-to-alls, :mod:`models.studies.planner.placement`). ``--quick`` runs
32xdgxh100 alone. Issue 40's target: 1,024 H100 (128xdgxh100) in under 30 s on two cores.
"""

from __future__ import annotations

import argparse
import time

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)
import topo
from models import PreparedFabric
from models.studies.planner import search

SYSTEMS = ("32xdgxh100", "4xgb200nvl72", "128xdgxh100")


def one_search(system: str) -> dict:
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
    return {"system": system, "gpus": gpus, "prepare": prepared, "search": searched, "layouts": len(result.plans),
            "envelopes": kinds.get("planner.envelope", 0), "alltoalls": kinds.get("planner.alltoall", 0),
            "best": best.layout.label(), "step_s": best.step_time}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="32xdgxh100 alone")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated systems")
    args = parser.parse_args(argv)
    systems = ("32xdgxh100",) if args.quick else tuple(s for s in args.systems.split(",") if s)
    print(f"{'system':>14} {'GPUs':>5} {'prepare s':>9} {'search s':>9} {'layouts':>7} {'envelopes':>9} "
          f"{'all-to-alls':>11}  best (step s)")
    for system in systems:
        r = one_search(system)
        print(f"{r['system']:>14} {r['gpus']:>5} {r['prepare']:>9.2f} {r['search']:>9.2f} {r['layouts']:>7} "
              f"{r['envelopes']:>9} {r['alltoalls']:>11}  {r['best']} ({r['step_s']:.3f})", flush=True)


if __name__ == "__main__":
    main()
