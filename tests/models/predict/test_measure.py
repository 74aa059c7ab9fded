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
from models.predict.measure import DEFAULT, LINK_CLASSES, MeasurementError, link_classes, measured
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

    grid = np.arange(0.80, 0.90, 0.0001)
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
    assert DEFAULT.ratio("ib_edr") == pytest.approx(12.5 * 4096 / 4122 * eff / 12.5)
    assert DEFAULT.ratio("pcie3_x16") == pytest.approx(8 * 16 / 8 * 128 / 130 * 256 / 282 * eff / 12.0)
    assert DEFAULT.ratio("nvlink1") < DEFAULT.ratio("nvlink2")  # NCCL's 18 of 20 vs 20 of 25.78
    with pytest.raises(MeasurementError, match="unknown link class"):
        DEFAULT.achieved("nvlink9")
    with pytest.raises(MeasurementError, match="unknown parameter"):
        DEFAULT.with_values(speed=1)


def test_across_hosts_the_network_binds():
    G = topo.build("2xdgx1v")
    e = models.estimate(G, "all_reduce", 2**30)
    assert "ib_edr" in link_classes(e, G)
    m = measured(e, G)
    assert m.link == "ib_edr" and m.ratio < 0.9
    assert m.busbw < e.nccl_busbw  # estimate() applies the same model: e.busbw is m.busbw
    assert m.busbw == pytest.approx(e.busbw)
    assert "ib_edr" in explain(m) and "InfiniBand Architecture Specification" in explain(m)


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
