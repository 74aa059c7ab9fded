"""The tree packing written as a schedule, over every DGX-1 and DGX-1V GPU set where the bound beats
NCCL: how close the evaluated schedule comes to the bound. Run by hand (tens of CPU minutes for
every collective on both systems; not by the tests, which check the worst sets).

Run: python examples/packing_sweep_benchmark.py [--system dgx1v[,dgx1]] [--size 1G]
[--collective all_gather[,reduce_scatter,all_reduce]] [--sized] [--gpus 0,2-6]

For each class of GPU sets under the fabric's symmetry (its NVLink graph's), the bound is the
collective's bound on the NVLinks at the capacities the evaluator times with (NCCL's capacity of
each link times what NCCL's kernels achieve over it: the packing's trees use NVLink, and the
runtime's connections NCCL's paths; ``models.schedules.export`` says why this bound); sets where it
beats NCCL's predicted busbw by more than 1 % are written (``models.schedules.packing_schedule``)
and evaluated (``evaluate_schedule``); ``--sized`` writes each for the size
(``models.schedules.export.sized_chunks``: the chunk count that times fastest there). Prints each
set, the bound, NCCL, the schedule's busbw and its share of the bound, the CPU seconds of writing
the schedule and of evaluating it, then per system and collective the least and the median share.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)
import topo
from models.engine.fabric import prepare
from models.predict.collectives import estimate
from models.schedules import evaluate_schedule, packing_schedule
from models.schedules.export import sized_chunks
from models.schedules.evaluate import achieved_graph, schedule_pricing
from models.studies.bounds import bound

COLLECTIVES = ("all_gather", "reduce_scatter", "all_reduce")


def classes(fabric, only=None) -> list:
    """One GPU set of each class under the NVLink graph's symmetry (2 GPUs up to all), or ``only``."""
    nodes = topo.gpus(fabric.G)
    if only is not None:
        return [tuple(topo.select.parse_gpu_ids(only))]
    symmetry = fabric.symmetry.graph(("nvlink",))
    seen, found = set(), []
    for k in range(2, len(nodes) + 1):
        for combo in itertools.combinations(range(len(nodes)), k):
            key = symmetry.key([nodes[i] for i in combo], None)
            if key not in seen:
                seen.add(key)
                found.append(combo)
    return found


def sweep(system: str, collective: str, size: str, sized: bool, only=None) -> None:
    fabric = prepare(topo.build(system))
    nodes = topo.gpus(fabric.G)
    pricing, _ = schedule_pricing(fabric, "Simple", collective, tuple(range(len(nodes))))
    H = achieved_graph(fabric, pricing.achieved_ratio)
    sets = classes(fabric, only)
    shares, cpu = [], 0.0
    for combo in sets:
        gpus = list(combo)
        limit = bound(H, collective, size, gpus, edge_kinds=["nvlink"], nccl=False).bound_busbw
        nccl = float(estimate(fabric, collective, size, gpus).busbw)
        if limit <= 1.01 * nccl:
            continue
        start = time.process_time()
        schedule = (sized_chunks(fabric, collective, gpus, size)[0] if sized
                    else packing_schedule(fabric, collective, gpus))
        written = time.process_time()
        busbw = evaluate_schedule(fabric, schedule, size, gpus, nccl=False, bound=False).points[0].busbw
        evaluated = time.process_time()
        cpu += evaluated - start
        shares.append(busbw / limit)
        print(f"{system:>6} {collective:>14} {topo.select.format_gpu_ids(combo):>14}  bound {limit / 1e9:6.2f}  "
              f"NCCL {nccl / 1e9:6.2f}  schedule {busbw / 1e9:6.2f} GB/s  {busbw / limit:6.1%} of the bound  "
              f"({schedule.nchunksperloop // len(gpus)} chunks a GPU; {schedule.name}; "
              f"written {written - start:4.1f} s, evaluated {evaluated - written:4.1f} s CPU)", flush=True)
    if shares:
        print(f"{system} {collective}: {len(shares)} of {len(sets)} classes where the bound beats NCCL: the schedule "
              f"reaches {min(shares):.1%} of the bound at least, {statistics.median(shares):.1%} in the median, "
              f"95 % on {sum(s >= 0.95 for s in shares)} ({cpu:.0f} s CPU)", flush=True)
    else:
        print(f"{system} {collective}: none of {len(sets)} classes where the bound beats NCCL", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", default="dgx1v", help="systems, comma-separated")
    parser.add_argument("--size", default="1G")
    parser.add_argument("--collective", default="all_gather", help=f"of {', '.join(COLLECTIVES)}, comma-separated")
    parser.add_argument("--gpus", default=None, help="one GPU set instead of every class")
    parser.add_argument("--sized", action="store_true", help="write each schedule for --size (its chunks timed there)")
    args = parser.parse_args()
    for system in args.system.split(","):
        for collective in args.collective.split(","):
            if collective not in COLLECTIVES:
                parser.error(f"expected collectives of {', '.join(COLLECTIVES)}, received {collective!r}")
            sweep(system, collective, args.size, args.sized, args.gpus)


if __name__ == "__main__":
    main()
