"""The tree packing that meets the bound, written as the steps of an MSCCL schedule.

:func:`packed_steps` turns one or two :class:`~models.studies.packing.TreePacking` (all_gather's
trees; reduce_scatter's, whose data flows from the leaves to the root; all_reduce: reduce_scatter's
then all_gather's on the same chunks) into each GPU's threadblocks and steps, in three parts:

- **Chunks.** Each root's block is ``k`` chunks, shared among its trees by their rates
  (:func:`chunk_counts`: the whole part of each share, then each chunk left to the tree whose
  busiest link it loads least). The rounding's cost is the busiest link's load with whole chunks
  over its load with the exact shares; the default ``k`` is the first (the most) of
  :data:`CHUNK_COUNTS` whose rounding keeps at least ``1 - ROUNDING_LOSS`` of the rate and whose
  threadblocks fit the runtime's steps.
- **Hops.** A chunk goes down its tree (all_gather: a GPU receives it from its parent, then
  forwards it to its children) or up it (reduce_scatter: a GPU receives each child's partial sum
  and reduces it into its own, ``rrc``, one child after the other, then sends the sum to its
  parent). A GPU on an arc's fabric path relays through its scratch buffer. all_reduce sends each
  chunk's sum from its root down an all_gather tree once its reduction is done.
- **Lanes.** Every ordered GPU pair gets as many channels (each one threadblock on either side, a
  FIFO connection) as carry its trees' load at one channel's rate, with
  :data:`LANE_SLACK` spare, and *all trees crossing the pair share them*: a tree's share of the
  link is then its share of the chunks crossing it (its rate), not its share of the channels, which
  the runtime's 32 channels per pair could not make proportional when ten trees share a link
  (the cause of the shortfall before: each tree's own channels moved at one channel's rate each).
  The steps are put on the lanes by a list schedule: each hop, once its data is there (a root's
  chunk at its due time in a steady pipeline, ``(m + 1/2) / count`` of the loop), takes the lane
  of its pair that frees first, each lane moving ``capacity / lanes`` of the pair. A threadblock's
  steps are in the order the schedule predicts their data arrives, so no step waits behind one
  whose data comes later.

The result is plain data (each GPU's threadblocks as ``(send, recv, chan, [Step...])``);
:func:`models.schedules.export.packing_schedule` makes the schedule of it.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from dataclasses import dataclass, field

from .msccl import EXECUTOR, ScheduleError, Step

__all__ = ["StepLimitError", "CHUNK_COUNTS", "ROUNDING_LOSS", "LANE_SLACK", "chunk_counts", "chunk_choices", "packed_steps"]

#: Chunk counts per root tried, most first, until the rounding of the trees' rates to whole
#: chunks costs at most :data:`ROUNDING_LOSS`: the more chunks a loop has, the fewer loops a
#: message takes, and each loop ends with its pipeline draining (the relays of its last chunks).
CHUNK_COUNTS = (128, 96, 64, 48, 32, 24, 16, 12, 8)
#: The largest share of the packing's rate the rounding of its trees to whole chunks may cost.
ROUNDING_LOSS = 0.01
#: Spare channels per GPU pair over those its load needs at one channel's rate (a share of that
#: number): a lane waiting for data leaves the others the link, and they fill it only if, each
#: capped at one channel's rate, enough of them have data. A design choice, not a fit: of 0.5, 1, 2
#: and 3, 2 (three times the channels the load needs) is the least that kept the worst DGX-1V and
#: DGX-1 sets of examples/packing_sweep_benchmark.py above 95 % of the bound.
LANE_SLACK = 2.0


def chunk_counts(packing, k: int) -> tuple:
    """Each tree's whole chunks, ``k`` per root, and the share of the rate their rounding keeps
    (1: none lost): the busiest link with each tree's exact share of ``k`` over the busiest with
    whole chunks."""
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
    for trees in by_root.values():
        for _ in range(k - sum(counts[t] for t in trees)):
            best = min(trees, key=lambda t: (max(load[e] + m / capacity[e] for e, m in uses[t].items()), t))
            counts[best] += 1
            for edge, m in uses[best].items():
                load[edge] += m / capacity[edge]
    ideal = max((k / x * value / cap for _, value, cap in packing.loads), default=0.0)
    worst = max(load.values(), default=0.0)
    return counts, ideal / worst if worst > 0 else 1.0


def chunk_choices(packings, chunks: int | None) -> list:
    """``[(k, [counts per packing], kept)]`` in the order to try: ``chunks`` alone if given, else
    those of :data:`CHUNK_COUNTS` whose rounding keeps ``1 - ROUNDING_LOSS`` of every packing's
    rate, in its order, then the others, the least lost first."""
    found = []
    for k in (chunks,) if chunks is not None else CHUNK_COUNTS:
        each = [chunk_counts(p, k) for p in packings]
        found.append((k, [counts for counts, _ in each], min(kept for _, kept in each)))
    good = [f for f in found if f[2] >= 1 - ROUNDING_LOSS]
    return good + sorted((f for f in found if f[2] < 1 - ROUNDING_LOSS), key=lambda f: -f[2])


@dataclass(slots=True)
class _Hop:
    """One transfer of one chunk between two GPUs (ranks) of the set."""

    u: int
    v: int
    src: tuple  # (buffer, offset) sent from u
    dst: tuple  # (buffer, offset) received into at v
    kind: str  # the receive: "r" or "rrc"
    inputs: list  # hops whose arrival at u this one sends on (all of them: a reduction's children)
    release: float  # earliest start
    key: tuple  # tie-break: the order the chunks are due
    end: float = 0.0
    lane: int = -1
    consumers: list = field(default_factory=list)


class StepLimitError(ScheduleError):
    """A threadblock of more steps than the runtime takes."""


class _Builder:
    """The hops of every chunk of every tree, then their lanes (the module's docstring)."""

    def __init__(self, n: int, rank_of_node: dict):
        self.n = n
        self.rank_of_node = rank_of_node
        self.hops: list = []
        self.scratch = [0] * n
        self.bottleneck: dict = {}  # (u, v) -> the pair's capacity on the paths its hops take

    def _path_hops(self, path, capacity, src, dst, kind, inputs, release, key) -> int:
        """The hops of one tree arc (fabric ``path``) from its first GPU's ``src`` to its last's
        ``dst`` (relays through the scratch of GPUs of the set on the way); returns the last."""
        stops = [i for i, node in enumerate(path) if node in self.rank_of_node]
        last = None
        for j, (i0, i1) in enumerate(zip(stops, stops[1:])):
            u, v = self.rank_of_node[path[i0]], self.rank_of_node[path[i1]]
            cap = min(capacity(a, b) for a, b in zip(path[i0:i1], path[i0 + 1:i1 + 1]))
            self.bottleneck[u, v] = max(self.bottleneck.get((u, v), 0.0), cap)
            final = j == len(stops) - 2
            if final:
                to, how = dst, kind
            else:
                to, how = ("s", self.scratch[v]), "r"
                self.scratch[v] += 1
            self.hops.append(_Hop(u, v, src, to, how, list(inputs), release, key))
            last = len(self.hops) - 1
            src, inputs, release = to, [last], 0.0
        return last

    def down(self, tree, slot, buf, capacity, release, key, root_inputs=()) -> None:
        """A chunk ``buf[slot]`` of the tree's root down an all_gather tree (parents first)."""
        into = {tree.root: list(root_inputs)}
        pending = list(tree.arcs)
        while pending:
            later = []
            for a, b, path in pending:
                if a not in into:
                    later.append((a, b, path))
                    continue
                last = self._path_hops(path, capacity, (buf, slot), (buf, slot), "r", into[a],
                                       release if a == tree.root and not root_inputs else 0.0, key)
                into[b] = [last]
            pending = later

    def up(self, tree, slot, capacity, release, key) -> list:
        """A chunk ``i[slot]`` reduced up a reduce_scatter tree (children first); returns the
        hops into the root."""
        into: dict = defaultdict(list)
        incoming: dict = defaultdict(int)
        for a, b, _ in tree.arcs:
            incoming[b] += 1
        pending = list(tree.arcs)
        while pending:
            later = []
            for a, b, path in pending:
                if len(into[a]) < incoming[a]:
                    later.append((a, b, path))
                    continue
                last = self._path_hops(path, capacity, ("i", slot), ("i", slot), "rrc", into[a],
                                       release if not incoming[a] else 0.0, key)
                into[b].append(last)
            pending = later
        return into[tree.root]

    def schedule(self, per_channel: float, lanes_of: dict) -> None:
        """Each hop's lane and end, by the list schedule of the module's docstring."""
        hops = self.hops
        waiting = [len(h.inputs) for h in hops]
        for i, h in enumerate(hops):
            for j in h.inputs:
                hops[j].consumers.append(i)
        ready = [(h.release, h.key, i) for i, h in enumerate(hops) if not h.inputs]
        heapq.heapify(ready)
        free = {pair: [0.0] * count for pair, count in lanes_of.items()}
        while ready:
            at, _, i = heapq.heappop(ready)
            h = hops[i]
            lanes = free[h.u, h.v]
            lane = min(range(len(lanes)), key=lanes.__getitem__)
            rate = min(per_channel, self.bottleneck[h.u, h.v] / len(lanes))
            h.end = lanes[lane] = max(at, lanes[lane]) + 1.0 / rate
            h.lane = lane
            for j in h.consumers:
                waiting[j] -= 1
                if not waiting[j]:
                    c = hops[j]
                    heapq.heappush(ready, (max([c.release] + [hops[x].end for x in c.inputs]), c.key, j))


def _lanes(builder, chunk_rate: float, per_channel: float, limits) -> dict:
    """Channels of each GPU pair: its chunks per loop at the packing's rate over one channel's
    rate (or the pair's capacity, the lesser), with :data:`LANE_SLACK` spare, within the runtime's
    channels per pair and threadblocks per GPU (the slack shrinks first)."""
    chunks: dict = defaultdict(int)
    for h in builder.hops:
        chunks[h.u, h.v] += 1
    for slack in (LANE_SLACK, LANE_SLACK / 2, 0.0):
        lanes = {pair: max(1, min(count, limits.max_channels, math.ceil(
            (1 + slack) * count * chunk_rate / min(per_channel, builder.bottleneck[pair]) - 1e-9)))
            for pair, count in chunks.items()}
        per_gpu: dict = defaultdict(int)
        for (u, v), count in lanes.items():
            per_gpu[u] += count
            per_gpu[v] += count
        if max(per_gpu.values()) <= limits.max_threadblocks:
            return lanes
    raise ScheduleError(f"the packing needs more than {limits.max_threadblocks} threadblocks on one GPU")


def packed_steps(phases, ids, nodes, k: int, capacity, per_channel: float) -> tuple:
    """Each GPU's threadblocks of the packing's schedule, its scratch chunks and its channels.

    Parameters
    ----------
    phases : sequence of (str, TreePacking, counts)
        ``("up", reduce_scatter packing, ...)`` and/or ``("down", all_gather packing, ...)``, in the
        order they run on each chunk; ``counts`` each tree's chunks (:func:`chunk_counts`).
    ids : tuple of int
        The GPU id of each rank.
    nodes : sequence
        The fabric's GPU nodes, by GPU id (:func:`topo.gpus`).
    k : int
        Chunks per root.
    capacity : callable
        ``capacity(u, v)``: what the evaluator lets flows move over edge ``(u, v)``. [B/s]
    per_channel : float
        One channel's rate at those capacities. [B/s]

    Returns
    -------
    (per_gpu, scratch, nchannels)
        ``per_gpu[rank]``: ``[(send, recv, chan, [Step...])]``.
    """
    n = len(ids)
    rank_of_id = {g: r for r, g in enumerate(ids)}
    builder = _Builder(n, {nodes[g]: r for r, g in enumerate(ids)})
    rate = min(p.rate for _, p, _ in phases)
    loop = k / rate  # seconds per loop of unit chunks at the packing's rate
    only_down = len(phases) == 1 and phases[0][0] == "down"
    buf = "o" if only_down else "i"
    reduced: dict = {}
    for how, packing, counts in phases:
        offset = {}
        for t, (tree, count) in enumerate(zip(packing.trees, counts)):
            root = rank_of_id[tree.root]
            first = offset.setdefault(root, root * k)
            offset[root] = first + count
            for m in range(count):
                due = (m + 0.5) / count
                slot = first + m
                key = (due, root, t)
                if how == "up":
                    reduced[slot] = builder.up(tree, slot, capacity, due * loop, key)
                else:
                    builder.down(tree, slot, buf, capacity, due * loop, key, reduced.get(slot, ()))
    limits = EXECUTOR.limits
    lanes_of = _lanes(builder, rate / k, per_channel, limits)
    builder.schedule(per_channel, lanes_of)
    return _steps(builder, n, limits), builder.scratch, max(lanes_of.values())


def _steps(builder, n: int, limits) -> list:
    """The threadblocks of the scheduled hops: per lane, the sender's sends and the receiver's
    receives in the order of their ends; a send waits for the receive that brought its data (the
    last of a reduction's), a reduction for the one before it into the same chunk."""
    hops = builder.hops
    # The reductions into each (GPU, buffer, offset), in the order they end, are chained.
    into: dict = defaultdict(list)
    for i, h in enumerate(hops):
        if h.kind == "rrc":
            into[h.v, h.dst].append(i)
    before: dict = {}
    for ids in into.values():
        ids.sort(key=lambda i: (hops[i].end, i))
        for a, b in zip(ids, ids[1:]):
            before[b] = a
    order = sorted(range(len(hops)), key=lambda i: (hops[i].end, i))
    per_gpu: list = [[] for _ in range(n)]
    tbs: dict = {}
    placed: dict = {}  # hop -> (sender tb, step), (receiver tb, step)

    def tb(r, send, recv, chan):
        found = tbs.get((r, send, recv, chan))
        if found is None:
            found = tbs[r, send, recv, chan] = (len(per_gpu[r]), [])
            per_gpu[r].append((send, recv, chan, found[1]))
        return found

    waited = set()
    for i in order:
        h = hops[i]
        sender, receiver = tb(h.u, h.v, -1, h.lane), tb(h.v, -1, h.u, h.lane)
        placed[i] = ((sender[0], len(sender[1])), (receiver[0], len(receiver[1])))
        sender[1].append(i)
        receiver[1].append(i)
    built = []
    for r in range(n):
        tbs_r = []
        for t, (send, recv, chan, ids) in enumerate(per_gpu[r]):
            steps = []
            for s, i in enumerate(ids):
                h = hops[i]
                if send >= 0:  # the send of hop i: after the receive that brought its data here
                    got = max(h.inputs, key=lambda j: (hops[j].end, j), default=None)
                    dep = placed[got][1] if got is not None else None
                    kind, (sb, so), (db, do) = "s", h.src, h.src
                else:  # its receive: a reduction after the one before it into the same chunk
                    dep = placed[before[i]][1] if i in before else None
                    kind, (sb, so), (db, do) = h.kind, h.dst, h.dst
                if dep is not None:
                    waited.add((r, dep))
                steps.append([s, kind, sb, so, db, do, dep])
            tbs_r.append((send, recv, chan, steps))
        built.append(tbs_r)
    out = []
    for r in range(n):
        tbs_r = []
        for t, (send, recv, chan, steps) in enumerate(built[r]):
            if len(steps) > limits.max_steps:
                raise StepLimitError(f"the packing puts {len(steps)} steps on GPU rank {r}'s threadblock {t}, more "
                                    f"than the runtime's {limits.max_steps}: expected fewer chunks")
            tbs_r.append((send, recv, chan, [
                Step(s, kind, sb, so, db, do, 1, *(dep if dep else (-1, -1)), hasdep=(r, (t, s)) in waited)
                for s, kind, sb, so, db, do, dep in steps]))
        out.append(tbs_r)
    return out
