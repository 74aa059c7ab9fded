"""Memory per GPU of a layout's heaviest pipeline stage (:func:`memory`).

Weights, gradients and optimizer state (:func:`state_bytes`: bf16 and the low-precision dtypes
2 + 4 + 12 = 18 bytes per parameter, the gradients accumulated in fp32; fp16 2 + 2 + 16; fp32 and
tf32 4 + 4 + 8) sharded by ZeRO stage, activations of the micro-batches in
flight (1F1B keeps ``p`` on the first stage, times ``1 + (p - 1) / (p v)`` when interleaved,
Korthikanti et al. 2022, section 4.2.3; per layer
:meth:`models.studies.workload.Transformer.activation_bytes`) and the fp32 logits of the last
stage. A layout that does not fit is a result with the numbers (``fits`` False), not an error.
"""

from __future__ import annotations

import math

from topo.units import GiB

from ..workload import (CNN, QUANTISED_BYTES, Workload, activation_bytes_per_element, dtype_bytes,
                        optimizer_pass_bytes, state_bytes,
                        is_low_precision, workload as as_workload)
from .records import Layout, Memory

__all__ = ["memory", "state_bytes", "optimizer_pass_bytes", "cached_bytes", "FP8_TILE"]

#: DeepSeek-V3's fine-grained FP8 (DeepSeek-V3 Technical Report, arXiv 2412.19437, section 3.3
#: [U: recalled]): activations quantised in 1 x ``FP8_TILE`` tiles and weights in ``FP8_TILE`` x
#: ``FP8_TILE`` blocks, each with one fp32 scale. [elements]
FP8_TILE = 128


def cached_bytes(dtype: str) -> float | None:
    """Bytes per element of an activation a low-precision cache keeps (recompute ``deepseek``),
    its scales included; None for a 16/32-bit dtype (nothing quantised to keep). fp8 in
    DeepSeek-V3's 1 x 128 tiles with an fp32 scale each (:data:`FP8_TILE`): ``1 + 4 / 128``;
    mxfp8 and nvfp4 in their block formats (:data:`~models.studies.workload.QUANTISED_BYTES`). [bytes]

    >>> cached_bytes("fp8"), cached_bytes("mxfp8"), cached_bytes("nvfp4"), cached_bytes("bf16")
    (1.03125, 1.03125, 0.5625, None)
    """
    if not is_low_precision(dtype):
        return None
    name = str(dtype).strip().lower()
    if name == "fp8":
        return dtype_bytes(name) + 4 / FP8_TILE
    return QUANTISED_BYTES[name]


def stage_parameters(w, pp: int):
    """(first stage, last stage) parameters of a pipeline of ``pp`` stages."""
    if isinstance(w, CNN):
        return w.parameters, w.parameters
    layers = math.ceil(w.layers / pp)
    return (held_parameters(w, layers, first=True, last=pp == 1),
            held_parameters(w, layers, first=pp == 1, last=True))


def held_parameters(w, layers: int, *, first: bool, last: bool) -> float:
    """Parameters of a dense transformer's stage holding ``layers`` layers, the embedding when
    ``first`` and the head when ``last`` (Megatron keeps a copy of a tied embedding on the last
    stage for the output projection)."""
    out = layers * w.layer_parameters
    if first:
        out += w.embedding_parameters + w.extra_parameters
    if last:
        out += w.head_parameters + (w.vocab * w.hidden if w.tied and not first else 0)
    return out


def memory(workload: str | Workload, layout: Layout, *, dtype: str = "bf16", capacity: float = 80 * GiB,
           flash: bool | None = None) -> Memory:
    """Memory per GPU of the heaviest pipeline stage. [bytes]

    Parameters
    ----------
    workload : str or workload
    layout : Layout
    dtype : str
    capacity : float
        Device memory to compare with. [bytes]
    flash : bool, optional
        Flash attention (no ``s x s`` tensor stored); default: the workload's.

    Examples
    --------
    >>> import dataclasses
    >>> from models.studies.workload import PRESETS
    >>> w = PRESETS["gpt3-175b"]
    >>> on = Layout(8, 8, 1, 1, 1, 64, "selective", True, "tp-dp-pp")
    >>> off = dataclasses.replace(on, sequence_parallel=False)
    >>> round(memory(w, on).activations / GiB, 1), round(memory(w, off).activations / GiB, 1)
    (9.6, 29.2)
    """
    w = as_workload(workload)
    weight, grad, optimizer = state_bytes(dtype)  # fp8 recipes keep 16-bit weights
    act_elem = activation_bytes_per_element(dtype)
    tp, pp, dp, zero = layout.tp, layout.pp, layout.dp, layout.zero
    b, m = layout.micro_batch, layout.micro_batches
    worst = None
    for stage, params in zip(("first", "last"), stage_parameters(w, pp)):
        local = params / tp
        p_bytes = local * weight / (dp if zero >= 3 else 1)
        g_bytes = local * grad / (dp if zero >= 2 else 1)
        o_bytes = local * optimizer / (dp if zero >= 1 else 1)
        if isinstance(w, CNN):
            act = w.activation_bytes(b, recompute=layout.recompute) * act_elem / 2
        else:
            layers = math.ceil(w.layers / pp)
            in_flight = min(pp, m) if stage == "first" else 1
            if stage == "first" and layout.virtual_stages > 1:
                # Interleaving keeps more micro-batches' chunks in flight (Korthikanti et al. 2022,
                # section 4.2.3).
                in_flight *= 1 + (pp - 1) / (pp * layout.virtual_stages)
            act = w.activation_bytes(b, tp, sequence_parallel=layout.sequence_parallel,
                                     recompute=layout.recompute, flash=flash) * act_elem / 2 * layers * in_flight
            if stage == "last" or pp == 1:
                act += w.logits_bytes(b, tp)  # fp32 logits and their gradient
        mem = Memory(p_bytes, g_bytes, o_bytes, act, float(capacity))
        if worst is None or mem.total > worst.total:
            worst = mem
    return worst

