"""Benchmark of issue 41's speed target for schedules, run by hand (not by the tests).

Run: python examples/schedule_check_benchmark.py [--repeat N] [--chunks K] [--size SIZE]

Builds a ring all_gather of 8 GPUs over 8 channels with K chunks per rank (default 139: 10,008
steps, 158 per threadblock, within the runtime's 256), writes it as MSCCL XML, and prints the CPU
time (``time.process_time``, the best of ``--repeat`` runs; the machine may be shared) of reading
that XML, of checking the schedule (limits, dependencies, matching, races, the all_gather's
postcondition) and of evaluating it on a DGX A100 at one size (default 1 GiB: the 1,112 chunks of
a loop hold 1.09 GiB of 1 MiB slices, so the runtime runs one loop; NCCL's estimate and the bound
left out, they are the ``collective`` and ``bound`` commands' work). Target: under 2 s for
checking and evaluating.
"""

from __future__ import annotations

import argparse
import time

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)
import topo
from models.engine.fabric import prepare
from models.schedules import check_schedule, evaluate_schedule, parse_msccl, to_msccl_xml
from models.schedules.ring import ring_all_gather


def cpu_seconds(fn) -> float:
    """The CPU time of one call of ``fn``."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=139)
    parser.add_argument("--size", default="1G")
    args = parser.parse_args()
    schedule = ring_all_gather(8, chunks=args.chunks, channels=8)
    text = to_msccl_xml(schedule)
    parsed = parse_msccl(text)
    result = check_schedule(parsed)
    fabric = prepare(topo.build("dgxa100"))
    evaluation = evaluate_schedule(fabric, parsed, args.size, nccl=False, bound=False)
    read = min(cpu_seconds(lambda: parse_msccl(text)) for _ in range(args.repeat))
    checked = min(cpu_seconds(lambda: check_schedule(parsed)) for _ in range(args.repeat))
    timed = min(cpu_seconds(lambda: evaluate_schedule(fabric, parsed, args.size, nccl=False, bound=False))
                for _ in range(args.repeat))
    point = evaluation.points[0]
    print(f"ring all_gather, 8 GPUs x 8 channels, {result.steps} steps ({len(text) / 1e6:.1f} MB of XML)")
    print(f"  read:     {read:.3f} s CPU")
    print(f"  check:    {checked:.3f} s CPU")
    print(f"  evaluate: {timed:.3f} s CPU ({point.nbytes} B on DGX A100: {point.loops} loop(s), busbw "
          f"{point.busbw / 1e9:.1f} GB/s)")
    print(f"  check and evaluate: {checked + timed:.3f} s CPU (target: < 2 s)")


if __name__ == "__main__":
    main()
