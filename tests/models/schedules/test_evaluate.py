"""Timing MSCCL schedules on a fabric (models.schedules.evaluate).

Known answers: one chunk over one NVLink pair is Ring's base latency, one step's latency and the
chunk at one channel's rate times the achieved ratio (every figure read from the engine's tuning,
not restated); two channels share one NV1 link (half each) and fill an NV2 bundle; NCCL's own ring,
written as a schedule, times as the collective model's ring at large sizes (both bandwidth-bound)
and, at a mid size, as the engine's tuning prices Ring: its latency plus the bytes at its algorithm
bandwidth (the collective model's timing of 1-64 MiB may change beside it, the tuning's does not).
The two real schedules evaluate on the fabric they were written for (NDv4: 8 A100 as a DGX A100;
NDv5: 8 H100 as a DGX H100) within a factor of 2 of NCCL there (issue 41)."""

from __future__ import annotations

import math

import pytest

import topo
from models.engine.fabric import prepare
from models.engine.nccl.algorithms.ring import RING
from models.predict.collectives import estimate
from models.predict.p2p import p2p_path
from models.schedules import ScheduleCheckError, read_msccl
from models.schedules.evaluate import (ScheduleEvaluationError, evaluate_schedule, nccl_name, schedule_pricing)
from models.schedules.export import nccl_schedule
from models.schedules.ring import ring_all_gather
from tests.conftest import DATA

AP2LL = DATA / "msccl" / "ndv4_ap2ll.xml"
AG1M = DATA / "msccl" / "ndv5_ag-1m.xml"


@pytest.fixture(scope="module")
def dgx1v():
    return prepare(topo.build("dgx1v"))


def _ring_tuning(fabric, collective, gpus, protocol="Simple"):
    e = estimate(fabric, collective, 2**20, gpus, algorithm=RING)
    return e, next(c.tuning for c in e.selection.candidates if c.tuning.protocol == protocol)


def test_one_chunk_over_one_pair_is_latency_and_one_channel(dgx1v):
    e, tuning = _ring_tuning(dgx1v, "all_gather", [0, 3])
    size = 2**20  # two chunks of 512 KiB: one loop (a Simple slice is 1 MiB)
    channel = tuning.bus.value / e.ring.nchannels
    expected = tuning.latency.base + tuning.latency.terms[0].per_step + size / 2 / (channel * e.measurement.ratio)
    point = evaluate_schedule(dgx1v, ring_all_gather(2, inplace=True), size, "0,3").points[0]
    assert point.loops == 1 and point.chunk_bytes == size / 2
    assert point.time == pytest.approx(expected, rel=1e-9)
    # Out of place, each rank first copies its chunk into place: read and written once each.
    copy = 2 * (size / 2) / p2p_path(dgx1v, 0, 0).bandwidth
    out_of_place = evaluate_schedule(dgx1v, ring_all_gather(2), size, "0,3").points[0]
    assert out_of_place.time == pytest.approx(expected + copy, rel=1e-9)


def test_two_channels_share_one_link_and_fill_a_bundle(dgx1v):
    size = 2**20
    times = {}
    for pair in ("0,1", "0,3"):  # NV1, NV2
        one = evaluate_schedule(dgx1v, ring_all_gather(2, chunks=2, channels=1, inplace=True), size,
                                pair).points[0].time
        two = evaluate_schedule(dgx1v, ring_all_gather(2, chunks=2, channels=2, inplace=True), size,
                                pair).points[0].time
        times[pair] = (one, two)
    pricing, _ = schedule_pricing(dgx1v, "Simple", "all_gather", (0, 1))
    # one step's latency either way: one channel's second send pays it while its first moves (the
    # connection pipelines them), two channels' sends pay it side by side
    fixed = pricing.base_latency + pricing.step_latency
    # NV1: the link is the channel's rate; a second channel gains nothing (each gets half).
    assert times["0,1"][1] - fixed == pytest.approx(times["0,1"][0] - fixed, rel=1e-6)
    # NV2: two channels move the same bytes in half the time of one.
    one, two = times["0,3"]
    assert (two - fixed) == pytest.approx((one - fixed) / 2, rel=1e-6)


@pytest.mark.parametrize("system", ["dgx1v", "dgxa100"])
@pytest.mark.parametrize("collective", ["all_gather", "all_reduce"])
def test_nccl_rings_time_as_the_collective_model_at_large_sizes(system, collective):
    fabric = prepare(topo.build(system))
    result = evaluate_schedule(fabric, nccl_schedule(fabric, collective), ["1G", "8G"], bound=False)
    for p in result.points:
        assert p.nccl_algorithm == "ring/Simple"
        assert p.busbw == pytest.approx(p.nccl_busbw, rel=0.01)
    assert result.points[1].loops > 64  # beyond the loops simulated: extrapolated


def test_a_mid_size_ring_times_as_the_engine_prices_ring(dgx1v):
    size = 2**22
    e, tuning = _ring_tuning(dgx1v, "all_gather", list(range(8)))
    engine = tuning.latency.value + size / (tuning.bandwidth * e.measurement.ratio)
    point = evaluate_schedule(dgx1v, nccl_schedule(dgx1v, "all_gather"), size, nccl=False, bound=False).points[0]
    assert point.time == pytest.approx(engine, rel=0.01)


def test_the_real_all_reduce_on_a_dgx_a100():
    result = evaluate_schedule(topo.build("dgxa100"), read_msccl(AP2LL), [512, 40960])
    assert (result.collective, result.protocol, result.steps, result.gpus) == ("all_reduce", "LL", 2672,
                                                                                 tuple(range(8)))
    for p in result.points:
        assert p.loops == 1 and math.isfinite(p.time) and p.time > 0
        assert 0.5 < p.busbw / p.nccl_busbw < 2
        assert p.bound_busbw > p.busbw
    assert [r["nbytes"] for r in result.to_records()] == [512, 40960]


def test_the_real_all_gather_on_a_dgx_h100():
    result = evaluate_schedule(topo.build("dgxh100"), read_msccl(AG1M), "1M")
    p = result.points[0]
    assert (result.collective, result.nchannels, p.loops) == ("all_gather", 32, 1)
    assert 0.5 < p.busbw / p.nccl_busbw < 2 and p.busbw < p.bound_busbw


def test_a_schedule_runs_on_the_first_gpus_of_a_larger_fabric():
    result = evaluate_schedule(topo.build("dgx2"), ring_all_gather(4), "1M", nccl=False, bound=False)
    assert result.gpus == (0, 1, 2, 3) and result.points[0].nccl_busbw is None


def test_refusals_name_what_is_wrong(dgx1v):
    with pytest.raises(ScheduleEvaluationError, match="'ring_all_gather_16x1' is for 16 GPUs, but DGX-1V has 8"):
        evaluate_schedule(dgx1v, ring_all_gather(16), "1M")
    with pytest.raises(ScheduleEvaluationError, match="is for 4 GPUs, but the selection 0-2 of DGX-1V has 3"):
        evaluate_schedule(dgx1v, ring_all_gather(4), "1M", "0-2")
    with pytest.raises(ScheduleEvaluationError, match="does not enable Ring LL128 for all_gather on GPUs 0-3 of DGX-1"):
        evaluate_schedule(topo.build("dgx1"), ring_all_gather(4, protocol="LL128"), "1M", "0-3")
    with pytest.raises(ScheduleEvaluationError, match="expected a Schedule"):
        evaluate_schedule(dgx1v, "ring.xml", "1M")
    with pytest.raises(ScheduleEvaluationError, match="max_loops an even whole number"):
        evaluate_schedule(dgx1v, ring_all_gather(2), "1M", max_loops=3)
    with pytest.raises(topo.SizeError):
        evaluate_schedule(dgx1v, ring_all_gather(2), "1.5G")


def test_unmatched_sends_are_refused_by_name(dgx1v):
    ring = ring_all_gather(3)
    gpu = ring.gpus[0]
    tb = gpu.threadblocks[0]
    broken = tb.__class__(tb.id, tb.send, tb.recv, tb.chan, tb.steps[:-1])
    schedule = ring.__class__(**{**{f: getattr(ring, f) for f in ring.__slots__},
                                 "gpus": (gpu.__class__(gpu.id, gpu.i_chunks, gpu.o_chunks, gpu.s_chunks, (broken,)),)
                                 + ring.gpus[1:]})
    with pytest.raises(ScheduleCheckError, match="gpu 2, tb 0, step 2: sends to gpu 0 on channel 0 .2 sends., but gpu 0 receives only 1"):
        evaluate_schedule(dgx1v, schedule, "1M", "0-2")


def test_nccl_names():
    assert [nccl_name(c) for c in ("all_to_all", "all_reduce", "custom", "gather")] == \
        ["alltoall", "all_reduce", None, None]


def test_loops_beyond_the_simulated_ones_take_the_period_of_a_whole_loop(dgx1v):
    """Loops past ``max_loops`` are extrapolated from the loops' ends: each loop ends with its
    last task. From the mean end of its tasks, threadblocks that run ahead of the busiest links
    shortened the period: one chunk a GPU of the 8-GPU packing's reduce_scatter on a DGX-1V at
    1 GiB (128 loops) read 81.82 GB/s from 64 loops, against 69.50 with all 128 simulated."""
    from models.schedules.export import packing_schedule

    schedule = packing_schedule(dgx1v, "reduce_scatter", "0-7", chunks=1)
    busbw = [evaluate_schedule(dgx1v, schedule, "1G", "0-7", max_loops=m, nccl=False, bound=False)
             .to_records()[0]["busbw_Bps"] for m in (64, 128)]
    assert busbw[0] == pytest.approx(busbw[1], rel=0.015)


def test_the_events_of_a_timing_are_counted_before_it(dgx1v):
    """A ring all_gather of 8 ranks, one chunk each, one channel: 8 steps a rank (its send, 6
    receive-copy-sends, a receive), 7 of them sends, so 64 steps and 56 latency waits in the first
    loop, 3 events a task: 360 events for one loop. At 1 GiB, 8 chunks of at most 1 MiB (Simple's
    slice) a loop make 128 loops, 64 of them simulated: 3 x (64 x 64 + 56) = 12,456. Each is the
    simulator's own count of the graph timed, and what the evaluation reports as it runs."""
    from models.predict.simulate import simulation_size
    from models.schedules.evaluate import schedule_events, schedule_loops, schedule_tasks

    ring = ring_all_gather(8, chunks=1, channels=1, inplace=True)
    pricing, _ = schedule_pricing(dgx1v, "Simple", "all_gather", tuple(range(8)))
    assert (schedule_loops(ring, 2**20, pricing), schedule_loops(ring, 2**30, pricing)) == (1, 128)
    assert schedule_events(ring, 2**20, pricing) == 360 == simulation_size(schedule_tasks(ring, 2**17, range(8), pricing))
    assert schedule_events(ring, 2**30, pricing) == 12_456 == simulation_size(
        schedule_tasks(ring, 2**20, range(8), pricing, 64))
    calls = []
    evaluate_schedule(dgx1v, ring, [2**20, 2**21], nccl=False, bound=False, progress=lambda *c: calls.append(c))
    assert calls[-1] == (240, 240) and all(total == 240 for _, total in calls)  # 120 tasks a size


def test_the_timings_are_refused_beyond_their_work_limit(dgx1v, monkeypatch):
    """Every size's events are counted before any is simulated: the ring above at 1 MiB and 2 MiB
    (one loop each) takes 2 x 360 = 720 events. One fewer allowed is refused (topo.LimitError
    naming max_events) and nothing is simulated; exactly as many is timed."""
    from models.predict import simulate as simulate_module

    ring = ring_all_gather(8, chunks=1, channels=1, inplace=True)
    simulated = []
    real = simulate_module.simulate
    monkeypatch.setattr(simulate_module, "simulate", lambda *a, **k: simulated.append(1) or real(*a, **k))
    with pytest.raises(topo.LimitError, match="at 2 sizes up to 2097152 B: 720 simulator events") as error:
        evaluate_schedule(dgx1v, ring, [2**20, 2**21], nccl=False, bound=False, max_events=719)
    assert (error.value.keyword, error.value.size, error.value.limit, simulated) == ("max_events", 720, 719, [])
    assert len(evaluate_schedule(dgx1v, ring, [2**20, 2**21], nccl=False, bound=False, max_events=720).points) == 2
    assert len(simulated) == 2
    with pytest.raises(topo.CountError):
        evaluate_schedule(dgx1v, ring, "1M", max_events=0)
    with pytest.raises(ScheduleEvaluationError, match="expected progress a callable"):
        evaluate_schedule(dgx1v, ring, "1M", progress="bar")


def test_a_sends_latency_waits_for_the_step_that_made_its_data_however_far_back(dgx1v):
    """The first loop's send pays Ring's step latency from when its data is there: GPU 0 receives
    o[1] (step 0), sends its own o[0] (step 1), then sends o[1] (step 2). Step 2's wait follows
    step 0, which made its data, not only step 1 (review: it looked one step back, so the wait
    could start before the data existed); step 1's wait follows nothing of its threadblock."""
    from models.schedules import parse_msccl
    from models.schedules.evaluate import schedule_tasks

    def step(s, kind, off):
        return (f'<step s="{s}" type="{kind}" srcbuf="o" srcoff="{off}" dstbuf="o" dstoff="{off}" cnt="1" '
                f'depid="-1" deps="-1" hasdep="0"/>')
    xml = ('<algo name="far" proto="Simple" nchannels="1" nchunksperloop="3" ngpus="2" coll="allgather" '
           'inplace="1" outofplace="0" minBytes="0" maxBytes="0">'
           '<gpu id="0" i_chunks="0" o_chunks="3" s_chunks="0"><tb id="0" send="1" recv="1" chan="0">'
           + step(0, "r", 1) + step(1, "s", 0) + step(2, "s", 1) + '</tb></gpu>'
           '<gpu id="1" i_chunks="0" o_chunks="3" s_chunks="0"><tb id="0" send="0" recv="0" chan="0">'
           + step(0, "s", 1) + step(1, "r", 0) + step(2, "r", 2) + '</tb></gpu></algo>')
    pricing, _ = schedule_pricing(dgx1v, "Simple", "all_gather", (0, 1))
    tasks = {t.id: t for t in schedule_tasks(parse_msccl(xml), 1024.0, {0: "gpu0", 1: "gpu1"}, pricing).tasks}
    assert "0.0.0.0" in tasks["lat.0.0.2"].after and "0.0.0.1" not in tasks["lat.0.0.2"].after
    assert not any(a.startswith("0.0.0.") for a in tasks["lat.0.0.1"].after)
