"""Schedules the model knows, written as MSCCL schedules: NCCL's own rings, and the tree packing that
reaches the bound.

- :func:`nccl_schedule`: the rings of NCCL's channel search on a GPU set (one ring per channel, in
  the search's order, :attr:`models.engine.nccl.search.ChannelSearch.channels`), as the ring
  all_gather, reduce_scatter or all_reduce NCCL runs on them: each rank's block split into one
  chunk per channel, each chunk moving around its channel's ring (all_reduce: reduce-scatter then
  all-gather on the same ring, NCCL's ring all_reduce).
  With ``algorithm="tree"``, NCCL's trees instead: the tree graph's channels, each the chain
  NCCL builds of it on one node (:func:`models.engine.nccl.trees.intra_chain`), as NCCL's tree
  all_reduce runs on it (NVIDIA/nccl v2.27.7-1 src/device/all_reduce.h, ``runTreeUpDown``): each
  channel's chunk is reduced up the chain to its head (``rrs`` at each middle rank, ``rrcs`` at
  the head, which sends the sum back down) and copied down it (``rcs``, the tail ``r``). A middle
  rank runs the two directions on two threadblocks of the channel, as NCCL's kernel does with
  its up and down connections. NCCL runs Tree for all_reduce only.
- :func:`packing_schedule`: the trees of :func:`models.studies.packing.pack_trees` (the
  spanning trees that meet the bound) on the capacities the evaluator times with
  (:func:`models.schedules.evaluate.achieved_graph`), as all_gather (each root's chunks down its
  trees), reduce_scatter (each root's chunks reduced up its reversed trees) or all_reduce (reduced
  up, then sent down from the root): the steps and their channels are
  :mod:`models.schedules.packed`'s.

All are written in place (the executor dialect, ``outofplace="0"``), check
(:func:`~models.schedules.check.check_schedule`) and evaluate
(:func:`~models.schedules.evaluate.evaluate_schedule`).

**The bound the packing is held to** (tests, docs/cli.md, ``examples/packing_sweep_benchmark.py``)
is the NVLink-only bound at the capacities the evaluator times with
(:func:`models.studies.bounds.bound` on :func:`~models.schedules.evaluate.achieved_graph` with
``edge_kinds=["nvlink"]``), not the line-rate bound of ``dgxtopo bound``: the runtime's
connections take NCCL's paths between two GPUs (NVLink where there is one), so trees relayed over
PCIe and the CPUs, which the line-rate bound may count, could not be run, and no schedule's
transfers move faster than NCCL's kernels achieve over a link. On every DGX-1 and DGX-1V GPU set
where that bound beats NCCL's predicted busbw, the packing's all_gather reaches at least 95 % of
it at 1 GiB (the sweep's figures: docs/cli.md).

Examples
--------
>>> import topo
>>> from models.schedules import check_schedule
>>> s = nccl_schedule(topo.build("dgx1v"), "all_gather")
>>> s.nchannels, check_schedule(s).steps
(6, 384)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from types import MappingProxyType

import topo

from ..engine.fabric import prepare
from ..engine.results import tidy_records
from .evaluate import SCHEDULE_MAX_EVENTS
from .msccl import EXECUTOR, Gpu, Schedule, ScheduleError, Step, Threadblock
from .packed import CHUNK_COUNTS

__all__ = ["ExportError", "EXPORT_COLLECTIVES", "PACKING_COLLECTIVES", "TREE_COLLECTIVES", "NCCL_ALGORITHMS",
           "nccl_schedule", "packing_schedule", "schedule_packing", "export_schedule", "SOURCES",
           "sized_chunks", "SizedTiming", "SizedSkip", "SIZED_CHUNK_COUNTS", "SIZED_MAX_LOOPS", "SIZED_PATIENCE", "SIZED_PROTOCOLS",
           "PACKING_MAX_HOPS", "packing_hops"]

#: What :func:`nccl_schedule` writes.
EXPORT_COLLECTIVES = ("all_gather", "reduce_scatter", "all_reduce")
#: What :func:`nccl_schedule` writes on NCCL's trees (NCCL's Tree runs all_reduce only).
TREE_COLLECTIVES = ("all_reduce",)
#: NCCL's algorithms :func:`nccl_schedule` writes.
NCCL_ALGORITHMS = ("ring", "tree")
#: What :func:`packing_schedule` writes.
PACKING_COLLECTIVES = ("all_gather", "reduce_scatter", "all_reduce")
#: The sources of :func:`export_schedule`.
SOURCES = ("packing", "nccl")
#: Chunks per root :func:`sized_chunks` times at a size, fewest first (powers of two: each halves
#: the chunk), up to the default count.
SIZED_CHUNK_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128)
#: The most loops of a count :func:`sized_chunks` times: each one simulated, none extrapolated
#: (set while :func:`~models.schedules.evaluate.evaluate_schedule` extrapolated loops beyond
#: ``max_loops`` from the mean end of their tasks, which streams running ahead of the busiest
#: links shortened, so few chunks of many loops beat the bound; it now takes whole loops' ends,
#: within 1 % where checked, and the cap stays: a count is then timed loop by loop).
SIZED_MAX_LOOPS = 64
#: Counts timed past the fastest before :func:`sized_chunks` stops (the time falls, then rises, as
#: the chunks go from few and slow to many and latency-bound; 2 lets one rounding blip pass).
SIZED_PATIENCE = 2
#: The protocols :func:`sized_chunks` chooses among when none is given, in the order timed: Simple
#: first (its default count is always timed), then LL128 and LL, whose lower latency per step
#: (NVIDIA/nccl v2.27.7-1 src/graph/tuning.cc, ``hwLat``) wins at small sizes and whose rate per
#: channel and wire bytes per payload byte lose at large ones (the evaluator's pricing of Ring).
SIZED_PROTOCOLS = ("Simple", "LL128", "LL")
#: The tree hops building the packing's schedule may write at most by default (``max_hops``; the
#: command line's ``--max-hops``; :func:`packing_hops` counts them before the trees are packed).
#: Its work grows faster than the hops (the packing's column generation searches a tree per GPU
#: each round over every pair of GPUs), so the limit is set by what the GPU sets of one NVLink
#: domain cost: a limit on the work, not a fit. It takes every collective on the 16 GPUs of a DGX-2
#: (all_reduce at 128 chunks a GPU: 61,440 hops, about 25 CPU seconds to build) and refuses
#: all_gather and reduce_scatter on more than 24 GPUs, all_reduce on more than 17 (all_gather on
#: 25: 76,800 hops at 128 chunks; on all 72 of an NVL72 rack 654,336, whose packing would take
#: hours).
PACKING_MAX_HOPS = 75_000
#: MSCCL's ``coll`` of each collective (the executor dialect's, [MX]).
_COLL = MappingProxyType({"all_gather": "allgather", "reduce_scatter": "reducescatter", "all_reduce": "allreduce"})


class SizedSkip(enum.Enum):
    """Why :func:`sized_chunks` did not time a protocol."""

    #: NCCL does not enable the protocol for Ring on these GPUs (the evaluator cannot price it).
    NOT_ENABLED = "not_enabled"
    #: Its least possible time (:attr:`SizedTiming.lower`) is no less than the fastest found.
    BOUND = "bound"
    #: Its schedules need more simulator events (:attr:`SizedTiming.events`) than are left of
    #: ``max_events`` (:attr:`SizedTiming.left`).
    BEYOND_BUDGET = "beyond_budget"


@dataclass(frozen=True, slots=True)
class SizedTiming:
    """One schedule :func:`sized_chunks` timed, or one protocol it did not time.

    Attributes
    ----------
    protocol : str
    chunks : int or None
        Chunks per GPU of the schedule (None: the protocol was not timed).
    time : float or None
        Its evaluated time at the size (None: not timed). [s]
    skipped : SizedSkip or None
        Why the protocol was not timed (None: it was).
    lower : float or None
        :attr:`SizedSkip.BOUND`: the protocol's least possible time at the size. [s]
    fastest : float or None
        :attr:`SizedSkip.BOUND`: the fastest time found before it. [s]
    events, left : int or None
        :attr:`SizedSkip.BEYOND_BUDGET`: the events its schedules need, and those left.
    """

    protocol: str
    chunks: int | None
    time: float | None
    skipped: SizedSkip | None = None
    lower: float | None = None
    fastest: float | None = None
    events: int | None = None
    left: int | None = None

    def to_records(self) -> list:
        """One tidy row: every attribute (``skipped`` as its code)."""
        row = {name: getattr(self, name) for name in self.__slots__}
        row["skipped"] = None if self.skipped is None else self.skipped.value
        return tidy_records(row)


class ExportError(ScheduleError):
    """A schedule that cannot be written: a collective the source does not write, too few GPUs,
    more steps than the runtime takes."""


def _selection(fabric, gpus) -> tuple:
    G = fabric.G
    ids = {g: i for i, g in enumerate(topo.gpus(G))}
    chosen = tuple(sorted(ids[g] for g in topo.select_gpus(G, gpus)))
    if len(chosen) < 2:
        raise ExportError(f"a schedule needs at least 2 GPUs, received GPUs {list(chosen)}")
    return chosen


def _schedule(name, collective, protocol, nchannels, n, k, per_gpu, scratch=None, chunks=None) -> Schedule:
    """A Schedule of in-place threadblocks ``per_gpu[rank] = [(send, recv, chan, [step...])]`` of
    ``k`` chunks per rank (or ``chunks`` in all)."""
    chunks = n * k if chunks is None else chunks
    gpus = []
    for r in range(n):
        tbs = tuple(Threadblock(id=t, send=send, recv=recv, chan=chan, steps=tuple(steps))
                    for t, (send, recv, chan, steps) in enumerate(per_gpu[r]))
        i_chunks, o_chunks = (0, chunks) if collective == "all_gather" else (chunks, 0)
        gpus.append(Gpu(id=r, i_chunks=i_chunks, o_chunks=o_chunks, s_chunks=scratch[r] if scratch else 0, threadblocks=tbs))
    return Schedule(name=name[:63], protocol=protocol, collective=collective, coll=_COLL[collective],
                    nchannels=nchannels, nchunksperloop=chunks, ngpus=n, inplace=True, outofplace=False,
                    min_bytes=0, max_bytes=2**27, nthreads=None, gpus=tuple(gpus), dialect=EXECUTOR)


def _ring_steps(collective, order, r, k, j) -> list:
    """The steps of rank ``r`` for chunk ``j`` of every block on a ring ``order`` (ranks), in place."""
    n = len(order)
    p = order.index(r)
    block = lambda t: order[(p - t) % n] * k + j  # noqa: E731  the chunk of the rank t places back
    buf = "o" if collective == "all_gather" else "i"
    steps = []
    if collective == "all_gather":
        steps.append(("s", block(0)))
        steps += [("rcs" if t < n - 1 else "r", block(t)) for t in range(1, n)]
        return [(kind, buf, off) for kind, off in steps]
    # reduce-scatter: the block of the previous rank starts here; this rank's own block ends here.
    steps.append(("s", block(1)))
    steps += [("rrs", block(t)) for t in range(2, n)]
    if collective == "reduce_scatter":
        steps.append(("rrc", block(0)))
    else:  # all_reduce: this rank's reduced block goes round the ring
        steps.append(("rrcs", block(0)))
        steps += [("rcs" if t < n - 1 else "r", block(t)) for t in range(1, n)]
    return [(kind, buf, off) for kind, off in steps]


def _tree_steps(chain, r: int, j: int) -> list:
    """Rank ``r``'s threadblocks ``[(send, recv, [(kind, buf, off)])]`` for chunk ``j`` on one tree
    channel's chain: up (reduce towards the head), then down (the sum back to the tail)."""
    parent, child = chain.up(r), chain.down(r)
    if parent is None:  # the head: the sum is made here and sent back down
        return [(child, child, [("rrcs", "i", j)])]
    if child is None:  # the tail: its data up, the sum back
        return [(parent, -1, [("s", "i", j)]), (-1, parent, [("r", "i", j)])]
    return [(parent, child, [("rrs", "i", j)]), (child, parent, [("rcs", "i", j)])]


def nccl_schedule(G, collective: str, gpus=None, *, profile=None, protocol: str = "Simple",
                  algorithm: str = "ring") -> Schedule:
    """NCCL's rings (or trees) on a GPU set as an MSCCL schedule (module docstring).

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    collective : {"all_gather", "reduce_scatter", "all_reduce"}
        ``algorithm="tree"``: all_reduce.
    gpus : str or iterable of int, optional
        GPU ids (default all); rank ``i`` is the ``i``-th lowest id.
    profile : str or NcclProfile, optional
        NCCL release of the channel search.
    protocol : {"Simple", "LL128", "LL"}
    algorithm : {"ring", "tree"}
        NCCL's ring graph or its tree graph.

    Raises
    ------
    ExportError
        For another collective or algorithm, fewer than 2 GPUs, or a release whose search builds
        no tree graph.
    """
    from ..engine.nccl.algorithms.ring import RING
    from ..predict.collectives import estimate

    if algorithm not in NCCL_ALGORITHMS:
        raise ExportError(f"expected an algorithm of {', '.join(NCCL_ALGORITHMS)}, received {algorithm!r}")
    allowed = EXPORT_COLLECTIVES if algorithm == "ring" else TREE_COLLECTIVES
    if collective not in allowed:
        raise ExportError(f"NCCL's {algorithm}s are written for {', '.join(allowed)}, received {collective!r}")
    fabric = prepare(G, nccl=profile)
    ids = _selection(fabric, gpus)
    nodes = topo.gpus(fabric.G)
    rank_of = {nodes[g]: r for r, g in enumerate(ids)}
    n = len(ids)
    if algorithm == "tree":
        return _nccl_trees(fabric, ids, rank_of, protocol)
    e = estimate(fabric, collective, 2**30, list(ids), algorithm=RING, protocol=protocol)
    rings = [[rank_of[node] for node in channel] for channel in e.ring.channels]
    c = len(rings)
    per_gpu = []
    for r in range(n):
        tbs = []
        for chan, order in enumerate(rings):
            p = order.index(r)
            steps = [Step(s, kind, buf, off, buf, off, 1)
                     for s, (kind, buf, off) in enumerate(_ring_steps(collective, order, r, c, chan))]
            tbs.append((order[(p + 1) % n], order[(p - 1) % n], chan, steps))
        per_gpu.append(tbs)
    return _schedule(f"nccl_ring_{collective}_{n}x{c}", collective, protocol, c, n, c, per_gpu)


def _nccl_trees(fabric, ids, rank_of, protocol) -> Schedule:
    """NCCL's tree all_reduce on its tree graph's chains: one chunk per channel per loop."""
    from ..engine.nccl.channels import channel_graphs
    from ..engine.nccl.trees import intra_chain

    nodes = topo.gpus(fabric.G)
    graphs = channel_graphs(fabric.nccl, [nodes[g] for g in ids])
    if graphs.ring.nnodes > 1:
        # NCCL builds trees across nodes too; this model's search builds the tree graph of one node.
        raise ExportError(f"NCCL's trees are written for the GPUs of one host (NCCL node), received "
                          f"{len(ids)} GPUs on {graphs.ring.nnodes} nodes: expected algorithm 'ring'")
    if graphs.tree is None:
        raise ExportError(f"NCCL {fabric.profile.version}'s search builds no tree graph: expected "
                          f"algorithm 'ring'")
    pattern = graphs.communicator.tree.pattern
    chains = [intra_chain([rank_of[node] for node in channel], pattern) for channel in graphs.tree.channels]
    n, c = len(ids), len(chains)
    per_gpu: list = [[] for _ in range(n)]
    for chan, chain in enumerate(chains):
        for r in range(n):
            for send, recv, steps in _tree_steps(chain, r, chan):
                per_gpu[r].append((send, recv, chan, [Step(0, kind, buf, off, buf, off, 1)
                                                      for kind, buf, off in steps]))
    # The tree's chunks are the whole buffer's, not one block per rank: c chunks per loop.
    return _schedule(f"nccl_tree_all_reduce_{n}x{c}", "all_reduce", protocol, c, n, 1, per_gpu, chunks=c)


#: The packings each collective's schedule runs, ``(how, packed collective)`` in the order a chunk
#: runs them: all_gather's down its trees, reduce_scatter's up its (reversed) trees, all_reduce's both.
_PHASES = MappingProxyType({"all_gather": (("down", "all_gather"),), "reduce_scatter": (("up", "reduce_scatter"),),
                            "all_reduce": (("up", "reduce_scatter"), ("down", "all_gather"))})


def packing_hops(collective: str, ngpus: int, chunks: int | None = None) -> int:
    """The tree hops the packing's schedule of ``collective`` on ``ngpus`` GPUs writes with
    ``chunks`` per root (None: the most tried, :data:`~models.schedules.packed.CHUNK_COUNTS`'
    first), counted before the trees are packed: each root's chunks cross each of its trees'
    ``ngpus - 1`` arcs once a packing (all_reduce: two), at least (an arc relayed through another
    GPU of the set is two hops). What the build's work is sized by (:data:`PACKING_MAX_HOPS`).

    >>> packing_hops("all_reduce", 16), packing_hops("all_gather", 8, 4)
    (61440, 224)
    """
    from .packed import CHUNK_COUNTS

    _packing_collective(collective)
    k = max(CHUNK_COUNTS) if chunks is None else chunks
    return len(_PHASES[collective]) * ngpus * (ngpus - 1) * k


def _sized_build(collective: str, ids, chunks, max_hops: int) -> None:
    """Refuse (:class:`topo.LimitError`, keyword ``max_hops``) a build beyond ``max_hops``."""
    from topo.errors import LimitError

    hops = packing_hops(collective, len(ids), chunks)
    if hops > max_hops:
        raise LimitError(f"building the packing's {collective} on {len(ids)} GPUs with "
                         f"{max(CHUNK_COUNTS) if chunks is None else chunks} chunks a GPU: {hops} tree hops",
                         keyword="max_hops", size=hops, limit=max_hops)


def _packings(fabric, collective: str, ids, protocol: str, progress=None) -> tuple:
    """``(phases, pricing)``: the packings :func:`packing_schedule` writes, each ``("up" |
    "down", TreePacking)`` in the order a chunk runs them (NVLink only, on the capacities the
    evaluator times with), and the pricing of ``protocol`` on GPU ids ``ids``."""
    from .evaluate import schedule_pricing

    pricing, _ = schedule_pricing(fabric, protocol, collective, ids)
    return _phases(fabric, collective, ids, pricing.achieved_ratio, progress), pricing


def _phases(fabric, collective: str, ids, ratio: float, progress=None) -> tuple:
    """The packings of :func:`_packings` on the capacities of the achieved ``ratio``;
    ``progress(done, total)`` after each, of the build's parts (each packing, then the steps)."""
    from ..studies.packing import pack_trees
    from .evaluate import achieved_graph

    H = achieved_graph(fabric, ratio)
    phases = _PHASES[collective]
    packings = []
    for how, packed in phases:
        packings.append((how, pack_trees(H, packed, list(ids), edge_kinds=["nvlink"])))
        if progress is not None:
            progress(len(packings), len(phases) + 1)
    packings = tuple(packings)
    if any(p.rate <= 0 for _, p in packings):
        raise ExportError(f"the packing's trees use NVLink only, and GPUs {list(ids)} are not all joined by NVLink: "
                          f"expected a GPU set the NVLinks connect")
    return packings


def _packing_collective(collective: str) -> None:
    if collective not in PACKING_COLLECTIVES:
        raise ExportError(f"the packing is written for {', '.join(PACKING_COLLECTIVES)}, received {collective!r}")


def schedule_packing(G, collective: str, gpus=None, *, profile=None, protocol: str = "Simple",
                     max_hops: int = PACKING_MAX_HOPS):
    """The tree packing :func:`packing_schedule` writes as a schedule
    (:class:`models.studies.packing.TreePacking`, on the capacities the evaluator times with),
    for drawing it or reading its trees' rates: all_reduce's is its all_gather half (its
    reduce_scatter half is the same trees reversed on a fabric whose links are the same both ways).
    Arguments and errors are :func:`packing_schedule`'s (the build sized at its default chunks)."""
    from topo.units import parse_count

    _packing_collective(collective)
    max_hops = parse_count(max_hops, name="max_hops")
    fabric = prepare(G, nccl=profile)
    ids = _selection(fabric, gpus)
    _sized_build(collective, ids, None, max_hops)
    return _packings(fabric, collective, ids, protocol)[0][-1][1]


def packing_schedule(G, collective: str, gpus=None, *, chunks: int | None = None, size=None, profile=None,
                     protocol: str | None = None, max_hops: int = PACKING_MAX_HOPS,
                     max_events: int = SCHEDULE_MAX_EVENTS, progress=None) -> Schedule:
    """The tree packing that meets the bound, as an MSCCL all_gather, reduce_scatter or
    all_reduce (module docstring; the steps: :mod:`models.schedules.packed`).

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    collective : {"all_gather", "reduce_scatter", "all_reduce"}
    gpus : str or iterable of int, optional
    chunks : int, optional
        Chunks of each root's block, shared among its trees by their rates (default: the most
        of :data:`~models.schedules.packed.CHUNK_COUNTS` whose rounding costs at most
        :data:`~models.schedules.packed.ROUNDING_LOSS` of the rate; with ``size``, the count
        :func:`sized_chunks` chooses for it).
    size : int or str, optional
        The message (nccl-tests' size) the schedule is written for: without ``chunks``, its chunks
        per root are :func:`sized_chunks`'s choice at that size.
    profile : str or NcclProfile, optional
    protocol : {"Simple", "LL128", "LL"}, optional
        Default: with ``size`` (and no ``chunks``), the protocol :func:`sized_chunks` chooses for
        it; otherwise Simple.
    max_hops : int
        The most tree hops the build may write (:func:`packing_hops`, counted before the trees
        are packed; default :data:`PACKING_MAX_HOPS`).
    max_events : int
        With ``size``: :func:`sized_chunks`' limit on its timings.
    progress : callable, optional
        ``progress(done, total)`` after each part of the build (each packing, then the steps);
        with ``size``, :func:`sized_chunks`' (its timings' tasks).

    Raises
    ------
    ExportError
        For another collective, fewer than 2 GPUs, GPUs the NVLinks do not connect, fewer than 1
        chunk, a ``progress`` that is not callable, or a threadblock of more steps than the
        runtime takes (fewer ``chunks`` help).
    topo.SizeError
        For a ``size`` that is not one.
    topo.LimitError
        For a build of more than ``max_hops`` tree hops (keyword ``max_hops``), before the trees
        are packed; for a ``size`` whose choice would take more than ``max_events`` simulator
        events (:func:`sized_chunks`).
    topo.CountError
        For a ``max_hops`` or ``max_events`` that is not a whole number >= 1.
    """
    from topo.units import parse_count

    _packing_collective(collective)
    if chunks is not None and (isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1):
        raise ExportError(f"expected chunks a whole number >= 1 or None, received {chunks!r}")
    max_hops = parse_count(max_hops, name="max_hops")
    _callable(progress)
    fabric = prepare(G, nccl=profile)
    ids = _selection(fabric, gpus)
    if chunks is None and size is not None:
        return sized_chunks(fabric, collective, ids, size, protocol=protocol, max_hops=max_hops,
                            max_events=max_events, progress=progress)[0]
    _sized_build(collective, ids, chunks, max_hops)
    phases, pricing = _packings(fabric, collective, ids, "Simple" if protocol is None else protocol, progress)
    schedule = _packed_schedule(fabric, collective, ids, phases, pricing, chunks)
    if progress is not None:
        progress(len(phases) + 1, len(phases) + 1)
    return schedule


def _callable(progress) -> None:
    if progress is not None and not callable(progress):
        raise ExportError(f"expected progress a callable progress(done, total) or None, received "
                          f"{type(progress).__name__}")


def _packed_schedule(fabric, collective: str, ids, phases, pricing, chunks) -> Schedule:
    """The packing's schedule of ``chunks`` per root (None: :func:`chunk_choices`' first that fits)."""
    from .packed import StepLimitError, chunk_choices, packed_steps

    ratio = pricing.achieved_ratio
    capacity = fabric.nccl.capacity
    error = None
    for k, counts, _ in chunk_choices([p for _, p in phases], chunks):
        try:
            per_gpu, scratch, nchannels = packed_steps(
                [(how, p, c) for (how, p), c in zip(phases, counts)], ids, topo.gpus(fabric.G), k,
                lambda u, v: capacity(u, v) * ratio, pricing.channel_rate * ratio)
            break
        except StepLimitError as limit:  # fewer chunks, if the default chose them
            error = limit
        except ScheduleError as other:
            raise ExportError(f"{other}") from None
    else:
        raise ExportError(f"{error}") from None
    return _schedule(f"packing_{collective}_{len(ids)}x{k}", collective, pricing.protocol, nchannels, len(ids), k, per_gpu,
                     scratch)


def _rounded(collective: str, nbytes: int, n: int) -> int:
    """nccl-tests' size of ``nbytes`` on ``n`` ranks, as the evaluator rounds it."""
    from ..engine.nccltests import count_from_nbytes

    return int(count_from_nbytes(collective, nbytes, n)[1])


def _sized_candidates(fabric, collective: str, ids, nbytes: int, pricing, packings, first: bool) -> list:
    """``[(k, schedule, default)]``: the schedules of one protocol :func:`sized_chunks` may time,
    the fewest chunks first and the default count last (the first protocol's whatever its loops,
    another's within :data:`SIZED_MAX_LOOPS`)."""
    from .evaluate import schedule_loops

    n = len(ids)
    default = _packed_schedule(fabric, collective, ids, packings, pricing, None)
    most = default.nchunksperloop // n
    fewest = -(-nbytes // (n * pricing.chunk_limit * SIZED_MAX_LOOPS))  # no more loops than simulated
    candidates = []
    for k in (k for k in SIZED_CHUNK_COUNTS if fewest <= k < most) if most > 1 else ():
        try:
            candidates.append((k, _packed_schedule(fabric, collective, ids, packings, pricing, k), False))
        except ExportError:  # more steps than the runtime takes: no more chunks
            break
    if first or schedule_loops(default, nbytes, pricing) <= SIZED_MAX_LOOPS:
        candidates.append((most, default, True))
    return candidates


def _fastest_possible(fabric, collective: str, ids, nbytes: int, pricing, bounds: dict) -> float:
    """The least time any schedule of NVLink transfers between ``ids`` can take at ``nbytes`` as
    the evaluator prices ``pricing``: Ring's base latency for the protocol, plus the size at the
    NVLink-only bound on the capacities the evaluator times with, each link's payload its capacity
    over the protocol's wire bytes per payload byte (``bounds``: each ratio's bound busbw, kept)."""
    from ..engine.nccltests import busbw_to_algbw
    from ..studies.bounds import bound
    from .evaluate import achieved_graph

    ratio = pricing.achieved_ratio
    if ratio not in bounds:
        bounds[ratio] = float(bound(achieved_graph(fabric, ratio), collective, max(nbytes, 1), list(ids),
                                    edge_kinds=["nvlink"], nccl=False).bound_busbw)
    algbw = float(busbw_to_algbw(collective, bounds[ratio] / pricing.wire, len(ids)))
    return pricing.base_latency + nbytes / algbw


def sized_chunks(G, collective: str, gpus, size, *, profile=None, protocol: str | None = None,
                 max_events: int = SCHEDULE_MAX_EVENTS, max_hops: int = PACKING_MAX_HOPS, progress=None) -> tuple:
    """The packing's schedule for one message size, and how its protocol and chunks per root were
    chosen.

    Each hop of the first loop waits Ring's latency per step once its data is there (the
    evaluator's pricing; a connection's successive sends pipeline it), and a loop's pipeline fills
    and drains one chunk a hop; later loops overlap the previous ones' drain. So a small message
    pays mostly latencies, and a protocol's latency and rate decide more than its chunks (64 KiB on
    DGX-1V GPUs 0,1,4,5 with Simple: 2.45 GB/s at best, 4 chunks a GPU; 2.16 with 128), and a large
    one runs best as few loops of many chunks (128 a GPU from 4 MiB up there). As a synthesizer writes a schedule per
    size band, for each protocol of :data:`SIZED_PROTOCOLS` (or ``protocol`` alone) the counts of
    :data:`SIZED_CHUNK_COUNTS` up to the default (:func:`packing_schedule`'s) are written and timed
    at ``size`` (:func:`~models.schedules.evaluate.evaluate_schedule`, every loop simulated: counts
    of more than :data:`SIZED_MAX_LOOPS` loops are not tried), the fewest first, until the time has
    risen :data:`SIZED_PATIENCE` counts in a row, and the default count (the first protocol's timed
    whatever its loops, extrapolated beyond 64 from whole loops' period; another's within 64
    loops). A protocol is not timed when even the bound cannot beat the fastest found: Ring's
    base latency for it plus the size at the NVLink-only bound on the capacities the evaluator
    times with, each link carrying its capacity over the protocol's wire bytes per payload byte
    (LL's 2 halve it), which no schedule of the packing's NVLink transfers can beat. The fastest
    is chosen (on a tie, the earlier protocol, then the fewer chunks). At 64 KiB on DGX-1V GPUs
    0,1,4,5, LL with 32 chunks a GPU (4.78 GB/s; Simple's best 2.45, NCCL's LL 4.55); at 1 GiB
    Simple with 128 (60.41 GB/s: LL128's bound, 57.36, and LL's, 30.59, cannot beat it).

    The work is sized before it is done: each protocol's schedules that may be timed are written
    and their simulator events counted (:func:`~models.schedules.evaluate.schedule_events`, the
    simulator's work, every loop simulated), and the timings take at most ``max_events`` in all:
    the first protocol's beyond it are refused before any is timed (:class:`topo.LimitError`), a
    later protocol's beyond what is left are not timed (its :class:`SizedTiming` says so), as
    the planner's simulations beyond their budget. Timing a count of many chunks at a large size
    takes seconds to minutes (all_reduce on the eight GPUs of a DGX-1V at 1 GiB: 687,456 events
    for Simple, two minutes of one core); a DGX-2's 16 GPUs at 1 GiB are beyond the default limit (all_reduce: 2,026,080
    events, which took about five minutes).

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    collective : {"all_gather", "reduce_scatter", "all_reduce"}
    gpus : str or iterable of int
    size : int or str
        nccl-tests' size.
    profile : str or NcclProfile, optional
    protocol : {"Simple", "LL128", "LL"}, optional
        The schedule's protocol; default: the one of :data:`SIZED_PROTOCOLS` that times fastest
        (a protocol NCCL does not enable for Ring on these GPUs is not tried).
    max_events : int
        The most simulator events the timings may take (default: the evaluator's one limit,
        :data:`~models.schedules.evaluate.SCHEDULE_MAX_EVENTS`).
    max_hops : int
        The most tree hops the packing's build may write at its default count
        (:func:`packing_schedule`'s limit, checked before the trees are packed).
    progress : callable, optional
        ``progress(done, total)`` in simulated tasks, the total those of every schedule that may be
        timed (the count jumps past the ones not timed).

    Returns
    -------
    (Schedule, tuple of SizedTiming)
        The chosen schedule, and each schedule timed at ``size`` (and each protocol not timed,
        with the reason), in the order considered.

    Raises
    ------
    ExportError, topo.SizeError
        As :func:`packing_schedule`.
    topo.LimitError
        For a first protocol whose schedules need more than ``max_events`` events (keyword
        ``max_events``), before any is simulated; for a build beyond ``max_hops`` (keyword
        ``max_hops``), before the trees are packed.
    ScheduleEvaluationError
        For a ``protocol`` NCCL does not enable for Ring on these GPUs.

    Examples
    --------
    >>> import topo
    >>> s, tried = sized_chunks(topo.build("dgx1v"), "all_gather", "0,1,4,5", "64K", protocol="Simple")
    >>> s.nchunksperloop // 4, [t.chunks for t in tried]
    (4, [1, 2, 4, 8, 16, 32, 64, 128])
    """
    from topo.errors import LimitError
    from topo.units import parse_count, parse_nbytes

    from ..predict.simulate import EVENTS_PER_TASK
    from .evaluate import ScheduleEvaluationError, evaluate_schedule, schedule_events, schedule_pricing

    _packing_collective(collective)
    max_events = parse_count(max_events, name="max_events")
    max_hops = parse_count(max_hops, name="max_hops")
    _callable(progress)
    fabric = prepare(G, nccl=profile)
    ids = _selection(fabric, gpus)
    nbytes = int(parse_nbytes(size))
    _sized_build(collective, ids, None, max_hops)
    rounded = _rounded(collective, nbytes, len(ids))
    tried: list = []
    errors: list = []  # why NCCL enables a protocol nowhere here, for the error if none is
    best = None  # (time, order, k, schedule)
    phases: dict = {}  # the packings of an achieved ratio (the protocols share one)
    bounds: dict = {}
    spent = 0  # events of the schedules timed
    sized = 0  # tasks sized so far (the progress bar's total)
    for order, name in enumerate((protocol,) if protocol is not None else SIZED_PROTOCOLS):
        try:
            pricing, _ = schedule_pricing(fabric, name, collective, ids)
        except ScheduleEvaluationError as error:
            if protocol is not None:
                raise
            tried.append(SizedTiming(name, None, None, SizedSkip.NOT_ENABLED))
            errors.append(f"{error}")
            continue
        if best is not None:
            lower = _fastest_possible(fabric, collective, ids, rounded, pricing, bounds)
            if lower >= best[0]:
                tried.append(SizedTiming(name, None, None, SizedSkip.BOUND, lower=lower, fastest=best[0]))
                continue
        ratio = pricing.achieved_ratio
        packings = phases[ratio] if ratio in phases else phases.setdefault(ratio, _phases(fabric, collective, ids, ratio))
        candidates = _sized_candidates(fabric, collective, ids, rounded, pricing, packings, best is None)
        events = [schedule_events(schedule, rounded, pricing, SIZED_MAX_LOOPS) for _, schedule, _ in candidates]
        if spent + sum(events) > max_events:
            if best is None:  # nothing timed yet: refused before any work
                raise LimitError(f"choosing the packing's chunks for {nbytes} B of {collective} on {len(ids)} GPUs "
                                 f"({name}): {len(candidates)} schedules to time, {sum(events)} simulator events",
                                 keyword="max_events", size=sum(events), limit=max_events)
            tried.append(SizedTiming(name, None, None, SizedSkip.BEYOND_BUDGET, events=sum(events),
                                     left=max_events - spent))
            continue
        before, sized = sized, sized + sum(events) // EVENTS_PER_TASK
        rises, last = 0, None
        for (k, schedule, default), cost in zip(candidates, events):
            if rises >= SIZED_PATIENCE and not default:  # past the fastest: not timed
                before += cost // EVENTS_PER_TASK
                continue
            spent += cost
            step = None if progress is None else (  # this timing's tasks among all sized
                lambda done, _, at=before: progress(at + done, sized))
            time = evaluate_schedule(fabric, schedule, nbytes, ids, nccl=False, bound=False,
                                     max_loops=SIZED_MAX_LOOPS, max_events=max_events, progress=step).points[0].time
            before += cost // EVENTS_PER_TASK
            tried.append(SizedTiming(name, k, time))
            if not default:
                rises = rises + 1 if last is not None and time > last else 0
                last = time
            if best is None or (time, order, k) < best[:3]:
                best = (time, order, k, schedule)
    if progress is not None:
        progress(sized, sized)
    if best is None:
        raise ScheduleEvaluationError(f"NCCL {fabric.profile.version} enables none of {', '.join(SIZED_PROTOCOLS)} "
                                      f"for Ring on GPUs {list(ids)}: " + "; ".join(errors))
    return best[3], tuple(tried)


def export_schedule(G, collective: str, gpus=None, *, source: str = "packing", profile=None,
                    protocol: str | None = None, chunks: int | None = None, algorithm: str = "ring",
                    size=None, max_hops: int = PACKING_MAX_HOPS, max_events: int = SCHEDULE_MAX_EVENTS,
                    progress=None) -> Schedule:
    """:func:`packing_schedule` (for ``size``, if given) or :func:`nccl_schedule` (on NCCL's
    ``algorithm``) by ``source`` (``"packing"``, ``"nccl"``). ``protocol`` None (the default): the
    one :func:`sized_chunks` chooses for ``size`` (the packing), otherwise Simple. ``max_hops``,
    ``max_events`` and ``progress`` are the packing's (:func:`packing_schedule`)."""
    if source == "packing":
        if algorithm != "ring":
            raise ExportError(f"the packing is its own schedule: expected no algorithm with source 'packing' "
                              f"(NCCL's {algorithm} is source 'nccl'), received algorithm {algorithm!r}")
        return packing_schedule(G, collective, gpus, chunks=chunks, size=size, profile=profile, protocol=protocol,
                                max_hops=max_hops, max_events=max_events, progress=progress)
    if source == "nccl":
        return nccl_schedule(G, collective, gpus, profile=profile, protocol=protocol or "Simple", algorithm=algorithm)
    raise ExportError(f"expected a source of {', '.join(SOURCES)}, received {source!r}")
