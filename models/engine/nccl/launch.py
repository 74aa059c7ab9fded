"""The channels and threads NCCL launches a collective with, after its size reduction.

NCCL's tuner prices an (algorithm, protocol) with every channel of its graph, but the enqueue
step then launches fewer at small sizes (``topoGetAlgoInfo``/``getAlgoInfo``, src/enqueue.cc,
NVIDIA/nccl v2.5.7-1 to v2.27.7-1)::

    nc = comm->nChannels; nt = maxThreads[algorithm][protocol]
    threshold = threadThresholds[algorithm][protocol]
    while (nBytes < nc * nt * threshold) {
      if (nc >= 2) nc--;
      else if ((nt % 128) == 0) nt /= 2;
      else break;
    }
    if (protocol == SIMPLE) nt += WARP_SIZE   // ring: one warp for synchronisation
                                              // (tree: four, and every thread since v2.9 [U])

Per algorithm and protocol (src/enqueue.cc, src/include/device.h at v2.27.7-1): ``maxThreads`` LL 512, LL128 640, Simple 512
(a ring whose ``bwIntra x nChannels`` is at most PCI_BW, 12 GB/s, takes 256); NVLS, CollNet and
PAT 640 (``NCCL_MAX_NTHREADS``). NVLS and NVLSTree skip the reduction: they launch
``comm->nvlsChannels`` at every size (the caller passes it as ``nchannels``); PAT sheds channels
as a ring does but keeps its 640 threads. ``threadThreshold`` (bytes per thread): LL 8, LL128 8, Simple 64; a ring's LL threshold is
multiplied by ``nRanks``. The reduction does not change NCCL's predicted time (the tuner ran
first); it changes what the kernels do, which :mod:`models.predict.pipeline` times.

[U] The rule's form and constants are the reference release's; older tags (v2.5-v2.26) were
not re-read for them (the Ring-LL ``x nRanks`` and the 256-thread PCIe ring in particular).
"""

from __future__ import annotations

from dataclasses import dataclass

from topo.errors import DgxTopoError
from topo.units import is_int

from ..results import tidy_records

__all__ = ["LaunchError", "Launch", "max_threads", "thread_threshold", "reduced_launch",
           "WARP_SIZE", "PCI_BW"]

#: ``WARP_SIZE`` (src/include/device.h).
WARP_SIZE = 32
#: ``PCI_BW`` 12 GB/s (src/graph/topo.h): a ring at most this fast runs 256 Simple threads. [B/s]
PCI_BW = 12e9
_SOURCE = "NVIDIA/nccl v2.27.7-1 src/enqueue.cc (getAlgoInfo), src/include/device.h"
#: NVLS and NVLSTree launch ``comm->nvlsChannels`` whatever the size ("NVLS should not need more
#: than 16 channels to get peak BW", src/enqueue.cc ``topoGetAlgoInfo``): no reduction.
_NO_REDUCTION = ("nvls", "nvls_tree")


class LaunchError(DgxTopoError):
    """A launch request that cannot be answered (unknown protocol, bad size or count)."""


def max_threads(algorithm: str, protocol: str, ring_bandwidth: float = float("inf")) -> int:
    """``maxThreads[algorithm][protocol]`` before the extra warps.

    Parameters
    ----------
    algorithm : str
        NCCL's algorithm name in snake case (``"ring"``, ``"tree"``, ``"nvls"``, ...).
    protocol : str
    ring_bandwidth : float
        ``ring.bwIntra x ring.nChannels`` [B/s]: a Simple ring at most :data:`PCI_BW` runs 256.
    """
    _protocol(protocol)
    if algorithm in ("nvls", "nvls_tree", "collnet_direct", "collnet_chain", "pat"):
        return 640
    if protocol == "LL128":
        return 640
    if protocol == "Simple" and algorithm == "ring" and ring_bandwidth <= PCI_BW:
        return 256
    return 512


def thread_threshold(algorithm: str, protocol: str, nranks: int) -> int:
    """``threadThresholds[algorithm][protocol]``: bytes per thread below which NCCL sheds
    channels, then threads (LL and LL128 8, Simple 64; a ring's LL x ``nranks``). [bytes]"""
    _protocol(protocol)
    base = {"LL": 8, "LL128": 8, "Simple": 64}[protocol]
    return base * nranks if (algorithm == "ring" and protocol == "LL") else base


def _protocol(protocol):
    if protocol not in ("LL", "LL128", "Simple"):
        raise LaunchError(f"unknown protocol {protocol!r}: expected 'LL', 'LL128' or 'Simple'")


@dataclass(frozen=True, slots=True)
class Launch:
    """What NCCL launches one collective with at one size.

    Attributes
    ----------
    nbytes : int
        NCCL's ``nBytes`` (the total for all_gather / reduce_scatter). [bytes]
    graph_channels : int
        ``comm->nChannels`` before the reduction (what the tuner priced).
    nchannels : int
        Channels launched (blocks per rank).
    nthreads : int
        Threads per block after the reduction, before the extra warps.
    threshold : int
        Bytes per thread of the rule. [bytes]
    block_threads : int
        Threads a block runs: ``nthreads`` plus the Simple protocol's synchronisation warp.
    reduces : bool
        The rule applied (False: NVLS and NVLSTree launch ``comm->nvlsChannels`` at every size).
    source : str
    """

    nbytes: int
    graph_channels: int
    nchannels: int
    nthreads: int
    threshold: int
    block_threads: int
    reduces: bool = True
    source: str = _SOURCE

    def to_records(self) -> list:
        """One row: the size, the channels and threads before and after the reduction."""
        return tidy_records({"nbytes": self.nbytes, "graph_channels": self.graph_channels,
                             "nchannels": self.nchannels, "nthreads": self.nthreads,
                             "threshold": self.threshold, "block_threads": self.block_threads,
                             "reduces": self.reduces})


def reduced_launch(nbytes: int, nchannels: int, algorithm: str, protocol: str, nranks: int, *,
                   ring_bandwidth: float = float("inf")) -> Launch:
    """NCCL's channel and thread reduction (module docstring) for one size.

    Examples
    --------
    >>> reduced_launch(2**20, 6, "ring", "LL", 12).nchannels       # 1 MiB >= 6 x 512 x 96
    6
    >>> reduced_launch(2**16, 6, "ring", "LL", 12).nchannels       # 64 KiB < 2 x 512 x 96
    1
    >>> reduced_launch(1024, 1, "ring", "Simple", 2).nthreads      # 512 -> 256 -> 128 -> 64, not a multiple of 128
    64
    """
    if not is_int(nbytes) or nbytes < 0:
        raise LaunchError(f"nbytes must be an integer >= 0, received {nbytes!r}")
    if not is_int(nchannels) or nchannels < 1:
        raise LaunchError(f"nchannels must be an integer >= 1, received {nchannels!r}")
    if not is_int(nranks) or nranks < 1:
        raise LaunchError(f"nranks must be an integer >= 1, received {nranks!r}")
    nt = max_threads(algorithm, protocol, ring_bandwidth)
    threshold = thread_threshold(algorithm, protocol, int(nranks))
    nc = int(nchannels)
    while algorithm not in _NO_REDUCTION and nbytes < nc * nt * threshold:
        if nc >= 2:
            nc -= 1
        elif nt % 128 == 0 and algorithm != "pat":
            nt //= 2
        else:
            break
    extra = WARP_SIZE if protocol == "Simple" and algorithm == "ring" else \
        4 * WARP_SIZE if protocol == "Simple" and algorithm == "tree" else 0
    return Launch(int(nbytes), int(nchannels), nc, nt, threshold, nt + extra, algorithm not in _NO_REDUCTION)
