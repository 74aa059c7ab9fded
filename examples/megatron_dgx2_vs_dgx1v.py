"""An architect's question: train Megatron-LM 8.3B on one DGX-2 or on two DGX-1V?

Run: python examples/megatron_dgx2_vs_dgx1v.py [--tp N] [--out FILE.html]

The same 16 V100s either way: one DGX-2 (every GPU on the NVSwitch fabric) or two DGX-1V (two
hybrid cube-meshes joined by four EDR InfiniBand NICs each). For each, the planner
(``models.search``) evaluates every parallel layout, ZeRO stage and recomputation mode, each
collective estimated on the GPU groups it chose on that fabric; the script prints the best
layouts side by side, where the best one's step goes, and what the faster fabric buys.
``--tp`` fixes the tensor-parallel degree (Megatron-LM trained 8.3B at 8); ``--out`` writes the
step-time breakdowns and memory per GPU of both systems as one offline HTML page.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import plotly.io as pio

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)
import models
import topo
from models.present.output import write_text_atomic
from models.present.plan_plot import memory_figure, step_time_figure
from topo.units import GB

WORKLOAD = "megatron-8.3b"
SYSTEMS = ("dgx2", "2xdgx1v")


def compare(tp=None, top: int = 5) -> dict:
    results = {}
    for spec in SYSTEMS:
        G = topo.build(spec)
        result = models.search(WORKLOAD, G, tp=tp)
        results[spec] = result
        fitting = result.fitting()
        print(f"{WORKLOAD} on {G.graph.get('name', spec)} ({len(topo.gpus(G))} GPUs): "
              f"{len(result.plans)} layouts, {len(fitting)} fit")
        for p in fitting[:top]:
            print(f"  {p.layout.label():46}{p.step_time:7.2f} s{p.samples_per_s:7.2f} samples/s  MFU {p.mfu:5.1%}"
                  f"  {p.memory.total / GB:5.1f} GB/GPU")
    best = {spec: r.fitting()[0] for spec, r in results.items() if r.fitting()}
    print()
    for spec, p in best.items():
        comm = {c.name: c.exposed for c in p.components if c.name.endswith("_comm")}
        print(f"{spec}: best {p.layout.label()}; step {p.step_time:.2f} s, of which exposed communication "
              + ", ".join(f"{name} {t:.2f} s" for name, t in comm.items())
              + f"; tp groups {' '.join('(' + ','.join(map(str, g)) + ')' for g in p.groups['tp'][:2])} ...")
    if len(best) == 2:
        one, two = (best[s] for s in SYSTEMS)
        faster, slower = (one, two) if one.step_time <= two.step_time else (two, one)
        print(f"\n{faster.fabric} trains {slower.step_time / faster.step_time:.2f}x faster per step "
              f"({faster.samples_per_s:.2f} against {slower.samples_per_s:.2f} samples/s).")
    return results


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--tp", type=int, help="fix the tensor-parallel degree (default: search every one)")
    parser.add_argument("--out", type=Path, help="write the figures to this HTML file")
    # Known options only: a runner such as the test suite may leave its own in sys.argv.
    args, ignored = parser.parse_known_args(argv)
    if ignored:
        print(f"ignoring arguments {' '.join(ignored)}", file=sys.stderr)
    try:
        results = compare(args.tp)
    except topo.DgxTopoError as error:
        parser.error(str(error))
    if args.out is not None:
        figures = [f(r) for r in results.values() for f in (step_time_figure, memory_figure)]
        divs = [pio.to_html(fig, full_html=False, include_plotlyjs=(i == 0), div_id=f"figure-{i}")
                for i, fig in enumerate(figures)]
        target = write_text_atomic(args.out, "<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
                                   f"{WORKLOAD}: DGX-2 vs 2x DGX-1V</title></head><body>" + "\n".join(divs)
                                   + "</body></html>")
        print(f"\nfigures written to {target} (open it in a browser; it works offline)")


if __name__ == "__main__":
    main()
