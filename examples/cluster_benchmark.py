"""Benchmark of clusters (issues 6 and 9): build and estimate 16 to 1,024 DGX nodes, by hand.

Run: python examples/cluster_benchmark.py [--largest N] [--skip-subsets]

For each cluster: the time to build the fabric (every node, NIC and switch materialised, then
validated), the time networkx takes to copy it (``nx.DiGraph(G)``, the yardstick of issue 9),
the time freezing a copy of it takes (:func:`models.engine.fabric.freeze_graph`, what
``models.PreparedFabric`` does to the graph it holds; well below a copy), and the time of one
all_reduce estimate over every GPU at two sizes (the channel search runs once per node shape:
identical hosts are searched once). Then an alltoall over every GPU of
64 DGX-2 (routed per host and per NIC pair, not per GPU pair) and ``subsets`` of 4 GPUs on two
DGX-1V (one NET search per host shape). Wall-clock and CPU times: on a shared machine the CPU
time is the steadier figure.
"""

from __future__ import annotations

import argparse
import time

import networkx as nx

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)
import topo
from models.engine.fabric import freeze_graph
from models.predict.collectives import estimate, subsets


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--largest", type=int, default=1024, help="hosts of the largest cluster")
    parser.add_argument("--skip-subsets", action="store_true", help="skip subsets on 2xdgx1v")
    args = parser.parse_args(argv)
    for spec in ("16xdgx2", "128xdgx1v", f"{args.largest}xdgx1v", f"{args.largest}xdgx2"):
        G, built, built_cpu = timed(lambda: topo.build(spec))
        H, copied, copied_cpu = timed(lambda: nx.DiGraph(G))
        _, frozen, frozen_cpu = timed(lambda: freeze_graph(H))
        e, estimated, estimated_cpu = timed(lambda: estimate(G, "all_reduce", [2**20, 2**30]))
        print(f"{spec:>12}: {len(topo.gpus(G)):6d} GPUs, {G.number_of_nodes():6d} nodes, "
              f"{G.number_of_edges():7d} edges; build {built:5.2f} s (cpu {built_cpu:5.2f}), "
              f"copy {copied:5.2f} s (cpu {copied_cpu:5.2f}), freeze {frozen:5.2f} s (cpu {frozen_cpu:5.2f}), "
              f"estimate {estimated:5.2f} s "
              f"(cpu {estimated_cpu:5.2f}); 1 GiB busbw {e.busbw[1] / 1e9:6.1f} GB/s "
              f"({e.algorithm[1]}/{e.protocol[1]})")
    G = topo.build("64xdgx2")
    e, wall, cpu = timed(lambda: estimate(G, "alltoall", [2**20, 2**30]))
    print(f"     64xdgx2: alltoall over {e.nranks} GPUs {wall:5.2f} s (cpu {cpu:5.2f}); 1 GiB busbw "
          f"{e.busbw[1] / 1e9:6.2f} GB/s")
    if not args.skip_subsets:
        G = topo.build("2xdgx1v")
        ranking, wall, cpu = timed(lambda: subsets(G, "all_reduce", 2**30, 4))
        print(f"     2xdgx1v: subsets of 4 GPUs, {len(ranking)} sets, "
              f"{len({r.representative for r in ranking})} estimated, {wall:5.2f} s (cpu {cpu:5.2f})")


if __name__ == "__main__":
    main()
