"""An architect's generation comparison: every DGX from the DGX-1 to the DGX B200.

Run: python examples/generations.py [--out FILE.html]

Prints, per system, the NVLink bandwidth one GPU can send, the NVLink bisection of the whole
system and the predicted nccl-tests all_reduce busbw of 8 GPUs at 1 GiB: as NCCL chooses it,
and forced to NVLS (NVLink SHARP) where the model has it (n/a and the reason otherwise). With ``--out`` it also writes one self-contained HTML page (plotly.js embedded, it
opens offline) with the NVLink bars and the 8-GPU busbw curves; curves that coincide (the
DGX-1V and the DGX-2's GPUs 0-7, the DGX H100 and H200) are drawn dashed over each other.
For the full report, run ``dgxtopo report``.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import plotly.io as pio

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)
import models
import topo
from models.present.output import OutputPathError, check_output_path, write_text_atomic
from models.present.plot import busbw_figure, generations_figure
from topo.units import GiB, to_GBps

SYSTEMS = ("dgx1", "dgx1v", "dgx2", "dgxa100", "dgxh100", "dgxh200", "dgxb200")
SIZES = 2 ** np.arange(10, 34, 2)  # 1 KiB to 8 GiB [bytes]
AT = int(np.flatnonzero(SIZES == GiB)[0])  # the 1 GiB column


def _busbw(G, algorithm=None):
    """(8-GPU all_reduce over SIZES, None) or (None, why not)."""
    try:
        return models.estimate(G, "all_reduce", SIZES, gpus=range(8), algorithm=algorithm), None
    except topo.DgxTopoError as error:  # e.g. NVLS on a fabric, or a model, without it
        return None, str(error)


def compare():
    print(f"{'system':9}{'GPU':24}{'NVLink/GPU':>12}{'bisection':>11}{'busbw':>8}{'NVLS':>8}"
          f"   (GB/s per direction; all_reduce of 8 GPUs at 1 GiB)")
    names, per_gpu, bisection, curves, why_not = [], [], [], {}, {}
    for name in SYSTEMS:
        G = topo.build(name)
        s = topo.summarize(G)
        auto, _ = _busbw(G)
        nvls, error = _busbw(G, "nvls")
        if error:
            why_not.setdefault(error, []).append(s.name)
        cells = [("n/a" if e is None else f"{to_GBps(e.busbw[AT]):.1f}") for e in (auto, nvls)]
        print(f"{name:9}{s.gpu_models[0]:24}{to_GBps(s.injection):>12.0f}{to_GBps(s.bisection):>11.0f}"
              + "".join(f"{c:>8}" for c in cells))
        names.append(s.name)
        per_gpu.append(s.injection)
        bisection.append(s.bisection)
        if auto is not None:
            curves[f"{s.name}, GPUs 0-7"] = auto
        if nvls is not None:
            curves[f"{s.name}, GPUs 0-7, NVLS"] = nvls
    for error, systems in why_not.items():
        print(f"NVLS n/a on {', '.join(systems)}: {error}")
    return [generations_figure(names, per_gpu, bisection),
            busbw_figure(curves, title="predicted all_reduce busbw, 8 GPUs (GB/s)"),
            busbw_figure(curves, y="time", title="predicted all_reduce time, 8 GPUs (µs)")]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--out", help="write the figures to this HTML file")
    # Known options only: a runner such as the test suite may leave its own in sys.argv.
    args, ignored = parser.parse_known_args(argv)
    if ignored:
        print(f"ignoring arguments {' '.join(ignored)}", file=sys.stderr)
    if args.out is not None:
        try:
            check_output_path(args.out)  # a bad path fails before any work
        except OutputPathError as error:
            parser.error(str(error))
    figures = compare()
    if args.out is not None:
        divs = [pio.to_html(fig, full_html=False, include_plotlyjs=(i == 0), div_id=f"figure-{i}")
                for i, fig in enumerate(figures)]
        target = write_text_atomic(args.out, "<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
                                   "DGX generations</title></head><body>" + "\n".join(divs) + "</body></html>")
        print(f"\n{len(figures)} figures written to {target} (it opens offline)")


if __name__ == "__main__":
    main()
