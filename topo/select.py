"""Choosing GPUs: ids as users write them, checked against a fabric.

A GPU id is the GPU's position in :func:`topo.gpus` order (by host, then CUDA index): the
CUDA device number in a single system, ``host x GPUs per host + local index`` in a cluster.

Examples
--------
>>> parse_gpu_list("0,3,5-7")
[0, 3, 5, 6, 7]
>>> from topo import dgx1v
>>> select_gpus(dgx1v(), [4, 0])
['gpu4', 'gpu0']
"""

from __future__ import annotations

import re

from .errors import DgxTopoError
from .schema import gpus as gpu_nodes

__all__ = ["GpuSelectionError", "parse_gpu_list", "select_gpus"]

_ITEM = re.compile(r"^(\d+)(?:-(\d+))?$")


class GpuSelectionError(DgxTopoError):
    """GPU ids that are malformed, out of range or repeated."""


def parse_gpu_list(text: str) -> list[int]:
    """Parse ``"0-3"``, ``"0,3,5-7"`` into GPU ids, in the order written.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of int

    Raises
    ------
    GpuSelectionError
        For anything but comma-separated ids and ascending ranges.
    """
    ids: list[int] = []
    for item in str(text).split(","):
        match = _ITEM.match(item.strip())
        if not match:
            raise GpuSelectionError(
                f"malformed GPU list {text!r}: expected ids and ranges like 0-3 or 0,3,5-7, "
                f"received item {item.strip()!r}")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise GpuSelectionError(f"malformed GPU range {item.strip()!r} in {text!r}: expected "
                                    f"an ascending range such as {last}-{first}")
        ids.extend(range(first, last + 1))
    return ids


def select_gpus(G, gpus=None) -> list:
    """GPU nodes of ``G`` for the given ids (all GPUs when ``gpus`` is None).

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric.
    gpus : iterable of int or str, optional
        GPU ids, or a string for :func:`parse_gpu_list`. Order is kept.

    Returns
    -------
    list
        Node ids.

    Raises
    ------
    GpuSelectionError
        For an id out of range, a repeated id, a non-integer id or an empty selection.
    """
    nodes = gpu_nodes(G)
    if gpus is None:
        return nodes
    ids = parse_gpu_list(gpus) if isinstance(gpus, str) else list(gpus)
    if not ids:
        raise GpuSelectionError("empty GPU selection: expected at least one GPU id")
    seen = set()
    for gpu in ids:
        if isinstance(gpu, bool) or not isinstance(gpu, int):
            raise GpuSelectionError(f"GPU id must be an integer, received {gpu!r}")
        if not 0 <= gpu < len(nodes):
            raise GpuSelectionError(
                f"GPU id {gpu} out of range: expected 0 to {len(nodes) - 1} on "
                f"{G.graph.get('name', 'this fabric')}")
        if gpu in seen:
            raise GpuSelectionError(f"GPU id {gpu} given twice: expected distinct GPUs")
        seen.add(gpu)
    return [nodes[g] for g in ids]
