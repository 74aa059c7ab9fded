"""Benchmark of the P2P model: DGX-2 matrices in both modes, and a 1,024-GPU fabric.

Run from the repository root::

    python examples/p2p_benchmark.py            # everything (the 1,024-GPU part takes a while)
    python examples/p2p_benchmark.py --quick    # DGX-2 only

Prints wall-clock times (best of ``--repeat`` runs for the DGX-2 figures, one run for the
large fabric). The target of issue 3 is DGX-2 16x16, both modes, under 100 ms each.

The synthetic fabric is a two-level NVSwitch fat tree built with ``topo.parts``: 128
groups of 8 V100-SXM3 GPUs, each group wired like a DGX-2 baseboard (every GPU one link to
each of the group's 6 leaf NVSwitches); leaf switch s of every group has one link to each
of the 8 spine switches of plane s (6 planes x 8 spines). 1,024 GPUs, 768 leaves, 48
spines; every pair has 6 links' worth of NVLink (150 GB/s line rate per direction), over 6
paths inside a group and 48 across groups. It is a scaling test, not a real product.
"""

from __future__ import annotations

import argparse
import time

import networkx as nx

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)

import topo
from topo.parts import add_gpu, add_link, add_nvswitch
from topo.specs import NVSWITCHES

import models
from models.predict.maxflow import MaxFlowError, maxflow_matrix
from models.predict.p2p import MODES

GROUPS, GPUS_PER_GROUP, PLANES, SPINES_PER_PLANE = 128, 8, 6, 8


def nvswitch_fat_tree(groups: int = GROUPS) -> nx.DiGraph:
    """``groups`` x 8 GPUs on a two-level NVSwitch fat tree (see the module docstring)."""
    spec = NVSWITCHES["nvswitch1"]
    G = nx.DiGraph(name=f"fat-tree-{groups * GPUS_PER_GROUP}", system="synthetic",
                   description="synthetic two-level NVSwitch fat tree")
    switch = 0
    spines = {}
    for plane in range(PLANES):
        for k in range(SPINES_PER_PLANE):
            spines[plane, k] = f"spine{plane}_{k}"
            # A spine needs one port per group; the port count is an attribute only (baseboard 0:
            # the schema takes 0 to 16777215, a synthetic spine sits on none in particular).
            add_nvswitch(G, spines[plane, k], index=switch, ports=groups, baseboard=0,
                         model="synthetic spine")
            switch += 1
    for g in range(groups):
        members = []
        for i in range(GPUS_PER_GROUP):
            node = f"g{g}.gpu{i}"
            add_gpu(G, node, "V100-SXM3", index=i, socket=0, host=g, baseboard=0)
            members.append(node)
        for plane in range(PLANES):
            leaf = f"g{g}.leaf{plane}"
            add_nvswitch(G, leaf, index=plane, ports=spec.ports, baseboard=0, model=spec.model,
                         host=g)
            for node in members:
                add_link(G, node, leaf, spec.link)
            for k in range(SPINES_PER_PLANE):
                add_link(G, leaf, spines[plane, k], spec.link)
    topo.validate(G)
    return G


def best_of(repeat: int, function, *args, **kwargs) -> float:
    """Best wall-clock time of ``repeat`` calls. [s]"""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best


def once(function, *args, **kwargs) -> float:
    start = time.perf_counter()
    function(*args, **kwargs)
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="DGX-2 only")
    parser.add_argument("--repeat", type=int, default=20, help="runs per DGX-2 figure")
    parser.add_argument("--groups", type=int, default=GROUPS, help="groups of 8 GPUs (default 128)")
    args = parser.parse_args(argv)

    G = topo.dgx2()
    print(f"DGX-2 16x16, best of {args.repeat} (ms):")
    for mode in MODES:
        for bidirectional in (False, True):
            t = best_of(args.repeat, models.p2p_matrix, G, mode=mode, bidirectional=bidirectional)
            label = "bidirectional" if bidirectional else "unidirectional"
            print(f"  p2p_matrix mode={mode:<8} {label:<15} {t * 1e3:8.2f}")
    for bidirectional in (False, True):
        t = best_of(args.repeat, models.p2p_matrix, G, bidirectional=bidirectional, p2p=False)
        label = "bidirectional" if bidirectional else "unidirectional"
        print(f"  p2p_matrix p2p=disabled  {label:<15} {t * 1e3:8.2f}")
    print(f"  p2p_latency_matrix                        "
          f"{best_of(args.repeat, models.p2p_latency_matrix, G) * 1e3:8.2f}")
    print(f"  p2p_report (all matrices) mode=maxflow     "
          f"{best_of(args.repeat, models.p2p_report, G, mode='maxflow') * 1e3:8.2f}")
    for backend in ("networkx", "scipy"):
        try:
            t = best_of(args.repeat, maxflow_matrix, G, backend=backend)
        except MaxFlowError:  # scipy not installed
            print(f"  maxflow_matrix backend={backend:<8} (not installed)")
            continue
        print(f"  maxflow_matrix backend={backend:<8}          {t * 1e3:8.2f}")
    if args.quick:
        return 0

    start = time.perf_counter()
    F = nvswitch_fat_tree(args.groups)
    n = len(topo.gpus(F))
    print(f"\n{F.graph['name']}: {n} GPUs, {F.number_of_nodes()} nodes, "
          f"{F.number_of_edges()} directed edges, built in {time.perf_counter() - start:.2f} s")
    print("one run each (s):")
    print(f"  p2p_matrix mode=route    unidirectional {once(models.p2p_matrix, F):8.2f}")
    print(f"  p2p_matrix mode=route    bidirectional  "
          f"{once(models.p2p_matrix, F, bidirectional=True):8.2f}")
    for backend in ("networkx", "scipy"):
        try:
            t = once(maxflow_matrix, F, backend=backend)
        except MaxFlowError:  # scipy not installed
            print(f"  maxflow_matrix backend={backend:<8} (not installed)")
            continue
        print(f"  maxflow_matrix backend={backend:<8}       {t:8.2f}")
    print(f"  p2p_matrix mode=maxflow  unidirectional {once(models.p2p_matrix, F, mode='maxflow'):8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
