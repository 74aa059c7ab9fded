"""The network between hosts is charged like every other link (models.predict.network, issue 12).

Known answers are closed forms of the built networks (topo.cluster: a leaf holding m NICs has
ceil(m / K) up-links at oversub=K; EDR links 12.5 GB/s) and of NCCL's ring (one connection per
channel and pair of neighbouring nodes).
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import topo
from models import estimate
from models.engine.fabric import PreparedFabric
from models.engine.nccl.channels import channel_graphs
from models.engine.nccl.system import NcclSystem
from models.predict.network import network_load
from models.engine.routes import Router
from models.present.explain import explain
from topo.errors import DgxTopoError

GiB = [2**30]  # one size, as a 1-element array of results


def _graphs(spec):
    G = topo.build(spec)
    return G, channel_graphs(NcclSystem(G), topo.gpus(G))


@pytest.fixture(scope="module")
def oversubscribed():
    return _graphs("16xdgx2:fat_tree:oversub=4")


def test_oversubscribed_leaf_closes_the_ring_at_a_closed_form_rate(oversubscribed):
    G, graphs = oversubscribed
    # 16 hosts x 8 EDR NICs on 36-port leaves at oversub=4: 28 NICs per leaf, the last leaf
    # holds hosts 14 and 15 (16 NICs) and ceil(16 / 4) = 4 up-links. The ring closes from
    # host 15 to host 0 with all 8 channels: 8 connections on 4 x 12.5 GB/s.
    leaf = Router(G).edge_switch("h15.mlx5_0")
    ups = [v for v in G.adj[leaf] if G.nodes[v]["kind"] == "network_switch"]
    assert sum(G.edges[leaf, v]["links"] for v in ups) == 4
    load = network_load(graphs.fabric, graphs.ring, "ring")
    assert load.edges == tuple((v, leaf) for v in ups) and load.load == 8  # into the last leaf
    assert load.network_rate == pytest.approx(4 * 12.5e9 / 8)
    assert load.nccl_rate == pytest.approx(graphs.ring.bw_intra)  # 12 GB/s per channel
    assert load.factor == pytest.approx(4 * 12.5 / 8 / 12)


def test_the_measured_transfer_slows_by_the_factor_and_nccls_own_estimate_does_not(oversubscribed):
    G, _ = oversubscribed
    thin = estimate(G, "all_reduce", GiB, algorithm="ring")
    full = estimate(topo.build("16xdgx2"), "all_reduce", GiB, algorithm="ring")
    assert thin.nccl_time[0] == full.nccl_time[0]  # NCCL charges only the NICs
    factor = thin.network[0].factor
    m_thin, m_full = thin.measurement, full.measurement
    transfer_thin = thin.time[0] - float(np.atleast_1d(m_thin.startup)[0])
    transfer_full = full.time[0] - float(np.atleast_1d(m_full.startup)[0])
    assert transfer_full / transfer_thin == pytest.approx(factor)
    assert thin.bottleneck == thin.network[0].edges
    text = explain(thin) + explain(m_thin)
    assert "net.leaf4's down-links from the tier above" in text and "network gives 0.521" in text


@pytest.mark.parametrize("spec", ["2xdgx1v", "4xdgx2", "4xdgxh100:rail", "16xdgx2:rail_only", "10xdgx2"])
def test_a_non_blocking_network_gives_every_channel_its_nic(spec):
    # 10xdgx2: 80 EDR NICs on 18-port-down leaves, the last leaf partly filled (8 NICs).
    _, graphs = _graphs(spec)
    for pattern in ("ring", "tree"):
        assert network_load(graphs.fabric, graphs.ring, pattern).factor == 1.0


def test_rail_optimised_rings_stay_on_their_leaf_where_a_fat_tree_crosses_thin_up_links():
    rail = estimate(topo.build("16xdgx2:rail:oversub=4"), "all_reduce", GiB, algorithm="ring")
    fat = estimate(topo.build("16xdgx2:fat_tree:oversub=4"), "all_reduce", GiB, algorithm="ring")
    assert rail.network[0].factor == 1.0
    assert rail.busbw[0] > 1.5 * fat.busbw[0]


def test_editing_a_spine_link_in_the_graph_changes_the_prediction(oversubscribed):
    G, _ = oversubscribed
    half = topo.transform.scale_links(G, "net.spine0", "net.leaf4", 0.5)
    base = estimate(G, "all_reduce", GiB, algorithm="ring").network[0]
    thinner = estimate(half, "all_reduce", GiB, algorithm="ring").network[0]
    assert thinner.factor == pytest.approx(base.factor / 2)


@settings(max_examples=4, deadline=None)
@given(st.integers(1, 4), st.sampled_from(["fat_tree", "rail"]))
def test_more_oversubscription_never_raises_busbw(k, network):
    thinner = estimate(topo.build(f"12xdgx1v:{network}:oversub={k + 1}"), "all_reduce", GiB)
    wider = estimate(topo.build(f"12xdgx1v:{network}:oversub={k}"), "all_reduce", GiB)
    assert thinner.busbw[0] <= wider.busbw[0] * (1 + 1e-12)


def test_rail_only_routes_cross_rails_over_nvlink_first():
    G = topo.build("2xdgxh100:rail_only")
    r = Router(G).route("h0.gpu0", "h1.gpu5")
    assert r.via == "h0.gpu5"  # NCCL's PXN: to the GPU beside rail 5's NIC over NVLink
    assert not any(G.nodes[v]["kind"] == "network_switch" and G.nodes[v]["tier"] != "leaf"
                   for v in r.nodes)
    a2a = estimate(G, "alltoall", GiB)
    assert a2a.busbw[0] == pytest.approx(estimate(topo.build("2xdgxh100:rail"), "alltoall", GiB).busbw[0])


def test_rail_only_without_an_nvlink_peer_uses_the_pcie_path_to_that_rail():
    G = topo.build("2xdgx1v:rail_only")
    router = Router(G)
    # DGX-1V gpu2 has no NVLink to gpu4 or gpu5, the GPUs beside rail 2 (mlx5_2).
    target = router.nearest_nic("h1.gpu4")
    proxy, nic = router.pxn_proxy("h0.gpu2", target)
    assert proxy is None and G.nodes[nic]["index"] == G.nodes[target]["index"]
    assert router.route("h0.gpu2", "h1.gpu4").bandwidth > 0
    assert math.isfinite(estimate(G, "alltoall", GiB).busbw[0])


def test_bad_pattern_is_a_typed_error(oversubscribed):
    _, graphs = oversubscribed
    with pytest.raises(DgxTopoError, match="expected 'ring' or 'tree'"):
        network_load(graphs.fabric, graphs.ring, "nvls")


def test_one_host_has_no_network_load():
    G, graphs = _graphs("dgx1v")
    assert network_load(graphs.fabric, graphs.ring, "ring") is None
    assert estimate(G, "all_reduce", GiB).network == ()


def _switches(G):
    """The network's switches and their links, as a view of ``G``."""
    return G.subgraph(n for n, k in G.nodes(data="kind") if k == "network_switch")


def _reference_ecmp(G, a, b, S=None):
    """Every shortest switch path from a to b by networkx, split at each switch by bandwidth
    (``S``: :func:`_switches` of ``G``, when the caller has it)."""
    import networkx as nx
    S = _switches(G) if S is None else S
    if not nx.has_path(S, a, b):
        return None
    to_b = nx.single_source_shortest_path_length(S.reverse(copy=False), b)
    flow, layer = {}, {a: 1.0}
    for _ in range(to_b[a]):
        following = {}
        for x, amount in layer.items():
            hops = [y for y in S.successors(x) if to_b.get(y) == to_b[x] - 1]
            total = sum(G.edges[x, y]["bandwidth"] for y in hops)
            for y in hops:
                share = amount * G.edges[x, y]["bandwidth"] / total
                flow[x, y] = flow.get((x, y), 0.0) + share
                following[y] = following.get(y, 0.0) + share
        layer = following
    return flow


@pytest.fixture(scope="module")
def built():
    """topo.build, once per spec in this module (its graphs are only read, or transformed into new ones)."""
    graphs = {}

    def build(spec):
        if spec not in graphs:
            graphs[spec] = topo.build(spec, max_hosts=300)
        return graphs[spec]
    return build


@pytest.fixture(scope="module")
def three_tier(built):
    # 720 EDR NICs, the fewest DGX-2 hosts past 36 leaves of 36-port switches: 40 leaves in three
    # blocks (the last one partial), 54 spines and a core tier of two switches per plane, so
    # that ECMP spreads over spines and cores as on any larger three-tier network (300 hosts,
    # 2,400 NICs, ask the same questions at five times the routing cost).
    G = built("90xdgx2")
    assert any(t == "core" for _, t in G.nodes(data="tier"))
    return G, Router(G), [n for n, k in G.nodes(data="kind") if k == "network_switch"]


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_meeting_halfway_spreads_traffic_as_the_whole_network_search(three_tier, data):
    G, router, switches = three_tier
    a, b = data.draw(st.sampled_from(switches)), data.draw(st.sampled_from(switches))
    flow = router.switch_flow(a, b)
    expected = {} if a == b else _reference_ecmp(G, a, b)
    assert flow.keys() == expected.keys()
    assert all(flow[e] == pytest.approx(expected[e], rel=1e-12) for e in flow)


def _groups_by_routing(G, between):
    """Link-group loads of leaf pairs, each pair routed on its own by the reference ECMP."""
    tier = {n: {"leaf": 1, "spine": 2, "core": 3}[t] for n, t in G.nodes(data="tier") if t}
    load, S = {}, _switches(G)
    for (a, b), count in between.items():
        for (u, v), share in _reference_ecmp(G, a, b, S).items():
            key = ("up", u) if tier[v] > tier[u] else ("down", v)
            load[key] = load.get(key, 0.0) + count * share
    return load


def _variant(G, change):
    if change == "a spine removed":
        return topo.transform.remove_nodes(G, "net.spine0")
    if change == "a core link halved one way":
        u, v = next((u, v) for u, v, k in G.edges(data="kind")
                    if k == "network" and u.startswith("net.core") and v.startswith("net.spine"))
        return topo.transform.scale_links(G, u, v, 0.5, both_directions=False)
    if change == "a link between two leaves":
        return topo.transform.add_links(G, "net.leaf0", "net.leaf1", "ib_edr")
    return G


@pytest.mark.parametrize("spec, change", [
    ("90xdgx2", None), ("90xdgx2", "a core link halved one way"), ("16xdgx2:fat_tree:oversub=4", None),
    ("64xdgx2", "a spine removed"), ("40xdgx1v:rail", None), ("16xdgx2", "a link between two leaves")])
def test_charging_by_tiers_gives_the_loads_of_routing_each_leaf_pair(built, spec, change):
    import random
    from models.predict.network import TierView
    G = _variant(built(spec), change)
    leaves = [n for n, t in G.nodes(data="tier") if t == "leaf"]
    rng = random.Random(7)
    between = {(a, b): rng.randint(1, 8) for a, b in (rng.sample(leaves, 2) for _ in range(60))}
    load = {}
    left = TierView(G, Router(G)).charge(between, load)
    for pair, count in _groups_by_routing(G, left).items():
        load[pair] = load.get(pair, 0.0) + count
    expected = _groups_by_routing(G, between)
    assert load.keys() == expected.keys()
    assert all(load[k] == pytest.approx(expected[k], rel=1e-12) for k in load)
    if change == "a link between two leaves":  # a link inside a tier: every pair is routed
        assert left == between
    else:
        assert len(left) < len(between) / 2


# Issue 38: the channels' NICs are those of the host the search ran on. A what-if on a later host
# makes that host the searched one; the charge was keyed by host 0's NIC names (KeyError
# 'h1.mlx5_0'). Hosts are copies, so the same failure on any host costs the same time.
_FAILURES = ("{h}.nvswitch0", "{h}.gpu0-{h}.nvswitch0", "{h}.gpu3-{h}.nvswitch1")  # a switch, a bundle, a link


# Every failure kind on 2xdgxh100 and 2xdgxb200 (two NVSwitch generations), and a third host
# once. Not the H200: its fabric is the H100's (topo.dgx_nvswitch builds both alike; only the GPU model
# and its memory differ), so its case ran the same searches and charges as 2xdgxh100's.
@pytest.mark.parametrize("spec, later, failure",
                         [("2xdgxh100", "h1", f) for f in _FAILURES] + [("2xdgxb200", "h1", f) for f in _FAILURES]
                         + [("3xdgxh100", "h2", _FAILURES[0])])
def test_a_failure_on_a_later_host_is_charged_as_on_host_0(spec, later, failure):
    from models.studies.whatif import apply_failures

    G = topo.build(spec)
    sizes = [2**20, 2**30]
    # Each failed fabric prepared once: its channel searches are cached on it (a graph passed
    # as such is prepared anew by each estimate, which searched both hosts again: ~3x the time).
    on_first = PreparedFabric(apply_failures(G, failure.format(h="h0")).graph)
    on_later = PreparedFabric(apply_failures(G, failure.format(h=later)).graph)
    first = estimate(on_first, "all_reduce", sizes)
    other = estimate(on_later, "all_reduce", sizes)
    assert list(other.time) == pytest.approx(list(first.time), rel=1e-12)
    assert list(other.algorithm) == list(first.algorithm)
    assert [load.factor for load in other.network] == pytest.approx([load.factor for load in first.network])
    for algorithm in ("ring", "tree"):  # each charge, not only the fastest algorithm's
        one = estimate(on_first, "all_reduce", sizes, algorithm=algorithm)
        two = estimate(on_later, "all_reduce", sizes, algorithm=algorithm)
        assert list(two.time) == pytest.approx(list(one.time), rel=1e-12)
