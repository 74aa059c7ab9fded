"""Collectives and P2P across nodes: known structure, the NIC bound, and invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import models
import topo
from models.predict.collectives import estimate

GB = 1e9


def nic_bound(G, host=0) -> float:
    """What one node's NICs carry together, at NCCL's figure (EDR: 100000 Mb/s / 8000 = 12.5 GB/s)."""
    return sum(models.nccl_profile().link_bandwidth(G.nodes[n]["port_link"]) for n in topo.compute_nics(G, host))


def test_two_dgx1v_rings_are_bound_by_the_nics():
    """4 EDR NICs per node: a channel enters through a NIC at one of NCCL's inter speeds, the
    GPU-NIC PCIe links (12 GB/s) bind first: 4 channels x 12 GB/s = 48 <= 4 x 12.5 = 50."""
    G = topo.build("2xdgx1v")
    ring = models.search_channels(G)
    assert (ring.nchannels, ring.bw_intra, ring.nnodes) == (4, 12 * GB, 2)
    assert ring.nchannels * ring.bw_intra <= nic_bound(G)
    assert sorted({nic for pair in ring.nets for nic in pair}) == [f"h0.mlx5_{k}" for k in range(4)]
    assert all(G.nodes[u]["kind"] in ("gpu", "pcie_switch", "nic") for u, _ in ring.bottleneck)
    assert ring.type_inter.name == "PIX", "every channel enters and leaves by a NIC on its GPU's switch"


def test_dgx2_beats_two_dgx1v_by_what_the_fabric_implies():
    """16 GPUs either way. One DGX-2: NCCL's 6 NVLinks x 20 GB/s per GPU through the NVSwitches
    = 120 GB/s of ring bandwidth. Two DGX-1V: the rings must cross the network, 4 channels x
    12 GB/s (the NICs' PCIe links) = 48 GB/s. Large all_reduce: 120 / 48 = 2.5x."""
    size = 2**34
    one = estimate(topo.dgx2(), "all_reduce", size)
    two = estimate(topo.build("2xdgx1v"), "all_reduce", size)
    assert one.nranks == two.nranks == 16
    assert one.nccl_busbw / two.nccl_busbw == pytest.approx(120 / 48, rel=0.02)
    # Measured, the gap widens: NVLink 2 achieves 1.02x NCCL's figure, the EDR NICs' PCIe 3.0
    # paths 0.80x (models.predict.nicpath).
    assert one.busbw / two.busbw == pytest.approx(120 / 48 * one.measurement.ratio / two.measurement.ratio,
                                                  rel=0.02)


def test_tree_latency_grows_with_log_nodes_ring_linearly():
    small = 8  # bytes: latency is all of the time
    ring = [float(estimate(topo.build(f"{n}xdgx1v"), "all_reduce", small, algorithm="ring",
                           protocol="LL").latency) for n in (2, 4, 8, 16)]
    tree = [float(estimate(topo.build(f"{n}xdgx1v"), "all_reduce", small, algorithm="tree",
                           protocol="LL").latency) for n in (2, 4, 8, 16)]
    ring_steps, tree_steps = np.diff(ring), np.diff(tree)
    # Ring: 2(nNodes-1) network steps, so each doubling adds twice the previous increment.
    assert ring_steps[1] == pytest.approx(2 * ring_steps[0]) and ring_steps[2] == pytest.approx(2 * ring_steps[1])
    # Tree: log2(nNodes) network hops each way, so each doubling adds the same.
    assert tree_steps[0] == pytest.approx(tree_steps[1]) == pytest.approx(tree_steps[2])
    assert tree[-1] < ring[-1]


def test_nccl_picks_by_size_across_nodes():
    e = estimate(topo.build("16xdgx1v"), "all_reduce", [8, 2**34])
    assert e.algorithm[0] == "tree", "the tree's log-depth latency wins small messages"
    assert e.busbw[-1] <= nic_bound(topo.build("16xdgx1v")) * 1.0001


# 5 examples: a search across nodes on a partial set of GPUs per host costs up to 2.6 s (mean
# 0.5 s over 30 random draws: DGX-1 sets of 3 to 7 GPUs exhaust NCCL's search budget); the
# bound at full size on 16 DGX-1V is also test_nccl_picks_by_size_across_nodes.
@settings(max_examples=5, deadline=None)
@given(system=st.sampled_from(["dgx1", "dgx1v", "dgx2"]), hosts=st.integers(2, 4), data=st.data())
def test_ring_busbw_never_exceeds_one_nodes_nics(system, hosts, data):
    """Bound: every ring channel leaves each node through one NIC port, so the ring's bus
    bandwidth is at most the sum of one node's NIC figures (4 x 12.5 GB/s on a DGX-1)."""
    G = topo.build(f"{hosts}x{system}")
    per_host = G.graph["gpus_per_host"]
    # DGX-2: sets of 1 to 5 GPUs or all 16. NCCL sees one NVSwitch, so every DGX-2 set gets the
    # same channels (tests/models/engine/test_search.py::test_dgx2_six_links_worth_for_any_set), and
    # the search across nodes on sets of 6 to 9 costs up to 2 s an example.
    if system == "dgx2" and data.draw(st.booleans()):
        local = list(range(per_host))
    else:
        local = data.draw(st.lists(st.integers(0, per_host - 1), min_size=1,
                                   max_size=5 if system == "dgx2" else per_host, unique=True))
    gpus = [h * per_host + g for h in range(hosts) for g in local]
    e = estimate(G, "all_reduce", 2**34, list(reversed(gpus)), algorithm="ring", protocol="Simple")
    assert e.busbw <= nic_bound(G) * 1.0001
    # The GPUs came in reverse order: estimate ranks them by id before any search (GPU order
    # not mattering is tested once, in test_collectives; a second estimate here would double
    # this test's time for the same code path).
    assert e.gpus == tuple(sorted(gpus))


@settings(max_examples=8, deadline=None)
@given(nic=st.integers(0, 3), host=st.integers(0, 1))
def test_removing_a_nic_never_raises_busbw(nic, host):
    G = topo.build("2xdgx1v")
    before = estimate(G, "all_reduce", 2**30).busbw
    node = f"h{host}.mlx5_{nic}"
    for leaf in [v for v in G.successors(node) if G.nodes[v]["kind"] == "network_switch"]:
        G.remove_edges_from([(node, leaf), (leaf, node)])
    assert estimate(G, "all_reduce", 2**30).busbw <= before


def test_thinning_the_spine_never_raises_busbw():
    G = topo.build("32xdgx1v")   # 128 NICs: 8 leaves joined by 6 spines
    before = estimate(G, "all_reduce", 2**30).busbw
    for leaf in [n for n, d in G.nodes(data=True) if d["kind"] == "network_switch" and d["tier"] == "leaf"]:
        for spine in [v for v in G.successors(leaf) if G.nodes[v]["kind"] == "network_switch"]:
            for a, b in ((leaf, spine), (spine, leaf)):
                edge = G.edges[a, b]
                if edge["links"] > 1:
                    edge["bandwidth"] -= edge["bandwidth"] / edge["links"]
                    edge["links"] -= 1
    assert estimate(G, "all_reduce", 2**30).busbw <= before


def test_p2p_between_hosts_uses_gpudirect_rdma():
    G = topo.build("2xdgx1v")
    r = models.p2p_path(G, 0, 8)
    assert r.path_type.name == "NET" and r.route.host_memory is None
    assert r.route.nodes == ("h0.gpu0", "h0.pcie0", "h0.mlx5_0", "net.leaf0", "h1.mlx5_0", "h1.pcie0", "h1.gpu0")
    assert r.bandwidth == pytest.approx(12 * GB, rel=1e-3)   # NCCL's PCIe and NET figures, both 12
    assert r.smi_class is None


def test_p2p_between_hosts_stages_when_no_nic_is_near():
    G = topo.build("2xdgx1v")
    G.remove_edges_from([("h1.pcie0", "h1.mlx5_0"), ("h1.mlx5_0", "h1.pcie0"),
                         ("h1.mlx5_0", "net.leaf0"), ("net.leaf0", "h1.mlx5_0")])
    G.remove_node("h1.mlx5_0")
    r = models.p2p_path(G, 0, 8)
    assert r.route.host_memory == "h1.cpu0" and r.bandwidth < 12 * GB
    assert models.p2p_path(G, 0, 8).latency > models.p2p_path(topo.build("2xdgx1v"), 0, 8).latency


def test_cluster_symmetry_shortcut_matches_direct_estimates():
    """subsets/pairs on a cluster compute one set per multiset of node shapes (hosts are copies)."""
    G = topo.build("2xdgx1v")
    ranking = models.subsets(G, "all_reduce", 2**28, 2)
    assert len(ranking) == 120 and len({r.representative for r in ranking}) < 40
    for r in ranking[::9]:
        direct = estimate(G, "all_reduce", 2**28, list(r.gpus))
        assert r.busbw == pytest.approx(direct.busbw) and r.protocol == direct.protocol
    matrix = models.pairwise(G, "all_reduce", 2**28)
    assert matrix[0, 8] == pytest.approx(matrix[3, 11]) and matrix[0, 3] == pytest.approx(matrix[8, 11])
