"""The PCIe classifier against the nvidia-smi matrices the builders reproduce."""

from __future__ import annotations

import pytest

import topo
from topo import TopologyError
from topo.pcie import PCIE_CLASSES, connection_class, pcie_class, pcie_path, pcie_paths


@pytest.mark.parametrize("name", sorted(topo.SYSTEMS))
def test_per_pair_class_equals_the_matrix(name):
    G = topo.build(name)
    cm = topo.connection_matrix(G)
    for i, a in enumerate(cm.nodes):
        for j, b in enumerate(cm.nodes):
            assert connection_class(G, a, b) == cm.cells[i][j]


def test_known_dgx2_classes():
    """nvidia-smi topo -m of a DGX-2: PIX within a leaf, PXB under one parent, NODE, SYS."""
    G = topo.dgx2()
    classes = {b: pcie_class(G, pcie_path(G, "gpu0", b)) for b in ("gpu1", "gpu2", "gpu4", "gpu8")}
    assert classes == {"gpu1": "PIX", "gpu2": "PXB", "gpu4": "NODE", "gpu8": "SYS"}
    assert pcie_path(G, "gpu0", "gpu1") == ("gpu0", "pcie4", "gpu1")


def test_paths_pass_only_through_switches_and_cpus():
    G = topo.dgx1v()
    for path in pcie_paths(G, "gpu0").values():
        assert all(G.nodes[n]["kind"] in ("pcie_switch", "cpu") for n in path[1:-1])
    assert set(pcie_class(G, p) for p in pcie_paths(G, "gpu0").values() if len(p) > 1) <= set(PCIE_CLASSES)


def test_no_route_and_bad_input():
    G = topo.dgx1v()
    G.remove_edges_from([("pcie0", "mlx5_0"), ("mlx5_0", "pcie0")])
    assert pcie_path(G, "gpu0", "mlx5_0") is None
    with pytest.raises(TopologyError, match="neither NVLink nor a PCIe route"):
        connection_class(G, "gpu0", "mlx5_0")
    with pytest.raises(TopologyError, match="'gpu99' is not a node"):
        connection_class(G, "gpu0", "gpu99")
    with pytest.raises(TopologyError, match="two nodes or more"):
        pcie_class(G, ["gpu0"])
    with pytest.raises(TopologyError, match=r"no edge \('gpu0', 'gpu5'\)"):
        pcie_class(G, ["gpu0", "gpu5"])
    assert connection_class(G, "gpu3", "gpu3") == "X"
