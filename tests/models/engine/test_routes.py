"""Routing between GPUs: NCCL path types, parallel NVSwitch paths, staging, NCCL's bandwidth."""

from __future__ import annotations

import math

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topo
from models.engine.nccl.system import nccl_capacity as nccl_bandwidth
from models.engine.routes import (P2P_LEVEL, PathType, RouteError, line_rate, route,
                          route_bandwidth)
from topo.parts import add_cpu, add_gpu, add_link, add_nic, add_pcie_switch
from topo.specs import LINKS
from topo.units import GB, ns

NVLINK_HOP = LINKS["nvlink2"].latency
PCIE_HOP = LINKS["pcie3_x16"].latency
PCIE3 = LINKS["pcie3_x16"].bandwidth


def without(G, *pairs):
    """A copy of G without both directions of each (u, v)."""
    H = G.copy()
    for u, v in pairs:
        H.remove_edge(u, v)
        H.remove_edge(v, u)
    topo.validate(H)
    return H


def without_nvlink(G, gpu):
    return without(G, *[(gpu, v) for v, d in G.adj[gpu].items() if d["kind"] == "nvlink"])


# -- path types --------------------------------------------------------------------------------
def test_path_types_have_nccls_values_and_order():
    assert [(t.name, t.value) for t in PathType] == [
        ("LOC", 0), ("NVL", 1), ("NVB", 2), ("C2C", 3), ("PIX", 4), ("PXB", 5), ("P2C", 6),
        ("PXN", 7), ("PHB", 8), ("SYS", 9), ("NET", 10), ("DIS", 11)]
    assert P2P_LEVEL is PathType.PXB
    assert PathType.NVB <= P2P_LEVEL < PathType.PHB


# -- NVLink ------------------------------------------------------------------------------------
def test_direct_nvlink_bundle():
    G = topo.dgx1v()
    r = route(G, "gpu0", "gpu3")
    assert (r.path_type, r.p2p, r.via, r.host_memory) == (PathType.NVL, True, None, None)
    assert r.edges == (("gpu0", "gpu3"),) and r.shares == (1.0,)
    assert r.nodes == ("gpu0", "gpu3") and r.paths == (("gpu0", "gpu3"),)
    assert r.bandwidth == 50 * GB and r.bottleneck == ("gpu0", "gpu3")
    assert r.latency == pytest.approx(NVLINK_HOP)
    assert route(G, "gpu0", "gpu1").bandwidth == 25 * GB


def test_dgx2_pair_on_one_board_uses_its_six_switches_in_parallel():
    r = route(topo.dgx2(), "gpu0", "gpu1")
    assert r.path_type is PathType.NVL and r.p2p
    assert sorted(r.paths) == [("gpu0", f"nvswitch{s}", "gpu1") for s in range(6)]
    assert len(r.edges) == 12 and all(s == pytest.approx(1 / 6) for s in r.shares)
    assert r.bandwidth == pytest.approx(150 * GB)
    assert r.latency == pytest.approx(2 * NVLINK_HOP)


def test_dgx2_pair_across_boards_crosses_the_trunks_one_sixth_each():
    r = route(topo.dgx2(), "gpu0", "gpu8")
    assert sorted(r.paths) == [("gpu0", f"nvswitch{s}", f"nvswitch{s + 6}", "gpu8")
                               for s in range(6)]
    shares = dict(zip(r.edges, r.shares))
    assert shares["nvswitch2", "nvswitch8"] == pytest.approx(1 / 6)
    # The trunk (8 links, 200 GB/s) carries a sixth: the GPU's access links bind.
    assert r.bottleneck[0] == "gpu0" and r.bandwidth == pytest.approx(150 * GB)
    assert r.latency == pytest.approx(3 * NVLINK_HOP)


def test_every_dgx2_pair_has_six_links_worth():
    G = topo.dgx2()
    for a in topo.gpus(G):
        for b in topo.gpus(G):
            if a != b:
                r = route(G, a, b)
                assert r.path_type is PathType.NVL and len(r.paths) == 6
                assert r.bandwidth == pytest.approx(150 * GB)


def test_nvb_relay_only_when_asked():
    G = topo.dgx1v()
    assert route(G, "gpu0", "gpu5").path_type is PathType.SYS
    r = route(G, "gpu0", "gpu5", nvb=True)
    # 0-1 (NV1) + 1-5 (NV2) and 0-4 (NV2) + 4-5 (NV1) both give one link's worth.
    assert r.path_type is PathType.NVB and r.p2p and r.via in ("gpu1", "gpu4")
    assert r.nodes == ("gpu0", r.via, "gpu5") and r.bandwidth == 25 * GB
    assert r.latency == pytest.approx(2 * NVLINK_HOP)
    assert route(G, "gpu0", "gpu3", nvb=True).path_type is PathType.NVL


# -- PCIe and staging --------------------------------------------------------------------------
def test_cross_socket_copy_is_staged_through_the_destination_socket_memory():
    G = topo.dgx1v()
    r = route(G, "gpu0", "gpu5")
    assert (r.path_type, r.p2p, r.host_memory) == (PathType.SYS, False, "cpu1")
    assert r.nodes == ("gpu0", "pcie0", "cpu0", "cpu1", "pcie2", "gpu5")
    assert ("cpu0", "cpu1") in r.edges
    assert r.bandwidth == pytest.approx(PCIE3) and G.edges[r.bottleneck]["kind"] == "pcie"
    assert r.latency == pytest.approx(4 * PCIE_HOP + LINKS["qpi_bdw"].latency)
    back = route(G, "gpu5", "gpu0")
    assert back.host_memory == "cpu0" and back.nodes == r.nodes[::-1]


def test_pcie_peer_through_one_switch_is_pix():
    G = without(topo.dgx1v(), ("gpu0", "gpu1"))
    r = route(G, "gpu0", "gpu1")
    assert (r.path_type, r.p2p, r.host_memory) == (PathType.PIX, True, None)
    assert r.nodes == ("gpu0", "pcie0", "gpu1") and r.bandwidth == pytest.approx(PCIE3)


def test_same_socket_other_switch_is_phb_and_staged():
    G = without(topo.dgx1v(), ("gpu0", "gpu2"))
    r = route(G, "gpu0", "gpu2")
    assert (r.path_type, r.p2p, r.host_memory) == (PathType.PHB, False, "cpu0")
    assert r.nodes == ("gpu0", "pcie0", "cpu0", "pcie1", "gpu2")


def test_dgx2_pcie_tree_gives_pxb_phb_and_sys():
    G = without_nvlink(topo.dgx2(), "gpu0")
    pxb = route(G, "gpu0", "gpu2")
    assert (pxb.path_type, pxb.p2p) == (PathType.PXB, True)
    assert pxb.nodes == ("gpu0", "pcie4", "pcie0", "pcie5", "gpu2")
    node = route(G, "gpu0", "gpu4")  # nvidia-smi NODE (two host bridges): PHB for NCCL
    assert (node.path_type, node.p2p, node.host_memory) == (PathType.PHB, False, "cpu0")
    sys_ = route(G, "gpu0", "gpu8")
    assert (sys_.path_type, sys_.p2p, sys_.host_memory) == (PathType.SYS, False, "cpu1")
    assert route(G, "gpu1", "gpu8").path_type is PathType.NVL  # the others keep NVLink


def test_device_local_route():
    r = route(topo.dgx2(), "gpu3", "gpu3")
    assert (r.path_type, r.edges, r.bandwidth, r.bottleneck, r.latency) == (
        PathType.LOC, (), math.inf, None, 0.0)
    assert r.paths == (("gpu3",),) and route_bandwidth(topo.dgx2(), r) == (math.inf, None)


# -- NCCL's bandwidth and reservation -----------------------------------------------------------
def test_nccl_bandwidth_per_edge():
    G = topo.dgx1v()
    assert nccl_bandwidth(G, "gpu0", "gpu3") == 40 * GB     # 2 x SM70 20.0
    assert nccl_bandwidth(G, "pcie0", "gpu0") == 12 * GB    # PCI_BW
    assert G.edges["cpu0", "cpu1"]["links"] == 2
    assert nccl_bandwidth(G, "cpu0", "cpu1") == 6 * GB      # BDW_QPI_BW, whole connection
    assert nccl_bandwidth(topo.dgx2(), "cpu1", "cpu0") == 10 * GB  # SKL_QPI_BW, 3 UPI links
    assert nccl_bandwidth(topo.dgx1(), "gpu0", "gpu1") == 18 * GB  # SM60
    assert line_rate(G, "gpu0", "gpu3") == 50 * GB


def test_nccl_bandwidth_of_routes_matches_nccls_model():
    G = topo.dgx2()
    assert route_bandwidth(G, route(G, "gpu0", "gpu9"), nccl_bandwidth) == (
        pytest.approx(120 * GB), ("gpu0", "nvswitch0"))    # 6 NVLinks x SM70 20.0 (topo.h)
    G = topo.dgx1v()
    value, edge = route_bandwidth(G, route(G, "gpu0", "gpu5"), nccl_bandwidth)
    assert value == 6 * GB and edge == ("cpu0", "cpu1")    # NCCL charges QPI below PCIe


def test_nccl_bandwidth_needs_a_link_technology():
    G = topo.dgx1v()
    del G.edges["gpu0", "gpu3"]["link"]
    with pytest.raises(topo.TopologyError, match="needs attribute 'link' naming one of nvlink1"):
        nccl_bandwidth(G, "gpu0", "gpu3")


def test_load_reserves_rate_times_share():
    r = route(topo.dgx2(), "gpu0", "gpu8")
    load = r.load(60 * GB)
    assert load["gpu0", "nvswitch5"] == pytest.approx(10 * GB)
    assert load["nvswitch5", "nvswitch11"] == pytest.approx(10 * GB)
    assert sum(v for (u, _), v in load.items() if u == "gpu0") == pytest.approx(60 * GB)


# -- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("src, dst, message", [
    ("gpu0", "nvswitch0", "destination 'nvswitch0' is a nvswitch: expected a GPU node"),
    ("cpu0", "gpu1", "source 'cpu0' is a cpu: expected a GPU node"),
    ("gpu99", "gpu1", "source 'gpu99' is not a node of the fabric: expected a GPU node such as 'gpu0'"),
])
def test_route_rejects_what_is_not_a_gpu(src, dst, message):
    with pytest.raises(RouteError, match=message):
        route(topo.dgx2(), src, dst)


def test_route_error_is_a_topology_error():
    assert issubclass(RouteError, topo.TopologyError)
    assert issubclass(RouteError, topo.DgxTopoError)


def test_route_validates_the_fabric():
    with pytest.raises(topo.TopologyError, match="networkx.DiGraph"):
        route(nx.Graph(topo.dgx1v()), "gpu0", "gpu1")


def two_hosts():
    """Two single-GPU hosts joined only by their NICs' network link."""
    G = nx.DiGraph(name="two hosts")
    for h in (0, 1):
        add_cpu(G, f"h{h}.cpu0", "E5-2698v4", index=0, host=h)
        add_pcie_switch(G, f"h{h}.pcie0", index=0, socket=0, model="PEX8764", host=h)
        add_gpu(G, f"h{h}.gpu0", "V100-SXM2", index=0, socket=0, host=h)
        add_nic(G, f"h{h}.mlx5_0", index=0, socket=0, model="CX-4", port="ib_edr", host=h)
        add_link(G, f"h{h}.cpu0", f"h{h}.pcie0", "pcie3_x16")
        add_link(G, f"h{h}.pcie0", f"h{h}.gpu0", "pcie3_x16")
        add_link(G, f"h{h}.pcie0", f"h{h}.mlx5_0", "pcie3_x16")
    add_link(G, "h0.mlx5_0", "h1.mlx5_0", "ib_edr")
    topo.validate(G)
    return G


def test_gpus_of_different_hosts_route_through_their_nics():
    r = route(two_hosts(), "h0.gpu0", "h1.gpu0")
    assert r.path_type == PathType.NET and not r.p2p and r.host_memory is None
    assert r.nodes == ("h0.gpu0", "h0.pcie0", "h0.mlx5_0", "h1.mlx5_0", "h1.pcie0", "h1.gpu0")


def test_gpus_of_different_hosts_without_a_network_have_no_route():
    G = two_hosts()
    for h in (0, 1):
        del G.nodes[f"h{h}.mlx5_0"]["port_link"]
    G.remove_edges_from([("h0.mlx5_0", "h1.mlx5_0"), ("h1.mlx5_0", "h0.mlx5_0")])
    # validate() refuses the fabric before any router could be asked.
    with pytest.raises(topo.TopologyError, match=r"'h1.gpu0' cannot be reached from GPU 'h0.gpu0'"):
        route(G, "h0.gpu0", "h1.gpu0")


# -- invariants ---------------------------------------------------------------------------------
FABRICS = {name: topo.build(name) for name in topo.SYSTEMS}


@st.composite
def pairs(draw):
    name = draw(st.sampled_from(sorted(FABRICS)))
    nodes = topo.gpus(FABRICS[name])
    a, b = draw(st.permutations(nodes))[:2]
    return FABRICS[name], a, b, draw(st.booleans())


@settings(max_examples=60, deadline=None)
@given(pairs())
def test_route_is_a_flow_of_one_from_src_to_dst(case):
    G, a, b, nvb = case
    r = route(G, a, b, nvb=nvb)
    net = {}
    for (u, v), share in zip(r.edges, r.shares):
        assert G.has_edge(u, v) and 0 < share <= 1
        net[u] = net.get(u, 0.0) - share
        net[v] = net.get(v, 0.0) + share
    assert net.pop(a) == pytest.approx(-1.0) and net.pop(b) == pytest.approx(1.0)
    assert all(abs(x) < 1e-12 for x in net.values())  # conservation at every relay
    assert r.bandwidth == pytest.approx(min(G.edges[e]["bandwidth"] / s
                                            for e, s in zip(r.edges, r.shares)))
    assert all(p[0] == a and p[-1] == b for p in r.paths)
    assert (r.path_type <= P2P_LEVEL) == r.p2p and (r.host_memory is None) == r.p2p


@settings(max_examples=60, deadline=None)
@given(pairs())
def test_route_back_is_the_route_reversed(case):
    G, a, b, nvb = case
    forward, back = route(G, a, b, nvb=nvb), route(G, b, a, nvb=nvb)
    assert forward.path_type == back.path_type and forward.bandwidth == back.bandwidth
    if forward.path_type is not PathType.NVB:  # NVB ties between relays may pick another one
        assert sorted(p[::-1] for p in forward.paths) == sorted(back.paths)
    assert forward.latency == pytest.approx(back.latency)


def test_hop_latency_comes_from_the_edges():
    G = topo.dgx1v()
    for u, v in (("gpu0", "gpu3"), ("gpu3", "gpu0")):
        G.edges[u, v]["latency"] = 800 * ns
    assert route(G, "gpu0", "gpu3").latency == pytest.approx(800 * ns)


def test_a_negative_or_non_finite_rate_has_no_load():
    r = route(topo.dgx1v(), "gpu0", "gpu3")
    for rate in (-5, math.nan, math.inf, "1G", True):
        with pytest.raises(RouteError, match="rate must be a finite bandwidth >= 0"):
            r.load(rate)
