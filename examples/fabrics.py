"""An architect's first look: every built-in DGX fabric side by side, and a failure what-if.

Run: python examples/fabrics.py
"""

from __future__ import annotations

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)
import topo
from topo.units import to_GBps


def compare_systems() -> None:
    """Counts and figures of merit of every built-in system."""
    print(f"{'system':8}{'GPUs':>6}{'NVLinks':>9}{'per GPU GB/s':>14}{'bisection GB/s':>16}")
    for name in topo.SYSTEMS:
        s = topo.summarize(topo.build(name))
        print(f"{s.system:8}{s.gpus:>6}{s.nvlink_links:>9}{to_GBps(s.injection):>14.1f}"
              f"{to_GBps(s.bisection):>16.1f}")


def what_if_a_bundle_fails() -> None:
    """DGX-1V: lose one of the two links of the 0-4 bundle; which cut binds now?"""
    G = topo.dgx1v()
    before = topo.bisection(G)
    for u, v in (("gpu0", "gpu4"), ("gpu4", "gpu0")):
        edge = G.edges[u, v]
        edge["bandwidth"] -= edge["bandwidth"] / edge["links"]
        edge["links"] -= 1
    topo.validate(G)
    after = topo.bisection(G)
    print(f"\nDGX-1V bisection: {to_GBps(before.bandwidth):.0f} GB/s per direction; with one 0-4 "
          f"link down: {to_GBps(after.bandwidth):.0f} GB/s (cut between {sorted(after.side)} and the rest)")


def how_gpu0_reaches_everyone() -> None:
    """The nvidia-smi classes of GPU0's row on each system."""
    for name in topo.SYSTEMS:
        cm = topo.connection_matrix(topo.build(name))
        row = cm.cells[cm.devices.index("GPU0")]
        print(f"{name:6} GPU0 -> " + " ".join(f"{d}:{c}" for d, c in zip(cm.devices, row) if c != "X"))


if __name__ == "__main__":
    compare_systems()
    what_if_a_bundle_fails()
    print()
    how_gpu0_reaches_everyone()
