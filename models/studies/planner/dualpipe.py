"""DualPipe's program: what each pipeline rank runs, in order (:func:`dualpipe_program`), and
the walk that turns the programs into a step graph's blocks (:func:`dualpipe_blocks`).

DualPipe is DeepSeek-V3's pipeline schedule (DeepSeek-V3 Technical Report, arXiv 2412.19437,
section 3.2.1 and figure 5; the schedule's reference code is deepseek-ai/DualPipe's
``dualpipe.py``, whose ``step`` the programs below follow [U: the code's steps recalled, not
re-read here]):

* micro-batches are fed from both ends of the pipeline: half of them (direction 0) enter at rank
  0 and run through stages ``0, 1, ..., pp - 1`` on ranks ``0, 1, ..., pp - 1``; the other half
  (direction 1) enter at rank ``pp - 1`` and run through the same stages on ranks ``pp - 1, ...,
  0``. Rank ``r`` holds two model chunks, stage ``r`` (direction 0's) and stage ``pp - 1 - r``
  (direction 1's): every stage's parameters are held twice, on ranks ``r`` and ``pp - 1 - r``;
* the backward is split into the input gradient ``B``, which the rank before waits for, and the
  weight gradient ``W``, which may be deferred to fill a bubble (zero bubble, Qi et al. 2023);
* in the steady state a rank runs the forward chunk of one micro-batch beside the backward chunk
  of another (an *overlapped pair*), so that one's all-to-alls and pipeline sends run while the
  other computes;
* the bubble is ``(pp/2 - 1)(F&B + B - 3W)`` (the report's table 2), ``F&B`` being the time of an
  overlapped pair.

A rank's program, written for its *near* chunk 0 (the direction that enters at its end of the
pipeline: direction 0 for the first half of the ranks, 1 for the second) and its far chunk 1,
with ``h = min(r, pp - 1 - r)`` and ``n = m / 2`` micro-batches per direction:

1. ``2 (pp/2 - h - 1)`` forwards of chunk 0;
2. ``h + 1`` times a forward of chunk 0, then of chunk 1;
3. ``pp/2 - h - 1`` times a backward of chunk 1 with its ``W`` deferred, that ``W``, a forward
   of chunk 1;
4. ``n - pp + h + 1`` times the pair (forward 0, backward 1), then the pair (forward 1,
   backward 0); the middle ranks (``h = pp/2 - 1``) run their first (forward 0, backward 1) one
   after the other;
5. ``pp/2 - h - 1`` times a backward of chunk 1, then the pair (forward 1, backward 0);
6. ``h + 1`` times a backward of chunk 1 then of chunk 0, the ``W`` of the second half of them
   deferred;
7. ``pp/2 - h - 1`` times a deferred ``W``, then a backward of chunk 0 with its ``W`` deferred;
8. the ``h + 1`` deferred ``W`` left.

The reference code posts some sends after the next chunk's compute (its step 2); here every
block sends as soon as it ends [U]. It needs an even ``pp``, an even ``m`` and ``m >= 2 pp``
(``num_chunks >= num_ranks * 2`` [U]); the report asks the stages and micro-batches to be
divisible by 2 (section 3.2.1).

Examples
--------
>>> ["|".join(map(str, step)) for step in dualpipe_program(2, 0, 4)]  # a middle rank: its first pair apart
['F0.0', 'F1.0', 'F0.1', 'B1.0', 'F1.1|B0.0', 'B1.1', 'B0.1w', 'W0.1']
>>> bubble_units(8, 1.0, 1.0, 1.0)   # (pp/2 - 1)(F&B + B - 3W) with F&B = F + B + W
3.0
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["PipeOp", "dualpipe_program", "dualpipe_refusal", "dualpipe_blocks", "stage_of", "bubble_units",
           "weight_gradients", "unpaired_blocks"]

#: Products of two activations (a non-flash attention's scores and context): no weights.
_NO_WEIGHTS = frozenset(("scores", "context"))


@dataclass(frozen=True, slots=True)
class PipeOp:
    """One block of a rank's DualPipe program.

    Attributes
    ----------
    kind : str
        ``"F"`` (a forward chunk), ``"B"`` (a backward chunk: the input gradient, and the weight
        gradient unless ``deferred``) or ``"W"`` (a deferred weight gradient).
    direction : int
        0: a micro-batch fed at rank 0; 1: at rank ``pp - 1``.
    micro_batch : int
        Its index among its direction's ``m / 2``.
    deferred : bool
        A ``B`` whose weight gradient runs later, as a ``W`` of the same micro-batch.
    """

    kind: str
    direction: int
    micro_batch: int
    deferred: bool = False

    def __str__(self) -> str:
        return f"{self.kind}{self.direction}.{self.micro_batch}{'w' if self.deferred else ''}"


def stage_of(pp: int, rank: int, direction: int) -> int:
    """The stage rank ``rank`` runs for micro-batches of ``direction``: ``rank`` (direction 0),
    ``pp - 1 - rank`` (direction 1)."""
    return rank if direction == 0 else pp - 1 - rank


def dualpipe_refusal(pp: int, micro_batches: int, virtual_stages: int = 1) -> str | None:
    """Why DualPipe cannot run this pipeline (the words of what was expected and received), or None."""
    if virtual_stages != 1:
        return f"expected no interleaving (each rank holds two chunks), received virtual_stages {virtual_stages}"
    if pp < 2 or pp % 2:
        return f"expected an even pp of at least 2 (micro-batches fed from both ends), received pp {pp}"
    if micro_batches % 2 or micro_batches < 2 * pp:
        return (f"expected an even number of micro-batches of at least 2 x pp = {2 * pp}, received "
                f"{micro_batches}")
    return None


def dualpipe_program(pp: int, rank: int, m: int) -> tuple:
    """Rank ``rank``'s program (module docstring): a tuple of steps, each one :class:`PipeOp` or
    two run side by side (an overlapped pair: a forward and a backward)."""
    half, h, n = pp // 2, min(rank, pp - 1 - rank), m // 2
    near = 0 if rank < half else 1
    forwards, backwards = [0, 0], [0, 0]
    deferred: deque = deque()
    steps: list = []

    def F(chunk):
        d = near ^ chunk
        forwards[d] += 1
        return PipeOp("F", d, forwards[d] - 1)

    def B(chunk, zb=False):
        d = near ^ chunk
        backwards[d] += 1
        op = PipeOp("B", d, backwards[d] - 1, zb)
        if zb:
            deferred.append(op)
        return op

    def W():
        op = deferred.popleft()
        return PipeOp("W", op.direction, op.micro_batch)

    outer = half - h - 1
    steps += [(F(0),) for _ in range(2 * outer)]
    for _ in range(h + 1):
        steps += [(F(0),), (F(1),)]
    for _ in range(outer):
        steps += [(B(1, True),), (W(),), (F(1),)]
    for i in range(n - pp + h + 1):
        if i == 0 and h == half - 1:  # the middle ranks do not overlap their first pair
            steps += [(F(0),), (B(1),)]
        else:
            steps.append((F(0), B(1)))
        steps.append((F(1), B(0)))
    for _ in range(outer):
        steps += [(B(1),), (F(1), B(0))]
    zb = False
    for i in range(h + 1):
        if i == (h + 1) // 2 and h % 2 == 1:
            zb = True
        steps.append((B(1, zb),))
        if i == (h + 1) // 2 and h % 2 == 0:
            zb = True
        steps.append((B(0, zb),))
    for _ in range(outer):
        steps += [(W(),), (B(0, True),)]
    steps += [(W(),) for _ in range(h + 1)]
    return tuple(steps)


def dualpipe_blocks(pp: int, m: int, block: Callable[..., tuple]) -> dict:
    """Walk every rank's program, rank by rank, in program order: ``block(rank, op, after,
    source)`` adds one block's tasks after the ids ``after`` (the step before: both blocks of a
    pair) and returns the ids that end it; ``source`` is the ``(rank, PipeOp)`` whose output it
    waits for on another rank (the forward upstream, the input gradient downstream), or None (a
    micro-batch entering the pipeline, a backward at the loss, a ``W``). Returns, per rank, the
    ids that end its program."""
    ends = {}
    for r in range(pp):
        after: tuple = ()
        for step in dualpipe_program(pp, r, m):
            done: list = []
            for op in step:
                flow = 1 if op.direction == 0 else -1  # the rank the micro-batch goes to next
                source = None
                if op.kind == "F" and 0 <= r - flow < pp:
                    source = (r - flow, op)
                elif op.kind == "B" and 0 <= r + flow < pp:
                    source = (r + flow, PipeOp("B", op.direction, op.micro_batch))
                done.extend(block(r, op, after, source))
            after = tuple(done)
        ends[r] = after
    return ends


def bubble_units(pp: int, forward: float, backward_input: float, weight: float, pair: float | None = None) -> float:
    """DualPipe's bubble, ``(pp/2 - 1)(F&B + B - 3W)`` with ``B`` the backward's input gradient
    alone (what :func:`dualpipe_program` idles by at unit times; [U] the report's table 2 writes
    the formula with ``B`` a full backward chunk, ``(pp/2 - 1) W`` more: see
    :meth:`~models.studies.planner.ep_overlap.DualPipe.bubble`), ``pair`` (``F&B``) defaulting to
    ``F + B + W`` (an overlapped pair that hides all its communication). [s]"""
    fb = forward + backward_input + weight if pair is None else pair
    return max(0.0, pp / 2 - 1) * (fb + backward_input - 3 * weight)


def unpaired_blocks(pp: int) -> int:
    """The forward blocks (as many backward ones) a rank runs alone rather than in an overlapped
    pair, on the rank with the most: ``3 (pp/2 - h - 1) + 2 (h + 1)``, one more on the middle
    ranks (their first pair runs one block after the other), largest at ``h = 0`` or the middle:
    ``max(3 pp/2 - 1, pp + 1)``; whatever the micro-batches (:func:`dualpipe_program`)."""
    return max(3 * (pp // 2) - 1, pp + 1)


def weight_gradients(cm, timed) -> tuple:
    """Of each timed op's backward (:meth:`models.studies.compute.ComputeModel.times`), the part
    that is the weight gradient ``W``: a product with weights times its input gradient and its
    weight gradient ``(k x m)(m x n)`` as two products (:meth:`~models.studies.compute.ComputeModel.time`),
    the second is ``W``; the attention core, the products of two activations and memory passes
    have none (their backward is all input gradient ``B``). [s]"""
    out = []
    for t in timed:
        op = t.op
        if op.kind != "matmul" or op.name in _NO_WEIGHTS:
            out.append(0.0)
        elif op.m and op.n and op.k:
            out.append(cm.gemm_time(op.k, op.n, op.m, op.batch, op.nbytes, quantised=op.quantised))
        else:
            out.append(t.backward / 2)
    return tuple(out)
