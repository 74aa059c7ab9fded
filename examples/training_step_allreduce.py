"""A training planner's question: how long does the gradient all_reduce of one step take?

Run: python examples/training_step_allreduce.py

For ResNet-50 (25.6 M parameters), BERT-large (340 M) and an 8.7 B-parameter model, with fp32
and fp16 gradients, the predicted time of one all_reduce of the whole gradient over all GPUs of
each system, as nccl-tests would measure it. This is the communication of a data-parallel step
without overlap or bucketing: frameworks split the gradient into buckets and overlap them
with the backward pass, so it bounds what the network adds to a step rather than predicting it.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)
import models
import topo
from models.present.text import format_table
from topo.units import MB, ms, to_GBps

MODELS = MappingProxyType({"ResNet-50": 25_600_000, "BERT-large": 340_000_000, "8.7B model": 8_700_000_000})
DTYPES = MappingProxyType({"fp32": 4, "fp16": 2})  # bytes per gradient element
# (system, GPU ids): all GPUs of each system, and the DGX-2 also with 8 GPUs to compare like for like.
RUNS = (("dgx1", None), ("dgx1v", None), ("dgx2", "0-7"), ("dgx2", None))


def main() -> None:
    rows = [(model, dtype, params * size) for model, params in MODELS.items()
            for dtype, size in DTYPES.items()]
    nbytes = np.array([n for _, _, n in rows], dtype=np.int64)
    columns = {}
    for name, gpus in RUNS:
        G = topo.build(name)
        # One call for every gradient size: estimates are vectorised over sizes.
        e = models.estimate(G, "all_reduce", nbytes, gpus=gpus)
        columns[f"{G.graph['name']} x{e.nranks}"] = e
    headers = ["model", "grads", "size (MB)"] + [f"{c} (ms)" for c in columns]
    table = [[model, dtype, f"{n / MB:.1f}", *(f"{np.atleast_1d(e.time)[i] / ms:.2f}" for e in columns.values())]
             for i, (model, dtype, n) in enumerate(rows)]
    print("Predicted time of one all_reduce of a step's whole gradient (NCCL's model, nccl-tests' size)")
    print(format_table(headers, table, align="<<>" + ">" * len(columns)))
    print("\nbusbw at the largest size: " + ", ".join(
        f"{c} {to_GBps(np.atleast_1d(e.busbw)[-1]):.0f} GB/s" for c, e in columns.items()))
    print("A DGX-2 with 16 GPUs runs twice the data-parallel ranks (twice the batch per step) for "
          "about the time 8 GPUs take.")


if __name__ == "__main__":
    main()
