"""Benchmark of the collective model (issue 4 targets), run by hand, not by the tests.

Run: python examples/collective_benchmark.py [--repeat N]

- a full nccl-tests sweep, 8 B to 8 GB by factors of 2, all_reduce on the 8 GPUs of a DGX-1V
  (target: under 50 ms, channel searches included): each call on the graph prepares it anew
  and searches its channels, what a caller without a ``models.PreparedFabric`` pays each time;
  then a fabric prepared and swept once, and the sweep repeated on it (it keeps its searches);
- ``subsets`` for every size of DGX-1V set (all 255 sets; target: about a second);
- ``subsets`` for every size of DGX-2 set (all 65,535 sets; target: seconds).

Prints wall-clock times: the best of ``--repeat`` runs for the sweep, one run for the rest.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)
import topo
from models.engine.fabric import PreparedFabric
from models.predict.collectives import estimate, subsets


def best_of(repeat, fn):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    dgx1v, dgx2 = topo.dgx1v(), topo.dgx2()
    sizes = 2 ** np.arange(3, 34)  # 8 B .. 8 GiB
    sweep = best_of(args.repeat, lambda: estimate(dgx1v, "all_reduce", sizes))
    graph = topo.dgx1v()  # a graph of its own: preparing freezes it (subsets below read dgx1v)
    start = time.perf_counter()
    prepared = PreparedFabric(graph)
    estimate(prepared, "all_reduce", sizes)
    first = time.perf_counter() - start
    kept = best_of(args.repeat, lambda: estimate(prepared, "all_reduce", sizes))
    print(f"DGX-1V all_reduce sweep, {len(sizes)} sizes, 8 GPUs: {sweep * 1e3:.1f} ms (searches included); "
          f"prepared and swept {first * 1e3:.1f} ms, then {kept * 1e3:.2f} ms a sweep")

    start = time.perf_counter()
    count = sum(len(subsets(dgx1v, "all_reduce", 2**30, k)) for k in range(1, 9))
    print(f"DGX-1V subsets, every size: {count} sets in {time.perf_counter() - start:.2f} s")

    start = time.perf_counter()
    count = sum(len(subsets(dgx2, "all_reduce", 2**30, k)) for k in range(1, 17))
    print(f"DGX-2 subsets, every size: {count} sets in {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
