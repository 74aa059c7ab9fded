"""The nvidia-smi view against published nvidia-smi topo -m output of real machines."""

from __future__ import annotations

import pytest

import topo
from tests.conftest import read_data


def parse_published(text: str) -> tuple[list, dict]:
    """Header labels and {row label: cells} of an nvidia-smi topo -m text (affinity columns dropped)."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = lines[0].replace("CPU Affinity", "").replace("NUMA Affinity", "").split()
    rows = {}
    for line in lines[1:]:
        cells = line.split()
        rows[cells[0]] = cells[1:1 + len(header)]
    return header, rows


def test_dgx1v_reproduces_published_matrix_exactly():
    """Every cell, the affinity columns and the layout of the DGX-1V printout (tests/data)."""
    expected = read_data("dgx1v_nvidia_smi_topo.txt")
    printed = topo.format_connection_matrix(topo.connection_matrix(topo.dgx1v()), legend=False)
    assert printed == expected


def test_dgx2_reproduces_every_published_cell():
    header, published = parse_published(read_data("dgx2_nvidia_smi_topo_rows0-4.txt"))
    cm = topo.connection_matrix(topo.dgx2())
    assert list(cm.devices) == header
    assert sorted(published) == ["GPU0", "GPU1", "GPU2", "GPU3", "GPU4"]
    for row, cells in published.items():
        assert [cm.cell(row, col) for col in header] == cells, row
    for row in ("GPU0", "GPU1", "GPU2", "GPU3"):  # GPU4's affinity was cut off in the copy
        assert cm.cpu_affinity[cm.devices.index(row)] == "0-23,48-71"


def test_dgx2_unpublished_rows_are_consistent():
    """Rows GPU5-15 and the NIC rows follow the published structure by symmetry."""
    cm = topo.connection_matrix(topo.dgx2())
    gpus = [d for d in cm.devices if d.startswith("GPU")]
    nics = [d for d in cm.devices if d.startswith("mlx5")]
    compute = [f"mlx5_{i}" for i in (0, 1, 2, 3, 6, 7, 8, 9)]
    for i, g in enumerate(gpus):
        assert all(cm.cell(g, h) == ("X" if g == h else "NV6") for h in gpus)
        row = [cm.cell(g, n) for n in nics]
        assert row.count("PIX") == 1 and row.count("PXB") == 1 and row.count("NODE") == 2 + 2 * (i >= 8)
        assert cm.cell(g, compute[i // 2]) == "PIX", "each leaf switch holds a GPU pair and one NIC"
        assert cm.cpu_affinity[i] == ("0-23,48-71" if i < 8 else "24-47,72-95")
        assert cm.numa_affinity[i] == str(i // 8)


def test_dgx1_p100_matrix():
    cm = topo.connection_matrix(topo.dgx1())
    linked = {(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (4, 5), (4, 6), (4, 7), (5, 6), (5, 7),
              (6, 7), (0, 4), (1, 5), (2, 6), (3, 7)}
    for a in range(8):
        for b in range(8):
            expected = "X" if a == b else "NV1" if (min(a, b), max(a, b)) in linked else "SYS"
            assert cm.cell(f"GPU{a}", f"GPU{b}") == expected
    # The PCIe and NIC layer is the DGX-1V chassis.
    v = topo.connection_matrix(topo.dgx1v())
    assert [cm.cell(f"GPU{g}", f"mlx5_{n}") for g in range(8) for n in range(4)] == \
        [v.cell(f"GPU{g}", f"mlx5_{n}") for g in range(8) for n in range(4)]


def test_matrix_is_symmetric(fabric):
    cm = topo.connection_matrix(fabric)
    n = len(cm.devices)
    assert all(cm.cells[i][j] == cm.cells[j][i] for i in range(n) for j in range(n))
    assert all(cm.cells[i][i] == "X" for i in range(n))


def test_json_form(fabric):
    data = topo.connection_matrix(fabric).to_dict()
    assert set(data) == {"devices", "matrix", "cpu_affinity", "numa_affinity"}
    assert len(data["matrix"]) == len(data["devices"]) == len(data["cpu_affinity"])


def test_node_layout_with_legend_lists_every_class():
    text = topo.format_connection_matrix(topo.connection_matrix(topo.dgx2()))
    legend = text.split("Legend:")[1]
    for key in ("X", "SYS", "NODE", "PHB", "PXB", "PIX", "NV#"):
        assert f"  {key} " in legend


def test_unknown_host_is_an_error():
    with pytest.raises(topo.TopologyError, match=r"no GPU on host 3: expected one of hosts \[0\]"):
        topo.connection_matrix(topo.dgx1v(), host=3)


def test_device_without_pcie_route_is_an_error():
    G = topo.dgx1v()
    G.remove_edges_from([("pcie0", "mlx5_0"), ("mlx5_0", "pcie0")])
    G.add_edge("mlx5_0", "gpu0", kind="nvlink", link="nvlink2", links=1, bandwidth=1.0, latency=0.0)
    G.add_edge("gpu0", "mlx5_0", kind="nvlink", link="nvlink2", links=1, bandwidth=1.0, latency=0.0)
    with pytest.raises(topo.TopologyError, match="neither NVLink nor a PCIe route"):
        topo.connection_matrix(G)
