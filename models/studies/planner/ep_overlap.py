"""How expert-parallel all-to-alls overlap compute, as strategy objects (:data:`EP_OVERLAPS`):
what each does to a step's exposed expert and pipeline communication, its bubble, the memory of
its in-flight micro-batches and parameter copies, whether the step graph builds it and how, and
the layouts it refuses (:mod:`models.present.plan_text` words each by its name).

* :data:`NO_OVERLAP` (``none``): the all-to-alls on the critical path.
* :data:`BATCH_OVERLAP` (``batch``): Megatron-Core v0.14's ``--overlap-moe-expert-parallel-comm``,
  one micro-batch's all-to-alls run beside another's kernels: a forward block beside a backward
  block of the same stage, walked phase by phase (:mod:`~models.studies.planner.pair_overlap`,
  :meth:`EpOverlap.exposed_pair`). The step graph runs 1F1B's forward and backward blocks as two
  streams of work per stage.
* :data:`DUALPIPE` (``dualpipe``): DeepSeek-V3's DualPipe (arXiv 2412.19437, section 3.2.1):
  micro-batches fed from both ends, forward and backward chunks of two micro-batches overlapped,
  the all-to-alls and pipeline sends hidden, a bubble of ``(PP/2 - 1)(F&B + B - 3W)``
  (:meth:`EpOverlap.bubble`, ``F&B`` the slot of one micro-batch's forward and backward, ``B``
  its input gradient and ``W`` its weight gradient: what the program simulated here leaves idle,
  [U] below), two copies of
  the parameters and one micro-batch more in flight; it needs an even ``pp``, an even number of
  micro-batches, at least ``2 pp`` of them, and no interleaving
  (:func:`~models.studies.planner.dualpipe.dualpipe_refusal`). The step graph runs its program
  (:mod:`models.studies.planner.dualpipe`, :attr:`EpOverlap.bidirectional`).

The planner takes one (``plan(..., ep_overlap="batch")``, ``plan --ep-overlap batch``), or several
for its search to cover (``ep_overlap=EP_OVERLAPS``, ``--ep-overlap all`` or ``none,dualpipe``), read
once at its edge (:func:`ep_overlap_named`), and passes the object down; a step's
:class:`~models.studies.planner.records.ExpertParallelDetail` carries it. One of your own:
subclass :class:`EpOverlap` (a frozen dataclass with a default ``name``) and pass the instance.

Examples
--------
>>> ep_overlap_named("dualpipe").bubble_slots(8, 1), NO_OVERLAP.bubble_slots(8, 1)
(3.0, 7.0)
>>> DUALPIPE.bubble(8, 1, slot=3.0, backward_input=1.0, weight=1.0), NO_OVERLAP.bubble(8, 1, slot=3.0)
(3.0, 21.0)
>>> BATCH_OVERLAP.exposed_ep(5.0, 3.0), NO_OVERLAP.exposed_ep(5.0, 3.0)
(2.0, 5.0)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from topo.errors import DgxTopoError

from ..stepgraph import one_f_one_b_units
from .dualpipe import bubble_units, dualpipe_refusal, stage_of, unpaired_blocks
from .pair_overlap import communication, pair_exposure

__all__ = ["EpOverlapError", "EpOverlap", "BatchOverlap", "DualPipe", "NO_OVERLAP", "BATCH_OVERLAP", "DUALPIPE", "EP_OVERLAPS",
           "EP_OVERLAP", "ep_overlap_named"]


#: The pipelines an overlap's :meth:`EpOverlap.rank_stages` is checked on when it is made.
_CHECKED_PP = (2, 4, 8)


class EpOverlapError(DgxTopoError):
    """An expert overlap whose parts disagree (its parameter copies and the stages its ranks hold)."""


@dataclass(frozen=True)
class EpOverlap:
    """One way the expert all-to-alls overlap compute (module docstring): the interface, and
    ``none``'s behaviour (all exposed, 1F1B's bubble).

    Attributes
    ----------
    name : str
        What ``--ep-overlap`` and records call it.
    simulated : bool
        Whether the step graph builds its schedule (else the plan keeps its analytical step,
        :attr:`~models.studies.planner.records.TimingCode.DUALPIPE`).
    two_streams : bool
        Whether the step graph runs 1F1B's forward and backward blocks of a stage as two streams
        (one micro-batch's all-to-alls beside the other's kernels) rather than one.
    bidirectional : bool
        Whether the step graph runs DualPipe's program (:mod:`models.studies.planner.dualpipe`)
        instead of 1F1B.
    parameter_copies : int
        Copies of the stage's parameters held.
    extra_in_flight : int
        Micro-batches in flight beyond 1F1B's ``pp - stage``.
    """

    name: str = "none"
    simulated: bool = True
    two_streams: bool = False
    bidirectional: bool = False
    parameter_copies: int = 1
    extra_in_flight: int = 0

    def __post_init__(self) -> None:
        """Refuse an overlap whose ranks do not hold :attr:`parameter_copies` copies of every stage
        (:meth:`rank_stages` on pipelines of 2, 4 and 8 stages): one that holds two copies must
        say which ranks hold them, as :class:`DualPipe` does.

        Raises
        ------
        EpOverlapError
            Naming the copies, the pipeline and the stage held otherwise."""
        copies = self.parameter_copies
        if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
            raise EpOverlapError(f"{type(self).__name__}'s parameter_copies must be a whole number >= 1, "
                                 f"received {copies!r}")
        for pp in _CHECKED_PP:
            ranks = tuple(self.rank_stages(pp))
            held = Counter(s for ran in ranks for s in ran)
            wrong = next((s for s in sorted(set(held) | set(range(pp))) if held[s] != copies or not 0 <= s < pp),
                         None)
            if len(ranks) != pp or wrong is not None:
                found = (f"{len(ranks)} ranks" if len(ranks) != pp else
                         f"stage {wrong} on {held[wrong]} rank{'s' if held[wrong] != 1 else ''}")
                raise EpOverlapError(
                    f"{type(self).__name__} has parameter_copies {copies}, but its rank_stages({pp}) gives {found}: "
                    f"expected {pp} ranks, each of stages 0-{pp - 1} on {copies} rank{'s' if copies != 1 else ''} "
                    f"(override rank_stages along with parameter_copies)")

    def __str__(self) -> str:
        return self.name

    def exposed_ep(self, ep_time: float, compute: float) -> float:
        """The exposed part of ``ep_time`` of all-to-alls beside ``compute`` of one micro-batch,
        at best (:meth:`exposed_pair` walks the blocks). [s]"""
        return ep_time

    def paired_stage(self, pp: int, stage: int) -> int:
        """The stage whose backward block runs beside a forward block of ``stage`` (its own)."""
        return stage

    def exposed_pair(self, forward: tuple, backward: tuple) -> float:
        """The exposed communication of a forward block beside a backward one, each a chain of
        ``(stream, seconds)`` segments (:func:`~models.studies.planner.pair_overlap.block_segments`),
        for an overlap that runs them as :attr:`two_streams` (the first pass asks the others
        :meth:`exposed_ep` of a stage's all-to-alls alone): here :meth:`exposed_ep` of their
        communication beside their kernels. [s]"""
        comm = communication(forward) + communication(backward)
        busy = sum(s for _, s in (*forward, *backward)) - comm
        return self.exposed_ep(comm, busy)

    def alone(self, pp: int, micro_batches: int, stage: int = 0) -> float:
        """Of ``stage``'s micro-batches, the share whose blocks run alone, their all-to-alls all
        exposed whatever :meth:`exposed_pair` hides: those of its :meth:`program`'s warm-up and
        cool-down (0 for one that pairs no blocks: nothing to hide them behind)."""
        if not self.two_streams:
            return 0.0
        return min(1.0, self.warmup(pp, stage, micro_batches) / micro_batches)

    def warmup(self, pp: int, stage: int, micro_batches: int) -> int:
        """The forwards ``stage`` runs before its first backward, at most all: 1F1B's ``pp - 1 -
        stage`` (Megatron-LM's ``forward_backward_pipelining_without_interleaving``); with
        :attr:`two_streams`, ``2 (pp - 1 - stage) + 1``: Megatron-Core's interleaved
        schedule's warm-up ``(pp - rank - 1) 2 + (v - 1) pp`` at ``v = 1``, one more with
        ``--overlap-moe-expert-parallel-comm`` (so that the last stage pairs micro-batch
        ``i + 1``'s forward with ``i``'s backward, not with its own) [U: both recalled from
        megatron/core/pipeline_parallel/schedules.py, not re-read; Megatron-Core asks for
        virtual stages with the overlap when ``pp > 1`` [U], which the step graph does not
        build]. It is what a paired program needs not to stall: a pair of stage ``s`` waits
        for the gradient stage ``s + 1``'s pair returns, which waits for a forward of stage
        ``s``'s; with two warm-up forwards more than the next stage's, that forward is two
        pairs old and the round trip hidden (with one more only, the two stages take turns)."""
        if self.two_streams:
            return min(2 * (pp - 1 - stage) + 1, micro_batches)
        return min(pp - 1 - stage, micro_batches)

    def program(self, pp: int, stage: int, micro_batches: int) -> tuple:
        """``stage``'s blocks in program order, as units each started when the one before it has
        ended (:func:`~models.studies.stepgraph.one_f_one_b_units`): :meth:`warmup` forwards alone, then a forward and a
        backward (two units, or one pair with :attr:`two_streams`), then the cool-down's
        backwards alone."""
        return one_f_one_b_units(self.warmup(pp, stage, micro_batches), micro_batches, paired=self.two_streams)

    def in_flight(self, pp: int, stage: int, micro_batches: int) -> int:
        """Micro-batches whose activations ``stage`` holds at once: its :meth:`warmup` forwards
        and the one forward run before the next backward frees one, plus
        :attr:`extra_in_flight`; at most all."""
        return min(self.warmup(pp, stage, micro_batches) + 1 + self.extra_in_flight, micro_batches)

    def exposed_pp(self, pp_comm: float) -> float:
        """The exposed part of the pipeline sends. [s]"""
        return pp_comm

    def bubble_slots(self, pp: int, virtual_stages: int) -> float:
        """The bubble in slots of one micro-batch's forward and backward: 1F1B's ``(pp - 1) / v``."""
        return (pp - 1) / virtual_stages

    def bubble(self, pp: int, virtual_stages: int, *, slot: float, backward_input: float = 0.0,
               weight: float = 0.0) -> float:
        """The bubble of a step whose micro-batch takes ``slot`` (its forward, backward and exposed
        communication; :meth:`fill_slot`), ``backward_input`` of it the backward's input
        gradients and ``weight`` the weight gradients: :meth:`bubble_slots` slots. [s]"""
        return self.bubble_slots(pp, virtual_stages) * slot

    def fill_slot(self, busiest: float, others: float) -> float:
        """The slot :meth:`bubble` counts, given the busiest rank's micro-batch and the mean of
        the other ranks': 1F1B's pipeline fills and drains through the other stages (the
        textbook makespan of ``m`` micro-batches through stages of times ``t``:
        ``(m - 1) max t + sum t``, ``m max t`` the ideal step), so ``others``. [s]"""
        return others

    def bubble_fraction(self, pp: int, virtual_stages: int, micro_batches: int, *, slot: float = 0.0,
                        backward_input: float = 0.0, weight: float = 0.0, busiest: float = 0.0) -> float:
        """:meth:`bubble` over the ideal step (``micro_batches`` slots of the ``busiest`` rank):
        1F1B's ``(p - 1) / (v m)``, times ``slot / busiest`` when both are given (the other
        stages' slot, :meth:`fill_slot`)."""
        scale = slot / busiest if slot > 0 and busiest > 0 else 1.0
        return (pp - 1) / (virtual_stages * micro_batches) * scale

    def bubble_terms(self, *, slot: float, backward_input: float, weight: float) -> dict:
        """The terms of its bubble beyond ``p``, ``v`` and ``m`` (a record's columns, SI): none
        for 1F1B's."""
        return {}

    def refuses(self, pp: int, micro_batches: int, virtual_stages: int) -> bool:
        """Whether its schedule rules the pipeline out (``none``: never)."""
        return False

    def rank_stages(self, pp: int) -> tuple:
        """The stages each pipeline rank runs, each for an equal share of the micro-batches: 1F1B's
        rank ``r`` runs stage ``r``."""
        return tuple((s,) for s in range(pp))


@dataclass(frozen=True)
class BatchOverlap(EpOverlap):
    """Megatron's batch-level overlap (``batch``): what another micro-batch's compute hides, in
    1F1B paired: each steady-state forward runs beside a backward as one unit (:meth:`program`)."""

    name: str = "batch"
    two_streams: bool = True

    def exposed_ep(self, ep_time: float, compute: float) -> float:
        """What exceeds the compute of one micro-batch's forward and backward (perfect overlap). [s]"""
        return max(0.0, ep_time - compute)

    def exposed_pair(self, forward: tuple, backward: tuple) -> float:
        """What the GPU idles while the two blocks run as two streams of work, phase by phase
        (:func:`~models.studies.planner.pair_overlap.pair_exposure`), and no less than
        :meth:`exposed_ep`. [s]"""
        return max(super().exposed_pair(forward, backward), pair_exposure(forward, backward))


@dataclass(frozen=True)
class DualPipe(BatchOverlap):
    """DeepSeek-V3's DualPipe (``dualpipe``): batch overlap's exposure, the pipeline sends hidden,
    the report's bubble, two parameter copies, one micro-batch more in flight."""

    name: str = "dualpipe"
    bidirectional: bool = True
    parameter_copies: int = 2
    extra_in_flight: int = 1

    def exposed_pp(self, pp_comm: float) -> float:
        return 0.0

    def in_flight(self, pp: int, stage: int, micro_batches: int) -> int:
        """1F1B's ``pp - stage`` and :attr:`extra_in_flight` more, at most all (its program is
        :mod:`~models.studies.planner.dualpipe`'s, not :meth:`program`)."""
        return min(pp - stage + self.extra_in_flight, micro_batches)

    def paired_stage(self, pp: int, stage: int) -> int:
        """``pp - 1 - stage``: the program pairs a forward of one direction with a backward of the
        other on the same rank (:func:`~models.studies.planner.dualpipe.stage_of`)."""
        return pp - 1 - stage

    def fill_slot(self, busiest: float, others: float) -> float:
        """The busiest rank's slot: the report's bubble is in its ``F&B``. [s]"""
        return busiest

    def bubble_slots(self, pp: int, virtual_stages: int) -> float:
        """``pp / 2 - 1``: the report's ``PP/2 - 1`` overlapped pairs' bubble, at most a slot each."""
        return max(0.0, pp / 2 - 1)

    def bubble(self, pp: int, virtual_stages: int, *, slot: float, backward_input: float = 0.0,
               weight: float = 0.0) -> float:
        """``(PP/2 - 1)(F&B + B - 3W)`` with ``F&B`` the slot and ``B`` the input gradient alone
        (:func:`~models.studies.planner.dualpipe.bubble_units`), no more than :meth:`bubble_slots`
        slots: the idle time of the program the step graph runs
        (:func:`~models.studies.planner.dualpipe.dualpipe_program`), so that the analytical and
        simulated steps agree. [U] The DeepSeek-V3 Technical Report's table 2 prints the same
        formula with ``B`` "a full backward chunk" (input and weight gradients), which is
        ``(PP/2 - 1) W`` more than this; the program is recalled from deepseek-ai/DualPipe, not
        re-read, and which reading the real schedule idles by is not settled here. The cap is
        the program's too (no pair slot idles longer than a slot), not the report's. [s]"""
        return min(bubble_units(pp, 0.0, backward_input, weight, pair=slot), self.bubble_slots(pp, 1) * slot)

    def bubble_fraction(self, pp: int, virtual_stages: int, micro_batches: int, *, slot: float = 0.0,
                        backward_input: float = 0.0, weight: float = 0.0, busiest: float = 0.0) -> float:
        """:meth:`bubble` over the ideal step, ``micro_batches`` slots of ``F&B`` (``slot``, the
        busiest rank's)."""
        if slot <= 0:
            return 0.0
        bubble = self.bubble(pp, virtual_stages, slot=slot, backward_input=backward_input, weight=weight)
        return bubble / (micro_batches * slot)

    def bubble_terms(self, *, slot: float, backward_input: float, weight: float) -> dict:
        """The report's formula and its terms: ``F&B`` (``pair_s``), ``B`` and ``W``. [s]"""
        return {"formula": "(PP/2-1)(F&B+B-3W)", "pair_s": slot, "backward_input_s": backward_input,
                "weight_s": weight}

    def refuses(self, pp: int, micro_batches: int, virtual_stages: int) -> bool:
        """Micro-batches fed from both ends (:func:`~models.studies.planner.dualpipe.dualpipe_refusal`):
        an even ``pp``, an even micro-batch count of at least ``2 pp``, no interleaving."""
        return dualpipe_refusal(pp, micro_batches, virtual_stages) is not None

    def alone(self, pp: int, micro_batches: int, stage: int = 0) -> float:
        """The blocks DualPipe's program runs outside an overlapped pair (the warm-up and the
        cool-down, :func:`~models.studies.planner.dualpipe.unpaired_blocks`), over the
        micro-batches (the busiest rank's, whatever ``stage``)."""
        return min(1.0, unpaired_blocks(pp) / micro_batches)

    def rank_stages(self, pp: int) -> tuple:
        """Rank ``r`` runs stage ``r`` for the micro-batches fed at rank 0 and stage ``pp - 1 - r``
        for those fed at rank ``pp - 1`` (:func:`~models.studies.planner.dualpipe.stage_of`)."""
        return tuple(tuple(sorted({stage_of(pp, r, 0), stage_of(pp, r, 1)})) for r in range(pp))


#: All-to-alls on the critical path (``none``, the default).
NO_OVERLAP = EpOverlap()
#: Megatron-Core's batch-level overlap (``batch``).
BATCH_OVERLAP = BatchOverlap()
#: DeepSeek-V3's DualPipe (``dualpipe``).
DUALPIPE = DualPipe()
#: The overlaps ``--ep-overlap`` chooses among, the default first.
EP_OVERLAPS = (NO_OVERLAP, BATCH_OVERLAP, DUALPIPE)
#: Their names: ``none``, ``batch``, ``dualpipe``.
EP_OVERLAP = tuple(o.name for o in EP_OVERLAPS)


def ep_overlap_named(name: str, overlaps=EP_OVERLAPS) -> EpOverlap | None:
    """The overlap of ``overlaps`` called ``name``, or None."""
    return next((o for o in overlaps if o.name == name), None)
