"""topo.parts.add_link: both directions, parallel links merged, typed errors."""

from __future__ import annotations

import networkx as nx
import pytest

from topo.errors import TopologyError, UnknownPartError
from topo.parts import add_link
from topo.specs import LINKS

NV2 = LINKS["nvlink2"]


def test_a_new_link_is_one_edge_each_way_with_the_catalogue_figures():
    G = nx.DiGraph()
    add_link(G, "a", "b", "nvlink2", 2, host_bridge=1)
    assert list(G) == ["a", "b"] and list(G.edges) == [("a", "b"), ("b", "a")]
    expected = {"kind": "nvlink", "link": "nvlink2", "links": 2, "bandwidth": 2 * NV2.bandwidth,
                "latency": NV2.latency, "host_bridge": 1}
    assert G.edges["a", "b"] == G.edges["b", "a"] == expected
    assert G.edges["a", "b"] is not G.edges["b", "a"]


def test_parallel_links_merge_into_the_edge_both_ways():
    G = nx.DiGraph()
    add_link(G, "a", "b", "nvlink2")
    add_link(G, "b", "a", "nvlink2", 2)
    assert [(G.edges[e]["links"], G.edges[e]["bandwidth"]) for e in (("a", "b"), ("b", "a"))] == \
        [(3, 3 * NV2.bandwidth)] * 2


def test_a_one_way_edge_gains_the_links_and_its_reverse():
    G = nx.DiGraph()
    G.add_edge("a", "b", kind="nvlink", link="nvlink2", links=1, bandwidth=NV2.bandwidth, latency=NV2.latency)
    add_link(G, "a", "b", "nvlink2")
    assert (G.edges["a", "b"]["links"], G.edges["b", "a"]["links"]) == (2, 1)


@pytest.mark.parametrize("args, error, message", [
    (("a", "b", "nvlink1"), TopologyError, r"edge \('a', 'b'\) is nvlink2, cannot add nvlink1 links to it"),
    (("a", "a", "nvlink2"), TopologyError, "a link from 'a' to itself"),
    (("a", "b", "nvlink2", 0), TopologyError, "links must be a whole number >= 1, received 0"),
    (("a", "b", "nvlink2", True), TopologyError, "links must be a whole number >= 1, received True"),
    (("a", "b", "nvlink9"), UnknownPartError, "unknown link technology 'nvlink9'"),
])
def test_errors_name_what_was_expected_and_leave_the_graph_alone(args, error, message):
    G = nx.DiGraph()
    add_link(G, "a", "b", "nvlink2")
    before = [(u, v, dict(d)) for u, v, d in G.edges(data=True)]
    with pytest.raises(error, match=message):
        add_link(G, *args)
    assert [(u, v, dict(d)) for u, v, d in G.edges(data=True)] == before
