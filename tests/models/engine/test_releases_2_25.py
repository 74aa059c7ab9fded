"""NCCL 2.25-2.32: the profiles and behaviour rows of the appendix "releases 2.25-2.32" of the
NCCL reference note, checked against its figures.

Known answers, each from NVIDIA/nccl at the tag the profile names:
- per-channel caps of Blackwell by release (src/graph/tuning.cc; the appendix's table C.8);
- ``hwLat[NET][NVLSTree][Simple]`` 14 then 20.9 µs from v2.29.2 (tuning.cc);
- the NVLS AllReduce bus bandwidth of 8 B200 and of a GB200 NVL72 clique, v2.27's
  ``nCh x min(bwIntra, bwInter)`` against v2.28's ``nCh x min(bwIntra x eff x (nCh-1)/nCh x 2,
  bwInter)``: 640 / 720 and 640 / 917.6 GB/s (appendix B.4, derived by hand from search.cc);
- NVLS execution channels on Blackwell (src/transport/nvls.cc: 32 in v2.25-v2.26, 24 on one node
  from v2.27) and the CTA cut to 16 of v2.28.3 (release commit f1308997);
- Blackwell from v2.25.1 (release commit 80f6bda4): 2.24 has no sm100 row.
"""

from __future__ import annotations

import pytest

import topo
from models.engine.nccl.algorithms import NVLS, NVLS_TREE, PAT, RING, TREE
from models.engine.nccl.channels import channel_graphs
from models.engine.nccl.communicator import ChannelGraph, Communicator
from models.engine.nccl.profiles import (DEFAULT_VERSION, PROFILES, MissingConstantError, UnknownNcclVersionError,
                                         nccl_profile)
from models.engine.nccl.releases import (BEHAVIOURS, CopyEngine, CtaPolicy, NvlsMnnvl, NvlsRatio, PatSteps,
                                         SymmetricKernels, TuningCode)
from models.engine.nccl.system import NcclSystem
from models.engine.nccl.tuning import nvls_choice
from models.predict.collectives import estimate
from models.present.cli import main
from topo.units import GB, us

NEW = ("2.25.1", "2.26.2", "2.27.7", "2.28.3", "2.28.9", "2.29.2", "2.30.7", "2.31.0")


# ================================================================== the behaviour rows
@pytest.mark.parametrize("version, tag, pat, cta, symmetric, copy_engine, tuning_code, ratio", [
    ("2.25.1", "v2.25.1-1", PatSteps.SERIAL, CtaPolicy.NONE, SymmetricKernels.NONE, CopyEngine.NONE,
     TuningCode.TUNING_CC, NvlsRatio.FIVE_SIXTHS),
    ("2.26.2", "v2.26.2-1", PatSteps.PARALLEL, CtaPolicy.NONE, SymmetricKernels.NONE, CopyEngine.NONE,
     TuningCode.TUNING_CC, NvlsRatio.FIVE_SIXTHS),
    ("2.27.7", "v2.27.7-1", PatSteps.PARALLEL, CtaPolicy.DEFAULT_EFFICIENCY, SymmetricKernels.WINDOWS,
     CopyEngine.NONE, TuningCode.TUNING_CC, NvlsRatio.FIVE_SIXTHS),
    ("2.28.3", "v2.28.3-1", PatSteps.PARALLEL, CtaPolicy.ZERO, SymmetricKernels.DEVICE_API, CopyEngine.ZERO_CTA,
     TuningCode.TUNER_CONSTANTS, NvlsRatio.NSTEPS),
    ("2.28.9", "v2.28.9-1", PatSteps.PARALLEL, CtaPolicy.ZERO, SymmetricKernels.DEVICE_API, CopyEngine.ZERO_CTA,
     TuningCode.TUNER_CONSTANTS, NvlsRatio.NSTEPS),
    ("2.29.2", "v2.29.2-1", PatSteps.PARALLEL, CtaPolicy.ZERO, SymmetricKernels.NVLINK_ONLY,
     CopyEngine.LARGE_ALLGATHER, TuningCode.TUNER_CONSTANTS, NvlsRatio.NSTEPS),
    ("2.30.7", "v2.30.7-1", PatSteps.PARALLEL, CtaPolicy.NAMES, SymmetricKernels.NVLINK_ONLY,
     CopyEngine.LARGE_ALLGATHER, TuningCode.TUNER_CONSTANTS, NvlsRatio.NSTEPS),
    ("2.31.0", "2.31.0a7-1", PatSteps.PARALLEL, CtaPolicy.NAMES, SymmetricKernels.NVLINK_ONLY,
     CopyEngine.LARGE_ALLGATHER, TuningCode.PER_ALGORITHM, NvlsRatio.NSTEPS),
])
def test_behaviour_row_of_each_release(version, tag, pat, cta, symmetric, copy_engine, tuning_code, ratio):
    """Release notes of v2.25.1-1 ... v2.29.2-1 and the v2.30/2.31a code (appendix C.1-C.7); NVLS on
    an MNNVL clique by the GPU-count rule from v2.25 (src/transport/nvls.cc)."""
    row = BEHAVIOURS[version]
    assert (row.tag, row.pat_steps, row.cta_policy, row.symmetric, row.copy_engine, row.tuning_code,
            row.nvls_ratio, row.nvls_mnnvl) == (tag, pat, cta, symmetric, copy_engine, tuning_code, ratio,
                                                NvlsMnnvl.GPUS)
    assert nccl_profile(version).behaviour is row


def test_uncertain_rows_are_the_ones_the_appendix_marks():
    """2.31 is a pre-release and 2.32 has nothing: every cell [U]; 2.28+'s CTA mechanism and NVLS
    ratio are inferred; 2.30's notes were not read; v2.25-v2.27 are read at their tags."""
    for version in ("2.25.1", "2.26.2", "2.27.7"):
        assert BEHAVIOURS[version].uncertain == ()
    for version in NEW[3:]:
        assert any(u.startswith("cta_policy:") for u in BEHAVIOURS[version].uncertain)
    assert any("2.32" in u for u in BEHAVIOURS["2.31.0"].uncertain)
    assert any(u.startswith("every cell:") for u in BEHAVIOURS["2.31.0"].uncertain)
    assert any("release notes of 2.30" in u for u in BEHAVIOURS["2.30.7"].uncertain)
    # v2.29's "better default channels per net peer" has no value in the notes or the appendix
    for version in ("2.29.2", "2.30.7", "2.31.0"):
        assert any(u.startswith("p2p_channels_per_net_peer:") for u in BEHAVIOURS[version].uncertain)
    assert not any("per_net_peer" in u for u in BEHAVIOURS["2.28.9"].uncertain)
    assert all(note.startswith("[U]") for note in nccl_profile("2.32.6").notes[:2])


# ============================================================== Blackwell caps (table C.8)
# (llMaxBws, perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws, perChMaxNVLSTreeBws),
# Blackwell row, N1 / N2 / N4+, GB/s.
_C8 = {
    "2.25.1": ((282, 90, 70), (73.4,) * 3, (73.4, 73.4, 58.0), (77.4, 82.8, 72.0), None),
    "2.26.2": ((282, 90, 70), (73.4,) * 3, (73.4, 73.4, 58.0), (77.4, 82.8, 72.0), None),
    "2.27.7": ((282, 90, 70), (73.4,) * 3, (73.4, 73.4, 58.0), (77.4, 82.8, 72.0), None),
    "2.28.3": ((282, 90, 70), (73.4,) * 3, (55.6, 31.67, 20.0), (70.0, 42.8, 24.0), (0, 96.0, 43.1)),
    "2.28.9": ((282, 90, 70), (73.4,) * 3, (55.6, 31.67, 20.0), (70.0, 42.8, 24.0), (0, 96.0, 43.1)),
    "2.29.2": ((282, 90, 70), (34.5, 34.6, 34.5), (55.6, 31.67, 20.0), (70.0, 42.8, 24.0), (0, 96.0, 43.8)),
    "2.30.7": ((282, 90, 70), (40.0,) * 3, (55.6, 31.67, 20.0), (70.0, 42.8, 24.0), (0, 96.0, 80.0)),
    "2.31.0": ((282, 90, 70), (40.0,) * 3, (55.6, 31.67, 20.0), (70.0, 42.8, 24.0), (0, 96.0, 80.0)),
}


@pytest.mark.parametrize("version", NEW)
def test_blackwell_per_channel_caps_by_release(version):
    p = nccl_profile(version)
    ll, ring128, tree128, tree, nvls_tree = _C8[version]
    for nodes in (1, 2, 4):
        i = min(nodes, 3) - 1
        assert p.ll_max_bw(3, nodes) == pytest.approx(ll[i] * GB)
        assert p.per_ch_max_ring_ll128_bw(3, nodes) == pytest.approx(ring128[i] * GB)
        assert p.per_ch_max_tree_ll128_bw(3, nodes) == pytest.approx(tree128[i] * GB)
        assert p.per_ch_max_tree_bw(3, nodes) == pytest.approx(tree[i] * GB)
        got = p.per_ch_max_nvls_tree_bw(3, nodes)
        assert got is None if nvls_tree is None else got == pytest.approx(nvls_tree[i] * GB)


@pytest.mark.parametrize("version, simple", [(v, 20.9 if v >= "2.29" else 14.0) for v in NEW])
def test_nvls_tree_net_latency_by_release(version, simple):
    """``hwLat[NET][NVLSTree][Simple]``: 14 µs, 20.9 from v2.29.2 (table C.8's last row)."""
    assert nccl_profile(version).hw_lat("NET", "nvls_tree", "Simple") == pytest.approx(simple * us)


def test_hopper_caps_do_not_move():
    """Only Blackwell's rows change from v2.28 on (C.4-C.6): Hopper stays 36.7 / 38.7 / 141."""
    for version in NEW:
        p = nccl_profile(version)
        assert (p.per_ch_max_ring_ll128_bw(2, 1), p.per_ch_max_tree_bw(2, 1), p.ll_max_bw(2, 1)) == \
            pytest.approx((36.7 * GB, 38.7 * GB, 141 * GB))


@pytest.mark.parametrize("version, intra", [
    ("2.25.1", (90, 80, 70, 60, 50, 40, 30, 24, 20, 19)),
    ("2.27.7", (90, 80, 70, 60, 50, 40, 30, 24, 20, 19, 18)),
    ("2.28.3", (90, 80, 70, 60, 50, 40, 30, 24, 20, 19, 18)),
    ("2.29.2", (90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18)),
    ("2.30.7", (90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18)),
])
def test_sm100_speed_arrays(version, intra):
    """src/graph/search.cc sm100SpeedArrayIntra by tag (reference note §3.3)."""
    p = nccl_profile(version)
    assert p.speed_array(100, inter=False) == pytest.approx(tuple(s * GB for s in intra))


def test_sm100_inter_arrays_gain_80_then_86():
    heads = {v: tuple(round(s / GB, 1) for s in nccl_profile(v).speed_array(100, inter=True)[:4])
             for v in ("2.25.1", "2.27.7", "2.29.2", "2.30.7")}
    assert heads == {"2.25.1": (48, 45, 42, 40), "2.27.7": (96, 48, 45.1, 42), "2.29.2": (96, 80, 48, 45.1),
                     "2.30.7": (96, 86, 80, 48)}


def test_blackwell_nvlink_is_40_0_then_40_1():
    """topo.h SM100 NVLink: 40.0 in v2.25-v2.26, 40.1 from v2.27 (reference note §1.4)."""
    assert [nccl_profile(v).nvlink_bandwidth(100) / GB for v in ("2.25.1", "2.26.2", "2.27.7", "2.30.7")] == \
        [40.0, 40.0, 40.1, 40.1]


# ============================================================== Blackwell resolves from 2.25
def test_2_24_refuses_blackwell_naming_the_first_release_that_has_it(capsys):
    G = topo.build("dgxb200")
    with pytest.raises(MissingConstantError, match=r"compute capability 100.*Blackwell from 2\.25"):
        estimate(G, "all_reduce", 2**30, profile="2.24.3")
    assert main(["collective", "all_reduce", "--system", "gb200nvl72", "--nccl", "2.24"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Blackwell from 2.25" in err


@pytest.mark.parametrize("version", NEW + ("2.32.6",))
@pytest.mark.parametrize("system", ["dgxb200", "gb200nvl72"])
def test_blackwell_all_reduce_runs_on_every_release_from_2_25(system, version, capsys):
    assert main(["collective", "all_reduce", "--system", system, "-b", "1G", "-e", "1G", "--nccl", version]) == 0
    out = capsys.readouterr().out
    assert f"NCCL {nccl_profile(version).version} tuning model" in out


def test_2_33_is_refused_naming_the_newest(capsys):
    assert main(["collective", "all_reduce", "--system", "dgxb200", "--nccl", "2.33"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'2.33'" in err and "2.32.x" in err
    with pytest.raises(UnknownNcclVersionError, match=r"to 2\.32\.x"):
        nccl_profile("2.33.0")


def test_the_default_stays_the_reference():
    assert DEFAULT_VERSION == "2.27.7" and nccl_profile() is PROFILES["2.27.7"]


# ====================================================== NVLS formulas (appendix B.3, B.4)
def _nvls_busbw(system, version):
    G = topo.build(system)
    gpus = sorted((v for v, k in G.nodes(data="kind") if k == "gpu"),
                  key=lambda v: (G.nodes[v]["host"], G.nodes[v]["index"]))
    graphs = channel_graphs(NcclSystem(G, version), gpus)
    return nvls_choice("all_reduce", 2**30, graphs.communicator).busbw


@pytest.mark.parametrize("system, before, after", [("dgxb200", 640.0, 720.0), ("gb200nvl72", 640.0, 917.6)])
def test_nvls_allreduce_bus_bandwidth_before_and_from_v2_28(system, before, after):
    """8 heads x 80 (bwInter 90) and 32 heads x 20 (bwInter 40): v2.27 ``nCh x min(bwIntra,
    bwInter)``; v2.28.3+ ``nCh x min(bwIntra x 0.74 x (nCh-1)/nCh x 2, bwInter)``."""
    assert _nvls_busbw(system, "2.27.7") == pytest.approx(before * GB)
    for version in ("2.28.3", "2.29.2", "2.30.7", "2.31.0"):
        assert _nvls_busbw(system, version) == pytest.approx(after * GB, rel=1e-6)


@pytest.mark.parametrize("version, expected", [("2.27.7", 8 * 25.0), ("2.28.3", 8 * 43.1),
                                               ("2.29.2", 8 * 43.8), ("2.30.7", 8 * 50.0)])
def test_nvls_tree_per_channel_cap_on_four_nodes(version, expected):
    """NVLSTree on 4 nodes of Blackwell, 8 heads x 80 GB/s, bwInter 50: v2.27 ``min(bwIntra,
    bwInter / 2)`` = 25 per channel; v2.28+ ``min(80 x 0.74 x 7/8 x 2 = 103.6, 50,
    perChMaxNVLSTreeBws[3][2])`` = 43.1 (v2.28), 43.8 (v2.29), 50 (v2.30: the cap is 80)."""
    g = ChannelGraph(8, 40e9, "NVL", pattern="balanced_tree")
    nvls = ChannelGraph(8, 80e9, "NVL", bw_inter=50e9, pattern="nvls", same_channels=False)
    comm = Communicator(32, g, g, 100, nnodes=4, profile=version, nvls=nvls)
    assert NVLS_TREE.bus_bandwidth("all_reduce", "Simple", comm).value == pytest.approx(expected * GB)


# ============================================================ channels a kernel runs (CTAs)
@pytest.mark.parametrize("version, ring, nvls, nvls_nodes", [
    ("2.25.1", 32, 32, 32), ("2.26.2", 32, 32, 32), ("2.27.7", 32, 24, 32),
    ("2.28.3", 16, 16, 16), ("2.29.2", 16, 16, 16), ("2.30.7", 16, 16, 16), ("2.31.0", 16, 16, 16),
])
def test_blackwell_channels_per_kernel_by_release(version, ring, nvls, nvls_nodes):
    """8 B200, ring graph 16 x 45 (B.4): comm->nChannels = min(64, 2 x 16) = 32, NVLS 32 (v2.25-
    v2.26) or 24 on one node (v2.27); v2.28 cuts Blackwell to 16 CTAs. Hopper keeps its own."""
    p = nccl_profile(version)
    assert RING.blocks(16, p, 100, 1) == TREE.blocks(16, p, 100, 1) == PAT.blocks(16, p, 100, 1) == ring
    assert NVLS.blocks(8, p, 100, 1) == nvls and NVLS_TREE.blocks(8, p, 100, 2) == nvls_nodes
    assert RING.blocks(16, p, 90, 1) == 32 and NVLS.blocks(8, p, 90, 1) == 16


# ======================================================================= the other rules
def test_pat_parallel_steps_leave_its_time_alone():
    """v2.26 runs up to 16 PAT steps in parallel but NCCL's tuning formula was not changed (C.2):
    PAT's latency and bus bandwidth are v2.25's; only v2.26's compute-capability floor differs."""
    g = ChannelGraph(2, 24e9, "PIX", type_inter="PIX", pattern="tree")
    old, new = (Communicator(4, g, g, 90, nnodes=4, profile=v) for v in ("2.25.1", "2.26.2"))
    for f in ("latency", "bus_bandwidth"):
        assert getattr(PAT, f)("all_gather", "Simple", old).value == getattr(PAT, f)("all_gather", "Simple", new).value
    assert PAT.latency("all_gather", "Simple", new).value == pytest.approx((8 + 2 * 14 / 3.5 + 4 * 2.8) * us)
    pascal = (Communicator(4, g, g, 52, nnodes=4, profile=v) for v in ("2.25.1", "2.26.2"))
    assert [PAT.applies("all_gather", "Simple", c)[0] for c in pascal] == [True, False]


def test_two_gpu_nvls_from_v2_28_7():
    """src/transport/nvls.cc: NVLS off with <= 2 GPUs up to v2.28.3, < 2 from v2.28.7 (B.3)."""
    G = topo.build("dgxb200")
    assert estimate(G, "all_reduce", 2**30, [0, 1], profile="2.28.3").nvls is None
    assert estimate(G, "all_reduce", 2**30, [0, 1], profile="2.28.9").nvls.nchannels == 2


def test_explain_says_what_is_uncertain_and_what_is_not_timed(capsys):
    assert main(["collective", "all_reduce", "--system", "dgxb200", "-b", "1G", "-e", "1G", "--nccl", "2.32.6",
                 "--explain"]) == 0
    out = capsys.readouterr().out
    assert "NCCL release 2.31.0 (2.31.0a7-1)" in out
    assert "[U] 2.32: nothing was found for it in NVIDIA/nccl" in out
    assert "[U] p2p_channels_per_net_peer: v2.29's release notes" in out
    assert "not timed: symmetric kernels" in out and "ncclCommWindowRegister" in out
    assert main(["collective", "all_reduce", "--system", "dgxb200", "-b", "1G", "-e", "1G", "--nccl", "2.25",
                 "--explain"]) == 0
    out = capsys.readouterr().out
    assert "NCCL release 2.25.1 (v2.25.1-1)" in out and "not timed" not in out and "[U]" not in out.split(
        "Constants:")[0]


def test_ring_plateau_counts_blackwells_16_ctas_from_v2_28():
    """src/enqueue.cc: Ring Simple AllReduce on several nodes has latency x 1.4 (sm >= 80) once
    ``nBytes / (comm->nChannels x nRanks) >= 64``; 16 ring channels give comm->nChannels 32 in
    v2.27 and 16 (the CTA cut) in v2.28, so the plateau starts at 16 x 16 x 64 B, not 32 x 16 x 64."""
    import numpy as np

    g = ChannelGraph(16, 45e9, "NVL")
    sizes = np.array([16 * 16 * 64 - 1, 16 * 16 * 64, 32 * 16 * 64 - 1, 32 * 16 * 64])
    plateau = {v: RING.time_factors("all_reduce", "Simple", sizes, Communicator(16, g, g, 100, nnodes=2, profile=v))[1]
               for v in ("2.27.7", "2.28.3")}
    assert plateau["2.27.7"].tolist() == [1, 1, 1, 1.4] and plateau["2.28.3"].tolist() == [1, 1.4, 1.4, 1.4]
