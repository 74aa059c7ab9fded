"""Predicted vs published: the planner against training runs in the literature.

Run: python examples/published_runs.py [--max-gpus N] [--max-events N] [--json]

Each row is a run a paper published, with the layout, batch, dtype, recomputation and software
stack it states, on the registered system that matches its machines. The planner predicts the
step from hardware facts (nothing here is fitted to these figures) and the table prints the
predicted and the published throughput per GPU in the paper's own FLOP convention, the error
(predicted / published - 1), and the median and largest error per GPU generation, twice:
*before*, the planner's analytical estimate of the step (its first pass, fixed overlap
fractions), and *after*, the step simulated (:mod:`models.studies.stepgraph`: overlap and
contention from Megatron's schedule and the fabric). A run whose step graph is beyond the
simulations' budget (``--max-events``) keeps its analytical step after, marked ``a``.

Sources (each figure is the paper's):

* Shoeybi et al. 2019, "Megatron-LM: Training Multi-Billion Parameter Language Models Using
  Model Parallelism" (arXiv:1909.08053): DGX-2H servers (V100 SXM3 32 GB at 450 W), fp16,
  activation checkpointing, sequence 1024, vocabulary 51,200; table 1 (shapes) and section 5.1:
  39 TFLOP/s on one GPU (1.2 B parameters, batch 8), 77 % weak-scaling efficiency at 8-way
  model parallelism (8.3 B), 15.1 PFLOP/s on 512 GPUs (8.3 B, 64-way data parallel, batch 512).
  2019 software: unfused elementwise kernels. [U] whether 39 TFLOP/s counts the recomputed
  forward is not stated; taken as Megatron's later convention (it does).
* Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
  Megatron-LM" (SC21), table 1: GPT models of 1.7 B to 1 T parameters on Selene (DGX A100
  80 GB), fp16, full recomputation, sequence 2048, vocabulary 51,200; achieved TFLOP/s per GPU
  counted with recomputation (their eq. 3). [U] the micro-batch is not stated: the planner's
  best of 1, 2, 4, 8 is taken, as a user would.

Megatron-LM of those years all-reduced the gradients after the backward (its local DDP:
``model.allreduce_gradients()`` once the backward is done), so every row runs with ``overlap=0``;
sequence parallelism arrived with Korthikanti et al. 2022, so the earlier rows run without it.
* Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
  tables 3-4: 22 B, 175 B, 530 B and 1 T on DGX A100 80 GB with sequence parallelism and
  selective recomputation; iteration time (model FLOPs utilisation 41.5 %, 51.4 %, 56.0 %,
  56.3 %). Micro-batch 1 [U].
* Dubey et al. 2024, "The Llama 3 Herd of Models", table 4: Llama 3 405B pre-training on
  8,192 H100 (TP 8, PP 16, DP 64, sequence 8,192, 32 sequences per data-parallel replica) at
  430 TFLOP/s per GPU of model FLOPs (BF16 MFU 43 %); bf16. [U] Meta's Grand Teton servers
  over 400 Gb/s RoCE per GPU are planned as DGX H100 over 400 Gb/s InfiniBand (the same rate
  per GPU); sharding as FSDP without resharding after the forward, taken as ZeRO 2;
  recomputation not stated, taken as selective (Megatron's default at this size); micro-batch 1;
  Meta's pipeline takes one layer off the first and last stages, the planner puts the extra
  layers on the first stages (the same 8 layers on the busiest stage). The 16,384-GPU rows
  (one with context parallelism, which the planner does not model) are left out. 8,192 GPUs is
  beyond the default ``--max-gpus``: run with ``--max-gpus 8192`` (about ten CPU minutes).
* DeepSeek-AI 2024, "DeepSeek-V3 Technical Report" (arXiv:2412.19437): 2,048 H800 GPUs at 180K
  GPU hours per trillion tokens, pp16 ep64 ZeRO-1 DualPipe FP8, sequence 4K, batch 15,360; [U]
  recalled, see :func:`_deepseek_2024` (planned with its own partial recomputation, ``deepseek``).
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass
from types import MappingProxyType

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)

#: Megatron's GPT shapes: ``transformer:`` spec of a GPT with learned positions (Megatron pads
#: the vocabulary to 51,200).
_GPT = "transformer:layers={l},hidden={h},heads={a},seq={s},vocab=51200"


@dataclass(frozen=True)
class Run:
    """One published run.

    Attributes
    ----------
    source : str
    label : str
    workload : str
    system : str
    options : dict
        Planner options (degrees, batch, dtype, recomputation, software).
    published : float
        TFLOP/s per GPU (``kind`` "hardware_tflops", with recomputation, or "model_tflops",
        without) or seconds per iteration ("time").
    kind : str
    micro_batches : tuple of int
        Micro-batches tried when the paper does not state one (the fastest is kept).
    """

    source: str
    label: str
    workload: str
    system: str
    options: dict
    published: float
    kind: str
    micro_batches: tuple = ()

    @property
    def gpus(self) -> int:
        o = self.options
        return o["tp"] * o["pp"] * o["dp"]


def _megatron_2019():
    common = dict(dtype="fp16", recompute="full", software="eager", zero=0, pp=1, overlap=0.0,
                  sequence_parallel=False)
    source = "Shoeybi et al. 2019 (Megatron-LM), sec. 5.1"
    return [
        Run(source, "1.2B, 1 GPU", _GPT.format(l=40, h=1536, a=16, s=1024), "dgx2h",
            dict(tp=1, dp=1, micro_batch=8, global_batch=8, **common), 39.0, "hardware_tflops"),
        Run(source, "8.3B, 8-way model parallel", _GPT.format(l=72, h=3072, a=32, s=1024), "dgx2h",
            dict(tp=8, dp=1, micro_batch=8, global_batch=8, **common), 0.77 * 39.0, "hardware_tflops"),
        Run(source, "8.3B, 512 GPUs", _GPT.format(l=72, h=3072, a=32, s=1024), "32xdgx2h",
            dict(tp=8, dp=64, micro_batch=8, global_batch=512, **common), 15.1e3 / 512, "hardware_tflops"),
    ]


def _narayanan_2021():
    source = "Narayanan et al. 2021 (SC21), table 1"
    rows = [  # params, heads, hidden, layers, tp, pp, GPUs, batch, TFLOP/s per GPU
        ("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137), ("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138),
        ("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142), ("18.4B", 48, 6144, 40, 8, 1, 256, 1024, 135),
        ("39.1B", 64, 8192, 48, 8, 2, 512, 1536, 138), ("76.1B", 80, 10240, 60, 8, 4, 1024, 1792, 140),
        ("145.6B", 96, 12288, 80, 8, 8, 1536, 2304, 148), ("310.1B", 128, 16384, 96, 8, 16, 1920, 2160, 155),
        ("529.6B", 128, 20480, 105, 8, 35, 2520, 2520, 163), ("1008.0B", 160, 25600, 128, 8, 64, 3072, 3072, 163),
    ]
    return [Run(source, f"{name}, {gpus} GPUs", _GPT.format(l=l, h=h, a=a, s=2048), f"{gpus // 8}xdgxa100-80g",
                dict(tp=tp, pp=pp, dp=gpus // (tp * pp), global_batch=batch, dtype="fp16", recompute="full",
                     software="fused", zero=0, overlap=0.0, sequence_parallel=False), tflops, "hardware_tflops",
                (1, 2, 4, 8))
            for name, a, h, l, tp, pp, gpus, batch, tflops in rows]


def _korthikanti_2022():
    source = "Korthikanti et al. 2022, tables 3-4"
    rows = [("22B", 64, 6144, 48, 8, 1, 8, 4, 1.10), ("175B", 96, 12288, 96, 8, 8, 64, 64, 13.75),
            ("530B", 128, 20480, 105, 8, 35, 280, 280, 37.83), ("1T", 160, 25600, 128, 8, 64, 512, 512, 71.49)]
    return [Run(source, f"{name}, {gpus} GPUs (s/iteration)", _GPT.format(l=l, h=h, a=a, s=2048),
                "dgxa100-80g" if gpus == 8 else f"{gpus // 8}xdgxa100-80g",
                dict(tp=tp, pp=pp, dp=gpus // (tp * pp), micro_batch=1, global_batch=batch, dtype="fp16",
                     recompute="selective", sequence_parallel=True, software="fused", zero=0, overlap=0.0),
                seconds, "time")
            for name, a, h, l, tp, pp, gpus, batch, seconds in rows]


def _dubey_2024():
    source = "Dubey et al. 2024 (Llama 3), table 4"
    return [Run(source, "Llama 3 405B, 8192 GPUs (model TF)", "llama3-405b", "1024xdgxh100",
                dict(tp=8, pp=16, dp=64, micro_batch=1, global_batch=2048, dtype="bf16", recompute="selective",
                     sequence_parallel=True, zero=2), 430.0, "model_tflops")]


def _deepseek_2024():
    """DeepSeek-V3 Technical Report (arXiv 2412.19437): "each trillion tokens requires only 180K
    H800 GPU hours, i.e. 3.7 days on our cluster with 2048 H800 GPUs"; pp16, ep64 over 8 nodes,
    ZeRO-1, no tensor parallelism, DualPipe, FP8 GEMMs, sequence 4K, batch 15,360 sequences
    after the ramp. [U] every figure recalled from the report, not re-read here (as the
    reference's models-moe.md §2.4 marks them). The iteration follows: 15,360 x 4,096 tokens /
    (2,048 GPUs x 1e12 / (180e3 x 3,600 s) tokens/s per GPU) = 19.91 s. DeepSeek recomputes
    RMSNorm and the MLA up-projections and keeps activations in FP8 (report sections 3.2.3 and
    3.3.3 [U]): the planner's ``deepseek`` recomputation
    (:data:`models.studies.recomputation.DEEPSEEK`)."""
    source = "DeepSeek-AI 2024 (DeepSeek-V3), sec. 1 and 3 [U]"
    seconds = 15360 * 4096 / (2048 * 1e12 / (180e3 * 3600))
    return [Run(source, "DeepSeek-V3, 2048 H800 (s/iteration)", "deepseek-v3", "256xdgxh800",
                dict(tp=1, pp=16, dp=128, ep=64, zero=1, micro_batch=1, global_batch=15360, dtype="fp8",
                     recompute="deepseek", seq_length=4096, ep_overlap="dualpipe"), seconds, "time")]


#: Every published run, oldest first.
RUNS = _megatron_2019() + _narayanan_2021() + _korthikanti_2022() + _dubey_2024() + _deepseek_2024()
#: GPU generation of each system family.
GENERATION = MappingProxyType({"dgx2h": "V100", "dgxa100-80g": "A100", "dgxh100": "H100", "dgxh800": "H800"})


def generation_of(run: Run) -> str:
    return GENERATION[run.system.split("x", 1)[-1] if run.system[0].isdigit() else run.system]


def error(run: Run, step: float, hardware_tflops: float, model_tflops: float | None = None) -> float:
    """Predicted over published throughput, minus 1 (positive: the prediction is too fast)."""
    if run.kind == "time":
        return run.published / step - 1
    if run.kind == "model_tflops":
        return model_tflops / run.published - 1
    return hardware_tflops / run.published - 1


def predict(run: Run, max_events: int | None = None):
    """The planner's plans of a run, ``(analytical, simulated)``: each the fastest of the
    micro-batches tried (and of the layouts the options leave open), by its own step time;
    ``(None, None)`` when nothing fits. The analytical plan's ``step_time`` is its first pass."""
    import dataclasses

    import models
    import topo
    from models.studies.planner import PLAN_MAX_EVENTS

    G = topo.build(run.system)
    tries = [dict(run.options, micro_batch=b) for b in run.micro_batches] or [run.options]
    analytical, simulated = [], []
    for options in tries:
        if options["global_batch"] % (options["dp"] * options["micro_batch"]):
            continue
        s = models.search(run.workload, G, max_events=max_events or PLAN_MAX_EVENTS, **options)
        fitting = s.fitting()
        if fitting:
            simulated.append(s.best)
            first = min(fitting, key=lambda p: p.analytical_step_time)
            analytical.append(dataclasses.replace(first, step_time=first.analytical_step_time, timing="analytical"))
    if not simulated:
        return None, None
    return min(analytical, key=lambda p: p.step_time), min(simulated, key=lambda p: p.step_time)


def summary(rows) -> dict:
    """Median and largest absolute error per generation, over ``(generation, error)`` rows."""
    by: dict = {}
    for gen, err in rows:
        if err is not None:
            by.setdefault(gen, []).append(err)
    return {gen: {"runs": len(errs), "median_error": statistics.median(errs),
                  "median_abs_error": statistics.median(abs(e) for e in errs),
                  "max_abs_error": max(abs(e) for e in errs)} for gen, errs in by.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-gpus", type=int, default=3072, help="skip runs of more GPUs (default 3072)")
    parser.add_argument("--max-events", type=int, default=None,
                        help="the simulations' budget per plan in events (default the planner's)")
    parser.add_argument("--json", action="store_true", help="print the rows and summary as JSON")
    args = parser.parse_args(argv)
    rows, errors = [], {"before": [], "after": []}
    for run in RUNS:
        if run.gpus > args.max_gpus:
            continue
        gen = generation_of(run)
        row = {"source": run.source, "run": run.label, "generation": gen, "published": run.published,
               "kind": run.kind}
        for when, p in zip(("before", "after"), predict(run, args.max_events)):
            if p is None:
                row[when] = {"predicted": None, "error": None, "layout": "no layout fits", "timing": None}
                errors[when].append((gen, None))
                continue
            predicted = {"time": p.step_time, "model_tflops": p.model_tflops_per_gpu}.get(
                run.kind, p.hardware_tflops_per_gpu)
            err = error(run, p.step_time, p.hardware_tflops_per_gpu, p.model_tflops_per_gpu)
            row[when] = {"predicted": predicted, "error": err, "layout": p.layout.label(), "timing": p.timing,
                         "mfu": p.mfu, "hfu": p.hfu}
            errors[when].append((gen, err))
        rows.append(row)
    stats = {when: summary(e) for when, e in errors.items()}
    if args.json:
        print(json.dumps({"rows": rows, "summary": stats}, indent=2))
        return
    print(f"{'run':42} {'gen':5} {'published':>10} {'before':>10} {'error':>7} {'after':>11} {'error':>7}  source")
    for r in rows:
        unit = "s" if r["kind"] == "time" else "TF"
        cells = []
        for when in ("before", "after"):
            w = r[when]
            mark = "a" if when == "after" and w["timing"] == "analytical" else " " if when == "after" else ""
            cells.append(f"{w['predicted']:9.2f}{unit[0]}{mark}" if w["predicted"] is not None else
                         f"{'-':>10}{' ' if when == 'after' else ''}")
            cells.append(f"{w['error']:+7.1%}" if w["error"] is not None else f"{'-':>7}")
        print(f"{r['run']:42} {r['generation']:5} {r['published']:9.2f}{unit[0]} {' '.join(cells)}  {r['source']}")
    print("\nerror = predicted / published throughput - 1 (TF: hardware TFLOP/s per GPU, model TFLOP/s where "
          "the run says model TF; s: seconds per "
          "iteration); before: the analytical step, after: the simulated step (a: beyond --max-events, "
          "analytical)")
    for when in ("before", "after"):
        for gen, s in stats[when].items():
            print(f"{when:6} {gen}: {s['runs']} runs, median error {s['median_error']:+.1%}, median |error| "
                  f"{s['median_abs_error']:.1%}, max |error| {s['max_abs_error']:.1%}")


if __name__ == "__main__":
    main()
