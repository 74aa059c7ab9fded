"""What every result type shares: tidy records.

Results are numbers. Each result type offers ``to_records()``: tidy rows, a list of flat dicts
of Python scalars that pandas (``pandas.DataFrame(result.to_records())``) or plotly express
take as they are. Column names follow one convention everywhere:

- SI units, written as the name's suffix: ``time_s``, ``latency_s`` [s]; ``busbw_Bps``,
  ``bandwidth_Bps`` [B/s]; ``memory_bytes`` [B]; ``nbytes`` is nccl-tests' message size ``S``
  [B]; a ratio or a count has no suffix (``ratio``, ``nchannels``);
- GPU sets (``gpus``, ``representative``, ...) as tuples of GPU ids in the set's order
  (``(0, 1, 2, 3)``; a send's source first), which a caller uses as they are; a tuple is
  hashable, so the column still groups, counts and sorts like a label
  (``DataFrame.groupby("gpus")``), and :func:`topo.select.format_gpu_ids` writes one as the
  compact text the tables print (``"0-3,5"``); a list of GPU sets (a task's ``images``) is a
  tuple of them;
- every row of one result has the same keys, in the same order.

Words (tables, explanations, JSON shapes) are built from these numbers in :mod:`models.present`.

Examples
--------
>>> tidy_records({"nbytes": [8, 1024], "time_s": [1e-6, 2e-6], "collective": "all_reduce"})
[{'nbytes': 8, 'time_s': 1e-06, 'collective': 'all_reduce'}, {'nbytes': 1024, 'time_s': 2e-06, 'collective': 'all_reduce'}]
"""

from __future__ import annotations

import numpy as np

from topo.errors import DgxTopoError

__all__ = ["tidy_records", "gpu_set", "gpu_sets"]


class _GpuSet(tuple):
    """A GPU set (or a tuple of them) bound for one cell of a record: :func:`tidy_records`
    keeps it whole (a plain tuple), where another tuple is a column."""

    __slots__ = ()


def gpu_set(ids) -> tuple:
    """GPU ids as one cell of a record: a tuple of ints, in their order.

    >>> tidy_records({"gpus": gpu_set([0, 3]), "nbytes": [8, 16]})
    [{'gpus': (0, 3), 'nbytes': 8}, {'gpus': (0, 3), 'nbytes': 16}]
    """
    return _GpuSet(int(i) for i in ids)


def gpu_sets(sets) -> tuple:
    """Several GPU sets as one cell of a record: a tuple of :func:`gpu_set` tuples (``()`` for none)."""
    return _GpuSet(tuple(int(i) for i in ids) for ids in sets)


def _scalar(value):
    """A Python scalar (int, float, str, bool or None) from a numpy or Python one, or a GPU
    set's tuple (:func:`gpu_set`)."""
    if isinstance(value, _GpuSet):
        return tuple(value)
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise DgxTopoError(f"a record holds scalars only, received {type(value).__name__} {value!r}")


def tidy_records(columns) -> list:
    """Rows from columns: a scalar is repeated on every row, a 1-d sequence gives one entry per row.

    Parameters
    ----------
    columns : mapping of str to scalar or array_like
        In the order the keys should have. Every list, tuple or 1-d array is a column, all of
        the same length (the rows); a 0-d array counts as a scalar, and so does a GPU set of
        :func:`gpu_set` (a cell, repeated on every row).

    Returns
    -------
    list of dict
        One dict per row (one row when every column is a scalar), values as Python scalars
        (GPU sets as tuples of ints).

    Raises
    ------
    topo.DgxTopoError
        For columns of different lengths, or a value that is not a scalar.
    """
    each, length = {}, None
    for key, value in columns.items():
        if isinstance(value, _GpuSet):
            continue  # one cell
        if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim == 1):
            if length is not None and len(value) != length:
                raise DgxTopoError(f"record column {key!r} has {len(value)} entries, expected {length}")
            length = len(value)
            each[key] = value
    same = {key: _scalar(value.item() if isinstance(value, np.ndarray) else value)
            for key, value in columns.items() if key not in each}
    return [{key: _scalar(each[key][i]) if key in each else same[key] for key in columns}
            for i in range(1 if length is None else length)]
