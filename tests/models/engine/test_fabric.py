"""The prepared fabric: one object owns the frozen graph, the NCCL release and view, the
symmetry and every cache (models/engine/fabric.py)."""

from __future__ import annotations

import copy
import pickle

import networkx as nx
import numpy as np
import pytest

import models
import topo
from models.engine.fabric import FrozenFabricError, PreparedFabric, prepare
from models.predict.collectives import Estimator
from models.studies.bounds import bound, subset_bounds
from models.studies.sweep import sweep
from models.present.json_shapes import sweep_json

GiB = 2**30


@pytest.fixture
def prepared():
    G = topo.dgx1v()
    return G, PreparedFabric(G)


@pytest.mark.parametrize("edit", [
    lambda G: G.nodes["gpu0"].__setitem__("memory_bandwidth", 1.0),
    lambda G: G.edges["gpu0", "gpu3"].__setitem__("bandwidth", 1.0),
    lambda G: G.adj["gpu0"]["gpu3"].update(links=1),
    lambda G: G.graph.__setitem__("name", "x"),
    lambda G: G.nodes["gpu0"].pop("model"),
    lambda G: G.add_node("gpu99", kind="gpu"),
    lambda G: G.add_edge("gpu0", "gpu5", kind="nvlink"),
    lambda G: G.remove_node("gpu0"),
    lambda G: G.remove_edge("gpu0", "gpu3"),
    lambda G: G.clear(),
], ids=["node attribute", "edge attribute", "edge update", "graph attribute", "pop", "add node",
        "add edge", "remove node", "remove edge", "clear"])
def test_editing_a_prepared_graph_raises_the_typed_error(prepared, edit):
    G, _ = prepared
    with pytest.raises(FrozenFabricError, match=r"prepared .* read-only: edit a copy \(G.copy\(\) or a "
                                                 r"topo.transform function\) and prepare that"):
        edit(G)
    # the typed error is both dgx-topo's and networkx's
    assert issubclass(FrozenFabricError, topo.DgxTopoError) and issubclass(FrozenFabricError, nx.NetworkXError)
    assert nx.is_frozen(G)


@pytest.mark.parametrize("make_copy", [lambda G: G.copy(), nx.DiGraph, copy.deepcopy,
                                       lambda G: topo.transform.scale_links(G, "gpu0", "gpu3", 1.0)],
                         ids=["copy", "DiGraph", "deepcopy", "transform"])
def test_copies_of_a_prepared_graph_are_editable(prepared, make_copy):
    G, _ = prepared
    H = make_copy(G)
    H.edges["gpu0", "gpu3"]["bandwidth"] = 1.0
    H.nodes["gpu0"]["memory_bandwidth"] = 1.0
    H.graph["name"] = "edited"
    H.add_node("extra", kind="cpu")
    assert G.edges["gpu0", "gpu3"]["bandwidth"] != 1.0 and not nx.is_frozen(H)


def test_a_pickled_prepared_graph_stays_frozen(prepared):
    G, _ = prepared
    H = pickle.loads(pickle.dumps(G))
    with pytest.raises(FrozenFabricError):
        H.edges["gpu0", "gpu3"]["bandwidth"] = 1.0
    assert topo.to_json(H) == topo.to_json(G)


@pytest.mark.parametrize("call", [
    lambda G: models.estimate(G, "all_reduce", GiB),
    lambda G: models.pairwise(G, "all_reduce", GiB),
    lambda G: models.subsets(G, "all_gather", GiB, 3),
    lambda G: models.p2p_matrix(G),
    lambda G: models.p2p_report(G),
    lambda G: bound(G, "all_reduce", GiB),
    lambda G: subset_bounds(G, "all_gather", 2),
    lambda G: sweep(G, "all_reduce", GiB, fail_each="nic", executor="inline"),
    lambda G: models.plan("bert-large", G, tp=1, pp=1, dp=8, zero=0, recompute="none"),  # one layout: prepared as any
], ids=["estimate", "pairwise", "subsets", "p2p_matrix", "p2p_report", "bound", "subset_bounds",
        "sweep", "plan"])
def test_a_one_shot_call_leaves_the_callers_graph_editable(call):
    G = topo.dgx1v()
    call(G)
    assert not nx.is_frozen(G)
    G.edges["gpu0", "gpu3"]["bandwidth"] = 1.0  # no error


def test_results_are_identical_with_and_without_preparing():
    G = topo.dgx1v()
    fabric = PreparedFabric(topo.dgx1v())
    for plain, fast in [
        (models.estimate(G, "all_reduce", [2**10, GiB], [0, 1, 2, 5]).time,
         models.estimate(fabric, "all_reduce", [2**10, GiB], [0, 1, 2, 5]).time),
        (models.pairwise(G, "all_reduce", GiB), models.pairwise(fabric, "all_reduce", GiB)),
        ([r.busbw for r in models.subsets(G, "all_reduce", GiB, 3)],
         [r.busbw for r in models.subsets(fabric, "all_reduce", GiB, 3)]),
        (models.p2p_matrix(G), models.p2p_matrix(fabric)),
        ([b.bound_busbw for b in subset_bounds(G, "all_gather", 3)],
         [b.bound_busbw for b in subset_bounds(fabric, "all_gather", 3)]),
        (bound(G, "all_reduce", GiB).nccl_busbw, bound(fabric, "all_reduce", GiB).nccl_busbw),
    ]:
        np.testing.assert_array_equal(np.asarray(plain, dtype=float), np.asarray(fast, dtype=float))
    assert sweep_json(sweep(G, "all_reduce", GiB, fail_each="nic", executor="inline")) == \
        sweep_json(sweep(fabric, "all_reduce", GiB, fail_each="nic", executor="inline"))


def test_a_transformed_graph_prepared_anew_gives_the_transformed_answer():
    fabric = PreparedFabric(topo.dgx1v())
    before = float(models.estimate(fabric, "all_reduce", GiB, [0, 3]).busbw)
    halved = PreparedFabric(topo.transform.remove_links(fabric.G, "gpu0", "gpu3", 1))
    after = float(models.estimate(halved, "all_reduce", GiB, [0, 3]).busbw)
    assert after == pytest.approx(before / 2, rel=0.05)
    assert float(models.estimate(fabric, "all_reduce", GiB, [0, 3]).busbw) == before


@pytest.mark.own_searches  # counts its memo's entries
def test_the_fabric_owns_the_caches_and_carries_the_release():
    fabric = PreparedFabric(topo.build("2xdgx1v"), nccl="2.18")
    assert fabric.profile.version.startswith("2.18") and len(fabric.searches) == 0
    models.estimate(fabric, "all_reduce", GiB)
    assert len(fabric.searches) > 0 and fabric.nccl.host_searches and fabric.nccl.network_loads
    assert Estimator(fabric).fabric is fabric and prepare(fabric) is fabric
    assert prepare(fabric, nccl=fabric.profile) is fabric


def test_another_release_for_a_prepared_fabric_is_refused_naming_the_fix():
    fabric = PreparedFabric(topo.dgx1v(), nccl="2.18")
    with pytest.raises(topo.DgxTopoError, match=r"prepared for NCCL 2\.18.*received profile '2\.12.*"
                                                 r"models.PreparedFabric\(G.copy\(\), nccl='2\.12.*or omit the profile"):
        models.estimate(fabric, "all_reduce", GiB, profile="2.12")
    with pytest.raises(topo.DgxTopoError, match="expected a graph, received a PreparedFabric"):
        PreparedFabric(fabric)
    with pytest.raises(topo.DgxTopoError, match="expected a fabric .* received list"):
        prepare([1, 2])


def test_an_estimator_prepares_and_freezes_its_graph():
    G = topo.dgx1v()
    estimator = Estimator(G, profile="2.12")
    assert estimator.fabric.G is G and nx.is_frozen(G) and estimator.fabric.profile.version.startswith("2.12")
    with pytest.raises(FrozenFabricError):
        G.edges["gpu0", "gpu3"]["bandwidth"] = 1.0


def test_freezing_costs_less_than_copying_the_graph():
    """Counted, not timed: freezing makes one dict per node and edge, a copy one per node and
    edge plus the adjacency of both directions."""
    G = topo.build("4xdgx2")
    before = {id(d) for _, _, d in G.edges(data=True)}
    PreparedFabric(G)
    after = {id(d) for _, _, d in G.edges(data=True)}
    assert len(after) == G.number_of_edges() and not before & after
    assert all(G.adj[u][v] is G.pred[v][u] for u, v in G.edges)  # one shared dict per edge, as before


def test_a_graph_a_prepared_fabric_froze_is_not_validated_again(monkeypatch):
    """Validated once per content: a frozen graph refuses every edit, so preparing it again (for
    another release, or a one-shot call given ``fabric.G``) reads no attribute of it; a copy,
    or the frozen graph with its graph attributes rebound, is validated."""
    import models.engine.fabric as fabric_module

    G = topo.dgx1v()
    first = PreparedFabric(G)
    calls = []
    validated_gpus = fabric_module.validated_gpus
    monkeypatch.setattr(fabric_module, "validated_gpus", lambda H: calls.append(H) or validated_gpus(H))
    again = PreparedFabric(G, nccl="2.12")
    assert again.ids == first.ids and models.estimate(G, "all_reduce", GiB).busbw > 0
    assert calls == [] and fabric_module.graph_of(G) is G
    assert PreparedFabric(pickle.loads(pickle.dumps(G))).ids == first.ids and calls == []  # the same content
    H = G.copy()
    PreparedFabric(H)
    assert calls == [H]
    G.graph = {**G.graph, "name": "\x1b[2J"}  # rebinding is not refused: validated again
    with pytest.raises(topo.TopologyError, match="graph attribute 'name'"):
        PreparedFabric(G)


def test_freezing_leaves_the_garbage_collector_as_it_was():
    import gc

    enabled = gc.isenabled()
    try:
        for state in (True, False):
            (gc.enable if state else gc.disable)()
            PreparedFabric(topo.dgx1v())
            assert gc.isenabled() is state
    finally:
        (gc.enable if enabled else gc.disable)()
