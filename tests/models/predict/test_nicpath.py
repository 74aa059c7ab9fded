"""The path of a NIC's network traffic: the port or the PCIe path to the GPU, whichever binds.

Known answers from the wire of each generation (topo.specs.WIRES), the one measured PCIe DMA
figure (PCIe 3.0, the DGX-1V p2pBandwidthLatencyTest row in tests/data) and NCCL's figures
(NVIDIA/nccl v2.27.7-1 src/graph/topo.cc: PCIe width x speed / 80, a port speed / 8000).
"""

from __future__ import annotations

import json

import pytest

import topo
from models.predict.nicpath import MEASURED_DMA, dma_share, nic_path
from models.present.explain import describe_nic_path, explain
from tests.conftest import DATA
from topo.errors import DgxTopoError

GB = 1e9
IB = 4096 / 4122                    # InfiniBand payload share at MTU 4096
PCIE_DMA = 256 / (256 + 24 + 4 + 12)  # PCIe gen 3-5 by the specification, both ways, MPS 256, MRRS 512
GEN3 = 16 * 8 * 128 / 130 / 8       # PCIe 3.0 x16 line rate after 128b/130b [GB/s]
# PCIe 3.0 DMA both ways as measured: a DGX-1V's GPU0 and GPU1 (one PLX switch) copying to each
# other through host memory move 9.56 GB/s over the switch's uplink each way at once.
ROW = json.loads((DATA / "dgx1v_p2p_gpu0_row.json").read_text())
GEN3_DMA = ROW["bidirectional_p2p_disabled_gbps"][1]


def test_pcie3_dma_is_the_dgx1v_measurement_and_later_generations_their_specification():
    share, basis = dma_share("pcie3_x16")
    assert basis == "measured" and share * GEN3 == pytest.approx(GEN3_DMA, rel=1e-4)
    assert share * GEN3 < 0.71 * GEN3 * PCIE_DMA  # 30 % short of what the specification allows
    for link, gts in (("pcie4_x16", 16), ("pcie5_x16", 32)):
        share, basis = dma_share(link)
        assert basis == "specification" and link not in MEASURED_DMA
        assert share * topo.LINKS[link].bandwidth == pytest.approx(16 * gts * 128 / 130 / 8 * GB * PCIE_DMA)
    # PCIe 6.0 flit mode: 236 TLP bytes per 256-byte flit, 16 B headers, no DLLPs of their own
    share, basis = dma_share("pcie6_x16")
    assert basis == "specification"
    assert share * topo.LINKS["pcie6_x16"].bandwidth == pytest.approx(128 * GB * 236 / 256 * 256 / (272 + 8))


@pytest.mark.parametrize("pcie, port", [("pcie4_x16", "ib_hdr"), ("pcie5_x16", "ib_ndr"),
                                        ("pcie6_x16", "ib_xdr")])
def test_from_gen_4_each_pcie_generation_by_its_specification_outruns_the_port_of_its_era(pcie, port):
    w = topo.specs.WIRES[port]
    assert 1.08 < dma_share(pcie)[0] * topo.LINKS[pcie].bandwidth / (w.data_rate * w.packet_efficiency) < 1.11


def test_pcie3_dma_binds_an_edr_port_below_nccls_figure():
    p = nic_path(topo.build("2xdgx2"), "h0.mlx5_0")
    assert (p.port, p.path_class, p.gdr, p.binding, p.pcie_basis) == ("ib_edr", "PIX", True, "pcie3_x16", "measured")
    assert p.port_rate == pytest.approx(12.5 * GB * IB)
    assert p.rate == p.pcie_rate == pytest.approx(GEN3_DMA * GB, rel=1e-4)
    assert p.nccl_rate == 12 * GB  # NCCL's PCI figure for Gen3 x16, below the port's 12.5
    assert p.ratio == pytest.approx(GEN3_DMA / 12, rel=1e-4)
    assert "pcie3_x16 binds" in describe_nic_path(p) and "(measured)" in describe_nic_path(p)


def test_a_path_as_records_and_words():
    p = nic_path(topo.build("2xdgx2"), "h0.mlx5_0")
    (row,) = p.to_records()
    assert (row["nic"], row["gpu"], row["gdr"], row["binding"]) == ("h0.mlx5_0", "h0.gpu0", True, "pcie3_x16")
    assert (row["rate_Bps"], row["nccl_rate_Bps"], row["ratio"]) == (p.rate, p.nccl_rate, p.ratio)
    assert explain(p) == describe_nic_path(p)


@pytest.mark.parametrize("system, nic, port, port_GBps, pcie_GBps, nccl_GBps, path_class", [
    ("2xdgxa100", "h0.mlx5_0", "ib_hdr", 25, 16 * 16 * 128 / 130 / 8, 24, "PXB"),    # HDR, gen 4
    ("2xdgxh100", "h0.mlx5_0", "ib_ndr", 50, 16 * 32 * 128 / 130 / 8, 48, "PXB"),    # NDR, gen 5
])
def test_the_port_binds_where_the_nic_shares_a_switch_with_its_gpu(system, nic, port, port_GBps,
                                                                  pcie_GBps, nccl_GBps, path_class):
    p = nic_path(topo.build(system), nic)
    assert (p.port, p.path_class, p.gdr) == (port, path_class, True)
    assert p.port_rate == pytest.approx(port_GBps * GB * IB)
    assert p.pcie_rate == pytest.approx(pcie_GBps * GB * PCIE_DMA)
    assert p.binding == port and p.rate == p.port_rate and p.pcie_basis == "specification"
    # NCCL charges the path its PCIe figure (below its port figure): the path beats it
    assert p.nccl_rate == pytest.approx(nccl_GBps * GB)
    assert p.ratio == pytest.approx(port_GBps * IB / nccl_GBps)
    assert f"{port} binds" in describe_nic_path(p)


def test_a_faster_port_on_the_same_pcie_path_is_bound_by_pcie():
    G = topo.build("2xdgx1v")
    G.nodes["h0.mlx5_0"].update(port_link="ib_ndr", port_bandwidth=50 * GB)  # NDR on PCIe gen 3
    p = nic_path(G, "h0.mlx5_0")
    assert p.binding == "pcie3_x16"
    assert p.rate == pytest.approx(GEN3_DMA * GB, rel=1e-4)
    assert p.nccl_rate == 12 * GB and p.ratio == pytest.approx(p.rate / (12 * GB))


def test_without_a_shared_switch_the_data_is_staged_and_the_gpu_side_runs_at_the_kernels_rate():
    G = topo.build("2xgb200nvl72")
    nic = next(n for n, d in G.nodes(data=True) if d.get("kind") == "nic" and d.get("port_link"))
    fast = nic_path(G, nic)
    assert not fast.gdr and fast.path_class not in ("PIX", "PXB")
    assert any(G.nodes[n]["kind"] == "cpu" for n in fast.path)
    # the GPU's side (NVLink-C2C to Grace) is written by NCCL's kernels: slowed enough, it binds
    slow = nic_path(G, nic, sm_efficiency=0.05)
    assert slow.binding == "nvlink_c2c" and slow.pcie_basis == "kernels"
    assert slow.rate == pytest.approx(450 * GB * 256 / 272 * 0.05)


def test_efficiency_scales_what_the_nic_dmas():
    G = topo.build("2xdgxh100")
    half = nic_path(G, "h0.mlx5_0", efficiency=lambda link: 0.5)
    assert half.port_rate == pytest.approx(50 * GB * IB / 2)
    assert half.pcie_rate == pytest.approx(16 * 32 * 128 / 130 / 8 * GB * PCIE_DMA / 2)
    gen3 = nic_path(topo.build("2xdgx1v"), "h0.mlx5_0", efficiency=lambda link: 0.5)
    assert gen3.pcie_rate == pytest.approx(GEN3_DMA * GB / 2, rel=1e-4)  # the measured figure too


def test_bad_nics():
    G = topo.build("2xdgx1v")
    with pytest.raises(DgxTopoError, match="not a NIC with a catalogued network port"):
        nic_path(G, "h0.gpu0")
    with pytest.raises(DgxTopoError, match="not a NIC"):
        nic_path(G, "nothing")
    G.remove_edges_from([e for e in list(G.edges("h0.mlx5_0")) + list(G.in_edges("h0.mlx5_0"))
                         if G.edges[e]["kind"] == "pcie"])
    with pytest.raises(DgxTopoError, match="reaches 'h0.mlx5_0' over PCIe"):
        nic_path(G, "h0.mlx5_0")
