"""The tree packing written as a schedule, over every DGX-1 and DGX-1V GPU set where the bound beats
NCCL: how close the evaluated schedule comes to the bound. Run by hand (minutes of CPU; not by the
tests, which check three sets).

Run: python examples/packing_sweep_benchmark.py [--system dgx1v] [--size 1G]
[--collective all_gather|reduce_scatter|all_reduce] [--sized]

For each class of GPU sets under the fabric's symmetry (its NVLink graph's), the bound is the
collective's bound on the NVLinks at the capacities the evaluator times with (NCCL's capacity of
each link times what NCCL's kernels achieve over it: the packing's trees use NVLink, and the
runtime's connections NCCL's paths; ``models.schedules.export`` says why this bound); sets where it
beats NCCL's predicted busbw by more than 1 % are written (``models.schedules.packing_schedule``)
and evaluated (``evaluate_schedule``); ``--sized`` writes each for the size
(``models.schedules.export.sized_chunks``: the chunk count that times fastest there). Prints each set, the bound, NCCL, the schedule's busbw and
its share of the bound, then the least and the median.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", default="dgx1v")
    parser.add_argument("--size", default="1G")
    parser.add_argument("--collective", default="all_gather", choices=("all_gather", "reduce_scatter", "all_reduce"))
    parser.add_argument("--sized", action="store_true", help="write each schedule for --size (its chunks timed there)")
    args = parser.parse_args()
    fabric = prepare(topo.build(args.system))
    nodes = topo.gpus(fabric.G)
    collective = args.collective
    pricing, _ = schedule_pricing(fabric, "Simple", collective, tuple(range(len(nodes))))
    H = achieved_graph(fabric, pricing.achieved_ratio)
    symmetry = fabric.symmetry.graph(("nvlink",))
    seen, shares = set(), []
    start = time.process_time()
    for k in range(2, len(nodes) + 1):
        for combo in itertools.combinations(range(len(nodes)), k):
            key = symmetry.key([nodes[i] for i in combo], None)
            if key in seen:
                continue
            seen.add(key)
            gpus = list(combo)
            limit = bound(H, collective, args.size, gpus, edge_kinds=["nvlink"], nccl=False).bound_busbw
            nccl = float(estimate(fabric, collective, args.size, gpus).busbw)
            if limit <= 1.01 * nccl:
                continue
            schedule = (sized_chunks(fabric, collective, gpus, args.size)[0] if args.sized
                        else packing_schedule(fabric, collective, gpus))
            busbw = evaluate_schedule(fabric, schedule, args.size, gpus, nccl=False, bound=False).points[0].busbw
            shares.append(busbw / limit)
            print(f"{topo.select.format_gpu_ids(combo):>14}  bound {limit / 1e9:6.2f}  NCCL {nccl / 1e9:6.2f}  "
                  f"schedule {busbw / 1e9:6.2f} GB/s  {busbw / limit:6.1%} of the bound  "
                  f"({schedule.nchunksperloop // len(gpus)} chunks a GPU)", flush=True)
    print(f"{len(shares)} of {len(seen)} classes where the bound beats NCCL: the schedule reaches "
          f"{min(shares):.1%} of the bound at least, {statistics.median(shares):.1%} in the median, 95 % on "
          f"{sum(s >= 0.95 for s in shares)} ({time.process_time() - start:.0f} s CPU)")


if __name__ == "__main__":
    main()
