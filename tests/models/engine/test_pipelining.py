"""Per-release pipelining (models.engine.nccl.pipelining): the constants read from each release's
source and the closed forms of the decomposition.

Known answers: NCCL's own constants (src/include/collectives.h: ALLREDUCE_CHUNKSTEPS NCCL_STEPS/2,
SLICESTEPS NCCL_STEPS/4, BROADCAST 1/1; NCCL_STEPS 8; DEFAULT_BUFFSIZE 4 MiB; LL 8 lines per
thread of 16 B carrying 8 B; LL128 120 words x 640 threads, 120 of 128 B data; v2.3's BUFCHUNKS 2,
SUBSTEPS 2 (all_reduce) and 8 (broadcast), LL 8 lines (v2.3.7) or 2 (v2.3.5) x 256 threads), and
closed forms: a ring broadcast of S bytes in slices of s on n ranks takes ceil(S/s) + n - 2 slice
times per channel (store and forward), a ring all_reduce loop moves n chunks in 2 (n - 1) steps.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from models.engine.nccl.pipelining import (PIPELINE_COLLECTIVES, RELEASES, PipeliningError,
                                           pipelining)
from models.engine.nccl.profiles import PROFILES, UnknownNcclVersionError
from topo.errors import SizeError

MiB = 2**20


@pytest.mark.parametrize("release, collective, protocol, step, chunk, slice_, flight", [
    ("2.27.7", "all_reduce", "Simple", 512 * 1024, 4, 2, 8),
    ("2.27.7", "all_gather", "Simple", 512 * 1024, 4, 2, 8),
    ("2.27.7", "broadcast", "Simple", 512 * 1024, 1, 1, 8),
    ("2.27.7", "reduce", "Simple", 512 * 1024, 1, 1, 8),
    ("2.5.7", "all_reduce", "LL", 8 * 512 * 8, 1, 1, 8),         # 8 lines x 512 threads x 8 B
    ("2.4.8", "all_reduce", "LL", 8 * 256 * 8, 1, 1, 8),         # NCCL_LL_MAX_NTHREADS 256
    ("2.12.12", "reduce_scatter", "LL128", 120 * 640 * 8 * 120 // 128, 1, 1, 8),
    ("2.3.7", "all_reduce", "Simple", 1 * MiB, 2, 1, 4),        # 4 MiB / (BUFCHUNKS 2 x SUBSTEPS 2)
    ("2.3.7", "broadcast", "Simple", 256 * 1024, 8, 1, 16),     # 4 MiB / (2 x SUBSTEPS 8)
    ("2.3.7", "all_gather", "LL", 8 * 256 * 8, 1, 1, 8),
    ("2.3.5", "all_gather", "LL", 2 * 256 * 8, 1, 1, 8),         # NUM_LINES_PER_THREAD 2
])
def test_constants_from_each_release(release, collective, protocol, step, chunk, slice_, flight):
    p = pipelining(release, collective, protocol)
    assert (p.step_bytes, p.chunk_steps, p.slice_steps, p.steps_in_flight) == (step, chunk, slice_,
                                                                               flight)
    assert p.tag == PROFILES[release].tag and p.tag in p.source


def test_every_profile_has_constants_and_every_cell_answers():
    assert list(RELEASES) == list(PROFILES)
    for version, profile in PROFILES.items():
        for collective in PIPELINE_COLLECTIVES:
            for protocol in ("LL", "Simple") + (("LL128",) if profile.first >= (2, 5, 0) else ()):
                p = pipelining(version, collective, protocol)
                assert p.chunk_bytes == p.slice_bytes * p.slices_per_chunk
                assert p.chunk_steps <= p.steps_in_flight


@pytest.mark.parametrize("release, protocol, buffer, wire", [
    ("2.27.7", "Simple", 4 * MiB, 1),               # DEFAULT_BUFFSIZE
    ("2.3.7", "Simple", 4 * MiB, 1),                # DEFAULT_BUFFER_SIZE_BYTES
    ("2.27.7", "LL", 8 * 512 * 8 * 16, 2),          # lines x NCCL_LL_MAX_NTHREADS x NCCL_STEPS x 16 B
    ("2.4.8", "LL", 8 * 256 * 8 * 16, 2),           # 256 threads in v2.4
    ("2.27.7", "LL128", 4_915_200, 128 / 120),      # 120 words x 640 threads x 8 steps x 8 B
])
def test_the_steps_in_flight_fill_the_protocols_buffer(release, protocol, buffer, wire):
    """NCCL's buffer per connection and protocol (buffSizes: NCCL_PROTO_SIMPLE 4 MiB, LL 512 KiB,
    LL128 4,915,200 B at v2.27.7-1) holds the steps in flight, data and flags: every collective."""
    for collective in PIPELINE_COLLECTIVES:
        p = pipelining(release, collective, protocol)
        assert p.step_bytes * p.steps_in_flight * wire == pytest.approx(buffer)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**33), st.integers(1, 32), st.integers(2, 72))
def test_chain_closed_form(nbytes, nchannels, nranks):
    """Store and forward: per channel D = ceil(S / nch), slice s = min(slice, D), ceil(D / s)
    slices plus nranks - 2 to fill the chain."""
    p = pipelining("2.27.7", "broadcast", "Simple")
    per_channel = math.ceil(nbytes / nchannels)
    s = max(min(p.slice_bytes, per_channel), 1)
    assert p.chain_slice_steps(nbytes, nchannels, nranks) == math.ceil(per_channel / s) + nranks - 2
    assert p.fill_bytes(nbytes, nchannels, nranks) == (nranks - 2) * min(p.slice_bytes, per_channel) \
        * nchannels


def test_ring_broadcast_known_answer():
    """64 MiB over 8 channels and 8 ranks, 512 KiB slices: 16 slices per channel, 6 to fill."""
    p = pipelining("2.27.7", "broadcast", "Simple")
    assert p.chain_slice_steps(64 * MiB, 8, 8) == 22
    assert p.fill_bytes(64 * MiB, 8, 8) == 6 * 512 * 1024 * 8
    assert pipelining("2.3.7", "broadcast", "Simple").fill_bytes(64 * MiB, 8, 8) == 6 * 256 * 1024 * 8


def test_ring_collectives_have_no_fill_and_loop_closed_forms():
    p = pipelining("2.27.7", "all_reduce", "Simple")
    assert p.fill_slices(8) == 0 and p.ring_steps(8) == 14
    assert pipelining("2.27.7", "all_gather", "Simple").ring_steps(8) == 7
    # a loop moves nranks chunks of 2 MiB per channel: 1 GiB / (8 x 8 x 2 MiB) = 8 loops
    assert p.loops(2**30, 8, 8) == 8
    assert p.chunk(2**20, 8, 8) == 2**20 / 64                 # min(2 MiB, 1 MiB / (8 x 8))
    assert list(p.loops([0, 1, 128 * MiB, 128 * MiB + 1], 8, 8)) == [0, 1, 1, 2]
    assert pipelining("2.27.7", "broadcast", "LL").fill_slices(8) == 0   # line by line
    with pytest.raises(PipeliningError, match="ring, not a chain"):
        p.chain_slice_steps(2**20, 8, 8)


@pytest.mark.parametrize("args, error, match", [
    (("2.4.8", "all_reduce", "LL128"), PipeliningError, "no LL128"),
    (("2.27.7", "alltoall", "Simple"), PipeliningError, "no NCCL pipeline for 'alltoall'"),
    (("2.27.7", "all_reduce", "simple"), PipeliningError, "unknown protocol 'simple'"),
    (("2.99", "all_reduce", "Simple"), UnknownNcclVersionError, "'2.99'"),
])
def test_bad_requests(args, error, match):
    with pytest.raises(error, match=match):
        pipelining(*args)


@pytest.mark.parametrize("call, error, match", [
    (lambda p: p.loops(-1, 8, 8), SizeError, "invalid size -1: negative"),
    (lambda p: p.fill_bytes("x", 8, 8), SizeError, "invalid size 'x'"),
    (lambda p: p.chunk(8, 0, 8), PipeliningError, "nchannels must be an integer >= 1"),
    (lambda p: p.fill_slices(1), PipeliningError, "nranks must be an integer >= 2"),
    (lambda p: p.ring_steps(True), PipeliningError, "nranks must be an integer >= 2"),
])
def test_bad_counts(call, error, match):
    with pytest.raises(error, match=match):
        call(pipelining("2.27.7", "broadcast", "Simple"))


# ------------------------------------------------- what each release changes against the reference
def _fill(release, collective, protocol, nbytes, nchannels, nranks):
    return pipelining(release, collective, protocol).fill_bytes(nbytes, nchannels, nranks)


@pytest.mark.parametrize("release", [v for v, p in PROFILES.items() if p.first >= (2, 4, 0)])
def test_no_release_from_2_4_fills_differently_from_the_reference(release):
    """v2.4.8 on share v2.5.7's Simple buffer, NCCL_STEPS, chunk and slice steps; LL and LL128
    forward line by line: the fill of every collective, protocol and size equals the reference's."""
    protocols = ["LL", "Simple"] + (["LL128"] if PROFILES[release].first >= (2, 5, 0) else [])
    for collective in PIPELINE_COLLECTIVES:
        for protocol in protocols:
            for nbytes in (1, 300 * 1024, 4 * MiB, 2**30):
                assert _fill(release, collective, protocol, nbytes, 8, 8) == \
                    _fill("2.27.7", collective, protocol, nbytes, 8, 8)


@pytest.mark.parametrize("release", ["2.3.5", "2.3.7"])
@pytest.mark.parametrize("collective", ["all_reduce", "all_gather", "reduce_scatter"])
def test_v2_3_rings_move_the_reference_units(release, collective):
    """v2.3: SUBSTEPS 2 sub-steps of 4 MiB / (BUFCHUNKS 2 x 2) = 1 MiB make a 2 MiB chunk posted
    1 MiB at a time; v2.5: CHUNKSTEPS 4 and SLICESTEPS 2 steps of 4 MiB / 8 = 512 KiB: the same."""
    old, ref = pipelining(release, collective, "Simple"), pipelining("2.27.7", collective, "Simple")
    assert (old.chunk_bytes, old.slice_bytes) == (ref.chunk_bytes, ref.slice_bytes) == (2 * MiB, MiB)
    assert old.fill_slices(8) == ref.fill_slices(8) == 0


@given(st.integers(1, 2**33), st.integers(1, 32), st.integers(2, 16))
@settings(max_examples=60, deadline=None)
def test_v2_3_chains_never_fill_more_than_the_reference(nbytes, nchannels, nranks):
    """A v2.3 chain posts 256 KiB sub-steps (4 MiB / (2 x SUBSTEPS 8)), the reference 512 KiB
    slices: its fill is the reference's while a channel holds at most 256 KiB, and half of it
    once a channel holds 512 KiB or more."""
    for collective in ("broadcast", "reduce"):
        old = _fill("2.3.7", collective, "Simple", nbytes, nchannels, nranks)
        ref = _fill("2.27.7", collective, "Simple", nbytes, nchannels, nranks)
        per_channel = math.ceil(nbytes / nchannels)
        assert old <= ref
        if per_channel <= 256 * 1024:
            assert old == ref
        if per_channel >= 512 * 1024:
            assert old == ref / 2
