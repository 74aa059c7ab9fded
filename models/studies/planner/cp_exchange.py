"""How context parallelism exchanges keys and values, as strategy objects (:data:`CP_EXCHANGES`):
what one exchange sends (:func:`cp_ring_bytes`, :func:`cp_a2a_bytes`), its time per attention
layer in the analytical first pass, its tasks in the step graph and the layouts it refuses
(:mod:`models.present.plan_text` words each by its name).

Source: Megatron-Core / Transformer Engine's ``cp_comm_type``. The sequence is cut into ``2 cp``
chunks, rank ``r`` holding chunks ``r`` and ``2 cp - 1 - r`` (causal load balance).

* :data:`RING` (``p2p``): ring attention passes the K/V blocks around the ring, ``cp - 1`` steps
  per attention forward (K/V and their gradients in the backward), each overlapped with the
  attention of the block in hand.
* :data:`ALL_TO_ALL` (``a2a``, Ulysses): swaps the sequence split for a head split with
  all-to-alls of Q, K, V and back of the output (the heads per tensor-parallel rank must divide
  ``cp``), not overlapped.
* :class:`HierarchicalExchange` (``a2a+p2p``, Transformer Engine >= 1.12's hierarchical context
  parallelism, Megatron-Core's ``hierarchical_context_parallel_sizes = [a, p]``, ``a p = cp``):
  the all-to-alls inside groups of ``a`` consecutive context-parallel ranks (the inner level,
  within the NVLink domain as the ranks are laid out: tensor-parallel fastest, then context), then
  a ring of ``p`` steps across the groups (ranks ``a`` apart) on ``seq / p`` tokens of ``1 / a`` of
  the heads: the ring's blocks are the plain ring's bytes, ``p - 1`` steps instead of ``cp - 1``.
  Both sizes at least 2 (``a = cp`` is ``a2a``, ``p = cp`` is ``p2p``: name those instead); the
  heads per tensor-parallel rank divisible by ``a``. Unsized (``HierarchicalExchange()``), the
  search takes every ``a`` of each ``cp`` it tries (:meth:`CpExchange.for_degree`).

The groups [U: Megatron-Core ``parallel_state.create_hierarchical_parallel_groups``, recalled]:
the inner (all-to-all) group of rank ``i`` of a context-parallel group ``g`` is ``g[a k .. a k +
a - 1]``, the outer (ring) group ``g[j], g[j + a], ...``.

The planner takes one of them (``plan(..., cp_comm="a2a")``, ``plan --cp-comm a2a``), read once
at its edge (:func:`cp_exchange_named`); a layout carries the object
(:attr:`models.studies.planner.records.Layout.cp_comm`). One of your own: subclass
:class:`CpExchange` (a frozen dataclass with a default ``name``) and pass the instance as
``cp_comm``.

Examples
--------
>>> cp_exchange_named("a2a") is ALL_TO_ALL, cp_exchange_named("ring")
(True, None)
>>> [x.name for x in CP_EXCHANGES]
['p2p', 'a2a', 'a2a+p2p']
>>> HierarchicalExchange((2, 4)).alltoall_groups((0, 1, 2, 3, 4, 5, 6, 7))
((0, 1), (2, 3), (4, 5), (6, 7))
>>> HierarchicalExchange((2, 4)).ring_groups((0, 1, 2, 3, 4, 5, 6, 7))
((0, 2, 4, 6), (1, 3, 5, 7))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol

__all__ = ["CpExchange", "RingExchange", "AllToAllExchange", "HierarchicalExchange", "RING", "ALL_TO_ALL",
           "HIERARCHICAL", "CP_EXCHANGES", "CP_COMM", "cp_exchange_named", "cp_ring_bytes", "cp_a2a_bytes",
           "AttentionTasks"]


def _kv_widths(w, tp: int) -> tuple:
    """(K width, V width) of one token's keys and values held by one tensor-parallel rank."""
    a = getattr(w, "attention", None)
    if a is None:  # a dense Transformer: kv_heads of hidden / heads, replicated above tp
        d = w.hidden // w.heads
        kv = max(w.kv_heads // tp, 1) * d
        return kv, kv
    if hasattr(a, "kv_heads"):  # grouped-query attention
        kv = max(a.kv_heads // tp, 1) * a.head_dim
        return kv, kv
    heads = a.heads // tp  # latent attention: decompressed per head (what the kernel reads)
    return heads * a.qk_dim, heads * a.v_dim


def cp_ring_bytes(w, micro_batch: int, cp: int, tp: int, act: float) -> float:
    """One ring step of context parallelism: the K/V block of ``seq / cp`` tokens one GPU sends
    to the next, ``b (s / cp) (K + V widths) act``. [bytes]

    >>> from models.studies.workload import PRESETS
    >>> cp_ring_bytes(PRESETS["llama3-8b"], 1, 2, 1, 2)  # 4,096 tokens x (1,024 + 1,024) x 2 bytes
    16777216.0
    """
    k, v = _kv_widths(w, tp)
    return float(micro_batch) * (w.seq // cp) * (k + v) * act


def cp_a2a_bytes(w, micro_batch: int, cp: int, tp: int, act: float) -> tuple:
    """The per-rank buffers of the all-to-all variant's four all-to-alls of one forward (Q, K, V
    in, the output back): ``b (s / cp) width act`` each. [bytes]"""
    k, v = _kv_widths(w, tp)
    a = getattr(w, "attention", None)
    heads = (w.heads if a is None else a.heads) // tp
    q = heads * (w.hidden // w.heads if a is None else a.qk_dim)
    o = heads * (w.hidden // w.heads if a is None else a.v_dim)
    tokens = float(micro_batch) * (w.seq // cp)
    return tuple(tokens * width * act for width in (q, k, v, o))


class AttentionTasks(Protocol):
    """What the step graph offers an exchange to build one layer's attention core
    (:meth:`CpExchange.attention_tasks`); each returns the id(s) later tasks wait for."""

    def compute(self, suffix: str, seconds: float, after: tuple) -> str:
        """A kernel of the layer's tensor-parallel group, after ``after``."""

    def ring_send(self, suffix: str, nbytes: float, after: tuple) -> tuple:
        """Every rank of the context-parallel rings sends ``nbytes`` to the next."""

    def alltoall(self, prefix: str, nbytes: float, after) -> str:
        """An all-to-all of ``nbytes`` per rank over the context-parallel groups."""


#: ``layer(att_forward, att_backward, full)`` -> (time, exposed) of one attention layer's exchange
#: of one micro-batch, given the attention kernel's passes; ``full``: with full recomputation. [s]
LayerTimer = Callable[[float, float, bool], tuple]


@dataclass(frozen=True)
class CpExchange:
    """One way context parallelism exchanges K/V (module docstring): the interface, and the ring's
    behaviour (:class:`RingExchange` names it).

    Attributes
    ----------
    name : str
        What ``--cp-comm`` and records call it.
    label : str
        Its mark after ``cp{N}`` in a layout's label ('' for the ring; an exchange without one is
        marked by its name).
    """

    name: str = "p2p"
    label: str = ""
    #: The :class:`~models.studies.planner.records.SkipCode` value of a layout :meth:`refuses` names.
    refusal: ClassVar[str] = "cp_heads"

    def __str__(self) -> str:
        return self.name

    def check(self, cp: int | None) -> str | None:
        """What is wrong with this exchange for a context-parallel degree ``cp`` given (None:
        searched), in words; None when nothing is (the ring and the all-to-all: never)."""
        return None

    @property
    def degree(self) -> int | None:
        """The context-parallel degree the exchange implies (None: any)."""
        return None

    def for_degree(self, cp: int) -> tuple:
        """The exchanges a layout of ``cp`` may take for this one (itself)."""
        return (self,)

    def ring_groups(self, group: tuple) -> tuple:
        """The rings K/V blocks pass around, of one context-parallel group's GPUs (the group)."""
        return (tuple(group),)

    def alltoall_groups(self, group: tuple) -> tuple:
        """The groups the all-to-alls run over, of one context-parallel group's GPUs (the group)."""
        return (tuple(group),)

    def buffers(self, w, micro_batch: int, cp: int, tp: int, act: float) -> tuple:
        """The bytes of the forward's exchange per attention layer (one ring step's K/V block). [bytes]"""
        return (cp_ring_bytes(w, micro_batch, cp, tp, act),)

    def refuses(self, heads: int, cp: int) -> bool:
        """Whether ``heads`` attention heads per tensor-parallel rank rule out ``cp`` (the ring: never)."""
        return False

    def layer_timer(self, buffers: tuple, cp: int, comm, alltoall) -> LayerTimer:
        """The exchange's time and exposed part per attention layer (:data:`LayerTimer`):
        ``cp - 1`` ring sends of the block forward, of the block and its gradient backward (and
        the forward's again with full recomputation), each hidden behind ``1 / cp`` of the
        attention kernel. ``comm(dimension, collective, nbytes)``, ``alltoall(dimension, nbytes)``
        time them on the layout's groups. [s]"""
        ring = buffers[0]
        forward, backward = comm("cp_ring", "sendrecv", ring), comm("cp_ring", "sendrecv", 2 * ring)

        def layer(att_f: float, att_b: float, full: bool) -> tuple:
            f = (cp - 1) * forward
            exposed_f = (cp - 1) * max(0.0, forward - att_f / cp)
            exposed_b = (cp - 1) * max(0.0, backward - att_b / cp)
            return (f + (cp - 1) * backward + (f if full else 0.0),
                    exposed_f + exposed_b + (exposed_f if full else 0.0))
        return layer

    def attention_tasks(self, tasks: AttentionTasks, buffers: tuple, attention: float, cp: int, after, *,
                        forward: bool, full: bool):
        """One layer's attention core after ``after``: ``cp`` chunks of the kernel, ring step ``k``
        beside chunk ``k`` and chunk ``k + 1`` waiting for it; returns what the next task waits for."""
        ring = buffers[0]
        nbytes = ring if forward else 2 * ring + (ring if full else 0.0)
        last = after
        for step in range(cp):
            chunk = tasks.compute(f"a{step}", attention / cp, (last,))
            if step == cp - 1:
                return chunk
            last = (chunk, *tasks.ring_send(f"kv{step}", nbytes, (last,)))
        return last


@dataclass(frozen=True)
class RingExchange(CpExchange):
    """Ring attention (``p2p``): :class:`CpExchange`'s behaviour."""


@dataclass(frozen=True)
class AllToAllExchange(CpExchange):
    """Ulysses all-to-all (``a2a``): 4 all-to-alls per pass (Q, K, V in, the output back), 8
    with the backward's, 12 with full recomputation, before the whole attention kernel."""

    name: str = "a2a"
    label: str = "a2a"

    def buffers(self, w, micro_batch: int, cp: int, tp: int, act: float) -> tuple:
        """The per-rank buffers of the forward's four all-to-alls (Q, K, V, output). [bytes]"""
        return cp_a2a_bytes(w, micro_batch, cp, tp, act)

    def refuses(self, heads: int, cp: int) -> bool:
        """The head split needs the heads per tensor-parallel rank divisible by ``cp``."""
        return bool(heads % cp)

    def layer_timer(self, buffers: tuple, cp: int, comm, alltoall) -> LayerTimer:
        """The all-to-alls forward, backward (and again with full recomputation), all exposed. [s]"""
        one = sum(alltoall("cp", x) for x in buffers)

        def layer(att_f: float, att_b: float, full: bool) -> tuple:
            time = 2 * one + (one if full else 0.0)
            return time, time
        return layer

    def attention_tasks(self, tasks: AttentionTasks, buffers: tuple, attention: float, cp: int, after, *,
                        forward: bool, full: bool):
        """The pass's all-to-alls one after the other, then the whole attention kernel."""
        last = after
        for x, nbytes in enumerate(buffers * (1 + (not forward) + (not forward and full))):
            last = tasks.alltoall(f"cpa{x}.", nbytes, last)
        return tasks.compute("att", attention, (last,))


@dataclass(frozen=True, init=False)
class HierarchicalExchange(CpExchange):
    """Hierarchical context parallelism (``a2a+p2p``, module docstring): per pass the 4
    all-to-alls of :class:`AllToAllExchange` over the inner groups of ``a`` (exposed), and a ring
    of ``p - 1`` steps over the outer groups, each hidden behind ``1 / p`` of the attention kernel.

    Attributes
    ----------
    sizes : tuple of (int, int) or None
        ``(a, p)``: the all-to-all (inner) and ring (outer) group sizes, Megatron-Core's
        ``hierarchical_context_parallel_sizes``; None: searched (every ``a`` of a degree).
    """

    name: str = "a2a+p2p"
    label: str = ""
    sizes: tuple | None = None
    refusal: ClassVar[str] = "cp_hierarchy"

    def __init__(self, sizes: tuple | None = None, *, name: str = "a2a+p2p", label: str = ""):
        object.__setattr__(self, "sizes", tuple(sizes) if isinstance(sizes, list) else sizes)
        object.__setattr__(self, "name", name)
        if not label and self.sizes is not None and self.check(None) is None:
            label = f"a{self.sizes[0]}p{self.sizes[1]}"  # tp1 cp8a2p4 ...
        object.__setattr__(self, "label", label)

    def check(self, cp: int | None) -> str | None:
        """The sizes must be two whole numbers >= 2 whose product is ``cp`` (when given: a layout's
        degree needs them)."""
        sizes = self.sizes
        if sizes is None:
            if cp is None:
                return None
            if not any(cp % a == 0 and cp // a >= 2 for a in range(2, cp + 1)):
                return (f"a2a+p2p needs cp = a x p with both >= 2, and cp {cp} has no such split "
                        f"(expected a cp such as 4, 6 or 8)")
            return (f"a2a+p2p needs its sizes a x p = cp {cp}, both >= 2 "
                    f"(hierarchical_context_parallel_sizes), received none")
        ok = (isinstance(sizes, tuple) and len(sizes) == 2
              and all(isinstance(x, int) and not isinstance(x, bool) and x >= 2 for x in sizes))
        if not ok:
            return (f"a2a+p2p sizes must be two whole numbers >= 2 (the all-to-all group, the ring; 1 of either is "
                    f"p2p or a2a), received {sizes!r}")
        if cp is not None and sizes[0] * sizes[1] != cp:
            return f"a2a+p2p sizes {sizes[0]} x {sizes[1]} must multiply to cp {cp}, received {sizes[0] * sizes[1]}"
        return None

    @property
    def degree(self) -> int | None:
        """``a x p`` when sized: the degree a search takes when ``cp`` is not given."""
        return None if self.sizes is None or self.check(None) else self.sizes[0] * self.sizes[1]

    def for_degree(self, cp: int) -> tuple:
        """Sized: itself; unsized: one per all-to-all size ``a`` of ``cp`` with ``a, cp / a >= 2``
        (none: itself, which :meth:`refuses` the degree)."""
        if self.sizes is not None:
            return (self,)
        found = tuple(type(self)((a, cp // a)) for a in range(2, cp // 2 + 1) if cp % a == 0)
        return found or (self,)

    def buffers(self, w, micro_batch: int, cp: int, tp: int, act: float) -> tuple:
        """(one ring step's K/V block, the four all-to-all buffers of a forward): the block is
        :func:`cp_ring_bytes` of ``seq / p`` tokens with the heads of ``tp a`` ranks; the
        all-to-alls' :func:`cp_a2a_bytes` of ``seq / cp`` tokens. [bytes]"""
        a, p = self.sizes
        return (cp_ring_bytes(w, micro_batch, p, tp * a, act), *cp_a2a_bytes(w, micro_batch, cp, tp, act))

    def refuses(self, heads: int, cp: int) -> bool:
        """Unsized, the wrong sizes for ``cp``, or the heads per tensor-parallel rank not divisible by ``a``."""
        return self.sizes is None or self.check(cp) is not None or bool(heads % self.sizes[0])

    def ring_groups(self, group: tuple) -> tuple:
        """The outer rings: ranks ``a`` apart."""
        a = self.sizes[0]
        return tuple(tuple(group[j::a]) for j in range(a))

    def alltoall_groups(self, group: tuple) -> tuple:
        """The inner groups: ``a`` consecutive ranks."""
        a = self.sizes[0]
        return tuple(tuple(group[k:k + a]) for k in range(0, len(group), a))

    def layer_timer(self, buffers: tuple, cp: int, comm, alltoall) -> LayerTimer:
        """The inner all-to-alls (exposed) and the outer ring of ``p`` (hidden behind the
        attention where faster), forward, backward and again forward with full recomputation. [s]"""
        p = self.sizes[1]
        ring = CpExchange.layer_timer(self, buffers[:1], p, comm, alltoall)
        one = sum(alltoall("cp", x) for x in buffers[1:])

        def layer(att_f: float, att_b: float, full: bool) -> tuple:
            a2a = 2 * one + (one if full else 0.0)
            time, exposed = ring(att_f, att_b, full)
            return time + a2a, exposed + a2a
        return layer

    def attention_tasks(self, tasks: AttentionTasks, buffers: tuple, attention: float, cp: int, after, *,
                        forward: bool, full: bool):
        """The pass's all-to-alls over the inner groups one after the other, then the ring of
        ``p`` over the outer groups beside the attention's ``p`` chunks."""
        last = after
        for x, nbytes in enumerate(buffers[1:] * (1 + (not forward) + (not forward and full))):
            last = tasks.alltoall(f"cpa{x}.", nbytes, last)
        return CpExchange.attention_tasks(self, tasks, buffers[:1], attention, self.sizes[1], last,
                                          forward=forward, full=full)


#: Ring attention passing K/V blocks point to point (``p2p``, the default).
RING = RingExchange()
#: Ulysses all-to-all attention (``a2a``).
ALL_TO_ALL = AllToAllExchange()
#: Hierarchical (``a2a+p2p``), its sizes searched.
HIERARCHICAL = HierarchicalExchange()
#: The exchanges ``--cp-comm`` chooses among, the default first.
CP_EXCHANGES = (RING, ALL_TO_ALL, HIERARCHICAL)
#: Their names (Megatron-Core's ``cp_comm_type``): ``p2p``, ``a2a``, ``a2a+p2p``.
CP_COMM = tuple(x.name for x in CP_EXCHANGES)


def cp_exchange_named(name: str, exchanges=CP_EXCHANGES) -> CpExchange | None:
    """The exchange of ``exchanges`` called ``name``, or None."""
    return next((x for x in exchanges if x.name == name), None)
