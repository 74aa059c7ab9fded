"""Benchmark of issue 41's speed target for checking a schedule, run by hand (not by the tests).

Run: python examples/schedule_check_benchmark.py [--repeat N] [--chunks K]

Builds a ring all_gather of 8 GPUs over 8 channels with K chunks per rank (default 139: 10,008
steps, 158 per threadblock, within the runtime's 256), writes it as MSCCL XML, and prints the CPU
time (``time.process_time``, the best of ``--repeat`` runs; the machine may be shared) of reading
that XML and of checking the schedule (limits, dependencies, matching, races, the all_gather's
postcondition). Target (with evaluation, issue 41 item 3, not yet here): under 2 s.
"""

from __future__ import annotations

import argparse
import time

from models.schedules import check_schedule, parse_msccl, to_msccl_xml
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
    args = parser.parse_args()
    schedule = ring_all_gather(8, chunks=args.chunks, channels=8)
    text = to_msccl_xml(schedule)
    parsed = parse_msccl(text)
    result = check_schedule(parsed)
    read = min(cpu_seconds(lambda: parse_msccl(text)) for _ in range(args.repeat))
    checked = min(cpu_seconds(lambda: check_schedule(parsed)) for _ in range(args.repeat))
    print(f"ring all_gather, 8 GPUs x 8 channels, {result.steps} steps ({len(text) / 1e6:.1f} MB of XML)")
    print(f"  read:  {read:.3f} s CPU")
    print(f"  check: {checked:.3f} s CPU")
    print(f"  both:  {read + checked:.3f} s CPU (target with evaluation: < 2 s)")


if __name__ == "__main__":
    main()
