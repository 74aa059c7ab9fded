"""The job's GPUs on a fabric and their groups: which GPUs a job takes and how a host's GPUs
split into tensor-parallel groups, timed by the fabric's collective estimates (:class:`JobGroups`).

Every collective is a :func:`models.estimate` on the actual GPU group of the actual fabric, so
placement matters; estimates are cached per group shape (:mod:`models.studies.planner`'s
docstring says how).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

import topo
from topo.units import GiB

from ...engine.fabric import PreparedFabric, prepare
from ...engine.memo import BoundedMemo
from ...engine.nccltests import busbw_factor
from ...engine.symmetry import GpuSymmetry
from ...predict.collectives import Estimator

# Nothing here is called by a user: :mod:`models.studies.planner.layouts` places every layout with it.
__all__: tuple[str, ...] = ()

# module-level array could be written to (an array is made where it is used).
_GRID = tuple(2.0 ** k for k in range(10, 37, 2))
# Above this many partitions of a host's GPUs, candidate partitions replace exhaustive search.
_MAX_PARTITIONS = 10000
# The size whose all_reduce ranks the GPU sets of a job smaller than a host: large enough to
# be bandwidth-bound, so the best-connected GPUs win. [bytes]
_PLACEMENT_BYTES = float(GiB)


class JobGroups:
    """The job's GPUs on a prepared fabric: GPU-set keys, cached collective times per group shape."""

    def __init__(self, G, gpus=None, profile=None):
        # One prepared fabric for every collective of the plan: NCCL's view (with the release),
        # the per-host channel searches of a cluster and the symmetry are built once.
        self.prepared = prepare(G, nccl=profile)
        G = self.G = self.prepared.G
        nodes = topo.gpus(G)
        chosen = topo.select_gpus(G, gpus) if gpus is not None else list(nodes)
        position = {n: i for i, n in enumerate(nodes)}
        self.ids = sorted(position[n] for n in chosen)
        self.nodes = nodes
        self.host = {i: G.nodes[nodes[i]].get("host", 0) for i in self.ids}
        self.index = {i: G.nodes[nodes[i]].get("index", i) for i in self.ids}
        hosts: dict = {}
        for i in self.ids:
            hosts.setdefault(self.host[i], []).append(i)
        self.hosts = [hosts[h] for h in sorted(hosts)]
        self.name = self.prepared.name
        models_ = {G.nodes[nodes[i]].get("model", "") for i in self.ids}
        self.models = sorted(models_)
        # The key of NCCL's estimates (models.engine.symmetry): on a cluster, identical hosts and
        # each host's own symmetry; on one host, the symmetry of what NCCL's paths use.
        self.symmetry = self.prepared.symmetry.nccl(units=True)
        self.nic_bandwidth = self._nic_bandwidth()
        self.estimator = Estimator(self.prepared)
        # A placement asks the same few groups again and again (every partition of a host, every
        # layout): their keys and times are kept for the life of the job's groups, the envelopes
        # (the estimates) by the prepared fabric, for every plan on it.
        self._keys: dict = {}  # GPU ids as asked -> their key
        self._times: dict = {}  # (collective, size, GPU ids as asked) -> time [s]
        self._shape_times: dict = {}  # (collective, size, key) -> time [s]
        # Concurrent groups as a layout places them (a tuple of GPU-id tuples; every layout with
        # the same degrees asks the same ones) -> their first group of each key, and per host the
        # spanning groups leaving it (:meth:`spread`).
        self._spreads: dict = {}
        # The same concurrent groups asked again as the same tuple (a layout's placement is kept,
        # :func:`models.studies.planner.layouts`): found by identity first, the tuple held so its
        # id stays its own.
        self._held = BoundedMemo(1024)  # (kind, id(groups)) -> (groups, found), the recent ones
        self._factors: dict = {}  # (collective, n) -> busbw factor

    def _nic_bandwidth(self) -> dict:
        G = self.G
        out = {}
        if G.graph.get("hosts", 1) <= 1:
            return out
        for h in {self.host[i] for i in self.ids}:
            out[h] = sum(d["bandwidth"] for n in topo.compute_nics(G, h)
                         for _, _, d in G.out_edges(n, data=True) if d["kind"] == "network")
        return out

    def key(self, ids) -> tuple:
        ids = tuple(ids)
        found = self._keys.get(ids)
        if found is None:
            found = self._keys[ids] = self.symmetry.key([self.nodes[i] for i in ids])
        return found

    def prefetch(self, groups) -> None:
        """Key many groups of GPU ids at once (a placement weighs thousands): one vectorised
        pass of the fabric's symmetry where it has one (:meth:`GpuSymmetry.keys
        <models.engine.symmetry.GpuSymmetry.keys>`, the same keys as one by one)."""
        missing = list(dict.fromkeys(g for g in map(tuple, groups) if g not in self._keys))
        if not missing:
            return
        if not isinstance(self.symmetry, GpuSymmetry):
            for g in missing:
                self.key(g)
            return
        position = self.symmetry.position
        by_size: dict = {}
        for g in missing:
            by_size.setdefault(len(g), []).append(g)
        used = set(itertools.chain.from_iterable(missing))
        place = np.zeros(max(used) + 1, dtype=np.intp)  # GPU id -> its position in the symmetry
        for i in used:
            place[i] = position[self.nodes[i]]
        for same in by_size.values():
            rows = np.sort(place[np.array(same, dtype=np.intp)], axis=1)  # each set in rank order
            self._keys.update(zip(same, self.symmetry.keys(rows)))

    def _envelope(self, collective, ids):
        # The estimates depend on the fabric (its release included), the collective and the
        # group's key only: the prepared fabric keeps them for every plan made on it.
        key = ("planner.envelope", collective, self.key(ids))
        cache = self.prepared.memo
        if key not in cache:
            grid = np.array(_GRID)
            e = self.estimator.estimate(collective, grid, gpus=list(ids))
            # What the step sees is what the machine achieves (models.predict.measure): the host's launch
            # overlaps NCCL's latency, and the links move data at their achieved rate.
            m = e.measurement
            latency = np.broadcast_to(np.maximum(np.asarray(e.latency, dtype=float), m.hosts),
                                      grid.shape)
            bandwidth = np.broadcast_to(np.asarray(e.bandwidth, dtype=float) * m.ratios, grid.shape)
            pairs = sorted(set(zip(latency.tolist(), bandwidth.tolist())))
            cache[key] = (np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))
        return cache[key]

    def time(self, collective: str, nbytes: float, ids) -> float:
        """Time of one collective on these GPU ids at this size. [s]"""
        if len(ids) < 2 or nbytes <= 0:
            return 0.0
        asked = (collective, nbytes, tuple(ids))
        found = self._times.get(asked)
        if found is None:
            shape = (collective, nbytes, self.key(ids))
            found = self._shape_times.get(shape)
            if found is None:
                latency, bandwidth = self._envelope(collective, ids)
                found = self._shape_times[shape] = float(np.min(latency + nbytes / bandwidth))
            self._times[asked] = found
        return found

    def spread(self, groups) -> tuple:
        """``(firsts, load)`` of concurrent ``groups`` (GPU-id tuples): the first group of each
        key (in ``groups``' order; a key's estimate is made on it), and host -> the number of
        groups that span it and other hosts. Kept per ``groups``: a search asks the same groups
        of every layout with the same degrees many times."""
        return self.held("spread", groups, lambda: self._spread(groups))

    def held(self, kind: str, groups, make):
        """``make()``, what is found of concurrent ``groups``, kept for the tuple asked (by its
        identity: the recent ones, each held so its id stays its own); a list is not kept."""
        if not isinstance(groups, tuple):
            return make()
        key = (kind, id(groups))
        held = self._held.get(key)
        if held is not None and held[0] is groups:
            return held[1]
        found = make()
        self._held.put(key, (groups, found))
        return found

    def _spread(self, groups) -> tuple:
        groups = tuple(map(tuple, groups))
        found = self._spreads.get(groups)
        if found is None:
            self.prefetch(groups)
            firsts: dict = {}
            load: dict = {}
            for g in groups:
                firsts.setdefault(self.key(g), g)
                hosts = {self.host[i] for i in g}
                if len(hosts) > 1:
                    for h in hosts:
                        load[h] = load.get(h, 0) + 1
            found = self._spreads[groups] = (tuple(firsts.values()), load)
        return found

    def dimension_time(self, collective: str, nbytes: float, groups) -> float:
        """The slowest of concurrent groups, with their shared NICs charged. [s]"""
        if not groups or len(groups[0]) < 2 or nbytes <= 0:
            return 0.0
        firsts, load = self.spread(groups)
        slowest = max(self.time(collective, nbytes, g) for g in firsts)
        if not self.nic_bandwidth:
            return slowest
        # Bytes each spanning group sends out of one host (ring: one exit per host).
        n = len(groups[0])
        factor = self._factors.get((collective, n))
        if factor is None:  # a ring's bytes per host exit: nccl-tests' busbw factor
            factor = self._factors[collective, n] = busbw_factor(collective, n)
        if not load:
            return slowest
        network = max(count * factor * nbytes / self.nic_bandwidth[h] for h, count in load.items())
        return max(slowest, network)


def _partitions(items, size):
    """Every partition of ``items`` into groups of ``size`` (first item anchors each group)."""
    if not items:
        yield ()
        return
    first, rest = items[0], items[1:]
    for others in itertools.combinations(rest, size - 1):
        group = (first,) + others
        remaining = [x for x in rest if x not in others]
        for tail in _partitions(remaining, size):
            yield (group,) + tail


def _count_partitions(n, size) -> int:
    k = n // size
    return math.factorial(n) // (math.factorial(size) ** k * math.factorial(k))


def _partition_table(prepared: PreparedFabric, n: int, size: int) -> tuple:
    """Every partition of the positions ``range(n)`` into groups of ``size``, in :func:`_partitions`'
    order: ``(groups, rows)``, the distinct groups and, per partition, the indices of its groups
    (an array). The same for every host of ``n`` GPUs: kept by the prepared fabric."""
    key = ("planner.partitions", n, size)
    found = prepared.memo.get(key)
    if found is None:
        index: dict = {}
        rows = [[index.setdefault(g, len(index)) for g in partition]
                for partition in _partitions(list(range(n)), size)]
        found = prepared.memo[key] = (tuple(index), np.array(rows, dtype=np.intp))
    return found


def tp_partition(fabric: JobGroups, host_ids, tp, nbytes, collective):
    """The partition of one host's GPUs into TP groups whose slowest group is fastest (then whose
    groups' times sum least; the consecutive partition, then the first in :func:`_partitions`'
    order, on a tie).

    A function of the prepared fabric (the groups' times are its estimates), kept by it for every
    plan made on it."""
    if tp == 1:
        return tuple((i,) for i in host_ids)
    host_ids = tuple(host_ids)
    key = ("planner.tp_partition", collective, nbytes, tp, host_ids)
    memo = fabric.prepared.memo
    if key not in memo:
        memo[key] = _best_partition(fabric, host_ids, tp, nbytes, collective)
    return memo[key]


def _best_partition(fabric: JobGroups, host_ids, tp, nbytes, collective):
    if _count_partitions(len(host_ids), tp) <= _MAX_PARTITIONS:
        # Every partition at once: each distinct group timed once, the costs as arrays.
        positions, rows = _partition_table(fabric.prepared, len(host_ids), tp)
        groups = list(map(tuple, np.array(host_ids)[np.array(positions, dtype=np.intp)].tolist()))
        fabric.prefetch(groups)
        times = np.array([fabric.time(collective, nbytes, g) for g in groups], dtype=np.float64)[rows]
        slowest = times.max(axis=1)
        total = times[:, 0].copy()
        for column in range(1, times.shape[1]):
            total += times[:, column]  # left to right, as sum() adds them: the same floats
        tie = slowest == slowest.min()
        tie &= total == total[tie].min()
        # The consecutive partition is the first (each group anchored on the first GPU left, the
        # others the first combination): it wins a tie, else the first in order.
        return tuple(groups[j] for j in rows[0 if tie[0] else int(np.argmax(tie))])
    # Greedy: repeatedly take the fastest group among the remaining GPUs.
    consecutive = tuple(tuple(host_ids[k:k + tp]) for k in range(0, len(host_ids), tp))
    remaining, greedy = list(host_ids), []
    while remaining:
        fabric.prefetch(itertools.combinations(remaining, tp))
        best = min(itertools.combinations(remaining, tp),
                   key=lambda g: (fabric.time(collective, nbytes, g), g))
        greedy.append(best)
        remaining = [x for x in remaining if x not in best]
    best, best_cost = None, None
    for partition in (consecutive, tuple(greedy)):
        times = [fabric.time(collective, nbytes, g) for g in partition]
        cost = (max(times), sum(times), partition != consecutive)
        if best_cost is None or cost < best_cost:
            best, best_cost = partition, cost
    return tuple(best)


def job_gpus(fabric: JobGroups, host_ids, n: int) -> tuple:
    """The ``n`` GPUs of one host whose all_reduce is fastest (lowest ids on ties)."""
    if n >= len(host_ids):
        return tuple(host_ids)
    if n == 1:
        return (host_ids[0],)
    if math.comb(len(host_ids), n) <= _MAX_PARTITIONS:
        candidates = list(itertools.combinations(host_ids, n))
        fabric.prefetch(candidates)
    else:  # greedy: grow the set by the GPU that keeps its all_reduce fastest
        chosen = [host_ids[0]]
        while len(chosen) < n:
            rest = [i for i in host_ids if i not in chosen]
            chosen.append(min(rest, key=lambda i: (fabric.time("all_reduce", _PLACEMENT_BYTES, chosen + [i]), i)))
        candidates = [tuple(sorted(chosen))]
    return min(candidates, key=lambda g: (fabric.time("all_reduce", _PLACEMENT_BYTES, g), g))

