"""The measurement model reads the NCCL release from the NCCL view that carries it."""

from __future__ import annotations

import pytest

import topo
from models.engine.nccl.system import NcclSystem
from models.predict.collectives import Estimator
from models.predict.measure import MeasurementError, measured
from models.present.explain import explain


def test_measured_takes_the_release_from_the_nccl_view():
    """NCCL 2.12 counts 22 GB/s per V100 NVLink, 2.27 counts 20 (src/graph/topo.h at each tag), so
    the achieved/NCCL ratio differs by 20/22; a second, different profile is refused."""
    G = topo.dgx1v()
    old, new = Estimator(G, profile="2.12.12"), Estimator(G)
    e_old = old.estimate("all_reduce", 2**30)
    e_new = new.estimate("all_reduce", 2**30)
    assert measured(e_old, old.fabric).ratio / measured(e_new, new.fabric).ratio == pytest.approx(20 / 22)
    assert measured(e_old, G, profile="2.12.12").ratio == measured(e_old, old.fabric).ratio
    with pytest.raises(MeasurementError, match="runs 2.12.12"):
        measured(e_old, NcclSystem(G, "2.12.12"), profile="2.27.7")


def test_explain_names_the_release_and_its_pipeline():
    e = Estimator(topo.dgx1(), profile="2.3.7").estimate("broadcast", 64 * 2**20)
    text = explain(e)
    assert "NCCL release 2.3.7 (v2.3.7-1): rings from NVLink counts, no trees, LL/Simple by size " \
           "threshold, no LL128" in text
    assert "pipeline: Simple broadcast (chain) of NCCL 2.3.7: steps of 262144 B" in text
    assert "not added (" in text and "but v2.3's chains, which post smaller slices)" in text


def test_pipeline_fill_of_a_chain_and_of_a_ring():
    """Broadcast on 8 DGX-1 GPUs with NCCL 2.3.7: 8 rings, 256 KiB sub-steps (4 MiB / (BUFCHUNKS 2
    x SUBSTEPS 8)), 6 slices to fill; all_reduce runs on a ring: no fill."""
    fabric = Estimator(topo.dgx1(), profile="2.3.7")
    e = fabric.estimate("broadcast", 64 * 2**20)
    fill = e.measurement.pipeline
    assert (fill.nchannels, fill.fill_slices) == (int(e.nchannels), 6)
    assert fill.fill_bytes == 6 * 256 * 1024 * fill.nchannels
    assert fill.fill_time == pytest.approx(fill.fill_bytes / (float(e.measurement.nccl_bandwidth)
                                                              * e.measurement.ratio))
    ring = fabric.estimate("all_reduce", 64 * 2**20).measurement.pipeline
    assert ring.fill_slices == 0 and ring.fill_bytes == 0
    assert fabric.estimate("alltoall", 2**20).measurement.pipeline is None


def test_the_dgx2_runs_leave_no_room_for_a_slice_fill():
    """Why the fill is shown and not added: on the 2.5-era DGX-2 runs (12 ranks, -g 12), time(S)
    between 1 and 8 GiB is a line whose intercept, less the host term (12 launches), is far below
    the store-and-forward fill of 10 slices of 512 KiB that BROADCAST_SLICESTEPS x stepSize gives."""
    import json

    import numpy as np

    from models.predict.measure import DEFAULT
    from tests.conftest import DATA

    runs = json.loads((DATA / "dgx2_12gpu_nccl_tests.json").read_text())
    fabric = Estimator(topo.build("dgx2"), profile="2.5.7", gpus_per_thread=12)
    for collective in ("broadcast", "reduce"):
        rows = [r for r in runs["collectives"][collective]["rows"] if r["size_bytes"] >= 2**30]
        size = np.array([r["size_bytes"] for r in rows], dtype=float)
        time = np.array([r["oop_time_us"] for r in rows]) * 1e-6
        slope, intercept = np.polyfit(size, time, 1)
        room = intercept - 12 * DEFAULT.launch_per_gpu
        fill = fabric.estimate(collective, 2**30, runs["cuda_visible_devices"]).measurement.pipeline
        assert fill.fill_slices == 10 and fill.fill_time > 200e-6
        assert room < fill.fill_time / 5, (collective, room, fill.fill_time)


def test_a_release_fill_difference_would_remove_time_the_model_never_had():
    """Why no release's pipeline adds time (models.predict.measure, "Each release's pipeline adds
    no time"). By hand, from the sources' constants: a 4 MiB broadcast with NCCL 2.3.7 on the 8
    P100s of a DGX-1 runs 8 channels of 512 KiB; v2.3 posts 4 MiB / (BUFCHUNKS 2 x SUBSTEPS 8) =
    256 KiB sub-steps, the reference 4 MiB / NCCL_STEPS 8 = 512 KiB slices; 6 slices to fill
    (8 ranks - 2). The difference, 6 x (256 - 512) KiB x 8 channels = -12 MiB, is 3 times the
    whole transfer: added to a time that holds none of the reference's fill, it would leave a
    negative time."""
    from models.engine.nccl.pipelining import pipelining

    KiB = 1024
    e = Estimator(topo.dgx1(), profile="2.3.7").estimate("broadcast", 4 * 2**20)
    m = e.measurement
    assert (str(e.algorithm), str(e.protocol), int(e.nchannels)) == ("ring", "Simple", 8)
    by_hand = 6 * (256 * KiB - 512 * KiB) * 8
    ref = pipelining("2.27.7", "broadcast", "Simple").fill_bytes(4 * 2**20, 8, 8)
    assert m.pipeline.fill_bytes - ref == by_hand == -3 * 4 * 2**20
    achieved = float(m.nccl_bandwidth) * m.ratio
    assert m.time + by_hand / achieved < 0
    assert m.time == pytest.approx(m.startup + 4 * 2**20 / achieved)    # no fill in the time


# ------------------------------------------------- NCCL 2.3 on a P100 DGX-1: what the residuals rest on
def test_the_5_gpu_fallback_ring_runs_at_the_tuners_socket_figure_and_nothing_binds():
    """GPUs 0-4, NCCL 2.3.7, 64 MiB all_reduce: one ring (rank order) whose SHM hop 3 -> 4 crosses
    the sockets, priced at v2.5.7's QPI_BW 8 GB/s; the socket link has no link class, so the
    measurement is the tuner's: time = (8.4 + 8 x 5.7) us (v2.5.7 ring Simple latency, 8 steps)
    + 64 MiB / (8 GB/s x 5 / 8), 7.97 GB/s busbw."""
    e = Estimator(topo.dgx1(), profile="2.3.7").estimate("all_reduce", 64 * 2**20, "0-4")
    m = e.measurement
    assert (int(e.nchannels), str(e.protocol), m.link, m.ratio) == (1, "Simple", "", 1.0)
    by_hand = (8.4 + 8 * 5.7) * 1e-6 + 64 * 2**20 / (8e9 * 5 / 8)
    assert m.time == pytest.approx(by_hand)
    assert m.busbw == pytest.approx(64 * 2**20 / by_hand * 2 * 4 / 5)
    assert round(m.busbw / 1e9, 2) == 7.97


def test_the_staged_copy_facts_cannot_lower_a_ring_with_one_shm_hop():
    """The SHM hop moves what a copy staged through host memory moves (writes up the sender's PCIe
    path, reads back down the receiver's). Priced by the staged shares fitted on the DGX-1V row
    (models.predict.p2p) and the kernels' share (measure.DEFAULT), by hand on PCIe 3.0 x16
    (8 GT/s x 16 lanes x 128/130 / 8 = 15.754 GB/s): one way 0.6068 x 15.754 x 0.8405 = 8.03
    GB/s, not below the 8 GB/s the 5-GPU ring runs at; both ways through one GPU (two SHM
    hops meeting there, e.g. {0, 5}) 0.4578 x 15.754 x 0.8405 = 6.06 GB/s."""
    from models.predict.measure import DEFAULT
    from models.predict.p2p import EFFICIENCIES

    pcie3_x16 = 8e9 * 16 * 128 / 130 / 8
    assert topo.LINKS["pcie3_x16"].bandwidth == pytest.approx(pcie3_x16)
    one_way = EFFICIENCIES["staged"].value * pcie3_x16 * DEFAULT.transfer_efficiency
    both_ways = EFFICIENCIES["staged_duplex"].value * pcie3_x16 * DEFAULT.transfer_efficiency
    assert one_way == pytest.approx(0.6068 * 15.7538e9 * 0.8405, rel=1e-4)
    assert round(one_way / 1e9, 2) == 8.03 and round(both_ways / 1e9, 2) == 6.06
    ring = Estimator(topo.dgx1(), profile="2.3.7").estimate("all_reduce", 64 * 2**20, "0-4").ring
    assert ring.bw_intra == pytest.approx(8e9) and one_way >= ring.bw_intra > both_ways


@pytest.mark.parametrize("version, threads", [("2.3.5", 128), ("2.3.7", 128), ("2.4.8", 256)])
def test_2018_releases_run_1_to_64_mb_as_they_run_1_gib(version, threads):
    """common_coll.h v2.3.7-1: LL only up to nRanks x nRings x min(256, nThreads) x threadThreshold
    (32 on Pascal) = 8 x 8 x threads x 32 on the 8 P100s: 256 KiB (512 KiB in 2.4, 256 threads);
    above it a call takes Simple on all 8 rings, the same at 1 MiB as at 1 GiB, so neither the
    protocol nor the rings can make mid sizes slower while leaving 1 GiB."""
    from models.engine.nccl.channels import channel_graphs
    from models.engine.nccl.tuning import ll_threshold

    comm = channel_graphs(NcclSystem(topo.dgx1(), version), [f"gpu{i}" for i in range(8)]).communicator
    assert comm.ring.nthreads == threads
    assert ll_threshold(comm) == 8 * 8 * threads * 32 < 2**20
    fabric = Estimator(topo.dgx1(), profile=version)
    sizes = [2**20, 4 * 2**20, 16 * 2**20, 64 * 2**20, 2**30]
    for collective in ("broadcast", "all_gather"):
        e = fabric.estimate(collective, sizes)
        assert set(e.protocol.tolist()) == {"Simple"} and set(e.nchannels.tolist()) == {8}
