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

__all__ = ["schedule_check_text", "schedule_evaluation_text", "sized_choice_text", "CHECKS"]

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


def schedule_evaluation_text(evaluation, *, source: str, explain: bool = False) -> str:
    """``dgxtopo schedule evaluate``: nccl-tests' columns for the schedule at each size, NCCL's own
    choice and the bound beside it (``explain``: what each step costs, from the engine)."""
    from topo.select import format_gpu_ids
    from topo.units import to_GBps, to_us

    from ..schedules.evaluate import nccl_name
    from .text import NCCL_TESTS_REDOP, NCCL_TESTS_ROOT

    e = evaluation
    name = nccl_name(e.collective) or e.collective
    gbps = lambda b: "-" if b is None else f"{to_GBps(b):.2f}"  # noqa: E731
    lines = [f"# dgxtopo: MSCCL schedule {source} ({e.name}) on {e.system} GPUs {format_gpu_ids(e.gpus)} "
             f"({len(e.gpus)} ranks): {e.collective}, {e.protocol}, {e.steps} steps, {e.threadblocks} "
             f"threadblocks, {e.nchannels} channels",
             f"# {'size':>10}  {'count':>12}  {'type':>6}  {'redop':>6}  {'root':>5}  {'time':>9}  {'algbw':>7}  "
             f"{'busbw':>7}  {'NCCL':>7}  {'NCCL':>11}  {'bound':>7}",
             f"# {'(B)':>10}  {'(elements)':>12}  {'':>6}  {'':>6}  {'':>5}  {'(us)':>9}  {'(GB/s)':>7}  "
             f"{'(GB/s)':>7}  {'(GB/s)':>7}  {'algo/proto':>11}  {'(GB/s)':>7}"]
    redop, root = NCCL_TESTS_REDOP.get(name, "none"), NCCL_TESTS_ROOT.get(name, -1)
    for p in e.points:
        lines.append(f"  {p.nbytes:>10}  {p.count:>12}  {'float':>6}  {redop:>6}  {root:>5}  {to_us(p.time):>9.2f}  "
                     f"{to_GBps(p.algbw):>7.2f}  {to_GBps(p.busbw):>7.2f}  {gbps(p.nccl_busbw):>7}  "
                     f"{p.nccl_algorithm or '-':>11}  {gbps(p.bound_busbw):>7}")
    if explain:
        c = e.pricing
        lines += ["", f"Each step, as the collective model prices Ring {c.protocol} ({c.priced_as}) on these GPUs:",
                  f"  channel rate   {to_GBps(c.channel_rate):.2f} GB/s (Ring's bus bandwidth over its "
                  f"{c.ring_channels} channels{'; bound by ' + c.bus_bound_by if c.bus_bound_by != 'None' else ''})",
                  f"  wire           {c.wire:.4g} bytes per payload byte",
                  f"  achieved       x{c.achieved_ratio:.4f} of NCCL's figure ({c.link or 'no link class'})",
                  f"  latency        {to_us(c.step_latency):.2f} us per step, {to_us(c.base_latency):.2f} us once",
                  f"  local copies   {to_GBps(c.local_rate):.2f} GB/s of memory traffic",
                  f"  chunks         nchunksperloop per loop, each at most {format_bytes(c.chunk_limit)} (one "
                  f"slice): loops {', '.join(str(p.loops) for p in e.points)}; the steps run on the simulator "
                  f"(links shared max-min)"]
    return "\n".join(lines)


def sized_choice_text(schedule, tried, size) -> str:
    """How :func:`models.schedules.export.sized_chunks` chose ``schedule`` for ``size``: each
    protocol's chunks per GPU timed there, in the order timed, and the protocols not timed, why.

    >>> from models.schedules.export import SizedSkip, SizedTiming
    >>> from models.schedules.ring import ring_all_gather
    >>> print(sized_choice_text(ring_all_gather(2), [
    ...     SizedTiming("Simple", 1, 1e-5), SizedTiming("Simple", 2, 2e-5),
    ...     SizedTiming("LL128", None, None, SizedSkip.BEYOND_BUDGET, events=900, left=100),
    ...     SizedTiming("LL", None, None, SizedSkip.BOUND, lower=1.5e-5, fastest=1e-5)], 65536))
    Chosen for 64 KiB: Simple with 1 chunk per GPU (ring_all_gather_2x1), the fastest timed there (us by chunks per GPU):
      Simple   1: 10.00, 2: 20.00
      LL128    not timed: its schedules need 900 simulator events, more than the 100 left (--max-events)
      LL       not timed: its bound at this size, 15.00 us, cannot beat 10.00 us
    """
    from topo.units import to_us

    from ..schedules.export import SizedSkip

    def why(t) -> str:
        if t.skipped is SizedSkip.BOUND:
            return f"its bound at this size, {to_us(t.lower):.2f} us, cannot beat {to_us(t.fastest):.2f} us"
        if t.skipped is SizedSkip.BEYOND_BUDGET:
            return f"its schedules need {t.events} simulator events, more than the {t.left} left (--max-events)"
        return "NCCL does not enable it for Ring on these GPUs"

    per = schedule.nchunksperloop // schedule.ngpus
    lines = [f"Chosen for {format_bytes(size)}: {schedule.protocol} with {per} chunk{'s' * (per != 1)} per GPU "
             f"({schedule.name}), the fastest timed there (us by chunks per GPU):"]
    for protocol in dict.fromkeys(t.protocol for t in tried):
        timed = [t for t in tried if t.protocol == protocol and t.time is not None]
        if timed:
            lines.append(f"  {protocol:<8} " + ", ".join(f"{t.chunks}: {to_us(t.time):.2f}" for t in timed))
        lines += [f"  {protocol:<8} not timed: {why(t)}" for t in tried if t.protocol == protocol and t.skipped]
    return "\n".join(lines)
