"""Words of a what-if sweep (:mod:`models.studies.sweep`): its table, its JSON, a terminal line.

Examples
--------
>>> import topo
>>> from models.studies.sweep import sweep
>>> s = sweep(topo.dgx2(), "all_reduce", 2**30, fail_each="nvswitch")
>>> print(format_sweep(s, top=1).splitlines()[0])
all_reduce 1 GiB on DGX-2 (16 GPUs), failing each NVSwitch: 12 cases, 2 distinct estimates
>>> sorted(sweep_dict(s)), sorted(sweep_dict(s)["rows"][0])
(['baseline', 'rows'], ['busbw_gbps', 'failed', 'loss', 'time_us'])
"""

from __future__ import annotations

import json
import math
from types import MappingProxyType

from topo.units import to_GBps, to_us

from ..studies.sweep import Sweep
from .text import format_table

__all__ = ["format_sweep", "sweep_dict", "sweep_json", "terminal_progress", "size_text", "percent",
           "FAIL_EACH_TEXT"]

#: What each ``fail_each`` fails, in words.
FAIL_EACH_TEXT = MappingProxyType({"nvlink": "one link of each NVLink bundle", "nvswitch": "each NVSwitch",
                                   "nic": "each NIC", "gpu": "each GPU of the job (the job runs on the others)"})


def size_text(nbytes: int) -> str:
    """A message size in binary units, 4 significant digits (``1 GiB``, ``64 MiB``)."""
    value, units = float(nbytes), ("B", "KiB", "MiB", "GiB", "TiB")
    step = 0
    while value >= 1024 and step < len(units) - 1:
        value /= 1024
        step += 1
    return f"{value:.4g} {units[step]}"


def percent(fraction: float) -> str:
    """A fraction as a percentage with one decimal (never ``-0.0%``)."""
    return f"{100 * fraction + 0.0:.1f}%".replace("-0.0%", "0.0%")


def sweep_dict(sweep: Sweep) -> dict:
    """``{"baseline": {"busbw_gbps", "time_us"}, "rows": [{"failed", "busbw_gbps", "time_us",
    "loss"}, ...]}``; an infinite time is ``None`` (JSON null)."""
    def us(t):
        return None if math.isinf(t) else float(to_us(t))
    return {"baseline": {"busbw_gbps": float(to_GBps(sweep.baseline_busbw)), "time_us": us(sweep.baseline_time)},
            "rows": [{"failed": r.label, "busbw_gbps": float(to_GBps(r.busbw)), "time_us": us(r.time),
                      "loss": r.loss} for r in sweep.rows]}


def sweep_json(sweep: Sweep) -> str:
    """:func:`sweep_dict` as JSON text (strict: no NaN or Infinity)."""
    return json.dumps(sweep_dict(sweep), indent=2, allow_nan=False)


def format_sweep(sweep: Sweep, top: int | None = None) -> str:
    """A text table of the ranking (the ``top`` worst rows, all by default)."""
    what = FAIL_EACH_TEXT[sweep.fail_each] + (", every pair" if sweep.pairs else "")
    gbps = lambda b: f"{to_GBps(b):.1f}"  # noqa: E731
    lines = [f"{sweep.collective} {size_text(sweep.nbytes)} on {sweep.fabric} "
             f"({len(sweep.gpus)} GPUs), failing {what}: {len(sweep.rows)} cases, "
             f"{sweep.evaluations} distinct estimates",
             f"baseline: busbw {gbps(sweep.baseline_busbw)} GB/s, time "
             f"{to_us(sweep.baseline_time):.1f} us"
             + (";  P2P: the pair of the job whose P2P bandwidth falls most" if sweep.p2p else "")]
    headers = ["rank", "failed", "busbw GB/s", "time us", "loss"]
    align = "<<>>>"
    if sweep.p2p:
        headers += ["P2P pair", "P2P GB/s", "P2P loss"]
        align += "<>>"
    headers.append("note")
    align += "<"
    table = []
    for rank, r in enumerate(sweep.rows[:top] if top is not None else sweep.rows, 1):
        cells = [str(rank), r.label, gbps(r.busbw),
                 "inf" if math.isinf(r.time) else f"{to_us(r.time):.1f}", percent(r.loss)]
        if sweep.p2p:
            cells += ["-" if r.p2p_pair is None else "->".join(map(str, r.p2p_pair)),
                      "-" if r.p2p is None else gbps(r.p2p),
                      "-" if r.p2p_loss is None else percent(r.p2p_loss)]
        table.append(cells + [r.note])
    lines.append(format_table(headers, table, align=align))
    if top is not None and top < len(sweep.rows):
        lines.append(f"... {len(sweep.rows) - top} more")
    return "\n".join(lines)


def terminal_progress(stream=None, *, label: str = "whatif"):
    """A ``progress(done, total)`` callback that redraws one status line on a terminal.

    Writes nothing unless ``stream`` is a terminal (so piped ``--json`` output stays clean).

    Parameters
    ----------
    stream : file, optional
        Default ``sys.stderr``.
    label : str
        Text before the counts.

    Returns
    -------
    callable
    """
    import sys

    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    if not (callable(isatty) and isatty()):
        return lambda done, total: None

    def show(done, total):
        stream.write(f"\r{label}: {done}/{total}")
        if done >= total:
            stream.write("\n")
        stream.flush()
    return show
