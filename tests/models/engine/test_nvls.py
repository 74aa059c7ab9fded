"""NVLS, NVLSTree, PAT and multi-node NVLink (models.engine.nccl.nvls, models.engine.nccl.channels, tuning).

Known answers: NCCL's enabling rules and constants at the NVIDIA/nccl tag each test names
(src/transport/nvls.cc, src/graph/search.cc, src/graph/tuning.cc, src/init.cc), and NVLS graphs
derived by hand from v2.27.7-1's search (8 x H100: 8 heads x 40 GB/s, bwInter 60; 8 x B200:
8 x 80, bwInter 90; a 72-GPU NVL72 clique: 32 x 20, bwInter 40). [U] These graphs are not
checked against NCCL_DEBUG_SUBSYS=GRAPH logs.
"""

from __future__ import annotations

import dataclasses

import pytest

import topo
from models.engine.nccl.channels import channel_graphs, nccl_view
from models.engine.nccl.nvls import NvlsError, nvlink_cliques, nvls_search, nvls_support, sharp_switch
from models.engine.nccl.profiles import NVLS_EFFICIENCY_V2_28, nccl_profile
from models.engine.nccl.reasons import Cause, Why
from models.engine.nccl.releases import NvlsRatio
from models.engine.nccl.system import NcclSystem
from models.engine.nccl.tuning import (ChannelGraph, Communicator, NoAlgorithmError, applicability,
                                bus_bandwidth, bus_to_alg_ratio, latency, nvls_choice,
                                select_algorithm)
from models.present.reasons_text import nvls_choice_text, reason_text
from topo.dgx_nvswitch import gb200nvl72
from topo.units import GB, GiB, us

EIGHT = [f"gpu{i}" for i in range(8)]


@pytest.fixture(scope="module")
def h100():
    return topo.build("dgxh100")


@pytest.fixture(scope="module")
def nvl72():
    return gb200nvl72()


def graphs(G, version=None, nodes=EIGHT):
    return channel_graphs(NcclSystem(G, version), nodes)


# ------------------------------------------------------------------ the NVLS search (B.4 shape)
@pytest.mark.parametrize("system, heads, bw_intra, bw_inter", [
    ("dgxh100", 8, 40, 60),    # 18 x 20.6 = 370.8: 9 x 50 > 370.8, 9 x 40 fits; 60 = top of sm90
    ("dgxh200", 8, 40, 60),
    ("dgxb200", 8, 80, 90),    # 18 x 40.1 = 721.8: 9 x 90 > 721.8, 9 x 80 fits; 90 = top of sm100
])
def test_nvls_graph_of_eight_gpus(system, heads, bw_intra, bw_inter):
    g = nvls_search(NcclSystem(topo.build(system)), EIGHT)
    assert (g.nchannels, g.bw_intra, g.bw_inter) == (heads, bw_intra * GB, bw_inter * GB)
    assert g.heads == tuple(EIGHT)                  # without NET, channel c's head is GPU c


def test_nvl72_clique_has_32_heads_of_20(nvl72):
    """NCCL_MAX_NVLS_ARITY 32 (v2.21+): 33 x 20 <= 721.8; pass 2 stops at 2 x bwIntra = 40."""
    gpus = [n for n, k in nvl72.nodes(data="kind") if k == "gpu"]
    g = nvls_search(NcclSystem(nvl72), gpus)
    assert (g.nchannels, g.bw_intra, g.bw_inter) == (32, 20 * GB, 40 * GB)
    assert g.gpu_bandwidth == pytest.approx(18 * 40.1 * GB)


def test_arity_8_before_v2_21(h100):
    """NCCL_MAX_NVLS_ARITY was 8 up to v2.20: 8 GPUs still give 8 heads; v2.19's sm90 array."""
    g = nvls_search(NcclSystem(h100, "2.19"), EIGHT)
    assert g.nchannels == 8 and g.bw_intra == 40 * GB


def test_a_degraded_switch_link_lowers_the_nvls_graph(h100):
    """The graph is the truth: halving one GPU's NVLinks lowers what every head reserves."""
    G = h100.copy()
    for u, v in G.edges:
        if "gpu3" in (u, v) and G.edges[u, v]["kind"] == "nvlink":
            G.edges[u, v]["bandwidth"] /= 2
    g = nvls_search(NcclSystem(G), EIGHT)
    assert g.nchannels == 8 and g.bw_intra < 40 * GB and 9 * g.bw_intra <= 185.4 * GB + 1e3


def test_nvls_search_errors(h100):
    with pytest.raises(NvlsError, match="two or more GPUs"):
        nvls_search(NcclSystem(h100), ["gpu0"])
    with pytest.raises(NvlsError, match="no NVLink to an NVSwitch"):
        nvls_search(NcclSystem(topo.dgx1v(), "2.27.7"), ["gpu0", "gpu1", "gpu2"])


# ------------------------------------------------------------------ enabling
def test_sharp_is_read_from_the_switch_model(h100):
    assert sharp_switch(h100, "nvswitch0")
    assert not sharp_switch(topo.build("dgxa100"), "nvswitch0")
    assert not sharp_switch(topo.dgx2(), next(n for n, k in topo.dgx2().nodes(data="kind")
                                             if k == "nvswitch"))


def test_plain_switches_with_hopper_gpus_have_no_nvls(h100):
    """A what-if: H100s on NVSwitch gen2 chips (no in-switch reduction) get no NVLS."""
    G = h100.copy()
    for n, k in G.nodes(data="kind"):
        if k == "nvswitch":
            G.nodes[n]["model"] = topo.specs.NVSWITCHES["nvswitch2"].model
    ok, why = nvls_support(NcclSystem(G), EIGHT)
    assert not ok and why == Why(Cause.NVLS_NO_SHARP, names=(topo.specs.NVSWITCHES["nvswitch2"].model,))
    assert "NVLink SHARP" in reason_text(why)


@pytest.mark.parametrize("version, expected", [
    ("2.16.5", "has no NVLS"),            # NVLS arrives in v2.17.1
    ("2.17.1", ""), ("2.18.6", ""), ("2.27.7", ""),
])
def test_nvls_by_release_on_h100(h100, version, expected):
    ok, why = nvls_support(NcclSystem(h100, version), EIGHT)
    assert ok == (expected == "") and (why is None) == ok and expected in reason_text(why)


@pytest.mark.parametrize("version, gpus, ok", [
    ("2.17.1", 2, True),     # v2.17: off only with localRanks <= 1
    ("2.18.6", 2, False),    # v2.18-v2.27: off with 2 or fewer GPUs
    ("2.27.7", 2, False), ("2.27.7", 3, True),
])
def test_gpu_count_rule(h100, version, gpus, ok):
    assert nvls_support(NcclSystem(h100, version), EIGHT[:gpus])[0] is ok


def test_no_nvls_on_ampere_or_volta():
    assert nvls_support(NcclSystem(topo.build("dgxa100")), EIGHT)[1] == Why(
        Cause.NVLS_COMPUTE_CAPABILITY, compute_capability=80, limit=90)
    assert not nvls_support(NcclSystem(topo.dgx2()), [f"gpu{i}" for i in range(16)])[0]


# ------------------------------------------------------------------ choice (tuning)
def test_h100_all_reduce_picks_nvls_at_large_sizes_on_2_27_7(h100):
    g = graphs(h100)
    s = select_algorithm("all_reduce", [4 * 2**10, 1 * GiB], g.communicator)
    assert list(s.algorithm) == ["ring", "nvls"] and list(s.protocol) == ["LL", "Simple"]
    nvls = next(c for c in s.candidates if c.tuning.algorithm == "nvls")
    # v2.27: busBw = nCh x min(bwIntra, bwInter) = 8 x 40; algBw x 5/6; latency hwLat 25 µs.
    assert nvls.tuning.bus.value == pytest.approx(320 * GB)
    assert nvls.tuning.bandwidth == pytest.approx(320 * GB * 5 / 6)
    assert nvls.tuning.latency.value == pytest.approx(25 * us)
    large, small = (nvls_choice("all_reduce", size, g.communicator) for size in (1 * GiB, 4096))
    assert large.chosen and large.enabled and (large.winner_algorithm, large.winner_protocol) == ("nvls", "Simple")
    assert large.busbw == nvls.tuning.bus.value and large.time == pytest.approx(nvls.time[-1])
    assert not small.chosen and small.enabled and (small.winner_algorithm, small.winner_protocol) == ("ring", "LL")
    assert nvls_choice_text(large).startswith("NVLS chosen")
    assert nvls_choice_text(small).startswith("NVLS not chosen")


def test_dgx_a100_never_picks_nvls():
    g = graphs(topo.build("dgxa100"))
    s = select_algorithm("all_reduce", [2**10, 2**20, 2**30], g.communicator)
    assert "nvls" not in set(s.algorithm)
    choice = nvls_choice("all_reduce", 2**30, g.communicator)
    assert not choice.enabled and choice.why.support.cause is Cause.NVLS_COMPUTE_CAPABILITY
    assert "compute capability 90" in nvls_choice_text(choice)
    with pytest.raises(NoAlgorithmError, match="NO_NVLS_SUPPORT"):
        select_algorithm("all_reduce", 2**30, g.communicator, algorithm="nvls")


def test_h100_with_2_16_has_no_nvls(h100):
    g = graphs(h100, "2.16")
    assert g.nvls is None and g.nvls_why == Why(Cause.NO_NVLS, release="2.16.5")
    assert "arrives in v2.17.1" in reason_text(g.nvls_why)
    assert "2.16.5 has no NVLS" in nvls_choice_text(nvls_choice("all_reduce", 2**30, g.communicator))


def test_forcing_nvls_and_its_collective_rules(h100):
    comm = graphs(h100).communicator
    assert select_algorithm("all_reduce", 2**20, comm, algorithm="nvls").algorithm == "nvls"
    ag = select_algorithm("all_gather", 1 * GiB, comm, algorithm="nvls")
    # v2.27 AG: min(bwIntra x (ppn-1)/ppn, bwInter x 0.9) x nCh, no bus->alg conversion.
    assert ag.bus_bandwidth == pytest.approx(8 * min(40 * 7 / 8, 60 * 0.9) * GB)
    assert applicability("broadcast", "nvls", "Simple", comm)[0] is False
    assert "Simple protocol only" in reason_text(applicability("all_reduce", "nvls", "LL", comm)[1])
    assert "single node" in reason_text(applicability("all_reduce", "nvls_tree", "Simple", comm)[1])
    old = graphs(h100, "2.18").communicator                    # AG/RS NVLS from v2.19
    assert applicability("all_gather", "nvls", "Simple", old)[1] == Why(
        Cause.NVLS_COLLECTIVE, release="2.18.6", collective="all_gather", allowed=("all_reduce",))
    assert "all_reduce only" in reason_text(applicability("all_gather", "nvls", "Simple", old)[1])


def test_v2_18_ratio_and_latency_rules():
    nvls = ChannelGraph(8, 40 * GB, "NVL", bw_inter=48 * GB, pattern="nvls", same_channels=False)
    ring = ChannelGraph(8, 40 * GB, "NVL")
    comm = Communicator(16, ring, ring, 90, nnodes=2, profile="2.18.6", nvls=nvls)
    assert bus_to_alg_ratio("all_reduce", "nvls_tree", 16, "2.18.6", nnodes=2) == pytest.approx(0.70)
    lat = latency("all_reduce", "nvls_tree", "Simple", comm)
    assert lat.value == pytest.approx((23 + 2 * 1 * 14) * us)   # base + 2 (nNodes-1) hwLat[NET]


def test_nvls_efficiency_of_v2_28_gives_the_head_column():
    """v2.28.3+ (not shipped): nCh x min(bwIntra x eff x (nCh-1)/nCh x 2, bwInter)."""
    rules = dataclasses.replace(nccl_profile().nvls, efficiency=NVLS_EFFICIENCY_V2_28,
                                min_tuning_channels=2)
    behaviour = dataclasses.replace(nccl_profile().behaviour, nvls_ratio=NvlsRatio.NSTEPS)
    profile = dataclasses.replace(nccl_profile(), nvls=rules, behaviour=behaviour)
    ring = ChannelGraph(8, 30 * GB, "NVL")
    for cc, nch, intra, inter, expected in ((90, 8, 40, 60, 476.0), (100, 8, 80, 90, 720.0),
                                            (100, 32, 20, 40, 917.6)):
        nvls = ChannelGraph(nch, intra * GB, "NVL", bw_inter=inter * GB, pattern="nvls")
        comm = Communicator(nch if nch > 8 else 8, ring, ring, cc, profile=profile, nvls=nvls)
        assert bus_bandwidth("all_reduce", "nvls", "Simple", comm).value == pytest.approx(expected * GB)


# ------------------------------------------------------------------ PAT
def test_pat_one_rank_per_node_from_v2_23():
    tree = ChannelGraph(4, 24 * GB, "NVL", bw_inter=24 * GB, pattern="balanced_tree")
    comm = Communicator(4, tree, tree, 90, nnodes=4)
    b = bus_bandwidth("all_gather", "pat", "Simple", comm)
    assert b.value == pytest.approx(4 * 24 * GB * 0.75)                     # v2.24.3+: x0.75
    old = Communicator(4, tree, tree, 90, nnodes=4, profile="2.23.4")
    assert bus_bandwidth("all_gather", "pat", "Simple", old).value == pytest.approx(4 * 24 * GB * .85)
    lat = latency("all_gather", "pat", "Simple", comm)
    assert lat.value == pytest.approx((8 + 2 * 14 / 3.5 + 4 * 2.8) * us)    # log2i(4) = 2
    assert "one rank per node" in reason_text(applicability(
        "all_gather", "pat", "Simple", Communicator(8, tree, tree, 90, nnodes=4))[1])
    assert "no PAT" in reason_text(applicability("all_gather", "pat", "Simple",
                                                 Communicator(4, tree, tree, 90, nnodes=4, profile="2.21"))[1])
    assert "all_gather and reduce_scatter only" in reason_text(
        applicability("all_reduce", "pat", "Simple", comm)[1])


# ------------------------------------------------------------------ MNNVL
def test_nvl72_trays_form_one_nvlink_clique(nvl72):
    gpus = [n for n, k in nvl72.nodes(data="kind") if k == "gpu"]
    assert len(nvlink_cliques(nvl72, gpus)) == 1
    assert len(nvlink_cliques(topo.build("dgxh100"), EIGHT)) == 1


def test_two_trays_of_an_nvl72_are_one_nccl_node(nvl72):
    """v2.21+ fuse the clique: 8 GPUs of trays 0 and 1 are one node with 8 NVLS heads."""
    gpus = [f"t{t}.gpu{i}" for t in (0, 1) for i in range(4)]
    g = graphs(nvl72, None, gpus)
    assert g.mnnvl and g.communicator.nnodes == 1
    assert (g.ring.nchannels, g.ring.bw_intra) == (16, 45 * GB)    # 8 x 90 duplicated to 16 x 45
    assert (g.nvls.nchannels, g.nvls.bw_intra, g.nvls.bw_inter) == (8, 80 * GB, 90 * GB)
    view, fused = nccl_view(NcclSystem(nvl72), gpus)
    assert fused and view.G is not nvl72 and nvl72.nodes["t1.gpu0"]["host"] == 1   # input untouched


def test_no_mnnvl_before_v2_20(nvl72):
    gpus = [f"t{t}.gpu{i}" for t in (0, 1) for i in range(4)]
    view, fused = nccl_view(NcclSystem(nvl72, "2.19"), gpus)
    assert not fused and view.G is nvl72


@pytest.mark.parametrize("name", ["dgxh100", "2xdgxh100"])
def test_the_nvls_search_trace_is_its_attempts_then_pass_two(name):
    """The trace holds numbers: the speeds tried, highest first, each with the heads it held; the
    last attempt is the graph kept (heads x bwIntra), then the bwInter pass 2 reached; words
    only from models.present (--explain prints them)."""
    from models.present.explain import search_step_text

    G = topo.build(name)
    graphs = channel_graphs(NcclSystem(G), [n for n in G if G.nodes[n]["kind"] == "gpu"])
    g = graphs.nvls
    kinds = [s.kind for s in g.trace]
    assert kinds[-1] == "nvls_bw_inter" and set(kinds[:-1]) == {"nvls_attempt"}
    attempts = g.trace[:-1]
    assert [s.speed for s in attempts] == sorted((s.speed for s in attempts), reverse=True)
    assert (attempts[-1].speed, attempts[-1].count, attempts[-1].limit) == (g.bw_intra, g.nchannels, 0)
    assert g.trace[-1].speed == g.bw_inter >= g.bw_intra
    assert all(s.count < s.limit for s in attempts if s.limit)
    text = "; ".join(search_step_text(s) for s in g.trace)
    assert text.endswith(f"{g.bw_intra / 1e9:g} GB/s: {g.nchannels} head(s); pass 2: bwInter {g.bw_inter / 1e9:g} GB/s")
