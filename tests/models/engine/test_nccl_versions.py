"""NCCL behaviour by version: the strict version parser, the profiles per release range,
and the ring construction of NCCL 2.0-2.4 (models.engine.nccl.legacy_rings).

Known answers are NCCL's own: the DGX-1 rings below were produced by NCCL v2.3.7-1's ``p2p.cu`` ring
code on the DGX-1 link matrices (encoded here).
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topo
from models.engine.nccl.channels import channel_graphs
from models.engine.nccl.legacy_rings import LegacyRingsError, legacy_rings, nvlink_rings
from models.engine.nccl.profiles import (ANY_PATCH, PROFILES, UnknownNcclVersionError, nccl_profile, parse_nccl_version,
                                         versions_table)
from models.present.versions_text import format_versions_table
from models.engine.nccl.releases import Ll128Rule, NvbRelay, Pxn, RingBuilder, TreeRule
from models.engine.nccl.system import NcclSystem
from models.engine.nccl.tuning import applicability, ll_threshold, select_algorithm, tree_threshold
from topo.units import GB, us


# ============================================================================ the parser
@pytest.mark.parametrize("text, profile", [
    ("2.0.5", "2.3.5"), ("2.3.5", "2.3.5"), ("2.3.7", "2.3.7"), ("2.3", "2.3.7"),
    ("2.4.8", "2.4.8"), ("2.5.6", "2.5.7"), ("2.6.4", "2.5.7"), ("2.7.8", "2.7.8"),
    ("2.8.4", "2.8.4"), ("2.9.9", "2.8.4"), ("2.10.3", "2.11.4"), ("2.12", "2.12.12"),
    ("v2.12.12-1", "2.12.12"), ("2.13.4", "2.12.12"), ("2.14.3", "2.16.5"), ("2.17.2", "2.17.1"), ("2.18.3", "2.18.6"),
    ("2.19.3", "2.19.4"), ("2.20.5", "2.21.5"), ("2.22.3", "2.21.5"), ("2.23.4", "2.23.4"),
    ("2.24.3", "2.24.3"), ("2.24.9", "2.24.3"), ("2.25.1", "2.25.1"), ("2.25", "2.25.1"),
    ("2.26.2", "2.26.2"), ("2.26.6", "2.26.2"), ("2.27.7", "2.27.7"), (" V2.27.3-1 ", "2.27.7"),
    ("2.28.0", "2.28.3"), ("2.28.6", "2.28.3"), ("2.28.7", "2.28.9"), ("v2.28.9-1", "2.28.9"),
    ("2.29.2", "2.29.2"), ("2.30.3", "2.30.7"), ("2.30.7-1", "2.30.7"), ("2.31.0", "2.31.0"),
    ("2.32.6", "2.31.0"), ("2.32", "2.31.0"),
])
def test_every_release_maps_to_the_profile_that_governs_it(text, profile):
    assert nccl_profile(text).version == profile
    assert parse_nccl_version(text).profile is PROFILES[profile]


@pytest.mark.parametrize("bad", ["1.3.4", "2.33", "2.33.0", "3.0", "2", "2.x", "2.12.12.1", "2.12-", "v",
                                 "2.12.12-1-2", "２.12", 2.12, b"2.12"])
def test_bad_versions_name_what_was_received_and_the_range(bad):
    with pytest.raises(UnknownNcclVersionError, match=r"received|for version .*expected a release "
                                                      r"from 2\.0\.0 to 2\.32\.x"):
        nccl_profile(bad)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=14))
def test_the_parser_never_fails_otherwise(text):
    try:
        release = parse_nccl_version(text)
    except UnknownNcclVersionError:
        return
    assert release.profile.first <= release.key <= release.profile.last


def test_profiles_cover_2_0_to_2_32_without_gaps_or_overlaps():
    profiles = list(PROFILES.values())
    assert profiles[0].first == (2, 0, 0) and profiles[-1].last[:2] == (2, 32)
    for older, newer in zip(profiles, profiles[1:]):
        following = (older.last[0], older.last[1] + 1, 0) if older.last[2] == ANY_PATCH else \
            (older.last[0], older.last[1], older.last[2] + 1)
        assert newer.first == following, (older.version, newer.version)
    rows = versions_table()
    assert [r[1] for r in rows] == list(PROFILES)
    assert "rings from NVLink counts" in format_versions_table()


# ========================================================= behaviour and constants by version
@pytest.mark.parametrize("version, tree, ll128, nvb, pxn", [
    ("2.3.7", TreeRule.NONE, False, False, False), ("2.4.8", TreeRule.ACROSS_NODES, False, False, False),
    ("2.5.7", TreeRule.TUNED, True, False, False), ("2.7.8", TreeRule.TUNED, True, False, False),
    ("2.8.4", TreeRule.TUNED, True, True, False), ("2.12.12", TreeRule.TUNED, True, True, True),
    ("2.27.7", TreeRule.TUNED, True, True, True),
])
def test_behaviour_flags(version, tree, ll128, nvb, pxn):
    """No trees before v2.4.2 (src/init.cc), LL128 from v2.5.6 (src/graph/tuning.cc), NVB from v2.8 and
    PXN from v2.12 (src/graph/paths.cc), at the NVIDIA/nccl tags of each profile."""
    p = nccl_profile(version)
    b = p.behaviour
    assert (b.tree, b.ll128 is not Ll128Rule.NONE, b.nvb is NvbRelay.ONE_GPU,
            b.pxn is Pxn.NVLINK_PEER) == (tree, ll128, nvb, pxn)


@pytest.mark.parametrize("version, check", [
    ("2.5.7", lambda p: (p.base_lat("ring", "LL128"), p.hw_lat("NET", "ring", "Simple"),
                         p.nvlink_bandwidth(70), p.bdw_qpi_bandwidth)
     == pytest.approx((3.6 * us, 6.6 * us, 21 * GB, 8 * GB))),
    ("2.7.8", lambda p: (p.hw_lat("NVLINK", "tree", "LL128"), p.hw_lat("NET", "tree", "Simple"),
                         p.ll128_per_collective[4], p.sm80_bus_cap)
     == pytest.approx((1.2 * us, 50 * us, 16.7 * GB, 235 * GB))),
    ("2.8.4", lambda p: (p.hw_lat("NVLINK", "tree", "LL128"), p.hw_lat("NET", "ring", "Simple"),
                         p.speed_intra[1]) == pytest.approx((1.25 * us, 9.6 * us, 30 * GB))),
    ("2.17.1", lambda p: p.hw_lat("NET", "ring", "Simple") == pytest.approx(9.6 * us)),
    ("2.18.6", lambda p: (p.hw_lat("NVLINK", "tree", "Simple"), p.max_channels,
                          p.speed_sm90_intra[1]) == pytest.approx((4 * us, 32, 40 * GB))),
    ("2.19.4", lambda p: (p.hw_lat("NVLINK", "tree", "Simple"), p.ring_ll_factor)
     == pytest.approx((28 * us, 0.25))),
    ("2.21.5", lambda p: (p.ring_ll_factor, p.ll_max_bw(2, 1), p.nvlink_bandwidth(90))
     == pytest.approx((0.5, 141 * GB, 20.6 * GB))),
    ("2.23.4", lambda p: (p.base_lat("tree", "Simple"), p.ring_ll128_factor_ppn1)
     == pytest.approx((8.4 * us, 0.92))),
    ("2.4.8", lambda p: (p.max_channels, p.legacy.max_rings) == (16, 16)),
])
def test_known_constants_per_profile(version, check):
    """Tag columns of NVIDIA/nccl src/graph/tuning.cc, topo.h, search.cc per release."""
    assert check(nccl_profile(version))


# ======================================== NCCL 2.3 on a DGX-1 (NVIDIA/nccl v2.3.7-1 src/transport/p2p.cu)
def _rings(name, k, version="2.3.7"):
    return legacy_rings(NcclSystem(getattr(topo, name)(), version), [f"gpu{i}" for i in range(k)])


def _orders(result):
    distinct = []
    for channel in result.search.channels:
        order = tuple(int(g[3:]) for g in channel)
        if order not in distinct:
            distinct.append(order)
    return distinct


# (k, final rings, distinct ring orders) for the P100 DGX-1 (NCCL v2.3.7-1 src/transport/p2p.cu on the DGX-1 link matrix).
_P100 = [
    (2, 2, [(0, 1)]),
    (3, 4, [(0, 1, 2), (0, 2, 1)]),
    (4, 12, [(0, 1, 2, 3), (0, 1, 3, 2), (0, 2, 1, 3), (0, 2, 3, 1), (0, 3, 1, 2), (0, 3, 2, 1)]),
    (5, 1, [(0, 1, 2, 3, 4)]),
    (6, 4, [(0, 2, 3, 1, 5, 4), (0, 4, 5, 1, 3, 2)]),
    (7, 4, [(0, 1, 3, 2, 6, 5, 4), (0, 4, 5, 6, 2, 3, 1)]),
    (8, 8, [(0, 1, 2, 3, 7, 5, 6, 4), (0, 2, 6, 7, 4, 5, 1, 3), (0, 3, 1, 5, 4, 7, 6, 2),
            (0, 4, 6, 5, 7, 3, 2, 1)]),
]


@pytest.mark.parametrize("k, nrings, orders", _P100)
def test_a7_dgx1_p100_rings(k, nrings, orders):
    r = _rings("dgx1", k)
    assert (r.nchannels, r.nthreads, _orders(r)) == (nrings, 128, orders)
    assert r.fallback == (k == 5)


@pytest.mark.parametrize("k, nrings", [(2, 2), (3, 4), (4, 8), (5, 1), (6, 4), (7, 8), (8, 12)])
def test_a7_dgx1v_rings(k, nrings):
    r = _rings("dgx1v", k)
    assert (r.nchannels, r.nthreads, r.fallback) == (nrings, 256, k == 5)


def test_a7_fallback_ring_crosses_the_sockets_through_shared_memory():
    """k = 5: 3 -> 4 has no NVLink and no P2P (SOC): the hop goes through the CPUs."""
    r = _rings("dgx1", 5)
    assert r.search.type_intra.name == "SYS"
    assert ("cpu0", "cpu1") in r.search.bottleneck
    assert r.search.bw_intra == pytest.approx(NcclSystem(topo.dgx1(), "2.3.7").capacity("cpu0", "cpu1"))


# The P100 DGX-1's NVLink pairs, one link each (the hybrid cube-mesh [S10] [S11], topo/dgx.py),
# written out here so that the test does not read them back from the builder.
_P100_NVLINK_PAIRS = {frozenset(p) for p in ((0, 1), (0, 2), (0, 3), (0, 4), (1, 2), (1, 3), (1, 5),
                      (2, 3), (2, 6), (3, 7), (4, 5), (4, 6), (4, 7), (5, 6), (5, 7), (6, 7))}


def _nvlink_hamiltonian(gpus) -> bool:
    """A cycle through every GPU of the set over NVLink pairs alone (2 GPUs: a link)."""
    first, *rest = gpus
    return any(all(frozenset(hop) in _P100_NVLINK_PAIRS for hop in zip(order, order[1:] + order[:1]))
               for order in ((first, *perm) for perm in itertools.permutations(rest)))


@pytest.mark.parametrize("version", ["2.3.7", "2.4.8"])
def test_every_set_without_an_nvlink_ring_falls_back_with_its_shm_hops_named(version):
    """NCCL 2.0-2.4 on a P100 DGX-1 (v2.3.7-1 p2p.cu, rings.cu): a set falls back to one ring in
    rank order exactly when no NVLink cycle covers it (no relay, no PCIe fallback inside
    p2pGetRings), and that ring's hops without NVLink are the pairs across the sockets, which
    ``selectTransport`` gives to SHM (p2pCanConnect refuses SOC). 12 pairs, 48 triples, 62
    quadruples, 32 quintuples; every set of 6 or more GPUs has an NVLink ring."""
    fabric = NcclSystem(topo.dgx1(), version)
    fallbacks = {}
    for k in range(2, 9):
        for gpus in itertools.combinations(range(8), k):
            r = legacy_rings(fabric, [f"gpu{i}" for i in gpus])
            assert r.fallback == (not _nvlink_hamiltonian(gpus)), gpus
            hops = list(zip(gpus, gpus[1:] + gpus[:1]))
            expected = tuple((f"gpu{a}", f"gpu{b}") for a, b in hops
                             if frozenset((a, b)) not in _P100_NVLINK_PAIRS) if r.fallback else ()
            assert r.shm_hops == expected, gpus
            # every such pair crosses the sockets (GPUs 0-3 on CPU 0, 4-7 on CPU 1)
            assert all((a[-1] < "4") != (b[-1] < "4") for a, b in r.shm_hops), gpus
            fallbacks[k] = fallbacks.get(k, 0) + r.fallback
    assert fallbacks == {2: 12, 3: 48, 4: 62, 5: 32, 6: 0, 7: 0, 8: 0}


def test_the_5_gpu_fallback_ring_names_its_one_shm_hop():
    """GPUs 0-4: ``Could not create rings, falling back on simple ring`` (v2.3.7-1 rings.cu), 0 -> 1
    -> 2 -> 3 -> 4 -> 0, whose only hop without NVLink, 3 -> 4, goes through shared memory."""
    r = _rings("dgx1", 5)
    assert r.shm_hops == (("gpu3", "gpu4"),)
    assert any(t.kind == "shared_memory" and t.names == (("gpu3", "gpu4"),) for t in r.search.trace)
    assert _rings("dgx1", 8).shm_hops == ()


def test_nvswitch_rings_and_v2_4_threads():
    r = legacy_rings(NcclSystem(topo.dgx2(), "2.3.7"), [f"gpu{i}" for i in range(16)])
    assert r.nchannels == 12 and set(_orders(r)) == {tuple(range(16))}    # 6 x2, index order
    assert _rings("dgx1", 4, "2.4.8").nthreads == 256      # v2.4.2 removed the Pascal halving


def test_k4_cannot_hold_three_rings():
    """p2p.cu v2.3.7-1 ring search: K4 with one link per pair gives 2 rings, not the bound 3."""
    k4 = [[0 if i == j else 1 for j in range(4)] for i in range(4)]
    assert len(nvlink_rings(k4)) == 2


def test_rings_read_the_graph():
    """What-ifs: fewer NVLinks change the rings; less bandwidth changes only their rate."""
    G = topo.dgx1()
    for u, v in (("gpu0", "gpu1"), ("gpu1", "gpu0")):
        G.remove_edge(u, v)
    fabric = NcclSystem(G, "2.3.7")
    cut = legacy_rings(fabric, ["gpu0", "gpu1", "gpu2", "gpu3"])
    assert (cut.nchannels, _orders(cut)) == (4, [(0, 2, 1, 3), (0, 3, 1, 2)])
    # {0, 1, 2} has no NVLink ring any more: one ring in rank order, 0 -> 1 off NVLink.
    assert legacy_rings(fabric, ["gpu0", "gpu1", "gpu2"]).fallback
    H = topo.dgx1()
    for u, v in H.edges:
        if H.edges[u, v]["kind"] == "nvlink":
            H.edges[u, v]["bandwidth"] /= 2
    half = legacy_rings(NcclSystem(H, "2.3.7"), [f"gpu{i}" for i in range(8)])
    full = _rings("dgx1", 8)
    assert half.nchannels == full.nchannels
    assert half.search.bw_intra == pytest.approx(full.search.bw_intra / 2)


def test_legacy_rings_refuse_a_searching_release_and_non_gpus():
    with pytest.raises(LegacyRingsError, match="expected a profile before 2.5"):
        legacy_rings(NcclSystem(topo.dgx1()), ["gpu0", "gpu1"])
    with pytest.raises(LegacyRingsError, match="expected GPU nodes"):
        legacy_rings(NcclSystem(topo.dgx1(), "2.3.7"), ["gpu0", "cpu0"])


# ================================================================= protocol choice before 2.5
def test_ll_threshold_and_no_tree_or_ll128_before_2_5():
    """src/include/common_coll.h v2.3.7-1: LL iff nbytes <= nRanks x nRings x min(256, nThreads) x threadThreshold."""
    comm = channel_graphs(NcclSystem(topo.dgx1(), "2.3.7"), [f"gpu{i}" for i in range(4)]).communicator
    limit = 4 * 12 * 128 * 32
    assert ll_threshold(comm) == limit
    s = select_algorithm("all_reduce", [limit, limit + 1], comm)
    assert s.protocol.tolist() == ["LL", "Simple"] and set(s.algorithm.tolist()) == {"ring"}
    assert not applicability("all_reduce", "tree", "Simple", comm)[0]
    assert not applicability("all_reduce", "ring", "LL128", comm)[0]
    v235 = channel_graphs(NcclSystem(topo.dgx1v(), "2.3.5"), ["gpu0", "gpu1"]).communicator
    assert ll_threshold(v235) == 2 * 2 * 256 * 32          # v2.3.5: 32 for Volta too


def test_v2_4_trees_only_across_nodes():
    one = channel_graphs(NcclSystem(topo.dgx1v(), "2.4.8"), ["gpu0", "gpu1"]).communicator
    assert tree_threshold(one) == 0 and not applicability("all_reduce", "tree", "LL", one)[0]
    G = topo.cluster("dgx1v", 2)
    nodes = sorted(topo.gpus(G), key=lambda n: (G.nodes[n]["host"], G.nodes[n]["index"]))
    two = channel_graphs(NcclSystem(G, "2.4.8"), nodes).communicator
    assert applicability("all_reduce", "tree", "LL", two)[0]
    assert select_algorithm("all_reduce", 8, two).algorithm == "tree"


# ===================================================== every release on every built-in system
_SYSTEMS = {"dgx1": topo.dgx1, "dgx1v": topo.dgx1v, "dgx2": topo.dgx2,
            "2xdgx1v": lambda: topo.cluster("dgx1v", 2)}


@pytest.mark.parametrize("version", list(PROFILES))
def test_every_release_runs_on_every_system(version):
    for name, build in _SYSTEMS.items():
        G = build()
        nodes = sorted(topo.gpus(G), key=lambda n: (G.nodes[n]["host"], G.nodes[n]["index"]))
        graphs = channel_graphs(NcclSystem(G, version), nodes)
        assert graphs.communicator.profile.version == version
        legacy = nccl_profile(version).behaviour.ring_builder is RingBuilder.NVLINK_COUNTS
        assert (graphs.tree is None) == (legacy
                                         or graphs.ring.nnodes > 1)
        for collective in ("all_reduce", "all_gather", "broadcast"):
            s = select_algorithm(collective, [8, 2**20, 2**30], graphs.communicator)
            assert (s.time > 0).all() and (s.busbw > 0).all(), (name, collective)
            if nccl_profile(version).behaviour.ll128 is Ll128Rule.NONE:
                assert "LL128" not in s.protocol.tolist()
