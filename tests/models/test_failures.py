"""--fail / --degrade specs (models.failures): grammar, known answers, every error path."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topo
from models.failures import (Degradation, Failure, FailureSpecError, apply_whatif, parse_degrade,
                             parse_failure)
from topo.errors import TopologyError, TransformError


@pytest.fixture(scope="module")
def dgx1v():
    return topo.dgx1v()


@pytest.fixture(scope="module")
def dgx2():
    return topo.dgx2()


def test_grammar(dgx1v):
    assert parse_failure(dgx1v, "gpu2") == Failure("gpu2", ("gpu2",))
    assert parse_failure(dgx1v, "gpu0-gpu3") == Failure("gpu0-gpu3", ("gpu0", "gpu3"))
    assert parse_failure(dgx1v, "gpu0-gpu3:1") == Failure("gpu0-gpu3:1", ("gpu0", "gpu3"), 1)
    assert parse_failure(dgx1v, "mlx5_1") == Failure("mlx5_1", ("mlx5_1",))
    assert parse_degrade(dgx1v, "gpu0-gpu3=0.5") == Degradation("gpu0-gpu3=0.5", ("gpu0", "gpu3"), 0.5)
    assert parse_degrade(dgx1v, "gpu3-gpu0=1").factor == 1.0


def test_one_link_of_an_nv2_pair_leaves_nv1(dgx1v):
    """DGX-1V gpu0-gpu3 is NV2 (two NVLink 2.0 links, 25 GB/s each way each)."""
    H = apply_whatif(dgx1v, fail=["gpu0-gpu3:1"])
    assert H.edges["gpu0", "gpu3"]["links"] == H.edges["gpu3", "gpu0"]["links"] == 1
    assert H.edges["gpu0", "gpu3"]["bandwidth"] == 25e9
    assert topo.connection_matrix(H).cells[0][3] == "NV1"
    assert dgx1v.edges["gpu0", "gpu3"]["links"] == 2  # input untouched


def test_whole_bundle_falls_back_to_pcie(dgx1v):
    """Without their NVLinks, gpu0 and gpu3 (same socket, different PCIe switches) are PHB."""
    H = apply_whatif(dgx1v, fail=["gpu0-gpu3"])
    assert not H.has_edge("gpu0", "gpu3") and not H.has_edge("gpu3", "gpu0")
    assert topo.connection_matrix(H).cells[0][3] == "PHB"


def test_nodes_go_with_their_links(dgx1v, dgx2):
    H = apply_whatif(dgx2, fail=["nvswitch3", "mlx5_1"])
    assert "nvswitch3" not in H and "mlx5_1" not in H
    assert sum(d["links"] for _, _, d in H.out_edges("gpu0", data=True) if d["kind"] == "nvlink") == 5
    H = apply_whatif(dgx1v, fail=["gpu2"])
    assert [H.nodes[g]["index"] for g in topo.gpus(H)] == [0, 1, 3, 4, 5, 6, 7]


def test_degrade_scales_bandwidth_not_links(dgx1v):
    H = apply_whatif(dgx1v, degrade=["gpu0-gpu3=0.5"])
    assert H.edges["gpu3", "gpu0"]["bandwidth"] == 25e9 and H.edges["gpu3", "gpu0"]["links"] == 2


def test_order_and_name(dgx1v):
    H = apply_whatif(dgx1v, fail=["gpu0-gpu3:1"], degrade=["gpu0-gpu3=0.5"])
    assert H.edges["gpu0", "gpu3"]["bandwidth"] == 12.5e9
    assert H.graph["name"] == "DGX-1V (fail gpu0-gpu3:1; degrade gpu0-gpu3=0.5)"
    assert H.graph["system"] == "dgx1v"
    assert apply_whatif(dgx1v) is dgx1v


def test_cluster_node_ids():
    G = topo.build("2xdgx1v")
    H = apply_whatif(G, fail=["h1.gpu0-h1.gpu3"])
    assert not H.has_edge("h1.gpu0", "h1.gpu3") and H.has_edge("h0.gpu0", "h0.gpu3")


@pytest.mark.parametrize("function, spec, message", [
    (parse_failure, "nvswitch3", "no node 'nvswitch3' in DGX-1V"),
    (parse_failure, "gpu0-gpu9", "no node 'gpu9'"),
    (parse_failure, "gpu0-gpu5", "gpu0 and gpu5 are not directly linked"),
    (parse_failure, "gpu0-gpu0", "a link from gpu0 to itself"),
    (parse_failure, "gpu0-gpu3:3", "gpu0-gpu3 has 2 links: expected K from 1 to 2"),
    (parse_failure, "gpu0-gpu3:0", "the link count '0' is not a whole number >= 1"),
    (parse_failure, "gpu0-gpu3:x", "the link count 'x'"),
    (parse_failure, "gpu0-gpu3:-1", "the link count '-1'"),
    (parse_failure, "", "expected NODE, A-B or A-B:K"),
    (parse_failure, " gpu0", "without spaces"),
    (parse_failure, "gpu0:1", "expected NODE, A-B or A-B:K, received no '-'"),
    (parse_degrade, "gpu0-gpu3", "expected A-B=F with 0 < F <= 1"),
    (parse_degrade, "gpu0-gpu3=0", "the factor '0' is not a number in (0, 1]"),
    (parse_degrade, "gpu0-gpu3=1.5", "the factor '1.5'"),
    (parse_degrade, "gpu0-gpu3=-0.5", "the factor '-0.5'"),
    (parse_degrade, "gpu0-gpu3=nan", "the factor 'nan'"),
    (parse_degrade, "gpu0-gpu3=inf", "the factor 'inf'"),
    (parse_degrade, "gpu0-gpu3=half", "the factor 'half'"),
    (parse_degrade, "gpu0=0.5", "received no '-'"),
    (parse_degrade, "gpu0-gpu5=0.5", "not directly linked"),
])
def test_errors_name_the_spec(dgx1v, function, spec, message):
    with pytest.raises(FailureSpecError) as info:
        function(dgx1v, spec)
    assert message in str(info.value)
    assert isinstance(info.value, TransformError)


def test_a_failure_that_cuts_a_gpu_off_says_which(dgx1v):
    with pytest.raises(TopologyError, match=r"--fail 'gpu0-pcie0' leaves an invalid fabric: GPU 'gpu0'"):
        apply_whatif(dgx1v, fail=["gpu0-pcie0"])


def test_specs_read_against_the_fabric_as_left():
    """The second failure of the same bundle finds it gone."""
    with pytest.raises(FailureSpecError, match="not directly linked"):
        apply_whatif(topo.dgx1v(), fail=["gpu0-gpu3", "gpu0-gpu3:1"])


def test_hyphenated_node_ids():
    G = nx.DiGraph()
    G.add_edge("nic-a", "sw", links=2)
    G.add_edge("sw", "nic-a", links=2)
    assert parse_failure(G, "nic-a") == Failure("nic-a", ("nic-a",))
    assert parse_failure(G, "nic-a-sw:1").nodes == ("nic-a", "sw")
    for u, v in (("x", "y-z"), ("x-y", "z")):
        G.add_edge(u, v, links=1)
        G.add_edge(v, u, links=1)
    with pytest.raises(FailureSpecError, match="ambiguous"):
        parse_failure(G, "x-y-z")


@settings(max_examples=60, deadline=None)
@given(spec=st.text(alphabet="gpu0123-:=.mlx5_nvswitch ", max_size=16))
def test_any_text_parses_or_raises_the_typed_error(dgx1v, spec):
    for function in (parse_failure, parse_degrade):
        try:
            function(dgx1v, spec)
        except FailureSpecError:
            pass


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_removing_k_links_of_any_nvlink_bundle(dgx2, data):
    bundles = [(u, v, d["links"]) for u, v, d in dgx2.edges(data=True) if d["kind"] == "nvlink"]
    u, v, links = data.draw(st.sampled_from(bundles))
    k = data.draw(st.integers(1, links))
    H = apply_whatif(dgx2, fail=[f"{u}-{v}:{k}"])
    assert H.has_edge(u, v) == (k < links)
    if k < links:
        assert H.edges[u, v]["links"] == H.edges[v, u]["links"] == links - k
    assert H.number_of_nodes() == dgx2.number_of_nodes()
