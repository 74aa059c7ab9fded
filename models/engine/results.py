"""What every result type shares: tidy records, and a clear error where words used to be.

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
A method that moved there is a :class:`Moved` attribute: reading it raises an AttributeError
that names the new place; or, for a release or two, a :class:`MovedMethod`: it still works, and
warns (DeprecationWarning) naming the function that builds the words now; an attribute that
held a sentence is a :class:`MovedField`, which warns and returns the words built from the
result's numbers. A module function
that moved is found the same way through the module's ``__getattr__``
(:func:`topo.faces.moved_names`).

Examples
--------
>>> tidy_records({"nbytes": [8, 1024], "time_s": [1e-6, 2e-6], "collective": "all_reduce"})
[{'nbytes': 8, 'time_s': 1e-06, 'collective': 'all_reduce'}, {'nbytes': 1024, 'time_s': 2e-06, 'collective': 'all_reduce'}]
"""

from __future__ import annotations

import functools
import importlib
import json
import warnings

import numpy as np

from topo.errors import DgxTopoError

__all__ = ["tidy_records", "gpu_set", "gpu_sets", "Moved", "MovedMethod", "MovedField"]


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

class Moved:
    """A result method that moved to :mod:`models.present` in dgx-topo 0.3.

    Reading it (``estimate.explain``) raises an AttributeError naming the function that
    builds the words now, so a 0.2 caller learns where to go.

    Parameters
    ----------
    new : str
        The call to use instead, e.g. ``"models.present.explain.explain(estimate)"``.
    """

    def __init__(self, new: str):
        self.new = new
        self.name = "this method"

    def __set_name__(self, owner, name: str) -> None:
        self.name = f"{owner.__name__}.{name}"

    def __get__(self, instance, owner=None):
        raise AttributeError(f"{self.name} moved to {self.new} in dgx-topo 0.3 (results hold numbers; "
                             f"their words are built in models.present)")


class MovedField:
    """A result attribute that held words until dgx-topo 0.3 (a sentence), now built in
    :mod:`models.present` from the result's numbers.

    Reading it (``plan.reason``) warns once per call site with a DeprecationWarning naming the
    function that builds the words, and returns that function's words for the result, so a 0.2
    caller keeps working while it moves. The function is imported when the attribute is read (a
    lazy import by name: the result's floor never imports :mod:`models.present`).

    Parameters
    ----------
    new : str
        The dotted name of the function, e.g. ``"models.present.plan_text.fit_note"``; it takes
        the result (or ``field`` of it) and returns the words the attribute held.
    field : str, optional
        The words are those of this field of the result alone (``Tuning.reason``, the sentence
        of ``Tuning.why``): the function takes the field's value.

    Examples
    --------
    >>> import warnings
    >>> class Seconds(float):
    ...     words = MovedField("models.present.format.format_us")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     text = Seconds(2e-6).words
    >>> text, str(caught[0].message)
    ('2.00', 'Seconds.words moved to models.present.format.format_us in dgx-topo 0.3: call it on the result')
    """

    def __init__(self, new: str, *, field: str | None = None):
        self.new = new
        self.field = field
        self.name = "this attribute"

    def __set_name__(self, owner, name: str) -> None:
        self.name = f"{owner.__name__}.{name}"

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        on = "the result" if self.field is None else f"{type(instance).__name__}.{self.field}"
        warnings.warn(f"{self.name} moved to {self.new} in dgx-topo 0.3: call it on {on}",
                      DeprecationWarning, stacklevel=2)
        module, _, name = self.new.rpartition(".")
        function = getattr(importlib.import_module(module), name)
        return function(instance if self.field is None else getattr(instance, self.field))


class MovedMethod:
    """A result method whose words moved to :mod:`models.present` in dgx-topo 0.3, still callable.

    Reading it (``plan.to_dict``) warns once per call site with a DeprecationWarning naming the
    function to call instead, and returns that function bound to the result, so a 0.2 caller
    keeps working while it moves. The function is imported when the method is read (a lazy
    import by name: the result's floor never imports :mod:`models.present`).

    Parameters
    ----------
    new : str
        The dotted name of the function, e.g. ``"models.present.json_shapes.plan_json"``; it
        takes the result first, then the method's arguments.
    json_text : bool
        The method returned the function's dict as JSON text (``json.dumps(..., indent=2)``).
    **keywords
        Fixed keyword arguments of the function (``verbose=True``).

    Examples
    --------
    >>> import warnings
    >>> class Seconds(float):
    ...     describe = MovedMethod("models.present.format.format_us")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     text = Seconds(2e-6).describe()
    >>> text, str(caught[0].message)
    ('2.00', 'Seconds.describe moved to models.present.format.format_us in dgx-topo 0.3: call it from there')
    """

    def __init__(self, new: str, *, json_text: bool = False, **keywords):
        self.new = new
        self.json_text = json_text
        self.keywords = keywords
        self.name = "this method"

    def __set_name__(self, owner, name: str) -> None:
        self.name = f"{owner.__name__}.{name}"

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        warnings.warn(f"{self.name} moved to {self.new} in dgx-topo 0.3: call it from there",
                      DeprecationWarning, stacklevel=2)
        module, _, name = self.new.rpartition(".")
        function = functools.partial(getattr(importlib.import_module(module), name), instance, **self.keywords)
        if not self.json_text:
            return function
        return lambda *args, **kwargs: json.dumps(function(*args, **kwargs), indent=2)
