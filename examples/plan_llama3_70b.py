"""A training planner's question: how should Llama-3 70B be laid out on a cluster of DGX systems?

Run: python examples/plan_llama3_70b.py [--system SPEC] [--top N] [--out FILE.html]

Searches every (tensor, pipeline, data) parallel layout, ZeRO stage and recomputation mode of
Llama-3 70B on the cluster (``models.search``), prints the best layouts with their step time,
MFU and memory per GPU, the GPU groups the planner chose for the best one and where its time
goes, and with ``--out`` writes the step-time breakdown and the memory per GPU of every layout
as one offline HTML page.

The question is asked of ``4xdgxh100`` (32 H100); that search takes about 40 s today (the
symmetry search of an H100 cluster's fabric, ``topo.gpu_automorphisms``, dominates), so the
default is ``4xdgxa100`` (32 A100 40 GB, a few seconds): pass ``--system 4xdgxh100`` for the
H100 answer.
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
from models.present.plan_text import fit_note, format_plan
from topo.units import GB

WORKLOAD = "llama3-70b"
DEFAULT_SYSTEM = "4xdgxa100"


def plan(spec: str, top: int):
    G = topo.build(spec)
    result = models.search(WORKLOAD, G)
    fitting = result.fitting()
    print(f"{WORKLOAD} on {G.graph.get('name', spec)}: {len(result.plans)} layouts, {len(fitting)} fit in memory")
    print(f"{'layout':46}{'step s':>8}{'tokens/s':>10}{'MFU':>7}{'GB/GPU':>8}  binding")
    for p in fitting[:top]:
        print(f"{p.layout.label():46}{p.step_time:8.1f}{p.tokens_per_s:10,.0f}{p.mfu:7.1%}"
              f"{p.memory.total / GB:8.1f}  {p.binding()}")
    if not fitting:
        closest = min(result.plans, key=lambda p: p.memory.total / p.memory.capacity)
        print(f"no layout fits; the closest: {closest.layout.label()}: {fit_note(closest)}")
        return result
    best = fitting[0]
    print(f"\nThe best layout, {best.layout.label()}, and the GPUs of each group:")
    print(format_plan(best, verbose=True))
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--system", default=DEFAULT_SYSTEM,
                        help=f"a system or cluster spec (default {DEFAULT_SYSTEM}; the question: 4xdgxh100)")
    parser.add_argument("--top", type=int, default=8, help="layouts printed (default 8)")
    parser.add_argument("--out", type=Path, help="write the figures to this HTML file")
    # Known options only: a runner such as the test suite may leave its own in sys.argv.
    args, ignored = parser.parse_known_args(argv)
    if ignored:
        print(f"ignoring arguments {' '.join(ignored)}", file=sys.stderr)
    try:
        result = plan(args.system, args.top)
    except topo.DgxTopoError as error:
        parser.error(str(error))
    if args.out is not None:
        divs = [pio.to_html(fig, full_html=False, include_plotlyjs=(i == 0), div_id=f"figure-{i}")
                for i, fig in enumerate((step_time_figure(result), memory_figure(result)))]
        target = write_text_atomic(args.out, "<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
                                   f"{WORKLOAD} on {args.system}</title></head><body>" + "\n".join(divs)
                                   + "</body></html>")
        print(f"\nfigures written to {target} (open it in a browser; it works offline)")


if __name__ == "__main__":
    main()
