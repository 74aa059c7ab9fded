"""The words of ``dgxtopo graphs``: NCCL's graph dump beside the model's channel search
(:class:`models.studies.graph_compare.GraphComparison`), as text and as ``--json``."""

from __future__ import annotations

from topo.select import format_gpu_ids
from topo.units import to_GBps

from .text import format_table

__all__ = ["graphs_text", "graphs_json"]

#: How a differing channel or field is marked.
MARK = "*"


def _side(fields) -> str:
    if fields is None:
        return "none"
    same = "same channels" if fields["same_channels"] else "channels differ"
    return (f"{fields['nchannels']} x {to_GBps(fields['bw_intra']):g} GB/s (bwInter "
            f"{to_GBps(fields['bw_inter']):g}), {fields['type_intra']}/{fields['type_inter']}, {same}")


def _order(gpus) -> str:
    return "-" if gpus is None else " ".join(map(str, gpus))


def graphs_text(comparison, *, system: str, path: str) -> str:
    """NCCL's graphs from ``path`` and the model's, graph by graph (both sides' channels,
    bandwidths and path types, the fields that differ) and channel by channel (the GPU order of
    each side, ``*`` where they differ)."""
    c = comparison
    verdict = "the same" if c.same else "differences marked *"
    lines = [f"# dgxtopo: NCCL's graphs from {path} beside the model's channel search on {system}, GPUs "
             f"{format_gpu_ids(c.gpus)} (NCCL {c.nccl}): {verdict}"]
    for g in c.graphs:
        mark = f"  {MARK} differs: {', '.join(g.differs)}" if g.differs else ""
        lines.append(f"{g.name}: NCCL {_side(g.nccl)}; model {_side(g.model)}{mark}")
        own = [p for p in c.channels if p.graph == g.name]
        nets = any(p.nccl_nets for p in own)  # across nodes: the NICs NCCL's channels enter and leave by
        rows = [(str(p.channel), _order(p.nccl), _order(p.model),
                 *([" ".join(map(str, p.nccl_nets)) or "-"] if nets else []), "" if p.same else MARK)
                for p in own]
        if rows:
            table = format_table(["channel", "NCCL", "model", *(["NCCL nets"] if nets else []), ""], rows)
            lines += ["  " + line.rstrip() for line in table.splitlines()]
    return "\n".join(lines)


def graphs_json(comparison, *, system: str, path: str) -> dict:
    """``dgxtopo graphs --json``: the file, system, GPUs and release, whether all agree, each
    graph's two sides and the fields that differ, and one record per channel."""
    c = comparison
    return {"file": path, "system": system, "gpus": list(c.gpus), "nccl": c.nccl, "same": c.same,
            "graphs": [{"graph": g.name, "nccl": g.nccl, "model": g.model, "differs": list(g.differs)}
                       for g in c.graphs],
            "channels": c.to_records()}
