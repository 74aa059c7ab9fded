"""Words of the training-step studies: a plan, a layout search, a calibration, the GPU
ranking, a workload and the GPU generations (:mod:`models.studies.planner`,
:mod:`models.studies.workload`, :mod:`models.studies.compute`). Their JSON:
:func:`models.present.json_shapes.plan_json` and :func:`~models.present.json_shapes.search_json`.

Examples
--------
>>> import topo
>>> from models.studies.planner import plan
>>> p = plan("megatron-8.3b", topo.dgx2(), tp=8, pp=1, dp=2, zero=0, recompute="full", dtype="fp16",
...          simulate=0)
>>> print(format_plan(p).splitlines()[0])
megatron-8.3b on DGX-2 (V100, fp16, NCCL 2.27.7): tp8 pp1 dp2 zero0 mb1 rc=full sp tp-dp-pp
>>> format_workload("bert-large")
'bert-large: transformer layers=24 hidden=1024 heads=16 seq=512 vocab=30522 ffn=4096 encoder mlm head on 80 masked tokens; 0.336 B parameters'
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from topo.units import GB

from ..studies.compute import GENERATIONS, TF
from ..studies.planner import Calibration, GpuRank, Plan, Search, memory_note
from ..studies.workload import CNN, DTYPES, Workload, workload as as_workload

__all__ = ["format_plan", "format_search", "format_calibration", "format_gpus_ranking", "format_workload",
           "format_generations"]


def format_calibration(c: Calibration) -> str:
    """The fit in a few lines: measured vs predicted, the scale, fitted vs default fractions."""
    names = {"gemm_efficiency": "GEMM efficiency", "attention_efficiency": "flash-attention efficiency",
             "memory_efficiency": "HBM efficiency"}
    rows = [f"  calibrated on {c.measured} ({c.measured_step:.4g} s per step of {c.layout}); the model "
            f"from hardware facts predicted {c.predicted_step:.4g} s",
            f"  fitted compute time scale {c.scale:.3f} (carry it to other layouts and scales with "
            f"--compute-scale {c.scale:.4g})"]
    for key, label in names.items():
        if key in c.default:
            rows.append(f"  {label:27} default {c.default[key]:.3f} -> fitted {c.fitted[key]:.3f}")
    return "\n".join(rows)


def format_plan(p: Plan, verbose: bool = False) -> str:
    """A plan as text: layout, throughput in both FLOP conventions, components, memory (and the
    compute model and groups when verbose)."""
    release = f", NCCL {p.nccl}" if p.nccl else ""
    lines = [f"{p.workload} on {p.fabric} ({p.generation}, {p.dtype}{release}): {p.layout.label()}"]
    lines += [f"  warning: {w}" for w in p.warnings]
    if not p.fits:
        lines.append(f"  does not fit: {p.reason}")
        return "\n".join(lines)
    lines.append(f"  step {p.step_time * 1e3:.1f} ms; {p.samples_per_s:.2f} samples/s, "
                 f"{p.tokens_per_s:,.0f} tokens/s; binding: {p.binding()}")
    if p.simulated:
        lines.append(f"  timing: simulated (the analytical first pass: {p.analytical_step_time * 1e3:.1f} ms"
                     f"{f'; {p.timing_note}' if p.timing_note else ''})")
    else:
        lines.append(f"  timing: analytical{f' ({p.timing_note})' if p.timing_note else ''}")
    lines.append(f"  per GPU: {p.model_tflops_per_gpu:.1f} TFLOP/s of model FLOPs (MFU {p.mfu:.1%}), "
                 f"{p.hardware_tflops_per_gpu:.1f} of hardware FLOPs with recomputation (HFU {p.hfu:.1%})")
    for c in p.components:
        lines.append(f"  {c.name:10} {c.time * 1e3:10.2f} ms (exposed {c.exposed * 1e3:9.2f} ms)  {c.detail}")
    lines.append(f"  memory per GPU: {memory_note(p.memory)}")
    if verbose:
        lines.append(f"  compute model: {p.compute}")
        if p.calibration is not None:
            lines.append(format_calibration(p.calibration))
        for dim in ("tp", "pp", "dp"):
            shown = p.groups[dim][:4]
            more = len(p.groups[dim]) - len(shown)
            lines.append(f"  {dim} groups: " + " ".join("(" + ",".join(map(str, g)) + ")" for g in shown)
                         + (f" ... +{more}" if more > 0 else ""))
    return "\n".join(lines)


def format_search(s: Search, top: int = 10) -> str:
    """The ranking as a table."""
    lines = [f"{'layout':44} {'step ms':>9} {'timing':10} {'samples/s':>10} {'MFU':>6} {'HFU':>6} {'mem GB':>7}"
             f"  binding"]
    for p in s.plans[:top]:
        step = f"{p.step_time * 1e3:9.1f}" if p.fits else f"{'OOM':>9}"
        timing = p.timing if p.fits else "-"
        lines.append(f"{p.layout.label():44} {step} {timing:10} {p.samples_per_s:10.2f} {p.mfu:6.1%} {p.hfu:6.1%} "
                     f"{p.memory.total / GB:7.1f}  {p.binding() if p.fits else 'memory capacity'}")
    simulated = sum(p.simulated for p in s.plans)
    lines.append(f"(simulated: the {simulated} best of the analytical first pass, ranked first by their simulated "
                 "step)" if simulated else "(every step analytical)")
    return "\n".join(lines)


def format_gpus_ranking(ranks: Iterable[GpuRank]) -> str:
    lines = [f"{'GPU':6} {'ms/sample':>10} {'compute':>9} {'memory':>9} {'comm':>9}  fits  binding"]
    for r in ranks:
        t = f"{r.time_per_sample * 1e3:10.3f}" if math.isfinite(r.time_per_sample) else f"{'-':>10}"
        lines.append(f"{r.generation:6} {t} {r.compute * 1e3:9.3f} {r.memory_bound * 1e3:9.3f} "
                     f"{r.communication * 1e3:9.3f}  {'yes' if r.fits else 'no ':4}  {r.binding}")
    return "\n".join(lines)

def format_workload(w: str | Workload) -> str:
    """A workload (or its name, :func:`models.studies.workload.workload`) in one line: a
    transformer's shapes, a CNN's layers and input, and the parameter count."""
    w = as_workload(w)
    if isinstance(w, CNN):
        return (f"{w.name}: CNN of {len(w.conv_layers)} weight layers, {w.image}x{w.image} "
                f"input; {w.parameters / 1e6:.2f} M parameters, {w.forward_macs / 1e9:.2f} GMAC "
                "per image forward")
    extra = [f"ffn={w.ffn}"]
    if w.kv_heads != w.heads:
        extra.append(f"kv_heads={w.kv_heads}")
    if w.gated:
        extra.append("gated")
    if w.flash_attention:
        extra.append("flash attention")
    if not w.causal:
        extra.append("encoder")
    if w.head != "lm":
        extra.append(f"{w.head} head" + (f" on {w.predictions} masked tokens" if w.head == "mlm" else ""))
    return (f"{w.name}: transformer layers={w.layers} hidden={w.hidden} heads={w.heads} "
            f"seq={w.seq} vocab={w.vocab} {' '.join(extra)}; {w.parameters / 1e9:.3f} B parameters")


def format_generations() -> str:
    """The table of generations: peaks per dtype, HBM, memory."""
    dtypes = list(DTYPES)
    lines = ["generation " + " ".join(f"{d + ' TF':>9}" for d in dtypes) + "   HBM GB/s  memory GB"]
    for g in GENERATIONS.values():
        peaks = " ".join(f"{g.peak[d] / TF:9.1f}" if d in g.peak else f"{'-':>9}" for d in dtypes)
        lines.append(f"{g.name:10} {peaks}   {g.memory_bandwidth / GB:8.0f}  {g.memory / GB:9.1f}")
    return "\n".join(lines)
