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
    with pytest.raises(TopologyError, match="links must be at least 1 and at most 65536, received 0"):
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


def test_the_schema_page_embeds_the_schema_table():
    page = (Path(__file__).parents[2] / "docs" / "fabric-schema.md").read_text()
    assert topo.schema_markdown() in page


# -- what the models would trip on (issue 10 item 4) -------------------------------------------
def with_host_layer() -> nx.DiGraph:
    """two_gpus under one PCIe switch and one CPU."""
    from topo.parts import add_cpu, add_pcie_switch
    G = two_gpus()
    add_cpu(G, "cpu0", "E5-2698v4", index=0)
    add_pcie_switch(G, "sw", index=0, socket=0, model="PEX")
    add_link(G, "cpu0", "sw", "pcie3_x16")
    for gpu in ("a", "b"):
        add_link(G, "sw", gpu, "pcie3_x16")
    validate(G)
    return G


def test_self_loop():
    G = two_gpus()
    G.add_edge("a", "a", **G.edges["a", "b"])
    with pytest.raises(TopologyError, match=r"edge \('a', 'a'\) is a self loop"):
        validate(G)


@pytest.mark.parametrize("bandwidth", [1e30, 1.0000001e13])
def test_bandwidth_beyond_the_physical_range(bandwidth):
    G = two_gpus()
    G.edges["a", "b"]["bandwidth"] = G.edges["b", "a"]["bandwidth"] = bandwidth
    with pytest.raises(TopologyError, match=r"at most 1e\+13 B/s per direction"):
        validate(G)


def test_bandwidth_is_authoritative_not_links_times_rate():
    G = two_gpus()
    G.edges["a", "b"]["bandwidth"] = G.edges["b", "a"]["bandwidth"] = 1.0
    validate(G)


def test_latency_beyond_a_second():
    G = two_gpus()
    G.edges["a", "b"]["latency"] = G.edges["b", "a"]["latency"] = 2.0
    with pytest.raises(TopologyError, match="latency must be >= 0 s and at most 1 s"):
        validate(G)


@pytest.mark.parametrize("capability", [99, 0, 71])
def test_unknown_compute_capability(capability):
    G = two_gpus()
    G.nodes["b"]["compute_capability"] = capability
    with pytest.raises(TopologyError, match=f"node 'b': compute capability {capability} is unknown: "
                                            f"expected one of 60, 61, 70, 75, 80"):
        validate(G)


def test_known_compute_capabilities():
    assert {60, 61, 70, 75, 80, 86, 89, 90, 100, 103, 120} <= topo.schema.COMPUTE_CAPABILITIES
    G = two_gpus()
    G.nodes["b"]["compute_capability"] = 90
    validate(G)


def test_missing_or_unknown_link():
    G = two_gpus()
    del G.edges["a", "b"]["link"]
    with pytest.raises(TopologyError, match="needs attribute 'link'"):
        validate(G)
    G = two_gpus()
    G.edges["a", "b"]["link"] = G.edges["b", "a"]["link"] = "nvlink9"
    with pytest.raises(TopologyError, match="link 'nvlink9' is not a link technology"):
        validate(G)


def test_every_builder_edge_has_a_catalogue_link():
    for name in (*topo.SYSTEMS, "2xdgx1v", "2xdgx2:rail"):
        G = topo.build(name)
        assert all(d["link"] in topo.LINKS for _, _, d in G.edges(data=True))


def test_gpu_without_pcie_to_a_cpu():
    G = with_host_layer()
    G.remove_edges_from([("sw", "b"), ("b", "sw")])
    with pytest.raises(TopologyError, match="GPU 'b' reaches no CPU over PCIe"):
        validate(G)


def test_gpus_of_a_host_on_two_unjoined_cpus():
    from topo.parts import add_cpu
    G = with_host_layer()
    add_cpu(G, "cpu1", "E5-2698v4", index=1)
    G.remove_edges_from([("sw", "b"), ("b", "sw")])
    add_link(G, "cpu1", "b", "pcie3_x16")
    with pytest.raises(TopologyError, match="hang off CPUs that are not joined"):
        validate(G)
    add_link(G, "cpu0", "cpu1", "qpi_bdw")
    validate(G)


def test_gpus_of_a_host_without_cpus_must_connect_within_the_host():
    G = two_gpus()
    add_gpu(G, "c", "V100-SXM2", index=0, socket=0, host=1)
    add_gpu(G, "d", "V100-SXM2", index=3, socket=0)
    add_link(G, "a", "c", "nvlink2")
    add_link(G, "c", "d", "nvlink2")   # d reaches a only through host 1
    with pytest.raises(TopologyError, match="GPU 'd' cannot be reached from GPU 'a' within host 0"):
        validate(G)


def test_add_gpu_of_an_unknown_model_lists_the_known_ones():
    with pytest.raises(topo.UnknownPartError, match="unknown GPU model 'A100': expected one of P100, V100-SXM2"):
        add_gpu(nx.DiGraph(), "gpu0", "A100", index=0, socket=0)
    with pytest.raises(topo.TopologyError, match="unknown link technology 'nvlink9'"):
        add_link(two_gpus(), "a", "b", "nvlink9")
    with pytest.raises(topo.TopologyError, match="to itself"):
        add_link(two_gpus(), "a", "a", "nvlink2")


@pytest.mark.parametrize("node, attribute, value, message", [
    ("h1.gpu5", "index", "5", r"node 'h1.gpu5': attribute 'index' must be int"),
    ("h1.gpu5", "compute_capability", 99, r"node 'h1.gpu5': compute capability 99"),
    ("h1.cpu1", "cores", 2.0, r"node 'h1.cpu1': attribute 'cores' must be int"),
])
def test_one_bad_node_among_many_is_named(node, attribute, value, message):
    G = topo.build("2xdgx1v")
    G.nodes[node][attribute] = value
    with pytest.raises(TopologyError, match=message):
        validate(G)


@pytest.mark.parametrize("attribute, value, message", [
    ("bandwidth", math.nan, "must be finite"), ("links", True, "'links' must be int"),
    ("latency", -1.0, "latency must be >= 0"), ("host_bridge", "0", "'host_bridge' must be int"),
])
def test_one_bad_edge_among_many_is_named(attribute, value, message):
    G = topo.build("2xdgx1v")
    G.edges["h1.pcie3", "h1.gpu7"][attribute] = value
    with pytest.raises(TopologyError, match=rf"edge \('h1.pcie3', 'h1.gpu7'\): .*{message}"):
        validate(G)
