"""The measurement model: its fitted constants re-derived from the DGX-2 runs, its predictions
from hardware facts, and the residuals before and after (printed; run pytest -s to see them).

Data: tests/data/dgx2_12gpu_nccl_tests.json, nccl-tests -g 12 on 12 GPUs of a DGX-2 as
published in the wohlbier/nccl-tests README, "Results on dgx-2" (2020).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import models
import topo
from models.predict.measure import DEFAULT, LINK_CLASSES, MeasurementError, measured
from models.present.explain import explain
from tests.conftest import DATA

RUN = json.loads((DATA / "dgx2_12gpu_nccl_tests.json").read_text())
GPUS = RUN["cuda_visible_devices"]
# Rows the data's notes call suspect: all_gather out-of-place (errors >= 4 GB, 35 % below its
# in-place twin) and reduce_scatter above 64 MB (alternating 48/62 GB/s). Not targets.
TARGET = {"all_reduce": "oop", "broadcast": "oop", "reduce": "oop", "all_gather": "ip",
          "reduce_scatter": "oop"}


@pytest.fixture(scope="module")
def dgx2():
    return topo.build("dgx2")


def rows(collective):
    return [r for r in RUN["collectives"][collective]["rows"] if r["size_bytes"] > 0]


def test_launch_per_gpu_is_the_small_message_plateau_over_12():
    small = [r[k] for c in RUN["collectives"] for r in rows(c) if r["size_bytes"] <= 65536
             for k in ("oop_time_us", "ip_time_us")]
    assert len(small) == 128
    assert DEFAULT.launch_per_gpu == pytest.approx(np.mean(small) / 12 * 1e-6, abs=1e-9)


def test_transfer_efficiency_is_the_large_message_least_squares(dgx2):
    data = []
    for c in ("all_reduce", "broadcast", "reduce"):
        big = [r for r in rows(c) if r["size_bytes"] >= 2**26]
        sizes = np.array([r["size_bytes"] for r in big])
        data.append((models.estimate(dgx2, c, sizes, GPUS), np.array([r["oop_time_us"] for r in big]) * 1e-6))
    assert sum(len(t) for _, t in data) == 24

    def cost(eff):
        m = DEFAULT.with_values(transfer_efficiency=eff)
        return sum(np.sum((measured(e, dgx2, gpus_per_thread=12, model=m).time / t - 1) ** 2)
                   for e, t in data)

    # The least squares over 0.80-0.90 to 1e-4. The cost falls, then rises over that range (one
    # minimum), so a grid of 2e-3, then one of 1e-4 around its best, finds what the full grid of
    # 1e-4 finds (0.8405), in a tenth of the evaluations.
    coarse = np.arange(0.80, 0.90, 0.002)
    middle = coarse[np.argmin([cost(x) for x in coarse])]
    grid = np.arange(middle - 0.002, middle + 0.002, 0.0001)
    best = grid[np.argmin([cost(x) for x in grid])]
    assert DEFAULT.transfer_efficiency == pytest.approx(best, abs=2e-4)


def test_residuals_before_and_after(dgx2):
    """Prints the table of the report; asserts what the model must do on its own data."""
    print("\ncollective      | before: time med/max  busbw med/max | after: time med/max  busbw med/max")
    for c, side in TARGET.items():
        rs = rows(c)
        if c == "reduce_scatter":
            rs = [r for r in rs if r["size_bytes"] <= 2**26]
        sizes = np.array([r["size_bytes"] for r in rs])
        t = np.array([r[f"{side}_time_us"] for r in rs]) * 1e-6
        b = np.array([r[f"{side}_busbw_gbs"] for r in rs]) * 1e9
        e = models.estimate(dgx2, c, sizes, GPUS)
        m = measured(e, dgx2, gpus_per_thread=12)
        ok = b > 0
        stats = []
        for pt, pb in ((e.time, e.busbw), (m.time, m.busbw)):
            te, be = np.abs(pt / t - 1), np.abs(pb[ok] / b[ok] - 1)
            stats.append((np.median(te), te.max(), np.median(be), be.max()))
        print(f"{c:15s} | " + " | ".join("%5.1f%% %5.1f%%   %5.1f%% %5.1f%%" % tuple(100 * x for x in s)
                                         for s in stats))
        assert stats[1][0] < 0.07 and stats[1][0] < stats[0][0] / 5
        if c in ("all_reduce", "broadcast", "reduce"):  # large messages: within 3 % busbw
            big = sizes >= 2**28
            assert np.all(np.abs(m.busbw[big] / b[big] - 1) < 0.03)


def test_nvlink2_payload_rate_predicts_the_dgx1v_p2p_row():
    # Not fitted to it: 25.78125 Gb/s x 8 lanes x 256/272 against the DGX-1V p2pBandwidthLatencyTest
    # NVLink entries (tests/data/dgx1v_p2p_gpu0_row.json): 48.49/50, 48.49/50, 96.85/100, 96.9/100.
    row = json.loads((DATA / "dgx1v_p2p_gpu0_row.json").read_text())["bidirectional_p2p_enabled_gbps"]
    measured_share = np.mean([row[1] / 50, row[2] / 50, row[3] / 100, row[4] / 100])
    assert LINK_CLASSES["nvlink2"].payload_rate / 25e9 == pytest.approx(measured_share, rel=0.005)


def test_ratios_follow_from_hardware_facts():
    eff = DEFAULT.transfer_efficiency
    # a NIC port: its DMA moves the data, at the wire's payload rate (no kernel efficiency)
    assert DEFAULT.ratio("ib_edr") == pytest.approx(12.5 * 4096 / 4122 / 12.5)
    assert DEFAULT.ratio("ib_ndr") == pytest.approx(50 * 4096 / 4122 / 50)
    # PCIe driven by NCCL's kernels: 256 B writes, 24 B of TLP overhead, DLLPs 4 B per TLP
    assert DEFAULT.ratio("pcie3_x16") == pytest.approx(8 * 16 / 8 * 128 / 130 * 256 / 284 * eff / 12.0)
    assert DEFAULT.ratio("nvlink1") < DEFAULT.ratio("nvlink2")  # NCCL's 18 of 20 vs 20 of 25.78
    with pytest.raises(MeasurementError, match="unknown link class"):
        DEFAULT.achieved("nvlink9")
    with pytest.raises(MeasurementError, match="unknown parameter"):
        DEFAULT.with_values(speed=1)


@pytest.mark.parametrize("system, port, port_GBps, nccl_GBps", [
    ("2xdgxa100", "ib_hdr", 25, 24.0), ("2xdgxh100", "ib_ndr", 50, 48.0)])
def test_across_hosts_the_nic_path_binds(system, port, port_GBps, nccl_GBps):
    """From PCIe 4.0 on, each generation's port binds its ring (GPU and NIC share a PCIe switch,
    and PCIe DMA has headroom by its specification): its payload rate over NCCL's figure for the
    path, NCCL's PCIe figure."""
    G = topo.build(system)
    e = models.estimate(G, "all_reduce", 2**30, algorithm="ring")
    m = measured(e, G)
    assert m.link == port and m.nic_paths
    assert {p.port for p in m.nic_paths} == {port}
    assert m.ratio == pytest.approx(port_GBps * 4096 / 4122 / nccl_GBps)
    assert m.busbw == pytest.approx(e.busbw)  # estimate() applies the same model
    assert m.busbw > 0.97 * e.nccl_busbw      # within NCCL's latency of its own figure, or above
    text = explain(m)
    assert "network path" in text and f"{port} binds" in text and "nic_efficiency" in text


def test_across_hosts_pcie3_dma_binds_edr_clusters():
    """PCIe 3.0 DMA both ways, as measured on a DGX-1V (9.56 GB/s each way over a PLX switch's
    x16 uplink, tests/data/dgx1v_p2p_gpu0_row.json), is below an EDR port's 12.42 and NCCL's 12."""
    G = topo.build("2xdgx1v")
    e = models.estimate(G, "all_reduce", 2**30, algorithm="ring")
    m = measured(e, G)
    assert m.link == "pcie3_x16" and {p.port for p in m.nic_paths} == {"ib_edr"}
    assert m.ratio == pytest.approx(9.56 / 12, rel=1e-3)
    text = explain(m)
    assert "pcie3_x16 binds" in text and "dma:pcie3_x16 = 0.6068" in text


# Project-level verdicts. The project's predictions were checked against measurements it does
# not have; only the verdicts came back (issue 21, with the model's figures of the time). They
# are kept here as what the model must still satisfy; nothing is fitted to them.
def test_verdict_16_dgx2_over_edr_all_reduce_within_4_percent_of_a_measurement_18_percent_below_nccl():
    """16 DGX-2 over EDR InfiniBand, all_reduce 1 GiB: the model's 71.2 GB/s busbw was within
    ~4 % of the measurement, which is about 18 % below NCCL's own estimate (84.7)."""
    G = topo.build("16xdgx2")
    e = models.estimate(G, "all_reduce", 2**30)
    assert e.nccl_busbw == pytest.approx(84.7e9, rel=2e-3)
    measurement = (1 - 0.18) * e.nccl_busbw  # ~69.5 GB/s
    assert abs(e.busbw / measurement - 1) < 0.04
    assert e.measurement.link == "pcie3_x16"


def test_verdict_2_dgx_h100_over_ndr_ring_forced_more_than_10_percent_above_the_old_311_6():
    """Two DGX H100 over 400 Gb/s InfiniBand, all_reduce 1 GiB with the ring forced: the
    model's 311.6 GB/s busbw was more than 10 % below the measured busbw."""
    G = topo.build("2xdgxh100")
    e = models.estimate(G, "all_reduce", 2**30, algorithm="ring")
    assert e.busbw > 311.6e9 / (1 - 0.10)
    assert e.measurement.link == "ib_ndr"


def test_a_nic_path_faster_than_nccl_assumed_is_capped_by_nvlink_headroom():
    """Across hosts, the channels also cross NVLink: when NVLink moves less than the network
    path would carry (here a model whose kernels sustain half the wire), NVLink's headroom
    (achieved / reserved) binds."""
    G = topo.build("2xdgxh100")
    slow = DEFAULT.with_values(transfer_efficiency=0.5)
    e = models.estimate(G, "all_reduce", 2**30, algorithm="ring")
    m = measured(e, G, model=slow)
    assert m.link == "nvlink4" and m.ratio < 1


def test_explain_lists_every_term(dgx2):
    m = measured(models.estimate(dgx2, "all_reduce", 2**20, GPUS), dgx2, gpus_per_thread=12)
    text = explain(m)
    for needle in ("host term", "12 x 4.985 us", "NCCL latency term", "ratio", "launch_per_gpu",
                   "floor", "transfer_efficiency", "fitted to", "[U]"):
        assert needle in text


@pytest.mark.parametrize("g", [0, -1, 13, 1.5, True, "2"])
def test_bad_gpus_per_thread(dgx2, g):
    e = models.estimate(dgx2, "all_reduce", 8, GPUS)
    with pytest.raises(MeasurementError, match="gpus_per_thread"):
        measured(e, dgx2, gpus_per_thread=g)


@settings(max_examples=25, deadline=None)
@given(size=st.integers(0, 2**33), g=st.integers(1, 8))
def test_time_grows_with_g_and_never_beats_the_host(size, g):
    G = topo.build("dgx1v")
    e = models.estimate(G, "all_reduce", size, "0-7")
    a, b = measured(e, G, gpus_per_thread=g), measured(e, G, gpus_per_thread=min(8, g + 1))
    assert a.host_time <= a.time <= b.time
    assert a.time >= e.latency


def test_all_gather_and_reduce_scatter_rows_are_misaligned_per_rank(dgx2):
    """Why the DGX-2 all_gather (out-of-place) and reduce_scatter rows are not targets.

    That early-2020 nccl-tests gave each rank count = size / 4 / 12 floats with no rounding, so a
    rank's block starts at rank x count x 4 bytes, 4 or 8 bytes off a 16-byte boundary at every
    size; today's nccl-tests rounds count down to 16 bytes (src/all_gather.cu and
    src/reduce_scatter.cu, ``(count/nranks) & -(16/eltSize)``). NCCL 2.5's copy and reduce loop
    (NVIDIA/nccl v2.5.7-1 src/collectives/device/common_kernel.h, ReduceOrCopyMulti) takes its
    128-bit vector path only when every pointer of an operation has the same address modulo 16,
    and otherwise runs the whole slice element by element. ReduceScatter reads its input at
    every rank's block against an aligned FIFO: slow at every step, slower at 4 bytes off than
    at 8. AllGather in place copies between the same offsets of two ranks' outputs (aligned
    alike); out of place its first step copies the aligned input to the rank's block of the
    output: only that step is slow. Below 64 MiB NCCL 2.5 chooses LL128, which has no direct
    pointers: every step writes a received block to its misaligned place, so in place and out of
    place are both slow there (about half the model, as the issue saw). all_reduce, broadcast and
    reduce are cut by NCCL itself and stay aligned. The model predicts NCCL's aligned path.
    """
    rs = [r for r in rows("reduce_scatter") if r["size_bytes"] >= 2**26]
    counts = [r["size_bytes"] // 4 // 12 for r in rs]
    assert all(c * 4 % 16 for c in counts)  # every block misaligned
    four = [r["oop_busbw_gbs"] for r, c in zip(rs, counts) if c * 4 % 8]
    eight = [r["oop_busbw_gbs"] for r, c in zip(rs, counts) if not c * 4 % 8]
    assert four and eight and max(four) < min(eight) < 0.55 * 123.1  # all below half of all_reduce
    ag = [r for r in rows("all_gather") if r["size_bytes"] >= 2**26]
    assert all(r["size_bytes"] // 4 // 12 * 4 % 16 for r in ag)
    assert all(r["ip_busbw_gbs"] > 1.4 * r["oop_busbw_gbs"] for r in ag)
    # where every copy is aligned alike (in place, Simple with direct pointers from 64 MiB) the
    # data meets the model's aligned path
    sizes = np.array([r["size_bytes"] for r in ag])
    m = measured(models.estimate(dgx2, "all_gather", sizes, GPUS), dgx2, gpus_per_thread=12)
    assert np.all(np.abs(np.array([r["ip_busbw_gbs"] for r in ag]) * 1e9 / m.busbw - 1) < 0.10)
    # all_reduce's buffers (2^k bytes) are sliced by NCCL into 16-byte multiples: fast
    assert all(r["size_bytes"] & (r["size_bytes"] - 1) == 0 and r["oop_busbw_gbs"] > 116
               for r in rows("all_reduce") if r["size_bytes"] >= 2**26)


def test_point_to_point_flows_across_hosts_count_every_reachable_nic():
    G = topo.build("2xdgx1v")
    e = models.estimate(G, "sendrecv", 2**28)
    assert e.measurement.link == "pcie3_x16" and len(e.measurement.nic_paths) == 4
    assert e.measurement.ratio == pytest.approx(9.56 / 12, rel=1e-3)
    # a NIC cut off its host's PCIe tree carries nothing: the others still count
    G.remove_edges_from([edge for edge in list(G.edges("h0.mlx5_0")) + list(G.in_edges("h0.mlx5_0"))
                         if G.edges[edge]["kind"] == "pcie"])
    m = models.estimate(G, "sendrecv", 2**28).measurement
    assert {p.nic for p in m.nic_paths} == {"h0.mlx5_1", "h0.mlx5_2", "h0.mlx5_3"}


def test_dgx_h200_is_predicted_as_a_dgx_h100_and_memory_binds_neither():
    """The H200 residual's first question (models.predict.measure, "Residuals"): NCCL and the
    fabric see the same GPU (sm90, 18 NVLink 4 links, NVSwitch gen3), so the prediction is the
    same; HBM (3.35 TB/s H100, 4.8 TB/s H200, [S105] [S106]) could only separate them if a
    collective used most of it: a ring all_reduce touches about 6 (n - 1) / n bytes of a GPU's
    memory per byte of algbw, NVLS about 2 (the switch reads each GPU's data, the result is
    written back), both well under H100's."""
    n = 8
    touched = {"ring": 6 * (n - 1) / n, "nvls": 2.0}
    busbw = {}
    for system, memory in (("dgxh100", 3.35e12), ("dgxh200", 4.8e12)):
        G = topo.build(system)
        hbm = min(d["memory_bandwidth"] for _, d in G.nodes(data=True) if d.get("kind") == "gpu")
        assert hbm == pytest.approx(memory)
        for algorithm, per_byte in touched.items():
            m = measured(models.estimate(G, "all_reduce", 2**33, algorithm=algorithm), G)
            busbw[system, algorithm] = m.busbw
            assert m.algbw * per_byte < 3.35e12 / 3
    for algorithm in touched:
        assert busbw["dgxh100", algorithm] == busbw["dgxh200", algorithm]
