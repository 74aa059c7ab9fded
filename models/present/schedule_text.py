"""A checked MSCCL schedule in words: the one-screen summary ``dgxtopo schedule check`` prints.

>>> from models.schedules import check_schedule
>>> from models.schedules.ring import ring_all_gather
>>> ring = ring_all_gather(4)
>>> print(schedule_check_text(ring, check_schedule(ring), source="ring.xml"))  # doctest: +NORMALIZE_WHITESPACE
# dgxtopo: MSCCL schedule ring.xml (ring_all_gather_4x1): OK
  collective     all_gather (coll="allgather"), out of place, Simple protocol, 0 B - 128 MiB
  GPUs           4
  chunks         4 per loop
  threadblocks   4 (at most 1 per GPU; the runtime takes 216)
  steps          20 (at most 5 per threadblock; the runtime takes 256)
  channels       1 of nchannels=1 (the runtime takes 32)
  transfers      12 send/receive pairs; the longest chain is 5 steps
  runtime        msccl-executor-nccl (executor dialect)
  verdict        OK: limits, dependencies, send/receive matching, no deadlock, no race, all_gather postcondition met
"""

from __future__ import annotations

from .format import format_bytes

__all__ = ["schedule_check_text", "CHECKS"]

#: What a schedule that holds has passed, in the order the checker checks (models.schedules.check).
CHECKS = ("limits", "dependencies", "send/receive matching", "no deadlock", "no race")


def schedule_check_text(schedule, result, *, source: str) -> str:
    """The summary of a schedule that holds (``result``: its :class:`~models.schedules.ScheduleCheck`)."""
    limits = schedule.dialect.limits if result.limits == schedule.dialect.limits.name else None
    take = (lambda n: f"; the runtime takes {n}") if limits else (lambda n: "")
    placement = "in place" if schedule.inplace else "out of place"
    post = (f"{result.collective} postcondition met" if result.postcondition
            else f"postcondition not checked ({result.collective} names no root in the XML)")
    rows = [
        ("collective", f'{result.collective} (coll="{schedule.coll}"), {placement}, {result.protocol} protocol, '
                       f"{format_bytes(schedule.min_bytes)} - {format_bytes(schedule.max_bytes)}"),
        ("GPUs", f"{result.ngpus}"),
        ("chunks", f"{result.chunks} per loop"),
        ("threadblocks", f"{result.threadblocks} (at most {result.threadblocks_per_gpu} per GPU"
                         f"{take(limits.max_threadblocks) if limits else ''})"),
        ("steps", f"{result.steps} (at most {result.steps_per_threadblock} per threadblock"
                  f"{take(limits.max_steps) if limits else ''})"),
        ("channels", f"{result.channels} of nchannels={schedule.nchannels}"
                     + (f" (the runtime takes {limits.max_channels})" if limits else "")),
        ("transfers", f"{result.transfers} send/receive pairs; the longest chain is {result.depth} steps"),
        ("runtime", f"{result.limits} ({schedule.dialect.name} dialect)"),
        ("verdict", "OK: " + ", ".join(CHECKS + (post,))),
    ]
    return "\n".join([f"# dgxtopo: MSCCL schedule {source} ({result.name}): OK"]
                     + [f"  {name:<14} {value}" for name, value in rows])
