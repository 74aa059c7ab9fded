"""Every TopologyError path of topo.validate, and the schema table shared with the docs."""

from __future__ import annotations

import math
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topo
from topo import TopologyError, validate
from topo.parts import add_gpu, add_link


def two_gpus() -> nx.DiGraph:
    G = nx.DiGraph()
    add_gpu(G, "a", "V100-SXM2", index=0, socket=0)
    add_gpu(G, "b", "V100-SXM2", index=1, socket=0)
    add_link(G, "a", "b", "nvlink2", 2)
    return G


def test_minimal_fabric_is_valid():
    validate(two_gpus())


@pytest.mark.parametrize("graph", [nx.Graph(), nx.MultiDiGraph(), "not a graph"])
def test_rejects_other_graph_types(graph):
    with pytest.raises(TopologyError, match="networkx.DiGraph"):
        validate(graph)


@pytest.mark.parametrize("kind", [None, "tpu", "GPU"])
def test_unknown_node_kind(kind):
    G = two_gpus()
    G.add_node("x", kind=kind, host=0)
    with pytest.raises(TopologyError, match=r"node 'x': unknown kind .*expected one of gpu, nvswitch"):
        validate(G)


@pytest.mark.parametrize("attribute", ["index", "host", "socket", "model", "compute_capability"])
def test_gpu_missing_required_attribute(attribute):
    G = two_gpus()
    del G.nodes["a"][attribute]
    with pytest.raises(TopologyError, match=f"node 'a': a gpu node needs attribute '{attribute}'"):
        validate(G)


@pytest.mark.parametrize("value", ["0", 0.0, True, None])
def test_gpu_index_of_wrong_type(value):
    G = two_gpus()
    G.nodes["a"]["index"] = value
    with pytest.raises(TopologyError, match=r"attribute 'index' must be int .*received"):
        validate(G)


def test_optional_attribute_is_checked_when_present():
    G = two_gpus()
    G.nodes["a"]["memory_bandwidth"] = "fast"
    with pytest.raises(TopologyError, match="'memory_bandwidth' must be float"):
        validate(G)


def test_unknown_edge_kind():
    G = two_gpus()
    G.edges["a", "b"]["kind"] = G.edges["b", "a"]["kind"] = "infiniband"
    with pytest.raises(TopologyError, match=r"edge \('a', 'b'\): unknown kind 'infiniband', expected one of nvlink"):
        validate(G)


@pytest.mark.parametrize("bandwidth", [0, -25e9, 0.0])
def test_non_positive_bandwidth(bandwidth):
    G = two_gpus()
    G.edges["a", "b"]["bandwidth"] = G.edges["b", "a"]["bandwidth"] = bandwidth
    with pytest.raises(TopologyError, match="bandwidth must be positive"):
        validate(G)


@pytest.mark.parametrize("bandwidth", [math.inf, math.nan])
def test_non_finite_bandwidth(bandwidth):
    G = two_gpus()
    G.edges["a", "b"]["bandwidth"] = G.edges["b", "a"]["bandwidth"] = bandwidth
    with pytest.raises(TopologyError, match="'bandwidth' must be finite"):
        validate(G)


def test_links_below_one():
    G = two_gpus()
    G.edges["a", "b"]["links"] = G.edges["b", "a"]["links"] = 0
    with pytest.raises(TopologyError, match="links must be at least 1, received 0"):
        validate(G)


def test_negative_latency():
    G = two_gpus()
    G.edges["a", "b"]["latency"] = G.edges["b", "a"]["latency"] = -1e-9
    with pytest.raises(TopologyError, match="latency must be >= 0"):
        validate(G)


def test_missing_reverse_edge():
    G = two_gpus()
    G.remove_edge("b", "a")
    with pytest.raises(TopologyError, match=r"has no reverse edge \('b', 'a'\)"):
        validate(G)


@pytest.mark.parametrize("attribute, value", [("latency", 1e-6), ("link", "nvlink1")])
def test_unequal_directions(attribute, value):
    G = two_gpus()
    G.edges["b", "a"][attribute] = value
    with pytest.raises(TopologyError, match=f"{attribute} differs between directions"):
        validate(G)


def test_links_and_bandwidth_may_differ_between_directions():
    """A what-if may degrade one direction only: bandwidth is per direction."""
    G = two_gpus()
    G.edges["b", "a"]["links"] = 1
    G.edges["b", "a"]["bandwidth"] = 25e9
    validate(G)


def test_no_gpu():
    G = nx.DiGraph()
    G.add_node("cpu0", kind="cpu", host=0, index=0, cores=4, threads_per_core=1)
    with pytest.raises(TopologyError, match="needs at least one GPU"):
        validate(G)


def test_duplicate_gpu_index():
    G = two_gpus()
    G.nodes["b"]["index"] = 0
    with pytest.raises(TopologyError, match="share index 0"):
        validate(G)


def test_same_index_on_different_hosts_is_fine():
    G = two_gpus()
    G.nodes["b"]["index"] = 0
    G.nodes["b"]["host"] = 1
    validate(G)


def test_disconnected_gpu():
    G = two_gpus()
    add_gpu(G, "c", "V100-SXM2", index=2, socket=0)
    with pytest.raises(TopologyError, match="GPU 'c' cannot be reached from GPU 'a'"):
        validate(G)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_one_way_edge_is_caught(data):
    """Removing a single direction of any edge of any built-in system is reported."""
    G = topo.build(data.draw(st.sampled_from(sorted(topo.SYSTEMS))))
    u, v = data.draw(st.sampled_from(sorted(G.edges)))
    G.remove_edge(u, v)
    with pytest.raises(TopologyError, match="no reverse edge"):
        validate(G)


@settings(max_examples=40, deadline=None)
@given(pairs=st.sets(st.sampled_from(sorted((u, v) for u, v, d in topo.dgx1v().edges(data=True)
                                             if d["kind"] == "nvlink" and u < v))))
def test_removing_nvlinks_keeps_dgx1v_valid(pairs):
    """GPUs stay reachable over PCIe and QPI whatever NVLink bundles fail."""
    G = topo.dgx1v()
    for u, v in pairs:
        G.remove_edges_from([(u, v), (v, u)])
    validate(G)


def test_schema_table_covers_every_attribute():
    table = topo.schema_markdown().splitlines()
    assert len(table) == 2 + len(topo.ATTRIBUTES)
    for attribute in topo.ATTRIBUTES:
        assert any(f"`{attribute.name}`" in row and attribute.unit in row for row in table)


def test_readme_embeds_the_schema_table():
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert topo.schema_markdown() in readme
