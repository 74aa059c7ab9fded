"""Benchmark of clusters (issue 6): build and estimate 16 to 1,024 DGX nodes, by hand.

Run: python examples/cluster_benchmark.py [--largest N]

For each cluster: the time to build the fabric (every node, NIC and switch materialised, then
validated) and the time of one all_reduce estimate over every GPU at two sizes (the channel
search runs once per node shape: identical hosts are searched once).
"""

from __future__ import annotations

import argparse
import time

import topo
from models.collectives import estimate


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--largest", type=int, default=1024, help="hosts of the largest cluster")
    args = parser.parse_args(argv)
    for spec in ("16xdgx2", "128xdgx1v", f"{args.largest}xdgx1v", f"{args.largest}xdgx2"):
        start = time.perf_counter()
        G = topo.build(spec)
        built = time.perf_counter() - start
        start = time.perf_counter()
        e = estimate(G, "all_reduce", [2**20, 2**30])
        estimated = time.perf_counter() - start
        print(f"{spec:>12}: {len(topo.gpus(G)):6d} GPUs, {G.number_of_nodes():6d} nodes, "
              f"{G.number_of_edges():7d} edges; build {built:5.2f} s, estimate {estimated:5.2f} s; "
              f"1 GiB busbw {e.busbw[1] / 1e9:6.1f} GB/s ({e.algorithm[1]}/{e.protocol[1]})")


if __name__ == "__main__":
    main()
