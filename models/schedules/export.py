"""Schedules the model knows, written as MSCCL schedules: NCCL's own rings, and the tree packing that
reaches the bound.

- :func:`nccl_schedule`: the rings of NCCL's channel search on a GPU set (one ring per channel, in
  the search's order, :attr:`models.engine.nccl.search.ChannelSearch.channels`), as the ring
  all_gather, reduce_scatter or all_reduce NCCL runs on them: each rank's block split into one
  chunk per channel, each chunk moving around its channel's ring (all_reduce: reduce-scatter then
  all-gather on the same ring, NCCL's ring all_reduce).
- :func:`packing_schedule`: the all_gather of :func:`models.studies.packing.pack_trees` (the
  spanning trees that meet the bound) on the capacities the evaluator times with
  (:func:`models.schedules.evaluate.achieved_graph`): each root's block is split into ``chunks``
  chunks shared among its trees by their rates; each chunk goes down its tree, a GPU receiving it
  from its parent and forwarding it to its children (a send that waits for the receive); an arc
  whose trees carry more than one channel's rate is spread over enough channels.

Both are written in place (the executor dialect, ``outofplace="0"``), check
(:func:`~models.schedules.check.check_schedule`) and evaluate
(:func:`~models.schedules.evaluate.evaluate_schedule`). NCCL's trees (its tree all_reduce) are not
written [U: not yet].

Examples
--------
>>> import topo
>>> from models.schedules import check_schedule
>>> s = nccl_schedule(topo.build("dgx1v"), "all_gather")
>>> s.nchannels, check_schedule(s).steps
(6, 384)
"""

from __future__ import annotations

from collections import defaultdict
from types import MappingProxyType

import topo

from ..engine.fabric import prepare
from .msccl import EXECUTOR, Gpu, Schedule, ScheduleError, Step, Threadblock

__all__ = ["ExportError", "EXPORT_COLLECTIVES", "PACKING_COLLECTIVES", "nccl_schedule", "packing_schedule",
           "schedule_packing", "export_schedule", "SOURCES"]

#: What :func:`nccl_schedule` writes.
EXPORT_COLLECTIVES = ("all_gather", "reduce_scatter", "all_reduce")
#: What :func:`packing_schedule` writes.
PACKING_COLLECTIVES = ("all_gather",)
#: The sources of :func:`export_schedule`.
SOURCES = ("packing", "nccl")
#: MSCCL's ``coll`` of each collective (the executor dialect's, [MX]).
_COLL = MappingProxyType({"all_gather": "allgather", "reduce_scatter": "reducescatter", "all_reduce": "allreduce"})


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


def _schedule(name, collective, protocol, nchannels, n, k, per_gpu, scratch=None) -> Schedule:
    """A Schedule of in-place threadblocks ``per_gpu[rank] = [(send, recv, chan, [step...])]``."""
    chunks = n * k
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


def nccl_schedule(G, collective: str, gpus=None, *, profile=None, protocol: str = "Simple") -> Schedule:
    """NCCL's rings on a GPU set as an MSCCL schedule (module docstring).

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    collective : {"all_gather", "reduce_scatter", "all_reduce"}
    gpus : str or iterable of int, optional
        GPU ids (default all); rank ``i`` is the ``i``-th lowest id.
    profile : str or NcclProfile, optional
        NCCL release of the channel search.
    protocol : {"Simple", "LL128", "LL"}

    Raises
    ------
    ExportError
        For another collective or fewer than 2 GPUs.
    """
    from ..engine.nccl.algorithms.ring import RING
    from ..predict.collectives import estimate

    if collective not in EXPORT_COLLECTIVES:
        raise ExportError(f"NCCL's rings are written for {', '.join(EXPORT_COLLECTIVES)}, received {collective!r}")
    fabric = prepare(G, nccl=profile)
    ids = _selection(fabric, gpus)
    nodes = topo.gpus(fabric.G)
    rank_of = {nodes[g]: r for r, g in enumerate(ids)}
    e = estimate(fabric, collective, 2**30, list(ids), algorithm=RING, protocol=protocol)
    rings = [[rank_of[node] for node in channel] for channel in e.ring.channels]
    n, c = len(ids), len(rings)
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


#: Chunk counts per root :func:`packing_schedule` tries, fewest first, until the chunks' rounding of
#: the trees' rates costs at most :data:`ROUNDING_LOSS`.
CHUNK_COUNTS = (8, 12, 16, 24, 32, 48, 64)
#: The largest share of the packing's rate the rounding of its trees to whole chunks may cost.
ROUNDING_LOSS = 0.02


def _chunk_counts(packing, k: int) -> tuple:
    """Each tree's whole chunks, ``k`` per root, and the rate their rounding keeps (1: none lost).

    Trees start at the whole part of their share of ``k`` by rate; each chunk left goes to the tree
    of its root whose links it loads least (the busiest link's load over its capacity, greedily).
    """
    capacity = {edge: cap for edge, _, cap in packing.loads}
    uses = []
    for tree in packing.trees:
        count: dict = defaultdict(int)
        for _, _, path in tree.arcs:
            for edge in zip(path, path[1:]):
                count[edge] += 1
        uses.append(count)
    x = packing.rate
    counts = [int(k * tree.rate / x + 1e-9) for tree in packing.trees]
    load: dict = defaultdict(float)
    for t, c in enumerate(counts):
        for edge, m in uses[t].items():
            load[edge] += c * m / capacity[edge]
    by_root: dict = defaultdict(list)
    for t, tree in enumerate(packing.trees):
        by_root[tree.root].append(t)
    for root, trees in by_root.items():
        for _ in range(k - sum(counts[t] for t in trees)):
            best = min(trees, key=lambda t: (max(load[e] + m / capacity[e] for e, m in uses[t].items()), t))
            counts[best] += 1
            for edge, m in uses[best].items():
                load[edge] += m / capacity[edge]
    # The busiest link with each tree's exact share of k, over the busiest with whole chunks.
    ideal = max((k / x * value / cap for _, value, cap in packing.loads), default=0.0)
    worst = max(load.values(), default=0.0)
    return counts, ideal / worst if worst > 0 else 1.0


def _lanes(packing, rank, gpu_of, per_channel) -> tuple:
    """Channels of each hop of each tree between GPUs of the set: ``({(a, b, (tree, arc, hop)):
    (first, count)}, {(a, b): channels})`` (a tree whose paths cross one GPU pair twice has
    channels for each crossing, so that a relay waiting for its data holds up no earlier hop).

    Threadblocks sharing a link split it evenly (the simulator's max-min sharing, as CTAs sharing a
    link do [U]), so each tree gets channels in proportion to its rate: one per ``unit`` of rate,
    ``unit`` one channel's rate over the largest divisor that keeps the runtime's limits (channels
    per GPU pair, threadblocks per GPU), and no less than the smallest tree's rate (a tree of one
    channel then takes no more than its share). A tree then moves at its rate on every hop, and a
    threadblock waiting for one tree's data holds up no other tree.
    """
    hops = []
    for t, tree in enumerate(packing.trees):
        for j, (_, _, path) in enumerate(tree.arcs):
            stops = [rank[gpu_of[v]] for v in path if v in gpu_of]
            hops += [(a, b, (t, j, i), tree.rate) for i, (a, b) in enumerate(zip(stops, stops[1:]))]
    limits = EXECUTOR.limits
    smallest = min(rate for *_, rate in hops)
    for divisor in (8, 6, 4, 3, 2, 1):
        unit = max(per_channel / divisor, min(smallest, per_channel))
        lanes: dict = {}
        width: dict = defaultdict(int)
        for a, b, t, rate in hops:
            if (a, b, t) not in lanes:
                count = max(1, round(rate / unit))
                lanes[a, b, t] = (width[a, b], count)
                width[a, b] += count
        per_gpu: dict = defaultdict(int)
        for (a, b), count in width.items():
            per_gpu[a] += count
            per_gpu[b] += count
        if max(width.values()) <= limits.max_channels and max(per_gpu.values()) <= limits.max_threadblocks:
            return lanes, width
    raise ExportError(f"the packing needs more than {limits.max_channels} channels on one GPU pair or "
                      f"{limits.max_threadblocks} threadblocks on one GPU")


def _packing(fabric, collective: str, ids, protocol: str) -> tuple:
    """``(packing, pricing)``: the trees :func:`packing_schedule` writes (NVLink only, on the
    capacities the evaluator times with) and the pricing of ``protocol`` on GPU ids ``ids``."""
    from ..studies.packing import pack_trees
    from .evaluate import achieved_graph, schedule_pricing

    pricing, _ = schedule_pricing(fabric, protocol, collective, ids)
    return pack_trees(achieved_graph(fabric, pricing.achieved_ratio), collective, list(ids),
                      edge_kinds=["nvlink"]), pricing


def schedule_packing(G, collective: str, gpus=None, *, profile=None, protocol: str = "Simple"):
    """The tree packing :func:`packing_schedule` writes as a schedule
    (:class:`models.studies.packing.TreePacking`, on the capacities the evaluator times with),
    for drawing it or reading its trees' rates. Arguments and errors are :func:`packing_schedule`'s."""
    if collective not in PACKING_COLLECTIVES:
        raise ExportError(f"the packing is written for {', '.join(PACKING_COLLECTIVES)}, received {collective!r}")
    fabric = prepare(G, nccl=profile)
    return _packing(fabric, collective, _selection(fabric, gpus), protocol)[0]


def packing_schedule(G, collective: str, gpus=None, *, chunks: int | None = None, profile=None,
                     protocol: str = "Simple") -> Schedule:
    """The tree packing that meets the bound, as an MSCCL all_gather (module docstring).

    Parameters
    ----------
    G : networkx.DiGraph or PreparedFabric
    collective : {"all_gather"}
    gpus : str or iterable of int, optional
    chunks : int, optional
        Chunks of each root's block, shared among its trees by their rates (default: the fewest
        of :data:`CHUNK_COUNTS` whose rounding costs at most :data:`ROUNDING_LOSS` of the rate).
    profile : str or NcclProfile, optional
    protocol : {"Simple", "LL128", "LL"}

    Raises
    ------
    ExportError
        For another collective, fewer than 2 GPUs, fewer than 1 chunk, or a threadblock of more
        steps than the runtime takes (fewer ``chunks`` help).
    """
    if collective not in PACKING_COLLECTIVES:
        raise ExportError(f"the packing is written for {', '.join(PACKING_COLLECTIVES)}, received {collective!r}")
    if chunks is not None and (isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1):
        raise ExportError(f"expected chunks a whole number >= 1 or None, received {chunks!r}")
    fabric = prepare(G, nccl=profile)
    ids = _selection(fabric, gpus)
    rank = {g: r for r, g in enumerate(ids)}
    packing, pricing = _packing(fabric, collective, ids, protocol)
    for k in (chunks,) if chunks is not None else CHUNK_COUNTS:
        counts, kept = _chunk_counts(packing, k)
        if kept >= 1 - ROUNDING_LOSS:
            break
    n = len(ids)
    per_channel = pricing.channel_rate * pricing.achieved_ratio
    nodes = topo.gpus(fabric.G)
    gpu_of = {nodes[g]: g for g in ids}
    lanes, width = _lanes(packing, rank, gpu_of, per_channel)
    # Each root's chunks among its trees, then every (tree, chunk) in an order that keeps the trees
    # of all roots moving together.
    work = []
    offset = [r * k for r in range(len(ids))]
    for t, (tree, count) in enumerate(zip(packing.trees, counts)):
        root = rank[tree.root]
        for m in range(count):
            work.append(((m + 0.5) / count, root, t, tree, offset[root] + m, t))
        offset[root] += count
    work.sort(key=lambda w: w[:3])
    per_gpu: list = [[] for _ in range(n)]
    tbs: dict = {}  # (rank, send, recv, chan) -> [tb id, steps]
    scratch = [0] * n  # scratch chunks each GPU relays through
    used: dict = defaultdict(int)  # (hop, tree) -> chunks sent (its channels round robin)

    def tb(r, send, recv, chan):
        key = (r, send, recv, chan)
        found = tbs.get(key)
        if found is None:
            found = tbs[key] = [len(per_gpu[r]), []]
            per_gpu[r].append((send, recv, chan, found[1]))
        return found

    def hop(a, b, t, held, into):  # t: (tree, arc, hop), the lane's key
        """Send tree ``t``'s chunk ``a`` holds (``held``: buffer, offset, (tb, step) it waits for)
        to ``b``, which receives it into ``into`` (buffer, offset); returns what ``b`` then holds."""
        first, count = lanes[a, b, t]
        chan = first + used[a, b, t] % count
        used[a, b, t] += 1
        buf, off, dep = held
        tb(a, b, -1, chan)[1].append(["s", buf, off, buf, off, dep])
        target = tb(b, -1, a, chan)
        target[1].append(["r", into[0], into[1], into[0], into[1], None])
        return into[0], into[1], (target[0], len(target[1]) - 1)

    # Every hop of every chunk, at the time it could leave in a steady pipeline (the chunk leaves
    # its root when its tree's share of the root's block is due, each hop later by one chunk at
    # one channel's rate): processed in that order, a threadblock's steps come as their data does.
    hop_time = packing.rate / (k * per_channel) if per_channel > 0 else 0.0
    hops = []
    for w, (due, root, _, tree, slot, t) in enumerate(work):
        depth = {root: 0}
        pending = [(j, a, b, path) for j, (a, b, path) in enumerate(tree.arcs)]
        while pending:  # parents before children
            later = []
            for j, a, b, path in pending:
                if rank[a] not in depth:
                    later.append((j, a, b, path))
                    continue
                stops = [rank[gpu_of[v]] for v in path if v in gpu_of]
                d = depth[rank[a]]
                source = ("gpu", stops[0])
                for i, (u, v) in enumerate(zip(stops, stops[1:])):
                    target = ("gpu", v) if i == len(stops) - 2 else ("relay", a, b, i)
                    hops.append((due + (d + i) * hop_time, d + i, w, u, v, source, target, slot, (t, j, i)))
                    source = target
                depth[rank[b]] = d + len(stops) - 1
            pending = later
    hops.sort(key=lambda h: h[:3])
    holds = {}
    for _, _, w, u, v, source, target, slot, t in hops:
        held = holds.get((w, source))
        if held is None:  # the root's own chunk
            held = ("o", slot, None)
        if target[0] == "gpu":
            holds[w, target] = hop(u, v, t, held, ("o", slot))
        else:  # a GPU on the path relays through its scratch buffer
            holds[w, target] = hop(u, v, t, held, ("s", scratch[v]))
            scratch[v] += 1
    waited = {(r, dep) for r in range(n) for _, _, _, steps in per_gpu[r] for *_, dep in steps if dep}
    built = []
    for r in range(n):
        tbs_r = []
        for t, (send, recv, chan, steps) in enumerate(per_gpu[r]):
            if len(steps) > EXECUTOR.limits.max_steps:
                raise ExportError(f"the packing of {k} chunks per root puts {len(steps)} steps on GPU rank {r}'s "
                                  f"threadblock {t}, more than the runtime's {EXECUTOR.limits.max_steps}: "
                                  f"expected fewer chunks")
            tbs_r.append((send, recv, chan, [
                Step(s, kind, sb, so, db, do, 1, *(dep if dep else (-1, -1)), hasdep=(r, (t, s)) in waited)
                for s, (kind, sb, so, db, do, dep) in enumerate(steps)]))
        built.append(tbs_r)
    nchannels = max(width.values())
    return _schedule(f"packing_{collective}_{n}x{k}", collective, protocol, nchannels, n, k, built, scratch)


def export_schedule(G, collective: str, gpus=None, *, source: str = "packing", profile=None,
                    protocol: str = "Simple", chunks: int | None = None) -> Schedule:
    """:func:`packing_schedule` or :func:`nccl_schedule` by ``source`` (``"packing"``, ``"nccl"``)."""
    if source == "packing":
        return packing_schedule(G, collective, gpus, chunks=chunks, profile=profile, protocol=protocol)
    if source == "nccl":
        return nccl_schedule(G, collective, gpus, profile=profile, protocol=protocol)
    raise ExportError(f"expected a source of {', '.join(SOURCES)}, received {source!r}")
