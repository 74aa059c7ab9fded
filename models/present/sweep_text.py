"""Words of a what-if sweep (:mod:`models.studies.sweep`): its table and a terminal line (its JSON:
:func:`models.present.json_shapes.sweep_json`).

Examples
--------
>>> import topo
>>> from models.studies.sweep import sweep
>>> s = sweep(topo.dgx2(), "all_reduce", 2**30, fail_each="nvswitch")
>>> print(format_sweep(s, top=1).splitlines()[0])
all_reduce 1 GiB on DGX-2 (16 GPUs), failing each NVSwitch: 12 cases, 2 distinct estimates
"""

from __future__ import annotations

import math
from types import MappingProxyType

from topo.units import to_GBps, to_us

from ..studies.sweep import Sweep, SweepRow, SweepStatus
from .format import format_bytes, format_percent
from .text import format_table

__all__ = ["format_sweep", "sweep_row_note", "terminal_progress", "FAIL_EACH_TEXT"]

#: What each ``fail_each`` fails, in words.
FAIL_EACH_TEXT = MappingProxyType({"nvlink": "one link of each NVLink bundle", "nvswitch": "each NVSwitch",
                                   "nic": "each NIC", "gpu": "each GPU of the job (the job runs on the others)"})


def sweep_row_note(row: SweepRow) -> str:
    """What a failure case leaves of the job, in words ('' when the collective runs on every GPU
    of the job): the note column of :func:`format_sweep`.

    Examples
    --------
    >>> import topo
    >>> from models.studies.sweep import sweep
    >>> s = sweep(topo.dgx1v(), "all_reduce", 2**30, fail_each="gpu", gpus="0-3")
    >>> sweep_row_note(s.rows[0])
    'the job runs on 3 GPUs'
    """
    notes = []
    if row.status is SweepStatus.DISCONNECTS_FABRIC:
        notes.append(f"disconnects the fabric: {row.cause}")
    elif row.status is SweepStatus.NO_GPU_LEFT:
        notes.append("no GPU of the job is left")
    elif row.status is SweepStatus.CANNOT_COMMUNICATE:
        notes.append(f"the job's GPUs cannot communicate: {row.cause}")
    if row.status in (SweepStatus.RUNS, SweepStatus.CANNOT_COMMUNICATE) and row.gpus_lost:
        notes.append(f"the job runs on {row.nranks} GPU{'s' if row.nranks != 1 else ''}")
    return "; ".join(notes)


def format_sweep(sweep: Sweep, top: int | None = None) -> str:
    """A text table of the ranking (the ``top`` worst rows, all by default)."""
    what = FAIL_EACH_TEXT[sweep.fail_each] + (", every pair" if sweep.pairs else "")
    gbps = lambda b: f"{to_GBps(b):.1f}"  # noqa: E731
    lines = [f"{sweep.collective} {format_bytes(sweep.nbytes)} on {sweep.fabric} "
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
                 "inf" if math.isinf(r.time) else f"{to_us(r.time):.1f}", format_percent(r.loss)]
        if sweep.p2p:
            cells += ["-" if r.p2p_pair is None else "->".join(map(str, r.p2p_pair)),
                      "-" if r.p2p is None else gbps(r.p2p),
                      "-" if r.p2p_loss is None else format_percent(r.p2p_loss)]
        table.append(cells + [sweep_row_note(r)])
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
