"""What every result type shares: tidy records.

Results are numbers. Each result type offers ``to_records()``: tidy rows, a list of flat dicts
of Python scalars that pandas (``pandas.DataFrame(result.to_records())``) or plotly express
take as they are. Column names follow one convention everywhere:

- SI units, written as the name's suffix: ``time_s``, ``latency_s`` [s]; ``busbw_Bps``,
  ``bandwidth_Bps`` [B/s]; ``memory_bytes`` [B]; ``nbytes`` is nccl-tests' message size ``S``
  [B]; a ratio or a count has no suffix (``ratio``, ``nchannels``);
- GPU sets as the compact text of :func:`topo.select.format_gpu_ids` (``"0-3,5"``), so that
  a column groups and sorts like a label;
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

__all__ = ["tidy_records"]


def _scalar(value):
    """A Python scalar (int, float, str, bool or None) from a numpy or Python one."""
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
        In the order the keys should have. Every 1-d column has the same length (the rows); a
        0-d array counts as a scalar.

    Returns
    -------
    list of dict
        One dict per row (one row when every column is a scalar), values as Python scalars.

    Raises
    ------
    topo.DgxTopoError
        For columns of different lengths, or a value that is not a scalar.
    """
    each, length = {}, None
    for key, value in columns.items():
        if isinstance(value, (list, tuple, np.ndarray)) and np.ndim(value) == 1:
            if length is not None and len(value) != length:
                raise DgxTopoError(f"record column {key!r} has {len(value)} entries, expected {length}")
            length = len(value)
            each[key] = value
    same = {key: _scalar(value.item() if isinstance(value, np.ndarray) else value)
            for key, value in columns.items() if key not in each}
    return [{key: _scalar(each[key][i]) if key in each else same[key] for key in columns}
            for i in range(1 if length is None else length)]
