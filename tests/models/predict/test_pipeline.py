"""The kernels' pipeline (models.predict.pipeline) and NCCL's launch reduction (models.engine.nccl.launch)."""

import math

import pytest
from hypothesis import assume, given, settings, strategies as st

import models
import topo
from models.engine.nccl.launch import LaunchError, reduced_launch
from models.engine.nccl.pipelining import pipelining
from models.predict.measure import measured
from models.predict.pipeline import DEFAULT_STEP_COSTS, Hop, Hops, PipelineError, channel_hops, pipeline_time

HOP = Hops(Hop("a", "b", 1e-6, "nvswitch"), None)


# ------------------------------------------------------------------ NCCL's reduction, at its boundaries
@pytest.mark.parametrize("nbytes, algorithm, protocol, nranks, nc, expected", [
    # ring LL: threshold 8 x nRanks = 96 B/thread, 512 threads: 49152 B per channel
    (6 * 49152, "ring", "LL", 12, 6, (6, 512)),          # exactly at the rule: not below it
    (6 * 49152 - 1, "ring", "LL", 12, 6, (5, 512)),      # one byte less: one channel shed
    (49152, "ring", "LL", 12, 6, (1, 512)),
    (49151, "ring", "LL", 12, 6, (1, 256)),              # one channel left: threads halve
    (1, "ring", "LL", 12, 6, (1, 64)),                   # 64 % 128 != 0: stop
    # LL128: 8 B x 640 threads per channel; 640 % 128 == 0 -> 320, 320 % 128 != 0: stop
    (8 * 640 * 4, "ring", "LL128", 8, 4, (4, 640)),
    (8 * 640 - 1, "ring", "LL128", 8, 4, (1, 320)),
    # Simple: 64 B x 512 threads
    (2 * 64 * 512, "tree", "Simple", 8, 16, (2, 512)),
    (2 * 64 * 512 - 1, "tree", "Simple", 8, 16, (1, 512)),
])
def test_reduction_follows_nccls_rule_at_its_boundaries(nbytes, algorithm, protocol, nranks, nc, expected):
    launch = reduced_launch(nbytes, nc, algorithm, protocol, nranks)
    assert (launch.nchannels, launch.nthreads) == expected


def test_simple_ring_adds_a_sync_warp_and_a_pcie_ring_runs_256_threads():
    assert reduced_launch(2**30, 4, "ring", "Simple", 8).block_threads == 512 + 32
    assert reduced_launch(2**30, 2, "ring", "Simple", 8, ring_bandwidth=12e9).nthreads == 256


@pytest.mark.parametrize("args", [(-1, 2, "ring", "LL", 2), (8, 0, "ring", "LL", 2), (8, 2, "ring", "LL256", 2)])
def test_reduction_rejects_bad_input(args):
    with pytest.raises(LaunchError):
        reduced_launch(*args)


# ------------------------------------------------------------------ closed forms
def test_one_channel_one_step_of_a_chain():
    # broadcast, LL128 on 4 ranks, one channel: 1000 B is one step; fill 3 hops; work once
    p = pipeline_time("broadcast", "ring", "LL128", 1000, nranks=4, graph_channels=1, rate=1e9, hops=HOP,
                      profile="2.27.7")
    assert (p.launch.nchannels, p.steps, p.step_bytes) == (1, 1, 1000)
    assert p.fill == pytest.approx(3e-6)
    assert p.time == pytest.approx(3e-6 + 1000 / 1e9 + DEFAULT_STEP_COSTS.of("LL128"))


def test_ring_steps_and_handshakes_at_a_known_step_count():
    # all_reduce Simple, 8 ranks, 8 channels, 1 GiB: 2 MiB chunks, 8 loops of 14 steps = 112 steps;
    # a step's 1 us handshake hides behind the other 1 MiB slice (1 MiB / (rate/8 channels))
    rate = 100e9
    p = pipeline_time("all_reduce", "ring", "Simple", 2**30, nranks=8, graph_channels=8, rate=rate, hops=HOP,
                      profile="2.27.7")
    assert (p.steps, p.step_bytes, p.fill) == (112, 2 * 2**20, 0.0)
    assert p.handshake == 0.0 and p.time == pytest.approx(2**30 / rate)
    # 64 KiB on one channel (the reduction leaves 2): chunk 64K / (2 x 8) = 4 KiB, 14 steps, each
    # waiting 1 us less its other slice's data time
    q = pipeline_time("all_reduce", "ring", "Simple", 2**16, nranks=8, graph_channels=8, rate=rate, hops=HOP,
                      profile="2.27.7")
    used = rate
    per_step = 2**16 / used / 14
    assert (q.launch.nchannels, q.steps, q.step_bytes) == (2, 14, 4096)
    assert q.handshake == pytest.approx(1e-6 - per_step)
    assert q.time == pytest.approx(14 * (1e-6 - per_step) + 2**16 / used)


def test_collnet_a_callers_algorithm_and_one_rank_are_not_pipelined():
    assert pipeline_time("all_reduce", "collnet_direct", "Simple", 2**20, nranks=8, graph_channels=8, rate=1e9,
                         hops=HOP, profile=None) is None
    assert pipeline_time("broadcast", "nvls", "Simple", 2**20, nranks=8, graph_channels=8, rate=1e9,
                         hops=HOP, profile=None) is None
    assert pipeline_time("all_reduce", "ring", "Simple", 2**20, nranks=1, graph_channels=8, rate=1e9,
                         hops=HOP, profile=None) is None


@pytest.mark.parametrize("kwargs", [{"rate": 0.0}, {"graph_channels": 0}, {"nbytes": -1}])
def test_pipeline_rejects_bad_input(kwargs):
    args = {"collective": "all_reduce", "algorithm": "ring", "protocol": "LL", "nbytes": 8, "nranks": 2,
            "graph_channels": 1, "rate": 1e9, "hops": HOP, "profile": None, **kwargs}
    with pytest.raises(PipelineError):
        pipeline_time(**args)


# ------------------------------------------------------------------ invariants
@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"]),
       st.sampled_from(["LL", "LL128", "Simple"]), st.integers(2, 16), st.integers(1, 32),
       st.integers(0, 2**31), st.integers(1, 2**20))
def test_time_is_monotone_in_size_and_never_beats_the_bandwidth_bound(collective, protocol, nranks, nc, size, step):
    def at(n):
        return pipeline_time(collective, "ring", protocol, n, nranks=nranks, graph_channels=nc, rate=50e9,
                             hops=HOP, profile="2.27.7")
    small, large = at(size), at(size + step)
    # a fixed choice: NCCL's reduction sheds channels below its threshold, a real step down in rate
    assume((small.launch.nchannels, small.launch.nthreads) == (large.launch.nchannels, large.launch.nthreads))
    assert large.time >= small.time * (1 - 1e-12)
    assert small.time >= size / 50e9 * (1 - 1e-12)


# ------------------------------------------------------------------ the measurement model with it
LARGE_SYSTEMS = sorted(topo.SYSTEMS) + ["2xdgxh100", "2xgb200nvl72"]
LARGE_SIZES = [64 * 2**20, 2**30]
#: Cells where the pipeline moves a large message by more than 1 %, for a physical reason: on the
#: 72 GPUs of an NVL72 rack NCCL runs all_gather / reduce_scatter at 64 MiB as a ring LL128 on 16
#: channels, so a step carries 64 MiB / (16 x 72) = 58255 B, a tenth of LL128's 576000-B step
#: (the band of 1-64 MiB on an 8-GPU node), and each of the 71 steps pays the block's work
#: (1.93 us, the DGX-2 figure [U] on Blackwell) beyond the 0.62 us the links leave it idle (they
#: run at 41.4 GB/s a channel, 56 % of NCCL's 73.4 GB/s LL128 cap of a block): +37 %.
SMALL_STEPS = {(s, c, 64 * 2**20) for s in ("gb200nvl72", "gb300nvl72") for c in ("all_gather", "reduce_scatter")}


@pytest.fixture(scope="module")
def large_fabrics():
    return {}


@pytest.mark.parametrize("system", LARGE_SYSTEMS)
@pytest.mark.parametrize("collective", ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"])
def test_large_messages_move_at_most_one_percent(large_fabrics, system, collective):
    if system not in large_fabrics:
        large_fabrics[system] = models.PreparedFabric(topo.build(system))
    fab = large_fabrics[system]
    e = models.estimate(fab, collective, LARGE_SIZES)
    before = measured(e, fab, pipeline=False).time
    m = measured(e, fab, pipeline=True)
    for size, b, a, p in zip(LARGE_SIZES, before, m.time, m.pipelines):
        if (system, collective, size) not in SMALL_STEPS:
            assert a == pytest.approx(b, rel=0.01), (system, collective, size)
            continue
        # the move is the exposed work of steps a tenth of LL128's step, nothing else
        assert (p.protocol, p.shape, p.steps) == ("LL128", "ring", 71)
        assert p.step_bytes * 8 < p.pipelining.step_bytes and 0 < p.exposed < p.work
        assert a - b == pytest.approx(p.steps * p.exposed, rel=1e-6) and a > b * 1.3


def test_the_nvl72_64_mib_cell_steps_as_an_8_gpu_ramp_cell(large_fabrics):
    """The 72-GPU 64 MiB all_gather (ring LL128, 16 channels of 45 GB/s) runs steps of the bytes,
    data time and exposed work of a forced ring LL128 all_gather of 16 x 8 x 58255 B on a DGX
    B200 (the same 16 x 45 GB/s ring, 8 GPUs): only the step count differs, 71 against 7, so its
    +37 % over NCCL's time is the ramp's per-step cost, not a fact of 72 ranks (pipeline module
    docstring, "The 72-GPU NVL72 64 MiB cell is a ramp cell")."""
    cells = {}
    for system, size in (("gb200nvl72", 64 * 2**20), ("dgxb200", 16 * 8 * 58255)):
        if system not in large_fabrics:
            large_fabrics[system] = models.PreparedFabric(topo.build(system))
        fab = large_fabrics[system]
        e = models.estimate(fab, "all_gather", [size], algorithm="ring", protocol="LL128")
        m = measured(e, fab)
        cells[system] = (m.pipelines[0], float(m.time[0]), float(measured(e, fab, pipeline=False).time[0]))
    (big, big_t, big_table), (small, small_t, small_table) = cells["gb200nvl72"], cells["dgxb200"]
    assert (big.steps, small.steps) == (71, 7)
    assert big.step_bytes == small.step_bytes == 58255 and big.launch.nchannels == small.launch.nchannels == 16
    assert big.data_time / big.steps == pytest.approx(small.data_time / small.steps, rel=1e-3)
    assert big.exposed == pytest.approx(small.exposed, rel=1e-3) and big.exposed > 0
    for p, t, table in ((big, big_t, big_table), (small, small_t, small_table)):
        assert t - table == pytest.approx(p.steps * p.exposed, rel=1e-6)
    # the same per-step add weighs more against NCCL's 14 us base over 71 steps than over 7
    assert big_t / big_table > small_t / small_table > 1.2


def test_a_link_bound_block_hides_its_work_in_the_wait():
    """Where a link, not the block, binds (the block could move ``block_rate``), the block waits
    ``per_step x (1 - rate / block_rate)`` a step, and its work fills that wait first."""
    kwargs = dict(nranks=8, graph_channels=8, rate=100e9, hops=HOP, profile="2.27.7")
    capped = pipeline_time("all_gather", "ring", "LL128", 2**24, **kwargs)
    slack = pipeline_time("all_gather", "ring", "LL128", 2**24, block_rate=200e9, **kwargs)
    per_step = capped.data_time / capped.steps
    assert capped.exposed == pytest.approx(DEFAULT_STEP_COSTS.of("LL128"))
    assert slack.exposed == pytest.approx(max(0.0, DEFAULT_STEP_COSTS.of("LL128") - per_step / 2))
    hidden = pipeline_time("all_gather", "ring", "LL128", 2**24, block_rate=1e15, **kwargs)
    assert per_step > DEFAULT_STEP_COSTS.of("LL128") and hidden.exposed == 0.0
    # a block rate below the rate is the rate (the cell's own figure already binds)
    assert pipeline_time("all_gather", "ring", "LL128", 2**24, block_rate=1e9, **kwargs).exposed == capped.exposed


def test_dgx2_calibration_sweep_mid_band_improves():
    # the fit's own data (tests/data/dgx2_12gpu_nccl_tests.json): all_reduce 1-16 MiB, -g 12, 2.5.7
    import json
    from pathlib import Path
    rows = json.loads((Path(__file__).parents[2] / "data" / "dgx2_12gpu_nccl_tests.json").read_text())
    rows = [r for r in rows["collectives"]["all_reduce"]["rows"] if 2**20 <= r["size_bytes"] <= 2**24]
    fab = models.PreparedFabric(topo.build("dgx2"), nccl="2.5.7")
    e = models.estimate(fab, "all_reduce", [r["size_bytes"] for r in rows], gpus=list(range(12)))
    measured_us = [r["oop_time_us"] for r in rows]
    errs = {flag: [abs(t * 1e6 / m - 1) for t, m in zip(measured(e, fab, gpus_per_thread=12, pipeline=flag).time,
                                                        measured_us)] for flag in (False, True)}
    print("all_reduce 1-16 MiB |time error| table:", [f"{x:.1%}" for x in errs[False]],
          "pipeline:", [f"{x:.1%}" for x in errs[True]])
    assert max(errs[True]) < 0.15 < max(errs[False])
    assert pipelining("2.5.7", "all_reduce", "LL128").step_bytes == 576000


def test_ll128_step_work_is_the_dgx2_least_squares():
    """Re-derives DEFAULT_STEP_COSTS' LL128 work (the one identifiable constant) from the DGX-2
    sweep: out-of-place rows 1 KiB - 64 MiB of all_reduce, broadcast, reduce, -g 12, NCCL 2.5.7."""
    import json
    from pathlib import Path
    from types import MappingProxyType

    import numpy as np

    from models.predict.pipeline import StepCosts

    run = json.loads((Path(__file__).parents[2] / "data" / "dgx2_12gpu_nccl_tests.json").read_text())
    fab = models.PreparedFabric(topo.build("dgx2"), nccl="2.5.7")
    data = []
    for c in ("all_reduce", "broadcast", "reduce"):
        rows = [r for r in run["collectives"][c]["rows"] if 2**10 <= r["size_bytes"] <= 2**26]
        e = models.estimate(fab, c, [r["size_bytes"] for r in rows], gpus=run["cuda_visible_devices"])
        data.append((e, np.array([r["oop_time_us"] for r in rows]) * 1e-6))

    def cost(work):
        costs = StepCosts(MappingProxyType({"LL": 0.0, "LL128": work, "Simple": 0.0}), "")
        return sum(np.sum((measured(e, fab, gpus_per_thread=12, step_costs=costs).time / t - 1) ** 2)
                   for e, t in data)

    coarse = np.arange(0.0, 4.0, 0.1) * 1e-6
    middle = coarse[np.argmin([cost(w) for w in coarse])]
    fine = np.arange(middle - 0.1e-6, middle + 0.1e-6, 0.01e-6)
    best = fine[np.argmin([cost(w) for w in fine])]
    print(f"LL128 step work: {best * 1e6:.2f} us")
    assert DEFAULT_STEP_COSTS.of("LL128") == pytest.approx(best, abs=0.02e-6)


# ------------------------------------------------------------------ across node counts (issue 39, item 5)
@pytest.mark.parametrize("nnodes", [2, 4, 8, 16])
def test_network_hops_and_per_nic_ratio_across_node_counts(nnodes):
    """dgxh100 clusters, all_reduce: the per-NIC ratio is the port's at every node count (nothing
    is fitted to a node count); a ring's step waits on average for nnodes of its n hops over the
    network; a tree's fill is 2 x (ppn - 1 + log2 nnodes) hops (NCCL's own count, tuning.cc)."""
    fab = models.PreparedFabric(topo.build(f"{nnodes}xdgxh100"))
    ring = models.estimate(fab, "all_reduce", 2**20, algorithm="ring", protocol="LL128").measurement
    tree = models.estimate(fab, "all_reduce", 2**20, algorithm="tree", protocol="LL128").measurement
    assert ring.link == tree.link == "ib_ndr" and ring.ratio == pytest.approx(49.6875 / 48, rel=1e-3)
    p, t = ring.pipelines[0], tree.pipelines[0]
    hops = p.hops
    assert hops.nnodes == nnodes and hops.inter.link == "network" and hops.intra.link == "nvswitch"
    n = 8 * nnodes
    assert p.steps == 2 * (n - 1)
    assert p.handshake == pytest.approx(((n - nnodes) * hops.intra.latency + nnodes * hops.inter.latency) / n)
    depth_inter = int(math.log2(nnodes))
    assert t.fill == pytest.approx(2 * (7 * hops.intra.latency + depth_inter * hops.inter.latency))


def test_channel_hops_on_one_host_have_no_network_hop():
    G = topo.build("dgxh100")
    hops = channel_hops(G, ("gpu0", "gpu1", "gpu2"), ("gpu0", "gpu1", "gpu2"))
    assert hops.inter is None and hops.nnodes == 1 and hops.intra.link == "nvswitch"
    assert hops.path(3, 0) == pytest.approx(3 * hops.intra.latency)


def test_explain_shows_the_pipeline_working():
    from models.present.explain import explain
    fab = models.PreparedFabric(topo.build("dgx2"), nccl="2.5.7")
    e = models.estimate(fab, "all_reduce", 8 * 2**20, gpus=list(range(12)))
    text = explain(e.measurement)
    # 8 MiB / (6 channels x 12 ranks) = 116509 B a step, 22 steps, LL128's 1.93 us of work each
    assert "pipeline (ring, LL128) at 8388608 B: 6 of 6 channel(s), 640 threads" in text
    assert "22 step(s) per channel of 116509 B (step buffer 576000 B" in text
    assert "(nvswitch)" in text and "kernel work 1.930 us of which 1.930 us exposed" in text
    assert "time = max(floor + g x launch_per_gpu, nccl_latency, pipeline latency) + pipeline work" in text
