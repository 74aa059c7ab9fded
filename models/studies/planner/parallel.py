"""The pieces of context, expert and uneven pipeline parallelism as closed forms: how the layers
split over (virtual) pipeline stages (:func:`stage_split`), what one ring step of context
parallelism sends (:func:`cp_ring_bytes`), what one expert dispatch puts in each rank's buffer
(:func:`dispatch_bytes`) and how much of it stays inside the NVLink domain (:func:`alltoall_split`).

Sources:

* Megatron-LM's pipeline split: ``--decoder-first-pipeline-num-layers`` /
  ``--decoder-last-pipeline-num-layers`` put N layers on the first / last stage and spread the rest
  evenly over the others; ``--account-for-embedding-in-pipeline-split`` and
  ``--account-for-loss-in-pipeline-split`` count the embedding and the output layer with its loss
  as one layer each, so 126 layers + 2 split into 64 chunks of 2 (Llama 3.1 405B's pp16 x v4);
  with interleaving, each stage's layers divide evenly over its ``v`` chunks, chunk ``c`` on
  stage ``c mod pp`` (Narayanan et al. 2021, section 2.2.2) [U: flag names].
* Context parallelism (Megatron-Core / Transformer Engine, ``cp_comm_type``): the sequence is cut
  into ``2 cp`` chunks, rank ``r`` holding chunks ``r`` and ``2 cp - 1 - r`` (causal load
  balance; ``seq % (2 cp) == 0``); ``p2p`` passes K/V blocks around the ring, ``cp - 1`` steps per
  attention forward (K/V and their gradients in the backward), each overlapped with the attention
  of the block in hand; ``a2a`` (Ulysses) swaps the sequence split for a head split with
  all-to-alls of Q, K, V and back of the output.
* Expert parallelism (Megatron-Core ``MoEAlltoAllTokenDispatcher``): each rank sends every routed
  copy of its tokens (``tokens x top_k``, ``hidden`` wide) to the rank holding the expert and
  gets the results back (combine); balanced routing sends ``1 / ep`` of the buffer to each rank
  of the group, itself included (nccl-tests' alltoall: ``nbytes`` is the per-rank buffer).
  DeepSeek-V3 dispatches in FP8 and combines in BF16 (arXiv 2412.19437, section 3.3).

Examples
--------
>>> [len(c) for c in stage_split(126, 16, 4, embedding_in_split=True, loss_in_split=True).stages][:2]
[7, 8]
>>> stage_split(126, 16, 4, embedding_in_split=True, loss_in_split=True).chunk_layers[:2]
(1, 2)
"""

from __future__ import annotations

from dataclasses import dataclass

from .cp_exchange import cp_a2a_bytes, cp_ring_bytes
from .ep_overlap import EP_OVERLAP
from .records import PlanError

__all__ = ["SplitError", "PipelineSplit", "stage_split", "cp_ring_bytes", "cp_a2a_bytes", "dispatch_bytes",
           "alltoall_split", "EP_OVERLAP"]

class SplitError(PlanError):
    """A pipeline split that leaves a stage (or a chunk) empty, or does not divide."""


@dataclass(frozen=True, slots=True)
class PipelineSplit:
    """The layers of each (virtual) chunk, in model order, and the stage each runs on.

    Attributes
    ----------
    chunk_layers : tuple of int
        Transformer layers of chunk ``c`` (``pp x v`` chunks), in model order.
    pp, virtual_stages : int
    """

    chunk_layers: tuple
    pp: int
    virtual_stages: int

    def to_records(self) -> list:
        """One tidy row per chunk: its index, stage and layers."""
        return [{"chunk": c, "stage": c % self.pp, "layers": n} for c, n in enumerate(self.chunk_layers)]

    @property
    def stages(self) -> tuple:
        """Per stage, the model indices of its layers (chunk ``c`` runs on stage ``c mod pp``)."""
        out: list = [[] for _ in range(self.pp)]
        start = 0
        for c, n in enumerate(self.chunk_layers):
            out[c % self.pp].extend(range(start, start + n))
            start += n
        return tuple(tuple(s) for s in out)


def stage_split(layers: int, pp: int, virtual_stages: int = 1, *, first: int = 0, last: int = 0,
                embedding_in_split: bool = False, loss_in_split: bool = False) -> PipelineSplit:
    """Megatron's split of ``layers`` over ``pp`` stages of ``virtual_stages`` chunks (module docstring).

    Without ``first``, ``last`` or the accounting flags and without interleaving, the first
    ``layers mod pp`` stages take one layer more (the planner's even split).

    Raises
    ------
    SplitError
        Naming the split expected and what was received: a stage left without layers, counts
        that do not divide, ``first``/``last`` with one stage or beside the accounting flags.
    """
    v = virtual_stages
    if first < 0 or last < 0:
        raise SplitError(f"first and last stage layers must be >= 0, received {first} and {last}")
    if first or last:
        if pp == 1:
            raise SplitError("first/last stage layers need a pipeline (pp > 1), received pp 1")
        if embedding_in_split or loss_in_split:
            raise SplitError("expected either first/last stage layers or the embedding/loss accounted in the "
                             "split, received both")
        middle = pp - (1 if first else 0) - (1 if last else 0)
        rest = layers - first - last
        if rest < 0 or (middle == 0 and rest) or (middle and (rest < middle or rest % middle)):
            raise SplitError(f"{layers} layers with {first or 'the even share'} on the first stage and "
                             f"{last or 'the even share'} on the last leave {rest} for {middle} other stages: "
                             "expected a positive whole number each")
        share = rest // middle if middle else 0
        counts = [share] * pp
        if first:
            counts[0] = first
        if last:
            counts[-1] = last
        if any(c % v for c in counts):
            raise SplitError(f"stage layer counts {counts} do not split into {v} chunks each")
        chunks = [counts[c % pp] // v for c in range(pp * v)]
    elif v > 1 or embedding_in_split or loss_in_split:
        units = layers + int(embedding_in_split) + int(loss_in_split)
        if units % (pp * v):
            raise SplitError(f"{layers} layers{' + embedding' if embedding_in_split else ''}"
                             f"{' + loss' if loss_in_split else ''} = {units} do not split into pp x v = "
                             f"{pp * v} chunks")
        per = units // (pp * v)
        chunks = [per] * (pp * v)
        chunks[0] -= int(embedding_in_split)
        chunks[-1] -= int(loss_in_split)
    else:
        base, more = divmod(layers, pp)
        chunks = [base + (s < more) for s in range(pp)]
    split = PipelineSplit(tuple(chunks), pp, v)
    empty = [s for s, held in enumerate(split.stages) if not held]
    if empty or min(chunks) < 0:
        raise SplitError(f"the split of {layers} layers over pp {pp} x v {v} leaves stage {empty[0] if empty else 0} "
                         "without layers: expected at least one layer per stage")
    return split


def dispatch_bytes(tokens: float, top_k: int, hidden: int, elem: float, balance: float = 1.0) -> float:
    """The per-rank buffer of one dispatch (or combine): every routed copy of the rank's tokens,
    ``tokens x top_k x hidden x elem``, times ``balance`` (the busiest rank's share over the
    balanced one; 1 when force-balanced). [bytes]

    >>> dispatch_bytes(4096, 8, 7168, 1)  # DeepSeek-V3, one 4K sequence per rank, FP8 dispatch
    234881024.0
    """
    return float(tokens) * top_k * hidden * elem * balance


def alltoall_split(group, domain_of) -> tuple:
    """Of each rank's buffer in a balanced all-to-all over ``group``: the shares that stay on the
    GPU, cross NVLink (other GPUs of its NVLink domain) and cross the network, averaged over the
    ranks (``1 / n`` of the buffer to each rank, itself included).

    ``domain_of`` maps a GPU to its NVLink domain (a host of a DGX, a rack of an NVL72).

    >>> alltoall_split(range(16), lambda g: g // 8)  # 2 hosts of 8: 1/16 kept, 7/16 NVLink, 8/16 network
    (0.0625, 0.4375, 0.5)
    """
    group = list(group)
    n = len(group)
    if n == 0:
        return 0.0, 0.0, 0.0
    domains = [domain_of(g) for g in group]
    nvlink = network = 0
    for d in domains:
        same = sum(1 for e in domains if e == d)
        nvlink += same - 1
        network += n - same
    return 1 / n, nvlink / n / n, network / n / n
