"""Bisection and injection bandwidth: known answers, a brute-force cross-check, invariants."""

from __future__ import annotations

import itertools

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topo
from topo.parts import add_gpu, add_link

GB = 1e9


def brute_force_bisection(G, edge_kinds=("nvlink",)) -> float:
    """Every balanced bipartition, no symmetry reduction: the reference for the fast one."""
    H = nx.DiGraph()
    H.add_nodes_from(G)
    H.add_edges_from((u, v, {"capacity": d["bandwidth"]}) for u, v, d in G.edges(data=True)
                     if d["kind"] in edge_kinds)
    gpus = topo.gpus(G)
    best = float("inf")
    for side in itertools.combinations(gpus, len(gpus) // 2):
        F = H.copy()
        F.add_edges_from(("s", g) for g in side)
        F.add_edges_from((g, "t") for g in gpus if g not in side)
        best = min(best, nx.maximum_flow_value(F, "s", "t"))
    return best


@pytest.mark.parametrize("system, expected", [("dgx1", 80 * GB), ("dgx1v", 150 * GB), ("dgx2", 1200 * GB)])
def test_known_bisection(system, expected):
    """DGX-1: 4 single links between the quads x 20 GB/s; DGX-1V: 0-4, 1-5 doubled + 2-6, 3-7 = 6 x 25;
    DGX-2: 6 switch pairs x 8 trunk links x 25 GB/s = 1.2 TB/s per direction (2.4 TB/s both ways)."""
    result = topo.bisection(topo.build(system))
    assert result.bandwidth == expected
    assert len(result.side) == len(topo.gpus(topo.build(system))) // 2


def test_dgx1v_binding_cut_is_between_the_quads():
    side = set(topo.bisection(topo.dgx1v()).side)
    assert side in ({"gpu0", "gpu1", "gpu2", "gpu3"}, {"gpu4", "gpu5", "gpu6", "gpu7"})


def test_symmetry_reduction_matches_brute_force_with_host_links():
    """With PCIe and QPI counted the answer is no longer a hand figure: check it by brute force."""
    for system in ("dgx1", "dgx1v"):
        G = topo.build(system)
        kinds = ("nvlink", "pcie", "cpu-to-cpu")
        assert topo.bisection_bandwidth(G, edge_kinds=kinds) == pytest.approx(brute_force_bisection(G, kinds))


def test_dgx2_uses_symmetry():
    assert topo.bisection(topo.dgx2()).cases == 5  # 0..4 GPUs of board 0 on a side (5..8 mirror them)
    assert topo.bisection(topo.dgx1v()).cases == 35  # C(8,4)/2: no two DGX-1V GPUs are interchangeable


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 7), data=st.data())
def test_random_fabrics_match_brute_force(n, data):
    """Random GPU meshes with repeated structure (where interchangeable GPUs occur)."""
    G = nx.DiGraph()
    for i in range(n):
        add_gpu(G, f"g{i}", "V100-SXM2", index=i, socket=0)
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    chosen = data.draw(st.lists(st.tuples(st.sampled_from(pairs), st.integers(1, 3)), min_size=1,
                                unique_by=lambda x: x[0]))
    for (a, b), links in chosen:
        add_link(G, f"g{a}", f"g{b}", "nvlink2", links)
    for i in range(1, n):  # keep it connected
        if not G.has_edge("g0", f"g{i}"):
            add_link(G, "g0", f"g{i}", "pcie3_x16")
    kinds = ("nvlink", "pcie")
    assert topo.bisection_bandwidth(G, edge_kinds=kinds) == pytest.approx(brute_force_bisection(G, kinds))


_BISECTION_BEFORE = {}  # intact fabric's bisection, once per system (the examples edit a fresh copy)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_removing_an_nvlink_never_raises_bisection(data):
    system = data.draw(st.sampled_from(["dgx1", "dgx1v", "dgx2"]))
    G = topo.build(system)
    if system not in _BISECTION_BEFORE:
        _BISECTION_BEFORE[system] = topo.bisection_bandwidth(G)
    before = _BISECTION_BEFORE[system]
    u, v = data.draw(st.sampled_from(sorted((u, v) for u, v, d in G.edges(data=True)
                                            if d["kind"] == "nvlink" and u < v)))
    for a, b in ((u, v), (v, u)):
        edge = G.edges[a, b]
        if edge["links"] > 1:
            edge["bandwidth"] -= edge["bandwidth"] / edge["links"]
            edge["links"] -= 1
        else:
            G.remove_edge(a, b)
    assert topo.bisection_bandwidth(G) <= before


@pytest.mark.parametrize("system, expected", [("dgx1", 80 * GB), ("dgx1v", 150 * GB), ("dgx2", 150 * GB)])
def test_injection_bandwidth(system, expected):
    injection = topo.injection_bandwidth(topo.build(system))
    assert set(injection.values()) == {expected}


def test_injection_over_pcie():
    assert set(topo.injection_bandwidth(topo.dgx1v(), edge_kinds=["pcie"]).values()) == \
        {topo.LINKS["pcie3_x16"].bandwidth}


def test_bisection_errors():
    with pytest.raises(topo.DgxTopoError, match="edge_kinds must be a non-empty subset"):
        topo.bisection(topo.dgx1v(), edge_kinds=("ethernet",))
    with pytest.raises(topo.DgxTopoError, match="edge_kinds must be a non-empty subset"):
        topo.injection_bandwidth(topo.dgx1v(), edge_kinds=())
    with pytest.raises(topo.DgxTopoError, match="more than max_cases=10"):
        topo.bisection(topo.dgx1v(), max_cases=10)
    G = nx.DiGraph()
    add_gpu(G, "g", "V100-SXM2", index=0, socket=0)
    with pytest.raises(topo.TopologyError, match="at least 2 GPUs, received 1"):
        topo.bisection(G)


def test_summary(fabric, system):
    summary = topo.summarize(fabric)
    assert summary.system == system and summary.gpus == len(topo.gpus(fabric))
    assert summary.nvlink_links == {"dgx1": 16, "dgx1v": 24, "dgx2": 96 + 48, "dgxa100": 8 * 12,
                                     "dgxh100": 8 * 18, "dgxh200": 8 * 18, "dgxb200": 8 * 18,
                                     "gb200nvl72": 72 * 18, "dgxh800": 8 * 8, "dgxb300": 8 * 18,
                                     "gb300nvl72": 72 * 18}[system]
    data = summary.to_dict()
    assert data["bisection_gbps"] == summary.bisection / GB
