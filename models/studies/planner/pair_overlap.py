"""An overlapped pair: one micro-batch's forward block beside another's backward block, as the
step graph runs them (:mod:`models.studies.planner.parallel_graph`), walked in closed form
(:func:`pair_time`), so that the analytical step (:mod:`models.studies.planner.parallel_step`)
exposes the all-to-alls its simulation exposes.

A block is a chain of *segments*, each on one stream (:func:`block_segments`): per layer, the
attention half's kernels (``"gpu"``), its tensor-parallel collectives (on the GPU's stream here:
the first pass counts them exposed), the router and permutation, the **dispatch** all-to-all
(``"ep"``), the local experts' grouped GEMMs, the **combine** all-to-all (``"ep"``; with expert
tensor parallelism an all_gather before the experts and a reduce_scatter after, ``"etp"``), the
shared experts or dense FFN; a backward runs its layers in reverse, each in the forward's order
with the backward's kernels (the step graph's order [U]).

Two chains on one GPU run as the simulator runs two streams of work
(:func:`models.predict.simulate.simulate`): a GPU runs one kernel at a time, a communicator one
operation at a time, and a free stream starts the first waiting segment in the pair's order (the
forward's first, as the step graph adds it first). The walk is phase by phase: while one chain
computes the other communicates, and a phase lasts the longer of the two, so a pair takes
``sum over phases max(one chunk's compute, the other's communication)`` rather than
``max(compute, communication)``: the DeepSeek-V3 Technical Report's figure 4 (arXiv 2412.19437,
section 3.2.1) pairs a forward's attention, dispatch, MLP and combine with a backward's in the
same way [U: the figure recalled, not re-read]. What the GPU idles in the pair is its exposed
communication (:func:`pair_exposure`).

Examples
--------
>>> f = (("gpu", 3.0), ("ep", 1.0), ("gpu", 2.0), ("ep", 1.0))
>>> b = (("gpu", 4.0), ("ep", 1.0), ("gpu", 4.0), ("ep", 1.0))
>>> pair_time(f, b), pair_exposure(f, b)   # 13 of compute; only the backward's last combine idles the GPU
(14.0, 1.0)
>>> pair_time((("gpu", 1.0), ("ep", 5.0)), (("gpu", 1.0), ("ep", 5.0)))  # one communicator: 1 + 5 + 5
11.0
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["LayerPass", "layer_pass", "by_part", "block_segments", "pair_time", "pair_exposure",
           "communication", "ATTENTION_OPS"]

#: The attention core's kernels (a flash kernel, or a non-flash attention's products and softmax).
ATTENTION_OPS = frozenset(("flash_attention", "scores", "softmax", "context"))
_ROUTE = frozenset(("router", "permute"))
_EXPERTS = frozenset(("experts_in", "experts_out", "expert_activation"))
_FFN = frozenset(("ffn_in", "ffn_out", "activation", "shared_in", "shared_out", "shared_activation")) | _ROUTE \
    | _EXPERTS
#: The stream of a block's kernels.
GPU = "gpu"


@dataclass(frozen=True, slots=True)
class LayerPass:
    """One layer kind's kernel times in one pass, by part of the layer. [s]

    Attributes
    ----------
    pre : float
        The attention half around its core (projections, norms).
    attention : float
        The attention core.
    route : float
        Router and permutation (MoE).
    experts : float
        The local experts' grouped GEMMs (MoE).
    rest : float
        The dense FFN, or the shared experts.
    """

    pre: float = 0.0
    attention: float = 0.0
    route: float = 0.0
    experts: float = 0.0
    rest: float = 0.0

    def __add__(self, other: LayerPass) -> LayerPass:
        return LayerPass(self.pre + other.pre, self.attention + other.attention, self.route + other.route,
                         self.experts + other.experts, self.rest + other.rest)

    def __sub__(self, other: LayerPass) -> LayerPass:
        return LayerPass(self.pre - other.pre, self.attention - other.attention, self.route - other.route,
                         self.experts - other.experts, self.rest - other.rest)

    @property
    def total(self) -> float:
        return self.pre + self.attention + self.route + self.experts + self.rest


def by_part(named) -> LayerPass:
    """Seconds of ``(op name, seconds)`` pairs summed by the part of the layer each op is in."""
    out = dict(pre=0.0, attention=0.0, route=0.0, experts=0.0, rest=0.0)
    for name, seconds in named:
        part = ("attention" if name in ATTENTION_OPS else "route" if name in _ROUTE else "experts" if name in _EXPERTS
                else "rest" if name in _FFN else "pre")
        out[part] += seconds
    return LayerPass(**out)


def layer_pass(timed, backward: bool) -> LayerPass:
    """The forward (or backward) of timed ops (:meth:`models.studies.compute.ComputeModel.times`) by part."""
    return by_part((t.op.name, t.backward if backward else t.forward) for t in timed)


def block_segments(layers: Sequence, *, forward: bool, ep: tuple = (), etp: tuple = (), one_tp: float = 0.0,
                   recount: int = 1, shared: bool = False, first: float = 0.0, last: float = 0.0,
                   head_collectives: tuple = (0, 0), attention_exposed: float = 0.0) -> tuple:
    """One block of a stage as ``(stream, seconds)`` segments (module docstring).

    Parameters
    ----------
    layers : sequence of (bool, LayerPass)
        The stage's layers in model order: (dense FFN, this pass's kernel times).
    forward : bool
        A forward block (the layers in order) or a backward one (reversed).
    ep : tuple of (float, float)
        A MoE layer's (dispatch, combine) all-to-alls, in the order the block runs them (the
        backward's gradients, after the forward's again with full recomputation). [s]
    etp : tuple of (float, float), or ()
        Around each pair of ``ep``'s experts, the expert tensor-parallel all_gather and
        reduce_scatter (``()``: none). [s]
    one_tp : float
        One tensor-parallel collective. [s]
    recount : int
        Collectives per layer half (2: the backward with full recomputation).
    shared : bool
        A MoE layer's shared experts (a collective after its FFN half).
    first, last : float
        Kernels joined to the first (the embedding) and last layer (the head, loss, MTP). [s]
    head_collectives : tuple of int
        Collectives of the first and last layer's head.
    attention_exposed : float
        Per layer, the context-parallel exchange the attention core waits for. [s]
    """
    out: list = []

    def gpu(seconds):
        if seconds > 0:
            out.append((GPU, seconds))

    n = len(layers)
    for li in (range(n) if forward else reversed(range(n))):
        dense, p = layers[li]
        head = (first if li == 0 else 0.0) + (last if li == n - 1 else 0.0)
        gpu(p.pre + p.attention + attention_exposed + head)
        gpu(recount * one_tp)
        heads = (head_collectives[0] if li == 0 else 0) + (head_collectives[1] if li == n - 1 else 0)
        if dense:
            gpu(p.route + p.experts + p.rest)
        else:
            gpu(p.route)
            for x, (dispatch, combine) in enumerate(ep):
                out.append(("ep", dispatch))
                if etp:
                    out.append(("etp", etp[0]))
                if x == len(ep) - 1:
                    gpu(p.experts)
                if etp:
                    out.append(("etp", etp[1]))
                out.append(("ep", combine))
            gpu(p.rest)
        gpu(((recount if (dense or shared) else 0) + heads) * one_tp)
    return tuple(out)


def communication(segments) -> float:
    """The seconds of a chain's segments off the GPU's stream. [s]"""
    return sum(s for stream, s in segments if stream != GPU)


def pair_time(first, second) -> float:
    """Two chains of ``(stream, seconds)`` segments started together, each segment after the one
    before it in its chain, each stream running one segment at a time, a free stream starting
    the waiting segment that can start first (``first``'s on a tie). [s]"""
    chains = (tuple(first), tuple(second))
    at = [0, 0]
    ready = [0.0, 0.0]
    free: dict = {}
    while True:
        best = None
        for c in (0, 1):
            if at[c] < len(chains[c]):
                stream, _ = chains[c][at[c]]
                start = max(ready[c], free.get(stream, 0.0))
                if best is None or start < best[0]:
                    best = (start, c)
        if best is None:
            return max(ready)
        start, c = best
        stream, seconds = chains[c][at[c]]
        ready[c] = free[stream] = start + seconds
        at[c] += 1


def pair_exposure(first, second) -> float:
    """What the GPU idles while the pair runs (:func:`pair_time` less its kernels): the pair's
    exposed communication. [s]"""
    busy = sum(s for stream, s in (*first, *second) if stream == GPU)
    return max(0.0, pair_time(first, second) - busy)
