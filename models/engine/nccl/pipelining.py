"""Each NCCL release's pipeline: how a collective is cut into chunks, slices and steps.

NCCL moves a collective through a connection buffer of ``NCCL_STEPS`` slots (*steps*). A channel
handles the data in *chunks* of ``CHUNKSTEPS`` steps and hands them to the next rank in *slices*
of ``SLICESTEPS`` steps: a slice is written into the peer's buffer, then posted, and only a
posted slice can be read (and forwarded) by the peer. How many bytes a step holds depends on the
protocol (the Simple buffer, ``NCCL_BUFFSIZE``, over ``NCCL_STEPS``; LL and LL128 lines carry
flags beside the data) and on the release. :func:`pipelining` gives the numbers of one (release,
collective, protocol) as a :class:`Pipelining`, which also decomposes a collective of ``nbytes``
on ``nchannels`` channels and ``nranks`` ranks into its loops, chunks and slice steps (what a
step-level simulator replays).

Two patterns (src/collectives/device/*.h at each tag):

``ring``
    all_reduce, all_gather, reduce_scatter: every rank sends a chunk at every step, so each link
    is busy from the first step to the last; a loop moves ``nranks`` chunks per channel in
    ``2 (nranks - 1)`` (all_reduce) or ``nranks - 1`` steps.
``chain``
    broadcast and reduce: data flows from (to) the root through ``nranks - 1`` hops, each rank
    forwarding a slice once it was posted to it, so the last rank starts ``nranks - 2`` slices
    after the second: the pipeline fill (:meth:`Pipelining.fill_slices`).

Per release (:data:`RELEASES`, one :class:`PipelineConstants` per profile of
:mod:`models.engine.nccl.profiles`):

- v2.4+ (src/include/collectives.h; src/collectives/collectives.h in v2.4): ``NCCL_STEPS`` 8;
  all_reduce, all_gather and reduce_scatter ``CHUNKSTEPS = NCCL_STEPS/2``, ``SLICESTEPS =
  NCCL_STEPS/4``; broadcast and reduce 1 and 1; ``NCCL_BUFFSIZE`` 4 MiB (src/init.cc); LL
  ``NCCL_LL_LINES_PER_THREAD`` 8 lines of 16 B (8 B of data) per thread, ``NCCL_LL_MAX_NTHREADS``
  256 in v2.4 and 512 from v2.5; LL128 (v2.5+) ``NCCL_LL128_ELEMS_PER_THREAD`` 120 8-byte words per
  thread x ``NCCL_LL128_MAX_NTHREADS`` 640, lines of 128 B carrying 120 B of data. LL and LL128
  run one step per chunk (src/enqueue.cc: chunk and slice steps apply to Ring Simple only).
- v2.3 (src/collectives/device/all_reduce.h, broadcast.h, ... at v2.3.7-1; src/init.cu): no
  ``NCCL_STEPS``; the 4 MiB buffer holds ``BUFCHUNKS`` 2 chunks, each posted in ``SUBSTEPS``
  parts: 2 for all_reduce, all_gather, reduce_scatter and 8 for broadcast and reduce. Here a
  step is one sub-step (the unit posted), a chunk ``SUBSTEPS`` steps, a slice one step, and
  ``BUFCHUNKS x SUBSTEPS`` steps fit in the buffer. LL: ``NUM_LINES_PER_THREAD`` x 256 threads x 8
  x 16 B, 8 lines in v2.3.7, 2 in v2.3.5.

[U] Only the tags the profiles name were meant; the constants above were not re-read at every one
of them (see :attr:`PipelineConstants.uncertain`).

What the releases change, against the reference (v2.27.7-1)
------------------------------------------------------------
The measurement model was fitted to runs of a 2.5-era release (:mod:`models.predict.measure`),
so a release's pipeline could only matter through its *difference* from v2.5.7's, which every
later profile shares. From the constants above:

- v2.4 and later: the Simple buffer, ``NCCL_STEPS``, the chunk and slice steps are v2.5.7's; only
  v2.4's LL runs 256 threads, not 512, and LL forwards line by line (no slice to fill). No
  difference at any size, for any collective or protocol.
- v2.3, ring collectives (all_reduce, all_gather, reduce_scatter): a chunk of ``SUBSTEPS`` 2
  sub-steps of 1 MiB is 2 MiB, posted 1 MiB at a time, exactly v2.5's ``CHUNKSTEPS`` 4 and
  ``SLICESTEPS`` 2 steps of 512 KiB; and a ring has no fill in either. No difference.
- v2.3, chains (broadcast, reduce): the posted unit is a 256 KiB sub-step, v2.5's a 512 KiB
  slice. The store-and-forward fill (:meth:`Pipelining.fill_bytes`) is smaller in v2.3, never
  larger: a chain of v2.3 fills *faster*.

No pipeline term is added to predicted times (:data:`models.predict.measure.FILL_NOTE`): the
2.5-era runs show at most a fifth of the reference's store-and-forward fill, so the fitted
constants do not hold it, and the difference for a v2.3 chain, subtracted from a time that never
held the reference's fill, can exceed the transfer time itself (a broadcast of 4 MiB on 8 P100s:
-199 us against a transfer of 66 us). What v2.3 does differ in is not a size of its pipeline:
each loop runs all ``SUBSTEPS`` flag handshakes of the fixed half-buffer, empty ones included,
where v2.5 runs one per slice of the chunk [U] (v2.3.7-1 src/collectives/device/primitives.h,
``GenericOp``; not re-read at the tag); what one handshake costs is a hardware latency no
source here gives.

Examples
--------
>>> from models.engine.nccl.pipelining import pipelining
>>> p = pipelining("2.27.7", "broadcast", "Simple")
>>> p.step_bytes, p.chunk_steps, p.slice_steps, p.steps_in_flight
(524288, 1, 1, 8)
>>> p.chain_slice_steps(64 * 2**20, nchannels=8, nranks=8)    # 16 slices per channel + 6 to fill
22
>>> pipelining("2.3.7", "broadcast", "Simple").slice_bytes
262144
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from topo.errors import DgxTopoError
from topo.units import is_int, parse_nbytes

from ..nccltests import COLLECTIVES, NCCL_COLLECTIVES
from ..results import tidy_records
from .profiles import PROFILES, NcclProfile, nccl_profile

__all__ = ["PipelineConstants", "Pipelining", "RELEASES", "PIPELINE_COLLECTIVES", "PATTERNS",
           "PipeliningError", "pipelining", "LL_LINE_BYTES", "LL_DATA_BYTES", "LL128_LINE_BYTES",
           "LL128_DATA_BYTES"]

#: Collectives with a pipeline, in NCCL's function order (src/include/device.h): those of
#: :data:`models.engine.nccltests.COLLECTIVES` with a ``pipeline`` pattern.
PIPELINE_COLLECTIVES = tuple(name for name in NCCL_COLLECTIVES if COLLECTIVES[name].pipeline)
#: The pattern of each collective (module docstring; :attr:`Collective.pipeline
#: <models.engine.nccltests.Collective.pipeline>`).
PATTERNS = MappingProxyType({name: COLLECTIVES[name].pipeline for name in PIPELINE_COLLECTIVES})
#: ``union ncclLLFifoLine``: 16 B lines, two 4 B data words and two 4 B flags (src/include/devcomm.h).
LL_LINE_BYTES, LL_DATA_BYTES = 16, 8
#: ``NCCL_LL128_LINESIZE`` 128 B, ``NCCL_LL128_DATAELEMS`` 15 of 16 8-byte words (src/include/devcomm.h).
LL128_LINE_BYTES, LL128_DATA_BYTES = 128, 120


class PipeliningError(DgxTopoError):
    """A pipelining request that cannot be answered (unknown collective or protocol, a protocol
    the release lacks, a bad size or count)."""


@dataclass(frozen=True, slots=True)
class PipelineConstants:
    """One release's pipeline constants (bytes; step counts).

    Attributes
    ----------
    tag : str
        The NVIDIA/nccl tag the constants are meant for (the profile's).
    simple_buffer : int
        ``NCCL_BUFFSIZE`` default: one connection's Simple buffer. [bytes]
    buffer_steps : tuple of int
        Steps the Simple buffer holds, per collective of :data:`PIPELINE_COLLECTIVES`
        (``NCCL_STEPS``; v2.3: ``BUFCHUNKS x SUBSTEPS``).
    chunk_steps, slice_steps : tuple of int
        Ring Simple ``CHUNKSTEPS`` and ``SLICESTEPS`` per collective (v2.3: ``SUBSTEPS`` and 1).
    ll_lines_per_thread, ll_max_threads, ll_steps : int
        LL buffer: ``lines x threads x steps`` lines of :data:`LL_LINE_BYTES`.
    ll128_words_per_thread, ll128_max_threads : int or None
        LL128 buffer per step: ``words x threads`` 8-byte words; ``None`` before LL128 (v2.5).
    sources : str
        Files at ``tag``.
    uncertain : tuple of str
        What was not read at ``tag`` [U].
    """

    tag: str
    simple_buffer: int
    buffer_steps: tuple
    chunk_steps: tuple
    slice_steps: tuple
    ll_lines_per_thread: int
    ll_max_threads: int
    ll_steps: int
    ll128_words_per_thread: int | None
    ll128_max_threads: int | None
    sources: str
    uncertain: tuple = ()


_MiB = 1 << 20
_STEPS = 8   # NCCL_STEPS (src/include/devcomm.h v2.4-v2.17, src/include/device.h v2.18+)
# src/include/collectives.h: ALLREDUCE/ALLGATHER/REDUCESCATTER CHUNKSTEPS NCCL_STEPS/2 and
# SLICESTEPS NCCL_STEPS/4; BROADCAST and REDUCE 1 and 1 (NCCL function order).
_CHUNK_STEPS = (1, 1, _STEPS // 2, _STEPS // 2, _STEPS // 2)
_SLICE_STEPS = (1, 1, _STEPS // 4, _STEPS // 4, _STEPS // 4)
_MODERN_SOURCES = ("src/include/collectives.h (*_CHUNKSTEPS, *_SLICESTEPS), src/include/device.h "
                   "(NCCL_STEPS, NCCL_LL_*, NCCL_LL128_*; devcomm.h before v2.18), src/init.cc "
                   "(DEFAULT_BUFFSIZE), src/enqueue.cc (chunk and slice steps for Ring Simple only)")
_V2_5 = PipelineConstants(
    tag="v2.5.7-1", simple_buffer=4 * _MiB, buffer_steps=(_STEPS,) * 5, chunk_steps=_CHUNK_STEPS,
    slice_steps=_SLICE_STEPS, ll_lines_per_thread=8, ll_max_threads=512, ll_steps=_STEPS,
    ll128_words_per_thread=120, ll128_max_threads=640, sources=_MODERN_SOURCES)
_V2_4 = PipelineConstants(
    tag="v2.4.8-1", simple_buffer=4 * _MiB, buffer_steps=(_STEPS,) * 5, chunk_steps=_CHUNK_STEPS,
    slice_steps=_SLICE_STEPS, ll_lines_per_thread=8, ll_max_threads=256, ll_steps=_STEPS,
    ll128_words_per_thread=None, ll128_max_threads=None,
    sources="src/collectives/collectives.h (*_CHUNKSTEPS, *_SLICESTEPS), src/include/devcomm.h "
            "(NCCL_STEPS, NCCL_LL_*), src/init.cc (DEFAULT_BUFFER_SIZE_BYTES)")
# v2.3: src/collectives/device/{all_reduce,all_gather,reduce_scatter}.h SUBSTEPS 2, BUFCHUNKS 2;
# {broadcast,reduce}.h SUBSTEPS 8; src/init.cu DEFAULT_BUFFER_SIZE_BYTES 4 MiB; LL buffer
# NUM_LINES_PER_THREAD x 256 x 8 x 16 B (8 lines in v2.3.7-1, 2 in v2.3.5-5).
_V2_3_7 = PipelineConstants(
    tag="v2.3.7-1", simple_buffer=4 * _MiB, buffer_steps=(16, 16, 4, 4, 4),
    chunk_steps=(8, 8, 2, 2, 2), slice_steps=(1, 1, 1, 1, 1), ll_lines_per_thread=8,
    ll_max_threads=256, ll_steps=8, ll128_words_per_thread=None, ll128_max_threads=None,
    sources="src/collectives/device/all_reduce.h, all_gather.h, reduce_scatter.h, broadcast.h, "
            "reduce.h (SUBSTEPS, BUFCHUNKS), src/init.cu (DEFAULT_BUFFER_SIZE_BYTES), "
            "src/include/common_coll.h",
    uncertain=("BUFCHUNKS 2 of broadcast and reduce (their SUBSTEPS 8 is read; the chunk count "
               "is taken as all_reduce's)",))

#: Pipeline constants per profile version (v2.5.7's for every later profile [U]: NCCL_STEPS,
#: the chunk and slice steps, the buffer and line sizes are the same at v2.5.7-1 and v2.27.7-1).
def _release_constants(profile) -> PipelineConstants:
    if profile.first < (2, 3, 7):
        return PipelineConstants(
            **{**{f: getattr(_V2_3_7, f) for f in _V2_3_7.__slots__}, "tag": profile.tag,
               "ll_lines_per_thread": 2,
               "uncertain": _V2_3_7.uncertain + ("v2.3.5-5's LL lines (2) are read; the rest is "
                                                 "v2.3.7-1's",)})
    if profile.first < (2, 4, 0):
        return _V2_3_7
    if profile.first < (2, 5, 0):
        return _V2_4
    return PipelineConstants(
        **{**{f: getattr(_V2_5, f) for f in _V2_5.__slots__}, "tag": profile.tag,
           "uncertain": () if profile.tag == _V2_5.tag else
           ("taken as v2.5.7-1's (NCCL_STEPS 8, chunk/slice steps, 4 MiB, LL/LL128 lines)",)})


RELEASES = MappingProxyType({version: _release_constants(profile) for version, profile in PROFILES.items()})


@dataclass(frozen=True, slots=True)
class Pipelining:
    """How one release runs one collective with one protocol, per channel.

    Attributes
    ----------
    release : str
        The profile version (``"2.27.7"``).
    tag : str
        The NVIDIA/nccl tag of the constants.
    collective : str
    protocol : str
        ``"LL"``, ``"LL128"`` or ``"Simple"``.
    pattern : str
        ``"ring"`` or ``"chain"`` (:data:`PATTERNS`).
    step_bytes : int
        Data one step carries (for LL and LL128, the data share of its lines). [bytes]
    chunk_steps : int
        Steps of one chunk (what a channel takes per step of a loop).
    slice_steps : int
        Steps of one slice (the unit posted to, and forwarded by, the next rank).
    steps_in_flight : int
        Steps the connection buffer holds: how far a sender may run ahead of its receiver.
    source : str
        The files and tag the numbers come from; ``[U] ...`` appended where not read there.

    Examples
    --------
    >>> p = pipelining("2.12.12", "all_reduce", "Simple")
    >>> p.chunk_bytes, p.slice_bytes, p.slices_per_chunk
    (2097152, 1048576, 2)
    >>> p.loops(2**30, nchannels=8, nranks=8), p.ring_steps(8)
    (8, 14)
    """

    release: str
    tag: str
    collective: str
    protocol: str
    pattern: str
    step_bytes: int
    chunk_steps: int
    slice_steps: int
    steps_in_flight: int
    source: str

    def to_records(self) -> list:
        """One row: the release, collective, protocol and pattern, and the pipeline's sizes in
        steps and bytes."""
        return tidy_records({
            "release": self.release, "tag": self.tag, "collective": self.collective, "protocol": self.protocol,
            "pattern": self.pattern, "step_bytes": self.step_bytes, "chunk_steps": self.chunk_steps,
            "slice_steps": self.slice_steps, "steps_in_flight": self.steps_in_flight,
            "chunk_bytes": self.chunk_bytes, "slice_bytes": self.slice_bytes})

    @property
    def chunk_bytes(self) -> int:
        """Largest chunk a channel takes per loop step. [bytes]"""
        return self.step_bytes * self.chunk_steps

    @property
    def slice_bytes(self) -> int:
        """Largest slice. [bytes]"""
        return self.step_bytes * self.slice_steps

    @property
    def slices_per_chunk(self) -> int:
        """``CHUNKSTEPS / SLICESTEPS``."""
        return self.chunk_steps // self.slice_steps

    def ring_steps(self, nranks: int) -> int:
        """Steps of one loop: ``2 (n - 1)`` for all_reduce, ``n - 1`` otherwise (a chain's hops)."""
        _check_count("nranks", nranks, 2)
        return 2 * (nranks - 1) if self.collective == "all_reduce" else nranks - 1

    def per_loop_chunks(self, nranks: int) -> int:
        """Chunks one channel moves per loop: one per rank on a ring, one on a chain."""
        return nranks if self.pattern == "ring" else 1

    def chunk(self, nbytes, nchannels: int, nranks: int):
        """Chunk of the first loop: ``min(chunk_bytes, ceil(nbytes / (nchannels x chunks per
        loop)))`` (the kernels' ``realChunkSize``, without NCCL's alignment to the threads). [bytes]"""
        size = _sizes(nbytes)
        _check_count("nchannels", nchannels, 1)
        per_loop = nchannels * self.per_loop_chunks(nranks)
        return np.minimum(self.chunk_bytes, np.ceil(size / per_loop))

    def loops(self, nbytes, nchannels: int, nranks: int):
        """Loop iterations: ``ceil(nbytes / (nchannels x chunks per loop x chunk_bytes))``."""
        size = _sizes(nbytes)
        _check_count("nchannels", nchannels, 1)
        per_loop = nchannels * self.per_loop_chunks(nranks) * self.chunk_bytes
        out = np.ceil(size / per_loop).astype(np.int64)
        return int(out) if out.ndim == 0 else out

    def fill_slices(self, nranks: int) -> int:
        """Slices the last rank of a chain waits before its first arrives, after the first hop:
        ``nranks - 2`` on a chain (each of ``nranks - 1`` hops forwards a posted slice), 0 on a
        ring (every rank sends from the first step). Simple only; LL and LL128 forward line by
        line (a flag per line), so their fill is a per-hop latency, not a slice: 0."""
        _check_count("nranks", nranks, 2)
        if self.pattern == "ring" or self.protocol != "Simple":
            return 0
        return nranks - 2

    def chain_slice_steps(self, nbytes, nchannels: int, nranks: int):
        """Slice times one channel of a chain needs: its slices plus the fill,
        ``ceil(D / s) + nranks - 2`` with ``D = ceil(nbytes / nchannels)`` and ``s = min(slice,
        D)`` (a closed form of the store-and-forward pipeline).

        Raises
        ------
        PipeliningError
            For a ring collective.
        """
        if self.pattern != "chain":
            raise PipeliningError(f"{self.collective} runs on a ring, not a chain: expected "
                                  f"broadcast or reduce")
        size = _sizes(nbytes)
        _check_count("nchannels", nchannels, 1)
        per_channel = np.ceil(size / nchannels)
        slice_ = np.maximum(np.minimum(self.slice_bytes, per_channel), 1)
        out = (np.ceil(per_channel / slice_) + self.fill_slices(nranks)).astype(np.int64)
        return int(out) if out.ndim == 0 else out

    def fill_bytes(self, nbytes, nchannels: int, nranks: int):
        """The fill of the pipeline in bytes of the whole collective: ``fill_slices x min(slice,
        nbytes / nchannels) x nchannels``, what the channels could have moved while the last rank
        waited. [bytes]"""
        size = _sizes(nbytes)
        _check_count("nchannels", nchannels, 1)
        slice_ = np.minimum(self.slice_bytes, np.ceil(size / nchannels))
        return self.fill_slices(nranks) * slice_ * nchannels


def _check_count(name, value, low) -> int:
    if not is_int(value) or value < low:
        raise PipeliningError(f"{name} must be an integer >= {low}, received {value!r}")
    return int(value)


def _sizes(nbytes) -> np.ndarray:
    """Sizes as a float array (:func:`topo.units.parse_nbytes` validates them). [bytes]"""
    return np.asarray(parse_nbytes(nbytes), dtype=float)


def pipelining(profile: str | NcclProfile | None, collective: str, protocol: str) -> Pipelining:
    """The pipeline of one collective and protocol in one NCCL release.

    Parameters
    ----------
    profile : str or NcclProfile or None
        The release (:func:`models.engine.nccl.profiles.nccl_profile`; None: the reference).
    collective : str
        One of :data:`PIPELINE_COLLECTIVES`.
    protocol : str
        ``"LL"``, ``"LL128"`` or ``"Simple"``.

    Returns
    -------
    Pipelining

    Raises
    ------
    PipeliningError
        For another collective or protocol, or LL128 in a release without it.
    models.engine.nccl.profiles.UnknownNcclVersionError
        For a version no profile covers.

    Examples
    --------
    >>> pipelining("2.4.8", "all_gather", "LL").step_bytes      # 8 lines x 256 threads x 8 B
    16384
    >>> pipelining("2.27.7", "all_reduce", "LL128").step_bytes  # 120 x 640 x 8 B x 120/128
    576000
    """
    release = nccl_profile(profile)
    if collective not in PIPELINE_COLLECTIVES:
        raise PipeliningError(f"no NCCL pipeline for {collective!r}: expected one of "
                              f"{list(PIPELINE_COLLECTIVES)}")
    c = RELEASES[release.version]
    index = COLLECTIVES[collective].function
    uncertain = "".join(f" [U] {u}" for u in c.uncertain)
    source = f"NVIDIA/nccl {c.tag} {c.sources}{uncertain}"
    if protocol == "Simple":
        step = c.simple_buffer // c.buffer_steps[index]
        chunk, slice_, flight = c.chunk_steps[index], c.slice_steps[index], c.buffer_steps[index]
    elif protocol == "LL":
        step = c.ll_lines_per_thread * c.ll_max_threads * LL_DATA_BYTES
        chunk, slice_, flight = 1, 1, c.ll_steps
    elif protocol == "LL128":
        if c.ll128_words_per_thread is None:
            raise PipeliningError(f"NCCL {release.version} has no LL128 (it arrives in v2.5.6): "
                                  f"expected LL or Simple")
        step = c.ll128_words_per_thread * c.ll128_max_threads * 8 * LL128_DATA_BYTES \
            // LL128_LINE_BYTES
        chunk, slice_, flight = 1, 1, _STEPS
    else:
        raise PipeliningError(f"unknown protocol {protocol!r}: expected 'LL', 'LL128' or 'Simple'")
    return Pipelining(release.version, c.tag, collective, protocol, PATTERNS[collective], step,
                      chunk, slice_, flight, source)
