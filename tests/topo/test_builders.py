"""Facts every builder must encode (sources in topo.sources), parametrised over systems."""

from __future__ import annotations

import networkx as nx
import pytest

import topo
from topo.dgx_nvswitch import dgxa100
from topo.registry import VARIANTS
from topo.specs import GPUS, LINKS, NVSWITCHES
from topo.unedited import unedited

GPU_COUNT = {"dgx1": 8, "dgx1v": 8, "dgx2": 16, "dgxa100": 8, "dgxh100": 8, "dgxh200": 8, "dgxb200": 8,
             "gb200nvl72": 72, "dgxh800": 8, "dgxb300": 8, "gb300nvl72": 72}
# P100 4 x NVLink 1.0, V100 6 x NVLink 2.0, A100 12 x NVLink 3, H100/H200 18 x NVLink 4, B200 18 x NVLink 5,
# H800 8 x NVLink 4 [S116], B300/GB300 18 x NVLink 5 [S114] [S115]
NVLINK_PORTS = {"dgx1": 4, "dgx1v": 6, "dgx2": 6, "dgxa100": 12, "dgxh100": 18, "dgxh200": 18, "dgxb200": 18,
                "gb200nvl72": 18, "dgxh800": 8, "dgxb300": 18, "gb300nvl72": 18}


def nvlink_links(G, node) -> int:
    return sum(d["links"] for _, _, d in G.out_edges(node, data=True) if d["kind"] == "nvlink")


def test_builder_returns_valid_fresh_graph(system):
    first, second = topo.build(system), topo.build(system)
    topo.validate(nx.DiGraph(first))  # a plain copy: the sealed graph itself passes unchecked
    gpu = topo.gpus(first)[0]
    first.remove_node(gpu)
    assert gpu in second, "builders must return a fresh graph each call"


BUILT_VALID = {**{name: topo.SYSTEMS[name] for name in topo.SYSTEMS},
               **{name: (lambda name=name: topo.build(name)) for name in VARIANTS},
               **{f"dgxa100({v!r})": (lambda v=v: dgxa100(v)) for v in ("320GB", "640GB")}}


@pytest.mark.parametrize("name", sorted(BUILT_VALID))
def test_every_built_in_fabric_is_valid_and_carries_it_until_edited(name):
    """Valid by construction (topo.unedited): every builder, variant and builder option makes a
    graph that validation passes, sealed, so that validating it again checks nothing until it
    is edited."""
    G = BUILT_VALID[name]()
    assert unedited(G)
    assert topo.schema.validated_gpus(nx.DiGraph(G)) == topo.gpus(G)
    G.edges[next(iter(G.edges))]["bandwidth"] = -1.0
    assert not unedited(G)
    with pytest.raises(topo.TopologyError, match="bandwidth must be positive"):
        topo.validate(G)


def hosts_of(G, nodes) -> dict:
    """Nodes by host (a system of several hosts, such as a GB200 NVL72 rack's 18 trays)."""
    by_host: dict = {}
    for n in nodes:
        by_host.setdefault(G.nodes[n].get("host", 0), []).append(n)
    return by_host


def test_gpu_count_and_numbering(fabric, system):
    """CUDA numbers the GPUs of each host from 0; the system's GPU order is host by host."""
    gpus = topo.gpus(fabric)
    assert len(gpus) == GPU_COUNT[system]
    by_host = hosts_of(fabric, gpus)
    assert [h for h in by_host] == sorted(by_host)
    assert gpus == [g for h in sorted(by_host) for g in by_host[h]]
    for members in by_host.values():
        assert [fabric.nodes[g]["index"] for g in members] == list(range(len(members)))


def test_nvlink_links_per_gpu(fabric, system):
    for g in topo.gpus(fabric):
        assert nvlink_links(fabric, g) == NVLINK_PORTS[system]
        model = fabric.nodes[g]["model"]
        assert NVLINK_PORTS[system] == next(s.nvlink_ports for s in GPUS.values() if s.model == model)


def test_every_edge_has_an_equal_reverse(fabric):
    for u, v, d in fabric.edges(data=True):
        assert fabric.edges[v, u] == d


def test_every_gpu_reaches_every_other(fabric):
    gpus = topo.gpus(fabric)
    for g in gpus:
        assert set(gpus) <= nx.descendants(fabric, g) | {g}


def test_edge_bandwidth_is_links_times_catalogue_rate(fabric):
    for _, _, d in fabric.edges(data=True):
        spec = LINKS[d["link"]]
        assert d["kind"] == spec.kind
        assert d["bandwidth"] == d["links"] * spec.bandwidth
        assert d["latency"] == spec.latency


def test_two_sockets_joined_once(fabric, system):
    if system == "dgxa100":
        pytest.skip("DGX A100: one CPU node per NUMA quadrant (tests/topo/test_dgx_nvswitch.py)")
    by_host = hosts_of(fabric, topo.nodes_of_kind(fabric, "cpu"))
    socket_edges = [(u, v) for u, v, d in fabric.edges(data=True) if d["kind"] == "cpu-to-cpu"]
    assert len(socket_edges) == 2 * len(by_host)
    for cpus in by_host.values():   # two sockets per host, joined to each other only
        assert [fabric.nodes[c]["index"] for c in cpus] == [0, 1]
        assert sorted((u, v) for u, v in socket_edges if u in cpus) == [tuple(cpus), tuple(reversed(cpus))]


DGX1V_LINKS = {
    2: [(0, 3), (0, 4), (1, 2), (1, 5), (2, 3), (4, 7), (5, 6), (6, 7)],
    1: [(0, 1), (0, 2), (1, 3), (2, 6), (3, 7), (4, 5), (4, 6), (5, 7)],
}


def gpu_pairs(G) -> dict:
    return {(G.nodes[u]["index"], G.nodes[v]["index"]): d["links"]
            for u, v, d in G.edges(data=True)
            if d["kind"] == "nvlink" and G.nodes[u]["kind"] == G.nodes[v]["kind"] == "gpu"
            and G.nodes[u]["index"] < G.nodes[v]["index"]}


def test_dgx1v_link_counts_as_published():
    expected = {pair: links for links, pairs in DGX1V_LINKS.items() for pair in pairs}
    assert gpu_pairs(topo.dgx1v()) == expected
    assert sum(expected.values()) == 24


def test_dgx1_is_the_hybrid_cube_mesh_with_single_links():
    quads = [(a, b) for q in ((0, 1, 2, 3), (4, 5, 6, 7)) for i, a in enumerate(q) for b in q[i + 1:]]
    expected = {pair: 1 for pair in quads + [(i, i + 4) for i in range(4)]}
    G = topo.dgx1()
    assert gpu_pairs(G) == expected
    assert {d["link"] for _, _, d in G.edges(data=True) if d["kind"] == "nvlink"} == {"nvlink1"}
    assert G.edges["gpu0", "gpu1"]["bandwidth"] == 20e9


@pytest.mark.parametrize("system", ["dgx1", "dgx1v"])
def test_dgx1_pcie_layer(system):
    G = topo.build(system)
    switches = topo.nodes_of_kind(G, "pcie_switch")
    assert len(switches) == 4
    for k, switch in enumerate(switches):
        below = sorted(v for v in G.successors(switch) if G.nodes[v]["kind"] != "cpu")
        assert below == sorted([f"gpu{2 * k}", f"gpu{2 * k + 1}", f"mlx5_{k}"])
        assert list(v for v in G.successors(switch) if G.nodes[v]["kind"] == "cpu") == [f"cpu{k // 2}"]
        assert G.nodes[f"mlx5_{k}"]["port_bandwidth"] == LINKS["ib_edr"].bandwidth
    assert all(d["link"] == "pcie3_x16" for _, _, d in G.edges(data=True) if d["kind"] == "pcie")
    assert G.edges["cpu0", "cpu1"]["link"] == "qpi_bdw"


def test_dgx2_nvswitch_fabric():
    G = topo.dgx2()
    switches = topo.nodes_of_kind(G, "nvswitch")
    assert len(switches) == 12
    spec = NVSWITCHES["nvswitch1"]
    for s in switches:
        board = G.nodes[s]["baseboard"]
        gpus = [v for v in G.successors(s) if G.nodes[v]["kind"] == "gpu"]
        assert sorted(G.nodes[g]["index"] for g in gpus) == list(range(8 * board, 8 * board + 8))
        assert all(G.edges[s, g]["links"] == 1 for g in gpus)
        peers = [v for v in G.successors(s) if G.nodes[v]["kind"] == "nvswitch"]
        assert len(peers) == 1 and G.nodes[peers[0]]["baseboard"] != board
        assert G.edges[s, peers[0]]["links"] == 8
        used = sum(d["links"] for _, _, d in G.out_edges(s, data=True))
        assert used == 16 and G.nodes[s]["ports"] == spec.ports == 18
    for g in topo.gpus(G):
        assert G.nodes[g]["baseboard"] == G.nodes[g]["index"] // 8
        assert sum(1 for v in G.successors(g) if G.nodes[v]["kind"] == "nvswitch") == 6


def test_dgx2_pcie_layer():
    G = topo.dgx2()
    assert len(topo.nodes_of_kind(G, "pcie_switch")) == 12
    nics = topo.nodes_of_kind(G, "nic")
    assert [G.nodes[n]["name"] for n in nics] == [f"mlx5_{i}" for i in range(10)]
    compute = [n for n in nics if "port_bandwidth" in G.nodes[n]]
    assert len(compute) == 8, "8 InfiniBand NICs for compute [S27]"
    assert [G.nodes[n]["socket"] for n in compute] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert G.edges["cpu0", "cpu1"]["link"] == "upi_skl"


def test_build_accepts_spellings_and_rejects_unknown():
    assert topo.build("DGX-1V").graph["system"] == "dgx1v"
    assert topo.build("dgx_2").graph["system"] == "dgx2"
    assert topo.build("DGX-A100").graph["system"] == "dgxa100"
    with pytest.raises(topo.UnknownSystemError, match="unknown system 'dgx-a200': expected one of dgx1, dgx1v, dgx2"):
        topo.build("dgx-a200")


def test_catalogue_is_sourced_and_consistent():
    for name, spec in LINKS.items():
        assert spec.name == name and spec.source
        assert spec.kind in topo.EDGE_KINDS
        assert spec.bandwidth > 0
        assert spec.latency > 0
    for spec in list(GPUS.values()):
        assert spec.nvlink in LINKS and spec.source


def test_catalogue_known_line_rates():
    GB = 1e9
    assert [LINKS[f"nvlink{g}"].bandwidth / GB for g in range(1, 6)] == [20, 25, 25, 25, 50]
    assert [round(LINKS[f"pcie{g}_x16"].bandwidth / GB, 2) for g in (3, 4, 5)] == [15.75, 31.51, 63.02]
    assert [LINKS[k].bandwidth / GB for k in ("ib_edr", "ib_hdr", "ib_ndr")] == [12.5, 25, 50]

