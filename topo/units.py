"""Unit constants, the display conversions, and the parsers of sizes and counts.

Everything inside dgx-topo is SI: bytes, seconds, bytes per second. These constants make
input readable (``25 * GB`` is 25e9 B/s when used as a bandwidth) and the two conversions
below are the only place where numbers leave SI, at the display edge, in the units
nccl-tests prints: decimal GB/s (1e9 B/s, nccl-tests ``/ 1.0E9``) and microseconds.

Inputs that are sizes or counts go through :func:`parse_nbytes` and :func:`parse_count`,
shared by the API and the command line, so both accept and refuse the same values; the API's
own checks of a whole number and of a bandwidth are :func:`is_int` and
:func:`positive_bandwidth`, one implementation for every module.

Examples
--------
>>> from topo.units import GB, us, to_GBps, to_us
>>> to_GBps(25 * GB)
25.0
>>> to_us(1.5 * us)
1.5
>>> parse_nbytes("256M"), parse_nbytes(2.0**30)
(268435456, 1073741824)
>>> parse_nbytes(["8", "64K", 1024]).tolist()
[8, 65536, 1024]
>>> parse_count("5", name="--top")
5
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TypeAlias

import numpy as np

from .errors import CountError, SizeError

__all__ = [
    "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB",
    "ns", "us", "ms",
    "to_GBps", "to_us",
    "MAX_NBYTES", "MAX_COUNT", "SIZE_SUFFIXES", "parse_nbytes", "parse_count",
    "is_int", "positive_bandwidth",
]

# Decimal multiples: bandwidths and line rates (1 GB/s = 1e9 B/s, as nccl-tests reports).
KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
# Binary multiples: buffer sizes as nccl-tests' -b/-e accept them (64K, 256M, 1G).
KiB = 2**10
MiB = 2**20
GiB = 2**30
TiB = 2**40
# Times.
ns = 1e-9
us = 1e-6
ms = 1e-3


def to_GBps(bandwidth):
    """Convert a bandwidth from B/s to GB/s (1e9 B/s) for display.

    Parameters
    ----------
    bandwidth : float or numpy.ndarray
        Bandwidth. [B/s]

    Returns
    -------
    float or numpy.ndarray
        The same bandwidth. [GB/s]
    """
    return bandwidth / GB


def to_us(seconds):
    """Convert a time from seconds to microseconds for display.

    Parameters
    ----------
    seconds : float or numpy.ndarray
        Time. [s]

    Returns
    -------
    float or numpy.ndarray
        The same time. [µs]
    """
    return seconds / us


#: Largest message size :func:`parse_nbytes` accepts: 2**62 B (4 EiB). [B] Far beyond any
#: memory; it keeps sizes, and products of a size with small factors, inside int64.
MAX_NBYTES = 2**62

#: What a size argument may be, for annotations: the forms :func:`parse_nbytes` reads.
Sizes: TypeAlias = "int | float | str | Sequence[int | float | str] | np.ndarray"

#: Largest count :func:`parse_count` accepts when no ``maximum`` is given (int32's maximum).
MAX_COUNT = 2**31 - 1
#: Size suffixes and their binary multiples, as nccl-tests' ``-b``/``-e`` read them (either case).
SIZE_SUFFIXES = MappingProxyType({"": 1, "K": KiB, "M": MiB, "G": GiB, "T": TiB})

_SIZE_TEXT = re.compile(r"([0-9]+)([KMGT]?)", re.IGNORECASE)
_SIZE_EXPECTED = ("expected a whole number of bytes from 0 to 2**62: an integer, an integral "
                  "float, or digits with an optional binary suffix K, M, G, T (64K = 65536)")
# Digit strings longer than this are refused as too large without converting them.
_MAX_DIGITS = 30


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:40] + f"... ({len(text)} characters)"


def _size_error(value, why: str = "") -> SizeError:
    return SizeError(f"invalid size {_show(value)}{': ' + why if why else ''}; {_SIZE_EXPECTED}")


def _one_size(value) -> int:
    """One size as an int, or a :class:`SizeError`."""
    if isinstance(value, (bool, np.bool_)):
        raise _size_error(value, "a bool is not a size")
    if isinstance(value, (str, np.str_)):
        match = _SIZE_TEXT.fullmatch(value.strip())
        if match is None:
            raise _size_error(value)
        digits, suffix = match.groups()
        if len(digits.lstrip("0")) > _MAX_DIGITS:
            raise _size_error(value, "too large")
        number = int(digits) * SIZE_SUFFIXES[suffix.upper()]
    elif isinstance(value, numbers.Integral):
        number = int(value)
    elif isinstance(value, numbers.Real):
        number = float(value)
        if not math.isfinite(number) or not number.is_integer():
            raise _size_error(value, "not a whole number of bytes")
        number = int(number)
    else:
        raise _size_error(value, f"a {type(value).__name__} is not a size")
    if number < 0:
        raise _size_error(value, "negative")
    if number > MAX_NBYTES:
        raise _size_error(value, "too large")
    return number


def parse_nbytes(value: Sizes) -> int | np.ndarray:
    """Message sizes as whole numbers of bytes, from what users write.

    Accepted: Python and numpy integers; integral floats (``2.0**30``); strings of digits
    with an optional binary suffix ``K``, ``M``, ``G``, ``T`` in either case (``"8"``,
    ``"64K"`` = 65,536, ``"256M"``, ``"1G"`` = 2**30, ``"2T"``), as nccl-tests' ``-b`` and
    ``-e`` read them; and lists, tuples or 1-d numpy arrays of those. Every size lies in
    0 to :data:`MAX_NBYTES` (2**62).

    Parameters
    ----------
    value : int, float, str, sequence or numpy.ndarray
        One size or several. [B]

    Returns
    -------
    int or numpy.ndarray
        An ``int`` for one size, an int64 array (same order) for several. [B]

    Raises
    ------
    SizeError
        For a bool, a negative, non-integral, non-finite or too large value, a string that
        is not digits with an optional suffix (``"1.5G"``, ``"1GB"``, ``"-8"``), an empty or
        nested sequence, or any other type; the message names the value received.
    """
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return _one_size(value.item())
        if value.ndim != 1 or value.size == 0:
            raise _size_error(value, f"expected a non-empty 1-d array, received shape {value.shape}")
        if value.dtype.kind in "iu":
            if (value < 0).any() or (value > MAX_NBYTES).any():
                bad = value[(value < 0) | (value > MAX_NBYTES)][0]
                raise _size_error(bad.item(), "negative" if bad < 0 else "too large")
            return value.astype(np.int64)
        return np.array([_one_size(v.item() if isinstance(v, np.generic) else v) for v in value],
                        dtype=np.int64)
    if isinstance(value, (list, tuple)):
        if not value:
            raise _size_error(value, "an empty list of sizes")
        if any(isinstance(v, (list, tuple, np.ndarray, Mapping)) for v in value):
            raise _size_error(value, "a nested sequence")
        return np.array([_one_size(v) for v in value], dtype=np.int64)
    return _one_size(value)


def parse_count(value: int | float | str, *, name: str, minimum: int = 1, maximum: int | None = None) -> int:
    """A count option (``--top``, ``-k``, ``--ngpus``) as an int in ``[minimum, maximum]``.

    Accepted: Python and numpy integers, integral floats, and strings of digits.

    Parameters
    ----------
    value : int, float or str
    name : str
        The option, as the message should name it (``"--top"``).
    minimum : int
        Smallest value accepted.
    maximum : int, optional
        Largest value accepted (default :data:`MAX_COUNT`).

    Returns
    -------
    int

    Raises
    ------
    CountError
        For a bool, a non-integral, non-finite or out-of-range value, or a string that is
        not digits; the message names ``name``, the range and the value received.
    """
    top = MAX_COUNT if maximum is None else maximum
    expected = f"{name} must be a whole number from {minimum} to {top}, received {_show(value)}"
    count = None
    if isinstance(value, (bool, np.bool_)):
        count = None
    elif isinstance(value, (str, np.str_)):
        text = value.strip()
        if re.fullmatch(r"[+-]?[0-9]+", text) and len(text) <= _MAX_DIGITS:
            count = int(text)
    elif isinstance(value, numbers.Integral):
        count = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        count = int(value)
    if count is None or not minimum <= count <= top:
        raise CountError(expected)
    return count


def is_int(value: object) -> bool:
    """Whether ``value`` is a whole number as the API takes one: a Python or numpy integer, not a
    bool (``True`` is an ``int`` to Python, never a count to the models).

    >>> is_int(3), is_int(np.int64(3)), is_int(True), is_int(3.0)
    (True, True, False, False)
    """
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def positive_bandwidth(name: str, value: object, error: type[Exception] = ValueError) -> float:
    """A bandwidth argument checked: a finite real number > 0 (not a bool), as a float. [B/s]

    Parameters
    ----------
    name : str
        The argument, as the message names it (``"bw_intra"``).
    value : object
    error : type of Exception
        The exception raised (the caller's own: ``TuningError``, ``ChannelSearchError``).

    Raises
    ------
    error
        "``name`` must be a finite bandwidth > 0 [B/s], received ``value``".

    >>> positive_bandwidth("bw_intra", 20e9)
    20000000000.0
    >>> positive_bandwidth("bw_intra", 0)
    Traceback (most recent call last):
    ...
    ValueError: bw_intra must be a finite bandwidth > 0 [B/s], received 0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value <= 0:
        raise error(f"{name} must be a finite bandwidth > 0 [B/s], received {value!r}")
    return float(value)
