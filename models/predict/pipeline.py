"""The time of one collective as NCCL's kernels run it: a pipeline of steps per channel.

NCCL's tuner chooses an (algorithm, protocol) with an alpha-beta table
(:mod:`models.engine.nccl.tuning`); the table's latency is not what the kernels then spend. This
module times what was chosen, per channel, from NCCL's pipeline
(:mod:`models.engine.nccl.pipelining`: ``NCCL_STEPS``, chunk and slice steps, the bytes a step of
each protocol holds) and the launch NCCL makes at that size (:mod:`models.engine.nccl.launch`:
the channels and threads left after ``getAlgoInfo``'s reduction)::

    latency = fill + steps x handshake;  work = data_time + steps x exposed

- ``data_time = nbytes / rate``: the steady-state rate of the (algorithm, protocol).
  ``rate`` is the caller's (the measurement
  model's achieved algorithm bandwidth at every channel of the graph: NCCL's figure x the
  binding link class's achieved ratio x the network's factor); for LL the measurement model puts
  the line's data share, 8 of 16 bytes (``union ncclLLFifoLine``, src/include/device.h), in
  place of the tuner's LL factor (1/4 or 1/3 before v2.21, a choice of the tuner, not a fact of
  the line), the tuner's caps kept. The channels NCCL sheds at small sizes change
  the steps (a channel's chunk), not the rate: on an NVSwitch the hardware spreads a GPU's
  traffic over all its NVLinks, so fewer blocks each move more; the DGX-2 runs at 64 KiB on one
  channel leave ~5 us beside the host term, where one sixth of the rate would take 12 [U: no
  per-block rate is in the sources here]. At large sizes the steps' sync hides behind data in
  flight, and the time is the old bandwidth term.
- ``steps``: a channel's sequence of steps. On a **ring** (all_reduce, all_gather,
  reduce_scatter) ``loops x 2(n-1)`` (all_reduce) or ``loops x (n-1)``, each moving a chunk
  ``min(chunk, ceil(nbytes / (channels x n)))`` (the device code's ``realChunkSize`` shrinks the
  chunk when the data does not fill a loop); on a **chain** (broadcast, reduce) ``ceil(D /
  slice)`` with ``D = ceil(nbytes / channels)``; a **tree** all_reduce is a chain up the tree
  and one down in the tree's own chunks (:func:`tree_chunk`: one step each, 512 KiB Simple
  halved by the tree's depth rule, LL128's line share halved by its ``nstepsLL128`` rule);
  **NVLS** and **NVLSTree** run ``ceil(nbytes / (channels x heads x chunk))`` loops of one step
  (:func:`nvls_chunk`: 128 KiB, shrunk by ``nChannels x nHeads``; all_gather and reduce_scatter
  move a chunk of each rank's block a loop), on ``comm->nvlsChannels`` at every size (no
  reduction); **PAT** ``loops x (n-1)``, a chunk of each other rank's block a step.
- ``handshake``: the flag a step waits for across one hop, read from the graph's edges along
  NCCL's route (:func:`channel_hops`: NVLink, NVSwitch, PCIe inside a host; the network between
  hosts). A ring's step depends on the previous hop's step, so each step waits for a hop: on
  average a hop of the ring, ``nnodes`` of its ``n`` between hosts (the split NCCL's tuner
  counts, ``nInterSteps``), less what data in flight overlaps (Simple: the chunk's other slices,
  ``CHUNKSTEPS/SLICESTEPS - 1``; LL and LL128 carry a flag in every line, so a step's lines wait
  for the previous step's and nothing overlaps). A chain's ranks forward as data arrives: it
  pays its hops once, in the fill.
  **NVLS**: the head's ``multimem.ld_reduce`` (and the flag poll, itself a min-reduce through
  the switch, ``NCCL_NVLS_MIN_POLL``, src/transport/nvls.cc) is a round trip through the
  switch each step, two GPU-to-GPU routes, less one step's data in flight (the scatter warps
  run a step ahead [U]). **PAT**: a network hop a step, shared from v2.26 by the 16 steps that
  run in parallel (release notes of v2.26.2-1), less the step's data in flight.
- ``exposed``: the kernel's work per step (:class:`StepCosts`) beyond what the overlap left
  hidden. A block runs its steps one after another, each its work (wait for a free slot of the
  ``NCCL_STEPS`` ring, the barrier, post the head and tail: src/device/prims_ll128.h
  ``GenericOp``/``waitSend``/``postRecv``/``postSend`` [U] recalled at v2.27.7-1) then the step's
  lines; the slots only let the block run ahead of its peer, they do not run its work beside its
  own lines. So a step takes ``max(work + data / block rate, data / link rate)``: where the block
  binds (its rate is the tuner's per-channel cap, e.g. ``perChMaxRingLL128Bw``, src/graph/
  tuning.cc, as on the DGX-2 the work was fitted on) the work adds to every step; where a link
  binds, the block waits ``data x (1/link - 1/block)`` a step and its work fills that wait first
  (``block_rate``). Across hosts, where a NIC's DMA binds, the block works while the network
  moves the step (hidden up to the step's data time). The work is per step, not per byte: the DGX-2 all_reduce at
  2 MiB (LL128, 22 steps a twentieth of a full step) reads 143.5 us where the table gives 99.4,
  22 steps of 2 us; a per-byte cost large enough for that would be 4x too large at 8 MiB. It is
  the V100's (NCCL 2.5) on every GPU [U]: no source here times a Hopper or Blackwell step;
  scaling it by SM clock (1.53 GHz to about 1.9) would take a fifth off and change no verdict below.
  At 1 GiB every step is full and the work hides or is a few % of a step; at 64 MiB on the 72
  GPUs of an NVL72 rack, all_gather and reduce_scatter run ring LL128 in steps of 58 KB (a tenth
  of a full step) and the work adds about 37 % to the table's time (a ramp cell: below).
- ``fill``: the hops before the last rank of a chain receives, ``n - 1`` of them (``nnodes - 1``
  between hosts); a tree all_reduce's chain up and down, ``2 x (ppn - 1 + log2(nnodes))``; 0 on a
  ring (every rank sends from its first step). Chains forward finer than a posted slice (the
  DGX-2 runs show no store-and-forward fill, :data:`models.predict.measure.FILL_NOTE`), so the
  fill is hops, not slices.
  NVLS: the first step's flag poll (a round trip) and its store to every GPU, 3 routes;
  NVLSTree adds ``2 log2i(nnodes)`` network hops (up the tree between hosts and down); PAT
  ``log2i(n)`` network hops (its binomial trees' depth).

How it enters a measured time (:func:`models.predict.measure.measured`)::

    time = max(host, NCCL's latency, fill + steps x handshake) + data_time + steps x exposed

The hops overlap the host's launches as NCCL's latency did; NCCL's own latency (its per-step
``hwLat``, which NVIDIA measured) stays a floor, the pipeline's hops can only lengthen it; the
kernel's exposed work does not overlap (the ranks run it once all are launched).

CollNet (and an algorithm of the caller's) runs no pipeline here: :func:`pipeline_time`
returns None and the measurement model keeps NCCL's table time for it.

NVLS, NVLSTree and PAT are predicted from NCCL's source and the graph's routes only: the DGX-2
sweep the per-step work was fitted on has no NVLS or PAT run, so nothing of theirs is fitted
(their per-step work is Simple's, 0). [U] Their chunk rules (src/enqueue.cc
``calcCollChunking``, v2.19-v2.27) and the tree's (``computeColl``/``calcCollChunking``; the
depth ``nRanks/nNodes - 1 + log2i(nNodes)`` of src/graph/connect.cc ``connectTrees``) are
recalled, not re-read at the tags; PAT's aggregation of several blocks into one step at small
sizes is not modelled. At the graph's hop latencies (1 us a route through an NVSwitch) the
NVLS pipeline's latency (3 us of fill, its round trips hidden behind a step's data from 1 MiB)
stays below NCCL's own NVLS latency (25 us, ``hwLat[NVLINK][NVLS][Simple]``), which remains
the floor: NVLS's 1-64 MiB figures do not move.

What was fitted, to what
------------------------
Only :data:`DEFAULT_STEP_COSTS`, the kernel's per-step work per protocol, by least squares on
the relative time error of the out-of-place rows 1 KiB - 64 MiB of all_reduce, broadcast and
reduce of the DGX-2 12-GPU sweep (``-g 12``; tests/data/dgx2_12gpu_nccl_tests.json; NCCL 2.5.7
profile, hops over NVSwitch at the graph's latencies), with the launch cost and the transfer
efficiency of :mod:`models.predict.measure` held. ``tests/models/predict/test_pipeline.py``
re-derives them and prints the residuals. Everything else is NCCL's source (the steps, chunks,
lines, the reduction) or the graph (hop latencies, rates).

Residual not modelled: NCCL 2.5's LL128 all_reduce on the DGX-2 runs at about 0.8 of the rate
NCCL's table gives it (12.9 GB/s per channel where broadcast's LL128 reaches 16.4), so 8-16 MiB
all_reduce stays 10-15 % fast; no source here says why a ring's LL128 step is slower than a
chain's [U].

The 72-GPU NVL72 64 MiB cell is a ramp cell, not a large one
-------------------------------------------------------------
Its all_gather / reduce_scatter (ring LL128, 16 channels, NCCL 2.27.7) runs 71 steps of 58255 B:
per step 1.43 us of data, 1.31 us of exposed work, against NCCL's 1.9 us ``hwLat``. A forced ring
LL128 all_gather of 7456640 B on a DGX B200 (8 GPUs, the same 16 x 45 GB/s ring) runs 7 steps of
the same 58255 B with the same 1.43 and 1.31 us (``test_pipeline.py``). Both add ``steps x
exposed`` to NCCL's time, a per-step ratio of 1.31 / (1.9 + 1.43) = +39 %; the 8-GPU cell shows
+25 % (NCCL's 14 us base weighs against 7 steps), the 72-GPU one +37 % (against 71). So no rule
of the per step can bring the 72-GPU cell to NCCL's time without moving the 1-64 MiB LL128
cells of every 8-GPU node as much, and none of NCCL's sources here makes a ring's LL128 step
depend on the rank count. Rules tried on the 256 KiB - 64 MiB LL128 cells at ``-g 1`` (dgxh100,
dgxa100, dgx1v, 2xdgxh100) and that cell (issue 39; not taken):

- ``max(host + work, NCCL's latency + data, the ranks in lockstep)`` (NCCL's ``hwLat`` holds the
  work): 343.1 -> 250.2 us, but the small systems' cells move by up to -36 % (2xdgxh100
  all_gather 1 MiB), -31 % (dgx1v all_reduce 1 MiB), the way the held-out sweeps say the model
  is already too fast;
- the exposed work in the per-step chain, ``max(host, NCCL's latency, fill + steps x (handshake
  + exposed)) + data``: 265.2 us, the same moves of the small systems;
- ``comm->nChannels`` (twice the graph's, ``ncclTopoPostset``; 32 on Blackwell in v2.27) for the
  launch: the step halves and the block's slack doubles, 315 us, and the link-bound 8-GPU cells
  lose most of their exposed work.

The DGX-2 calibration sweep, for the record (``dgxtopo check``, all_reduce ``-g 12``): 2.5.7
|time error| median / max 2.0 / 6.4 % below 1 MiB, 5.2 / 13.2 % at 1-64 MiB, 1.7 / 8.3 % from
64 MiB; 2.27.7 2.2 / 10.7, 14.9 / 26.8, 1.2 / 3.5 %. Its 32-128 MiB rows (Simple) read the host's
59.8 us plus the data (565.7 us measured at 32 MiB, 562.5 so computed), not NCCL 2.5.7's ring
Simple latency (8.4 + 22 x 5.7 = 133.8 us) that the model keeps as a floor (+12.5 %, +8.3 %,
+4.7 %). Taking off NCCL's per-step latency where a step's other slice in flight hides it would
bring them to -0.6, +1.3 and +1.1 % (both releases), but moves a lone 64 MiB Simple ring at
``-g 1`` by -2.5 % (DGX-1) to -21 % (DGX B200), and a 1 GiB one by -14 % on an NVL72 rack and
-25 % on two, past the 1 % a large message may move; not taken. Its 4-16 MiB LL128 rows rise at 42.1 GB/s (0.79
of the 52.97 modelled, NCCL 2.5.7's ``ll128MaxBw`` all_reduce cap, 100 GB/s bus): the residual
above.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import networkx as nx

from topo.errors import DgxTopoError

from ..engine.nccl.launch import Launch, reduced_launch
from ..engine.nccl.pipelining import LL_DATA_BYTES, LL_LINE_BYTES, PIPELINE_COLLECTIVES, Pipelining, pipelining
from ..engine.nccl.profiles import NcclProfile, nccl_profile
from ..engine.results import tidy_records
from ..engine.routes import Router, route

__all__ = ["PipelineError", "StepCosts", "DEFAULT_STEP_COSTS", "Hop", "Hops", "channel_hops", "Shape",
           "ShapeInputs", "RING", "CHAIN", "TREE", "NVLS", "NVLS_TREE", "PAT", "PIPELINE_ALGORITHMS", "shape_of",
           "tree_chunk", "nvls_chunk", "NVLS_CHUNK", "PipelineTime", "pipeline_time", "ll_share"]

_US = 1e-6


class PipelineError(DgxTopoError):
    """A pipeline request that cannot be answered (bad size, rate or count)."""


@dataclass(frozen=True, slots=True)
class StepCosts:
    """The kernel's work per step, per protocol (the fitted part of the pipeline). [s]

    Attributes
    ----------
    work : mapping of str to float
        Per protocol, what a block spends per step beyond moving its data (waiting on and posting
        flags, its barrier, its loop). [s]
    fitted_to : str
    """

    work: Any
    fitted_to: str

    def of(self, protocol: str) -> float:
        """The per-step work of a protocol. [s]"""
        return float(self.work[protocol])

    def to_records(self) -> list:
        """One row per protocol: its per-step work and what it was fitted to."""
        return tidy_records({"protocol": list(self.work), "work_s": [float(v) for v in self.work.values()],
                             "fitted_to": self.fitted_to})


_FITTED_TO = ("least squares on the relative time error of the out-of-place rows 1 KiB - 64 MiB of "
              "all_reduce, broadcast and reduce, nccl-tests -g 12 on 12 GPUs of a DGX-2 (wohlbier/"
              "nccl-tests README \"Results on dgx-2\", 2020; tests/data/dgx2_12gpu_nccl_tests.json), "
              "NCCL 2.5.7 profile, launch_per_gpu and transfer_efficiency held")
#: Fitted (module docstring): LL128's block spends 1.93 us a step; LL's fit is 0 (0.0008 us);
#: Simple's is not identifiable (its other slice hides it at every size fitted) and is set to 0.
DEFAULT_STEP_COSTS = StepCosts(MappingProxyType({"LL": 0.0, "LL128": 1.93 * _US, "Simple": 0.0}),
                               _FITTED_TO)


def ll_share() -> float:
    """Data bytes per byte of an LL line, ``8 / 16`` (src/include/device.h ``ncclLLFifoLine``)."""
    return LL_DATA_BYTES / LL_LINE_BYTES


@dataclass(frozen=True, slots=True)
class Hop:
    """The slowest hop of a channel: its latency and link class.

    Attributes
    ----------
    src, dst : node ids
    latency : float
        Sum of the edges' ``latency`` along NCCL's route (:func:`models.engine.routes.route`). [s]
    link : str
        ``"nvlink"``, ``"nvswitch"``, ``"pcie"`` or ``"network"``: what the hop crosses.
    """

    src: object
    dst: object
    latency: float
    link: str

    def to_records(self) -> list:
        """One row: the hop's ends, latency and link class."""
        return tidy_records({"src": str(self.src), "dst": str(self.dst), "latency_s": self.latency,
                             "link": self.link})


def _hop(G, src, dst, router) -> Hop:
    r = router.route(src, dst) if router is not None else route(G, src, dst)
    kinds = {G.nodes[v].get("kind") for _, v in r.edges}
    edge_kinds = {G.edges[u, v].get("kind") for u, v in r.edges}
    link = "network" if "network" in edge_kinds else "nvswitch" if "nvswitch" in kinds else \
        "nvlink" if edge_kinds <= {"nvlink"} else "pcie"
    return Hop(src, dst, float(r.latency), link)


@dataclass(frozen=True, slots=True)
class Hops:
    """The hops of a channel: one inside a host and one between hosts (NCCL's channels are alike
    hop for hop, so one of each stands for all [U]).

    Attributes
    ----------
    intra : Hop or None
        A hop between consecutive GPUs of a host (None with one GPU per host).
    inter : Hop or None
        The hop from a host's last GPU to the next host's first (None on one host).
    nnodes : int
        Hosts the channel crosses.
    """

    intra: Hop | None
    inter: Hop | None
    nnodes: int = 1

    def to_records(self) -> list:
        """One row per hop: which (``intra``/``inter``) and the hop's fields."""
        return [{"hop": name, **h.to_records()[0]} for name, h in (("intra", self.intra), ("inter", self.inter))
                if h is not None]

    def path(self, intra: int, inter: int) -> float:
        """Latency of a path of ``intra`` hops inside hosts and ``inter`` between them. [s]"""
        a = 0.0 if self.intra is None else self.intra.latency
        b = a if self.inter is None else self.inter.latency
        return intra * a + inter * b

    @property
    def slowest(self) -> Hop | None:
        """The slower of the two."""
        hops = [h for h in (self.intra, self.inter) if h is not None]
        return max(hops, key=lambda h: h.latency) if hops else None


def channel_hops(G: nx.DiGraph, order: tuple, nodes: tuple = (), *, router: Router | None = None,
                 node_of: Mapping | None = None) -> Hops:
    """A channel's hops: between the first two GPUs of its order (one NCCL node's, as NCCL's
    search gives it) and, when ``nodes`` (the communicator's GPUs) span NCCL nodes, from the
    order's last GPU to the first GPU of another NCCL node, over NCCL's route
    (:func:`models.engine.routes.route`; ``router``, a prepared fabric's, routes without
    validating ``G`` again). ``node_of`` maps a GPU to its NCCL node (default its host; an MNNVL
    domain of several hosts is one node, src/graph/topo.cc, so the hop between its hosts is an
    NVLink route, not the network's)."""
    node = {n: (node_of[n] if node_of is not None else G.nodes[n].get("host")) for n in (*order, *nodes)}
    intra = _hop(G, order[0], order[1], router) if len(order) >= 2 else None
    other = next((n for n in nodes if order and node[n] != node[order[-1]]), None)
    inter = _hop(G, order[-1], other, router) if other is not None else None
    nnodes = len({node[n] for n in nodes}) if nodes else 1
    return Hops(intra, inter, max(1, nnodes))


@dataclass(frozen=True, slots=True)
class ShapeInputs:
    """What a shape reads to cut one collective into steps.

    Attributes
    ----------
    pipe : Pipelining
        The release's pipeline of the collective and protocol.
    nbytes : int
        NCCL's ``nBytes`` (the total for all_gather / reduce_scatter). [bytes]
    nchannels : int
        Channels launched.
    nranks, nnodes : int
        Ranks, and NCCL nodes they span.
    heads : int
        NVLS heads (the NVLS graph's channels), 0 for other algorithms.
    release : tuple of int
        The release's first version (``NcclProfile.first``).
    """

    pipe: Pipelining
    nbytes: int
    nchannels: int
    nranks: int
    nnodes: int = 1
    heads: int = 0
    release: tuple = (2, 27, 7)

    def to_records(self) -> list:
        """One row: the collective, protocol, size, channels, ranks, nodes, heads and release."""
        return tidy_records({"collective": self.pipe.collective, "protocol": self.pipe.protocol,
                             "nbytes": self.nbytes, "nchannels": self.nchannels, "nranks": self.nranks,
                             "nnodes": self.nnodes, "heads": self.heads,
                             "release": ".".join(str(v) for v in self.release)})


@dataclass(frozen=True)
class Shape:
    """How a channel's steps depend on each other: a strategy object (:data:`RING`,
    :data:`CHAIN`, :data:`TREE`, :data:`NVLS`, :data:`NVLS_TREE`, :data:`PAT`).

    Attributes
    ----------
    name : str
    """

    name: str

    def to_records(self) -> list:
        """One row: the shape's name."""
        return tidy_records({"shape": self.name})

    def steps(self, x: ShapeInputs) -> tuple:
        """``(steps, step_bytes)`` of one channel."""
        raise NotImplementedError

    def overlap_steps(self, x: ShapeInputs) -> int:
        """Steps of data in flight that hide one step's sync."""
        raise NotImplementedError

    def step_latency(self, hops: Hops, x: ShapeInputs) -> float:
        """The hop latency each step waits for (a ring's lockstep), 0 where only the fill pays. [s]"""
        raise NotImplementedError

    def parallel_steps(self, x: ShapeInputs) -> int:
        """Steps a channel runs at once, each waiting its own :meth:`step_latency` (the latency
        is shared by them: ``step_latency / parallel``). 1 but for PAT from v2.26."""
        return 1

    def fill(self, hops: Hops, x: ShapeInputs) -> float:
        """Latency before the last rank's first step. [s]"""
        raise NotImplementedError


class _Ring(Shape):
    def steps(self, x):
        pipe = x.pipe
        per_loop = x.nchannels * x.nranks
        loops = max(1, math.ceil(x.nbytes / (per_loop * pipe.chunk_bytes)))
        chunk = min(pipe.chunk_bytes, math.ceil(x.nbytes / per_loop))
        return loops * pipe.ring_steps(x.nranks), chunk

    def overlap_steps(self, x):
        return x.pipe.slices_per_chunk - 1 if x.pipe.protocol == "Simple" else 0

    def step_latency(self, hops, x):
        # a step's dependency walks round the ring: on average a hop of the ring's n, nnodes of
        # them between hosts (NCCL's tuner counts the same split: nInterSteps)
        n = x.nranks
        return hops.path(n - hops.nnodes, hops.nnodes) / n if hops.nnodes > 1 else hops.path(1, 0)

    def fill(self, hops, x):
        return 0.0


class _Chain(Shape):
    def steps(self, x):
        per_channel = math.ceil(x.nbytes / x.nchannels)
        slice_ = max(1, min(x.pipe.slice_bytes, per_channel))
        return max(1, math.ceil(per_channel / slice_)), slice_

    def overlap_steps(self, x):
        pipe = x.pipe
        return pipe.steps_in_flight // pipe.slice_steps - 1 if pipe.protocol == "Simple" else 0

    def step_latency(self, hops, x):
        return 0.0

    def fill(self, hops, x):
        return hops.path(x.nranks - hops.nnodes, hops.nnodes - 1)


def tree_chunk(x: ShapeInputs) -> int:
    """A tree all_reduce's chunk (one step each: a tree runs ``chunkSteps = sliceSteps = 1``),
    shrunk at small sizes by NCCL's rule (src/enqueue.cc ``computeColl`` v2.5-v2.18,
    ``calcCollChunking`` v2.19+ [U] recalled, not re-read at the tag)::

        Simple: chunk = stepSize (512 KiB); depth = nRanks/nNodes - 1 + log2i(nNodes)
                (src/graph/connect.cc connectTrees, "not an exact value but a good approximation")
          while nBytes / (nChannels x chunk) < depth x 8 and chunk > 128 KiB: chunk /= 2
          while nBytes / (nChannels x chunk) < depth x 4 and chunk > 64 KiB:  chunk /= 2
          while nBytes / (nChannels x chunk) < depth     and chunk > 32 KiB:  chunk /= 2
        LL128:  chunk = the step's data (576000 B); nsteps = 1 + log2i(nNodes) + 0.1 ppn
          while nBytes / (nChannels x chunk) < nsteps x 64 / ppn and chunk > 128 KiB: chunk /= 2
          while nBytes / (nChannels x chunk) < nsteps x 16 / ppn and chunk > 32 KiB:  chunk /= 2
        LL:     chunk = the step's data (32 KiB)
    [bytes]"""
    chunk, nodes = x.pipe.step_bytes, max(1, x.nnodes)
    ppn = x.nranks / nodes
    per = x.nbytes / x.nchannels  # NCCL divides integers; the comparisons are the same

    def shrink(limit, floor):
        nonlocal chunk
        while per / chunk < limit and chunk > floor:
            chunk //= 2

    if x.pipe.protocol == "Simple":
        depth = x.nranks // nodes - 1 + _log2i(nodes)
        shrink(depth * 8, 131072)
        shrink(depth * 4, 65536)
        shrink(depth, 32768)
    elif x.pipe.protocol == "LL128":
        nsteps = 1 + _log2i(nodes) + 0.1 * ppn
        shrink(nsteps * 64 / ppn, 131072)
        shrink(nsteps * 16 / ppn, 32768)
    return int(chunk)


def _log2i(n: int) -> int:
    return int(n).bit_length() - 1 if n >= 1 else -1


class _Tree(_Chain):
    def steps(self, x):
        per_channel = math.ceil(x.nbytes / x.nchannels)
        chunk = max(1, min(tree_chunk(x), per_channel))
        return max(1, math.ceil(per_channel / chunk)), chunk

    def overlap_steps(self, x):
        # the buffer's other steps (a chunk is one step)
        return x.pipe.steps_in_flight - 1 if x.pipe.protocol == "Simple" else 0

    def fill(self, hops, x):
        # up the tree and down: the host's chain of ppn - 1 hops, log2(nnodes) between hosts
        inter = _log2i(hops.nnodes) if hops.nnodes > 1 else 0
        return 2 * hops.path(x.nranks // hops.nnodes - 1, inter)


#: ``NCCL_NVLS_CHUNKSIZE`` default 128 KiB (src/init.cc; ``comm->nvlsChunkSize``) [U: recalled].
NVLS_CHUNK = 128 * 1024


def nvls_chunk(x: ShapeInputs, tree: bool) -> int:
    """NVLS's and NVLSTree's chunk (one step each), after NCCL's shrink at small sizes, with
    ``ops = nChannels x nHeads`` (src/enqueue.cc ``calcCollChunking`` v2.19-v2.27 [U] recalled,
    not re-read at the tag)::

        NVLS:      chunk = nvlsChunkSize (128 KiB)
          nBytes < 64 ops chunk and chunk > 64 KiB: 64 KiB;  nBytes < 8 ops chunk and > 32 KiB: 32 KiB
          nBytes < 2 ops chunk and chunk > 16 KiB: 16 KiB
        NVLSTree:  chunk = nvlsChunkSize, at most 64 KiB on 4 nodes or more (NCCL_NVLSTREE_MAX_CHUNKSIZE)
          nBytes < 4 ops chunk and chunk > 64 KiB: 64 KiB;  nBytes < ops chunk and > 32 KiB: 32 KiB
    [bytes]"""
    chunk = NVLS_CHUNK
    ops = x.nchannels * max(1, x.heads)
    rules = ((4, 65536), (1, 32768)) if tree else ((64, 65536), (8, 32768), (2, 16384))
    if tree and x.nnodes >= 4:
        chunk = min(chunk, 65536)
    for times, size in rules:
        if x.nbytes < times * ops * chunk and chunk > size:
            chunk = size
    return chunk


class _Nvls(Shape):
    """One node: each loop a channel scatters ``heads`` chunks into the NVLS buffers, its head
    reduces one through the switch (``multimem.ld_reduce``) and stores it to every GPU
    (``multimem.st``), and every rank gathers them: three warp groups, one step each per loop,
    pipelined through ``NCCL_STEPS`` buffer slots (src/device/all_reduce.h ``RunWorkColl<...,
    NCCL_ALGO_NVLS, ...>``; all_gather.h / reduce_scatter.h: the store or the reduce alone,
    each rank's block)."""

    def width(self, x):
        # chunks a channel moves per loop: one per head (all_reduce) or per rank's block
        return max(1, x.heads) if x.pipe.collective == "all_reduce" else x.nranks

    def chunk(self, x):
        return nvls_chunk(x, tree=False)

    def steps(self, x):
        chunk = self.chunk(x)
        per_loop = x.nchannels * self.width(x)
        loops = max(1, math.ceil(x.nbytes / (per_loop * chunk)))
        return loops, min(chunk, max(1, math.ceil(x.nbytes / per_loop)))

    def overlap_steps(self, x):
        # the scatter (store) warps run a step ahead of the reducer [U]
        return 1

    def step_latency(self, hops, x):
        # the reducer's ld_reduce (or the flag poll, itself a multimem min-reduce: NCCL_NVLS_MIN_POLL,
        # src/transport/nvls.cc) is a round trip through the switch each step
        return 2 * hops.path(1, 0)

    def fill(self, hops, x):
        # the first step's flag poll (a round trip) and its store to every GPU (one way)
        return 3 * hops.path(1, 0)


class _NvlsTree(_Nvls):
    """NVLS inside each node, a tree between the nodes' heads (src/device/all_reduce.h
    ``NCCL_ALGO_NVLS_TREE``): the network's steps forward as they arrive (a chain: its hops in
    the fill, up the tree and down)."""

    def chunk(self, x):
        return nvls_chunk(x, tree=True)

    def fill(self, hops, x):
        # NCCL's nodes (an MNNVL domain of several hosts is one)
        up_down = 2 * _log2i(x.nnodes) if x.nnodes > 1 else 0
        return 3 * hops.path(1, 0) + hops.path(0, up_down)


class _Pat(Shape):
    """PAT (one GPU per node, all_gather / reduce_scatter, Simple): each rank's block reaches the
    others along binomial trees (peers ``rank +- 2^k``), ``n - 1`` blocks a rank per loop, in
    chunks of ``stepSize`` halved while ``chunk x nChannels x 32`` (all_gather; 16 for
    reduce_scatter) exceeds ``nBytes`` and the chunk exceeds 64 KiB (src/enqueue.cc v2.23+,
    B.2 of the reference). Up to v2.25 a step waits for the previous one; from v2.26 16 steps
    run in parallel (its release notes; ``NCCL_SHMEM_PAT_STEPS`` 32) and hide each other's
    hops. [U] PAT aggregates blocks into one step at small sizes; not modelled (each block a step)."""

    def chunk(self, x):
        chunk = x.pipe.step_bytes
        factor = 32 if x.pipe.collective == "all_gather" else 16
        while chunk * x.nchannels * factor > x.nbytes and chunk > 65536:
            chunk //= 2
        return chunk

    def steps(self, x):
        chunk = self.chunk(x)
        per_loop = x.nchannels * x.nranks
        loops = max(1, math.ceil(x.nbytes / (per_loop * chunk)))
        return loops * (x.nranks - 1), min(chunk, max(1, math.ceil(x.nbytes / per_loop)))

    def overlap_steps(self, x):
        # a step's own data in flight beside its wait, as a ring's other slice [U]
        return 1

    def parallel_steps(self, x):
        # v2.26+: up to 16 steps in parallel (its release notes; the steps computed and run by
        # separate warps)
        return 16 if x.release >= (2, 26, 0) else 1

    def step_latency(self, hops, x):
        return hops.path(0, 1)

    def fill(self, hops, x):
        return hops.path(0, _log2i(max(1, x.nranks)))


#: A ring's lockstep: each step needs the previous hop's step.
RING = _Ring("ring")
#: A chain (broadcast, reduce on NCCL's ring): each rank forwards as data arrives.
CHAIN = _Chain("chain")
#: A tree all_reduce: a chain up the tree and one down, in the tree's own chunks.
TREE = _Tree("tree")
#: NVLS on one node: scatter, reduce and store through the switch, gather.
NVLS = _Nvls("nvls")
#: NVLSTree: NVLS in each node, a tree between nodes.
NVLS_TREE = _NvlsTree("nvls_tree")
#: PAT: binomial trees, one GPU per node.
PAT = _Pat("pat")


@dataclass(frozen=True, slots=True)
class PipelineTime:
    """The pipeline of one collective at one size, and its time.

    Attributes
    ----------
    collective, algorithm, protocol : str
    nbytes : int
        [bytes]
    nranks : int
    shape : str
        ``"ring"``, ``"chain"``, ``"tree"``, ``"nvls"``, ``"nvls_tree"`` or ``"pat"``.
    launch : models.engine.nccl.launch.Launch
        Channels and threads launched after NCCL's reduction.
    pipelining : models.engine.nccl.pipelining.Pipelining
    steps : int
        Steps of one channel.
    step_bytes : int
        Data of one step (the chunk on a ring, NVLS, PAT and a tree, the slice on a chain). [bytes]
    rate : float
        Algorithm bandwidth the steps move data at. [B/s]
    hops : Hops or None
        A channel's hops (None: no hop latency).
    work : float
        The kernel's per-step work (:class:`StepCosts`). [s]
    overlap : float
        Data time of the steps in flight that hide a step's sync. [s]
    handshake : float
        The hop's flag handshake each step waits for beyond the overlap (a ring's lockstep;
        a chain pays hops in its fill): ``max(0, step latency - overlap)``. [s]
    exposed : float
        The kernel's work each step adds beyond what the overlap left hidden. [s]
    fill : float
        The hops' latency before the last rank's first step. [s]
    data_time : float
        ``nbytes / rate``. [s]
    time : float
        ``latency + data_time + steps x exposed``. [s]
    heads : int
        NVLS heads a channel's loop serves (NVLS and NVLSTree; 0 otherwise).
    """

    collective: str
    algorithm: str
    protocol: str
    nbytes: int
    nranks: int
    shape: str
    launch: Launch
    pipelining: Pipelining
    steps: int
    step_bytes: int
    rate: float
    hops: Hops | None
    work: float
    overlap: float
    handshake: float
    exposed: float
    fill: float
    data_time: float
    time: float
    heads: int = 0

    @property
    def latency(self) -> float:
        """The pipeline's latency, ``fill + steps x handshake``: the hops the GPUs wait for (it
        overlaps the host's launches, as NCCL's latency did: :func:`models.predict.measure.measured`). [s]"""
        return self.fill + self.steps * self.handshake

    @property
    def work_time(self) -> float:
        """``data_time + steps x exposed``: moving the data and the kernel's exposed work. [s]"""
        return self.data_time + self.steps * self.exposed

    @property
    def slowest(self) -> Hop | None:
        """The slowest hop of a channel."""
        return None if self.hops is None else self.hops.slowest

    def to_records(self) -> list:
        """One row: the choice, the launch, the steps and every term of the time."""
        return tidy_records({
            "collective": self.collective, "algorithm": self.algorithm, "protocol": self.protocol,
            "nbytes": self.nbytes, "nranks": self.nranks, "shape": self.shape,
            "nchannels": self.launch.nchannels, "graph_channels": self.launch.graph_channels,
            "nthreads": self.launch.nthreads, "steps": self.steps, "step_bytes": self.step_bytes,
            "rate_Bps": self.rate, "hop_latency_s": 0.0 if self.slowest is None else self.slowest.latency,
            "hop_link": "" if self.slowest is None else self.slowest.link, "work_s": self.work,
            "overlap_s": self.overlap, "handshake_s": self.handshake, "exposed_s": self.exposed, "fill_s": self.fill,
            "data_time_s": self.data_time, "time_s": self.time, "heads": self.heads})


#: The shape of each (algorithm, collective) NCCL runs as a pipeline here.
_SHAPES = MappingProxyType({
    **{("ring", c): RING for c in ("all_reduce", "all_gather", "reduce_scatter")},
    **{("ring", c): CHAIN for c in ("broadcast", "reduce")},
    ("tree", "all_reduce"): TREE,
    **{("nvls", c): NVLS for c in ("all_reduce", "all_gather", "reduce_scatter")},
    ("nvls_tree", "all_reduce"): NVLS_TREE,
    **{("pat", c): PAT for c in ("all_gather", "reduce_scatter")},
})
#: Algorithms :func:`pipeline_time` times (NCCL's names; CollNet and a caller's own are not).
PIPELINE_ALGORITHMS = tuple(sorted({a for a, _ in _SHAPES}))


def shape_of(collective: str, algorithm: str) -> Shape | None:
    """The shape NCCL runs ``collective`` with ``algorithm`` in, None where none is modelled."""
    return _SHAPES.get((algorithm, collective))


def pipeline_time(collective: str, algorithm: str, protocol: str, nbytes: int, *, nranks: int,
                  graph_channels: int, rate: float, hops: Hops | None, profile: str | NcclProfile | None,
                  ring_bandwidth: float = float("inf"), dma_bound: bool = False,
                  costs: StepCosts = DEFAULT_STEP_COSTS, nnodes: int | None = None,
                  heads: int = 0, block_rate: float | None = None) -> PipelineTime | None:
    """Time one collective's pipeline at one size (module docstring).

    Parameters
    ----------
    collective : str
    algorithm : str
        NCCL's algorithm name (:data:`PIPELINE_ALGORITHMS`; others return None).
    protocol : str
    nbytes : int
        NCCL's ``nBytes``. [bytes]
    nranks : int
    graph_channels : int
        ``comm->nChannels`` the tuner priced.
    rate : float
        Achieved algorithm bandwidth with every graph channel. [B/s]
    hops : Hops or None
        A channel's hops (:func:`channel_hops`; None: no hop latency).
    profile : str or NcclProfile or None
        The release.
    ring_bandwidth : float
        ``ring.bwIntra x ring.nChannels`` (:func:`models.engine.nccl.launch.max_threads`). [B/s]
    dma_bound : bool
        A NIC's DMA binds the rate (across hosts): the block's per-step work runs while the
        network moves the step's data, hidden up to a step's data time.
    costs : StepCosts
    nnodes : int, optional
        NCCL nodes (default: the hosts ``hops`` counts; an MNNVL domain is one node).
    heads : int
        NVLS heads (the NVLS graph's channels); NVLS and NVLSTree only.
    block_rate : float, optional
        What the launched blocks could move were no link to bind: the tuner's per-channel cap of
        the (algorithm, protocol) at the same achieved ratio (None: ``rate``, the blocks bind). [B/s]

    Returns
    -------
    PipelineTime or None
        None for an (algorithm, collective) with no modelled pipeline (:func:`shape_of`), and
        for one rank.

    Raises
    ------
    PipelineError
        For a size below 0, a rate that is not positive, or a channel count below 1.
    """
    if not isinstance(nbytes, int | float) or nbytes < 0 or nbytes != int(nbytes):
        raise PipelineError(f"nbytes must be an integer >= 0, received {nbytes!r}")
    if not rate > 0:
        raise PipelineError(f"rate must be > 0 B/s, received {rate!r}")
    if not isinstance(graph_channels, int) or graph_channels < 1:
        raise PipelineError(f"graph_channels must be an integer >= 1, received {graph_channels!r}")
    shape = shape_of(collective, algorithm)
    if shape is None or collective not in PIPELINE_COLLECTIVES or nranks < 2:
        return None
    nbytes = int(nbytes)
    release = nccl_profile(profile)
    pipe = pipelining(release, collective, protocol)
    launch = reduced_launch(nbytes, graph_channels, algorithm, protocol, nranks, ring_bandwidth=ring_bandwidth)
    hops = hops or Hops(None, None)
    x = ShapeInputs(pipe, max(nbytes, 1), launch.nchannels, nranks, hops.nnodes if nnodes is None else nnodes,
                    heads, release.first)
    steps, step_bytes = shape.steps(x)
    used = rate  # the channels launched share what the graph's would (module docstring)
    data_time = nbytes / used
    per_step = data_time / steps
    work = costs.of(protocol)
    overlap = shape.overlap_steps(x) * per_step
    handshake = max(0.0, shape.step_latency(hops, x) / shape.parallel_steps(x) - overlap)
    hidden = per_step if dma_bound else max(0.0, overlap - handshake)
    # where a link, not the block, binds, the block waits on it part of every step: its work
    # fills that wait first (module docstring, ``exposed``)
    block = rate if block_rate is None else max(rate, float(block_rate))
    slack = per_step * (1.0 - rate / block)
    exposed = max(0.0, work - max(hidden, slack))
    fill = shape.fill(hops, x)
    return PipelineTime(collective, algorithm, protocol, nbytes, nranks, shape.name, launch, pipe, int(steps),
                        int(step_bytes), used, hops, work, overlap, handshake, exposed, fill, data_time,
                        fill + steps * handshake + data_time + steps * exposed, int(heads))
