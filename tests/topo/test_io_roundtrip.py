"""Imports give back the machine: every built-in system printed as ``nvidia-smi topo -m`` and
imported predicts what the built-in predicts (issue 24 item 3).

nvidia-smi's text has no NVSwitch wiring, CPU model, NIC roles or PCIe links; the importer takes
them from the GPU model's known system (:mod:`topo.io.known`). The figures compared are NCCL's
choice (algorithm, protocol, channels) and busbw of all_reduce at 1 GiB on every GPU and on 4,
and the P2P bandwidth matrix.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import topo
from topo.registry import HOSTS_PER_SYSTEM
from models.engine.fabric import PreparedFabric
from models.predict.collectives import estimate
from models.predict.p2p import p2p_matrix
from topo.units import GiB


def printout(G) -> str:
    return topo.format_connection_matrix(topo.connection_matrix(G))


def gpu_name(G) -> str:
    """The GPU model as nvidia-smi prints it (the builders name GPUs so)."""
    return G.nodes[topo.gpus(G)[0]]["model"]


def choice(G, gpus) -> tuple:
    p = estimate(G, "all_reduce", GiB, gpus).point()
    return p.algorithm, p.protocol, p.nchannels, p.busbw


def p2p_gpus(G) -> list | None:
    """The GPUs whose P2P matrix is compared: all, or two NVL72 trays of a rack."""
    return None if len(topo.gpus(G)) <= 16 else list(range(8))


def predictions(G) -> tuple:
    """``choice`` on every GPU and on GPUs 0-3, and the P2P matrix, of one prepared fabric (its
    routes and searches shared by the three; a prepared graph is read-only)."""
    fabric = PreparedFabric(G)
    return choice(fabric, None), choice(fabric, [0, 1, 2, 3]), p2p_matrix(fabric, p2p_gpus(G))


@functools.cache
def builtin_predictions(system: str) -> tuple:
    """:func:`predictions` of a built-in system, made once for the tests of this file."""
    return predictions(topo.build(system))


def assert_same_predictions(G, system: str) -> None:
    """The imported fabric predicts what the built-in system does."""
    got, built_in = predictions(G), builtin_predictions(system)
    for gpus, i in ((None, 0), ([0, 1, 2, 3], 1)):
        assert got[i] == built_in[i], gpus
    assert np.array_equal(got[2], built_in[2], equal_nan=True)


@pytest.mark.parametrize("system", sorted(topo.SYSTEMS) + sorted(topo.registry.VARIANTS))
def test_printout_imports_to_the_builtin_predictions(system):
    B = topo.build(system)
    G = topo.from_nvidia_smi(printout(B), gpu=gpu_name(B))
    assert topo.connection_matrix(G).to_dict() == topo.connection_matrix(B).to_dict()
    assert len(topo.gpus(G)) == len(topo.gpus(B))
    assert_same_predictions(G, system)
    assert G.graph["inferred"].startswith(f"From {system}, what the text does not say:")


def test_dgxh100_import_keeps_nvls_and_the_real_wiring():
    """The case of issue 24: an imported DGX H100 lost NVLS (342 GB/s ring, not 445 GB/s) and
    its explanation contradicted itself; the 5/4/4/5 wiring could not be imported."""
    text = printout(topo.build("dgxh100"))
    G = topo.from_nvidia_smi(text, gpu="NVIDIA H100 80GB HBM3")
    e = estimate(G, "all_reduce", GiB)
    assert e.point().algorithm == "nvls" and round(e.point().busbw / 1e9) == 445
    from models.present.explain import explain

    assert "NVLS" in explain(e) and "gen3 or later" not in explain(e)
    assert [G.edges["gpu0", f"nvswitch{s}"]["links"] for s in range(4)] == [5, 4, 4, 5]
    assert "5/4/4/5 links from each GPU" in G.graph["inferred"]
    # Asked for 4 chips, the known system's 4 chips are wired as it is.
    H = topo.from_nvidia_smi(text, gpu="h100", nvswitches=4)
    assert [H.edges["gpu7", f"nvswitch{s}"]["links"] for s in range(4)] == [5, 4, 4, 5]
    # Without the known system: 18 over 4 chips spread evenly, or the wiring given.
    even = topo.from_nvidia_smi(text, gpu="h100", like=None, nvswitches=4)
    assert [even.edges["gpu0", f"nvswitch{s}"]["links"] for s in range(4)] == [5, 5, 4, 4]
    assert "spread evenly" in even.graph["inferred"]
    given = topo.from_nvidia_smi(text, gpu="h100", like=None, nvswitch_links=(5, 4, 4, 5))
    assert [given.edges["gpu0", f"nvswitch{s}"]["links"] for s in range(4)] == [5, 4, 4, 5]
    assert given.nodes["nvswitch0"]["model"] == topo.NVSWITCHES["nvswitch3"].model  # gen3: NVLS
    assert estimate(given, "all_reduce", GiB).point().algorithm == "nvls"


def test_dgxa100_import_has_the_eight_numa_nodes_and_the_storage_nics():
    B = topo.build("dgxa100")
    G = topo.from_nvidia_smi(printout(B), gpu="NVIDIA A100-SXM4-40GB")
    assert sorted(n for n, k in G.nodes(data="kind") if k == "cpu") == [f"cpu{k}" for k in range(8)]
    assert "port_link" not in G.nodes["mlx5_4"] and G.nodes["mlx5_0"]["port_link"] == "ib_hdr"
    assert topo.compute_nics(G) == topo.compute_nics(B)


def test_a100_80gb_takes_the_dgx_a100_640gb_variant():
    from topo.io.known import reference_system
    ref = reference_system("A100-SXM4-80GB")
    assert (ref.name, ref.exact) == ("dgxa100-80g", True)
    G = topo.from_nvidia_smi(printout(topo.build("dgxa100-80g")), gpu="NVIDIA A100-SXM4-80GB")
    assert G.nodes["gpu0"]["memory_bandwidth"] == topo.GPUS["A100-SXM4-80GB"].memory_bandwidth
    assert G.graph["inferred"].startswith("From dgxa100-80g")
    assert choice(G, None) == builtin_predictions("dgxa100-80g")[0]


def test_a_gpu_no_system_has_takes_the_board_of_its_nvlink_generation(monkeypatch):
    """A catalogue GPU no built-in system carries: the first system of its NVLink generation and
    port count stands in (the same baseboard family), and says it is not exact."""
    from dataclasses import replace
    from topo.io.known import reference_system
    from types import MappingProxyType
    import topo.io.known
    extra = replace(topo.GPUS["A100-SXM4-80GB"], model="NVIDIA A100-SXM4-96GB")
    monkeypatch.setattr(topo.io.known, "GPUS", MappingProxyType({**topo.GPUS, "A100-SXM4-96GB": extra}))
    ref = reference_system("A100-SXM4-96GB")
    assert (ref.name, ref.exact) == ("dgxa100", False)


def test_gb200_tray_is_the_rack_or_itself():
    """nvidia-smi on one compute tray shows 4 GPUs; the NVL72 rack is 18 such trays."""
    text = printout(topo.build("gb200nvl72"))
    tray = topo.from_nvidia_smi(text, gpu="NVIDIA GB200", hosts=1)
    assert len(topo.gpus(tray)) == 4 and len([n for n, k in tray.nodes(data="kind") if k == "nvswitch"]) == 18
    assert "hosts in one NVLink domain" not in tray.graph["inferred"]
    with pytest.raises(topo.TopologyImportError, match="hosts=19: gb200nvl72's NVLink domain has 18 hosts"):
        topo.from_nvidia_smi(text, gpu="gb200", hosts=19)
    with pytest.raises(topo.TopologyImportError, match="hosts=2: the GPUs' NVLink domain is one host"):
        topo.from_nvidia_smi(printout(topo.build("dgxh100")), gpu="h100", hosts=2)


def test_options_override_the_known_system():
    text = printout(topo.build("dgxh100"))
    G = topo.from_nvidia_smi(text, gpu="h100", cpu="Platinum8168", pcie="pcie4_x16", nic_link="ib_hdr")
    assert G.nodes["cpu0"]["model"] == topo.CPUS["Platinum8168"].model
    assert {d["link"] for _, _, d in G.edges(data=True) if d["kind"] == "pcie"} == {"pcie4_x16"}
    assert {G.nodes[n]["port_link"] for n in topo.nodes_of_kind(G, "nic")} == {"ib_hdr"}
    plain = topo.from_nvidia_smi(text, gpu="h100", like=None)
    assert "inferred" not in plain.graph and len(topo.nodes_of_kind(plain, "nvswitch")) == 18
    other = topo.from_nvidia_smi(text, gpu="h100", like="dgxh200")
    assert other.graph["inferred"].startswith("From dgxh200")


@pytest.mark.parametrize("options, message", [
    ({"like": "dgx9"}, "like='dgx9': expected 'auto', None or a built-in system"),
    ({"like": "dgx1v"}, "like='dgx1v': its GPUs .* are not of the NVLink generation"),
    ({"nvswitches": 19}, "nvswitches=19: expected at most 18 NVSwitch chips"),
    ({"nvswitches": 0}, "nvswitches=0: expected a number of NVSwitch chips from 1 to 64"),
    ({"nvswitch_links": (5, 4, 4)}, "nvswitch_links=5/4/4: expected links per NVSwitch chip that add up to the NV18"),
    ({"nvswitch_links": (9, 9), "nvswitches": 3}, "one per chip of nvswitches=3"),
    ({"nvswitch_links": "5,4"}, "nvswitch_links='5,4': expected links per NVSwitch chip"),
    ({"nvswitch_links": (18, 0)}, "expected links per NVSwitch chip, whole numbers from 1 to 64"),
    ({"nvswitch": False, "nvswitches": 2}, "given for a fabric without NVSwitches"),
    ({"hosts": 0}, "hosts=0: expected a whole number >= 1"),
])
def test_option_errors(options, message):
    with pytest.raises(topo.TopologyImportError, match=message):
        topo.from_nvidia_smi(printout(topo.build("dgxh100")), gpu="h100", **options)


@pytest.mark.parametrize("name, key", [
    ("NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"), ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"),
    ("a100-sxm4-80gb", "A100-SXM4-80GB"), ("A100 80GB", "A100-SXM4-80GB"), ("a100 sxm4 40gb", "A100-SXM4-40GB"),
    ("NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"), ("h100", "H100-SXM5-80GB"), ("NVIDIA H200", "H200"),
    ("NVIDIA B200", "B200"), ("b200", "B200"), ("NVIDIA GB200", "GB200"),
])
def test_every_gpu_name_nvidia_smi_prints_resolves(name, key):
    assert topo.gpu_model(name) == key


def test_every_catalogue_gpu_resolves_by_its_key_and_its_nvidia_smi_name():
    """Data-driven: a model added to topo.specs.GPUS resolves without code."""
    for key, spec in topo.GPUS.items():
        assert topo.gpu_model(key) == key and topo.gpu_model(spec.model) == key


def test_an_ambiguous_name_lists_names_that_resolve():
    with pytest.raises(topo.TopologyImportError, match="'A100' is ambiguous: it matches A100-SXM4-40GB, "
                                                       "A100-SXM4-80GB") as error:
        topo.gpu_model("A100")
    for choice_key in ("A100-SXM4-40GB", "A100-SXM4-80GB"):
        assert choice_key in str(error.value) and topo.gpu_model(choice_key) == choice_key


# -- NCCL's topology XML ------------------------------------------------------------------------
SINGLE_HOST = sorted(s for s in topo.SYSTEMS if s not in HOSTS_PER_SYSTEM)


@pytest.mark.parametrize("system", SINGLE_HOST)
def test_nccl_xml_export_imports_to_the_builtin_predictions(system):
    """export --format nccl-xml, then import: NCCL's view of the machine, and so its figures.
    (The XML names no GPU model beyond the PCI ids the importer knows: ``gpu=`` says it.)"""
    B = topo.build(system)
    G = topo.from_nccl_xml(topo.to_nccl_xml(B), gpu=gpu_name(B))
    assert_same_predictions(G, system)
    # What NCCL's XML holds comes back as it was.
    ids = lambda H: sorted(H.nodes[n]["name"] for n in topo.compute_nics(H))  # noqa: E731
    assert ids(G) == ids(B) and len(topo.nodes_of_kind(G, "nvswitch")) == len(topo.nodes_of_kind(B, "nvswitch"))
    assert {d["link"] for *_, d in G.edges(data=True) if d["kind"] == "cpu-to-cpu"} <= \
        {d["link"] for *_, d in B.edges(data=True) if d["kind"] == "cpu-to-cpu"} | {"xgmi"}


def test_nccl_xml_export_of_a_dgx1v_names_its_gpus_and_cpus():
    text = topo.to_nccl_xml(topo.build("dgx1v"))
    assert text.count("<gpu ") == 8 and 'device="0x1db1"' in text and 'modelid="79"' in text
    G = topo.from_nccl_xml(text)  # the V100's PCI id names it
    assert G.nodes["gpu0"]["model"] == "Tesla V100-SXM2-16GB"
    assert G.edges["cpu0", "cpu1"]["link"] == "qpi_bdw"


def _c2c_to_the_other_grace(G):
    """GB300 with tray 0's first GPU's C2C moved to the tray's other Grace (its PCIe stays)."""
    G = G.copy()
    data = dict(G.edges["t0.gpu0", "t0.cpu0"])
    G.remove_edge("t0.gpu0", "t0.cpu0"), G.remove_edge("t0.cpu0", "t0.gpu0")
    G.add_edge("t0.gpu0", "t0.cpu1", **data), G.add_edge("t0.cpu1", "t0.gpu0", **data)
    return G


@pytest.mark.parametrize("system", ["gb200nvl72", "gb300nvl72"])
def test_nccl_xml_of_a_grace_tray_carries_its_c2c(system):
    """NCCL's XML of a Grace tray writes each GPU's NVLink-C2C as a ``<c2c bw count>`` of the GPU
    (per-link MB/s, NVIDIA/nccl v2.26 ncclTopoAddC2c); GB200's GPUs, reached over C2C only, sit
    under their Grace stating no PCIe link. Reading it back gives the C2C of the built tray and
    the built rack's figures on that tray's GPUs."""
    B = topo.build(system)
    text = topo.to_nccl_xml(B, host=0)
    assert text.count('<c2c bw="450000" count="1" />') == 4
    G = topo.from_nccl_xml(text, gpu=gpu_name(B))
    for g in ("gpu0", "gpu1", "gpu2", "gpu3"):
        c2c = {v: (d["link"], d["links"], d["bandwidth"]) for v, d in G.adj[g].items() if d["kind"] == "pcie"
               and d["link"] == "nvlink_c2c"}
        assert c2c == {f"cpu{int(g[-1]) // 2}": ("nvlink_c2c", 1, 450e9)}
        others = sorted(d["link"] for d in G.adj[g].values() if d["kind"] == "pcie" and d["link"] != "nvlink_c2c")
        assert others == ([] if system == "gb200nvl72" else ["pcie6_x16"])
    assert ("reached over NVLink-C2C only" in G.graph.get("inferred", "")) == (system == "gb200nvl72")
    rack = PreparedFabric(B)
    for collective in ("all_reduce", "all_gather", "alltoall"):
        for size in (2**20, GiB):
            assert estimate(G, collective, size).point() == estimate(rack, collective, size, [0, 1, 2, 3]).point()
    # NODE in the rack comes back PHB: NCCL's XML has one host bridge a CPU (NCCL has no NODE)
    assert [topo.connection_class(G, "gpu0", n) for n in ("mlx5_0", "mlx5_1", "mlx5_4")] == \
        [topo.connection_class(B, "t0.gpu0", f"t0.{n}").replace("NODE", "PHB") for n in ("mlx5_0", "mlx5_1", "mlx5_4")]


@pytest.mark.parametrize("make, message", [
    (lambda: _c2c_to_the_other_grace(topo.build("gb300nvl72")),
     r"GPU 't0.gpu0' has NVLink-C2C to 't0.cpu1' but sits under 't0.cpu0'"),
    (lambda: topo.scale_links(topo.build("gb200nvl72"), "t0.gpu0", "t0.cpu0", 0.5, both_directions=False),
     r"NCCL's <c2c> states a whole number of MB/s a link, the same both ways"),
    (lambda: topo.scale_links(topo.build("dgx1v"), "gpu0", "gpu3", 0.5), "NCCL's XML states link counts"),
    (lambda: topo.scale_links(topo.build("dgx1v"), "pcie0", "gpu0", 0.3), "which is no PCIe width"),
])
def test_nccl_xml_export_refuses_what_it_cannot_state(make, message):
    with pytest.raises(topo.TopologyError, match=message):
        topo.to_nccl_xml(make())
    with pytest.raises(topo.TopologyError, match="no GPU on host 3"):
        topo.to_nccl_xml(topo.build("dgx1v"), host=3)


def test_a_printout_of_more_devices_than_the_limit_is_refused_before_work():
    header = "        " + "  ".join(f"GPU{i}" for i in range(300))
    with pytest.raises(topo.TopologyImportError, match="300 device columns, more than max_devices=128"):
        topo.from_nvidia_smi(header + "\nGPU0  X", gpu="v100-sxm2")
    with pytest.raises(topo.TopologyImportError, match="max_devices=2000: expected a whole number from 1 to 1024"):
        topo.from_nvidia_smi(header, gpu="v100-sxm2", max_devices=2000)
    with pytest.raises(topo.TopologyImportError, match="row GPU0 has 1 cells, expected 300"):  # read past the header
        topo.from_nvidia_smi(header + "\nGPU0  X", gpu="v100-sxm2", max_devices=300)
