"""What-if fabrics: new validated graphs, inputs untouched, round trips, typed errors."""

from __future__ import annotations

import math

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topo
from topo import TopologyError, TransformError
from topo.specs import LINKS
from topo.transform import add_links, remove_links, remove_nodes, scale_kind, scale_links

GB = 1e9
BASE = {name: topo.build(name) for name in topo.SYSTEMS}


def snapshot(G):
    """Every attribute of the graph, its nodes and edges, in the graph's orders (so a change of
    order shows too), in fresh dicts and lists."""
    return (dict(G.graph), [(n, dict(d)) for n, d in G.nodes(data=True)],
            [(u, v, dict(d)) for u, v, d in G.edges(data=True)])


def same_graph(A, B) -> bool:
    """The same attributes, nodes and edges, in any order (a link removed and added back comes
    last in its node's adjacency)."""
    def content(G):
        return (dict(G.graph), sorted((n, sorted(d.items())) for n, d in G.nodes(data=True)),
                sorted((u, v, sorted(d.items())) for u, v, d in G.edges(data=True)))
    return content(A) == content(B)


def test_scale_links_both_ways_and_one_way():
    G = topo.dgx1v()
    H = scale_links(G, "gpu0", "gpu3", 0.5)
    assert H.edges["gpu0", "gpu3"]["bandwidth"] == H.edges["gpu3", "gpu0"]["bandwidth"] == 25 * GB
    assert H.edges["gpu0", "gpu3"]["links"] == 2 and G.edges["gpu0", "gpu3"]["bandwidth"] == 50 * GB
    one = scale_links(G, "gpu0", "gpu3", 0.5, both_directions=False)
    assert (one.edges["gpu0", "gpu3"]["bandwidth"], one.edges["gpu3", "gpu0"]["bandwidth"]) == (25 * GB, 50 * GB)


def test_scale_kind_by_kind_and_by_link():
    G = topo.dgx2()
    H = scale_kind(G, 2, kind="nvlink")
    for u, v, d in G.edges(data=True):
        factor = 2 if d["kind"] == "nvlink" else 1
        assert H.edges[u, v]["bandwidth"] == d["bandwidth"] * factor
    P = scale_kind(G, 0.25, link="pcie3_x16")
    assert P.edges["pcie4", "gpu0"]["bandwidth"] == LINKS["pcie3_x16"].bandwidth / 4
    assert P.edges["cpu0", "cpu1"]["bandwidth"] == G.edges["cpu0", "cpu1"]["bandwidth"]


def test_remove_then_add_links_is_the_same_graph():
    G = topo.dgx1v()
    H = remove_links(G, "gpu0", "gpu3")
    assert (H.edges["gpu0", "gpu3"]["links"], H.edges["gpu0", "gpu3"]["bandwidth"]) == (1, 25 * GB)
    assert same_graph(add_links(H, "gpu0", "gpu3", "nvlink2"), G)
    gone = remove_links(G, "gpu0", "gpu1")
    assert not gone.has_edge("gpu0", "gpu1") and not gone.has_edge("gpu1", "gpu0")
    assert same_graph(add_links(gone, "gpu0", "gpu1", "nvlink2"), G)


def test_remove_links_of_a_scaled_edge_is_proportional():
    H = remove_links(scale_links(topo.dgx1v(), "gpu0", "gpu3", 0.5), "gpu0", "gpu3")
    assert H.edges["gpu0", "gpu3"]["bandwidth"] == 12.5 * GB


def test_add_links_makes_a_new_edge_from_the_catalogue():
    H = add_links(topo.dgx1v(), "gpu0", "gpu5", "nvlink2", 3)
    data = H.edges["gpu5", "gpu0"]
    assert (data["kind"], data["link"], data["links"], data["bandwidth"], data["latency"]) == \
        ("nvlink", "nvlink2", 3, 75 * GB, LINKS["nvlink2"].latency)


def test_remove_nodes():
    G = topo.dgx2()
    H = remove_nodes(G, ["nvswitch0", "nvswitch6"])
    assert "nvswitch0" not in H and H.number_of_nodes() == G.number_of_nodes() - 2
    assert "mlx5_4" not in remove_nodes(G, "mlx5_4")


@pytest.mark.parametrize("call, error, message", [
    (lambda G: scale_links(G, "gpu0", "gpu9", 2), TransformError, r"'gpu9' is not a node of DGX-1V"),
    (lambda G: scale_links(G, "gpu0", "gpu5", 2), TransformError, r"no edge \('gpu0', 'gpu5'\)"),
    (lambda G: scale_links(G, "gpu0", "gpu3", 0), TransformError, "positive finite number, received 0"),
    (lambda G: scale_links(G, "gpu0", "gpu3", -1), TransformError, "positive finite"),
    (lambda G: scale_links(G, "gpu0", "gpu3", math.nan), TransformError, "positive finite"),
    (lambda G: scale_links(G, "gpu0", "gpu3", math.inf), TransformError, "positive finite"),
    (lambda G: scale_links(G, "gpu0", "gpu3", True), TransformError, "positive finite"),
    (lambda G: scale_links(G, "gpu0", "gpu3", "2"), TransformError, "positive finite"),
    (lambda G: scale_links(G, "gpu0", "gpu3", 1e6), TopologyError, "at most 1e\\+13 B/s"),
    (lambda G: scale_links(G, ["gpu0"], "gpu3", 2), TransformError, "not a node"),
    (lambda G: scale_kind(G, 2), TransformError, "needs kind= .* or link="),
    (lambda G: scale_kind(G, 2, kind="ethernet"), TransformError, "unknown edge kind 'ethernet'"),
    (lambda G: scale_kind(G, 2, link="nvlink9"), TransformError, "unknown link technology 'nvlink9'"),
    (lambda G: scale_kind(G, 2, kind="network"), TransformError, "no edge of kind 'network' in DGX-1V"),
    (lambda G: scale_kind(G, 2, kind="pcie", link="nvlink2"), TransformError, "no edge of kind 'pcie' and link"),
    (lambda G: remove_links(G, "gpu0", "gpu3", 3), TransformError, "has 2 links: cannot remove 3"),
    (lambda G: remove_links(G, "gpu0", "gpu3", 0), TransformError, "whole number >= 1, received 0"),
    (lambda G: remove_links(G, "gpu0", "gpu3", 1.0), TransformError, "whole number >= 1"),
    (lambda G: remove_links(G, "gpu0", "gpu1", both_directions=False), TransformError, "one-way edge"),
    (lambda G: remove_links(G, "pcie0", "gpu0"), TopologyError, "'gpu0' reaches no CPU over PCIe"),
    (lambda G: add_links(G, "gpu0", "gpu0", "nvlink2"), TransformError, "to itself"),
    (lambda G: add_links(G, "gpu0", "gpu5", "nvlink2", latency=1e-7), TransformError,
     "sets latency from the link technology 'nvlink2'"),
    (lambda G: add_links(G, "gpu0", "gpu3", "nvlink1"), TransformError, "is nvlink2: cannot add nvlink1"),
    (lambda G: add_links(G, "gpu0", "gpu5", "ethernet"), TransformError, "unknown link technology"),
    (lambda G: add_links(G, "gpu0", "gpu5", "nvlink2", -1), TransformError, "whole number >= 1"),
    (lambda G: remove_nodes(G, ["gpu0", "gpu99"]), TransformError, "'gpu99' is not a node"),
    (lambda G: remove_nodes(G, []), TransformError, "at least one node"),
    (lambda G: remove_nodes(G, ["pcie0"]), TopologyError, "reaches no CPU over PCIe"),
    (lambda G: remove_nodes(G, [f"gpu{i}" for i in range(8)]), TopologyError, "at least one GPU"),
])
def test_errors(call, error, message):
    G = topo.dgx1v()
    before = snapshot(G)
    with pytest.raises(error, match=message):
        call(G)
    assert snapshot(G) == before


def test_invalid_input_is_refused():
    G = topo.dgx1v()
    G.add_edge("gpu0", "gpu0", kind="nvlink", link="nvlink2", links=1, bandwidth=1.0, latency=0.0)
    with pytest.raises(TopologyError, match="self loop"):
        scale_kind(G, 2, kind="nvlink")


@st.composite
def what_ifs(draw):
    """A built-in system and a random sequence of transformations that keep it valid or raise."""
    name = draw(st.sampled_from(sorted(BASE)))
    G = BASE[name]
    edges = sorted((u, v) for u, v in G.edges if u < v)
    steps = []
    for _ in range(draw(st.integers(1, 3))):
        u, v = draw(st.sampled_from(edges))
        op = draw(st.sampled_from(["scale", "kind", "remove", "add", "node"]))
        if op == "scale":
            steps.append((scale_links, (u, v, draw(st.floats(0.01, 4))),
                          {"both_directions": draw(st.booleans())}))
        elif op == "kind":
            steps.append((scale_kind, (draw(st.floats(0.01, 4)),),
                          {"kind": draw(st.sampled_from(["nvlink", "pcie", "cpu-to-cpu"]))}))
        elif op == "remove":
            steps.append((remove_links, (u, v, draw(st.integers(1, 3))), {}))
        elif op == "add":
            steps.append((add_links, (u, v, G.edges[u, v]["link"], draw(st.integers(1, 2))), {}))
        else:
            steps.append((remove_nodes, ([draw(st.sampled_from(sorted(G)))],), {}))
    return name, steps


@settings(max_examples=40, deadline=None)
@given(what_ifs())
def test_what_ifs_never_touch_their_input_and_return_valid_fabrics(case):
    name, steps = case
    G = BASE[name]
    before = snapshot(G)  # fresh lists and tuples: later edits of G cannot reach it
    current = G
    for function, args, kwargs in steps:
        previous = snapshot(current)
        try:
            result = function(current, *args, **kwargs)
        except topo.DgxTopoError:
            assert snapshot(current) == previous
            break
        assert result is not current and snapshot(current) == previous
        topo.validate(result)
        assert isinstance(result, nx.DiGraph)
        current = result
    assert snapshot(G) == before


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_removing_links_never_raises_capacity(data):
    """Removing a link lowers that edge's bandwidth and leaves every other edge alone."""
    G = BASE["dgx1v"]
    u, v = data.draw(st.sampled_from(sorted((a, b) for a, b, d in G.edges(data=True) if d["kind"] == "nvlink")))
    H = remove_links(G, u, v)
    for a, b, d in G.edges(data=True):
        after = H.edges[a, b]["bandwidth"] if H.has_edge(a, b) else 0.0
        assert after <= d["bandwidth"]
        assert after == d["bandwidth"] or {a, b} == {u, v}
