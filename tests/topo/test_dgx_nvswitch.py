"""DGX A100, H100/H200, B200 and GB200 NVL72 against the published facts of each machine.

Known answers come from NVIDIA documents and published nvidia-smi outputs (keys as in
topo.dgx_nvswitch): link counts [S17] [S37] [S39], per-GPU NVLink bandwidth (A100 600 GB/s,
H100 900 GB/s, B200 1.8 TB/s bidirectional [S12] [S13] [S64]), NVL72 130 TB/s [S64], DGX B200
14.4 TB/s of switch bandwidth [S63], nvidia-smi classes and affinities [S37] [S42] [S60] [S71]
[S74], and NCCL's GPU-to-NVSwitch figures (NVIDIA/nccl v2.27.7-1 src/graph/topo.h: 12 x 20.0,
18 x 20.6, 18 x 40.1 GB/s).
"""

from __future__ import annotations

import networkx as nx
import pytest

import models
import topo
from topo.dgx_nvswitch import (SYSTEMS, UNCERTAIN, dgxa100, dgxb200, dgxb300, dgxh100, dgxh200, dgxh800, gb200nvl72,
                               gb300nvl72)
from topo.specs import CPUS, GPUS, LINKS, NVSWITCHES

TB = 1e12
GB = 1e9

# system -> (GPUs, NVSwitch chips, links from every GPU to chip s, switch generation)
FABRIC = {
    "dgxa100": (8, 6, (2,) * 6, "nvswitch2"),
    "dgxh100": (8, 4, (5, 4, 4, 5), "nvswitch3"),
    "dgxh200": (8, 4, (5, 4, 4, 5), "nvswitch3"),
    "dgxb200": (8, 2, (9, 9), "nvswitch4"),
    "gb200nvl72": (72, 18, (1,) * 18, "nvswitch4"),
    "dgxh800": (8, 4, (2, 2, 2, 2), "nvswitch3"),
    "dgxb300": (8, 2, (9, 9), "nvswitch4"),
    "gb300nvl72": (72, 18, (1,) * 18, "nvswitch4"),
}
NVL72 = ("gb200nvl72", "gb300nvl72")
# Datasheet per-GPU NVLink bandwidth, both directions [S12] [S13] [S64]; H800 400 GB/s [S116],
# B300 and GB300 1.8 TB/s [S114] [S115].
BIDIRECTIONAL_PER_GPU = {"dgxa100": 600 * GB, "dgxh100": 900 * GB, "dgxh200": 900 * GB,
                         "dgxb200": 1800 * GB, "gb200nvl72": 1800 * GB, "dgxh800": 400 * GB,
                         "dgxb300": 1800 * GB, "gb300nvl72": 1800 * GB}


@pytest.fixture(scope="module")
def built():
    return {name: builder() for name, (builder, _) in SYSTEMS.items()}


@pytest.fixture(params=sorted(SYSTEMS))
def name(request):
    return request.param


def nvlink_out(G, node):
    return [(v, d) for _, v, d in G.out_edges(node, data=True) if d["kind"] == "nvlink"]


def test_registry_entries_are_described_and_catalogued():
    assert sorted(SYSTEMS) == sorted(FABRIC) == sorted(UNCERTAIN)
    for builder, description in SYSTEMS.values():
        assert callable(builder) and description
    assert all(len(text) > 100 for text in UNCERTAIN.values()), "every system lists what it assumes"


def test_builders_return_fresh_valid_graphs(name):
    builder = SYSTEMS[name][0]
    first, second = builder(), builder()
    topo.validate(nx.DiGraph(first))  # a plain copy: the sealed graph itself passes unchecked
    gpu = topo.gpus(first)[0]
    first.remove_node(gpu)
    assert gpu in second


def test_every_edge_has_an_equal_reverse_and_catalogue_rate(built, name):
    G = built[name]
    for u, v, d in G.edges(data=True):
        assert G.edges[v, u] == d
        spec = LINKS[d["link"]]
        assert (d["kind"], d["bandwidth"], d["latency"]) == (spec.kind, d["links"] * spec.bandwidth,
                                                            spec.latency)


def test_gpu_numbering(built, name):
    G = built[name]
    gpus = topo.gpus(G)
    count = FABRIC[name][0]
    assert len(gpus) == count
    if name in NVL72:  # one host per compute tray, CUDA indices 0-3 on each
        assert [(G.nodes[g]["host"], G.nodes[g]["index"]) for g in gpus] == \
            [(t, i) for t in range(18) for i in range(4)]
    else:
        assert [G.nodes[g]["index"] for g in gpus] == list(range(count))
        assert {G.nodes[g]["host"] for g in gpus} == {0}


def test_links_per_gpu_switch_pair(built, name):
    G = built[name]
    _, chips, per_switch, generation = FABRIC[name]
    spec = NVSWITCHES[generation]
    switches = topo.nodes_of_kind(G, "nvswitch")
    assert len(switches) == chips
    for g in topo.gpus(G):
        out = dict(nvlink_out(G, g))
        assert set(out) == set(switches), "every GPU reaches every switch chip directly"
        assert tuple(out[s]["links"] for s in switches) == per_switch
        assert {d["link"] for d in out.values()} == {spec.link} == {GPUS_LINK[name]}
        assert sum(per_switch) == next(s.nvlink_ports for s in GPUS.values()
                                       if s.model == G.nodes[g]["model"])
    for s in switches:
        used = sum(d["links"] for _, _, d in G.out_edges(s, data=True))
        assert used <= G.nodes[s]["ports"] == spec.ports
        assert all(G.nodes[v]["kind"] == "gpu" for v in G.successors(s)), "single-level fabrics"


GPUS_LINK = {"dgxa100": "nvlink3", "dgxh100": "nvlink4", "dgxh200": "nvlink4", "dgxb200": "nvlink5",
             "gb200nvl72": "nvlink5", "dgxh800": "nvlink4", "dgxb300": "nvlink5", "gb300nvl72": "nvlink5"}


def test_injection_is_the_datasheet_figure(built, name):
    injection = topo.injection_bandwidth(built[name])
    assert set(injection.values()) == {BIDIRECTIONAL_PER_GPU[name] / 2}


@pytest.mark.parametrize("name, per_direction", [
    ("dgxa100", 1.2 * TB), ("dgxh100", 1.8 * TB), ("dgxh800", 0.8 * TB), ("dgxb200", 3.6 * TB),
    ("dgxb300", 3.6 * TB), ("gb200nvl72", 32.4 * TB), ("gb300nvl72", 32.4 * TB)])
def test_bisection_of_the_non_blocking_switch_layer(built, name, per_direction):
    """Half the GPUs at full injection: the switch chips never bind (each has equal links to
    both halves), so the cut is the GPU links of one half."""
    cut = topo.bisection(built[name])
    assert cut.bandwidth == pytest.approx(per_direction)
    assert cut.cases == 1, "all GPUs interchangeable over NVLink: one max-flow"


@pytest.mark.parametrize("name", NVL72)
def test_nvl72_aggregate_is_130_TBps(built, name):
    total = sum(topo.injection_bandwidth(built[name]).values())
    assert 2 * total == pytest.approx(129.6 * TB)
    assert round(2 * total / TB, -1) == 130


def test_dgxb200_switches_are_the_user_guides_14_4_TBps(built):
    G = built["dgxb200"]
    total = sum(G.nodes[s]["ports"] * LINKS["nvlink5"].bandwidth * 2
                for s in topo.nodes_of_kind(G, "nvswitch"))
    assert total == pytest.approx(14.4 * TB)
    assert all(sum(d["links"] for _, _, d in G.out_edges(s, data=True)) == G.nodes[s]["ports"]
               for s in topo.nodes_of_kind(G, "nvswitch")), "every port of both chips used by GPUs"


@pytest.mark.parametrize("name, link", [("gb200nvl72", "ib_ndr"), ("gb300nvl72", "ib_xdr")])
def test_nvl72_switch_trays_and_compute_trays(built, name, link):
    G = built[name]
    switches = topo.nodes_of_kind(G, "nvswitch")
    assert sorted(G.nodes[s]["baseboard"] for s in switches) == sorted(list(range(9)) * 2)
    assert {G.nodes[s]["host"] for s in switches} == {-1}
    for t in range(18):
        cpus = [n for n in topo.nodes_of_kind(G, "cpu") if G.nodes[n]["host"] == t]
        gpus = [n for n in topo.gpus(G) if G.nodes[n]["host"] == t]
        assert [G.nodes[c]["model"] for c in cpus] == ["NVIDIA Grace"] * 2
        for g in gpus:  # each B200 on its superchip's Grace by NVLink-C2C
            c2c = [(v, d) for v, d in G.adj[g].items() if d["link"] == "nvlink_c2c"]
            assert [G.nodes[v]["index"] for v, _ in c2c] == [G.nodes[g]["index"] // 2]
            assert G.nodes[g]["socket"] == G.nodes[g]["index"] // 2
        nics = topo.compute_nics(G, host=t)
        assert [G.nodes[n]["name"] for n in nics] == ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5"]
        assert {G.nodes[n]["port_link"] for n in nics} == {link}


@pytest.mark.parametrize("name, link, count", [
    ("dgxa100", "ib_hdr", 8), ("dgxh100", "ib_ndr", 8), ("dgxh800", "ib_ndr", 8), ("dgxb200", "ib_ndr", 8),
    ("dgxb300", "ib_xdr", 8)])
def test_compute_and_storage_nics(built, name, link, count):
    G = built[name]
    compute = topo.compute_nics(G)
    assert len(compute) == count and {G.nodes[n]["port_link"] for n in compute} == {link}
    storage = [n for n in topo.nodes_of_kind(G, "nic") if n not in compute]
    assert len(storage) == 2 if name == "dgxa100" else 4


def test_dgxa100_variants():
    G = dgxa100("640GB")
    assert {G.nodes[g]["model"] for g in topo.gpus(G)} == {"NVIDIA A100-SXM4-80GB"}
    assert [G.nodes[n]["name"] for n in topo.nodes_of_kind(G, "nic")] == [f"mlx5_{i}" for i in range(12)]
    with pytest.raises(topo.TopologyError, match="unknown DGX A100 variant '40GB': expected one of 320GB, 640GB"):
        dgxa100("40GB")


def test_dgxa100_numa_nodes_and_cpu_links(built):
    G = built["dgxa100"]
    cpus = topo.nodes_of_kind(G, "cpu")
    assert len(cpus) == 8 and all(G.nodes[c]["cores"] == 16 for c in cpus)  # NPS4, 64 cores
    links = {(G.nodes[u]["index"], G.nodes[v]["index"]): d["link"]
             for u, v, d in G.edges(data=True) if d["kind"] == "cpu-to-cpu" and u < v}
    assert sorted(k for k, v in links.items() if v == "xgmi") == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert len([v for v in links.values() if v == "infinity_fabric"]) == 12
    assert CPUS["EPYC7742"].numa_nodes == 4


# -- nvidia-smi topo -m ----------------------------------------------------------------------
def test_dgxa100_matrix_as_published(built):
    """[S37]: NV12 everywhere; each GPU pair PXB to its two NICs; SYS across NPS4 quadrants,
    even within a socket (GPU0 to mlx5_2); affinity per NUMA node."""
    cm = topo.connection_matrix(built["dgxa100"])
    nics = [f"mlx5_{i}" for i in range(10)]
    assert list(cm.devices) == [f"GPU{i}" for i in range(8)] + nics
    own = {0: (0, 1), 1: (0, 1), 2: (2, 3), 3: (2, 3), 4: (6, 7), 5: (6, 7), 6: (8, 9), 7: (8, 9)}
    for g in range(8):
        assert [cm.cell(f"GPU{g}", f"GPU{h}") for h in range(8)] == ["X" if g == h else "NV12" for h in range(8)]
        assert [cm.cell(f"GPU{g}", n) for n in nics] == \
            ["PXB" if int(n[5:]) in own[g] else "SYS" for n in nics]
    numa = {0: "3", 2: "1", 4: "7", 6: "5"}
    affinity = {0: "48-63,176-191", 2: "16-31,144-159", 4: "112-127,240-255", 6: "80-95,208-223"}
    for g in range(8):
        i = cm.devices.index(f"GPU{g}")
        assert (cm.numa_affinity[i], cm.cpu_affinity[i]) == (numa[g - g % 2], affinity[g - g % 2])
    assert cm.cell("mlx5_0", "mlx5_1") == "PIX"
    assert built["dgxa100"].nodes["mlx5_4"]["socket"] == 0, "storage ports on NUMA 0 [S37]"


HOPPER_NIC = {0: "mlx5_0", 1: "mlx5_3", 2: "mlx5_4", 3: "mlx5_5", 4: "mlx5_6", 5: "mlx5_9",
              6: "mlx5_10", 7: "mlx5_11"}  # DGX H100 User Guide Table 6 [S60]


@pytest.mark.parametrize("name", ["dgxh100", "dgxh200", "dgxb200", "dgxb300", "dgxh800"])
def test_hopper_blackwell_matrix_as_published(built, name):
    """[S42] [S60] [S71] [S72]: NV18; PXB to the GPU's own NIC, NODE to the other NICs of its
    socket, SYS across; affinities of the Xeon 8480C / 8570."""
    cm = topo.connection_matrix(built[name])
    nics = [f"mlx5_{i}" for i in range(12)]
    assert list(cm.devices) == [f"GPU{i}" for i in range(8)] + nics
    socket_of_nic = {n: built[name].nodes[n]["socket"] for n in nics}
    for g in range(8):
        nv = "NV8" if name == "dgxh800" else "NV18"
        assert all(cm.cell(f"GPU{g}", f"GPU{h}") == ("X" if g == h else nv) for h in range(8))
        expected = ["PXB" if n == HOPPER_NIC[g] else "NODE" if socket_of_nic[n] == g // 4 else "SYS"
                    for n in nics]
        assert [cm.cell(f"GPU{g}", n) for n in nics] == expected
        assert cm.cpu_affinity[g] == ("0-55,112-167" if g < 4 else "56-111,168-223")
        assert cm.numa_affinity[g] == str(g // 4)
    assert [n for n in nics if socket_of_nic[n] == 0] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3",
                                                          "mlx5_4", "mlx5_5"]


def test_nvl72_tray_matrix(built):
    """[S74]: the 4 GPUs of a tray are NV18 to each other; every tray looks alike."""
    G = built["gb200nvl72"]
    first = topo.connection_matrix(G, host=0)
    assert first.devices[:4] == ("GPU0", "GPU1", "GPU2", "GPU3")
    assert all(first.cell(f"GPU{a}", f"GPU{b}") == ("X" if a == b else "NV18")
               for a in range(4) for b in range(4))
    assert first.cell("GPU0", "mlx5_0") == "NODE" and first.cell("GPU0", "mlx5_4") == "SYS"
    assert first.cpu_affinity[:4] == ("0-71", "0-71", "72-143", "72-143")
    assert topo.connection_matrix(G, host=17).cells == first.cells


def test_printed_matrix_keeps_a_gap_after_long_affinities(built):
    text = topo.format_connection_matrix(topo.connection_matrix(built["dgxa100"]), legend=False)
    assert text.splitlines()[5].endswith("PXB     PXB     SYS     SYS     112-127,240-255  7")


# -- P2P over NVSwitch ---------------------------------------------------------------------
@pytest.mark.parametrize("name, smi, line_rate, nccl", [
    ("dgxa100", "NV12", 300 * GB, 240 * GB), ("dgxh100", "NV18", 450 * GB, 370.8 * GB),
    ("dgxb200", "NV18", 900 * GB, 721.8 * GB), ("gb200nvl72", "NV18", 900 * GB, 721.8 * GB),
    # H800: 8 links of NVLink 4.0, NCCL's SM90 20.6 GB/s each.
    ("dgxh800", "NV8", 200 * GB, 164.8 * GB), ("dgxb300", "NV18", 900 * GB, 721.8 * GB)])
def test_p2p_over_the_switches(built, name, smi, line_rate, nccl):
    """A copy sprays over every switch chip in proportion to its links, so it gets the GPU's
    whole NVLink line rate; NCCL charges links x its per-link figure."""
    G = built[name]
    r = models.p2p_path(G, 0, 1)
    assert (r.smi_class, r.path_type.name, r.p2p) == (smi, "NVL", True)
    assert r.line_rate == pytest.approx(line_rate)
    assert r.nccl_bandwidth == pytest.approx(nccl)
    first_hops = {v: share for (u, v), share in zip(r.route.edges, r.route.shares) if u == topo.gpus(G)[0]}
    links = FABRIC[name][2]
    assert [first_hops[f"nvswitch{s}"] for s in range(len(links))] == \
        pytest.approx([k / sum(links) for k in links])


def test_nvl72_cross_tray_p2p_is_nvlink(built):
    G = built["gb200nvl72"]
    r = models.p2p_path(G, 0, 71)  # tray 0 GPU0 to tray 17 GPU3
    assert r.path_type.name == "NVL" and r.smi_class is None  # nvidia-smi shows one tray only
    assert r.line_rate == pytest.approx(900 * GB)


@pytest.mark.parametrize("name", ["dgxa100", "dgxh100"])
def test_p2p_matrix_is_uniform(built, name):
    line = models.p2p_matrix(built[name], achieved=False)
    off = [line[i, j] for i in range(8) for j in range(8) if i != j]
    assert set(off) == {BIDIRECTIONAL_PER_GPU[name] / 2}
    achieved = models.p2p_matrix(built[name])
    assert all(achieved[i, j] < line[i, j] for i in range(8) for j in range(8) if i != j)


def test_catalogue_entries_name_their_sources():
    for key in ("A100-SXM4-40GB", "A100-SXM4-80GB", "H100-SXM5-80GB", "H200", "B200", "GB200", "H800", "B300",
                "GB300"):
        assert GPUS[key].source and GPUS[key].uncertain
    for key in ("nvswitch2", "nvswitch3", "nvswitch4"):
        assert NVSWITCHES[key].source and "[U]" in NVSWITCHES[key].uncertain
    for key in ("upi_spr", "upi_emr", "xgmi", "infinity_fabric", "nvlink_c2c", "grace_grace"):
        assert LINKS[key].source and "[U]" in LINKS[key].uncertain
    assert GPUS["H200"].nvlink == GPUS["H100-SXM5-80GB"].nvlink and dgxh200().graph["system"] == "dgxh200"
    assert dgxh100().graph["system"] == "dgxh100" and dgxb200().graph["name"] == "DGX B200"
    assert gb200nvl72().graph["system"] == "gb200nvl72"
    assert dgxh800().graph["system"] == "dgxh800" and dgxb300().graph["name"] == "DGX B300"
    assert gb300nvl72().graph["system"] == "gb300nvl72"


def test_h800_is_h100_with_8_links():
    """[S116]: the H800 keeps H100's compute and memory; only its NVLink is cut (400 GB/s)."""
    h800, h100 = GPUS["H800"], GPUS["H100-SXM5-80GB"]
    assert (h800.peak, h800.memory, h800.memory_bandwidth, h800.nvlink) == \
        (h100.peak, h100.memory, h100.memory_bandwidth, h100.nvlink)
    assert 2 * h800.nvlink_bandwidth == 400 * GB and h800.nvlink_ports == 8


def test_blackwell_ultra_parts():
    """[S114] [S115]: B300 and GB300 have B200's and GB200's 16-bit and FP8 rates, NVFP4 raised
    to 13.5 and 15 PFLOPS dense; 288 GB of HBM3e."""
    for ultra, base in (("B300", "B200"), ("GB300", "GB200")):
        a, b = GPUS[ultra].peaks, GPUS[base].peaks
        assert (a["bf16"], a["fp8"], a["mxfp8"]) == (b["bf16"], b["fp8"], b["mxfp8"])
        assert a["nvfp4"] > b["nvfp4"]
        assert GPUS[ultra].memory == 288 * GB
    assert 8 * GPUS["B300"].peaks["nvfp4"] == 108e15 and 72 * GPUS["GB300"].peaks["nvfp4"] == 1080e15


def test_nvl72_against_the_gb200_nvl72_datasheet(built):
    """NVIDIA "GB200 NVL72" product page / datasheet [S45]: 72 Blackwell GPUs and 36 Grace CPUs in
    one NVLink domain, 130 TB/s of NVLink bandwidth; NVIDIA DGX SuperPOD GB200 reference
    architecture [S14]: 900 GB/s per GPU per direction (1,800 GB/s bidirectional) over 18 NVLink
    5 links [S64] of 50 GB/s; NVIDIA DGX GB200 User Guide [S44]: 18 compute trays, 9 NVLink
    switch trays [2 chips each: U, secondary]."""
    G = built["gb200nvl72"]
    gpus = topo.gpus(G)
    assert len(gpus) == 72 and len(topo.nodes_of_kind(G, "cpu")) == 36
    switches = topo.nodes_of_kind(G, "nvswitch")
    assert len(switches) == 18 and len({G.nodes[s]["baseboard"] for s in switches}) == 9
    assert len({G.nodes[g]["host"] for g in gpus}) == 18
    for g in gpus:
        links = nvlink_out(G, g)
        assert sum(d["links"] for _, d in links) == 18
        assert {d["bandwidth"] / d["links"] for _, d in links} == {50 * GB}
        assert sum(d["bandwidth"] for _, d in links) == 900 * GB
    per_gpu_both_ways = 2 * 900 * GB
    assert per_gpu_both_ways == 1.8 * TB
    assert 72 * per_gpu_both_ways == pytest.approx(129.6 * TB)   # "130 TB/s", rounded
    # One NVLink domain: every GPU pair is one switch hop apart (no GPU-to-GPU link, no trunk).
    assert not any(G.nodes[v]["kind"] != "gpu" for s in switches for v in G.successors(s))


def test_b300_gpu_and_connectx8_on_gen6_so_the_800g_port_is_not_held_to_gen5(built):
    """DGX B300: each GPU and its ConnectX-8 sit on PCIe 6.0 x16 below a Gen5 root port [U]. NCCL
    reads 64 GT/s x16 as 96 GB/s (src/graph/topo.cc kvDictPciGen, v2.27.7-1), which passes the
    800 Gb/s port's 100 GB/s nearly whole, where Gen5's 48 GB/s would halve it: a two-node
    all_gather, bound by the network, then moves 96/48 = 2x DGX B200's (400 Gb/s ports)."""
    G = built["dgxb300"]
    for g in topo.gpus(G):
        (switch,) = (n for n in G.predecessors(g) if G.nodes[n]["kind"] == "pcie_switch")
        assert G.edges[switch, g]["link"] == "pcie6_x16"
    root_links = {d["link"] for a, b, d in G.edges(data=True)
                  if G.nodes[a]["kind"] == "cpu" and G.nodes[b]["kind"] == "pcie_switch"}
    assert root_links == {"pcie5_x16"}
    profile = models.engine.nccl.nccl_profile()
    assert profile.link_bandwidth("pcie6_x16") == 2 * profile.link_bandwidth("pcie5_x16") == 96e9
    b300 = models.estimate(topo.build("2xdgxb300"), "all_gather", 2**30, algorithm="ring").point().busbw
    b200 = models.estimate(topo.build("2xdgxb200"), "all_gather", 2**30, algorithm="ring").point().busbw
    assert b300 / b200 == pytest.approx(2.0, rel=0.05)


def test_gb300_connectx8_is_a_gen6_switch_beside_the_gpus_c2c(built):
    """GB300 NVL72: each GPU keeps NVLink-C2C to its Grace and has its ConnectX-8's PCIe switch as a
    second host-side neighbour, GPU and NIC on PCIe 6.0 x16 below it, its upstream port on the
    Grace root port at Gen5 x16 [U]. GB200's NIC hangs off Grace alone."""
    G = built["gb300nvl72"]
    for t in (0, 17):
        for g, n in enumerate((0, 1, 4, 5)):
            gpu, nic, switch, grace = f"t{t}.gpu{g}", f"t{t}.mlx5_{n}", f"t{t}.pcie{g}", f"t{t}.cpu{g // 2}"
            host_side = {v: d["link"] for v, d in G.adj[gpu].items() if d["kind"] == "pcie"}
            assert host_side == {grace: "nvlink_c2c", switch: "pcie6_x16"}
            assert {v: d["link"] for v, d in G.adj[switch].items()} == {gpu: "pcie6_x16", nic: "pcie6_x16",
                                                                        grace: "pcie5_x16"}
            assert G.nodes[switch]["kind"] == "pcie_switch" and G.nodes[switch]["socket"] == g // 2
            assert topo.connection_class(G, gpu, nic) == "PIX"
    cm = topo.connection_matrix(G)
    assert [cm.cell("GPU0", f"mlx5_{n}") for n in (0, 1, 4, 5)] == ["PIX", "NODE", "SYS", "SYS"]
    assert [topo.connection_matrix(built["gb200nvl72"]).cell("GPU0", f"mlx5_{n}") for n in (0, 1, 4, 5)] == \
        ["NODE", "NODE", "SYS", "SYS"]


def test_gb300_nccl_reaches_its_nic_over_the_switch_with_gpudirect_rdma():
    """NCCL's GPU-to-NIC path on GB300 is PIX through the ConnectX-8's switch (not through Grace, as
    GB200's PHB), within NCCL_NET_GDR_LEVEL's default PXB: GPUDirect RDMA, at NCCL's 96 GB/s of a
    64 GT/s x16 link (src/graph/topo.cc kvDictPciGen, v2.27.7-1). Where the network binds (one tray
    per rack, 8 GPUs: each ring channel crosses the network) a ring all_gather then moves 96/48 = 2x
    GB200's; the full racks' ring is bound by NVLink either way."""
    from models.engine.fabric import prepare
    from models.engine.routes import PathType
    from models.predict.nicpath import nic_path

    G = topo.build("2xgb300nvl72")
    system = prepare(G).nccl
    route = system.net_route("r0.t0.gpu1", "r0.t0.mlx5_1")
    assert route.path_type is PathType.PIX
    assert route.edges == (("r0.t0.gpu1", "r0.t0.pcie1"), ("r0.t0.pcie1", "r0.t0.mlx5_1"))
    assert min(system.capacity(u, v) for u, v in route.edges) == 96e9
    assert nic_path(G, "r0.t0.mlx5_1").gdr and nic_path(G, "r0.t0.mlx5_1").path_class == "PIX"
    old = topo.build("2xgb200nvl72")
    assert prepare(old).nccl.net_route("r0.t0.gpu1", "r0.t0.mlx5_1").path_type is PathType.PHB
    assert not nic_path(old, "r0.t0.mlx5_1").gdr
    gpus = [0, 1, 2, 3, 72, 73, 74, 75]
    gb300 = models.estimate(G, "all_gather", 2**30, gpus, algorithm="ring").point().busbw
    gb200 = models.estimate(old, "all_gather", 2**30, gpus, algorithm="ring").point().busbw
    assert gb300 / gb200 == pytest.approx(2.0, rel=0.05)


def test_gb300_nccl_xml_keeps_the_switch_and_gen6_links():
    """NCCL's XML of a GB300 tray nests each GPU and its NIC in the ConnectX-8's switch (64.0 GT/s
    below, 32.0 GT/s above; each GPU's C2C as its ``<c2c>``), and reading it back gives the same NIC
    path."""
    text = topo.to_nccl_xml(topo.build("gb300nvl72"), host=0)
    assert text.count('link_speed="64.0 GT/s PCIe"') == 8 and text.count('link_speed="32.0 GT/s PCIe"') == 4
    H = topo.from_nccl_xml(text)
    assert [topo.connection_class(H, "gpu0", n) for n in ("mlx5_0", "mlx5_1", "mlx5_4")] == ["PIX", "PHB", "SYS"]
    assert H.edges["gpu0", "pcie0"]["link"] == "pcie6_x16"
