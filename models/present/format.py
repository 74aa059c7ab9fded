"""Numbers as people read them: sizes, bandwidths, times and shares, at the display edge.

Every table, explanation, figure label and page of :mod:`models.present` formats its numbers
here, over :mod:`topo.units` (values arrive in SI: bytes, B/s, seconds, fractions), so that a
quantity is written the same way wherever it appears:

- sizes with binary prefixes, as nccl-tests' ``-b``/``-e`` take them (:func:`format_bytes`);
- bandwidths in GB/s = 1e9 B/s and times in microseconds, as nccl-tests prints them
  (:func:`format_gbps`, :func:`format_us`);
- shares and errors as percentages (:func:`format_percent`).

A missing value (None, NaN or an infinity where a finite number is expected) is written as the
``missing`` text each function takes.

Examples
--------
>>> format_bytes(8), format_bytes(2**20), format_bytes(3 * 2**29)
('8 B', '1 MiB', '1.5 GiB')
>>> format_gbps(25e9), format_gbps(25e9, 1), format_gbps(None, missing="n/a")
('25.00', '25.0', 'n/a')
>>> format_us(1.5e-6)
'1.50'
>>> format_percent(0.0512, signed=True, space=True), format_percent(0.5, 0), format_percent(None)
('+5.1 %', '50%', '-')
"""

from __future__ import annotations

import math

from topo.units import to_GBps, to_us

__all__ = ["format_bytes", "format_gbps", "format_us", "format_percent"]

_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def _missing(value) -> bool:
    return value is None or not math.isfinite(float(value))


def format_bytes(nbytes) -> str:
    """A size with binary prefixes, as nccl-tests' ``-b``/``-e`` take them (4 significant digits).

    Parameters
    ----------
    nbytes : int or float
        [bytes]

    Returns
    -------
    str

    Examples
    --------
    >>> format_bytes(1000), format_bytes(2**30), format_bytes(2**45)
    ('1000 B', '1 GiB', '32 TiB')
    """
    value = float(nbytes)
    step = 0
    while abs(value) >= 1024 and step < len(_BINARY_UNITS) - 1:
        value /= 1024
        step += 1
    return f"{value:.4g} {_BINARY_UNITS[step]}"


def format_gbps(bandwidth, digits: int = 2, *, missing: str = "-") -> str:
    """A bandwidth in GB/s (1e9 B/s), fixed point, without the unit.

    Parameters
    ----------
    bandwidth : float or None
        [B/s]
    digits : int
        Decimals.
    missing : str
        Written for None or a value that is not finite.
    """
    return missing if _missing(bandwidth) else f"{to_GBps(float(bandwidth)):.{digits}f}"


def format_us(seconds, digits: int = 2, *, missing: str = "-") -> str:
    """A time in microseconds, fixed point, without the unit.

    Parameters
    ----------
    seconds : float or None
        [s]
    digits : int
        Decimals.
    missing : str
        Written for None or a value that is not finite.
    """
    return missing if _missing(seconds) else f"{to_us(float(seconds)):.{digits}f}"


def format_percent(fraction, digits: int = 1, *, signed: bool = False, space: bool = False,
                   missing: str = "-") -> str:
    """A fraction as a percentage: ``0.051`` -> ``5.1%``.

    Parameters
    ----------
    fraction : float or None
        The share or error (1 is 100 %).
    digits : int
        Decimals.
    signed : bool
        Always write the sign (an error: ``+5.1%``, ``-0.3%``).
    space : bool
        A space before the percent sign (``5.1 %``, as the report's tables write it).
    missing : str
        Written for None or a value that is not finite.

    Examples
    --------
    >>> format_percent(-0.2, signed=True), format_percent(1.0, 0, space=True)
    ('-20.0%', '100 %')
    """
    if _missing(fraction):
        return missing
    value = 100 * float(fraction)
    if round(value, digits) == 0:  # a rounding to zero prints as zero, never "-0.0"
        value = 0.0
    return f"{value:{'+' if signed else ''}.{digits}f}{' ' if space else ''}%"
