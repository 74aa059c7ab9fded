"""Cluster builder: hosts joined through their NICs by a fat tree or a rail-optimised network."""

from __future__ import annotations

from collections import Counter

import networkx as nx
import pytest

import topo
import topo.specs
from topo.cluster import TIERS, network_bisection, network_cut, network_switches
from topo.dgx_nvswitch import gb200nvl72

GB = 1e9


def test_two_dgx1v():
    G = topo.build("2xdgx1v")
    topo.validate(nx.DiGraph(G))  # a plain copy: the sealed graph itself passes unchecked
    assert G.graph["hosts"] == 2 and G.graph["gpus_per_host"] == 8
    gpus = topo.gpus(G)
    assert len(gpus) == 16
    # Global ids: host x 8 + local index.
    assert [(G.nodes[g]["host"], G.nodes[g]["index"]) for g in gpus] == [(h, i) for h in range(2) for i in range(8)]
    assert topo.select_gpus(G, [9]) == ["h1.gpu1"]
    switches = [n for n, k in G.nodes(data="kind") if k == "network_switch"]
    assert switches == ["net.leaf0"], "8 EDR NICs fit one 36-port switch"
    assert sorted(G.predecessors("net.leaf0")) == sorted(f"h{h}.mlx5_{k}" for h in range(2) for k in range(4))
    edge = G.edges["h0.mlx5_0", "net.leaf0"]
    assert (edge["kind"], edge["link"], edge["bandwidth"]) == ("network", "ib_edr", 12.5 * GB)


def test_each_host_keeps_its_nvidia_smi_view():
    G = topo.build("2xdgx1v")
    assert topo.connection_matrix(G, host=1).cells == topo.connection_matrix(topo.dgx1v()).cells


def tiers(G) -> dict:
    return dict(Counter(d["tier"] for _, d in G.nodes(data=True) if d["kind"] == "network_switch"))


def up_links(G, switch) -> int:
    """Links from a switch to the tier above (network switches it reaches that are not leaves)."""
    order = {t: i for i, t in enumerate(TIERS)}
    level = order[G.nodes[switch]["tier"]]
    return sum(d["links"] for v, d in G[switch].items()
               if G.nodes[v]["kind"] == "network_switch" and order[G.nodes[v]["tier"]] > level)


def down_links(G, switch) -> int:
    return sum(d["links"] for v, d in G[switch].items()) - up_links(G, switch)


def test_fat_tree_is_non_blocking():
    """128 EDR NICs on 36-port switches: 8 leaves of 18 down-links (the last holds 2) and 18
    up-links each, spread over 6 spines, 3 links per leaf and spine."""
    G = topo.build("16xdgx2")
    assert tiers(G) == {"leaf": 8, "spine": 6}
    for leaf in network_switches(G, "leaf"):
        assert up_links(G, leaf) == down_links(G, leaf) <= 18
    for switch in network_switches(G):
        assert down_links(G, switch) + up_links(G, switch) <= G.nodes[switch]["ports"] == 36
    assert {G.edges["net.leaf0", f"net.spine{s}"]["links"] for s in range(6)} == {3}


@pytest.mark.parametrize("spec, expected", [
    ("32xdgxh100:rail", {"leaf": 8, "spine": 4}),      # one scalable unit: a leaf per rail
    ("127xdgxh100:rail", {"leaf": 32, "spine": 16}),   # DGX H100 SuperPOD, 4 SU [S49]
    ("64xdgxb200:rail", {"leaf": 16, "spine": 8}),     # DGX B200 SuperPOD, 2 SU [S49]
    ("32xdgxh100", {"leaf": 8, "spine": 4}),
    ("2xdgxa100", {"leaf": 1}),                        # 16 HDR NICs on one 40-port switch
    ("1024xdgx1v", {"leaf": 228, "spine": 234, "core": 162}),
])
def test_switch_counts(spec, expected):
    """Leaves: NICs / down-ports per leaf (per rail and unit on a rail network). Spines: the
    fewest that keep each within its ports. 1,024 DGX-1V: 4,096 EDR NICs need 228 leaves, more
    than a 36-port spine reaches, so blocks of 18 leaves get 18 spines each (13 blocks, the last
    of 12 leaves) and spine j of every block joins plane j's 9 core switches (2 links each)."""
    G = topo.build(spec)
    assert tiers(G) == expected
    for switch in network_switches(G):
        assert down_links(G, switch) + up_links(G, switch) <= G.nodes[switch]["ports"]
        if G.nodes[switch]["tier"] != "leaf":
            assert up_links(G, switch) in (0, down_links(G, switch)), "non-blocking above the leaves"


def test_links_carry_the_generation_of_the_nics():
    for spec, link, rate in (("2xdgxa100", "ib_hdr", 25 * GB), ("4xdgxh100:rail", "ib_ndr", 50 * GB),
                             ("32xdgxb200:rail", "ib_ndr", 50 * GB), ("2xdgx2", "ib_edr", 12.5 * GB)):
        G = topo.build(spec)
        network = [d for _, _, d in G.edges(data=True) if d["kind"] == "network"]
        assert {d["link"] for d in network} == {link}
        assert all(d["bandwidth"] == d["links"] * rate for d in network)
        assert {G.nodes[s]["ports"] for s in network_switches(G)} == {topo.specs.NETWORK_SWITCHES[link].ports}


@pytest.mark.parametrize("k", [1, 2, 3, 4, 7])
def test_oversubscribed_leaves_have_k_times_thinner_up_links(k):
    """A leaf with m NICs has ceil(m / K) up-links: full leaves exactly K times thinner."""
    G = topo.build(f"16xdgx2:fat_tree:oversub={k}")
    assert G.graph["oversub"] == k and G.graph["system"] == ("16xdgx2" if k == 1 else f"16xdgx2:oversub={k}")
    down = k * (36 // (k + 1))
    for leaf in network_switches(G, "leaf"):
        nics = down_links(G, leaf)
        assert nics <= down and up_links(G, leaf) == -(-nics // k)
        if nics == down:
            up_capacity = sum(d["bandwidth"] for v, d in G[leaf].items() if G.nodes[v]["kind"] == "network_switch")
            assert nics * 12.5 * GB / up_capacity == pytest.approx(k)


def test_oversubscription_thins_the_cut_of_a_full_leaf():
    """12 DGX H100, 96 NDR NICs. Non-blocking: leaves of 32, hosts 0-3 fill leaf 0, the cut is
    32 x 50 GB/s. 4:1: leaves of 48 down / 12 up, hosts 0-5 fill leaf 0, the cut is 12 x 50."""
    assert network_cut(topo.build("12xdgxh100"), range(4)) == pytest.approx(32 * 50 * GB)
    thin = topo.build("12xdgxh100:oversub=4")
    assert network_cut(thin, range(6)) == pytest.approx(48 * 50 * GB / 4)
    assert network_cut(topo.build("12xdgxh100:rail:oversub=4"), range(6)) == pytest.approx(48 * 50 * GB)


@pytest.mark.parametrize("spec, nics", [("32xdgxh100", 256), ("127xdgxh100:rail", 1016),
                                        ("4xdgxh100:rail_only", 32), ("65xdgxh100:rail_only", 520),
                                        ("163xdgx1v", 652)])
def test_network_bisection_of_a_non_blocking_network_is_half_its_nics(spec, nics):
    G = topo.build(spec)
    assert len(topo.compute_nics(G)) == nics
    hosts = G.graph["hosts"]
    rate = topo.LINKS[G.nodes[topo.compute_nics(G)[0]]["port_link"]].bandwidth
    assert network_bisection(G) == pytest.approx(nics // G.graph["hosts"] * (hosts // 2) * rate)


def test_rail_membership():
    """Rail k holds NIC k of every host (DGX H100: mlx5_0, 3, 4, 5, 6, 9, 10, 11 are GPU 0-7's)."""
    G = topo.build("127xdgxh100:rail")
    nics = topo.compute_nics(G)
    assert len(nics) == 127 * 8
    for i, nic in enumerate(nics):
        h, k = divmod(i, 8)
        assert G.nodes[nic]["host"] == h
        (leaf,) = [v for v in G[nic] if G.nodes[v]["kind"] == "network_switch"]
        assert G.nodes[leaf]["rail"] == k and G.nodes[leaf]["index"] == (h // 32) * 8 + k
    assert all("rail" not in G.nodes[s] for s in network_switches(G, "spine"))


def test_rail_only_has_no_path_between_rails():
    G = topo.build("65xdgxh100:rail_only")   # 65 NICs per rail: a 3-leaf fat tree per rail
    net = nx.Graph((u, v) for u, v, d in G.edges(data=True) if d["kind"] == "network")
    components = list(nx.connected_components(net))
    assert len(components) == 8
    for component in components:
        assert len({G.nodes[s]["rail"] for s in component if G.nodes[s]["kind"] == "network_switch"}) == 1
    # Per rail leaves of 32, 32 and 1 NICs: 2 spines keep each within 64 ports (16 + 16 + 1).
    assert tiers(G) == {"leaf": 24, "spine": 16}
    assert network_cut(G, [0]) == pytest.approx(8 * 50 * GB)


def test_nvl72_racks_over_infiniband():
    """8 GB200 NVL72 racks: 144 hosts of 4 GPUs, each rack one NVLink domain."""
    G = topo.cluster(gb200nvl72, 8)
    gpus = topo.gpus(G)
    assert len(gpus) == 576 and G.graph["hosts"] == 144 and G.graph["gpus_per_host"] == 4
    assert G.graph["nvlink_domains"] == 8 and G.graph["hosts_per_domain"] == 18
    assert [(G.nodes[g]["host"], G.nodes[g]["index"]) for g in gpus] == [(h, i) for h in range(144) for i in range(4)]
    assert gpus[4 * 143 + 3] == "r7.t17.gpu3" and G.nodes["r7.t17.gpu3"]["nvlink_domain"] == 7
    nvswitches = [n for n, k in G.nodes(data="kind") if k == "nvswitch"]
    assert len(nvswitches) == 8 * 18 and {G.nodes[s]["host"] for s in nvswitches} == {-1}
    for g in gpus[::37]:   # every NVLink of a GPU stays in its rack
        domain = G.nodes[g]["nvlink_domain"]
        assert {G.nodes[v]["nvlink_domain"] for v, d in G[g].items() if d["kind"] == "nvlink"} == {domain}
    assert topo.connection_matrix(G, host=143).cells == topo.connection_matrix(gb200nvl72(), host=17).cells
    assert topo.bisection(G).bandwidth == 0.0, "racks share no NVLink"
    assert topo.summarize(G).gpus == 576
    assert network_bisection(G) == pytest.approx(288 * 50 * GB)
    assert tiers(G) == {"leaf": 18, "spine": 16}


def test_copies_share_no_attribute_dict():
    template = topo.dgx1v()
    G = topo.cluster(template, 2)
    G.edges["h0.gpu0", "h0.gpu1"]["bandwidth"] = 1.0
    G.nodes["h0.gpu0"]["model"] = "X"
    assert G.edges["h1.gpu0", "h1.gpu1"]["bandwidth"] == template.edges["gpu0", "gpu1"]["bandwidth"] == 25 * GB
    assert G.nodes["h1.gpu0"]["model"] == template.nodes["gpu0"]["model"] != "X"


def test_copies_are_what_networkx_would_build():
    """The bulk copy gives the graph add_nodes_from / add_edges_from would give, in the same
    order (node, successor and predecessor order decide tie-breaks downstream), each edge's dict
    shared by its two adjacency entries as networkx shares it."""
    template = topo.dgx1v()
    G = topo.cluster(template, 3)
    expected = nx.DiGraph()
    for r in range(3):
        expected.add_nodes_from((f"h{r}.{v}", {**d, "host": r, **({"nvlink_domain": r} if d["kind"] in ("gpu", "nvswitch") else {})})
                                for v, d in template.nodes(data=True))
        expected.add_edges_from((f"h{r}.{u}", f"h{r}.{v}", d) for u, v, d in template.edges(data=True))
    hosts = [n for n in G if not n.startswith("net.")]
    assert hosts == list(expected)
    for n in hosts:
        assert G.nodes[n] == expected.nodes[n]
        assert [v for v in G.succ[n] if v in expected] == list(expected.succ[n])
        assert [u for u in G.pred[n] if u in expected] == list(expected.pred[n])
        for v, data in G.succ[n].items():
            assert G.pred[v][n] is data
            if v in expected:
                assert data == expected.edges[n, v]


@pytest.mark.parametrize("spec", ["3xdgx1v", "2xdgx2:rail:oversub=4", "3xdgxh100:rail_only", "40xdgx1v:rail",
                                  "2xgb200nvl72:rail"])
def test_every_network_shape_builds_a_valid_fabric(spec):
    """join_hosts does not validate what it builds (valid by construction): this checks it, on a
    plain copy (the sealed graph itself passes unchecked, topo.unedited)."""
    topo.validate(nx.DiGraph(topo.build(spec)))


def test_a_name_too_long_for_the_copies_is_refused():
    template = topo.dgx1v()
    template.graph["name"] = "x" * topo.schema.MAX_TEXT
    with pytest.raises(topo.TopologyError, match="graph attribute 'name'"):
        topo.cluster(template, 2)


def test_cluster_of_one_and_by_builder():
    assert len(topo.gpus(topo.cluster(topo.dgx2, 1))) == 16
    assert topo.cluster("dgx1", 3).graph["name"] == "3xDGX-1"


@pytest.mark.parametrize("args, message", [
    (("dgx1v", 0), "whole number of hosts >= 1, received 0"),
    (("dgx1v", 2.0), "whole number of hosts"),
    ((42, 2), "node_builder must be a builder or a system name"),
])
def test_cluster_errors(args, message):
    with pytest.raises(topo.DgxTopoError, match=message):
        topo.cluster(*args)


def test_cluster_network_errors():
    with pytest.raises(topo.DgxTopoError, match="unknown network 'torus'"):
        topo.cluster("dgx1v", 2, network="torus")
    with pytest.raises(topo.DgxTopoError, match="oversub=40 leaves no up-port on a 36-port"):
        topo.cluster("dgx1v", 2, oversub=40)
    with pytest.raises(topo.DgxTopoError, match="oversub=64 leaves no up-port"):
        topo.build("2xdgx1v:oversub=64")
    for bad in (0, 65, 2.0, True, "4"):
        with pytest.raises(topo.SystemSpecError, match="oversub must be a whole number"):
            topo.cluster("dgx1v", 2, oversub=bad)
    with pytest.raises(topo.SystemSpecError, match="beyond the limit of 20"):
        topo.cluster(gb200nvl72, 2, max_hosts=20)   # 2 racks are 36 hosts
    with pytest.raises(topo.DgxTopoError, match="hosts \\[5\\] have no compute NIC"):
        network_cut(topo.build("2xdgx1v"), [5])
    def no_nics():
        G = topo.dgx1v()
        for nic in topo.compute_nics(G):
            del G.nodes[nic]["port_link"]
        return G
    with pytest.raises(topo.DgxTopoError, match="no NIC with a network port"):
        topo.cluster(no_nics, 2)
    with pytest.raises(topo.DgxTopoError, match="single system"):
        topo.cluster(lambda: topo.build("2xdgx1v"), 2)


@pytest.mark.parametrize("name, message", [
    ("0xdgx1v", "host count '0' is not a whole number >= 1"),
    ("2xdgx9", "unknown system '2xdgx9'"),
    ("2xdgx1v:mesh", "unknown network 'mesh'"),
])
def test_build_spec_errors(name, message):
    with pytest.raises(topo.DgxTopoError, match=message):
        topo.build(name)


def test_nvlink_bisection_of_a_cluster_is_zero():
    """Hosts share no NVLink: one host is a side of a free cut (found without max-flows)."""
    result = topo.bisection(topo.build("2xdgx2"))
    assert result.bandwidth == 0.0 and result.cases == 0
    assert {topo.build("2xdgx2").nodes[g]["host"] for g in result.side} == {0}
