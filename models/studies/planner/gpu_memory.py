"""Memory per GPU of a layout's heaviest pipeline stage (:func:`memory`).

Weights, gradients and optimizer state (mixed-precision Adam: 2 + 2 + 12 = 16 bytes per
parameter; fp32 and tf32: 4 + 4 + 8) sharded by ZeRO stage, activations of the micro-batches in
flight (1F1B keeps ``p`` on the first stage, times ``1 + (p - 1) / (p v)`` when interleaved,
Korthikanti et al. 2022, section 4.2.3; per layer
:meth:`models.studies.workload.Transformer.activation_bytes`) and the fp32 logits of the last
stage. A layout that does not fit is a result with the numbers (``fits`` False), not an error.
"""

from __future__ import annotations

import math

from topo.units import GiB

from ..workload import CNN, Workload, activation_bytes_per_element, workload as as_workload
from .records import Layout, Memory

__all__ = ["memory"]


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
    weight = activation_bytes_per_element(dtype)  # fp8 recipes keep 16-bit weights and gradients
    optimizer = 8 if weight == 4 else 12  # Adam moments (+ fp32 master copy)
    act_elem = weight
    tp, pp, dp, zero = layout.tp, layout.pp, layout.dp, layout.zero
    b, m = layout.micro_batch, layout.micro_batches
    worst = None
    for stage, params in zip(("first", "last"), stage_parameters(w, pp)):
        local = params / tp
        p_bytes = local * weight / (dp if zero >= 3 else 1)
        g_bytes = local * weight / (dp if zero >= 2 else 1)
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

