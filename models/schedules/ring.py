"""The ring all_gather as an MSCCL schedule: the textbook schedule, built as data.

Each rank's input is ``chunks`` chunks; chunk ``j`` travels the ring rank -> rank+1 -> ... on
channel ``j % channels`` (one threadblock per channel and rank, sending to the next rank and
receiving from the previous one). Per chunk a rank copies its own into place (out of place
only), sends it, forwards (``rcs``) the next ``ngpus - 2`` chunks it receives and keeps
(``r``) the last: the schedule of msccl-tools' ``examples/mscclang/simple/allgather_ring.py``
(schedules.md 1.9), for any ring size, chunk count and channel count.

>>> from models.schedules import check_schedule
>>> check_schedule(ring_all_gather(4)).steps
20
"""

from __future__ import annotations

from topo.errors import CountError
from topo.units import is_int

from .msccl import EXECUTOR, Dialect, Gpu, Schedule, Step, Threadblock

__all__ = ["ring_all_gather"]


def ring_all_gather(ngpus: int, *, chunks: int = 1, channels: int = 1, inplace: bool = False,
                    protocol: str = "Simple", dialect: Dialect = EXECUTOR) -> Schedule:
    """A ring all_gather of ``ngpus`` ranks, ``chunks`` chunks per rank over ``channels`` channels.

    Raises
    ------
    topo.errors.CountError
        For fewer than 2 ranks, fewer than 1 chunk, or channels outside 1..chunks.
    """
    for name, value, low in (("ngpus", ngpus, 2), ("chunks", chunks, 1), ("channels", channels, 1)):
        if not is_int(value) or value < low:
            raise CountError(f"expected {name} a whole number >= {low}, received {value!r}")
    if channels > chunks:
        raise CountError(f"expected channels at most chunks={chunks}, received {channels}")
    n, k = ngpus, chunks
    gpus = []
    for r in range(n):
        tbs = []
        for ch in range(channels):
            steps = []
            for j in range(ch, k, channels):
                own = r * k + j
                if not inplace:
                    steps.append(Step(len(steps), "cpy", "i", j, "o", own, 1))
                steps.append(Step(len(steps), "s", "o", own, "o", own, 1))
                for t in range(1, n):
                    slot = ((r - t) % n) * k + j
                    steps.append(Step(len(steps), "rcs" if t < n - 1 else "r", "o", slot, "o", slot, 1))
            tbs.append(Threadblock(id=ch, send=(r + 1) % n, recv=(r - 1) % n, chan=ch, steps=tuple(steps)))
        gpus.append(Gpu(id=r, i_chunks=0 if inplace else k, o_chunks=n * k, s_chunks=0, threadblocks=tuple(tbs)))
    return Schedule(name=f"ring_all_gather_{n}x{k}", protocol=protocol, collective="all_gather",
                    coll="allgather", nchannels=channels, nchunksperloop=n * k, ngpus=n, inplace=inplace,
                    outofplace=(not inplace) if dialect is EXECUTOR else None, min_bytes=0, max_bytes=2**27,
                    nthreads=None, gpus=tuple(gpus), dialect=dialect)
