"""The tree packing's schedule beside NCCL and the bounds on one GPU set, as one frozen record: what
the report's schedule section shows (:mod:`models.present.report.analysis` words it and draws it).

:func:`packing_comparison` writes the packing as a schedule for each size
(:func:`models.schedules.export.sized_chunks`: the protocol and chunk count that time fastest there), times
it beside NCCL's own choice and the bound at the fabric's line rates (:func:`models.schedules.evaluate.evaluate_schedule`), and
adds the bound the packing's trees can reach: the NVLink-only bound at the capacities the evaluator
times with (NCCL's capacity of each link times what NCCL's kernels achieve over it,
:func:`models.schedules.evaluate.achieved_graph`), which is the packing's own rate.

Examples
--------
>>> import topo
>>> c = packing_comparison(topo.dgx1v(), "all_gather", [0, 1, 4, 5], [2**30])
>>> p = c.evaluation.points[0]
>>> [round(x / 1e9, 2) for x in (p.nccl_busbw, p.busbw, c.achieved_bound, p.bound_busbw)], c.chunks
([40.75, 60.41, 61.18, 90.75], (128,))
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..engine.fabric import prepare
from .evaluate import SCHEDULE_MAX_EVENTS, ScheduleEvaluation, achieved_graph, evaluate_schedule
from .export import schedule_packing, sized_chunks
from .msccl import ScheduleError

__all__ = ["PackingComparison", "packing_comparison"]


@dataclass(frozen=True, slots=True)
class PackingComparison:
    """The packing's schedule on one GPU set, beside NCCL and the bounds.

    Attributes
    ----------
    system : str
        The fabric's name.
    collective : str
    gpus : tuple of int
        The GPU of each rank.
    evaluation : ScheduleEvaluation
        The schedule at each size, with NCCL's choice and the line-rate bound: at each size the
        schedule written for it (:func:`~models.schedules.export.sized_chunks`), its points in
        the order of ``sizes``; its name, protocol, pricing and counts are the largest size's.
    packing : models.studies.packing.TreePacking
        The trees the schedule was written from (on the capacities the evaluator times with).
    achieved_bound : float
        busbw of the NVLink-only bound at those capacities: what the packing's trees can reach. [B/s]
    steps, threadblocks, nchannels : int
        The largest size's schedule's.
    chunks : tuple of int
        Chunks per GPU of each size's schedule, one per point (empty: not recorded).
    protocols : tuple of str
        The protocol of each size's schedule, one per point (empty: the evaluation's at every size).
    """

    system: str
    collective: str
    gpus: tuple
    evaluation: ScheduleEvaluation
    packing: object
    achieved_bound: float
    steps: int
    threadblocks: int
    nchannels: int
    chunks: tuple = ()
    protocols: tuple = ()

    def __post_init__(self):
        points = len(self.evaluation.points)
        for name in ("chunks", "protocols"):
            value = getattr(self, name)
            if value and len(value) != points:
                raise ScheduleError(f"expected {name} one per size ({points}) or none, received {len(value)}")

    def to_records(self) -> list:
        """Tidy rows, one per size: the evaluation's, with the achieved-rate bound beside the
        line-rate one, and each size's chunks per GPU (None where not recorded) and protocol."""
        rows = self.evaluation.to_records()
        chunks = self.chunks or (None,) * len(rows)
        protocols = self.protocols or tuple(row["protocol"] for row in rows)
        return [{**row, "protocol": protocol, "achieved_bound_busbw_Bps": self.achieved_bound, "chunks_per_gpu": k}
                for row, k, protocol in zip(rows, chunks, protocols)]


def packing_comparison(G, collective: str, gpus, sizes, *, profile=None,
                       max_events: int = SCHEDULE_MAX_EVENTS) -> PackingComparison:
    """The packing's schedule of ``collective`` on ``gpus`` of ``G``, timed at each of ``sizes``
    beside NCCL's choice, the line-rate bound and the bound at the rates the evaluator times with.

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    collective : {"all_gather", "reduce_scatter", "all_reduce"}
        What :func:`~models.schedules.export.packing_schedule` writes.
    gpus : str or iterable of int
    sizes : int, str or sequence
        nccl-tests' sizes.
    profile : str or NcclProfile, optional
    max_events : int
        Each size's :func:`~models.schedules.export.sized_chunks` limit.

    Raises
    ------
    models.schedules.ExportError, models.schedules.ScheduleEvaluationError
        Where the packing cannot be written or priced (named by the error).
    topo.LimitError
        For a size whose choice is beyond ``max_events``.
    """
    from ..studies.bounds import bound

    import numpy as np
    from topo.units import parse_nbytes

    fabric = prepare(G, nccl=profile)
    points, chunks, protocols, largest = [], [], [], None
    for size in np.atleast_1d(parse_nbytes(sizes)).tolist():  # each size its own schedule
        schedule = sized_chunks(fabric, collective, gpus, int(size), max_events=max_events)[0]
        evaluation = evaluate_schedule(fabric, schedule, int(size), gpus)
        points += evaluation.points
        chunks.append(schedule.nchunksperloop // schedule.ngpus)
        protocols.append(schedule.protocol)
        if largest is None or size > largest[0]:  # the sizes may come in any order
            largest = (size, schedule, evaluation)
    _, schedule, evaluation = largest
    evaluation = replace(evaluation, points=tuple(points))
    ranks = list(evaluation.gpus)
    achieved = achieved_graph(fabric, evaluation.pricing.achieved_ratio)
    own = bound(achieved, collective, max(p.nbytes for p in evaluation.points), ranks, edge_kinds=["nvlink"],
                nccl=False)
    return PackingComparison(evaluation.system, collective, tuple(ranks), evaluation,
                             schedule_packing(fabric, collective, ranks), float(own.bound_busbw),
                             schedule.nsteps, schedule.nthreadblocks, schedule.nchannels, tuple(chunks),
                             tuple(protocols))
