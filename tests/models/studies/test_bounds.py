"""Optimal-schedule bounds (models.studies.bounds), tree packings (models.studies.packing), their figures.

Known answers are closed forms (ring, complete graph, single switch), brute force over every
cut of small random fabrics, and invariants: the bound is never below NCCL's predicted busbw
(at 8 GiB, where its bandwidth term dominates), adding a link never lowers it, relabelling
GPUs never changes it; a packing never overloads a link and reaches the bound.
"""

from __future__ import annotations

import itertools
import json
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import topo
from topo.parts import add_gpu, add_link, add_nvswitch
from topo.specs import LINKS
from models import subsets
from models.engine.nccl.reasons import Cause, Why
from models.present.reasons_text import nvls_bound_text
from models.studies.bounds import (BoundError, BoundTooLargeError, bound, nvls_applicable, pairwise_bounds,
                           subset_bounds)
from models.studies import bounds as bounds_module
from models.studies.packing import PackingError, pack_trees
from models.studies.relays import FlowNetwork, RelayError, capacity_graph
from models.present.explain import bound_summary, explain
from models.present.json_shapes import bound_json

B = LINKS["nvlink2"].bandwidth  # 25 GB/s per link and direction
BIG = 2**33


def _fabric(n, pairs, switches=0, switch_links=()):
    """A valid fabric of ``n`` V100s; ``pairs`` {(a, b): links}; switch links (gpu, switch, links)."""
    G = nx.DiGraph(name="test")
    for g in range(n):
        add_gpu(G, f"gpu{g}", "V100-SXM2", index=g, socket=0)
    for s in range(switches):
        add_nvswitch(G, f"nvswitch{s}", index=s, ports=18, baseboard=0, model="NVSwitch (first generation)")
    for (a, b), links in pairs.items():
        add_link(G, f"gpu{a}", f"gpu{b}", "nvlink2", links)
    for g, s, links in switch_links:
        add_link(G, f"gpu{g}", f"nvswitch{s}", "nvlink2", links)
    topo.validate(G)
    return G


def _ring(n):
    return _fabric(n, {(i, (i + 1) % n): 1 for i in range(n)})


def _complete(n):
    return _fabric(n, {(a, b): 1 for a, b in itertools.combinations(range(n), 2)})


def _star(n):
    return _fabric(n, {}, 1, [(g, 0, 1) for g in range(n)])


def _busbw(G, collective, **kw):
    return bound(G, collective, BIG, nccl=False, **kw).bound_busbw


# ------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("n", [3, 4, 6])
def test_ring_closed_forms(n):
    # Two directions of a ring: broadcast and all_gather busbw are both 2 links.
    G = _ring(n)
    for collective in ("all_gather", "reduce_scatter", "broadcast", "reduce", "all_reduce"):
        assert _busbw(G, collective) == pytest.approx(2 * B, rel=1e-9)
    b = bound(G, "all_gather", BIG, nccl=False)
    assert b.cut.shards == n - 1 and b.achievable


@pytest.mark.parametrize("n", [3, 5])
def test_complete_graph_closed_forms(n):
    G = _complete(n)
    for collective in ("all_gather", "broadcast", "all_reduce", "alltoall"):
        assert _busbw(G, collective) == pytest.approx((n - 1) * B, rel=1e-6)
    # sendrecv: each rank to the next over its direct link (1 hop) and the n(n-2) other arcs
    # (2-hop relays): n lambda <= n B + n(n-2) B / 2, so lambda = n B / 2.
    assert _busbw(G, "sendrecv") == pytest.approx(n * B / 2, rel=1e-6)


@pytest.mark.parametrize("n", [2, 4, 7])
def test_single_switch_closed_forms(n):
    G = _star(n)
    for collective in ("all_gather", "reduce_scatter", "broadcast", "all_reduce", "alltoall"):
        assert _busbw(G, collective) == pytest.approx(B, rel=1e-6)
    b = bound(G, "all_reduce", BIG, nccl=False)
    # Any schedule (in-switch reduction allowed): M each way per GPU link.
    assert b.upper_busbw == pytest.approx(2 * (n - 1) / n * B * (1 if n > 1 else 0), rel=1e-9)
    # No switch: relay "none" leaves the GPUs unconnected.
    assert _busbw(G, "all_gather", relay="none") == 0.0


def test_dgx_known_values():
    # DGX-1V NVLink: every GPU has 6 x 25 GB/s; the binding all_gather cut is one GPU's inbound.
    b = bound(topo.dgx1v(), "all_gather", BIG, edge_kinds=["nvlink"], nccl=False)
    assert b.bound_busbw == pytest.approx(150e9)
    # The 4-GPU quad {0,1,2,3}: 3+1+... the quad has 8 internal links; cut = 100 GB/s per GPU in.
    q = bound(topo.dgx1v(), "broadcast", BIG, [0, 1, 2, 3], edge_kinds=["nvlink"], nccl=False)
    assert q.bound_busbw == pytest.approx(100e9)
    d = bound(topo.dgx2(), "all_reduce", BIG, edge_kinds=["nvlink"], nccl=False)
    assert d.bound_busbw == pytest.approx(150e9)
    assert d.upper_busbw == pytest.approx(2 * 15 / 16 * 150e9)
    # Across the two boards only the trunks (6 x 200 GB/s) join 8 + 8 GPUs: not binding.
    assert bound(topo.dgx2(), "all_gather", BIG, [0, 8], edge_kinds=["nvlink"], nccl=False).bound_busbw \
        == pytest.approx(150e9)


# -------------------------------------------------------------------------- brute force
@st.composite
def small_fabrics(draw):
    n = draw(st.integers(2, 4))
    switches = draw(st.integers(0, 2))
    pairs = {}
    for a, b in itertools.combinations(range(n), 2):
        links = draw(st.integers(0, 2))
        if links:
            pairs[a, b] = links
    switch_links = [(g, s, links) for g in range(n) for s in range(switches)
                    for links in [draw(st.integers(0, 2))] if links]
    try:
        return _fabric(n, pairs, switches, switch_links)
    except topo.TopologyError:  # GPUs not connected: not a fabric
        assume(False)


def _brute(G, members, collective, root=None):
    H = capacity_graph(G, members)
    nodes = list(H)
    best = math.inf
    for r in range(1, len(nodes)):
        for A in itertools.combinations(nodes, r):
            A = set(A)
            inside = A & set(members)
            if not inside or inside == set(members):
                continue
            out = sum(c for u in A for v, c in H.succ[u].items() if v not in A
                      for c in [c["capacity"]])
            if collective == "all_gather":
                best = min(best, out / len(inside))
            elif root in A:
                best = min(best, out)
    return best


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_fabrics())
def test_bounds_equal_brute_force_over_all_cuts(G):
    members = topo.gpus(G)
    n = len(members)
    x = _brute(G, members, "all_gather")
    assert _busbw(G, "all_gather") == pytest.approx((n - 1) * x, rel=1e-9, abs=1e-3)
    x = _brute(G, members, "broadcast", root=members[0])
    assert _busbw(G, "broadcast") == pytest.approx(x, rel=1e-9, abs=1e-3)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_fabrics(), st.sampled_from(["all_gather", "broadcast", "reduce_scatter", "reduce"]))
def test_packing_fits_capacities_and_meets_bound(G, collective):
    b = bound(G, collective, BIG, nccl=False, trees=True)
    packing = b.packings[0]
    for edge, load, capacity in packing.loads:
        assert load <= capacity * (1 + 1e-9), edge
        assert capacity == G.edges[edge]["bandwidth"]
    rate = b.rates[0][1]
    assert b.achievable  # symmetric links: every relay is Eulerian
    assert packing.rate >= 0.99 * rate - 1e-3
    assert packing.rate <= rate * (1 + 1e-6) + 1e-3
    # Each root's trees carry the rate; every tree spans the set.
    roots = {t.root for t in packing.trees}
    for r in roots:
        assert sum(t.rate for t in packing.trees if t.root == r) == pytest.approx(packing.rate, rel=1e-6)
    for t in packing.trees:
        assert {a for a, _, _ in t.arcs} | {c for _, c, _ in t.arcs} == set(b.gpus)
        for a, c, path in t.arcs:
            assert all(G.has_edge(u, v) for u, v in zip(path, path[1:]))


@settings(max_examples=30, deadline=None)
@given(small_fabrics(), st.data())
def test_flow_network_matches_networkx(G, data):
    H = capacity_graph(G, topo.gpus(G), relay="all")
    s, t = data.draw(st.permutations(topo.gpus(G)))[:2]
    value, side = FlowNetwork(H).min_cut(s, t)
    assert value == pytest.approx(nx.maximum_flow_value(H, s, t), rel=1e-9, abs=1e-3)
    assert s in side and t not in side
    assert sum(c for u in side for v, c in H.succ[u].items() if v not in side
               for c in [c["capacity"]]) == pytest.approx(value, rel=1e-9, abs=1e-3)


def test_packing_on_dgx1v_meets_the_bound():
    G = topo.dgx1v()
    b = bound(G, "all_reduce", BIG, [0, 1, 5, 6, 7], trees=True, nccl=False)
    assert [p.collective for p in b.packings] == ["reduce_scatter", "all_gather"]
    for packing, (_, rate) in zip(b.packings, b.rates[::-1]):
        assert packing.rate == pytest.approx(rate, rel=0.01)
        assert packing.max_utilisation <= 1 + 1e-9
    assert "packing" in bound_summary(b)


# --------------------------------------------------------------------------- invariants
@pytest.mark.parametrize("collective, sizes", [("all_reduce", range(2, 9)), ("all_gather", (3, 5)),
                                                ("broadcast", (2, 6))])
def test_bound_never_below_nccl_on_every_dgx1v_subset(collective, sizes):
    G = topo.dgx1v()
    bounds = {r.gpus: r.bound_busbw for r in subset_bounds(G, collective)}
    assert len(bounds) == 247  # every set of 2 to 8 GPUs
    for k in sizes:
        for r in subsets(G, collective, BIG, k):
            assert bounds[r.gpus] >= r.busbw, r.gpus


def test_bound_never_below_nccl_alltoall_samples():
    G = topo.dgx1v()
    for gpus in ([0, 1], [0, 5], [0, 1, 2, 3], [0, 2, 5, 7], None):
        b = bound(G, "alltoall", BIG, gpus)
        assert b.bound_busbw >= b.nccl_busbw
        assert 0 < b.ratio <= 1


@settings(max_examples=15, deadline=None)
@given(st.sets(st.integers(0, 7), min_size=2, max_size=8),
       st.sampled_from(list(itertools.combinations(range(8), 2))),
       st.sampled_from(["all_gather", "broadcast", "all_reduce"]))
def test_adding_a_link_never_lowers_the_bound(gpus, pair, collective):
    G = topo.dgx1v()
    a, b = pair
    H = topo.add_links(G, f"gpu{a}", f"gpu{b}", "nvlink2")
    before = bound(G, collective, BIG, sorted(gpus), nccl=False).bound_busbw
    after = bound(H, collective, BIG, sorted(gpus), nccl=False).bound_busbw
    assert after >= before * (1 - 1e-12)


def _relabelled(G, perm):
    """The same fabric with GPU g renamed to GPU perm[g] (node id and index)."""
    mapping = {f"gpu{g}": f"gpu{perm[g]}" for g in range(len(perm))}
    H = nx.relabel_nodes(G, mapping, copy=True)
    for g in range(len(perm)):
        H.nodes[f"gpu{perm[g]}"]["index"] = perm[g]
    return H


@settings(max_examples=10, deadline=None)
@given(st.permutations(range(8)), st.sampled_from(["all_gather", "reduce_scatter", "alltoall"]))
def test_relabelling_gpus_never_changes_the_bound(perm, collective):
    G = topo.dgx1v()
    H = _relabelled(G, perm)
    topo.validate(H)
    for gpus in ([0, 1, 5], [2, 3, 4, 6]):
        mapped = [perm[g] for g in gpus]
        assert bound(H, collective, BIG, mapped, nccl=False).bound_busbw == pytest.approx(
            bound(G, collective, BIG, gpus, nccl=False).bound_busbw, rel=1e-9)


def test_subset_bounds_symmetry_matches_direct_bounds():
    G = topo.dgx2()
    results = subset_bounds(G, "all_gather", 2, edge_kinds=["nvlink"])
    assert len(results) == 120
    assert any(r.representative != r.gpus for r in results)
    for r in results[::17]:
        assert r.bound_busbw == pytest.approx(
            bound(G, "all_gather", BIG, list(r.gpus), edge_kinds=["nvlink"], nccl=False).bound_busbw)
    m = pairwise_bounds(topo.dgx1v(), "broadcast", edge_kinds=["nvlink"], relay="all")
    assert np.isnan(m[0, 0]) and m[0, 3] == m[3, 0]
    assert m[0, 3] == pytest.approx(150e9)  # relays through the other GPUs: all 6 links


def test_relay_options_order_the_bounds():
    G = topo.dgx1v()
    values = [_busbw(G, "all_gather", gpus=[0, 5], relay=r) for r in ("none", "switches", "all")]
    assert values[0] == 0.0 < values[1] < values[2]
    b = bound(G, "all_gather", BIG, [0, 5], relay="none")
    assert b.ratio is None and math.isinf(b.time)
    assert json.loads(json.dumps(bound_json(b)))["time_us"] is None


# ------------------------------------------------------------------------ result object
def test_bound_result_json_format_explain():
    b = bound(topo.dgx1v(), "all_reduce", "1G", [0, 1, 2, 3])
    data = json.loads(json.dumps(bound_json(b)))
    for key in ("bound_busbw_gbps", "nccl_busbw_gbps", "ratio", "cut"):
        assert key in data
    assert set(data["cut"]) >= {"links", "gpus", "capacity_gbps"}
    assert data["ratio"] == pytest.approx(data["nccl_busbw_gbps"] / data["bound_busbw_gbps"])
    assert data["nvls"].startswith("not applicable")
    assert data["cut"]["capacity_gbps"] == pytest.approx(
        sum(topo.dgx1v().edges[u, v]["bandwidth"] for u, v in data["cut"]["links"]) / 1e9)
    text = explain(b)
    assert "ForestColl" in text and "NCCL's working" in text and "gap:" in text
    assert "bound busbw" in bound_summary(b)
    assert nvls_applicable(topo.dgx2()) == (False, Why(Cause.NVLS_NO_SHARP, names=("NVSwitch (first generation)",)))
    assert nvls_applicable(topo.dgx1v()) == (False, Why(Cause.NVLS_NO_NVSWITCH))


def test_cluster_bound():
    G = topo.build("2xdgx1v")
    b = bound(G, "all_gather", BIG, [0, 8], nccl=False)
    # The two hosts meet only through one EDR NIC each way of the binding PCIe/NIC path.
    assert 0 < b.bound_busbw <= LINKS["ib_edr"].bandwidth * 4 + 1
    assert any("net." in str(u) or "net." in str(v) for u, v in b.cut.links) or b.cut.links


# --------------------------------------------------------------------------- error paths
def test_errors():
    G = topo.dgx1v()
    with pytest.raises(RelayError, match="unknown relay"):
        bound(G, "all_gather", BIG, relay="nvb")
    with pytest.raises(RelayError, match="edge_kinds"):
        bound(G, "all_gather", BIG, edge_kinds=["copper"])
    with pytest.raises(topo.DgxTopoError, match="unknown collective"):
        bound(G, "allgather", BIG)
    with pytest.raises(BoundError, match="at least 2 GPUs"):
        bound(G, "all_gather", BIG, [3])
    with pytest.raises(BoundError, match="root must be"):
        bound(G, "broadcast", BIG, [0, 1], root=5)
    with pytest.raises(BoundError, match="root must be"):
        bound(G, "broadcast", BIG, [0, 1], root=True)
    with pytest.raises(BoundError, match="no root"):
        bound(G, "all_gather", BIG, root=0)
    with pytest.raises(BoundError, match="one size"):
        bound(G, "all_gather", [1, 2])
    with pytest.raises(topo.SizeError):
        bound(G, "all_gather", -1)
    with pytest.raises(BoundError, match="trees=True"):
        bound(G, "alltoall", BIG, trees=True)
    with pytest.raises(topo.GpuSelectionError):
        bound(G, "all_gather", BIG, [0, 9])
    with pytest.raises(BoundError, match="k must be"):
        subset_bounds(G, "all_gather", 1)
    with pytest.raises(BoundError, match="k must be"):
        subset_bounds(G, "all_gather", True)
    with pytest.raises(PackingError, match="tree packings exist"):
        pack_trees(G, "alltoall")
    with pytest.raises(PackingError, match="at least 2"):
        pack_trees(G, "broadcast", [1])
    with pytest.raises(PackingError, match="root must be"):
        pack_trees(G, "broadcast", [0, 1], root=4)
    with pytest.raises(PackingError, match="no root"):
        pack_trees(G, "all_gather", [0, 1], root=0)
    with pytest.raises(topo.TopologyError):
        bound(nx.DiGraph(), "all_gather", BIG)


def test_lp_too_large_is_refused(monkeypatch):
    monkeypatch.setattr(bounds_module, "MAX_LP_VARIABLES", 100)
    with pytest.raises(BoundTooLargeError, match="MAX_LP_VARIABLES = 100"):
        bound(topo.dgx1v(), "alltoall", BIG, nccl=False)


# ------------------------------------------------------------------------------- figures
def test_figures():
    from models.present.bounds_plot import bound_vs_nccl_figure, packing_figure
    G = _complete(4)
    b = bound(G, "broadcast", BIG, trees=True, nccl=False)
    fig = packing_figure(G, b)
    assert "tree packing" in fig.layout.title.text
    with pytest.raises(topo.DgxTopoError, match="trees=True"):
        packing_figure(G, bound(G, "broadcast", BIG, nccl=False))
    with pytest.raises(topo.DgxTopoError, match="TreePacking"):
        packing_figure(G, 3)
    fig = bound_vs_nccl_figure(_star(4), "all_gather")
    assert len(fig.data) == 3 and len(fig.data[0].x) == 11  # 6 + 4 + 1 sets
    ratios = [y for y in fig.data[2].y]
    assert all(0 < y <= 100 for y in ratios)


def test_nvls_applies_where_the_switches_reduce_and_the_gpus_are_hopper():
    assert nvls_applicable(topo.build("dgxh100"))[0] is True
    assert nvls_applicable(topo.build("dgxb200"))[0] is True
    applicable, why = nvls_applicable(topo.build("dgxa100"))
    assert applicable is False and "cannot reduce in the switch" in nvls_bound_text(why)
