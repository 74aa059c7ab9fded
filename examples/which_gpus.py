"""Which 4 GPUs of a DGX-1V should this job get?

Run: python examples/which_gpus.py

Ranks every set of 4 GPUs by the busbw their all_reduce reaches (one search per symmetry class
of the hybrid cube-mesh), shows why the best set wins (its channels and the links they fill),
then answers the question a scheduler really has: GPUs 0 and 6 are busy, what is best now?
"""

from __future__ import annotations

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)
import models
import topo
from topo.units import MiB, ms, to_GBps

SIZE = 256 * MiB  # a typical gradient bucket size for a large model [bytes]


def main() -> None:
    G = topo.dgx1v()
    ranking = models.subsets(G, "all_reduce", SIZE, 4)
    best, worst = ranking[0], ranking[-1]
    print(f"{len(ranking)} sets of 4 GPUs on the DGX-1V, all_reduce of {SIZE // MiB} MiB:")
    print(f"  best  {best.gpus}: busbw {to_GBps(best.busbw):.1f} GB/s, {best.time / ms:.2f} ms, "
          f"{best.nchannels} rings")
    print(f"  worst {worst.gpus}: busbw {to_GBps(worst.busbw):.1f} GB/s, {worst.time / ms:.2f} ms "
          f"({best.busbw / worst.busbw:.1f}x slower)")
    e = models.estimate(G, "all_reduce", SIZE, gpus=best.gpus)
    print(f"\nWhy {best.gpus} wins: it is one fully connected quad of the cube-mesh, every ring "
          "stays on NVLink:")
    for c, order in enumerate(e.channels):
        print(f"  ring {c}: " + " -> ".join(str(topo.gpus(G).index(g)) for g in order))
    edges = ", ".join(f"{u}->{v}" for u, v in e.bottleneck[:4])
    print(f"  the links that bind it: {edges}{' ...' if len(e.bottleneck) > 4 else ''}")

    busy = {0, 6}
    free = [r for r in ranking if not busy & set(r.gpus)]
    choice = free[0]
    print(f"\nGPUs {sorted(busy)} are busy: {len(free)} sets remain; take {choice.gpus} "
          f"({to_GBps(choice.busbw):.1f} GB/s, {choice.busbw / best.busbw:.0%} of the best set).")


if __name__ == "__main__":
    main()
