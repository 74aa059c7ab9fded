"""A training step on a fabric: layouts, placement, memory, and where the time goes.

:func:`plan` answers "how long does one training step of this workload take on these GPUs, with
which (tensor, pipeline, data) parallel layout and which GPUs in each group?"; :func:`search`
ranks every layout; :func:`gpus_ranking` answers "which GPU generation suits this workload?".

The step (one global batch; Narayanan et al. 2021, "Efficient Large-Scale Language Model
Training on GPU Clusters Using Megatron-LM", sections 2-3) on the heaviest pipeline stage:

* compute: ``m`` micro-batches (``m = global_batch / (dp x micro_batch)``), each a forward
  and a backward (twice the forward) of the stage's layers on the roofline of
  :mod:`models.studies.compute`, plus one forward more with full recomputation;
* tensor parallel: per layer and micro-batch 2 all_reduces of ``b s h`` activations in the
  forward and 2 in the backward (2 more with recomputation) (Shoeybi et al. 2019, "Megatron-LM",
  section 3); with sequence parallelism each becomes a reduce_scatter and an all_gather of the
  same buffer (Korthikanti et al. 2022, section 4.2.2). On the critical path (not overlapped);
* pipeline: 1F1B; per micro-batch one send of the activations and one of their gradients
  between adjacent stages (``b s h / t`` bytes with Megatron's scatter/gather, Narayanan et al.
  2021, section 4.1), ``m + p - 1`` times, on the critical path; the bubble is ``p - 1``
  micro-batch slots, ``(p - 1) / m`` of the ideal step;
* data parallel: after the last micro-batch, gradients all_reduced in buckets (``bucket``,
  25 MiB as PyTorch DDP's ``bucket_cap_mb``), overlapped with that micro-batch's backward up to
  the fraction ``overlap`` of it; the last bucket is always exposed. ZeRO 1/2 (Rajbhandari et
  al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models") replace the
  all_reduce by a reduce_scatter (overlapped) and an all_gather of the updated parameters
  (exposed); ZeRO 3 / FSDP all_gather the parameters for every forward and backward of every
  micro-batch, overlapped with that pass up to ``overlap``;
* the optimizer step: a memory-bound pass over the local optimizer state (mixed-precision
  Adam reads and writes fp32 master weights, two moments, the gradient and the 16-bit weights,
  28 bytes per parameter [U]).

Every collective is a :func:`models.estimate` on the actual GPU group of the actual fabric, so
placement matters. Groups of one dimension run concurrently; the model also charges their
shared network ports (the traffic of every concurrent group crossing a host's NICs over the
host's NIC bandwidth), but not their sharing of links inside a host [U]. Estimates are cached
per group shape (GPU sets equal under the fabric's symmetries, :func:`topo.interchangeable_gpus`,
:func:`topo.gpu_automorphisms`, and identical hosts), one channel search per shape: each is run
on a grid of sizes and a size in between takes the best of the (latency, bandwidth) pairs NCCL
selected on the grid, which is NCCL's own selection whenever each candidate that wins somewhere
wins at a grid point.

Memory per GPU (heaviest stage): weights, gradients and optimizer state (mixed-precision Adam:
2 + 2 + 12 = 16 bytes per parameter; fp32: 4 + 4 + 8) sharded by ZeRO stage, activations of
the micro-batches in flight (1F1B keeps ``p`` on the first stage; Korthikanti et al. 2022 per
layer, :meth:`models.studies.workload.Transformer.activation_bytes`) and the fp32 logits of the last
stage. A layout that does not fit is a result with the numbers (``fits`` False), not an error.

Placement: tensor-parallel groups stay inside a host (Megatron practice) and, within a host,
take the partition of its GPUs whose slowest group's all_reduce is fastest (on a DGX-1 a group
of 4 inside a cube face, not across the sockets); the groups then form data- and
pipeline-parallel groups in either nesting order (``tp-dp-pp``, Megatron's, or ``tp-pp-dp``),
and the faster one is kept.

Examples
--------
>>> import topo
>>> p = plan("megatron-8.3b", topo.dgx2(), tp=8, pp=1, dp=2, zero=0, recompute="full", dtype="fp16")
>>> p.fits, p.layout.tp, len(p.groups["tp"])
(True, 8, 2)
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field

import numpy as np

import topo
from topo.errors import DgxTopoError
from topo.units import GB, GiB, MiB, to_us

from ..predict.collectives import Estimator
from .compute import (DEFAULT_EFFICIENCY, DEFAULT_MEMORY_EFFICIENCY, GENERATIONS, generation,
                      generation_of, gpu_memory, op_roofline)
from .workload import CNN, dtype_bytes, tp_constraint, workload as as_workload

__all__ = ["PlanError", "Layout", "Memory", "Component", "Plan", "Search", "GpuRank",
           "plan", "search", "memory", "gpus_ranking", "format_plan", "format_search",
           "format_gpus_ranking", "ORDERS", "RECOMPUTE", "DEFAULT_BUCKET", "DEFAULT_OVERLAP",
           "OPTIMIZER_PASS_BYTES"]

#: Nesting orders of the data- and pipeline-parallel groups over the tensor-parallel groups.
ORDERS = ("tp-dp-pp", "tp-pp-dp")
#: Recomputation modes (Korthikanti et al. 2022).
RECOMPUTE = ("none", "selective", "full")
#: Gradient bucket: PyTorch DDP's default ``bucket_cap_mb=25``. [bytes]
DEFAULT_BUCKET = 25 * MiB
#: Fraction of a backward (forward for ZeRO 3 gathers) that can hide data-parallel
#: communication: all of it by default (frameworks launch each bucket as soon as it is ready);
#: the last bucket is exposed regardless.
DEFAULT_OVERLAP = 1.0
#: Bytes the mixed-precision Adam step moves per local parameter: read and write fp32 master,
#: two fp32 moments (24), read the 16-bit gradient (2), write the 16-bit weight (2) [U].
OPTIMIZER_PASS_BYTES = 28

# Sizes on which each group shape is estimated once (1 KiB to 64 GiB, x4 apart).
_GRID = np.array([2.0 ** k for k in range(10, 37, 2)])
# Above this many partitions of a host's GPUs, candidate partitions replace exhaustive search.
_MAX_PARTITIONS = 10000


class PlanError(DgxTopoError):
    """A planning request that cannot be met (degrees, batch, GPUs, options)."""


@dataclass(frozen=True, slots=True)
class Layout:
    """A parallel layout.

    Attributes
    ----------
    tp, pp, dp : int
        Tensor-, pipeline- and data-parallel degrees; ``tp x pp x dp`` GPUs.
    zero : int
        ZeRO stage 0-3 over the data-parallel group.
    micro_batch, global_batch : int
        [samples]
    recompute : str
        One of :data:`RECOMPUTE`.
    sequence_parallel : bool
    order : str
        One of :data:`ORDERS`.
    """

    tp: int
    pp: int
    dp: int
    zero: int
    micro_batch: int
    global_batch: int
    recompute: str
    sequence_parallel: bool
    order: str

    @property
    def ngpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def micro_batches(self) -> int:
        """Micro-batches per step per pipeline, ``global_batch / (dp x micro_batch)``."""
        return self.global_batch // (self.dp * self.micro_batch)

    def label(self) -> str:
        return (f"tp{self.tp} pp{self.pp} dp{self.dp} zero{self.zero} mb{self.micro_batch} "
                f"rc={self.recompute}{' sp' if self.sequence_parallel else ''} {self.order}")


@dataclass(frozen=True, slots=True)
class Memory:
    """Memory of one GPU of the heaviest stage. [bytes]

    Attributes
    ----------
    parameters, gradients, optimizer, activations : float
    capacity : float
        The GPU's device memory.
    """

    parameters: float
    gradients: float
    optimizer: float
    activations: float
    capacity: float

    @property
    def total(self) -> float:
        return self.parameters + self.gradients + self.optimizer + self.activations

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity

    def describe(self) -> str:
        return (f"{self.total / GB:.1f} GB of {self.capacity / GB:.1f} GB (weights "
                f"{self.parameters / GB:.1f}, gradients {self.gradients / GB:.1f}, optimizer "
                f"{self.optimizer / GB:.1f}, activations {self.activations / GB:.1f})")


@dataclass(frozen=True, slots=True)
class Component:
    """One part of a step.

    Attributes
    ----------
    name : str
        ``compute``, ``tp_comm``, ``pp_comm``, ``dp_comm``, ``bubble``, ``optimizer``.
    time : float
        Its whole duration. [s]
    exposed : float
        The part on the critical path (what it adds to the step). [s]
    detail : str
    """

    name: str
    time: float
    exposed: float
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Plan:
    """One evaluated layout.

    Attributes
    ----------
    workload : str
    fabric : str
    generation : str
        GPU generation of the fabric (or the one forced).
    dtype : str
    layout : Layout
    fits : bool
    reason : str
        Why it does not fit ('' when it does).
    step_time : float
        [s] (``inf`` when it does not fit).
    components : tuple of Component
    memory : Memory
    groups : dict
        ``"tp"``, ``"pp"``, ``"dp"``: tuples of GPU-id tuples.
    model_flops : float
        Model FLOPs of one step (no recomputation). [FLOP]
    peak : float
        The dtype's dense peak of one GPU. [FLOP/s]
    tokens_per_sample : int
    """

    workload: str
    fabric: str
    generation: str
    dtype: str
    layout: Layout
    fits: bool
    reason: str
    step_time: float
    components: tuple
    memory: Memory
    groups: dict = field(repr=False)
    model_flops: float = 0.0
    peak: float = 0.0
    tokens_per_sample: int = 1

    @property
    def samples_per_s(self) -> float:
        return self.layout.global_batch / self.step_time if self.fits else 0.0

    @property
    def tokens_per_s(self) -> float:
        """Tokens/s (images/s for a CNN)."""
        return self.samples_per_s * self.tokens_per_sample

    @property
    def tflops_per_gpu(self) -> float:
        """Model FLOPs per second per GPU, in TFLOP/s (display unit, as frameworks log it)."""
        return self.model_flops / self.step_time / self.layout.ngpus / 1e12 if self.fits else 0.0

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation: model FLOPs / (step time x GPUs x dense peak)."""
        return self.model_flops / (self.step_time * self.layout.ngpus * self.peak) if self.fits else 0.0

    def component(self, name: str) -> Component:
        for c in self.components:
            if c.name == name:
                return c
        raise KeyError(name)

    def binding(self) -> str:
        """The component that adds most to the step."""
        if not self.components:
            return "memory capacity"
        return max(self.components, key=lambda c: c.exposed).name

    def explain(self) -> str:
        return format_plan(self, verbose=True)

    def to_dict(self) -> dict:
        return {
            "workload": self.workload, "fabric": self.fabric, "generation": self.generation,
            "dtype": self.dtype, "layout": {k: getattr(self.layout, k) for k in Layout.__slots__},
            "fits": self.fits, "reason": self.reason,
            "step_time_s": self.step_time if self.fits else None,
            "samples_per_s": self.samples_per_s, "tokens_per_s": self.tokens_per_s,
            "tflops_per_gpu": self.tflops_per_gpu, "mfu": self.mfu,
            "memory_per_gpu_bytes": self.memory.total,
            "memory": {"parameters": self.memory.parameters, "gradients": self.memory.gradients,
                       "optimizer": self.memory.optimizer, "activations": self.memory.activations,
                       "capacity": self.memory.capacity},
            "components": {c.name: {"time_s": c.time, "exposed_s": c.exposed, "detail": c.detail}
                           for c in self.components},
            "exposed_comm_s": sum(c.exposed for c in self.components if c.name.endswith("_comm")),
            "groups": {k: [list(g) for g in v] for k, v in self.groups.items()},
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


@dataclass(frozen=True, slots=True)
class Search:
    """Every layout evaluated, fitting ones first by step time, then the OOM ones.

    Attributes
    ----------
    plans : tuple of Plan
    skipped : tuple of str
        Layouts not evaluated and why (degrees that do not divide, batch not divisible).
    """

    plans: tuple
    skipped: tuple = ()

    @property
    def best(self) -> Plan:
        return self.plans[0]

    def fitting(self) -> tuple:
        return tuple(p for p in self.plans if p.fits)

    def explain(self) -> str:
        return format_search(self)

    def to_json(self) -> str:
        return json.dumps({"best": self.best.to_dict(),
                           "layouts": [p.to_dict() for p in self.plans],
                           "skipped": list(self.skipped)}, indent=2)


# ------------------------------------------------------------------------------- fabric
class _Fabric:
    """The job's GPUs on a fabric, symmetry keys of GPU sets, cached collective times."""

    def __init__(self, G, gpus=None, profile=None):
        self.G = G
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
        self.name = G.graph.get("name", "fabric")
        models_ = {G.nodes[nodes[i]].get("model", "") for i in self.ids}
        self.models = sorted(models_)
        first_host = self.host[self.ids[0]]
        host_graph = G.subgraph(n for n, h in G.nodes(data="host") if h == first_host).copy() \
            if G.graph.get("hosts", 1) > 1 else G
        self.local = {G.nodes[g].get("index", k): g for k, g in enumerate(topo.gpus(host_graph))}
        switched = any(k == "nvswitch" for _, k in host_graph.nodes(data="kind"))
        self.sym = {}
        for scope, kinds in (("local", ["nvlink"] if switched else None), ("multi", None)):
            classes = topo.interchangeable_gpus(host_graph, edge_kinds=kinds)
            # The automorphisms of a whole NVSwitch host (NICs, PCIe tree and all) take VF2 tens
            # of seconds on a DGX H100; there the classes alone key the sets (fewer shortcuts,
            # each estimate still cached).
            maps = (topo.gpu_automorphisms(host_graph)
                    if all(len(c) == 1 for c in classes) and not switched else None)
            class_of = {g: c for c, members in enumerate(classes) for g in members}
            self.sym[scope] = (class_of, maps)
        self.nic_bandwidth = self._nic_bandwidth()
        # One prepared fabric for every collective of the plan: NCCL's view and the per-host
        # channel searches of a cluster are built once.
        self.estimator = Estimator(G, profile=profile)
        self.cache: dict = {}

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
        by_host: dict = {}
        for i in ids:
            by_host.setdefault(self.host[i], []).append(self.local[self.index[i]])
        class_of, maps = self.sym["local" if len(by_host) == 1 else "multi"]
        shapes = []
        for members in by_host.values():
            images = [members] if maps is None else [[m[g] for g in members] for m in maps]
            shapes.append(min(tuple(sorted(class_of[g] for g in image)) for image in images))
        return (len(by_host) > 1,) + tuple(sorted(shapes))

    def _envelope(self, collective, ids):
        key = (collective, self.key(ids))
        if key not in self.cache:
            e = self.estimator.estimate(collective, _GRID, gpus=list(ids))
            # What the step sees is what the machine achieves (models.predict.measure): the host's launch
            # overlaps NCCL's latency, and the links move data at their achieved rate.
            m = e.measurement
            latency = np.broadcast_to(np.maximum(np.asarray(e.latency, dtype=float), m.host_time),
                                      _GRID.shape)
            bandwidth = np.broadcast_to(np.asarray(e.bandwidth, dtype=float) * m.ratio, _GRID.shape)
            pairs = sorted(set(zip(latency.tolist(), bandwidth.tolist())))
            self.cache[key] = (np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))
        return self.cache[key]

    def time(self, collective: str, nbytes: float, ids) -> float:
        """Time of one collective on these GPU ids at this size. [s]"""
        if len(ids) < 2 or nbytes <= 0:
            return 0.0
        latency, bandwidth = self._envelope(collective, ids)
        return float(np.min(latency + nbytes / bandwidth))

    def dimension_time(self, collective: str, nbytes: float, groups) -> float:
        """The slowest of concurrent groups, with their shared NICs charged. [s]"""
        if not groups or len(groups[0]) < 2 or nbytes <= 0:
            return 0.0
        seen: dict = {}
        for g in groups:
            k = self.key(g)
            if k not in seen:
                seen[k] = self.time(collective, nbytes, g)
        slowest = max(seen.values())
        if not self.nic_bandwidth:
            return slowest
        # Bytes each spanning group sends out of one host (ring: one exit per host).
        n = len(groups[0])
        factor = {"all_reduce": 2 * (n - 1) / n, "reduce_scatter": (n - 1) / n,
                  "all_gather": (n - 1) / n, "sendrecv": 1.0}[collective]
        load: dict = {}
        for g in groups:
            hosts = {self.host[i] for i in g}
            if len(hosts) > 1:
                for h in hosts:
                    load[h] = load.get(h, 0) + 1
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


def _tp_partition(fabric: _Fabric, host_ids, tp, nbytes, collective):
    """The partition of one host's GPUs into TP groups whose slowest group is fastest."""
    if tp == 1:
        return tuple((i,) for i in host_ids)
    consecutive = tuple(tuple(host_ids[k:k + tp]) for k in range(0, len(host_ids), tp))
    if _count_partitions(len(host_ids), tp) <= _MAX_PARTITIONS:
        candidates = _partitions(list(host_ids), tp)
    else:
        # Greedy: repeatedly take the fastest group among the remaining GPUs.
        remaining, greedy = list(host_ids), []
        while remaining:
            best = min(itertools.combinations(remaining, tp),
                       key=lambda g: (fabric.time(collective, nbytes, g), g))
            greedy.append(best)
            remaining = [x for x in remaining if x not in best]
        candidates = [consecutive, tuple(greedy)]
    best, best_cost = None, None
    for partition in candidates:
        times = [fabric.time(collective, nbytes, g) for g in partition]
        cost = (max(times), sum(times), partition != consecutive)
        if best_cost is None or cost < best_cost:
            best, best_cost = partition, cost
    return tuple(best)


# ------------------------------------------------------------------------------- memory
def _stage_parameters(w, pp: int):
    """(first stage, last stage) parameters of a pipeline of ``pp`` stages."""
    if isinstance(w, CNN):
        return w.parameters, w.parameters
    per_stage = math.ceil(w.layers / pp) * w.layer_parameters
    emb = w.embedding_parameters + w.extra_parameters
    if pp == 1:
        return per_stage + emb + w.head_parameters, per_stage + emb + w.head_parameters
    # Megatron keeps a copy of a tied embedding on the last stage for the output projection.
    last_head = w.head_parameters + (w.vocab * w.hidden if w.tied else 0)
    return per_stage + emb, per_stage + last_head


def memory(workload, layout: Layout, *, dtype: str = "bf16", capacity: float = 80 * GiB) -> Memory:
    """Memory per GPU of the heaviest pipeline stage. [bytes]

    Parameters
    ----------
    workload : str or workload
    layout : Layout
    dtype : str
    capacity : float
        Device memory to compare with. [bytes]
    """
    w = as_workload(workload)
    dtype_bytes(dtype)
    weight = 4 if dtype == "fp32" else 2  # fp8 recipes keep 16-bit weights and gradients
    optimizer = 8 if dtype == "fp32" else 12  # Adam moments (+ fp32 master copy)
    act_elem = 4 if dtype == "fp32" else 2
    tp, pp, dp, zero = layout.tp, layout.pp, layout.dp, layout.zero
    b, m = layout.micro_batch, layout.micro_batches
    worst = None
    for stage, params in zip(("first", "last"), _stage_parameters(w, pp)):
        local = params / tp
        p_bytes = local * weight / (dp if zero >= 3 else 1)
        g_bytes = local * weight / (dp if zero >= 2 else 1)
        o_bytes = local * optimizer / (dp if zero >= 1 else 1)
        if isinstance(w, CNN):
            act = w.activation_bytes(b, recompute=layout.recompute) * act_elem / 2
        else:
            layers = math.ceil(w.layers / pp)
            in_flight = min(pp, m) if stage == "first" else 1
            act = w.activation_bytes(b, tp, sequence_parallel=layout.sequence_parallel,
                                     recompute=layout.recompute) * act_elem / 2 * layers * in_flight
            if stage == "last" or pp == 1:
                act += 4.0 * 2 * b * w.seq * w.vocab / tp  # fp32 logits and their gradient
        mem = Memory(p_bytes, g_bytes, o_bytes, act, float(capacity))
        if worst is None or mem.total > worst.total:
            worst = mem
    return worst


# ------------------------------------------------------------------------------ the step
def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


class _Context:
    def __init__(self, w, G, gpus, dtype, efficiency, memory_efficiency, overlap, bucket,
                 gen, capacity, profile=None):
        self.w = w
        self.fabric = _Fabric(G, gpus, profile)
        if gen is None:
            gens = {generation_of(m).name for m in self.fabric.models}
            if len(gens) != 1:
                raise PlanError(f"expected GPUs of one generation, received {sorted(gens)}")
            gen = gens.pop()
        self.gen = generation(gen)
        if dtype is None:
            dtype = "bf16" if self.gen.supports("bf16") else "fp16"
        dtype_bytes(dtype)
        self.gen.peak_flops(dtype)  # UnsupportedDtypeError early
        self.dtype = dtype
        if capacity is None:
            capacity = min(gpu_memory(m) for m in self.fabric.models) if self.fabric.models[0] \
                else self.gen.memory
        self.capacity = float(capacity)
        self.efficiency, self.memory_efficiency = efficiency, memory_efficiency
        for name, value in (("overlap", overlap),):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise PlanError(f"{name} must be a fraction in [0, 1], received {value!r}")
        if isinstance(bucket, bool) or not isinstance(bucket, (int, float)) or not bucket >= 1:
            raise PlanError(f"bucket must be a size >= 1 byte, received {bucket!r}")
        self.overlap, self.bucket = float(overlap), float(bucket)
        self.partitions: dict = {}

    def ops_time(self, ops):
        total = {"compute": 0.0, "memory": 0.0}
        for op in ops:
            r = op_roofline(op, self.gen, self.dtype, efficiency=self.efficiency,
                            memory_efficiency=self.memory_efficiency)
            total[r.bound] += r.time
        return total


def _bucketed(fabric, collective, nbytes, bucket, groups):
    """(total time, time of the last bucket) of ``nbytes`` sent in buckets. [s]"""
    if nbytes <= 0:
        return 0.0, 0.0
    full = int(nbytes // bucket)
    rest = nbytes - full * bucket
    t_full = fabric.dimension_time(collective, bucket, groups) if full else 0.0
    t_rest = fabric.dimension_time(collective, rest, groups) if rest > 0 else 0.0
    return full * t_full + t_rest, (t_rest if rest > 0 else t_full)


def _evaluate(ctx: _Context, layout: Layout, tp_groups=None) -> Plan:
    w, fabric = ctx.w, ctx.fabric
    elem = dtype_bytes(ctx.dtype)
    act_elem = 4 if ctx.dtype == "fp32" else 2
    tp, pp, dp = layout.tp, layout.pp, layout.dp
    b, m = layout.micro_batch, layout.micro_batches
    cnn = isinstance(w, CNN)
    mem = memory(w, layout, dtype=ctx.dtype, capacity=ctx.capacity)
    # ---- placement
    tp_bytes = 0.0 if cnn else float(b * w.seq * w.hidden * act_elem)
    tp_coll = "all_reduce"
    if tp_groups is None:
        slots = []
        for host_ids in fabric.hosts:
            # Hosts are identical: one partition, by position in the host, serves them all.
            key = (tp, tp_bytes, tuple(fabric.index[i] for i in host_ids))
            if key not in ctx.partitions:
                chosen = _tp_partition(fabric, host_ids, tp, tp_bytes or 1, tp_coll)
                where = {i: k for k, i in enumerate(host_ids)}
                ctx.partitions[key] = tuple(tuple(where[i] for i in g) for g in chosen)
            slots.extend(tuple(host_ids[k] for k in g) for g in ctx.partitions[key])
    else:
        slots = [tuple(g) for g in tp_groups]
    if layout.order == "tp-dp-pp":
        def slot(p, d): return slots[p * dp + d]
    else:
        def slot(p, d): return slots[d * pp + p]
    dp_groups = tuple(tuple(slot(p, d)[r] for d in range(dp)) for p in range(pp) for r in range(tp))
    pp_chains = tuple(tuple(slot(p, d)[r] for p in range(pp)) for d in range(dp) for r in range(tp))
    groups = {"tp": tuple(tuple(s) for s in slots), "pp": pp_chains, "dp": dp_groups}
    # ---- compute per micro-batch on the heaviest stage
    if cnn:
        layer_ops, head_ops, nl = w.layer_ops(b, 1, elem), (), 1
    else:
        layer_ops = w.layer_ops(b, tp, elem, sequence_parallel=layout.sequence_parallel)
        head_ops = w.head_ops(b, tp, elem)
        nl = math.ceil(w.layers / pp)
    lt, ht = ctx.ops_time(layer_ops), ctx.ops_time(head_ops)
    fwd_layers = nl * (lt["compute"] + lt["memory"])
    fwd = fwd_layers + ht["compute"] + ht["memory"]
    bwd = 2 * fwd
    if layout.recompute == "full":
        bwd += fwd_layers
    elif layout.recompute == "selective":
        sel = [op for op in layer_ops if op.name in ("attention", "softmax")]
        st = ctx.ops_time(sel)
        bwd += nl * (st["compute"] + st["memory"])
    compute_bound = nl * lt["compute"] + ht["compute"]
    # ---- tensor parallel, per micro-batch
    per_layer = 6 if layout.recompute == "full" else 4
    t_tp = 0.0
    if tp > 1:
        if layout.sequence_parallel:
            one = (fabric.dimension_time("reduce_scatter", tp_bytes, groups["tp"])
                   + fabric.dimension_time("all_gather", tp_bytes, groups["tp"]))
        else:
            one = fabric.dimension_time("all_reduce", tp_bytes, groups["tp"])
        t_tp = (per_layer * nl + 2) * one  # + embedding forward and its gradient
    # ---- pipeline
    t_pp_one = 0.0
    if pp > 1:
        pairs = tuple((c[k], c[k + 1]) for c in pp_chains for k in range(pp - 1))
        t_pp_one = fabric.dimension_time("sendrecv", tp_bytes / tp, pairs)
    pp_comm = 2 * (m + pp - 1) * t_pp_one
    slot_time = fwd + bwd + t_tp
    bubble = (pp - 1) * slot_time
    # ---- data parallel
    first, last = _stage_parameters(w, pp)
    local_params = max(first, last) / tp
    grad_elem = 4 if ctx.dtype == "fp32" else 2
    grad_bytes = local_params * grad_elem
    dp_time = dp_exposed = 0.0
    detail = ""
    if dp > 1:
        window = ctx.overlap * bwd
        if layout.zero == 0:
            total, last_b = _bucketed(fabric, "all_reduce", grad_bytes, ctx.bucket, dp_groups)
            dp_time, dp_exposed = total, max(total - window, last_b)
            detail = f"all_reduce of {grad_bytes / GB:.2f} GB in {ctx.bucket / MiB:.0f} MiB buckets"
        elif layout.zero in (1, 2):
            rs, last_b = _bucketed(fabric, "reduce_scatter", grad_bytes, ctx.bucket, dp_groups)
            ag, _ = _bucketed(fabric, "all_gather", grad_bytes, ctx.bucket, dp_groups)
            dp_time, dp_exposed = rs + ag, max(rs - window, last_b) + ag
            detail = "reduce_scatter of gradients (overlapped) + all_gather of parameters (exposed)"
        else:
            ag, _ = _bucketed(fabric, "all_gather", grad_bytes, ctx.bucket, dp_groups)
            rs, last_b = _bucketed(fabric, "reduce_scatter", grad_bytes, ctx.bucket, dp_groups)
            fwd_hidden = ctx.overlap * fwd
            dp_time = 2 * m * ag + rs
            dp_exposed = m * (max(0.0, ag - fwd_hidden) + max(0.0, ag - window)) + max(rs - window, last_b)
            detail = "all_gather of parameters per forward and backward + reduce_scatter of gradients"
    # ---- optimizer
    opt_params = local_params / (dp if layout.zero >= 1 else 1)
    optimizer = opt_params * OPTIMIZER_PASS_BYTES / (ctx.gen.memory_bandwidth * ctx.memory_efficiency)
    compute = m * (fwd + bwd)
    components = (
        Component("compute", compute, compute,
                  f"{m} micro-batches x (forward {to_us(fwd) / 1e3:.2f} + backward {to_us(bwd) / 1e3:.2f} ms); "
                  f"{compute_bound / max(fwd_layers + ht['compute'] + ht['memory'], 1e-30):.0%} of the "
                  "forward is compute-bound"),
        Component("tp_comm", m * t_tp, m * t_tp,
                  f"{per_layer * nl + 2} x {'reduce_scatter+all_gather' if layout.sequence_parallel else 'all_reduce'}"
                  f" of {tp_bytes / MiB:.1f} MiB per micro-batch" if tp > 1 else "no tensor parallelism"),
        Component("pp_comm", pp_comm, pp_comm,
                  f"2 x {m + pp - 1} sends of {tp_bytes / tp / MiB:.1f} MiB" if pp > 1 else "no pipeline"),
        Component("bubble", bubble, bubble, f"(p-1)/m = {pp - 1}/{m} of the ideal step"),
        Component("dp_comm", dp_time, dp_exposed,
                  (detail + f"; overlap {ctx.overlap:.0%} of the backward") if dp > 1 else "no data parallelism"),
        Component("optimizer", optimizer, optimizer,
                  f"Adam pass over {opt_params / 1e9:.2f} B local parameters"),
    )
    step = sum(c.exposed for c in components)
    if cnn:
        model_flops = w.training_flops_per_token() * layout.global_batch
    else:
        model_flops = w.training_flops_per_token() * w.seq * layout.global_batch
    reason = "" if mem.fits else (f"out of memory: needs {mem.describe()} per GPU")
    return Plan(w.name, fabric.name, ctx.gen.name, ctx.dtype, layout, mem.fits, reason,
                step if mem.fits else math.inf, components, mem, groups, model_flops,
                ctx.gen.peak_flops(ctx.dtype), w.tokens_per_sample)


def _layouts(ctx, n, tp, pp, dp, zero, micro_batch, global_batch, recompute, sequence_parallel,
             skipped):
    w = ctx.w
    per_host = min(len(h) for h in ctx.fabric.hosts)
    cnn = isinstance(w, CNN)
    tps = [tp] if tp is not None else [d for d in _divisors(per_host)
                                       if not tp_constraint(w, d) and per_host % d == 0]
    if cnn:
        tps = [t for t in tps if t == 1]
    zeros = [zero] if zero is not None else [0, 1, 2, 3]
    recomputes = [recompute] if recompute is not None else ["none", "full"]
    for t in tps:
        reason = tp_constraint(w, t)
        if reason:
            skipped.append(f"tp{t}: {reason}")
            continue
        if t > per_host or per_host % t:
            skipped.append(f"tp{t}: tensor-parallel groups stay inside a host of {per_host} GPUs")
            continue
        pps = [pp] if pp is not None else [d for d in _divisors(n // t) if d <= w.layers and
                                           (not cnn or d == 1)]
        for p in pps:
            if n % (t * p):
                skipped.append(f"tp{t} pp{p}: does not divide {n} GPUs")
                continue
            d = n // (t * p)
            if dp is not None and d != dp:
                continue
            if p > w.layers:
                skipped.append(f"pp{p}: more stages than {w.layers} layers")
                continue
            if global_batch % (d * micro_batch):
                skipped.append(f"tp{t} pp{p} dp{d}: global batch {global_batch} is not a multiple of "
                               f"dp x micro-batch = {d * micro_batch}")
                continue
            orders = ORDERS if (p > 1 and d > 1) else ORDERS[:1]
            for z in zeros:
                if d == 1 and z > 0 and zero is None:
                    continue
                for rc in recomputes:
                    sp = (t > 1) if sequence_parallel is None else bool(sequence_parallel and t > 1)
                    for order in orders:
                        yield Layout(t, p, d, z, micro_batch, global_batch, rc, sp, order)


def _check_int(name, value, low=1):
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise PlanError(f"{name} must be a whole number >= {low}, received {value!r}")


def search(workload, G, *, tp=None, pp=None, dp=None, zero=None, micro_batch=1, global_batch=None,
           dtype=None, recompute=None, sequence_parallel=None, overlap=DEFAULT_OVERLAP,
           bucket=DEFAULT_BUCKET, efficiency=DEFAULT_EFFICIENCY,
           memory_efficiency=DEFAULT_MEMORY_EFFICIENCY, gpus=None, generation=None,
           memory_capacity=None, tp_groups=None, profile=None) -> Search:
    """Evaluate every layout of the job's GPUs and rank them (fitting first, by step time).

    Parameters
    ----------
    workload : str or workload
        A preset name, a spec text (:func:`models.studies.workload.parse_workload`) or a workload.
    G : networkx.DiGraph
        The fabric.
    tp, pp, dp : int, optional
        Fix a degree; the others are searched. ``tp x pp x dp`` GPUs are used (all of ``gpus``
        when no degree fixes the count).
    zero : int, optional
        ZeRO stage 0-3 (all searched when omitted).
    micro_batch : int
    global_batch : int, optional
        [samples] (the workload's published batch by default).
    dtype : str, optional
        ``bf16`` where the GPU has it, else ``fp16``.
    recompute : str, optional
        One of :data:`RECOMPUTE` (``none`` and ``full`` searched when omitted).
    sequence_parallel : bool, optional
        Default: on whenever ``tp > 1``.
    overlap : float
        Fraction of a backward (forward) that can hide data-parallel communication, in [0, 1].
    bucket : float
        Gradient bucket. [bytes]
    efficiency, memory_efficiency : float
        Achievable fractions of the peaks (:mod:`models.studies.compute`).
    gpus : GPU ids, optional
        The GPUs the job may use (all by default).
    generation : str, optional
        Force a GPU generation (what-if), instead of the fabric's.
    memory_capacity : float, optional
        Device memory per GPU (what-if) [bytes], instead of the fabric GPUs'.
    tp_groups : sequence of GPU-id tuples, optional
        Force the tensor-parallel groups (all of them, host-major order).
    profile : str or NcclProfile, optional
        The NCCL release whose collectives the plan times (``"2.12"``; default: the reference
        version, :data:`models.engine.nccl.DEFAULT_VERSION`).

    Raises
    ------
    PlanError, models.studies.workload.WorkloadError, models.studies.compute.UnsupportedDtypeError,
    topo.GpuSelectionError, models.engine.nccl.UnknownNcclVersionError
    """
    w = as_workload(workload)
    for name, value in (("tp", tp), ("pp", pp), ("dp", dp), ("micro_batch", micro_batch),
                        ("global_batch", global_batch)):
        _check_int(name, value)
    if zero is not None and (isinstance(zero, bool) or zero not in (0, 1, 2, 3)):
        raise PlanError(f"zero must be a ZeRO stage 0, 1, 2 or 3, received {zero!r}")
    if recompute is not None and recompute not in RECOMPUTE:
        raise PlanError(f"recompute must be one of {', '.join(RECOMPUTE)}, received {recompute!r}")
    ctx = _Context(w, G, gpus, dtype, efficiency, memory_efficiency, overlap, bucket, generation,
                   memory_capacity, profile)
    available = len(ctx.fabric.ids)
    if tp is not None and pp is not None and dp is not None:
        n = tp * pp * dp
    else:
        n = available
    if n > available:
        raise PlanError(f"the layout needs {n} GPUs, the fabric offers {available}")
    if n < available:
        keep = ctx.fabric.ids[:n]
        ctx.fabric = _Fabric(G, keep, ctx.fabric.estimator.fabric.profile)
        if len({len(h) for h in ctx.fabric.hosts}) > 1:
            raise PlanError(f"{n} GPUs do not fill whole hosts of {len(ctx.fabric.hosts[0])}: expected a "
                            "GPU count that fills hosts equally")
    if len({len(h) for h in ctx.fabric.hosts}) > 1:
        raise PlanError("expected the same number of GPUs on every host of the job")
    if global_batch is None:
        global_batch = w.global_batch or 8 * n
    if tp_groups is not None:
        if tp is None:
            raise PlanError("tp_groups needs tp")
        flat = [i for g in tp_groups for i in g]
        if sorted(flat) != sorted(ctx.fabric.ids) or any(len(g) != tp for g in tp_groups):
            raise PlanError(f"tp_groups must partition GPUs {ctx.fabric.ids} into groups of {tp}, "
                            f"received {tp_groups!r}")
    skipped: list = []
    plans = [_evaluate(ctx, layout, tp_groups) for layout in
             _layouts(ctx, n, tp, pp, dp, zero, micro_batch, global_batch, recompute,
                      sequence_parallel, skipped)]
    if not plans:
        raise PlanError(f"no layout of {w.name} on {n} GPUs of {ctx.fabric.name}: " +
                        ("; ".join(skipped[:4]) or "the fixed degrees do not multiply to the GPUs"))
    plans.sort(key=lambda p: (not p.fits, p.step_time, p.memory.total, p.layout.label()))
    return Search(tuple(plans), tuple(skipped))


def plan(workload, G, **options) -> Plan:
    """The best layout of a workload on a fabric (see :func:`search` for the options).

    Degrees given are fixed; the others are searched, and the fastest layout that fits is
    returned (the one that misses memory least when none fits: ``fits`` False, with the
    numbers in ``reason``).
    """
    result = search(workload, G, **options)
    if result.best.fits:
        return result.best
    return min(result.plans, key=lambda p: p.memory.total / p.memory.capacity)


# --------------------------------------------------------------------------- GPU choice
@dataclass(frozen=True, slots=True)
class GpuRank:
    """One GPU generation for a workload.

    Attributes
    ----------
    generation : str
    time_per_sample : float
        Step time of one micro-batch on one GPU (compute and memory roofline) plus the exposed
        8-GPU data-parallel all_reduce at the generation's NVLink bandwidth, per sample. [s]
    compute, memory_bound, communication : float
        The three parts of that time. [s]
    binding : str
        ``"compute"``, ``"memory bandwidth"``, ``"communication"`` or ``"unsupported dtype"``.
    fits : bool
        Whether weights, gradients and optimizer state, sharded over 8 GPUs (ZeRO 3), and the
        micro-batch's activations fit the GPU.
    """

    generation: str
    time_per_sample: float
    compute: float
    memory_bound: float
    communication: float
    binding: str
    fits: bool


#: Per-GPU NVLink bandwidth per direction of each generation's HGX/DGX board (datasheets:
#: P100 160 GB/s, V100 300 GB/s, A100 600 GB/s, H100/H200 900 GB/s, B200 1.8 TB/s, all quoted
#: bidirectional). Used only by :func:`gpus_ranking`, which compares generations without a
#: fabric. [B/s]
NVLINK_PER_GPU = {"P100": 80 * GB, "V100": 150 * GB, "A100": 300 * GB, "H100": 450 * GB,
                  "H200": 450 * GB, "B200": 900 * GB}
__all__.append("NVLINK_PER_GPU")


def gpus_ranking(workload, *, dtype: str = "fp16", micro_batch: int = 1, ngpus: int = 8,
                 efficiency=DEFAULT_EFFICIENCY, memory_efficiency=DEFAULT_MEMORY_EFFICIENCY,
                 overlap=DEFAULT_OVERLAP) -> tuple:
    """Rank GPU generations for a workload, saying which resource binds.

    Each generation runs one micro-batch per GPU, data parallel over ``ngpus`` GPUs of one
    board: forward + backward on the roofline, then the gradient all_reduce at ``2 (n-1)/n``
    times the gradient bytes over :data:`NVLINK_PER_GPU`, overlapped with the backward up to
    ``overlap`` (a board-level scalar model: no fabric of every generation is available).

    Returns
    -------
    tuple of GpuRank
        Fastest first; generations without the dtype last.
    """
    w = as_workload(workload)
    _check_int("micro_batch", micro_batch)
    _check_int("ngpus", ngpus)
    dtype_bytes(dtype)
    elem = dtype_bytes(dtype)
    ranks = []
    for gen in GENERATIONS.values():
        if not gen.supports(dtype):
            ranks.append(GpuRank(gen.name, math.inf, 0.0, 0.0, 0.0, "unsupported dtype", False))
            continue
        times = {"compute": 0.0, "memory": 0.0}
        layers = 1 if isinstance(w, CNN) else w.layers
        for ops, count in ((w.layer_ops(micro_batch, 1, elem), layers), (w.head_ops(micro_batch, 1, elem), 1)):
            for op in ops:
                r = op_roofline(op, gen, dtype, efficiency=efficiency, memory_efficiency=memory_efficiency)
                times[r.bound] += 3 * count * r.time  # forward + backward (2x)
        grad = w.parameters * (4 if dtype == "fp32" else 2)
        comm = 2 * (ngpus - 1) / ngpus * grad / NVLINK_PER_GPU[gen.name] if ngpus > 1 else 0.0
        exposed = max(0.0, comm - overlap * 2 / 3 * (times["compute"] + times["memory"]))
        total = times["compute"] + times["memory"] + exposed
        parts = {"compute": times["compute"], "memory bandwidth": times["memory"], "communication": exposed}
        layout = Layout(1, 1, ngpus, 3, micro_batch, ngpus * micro_batch, "none", False, "tp-dp-pp")
        fits = memory(w, layout, dtype=dtype, capacity=gen.memory).fits
        ranks.append(GpuRank(gen.name, total / micro_batch, times["compute"], times["memory"], exposed,
                             max(parts, key=parts.get), fits))
    ranks.sort(key=lambda r: (not r.fits, r.time_per_sample))
    return tuple(ranks)


# ------------------------------------------------------------------------------ display
def format_plan(p: Plan, verbose: bool = False) -> str:
    """A plan as text: layout, throughput, components, memory (and groups when verbose)."""
    lines = [f"{p.workload} on {p.fabric} ({p.generation}, {p.dtype}): {p.layout.label()}"]
    if not p.fits:
        lines.append(f"  does not fit: {p.reason}")
        return "\n".join(lines)
    lines.append(f"  step {p.step_time * 1e3:.1f} ms; {p.samples_per_s:.2f} samples/s, "
                 f"{p.tokens_per_s:,.0f} tokens/s; {p.tflops_per_gpu:.1f} TFLOP/s per GPU, "
                 f"MFU {p.mfu:.1%}; binding: {p.binding()}")
    for c in p.components:
        lines.append(f"  {c.name:10} {c.time * 1e3:10.2f} ms (exposed {c.exposed * 1e3:9.2f} ms)  {c.detail}")
    lines.append(f"  memory per GPU: {p.memory.describe()}")
    if verbose:
        for dim in ("tp", "pp", "dp"):
            shown = p.groups[dim][:4]
            more = len(p.groups[dim]) - len(shown)
            lines.append(f"  {dim} groups: " + " ".join("(" + ",".join(map(str, g)) + ")" for g in shown)
                         + (f" ... +{more}" if more > 0 else ""))
    return "\n".join(lines)


def format_search(s: Search, top: int = 10) -> str:
    """The ranking as a table."""
    lines = [f"{'layout':44} {'step ms':>9} {'samples/s':>10} {'MFU':>6} {'mem GB':>7}  binding"]
    for p in s.plans[:top]:
        step = f"{p.step_time * 1e3:9.1f}" if p.fits else f"{'OOM':>9}"
        lines.append(f"{p.layout.label():44} {step} {p.samples_per_s:10.2f} {p.mfu:6.1%} "
                     f"{p.memory.total / GB:7.1f}  {p.binding() if p.fits else 'memory capacity'}")
    return "\n".join(lines)


def format_gpus_ranking(ranks) -> str:
    lines = [f"{'GPU':6} {'ms/sample':>10} {'compute':>9} {'memory':>9} {'comm':>9}  fits  binding"]
    for r in ranks:
        t = f"{r.time_per_sample * 1e3:10.3f}" if math.isfinite(r.time_per_sample) else f"{'-':>10}"
        lines.append(f"{r.generation:6} {t} {r.compute * 1e3:9.3f} {r.memory_bound * 1e3:9.3f} "
                     f"{r.communication * 1e3:9.3f}  {'yes' if r.fits else 'no ':4}  {r.binding}")
    return "\n".join(lines)
