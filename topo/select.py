"""Choosing GPUs: ids as users write them, checked against a fabric.

A GPU id is the GPU's position in :func:`topo.gpus` order (by host, then CUDA index): the
CUDA device number in a single system, ``host x GPUs per host + local index`` in a cluster.

A selection is written as

* text: ids and ascending ranges separated by commas, ``"0-3"``, ``"0,3,5-7"``;
* a list, tuple, range or other iterable of ids (Python or numpy integers);
* a 1-d numpy array of an integer dtype.

Order is kept. Refused, with a :class:`GpuSelectionError` naming the value received: bools,
floats (even integral ones: an id is not a quantity), strings inside a list, negative ids,
an empty selection, and **duplicates** (a GPU cannot be two ranks of one communicator, so
``[0, 0]`` and ``"0-3,2"`` are errors, not silently merged). A single bare integer is
refused too (``gpus=4`` could mean GPU 4 or four GPUs): write ``[4]``.

Examples
--------
>>> parse_gpu_list("0,3,5-7")
[0, 3, 5, 6, 7]
>>> import numpy as np
>>> parse_gpu_ids(np.array([4, 0]))
(4, 0)
>>> from topo import dgx1v
>>> select_gpus(dgx1v(), [4, 0])
['gpu4', 'gpu0']
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from typing import TypeAlias

import networkx as nx
import numpy as np

from .errors import DgxTopoError
from .schema import gpus as gpu_nodes

__all__ = ["format_gpu_ids", "GpuSelectionError", "MAX_GPU_ID", "parse_gpu_list", "parse_gpu_ids", "select_gpus"]

#: Ids at or above this are refused when no fabric bounds them (a cluster at the host limit
#: of 4,096 DGX-2 has 65,536 GPUs).
MAX_GPU_ID = 2**20

#: What a ``gpus`` argument may be, for annotations: the forms :func:`parse_gpu_ids` reads, or
#: None (every GPU) where the function says so.
GpuIds: TypeAlias = "str | Iterable[int] | np.ndarray | None"

_ITEM = re.compile(r"([0-9]+)(?:-([0-9]+))?")
_EXPECTED = "expected GPU ids as a list such as [0, 3] or a text such as '0-3' or '0,3,5-7'"


class GpuSelectionError(DgxTopoError):
    """GPU ids that are malformed, out of range or repeated."""


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:40] + f"... ({len(text)} characters)"


def _check_id(gpu: int, limit: int, where: str) -> int:
    if gpu < 0 or gpu >= limit:
        raise GpuSelectionError(f"GPU id {gpu} out of range: expected 0 to {limit - 1}{where}")
    return gpu


def _no_duplicates(ids) -> None:
    seen = set()
    for gpu in ids:
        if gpu in seen:
            raise GpuSelectionError(f"GPU id {gpu} given twice: expected distinct GPUs")
        seen.add(gpu)


def parse_gpu_list(text: str, *, limit: int = MAX_GPU_ID, where: str = "") -> list[int]:
    """Parse ``"0-3"``, ``"0,3,5-7"`` into GPU ids, in the order written.

    Parameters
    ----------
    text : str
    limit : int
        Ids must be below this (checked before a range is expanded).
    where : str
        Appended to out-of-range messages (``" on DGX-1V"``).

    Returns
    -------
    list of int

    Raises
    ------
    GpuSelectionError
        For anything but comma-separated ids and ascending ranges, ids at or above
        ``limit``, or an id given twice.
    """
    if not isinstance(text, str):
        raise GpuSelectionError(f"malformed GPU list {_show(text)}: {_EXPECTED}")
    ids: list[int] = []
    for item in text.split(","):
        match = _ITEM.fullmatch(item.strip())
        if not match:
            raise GpuSelectionError(
                f"malformed GPU list {_show(text)}: expected ids and ranges like 0-3 or 0,3,5-7, "
                f"received item {_show(item.strip())}")
        first_text, last_text = match.group(1), match.group(2) or match.group(1)
        for number in (first_text, last_text):
            if len(number.lstrip("0")) > 9:
                raise GpuSelectionError(f"GPU id {_show(number)} out of range: expected 0 to "
                                        f"{limit - 1}{where}")
        first, last = int(first_text), int(last_text)
        if last < first:
            raise GpuSelectionError(f"malformed GPU range {item.strip()!r} in {_show(text)}: expected "
                                    f"an ascending range such as {last}-{first}")
        _check_id(last, limit, where)
        ids.extend(range(first, last + 1))
        if len(ids) > limit:
            break  # more ids than distinct ids below limit: a duplicate, found below
    _no_duplicates(ids)
    return ids


def parse_gpu_ids(gpus: GpuIds, *, limit: int = MAX_GPU_ID, where: str = "") -> tuple[int, ...]:
    """GPU ids from any accepted form (see the module docstring), checked for form only.

    Parameters
    ----------
    gpus : str, iterable of int, or numpy.ndarray
    limit : int
        Ids must be below this; also bounds how much of an iterable is read.
    where : str
        Appended to out-of-range messages.

    Returns
    -------
    tuple of int
        In the order given.

    Raises
    ------
    GpuSelectionError
        See the module docstring.
    """
    if isinstance(gpus, str):
        ids = parse_gpu_list(gpus, limit=limit, where=where)
    elif isinstance(gpus, np.ndarray):
        if gpus.ndim != 1 or gpus.dtype.kind not in "iu":
            raise GpuSelectionError(
                f"GPU ids as an array must be 1-d of an integer dtype, received shape {gpus.shape} "
                f"dtype {gpus.dtype}: {_EXPECTED}")
        ids = [int(g) for g in gpus[: limit + 1]]
    elif isinstance(gpus, (bool, np.bool_, int, np.integer)):
        raise GpuSelectionError(
            f"GPU selection must be a list of ids, received the single number {gpus!r}: {_EXPECTED} "
            f"(for one GPU write [{gpus!r}])")
    elif isinstance(gpus, Iterable) and not isinstance(gpus, (bytes, Mapping)):
        ids = []
        for gpu in itertools.islice(gpus, limit + 1):
            if isinstance(gpu, (bool, np.bool_)) or not isinstance(gpu, (int, np.integer)):
                raise GpuSelectionError(
                    f"GPU id must be an integer, received {_show(gpu)} ({type(gpu).__name__})")
            ids.append(int(gpu))
    else:
        raise GpuSelectionError(f"GPU selection of type {type(gpus).__name__} ({_show(gpus)}): "
                                f"{_EXPECTED}")
    if not ids:
        raise GpuSelectionError("empty GPU selection: expected at least one GPU id")
    for gpu in ids:
        _check_id(gpu, limit, where)
    _no_duplicates(ids)
    return tuple(ids)


def select_gpus(G: nx.DiGraph, gpus: GpuIds = None) -> list:
    """GPU nodes of ``G`` for the given ids (all GPUs when ``gpus`` is None).

    Parameters
    ----------
    G : networkx.DiGraph
        A fabric.
    gpus : str, iterable of int or numpy.ndarray, optional
        GPU ids in any form of :func:`parse_gpu_ids`. Order is kept.

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
    ids = parse_gpu_ids(gpus, limit=len(nodes), where=f" on {G.graph.get('name', 'this fabric')}")
    return [nodes[g] for g in ids]


def format_gpu_ids(ids) -> str:
    """GPU ids with runs of three or more consecutive ids written as ranges, in the order given.

    What :func:`topo.select.parse_gpu_list` reads back: ``[0, 1, 2, 3, 8, 9]`` -> ``"0-3,8,9"``.
    """
    ids = [int(i) for i in ids]
    parts, start = [], 0
    for i in range(1, len(ids) + 1):
        if i == len(ids) or ids[i] != ids[i - 1] + 1:
            run = ids[start:i]
            parts += [f"{run[0]}-{run[-1]}"] if len(run) >= 3 else [str(g) for g in run]
            start = i
    return ",".join(parts)
