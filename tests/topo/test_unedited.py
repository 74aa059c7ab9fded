"""A built cluster carries its validation until it is edited (topo.unedited)."""

import copy
import pickle

import networkx as nx
import pytest

import models
import models.engine.fabric as fabric_module
import topo
from models.engine.fabric import PreparedFabric
from topo.unedited import seal, unedited, watched_dict_class

GiB = 2**30
EDGE = ("h0.gpu0", "h0.gpu3")


@pytest.fixture
def built():
    return topo.build("2xdgx1v")


@pytest.mark.parametrize("edit", [
    lambda G: G.nodes["h0.gpu0"].__setitem__("memory_bandwidth", 1.0),
    lambda G: G.edges[EDGE].__setitem__("bandwidth", 1.0),
    lambda G: G.adj[EDGE[0]][EDGE[1]].update(links=1),
    lambda G: G[EDGE[0]][EDGE[1]].pop("latency"),
    lambda G: G.edges[EDGE].__delitem__("links"),
    lambda G: G.edges[EDGE].setdefault("host_bridge", 7),
    lambda G: G.edges[EDGE].popitem(),
    lambda G: G.edges[EDGE].clear(),
    lambda G: G.edges[EDGE].__ior__({"links": 2}),
    lambda G: G.graph.__setitem__("name", "x"),
    lambda G: nx.set_edge_attributes(G, {EDGE: 1.0}, "bandwidth"),
    lambda G: nx.set_node_attributes(G, {"h0.gpu0": 99}, "index"),
    lambda G: G.add_node("extra", kind="cpu"),
    lambda G: G.add_node("h0.gpu0"),
    lambda G: G.add_edge("h0.gpu0", "h1.gpu0", kind="nvlink"),
    lambda G: G.remove_edge(*EDGE),
    lambda G: G.remove_node("h0.gpu0"),
    lambda G: nx.relabel_nodes(G, {"h0.gpu0": "x"}, copy=False),
    lambda G: G.clear_edges(),
    lambda G: G.clear(),
], ids=["node attribute", "edge attribute", "update", "pop", "del", "setdefault", "popitem",
        "clear attributes", "|=", "graph attribute", "set_edge_attributes", "set_node_attributes",
        "add node", "add existing node", "add edge", "remove edge", "remove node", "relabel in place",
        "clear edges", "clear"])
def test_every_edit_ends_the_record(built, edit):
    assert unedited(built)
    edit(built)
    assert not unedited(built)


@pytest.mark.parametrize("make", [lambda G: G.copy(), nx.DiGraph, copy.deepcopy, copy.copy,
                                  lambda G: pickle.loads(pickle.dumps(G)),
                                  lambda G: topo.transform.scale_links(G, *EDGE, 0.5)],
                         ids=["copy", "DiGraph", "deepcopy", "copy.copy", "pickle", "transform"])
def test_copies_are_plain_graphs(built, make):
    H = make(built)
    assert not unedited(H) or H._adj is built._adj  # a shallow copy shares every dict: the same graph
    if H._adj is not built._adj:
        assert {type(d) for d in (H.graph, H._node, *H._node.values(), *H._adj.values())} == {dict}
        assert {type(d) for _, _, d in H.edges(data=True)} == {dict}
    assert unedited(built)


def test_another_graph_over_the_same_dicts_is_not_the_sealed_one(built):
    assert not unedited(built.reverse(copy=False)) and not unedited(built.subgraph(["h0.gpu0", "h0.gpu3"]))
    built.graph = dict(built.graph)
    assert not unedited(built)


def test_reading_leaves_the_record(built):
    models.estimate(built, "all_reduce", GiB)
    topo.to_json(built), list(built.edges(data=True)), dict(built.nodes["h0.gpu0"]), built.copy()
    assert unedited(built) and unedited(topo.build("4xdgxh100:rail_only"))


def test_a_prepared_fabric_validates_a_built_cluster_only_once_edited(built, monkeypatch):
    calls = []
    validated_gpus = fabric_module.validated_gpus
    monkeypatch.setattr(fabric_module, "validated_gpus", lambda G: calls.append(G) or validated_gpus(G))
    unchanged = models.estimate(built, "all_reduce", GiB)
    assert calls == []
    assert models.estimate(built.copy(), "all_reduce", GiB).busbw == unchanged.busbw and len(calls) == 1
    built.edges[EDGE]["bandwidth"] = -1.0
    with pytest.raises(topo.TopologyError, match=r"edge \('h0.gpu0', 'h0.gpu3'\): bandwidth must be positive"):
        models.estimate(built, "all_reduce", GiB)
    PreparedFabric(topo.build("2xdgx1v"))  # frozen: its record ends, the frozen graph's validation holds
    assert len(calls) == 2


def test_sealing_refuses_a_graph_not_watched_throughout():
    watched = watched_dict_class()
    G = nx.DiGraph()
    G.add_edge("a", "b")
    with pytest.raises(ValueError, match="every dict"):
        seal(G, watched)


@pytest.mark.parametrize("name", sorted(topo.SYSTEMS))
def test_a_sealed_builder_graph_keeps_every_order_of_the_graph_it_built(name, monkeypatch):
    """The builders return topo.unedited.sealed of the plain graph they build: the same nodes,
    successors and predecessors in the same orders, the same attributes (models break ties by
    the order they iterate a graph in)."""
    built = topo.SYSTEMS[name]()
    monkeypatch.setattr(topo.dgx, "sealed", lambda G: G)
    monkeypatch.setattr(topo.dgx_nvswitch, "sealed", lambda G: G)
    plain = topo.SYSTEMS[name]()
    assert unedited(built) and not unedited(plain)
    assert built.graph == plain.graph and list(built.nodes(data=True)) == list(plain.nodes(data=True))
    assert [(v, list(built.pred[v].items())) for v in built] == [(v, list(plain.pred[v].items())) for v in plain]
    assert [(u, list(built.adj[u].items())) for u in built] == [(u, list(plain.adj[u].items())) for u in plain]
    assert all(built.adj[u][v] is built.pred[v][u] for u, v in built.edges)
