"""A training planner's question: how long does the gradient all_reduce of a 70B model take?

Run: python examples/llama70b_gradients.py

A 70-billion-parameter model (Llama-2-70B class) trained data-parallel on one 8-GPU DGX
reduces its whole gradient every step: 70e9 bf16 values, 140 GB. For each 8-GPU system (and
GPUs 0-7 of a DGX-2) this prints the predicted time of that all_reduce as NCCL's tuning model
sees it and as nccl-tests would measure it (:func:`models.measured`: achieved, not nominal,
link bandwidth; one process per GPU), and the busbw it runs at. Without overlap or bucketing,
so it bounds the communication a step adds rather than predicting a step. (The 140 GB do not
fit in one GPU's memory either: real runs shard the model; the all_reduce of the gradient of
a data-parallel replica is the same collective.)
"""

from __future__ import annotations

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)
import models
import topo
from models.present.text import format_table
from topo.units import to_GBps

PARAMETERS = 70_000_000_000
BYTES_PER_GRADIENT = 2  # bf16
GRADIENT = PARAMETERS * BYTES_PER_GRADIENT  # 140 GB [bytes]
SYSTEMS = ("dgx1", "dgx1v", "dgx2", "dgxa100", "dgxh100", "dgxh200", "dgxb200")


def main() -> None:
    rows = []
    for name in SYSTEMS:
        G = topo.build(name)
        e = models.estimate(G, "all_reduce", GRADIENT, gpus=range(8))
        m = models.measured(e, G)  # one process per GPU, as training frameworks run
        rows.append([G.graph["name"], f"{e.algorithm}/{e.protocol}", f"{e.time:.3f}", f"{m.time:.3f}",
                     f"{to_GBps(m.busbw):.1f}"])
    print(f"all_reduce of a 70B-parameter model's bf16 gradient ({GRADIENT / 1e9:.0f} GB) on 8 GPUs, per step")
    print(format_table(["system", "algorithm", "NCCL's estimate (s)", "as measured (s)", "busbw (GB/s)"], rows,
                       align="<<>>>"))


if __name__ == "__main__":
    main()
