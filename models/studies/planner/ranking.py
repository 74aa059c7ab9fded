"""GPU generations ranked for a workload, saying which resource binds (:func:`gpus_ranking`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...engine.nccltests import busbw_factor
from ...engine.results import tidy_records
from ..compute import GENERATIONS, compute_model
from ..workload import CNN, Workload, activation_bytes_per_element, dtype_bytes, workload as as_workload
from .gpu_memory import memory, state_bytes
from .layouts import check_int
from .records import Layout
from .step import DEFAULT_OVERLAP

__all__ = ["GpuRank", "gpus_ranking"]


@dataclass(frozen=True, slots=True)
class GpuRank:
    """One GPU generation for a workload.

    Attributes
    ----------
    generation : str
    time_per_sample : float
        Step time of one micro-batch on one GPU (the compute model of
        :mod:`models.studies.compute`) plus the exposed 8-GPU data-parallel all_reduce at the
        generation's NVLink bandwidth, per sample. [s]
    compute, memory_bound, communication : float
        The three parts of that time: tensor-core or FP32 work, memory-bound kernels (and
        launches), exposed communication. [s]
    binding : str
        ``"compute"``, ``"memory bandwidth"``, ``"communication"`` or ``"unsupported dtype"``.
    fits : bool
        Whether weights, gradients and optimizer state, sharded over 8 GPUs (ZeRO 3), and the
        micro-batch's activations fit the GPU.
    """

    generation: str
    time_per_sample: float
    compute: float
    memory_bound: float
    communication: float
    binding: str
    fits: bool

    def to_records(self) -> list:
        """One tidy row (``time_per_sample_s`` None for a generation without the dtype)."""
        return tidy_records({"generation": self.generation,
                             "time_per_sample_s": self.time_per_sample if math.isfinite(self.time_per_sample) else None,
                             "compute_s": self.compute, "memory_s": self.memory_bound,
                             "communication_s": self.communication, "binding": self.binding, "fits": self.fits})


def gpus_ranking(workload: str | Workload, *, dtype: str = "fp16", micro_batch: int = 1, ngpus: int = 8,
                 efficiency: float | None = None, memory_efficiency: float | None = None,
                 overlap: float = DEFAULT_OVERLAP) -> tuple:
    """Rank GPU generations for a workload, saying which resource binds.

    Each generation runs one micro-batch per GPU, data parallel over ``ngpus`` GPUs of one
    board: forward + backward on its compute model, then the gradient all_reduce at ``2 (n-1)/n``
    times the gradient bytes (:func:`~models.studies.planner.gpu_memory.state_bytes`: fp32 for
    bf16) over the part's NVLink (:attr:`topo.specs.GpuSpec.nvlink_bandwidth`),
    overlapped with the backward up to ``overlap`` (a board-level scalar model: no fabric of every
    generation is available).

    Returns
    -------
    tuple of GpuRank
        Fastest first; generations without the dtype last.
    """
    w = as_workload(workload)
    check_int("micro_batch", micro_batch)
    check_int("ngpus", ngpus)
    elem = dtype_bytes(dtype)
    act = activation_bytes_per_element(dtype)
    ranks = []
    for gen in GENERATIONS.values():
        if not gen.supports(dtype):
            ranks.append(GpuRank(gen.name, math.inf, 0.0, 0.0, 0.0, "unsupported dtype", False))
            continue
        cm = compute_model(gen, dtype, workload=w, efficiency=efficiency, memory_efficiency=memory_efficiency)
        times = {"compute": 0.0, "memory": 0.0}
        layers = 1 if isinstance(w, CNN) else w.layers
        for ops, count in ((w.layer_ops(micro_batch, 1, elem, stack=cm.stack, act=act), layers),
                           (w.head_ops(micro_batch, 1, elem, act=act), 1)):
            for t in cm.times(ops):
                times["memory" if t.op.kind == "memory" else "compute"] += count * (t.forward + t.backward)
        grad = w.parameters * state_bytes(dtype)[1]  # the gradients at their own bytes (fp32 for bf16)
        comm = busbw_factor("all_reduce", ngpus) * grad / gen.nvlink_bandwidth if ngpus > 1 else 0.0
        backward = (times["compute"] + times["memory"]) * 2 / 3
        exposed = max(0.0, comm - overlap * backward)
        total = times["compute"] + times["memory"] + exposed
        parts = {"compute": times["compute"], "memory bandwidth": times["memory"], "communication": exposed}
        layout = Layout(1, 1, ngpus, 3, micro_batch, ngpus * micro_batch, "none", False, "tp-dp-pp")
        fits = memory(w, layout, dtype=dtype, capacity=gen.memory, flash=cm.stack.flash_attention).fits
        ranks.append(GpuRank(gen.name, total / micro_batch, times["compute"], times["memory"], exposed,
                             max(parts, key=parts.get), fits))
    ranks.sort(key=lambda r: (not r.fits, r.time_per_sample))
    return tuple(ranks)
