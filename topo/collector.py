"""Python's cyclic garbage collector paused while a large fabric is allocated (or another
bulk of kept objects is made: a channel search's tables).

A 1,024-host cluster is about 400,000 dicts (a node's or edge's attributes, a node's adjacency),
every one of them kept. CPython starts a collection of the youngest generation every 700 net
allocations of containers and a full collection whenever the objects allocated since the last
one reach a quarter of those already alive (the ``gc`` module's documentation, "thresholds";
CPython 3.11 Modules/gcmodule.c), and a full collection traverses every live container. Filling
such a graph triggers several full collections that free nothing (the new objects are all
reachable): half the CPU time of ``topo.build("1024xdgx2")``. :func:`collector_paused` stops the
collector for the duration of such an allocation; reference counting frees everything else as
usual, and the collector resumes with its counts where they were, so the next collection after
the pause sees the new objects once.

The pause is process-wide while it lasts: another thread's reference cycles made meanwhile wait
for the collector until it resumes. It lasts one bulk allocation (well under a second on a
1,024-host cluster; a few tenths for a channel search that runs NCCL's step budget out), and the
collector is restored to the state it had (a caller that disabled it keeps it disabled).

Examples
--------
>>> import gc
>>> with collector_paused():
...     gc.isenabled()
False
>>> gc.isenabled()
True
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector inside the ``with`` block, and restore its state
    (enabled or not) on leaving it, by an exception too (module docstring: why, and what it
    costs)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
