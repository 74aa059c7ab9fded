"""Unit constants and the display conversions.

Everything inside dgx-topo is SI: bytes, seconds, bytes per second. These constants make
input readable (``25 * GB`` is 25e9 B/s when used as a bandwidth) and the two conversions
below are the only place where numbers leave SI, at the display edge, in the units
nccl-tests prints: decimal GB/s (1e9 B/s, nccl-tests ``/ 1.0E9``) and microseconds.

Examples
--------
>>> from topo.units import GB, us, to_GBps, to_us
>>> to_GBps(25 * GB)
25.0
>>> to_us(1.5 * us)
1.5
"""

from __future__ import annotations

__all__ = [
    "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB",
    "ns", "us", "ms",
    "to_GBps", "to_us",
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
