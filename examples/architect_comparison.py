"""An architect's comparison: DGX-1 vs DGX-1V vs DGX-2, as numbers and as figures.

Run: python examples/architect_comparison.py [--out DIR]

Prints what each fabric delivers (NVLink per GPU, bisection, the busbw an 8-GPU all_reduce
reaches, the best and worst GPU pair) and writes one HTML page with the three fabrics drawn on
the same bandwidth colour scale, the all_reduce busbw curves and the P2P matrices. The page
goes to DIR (default: a new temporary directory) and embeds plotly.js, so it opens offline.
For the full report of any systems, run ``dgxtopo report``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import plotly.io as pio

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)
import models
import topo
from models.present.plot import busbw_figure, p2p_figure
from topo.plot import fabric_figure
from topo.units import GiB, to_GBps

SYSTEMS = ("dgx1", "dgx1v", "dgx2")
SIZES = 2 ** np.arange(10, 34, 2)  # 1 KiB to 8 GiB [bytes]


def compare(out_dir: Path) -> Path:
    fabrics = {name: topo.build(name) for name in SYSTEMS}
    print(f"{'system':8}{'GPUs':>5}{'NVLink/GPU':>12}{'bisection':>11}{'busbw 8 GPUs':>14}"
          f"{'best pair':>11}{'worst pair':>12}   (GB/s; all_reduce at 1 GiB)")
    curves = {}
    for name, G in fabrics.items():
        s = topo.summarize(G)
        eight = models.estimate(G, "all_reduce", GiB, gpus=range(8))
        pairs = models.pairwise(G, "all_reduce", GiB)
        curves[f"{s.name}, 8 GPUs"] = models.estimate(G, "all_reduce", SIZES, gpus=range(8))
        print(f"{name:8}{s.gpus:>5}{to_GBps(s.injection):>12.0f}{to_GBps(s.bisection):>11.0f}"
              f"{to_GBps(eight.busbw):>14.1f}{to_GBps(np.nanmax(pairs)):>11.1f}"
              f"{to_GBps(np.nanmin(pairs)):>12.1f}")
    curves["DGX-2, 16 GPUs"] = models.estimate(fabrics["dgx2"], "all_reduce", SIZES)

    # The same colour and width scale on every fabric, so that equal bandwidth looks equal.
    bandwidths = [d["bandwidth"] for G in fabrics.values() for _, _, d in G.edges(data=True)]
    scale = (min(bandwidths), max(bandwidths))
    figures = [fabric_figure(G, color_range=scale, host_layer=False,
                             title=f"{G.graph['name']}: NVLink fabric") for G in fabrics.values()]
    figures.append(busbw_figure(curves, title="all_reduce busbw by message size (predicted)"))
    figures += [p2p_figure(models.p2p_report(G)) for G in fabrics.values()]
    page = out_dir / "architect_comparison.html"
    divs = [pio.to_html(fig, full_html=False, include_plotlyjs=(i == 0), div_id=f"figure-{i}")
            for i, fig in enumerate(figures)]
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'><title>DGX-1 vs DGX-1V vs DGX-2"
                    "</title></head><body>" + "\n".join(divs) + "</body></html>", encoding="utf-8")
    print(f"\n{len(figures)} figures written to {page} (open it in a browser; it works offline)")
    return page


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--out", type=Path, help="directory for the HTML page (default: a temporary one)")
    # Known options only: a runner such as the test suite may leave its own in sys.argv.
    args, ignored = parser.parse_known_args(argv)
    if ignored:
        print(f"ignoring arguments {' '.join(ignored)}", file=sys.stderr)
    if args.out is not None and not args.out.is_dir():
        parser.error(f"--out {args.out}: expected an existing directory")
    out = args.out if args.out is not None else Path(tempfile.mkdtemp(prefix="dgx-topo-"))
    compare(out)


if __name__ == "__main__":
    main()
