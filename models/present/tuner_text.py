"""The words of ``dgxtopo tuner``: what was written, one line per band of the tuner config."""

from __future__ import annotations

from topo.select import format_gpu_ids

from .format import format_bytes


def tuner_text(rows, *, system: str, path: str) -> str:
    """The summary of a written tuner config (``rows``: :class:`models.studies.tuner.TunerRows`)."""
    first = rows[0]
    head = (f"# dgxtopo: wrote {path}: {len(rows)} rows, NCCL {rows.nccl}'s choices as the model predicts them "
            f"on {system}, GPUs {format_gpu_ids(rows.gpus)} ({first.nnodes} node{'s' if first.nnodes > 1 else ''}, "
            f"{first.nranks} ranks)")
    table = [f"  {'collective':<15} {'min_bytes':>10} {'max_bytes':>10}  {'band':<22} {'algorithm':<10} "
             f"{'protocol':<9} channels"]
    for row in rows:
        band = f"{format_bytes(row.min_bytes)} - {format_bytes(row.max_bytes)}"
        table.append(f"  {row.collective:<15} {row.min_bytes:>10} {row.max_bytes:>10}  {band:<22} {row.algorithm:<10} "
                     f"{row.protocol:<9} {row.nchannels}")
    return "\n".join([head] + table)
