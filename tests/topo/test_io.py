"""Import (nvidia-smi topo -m, NCCL topology XML) and export (JSON, GraphML) of fabrics.

The fuzzers of every importer are in test_io_fuzz.py, the round trips of every built-in system
through its printout in test_io_roundtrip.py."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import models
import topo
from tests.conftest import read_data, watchdog

GPU_OF = {"dgx1": "Tesla P100-SXM2-16GB", "dgx1v": "Tesla V100-SXM2-16GB", "dgx2": "Tesla V100-SXM3-32GB"}
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# The mutation fuzzers import whole systems per example: fewer examples keep them to ~1 s each.
FUZZ_SYSTEMS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def printout(G, legend=True):
    return topo.format_connection_matrix(topo.connection_matrix(G), legend=legend)


def same_graph(G, H):
    return (list(G.nodes(data=True)) == list(H.nodes(data=True))
            and list(G.edges(data=True)) == list(H.edges(data=True)) and G.graph == H.graph
            and all(list(G.pred[n]) == list(H.pred[n]) for n in G))


# --- gpu_model ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name, key", [
    ("Tesla V100-SXM2-16GB", "V100-SXM2"), ("Tesla V100-SXM2-32GB", "V100-SXM2-32GB"),
    ("v100-sxm2", "V100-SXM2"), ("V100SXM2", "V100-SXM2"), ("Tesla V100-SXM3-32GB", "V100-SXM3"),
    ("v100_sxm3", "V100-SXM3"), ("Tesla P100-SXM2-16GB", "P100"), ("p100", "P100"),
])
def test_gpu_model_resolves_nvidia_smi_names_and_short_forms(name, key):
    assert topo.gpu_model(name) == key


@pytest.mark.parametrize("name, message", [
    ("v100", "ambiguous: it matches V100-SXM2, V100-SXM2-32GB, V100-SXM3"), ("A100-PCIE", "unknown GPU model"),
    ("", "expected a GPU model name"), (None, "expected a GPU model name"),
])
def test_gpu_model_errors(name, message):
    with pytest.raises(topo.TopologyImportError, match=message):
        topo.gpu_model(name)


# --- nvidia-smi topo -m ------------------------------------------------------------------------

def test_dgx1v_published_printout_is_reproduced_cell_for_cell():
    """The real DGX-1V printout (tests/data) imports to a fabric that prints it back exactly."""
    text = read_data("dgx1v_nvidia_smi_topo.txt")
    G = topo.from_nvidia_smi(text, gpu="Tesla V100-SXM2-16GB")
    assert printout(G, legend=False) == text
    # The rebuilt wiring is the DGX-1V's: same links, PCIe tree, sockets.
    assert sorted(G.edges) == sorted(topo.dgx1v().edges)
    assert {n: G.nodes[n]["socket"] for n in topo.gpus(G)} == {f"gpu{g}": g // 4 for g in range(8)}


def test_dgx1v_import_predicts_what_the_builtin_predicts():
    G = topo.from_nvidia_smi(read_data("dgx1v_nvidia_smi_topo.txt"), gpu="v100-sxm2", cpu="E5-2698v4")
    assert sorted(G.edges(data=True)) == sorted(topo.dgx1v().edges(data=True))
    B = topo.dgx1v()
    assert models.estimate(G, "all_reduce", 2**28).busbw == models.estimate(B, "all_reduce", 2**28).busbw
    assert np.array_equal(models.p2p_matrix(G), models.p2p_matrix(B))


def test_dgx2_published_rows_are_a_partial_matrix():
    """The published DGX-2 copy was cut after GPU4: an error naming every missing row."""
    text = read_data("dgx2_nvidia_smi_topo_rows0-4.txt").replace("(cut off in the published copy)", "")
    with pytest.raises(topo.TopologyImportError, match="partial matrix") as error:
        topo.from_nvidia_smi(text, gpu="v100-sxm3")
    missing = [f"GPU{g}" for g in range(5, 16)] + [f"mlx5_{k}" for k in range(10)]
    assert f"no row for {', '.join(missing)}:" in str(error.value)


def test_dgx2_published_rows_agree_with_the_import_of_the_whole_matrix():
    """The 5 published rows are rows of the full DGX-2 matrix, and its import is an NVSwitch fabric."""
    G = topo.from_nvidia_smi(printout(topo.dgx2()), gpu="Tesla V100-SXM3-32GB")
    cm = topo.connection_matrix(G)
    lines = read_data("dgx2_nvidia_smi_topo_rows0-4.txt").splitlines()
    header = lines[0].replace("CPU Affinity", "").split()
    for line in lines[1:]:
        cells = line.split()
        assert [cm.cell(cells[0], h) for h in header] == cells[1:1 + len(header)]
    # The DGX-2's wiring (nvidia-smi cannot show it): two baseboards of 6 chips, trunked.
    switches = [n for n, k in G.nodes(data="kind") if k == "nvswitch"]
    assert len(switches) == 12 and G.edges["nvswitch0", "nvswitch6"]["links"] == 8
    assert [s for s in switches if G.has_edge("gpu0", s)] == switches[:6]
    assert topo.injection_bandwidth(G)["gpu0"] == 6 * topo.LINKS["nvlink2"].bandwidth
    # Without the known system: one chip per link of NV6, every GPU on each.
    H = topo.from_nvidia_smi(printout(topo.dgx2()), gpu="Tesla V100-SXM3-32GB", like=None)
    plain = [n for n, k in H.nodes(data="kind") if k == "nvswitch"]
    assert len(plain) == 6 and all(H.edges["gpu15", s]["links"] == 1 for s in plain)


@pytest.mark.parametrize("system", sorted(GPU_OF))
def test_builtin_round_trip_through_the_printout(system):
    """built-in graph -> printout -> import -> connection_matrix equals the original, affinity too."""
    B = topo.build(system)
    G = topo.from_nvidia_smi(printout(B), gpu=GPU_OF[system])
    assert topo.connection_matrix(G).to_dict() == topo.connection_matrix(B).to_dict()
    assert models.estimate(G, "all_reduce", 2**26).busbw == pytest.approx(
        models.estimate(B, "all_reduce", 2**26).busbw)


def test_tabs_new_layout_nic_legend_and_numa_columns():
    """A current driver's layout: tabs, NIC0.. columns with a NIC Legend, GPU NUMA ID, N/A."""
    rows = [
        "\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID",
        "GPU0\t X \tNV2\tNV2\tSYS\tPXB\tSYS\t0-15,32-47\t0\t\tN/A",
        "GPU1\tNV2\t X \tNV2\tSYS\tPXB\tSYS\t0-15,32-47\t0\t\tN/A",
        "GPU2\tNV2\tNV2\t X \tSYS\tNODE\tSYS\t0-15,32-47\t0\t\tN/A",
        "GPU3\tSYS\tSYS\tSYS\t X \tSYS\tPIX\t16-31,48-63\t1\t\tN/A",
        "NIC0\tPXB\tPXB\tNODE\tSYS\t X \tSYS",
        "NIC1\tSYS\tSYS\tSYS\tPIX\tSYS\t X ",
        "",
        "Legend:",
        "",
        "  X    = Self",
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)",
        "  NV#  = Connection traversing a bonded set of # NVLinks",
        "",
        "NIC Legend:",
        "",
        "  NIC0: mlx5_0",
        "  NIC1: mlx5_1",
    ]
    G = topo.from_nvidia_smi("\n".join(rows), gpu="v100-sxm2", nic_link="ib_hdr")
    cm = topo.connection_matrix(G)
    assert cm.devices == ("GPU0", "GPU1", "GPU2", "GPU3", "mlx5_0", "mlx5_1")
    assert cm.cell("GPU2", "mlx5_0") == "NODE" and cm.cell("GPU0", "mlx5_0") == "PXB"
    assert cm.cpu_affinity[:4] == ("0-15,32-47",) * 3 + ("16-31,48-63",)
    assert G.nodes["cpu0"]["cores"] == 16 and G.nodes["cpu0"]["threads_per_core"] == 2
    assert G.nodes["mlx5_1"]["port_link"] == "ib_hdr" and G.nodes["gpu3"]["socket"] == 1
    assert G.edges["gpu0", "gpu1"]["links"] == 2 and not G.has_edge("gpu0", "gpu3")


def test_old_layout_with_soc_and_real_numbering_kept():
    """A 2017 driver printed SOC and no NUMA column; GPU numbers need not start at 0."""
    text = "\n".join([
        "        GPU2    GPU5    mlx5_0  CPU Affinity",
        "GPU2     X      SOC     PIX     0-9",
        "GPU5    SOC      X      SOC     10-19",
        "mlx5_0  PIX     SOC      X",
    ])
    G = topo.from_nvidia_smi(text, gpu="V100-SXM2")
    assert [G.nodes[g]["index"] for g in topo.gpus(G)] == [2, 5]
    assert topo.connection_matrix(G).cell("GPU2", "GPU5") == "SYS"
    assert topo.connection_matrix(G).cpu_affinity == ("0-9", "10-19", "")


def test_nvswitch_options():
    """NV2 on 4 GPUs fits 6 V100 ports as direct links; nvswitch=True and nvswitches= change that."""
    rows = ["        GPU0  GPU1  GPU2  GPU3"]
    for a in range(4):
        rows.append(f"GPU{a}    " + "  ".join("X  " if a == b else "NV2" for b in range(4)))
    text = "\n".join(rows)
    direct = topo.from_nvidia_smi(text, gpu="v100-sxm2")
    assert not any(k == "nvswitch" for _, k in direct.nodes(data="kind"))
    switched = topo.from_nvidia_smi(text, gpu="v100-sxm2", nvswitch=True, nvswitches=1)
    assert switched.edges["gpu0", "nvswitch0"]["links"] == 2
    for G in (direct, switched):
        assert topo.connection_matrix(G).cell("GPU0", "GPU3") == "NV2"
    with pytest.raises(topo.TopologyImportError, match="expected at most 2 NVSwitch chips"):
        topo.from_nvidia_smi(text, gpu="v100-sxm2", nvswitch=True, nvswitches=3)
    with pytest.raises(topo.TopologyImportError, match="without NVSwitches"):
        topo.from_nvidia_smi(text, gpu="v100-sxm2", nvswitch=False, nvswitches=2)


BASE = [
    "        GPU0  GPU1  mlx5_0  CPU Affinity  NUMA Affinity",
    "GPU0     X    NV1   PIX     0-3           0",
    "GPU1    NV1    X    PIX     0-3           0",
    "mlx5_0  PIX   PIX    X",
]


def edit(line: int, old: str, new: str) -> str:
    rows = list(BASE)
    rows[line] = rows[line].replace(old, new, 1)
    return "\n".join(rows)


@pytest.mark.parametrize("text, message", [
    ("", "no header row"),
    ("$ nvidia-smi topo -m\n" + "\n".join(BASE), r"line 1: expected the header row"),
    (edit(1, "NV1", "NV?"), r"line 2: row GPU0, column GPU1: unknown class 'NV\?'"),
    (edit(1, "NV1", "PIX"), r"line 3: GPU1 -> GPU0 is NV1 but GPU0 -> GPU1 is PIX \(line 2\)"),
    (edit(1, " X ", "NV1"), r"line 2: row GPU0, column GPU0: expected X"),
    (edit(3, "PIX", "NV1"), r"line 4: row mlx5_0, column GPU0: NV1 between a GPU and a NIC"),
    (edit(1, "0-3 ", "0-3  7 8"), r"line 2: row GPU0 has 4 fields .* expected at most 2"),
    (edit(1, "0-3", "zero"), r"line 2: row GPU0: cpu affinity 'zero' is not a CPU list"),
    (edit(2, "    PIX     0-3           0", ""), r"line 3: row GPU1 has 2 cells, expected 3"),
    ("\n".join(BASE + [BASE[1]]), r"line 5: second row for GPU0 \(first on line 2\)"),
    ("\n".join(BASE + ["garbage here"]), r"line 5: expected a row of one of the header's devices"),
    ("\n".join(BASE + ["Legend:", "what"]), r"line 6: expected a legend entry"),
    ("\n".join(BASE + ["NIC Legend:", "NIC7: mlx5_0"]), r"line 6: the NIC legend names NIC7"),
    (edit(0, "mlx5_0", "GPU1"), "appears twice in the header"),
    (edit(0, "mlx5_0", "cpu0").replace("mlx5_0", "cpu0"), "NIC name 'cpu0' looks like a cpu node"),
    (edit(2, "0-3           0", "0-3           1"), "NUMA nodes \\[0, 1\\] are joined by PCIe classes nearer than SYS"),
])
def test_nvidia_smi_errors_name_the_line(text, message):
    with pytest.raises(topo.TopologyImportError, match=message):
        topo.from_nvidia_smi(text, gpu="v100-sxm2")


def test_matrix_no_pcie_tree_gives_is_an_error():
    """GPU0 and GPU1 share mlx5_0's switch (PIX) yet are PHB apart: contradictory."""
    text = "\n".join([
        "        GPU0  GPU1  mlx5_0",
        "GPU0     X    PHB   PIX",
        "GPU1    PHB    X    PIX",
        "mlx5_0  PIX   PIX    X",
    ])
    with pytest.raises(topo.TopologyImportError,
                       match=r"line 2: GPU0 -> GPU1 is PHB, but .* would be PIX: no PCIe tree"):
        topo.from_nvidia_smi(text, gpu="v100-sxm2")


def test_more_nvlinks_than_the_gpu_has_is_an_error():
    text = "\n".join(["        GPU0  GPU1  GPU2", "GPU0     X    NV3   NV2", "GPU1    NV3    X    SYS",
                      "GPU2    NV2   SYS    X"])
    with pytest.raises(topo.TopologyImportError, match="line 2: GPU0 has 5 NVLinks .* a Tesla P100-SXM2-16GB has 4"):
        topo.from_nvidia_smi(text, gpu="P100")
    text = "\n".join(["        GPU0  GPU1", "GPU0     X    NV5", "GPU1    NV5    X"])
    with pytest.raises(topo.TopologyImportError, match="NV5 through NVSwitches, but a Tesla P100-SXM2-16GB has 4"):
        topo.from_nvidia_smi(text, gpu="P100")


@pytest.mark.parametrize("options, message", [
    ({"gpu": "a100-pcie"}, "unknown GPU model"), ({"gpu": "p100", "cpu": "EPYC"}, "unknown CPU"),
    ({"gpu": "p100", "pcie": "nvlink2"}, "pcie='nvlink2' is not a pcie link"),
    ({"gpu": "p100", "nic_link": "eth"}, "nic_link='eth' is not a network link"),
    ({"gpu": "p100", "nvswitch": "yes"}, "nvswitch='yes'"),
])
def test_nvidia_smi_option_errors(options, message):
    with pytest.raises(topo.TopologyImportError, match=message):
        topo.from_nvidia_smi("\n".join(BASE), **options)


CELLS = ["X", "NV1", "NV2", "NV6", "PIX", "PXB", "PHB", "NODE", "SYS", "SOC", "N/A", "0-3"]


@FUZZ_SYSTEMS
@given(st.data())
def test_fuzz_nvidia_smi_mutated_printouts(data):
    """Valid printouts with cells replaced: a fabric that prints the same cells, or a typed error."""
    system = data.draw(st.sampled_from(["dgx1", "dgx1v"]))
    lines = printout(topo.build(system)).splitlines()
    for _ in range(data.draw(st.integers(1, 3))):
        k = data.draw(st.integers(0, len(lines) - 1))
        tokens = lines[k].split()
        if tokens:
            j = data.draw(st.integers(0, len(tokens) - 1))
            tokens[j] = data.draw(st.sampled_from(CELLS))
            lines[k] = "  ".join(tokens)
    text = "\n".join(lines)
    try:
        with watchdog(30):
            G = topo.from_nvidia_smi(text, gpu=GPU_OF[system])
    except topo.DgxTopoError:
        return
    cm = topo.connection_matrix(G)
    header = text.splitlines()[0].replace("CPU Affinity", "").replace("NUMA Affinity", "").split()
    for line in text.splitlines()[1:]:
        cells = line.split()
        if cells and cells[0] in header:
            assert [cm.cell(cells[0], h) for h in header] == [
                "SYS" if c == "SOC" else c for c in cells[1:1 + len(header)]]


# --- NCCL topology XML -------------------------------------------------------------------------

def test_dgx1v_like_xml_rebuilds_the_dgx1v():
    """Synthetic DGX-1V-like dump (tests/data): DGX-1V's links, PCIe tree and predictions."""
    G = topo.from_nccl_xml(read_data("dgx1v_nccl_topo_synthetic.xml"))
    B = topo.dgx1v()
    assert sorted(G.edges) == sorted(B.edges)
    assert all(G.edges[e] == B.edges[e] for e in G.edges if G.edges[e]["kind"] != "cpu-to-cpu")
    assert topo.connection_matrix(G).cells == topo.connection_matrix(B).cells
    assert G.nodes["gpu0"]["model"] == "Tesla V100-SXM2-16GB"  # from PCI device 0x1db1
    assert G.nodes["cpu0"]["cores"] == 40  # CPUs 0-19,40-59 in the affinity mask
    assert models.estimate(G, "all_reduce", 2**28).busbw == models.estimate(B, "all_reduce", 2**28).busbw


def test_dgxa100_like_xml():
    """Synthetic DGX A100-like dump: 6 NVSwitches x 2 links per GPU, gen4 PCIe, HDR NICs."""
    text = read_data("dgxa100_nccl_topo_synthetic.xml")
    # An AMD host: NCCL charges AMD_BW between its CPU nodes, the catalogue's xGMI figure.
    assert topo.from_nccl_xml(text).edges["cpu0", "cpu1"]["link"] == "xgmi"
    with pytest.raises(topo.TopologyImportError, match=r"system/cpu\[0\]: no socket-to-socket link .* "
                                                       r"vendor='CentaurHauls'"):
        topo.from_nccl_xml(text.replace("AuthenticAMD", "CentaurHauls"))
    G = topo.from_nccl_xml(text, socket_link="upi_skl", name="A100-like")
    switches = [n for n, k in G.nodes(data="kind") if k == "nvswitch"]
    assert len(switches) == 6 and len(topo.gpus(G)) == 8
    assert {G.edges[g, s]["links"] for g in topo.gpus(G) for s in switches} == {2}
    assert G.nodes["gpu0"]["compute_capability"] == 80 and G.nodes["gpu0"]["model"] == "NVIDIA A100-SXM4-40GB"
    assert G.edges["pcie0", "gpu0"]["link"] == "pcie4_x16"
    assert G.edges["pcie0", "gpu0"]["bandwidth"] == topo.LINKS["pcie4_x16"].bandwidth
    # The dual-port storage NIC: x8 gen4, half an x16 link, two NICs of one card.
    assert G.edges["cpu0", "mlx5_8"]["bandwidth"] == topo.LINKS["pcie4_x16"].bandwidth / 2
    assert G.nodes["mlx5_0"]["port_link"] == "ib_hdr" and G.nodes["mlx5_9"]["index"] == 9
    cm = topo.connection_matrix(G)
    assert cm.cell("GPU0", "GPU7") == "NV12" and cm.cell("GPU0", "mlx5_1") == "PIX"
    assert cm.cell("GPU0", "mlx5_4") == "SYS"


def _xml(body: str, cpu: str = "") -> str:
    return (f'<system version="1"><cpu numaid="0" affinity="ff" vendor="GenuineIntel" familyid="6" '
            f'modelid="85"{cpu}>{body}</cpu></system>')


def _gpu(busid, dev, links="", sm=70, device="0x1db1"):
    return (f'<pci busid="{busid}" class="0x030200" vendor="0x10de" device="{device}" '
            f'link_speed="8.0 GT/s PCIe" link_width="16"><gpu dev="{dev}" sm="{sm}" rank="{dev}">'
            f'{links}</gpu></pci>')


def test_two_nvswitch_groups_are_joined_like_dgx2_baseboards():
    """GPUs 0-1 see switches a, b; GPUs 2-3 see c, d: the groups are trunked a-c, b-d."""
    body = ""
    for g, (s1, s2) in enumerate([("a", "b"), ("a", "b"), ("c", "d"), ("c", "d")]):
        links = "".join(f'<nvlink target="0000:f{s}:00.0" count="1" tclass="0x068000"/>' for s in (s1, s2))
        body += _gpu(f"0000:0{g + 1}:00.0", g, links)
    G = topo.from_nccl_xml(_xml(body))
    assert G.edges["nvswitch0", "nvswitch2"]["links"] == 2 and G.edges["nvswitch1", "nvswitch3"]["links"] == 2
    assert G.nodes["nvswitch2"]["baseboard"] == 1
    assert topo.connection_matrix(G).cell("GPU0", "GPU3") == "NV2"


def test_nvlink_to_a_gpu_absent_from_the_xml_is_dropped():
    body = _gpu("0000:01:00.0", 0, '<nvlink target="0000:99:00.0" count="2" tclass="0x030200"/>')
    G = topo.from_nccl_xml(_xml(body))
    assert [d["kind"] for _, _, d in G.edges(data=True)] == ["pcie", "pcie"]


BILLION_LAUGHS = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 '
                  '"&lol;&lol;&lol;&lol;">]><system version="1">&lol2;</system>')


@pytest.mark.parametrize("text, message", [
    ("<system", "not well-formed"),
    (BILLION_LAUGHS, "refused"),
    ("<graph/>", "element graph: expected <system>"),
    ('<system version="2"/>', "version=2, expected 1"),
    ('<system version="1"/>', "no <cpu> element"),
    (_xml("<foo/>"), "unknown element <foo>"),
    ('<system version="1"><cpu/></system>', r"system/cpu\[0\]: missing attribute 'numaid'"),
    ('<system version="1"><cpu numaid="x"/></system>', "numaid='x' is not an integer"),
    (_xml('<pci busid="zz" class="0x030200"/>'), "busid='zz', expected a PCI bus id"),
    (_xml(_gpu("0000:01:00.0", 0) + _gpu("0000:01:00.0", 1)), "busid 0000:01:00.0 appears twice"),
    (_xml(_gpu("0000:01:00.0", 0) + _gpu("0000:02:00.0", 0)), "dev=0 appears on two GPUs"),
    (_xml(_gpu("0000:01:00.0", 0, sm=80)), "sm=80 but a Tesla V100-SXM2-16GB is sm 70"),
    (_xml(_gpu("0000:01:00.0", 0, sm=50)), "sm=50: expected the SM version of a GPU with NVLink"),
    (_xml(_gpu("0000:01:00.0", 0, '<nvlink target="0000:02:00.0" count="2" tclass="0x030200"/>')
          + _gpu("0000:02:00.0", 1, '<nvlink target="0000:01:00.0" count="1" tclass="0x030200"/>')),
     "count=1 from gpu1 to gpu0, but gpu0 lists count=2"),
    (_xml(_gpu("0000:01:00.0", 0, '<nvlink target="0000:02:00.0" count="0"/>')), "count='0', expected at least 1"),
    (_xml(_gpu("0000:01:00.0", 0, '<nvlink target="0000:c0:00.0" count="1" tclass="0x068001"/>')),
     "NVLink to a CPU"),
    (_xml(_gpu("0000:01:00.0", 0, '<c2c bw="0" count="1"/>')), "bw='0', expected at least 1"),
    (_xml(_gpu("0000:01:00.0", 0, '<c2c bw="450000"/>')), "missing attribute 'count'"),
    (_xml(_gpu("0000:01:00.0", 0, '<c2c bw="450000" count="65"/>')), "count=65, expected at most 64 C2C links"),
    (_xml(_gpu("0000:01:00.0", 0, '<c2c bw="9000000000" count="2"/>')), "expected at most 10000000 MB/s in all"),
    (_xml(_gpu("0000:01:00.0", 0, '<c2c bw="450000" count="1"/><c2c bw="450000" count="1"/>')),
     r"a second <c2c> on gpu0 \(first system/cpu\[0\]"),
    (_xml(_gpu("0000:01:00.0", 0, '<net/>')), "<net> under <gpu>, expected <nvlink> or <c2c>"),
    (_xml(_gpu("0000:01:00.0", 0).replace('link_speed="8.0 GT/s PCIe"', 'link_speed="fast"')),
     "link_speed='fast', expected one of"),
    (_xml('<nic><net name="gpu1" dev="0"/></nic>' + _gpu("0000:01:00.0", 0)), "name='gpu1'"),
    (_xml('<nic><net name="mlx5_0" dev="0"/><net name="mlx5_0" dev="1"/></nic>' + _gpu("0000:01:00.0", 0)),
     "a second NIC named 'mlx5_0'"),
    (_xml('<nic/>' + _gpu("0000:01:00.0", 0)), "a <nic> without <net>"),
    (_xml(_gpu("0000:01:00.0", 0), ' numaid2="1"').replace("</system>", '<cpu numaid="0"/></system>'),
     "numaid=0 appears on two <cpu> elements"),
])
def test_nccl_xml_errors_name_the_element(text, message):
    with pytest.raises(topo.TopologyImportError, match=message):
        topo.from_nccl_xml(text)


def test_nccl_xml_option_errors():
    with pytest.raises(topo.TopologyImportError, match="socket_link='pcie3_x16' is not a cpu-to-cpu link"):
        topo.from_nccl_xml(read_data("dgx1v_nccl_topo_synthetic.xml"), socket_link="pcie3_x16")
    with pytest.raises(topo.TopologyImportError, match="expected the text of an NCCL topology XML"):
        topo.from_nccl_xml(42)


# --- JSON and GraphML --------------------------------------------------------------------------

@pytest.mark.parametrize("system", ["dgx1v", "dgx2", "2xdgx1v"])
@pytest.mark.parametrize("write, read", [(topo.to_json, topo.from_json), (topo.to_graphml, topo.from_graphml)])
def test_export_round_trip_is_identical(system, write, read):
    G = topo.build(system)
    H = read(write(G))
    assert same_graph(G, H)
    for n, data in G.nodes(data=True):
        assert [type(v) for v in data.values()] == [type(v) for v in H.nodes[n].values()]


@pytest.mark.parametrize("system", ["dgx1v", "dgx2"])
@pytest.mark.parametrize("write, read", [(topo.to_json, topo.from_json), (topo.to_graphml, topo.from_graphml)])
def test_export_round_trip_predicts_the_same(system, write, read):
    G = topo.build(system)
    H = read(write(G))
    sizes = [2**10, 2**20, 2**28]
    for coll in ("all_reduce", "all_gather"):
        a, b = models.estimate(G, coll, sizes), models.estimate(H, coll, sizes)
        assert list(a.time) == list(b.time) and list(a.busbw) == list(b.busbw)
    assert np.array_equal(models.p2p_matrix(G), models.p2p_matrix(H))


def test_json_envelope_and_version():
    data = json.loads(topo.to_json(topo.dgx1v()))
    assert (data["format"], data["version"]) == ("dgx-topo fabric", 1)
    data["version"] = 2
    with pytest.raises(topo.TopologyImportError, match="version 2 is not supported, expected 1"):
        topo.from_json(json.dumps(data))


@pytest.mark.parametrize("text, message", [
    ("{", "line 1: expected JSON"), ("[]", "expected an object with format"),
    ('{"format": "dgx-topo fabric", "version": true}', "version True is not supported"),
    ('{"format": "dgx-topo fabric", "version": 1, "graph": {"directed": false}}', "directed, non-multi"),
    ('{"format": "dgx-topo fabric", "version": 1, "graph": {"directed": true, "multigraph": false, '
     '"nodes": [{"id": 1}], "edges": []}}', r"nodes\[0\] must be an object with a string 'id'"),
    ('{"format": "dgx-topo fabric", "version": 1, "graph": {"directed": true, "multigraph": false, '
     '"nodes": [{"id": "a"}], "edges": [{"source": "a", "target": "b"}]}}', r"edges\[0\]"),
    ('{"format": "dgx-topo fabric", "version": 1, "graph": {"directed": true, "multigraph": false, '
     '"nodes": [{"id": "a", "kind": [1]}], "edges": []}}', "attribute 'kind' is list"),
    ('{"format": "dgx-topo fabric", "version": 1, "graph": {"directed": true, "multigraph": false, '
     '"nodes": [{"id": "a", "kind": "gpu"}], "edges": []}}', "needs attribute 'host'"),
    # Found by the fuzzers (test_io_fuzz.py): values a file may hold that are no physical figure.
    (topo.to_json(topo.dgx1v()).replace('"bandwidth": 38400000000.0', '"bandwidth": 1' + "0" * 400, 1),
     r"bandwidth must be positive and at most 1e\+13 B/s .* \(401 characters\)"),
    (topo.to_json(topo.dgx1v()).replace('"bandwidth": 38400000000.0', '"bandwidth": -1e-300', 1),
     "bandwidth must be positive and at most"),
    (topo.to_json(topo.dgx1v()).replace('"index": 0,\n    "socket": 0,\n    "model": "Tesla',
                                        '"index": -7,\n    "socket": 0,\n    "model": "Tesla', 1),
     "node 'gpu0': attribute 'index' must be 0 to 1023"),
    (topo.to_json(topo.dgx1v()).replace('"links": 2', '"links": 1e30', 1), "attribute 'links' must be int"),
    (topo.to_json(topo.dgx1v()).replace('"name": "DGX-1V"', '"name": "\\u001b[2J"', 1),
     r"graph attribute 'name' is '\\x1b\[2J': expected printable text"),
])
def test_from_json_errors(text, message):
    with pytest.raises(topo.TopologyImportError, match=message):
        topo.from_json(text)


def test_from_graphml_errors():
    text = topo.to_graphml(topo.dgx1v())
    with pytest.raises(topo.TopologyImportError, match="dgx_topo_format_version=None"):
        topo.from_graphml(text.replace('<data key="dgx_topo_format_version">1</data>', ''))
    with pytest.raises(topo.TopologyImportError, match="GraphML refused"):
        topo.from_graphml(BILLION_LAUGHS)
    with pytest.raises(topo.TopologyImportError, match="directed graph"):
        topo.from_graphml(text.replace('edgedefault="directed"', 'edgedefault="undirected"'))


def test_export_rejects_what_it_cannot_carry():
    G = topo.dgx1v()
    G.nodes["gpu0"]["tags"] = ["a"]
    with pytest.raises(topo.TopologyError, match="attribute 'tags' is list"):
        topo.to_json(G)
    G = topo.dgx1v()
    G.nodes["gpu0"]["note"], G.nodes["gpu1"]["note"] = "x", 1
    with pytest.raises(topo.TopologyError, match="GraphML types a key once"):
        topo.to_graphml(G)


@FUZZ
@given(st.text(max_size=200))
def test_fuzz_from_json_and_graphml(text):
    for read in (topo.from_json, topo.from_graphml):
        try:
            with watchdog(30):
                read(text)
        except topo.DgxTopoError:
            pass
